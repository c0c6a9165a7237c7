#!/bin/sh
# ssdfleet %preun: 0 (erase) | 1 (upgrade; runs after the new version's %post)
# Erase stops and disables the units, as %systemd_preun does; an upgrade leaves them.
# @COMMON@
UNITS="ssdfleet-agent.service ssdfleet-probe-helper.service"

if [ "$1" -eq 0 ]; then
    if [ -d /run/systemd/system ]; then
        # shellcheck disable=SC2086
        systemctl --no-reload disable --now $UNITS >/dev/null 2>&1 || :
    else
        # shellcheck disable=SC2086
        systemctl --no-reload disable $UNITS >/dev/null 2>&1 || :
    fi
    ssdfleet_forget_bytecode
fi
exit 0
