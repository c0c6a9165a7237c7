"""Where the agent's resident memory goes after its imports, on a simulated host.

The real agent (``python -m agent agent --no-history``, this checkout or ``--tree``) starts on a
simulated host of ``--size`` drives whose tools replay recorded answers (simulator/host.py), as
in bench/start_bench.py. Printed:

* VmRSS when ``/metrics`` first answers (the imports and the listener, no drive read yet) and
  at first full data (every drive read, the first snapshot rendered), from ``--rounds`` starts
  without tracing (medians);
* one more start under ``tracemalloc``: the Python allocations live at each of those two
  moments, and the growth between them by source file, the ``--top`` largest. tracemalloc sees
  what Python allocates (objects, compiled regexes, the interpreter's own structures), not the
  C libraries' own heaps, thread stacks or the allocator's slack, so the RSS growth and the
  traced growth differ by that.

Usage: ``python bench/memory_breakdown.py [--size 64] [--rounds 3] [--top 15] [--tree PATH]``.
Asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Optional

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.procs import stop  # noqa: E402
from bench.start_bench import _get, full, one_start, spawn  # noqa: E402

# Run in the agent's process in front of the agent itself: a thread that waits for the marker
# files the benchmark writes and dumps tracemalloc's view at each.
_TRACED = r"""
import json, os, sys, threading, time, tracemalloc
tracemalloc.start(1)
marks = sys.argv.pop(1)
def watch():
    kept = {}
    for name in ("listening", "full"):
        while not os.path.exists(os.path.join(marks, name)):
            time.sleep(0.02)
        kept[name] = tracemalloc.take_snapshot()
    growth = kept["full"].compare_to(kept["listening"], "filename")
    totals = {name: sum(s.size for s in snap.statistics("filename")) for name, snap in kept.items()}
    rows = [(str(s.traceback[0].filename), s.size_diff, s.count_diff) for s in growth]
    with open(os.path.join(marks, "dump.json.tmp"), "w") as fh:
        json.dump({"totals": totals, "growth": rows}, fh)
    os.rename(os.path.join(marks, "dump.json.tmp"), os.path.join(marks, "dump.json"))
threading.Thread(target=watch, daemon=True).start()
sys.argv[0] = "ssdfleet"
from agent.cli import main
sys.exit(main())
"""


def traced_start(tree: Path, size: int, replay: Path, timeout: float = 300.0) -> Optional[Dict]:
    workdir = Path(tempfile.mkdtemp(prefix=f"ssdfleet-memory-{size}-"))
    try:
        marks = workdir / "marks"
        marks.mkdir()
        # [python, -m, agent, agent, ...] -> [python, -c, _TRACED, marks, agent, ...]
        proc, port = spawn(tree, size, workdir, replay, argv=lambda args: [args[0], "-c", _TRACED, str(marks)] + args[3:])
        try:
            deadline = time.monotonic() + timeout
            state = "start"
            while time.monotonic() < deadline:
                body = _get(port)
                if body is not None and state == "start":
                    (marks / "listening").touch()
                    state = "listening"
                if body is not None and state == "listening" and full(body, size):
                    (marks / "full").touch()
                    state = "full"
                if state == "full" and (marks / "dump.json").exists():
                    return json.loads((marks / "dump.json").read_text())
                time.sleep(0.01)
            return None
        finally:
            stop(proc, grace=10)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def where(path: str, tree: Path) -> str:
    """A source file's name shortened to the checkout or the library it belongs to."""
    for prefix in (str(tree) + os.sep, sys.prefix + os.sep):
        if path.startswith(prefix):
            path = path[len(prefix):]
    marker = "site-packages" + os.sep
    if marker in path:
        return path.split(marker, 1)[1]
    stdlib = re.search(r"lib/python3\.\d+/(.+)$", path)
    return "stdlib: " + stdlib.group(1) if stdlib else path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--tree", default=str(ROOT))
    args = ap.parse_args()
    tree = Path(args.tree)
    replay = Path(tempfile.mkdtemp(prefix=f"ssdfleet-replay-{args.size}-"))
    try:
        one_start(tree, args.size, replay=replay)  # records the tools' answers
        load = os.getloadavg()[0]
        runs = [one_start(tree, args.size, replay=replay) for _ in range(args.rounds)]
        traced = traced_start(tree, args.size, replay)
    finally:
        shutil.rmtree(replay, ignore_errors=True)
    listening = statistics.median(r["rss_first_mib"] for r in runs if "full" in r)
    at_full = statistics.median(r["rss_mib"] for r in runs if "full" in r)
    print(f"tree {tree}; {args.size} drives; {args.rounds} untraced starts; load {load:.2f} -> {os.getloadavg()[0]:.2f}")
    print("| moment | VmRSS MiB (median) | traced Python allocations MiB |")
    print("|---|---:|---:|")
    totals = traced["totals"] if traced else {}
    for name, rss in (("first /metrics answer", listening), ("first full data", at_full)):
        key = "listening" if name.startswith("first /") else "full"
        mib = f"{totals[key] / 2**20:.1f}" if key in totals else "-"
        print(f"| {name} | {rss:.1f} | {mib} |")
    if not traced:
        print("the traced start did not reach full data")
        return 1
    print()
    print(f"Traced growth from the first answer to full data, by file (the {args.top} largest):")
    print("| file | KiB | blocks |")
    print("|---|---:|---:|")
    rows: List = sorted(traced["growth"], key=lambda r: -r[1])
    for path, size, count in rows[:args.top]:
        print(f"| {where(path, tree)} | {size / 1024:.0f} | {count} |")
    rest = sum(r[1] for r in rows[args.top:])
    print(f"| the other {max(0, len(rows) - args.top)} files | {rest / 1024:.0f} | |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
