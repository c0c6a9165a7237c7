"""/metrics rendering: once per snapshot, with only the data ages computed per scrape; and the
poller waiting for a probe in flight on the same device instead of skipping the drive."""

from __future__ import annotations

import dataclasses
import threading
import time

from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from agent.metrics import Exposition, make_registry
from agent.text import printable
from collectors.model import Snapshot
from tests.conftest import fixture_path
from tests.fakehost import build_default_host
from tests.support.e2e import NVME0_SERIAL, SDA_SERIAL
from tests.support.poller import Clock, make_poller


def samples(text: bytes) -> dict:
    out = {}
    for family in text_string_to_metric_families(text.decode()):
        for s in family.samples:
            key = (s.name, frozenset(s.labels.items()))
            assert key not in out, f"duplicate sample {key}"
            out[key] = s.value
    return out


def ages(parsed: dict) -> dict:
    return {dict(k[1])["serial"]: v for k, v in parsed.items() if k[0] == "ssd_data_age_seconds"}


def test_cached_exposition_equals_a_full_render_and_ages_follow_the_clock(tmp_path):
    host = build_default_host(tmp_path)
    clock = Clock()
    poller = make_poller(host, clock)
    try:
        poller.run_discovery()
        poller.run("smartctl")
        exposition = Exposition(poller.snapshot, clock=clock)
        first = exposition.render()
        # The same samples as prometheus_client's own render of the whole snapshot.
        full = samples(generate_latest(make_registry(poller.snapshot)))
        cached = samples(first)
        assert set(cached) == set(full)
        for key, v in cached.items():
            if key[0] != "ssd_data_age_seconds":
                assert v == full[key], key
        assert ages(cached)[SDA_SERIAL] == 0.0
        assert exposition.renders_total == 1

        # Time passes, nothing new is polled: only the ages move, nothing is rendered again.
        clock.now += 125.5
        later = samples(exposition.render())
        assert exposition.renders_total == 1
        assert ages(later) == {s: a + 125.5 for s, a in ages(cached).items()}
        assert {k: v for k, v in later.items() if k[0] != "ssd_data_age_seconds"} == \
               {k: v for k, v in cached.items() if k[0] != "ssd_data_age_seconds"}

        # A new snapshot (nvme0 now reports 40% used) is rendered once, then reused.
        nvme = fixture_path("fakehost/scrutiny__smart-nvme.json").read_text()
        host.set_response("smartctl", "nvme0", nvme.replace('"percentage_used": 0', '"percentage_used": 40'))
        poller.run("smartctl")
        exposition.prepare(poller.snapshot())  # what the agent's listener thread does
        assert exposition.renders_total == 2
        fresh = samples(exposition.render())
        assert exposition.renders_total == 2
        assert fresh[("ssd_life_left_ratio", frozenset({"device": "nvme0", "serial": NVME0_SERIAL}.items()))] == 0.6
        assert ages(fresh)[SDA_SERIAL] == 0.0
    finally:
        poller.stop()


def test_label_values_are_escaped_in_the_per_scrape_part(tmp_path):
    host = build_default_host(tmp_path)
    poller = make_poller(host)
    try:
        poller.run_discovery()
        poller.run("smartctl")
        drive = next(d for d in poller.snapshot().drives if d.serial == SDA_SERIAL)
    finally:
        poller.stop()
    odd = 'S\\N "7"\nX'
    reading = drive.reading.replace(serial=odd)
    snap = Snapshot(drives=(dataclasses.replace(drive, reading=reading),), created=time.time())
    text = Exposition(lambda: snap).render()
    parsed = samples(text)
    # The newline, a control character, is written as a visible escape (agent/text.py,
    # issue 26); backslash and quote survive the label syntax as themselves.
    shown = 'S\\N "7"\\nX'
    assert printable(odd) == shown
    assert list(ages(parsed)) == [shown]
    info = [dict(k[1]) for k in parsed if k[0] == "ssd_drive_info"]
    assert [i["serial"] for i in info] == [shown]


def test_empty_snapshot_renders_agent_series_only():
    text = Exposition(lambda: Snapshot(created=1.0)).render()
    parsed = samples(text)
    assert not ages(parsed)
    assert parsed[("ssd_drives", frozenset())] == 0


def test_a_probe_waits_for_the_one_in_flight_on_its_device(tmp_path):
    """hdparm is slow on sda while the SMART cycle starts: the SMART read of sda waits for it
    (one probe per device) and reads the drive in the same cycle instead of skipping it."""
    host = build_default_host(tmp_path)
    clock = Clock()
    poller = make_poller(host, clock, collectors=["smartctl", "write_cache"])
    try:
        poller.run_discovery()
        poller.run("smartctl")
        read_at = next(d for d in poller.snapshot().drives if d.serial == SDA_SERIAL).last_poll["smartctl"]
        host.set_response("hdparm", "sda", fixture_path("fakehost/hdparm-W-sda-on.txt"), sleep=1.5)
        cache = threading.Thread(target=poller.run, args=("write_cache",))
        cache.start()
        deadline = time.monotonic() + 10
        while not any(c.startswith("hdparm") for c in host.calls()):
            assert time.monotonic() < deadline, "hdparm never ran"
            time.sleep(0.02)
        clock.now += 300
        poller.run("smartctl")
        cache.join(10)
        sda = next(d for d in poller.snapshot().drives if d.serial == SDA_SERIAL)
        assert sda.last_poll["smartctl"] == read_at + 300, "the SMART read of sda was skipped"
        calls = host.calls()
        hdparm_at = max(i for i, c in enumerate(calls) if c.startswith("hdparm"))
        smart_at = max(i for i, c in enumerate(calls) if c.startswith("smartctl") and c.endswith("/dev/sda"))
        assert smart_at > hdparm_at  # it ran after hdparm, not beside it
        assert poller.snapshot().by_serial()[SDA_SERIAL].write_cache  # and hdparm's answer landed
    finally:
        poller.stop()
