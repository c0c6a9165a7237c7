"""The scheduler's run, in process, on a fake clock: the real source (collectors/selftest/source.py)
built with the context the agent's scheduler gives it (the real bounded runner, the fake
smartctl of tests/sources/selftest/common.py on disk, a fake /proc/diskstats), so hours of
schedule pass in milliseconds. Shows what the end-to-end tests cannot wait for: the window
closing, the long test going first and covering the short one, a test given up after
``max_test_hours``, a device name that now answers with another serial, NVMe with a smartctl
older than 7.3, a drive with no utilisation figure, a restart mid-test."""

from __future__ import annotations

import threading
from datetime import datetime
from typing import List, Tuple

import pytest

from collectors.runner import run_tool
from collectors.selftest.schedule import SelfTestSettings
from collectors.selftest.source import SelfTestSource
from collectors.source import SourceContext, Target
from tests.conftest import fixture_path
from tests.sources.selftest.common import NVME0, NVME0_SERIAL, SDA_SERIAL, SelfTestHost, sata_host

SDA = Target(identity=SDA_SERIAL, kind="ata", name="sda", device="/dev/sda", block_device="sda",
             queue_devices=("sda",), device_type="sat", serial=SDA_SERIAL)
# Saturday 2026-11-28, local time
SATURDAY_0230 = datetime(2026, 11, 28, 2, 30).timestamp()


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _source(host: SelfTestHost, clock: Clock, targets: Tuple[Target, ...] = (SDA,), **settings) -> SelfTestSource:
    config = host.config(state_dir=str(host.state))
    values = dict(enabled=True, utilisation_sample_seconds=0.1, retry_minutes=10)
    values.update(settings)
    ctx = SourceContext(
        config=config, settings=SelfTestSettings(**values), tool_paths=config.tools.model_dump(),
        run=lambda argv, **kw: run_tool(argv, timeout=10), probe=lambda key, fn: fn(), submit=None,
        stopping=threading.Event(), clock=clock, record=lambda *a: None, changed=lambda: None,
        gone=lambda: None, targets=lambda: targets, block_devices=lambda: {"sda": None},
        quarantined=lambda device: False)
    return SelfTestSource(ctx)


def _starts(host: SelfTestHost) -> List[str]:
    return [c.split(" -t ")[1] for c in host.calls() if " -t " in c]


def test_long_first_covers_the_short_then_nothing_until_the_next_window(tmp_path):
    host = sata_host(tmp_path)
    clock = Clock(datetime(2026, 11, 28, 3, 10).timestamp())  # Saturday: both windows open
    source = _source(host, clock)
    assert source.run().errors == ()
    assert _starts(host) == ["long --nocheck=standby,3 -d sat /dev/sda"]
    clock.now += 60
    source.run()  # the status query says it ended: nothing new in the log
    assert source.report().host.results == ((("long", "unknown"), 1),)
    clock.now += 3600
    source.run()
    assert len(_starts(host)) == 1  # the short window of the day counts as done
    row = {r.test: r for r in source.report().host.rows}
    assert row["short"].next_due == datetime(2026, 11, 29, 2).timestamp()
    assert row["long"].next_due == datetime(2026, 12, 5, 3).timestamp()
    clock.now = datetime(2026, 11, 29, 6, 0).timestamp()  # Sunday's short window has closed
    source.run()
    assert len(_starts(host)) == 1
    clock.now = datetime(2026, 11, 30, 2, 5).timestamp()  # Monday's is open
    source.run()
    assert _starts(host)[1:] == ["short --nocheck=standby,3 -d sat /dev/sda"]


def test_a_test_that_never_ends_is_given_up_after_max_test_hours(tmp_path):
    host = sata_host(tmp_path)
    host.running_polls(10 ** 6)
    clock = Clock(SATURDAY_0230)
    source = _source(host, clock, long=None, max_test_hours=2)
    source.run()
    for _ in range(3):
        clock.now += 1800
        source.run()
        assert source.report().host.rows[0].running
        assert source.report().host.rows[0].remaining_percent == 10  # the capture: 10% remaining
    clock.now += 1801
    source.run()
    host_result = source.report().host
    assert host_result.results == ((("short", "lost"), 1),)
    assert not host_result.rows[0].running and host_result.rows[0].result == "lost"
    assert len(_starts(host)) == 1


def test_a_restart_mid_test_follows_the_same_test(tmp_path):
    host = sata_host(tmp_path)
    host.running_polls(3)
    clock = Clock(SATURDAY_0230)
    _source(host, clock, long=None).run()
    clock.now += 60
    again = _source(host, clock, long=None)  # a new process: the state file says what runs
    again.run()
    assert again.report().host.rows[0].running
    for _ in range(3):
        clock.now += 60
        again.run()
    assert again.report().host.results == ((("short", "unknown"), 1),)
    assert len(_starts(host)) == 1


def test_a_device_name_that_answers_with_another_serial_is_not_tested(tmp_path):
    host = sata_host(tmp_path)
    host.set_response("smartctl", "status-sda", fixture_path("smartctl-json/netdata__type-sat_device-ssd-sdc.json"))
    source = _source(host, Clock(SATURDAY_0230), long=None)
    source.run()
    assert _starts(host) == []
    assert source.report().host.skipped == ((("short", "identity"), 1),)


def test_nvme_needs_smartctl_7_3(tmp_path):
    host = sata_host(tmp_path)
    host.set_response("smartctl", "version", fixture_path("smartctl-text/linuxhw-EnterpriseDrive__HDD_Fujitsu_MHW2120BH_9C7E938C123C.txt"))
    nvme = Target(identity=NVME0_SERIAL, kind="nvme", name="nvme0", device="/dev/nvme0", block_device="nvme0",
                  queue_devices=("nvme0n1",), device_type="nvme", serial=NVME0_SERIAL)
    host.set_response("smartctl", "status-nvme0", fixture_path(NVME0))
    source = _source(host, Clock(SATURDAY_0230), targets=(nvme,), long=None)
    source.run()
    assert source.report().host.skipped == ((("short", "unsupported"), 1),)
    assert [c for c in host.calls() if "nvme0" in c] == []  # not even asked


@pytest.mark.parametrize("diskstats", [
    "",  # an empty file: no figure
    "   8      16 sdb 120 10 9000 50 400 20 64000 300 0 280 350 0 0 0 0 4 2\n",  # the drive is not in it
])
def test_no_utilisation_figure_no_test(tmp_path, diskstats):
    host = sata_host(tmp_path, diskstats=diskstats)
    source = _source(host, Clock(SATURDAY_0230), long=None)
    source.run()
    assert source.report().host.skipped == ((("short", "unmeasured"), 1),)
    assert _starts(host) == [] and [c for c in host.calls() if " -c " in c] == []


def test_a_failed_start_is_an_error_and_retried_after_retry_minutes(tmp_path):
    host = sata_host(tmp_path)
    # smartctl's answer when a test cannot start: exit status bit 2 (a SMART command failed)
    host.set_response("smartctl", "start-sda", b"", exit_code=4)
    clock = Clock(SATURDAY_0230)
    source = _source(host, clock, long=None)
    assert source.run().errors == ("/dev/sda: smartctl -t short: exit status 4",)
    clock.now += 300
    source.run()
    assert len(_starts(host)) == 1  # within retry_minutes: not asked again
    clock.now += 301
    host.set_response("smartctl", "start-sda", b"")
    source.run()
    assert len(_starts(host)) == 2
    assert source.report().host.skipped == ((("short", "error"), 1),)
    assert source.report().host.started == (("short", 1),)
