#!/bin/sh
# ssdfleet postremove (.deb postrm, .rpm %postun).
#   deb: remove | purge | upgrade | disappear | abort-*     rpm: 0 (erase) | 1 (upgrade)
# remove keeps /etc/ssdfleet and /var/lib/ssdfleet (the configuration and the history); purge
# (Debian only) removes them, the units' enable links and the ssdfleet user.
set -e
case "$1" in
    remove|purge|0|1) ;;
    *) exit 0 ;;
esac

if [ "$1" = purge ]; then
    rm -rf /var/lib/ssdfleet
    rm -f /etc/ssdfleet/config.yml.dpkg-old /etc/ssdfleet/config.yml.dpkg-new \
          /etc/ssdfleet/config.yml.dpkg-dist /etc/ssdfleet/config.yml.ucf-dist
    rmdir /etc/ssdfleet 2>/dev/null || true
    # What "systemctl enable" made in postinst; the unit files are gone, so disable cannot.
    for unit in ssdfleet-agent.service ssdfleet-probe-helper.service; do
        rm -f "/etc/systemd/system/multi-user.target.wants/$unit"
    done
    if getent passwd ssdfleet >/dev/null 2>&1; then
        userdel ssdfleet >/dev/null 2>&1 || echo "ssdfleet: could not remove the user ssdfleet" >&2
    fi
    if getent group ssdfleet >/dev/null 2>&1; then
        groupdel ssdfleet >/dev/null 2>&1 || true
    fi
fi

if [ -d /run/systemd/system ]; then
    systemctl daemon-reload || true
fi
exit 0
