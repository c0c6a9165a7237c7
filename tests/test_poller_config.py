"""Configuration that reaches the poller: temperature limits, device-mapper and loop devices in
the iostat view, the write-cache reader's tool paths and timeout, and the order of the first
passes. Real fake-tool processes and a fake sysfs tree; no mocks."""

from __future__ import annotations

import os
import time

from agent.metrics import make_registry
from agent.views import drive_view
from tests.conftest import fixture_path
from tests.fakehost import DISKSTATS, build_default_host
from tests.test_e2e_agent import NVME0_SERIAL, SDA_SERIAL
from tests.test_poller import make_poller


def test_configured_temperature_limit_fills_and_replaces_the_drives_own(tmp_path):
    host = build_default_host(tmp_path)
    poller = make_poller(host, temperature_limits=[
        {"model": "860 EVO", "celsius": 55},  # the SATA drive reports no limit of its own
        {"serial": NVME0_SERIAL, "sensor": "drive", "celsius": 60},
    ])
    try:
        poller.run_discovery()
        poller.run("smartctl")
        registry = make_registry(poller.snapshot)
        by_serial = poller.snapshot().by_serial()
    finally:
        poller.stop()
    sda = by_serial[SDA_SERIAL].reading
    assert [t.limit_celsius for t in sda.temperatures] == [55.0] * len(sda.temperatures)
    assert sda.sources["temperature_limit_celsius"] == "config"
    sensor = sda.temperatures[0].sensor
    assert registry.get_sample_value(
        "ssd_temperature_limit_celsius", {"device": "sda", "serial": SDA_SERIAL, "sensor": sensor}) == 55.0
    nvme = {t.sensor: t for t in by_serial[NVME0_SERIAL].reading.temperatures}
    assert nvme["drive"].limit_celsius == 60.0
    # A drive no rule names keeps what it reported.
    others = [d for s, d in by_serial.items() if s not in (SDA_SERIAL, NVME0_SERIAL)]
    assert all("temperature_limit_celsius" not in d.reading.sources for d in others)


def test_limit_below_the_temperature_flags_the_drive(tmp_path):
    host = build_default_host(tmp_path)
    poller = make_poller(host, temperature_limits=[{"model": "860 EVO", "celsius": 20}])
    try:
        poller.run_discovery()
        poller.run("smartctl")
        drive = poller.snapshot().by_serial()[SDA_SERIAL]
    finally:
        poller.stop()
    view = drive_view(drive, time.time())
    assert view.severity == "critical"  # at or above its limit: SSDTemperatureAboveLimit pages
    assert any("at or above limit 20 C" in f.reason for f in view.flags), view.flags


def test_device_mapper_and_loop_only_when_configured(tmp_path):
    host = build_default_host(tmp_path)
    host.block_device("dm-0", 2000000)
    host.block_device("loop1", 4096)
    host.diskstats(DISKSTATS + " 253       0 dm-0 70 0 560 7 90 0 720 9 0 12 16\n"
                               "   7       1 loop1 5 0 40 1 0 0 0 0 0 1 1\n")

    def io_devices(**extra):
        poller = make_poller(host, collectors=["diskstats"], **extra)
        try:
            poller.run_discovery()
            poller.run("diskstats")
            return {d.device: d.io for d in poller.snapshot().drives if d.io is not None}
        finally:
            poller.stop()

    default = io_devices()
    assert "dm-0" not in default and "loop1" not in default and "loop0" not in default
    both = io_devices(include_device_mapper=True, include_loop=True)
    assert both["dm-0"].reads_completed == 70 and both["dm-0"].written_bytes == 720 * 512
    assert both["loop1"].reads_completed == 5
    assert "loop0" not in both  # an unused loop device (size 0) is still no drive
    assert io_devices(include_device_mapper=True).keys() >= {"dm-0"}
    assert "loop1" not in io_devices(include_device_mapper=True)


def test_write_cache_tools_get_the_configured_dev_root_and_timeout(tmp_path):
    """Issue 27: one tool timeout, applied in the runner. Every call any source makes (smartctl's
    probe still carries a default of its own, hdparm and nvme have none) reaches the runner
    with the configured bounds."""
    from agent.poller import Poller
    from collectors.runner import run_tool

    host = build_default_host(tmp_path)
    dev = tmp_path / "hostdev"
    dev.mkdir()
    asked = []

    def runner(argv, **kwargs):
        asked.append((argv[0], kwargs.get("timeout"), kwargs.get("grace"), kwargs.get("max_output")))
        return run_tool(argv, **kwargs)

    config = make_poller(host, collectors=["smartctl", "write_cache"], tool_timeout_seconds=7.5,
                         tool_max_output_bytes=4 << 20, paths={"sysfs": str(host.sys), "procfs": str(host.proc),
                                                            "dev": str(dev)}).config
    poller = Poller(config, runner=runner)
    try:
        poller.run_discovery()
        poller.run("smartctl")
        poller.run("write_cache")
    finally:
        poller.stop()
    hdparm = [c for c in host.calls() if c.startswith("hdparm")]
    assert hdparm == [f"hdparm -W {dev}/sda"]
    tools = {os.path.basename(a[0]) for a in asked}
    assert {"smartctl", "hdparm", "nvme"} <= tools, asked
    assert {a[1:] for a in asked} == {(7.5, 0.2, 4 << 20)}, asked


def test_first_write_cache_pass_waits_for_the_first_smart_pass(tmp_path):
    """The drive kinds come from SMART: a write-cache pass before it would see only the
    kernel's view of sda and not ask hdparm until its next interval."""
    host = build_default_host(tmp_path)
    host.set_response("smartctl", "sda", fixture_path("fakehost/scrutiny__smart-ata-full.json"), sleep=1.0)
    poller = make_poller(host, collectors=["smartctl", "write_cache"],
                         intervals={"smartctl": 600, "write_cache": 600, "discovery": 600})
    poller.start()
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            drive = poller.snapshot().by_serial().get(SDA_SERIAL)
            if drive is not None and any(s.source == "hdparm" for s in drive.write_cache):
                break
            time.sleep(0.1)
        else:
            raise AssertionError(f"no hdparm answer for sda in the first pass; calls: {host.calls()}")
    finally:
        poller.stop()
    calls = host.calls()
    smart_sda = next(i for i, c in enumerate(calls) if c.startswith("smartctl") and c.endswith("/dev/sda"))
    hdparm = next(i for i, c in enumerate(calls) if c.startswith("hdparm"))
    assert smart_sda < hdparm


def test_bad_temperature_limits_are_config_errors(tmp_path):
    import pytest

    from agent.config import ConfigError, load_config

    for bad in ("temperature_limits: [{model: '([', celsius: 60}]\n",  # not a regex
                "temperature_limits: [{model: x, celsius: -5}]\n",
                "temperature_limits: [{model: x, celsius: .inf}]\n",
                "temperature_limits: [{model: x}]\n",  # no celsius
                "temperature_limits: [{model: x, celsius: 60, colour: red}]\n",  # unknown key
                "include_loop: perhaps\n"):
        path = tmp_path / "bad.yml"
        path.write_text(bad)
        with pytest.raises(ConfigError):
            load_config(str(path))
