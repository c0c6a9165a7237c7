"""Soak: the real agent on a simulated host for 24 simulated hours, with faults injected at random.

The simulator (simulator/host.py) renders each drive's tool output at simulated time, which runs
``--speed`` times faster than real time (3600 by default, the simulator's own default: 24
simulated hours take 24 real minutes at --speed 60, 24 real seconds at --speed 3600). The agent
polls in real time with short intervals so that it runs many cycles, and records a history
sample per drive every ``--history-interval`` real seconds.

In front of the simulated ``smartctl`` sits a fault shim: every few seconds the soak picks a
random drive and a random fault for it (hang past the tool timeout, flood, garbage, exit status
2 with nothing printed, ignore SIGTERM; and issue 26's: a 5,000-digit number, JSON nested
100,000 deep, leftover processes, an impossible capacity, two drives with one serial) or
clears one, and now and then one agent-level fault (SIGHUP, SIGUSR1, 64 connections that
pipeline and never read, the history file deleted once). The wall-clock steps are not here:
they need libfaketime around the agent (tests/test_history_clock.py). Meanwhile it:

* scrapes /metrics every second (and records the slowest scrape);
* samples the agent's RSS (VmRSS) and open file descriptors;
* at the end reads ``ssd_history_samples_recorded_total`` from the last scrape, stops the agent
  with SIGTERM, and counts the rows in its history file. A lost sample is one the agent
  accepted before that scrape that is not on disk after the stop.

Prints the figures and exits 1 if a sample was lost, a scrape failed or took over 1 s, a process
outlived the agent, or RSS or file descriptors grew (last quarter against first quarter: RSS by
more than 10% + 8 MiB, descriptors by more than 8; the first quarter is warm-up). Run outside CI:

    python bench/soak.py                      # 24 simulated hours at speed 3600 (24 s)
    python bench/soak.py --speed 240          # the same 24 hours over 6 real minutes
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any, Dict, List, Optional

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.procs import free_port  # noqa: E402
from simulator.demo import demo_drives  # noqa: E402
from simulator.host import SimHost  # noqa: E402

# Tool faults, per device: the first round's, then issue 26's (a 5,000-digit number, JSON
# nested 100,000 deep, a tool leaving processes behind in and out of its group, a capacity of
# 10^3239 bytes, two drives reporting one serial).
FAULTS = ("hang", "flood", "garbage", "nodata", "ignore-term", "digits", "deep", "leak", "impossible", "twin")
# Agent faults, host-wide (issue 26): SIGHUP (a reload), SIGUSR1 (ignored), 64 connections
# that pipeline requests and never read for 3 s, the history file deleted under the agent.
AGENT_FAULTS = ("sighup", "usr1", "slow-readers", "history-deleted")

_SHIM = """#!/bin/sh
# fault shim in front of the simulated smartctl: misbehave for a device with a fault file
F="{faults}"
last=none
for a in "$@"; do last="$a"; done
key=$(basename "$last")
if [ -f "$F/$key" ]; then
  case "$(cat "$F/$key")" in
    hang) sleep 30 ;;
    flood) head -c 50000000 /dev/zero ;;
    garbage) head -c 4000 /dev/urandom ;;
    nodata) exit 2 ;;
    ignore-term) trap '' TERM; sleep 30 ;;
    digits) printf '{{"x": '; head -c 5000 /dev/zero | tr '\\0' 9; printf '}}\\n' ;;
    deep) head -c 100000 /dev/zero | tr '\\0' '['; head -c 100000 /dev/zero | tr '\\0' ']' ;;
    leak) "{sleeper}" 300 </dev/null >/dev/null 2>&1 &
          setsid "{sleeper}" 301 </dev/null >/dev/null 2>&1 &
          exec "{real}" "$@" ;;
    impossible) "{real}" "$@" | sed "0,/\\"bytes\\": *[0-9]*/s//\\"bytes\\": 1$(printf '%03239d' 0)/" ;;
    twin) "{real}" "$@" | sed 's/"serial_number": *"[^"]*"/"serial_number":"SOAK-TWIN"/' ;;
  esac
  exit 0
fi
exec "{real}" "$@"
"""


def scrape(url: str) -> Dict[str, float]:
    with urllib.request.urlopen(url + "/metrics", timeout=5) as r:
        text = r.read().decode()
    out: Dict[str, float] = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, number = line.rpartition(" ")
            try:
                out[name] = float(number)
            except ValueError:
                pass
    return out


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def descendants(pid: int) -> List[int]:
    out = subprocess.run(["ps", "-e", "-o", "pid=,ppid="], capture_output=True, text=True).stdout
    children: Dict[int, List[int]] = {}
    for line in out.splitlines():
        p, pp = (int(x) for x in line.split())
        children.setdefault(pp, []).append(p)
    found, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            found.append(c)
            todo.append(c)
    return found


def leftover(sleeper: Path) -> List[int]:
    """Processes still running the soak's copy of sleep (left by the "leak" fault)."""
    out = subprocess.run(["ps", "-e", "-o", "pid=,stat=,args="], capture_output=True, text=True).stdout
    return [int(line.split()[0]) for line in out.splitlines()
            if str(sleeper) in line and not line.split()[1].startswith("Z")]


def _slow_readers(port: int, count: int = 64, depth: int = 50) -> List[Any]:
    """``count`` connections, each sending ``depth`` pipelined requests and reading nothing."""
    import socket

    request = b"GET /metrics HTTP/1.1\r\nHost: soak\r\n\r\n" * depth
    out = []
    for _ in range(count):
        sock = socket.socket()
        sock.settimeout(1.0)
        try:
            sock.connect(("127.0.0.1", port))
            sock.sendall(request)
        except OSError:
            sock.close()
            continue
        out.append(sock)
    return out


def _agent_fault(rng: random.Random, pid: int, port: int, work: Path, readers: List[Any],
                 counts: Dict[str, int]) -> List[Any]:
    """Now and then one agent-level fault; slow readers close after one fault step."""
    for sock in readers:
        sock.close()
    readers = []
    if rng.random() > 0.25:
        return readers
    kind = rng.choice(AGENT_FAULTS)
    if kind == "history-deleted" and counts.get(kind):
        return readers  # once per soak: each time rewrites the whole file
    counts[kind] = counts.get(kind, 0) + 1
    if kind == "sighup":
        os.kill(pid, signal.SIGHUP)
    elif kind == "usr1":
        os.kill(pid, signal.SIGUSR1)
    elif kind == "slow-readers":
        readers = _slow_readers(port)
    elif kind == "history-deleted":
        (work / "state" / "history.sqlite").unlink(missing_ok=True)
    return readers


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hours", type=float, default=24.0, help="simulated hours (default 24)")
    ap.add_argument("--speed", type=float, default=3600.0, help="simulated seconds per real second")
    ap.add_argument("--drives", type=int, default=8)
    ap.add_argument("--history-interval", type=float, default=1.0, help="real seconds between samples of a drive")
    ap.add_argument("--fault-every", type=float, default=2.0, help="real seconds between fault changes")
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--faults", default=",".join(FAULTS), help="tool faults to draw from (comma-separated)")
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    args = ap.parse_args(argv)

    rng = random.Random(args.seed)
    faults = [f for f in args.faults.split(",") if f]
    unknown = set(faults) - set(FAULTS)
    if unknown or not faults:
        ap.error(f"--faults: unknown {sorted(unknown)}; known: {', '.join(FAULTS)}")
    seconds = args.hours * 3600.0 / args.speed
    work = Path(tempfile.mkdtemp(prefix="ssdfleet-soak-"))
    now = time.time()
    host = SimHost(work / "host", demo_drives(args.drives, now), speed=args.speed, sim_start=now)
    host.start_refresher(1.0)
    faults_dir = work / "faults"
    faults_dir.mkdir()
    real = host.bin / ".smartctl.real"
    (host.bin / "smartctl").rename(real)
    shim = host.bin / "smartctl"
    sleeper = host.bin / "soak-leaked-sleep"  # a copy of sleep, found by its path at the end
    sleeper.write_bytes(Path("/bin/sleep").read_bytes())
    sleeper.chmod(0o755)
    shim.write_text(_SHIM.format(faults=faults_dir, real=real, sleeper=sleeper))
    shim.chmod(0o755)
    devices = sorted(d.device.rsplit("/", 1)[-1] for d in host.drives)

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    config = work / "soak.yml"
    config.write_text(json.dumps({"history_min_interval_seconds": args.history_interval,
                                  "tool_kill_grace_seconds": 0.3, "max_concurrent_probes": 4}))
    o = host.overrides()
    log_path = work / "agent.log"
    cmd = [sys.executable, "-m", "agent", "agent", "--config", str(config), "--listen-address", f"127.0.0.1:{port}",
           "--smartctl", str(shim), "--shannon-status", o["tool_shannon_status"], "--hdparm", o["tool_hdparm"],
           "--nvme", o["tool_nvme"], "--path.sysfs", o["path_sysfs"], "--path.procfs", o["path_procfs"],
           "--state-dir", str(work / "state"), "--tool-timeout", "1", "--interval.smartctl", "1",
           "--interval.shannon", "1", "--interval.write_cache", "2", "--interval.diskstats", "0.5",
           "--interval.discovery", "30"]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    with open(log_path, "wb") as log:
        agent = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=str(ROOT),
                                 start_new_session=True)
    deadline = time.monotonic() + 30
    while True:
        try:
            scrape(url)
            break
        except OSError:
            if time.monotonic() > deadline or agent.poll() is not None:
                print(log_path.read_text()[-3000:])
                return 1
            time.sleep(0.2)

    print(f"soak: {args.hours:g} simulated hours at speed {args.speed:g} = {seconds:.0f} s real, "
          f"{args.drives} drives, faults every {args.fault_every:g} s ({', '.join(faults)})")
    rss: List[int] = []
    nfd: List[int] = []
    slowest = 0.0
    failed_scrapes = 0
    injected: Dict[str, int] = {}
    agent_faults: Dict[str, int] = {}
    readers: List[Any] = []
    last: Dict[str, float] = {}
    start = time.monotonic()
    next_fault = start
    while time.monotonic() - start < seconds:
        if time.monotonic() >= next_fault:
            next_fault += args.fault_every
            readers = _agent_fault(rng, agent.pid, port, work, readers, agent_faults)
            dev = rng.choice(devices)
            target = faults_dir / dev
            if target.exists() or rng.random() < 0.3:
                target.unlink(missing_ok=True)
            else:
                kind = rng.choice(faults)
                target.write_text(kind)
                injected[kind] = injected.get(kind, 0) + 1
            if len(list(faults_dir.iterdir())) > max(1, len(devices) // 3):
                rng.choice(list(faults_dir.iterdir())).unlink()
        t0 = time.monotonic()
        try:
            last = scrape(url)
        except OSError:
            failed_scrapes += 1
        slowest = max(slowest, time.monotonic() - t0)
        rss.append(rss_kib(agent.pid))
        nfd.append(fds(agent.pid))
        time.sleep(max(0.0, 1.0 - (time.monotonic() - t0)))

    for sock in readers:
        sock.close()
    recorded = int(last.get("ssd_history_samples_recorded_total", 0))
    pending = int(last.get("ssd_history_samples_pending", 0))
    last_scrape = time.time()
    pid = agent.pid
    agent.send_signal(signal.SIGTERM)
    try:
        code = agent.wait(timeout=30)
    except subprocess.TimeoutExpired:
        agent.kill()
        code = agent.wait()
    time.sleep(0.5)
    left = descendants(pid) + leftover(sleeper)
    conn = sqlite3.connect(str(work / "state" / "history.sqlite"))
    on_disk = conn.execute("SELECT COUNT(*) FROM samples").fetchone()[0]
    before = conn.execute("SELECT COUNT(*) FROM samples WHERE ts <= ?", (last_scrape,)).fetchone()[0]
    per_drive = dict(conn.execute("SELECT serial, COUNT(*) FROM samples GROUP BY serial").fetchall())
    conn.close()
    lost = max(0, recorded - on_disk)

    # The first quarter is warm-up (imports, first renders, thread stacks, SQLite's page
    # cache): the second quarter is the baseline the last one is held to.
    q = max(1, len(rss) // 4)
    rss_first, rss_last = statistics.median(rss[q:2 * q]), statistics.median(rss[-q:])
    fd_first, fd_last = statistics.median(nfd[q:2 * q]), statistics.median(nfd[-q:])
    log_text = log_path.read_text(errors="replace")
    print(f"faults injected: {injected}; agent faults: {agent_faults}")
    lost_files = sum(v for k, v in last.items() if k.startswith("ssd_history_file_lost_total"))
    killed = {k.split('how="')[1].split('"')[0]: int(v) for k, v in last.items()
              if k.startswith("ssd_tool_leftover_processes_killed_total")}
    shared = sum(1 for k, v in last.items() if k.startswith("ssd_drive_serial_shared") and v == 1)
    print(f"history files lost and started again: {lost_files:.0f}; tool leftovers killed: {killed}; "
          f"drives marked as sharing a serial at the last scrape: {shared}")
    print(f"scrapes: {len(rss)}, failed {failed_scrapes}, slowest {slowest * 1000:.0f} ms")
    print(f"history: {recorded} samples accepted by the last scrape ({pending} pending then), "
          f"{before} on disk from before it, {on_disk} after SIGTERM; lost {lost}")
    print(f"  per drive: {per_drive}")
    print(f"RSS MiB: start {rss[0] / 1024:.1f}, second quarter {rss_first / 1024:.1f}, last quarter "
          f"{rss_last / 1024:.1f}, max {max(rss) / 1024:.1f}")
    print(f"open fds: second quarter {fd_first:.0f}, last quarter {fd_last:.0f}, max {max(nfd)}")
    print(f"log lines: capacity withheld {log_text.count('capacity_bytes withheld')}, serial shared "
          f"{log_text.count('drives report serial')}, unreadable output {log_text.count('unreadable output')}, "
          f"too many digits {log_text.count('5,000 digits')}, nested too deeply "
          f"{log_text.count('nested too deeply')}")
    print(f"exit status {code}; processes left {len(left)}; log {len(log_text)} bytes, "
          f"{log_text.count('Traceback')} tracebacks")
    problems = []
    if lost:
        problems.append(f"{lost} samples lost")
    if failed_scrapes or slowest > 1.0:
        problems.append("a scrape failed or took over 1 s")
    if code != 0:
        problems.append(f"exit status {code}")
    if left:
        problems.append(f"processes left: {left}")
    if rss_last > rss_first * 1.10 + 8 * 1024:
        problems.append("RSS grew")
    if fd_last > fd_first + 8:
        problems.append("file descriptors grew")
    if "Traceback" in log_text:
        problems.append("a traceback in the log")
    if agent_faults.get("history-deleted") and not lost_files:
        problems.append("the deleted history file was not noticed")
    print("soak: " + ("OK" if not problems else "FAILED: " + "; ".join(problems)))
    if args.keep:
        print(f"work directory: {work}")
    else:
        import shutil

        shutil.rmtree(work, ignore_errors=True)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
