"""The ``/`` page in the agent's first hour, when history holds a sample or two: what it says
must not be noise (a lone dot, "steady for 0 days", a sparkline of nothing)."""

from __future__ import annotations

import time

from agent.history import History
from agent.page import render_page
from agent.poller import Poller
from agent.views import ViewState
from collectors.model import DriveReading
from tests.fakehost import build_default_host
from tests.support.e2e import SHANNON_SERIAL
from tests.support.page import cell, drive_rows, parse


def test_two_samples_twenty_minutes_apart(tmp_path):
    host = build_default_host(tmp_path)
    poller = Poller(host.config())
    try:
        snap = poller.poll_once()
    finally:
        poller.stop()
    card = next(d for d in snap.drives if d.serial == SHANNON_SERIAL)
    now = time.time()
    history = History(None, clock=lambda: now)
    try:
        r = card.reading
        for ts, written in ((now - 1200, r.host_written_bytes - 10**9), (now, r.host_written_bytes)):
            history.record(SHANNON_SERIAL, ts, DriveReading(
                kind="seed", device="seed", serial=SHANNON_SERIAL, life_left_ratio=r.life_left_ratio,
                host_written_bytes=written, bad_block_ratio=r.bad_block_ratio))
        state = ViewState(history)
        state.update(snap, now)
        root = parse(render_page(snap, now, state=state, hostname="h"))
    finally:
        history.close()
    row = next(x for x in drive_rows(root) if x.attrs["data-serial"] == SHANNON_SERIAL)
    # the same bad-block ratio twice, 20 minutes apart: said in minutes, not "0 days"
    assert "steady for 20 min" in cell(row, "c-bad").text(), cell(row, "c-bad").text()
    # two samples make a life line, but one interval is not a write-rate line yet
    life = cell(row, "c-life")
    assert life.find_all(lambda n: n.tag == "polyline") and "one sample" not in life.text()
    writes = cell(row, "c-writes")
    assert not writes.find_all(lambda n: n.tag == "svg") and "no rate yet" in writes.text()
