"""The real agent seen from outside: the default fake host's serials, fast intervals, a scrape
parsed into samples, waiting for a condition, promtool's check of the exposition.

Moved out of test_e2e_agent.py (issue 27: test modules import helpers from tests/support/ only).
"""

from __future__ import annotations

import subprocess
import time

from prometheus_client.parser import text_string_to_metric_families

from tests.fakehost import AgentProcess, promtool
from tests.promstack import skip_or_fail

# Values read off the fixture files by hand.
SDA_SERIAL = "S3YZNB0KB00864E"  # scrutiny__smart-ata-full.json, Samsung SSD 860 EVO 500GB
NVME0_SERIAL = "BTNH93710FS91P0B"  # scrutiny__smart-nvme.json, INTEL SSDPEKNW010T8
NVME1_SERIAL = "S466NX0M776250H"  # scrutiny__smart-nvme-failed.json, Samsung SSD 970 EVO 500GB
SHANNON_SERIAL = "006819246149b014"  # seed000__status-p_scta_9h.txt


def scrape(agent: AgentProcess) -> dict:
    """{(name, frozenset(labels)): value} for every sample."""
    text = agent.get("/metrics").decode()
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, frozenset(s.labels.items()))] = s.value
    return out


def value(samples: dict, name: str, **labels):
    want = set(labels.items())
    found = [v for (n, ls), v in samples.items() if n == name and want <= set(ls)]
    if not found:
        return None
    assert len(found) == 1, f"{name}{labels} matched {len(found)} series"
    return found[0]


def wait_for(fn, timeout=20.0, interval=0.2):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = fn()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"condition not met in {timeout}s; last value {last!r}")


FAST = ["--interval.smartctl", "1", "--interval.shannon", "1", "--interval.write_cache", "1",
        "--interval.diskstats", "1", "--tool-timeout", "5"]


def all_drives_seen(agent):
    s = scrape(agent)
    serials = {dict(ls).get("serial") for (n, ls) in s if n == "ssd_drive_info"}
    if {SDA_SERIAL, NVME0_SERIAL, NVME1_SERIAL, SHANNON_SERIAL} <= serials:
        return s
    return None


def check_metrics(text: bytes) -> None:
    """``promtool check metrics`` has nothing to say about the exposition."""
    tool = promtool()
    if tool is None:
        skip_or_fail("promtool not installed (Debian package prometheus)")
    r = subprocess.run([tool, "check", "metrics"], input=text, capture_output=True, timeout=30)
    assert r.returncode == 0 and not r.stdout.strip() and not r.stderr.strip(), (r.stdout + r.stderr).decode()
