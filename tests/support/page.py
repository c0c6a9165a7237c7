"""The status page parsed (an HTML tree, its drive rows and cells) and an agent started on a host
with seeded history.

Moved out of test_page.py (issue 27: test modules import helpers from tests/support/ only).
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time
from html.parser import HTMLParser
from typing import Dict, List

from agent.history import History
from collectors.model import DriveReading
from tests.conftest import fixture_path
from tests.fakehost import ROOT, AgentProcess, FakeHost
from tests.support.e2e import FAST, NVME0_SERIAL, NVME1_SERIAL, SDA_SERIAL, SHANNON_SERIAL, wait_for

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
    """The drive cards, in page order (each carries data-serial, data-device, data-severity)."""
    return root.find_all(lambda n: n.tag == "article" and "data-serial" in n.attrs)


def cell(row: Node, css: str) -> Node:
    """The one element of a drive's card with class ``css`` (c-life, c-wearout, c-cache, ...)."""
    found = row.find_all(lambda n: n.has_class(css))
    assert len(found) == 1, (css, [c.attrs for c in found])
    return found[0]
