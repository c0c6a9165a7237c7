#!/bin/sh
# ssdfleet preremove (.deb prerm, .rpm %preun).
#   deb: remove | upgrade NEW-VERSION | deconfigure | failed-upgrade     rpm: 0 (erase) | 1 (upgrade)
set -e
UNITS="ssdfleet-agent.service ssdfleet-probe-helper.service"
case "$1" in
    remove|0) removing=yes ;;
    upgrade|deconfigure|failed-upgrade) removing=no ;;
    *) exit 0 ;;
esac

if [ "$removing" = yes ]; then
    if [ -d /run/systemd/system ]; then
        # shellcheck disable=SC2086
        systemctl stop $UNITS || true
    fi
    if [ "$1" = 0 ]; then
        # rpm has no purge: erase disables the units, as %systemd_preun does. A .deb keeps
        # them enabled until purge, so that remove and install again brings the agent back.
        # shellcheck disable=SC2086
        systemctl --quiet --no-reload disable $UNITS 2>/dev/null || true
    fi
fi

# Byte code made by postinstall: the package manager does not know these files.
if [ "$removing" = yes ] || [ "$1" = upgrade ]; then
    find /usr/lib/ssdfleet -name __pycache__ -type d -prune -exec rm -rf {} + 2>/dev/null || true
fi
exit 0
