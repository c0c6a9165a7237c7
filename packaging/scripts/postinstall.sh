#!/bin/sh
# ssdfleet postinstall (.deb postinst, .rpm %post).
#   deb: configure [OLD-VERSION] (OLD-VERSION set on an upgrade or a reinstall after remove)
#   rpm: 1 (install) | 2 (upgrade)
# The configuration and /var/lib/ssdfleet are never touched here.
set -e
UNITS="ssdfleet-probe-helper.service ssdfleet-agent.service"
case "$1" in
    configure) format=deb; if [ -n "$2" ]; then upgrade=yes; else upgrade=no; fi ;;
    1) format=rpm; upgrade=no ;;
    2) format=rpm; upgrade=yes ;;
    *) exit 0 ;;
esac

# Byte code for the python3 this host has, where the package carries its dependencies; the
# program never writes byte code itself, and preremove deletes what this makes.
abi=$(python3 -c 'import sys; print("cp%d%d" % sys.version_info[:2])' 2>/dev/null || true)
if [ -n "$abi" ] && [ -d "/usr/lib/ssdfleet/deps/$abi" ]; then
    python3 -m compileall -q -j 0 /usr/lib/ssdfleet/app "/usr/lib/ssdfleet/deps/$abi" >/dev/null 2>&1 || true
else
    echo "ssdfleet: warning: no dependencies in this package for python3 ($abi); ssdfleet will not start" >&2
fi

if command -v systemd-sysusers >/dev/null 2>&1; then
    systemd-sysusers /usr/lib/sysusers.d/ssdfleet.conf || true
fi

if [ "$upgrade" = no ]; then
    if [ "$format" = deb ]; then
        # Debian starts a service when its package is installed.
        # shellcheck disable=SC2086
        systemctl --quiet enable $UNITS 2>/dev/null || true
    else
        # RHEL leaves enabling to the preset policy (systemctl enable --now, or a preset file).
        # shellcheck disable=SC2086
        systemctl --quiet preset $UNITS 2>/dev/null || true
    fi
fi

if [ -d /run/systemd/system ]; then
    systemctl daemon-reload || true
    if [ "$upgrade" = yes ]; then
        # The new code runs at once where the agent ran; a stopped agent stays stopped.
        # shellcheck disable=SC2086
        systemctl try-restart $UNITS || true
    elif [ "$format" = deb ]; then
        # shellcheck disable=SC2086
        systemctl start $UNITS || true
    fi
fi
exit 0
