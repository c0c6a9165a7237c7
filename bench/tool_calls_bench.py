"""Tool calls per drive-hour: the real agent on the fake host of the end-to-end tests.

The agent (``python -m agent agent``, from ``--tree``: this checkout by default, or another
checkout to compare) runs against tests/fakehost.py's default host (sda ATA, nvme0 and nvme1
NVMe, dfa a Shannon card; every tool a fake executable that logs its arguments) with every
source interval at its default divided by ``--speed``, for ``--hours`` simulated hours. Each
logged call is put under what asked it, and the count divided by drives and simulated hours.

Usage: ``python bench/tool_calls_bench.py [--speed 100] [--hours 1] [--tree PATH]``.
Prints one table; asserts nothing (the figures follow the intervals, not the machine).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.conftest import fixture_path  # noqa: E402
from tests.fakehost import build_default_host, free_port, stop_process  # noqa: E402

# The default intervals (collectors/*: SourceSpec.interval; discovery in agent/config.py).
DEFAULTS = {"smartctl": 300.0, "shannon": 60.0, "write_cache": 60.0, "diskstats": 15.0,
            "nvme_vendor": 300.0, "holders": 600.0, "discovery": 600.0}
DRIVES = 4  # sda, nvme0, nvme1, dfa


def purpose(call: str) -> str:
    """What a logged call was for."""
    tool, _, args = call.partition(" ")
    if tool == "hdparm" or (tool == "nvme" and args.startswith("get-feature")) or " -g wcache" in f" {args}":
        return "write cache"
    if tool == "smartctl" and ("--scan" in args or "--version" in args):
        return "discovery"
    if tool == "smartctl":
        return "SMART"
    if tool == "shannon-status":
        return "shannon-status"
    return f"{tool} (other)"


def run(tree: Path, speed: float, hours: float) -> Counter:
    with tempfile.TemporaryDirectory(prefix="ssdfleet-toolcalls-") as tmp:
        host = build_default_host(Path(tmp))
        host.set_response("nvme", "6", fixture_path("write-cache/nvme/vwc_on_v2.out"))
        args = [sys.executable, "-m", "agent", "agent", "--listen-address", f"127.0.0.1:{free_port()}",
                "--no-history"] + host.config_args()
        for name, seconds in DEFAULTS.items():
            args += [f"--interval.{name}", f"{seconds / speed:g}"]
        env = dict(os.environ, PYTHONPATH=str(tree))
        with open(Path(tmp) / "agent.log", "wb") as log:
            proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=str(tree),
                                    start_new_session=True)
            try:
                time.sleep(hours * 3600.0 / speed)
            finally:
                stop_process(proc)
        return Counter(purpose(c) for c in host.calls())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--speed", type=float, default=100.0)
    ap.add_argument("--hours", type=float, default=1.0)
    ap.add_argument("--tree", default=str(ROOT), help="the checkout whose agent runs")
    args = ap.parse_args()
    load = os.getloadavg()[0]
    counts = run(Path(args.tree), args.speed, args.hours)
    per = DRIVES * args.hours
    print(f"tree {args.tree}: {DRIVES} drives, {args.hours:g} simulated h at speed {args.speed:g}, "
          f"load average {load:.2f} -> {os.getloadavg()[0]:.2f}")
    print("| asked for | calls | per drive-hour |")
    print("|---|---:|---:|")
    for what, n in sorted(counts.items()):
        print(f"| {what} | {n} | {n / per:.1f} |")
    total = sum(counts.values())
    print(f"| all | {total} | {total / per:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
