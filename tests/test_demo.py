"""The demo as a newcomer meets it: the demo script (deploy/demo/run_demo.py, simulated agents
with the real Prometheus and Alertmanager on 127.0.0.1 and the shipped rules, a report of the
alerts), and ``ssdfleet status --simulate`` / ``collect --simulate`` on the demo host (the
page itself: tests/test_ui_page_layout.py)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time

import pytest

from tests.fakehost import ROOT
from tests.promstack import skip_or_fail


def test_demo_starts_the_stack_and_reports_the_cache_alert(tmp_path):
    for binary in ("prometheus", "prometheus-alertmanager"):
        if shutil.which(binary) is None:
            skip_or_fail(f"{binary} is not installed")
    r = subprocess.run(
        [sys.executable, str(ROOT / "deploy/demo/run_demo.py"), "--agents", "1", "--drives", "8",
         "--minutes", "0.4", "--report-every", "8", "--scrape-interval", "2", "--workdir", str(tmp_path / "demo")],
        capture_output=True, text=True, timeout=180, cwd=str(tmp_path))
    out = r.stdout
    assert r.returncode == 0, out + r.stderr
    assert re.search(r"agent +http://127\.0\.0\.1:\d+/", out), out
    assert "alertmanager http://127.0.0.1:" in out
    reports = [line for line in out.splitlines() if line.startswith("[")]
    assert len(reports) >= 2, out
    assert all("1/1 agents up" in line for line in reports[1:]), reports
    # The demo host's LITEON (sdb) has its write cache off, its Intel 335 (sdd) 8% life left:
    # the shipped rules see both, in real time.
    assert any(re.search(r"(pending|firing): [^;]*SSDWriteCacheDisabled x1 \(sdb\)", line) for line in reports), reports
    assert any(re.search(r"(pending|firing): [^;]*SSDLifeLeftLow x1 \(sdd\)", line) for line in reports), reports
    # Everything it started is gone.
    left = subprocess.run(["pgrep", "-f", str(tmp_path / "demo")], capture_output=True, text=True)
    assert left.stdout.strip() == "", left.stdout


# -- the demo host through the commands a newcomer types ------------------------------------

def simulate(*args: str, timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "agent", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=str(ROOT))


def test_status_simulate_shows_the_demo_fleet_and_exits_critical(tmp_path):
    """`ssdfleet status --simulate`: the demo host polled once with its seeded history, so the
    rates and dates are there; the exit code is the LITEON's critical (2)."""
    r = simulate("status", "--simulate", "--simulate-dir", str(tmp_path / "sim"), "--json")
    assert r.returncode == 2, r.stdout[-2000:] + r.stderr[-2000:]
    data = json.loads(r.stdout)
    assert data["severity"] == "critical" and data["exit_code"] == 2
    states: dict = {}
    for d in data["drives"]:
        states[d["state"]] = states.get(d["state"], 0) + 1
    assert states == {"critical": 1, "warning": 1, "watch": 1, "healthy": 5}, states
    by_device = {d["device"]: d for d in data["drives"]}
    # real-time rates: the Intel 335 writes 640 GB a (real) day and wears out in about 90 days
    sdd = by_device["sdd"]
    assert sdd["write_rate_bytes_per_second"] * 86400 == pytest.approx(640e9, rel=0.1)
    assert 80 < (sdd["wearout_timestamp"] - time.time()) / 86400 < 100
    assert all(d["wearout_timestamp"] for d in data["drives"] if d["life_left_ratio"] is not None)
    assert len(by_device["sdd"]["history"]) >= 20  # the seeded 90 days, thinned
    # the table a person reads: the watch drive says why, the footer counts it
    r = simulate("status", "--simulate", "--simulate-dir", str(tmp_path / "sim2"), "--color", "never")
    assert r.returncode == 2
    assert re.search(r"^sdc .*OK, WATCH: life left 1\d%, below 20%", r.stdout, re.M), r.stdout
    assert r.stdout.rstrip().endswith("CRITICAL: 1 critical, 1 warning, 1 to watch, 5 ok")
    assert "source: one poll of the simulated host (--simulate)" in r.stdout


def test_collect_simulate_prints_the_demo_host_with_dates(tmp_path):
    r = simulate("collect", "--simulate", "3", "--simulate-dir", str(tmp_path / "sim"), "--json")
    assert r.returncode == 0, r.stderr[-2000:]
    drives = json.loads(r.stdout)["drives"]
    assert [d["device"] for d in drives] == ["dfa", "nvme0", "sda"]
    assert all(d["wearout_timestamp"] and d["write_rate_bytes_per_second"] for d in drives)
