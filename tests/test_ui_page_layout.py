"""The demo host's ``/`` page as a DBA sees it in Chromium at 1280, 800 and 390 px.

The real ``ssdfleet agent --simulate`` (eight drives in real time with 90 days of seeded
history: five healthy, one to watch, one warning, one critical) is read by Debian's headless
Chromium over the DevTools protocol (tests/cdp.py). At each width, with every "details" box
closed and then all of them open: nothing reaches past the right edge of the screen (the page
never scrolls sideways), every drive's chart has both axes labelled and its wear-out date,
the header counts the drives by state, and the visible text has no API keys in it. A
full-page screenshot of each width is written to tests/artifacts/ (page-1280.png, ...).
"""

from __future__ import annotations

import json
import os
import re
import struct
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Dict

import pytest

from tests.cdp import Chromium
from tests.fakehost import ROOT, free_port, stop_process

ARTIFACTS = ROOT / "tests" / "artifacts"
WIDTHS = ((1280, False), (800, False), (390, True))  # (CSS px, a phone's viewport)
SCREEN_HEIGHT = 900
EXPECTED_STATES = {"critical": 1, "warning": 1, "watch": 1, "healthy": 5}

# Every box a drive's card is made of; none may reach past the screen's edges.
BOXES = ("article.drive, article.drive .d-head, article.drive .c-flags, article.drive .c-life, "
         "article.drive .fact, svg.life-chart, article.drive details, table.inputs, .counts, header.top")

MEASURE = """(() => {
  const vw = window.innerWidth;
  const out = [];
  for (const el of document.querySelectorAll(BOXES)) {
    const r = el.getBoundingClientRect();
    if (r.width === 0 && r.height === 0) continue;  // display: contents, or not rendered
    if (r.left < -0.5 || r.right > vw + 0.5) {
      out.push({what: (el.getAttribute('class') || el.tagName), left: r.left, right: r.right,
                drive: (el.closest('article') || {dataset: {}}).dataset.device});
    }
  }
  const cards = [...document.querySelectorAll('article.drive')].map(a => {
    const r = a.getBoundingClientRect();
    return {device: a.dataset.device, state: a.dataset.state, top: r.top + window.scrollY, height: r.height};
  });
  const charts = [...document.querySelectorAll('article.drive')].map(a => {
    const svg = a.querySelector('svg.life-chart');
    if (!svg) return {device: a.dataset.device, chart: false};
    const texts = sel => [...svg.querySelectorAll(sel + ' text')].map(t => t.textContent);
    const label = svg.querySelector('text.axis-x, g.axis-x text');
    return {device: a.dataset.device, chart: true, y: texts('g.axis-y'), x: texts('g.axis-x'),
            wearout: [...svg.querySelectorAll('.wearout-date')].map(t => t.textContent),
            labelHeight: label ? label.getBoundingClientRect().height : 0,
            width: svg.getBoundingClientRect().width};
  });
  const counts = {};
  for (const c of document.querySelectorAll('.count[data-state]')) counts[c.dataset.state] = +c.dataset.count;
  return JSON.stringify({vw, scroll: document.documentElement.scrollWidth, out, cards, charts, counts,
                         text: document.body.innerText});
})()""".replace("BOXES", json.dumps(BOXES))


def png_size(path: Path) -> tuple:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    return struct.unpack(">II", data[16:24])


@pytest.fixture(scope="module")
def demo_agent(tmp_path_factory):
    """``ssdfleet agent --simulate`` on a free port, once every drive has been read and each has
    a recent write latency (two diskstats readings a minute apart)."""
    tmp = tmp_path_factory.mktemp("demo")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    log = open(tmp / "agent.log", "wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "agent", "agent", "--simulate", "--simulate-dir", str(tmp / "sim"),
         "--listen-address", f"127.0.0.1:{port}", "--interval.smartctl", "5", "--interval.shannon", "5",
         "--interval.write_cache", "5", "--interval.diskstats", "2"],
        stdout=log, stderr=subprocess.STDOUT, env=env, cwd=str(ROOT), start_new_session=True)
    try:
        # seeding takes seconds, the first latency a minute: 240 s is generous on a busy machine
        deadline = time.monotonic() + 240
        drives: list = []
        while time.monotonic() < deadline:
            assert proc.poll() is None, (tmp / "agent.log").read_text()[-3000:]
            try:
                with urllib.request.urlopen(url + "/api/v1/drives", timeout=5) as r:
                    drives = json.loads(r.read())["drives"]
            except OSError:
                drives = []
            if len(drives) == 8 and all(d["write_latency_seconds"] is not None for d in drives) \
                    and all(d["data_age_seconds"] is not None for d in drives):
                break
            time.sleep(1)
        else:
            raise AssertionError(f"demo not ready: {[(d['device'], d['state']) for d in drives]}")
        yield url, drives
    finally:
        stop_process(proc)
        log.close()


def test_the_demo_tells_a_fleet_story(demo_agent):
    """What the API says of the demo: the state counts, and each story as the plan has it."""
    _, drives = demo_agent
    states: Dict[str, int] = {}
    for d in drives:
        states[d["state"]] = states.get(d["state"], 0) + 1
    assert states == EXPECTED_STATES, [(d["device"], d["state"]) for d in drives]
    by_device = {d["device"]: d for d in drives}
    # critical: the LITEON with its write cache off, whose writes now take 28 times as long
    sdb = by_device["sdb"]
    assert sdb["state"] == "critical" and [f["key"] for f in sdb["flags"]] == ["write_cache"]
    assert sdb["write_latency_seconds"] > 10 * by_device["sda"]["write_latency_seconds"]
    # warning: 8% life left, worn out in about three months at 640 GB a day
    sdd = by_device["sdd"]
    days = (sdd["wearout_timestamp"] - time.time()) / 86400
    assert sdd["state"] == "warning" and sdd["life_left_ratio"] == pytest.approx(0.08) and 80 < days < 100, days
    assert sdd["write_rate_bytes_per_second"] * 86400 == pytest.approx(640e9, rel=0.1)  # a real day's writes
    # watch: in the last fifth of its life, more than a year to go
    sdc = by_device["sdc"]
    assert sdc["state"] == "watch" and sdc["watch"] and sdc["life_left_ratio"] < 0.20
    # healthy: years to go, every one with a date from the start
    for d in drives:
        if d["state"] == "healthy":
            assert (d["wearout_timestamp"] - time.time()) / 86400 > 365, d["device"]


@pytest.mark.parametrize("width,mobile", WIDTHS, ids=[str(w) for w, _ in WIDTHS])
def test_page_fits_the_screen_and_charts_have_axes_and_dates(demo_agent, width, mobile):
    url, drives = demo_agent
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with Chromium() as browser:
        tab = browser.open(url + "/", width, SCREEN_HEIGHT, mobile)
        closed = json.loads(browser.evaluate(tab, MEASURE))
        shot = browser.screenshot(tab, ARTIFACTS / f"page-{width}.png")
        browser.evaluate(tab, "document.querySelectorAll('details').forEach(d => d.open = true); 1")
        opened = json.loads(browser.evaluate(tab, MEASURE))
        browser.screenshot(tab, ARTIFACTS / f"page-{width}-details-open.png")
    for state, m in (("details closed", closed), ("details open", opened)):
        assert m["vw"] == width, m["vw"]
        assert m["scroll"] <= width, f"{width} px, {state}: the page scrolls sideways to {m['scroll']} px"
        assert m["out"] == [], f"{width} px, {state}: off the screen: {m['out'][:5]}"
    assert closed["counts"] == EXPECTED_STATES
    assert [c["state"] for c in closed["cards"]] == ["critical", "warning", "watch"] + ["healthy"] * 5
    # every drive with a life figure has its chart: axes labelled, its wear-out date on it
    with_life = {d["device"] for d in drives if d["life_left_ratio"] is not None}
    assert len(with_life) == 7  # the LITEON gives none the agent can read
    for chart in closed["charts"]:
        assert chart["chart"] == (chart["device"] in with_life), chart
        if not chart["chart"]:
            continue
        assert chart["y"] == ["0%", "25%", "50%", "75%", "100%"], chart
        assert len(chart["x"]) >= 2 and all(re.fullmatch(r"[A-Z][a-z]{2}( \d{4})?|\d{4}", t) for t in chart["x"]), chart
        assert len(chart["wearout"]) == 1 and re.search(r"wear-out \d{4}-\d\d-\d\d", chart["wearout"][0]), chart
        assert chart["labelHeight"] >= 8, f"{width} px: chart labels {chart['labelHeight']:.1f} px high"
    # a DBA's words on screen, not the API's keys (sensor names, projections and all)
    text = closed["text"]
    assert not re.findall(r"\b[a-z]+_[a-z0-9_]+\b", text), re.findall(r"\b[a-z]+_[a-z0-9_]+\b", text)[:10]
    for word in ("points/day", "seeds/", "nand_domain", "min_life_used"):
        assert word not in opened["text"], word
    # more than one drive on the first screen where there is room for it
    tops = [c["top"] for c in closed["cards"]]
    if width >= 800:
        assert tops[1] < SCREEN_HEIGHT, f"{width} px: the second drive starts at {tops[1]:.0f} px"
    if width >= 1280:
        second = closed["cards"][1]
        assert second["top"] + second["height"] <= SCREEN_HEIGHT, f"{width} px: two drives do not fit"
    size = png_size(shot)
    assert size[0] == width and size[1] > SCREEN_HEIGHT and shot.stat().st_size > 50_000
