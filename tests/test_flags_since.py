"""Since when a drive has been flagged: the ViewState the agent feeds with every snapshot, its
times saved in the history file across restarts, and what the API, the page and the status
command show of them."""

from __future__ import annotations

import json
import sqlite3

from agent.history import History
from agent.page import render_page
from agent.status import format_reasons
from agent.views import ViewState, snapshot_views
from tests.conftest import fixture_path
from tests.fakehost import build_default_host
from tests.support.e2e import NVME1_SERIAL, SDA_SERIAL
from tests.support.poller import Clock, make_poller


def _keys(views, serial):
    return {f.key: f for v in views if v.serial == serial for f in v.flags}


def test_since_is_the_first_snapshot_with_the_flag_and_restarts_when_it_clears(tmp_path):
    host = build_default_host(tmp_path)
    clock = Clock()
    poller = make_poller(host, clock, collectors=["smartctl", "write_cache"])
    tracker = ViewState()
    try:
        poller.run_discovery()
        poller.run("smartctl")
        poller.run("write_cache")
        t1 = clock.now
        tracker.update(poller.snapshot())
        # nvme1 has 7 media errors from the start; sda is fine.
        flags = _keys(snapshot_views(poller.snapshot(), t1, state=tracker), NVME1_SERIAL)
        assert flags["media_errors"].since == t1
        assert not _keys(snapshot_views(poller.snapshot(), t1, state=tracker), SDA_SERIAL)

        # An hour on, sda's write cache goes off: a new flag with its own time; the old one keeps t1.
        clock.now += 3600
        host.set_response("hdparm", "sda", fixture_path("fakehost/hdparm-W-sda-off.txt"))
        poller.run("write_cache")
        tracker.update(poller.snapshot())
        views = snapshot_views(poller.snapshot(), clock.now, state=tracker)
        assert _keys(views, SDA_SERIAL)["write_cache"].since == t1 + 3600
        assert _keys(views, NVME1_SERIAL)["media_errors"].since == t1

        # It comes back on: the flag is gone; off again later starts a new "since".
        clock.now += 600
        host.set_response("hdparm", "sda", fixture_path("fakehost/hdparm-W-sda-on.txt"))
        poller.run("write_cache")
        tracker.update(poller.snapshot())
        assert tracker.since(SDA_SERIAL, "write_cache") is None
        clock.now += 600
        host.set_response("hdparm", "sda", fixture_path("fakehost/hdparm-W-sda-off.txt"))
        poller.run("write_cache")
        tracker.update(poller.snapshot())
        assert tracker.since(SDA_SERIAL, "write_cache") == t1 + 4800
    finally:
        poller.stop()


def test_flag_times_survive_a_restart_through_the_history_file(tmp_path):
    path = str(tmp_path / "history.sqlite")
    host = build_default_host(tmp_path)
    clock = Clock()
    poller = make_poller(host, clock)
    try:
        poller.run_discovery()
        poller.run("smartctl")
        first = poller.snapshot()
        history = History(path)
        ViewState(history).update(first)
        history.close()
        t1 = first.created

        # The agent restarts a day later: the flag still up keeps its time.
        clock.now += 86400
        poller.run("smartctl")
        history = History(path)
        tracker = ViewState(history)
        assert tracker.since(NVME1_SERIAL, "media_errors") == t1
        tracker.update(poller.snapshot())
        assert tracker.since(NVME1_SERIAL, "media_errors") == t1
        history.close()
        with sqlite3.connect(path) as conn:
            assert conn.execute("SELECT since FROM flags WHERE serial = ? AND key = 'media_errors'",
                                (NVME1_SERIAL,)).fetchone() == (t1,)
    finally:
        poller.stop()


def test_an_unwritable_history_keeps_the_times_in_memory(tmp_path):
    host = build_default_host(tmp_path)
    poller = make_poller(host)
    try:
        poller.run_discovery()
        poller.run("smartctl")
        history = History(str(tmp_path / "h.sqlite"))
        history._conn.close()  # what a vanished or broken file looks like to every later call
        tracker = ViewState(history)
        tracker.update(poller.snapshot())
        assert tracker.since(NVME1_SERIAL, "media_errors") == poller.snapshot().created
        assert history.errors_total >= 1
    finally:
        poller.stop()


def test_page_and_status_show_since_when(tmp_path):
    host = build_default_host(tmp_path)
    clock = Clock()
    poller = make_poller(host, clock)
    tracker = ViewState()
    try:
        poller.run_discovery()
        poller.run("smartctl")
        tracker.update(poller.snapshot())
        clock.now += 2.5 * 3600
        html = render_page(poller.snapshot(), clock.now, state=tracker, hostname="db1")
        views = snapshot_views(poller.snapshot(), clock.now, state=tracker)
    finally:
        poller.stop()
    assert 'data-key="media_errors"' in html
    assert "for 2.5 h, since " in html
    # The status command reads the API's JSON: the same views as dicts.
    as_json = json.loads(json.dumps([{"device": v.device, "serial": v.serial, "severity": v.severity,
                                      "flags": [f.__dict__ for f in v.flags]} for v in views]))
    text = format_reasons(as_json)
    line = next(ln for ln in text.splitlines() if "media error" in ln)
    assert "since 2023-11-14 22:13 UTC" in line, line
