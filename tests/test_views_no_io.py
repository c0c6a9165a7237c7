"""``/`` and ``/api/v1/drives`` answer from memory: the drives' history is read from SQLite when
a snapshot arrives (ViewState.update, a poller listener), never inside a request. Proved with
the real History on a file that is closed and deleted between the precompute and the
requests: a request that read it would find no samples and show none."""

from __future__ import annotations

import dataclasses
import json
import os

from fastapi.testclient import TestClient

from agent.api import create_app
from agent.history import History
from agent.page import render_page
from agent.views import ViewState
from tests.support.e2e import SDA_SERIAL
from tests.support.snapshots import polled_snapshot

HOUR = 3600.0


def _seed(history: History, snap, now: float) -> None:
    """A day of samples every 4 h per drive, host writes rising 10 GB a sample."""
    for d in snap.drives:
        r = d.reading
        if r.host_written_bytes is None:
            continue
        for k in range(6, 0, -1):
            history.record(d.serial, now - k * 4 * HOUR,
                           dataclasses.replace(r, host_written_bytes=r.host_written_bytes - k * 10**10))


def _answers(app) -> dict:
    with TestClient(app) as client:
        page = client.get("/")
        api = client.get("/api/v1/drives")
    assert page.status_code == 200 and api.status_code == 200
    return {"page": page.text, "api": api.json()}


def test_page_and_api_do_not_read_the_history_file(tmp_path):
    snap, clock = polled_snapshot(tmp_path / "host")
    path = tmp_path / "history.sqlite"
    history = History(str(path), clock=clock)
    _seed(history, snap, clock.now)
    state = ViewState(history)
    state.update(snap)  # what the poller's listener thread does with each new snapshot

    def app_on(state_or_flags: dict):
        return create_app(lambda: snap, clock=clock,
                          page=lambda s, now: render_page(s, now, hostname="db1", **state_or_flags),
                          **state_or_flags)

    before = _answers(app_on({"state": state}))
    drives = {d["serial"]: d for d in before["api"]["drives"]}
    assert len(drives[SDA_SERIAL]["history"]) == 6
    assert drives[SDA_SERIAL]["history"][-1]["write_rate_bytes_per_second"] > 0
    assert "<polyline" in before["page"]  # the sparklines are drawn from those samples

    history.close()
    os.remove(path)
    assert not path.exists()
    assert history.samples(SDA_SERIAL) == []  # what a request reading history would now get

    after = _answers(app_on({"state": state}))
    assert after == before
    assert not path.exists()  # nothing opened it again


def test_a_new_sample_reaches_the_views_at_the_next_snapshot_not_at_a_request(tmp_path):
    snap, clock = polled_snapshot(tmp_path / "host")
    history = History(None, clock=clock)
    state = ViewState(history)
    state.update(snap)
    assert state.history(SDA_SERIAL) == []
    sda = next(d for d in snap.drives if d.serial == SDA_SERIAL)
    history.record(SDA_SERIAL, clock.now - HOUR, sda.reading)
    assert state.history(SDA_SERIAL) == []  # a request in between still sees the precomputed views
    state.update(dataclasses.replace(snap, created=clock.now))
    assert [p["ts"] for p in state.history(SDA_SERIAL)] == [clock.now - HOUR]
    # the same snapshot again, nothing recorded: History is not read again
    history.close()
    state.update(snap)
    assert len(state.history(SDA_SERIAL)) == 1


def test_without_history_the_views_have_none(tmp_path):
    snap, clock = polled_snapshot(tmp_path / "host")
    state = ViewState()
    state.update(snap)
    answers = _answers(create_app(lambda: snap, clock=clock, state=state))
    assert all(d["history"] is None for d in answers["api"]["drives"])
    assert json.loads(json.dumps(answers["api"]))["severity"] in ("ok", "warning", "critical")
