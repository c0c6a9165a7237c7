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


def _polled_sda(tmp_path):
    """The fake host's sda as one smartctl run reads it."""
    host = build_default_host(tmp_path)
    poller = make_poller(host)
    try:
        poller.run_discovery()
        poller.run("smartctl")
        return next(d for d in poller.snapshot().drives if d.serial == SDA_SERIAL)
    finally:
        poller.stop()


def test_label_values_are_escaped_in_the_per_scrape_part(tmp_path):
    drive = _polled_sda(tmp_path)
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


def test_a_byte_that_is_not_utf8_in_a_serial_is_shown_and_the_render_stands(tmp_path):
    """A serial read with surrogateescape keeps a lone surrogate for a byte that is not UTF-8
    (0xff here): it is written as a visible escape, so the body still encodes as UTF-8 and the
    drive's series are all there."""
    drive = _polled_sda(tmp_path)
    odd = b"S\xff7".decode("utf-8", "surrogateescape")
    assert printable(odd) == "S\\udcff7"
    snap = Snapshot(drives=(dataclasses.replace(drive, reading=drive.reading.replace(serial=odd)),), created=time.time())
    parsed = samples(Exposition(lambda: snap).render())
    assert list(ages(parsed)) == ["S\\udcff7"]
    assert ("ssd_life_left_ratio", frozenset({"device": "sda", "serial": "S\\udcff7"}.items())) in parsed


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


# -- issue 32: a scrape never waits for a render; gzip ---------------------------------------


def _many_drives(snap: Snapshot, copies: int) -> Snapshot:
    """``snap``'s drives repeated under new serials: a host big enough that a render takes a
    measurable time."""
    drives = []
    for i in range(copies):
        for d in snap.drives:
            reading = d.reading.replace(serial=f"{d.reading.serial}-{i}", device=f"{d.reading.device}x{i}")
            drives.append(dataclasses.replace(d, reading=reading))
    return dataclasses.replace(snap, drives=tuple(drives))


def test_a_scrape_during_a_render_is_answered_from_the_previous_one(tmp_path):
    """The listener renders a big new snapshot; scrapes meanwhile return at once with the
    previous snapshot's text, then the new one once it is swapped in."""
    host = build_default_host(tmp_path)
    poller = make_poller(host)
    try:
        poller.run_discovery()
        poller.run("smartctl")
        small = poller.snapshot()
        big = _many_drives(small, 300)
        exposition = Exposition(lambda: big)
        exposition.feed(small)
        t0 = time.perf_counter()
        exposition.prepare(big)
        render_cost = time.perf_counter() - t0
        exposition = Exposition(lambda: big)
        exposition.feed(small)
        worker = threading.Thread(target=exposition.feed, args=(big,))
        worker.start()
        during = []
        while worker.is_alive():
            t = time.perf_counter()
            text, _ages = exposition.render_parts()
            during.append((time.perf_counter() - t, len(text)))
            time.sleep(0.002)
        worker.join()
        print(f"  render of {len(big.drives)} drives: {render_cost * 1000:.0f} ms; {len(during)} scrapes during it, "
              f"slowest {max(d for d, _ in during) * 1000:.1f} ms")
        assert render_cost > 0.05, "the render is too quick to show anything"
        assert len(during) >= 3
        small_size = min(n for _, n in during)
        text, _ = exposition.render_parts()
        assert len(text) > 100 * small_size
        # each scrape saw one whole render, the old one until the swap, then the new one
        assert {n for _, n in during} <= {small_size, len(text)}
        assert sum(1 for _, n in during if n == small_size) >= 3
        # each scrape took a small fraction of the render (generous: a loaded machine)
        assert max(d for d, _ in during) < render_cost / 3
        assert exposition.renders_total == 2
    finally:
        poller.stop()


def test_gzip_is_one_stream_of_the_same_text(tmp_path):
    """Asked for gzip, /metrics is one gzip member (clients that read only the first member of
    a stream lose nothing) whose text is the plain answer's, ages included; not asked, plain."""
    import zlib

    from fastapi.testclient import TestClient

    from agent.api import create_app

    host = build_default_host(tmp_path)
    poller = make_poller(host)
    try:
        poller.run_discovery()
        poller.run("smartctl")
        app = create_app(poller.snapshot)
        with TestClient(app) as client:
            plain = client.get("/metrics", headers={"Accept-Encoding": "identity"})
            packed = client.get("/metrics", headers={"Accept-Encoding": "gzip"})
            refused = client.get("/metrics", headers={"Accept-Encoding": "gzip;q=0"})
        assert plain.headers.get("content-encoding") is None and refused.headers.get("content-encoding") is None
        assert packed.headers["content-encoding"] == "gzip" and packed.headers["vary"] == "Accept-Encoding"
        assert samples(packed.content).keys() == samples(plain.content).keys()  # httpx decoded it
        assert ages(samples(packed.content)) and ages(samples(packed.content)).keys() == ages(samples(plain.content)).keys()
        # the raw bytes: exactly one member, its trailer's CRC over the whole text
        exposition = app.state.exposition
        head, tail = exposition.gzip_parts(b"# extra\n")
        stream = head + tail
        one = zlib.decompressobj(31)
        text = one.decompress(stream)
        assert one.eof and one.unused_data == b"", "more than one gzip member"
        static, ages_part = exposition.render_parts()
        assert text.startswith(static) and text.endswith(b"# extra\n")
        assert text.count(b"ssd_data_age_seconds{") == ages_part.count(b"ssd_data_age_seconds{") > 0
        print(f"  /metrics: {len(plain.content):,} bytes plain, {len(stream):,} gzipped")
        assert len(stream) < len(plain.content) / 4
    finally:
        poller.stop()
