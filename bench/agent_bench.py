"""Agent benchmarks on simulated hosts of 1, 8, 64 and 256 drives.

For each size:

* **poll CPU per drive**: the real :class:`agent.poller.Poller` runs a full poll (discovery,
  smartctl, shannon, write cache, diskstats, snapshot with projections) with an injected
  runner that returns pre-rendered tool output, so only our own code is timed (the tools'
  time is excluded by construction). CPU = ``time.process_time()`` (all threads).
* **full render**: :class:`agent.metrics.Exposition` rendering that snapshot from scratch, as
  the agent does once per new snapshot in the poller's listener thread, in-process.
* **cached body**: what a scrape costs in-process once the snapshot is rendered: the cached
  text plus ``ssd_data_age_seconds``.
* **HTTP**: the real ``ssdfleet agent`` process, pointed at the same simulated host, scraped
  sequentially over one keep-alive connection on 127.0.0.1: p50/p99 latency and scrapes per
  second. Its resident memory (VmRSS) is read after the scrapes.
* **series per drive**: samples in /metrics carrying a ``serial`` label, divided by drives,
  per drive kind; plus the per-agent series.

Usage: ``python bench/agent_bench.py [--sizes 1,8,64,256] [--scrapes 300]``. Prints a table
(no timing assertions anywhere: figures depend on the machine).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import defaultdict
from pathlib import Path
from typing import Dict, List, Tuple

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agent.config import load_config  # noqa: E402
from agent.history import History  # noqa: E402
from agent.metrics import Exposition  # noqa: E402
from agent.poller import Poller  # noqa: E402
from bench.procs import free_port, stop  # noqa: E402
from collectors.runner import ToolResult  # noqa: E402
from simulator import tool as simtool  # noqa: E402
from simulator.demo import demo_drives  # noqa: E402
from simulator.host import SimHost  # noqa: E402


def percentile(values: List[float], q: float) -> float:
    ordered = sorted(values)
    k = min(len(ordered) - 1, max(0, int(round(q / 100.0 * (len(ordered) - 1)))))
    return ordered[k]


class PreRendered:
    """A runner that renders each distinct argv once (in-process, through the simulator's
    tool code) and replays it afterwards: the poll being timed runs none of the tools."""

    def __init__(self, state_file: str) -> None:
        self.state_file = state_file
        self.cache: Dict[tuple, ToolResult] = {}

    def __call__(self, argv, timeout: float = 0.0, **_) -> ToolResult:
        key = tuple(argv)
        hit = self.cache.get(key)
        if hit is None:
            out, err, code = simtool.run(self.state_file, os.path.basename(argv[0]), list(argv[1:]))
            hit = ToolResult(argv=key, exit_code=code, stdout=out.encode(), stderr=err.encode(),
                             duration_seconds=0.0)
            self.cache[key] = hit
        return hit


def poll_cpu(host: SimHost, drives: int, polls: int) -> Tuple[float, float, List[float], List[float]]:
    """(CPU seconds per poll per drive, median, full-render and cached-body latencies in
    seconds)."""
    config = load_config(overrides=host.config_overrides())
    poller = Poller(config, runner=PreRendered(str(host.state_file)),
                    history=History(None, clock=host.clock), clock=host.clock)
    try:
        poller.poll_once()  # warm-up: fills the pre-rendered cache
        cpu = []
        for _ in range(polls):
            started = time.process_time()
            poller.poll_once()
            cpu.append(time.process_time() - started)
        # Full render: what the agent does once per new snapshot, in the poller's listener
        # thread (a fresh Exposition each time, so nothing is cached).
        snap = poller.snapshot()
        Exposition(lambda: snap).render()
        renders = []
        for _ in range(100):
            exposition = Exposition(lambda: snap)
            started = time.perf_counter()
            exposition.prepare(snap)
            renders.append(time.perf_counter() - started)
        # Scrape body: what a scrape does when the snapshot was prepared (cached text + the
        # data ages).
        exposition = Exposition(lambda: snap)
        exposition.prepare(snap)
        cached = []
        for _ in range(200):
            started = time.perf_counter()
            exposition.render()
            cached.append(time.perf_counter() - started)
    finally:
        poller.stop()
    med = statistics.median(cpu)
    return med / drives, med, renders, cached


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


def http_bench(host: SimHost, drives: int, scrapes: int, workdir: Path) -> Dict:
    port = free_port()
    args = [sys.executable, "-m", "agent", "agent", "--listen-address", f"127.0.0.1:{port}",
            "--no-history"]
    for key, value in host.overrides().items():
        if key == "state_dir":
            continue
        flag = {"tool_smartctl": "--smartctl", "tool_shannon_status": "--shannon-status",
                "tool_hdparm": "--hdparm", "tool_nvme": "--nvme", "path_sysfs": "--path.sysfs",
                "path_procfs": "--path.procfs"}[key]
        args += [flag, value]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    log = open(workdir / "agent.log", "wb")
    proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=str(ROOT),
                            start_new_session=True)
    try:
        conn = None
        body = b""
        deadline = time.monotonic() + 180  # a 256-drive first poll runs ~600 tool calls
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError((workdir / "agent.log").read_text())
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
                conn.request("GET", "/metrics")
                body = conn.getresponse().read()
                # every drive but the LITEONs (no life figure) once the first polls are done;
                # on a loaded machine a probe may miss its first round, so accept 90% after a
                # minute (the count is printed)
                have = body.count(b"\nssd_life_left_ratio{")
                want = drives - (drives + 4) // 8
                ready = b"ssd_io_written_bytes_total{" in body and b'collector="write_cache"' in body
                if ready and (have >= want or (time.monotonic() > deadline - 120 and have >= 0.9 * want)):
                    break
                conn.close()
            except OSError:
                pass
            time.sleep(1.0)
        else:
            have = body.count(b"\nssd_life_left_ratio{")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/drives", timeout=10) as r:
                    doc = json.load(r)
                print("problems:", doc["problems"], "collectors:", doc["collectors"], file=sys.stderr)
            except OSError as exc:
                print("no /api/v1/drives:", exc, file=sys.stderr)
            raise TimeoutError(f"agent never served every drive ({have} with life left of {drives}):\n"
                               + (workdir / "agent.log").read_text()[-2000:])
        latencies = []
        started = time.perf_counter()
        for _ in range(scrapes):
            t = time.perf_counter()
            conn.request("GET", "/metrics")
            body = conn.getresponse().read()
            latencies.append(time.perf_counter() - t)
        total = time.perf_counter() - started
        conn.close()
        rss = rss_kib(proc.pid)
    finally:
        stop(proc, grace=10)
        log.close()
    return {"latencies": latencies, "per_second": scrapes / total, "rss_kib": rss, "body": body.decode(),
            "with_life": body.count(b"\nssd_life_left_ratio{")}


def series_per_drive(text: str, host: SimHost) -> Tuple[Dict[str, float], int]:
    kind_of = {d.serial: d.kind for d in host.drives}
    per_kind: Dict[str, int] = defaultdict(int)
    drives_of_kind: Dict[str, int] = defaultdict(int)
    for d in host.drives:
        drives_of_kind[d.kind] += 1
    agent_series = 0
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        start = line.find('serial="')
        if start < 0:
            agent_series += 1
            continue
        serial = line[start + 8:line.index('"', start + 8)]
        per_kind[kind_of.get(serial, "other")] += 1
    return {k: per_kind[k] / drives_of_kind[k] for k in drives_of_kind}, agent_series


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1,8,64,256")
    ap.add_argument("--scrapes", type=int, default=300)
    ap.add_argument("--polls", type=int, default=5)
    args = ap.parse_args()
    cpu_model = "unknown"
    with open("/proc/cpuinfo") as fh:
        for line in fh:
            if line.startswith("model name"):
                cpu_model = line.split(":", 1)[1].strip()
                break
    print(f"machine: {os.cpu_count()} CPUs, {cpu_model}, Python {platform.python_version()}, "
          f"load average at start {os.getloadavg()[0]:.2f}")
    rows = []
    for size in [int(s) for s in args.sizes.split(",")]:
        workdir = Path(tempfile.mkdtemp(prefix=f"ssdfleet-bench-{size}-"))
        try:
            now = time.time()
            host = SimHost(workdir / "host", demo_drives(size, now), speed=0.0, sim_start=now)
            per_drive, per_poll, renders, cached = poll_cpu(host, size, args.polls)
            http = http_bench(host, size, args.scrapes, workdir)
            series, agent_series = series_per_drive(http["body"], host)
            rows.append((size, http, per_drive, per_poll, renders, cached, series, agent_series))
            print(f"     load average now {os.getloadavg()[0]:.2f}")
            lat = http["latencies"]
            print(f"{size:>4} drives: HTTP p50 {percentile(lat, 50)*1e3:.2f} ms p99 {percentile(lat, 99)*1e3:.2f} ms "
                  f"{http['per_second']:.0f}/s | full render p50 {percentile(renders, 50)*1e3:.2f} ms "
                  f"p99 {percentile(renders, 99)*1e3:.2f} ms | cached body p50 {percentile(cached, 50)*1e3:.3f} ms "
                  f"p99 {percentile(cached, 99)*1e3:.3f} ms | poll CPU {per_poll*1e3:.1f} ms "
                  f"({per_drive*1e3:.2f} ms/drive) | RSS {http['rss_kib']/1024:.1f} MiB | "
                  f"series/drive {series} + {agent_series} per agent; {http['with_life']} drives with life left", flush=True)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
    print()
    print("| drives | scrape p50 (HTTP) | scrape p99 (HTTP) | scrapes/s | full render p50 / p99 "
          "| cached body p50 / p99 | poll CPU/drive | agent RSS | series/drive (shannon / ata / nvme) |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for size, http, per_drive, _, renders, cached, series, agent_series in rows:
        lat = http["latencies"]
        kinds = " / ".join(f"{series[k]:.1f}" if k in series else "-" for k in ("shannon", "ata", "nvme"))
        print(f"| {size} | {percentile(lat, 50)*1e3:.2f} ms | {percentile(lat, 99)*1e3:.2f} ms | "
              f"{http['per_second']:.0f} | {percentile(renders, 50)*1e3:.2f} / {percentile(renders, 99)*1e3:.2f} ms | "
              f"{percentile(cached, 50)*1e3:.3f} / {percentile(cached, 99)*1e3:.3f} ms | {per_drive*1e3:.2f} ms | "
              f"{http['rss_kib']/1024:.1f} MiB | {kinds} (+{agent_series} per agent) |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
