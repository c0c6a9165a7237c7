"""The ``/`` status page: the real agent on a fake host, read by headless Chromium and by a
plain HTTP client (no JavaScript), plus the page's pure parts on real model objects.

The agent starts on a host whose history file already holds two weeks of samples (written
with the agent's own History class, as a running agent would have), so the page has
life-left charts, write rates and wear-out dates to show. tests/test_ui_page_layout.py lays
the demo host's page out in Chromium at three widths. sda's write cache is off (fake hdparm),
which the default expectation ("enabled") flags critical; nvme1 has 7 media errors (warning).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Dict, List, Optional

import pytest

from agent.history import Sample
from agent.page import render_page
from agent.page_chart import life_chart, x_ticks
from agent.poller import Poller
from agent.views import ViewState, drive_view, history_points, input_rows
from collectors.model import Snapshot
from tests.cdp import FLAGS, chromium_binary
from tests.conftest import fixture_path
from tests.fakehost import AgentProcess, build_default_host
from tests.support.e2e import FAST, NVME0_SERIAL, NVME1_SERIAL, SDA_SERIAL, SHANNON_SERIAL, wait_for
from tests.support.page import DAY, Node, api_drives, cell, drive_rows, parse, start_seeded_agent


@pytest.fixture
def seeded_agent(tmp_path):
    agent = start_seeded_agent(build_default_host(tmp_path))
    try:
        yield agent
    finally:
        agent.stop()


# -- reading the page ----------------------------------------------------------------


def check_table(root: Node, api: Dict[str, dict], api_before: Optional[Dict[str, dict]] = None) -> Dict[str, Node]:
    """The checks both the browser DOM and the plain HTML must pass. ``api_before``: the API
    read before the page: a source's pass or a sample between the two reads may move a date,
    and the page must then agree with one of them."""
    rows = drive_rows(root)
    by_serial = {r.attrs["data-serial"]: r for r in rows}
    assert set(by_serial) == {SHANNON_SERIAL, SDA_SERIAL, NVME0_SERIAL, NVME1_SERIAL}
    # flagged first: the critical sda, then the warning nvme1, then the healthy ones by device
    assert [r.attrs["data-device"] for r in rows] == ["sda", "nvme1", "dfa", "nvme0"]
    assert [r.attrs["data-severity"] for r in rows] == ["critical", "warning", "ok", "ok"]
    assert [r.attrs["data-state"] for r in rows] == ["critical", "warning", "healthy", "healthy"]
    # the header counts the drives by state
    counts = {n.attrs["data-state"]: int(n.attrs["data-count"])
              for n in root.find_all(lambda n: n.has_class("count") and "data-state" in n.attrs)}
    assert counts == {"critical": 1, "warning": 1, "watch": 0, "healthy": 2}, counts

    card = by_serial[SHANNON_SERIAL]
    assert "99%" in cell(card, "c-life").text() and cell(card, "c-life").attrs["data-value"] == "0.9900"
    drive = cell(card, "c-drive").text()
    assert "dfa" in drive and "shannon" in drive and "sh-shannon-pcie-ssd" in drive
    assert "71 °C" in cell(card, "c-temp").text()  # controller, from shannon-status -p
    bad = cell(card, "c-bad")
    assert "1.076%" in bad.text() and "↑" in bad.text()  # 1.000% two weeks ago in the history
    assert "enabled" in cell(card, "c-cache").text()
    assert "nothing flagged" in cell(card, "c-flags").text()

    sda = by_serial[SDA_SERIAL]
    assert "write cache disabled, expected enabled" in cell(sda, "c-flags").text()
    assert cell(sda, "c-cache").has_class("bad") and cell(sda, "c-cache").attrs["data-value"] == "disabled"
    assert "should be enabled" in cell(sda, "c-cache").text()
    assert "limit 70" in cell(sda, "c-temp").text()
    assert "7 media errors" in cell(by_serial[NVME1_SERIAL], "c-flags").text()
    assert cell(by_serial[NVME1_SERIAL], "c-flags").find_all(lambda n: n.tag == "li" and n.has_class("sev-warning"))
    # error classes by name: media errors are not bad blocks, and nothing is counted twice
    media = [n for n in cell(by_serial[NVME1_SERIAL], "c-bad").find_all(lambda n: n.tag == "li")
             if n.attrs.get("data-class") == "media"]
    assert media and media[0].text() == "7 media errors", [n.text() for n in media]

    for serial, row in by_serial.items():
        v = api[serial]
        # wear-out date and method agree with the API (a day's slack: the agent adds a sample
        # while we look, which moves the rate a little), the method in words
        wear = cell(row, "c-wearout")
        if v["wearout_timestamp"] is None:
            assert wear.attrs["data-value"] == "" and "no date" in wear.text()
        else:
            dates = [v["wearout_timestamp"]] + ([api_before[serial]["wearout_timestamp"]] if api_before else [])
            assert any(d is not None and abs(float(wear.attrs["data-value"]) - d) < DAY for d in dates), (serial, dates)
            assert v["wearout_method_label"] in wear.text()
            assert v["wearout_method_label"].startswith("from "), v["wearout_method_label"]
        writes = float(cell(row, "c-writes").attrs["data-value"])
        assert writes == pytest.approx(v["write_rate_bytes_per_second"] * DAY, rel=0.05), serial
        # the life-left chart: two weeks of points, axes with dates, now, and the projection
        chart = cell(row, "c-life").find_all(lambda n: n.tag == "svg" and n.has_class("life-chart"))
        assert len(chart) == 1, serial
        line = chart[0].find_all(lambda n: n.tag == "polyline" and n.has_class("history"))
        assert line and len(line[0].attrs["points"].split()) > 40, serial
        axis_x = chart[0].find_all(lambda n: n.tag == "g" and n.has_class("axis-x"))[0]
        assert len(axis_x.find_all(lambda n: n.tag == "text")) >= 2, serial
        assert [t.text() for t in chart[0].find_all(lambda n: n.tag == "g" and n.has_class("axis-y"))[0]
                .find_all(lambda n: n.tag == "text")] == ["0%", "25%", "50%", "75%", "100%"]
        if v["wearout_timestamp"] is not None:
            assert chart[0].find_all(lambda n: n.tag == "line" and n.has_class("projection")), serial
            # The same day's slack as the cell above: decades out, the sample the agent adds
            # between the page and the API moves the date across a midnight now and then (CI
            # saw 2072-09-22 on the chart, 2072-09-23 from the API).
            stamps = [v["wearout_timestamp"]] + ([api_before[serial]["wearout_timestamp"]] if api_before else [])
            days = {time.strftime("%Y-%m-%d", time.gmtime(d + k * DAY)) for d in stamps if d is not None for k in (-1, 0, 1)}
            labels = [t.text() for t in chart[0].find_all(lambda n: n.has_class("wearout-date"))]
            assert labels and any(day in labels[0] for day in days), (serial, labels, sorted(days))
    # the methods behind the dates, in words: all three for every drive, each with its date or
    # the reason it has none, and its own inputs by name a DBA reads (views.input_rows)
    for serial, row in by_serial.items():
        v = api[serial]
        methods = cell(row, "c-wearout").find_all(lambda n: n.tag == "li" and "data-method" in n.attrs)
        assert [m.attrs["data-method"] for m in methods] == ["observed", "rated", "trend"], serial
        chosen = [m.attrs["data-method"] for m in methods if m.has_class("chosen")]
        assert chosen == ([v["wearout_method"]] if v["wearout_timestamp"] is not None else []), serial
        for m, p in zip(methods, v["projections"]):
            text = m.text()
            assert p["label"] in text
            assert ("no date" in text) == (p["wearout_timestamp"] is None), (serial, text)
            if p.get("note") and p["wearout_timestamp"] is None:
                assert " ".join(p["note"].split()) in text, (serial, p["note"])
            shown = [th.text() for th in m.find_all(lambda n: n.tag == "th")]
            assert shown == [label for label, _ in input_rows(p)], (serial, p["method"], shown)
            assert not any("_" in label for label in shown), shown  # words, not keys
        assert "points/day" not in cell(row, "c-wearout").text()
    observed = [m for m in cell(card, "c-wearout").find_all(lambda n: n.tag == "li")
                if m.attrs.get("data-method") == "observed"][0]
    assert "only 1.0% of life used" in observed.text()  # why the card's date is not observed
    rated = [m for m in cell(card, "c-wearout").find_all(lambda n: n.tag == "li")
             if m.attrs.get("data-method") == "rated"][0]
    assert "from the rated P/E cycles" in rated.text() and "10000 P/E cycles" in rated.text()
    # host bytes written in total, next to the rate
    total = cell(card, "c-writes").find_all(lambda n: n.tag == "div" and n.has_class("total"))
    assert total and total[0].text() == "written 13.8 TB"  # (Node.text puts a node's own words first)
    assert "data" in cell(sda, "c-drive").text() and "old" in cell(sda, "c-drive").text()
    return by_serial


# -- Chromium ------------------------------------------------------------------------

def chromium(tmp_path: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """Debian's chromium, headless, with a throwaway profile and nothing fetched from outside
    (the page itself must not need anything but the agent)."""
    cmd = [chromium_binary(), *FLAGS, f"--user-data-dir={tmp_path / 'chromium-profile'}", *args]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, r.stderr[-3000:]
    return r


def test_page_in_headless_chromium(seeded_agent, tmp_path):
    # 35 s of virtual time: the page's 30 s refresh timer fires once and re-fetches the page
    # for real (virtual time stands still while a request is in flight).
    before = api_drives(seeded_agent)
    r = chromium(tmp_path, "--virtual-time-budget=35000", "--dump-dom", seeded_agent.url + "/")
    dom = parse(r.stdout)
    body = dom.find_all(lambda n: n.tag == "body")[0]
    assert body.attrs.get("data-severity") == "critical"
    assert int(body.attrs.get("data-refreshes", "0")) >= 1, "the refresh script did not run"
    live = dom.find_all(lambda n: n.attrs.get("id") == "live")[0].text()
    assert live.startswith("live: refreshed"), live
    title = dom.find_all(lambda n: n.tag == "title")[0].text()
    assert title.startswith("CRITICAL · sda, nvme1"), title
    check_table(dom, api_drives(seeded_agent), before)


def test_page_without_javascript(seeded_agent):
    """What curl, a text browser or a browser with scripts off gets: the whole table."""
    before = api_drives(seeded_agent)
    text = seeded_agent.get("/").decode("utf-8")
    root = parse(text)
    check_table(root, api_drives(seeded_agent), before)
    # without scripts the page reloads itself
    noscript = root.find_all(lambda n: n.tag == "noscript")
    assert any(m.attrs.get("http-equiv") == "refresh" for n in noscript for m in n.find_all(lambda x: x.tag == "meta"))
    # nothing from outside: no external script, stylesheet, image or font
    for n in root.find_all(lambda n: "src" in n.attrs or (n.tag == "link")):
        pytest.fail(f"external resource on the page: {n.tag} {n.attrs}")
    assert "http://" not in text and "https://" not in text


def test_device_strings_are_escaped(tmp_path):
    """A model string is whatever the firmware says; it must show as text, never as markup."""
    host = build_default_host(tmp_path)
    evil = '<img src=x onerror="document.title=1">Samsung "860" & <b>co</b>'
    data = json.loads(fixture_path("fakehost/scrutiny__smart-ata-full.json").read_text())
    data["model_name"] = evil
    host.set_response("smartctl", "sda", json.dumps(data))
    agent = AgentProcess(host, FAST)
    try:
        agent.wait_ready()
        wait_for(lambda: api_drives(agent).get(SDA_SERIAL, {}).get("model") == evil)
        text = agent.get("/").decode()
        assert "<img" not in text and "<b>co" not in text
        assert "&lt;img src=x onerror=&quot;document.title=1&quot;&gt;Samsung &quot;860&quot; &amp; &lt;b&gt;co&lt;/b&gt;" in text
        dom = parse(chromium(tmp_path, "--virtual-time-budget=2000", "--dump-dom", agent.url + "/").stdout)
        assert not dom.find_all(lambda n: n.tag == "img"), "markup from a device became an element"
        assert not dom.find_all(lambda n: n.tag == "b" and n.text() == "co")
        assert dom.find_all(lambda n: n.tag == "title")[0].text() != "1", "its onerror ran"
        sda = [r for r in drive_rows(dom) if r.attrs["data-serial"] == SDA_SERIAL][0]
        assert evil in cell(sda, "c-drive").text()
    finally:
        agent.stop()


def test_page_needs_the_same_credentials_as_metrics(tmp_path):
    host = build_default_host(tmp_path)
    web = tmp_path / "web-config.yml"
    shutil.copy(fixture_path("webconfig/basic_auth.good.yml"), web)
    agent = AgentProcess(host, FAST + ["--web-config", str(web)])
    try:
        agent.wait_ready()  # /healthz stays open for liveness probes
        for path in ("/", "/metrics", "/api/v1/drives", "/runbooks"):
            with pytest.raises(urllib.error.HTTPError) as err:
                agent.get(path)
            assert err.value.code == 401, path
            assert "Basic" in err.value.headers.get("WWW-Authenticate", "")
        req = urllib.request.Request(agent.url + "/")
        req.add_header("Authorization", "Basic cHJvbWV0aGV1czpzY3JhcGUtc2VjcmV0")  # prometheus:scrape-secret
        with urllib.request.urlopen(req, timeout=5) as resp:
            assert resp.status == 200
            assert '<div class="drives">' in resp.read().decode()
        bad = urllib.request.Request(agent.url + "/")
        bad.add_header("Authorization", "Basic cHJvbWV0aGV1czp3cm9uZw==")  # prometheus:wrong
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(bad, timeout=5)
        assert err.value.code == 401
    finally:
        agent.stop()


# -- the pure parts, on real objects ----------------------------------------------------

def test_history_points_thin_to_the_limit_and_keep_the_newest():
    t0 = 1_700_000_000.0
    samples = [Sample("S", t0 + i * 600, 0.9, int(i * 600 * 1e6), None, None) for i in range(4320)]  # 30 days
    points = history_points(samples, now=samples[-1].ts, max_points=90)
    assert len(points) <= 90
    assert points[0]["ts"] == samples[0].ts and points[-1]["ts"] == samples[-1].ts
    # 1 MB/s throughout: every thinned interval says so, whatever its length
    assert all(p["write_rate_bytes_per_second"] == pytest.approx(1e6) for p in points[1:])
    assert points[0]["write_rate_bytes_per_second"] is None


def test_history_points_give_no_rate_across_a_counter_reset_or_from_the_future():
    s = [Sample("S", 0, None, 5000), Sample("S", 100, None, 6000), Sample("S", 200, None, 10),
         Sample("S", 300, None, 110), Sample("S", 10_000, None, 999_999)]
    points = history_points(s, now=300)
    assert [p["write_rate_bytes_per_second"] for p in points] == [None, 10.0, None, 1.0]


def _chart(snap: Snapshot, serial: str, now: float, history: list, wearout: float = None) -> Node:
    d = next(x for x in snap.drives if x.serial == serial)
    v = drive_view(d, now)
    v.history = history
    if wearout is not None:
        v.wearout_timestamp, v.wearout_method_label = wearout, "from NAND writes"
    return parse(life_chart(v, now))


def _svg_texts(root: Node, css: str) -> List[str]:
    return [t.text() for g in root.find_all(lambda n: n.has_class(css)) for t in g.find_all(lambda n: n.tag == "text")]


def test_x_ticks_fall_on_round_utc_dates_and_stay_few():
    t0 = 1_788_220_800.0  # 2026-09-01 00:00 UTC
    for span_days, fmt in ((0.5, "%H:%M"), (10, "%d %b"), (120, "%b"), (400, "%b"), (3000, "%Y")):
        ticks, got = x_ticks(t0, t0 + span_days * DAY)
        assert 1 <= len(ticks) <= 6 and got == fmt, (span_days, got, len(ticks))
        assert all(t0 < t <= t0 + span_days * DAY for t in ticks)
        if fmt in ("%b", "%Y"):
            assert all(time.gmtime(t).tm_mday == 1 and time.gmtime(t).tm_hour == 0 for t in ticks)


def test_chart_of_a_real_drive_has_axes_dates_and_the_projection(tmp_path):
    """The chart from a real poll's view with three months of history and a wear-out date 90
    days out: both axes labelled, the measured line through every sample, a dashed line from
    life left now down to 0% at the date, and the date written there."""
    snap, now = _polled(tmp_path)
    history = [{"ts": now - (90 - i) * DAY, "life_left_ratio": 0.20 - 0.001 * i} for i in range(90)]
    root = _chart(snap, SDA_SERIAL, now, history, wearout=now + 90 * DAY)
    (svg,) = root.find_all(lambda n: n.tag == "svg")
    assert svg.has_class("life-chart") and svg.attrs["viewbox"].startswith("0 0 ")  # (the parser lowers names)
    assert _svg_texts(root, "axis-y") == ["0%", "25%", "50%", "75%", "100%"]
    months = _svg_texts(root, "axis-x")
    assert len(months) >= 3 and any(m.endswith(time.strftime("%Y", time.gmtime(now))) or m.isalpha()
                                   for m in months), months
    (line,) = root.find_all(lambda n: n.tag == "polyline")
    assert len(line.attrs["points"].split()) == 91  # 90 samples and the reading now
    assert root.find_all(lambda n: n.tag == "line" and n.has_class("projection"))
    (label,) = root.find_all(lambda n: n.has_class("wearout-date"))
    assert label.text() == "wear-out " + time.strftime("%Y-%m-%d", time.gmtime(now + 90 * DAY))
    assert "projected to reach 0% on" in svg.attrs["aria-label"]


def test_chart_names_a_far_wearout_date_at_its_edge(tmp_path):
    snap, now = _polled(tmp_path)
    history = [{"ts": now - (30 - i) * DAY, "life_left_ratio": 0.9} for i in range(30)]
    root = _chart(snap, SDA_SERIAL, now, history, wearout=now + 5 * 365 * DAY)
    (label,) = root.find_all(lambda n: n.has_class("wearout-date"))
    assert label.text().endswith("→") and not root.find_all(lambda n: n.tag == "circle" and n.has_class("wearout"))


def test_chart_with_one_sample_and_without_a_life_figure(tmp_path):
    snap, now = _polled(tmp_path)
    root = _chart(snap, SDA_SERIAL, now, [])
    # the reading now is one point: a dot, no line yet, and the label says so
    assert root.find_all(lambda n: n.tag == "circle") and not root.find_all(lambda n: n.tag == "polyline")
    assert "one sample so far" in root.find_all(lambda n: n.tag == "svg")[0].attrs["aria-label"]
    d = next(x for x in snap.drives if x.serial == SDA_SERIAL)
    v = drive_view(d, now)
    v.life_left_ratio = None
    assert "Life left: not reported" in life_chart(v, now) and "<svg" not in life_chart(v, now)


def _polled(tmp_path) -> tuple:
    host = build_default_host(tmp_path)
    poller = Poller(host.config())
    try:
        snap = poller.poll_once()
    finally:
        poller.stop()
    return snap, time.time()


def test_render_page_on_a_real_poll_with_in_memory_history(tmp_path):
    """render_page as the agent calls it, on a snapshot from a real poll of the fake host."""

    host = build_default_host(tmp_path)
    poller = Poller(host.config())
    try:
        snap = poller.poll_once()
        state = ViewState(poller.history)
        state.update(snap)
        page = render_page(snap, time.time(), state=state, hostname="db-<7>")
    finally:
        poller.stop()
    root = parse(page)
    assert [r.attrs["data-device"] for r in drive_rows(root)][0] == "nvme1"  # the one warning
    assert "db-&lt;7&gt;" in page and "db-<7>" not in page
    # one sample per drive so far: a dot for the reading now, no line yet, and said in words
    assert page.count("one sample so far") >= 4 and "<polyline" not in page
    # no write rate yet: the cell says so once, with the total
    for row in drive_rows(root):
        writes = cell(row, "c-writes")
        assert "no rate yet" in writes.text() and "sample" not in writes.text() and "history" not in writes.text()
        assert "written" in writes.text()
    # nor a latency: that needs two diskstats readings a minute apart
    assert all("once the agent has run a minute" in cell(r, "c-latency").text() for r in drive_rows(root))


def test_empty_snapshot_says_unknown():
    page = render_page(Snapshot(created=time.time()), time.time(), hostname="h")
    assert "no drives found" in page and 'data-severity="unknown"' in page
    assert "<title>UNKNOWN" in page


def test_latency_beside_the_write_cache(tmp_path):
    """The write-latency fact: the sync-write probe's burst when it ran in a directory on the
    drive, else two diskstats readings a minute apart (ViewState keeps them from the snapshots
    the poller hands it)."""
    import dataclasses

    from collectors.syncwrite import SyncWriteResult

    snap, now = _polled(tmp_path)
    burst = SyncWriteResult(directory="/var/lib/postgresql/16/main/pg_wal", method="fdatasync", started=now - 30,
                            latencies=tuple([0.0008] * 60 + [0.0019] * 4), device="sda")
    page = render_page(dataclasses.replace(snap, host={"syncwrite": (burst,)}), now, hostname="h")
    sda = next(r for r in drive_rows(parse(page)) if r.attrs["data-serial"] == SDA_SERIAL)
    text = cell(sda, "c-latency").text()
    # (Node.text puts a node's own words before its children's)
    assert "0.8 ms" in text and "median, p99 1.9 ms" in text and "fdatasync of 8 kB in /var/lib/postgresql" in text
    # diskstats: the same drive 90 s later with 1,000 more writes that took 2 s in all
    sda_drive = next(d for d in snap.drives if d.serial == SDA_SERIAL)
    io = sda_drive.io
    later_io = dataclasses.replace(io, writes_completed=io.writes_completed + 1000,
                                   write_time_seconds=io.write_time_seconds + 2.0)
    later = dataclasses.replace(sda_drive, io=later_io, last_poll=dict(sda_drive.last_poll, diskstats=now + 90))
    state = ViewState()
    state.update(snap, now)
    state.update(dataclasses.replace(snap, drives=tuple(later if d.serial == SDA_SERIAL else d for d in snap.drives)),
                 now + 90)
    write, flush, window = state.latency(SDA_SERIAL)
    assert write == pytest.approx(0.002) and window == pytest.approx(90, abs=5)  # from the first poll's time
    page = render_page(snap, now + 90, state=state, hostname="h")
    sda = next(r for r in drive_rows(parse(page)) if r.attrs["data-serial"] == SDA_SERIAL)
    text = cell(sda, "c-latency").text()
    assert "2 ms" in text and "per write" in text and "per flush" not in text  # no flush in between


def test_the_burst_beside_a_drive_is_generic_and_the_old_key_stays_a_release(tmp_path):
    """Issue 27: the agent takes a drive's sync-write burst from whichever host source's view
    declares ``latency`` (the probe's), never by the source's name. The drive's JSON carries it
    as ``latency_burst`` with the source that measured it, the probe's own value under
    ``beside``, and for one release the pre-issue-27 ``syncwrite`` key; ``status`` reads both."""
    import dataclasses

    from fastapi.testclient import TestClient

    from agent.api import create_app
    from agent.status_table import latency_text
    from agent.views import snapshot_views
    from collectors.syncwrite import SyncWriteResult

    snap, now = _polled(tmp_path)
    burst = SyncWriteResult(directory="/srv/wal", method="O_DSYNC", started=now - 30,
                            latencies=tuple([0.0005] * 99 + [0.004]), device="sda")
    snap = dataclasses.replace(snap, host={"syncwrite": (burst,)})
    views = {v.serial: v for v in snapshot_views(snap, now)}
    got = views[SDA_SERIAL].latency_burst
    assert got["source"] == "syncwrite" and got["how"] == "O_DSYNC of 8 kB in /srv/wal"
    assert got["median_seconds"] == pytest.approx(0.0005) and got["p99_seconds"] >= got["median_seconds"]
    assert views[SDA_SERIAL].beside["syncwrite"]["directory"] == "/srv/wal"
    others = [v for s, v in views.items() if s != SDA_SERIAL]
    assert others and all(v.latency_burst is None and "syncwrite" not in v.beside for v in others)
    with TestClient(create_app(lambda: snap, clock=lambda: now)) as client:
        drives = {d["serial"]: d for d in client.get("/api/v1/drives").json()["drives"]}
    sda = drives[SDA_SERIAL]
    assert sda["latency_burst"] == got
    assert sda["syncwrite"] == sda["beside"]["syncwrite"]  # the pre-issue-27 key, one release
    assert all("syncwrite" not in d for s, d in drives.items() if s != SDA_SERIAL)
    text = latency_text(sda)
    assert text.startswith("O_DSYNC of 8 kB in /srv/wal: median 0.5 ms, p99 ")
    # An agent of the last release: no latency_burst, the old key only; the same words.
    old = {k: v for k, v in sda.items() if k not in ("latency_burst", "beside")}
    assert latency_text(old) == text
    # A skipped burst times nothing: no burst, and the diskstats fallback speaks instead.
    skipped = dataclasses.replace(burst, latencies=(), skipped="read_only")
    snap2 = dataclasses.replace(snap, host={"syncwrite": (skipped,)})
    assert next(v for v in snapshot_views(snap2, now) if v.serial == SDA_SERIAL).latency_burst is None


def test_an_unread_write_cache_is_not_called_as_expected(tmp_path):
    """A drive with an expectation whose cache state could not be read: the page says it was
    not read and what it should be, never "as expected"."""
    import dataclasses

    snap, now = _polled(tmp_path)
    drive = next(d for d in snap.drives if d.write_cache_expected and d.write_cache)
    page = render_page(snap, now, hostname="h")
    row = next(r for r in drive_rows(parse(page)) if r.attrs["data-serial"] == drive.serial)
    assert "as expected" in cell(row, "c-cache").text()  # read, and as it should be
    unread = dataclasses.replace(drive, write_cache=())
    page = render_page(dataclasses.replace(snap, drives=tuple(unread if d is drive else d for d in snap.drives)),
                       now, hostname="h")
    row = next(r for r in drive_rows(parse(page)) if r.attrs["data-serial"] == drive.serial)
    text = cell(row, "c-cache").text()
    assert "as expected" not in text and f"not read; should be {drive.write_cache_expected}" in text


def test_the_drive_card_names_its_newest_self_test(tmp_path):
    """The card of a drive with a self-test log says its newest test (sda's capture: a short
    test that passed at power-on hour 14,417); a drive without one has no such line."""
    snap, now = _polled(tmp_path)
    rows = {r.attrs["data-serial"]: r for r in drive_rows(parse(render_page(snap, now, hostname="h")))}
    sda = rows[SDA_SERIAL].text()
    assert "self-test: Short offline: Completed without error at power-on hour 14,417" in sda
    assert "self-test" not in rows[SHANNON_SERIAL].text()
