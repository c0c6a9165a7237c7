"""The Poller in-process, with the fake host's tool executables (real processes, no mocks)."""

from __future__ import annotations

import copy
import dataclasses
import json
import threading
import time
from typing import List

import pytest

from agent.config import Config, Paths, Tools
from agent.metrics import make_registry
from agent.poller import Poller
from collectors.smartctl.source import STANDBY_MAX_SKIPS
from collectors.smartctl import STANDBY_EXIT_STATUS
from tests.conftest import fixture_path, read_fixture
from tests.fakehost import FakeHost, build_default_host
from tests.test_e2e_agent import NVME0_SERIAL, SDA_SERIAL


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


def make_poller(host: FakeHost, clock=time.time, **extra) -> Poller:
    settings = dict(
        history=False, collectors=["smartctl"], tool_timeout_seconds=5.0, tool_kill_grace_seconds=0.2,
        tools=Tools(smartctl=str(host.bin / "smartctl"), shannon_status=str(host.bin / "shannon-status"),
                    hdparm=str(host.bin / "hdparm"), nvme=str(host.bin / "nvme")),
        paths=Paths(sysfs=str(host.sys), procfs=str(host.proc)),
    )
    settings.update(extra)
    config = Config(**settings)
    return Poller(config, clock=clock)


def sda(poller: Poller):
    return next(d for d in poller.snapshot().drives if d.serial == SDA_SERIAL)


STANDBY_JSON = json.dumps({
    "smartctl": {"version": [7, 3], "exit_status": STANDBY_EXIT_STATUS,
                 "messages": [{"string": "Device is in STANDBY mode, exit(3)", "severity": "information"}]},
    "device": {"name": "/dev/sda", "type": "sat", "protocol": "ATA"},
})


def sda_reads(host: FakeHost) -> List[str]:
    return [c for c in host.calls() if c.startswith("smartctl") and c.endswith("/dev/sda")]


def test_standby_skips_then_one_read_that_wakes_the_drive(tmp_path):
    host = build_default_host(tmp_path)
    clock = Clock()
    poller = make_poller(host, clock)
    poller.run_discovery()
    poller.run("smartctl")
    assert sda(poller).reading.power_state == "active"
    read_at = sda(poller).last_poll["smartctl"]

    host.set_response("smartctl", "sda", STANDBY_JSON, exit_code=STANDBY_EXIT_STATUS)
    for _ in range(STANDBY_MAX_SKIPS):
        clock.now += 300
        poller.run("smartctl")
        drive = sda(poller)
        assert drive.reading.power_state == "standby"  # ssd_standby 1
        assert drive.last_poll["smartctl"] == read_at  # last values kept, their age grows
    reads = sda_reads(host)
    assert all("--nocheck=standby,3" in c for c in reads)

    # The next read goes without --nocheck: smartctl wakes the drive and reads it.
    host.set_response("smartctl", "sda", fixture_path("fakehost/scrutiny__smart-ata-full.json"))
    clock.now += 300
    poller.run("smartctl")
    woke = sda_reads(host)[-1]
    assert "--nocheck" not in woke and "-d sat /dev/sda" in woke
    assert sda(poller).reading.power_state == "active"
    assert sda(poller).last_poll["smartctl"] == clock.now - 0  # fresh again

    # And the count starts over: back to -n standby.
    host.set_response("smartctl", "sda", STANDBY_JSON, exit_code=STANDBY_EXIT_STATUS)
    poller.run("smartctl")
    assert "--nocheck=standby,3" in sda_reads(host)[-1]
    registry = make_registry(poller.snapshot)
    assert registry.get_sample_value("ssd_standby", {"device": "sda", "serial": SDA_SERIAL}) == 1.0
    poller.stop()


def test_last_good_values_kept_with_growing_age_then_vanished_drive_leaves(tmp_path):
    host = build_default_host(tmp_path)
    clock = Clock()
    poller = make_poller(host, clock)
    poller.run_discovery()
    poller.run("smartctl")
    registry = make_registry(poller.snapshot)
    labels = {"device": "nvme0", "serial": NVME0_SERIAL}
    life = registry.get_sample_value("ssd_life_left_ratio", labels)
    assert life is not None
    ages = []
    # nvme0 starts printing garbage: each poll is an error, the old values stay, age grows.
    host.set_response("smartctl", "nvme0", b"\x00\xffgarbage")
    for _ in range(3):
        clock.now += 60
        poller.run("smartctl")
        snap = poller.snapshot()
        drive = next(d for d in snap.drives if d.serial == NVME0_SERIAL)
        # ssd_data_age_seconds is the scrape time minus this (the metrics use the wall clock).
        ages.append(snap.created - drive.last_poll["smartctl"])
        assert registry.get_sample_value("ssd_life_left_ratio", labels) == life
    assert ages == [60.0, 120.0, 180.0]
    assert registry.get_sample_value("ssd_collector_success", {"collector": "smartctl"}) == 0
    assert registry.get_sample_value("ssd_collector_errors_total", {"collector": "smartctl"}) == 3

    # It is pulled: smartctl says "No such device", then discovery no longer lists it.
    host.set_response("smartctl", "nvme0", json.dumps({"smartctl": {"exit_status": 2, "messages": [
        {"string": "Smartctl open device: /dev/nvme0 failed: No such device", "severity": "error"}]}}),
        exit_code=2)
    poller.run("smartctl")
    assert any("nvme0" in p and "vanished" in p for p in poller.snapshot().problems)
    assert registry.get_sample_value("ssd_life_left_ratio", labels) == life  # until discovery
    scan = json.loads(read_fixture("fakehost/telegraf__testcases_scan_all.json"))
    scan["devices"] = [d for d in scan["devices"] if d["name"] != "/dev/nvme0"]
    host.set_response("smartctl", "scan", json.dumps(scan))
    poller.run_discovery()
    assert NVME0_SERIAL not in {d.serial for d in poller.snapshot().drives}
    assert not any("nvme0" in p for p in poller.snapshot().problems)
    assert SDA_SERIAL in {d.serial for d in poller.snapshot().drives}
    poller.stop()


def test_a_snapshot_is_never_changed_by_a_later_poll(tmp_path):
    host = build_default_host(tmp_path)
    host.set_response("smartctl", "nvme1", fixture_path("fakehost/scrutiny__smart-nvme-failed.json"), sleep=0.4)
    poller = make_poller(host)
    poller.run_discovery()
    poller.run("smartctl")
    old = poller.snapshot()
    frozen = copy.deepcopy(old)
    with pytest.raises(dataclasses.FrozenInstanceError):
        old.drives = ()  # type: ignore[misc]
    # A scrape during a poll: readers see the old snapshot or the new one, whole.
    host.set_response("smartctl", "sda", fixture_path("fakehost/scrutiny__smart-nvme.json"))  # sda "changes"
    seen = []
    poll = threading.Thread(target=poller.run, args=("smartctl",))
    poll.start()
    while poll.is_alive():
        seen.append(poller.snapshot())
        time.sleep(0.01)
    poll.join()
    new = poller.snapshot()
    assert new is not old and new.created >= old.created
    assert {id(s) for s in seen} <= {id(old), id(new)}
    assert old == frozen  # the snapshot handed out before the poll is exactly as it was


def test_concurrent_probes_never_exceed_the_cap(tmp_path):
    host = FakeHost(tmp_path)
    spans = tmp_path / "spans"
    tool = host.bin / "smartctl"
    devices = [f"sd{c}" for c in "abcdef"]
    scan = {"devices": [{"name": f"/dev/{d}", "type": "sat", "protocol": "ATA"} for d in devices]}
    # Each read records when it starts and ends, then prints a real capture.
    tool.write_text(f"""#!/bin/sh
for a in "$@"; do last="$a"; done
case "$*" in
  *--version*) cat "{fixture_path('fakehost/smartctl-version.txt')}"; exit 0 ;;
  *--scan*) echo '{json.dumps(scan)}'; exit 0 ;;
esac
echo "start $(date +%s.%N)" >> "{spans}"
sleep 0.3
echo "end $(date +%s.%N)" >> "{spans}"
cat "{fixture_path('fakehost/scrutiny__smart-ata-full.json')}"
""")
    tool.chmod(0o755)
    poller = make_poller(host, max_concurrent_probes=2)
    poller.run_discovery()
    poller.run("smartctl")
    events = sorted((float(t), 1 if kind == "start" else -1)
                    for kind, t in (line.split() for line in spans.read_text().splitlines()))
    assert len(events) == 2 * len(devices)
    running = peak = 0
    for _, step in sorted(events, key=lambda e: (e[0], e[1])):
        running += step
        peak = max(peak, running)
    print(f"\npeak concurrent smartctl reads: {peak} (cap 2)")
    assert peak == 2
    poller.stop()


def test_a_source_that_raises_is_failed_for_that_run_and_collect_goes_on(tmp_path, caplog):
    """A runner that raises (a probe-helper protocol bug, say) makes discovery raise: that run
    is failed in ssd_collector_success and counted, the traceback is logged once, a repeat is
    one line, and poll_once carries on with the other sources."""
    import logging

    host = build_default_host(tmp_path)

    def broken_runner(argv, **kwargs):
        raise RuntimeError("helper answered garbage")

    config = Config(history=False, collectors=["smartctl", "diskstats"],
                    tools=Tools(smartctl=str(host.bin / "smartctl")),
                    paths=Paths(sysfs=str(host.sys), procfs=str(host.proc)))
    poller = Poller(config, runner=broken_runner)
    try:
        with caplog.at_level(logging.ERROR, logger="ssdfleet.poller"):
            poller.poll_once()
            poller.poll_once()
        registry = make_registry(poller.snapshot)
        assert registry.get_sample_value("ssd_collector_success", {"collector": "discovery"}) == 0
        assert registry.get_sample_value("ssd_collector_errors_total", {"collector": "discovery"}) == 2
        assert registry.get_sample_value("ssd_collector_success", {"collector": "diskstats"}) == 1
        crashes = [r for r in caplog.records if "collector discovery crashed" in r.getMessage()]
        assert len(crashes) == 2 and sum(1 for r in crashes if r.exc_info) == 1
    finally:
        poller.stop()
