"""The write cache source asks the drive's own tool by need (issue 32): sysfs every pass, the
tool (hdparm, nvme get-feature) once per SMART interval or when sysfs changes, never for a
drive asleep. The tools are the fake host's executables, found through the configured tool
paths, and every call they get is in its calls.log."""

from __future__ import annotations

import json
from typing import List

from collectors.model import CACHE_DISABLED, CACHE_ENABLED
from collectors.smartctl import STANDBY_EXIT_STATUS
from tests.conftest import fixture_path
from tests.fakehost import FakeHost, build_default_host
from tests.support.e2e import NVME0_SERIAL, SDA_SERIAL
from tests.support.poller import Clock, make_poller

PASS = 60.0  # the write cache source's default interval
SMART = 300.0  # the smartctl source's default interval: the drive's tool cadence

STANDBY_JSON = json.dumps({
    "smartctl": {"version": [7, 3], "exit_status": STANDBY_EXIT_STATUS,
                 "messages": [{"string": "Device is in STANDBY mode, exit(3)", "severity": "information"}]},
    "device": {"name": "/dev/sda", "type": "sat", "protocol": "ATA"},
})


def hdparm_calls(host: FakeHost) -> List[str]:
    return [c for c in host.calls() if c.startswith("hdparm") and c.endswith("/dev/sda")]


def nvme_feature_calls(host: FakeHost) -> List[str]:
    return [c for c in host.calls() if c.startswith("nvme get-feature")]


def drive(poller, serial):
    return next(d for d in poller.snapshot().drives if d.serial == serial)


def started(tmp_path, **extra):
    host = build_default_host(tmp_path)
    # `nvme get-feature /dev/nvmeX -f 6`: the fake tool keys its answer on the last argument
    host.set_response("nvme", "6", fixture_path("write-cache/nvme/vwc_on_v2.out"))
    clock = Clock()
    poller = make_poller(host, clock, collectors=["smartctl", "write_cache"], **extra)
    poller.run_discovery()
    poller.run("smartctl")  # the kinds: sda is ATA (hdparm), nvme0/nvme1 NVMe (get-feature)
    return host, clock, poller


def test_an_hour_of_passes_asks_each_drive_once_per_smart_interval(tmp_path):
    host, clock, poller = started(tmp_path)
    try:
        for _ in range(int(3600 / PASS)):
            poller.run("write_cache")
            clock.now += PASS
        # 60 passes read sysfs 60 times; the tools were asked at 0, 300, ..., 3300 s: 12 times
        # per drive (the 60 of one ask per pass before issue 32).
        assert len(hdparm_calls(host)) == 12
        assert len(nvme_feature_calls(host)) == 12 * 2  # nvme0 and nvme1
        states = drive(poller, SDA_SERIAL).write_cache
        assert {(s.source, s.state) for s in states} == {("sysfs_queue", CACHE_ENABLED), ("hdparm", CACHE_ENABLED)}
        assert poller.sources["write_cache"].drive_asks_total == 36
    finally:
        poller.stop()


def test_a_sysfs_change_asks_the_drive_at_once(tmp_path):
    host, clock, poller = started(tmp_path)
    try:
        poller.run("write_cache")
        clock.now += PASS
        poller.run("write_cache")
        assert len(hdparm_calls(host)) == 1  # the second pass, inside the SMART interval: sysfs only
        # `hdparm -W0 /dev/sda` on a direct-attached disk: libata revalidates, sd rewrites
        # queue/write_cache; the drive is asked in the very next pass, not 4 minutes later.
        host.set_response("hdparm", "sda", fixture_path("fakehost/hdparm-W-sda-off.txt"))
        host.set_write_cache("sda", "write through")
        clock.now += PASS
        poller.run("write_cache")
        assert len(hdparm_calls(host)) == 2
        states = {(s.source, s.state) for s in drive(poller, SDA_SERIAL).write_cache}
        assert states == {("sysfs_queue", CACHE_DISABLED), ("hdparm", CACHE_DISABLED)}
        clock.now += PASS
        poller.run("write_cache")  # sysfs unchanged since that ask: no new call
        assert len(hdparm_calls(host)) == 2
    finally:
        poller.stop()


def test_a_change_behind_the_kernels_back_shows_within_one_smart_interval(tmp_path):
    host, clock, poller = started(tmp_path)
    try:
        poller.run("write_cache")
        # The drive's cache switched off through a path the kernel did not see (a SAS HBA or a
        # USB bridge passing the command): sysfs still says write back.
        host.set_response("hdparm", "sda", fixture_path("fakehost/hdparm-W-sda-off.txt"))
        seen_off_at = None
        for _ in range(int(SMART / PASS)):
            clock.now += PASS
            poller.run("write_cache")
            hdparm = [s for s in drive(poller, SDA_SERIAL).write_cache if s.source == "hdparm"]
            # Until the drive is asked again its standing answer is shown, under its own source.
            assert len(hdparm) == 1
            if hdparm[0].state == CACHE_DISABLED and seen_off_at is None:
                seen_off_at = clock.now
        assert seen_off_at is not None and seen_off_at - 1_700_000_000.0 == SMART
        assert len(hdparm_calls(host)) == 2
    finally:
        poller.stop()


def test_a_drive_asleep_is_not_asked(tmp_path):
    host, clock, poller = started(tmp_path)
    try:
        host.set_response("smartctl", "sda", STANDBY_JSON, exit_code=STANDBY_EXIT_STATUS)
        clock.now += SMART
        poller.run("smartctl")
        assert drive(poller, SDA_SERIAL).reading.power_state == "standby"
        before = len(hdparm_calls(host))
        for _ in range(10):  # past two SMART intervals
            poller.run("write_cache")
            clock.now += PASS
        assert len(hdparm_calls(host)) == before == 0
        assert [s.source for s in drive(poller, SDA_SERIAL).write_cache] == ["sysfs_queue"]
        # NVMe drives awake meanwhile: asked at their cadence.
        assert len(nvme_feature_calls(host)) == 2 * 2
        assert drive(poller, NVME0_SERIAL).write_cache
    finally:
        poller.stop()


def test_a_failing_tool_counts_once_per_ask_and_the_run_stays_failed(tmp_path):
    host, clock, poller = started(tmp_path)
    try:
        host.set_response("hdparm", "sda", "garbage from a broken bridge\n", exit_code=2)
        for _ in range(5):
            poller.run("write_cache")
            clock.now += PASS
        assert len(hdparm_calls(host)) == 1
        collector = next(c for c in poller.snapshot().collectors if c.name == "write_cache")
        assert not collector.success  # the standing answer is still a failure
        assert collector.errors_total == 1  # one failed ask, counted once, not once per pass
        hdparm = [s for s in drive(poller, SDA_SERIAL).write_cache if s.source == "hdparm"]
        assert hdparm[0].state == "unknown" and "exit" in hdparm[0].detail
    finally:
        poller.stop()


def test_the_tool_cadence_follows_the_smartctl_interval(tmp_path):
    from agent.config import Config

    intervals = Config().intervals.model_copy(update={"smartctl": 120.0})
    host, clock, poller = started(tmp_path, intervals=intervals)
    try:
        for _ in range(10):
            poller.run("write_cache")
            clock.now += PASS
        assert len(hdparm_calls(host)) == 5  # at 0, 120, 240, 360, 480 s
    finally:
        poller.stop()
