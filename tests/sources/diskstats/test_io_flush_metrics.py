"""Issue 15, part 1: merges, queue time, discards and flushes from /proc/diskstats reach /metrics.

The fake host's /proc/diskstats is prometheus/procfs' captured file, which mixes the three
line lengths the kernel prints: sda with 14 fields (no discard or flush counters), sdb with 18
(discards) and sdc with 20 (discards and flushes). A counter the kernel does not print must be
absent, not 0.
"""

from __future__ import annotations

import subprocess

import pytest

from agent.metrics import make_registry, render
from agent.poller import Poller
from tests.conftest import fixture_path
from tests.fakehost import FakeHost, promtool

DISKSTATS = "iostat/proc-diskstats/procfs__fixtures_proc_diskstats.txt"


@pytest.fixture
def registry(tmp_path):
    host = FakeHost(tmp_path)
    for name, serial in (("sda", "SERIAL-A"), ("sdb", "SERIAL-B"), ("sdc", "SERIAL-C")):
        host.block_device(name, 976773168, serial=serial)
    host.diskstats(fixture_path(DISKSTATS).read_text())
    poller = Poller(host.config(collectors=["diskstats"]))
    try:
        poller.poll_once()
    finally:
        poller.stop()
    return make_registry(poller.snapshot)


def _value(registry, name, device, serial):
    return registry.get_sample_value(name, {"device": device, "serial": serial})


def test_flush_counters_of_a_5_5_kernel_line(registry):
    # "8 0 sdc 14202 71 579164 21861 2995 1589 180500 40875 0 11628 55200 0 0 0 0 127 182"
    sdc = ("sdc", "SERIAL-C")
    assert _value(registry, "ssd_io_flushes_completed_total", *sdc) == 127
    assert _value(registry, "ssd_io_flush_time_seconds_total", *sdc) == pytest.approx(0.182)
    assert _value(registry, "ssd_io_reads_merged_total", *sdc) == 71
    assert _value(registry, "ssd_io_writes_merged_total", *sdc) == 1589
    assert _value(registry, "ssd_io_weighted_time_seconds_total", *sdc) == pytest.approx(55.2)
    assert _value(registry, "ssd_io_discards_completed_total", *sdc) == 0


def test_discard_counters_of_a_4_18_kernel_line_and_no_flushes(registry):
    # "8 0 sdb 326552 841 9657779 84 41822 2895 1972905 5007 0 60730 67070 68851 0 1925173784 11130"
    sdb = ("sdb", "SERIAL-B")
    assert _value(registry, "ssd_io_discards_completed_total", *sdb) == 68851
    assert _value(registry, "ssd_io_flushes_completed_total", *sdb) is None
    assert _value(registry, "ssd_io_flush_time_seconds_total", *sdb) is None


def test_a_14_field_line_has_queue_time_but_no_discards_or_flushes(registry):
    sda = ("sda", "SERIAL-A")
    assert _value(registry, "ssd_io_weighted_time_seconds_total", *sda) == pytest.approx(82621.804)
    assert _value(registry, "ssd_io_writes_merged_total", *sda) == 11134226
    for name in ("ssd_io_discards_completed_total", "ssd_io_flushes_completed_total", "ssd_io_flush_time_seconds_total"):
        assert _value(registry, name, *sda) is None, name


@pytest.mark.skipif(promtool() is None, reason="promtool is not installed (Debian package prometheus)")
def test_exposition_passes_promtool_check_metrics(registry):
    text = render(registry)
    assert b"ssd_io_flushes_completed_total" in text
    result = subprocess.run([promtool(), "check", "metrics"], input=text, capture_output=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
