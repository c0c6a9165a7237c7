"""ssdfleet, smartctl_exporter and a static server, side by side on one simulated host.

For each size (``--sizes``, simulated drives of the demo mix: simulator/demo.py) three servers
run on 127.0.0.1 in one run:

* **ours**: ``python -m agent agent`` from this checkout, every source at its default interval,
  history on (in the run's temporary directory; ``--no-history`` turns it off as the other
  benches do);
* **peer**: prometheus-community smartctl_exporter (``--peer PATH``, default
  ``$SSDFLEET_PEER_EXPORTER`` or ``smartctl_exporter`` on PATH) at its defaults
  (``--smartctl.interval`` 60 s, devices from ``smartctl --json --scan``), pointed at the
  simulated ``smartctl`` with ``--smartctl.path``. It sees the SATA and NVMe drives; a Shannon
  card is not a smartctl device;
* **floor**: a minimal asyncio HTTP/1.1 server (keep-alive, this file's ``--serve-floor``)
  answering every request with ours' own /metrics body captured once (gzipped as ours sent it,
  or plain), so it measures the transport and the client, not any rendering.

Both exporters read two copies of one simulated host (the same drive specs and clock; fake
tools that answer from real output layouts), so that each one's tool calls are counted apart
in its copy's call log. The clock runs in real time; the files ours reads directly
(/proc/diskstats, queue/write_cache) are rewritten every ``--refresh`` seconds by a separate
process, so that neither the rewrite nor the client share an interpreter lock with the
measurement.

Steps and what is printed, per size:

1. each server is spawned in turn and asked for /metrics (no gzip) every 20 ms until it answers
   (**first answer**, seconds after the spawn), then every 100 ms until it has **full data**:
   ours every drive's life figure (the drives that have one), the write-cache run and the I/O
   counters (bench/start_bench.py ``full``); the peer a ``smartctl_device`` series for every
   device its scan lists (it reads the drives inside the first scrape, so the two coincide);
2. ``--rounds`` interleaved rounds: each server in turn is scraped for ``--seconds / --rounds``
   every ``--interval`` seconds over one keep-alive connection, with the headers Prometheus
   2.42 sends (``Accept-Encoding: gzip`` and its ``Accept``, so the peer answers OpenMetrics
   as it would to Prometheus; ours and the floor serve the text format). A scrape is timed
   from the request to the last byte of the answer, the connection already open. Each server is
   scraped for ``--seconds`` in all; the rounds take three times that;
3. p50, p99 and max latency, p50 and p99 against the floor's, bytes per scrape as sent (gzip)
   and plain (the median of the first scrape of each round, decompressed);
4. over the whole scrape window (all rounds): each process's CPU (utime + stime of
   /proc/PID/stat, every thread; the fake tools' own CPU excluded, a real smartctl is not a
   Python program) and the tool calls in its host copy's log, both per drive-hour of the drives
   it reads; RSS (VmRSS) after the window. The CPU is also split by round: *unscraped*, its
   CPU per drive-hour in the other servers' rounds (its own polling, no scrape); *per scrape*,
   its CPU in its own rounds less the unscraped rate over as long, divided by its scrapes.
   A scrape every 100 ms is far more than Prometheus' 15-60 s, so the window figure is mostly
   scrapes; unscraped + per scrape x scrapes an hour gives the cost at another scrape rate;
5. the load average at the start and end of the size, the machine, and one markdown table.

How to read the rates: the peer reads a drive inside a scrape when its copy is older than
60 s, so its tool calls follow its rounds (over three 30 s rounds it makes about one read per
drive a round; under a steady Prometheus scrape every <= 60 s it makes 60 per drive-hour). Ours
reads SMART every 300 s, so a window shorter than that samples its cadence. Use
``--seconds 300`` or more for rates meant to stand for an hour.

Usage: ``python bench/peer_bench.py [--sizes 64,1024] [--seconds 90] [--interval 0.1]
[--rounds 3] [--peer PATH]``. Asserts nothing: the figures depend on the machine. Every
process it starts is stopped (its process group) and its temporary directory removed, also on
Ctrl-C or SIGTERM.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import gzip
import http.client
import json
import multiprocessing
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

ROOT = Path(__file__).resolve().parent.parent
BENCH = Path(__file__).resolve().parent
PEER_ENV = "SSDFLEET_PEER_EXPORTER"
SERVERS = ("ours", "peer", "floor")

# What Prometheus 2.42 sends with every scrape (scrape/scrape.go: acceptHeader, and the
# transport's gzip).
SCRAPE_HEADERS = {
    "Accept": "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,"
              "text/plain;version=0.0.4;q=0.5,*/*;q=0.1",
    "Accept-Encoding": "gzip",
    "User-Agent": "Prometheus/2.42.0",
    "X-Prometheus-Scrape-Timeout-Seconds": "10",
}


@functools.cache
def _project():
    """The project's helpers, imported when a bench runs (the floor server process needs none
    of them: it starts lean)."""
    sys.path[:0] = [str(ROOT), str(BENCH)]
    import start_bench
    import tool_calls_bench

    from simulator import tool as simtool
    from simulator.demo import demo_drives
    from simulator.host import SimHost

    return start_bench, tool_calls_bench.purpose, simtool, demo_drives, SimHost


# --------------------------------------------------------------------------- the floor server

class _FloorProtocol(asyncio.Protocol):
    """Answers every request on a connection with the same prepared bytes, gzipped when the
    request's Accept-Encoding names gzip."""

    def __init__(self, answers: Dict[bool, bytes]) -> None:
        self.answers = answers
        self.buffer = b""
        self.transport: Optional[asyncio.Transport] = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while self.transport is not None:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                if len(self.buffer) > 65536:
                    self.transport.close()
                return
            head, self.buffer = self.buffer[:end].lower(), self.buffer[end + 4:]
            gz = any(line.startswith(b"accept-encoding:") and b"gzip" in line for line in head.split(b"\r\n"))
            self.transport.write(self.answers[gz])
            if b"\r\nconnection: close" in head:
                self.transport.close()
                return

    def connection_lost(self, exc: Optional[Exception]) -> None:
        self.transport = None


def serve_floor(directory: Path, port: int) -> int:
    """Serve ``directory``'s body.txt / body.gz on 127.0.0.1:port until SIGTERM."""
    content_type = (directory / "content-type").read_text().strip().encode()
    answers = {}
    for gz, name in ((False, "body.txt"), (True, "body.gz")):
        body = (directory / name).read_bytes()
        head = b"HTTP/1.1 200 OK\r\nContent-Type: " + content_type + b"\r\n"
        if gz:
            head += b"Content-Encoding: gzip\r\nVary: Accept-Encoding\r\n"
        answers[gz] = head + b"Content-Length: %d\r\n\r\n" % len(body) + body
    loop = asyncio.new_event_loop()
    server = loop.run_until_complete(loop.create_server(lambda: _FloorProtocol(answers), "127.0.0.1", port))
    loop.add_signal_handler(signal.SIGTERM, loop.stop)
    loop.add_signal_handler(signal.SIGINT, loop.stop)
    try:
        loop.run_forever()
    finally:
        server.close()
        loop.close()
    return 0


# --------------------------------------------------------------------------- processes

def cpu_seconds(pid: int) -> Tuple[float, float]:
    """(own CPU of every thread, CPU of reaped children) in seconds, from /proc/PID/stat."""
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    # fields[0] is the state (field 3 of proc(5)); utime, stime, cutime, cstime are 14-17
    utime, stime, cutime, cstime = (int(fields[i]) for i in range(11, 15))
    return (utime + stime) / tick, (cutime + cstime) / tick


def stop_group(proc: subprocess.Popen) -> None:
    """SIGTERM to the process group the server leads (its tools too), ten seconds, SIGKILL."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        except ProcessLookupError:
            return
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # whatever of the group is left, e.g. a tool in flight
    except (ProcessLookupError, PermissionError):
        pass
    if proc.poll() is None:
        proc.wait(timeout=10)


def _refresh_loop(host, interval: float, parent: int) -> None:
    # Ctrl-C reaches the whole foreground group: the bench stops this process itself.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    while os.getppid() == parent:
        try:
            host.refresh_files()
        except OSError:
            return  # the directory went away: the bench is over
        time.sleep(interval)


@dataclass
class Server:
    name: str
    proc: subprocess.Popen
    port: int
    log: Path
    spawned: float
    drives: int  # the drives it reads
    calls_log: Optional[Path] = None
    first: Optional[float] = None  # seconds after the spawn
    full: Optional[float] = None
    latencies: List[float] = field(default_factory=list)
    sent_bytes: List[int] = field(default_factory=list)
    plain_bytes: List[int] = field(default_factory=list)
    errors: int = 0
    cpu: float = 0.0  # over the whole window
    scraped_cpu: float = 0.0  # in its own rounds
    scraped_seconds: float = 0.0
    idle_cpu: float = 0.0  # in the other servers' rounds
    idle_seconds: float = 0.0
    child_cpu: float = 0.0
    calls: Counter = field(default_factory=Counter)
    rss_mib: float = float("nan")


def spawn(name: str, args: List[str], workdir: Path, drives: int, env: Optional[Dict[str, str]] = None,
          calls_log: Optional[Path] = None) -> Server:
    port = _project()[0].free_port()
    args = [a.replace("{port}", str(port)) for a in args]
    log = workdir / f"{name}.log"
    with open(log, "wb") as out:
        spawned = time.perf_counter()
        proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=str(ROOT),
                                start_new_session=True)
    return Server(name, proc, port, log, spawned, drives, calls_log)


def fetch(port: int, timeout: float, headers: Optional[Dict[str, str]] = None) -> Optional[http.client.HTTPResponse]:
    """One GET /metrics on a new connection: the response (body read into ``.body``), or None
    while nothing answers."""
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        try:
            conn.request("GET", "/metrics", headers=headers or {})
            response = conn.getresponse()
            response.body = response.read()  # type: ignore[attr-defined]
            return response if response.status == 200 else None
        finally:
            conn.close()
    except (OSError, http.client.HTTPException):
        return None


def wait_full(server: Server, is_full: Callable[[bytes], bool], timeout: float) -> None:
    """Ask until the server answers, then until its answer is full; times after its spawn."""
    while True:
        if server.proc.poll() is not None:
            raise RuntimeError(f"{server.name} exited with status {server.proc.returncode}:\n"
                               + server.log.read_text(errors="replace")[-3000:])
        if time.perf_counter() - server.spawned > timeout:
            raise TimeoutError(f"{server.name} had no full data {timeout:g} s after its start:\n"
                               + server.log.read_text(errors="replace")[-3000:])
        response = fetch(server.port, timeout)
        at = time.perf_counter() - server.spawned
        if response is not None:
            if server.first is None:
                server.first = at
            if is_full(response.body):  # type: ignore[attr-defined]
                server.full = at
                return
        time.sleep(0.02 if server.first is None else 0.1)


def peer_full(expected: List[str]) -> Callable[[bytes], bool]:
    want = {name.encode() for name in expected}
    label = re.compile(rb'^smartctl_device\{(?:.*,)?device="([^"]*)"', re.M)

    def full(body: bytes) -> bool:
        return want <= set(label.findall(body))

    return full


def rss_mib(pid: int) -> float:
    return _project()[0].rss_kib(pid) / 1024


# --------------------------------------------------------------------------- scraping

class Scraper:
    """One keep-alive connection, as Prometheus keeps to a target."""

    def __init__(self, port: int, timeout: float) -> None:
        self.port = port
        self.timeout = timeout
        self.conn: Optional[http.client.HTTPConnection] = None

    def scrape(self) -> Tuple[float, bytes, bool]:
        """(seconds from the request to the answer's last byte, the bytes sent, gzipped)."""
        if self.conn is None:
            self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout)
            self.conn.connect()  # outside the timing: the connection is kept
        started = time.perf_counter()
        try:
            self.conn.request("GET", "/metrics", headers=SCRAPE_HEADERS)
            response = self.conn.getresponse()
            body = response.read()
        except (OSError, http.client.HTTPException):
            self.close()
            raise
        elapsed = time.perf_counter() - started
        if response.will_close:
            self.close()
        if response.status != 200:
            raise http.client.HTTPException(f"status {response.status}")
        return elapsed, body, response.getheader("Content-Encoding", "") == "gzip"

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None


def scrape_round(server: Server, seconds: float, interval: float, timeout: float) -> None:
    """Scrape ``server`` every ``interval`` for ``seconds``; a scrape that overruns its slot is
    followed at once by the next (no burst to catch up), as Prometheus does. The client waits
    up to ``timeout`` (not Prometheus' 10 s: the peer's scrape that reads 1,024 drives takes
    longer, and its length is the figure)."""
    scraper = Scraper(server.port, timeout=timeout)
    first = True
    try:
        next_at = time.perf_counter()
        end = next_at + seconds
        while next_at < end:
            pause = next_at - time.perf_counter()
            if pause > 0:
                time.sleep(pause)
            try:
                elapsed, body, gz = scraper.scrape()
            except (OSError, http.client.HTTPException):
                server.errors += 1
            else:
                server.latencies.append(elapsed)
                server.sent_bytes.append(len(body))
                if first:  # decompressed once a round, outside the timing
                    server.plain_bytes.append(len(gzip.decompress(body)) if gz else len(body))
                    first = False
            next_at = max(next_at + interval, time.perf_counter())
    finally:
        scraper.close()


def percentile(values: List[float], q: float) -> float:
    """Nearest rank, as bench/agent_bench.py reports."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, int(round(q / 100.0 * (len(ordered) - 1)))))]


def median(values: List[float]) -> float:
    return percentile(values, 50)


# --------------------------------------------------------------------------- one size

def _capture_floor_body(ours: Server, directory: Path) -> None:
    """ours' /metrics as it answers a scrape (gzip) and plain, for the floor to serve."""
    response = fetch(ours.port, 60.0, SCRAPE_HEADERS)
    plain = fetch(ours.port, 60.0)
    if response is None or plain is None:
        raise RuntimeError("ours did not answer /metrics for the floor's body")
    body = response.body  # type: ignore[attr-defined]
    if response.getheader("Content-Encoding", "") != "gzip":
        body = gzip.compress(body)
    directory.mkdir()
    (directory / "body.gz").write_bytes(body)
    (directory / "body.txt").write_bytes(plain.body)  # type: ignore[attr-defined]
    (directory / "content-type").write_text(response.getheader("Content-Type", "text/plain; version=0.0.4"))


def start_servers(size: int, args: argparse.Namespace, workdir: Path, servers: Dict[str, Server],
                  helpers: list) -> None:
    """Build the host copies, start the three servers in turn and wait for each one's full data
    (``servers`` and ``helpers`` are filled as they start, so the caller can stop them)."""
    start_bench, _, simtool, demo_drives, SimHost = _project()
    now = time.time()
    drives = demo_drives(size, now)
    replay = workdir / "replay" if args.replay else None  # both hosts alike: one directory
    ours_host = SimHost(workdir / "host-ours", drives, speed=1.0, sim_start=now, replay=replay)
    peer_host = SimHost(workdir / "host-peer", drives, speed=1.0, sim_start=now, replay=replay)
    refresher = multiprocessing.get_context("fork").Process(
        target=_refresh_loop, args=(ours_host, args.refresh, os.getpid()), name="sim-refresher", daemon=True)
    refresher.start()
    helpers.append(refresher)

    ours_args = [sys.executable, "-m", "agent", "agent", "--listen-address", "127.0.0.1:{port}"]
    for key, value in ours_host.overrides().items():
        if key in start_bench.FLAGS:
            ours_args += [start_bench.FLAGS[key], value]
    ours_args += ["--no-history"] if args.no_history else ["--state-dir", str(ours_host.state_dir)]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    servers["ours"] = spawn("ours", ours_args, workdir, size, env, ours_host.sim / "calls.log")
    wait_full(servers["ours"], lambda body: start_bench.full(body, size), args.ready_timeout)
    print(f"  ours:  first answer {servers['ours'].first:.2f} s, full data {servers['ours'].full:.2f} s", flush=True)

    if args.no_peer:
        print("  peer:  not run (--no-peer)", flush=True)
    else:
        _start_peer(args, peer_host, simtool, workdir, servers)

    _capture_floor_body(servers["ours"], workdir / "floor")
    floor_args = [sys.executable, str(Path(__file__).resolve()), "--serve-floor", str(workdir / "floor"),
                  "--port", "{port}"]
    servers["floor"] = spawn("floor", floor_args, workdir, size)
    wait_full(servers["floor"], lambda body: True, args.ready_timeout)
    print(f"  floor: first answer {servers['floor'].first:.2f} s", flush=True)


def _start_peer(args: argparse.Namespace, peer_host, simtool, workdir: Path, servers: Dict[str, Server]) -> None:
    # What the peer's scan will list (the fake smartctl in-process: not in the call log).
    scan = json.loads(simtool.run(str(peer_host.state_file), "smartctl", ["--json", "--scan"])[0])
    expected = [os.path.basename(d["name"]) for d in scan["devices"]]
    peer_args = [args.peer, f"--smartctl.path={peer_host.tool_path('smartctl')}",
                 "--web.listen-address=127.0.0.1:{port}"]
    servers["peer"] = spawn("peer", peer_args, workdir, len(expected), None, peer_host.sim / "calls.log")
    wait_full(servers["peer"], peer_full(expected), args.ready_timeout)
    print(f"  peer:  first answer {servers['peer'].first:.2f} s, full data {servers['peer'].full:.2f} s "
          f"({len(expected)} smartctl devices)", flush=True)


def _calls(server: Server) -> List[str]:
    if server.calls_log is None:
        return []
    try:
        return server.calls_log.read_text().splitlines()
    except OSError:
        return []


def measure(servers: Dict[str, Server], args: argparse.Namespace) -> float:
    """The interleaved rounds; CPU and tool calls over all of them, and each server's CPU split
    between its own rounds and the others'. Returns the window, s."""
    purpose = _project()[1]
    cpu0 = {name: cpu_seconds(s.proc.pid) for name, s in servers.items()}
    calls0 = {name: len(_calls(s)) for name, s in servers.items()}
    started = time.perf_counter()
    for _ in range(args.rounds):
        for name in [n for n in SERVERS if n in servers]:
            before, round_start = {n: cpu_seconds(s.proc.pid)[0] for n, s in servers.items()}, time.perf_counter()
            scrape_round(servers[name], args.seconds / args.rounds, args.interval, args.ready_timeout)
            spent = time.perf_counter() - round_start
            for other, s in servers.items():
                cpu = cpu_seconds(s.proc.pid)[0] - before[other]
                if other == name:
                    s.scraped_cpu, s.scraped_seconds = s.scraped_cpu + cpu, s.scraped_seconds + spent
                else:
                    s.idle_cpu, s.idle_seconds = s.idle_cpu + cpu, s.idle_seconds + spent
    window = time.perf_counter() - started
    for name, s in servers.items():
        own, children = cpu_seconds(s.proc.pid)
        s.cpu, s.child_cpu = own - cpu0[name][0], children - cpu0[name][1]
        s.calls = Counter(purpose(c) for c in _calls(s)[calls0[name]:])
        s.rss_mib = rss_mib(s.proc.pid)
    return window


def scrape_cpu_ms(s: Server) -> float:
    """CPU of one scrape: the server's CPU in its own rounds less what it spends unscraped in
    as long (its rate in the other servers' rounds), per scrape."""
    unscraped = s.idle_cpu / s.idle_seconds * s.scraped_seconds if s.idle_seconds else 0.0
    return (s.scraped_cpu - unscraped) / max(1, len(s.latencies)) * 1e3


def unscraped_cpu_per_drive_hour(s: Server) -> float:
    """CPU s per drive-hour while the others were scraped: its own work (polling), no scrape."""
    return _per_drive_hour(s.idle_cpu, s, s.idle_seconds) if s.idle_seconds else float("nan")


def run_size(size: int, args: argparse.Namespace) -> Dict:
    load_start = os.getloadavg()
    began = time.perf_counter()
    print(f"{size} drives: load average {load_start[0]:.2f} {load_start[1]:.2f} {load_start[2]:.2f}", flush=True)
    workdir = Path(tempfile.mkdtemp(prefix=f"ssdfleet-peer-{size}-"))
    servers: Dict[str, Server] = {}
    helpers: list = []
    try:
        start_servers(size, args, workdir, servers, helpers)
        window = measure(servers, args)
    finally:
        for server in servers.values():
            stop_group(server.proc)
        for helper in helpers:
            helper.terminate()
            helper.join(10)
        shutil.rmtree(workdir, ignore_errors=True)
    load_end = os.getloadavg()
    result = {"size": size, "servers": servers, "window": window, "load": (load_start, load_end),
              "wall": time.perf_counter() - began}
    print_size(result)
    return result


# --------------------------------------------------------------------------- report

def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.2f}"


def _per_drive_hour(value: float, server: Server, window: float) -> float:
    return value / (server.drives * window / 3600.0)


def print_size(result: Dict) -> None:
    servers, window = result["servers"], result["window"]
    load_start, load_end = result["load"]
    for name in [n for n in SERVERS if n in servers]:
        s = servers[name]
        calls = ", ".join(f"{what} {n}" for what, n in sorted(s.calls.items())) or "none"
        print(f"  {name:5}: {len(s.latencies)} scrapes, {s.errors} failed; p50 {_ms(percentile(s.latencies, 50))} ms, "
              f"p99 {_ms(percentile(s.latencies, 99))} ms, max {_ms(max(s.latencies, default=float('nan')))} ms; "
              f"CPU {s.cpu:.2f} s own + {s.child_cpu:.2f} s of its reaped tools over {window:.0f} s "
              f"({s.scraped_cpu:.2f} s in its {s.scraped_seconds:.0f} s of rounds, {s.idle_cpu:.2f} s in the "
              f"others' {s.idle_seconds:.0f} s); "
              f"tool calls: {calls}; RSS {s.rss_mib:.1f} MiB", flush=True)
    print(f"  load average at the end {load_end[0]:.2f} {load_end[1]:.2f} {load_end[2]:.2f}; "
          f"this size took {result['wall']:.0f} s", flush=True)


def table_rows(result: Dict) -> List[str]:
    servers, window = result["servers"], result["window"]
    floor = servers["floor"]
    load = f"{result['load'][0][0]:.2f} -> {result['load'][1][0]:.2f}"
    rows = []
    for name in [n for n in SERVERS if n in servers]:
        s = servers[name]
        p50, p99 = percentile(s.latencies, 50), percentile(s.latencies, 99)
        versus = f"{p50 / percentile(floor.latencies, 50):.1f}x / {p99 / percentile(floor.latencies, 99):.1f}x"
        size = f"{median(s.sent_bytes) / 1024:.1f} / {median(s.plain_bytes) / 1024:.1f}"
        calls = "-" if name == "floor" else f"{_per_drive_hour(sum(s.calls.values()), s, window):.1f}"
        full = "-" if name == "floor" else f"{s.full:.2f}"
        rows.append(f"| {result['size']} | {name} | {s.drives} | {s.first:.2f} | {full} | "
                    f"{_ms(p50)} | {_ms(p99)} | {_ms(max(s.latencies, default=float('nan')))} | {versus} | {size} | "
                    f"{_per_drive_hour(s.cpu, s, window):.3f} / {unscraped_cpu_per_drive_hour(s):.3f} | "
                    f"{scrape_cpu_ms(s):.2f} | {calls} | {s.rss_mib:.1f} | "
                    f"{len(s.latencies)} ({s.errors}) | {load} |")
    return rows


def machine() -> str:
    model = "unknown"
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return (f"{os.cpu_count()} CPUs, {model}, Linux {platform.release()}, Python {platform.python_version()}, "
            f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="64,1024", help="simulated drives, comma-separated")
    ap.add_argument("--seconds", type=float, default=90.0, help="scraping per server, over all rounds")
    ap.add_argument("--interval", type=float, default=0.1, help="seconds between scrapes")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds")
    ap.add_argument("--peer", default=os.environ.get(PEER_ENV) or shutil.which("smartctl_exporter"),
                    help=f"smartctl_exporter binary (default ${PEER_ENV}, or smartctl_exporter on PATH)")
    ap.add_argument("--no-history", action="store_true", help="run ours with --no-history")
    ap.add_argument("--replay", action="store_true",
                    help="fake tools that replay their first answer to the same arguments (about 3 ms a call "
                         "instead of 0.1 s of Python; the figures stand still at their first rendering)")
    ap.add_argument("--no-peer", action="store_true",
                    help="ours and the floor only: at 1,024 drives the peer's 1,024 fake smartctl processes "
                         "(Python, per poll) load a 2-core machine past what the comparison can bear")
    ap.add_argument("--refresh", type=float, default=5.0,
                    help="seconds between rewrites of the simulated /proc/diskstats and write-cache files")
    ap.add_argument("--ready-timeout", type=float, default=900.0, help="seconds a server has to reach full data, and a scrape to be answered")
    ap.add_argument("--serve-floor", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve_floor is not None:
        return serve_floor(args.serve_floor, args.port)
    if not args.no_peer and (not args.peer or not os.access(args.peer, os.X_OK)):
        ap.error(f"no smartctl_exporter binary: give --peer PATH or set ${PEER_ENV} (got {args.peer!r})")
    # SIGTERM ends the run as Ctrl-C does: through the finally blocks that stop the servers.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    signal.signal(signal.SIGINT, signal.default_int_handler)  # also when started with SIGINT ignored
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, check=False).stdout.strip() or "unknown"
    print(f"machine: {machine()}")
    print(f"ours: {ROOT} at {commit}, history {'off' if args.no_history else 'on'}; peer: {args.peer}; "
          f"each server scraped every {args.interval:g} s for {args.seconds:g} s in {args.rounds} rounds; "
          f"tools {'replaying their first answers' if args.replay else 'rendering every call'}", flush=True)
    try:
        results = [run_size(int(size), args) for size in args.sizes.split(",")]
    except KeyboardInterrupt:
        print("interrupted: every process started was stopped", file=sys.stderr)
        return 130
    print()
    print("| drives | server | drives read | first answer s | full data s | p50 ms | p99 ms | max ms "
          "| p50 / p99 vs floor | KiB per scrape gzip / plain | CPU s per drive-hour (window / unscraped) "
          "| CPU ms per scrape | tool calls per drive-hour "
          "| RSS MiB | scrapes (failed) | load average |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|---|---|---|---:|---:|---:|---:|---|")
    for result in results:
        for row in table_rows(result):
            print(row)
    return 0


if __name__ == "__main__":
    sys.exit(main())
