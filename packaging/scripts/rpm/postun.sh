#!/bin/sh
# ssdfleet %postun: 0 (erase) | 1 (upgrade; the old version's, after its files are gone)
# An upgrade restarts the units that run, as %systemd_postun_with_restart does; a stopped agent
# stays stopped. Erase keeps /etc/ssdfleet and /var/lib/ssdfleet (rpm has no purge).
UNITS="ssdfleet-probe-helper.service ssdfleet-agent.service"

if [ -d /run/systemd/system ]; then
    systemctl daemon-reload >/dev/null 2>&1 || :
    if [ "$1" -ge 1 ]; then
        # shellcheck disable=SC2086
        systemctl try-restart $UNITS >/dev/null 2>&1 || :
    fi
fi
exit 0
