"""The self-test scheduler end to end: the real ``ssdfleet agent`` process, a fake smartctl that
replays real captures and records every call (tests/sources/selftest/common.py), the fake
host's /proc/diskstats and sysfs. Every window is open (hour 0, 24 hours, every day) and the
agent runs with TZ=UTC, so a test is due at once; the scheduler checks every second.

Shown: nothing runs when the scheduler is off (the default); a due test starts once, its end is
read from the drive's log (aborted, from two real MegaRAID logs), and a restart does not start
it again; one test at a time on a host with two drives; a busy drive is skipped until it is
quiet; a drive in standby is not woken until it wakes by itself."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import List

from tests.conftest import fixture_path
from tests.sources.selftest.common import ALWAYS, RUNNING, SDA, SDA_SERIAL, SelfTestHost, agent, sata_host
from tests.support.e2e import scrape, value, wait_for

TIMEOUT = 60.0  # the waits below take 2-10 s on an idle machine
ON = {"enabled": True, "short": ALWAYS, "long": None, "utilisation_sample_seconds": 0.2, "retry_minutes": 0}
SDB = "smartctl-json/netdata__type-sat_device-ssd-sdc.json"  # a SATA SSD, status 0, empty log
MEGARAID0 = "smartctl-json/scrutiny__smart-megaraid0.json"  # newest "Short offline  Completed" at 35,990 h
MEGARAID1 = "smartctl-json/scrutiny__smart-megaraid1.json"  # the same log with "Aborted by host" on top
STANDBY = "smartctl-text/telegraf__mockStandbyData.txt"  # "Device is in STANDBY mode"


def _scheduler_calls(host: SelfTestHost) -> List[str]:
    return [c for c in host.calls() if " -t " in c or " -c " in c]


def _metric(process, name: str, **labels):
    return value(scrape(process), name, **labels)


def test_nothing_runs_when_the_scheduler_is_off(tmp_path):
    for n, selftest in enumerate((None, {"enabled": False, "short": ALWAYS})):
        host = sata_host(tmp_path / str(n))
        process = agent(host, selftest)
        try:
            process.wait_ready(timeout=TIMEOUT)
            wait_for(lambda host=host: len(host.calls_matching("--info")) >= 4, timeout=TIMEOUT)  # four SMART polls
            text = process.get("/metrics").decode()
        finally:
            process.stop()
        assert _scheduler_calls(host) == []
        assert "ssd_selftest_scheduler" not in text and 'collector="selftest"' not in text
        assert not (host.state / "selftest-schedule.json").exists()


def _megaraid_host(root: Path) -> SelfTestHost:
    """A WD disk behind a MegaRAID controller, read and tested with ``-d sat+megaraid,0``."""
    host = sata_host(root)
    host.set_response("smartctl", "scan", json.dumps({"devices": [
        {"name": "/dev/sda", "info_name": "/dev/sda [megaraid_disk_00] [SAT]", "type": "sat+megaraid,0",
         "protocol": "ATA"}]}))
    host.set_response("smartctl", "sda", fixture_path(MEGARAID0))
    host.set_response("smartctl", "status-sda", fixture_path(MEGARAID0))
    host.set_response("smartctl", "done-sda", fixture_path(MEGARAID1))
    host.running_polls(2)
    return host


def test_a_due_test_runs_once_ends_as_the_log_says_and_is_not_repeated_after_a_restart(tmp_path):
    host = _megaraid_host(tmp_path)
    process = agent(host, ON)
    try:
        process.wait_ready(timeout=TIMEOUT)
        wait_for(lambda: _metric(process, "ssd_selftest_scheduler_results_total", type="short", result="aborted") == 1,
                 timeout=TIMEOUT)
        rows = json.loads(process.get("/api/v1/drives"))["host"]["selftest"]["rows"]
    finally:
        process.stop()
    starts = host.calls_matching("-t")
    assert starts == ["smartctl -t short --nocheck=standby,3 -d sat+megaraid,0 /dev/sda"]
    # the status queries (before the start, while it ran, after) carry the same -d type
    assert {c.split(" -d ")[1] for c in host.calls_matching("-c")} == {"sat+megaraid,0 /dev/sda"}
    assert len(host.calls_matching("-c")) >= 4  # the check, two "running" answers, the end
    (row,) = rows
    assert (row["test"], row["result"], row["detail"]) == ("short", "aborted", "Short offline: Aborted by host")
    assert row["last_started"] is not None and not row["running"]
    kept = json.loads((host.state / "selftest-schedule.json").read_text())
    assert kept["running"] is None

    again = agent(host, ON)
    try:
        again.wait_ready(timeout=TIMEOUT)
        wait_for(lambda: _metric(again, "ssd_selftest_next_due_timestamp_seconds", type="short"), timeout=TIMEOUT)
        calls = len(host.calls())
        wait_for(lambda: len(host.calls_matching("--info")) >= 6, timeout=TIMEOUT)  # a few more polls
        due = _metric(again, "ssd_selftest_next_due_timestamp_seconds", type="short")
        started = _metric(again, "ssd_selftest_scheduler_started_total", type="short")
    finally:
        again.stop()
    assert host.calls_matching("-t") == starts  # the window's test ran: not again
    assert [c for c in host.calls()[calls:] if " -c " in c] == []  # nothing asked of the drive either
    assert due > time.time() and due % 86400 == 0  # tomorrow's window, 00:00 UTC
    assert started is None  # this process started none


def test_one_test_at_a_time(tmp_path):
    host = sata_host(tmp_path)
    host.set_response("smartctl", "scan", json.dumps({"devices": [
        {"name": f"/dev/{d}", "info_name": f"/dev/{d} [SAT]", "type": "sat", "protocol": "ATA"} for d in ("sda", "sdb")]}))
    for key in ("sdb", "status-sdb"):
        host.set_response("smartctl", key, fixture_path(SDB))
    host.set_response("smartctl", "start-sdb", b"")
    host.set_response("smartctl", "running-sdb", fixture_path(RUNNING))
    host.block_device("sdb", 468862128)
    host.diskstats("   8       0 sda 120 10 9000 50 400 20 64000 300 0 280 350 0 0 0 0 4 2\n"
                   "   8      16 sdb 120 10 9000 50 400 20 64000 300 0 280 350 0 0 0 0 4 2\n")
    host.running_polls(3)
    process = agent(host, ON)
    try:
        process.wait_ready(timeout=TIMEOUT)
        wait_for(lambda: len(host.calls_matching("-t")) == 2, timeout=TIMEOUT)
        held = _metric(process, "ssd_selftest_scheduler_skipped_total", type="short", reason="one_at_a_time")
    finally:
        process.stop()
    calls = _scheduler_calls(host)
    starts = [i for i, c in enumerate(calls) if " -t " in c]
    first, second = calls[starts[0]].split()[-1], calls[starts[1]].split()[-1]
    assert first != second
    between = calls[starts[0] + 1:starts[1]]
    # while the first drive tested, only it was asked (3 "running" answers, then the end); the
    # other was asked once, after that, just before its own start
    assert [c.split()[-1] for c in between] == [first] * 4 + [second], between
    assert held and held >= 1


def test_a_busy_drive_is_skipped_until_it_is_quiet(tmp_path):
    host = sata_host(tmp_path)
    stop = threading.Event()

    def kernel():  # sda busy all the time: its time doing I/O grows as fast as the clock
        ticks = 280
        while not stop.is_set():
            ticks += 100
            host.diskstats(f"   8       0 sda 120 10 9000 50 400 20 64000 300 0 {ticks} 350 0 0 0 0 4 2\n")
            time.sleep(0.05)

    writer = threading.Thread(target=kernel, daemon=True)
    writer.start()
    process = agent(host, ON)
    try:
        process.wait_ready(timeout=TIMEOUT)
        wait_for(lambda: (_metric(process, "ssd_selftest_scheduler_skipped_total", type="short", reason="busy") or 0) >= 2,
                 timeout=TIMEOUT)
        assert _scheduler_calls(host) == []  # busy is seen before any command goes to the drive
        stop.set()
        writer.join(5)
        wait_for(lambda: host.calls_matching("-t"), timeout=TIMEOUT)  # quiet now: tested in the same window
    finally:
        stop.set()
        process.stop()
    assert host.calls_matching("-t") == ["smartctl -t short --nocheck=standby,3 -d sat /dev/sda"]


def test_a_drive_in_standby_is_not_woken(tmp_path):
    host = sata_host(tmp_path)
    host.set_response("smartctl", "status-sda", fixture_path(STANDBY), exit_code=3)
    process = agent(host, ON)
    try:
        process.wait_ready(timeout=TIMEOUT)
        wait_for(lambda: (_metric(process, "ssd_selftest_scheduler_skipped_total", type="short",
                                  reason="standby") or 0) >= 2, timeout=TIMEOUT)
        assert host.calls_matching("-t") == []
        asked = _scheduler_calls(host)
        assert asked and all("--nocheck=standby,3" in c for c in asked)  # never asked without it
        rows = json.loads(process.get("/api/v1/drives"))["host"]["selftest"]["rows"]
        assert rows[0]["skipped"] == "standby" and rows[0]["identity"] == SDA_SERIAL
        host.set_response("smartctl", "status-sda", fixture_path(SDA))  # the drive woke up by itself
        wait_for(lambda: host.calls_matching("-t"), timeout=TIMEOUT)
    finally:
        process.stop()
