"""The agent's child processes: what a fault left behind, and a scraper that measures every scrape
while a fault lasts.

Moved out of test_fault_matrix.py, issue 27: test modules import helpers from tests/support/
only).
"""

from __future__ import annotations

import threading
import time
from typing import List, Optional

import psutil

from tests.fakehost import AgentProcess, FakeHost

SCRAPE_BOUND = 1.0  # the requirement for /metrics, throughout every fault


class ScrapeLoop:
    """A thread that scrapes every ``step`` seconds while the ``with`` block lasts, keeping the
    answered scrapes' times and the failures; :meth:`_scrape_once` says how one scrape is made."""

    join_seconds = 5.0

    def __init__(self, step: float) -> None:
        self.step = step
        self.times: List[float] = []
        self.failures: List[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(self.join_seconds)

    def _scrape_once(self) -> Optional[str]:
        """One scrape; None when answered, else what went wrong (an exception is a failure too)."""
        raise NotImplementedError

    def _run(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                failure = self._scrape_once()
            except OSError as exc:
                failure = f"{type(exc).__name__}: {exc}"
            if failure is None:
                self.times.append(time.monotonic() - started)
            else:
                self.failures.append(failure)
            self._stop.wait(self.step)


class Scraper(ScrapeLoop):
    """Scrapes /metrics every ``step`` seconds in a thread; records the slowest answer and any
    that failed or took longer than :data:`SCRAPE_BOUND`."""

    def __init__(self, agent: AgentProcess, step: float = 0.2) -> None:
        super().__init__(step)
        self.agent = agent

    def _scrape_once(self) -> Optional[str]:
        self.agent.get("/metrics", timeout=SCRAPE_BOUND * 3)
        return None

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
