"""/metrics rendered per drive and section, redone only where a section's inputs changed
(agent/exposition_render.py, issue 32): the body stays byte for byte what one full render of
the same snapshot gives, by prometheus_client's own writer (the reference the agent's writer in
collectors/families.py is held to), and a diskstats pass re-renders the I/O
section of each drive and nothing else."""

from __future__ import annotations

import dataclasses

from prometheus_client import generate_latest

from agent.metrics import DRIVE_SECTIONS, Exposition, agent_families, drive_families
from collectors.model import Snapshot
from tests.conftest import fixture_path
from tests.fakehost import DISKSTATS, build_default_host
from tests.support.e2e import SDA_SERIAL
from tests.support.poller import Clock, make_poller


class _Families:
    def __init__(self, families):
        self._families = families

    def collect(self):
        return iter(self._families)


def full_render(snap: Snapshot) -> bytes:
    """Every family of the snapshot at once, written by prometheus_client (the reference)."""
    return generate_latest(_Families(drive_families(snap.drives) + agent_families(snap)))


def body(exposition: Exposition, snap: Snapshot) -> bytes:
    exposition.feed(snap)  # as the poller's listener does: a scrape then renders nothing itself
    return exposition.render_parts()[0]


def moved_diskstats(step: int) -> str:
    """The fake host's /proc/diskstats with every counter of every line moved by ``step``."""
    out = []
    for line in DISKSTATS.splitlines():
        fields = line.split()
        out.append(" ".join(fields[:3] + [str(int(v) + step) for v in fields[3:]]))
    return "\n".join(out) + "\n"


def test_each_pass_renders_what_a_full_render_gives_and_a_diskstats_pass_only_the_io(tmp_path):
    host = build_default_host(tmp_path)
    clock = Clock()
    poller = make_poller(host, clock, collectors=["smartctl", "shannon", "write_cache", "diskstats"])
    exposition = Exposition(poller.snapshot, clock=clock)
    try:
        poller.run_discovery()
        for name in ("smartctl", "shannon", "write_cache", "diskstats"):
            poller.run(name)
            clock.now += 1
            snap = poller.snapshot()
            assert body(exposition, snap) == full_render(snap), name
        drives_with_io = sum(1 for d in snap.drives if d.io is not None)
        assert drives_with_io >= 4
        for step in (1, 2, 3):
            host.diskstats(moved_diskstats(step))
            clock.now += 15
            before = exposition.drive_text.sections_rendered
            poller.run("diskstats")
            snap = poller.snapshot()
            assert body(exposition, snap) == full_render(snap)
            # Only the I/O section of each drive whose counters moved: 4 of the 7 sections x 4.
            assert exposition.drive_text.sections_rendered - before == drives_with_io
        # The write cache switched off on sda: that drive's write cache section, nothing else.
        host.set_response("hdparm", "sda", fixture_path("fakehost/hdparm-W-sda-off.txt"))
        host.set_write_cache("sda", "write through")
        clock.now += 60
        before = exposition.drive_text.sections_rendered
        poller.run("write_cache")
        snap = poller.snapshot()
        text = body(exposition, snap)
        assert text == full_render(snap)
        assert exposition.drive_text.sections_rendered - before == 1
        assert f'ssd_write_cache_enabled{{device="sda",serial="{SDA_SERIAL}"}} 0.0'.encode() in text
    finally:
        poller.stop()


def test_drives_leaving_coming_back_and_reordered(tmp_path):
    host = build_default_host(tmp_path)
    clock = Clock()
    poller = make_poller(host, clock, collectors=["smartctl", "shannon", "write_cache", "diskstats"])
    try:
        snap = poller.poll_once()
    finally:
        poller.stop()
    drives = snap.drives
    assert len(drives) >= 4
    exposition = Exposition(lambda: snap, clock=clock)
    # A vanished drive, a drive with no I/O record any more, the order turned round, none at
    # all, and back: each time the bytes a full render of that snapshot gives.
    shapes = [drives, drives[1:], drives[:1] + tuple(dataclasses.replace(d, io=None) for d in drives[1:]),
              tuple(reversed(drives)), (), drives, drives + drives[:1]]
    for i, shape in enumerate(shapes):
        changed = dataclasses.replace(snap, drives=tuple(shape), created=snap.created + i)
        assert body(exposition, changed) == full_render(changed), i
    # The same drive records in a new snapshot: nothing of theirs rendered again.
    before = exposition.drive_text.sections_rendered
    again = dataclasses.replace(snap, drives=drives, created=snap.created + 100)
    assert body(exposition, again) == full_render(again)
    assert exposition.drive_text.sections_rendered == before
    # A new record object with equal contents (what a merge that re-built it gives): same.
    rebuilt = tuple(dataclasses.replace(d) for d in drives)
    copy = dataclasses.replace(snap, drives=rebuilt, created=snap.created + 101)
    assert body(exposition, copy) == full_render(copy)
    assert exposition.drive_text.sections_rendered == before


def test_a_section_not_in_the_inputs_table_is_rendered_when_its_drive_changes(tmp_path, monkeypatch):
    """A section added later without an inputs entry (the table is a speed-up, not a contract)
    is rendered again whenever anything of its drive changed, never served stale."""
    from agent import metrics

    seen = []

    def _extra(f, d, ids):
        seen.append(d.serial)
        f.gauge("ssd_test_io_reads", "Reads, by a section the table does not know.", ids,
                None if d.io is None else d.io.reads_completed)

    monkeypatch.setattr(metrics, "DRIVE_SECTIONS", DRIVE_SECTIONS + (_extra,))
    host = build_default_host(tmp_path)
    clock = Clock()
    poller = make_poller(host, clock, collectors=["smartctl", "diskstats"])
    exposition = Exposition(poller.snapshot, clock=clock)
    try:
        snap = poller.poll_once()
        assert body(exposition, snap) == full_render(snap)
        host.diskstats(moved_diskstats(5))
        poller.run("diskstats")
        snap = poller.snapshot()
        text = body(exposition, snap)
        assert text == full_render(snap)
        assert b'ssd_test_io_reads{device="sda"' in text and b"125.0" in text  # 120 reads + 5
    finally:
        poller.stop()
