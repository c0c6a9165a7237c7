"""The agent's child processes: what a fault left behind, and a scraper that measures every scrape
while a fault lasts.

Moved out of test_fault_matrix.py, issue 27: test modules import helpers from tests/support/
only).
"""

from __future__ import annotations

import threading
import time
from typing import List

import psutil

from tests.fakehost import AgentProcess, FakeHost

SCRAPE_BOUND = 1.0  # the requirement for /metrics, throughout every fault


class Scraper:
    """Scrapes /metrics every ``step`` seconds in a thread; records the slowest answer and any
    that failed or took longer than :data:`SCRAPE_BOUND`."""

    def __init__(self, agent: AgentProcess, step: float = 0.2) -> None:
        self.agent = agent
        self.step = step
        self.times: List[float] = []
        self.failures: List[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Scraper:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(5)

    def _run(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                self.agent.get("/metrics", timeout=SCRAPE_BOUND * 3)
                self.times.append(time.monotonic() - started)
            except OSError as exc:
                self.failures.append(f"{type(exc).__name__}: {exc}")
            self._stop.wait(self.step)

    def check(self) -> None:
        assert self.times, "no scrape answered"
        slow = [t for t in self.times if t > SCRAPE_BOUND]
        print(f"  /metrics: {len(self.times)} scrapes, slowest {max(self.times) * 1000:.0f} ms")
        assert not self.failures, self.failures[:3]
        assert not slow, f"{len(slow)} scrapes over {SCRAPE_BOUND}s, slowest {max(slow):.2f}s"


def descendants(pid: int) -> List[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def left_behind(host: FakeHost) -> List[str]:
    """Processes still running from the fake host's tools (found by their path)."""
    out = []
    for p in psutil.process_iter(["cmdline"]):
        cmd = " ".join(p.info.get("cmdline") or [])
        if str(host.root) in cmd and "agent" not in cmd.split()[1:3]:
            out.append(f"{p.pid}: {cmd}")
    return out
