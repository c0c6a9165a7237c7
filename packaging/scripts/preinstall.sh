#!/bin/sh
# ssdfleet preinstall (.deb preinst, .rpm %pre): the ssdfleet user and group must exist before
# the files are unpacked, since /etc/ssdfleet and /var/lib/ssdfleet belong to them.
#   deb: install|upgrade [OLD-VERSION]     rpm: 1 (install) | 2 (upgrade)
set -e
case "$1" in
    install|upgrade|1|2) ;;
    *) exit 0 ;;
esac
if ! getent passwd ssdfleet >/dev/null 2>&1; then
    if command -v systemd-sysusers >/dev/null 2>&1; then
        # The same line as /usr/lib/sysusers.d/ssdfleet.conf, which is not unpacked yet.
        echo '@SYSUSERS_LINE@' | systemd-sysusers --replace=/usr/lib/sysusers.d/ssdfleet.conf -
    else
        useradd --system --user-group --home-dir /var/lib/ssdfleet --no-create-home \
            --shell /usr/sbin/nologin --comment "ssdfleet SSD health agent" ssdfleet
    fi
fi
exit 0
