"""How soon the real agent answers after it starts, on a simulated host.

For each size: ``python -m agent agent`` (from ``--tree``: this checkout, or another to
compare) is started on a simulated host (simulator/, real output layouts) and /metrics is
asked every 10 ms from the moment the process was spawned. Printed, in seconds after spawn:

* **listening**: the first TCP connect that succeeded;
* **first /metrics**: the first 200 answer to /metrics, whatever it holds;
* **first full data**: the first /metrics holding every drive's SMART or Shannon life figure
  (the drives that have one) and the write cache collector's run;
* the agent's RSS then (VmRSS).

With ``--replay`` the fake tools replay what a first, uncounted start recorded (simulator/host.py:
about 3 ms a call where rendering costs 0.1 s of Python CPU), so the full-data time is the
agent's own and not the simulator's.

Usage: ``python bench/start_bench.py [--sizes 8,64] [--rounds 3] [--tree PATH] [--replay]``.
Asserts nothing; the load average is printed with each row (the machine may be shared).
"""

from __future__ import annotations

import argparse
import http.client
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.procs import free_port, stop  # noqa: E402
from simulator.demo import demo_drives  # noqa: E402
from simulator.host import SimHost  # noqa: E402

FLAGS = {"tool_smartctl": "--smartctl", "tool_shannon_status": "--shannon-status", "tool_hdparm": "--hdparm",
         "tool_nvme": "--nvme", "path_sysfs": "--path.sysfs", "path_procfs": "--path.procfs"}


def agent_args(host: SimHost, port: int) -> List[str]:
    args = [sys.executable, "-m", "agent", "agent", "--listen-address", f"127.0.0.1:{port}", "--no-history"]
    for key, value in host.overrides().items():
        if key in FLAGS:
            args += [FLAGS[key], value]
    return args


def _get(port: int) -> Optional[bytes]:
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        try:
            conn.request("GET", "/metrics")
            response = conn.getresponse()
            return response.read() if response.status == 200 else None
        finally:
            conn.close()
    except OSError:
        return None


def full(body: bytes, drives: int) -> bool:
    want = drives - (drives + 4) // 8  # the demo's LITEONs report no life figure
    return (body.count(b"\nssd_life_left_ratio{") >= want and b'collector="write_cache"' in body
            and b"ssd_io_written_bytes_total{" in body)


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


def spawn(tree: Path, size: int, workdir: Path, replay: Optional[Path] = None,
          argv: Optional[Callable[[List[str]], List[str]]] = None) -> Tuple[subprocess.Popen, int]:
    """The agent from ``tree`` started on a simulated host of ``size`` drives in ``workdir``
    (its log in ``agent.log`` there): the process and its port. ``argv`` may rewrite the
    command line."""
    now = time.time()
    host = SimHost(workdir / "host", demo_drives(size, now), speed=0.0, sim_start=now, replay=replay)
    port = free_port()
    args = agent_args(host, port)
    env = dict(os.environ, PYTHONPATH=str(tree))
    with open(workdir / "agent.log", "wb") as log:
        proc = subprocess.Popen(args if argv is None else argv(args), stdout=log, stderr=subprocess.STDOUT,
                                env=env, cwd=str(tree), start_new_session=True)
    return proc, port


def one_start(tree: Path, size: int, timeout: float = 120.0, replay: Optional[Path] = None) -> Dict[str, float]:
    """Seconds from spawn to the first answer and to full data, and the RSS (MiB) at each."""
    workdir = Path(tempfile.mkdtemp(prefix=f"ssdfleet-start-{size}-"))
    try:
        spawned = time.perf_counter()
        proc, port = spawn(tree, size, workdir, replay)
        out: Dict[str, float] = {}
        try:
            while time.perf_counter() - spawned < timeout and "full" not in out:
                body = _get(port)
                at = time.perf_counter() - spawned
                if body is not None:
                    if "first" not in out:
                        out["first"], out["rss_first_mib"] = at, rss_kib(proc.pid) / 1024
                    if full(body, size):
                        out["full"] = at
                        out["rss_mib"] = rss_kib(proc.pid) / 1024
                time.sleep(0.01)
        finally:
            stop(proc, grace=10)
        return out
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="8,64")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--tree", default=str(ROOT))
    ap.add_argument("--replay", action="store_true",
                    help="fake tools that replay the answers a first, uncounted start recorded (about 3 ms a "
                         "call instead of 0.1 s of Python), so the figures are the agent's")
    args = ap.parse_args()
    print(f"tree {args.tree}; tools {'replaying (one recording start first, not counted)' if args.replay else 'rendering'}")
    print("| drives | first /metrics s (median, max) | first full data s (median, max) | RSS then MiB | load average |")
    print("|---:|---|---|---:|---|")
    for size in [int(s) for s in args.sizes.split(",")]:
        replay_dir = Path(tempfile.mkdtemp(prefix=f"ssdfleet-replay-{size}-")) if args.replay else None
        try:
            if replay_dir is not None:
                one_start(Path(args.tree), size, replay=replay_dir)
            load = os.getloadavg()[0]
            runs = [one_start(Path(args.tree), size, replay=replay_dir) for _ in range(args.rounds)]
        finally:
            if replay_dir is not None:
                shutil.rmtree(replay_dir, ignore_errors=True)
        first = [r["first"] for r in runs if "first" in r]
        whole = [r["full"] for r in runs if "full" in r]
        rss = [r["rss_mib"] for r in runs if "rss_mib" in r]
        print(f"| {size} | {statistics.median(first):.2f}, {max(first):.2f} | "
              f"{statistics.median(whole):.2f}, {max(whole):.2f} | {statistics.median(rss):.1f} | "
              f"{load:.2f} -> {os.getloadavg()[0]:.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
