#!/bin/sh
# ssdfleet %post: 1 (install) | 2 (upgrade)
# The units as %systemd_post leaves them: a first install applies the preset policy (RHEL
# enables nothing by default: `systemctl enable --now ssdfleet-probe-helper ssdfleet-agent`, or
# a preset file), an upgrade keeps the administrator's choice.
# @COMMON@
UNITS="ssdfleet-probe-helper.service ssdfleet-agent.service"

ssdfleet_compile
if command -v systemd-sysusers >/dev/null 2>&1; then
    systemd-sysusers /usr/lib/sysusers.d/ssdfleet.conf || :
fi
if [ "$1" -eq 1 ]; then
    # shellcheck disable=SC2086
    systemctl --no-reload preset $UNITS >/dev/null 2>&1 || :
fi
if [ -d /run/systemd/system ]; then
    systemctl daemon-reload >/dev/null 2>&1 || :
fi
exit 0
