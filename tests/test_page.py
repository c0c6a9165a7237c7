"""The ``/`` status page: the real agent on a fake host, read by headless Chromium and by a
plain HTTP client (no JavaScript), plus the page's pure parts on real model objects.

The agent starts on a host whose history file already holds two weeks of samples (written
with the agent's own History class, as a running agent would have), so the page has
sparklines, write rates and wear-out dates to show. sda's write cache is off (fake hdparm),
which the default expectation ("enabled") flags critical; nvme1 has 7 media errors (warning).
"""

from __future__ import annotations

import json
import math
import shutil
import struct
import subprocess
import sys
import time
import urllib.error
import urllib.request
from html.parser import HTMLParser
from pathlib import Path
from typing import Dict, List

import pytest

from agent.history import History, Sample
from agent.page import render_page, sparkline
from agent.poller import Poller
from agent.views import ViewState, history_points
from collectors.model import DriveReading, Snapshot
from tests.conftest import fixture_path
from tests.fakehost import ROOT, AgentProcess, FakeHost, build_default_host
from tests.promstack import skip_or_fail
from tests.test_e2e_agent import FAST, NVME0_SERIAL, NVME1_SERIAL, SDA_SERIAL, SHANNON_SERIAL, wait_for

ARTIFACTS = ROOT / "tests" / "artifacts"
DAY = 86400.0

# Per drive: writes per day, life left two weeks ago and now, bad-block ratio then and now
# (None: the drive does not report it), and the write amplification for NAND bytes.
# Life and bad blocks "now" are what the fixtures report (see test_e2e_agent).
HISTORY_PLAN = {
    SHANNON_SERIAL: (0.5e12, 1.00, 0.99, 0.0100, 0.010760, 1.4493),
    SDA_SERIAL: (80e9, 0.82, 0.81, None, None, None),
    NVME1_SERIAL: (200e9, 0.98, 0.97, None, None, None),
    NVME0_SERIAL: (20e9, 1.00, 1.00, None, None, None),
}


def current_written(host: FakeHost) -> Dict[str, int]:
    """Host bytes written per serial as the agent reads them from the fake tools now (one
    real poll, no history file touched)."""
    r = subprocess.run([sys.executable, "-m", "agent", "collect", "--json", "--no-history"] + host.config_args(),
                       capture_output=True, text=True, timeout=60, cwd=str(ROOT))
    assert r.returncode == 0, r.stderr
    return {d["serial"]: d["host_written_bytes"] for d in json.loads(r.stdout)["drives"]}


def seed_history(host: FakeHost, now: float, days: float = 14, step: float = 4 * 3600) -> None:
    """Two weeks of samples every 4 h ending an hour ago, counters rising to just below what
    the fake tools report now, with a daily rhythm (nightly loads) in the write rate."""
    written_now = current_written(host)
    history = History(str(host.state / "history.sqlite"), clock=lambda: now)
    n = int(days * DAY // step)
    try:
        for serial, (per_day, life0, life1, bad0, bad1, wa) in HISTORY_PLAN.items():
            times = [now - 3600 - (n - i) * step for i in range(n + 1)]
            rates = [per_day * (1 + 0.5 * math.sin(2 * math.pi * t / DAY)) for t in times]
            written = written_now[serial] - per_day / 24 - sum(r * step / DAY for r in rates[1:])
            assert written > 0, serial
            for i, t in enumerate(times):
                if i:
                    written += rates[i] * step / DAY
                frac = i / n
                history.record(serial, t, DriveReading(
                    kind="seed", device="seed", serial=serial,
                    life_left_ratio=life0 if frac < 0.4 else life1,
                    host_written_bytes=int(written),
                    nand_written_bytes=int(written * wa) if wa else None,
                    bad_block_ratio=None if bad0 is None else bad0 + (bad1 - bad0) * frac,
                ))
    finally:
        history.close()


def api_drives(agent: AgentProcess) -> Dict[str, dict]:
    return {d["serial"]: d for d in json.loads(agent.get("/api/v1/drives"))["drives"]}


def start_seeded_agent(host: FakeHost) -> AgentProcess:
    """The default host with sda's cache off and two weeks of history, its agent running and
    every drive read (sda critical, nvme1 warning)."""
    host.set_response("hdparm", "sda", fixture_path("fakehost/hdparm-W-sda-off.txt"))
    seed_history(host, time.time())
    agent = AgentProcess(host, FAST)
    try:
        agent.wait_ready()

        def ready():
            drives = api_drives(agent)
            # until smartctl has answered, a drive may show under its sysfs identity only
            ok = (set(drives) == set(HISTORY_PLAN) and drives[SDA_SERIAL]["severity"] == "critical"
                  and drives[NVME1_SERIAL]["severity"] == "warning")
            return drives if ok else None

        wait_for(ready)
    except BaseException:
        agent.stop()
        raise
    return agent


@pytest.fixture
def seeded_agent(tmp_path):
    agent = start_seeded_agent(build_default_host(tmp_path))
    try:
        yield agent
    finally:
        agent.stop()


# -- reading the page ----------------------------------------------------------------

class Node:
    def __init__(self, tag: str, attrs: Dict[str, str]) -> None:
        self.tag, self.attrs, self.children, self.text_parts = tag, attrs, [], []

    def text(self) -> str:
        return " ".join(" ".join(self.text_parts + [c.text() for c in self.children]).split())

    def find_all(self, pred) -> List[Node]:
        out = []
        for c in self.children:
            if pred(c):
                out.append(c)
            out.extend(c.find_all(pred))
        return out

    def has_class(self, name: str) -> bool:
        return name in self.attrs.get("class", "").split()


class TreeBuilder(HTMLParser):
    """A small DOM from the standard library's tokenizer; enough to read our table."""

    VOID = {"meta", "br", "link", "img", "input", "hr", "circle", "rect", "polyline"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#root", {})
        self.stack = [self.root]

    def handle_starttag(self, tag, attrs):
        node = Node(tag, {k: (v or "") for k, v in attrs})
        self.stack[-1].children.append(node)
        if tag not in self.VOID:
            self.stack.append(node)

    def handle_startendtag(self, tag, attrs):
        self.stack[-1].children.append(Node(tag, {k: (v or "") for k, v in attrs}))

    def handle_endtag(self, tag):
        for i in range(len(self.stack) - 1, 0, -1):
            if self.stack[i].tag == tag:
                del self.stack[i:]
                return

    def handle_data(self, data):
        self.stack[-1].text_parts.append(data)


def parse(html_text: str) -> Node:
    b = TreeBuilder()
    b.feed(html_text)
    b.close()
    return b.root


def drive_rows(root: Node) -> List[Node]:
    return root.find_all(lambda n: n.tag == "tr" and "data-serial" in n.attrs)


def cell(row: Node, css: str) -> Node:
    found = row.find_all(lambda n: n.tag == "td" and n.has_class(css))
    assert len(found) == 1, (css, [c.attrs for c in found])
    return found[0]


def check_table(root: Node, api: Dict[str, dict]) -> Dict[str, Node]:
    """The checks both the browser DOM and the plain HTML must pass."""
    rows = drive_rows(root)
    by_serial = {r.attrs["data-serial"]: r for r in rows}
    assert set(by_serial) == {SHANNON_SERIAL, SDA_SERIAL, NVME0_SERIAL, NVME1_SERIAL}
    # flagged first: the critical sda, then the warning nvme1, then the healthy ones by device
    assert [r.attrs["data-device"] for r in rows] == ["sda", "nvme1", "dfa", "nvme0"]
    assert [r.attrs["data-severity"] for r in rows] == ["critical", "warning", "ok", "ok"]

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
    assert "limit 70" in cell(sda, "c-temp").text()
    assert "7 media errors" in cell(by_serial[NVME1_SERIAL], "c-flags").text()
    assert cell(by_serial[NVME1_SERIAL], "c-flags").find_all(lambda n: n.tag == "li" and n.has_class("sev-warning"))

    # wear-out date, method and write rate agree with the API (a day's slack: the agent adds
    # a sample while we look, which moves the rate a little)
    for serial, row in by_serial.items():
        v = api[serial]
        wear = cell(row, "c-wearout")
        if v["wearout_timestamp"] is None:
            assert wear.attrs["data-value"] == "" and "no date" in wear.text()
        else:
            assert abs(float(wear.attrs["data-value"]) - v["wearout_timestamp"]) < DAY, serial
            assert v["wearout_method"] in wear.text()
        writes = float(cell(row, "c-writes").attrs["data-value"])
        assert writes == pytest.approx(v["write_rate_bytes_per_second"] * DAY, rel=0.05), serial
        # a line, not a dot: the history has two weeks of points
        spark = row.find_all(lambda n: n.tag == "svg" and n.has_class("spark-life"))
        assert spark and len(spark[0].find_all(lambda n: n.tag == "polyline")[0].attrs["points"].split()) > 40
    # the projection methods behind the dates (inputs in "how")
    assert "observed" in cell(sda, "c-wearout").text()  # 19% used: the drive's own wear rate
    assert "rated" in cell(card, "c-wearout").text() and "P/E cycles" in cell(card, "c-wearout").text()
    assert "trend" in cell(by_serial[NVME1_SERIAL], "c-wearout").text()
    # all three methods for every drive, each with its verdict or reason and its own inputs
    for serial, row in by_serial.items():
        v = api[serial]
        methods = cell(row, "c-wearout").find_all(lambda n: n.tag == "li" and "data-method" in n.attrs)
        assert [m.attrs["data-method"] for m in methods] == ["observed", "rated", "trend"], serial
        chosen = [m.attrs["data-method"] for m in methods if m.has_class("chosen")]
        assert chosen == ([v["wearout_method"]] if v["wearout_timestamp"] is not None else []), serial
        for m, p in zip(methods, v["projections"]):
            text = m.text()
            assert ("no date" in text) == (p["wearout_timestamp"] is None), (serial, text)
            if p.get("note"):
                assert " ".join(p["note"].split()) in text, (serial, p["note"])
            shown = {th.text() for th in m.find_all(lambda n: n.tag == "th")}
            want = set(p["inputs"]) - {"now"} | ({"endurance_remaining"} if p["endurance_remaining_bytes"] else set())
            assert shown == want, (serial, p["method"], shown ^ want)
    observed = [m for m in cell(card, "c-wearout").find_all(lambda n: n.tag == "li")
                if m.attrs.get("data-method") == "observed"][0]
    assert "only 1.0% of life used" in observed.text()  # why the card's date is not observed
    # host bytes written in total, next to the rate
    total = cell(card, "c-writes").find_all(lambda n: n.tag == "div" and n.has_class("total"))
    assert total and total[0].text() == "written 13.8 TB"  # (Node.text puts a node's own words first)
    # which drive, how bad, why: the reasons come right after the drive
    heads = [th.text() for th in root.find_all(lambda n: n.tag == "th" and n.attrs.get("scope") == "col")]
    assert heads[:3] == ["Status", "Drive", "Why flagged"], heads
    assert "data" in cell(sda, "c-sev").text() and "old" in cell(sda, "c-sev").text()
    return by_serial


# -- Chromium ------------------------------------------------------------------------

def chromium_binary() -> str:
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    skip_or_fail("chromium not installed (Debian package chromium)")
    raise AssertionError("unreachable")


def chromium(tmp_path: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """Debian's chromium, headless, with a throwaway profile and nothing fetched from outside
    (the page itself must not need anything but the agent)."""
    cmd = [chromium_binary(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
           "--no-first-run", "--disable-extensions", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", "--metrics-recording-only",
           f"--user-data-dir={tmp_path / 'chromium-profile'}", *args]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, r.stderr[-3000:]
    return r


def png_size(path: Path) -> tuple:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    return struct.unpack(">II", data[16:24])


def test_page_in_headless_chromium(seeded_agent, tmp_path):
    # 35 s of virtual time: the page's 30 s refresh timer fires once and re-fetches the page
    # for real (virtual time stands still while a request is in flight).
    r = chromium(tmp_path, "--virtual-time-budget=35000", "--dump-dom", seeded_agent.url + "/")
    dom = parse(r.stdout)
    body = dom.find_all(lambda n: n.tag == "body")[0]
    assert body.attrs.get("data-severity") == "critical"
    assert int(body.attrs.get("data-refreshes", "0")) >= 1, "the refresh script did not run"
    live = dom.find_all(lambda n: n.attrs.get("id") == "live")[0].text()
    assert live.startswith("live: refreshed"), live
    title = dom.find_all(lambda n: n.tag == "title")[0].text()
    assert title.startswith("CRITICAL · sda, nvme1"), title
    check_table(dom, api_drives(seeded_agent))

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / "status-page.png"
    shot.unlink(missing_ok=True)
    chromium(tmp_path, "--hide-scrollbars", "--window-size=1600,1000", f"--screenshot={shot}",
             seeded_agent.url + "/")
    assert png_size(shot) == (1600, 1000)
    assert shot.stat().st_size > 30000  # a blank page compresses to a few kB


def test_page_without_javascript(seeded_agent):
    """What curl, a text browser or a browser with scripts off gets: the whole table."""
    text = seeded_agent.get("/").decode("utf-8")
    root = parse(text)
    check_table(root, api_drives(seeded_agent))
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
        for path in ("/", "/metrics", "/api/v1/drives"):
            with pytest.raises(urllib.error.HTTPError) as err:
                agent.get(path)
            assert err.value.code == 401, path
            assert "Basic" in err.value.headers.get("WWW-Authenticate", "")
        req = urllib.request.Request(agent.url + "/")
        req.add_header("Authorization", "Basic cHJvbWV0aGV1czpzY3JhcGUtc2VjcmV0")  # prometheus:scrape-secret
        with urllib.request.urlopen(req, timeout=5) as resp:
            assert resp.status == 200
            assert '<table class="drives">' in resp.read().decode()
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


def test_sparkline_breaks_at_gaps_and_draws_a_lone_point():
    svg = sparkline([(0, 1.0), (1, 0.9), (2, None), (3, 0.8), (4, 0.7)], "label <x>", "spark-life")
    assert svg.count("<polyline") == 2 and "label &lt;x&gt;" in svg
    lone = sparkline([(0, 1.0), (1, 0.9), (2, None), (3, 0.5), (4, None)], "one", "spark-life")
    assert lone.count("<circle") == 1 and lone.count("<polyline") == 1
    assert "no history yet" in sparkline([(0, None)], "none", "spark-life")
    # a single sample is said in words: a lone dot in an empty box reads as a speck
    single = sparkline([(0, None), (1, 0.5), (2, None)], "one", "spark-life")
    assert "one sample so far" in single and "<svg" not in single


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
    # one sample per drive so far: said in words, no line and no lone dot yet
    assert page.count("one sample so far") >= 4 and "<polyline" not in page and "<circle" not in page
    # no write rate yet: the cell says so once, with the total, and draws nothing
    for row in drive_rows(root):
        writes = cell(row, "c-writes")
        assert "no rate yet" in writes.text() and "sample" not in writes.text() and "history" not in writes.text()
        assert "written" in writes.text()


def test_empty_snapshot_says_unknown():
    page = render_page(Snapshot(created=time.time()), time.time(), hostname="h")
    assert "no drives found" in page and 'data-severity="unknown"' in page
    assert "<title>UNKNOWN" in page



def test_narrow_screens_stack_each_drive_instead_of_cutting_columns():
    """Issue 13: at 800 px the table's right columns were cut off. Below NARROW_PX every cell
    stacks under its column's name, one label per header."""
    from agent import page as page_mod

    css = page_mod._CSS
    assert f"@media (max-width: {page_mod.NARROW_PX}px)" in css and page_mod.NARROW_PX > 800
    for i, header in enumerate(page_mod.HEADERS, 1):
        assert f'td:nth-child({i})::before {{ content:"{header}"; }}' in css
