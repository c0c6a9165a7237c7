"""What durable history costs: a flush with synchronous=FULL against the NORMAL it replaced.

Every ``History.record()`` that stores a sample is one committed transaction (a "flush"). With
``synchronous=FULL`` in WAL mode SQLite fdatasyncs the ``-wal`` before COMMIT returns; with
``NORMAL`` (what the agent used before issue 26) it syncs only at checkpoints, so a power cut
or a file system that turns read-only after an error loses what the page cache held.

Measured here, on the file system of ``--dir`` (put it where the state directory lives:
``/var/lib/ssdfleet``):

* **time per flush**: ``record()`` of one sample, median, p90, p99 and max over ``--samples``
  flushes spread over ``--drives`` drives, each mode in a fresh file. The FULL figures are
  those of the shipped code; NORMAL is the same History with its connection set back to
  ``PRAGMA synchronous=NORMAL``.
* **CPU per flush** (``time.process_time``) and **bytes the kernel wrote** for the process
  (``write_bytes`` of /proc/self/io; the ext4 journal thread's own writes are not in it).
* a **day at the defaults**: one sample per drive every 600 s (``history_min_interval_seconds``).
* the price of the other two guards of issue 26: the ``stat`` of the file and its ``-wal``
  before each flush (FileWatch.lost), and re-timing this boot's rows after a wall-clock step
  (one UPDATE of ``--retime-rows`` rows; it runs only when the clock steps).

Usage: ``python bench/history_sync_cost.py [--dir /var/lib/ssdfleet] [--samples 400]``.
Prints a table; no timing assertions (figures depend on the machine and its drive).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agent.history import History  # noqa: E402
from agent.history_clock import Clocks  # noqa: E402
from agent.history_file import FileWatch  # noqa: E402
from collectors.model import DriveReading  # noqa: E402

DAY = 86400.0
T0 = 1_780_000_000.0


def _io_write_bytes() -> int:
    try:
        with open("/proc/self/io", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("write_bytes:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return -1


def _reading(i: int) -> DriveReading:
    return DriveReading(kind="nvme", device="/dev/nvme0n1", host_written_bytes=i * 10**9, nand_written_bytes=i * 2 * 10**9,
                        life_left_ratio=0.97, power_on_seconds=3600 * i, media_errors=0)


def _quantile(values: List[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def flushes(directory: str, mode: str, samples: int, drives: int) -> Dict[str, float]:
    """Time ``samples`` record() calls, each storing one sample (one commit)."""
    work = tempfile.mkdtemp(prefix=f"ssdfleet-history-{mode.lower()}-", dir=directory)
    try:
        history = History(str(Path(work) / "history.sqlite"), clock=lambda: T0 + DAY,
                          min_interval_seconds=1)
        if mode != "FULL":
            history._conn.execute(f"PRAGMA synchronous={mode}")  # the setting before issue 26
        history.record("warm-up", T0, _reading(0))  # creates the -wal; the agent pays it once
        times: List[float] = []
        cpu, io = time.process_time(), _io_write_bytes()
        for i in range(samples):
            started = time.perf_counter()
            history.record(f"drive-{i % drives}", T0 + 10 * (i // drives + 1), _reading(i))
            times.append(time.perf_counter() - started)
        cpu, io = time.process_time() - cpu, _io_write_bytes() - io
        assert history.written_total == samples + 1 and history.pending_count == 0, history.last_error
        history.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {"median": statistics.median(times), "p90": _quantile(times, 0.9), "p99": _quantile(times, 0.99),
            "max": max(times), "mean": statistics.fmean(times), "cpu": cpu / samples,
            "io": io / samples if io >= 0 else -1.0}


def retime(directory: str, rows: int, drives: int) -> float:
    """Seconds to move ``rows`` samples of this boot after a wall-clock step."""
    work = tempfile.mkdtemp(prefix="ssdfleet-history-retime-", dir=directory)
    clocks = {"wall": T0, "boot": 30 * DAY}
    try:
        history = History(str(Path(work) / "history.sqlite"), min_interval_seconds=1,
                          max_rows_per_drive=rows, clocks=Clocks(wall=lambda: clocks["wall"],
                                                                 since_boot=lambda: clocks["boot"], boot=7))
        per_drive = rows // drives
        conn = history._conn  # filled in bulk: a day of record() calls would take as long
        conn.execute("BEGIN")
        conn.executemany("INSERT INTO samples (serial, ts, host_written_bytes, boot) VALUES (?, ?, ?, 7)",
                         ((f"drive-{d}", T0 - (per_drive - i) * 600.0, i) for d in range(drives)
                          for i in range(per_drive)))
        conn.execute("COMMIT")
        clocks["wall"] += 365 * DAY  # the step; the next record() finds it and moves the rows
        started = time.perf_counter()
        history.record("drive-0", clocks["wall"], _reading(1))
        took = time.perf_counter() - started
        assert history.clock_anomalies()["step_forward"] == 1
        history.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return took


def stat_cost(directory: str, calls: int = 20000) -> float:
    work = tempfile.mkdtemp(prefix="ssdfleet-history-stat-", dir=directory)
    try:
        with History(str(Path(work) / "history.sqlite"), clock=lambda: T0) as history:
            history.record("drive-0", T0, _reading(1))
            watch = FileWatch(str(Path(work) / "history.sqlite"))
            started = time.perf_counter()
            for _ in range(calls):
                watch.lost()
            return (time.perf_counter() - started) / calls
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", default=tempfile.gettempdir(), help="file system to measure (a temporary "
                        "directory is made there)")
    parser.add_argument("--samples", type=int, default=400, help="flushes per mode")
    parser.add_argument("--drives", type=int, default=24, help="drives the samples are spread over")
    parser.add_argument("--retime-rows", type=int, default=24 * 20000, help="rows of this boot to re-time "
                        "(default: 24 drives at the 20,000-row cap)")
    args = parser.parse_args()

    print(f"history flush cost on {args.dir}: {args.samples} flushes over {args.drives} drives per mode")
    print(f"  {'synchronous':<12}{'median':>10}{'p90':>10}{'p99':>10}{'max':>10}{'CPU':>10}{'written':>11}")
    results = {}
    for mode in ("NORMAL", "FULL"):
        r = flushes(args.dir, mode, args.samples, args.drives)
        results[mode] = r
        print(f"  {mode:<12}" + "".join(f"{r[k] * 1000:>8.2f}ms" for k in ("median", "p90", "p99", "max", "cpu"))
              + (f"{r['io'] / 1024:>8.1f} kB" if r["io"] >= 0 else "       n/a"))
    extra = results["FULL"]["median"] - results["NORMAL"]["median"]
    per_day = DAY / 600 * args.drives
    print(f"  FULL costs {extra * 1000:.2f} ms more per flush (median); at the defaults ({args.drives} drives, "
          f"a sample each every 600 s: {per_day:,.0f} flushes a day) that is {extra * per_day:.1f} s of "
          f"waiting a day in the poller's threads, {results['FULL']['cpu'] * per_day:.2f} s of CPU")
    print(f"  file check before each flush (stat of the file and its -wal): {stat_cost(args.dir) * 1e6:.1f} us")
    took = retime(args.dir, args.retime_rows, args.drives)
    print(f"  re-timing {args.retime_rows:,} rows of this boot after a wall-clock step: {took:.2f} s "
          f"(once per step)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
