"""A snapshot polled once from the default fake host.

Moved out of test_views_no_io.py, issue 27: test modules import helpers from tests/support/
only).
"""

from __future__ import annotations

from tests.fakehost import build_default_host
from tests.support.poller import Clock, make_poller


def polled_snapshot(tmp_path):
    """One SMART and write cache read of the default fake host, on a fake clock."""
    host = build_default_host(tmp_path)
    clock = Clock()
    poller = make_poller(host, clock, collectors=["smartctl", "write_cache"])
    try:
        poller.run_discovery()
        poller.run("smartctl")
        poller.run("write_cache")
        return poller.snapshot(), clock
    finally:
        poller.stop()
