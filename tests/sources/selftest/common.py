"""The self-test scheduler's test host: tests/fakehost.py's FakeHost with a fake smartctl that
also tells a status query and a test start apart, and that "runs" the test it was asked to.

The fake chooses its answer (a real capture) by the operation and the device's base name:

* ``--version``, ``--scan*``: ``version``, ``scan``;
* ``-t short|long ... DEV`` (a start): ``start-DEV``; when that answer's exit status is 0 the
  fake writes ``DEV.testing`` holding ``running_polls`` (the drive now "runs" the test);
* ``-c ... DEV`` (the status query): while ``DEV.testing`` holds a number above 0, ``running-DEV``
  (a capture of a drive in the middle of a self-test) and the number goes down by one; after
  that ``done-DEV`` when there is one (the log with the finished test), else ``status-DEV``;
* anything else on ``DEV`` (the smartctl source's read): ``DEV``.

Every call is appended to ``calls.log``, as FakeHost's tools do.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Dict, List, Optional

from tests.conftest import fixture_path
from tests.fakehost import AgentProcess, FakeHost

_SCRIPT = """#!/bin/sh
# fake smartctl for the self-test scheduler's tests: replays captured output from {responses}
R="{responses}"
printf '%s\\n' "smartctl $*" >> "{log}"
op=read
for a in "$@"; do
  case "$a" in
    --version|-V) op=version ;;
    --scan|--scan-open) op=scan ;;
    -t) op=start ;;
    -c) [ "$op" = read ] && op=status ;;
  esac
  last="$a"
done
dev=$(basename -- "$last")
case "$op" in
  version|scan) key=$op ;;
  start) key="start-$dev" ;;
  status)
    key="status-$dev"
    if [ -f "$R/$dev.testing" ]; then
      left=$(cat "$R/$dev.testing")
      if [ "$left" -gt 0 ]; then key="running-$dev"; echo $((left - 1)) > "$R/$dev.testing"
      else rm -f "$R/$dev.testing"; [ -f "$R/done-$dev.out" ] && key="done-$dev"; fi
    elif [ -f "$R/done-$dev.out" ] && [ -f "$R/$dev.tested" ]; then key="done-$dev"; fi ;;
  *) key="$dev" ;;
esac
if [ ! -f "$R/$key.out" ]; then echo "fake smartctl: no response for: $*" >&2; exit 2; fi
cat "$R/$key.out"
rc=0; [ -f "$R/$key.rc" ] && rc=$(cat "$R/$key.rc")
if [ "$op" = start ] && [ "$rc" = 0 ]; then
  cat "$R/polls" > "$R/$dev.testing" 2>/dev/null || echo 0 > "$R/$dev.testing"; touch "$R/$dev.tested"
fi
exit "$rc"
"""

# Real captures (tests/fixtures/PROVENANCE.tsv).
VERSION = "fakehost/smartctl-version.txt"  # smartctl 7.x banner
SCAN = "fakehost/telegraf__testcases_scan_all.json"
SDA = "fakehost/scrutiny__smart-ata-full.json"  # Samsung 860 EVO, status 0, polling short 2 min
SDA_SERIAL = "S3YZNB0KB00864E"
RUNNING = "smartctl-json/scrutiny__smart-ata.json"  # status 241: "in progress, 10% remaining"
NVME0 = "fakehost/scrutiny__smart-nvme.json"
NVME0_SERIAL = "BTNH93710FS91P0B"


class SelfTestHost(FakeHost):
    """A FakeHost whose smartctl is the self-test fake above."""

    def tool(self, name: str) -> Path:
        if name != "smartctl":
            return super().tool(name)
        path = self.bin / name
        responses = self.root / "responses" / name
        responses.mkdir(parents=True, exist_ok=True)
        if not path.exists():
            path.write_text(_SCRIPT.format(responses=responses, log=self.calls_log))
            path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        return path

    def running_polls(self, polls: int) -> None:
        """How many status queries after a start answer "running"."""
        self.tool("smartctl")
        (self.root / "responses" / "smartctl" / "polls").write_text(f"{polls}\n")

    def calls_matching(self, *words: str) -> List[str]:
        return [c for c in self.calls() if all(w in c.split() for w in words)]


def sata_host(root: Path, diskstats: Optional[str] = None) -> SelfTestHost:
    """One SATA SSD (sda) the smartctl source finds by scan, idle, with a status answer."""
    host = SelfTestHost(root)
    host.set_response("smartctl", "version", fixture_path(VERSION))
    host.set_response("smartctl", "scan", json.dumps({"devices": [
        {"name": "/dev/sda", "info_name": "/dev/sda [SAT]", "type": "sat", "protocol": "ATA"}]}))
    for key in ("sda", "status-sda"):
        host.set_response("smartctl", key, fixture_path(SDA))
    host.set_response("smartctl", "start-sda", b"")
    host.set_response("smartctl", "running-sda", fixture_path(RUNNING))
    host.block_device("sda", 976773168, model="Samsung SSD 860 EVO 500GB")
    host.diskstats(diskstats if diskstats is not None else
                   "   8       0 sda 120 10 9000 50 400 20 64000 300 0 280 350 0 0 0 0 4 2\n")
    host.running_polls(0)
    return host


# Every hour of every day is in the window, so a test is due the moment the agent starts
# (the scheduler works in local time; the agent runs with TZ=UTC so the window is the same
# for every machine the tests run on).
ALWAYS = {"weekdays": [1, 2, 3, 4, 5, 6, 7], "hour": 0, "window_hours": 24}


def agent(host: SelfTestHost, selftest: Optional[Dict] = None, extra: Optional[List[str]] = None,
          config: Optional[Dict] = None) -> AgentProcess:
    """The real agent on ``host`` with the scheduler configured as ``selftest`` (omitted:
    the shipped default, off)."""
    doc: Dict = {"collectors": ["smartctl", "selftest"]}
    if selftest is not None:
        doc["selftest"] = selftest
    doc.update(config or {})
    path = host.root / f"agent-{len(list(host.root.glob('agent-*.yml')))}.yml"
    path.write_text(json.dumps(doc))
    args = ["--config", str(path), "--interval.smartctl", "1", "--interval.selftest", "1", "--tool-timeout", "10"]
    return AgentProcess(host, args + (extra or []), env={"TZ": "UTC"})


def wait_for_file(path: Path) -> bool:
    return path.exists() and os.path.getsize(path) > 0
