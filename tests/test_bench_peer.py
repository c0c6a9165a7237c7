"""bench/peer_bench.py runs end to end: three servers on one simulated host, a table, nothing left.

No figure is asserted (they depend on the machine): the run must print one row per server with
numbers in every measured column, have no failed scrape, and leave no process and no file
behind. It needs a smartctl_exporter binary (``$SSDFLEET_PEER_EXPORTER`` or
``smartctl_exporter`` on PATH); without one the run is skipped, and only the bench's refusal
to start without it is checked.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench" / "peer_bench.py"
PEER = os.environ.get("SSDFLEET_PEER_EXPORTER") or shutil.which("smartctl_exporter")
needs_peer = pytest.mark.skipif(
    not PEER or not os.access(PEER, os.X_OK),
    reason="no smartctl_exporter binary: set SSDFLEET_PEER_EXPORTER to one (built from "
           "github.com/prometheus-community/smartctl_exporter) or put smartctl_exporter on PATH")

COLUMNS = ["drives", "server", "drives read", "first answer s", "full data s", "p50 ms", "p99 ms", "max ms",
           "p50 / p99 vs floor", "KiB per scrape gzip / plain", "CPU s per drive-hour (window / unscraped)",
           "CPU ms per scrape", "tool calls per drive-hour", "RSS MiB", "scrapes (failed)", "load average"]


def _table(stdout: str):
    lines = [line for line in stdout.splitlines() if line.startswith("|")]
    header = [cell.strip() for cell in lines[0].strip("|").split("|")]
    rows = [dict(zip(header, (cell.strip() for cell in line.strip("|").split("|")))) for line in lines[2:]]
    return header, rows


def _numbers(cell: str):
    return [float(part.rstrip("x")) for part in cell.replace("->", "/").split("/")]


def _ours(tmp: Path):
    """Processes whose command line names the run's temporary directory (every server's does)."""
    left = []
    for proc in psutil.process_iter(["cmdline"]):
        try:
            if any(str(tmp) in arg for arg in proc.info["cmdline"] or []):
                left.append(proc)
        except psutil.Error:
            pass
    return left


@needs_peer
def test_peer_bench_prints_three_servers_and_leaves_nothing(tmp_path):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = dict(os.environ, TMPDIR=str(tmp), SSDFLEET_PEER_EXPORTER=PEER)
    # About 20 s on a quiet 2-core machine (three starts, 3 x 3 s of scraping); generous for a
    # loaded one.
    proc = subprocess.run([sys.executable, str(BENCH), "--sizes", "4", "--seconds", "3"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith("machine: ")
    header, rows = _table(proc.stdout)
    assert header == COLUMNS
    assert [(row["drives"], row["server"]) for row in rows] == [("4", "ours"), ("4", "peer"), ("4", "floor")]
    by_name = {row["server"]: row for row in rows}
    for name, row in by_name.items():
        for column in ("first answer s", "p50 ms", "p99 ms", "max ms", "KiB per scrape gzip / plain",
                       "CPU s per drive-hour (window / unscraped)", "RSS MiB", "load average"):
            assert all(value >= 0 for value in _numbers(row[column])), (name, column, row[column])
        p50, p99, top = (float(row[c]) for c in ("p50 ms", "p99 ms", "max ms"))
        assert 0 < p50 <= p99 <= top, row
        scrapes, failed = row["scrapes (failed)"].replace("(", "").replace(")", "").split()
        assert int(scrapes) >= 10 and int(failed) == 0, row
        gz, plain = _numbers(row["KiB per scrape gzip / plain"])
        assert 0 < gz < plain, row  # every server answered gzip, as asked
    # The demo's fourth drive is a Shannon card: not a smartctl device.
    assert by_name["ours"]["drives read"] == "4" and by_name["peer"]["drives read"] == "3"
    assert float(by_name["ours"]["full data s"]) >= float(by_name["ours"]["first answer s"])
    assert float(by_name["peer"]["tool calls per drive-hour"]) >= 0
    assert by_name["floor"]["p50 / p99 vs floor"] == "1.0x / 1.0x"
    # The floor serves ours' body: the same plain size.
    assert _numbers(by_name["floor"]["KiB per scrape gzip / plain"])[1] == pytest.approx(
        _numbers(by_name["ours"]["KiB per scrape gzip / plain"])[1], rel=0.05)
    assert list(tmp.iterdir()) == [], "the bench left files behind"
    assert _ours(tmp) == [], "the bench left processes behind"


def test_peer_bench_refuses_without_a_peer_binary(tmp_path):
    proc = subprocess.run([sys.executable, str(BENCH), "--sizes", "4", "--peer", str(tmp_path / "absent")],
                          cwd=ROOT, capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 2
    assert "SSDFLEET_PEER_EXPORTER" in proc.stderr
    assert list(tmp_path.iterdir()) == []


def test_peer_bench_without_the_peer_compares_ours_with_the_floor(tmp_path):
    """``--no-peer`` (how the 1,024-drive figures are taken): ours and the floor only, every
    measured column filled, nothing left; runs where no peer binary is built."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = dict(os.environ, TMPDIR=str(tmp))
    env.pop("SSDFLEET_PEER_EXPORTER", None)
    proc = subprocess.run([sys.executable, str(BENCH), "--sizes", "4", "--seconds", "2", "--no-peer",
                           "--peer", str(tmp_path / "absent")], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "peer:  not run (--no-peer)" in proc.stdout
    header, rows = _table(proc.stdout)
    assert header == COLUMNS
    assert [(row["drives"], row["server"]) for row in rows] == [("4", "ours"), ("4", "floor")]
    for row in rows:
        p50, p99, top = (float(row[c]) for c in ("p50 ms", "p99 ms", "max ms"))
        assert 0 < p50 <= p99 <= top, row
        assert row["scrapes (failed)"].endswith("(0)"), row
    assert list(tmp.iterdir()) == [], "the bench left files behind"
    assert _ours(tmp) == [], "the bench left processes behind"
