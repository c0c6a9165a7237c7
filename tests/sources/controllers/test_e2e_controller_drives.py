"""Drives behind a MegaRAID, found without configuration (issue 28): the real agent process, a
fake smartctl that answers ``--scan-open`` with a real capture listing seven disks behind
``/dev/bus/6`` (megaraid,8 ... megaraid,14; influxdata/telegraf's scan test case) and each
``-d megaraid,N`` read with a real captured report of a different drive (distinct serials). An
eighth disk is configured the way users name one on the controller's volume
(``/dev/sda:megaraid,15``): the volume sda has its own write cache and I/O counters in the fake
sysfs and /proc/diskstats, and none of them may land on that disk.

Shown: eight drives with their own serials and figures (not one, not the volume's), each with
its -d type; no write cache and no I/O series for any of them."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.fakehost import AgentProcess
from tests.support.controller_host import BEHIND, CONFIGURED, megaraid_drives_host


def _power_on_hours(fixture: str) -> int:
    from tests.conftest import read_fixture

    return json.loads(read_fixture(fixture))["power_on_time"]["hours"]


@pytest.fixture
def controller_host(tmp_path: Path):
    return megaraid_drives_host(tmp_path)


def _samples(text: str, name: str):
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name:
                yield sample


def test_eight_drives_behind_a_megaraid_each_with_its_own_serial_and_figures(controller_host):
    host, smartctl = controller_host
    config = host.root / "agent.yml"
    config.write_text(json.dumps({"smartctl": {"devices": [f"/dev/sda:{CONFIGURED[0]}"]},
                                  "collectors": ["smartctl", "write_cache", "diskstats"]}))
    agent = AgentProcess(host, ["--config", str(config), "--smartctl", str(smartctl.path)])
    try:
        agent.wait_ready(timeout=60)
        want = {dev_type: serial for dev_type, (_f, serial) in BEHIND.items()}
        want[CONFIGURED[0]] = CONFIGURED[2]
        deadline = time.monotonic() + 90
        while True:
            text = agent.get("/metrics", timeout=20).decode()
            info = {s.labels["device_type"]: s.labels for s in _samples(text, "ssd_drive_info")}
            if set(want) <= set(info) or time.monotonic() > deadline:
                break
            time.sleep(1)
        drives = json.loads(agent.get("/api/v1/drives", timeout=20))
    finally:
        agent.stop()
    behind = {t: labels for t, labels in info.items() if t.startswith("megaraid,")}
    assert {t: labels["serial"] for t, labels in behind.items()} == want, agent.log()[-3000:]
    # Each drive's own figures: power-on hours as its own capture says, eight different values.
    hours = {s.labels["serial"]: s.value / 3600 for s in _samples(text, "ssd_power_on_seconds_total")}
    for dev_type, (fixture, serial) in list(BEHIND.items()) + [(CONFIGURED[0], CONFIGURED[1:])]:
        assert int(hours[serial]) == _power_on_hours(fixture), (dev_type, serial)  # SCSI adds minutes
    # The volume's cache and counters are no member drive's: no write-cache or I/O series for
    # any drive read through the controller.
    serials = set(want.values())
    for name in ("ssd_write_cache_enabled", "ssd_io_writes_completed_total", "ssd_io_written_bytes_total"):
        assert not [s for s in _samples(text, name) if s.labels.get("serial") in serials], name
    by_serial = {d["serial"]: d for d in drives["drives"]}
    for serial in serials:
        assert by_serial[serial]["write_cache"] in (None, []) and not by_serial[serial].get("io"), sorted(by_serial[serial])
    calls = smartctl.calls()
    assert any("--scan-open" in c for c in calls)
    assert sum(1 for c in calls if "-d megaraid," in c and c.endswith("/dev/bus/6")) >= 7
