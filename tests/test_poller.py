"""The Poller in-process, with the fake host's tool executables (real processes, no mocks)."""

from __future__ import annotations

import copy
import dataclasses
import json
import threading
import time
from typing import List

import pytest

from agent.config import Config, Paths, Tools, reload_plan
from agent.metrics import make_registry
from agent.poller import Poller, _place, merge_drives, merge_readings, merged_identities
from collectors.blockdev import BlockDevice
from collectors.model import DriveReading
from collectors.smartctl import STANDBY_EXIT_STATUS
from collectors.smartctl.source import STANDBY_MAX_SKIPS
from collectors.source import Report
from tests.conftest import fixture_path, read_fixture
from tests.fakehost import FakeHost, build_default_host
from tests.support.e2e import NVME0_SERIAL, SDA_SERIAL
from tests.support.poller import Clock, make_poller


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


def test_the_agent_builds_its_sources_at_start_and_one_that_cannot_be_built_is_a_failed_collector(
        tmp_path, monkeypatch, caplog):
    """The agent makes its poller with build_sources=False and listens before the sources are
    imported and built (issue 32). A reload before the build is applied by the build; a source
    whose build raises is logged and reported failed, and the others run."""
    import logging

    from collectors import registry

    host = build_default_host(tmp_path)
    config = Config(history=False, collectors=["smartctl", "diskstats"],
                    tools=Tools(smartctl=str(host.bin / "smartctl")),
                    paths=Paths(sysfs=str(host.sys), procfs=str(host.proc)))
    poller = Poller(config, build_sources=False)
    try:
        assert poller.sources == {} and host.calls() == []
        assert poller.reload(config.model_copy(update={"collectors": ["smartctl", "diskstats", "holders"]})) == []

        def cannot_be_built(ctx):
            raise OSError("its state file is unreadable")

        monkeypatch.setitem(registry.BY_NAME, "holders",
                            dataclasses.replace(registry.BY_NAME["holders"], build=cannot_be_built))
        with caplog.at_level(logging.ERROR, logger="ssdfleet.poller"):
            poller.build_sources()
            poller.build_sources()  # once
        assert list(poller.sources) == ["smartctl", "diskstats"]
        assert [r.getMessage() for r in caplog.records if "building collector holders" in r.getMessage()]
        poller.poll_once()
        metrics = make_registry(poller.snapshot)
        assert metrics.get_sample_value("ssd_collector_success", {"collector": "holders"}) == 0
        assert metrics.get_sample_value("ssd_collector_success", {"collector": "diskstats"}) == 1
        assert SDA_SERIAL in {d.serial for d in poller.snapshot().drives}
    finally:
        poller.stop()


# -- issue 26: two drives with one serial ----------------------------------------------------


def _report(*readings: DriveReading) -> Report:
    return Report(readings={r.device: (r, 1_700_000_000.0) for r in readings})


def test_two_drives_reporting_one_serial_are_kept_apart(tmp_path):
    """nvme0's real report replayed with sda's serial: before issue 26 the NVMe drive got
    sda's ATA defects and sda "no health data". Now each keeps its own values under
    SERIAL@DEVICE, each says it shares the serial, and the problems list says so."""
    host = build_default_host(tmp_path)
    doc = json.loads(read_fixture("fakehost/scrutiny__smart-nvme.json"))
    doc["serial_number"] = SDA_SERIAL
    host.set_response("smartctl", "nvme0", json.dumps(doc))
    poller = make_poller(host, collectors=["smartctl", "diskstats"])
    try:
        snap = poller.poll_once()
    finally:
        poller.stop()
    drives = {d.device: d for d in snap.drives}
    assert drives["sda"].serial == f"{SDA_SERIAL}@sda" and drives["nvme0"].serial == f"{SDA_SERIAL}@nvme0"
    assert drives["sda"].reading.kind == "ata" and drives["nvme0"].reading.kind == "nvme"
    assert drives["nvme0"].reading.defects == {} and drives["nvme0"].reading.media_errors == 0
    assert drives["sda"].reading.defects.get("reallocated") == 0 and drives["sda"].reading.media_errors is None
    assert all("smartctl" in d.last_poll for d in (drives["sda"], drives["nvme0"]))
    assert drives["sda"].reading.serial == SDA_SERIAL  # rules still match the drive's own serial
    shared = [p for p in snap.problems if "reports serial" in p]
    assert shared == [f"{SDA_SERIAL}@nvme0: /dev/nvme0 reports serial {SDA_SERIAL}, as does /dev/sda (a firmware "
                      "or cloning fault): kept apart by device",
                      f"{SDA_SERIAL}@sda: /dev/sda reports serial {SDA_SERIAL}, as does /dev/nvme0 (a firmware "
                      "or cloning fault): kept apart by device"]
    registry = make_registry(lambda: snap)
    for device in ("sda", "nvme0"):
        labels = {"device": device, "serial": f"{SDA_SERIAL}@{device}"}
        assert registry.get_sample_value("ssd_drive_serial_shared", labels) == 1
    assert registry.get_sample_value("ssd_drive_serial_shared", {"device": "nvme1", "serial": "S466NX0M776250H"}) is None


def test_merge_keeps_one_drive_per_wwn_and_apart_by_distinct_wwns():
    one = DriveReading(kind="scsi", device="/dev/sdb", block_device="sdb", serial="Z1", wwn="0x5000c500a1b2c3d4",
                       power_on_seconds=100)
    # Two paths to one dual-ported SAS drive: one WWN, one drive, nothing flagged.
    other_path = dataclasses.replace(one, device="/dev/sdc", block_device="sdc")
    merged = merge_readings([(10, "smartctl", _report(one, other_path))], {}, False)
    assert [r.identity for r, _ in merged] == ["Z1"] and "serial_shared" not in merged[0][0].extra
    # Two drives, two WWNs, one serial: kept apart by WWN (stable across a reboot's renaming).
    twin = dataclasses.replace(one, device="/dev/sdc", block_device="sdc", wwn="0x5000c500ffffffff", power_on_seconds=7)
    merged = merge_readings([(10, "smartctl", _report(one, twin))], {}, False)
    assert sorted(r.identity for r, _ in merged) == ["Z1@0x5000c500a1b2c3d4", "Z1@0x5000c500ffffffff"]
    assert {r.identity: r.power_on_seconds for r, _ in merged}["Z1@0x5000c500ffffffff"] == 7
    assert all("kept apart by WWN" in r.extra["serial_shared"] for r, _ in merged)


def test_a_second_source_joins_the_right_one_of_two_drives_sharing_a_serial():
    """nvme-cli's vendor reading of nvme0 fills nvme0's fields, not sda's; the history sample
    a source recorded maps to the merged identity of its own drive."""
    ata = DriveReading(kind="ata", device="/dev/sda", block_device="sda", serial="S1", defects={"reallocated": 3})
    nvme = DriveReading(kind="nvme", device="/dev/nvme0", block_device="nvme0", serial="S1", media_errors=0)
    vendor = DriveReading(kind="nvme", device="/dev/nvme0", block_device="nvme0", serial="S1",
                          nand_written_bytes=10**12, sources={"nand_written_bytes": "intel smart-log-add"})
    drives = merge_drives([(10, "smartctl", _report(ata, nvme)), (50, "nvme_vendor", _report(vendor))], {}, False)
    by_device = {d.reading.device: d.reading for d in drives}
    assert by_device["/dev/nvme0"].nand_written_bytes == 10**12 and by_device["/dev/sda"].nand_written_bytes is None
    assert by_device["/dev/sda"].defects == {"reallocated": 3} and by_device["/dev/nvme0"].defects == {}
    identities = merged_identities(drives)
    assert identities[("S1", _place(ata))] == "S1@sda"
    assert identities[("S1", _place(nvme))] == identities[("S1", _place(vendor))] == "S1@nvme0"


def test_a_kernel_drive_with_a_tools_serial_but_another_name_is_a_drive_of_its_own():
    read = DriveReading(kind="nvme", device="/dev/nvme0", block_device="nvme0", serial="S1", media_errors=0)
    block = {"nvme1n1": BlockDevice("nvme1n1", 10**12, False, serial="S1", transport="nvme")}
    merged = merge_readings([(10, "smartctl", _report(read))], block, True)
    assert sorted(r.identity for r, _ in merged) == ["S1@nvme0", "S1@nvme1"]
    assert {r.device: bool(p) for r, p in merged} == {"/dev/nvme0": True, "/dev/nvme1": False}


# -- issue 26: reloading the configuration ---------------------------------------------------


def test_reload_applies_rules_and_intervals_and_rebuilds_only_what_changed(tmp_path):
    host = build_default_host(tmp_path)
    poller = make_poller(host, collectors=["smartctl", "diskstats"])
    try:
        poller.poll_once()
        assert sda(poller).write_cache_expected == "enabled"
        smartctl, diskstats = poller.sources["smartctl"], poller.sources["diskstats"]
        new = poller.config.model_copy(update={
            "write_cache_expected": "disabled",
            "intervals": poller.config.intervals.model_copy(update={"smartctl": 42.0})})
        assert poller.reload(new) == []  # nothing to rebuild
        assert poller.sources["smartctl"] is smartctl and poller.interval("smartctl") == 42.0
        assert sda(poller).write_cache_expected == "disabled"  # the next snapshot has it

        # A new smartctl path builds smartctl again (only it); until its first pass the old
        # one's drives stay in the snapshot.
        copy_of = host.bin / "smartctl-copy"
        copy_of.write_bytes((host.bin / "smartctl").read_bytes())
        copy_of.chmod(0o755)
        new = new.model_copy(update={"tools": new.tools.model_copy(update={"smartctl": str(copy_of)})})
        calls = len(host.calls())
        assert poller.reload(new) == ["rebuilt smartctl"]
        assert poller.sources["smartctl"] is not smartctl and poller.sources["diskstats"] is diskstats
        assert [c.split()[1] for c in host.calls()[calls:]] == ["--version", "--scan-open"]  # it discovered
        read_at = sda(poller).last_poll["smartctl"]  # the old source's reading, carried
        time.sleep(0.01)
        poller.run("smartctl")
        assert sda(poller).last_poll["smartctl"] > read_at  # the new source's own first pass

        # Disabling a collector stops it and its ssd_collector_* series go.
        assert poller.reload(new.model_copy(update={"collectors": ["smartctl"]})) == ["stopped diskstats"]
        assert "diskstats" not in poller.sources
        assert "diskstats" not in {c.name for c in poller.snapshot().collectors}
    finally:
        poller.stop()


def test_reload_plan_keeps_what_needs_a_restart():
    running = Config(listen_address=":9877", http_max_connections=512, write_cache_expected="enabled")
    loaded = Config(listen_address=":9999", http_max_connections=64, write_cache_expected="any")
    applied, changed, restart = reload_plan(running, loaded)
    assert changed == ["write_cache_expected"] and restart == ["listen_address", "http_max_connections"]
    assert applied.listen_address == ":9877" and applied.http_max_connections == 512
    assert applied.write_cache_expected == "any"
    assert reload_plan(running, running)[1:] == ([], [])
