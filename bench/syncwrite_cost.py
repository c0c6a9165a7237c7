"""What the sync-write probe costs the host, at the shipped default settings.

Runs the real probe (collectors/syncwrite.py, through :class:`SyncWriteProbe`, as the agent
does) for ``--runs`` bursts in a directory (a temporary one on the filesystem of ``--dir``),
then scales to a day at the configured interval (default every 300 s):

* **CPU**: ``time.process_time()`` of this process (every thread: the burst runs in a worker
  thread) per burst, and per day as seconds and as a share of one core.
* **bytes the probe writes**: blocks x 8 kB per burst, as the probe counts them.
* **bytes the kernel wrote for this process**: ``write_bytes`` of /proc/self/io (0 on a tmpfs).
  The journal blocks a filesystem commits on fdatasync are written by its journal thread
  (jbd2 on ext4) and are not counted there: a drive sees somewhat more than this.
* the burst's wall time and the measured ops/s and p50/p99 latency, for context.

Usage: ``python bench/syncwrite_cost.py [--dir /var/lib/postgresql] [--runs 20]``. Prints a
table; no timing assertions (figures depend on the machine and the drive).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agent.config import Config  # noqa: E402
from collectors.syncwrite import probe_from_config, quantile  # noqa: E402

DAY = 86400.0


def _io_write_bytes() -> int:
    try:
        with open("/proc/self/io", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("write_bytes:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return -1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", default=tempfile.gettempdir(), help="filesystem to probe (a temporary directory is made there)")
    parser.add_argument("--runs", type=int, default=20, help="bursts to measure")
    args = parser.parse_args()

    workdir = tempfile.mkdtemp(prefix="ssdfleet-syncwrite-bench-", dir=args.dir)
    try:
        defaults = Config().syncwrite
        config = Config(syncwrite=defaults.model_copy(update={"directories": [workdir]}))
        probe = probe_from_config(config)
        probe.run()  # the first burst creates the file; the agent pays that once
        cpu0, wall0, io0 = time.process_time(), time.monotonic(), _io_write_bytes()
        results = [probe.run()[0] for _ in range(args.runs)]
        cpu = (time.process_time() - cpu0) / args.runs
        wall = (time.monotonic() - wall0) / args.runs
        io = (_io_write_bytes() - io0) / args.runs if io0 >= 0 else float("nan")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

    skipped = [r for r in results if r.skipped]
    if skipped:
        print(f"{len(skipped)} of {args.runs} runs skipped: {skipped[0].skipped}: {skipped[0].detail}")
        return 1
    per_day = DAY / defaults.interval_seconds
    probe_bytes = sum(r.written_bytes for r in results) / args.runs
    latencies = [lat for r in results for lat in r.latencies]
    q = {p: quantile(latencies, p) for p in (0.5, 0.99, 1.0)}
    ops = sum(r.ops for r in results) / sum(sum(r.latencies) for r in results)

    print(f"sync-write probe cost at the default settings: {defaults.writes} x 8 kB {results[0].method} per burst, "
          f"one burst every {defaults.interval_seconds:.0f} s ({per_day:.0f} a day) per directory, "
          f"on the filesystem of {args.dir} ({args.runs} bursts measured)")
    print()
    print("| figure | per burst | per day |")
    print("|---|---:|---:|")
    print(f"| CPU (all threads) | {cpu * 1e3:.2f} ms | {cpu * per_day:.2f} s ({cpu * per_day / DAY:.5%} of a core) |")
    print(f"| bytes the probe writes | {probe_bytes / 1024:.0f} KiB | {probe_bytes * per_day / 1e6:.1f} MB |")
    print(f"| bytes the kernel wrote for it (/proc/self/io) | {io / 1024:.0f} KiB | {io * per_day / 1e6:.1f} MB |")
    print(f"| wall time of a burst | {wall * 1e3:.1f} ms | {wall * per_day:.1f} s |")
    print()
    print(f"measured: {ops:.0f} syncs/s, p50 {q[0.5] * 1e6:.0f} us, p99 {q[0.99] * 1e6:.0f} us, "
          f"slowest {q[1.0] * 1e6:.0f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
