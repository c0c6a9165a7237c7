"""Issue 26's HTTP faults, each against the real agent process with the fake host.

Each case applies one hostile client pattern while a scraper asks for ``/metrics`` in a thread
of its own, and checks what the issue asks of every fault: every scrape answered within
:data:`SCRAPE_BOUND`, the agent's memory bounded, and the fault visible in one log line and in
``ssd_http_connections_closed_total{reason}`` (or the auth counters). Each test prints its
figures (scrapes answered and refused, RSS), so a run on the code before the fix and one after
can be compared. The last section runs the server in-process against small ASGI apps, one
limit at a time (write deadline, output budget, framing, deadlines, stopping).
"""

from __future__ import annotations

import contextlib
import http.client
import json
import re
import select
import socket
import struct
import subprocess
import sys
import threading
import time
from typing import Dict, Iterator, List, Optional, Tuple

import psutil
import pytest

from agent.server import HTTPStats
from tests.conftest import ROOT
from tests.fakehost import AgentProcess, FakeHost, build_default_host
from tests.support.e2e import check_metrics
from tests.support.processes import ScrapeLoop
from tests.support.tls import basic

SCRAPE_BOUND = 1.0  # the bound for /metrics, throughout every fault
PASSWORD = "scrape-secret"
TCP_ESTABLISHED = 1  # tcpi_state in struct tcp_info (linux/tcp.h)


@pytest.fixture
def host(tmp_path) -> FakeHost:
    return build_default_host(tmp_path)


def start(host: FakeHost, config: Optional[Dict] = None, web: Optional[str] = None) -> AgentProcess:
    args = ["--interval.smartctl", "1", "--interval.shannon", "1", "--interval.write_cache", "2",
            "--interval.diskstats", "1", "--tool-timeout", "5"]
    if config:
        path = host.root / "http-faults.yml"
        path.write_text("".join(f"{k}: {json.dumps(v)}\n" for k, v in config.items()))
        args += ["--config", str(path)]
    if web is not None:
        path = host.root / "web.yml"
        path.write_text(web)
        args += ["--web-config", str(path)]
    agent = AgentProcess(host, args)
    agent.wait_ready()
    return agent


def auth_web(cost: int = 10) -> str:
    import bcrypt

    hashed = bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(cost)).decode()
    return f"basic_auth_users:\n  prometheus: {hashed}\n"


def get(port: int, path: str, headers: Optional[Dict[str, str]] = None, timeout: float = 5.0,
        source: str = "127.0.0.1") -> Tuple[int, bytes, Dict[str, str]]:
    """(status, body, headers) of one GET on a fresh connection from ``source``."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout, source_address=(source, 0))
    try:
        conn.request("GET", path, headers=headers or {})
        resp = conn.getresponse()
        return resp.status, resp.read(), {k.lower(): v for k, v in resp.getheaders()}
    finally:
        conn.close()


def metrics_text(agent: AgentProcess, headers: Optional[Dict[str, str]] = None) -> str:
    status, body, _ = get(agent.port, "/metrics", headers)
    assert status == 200, status
    return body.decode()


def sample(text: str, name: str, **labels: str) -> Optional[float]:
    """The value of one series in exposition text (None when absent)."""
    want = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    pattern = re.escape(name) + (r"\{" + re.escape(want) + r"\}" if want else "") + r" (\S+)$"
    for line in text.splitlines():
        m = re.match(pattern, line)
        if m:
            return float(m.group(1))
    return None


def rss_mb(agent: AgentProcess) -> float:
    return psutil.Process(agent.proc.pid).memory_info().rss / 2**20


class Scraper(ScrapeLoop):
    """Asks for ``/metrics`` every ``step`` seconds, each on a new connection (as an uncached
    Prometheus after a restart would), and counts answers, refusals and slow answers."""

    join_seconds = 10.0

    def __init__(self, port: int, headers: Optional[Dict[str, str]] = None, step: float = 0.5) -> None:
        super().__init__(step)
        self.port = port
        self.headers = headers or {}

    def _scrape_once(self) -> Optional[str]:
        status, _, _ = get(self.port, "/metrics", self.headers, timeout=SCRAPE_BOUND * 3)
        return None if status == 200 else f"HTTP {status}"

    def summary(self) -> str:
        slowest = f"{max(self.times) * 1000:.0f} ms" if self.times else "-"
        kinds: Dict[str, int] = {}
        for f in self.failures:
            kind = f.split(":")[0]
            kinds[kind] = kinds.get(kind, 0) + 1
        return f"{len(self.times)} answered, {len(self.failures)} refused/failed {kinds}, slowest {slowest}"

    def check(self) -> None:
        assert self.times, "no scrape answered"
        assert not self.failures, self.failures[:3]
        slow = [t for t in self.times if t > SCRAPE_BOUND]
        assert not slow, f"{len(slow)} scrapes over {SCRAPE_BOUND}s, slowest {max(slow):.2f}s"


def _tcp_state(sock: socket.socket) -> int:
    try:
        return struct.unpack("B", sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 1))[0]
    except OSError:
        return -1


class SlowReaders:
    """``count`` connections that each pipeline ``depth`` requests for ``path`` and never read
    an answer (their receive buffer is made small so the agent's output backs up quickly). A
    thread keeps ``count`` open: one the agent closes is replaced, as a persistent attacker
    would, and counted in :attr:`closed_by_agent`."""

    def __init__(self, port: int, path: str, count: int = 512, depth: int = 256) -> None:
        self.port = port
        self.request = f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode() * depth
        self.count = count
        self.socks: List[socket.socket] = []
        self.closed_by_agent = 0
        self.opened = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _open(self) -> Optional[socket.socket]:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.settimeout(3)
        try:
            s.connect(("127.0.0.1", self.port))
            s.setblocking(False)
            try:
                s.send(self.request)
            except (BlockingIOError, InterruptedError):
                pass
        except OSError:
            s.close()
            return None
        self.opened += 1
        return s

    def __enter__(self) -> SlowReaders:
        for _ in range(self.count):
            s = self._open()
            if s is not None:
                self.socks.append(s)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(0.5):
            alive = []
            for s in self.socks:
                if _tcp_state(s) == TCP_ESTABLISHED:
                    alive.append(s)
                else:
                    self.closed_by_agent += 1
                    s.close()
            while len(alive) < self.count and not self._stop.is_set():
                s = self._open()
                if s is None:
                    break
                alive.append(s)
            self.socks = alive

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)
        for s in self.socks:
            s.close()


# -- 1. slow readers ------------------------------------------------------------------------


@pytest.mark.parametrize("auth", [False, True], ids=["metrics", "healthz-with-auth"])
def test_slow_readers_cannot_lock_out_the_scrape(host, auth):
    """512 connections (the default cap) that pipeline 256 requests each and read nothing,
    kept at 512 for 20 s: every scrape is answered within 1 s, the agent closes them (write
    deadline, or eviction at the cap to admit the scraper), says so in a few log lines and in
    ``ssd_http_connections_closed_total``, and its memory stays bounded. With basic auth on,
    the flood goes to the unauthenticated /healthz."""
    timeout = 4.0
    agent = start(host, {"http_request_timeout_seconds": timeout}, web=auth_web() if auth else None)
    headers = {"Authorization": basic("prometheus", PASSWORD)} if auth else {}
    try:
        metrics_text(agent, headers)  # credentials now cached, as for a running Prometheus
        before = rss_mb(agent)
        peak = before
        with Scraper(agent.port, headers) as scraper:
            with SlowReaders(agent.port, "/healthz" if auth else "/metrics") as attack:
                until = time.monotonic() + 20
                while time.monotonic() < until:
                    time.sleep(1)
                    peak = max(peak, rss_mb(agent))
            opened, closed = attack.opened, attack.closed_by_agent
            time.sleep(1.0)
        print(f"\n  scraper: {scraper.summary()}")
        print(f"  slow readers opened {opened}, closed by the agent {closed}")
        print(f"  RSS {before:.0f} MB before, peak {peak:.0f} MB during")
        scraper.check()
        assert closed > 0
        assert peak - before < 40, f"RSS grew {peak - before:.0f} MB"
        text = metrics_text(agent, headers)
        check_metrics(text.encode())
        reasons = ("write_timeout", "evicted_not_draining", "evicted_idle", "pipeline_limit")
        by_reason = {r: sample(text, "ssd_http_connections_closed_total", reason=r) for r in reasons + ("refused",)}
        print(f"  ssd_http_connections_closed_total: {by_reason}")
        assert by_reason["refused"] == 0
        # Every connection the attacker saw closed was closed for one of these (not read, or
        # evicted for a scraper while its pipelined requests waited; its last replacements may
        # still be open, so the agent's count can be higher).
        assert sum(by_reason[r] for r in reasons) >= closed
        log = agent.log()
        assert "Traceback" not in log
        kinds = ("did not read", "pipelined requests in a row", "(the cap): closing the oldest")
        lines = [ln for ln in log.splitlines() if any(k in ln for k in kinds)]
        print("  log: " + "\n       ".join(ln.split(": ", 1)[-1] for ln in lines))
        assert 1 <= len(lines) <= 4, lines  # each kind at most once a minute
    finally:
        agent.stop()


def test_deep_pipelining_is_capped_and_shallow_pipelining_still_works(host):
    """One connection sends 20,000 pipelined requests (700 kB) at once: the agent answers the
    first MAX_PIPELINED in order and closes the connection, holding little of it in memory,
    and a scraper is not slowed. Ten pipelined requests are all answered, in order."""
    from agent.server import MAX_PIPELINED

    agent = start(host)
    try:
        before = rss_mb(agent)
        depth = 20000
        s = socket.create_connection(("127.0.0.1", agent.port), timeout=10)
        payload = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n" * depth
        sender = threading.Thread(target=_send_quietly, args=(s, payload), daemon=True)
        with Scraper(agent.port) as scraper:
            sender.start()
            time.sleep(3)  # nothing read yet
            held = rss_mb(agent) - before
            got = _read_until_closed(s, 30)
        s.close()
        answered = got.count(b"HTTP/1.1 200")
        print(f"\n  {answered} of {depth} pipelined requests answered, then {got[-8:].decode(errors='replace')}; "
              f"RSS +{held:.1f} MB while unread")
        print(f"  scraper: {scraper.summary()}")
        scraper.check()
        assert answered == MAX_PIPELINED and got.endswith((b"<closed>", b"<reset>"))
        assert got.count(b"connection: close") == 1
        assert held < 10
        text = metrics_text(agent)
        assert sample(text, "ssd_http_connections_closed_total", reason="pipeline_limit") == 1
        assert sum("pipelined requests in a row" in ln for ln in agent.log().splitlines()) == 1

        paths = [f"/healthz?n={i}" for i in range(10)]
        out = _exchange(agent.port, b"".join(f"GET {p} HTTP/1.1\r\nHost: x\r\n\r\n".encode() for p in paths),
                        wait=3.0)
        assert out.count(b"HTTP/1.1 200") == 10 and not out.endswith((b"<closed>", b"<reset>"))
    finally:
        agent.stop()


def _send_quietly(sock: socket.socket, data: bytes) -> None:
    try:
        sock.sendall(data)
    except OSError:
        pass  # the agent closed the connection: expected


def _read_until_closed(sock: socket.socket, wait: float) -> bytes:
    out = b""
    sock.settimeout(wait)
    try:
        while True:
            chunk = sock.recv(1 << 16)
            if not chunk:
                return out + b"<closed>"
            out += chunk
    except ConnectionResetError:
        return out + b"<reset>"
    except socket.timeout:
        return out


# -- 2. rough edges -------------------------------------------------------------------------


def _exchange(port: int, data: bytes, wait: float = 3.0) -> bytes:
    """Send ``data`` on one connection and read until the agent closes it or ``wait`` passes."""
    s = socket.create_connection(("127.0.0.1", port), timeout=wait)
    s.sendall(data)
    out = b""
    deadline = time.monotonic() + wait
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([s], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                break
            try:
                chunk = s.recv(65536)
            except ConnectionResetError:
                out += b"<reset>"
                break
            if not chunk:
                out += b"<closed>"
                break
            out += chunk
    finally:
        s.close()
    return out


def test_a_request_with_content_length_and_transfer_encoding_is_refused_and_closed(host):
    """RFC 9112 6.3: a request with both framing headers may be a smuggling attempt; the agent
    answers 400 and closes, so the request hidden in its body is never served."""
    agent = start(host)
    try:
        smuggled = (b"POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 40\r\n"
                    b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
                    b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        out = _exchange(agent.port, smuggled)
        statuses = re.findall(rb"HTTP/1\.1 (\d{3})", out)
        print(f"\n  answers: {[s.decode() for s in statuses]}; closed: {out.endswith((b'<closed>', b'<reset>'))}")
        assert statuses == [b"400"], out[:500]
        assert out.endswith((b"<closed>", b"<reset>"))
        assert b'"status":"ok"' not in out
        text = metrics_text(agent)
        assert sample(text, "ssd_http_connections_closed_total", reason="bad_request") >= 1
        assert 1 == sum("Content-Length and Transfer-Encoding" in ln for ln in agent.log().splitlines())
        # A plain chunked request and a plain Content-Length one still work.
        for framing in (b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n", b"Content-Length: 0\r\n\r\n"):
            out = _exchange(agent.port, b"GET /healthz HTTP/1.1\r\nHost: x\r\n" + framing, wait=1.0)
            assert out.startswith(b"HTTP/1.1 200"), out[:200]
    finally:
        agent.stop()


def test_the_trailing_slash_redirect_does_not_echo_the_host_header(host):
    agent = start(host)
    try:
        status, _, headers = get(agent.port, "/metrics/?x=1", {"Host": "evil.example:666"})
        print(f"\n  /metrics/ -> {status} Location: {headers.get('location')}")
        assert status in (301, 307, 308)
        assert headers["location"] == "/metrics?x=1"
        status, body, _ = get(agent.port, "/nothing/", {"Host": "evil.example"})
        assert status == 404 and b"evil" not in body
    finally:
        agent.stop()


# -- bcrypt ---------------------------------------------------------------------------------


def test_an_uncached_scraper_is_answered_during_a_wrong_password_flood(host):
    """Right after a start (no credentials cached), 40 clients from 20 other addresses send
    new wrong passwords as fast as they are answered, enough to keep the bcrypt queue full
    (they get 503s). The scraper's first login must not queue behind theirs (16 checks): it
    waits at most for the check already running, then its own: bounded here by 1 s plus four
    bcrypt checks timed on this machine (those two, doubled for a loaded machine), where
    waiting behind the queue would take sixteen. Every later scrape is cached: 200 within 1 s.
    Before the fair queue, 0 of 25 scrapes were answered (all 503)."""
    import bcrypt

    hashed = bcrypt.hashpw(b"x", bcrypt.gensalt(10))
    timings = []
    for _ in range(3):
        started = time.monotonic()
        bcrypt.checkpw(b"y", hashed)
        timings.append(time.monotonic() - started)
    one_check = sorted(timings)[1]
    agent = start(host, web=auth_web(10))
    # The guessers run in a process of their own: 40 threads here would hold the GIL from the
    # scraper and time the test's own contention instead of the agent's.
    guessers = subprocess.Popen([sys.executable, "-c", _GUESSER, str(agent.port), "40", "20"],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        time.sleep(2)  # the flood is on before the scraper's first request
        good = {"Authorization": basic("prometheus", PASSWORD)}
        results: List[Tuple[int, float]] = []
        for _ in range(25):
            started = time.monotonic()
            try:
                status, _, _ = get(agent.port, "/metrics", good, timeout=10)
            except OSError:
                status = 0
            results.append((status, time.monotonic() - started))
            time.sleep(0.2)
        out, _ = guessers.communicate("", timeout=60)
        codes = {int(k): v for k, v in json.loads(out).items()}
        ok = [t for s, t in results if s == 200]
        print(f"\n  one bcrypt check (cost 10) here: {one_check * 1000:.0f} ms")
        print(f"  scraper: {len(ok)} of 25 answered 200, others {[s for s, _ in results if s != 200]}; "
              f"first {results[0][1] * 1000:.0f} ms, slowest of the rest {max(t for _, t in results[1:]) * 1000:.0f} ms")
        print(f"  guessers got {codes}")
        assert codes.get(503, 0) > 0, "the flood never filled the bcrypt queue: the case proves nothing"
        assert len(ok) == 25
        assert results[0][1] < SCRAPE_BOUND + 4 * one_check
        assert max(t for _, t in results[1:]) < SCRAPE_BOUND
        text = metrics_text(agent, good)
        assert sample(text, "ssd_http_auth_refused_total", reason="wrong_credentials") > 0
        assert sample(text, "ssd_http_auth_refused_total", reason="busy") == codes[503]
        log = agent.log()
        assert "Traceback" not in log
        assert sum("refused wrong credentials" in ln for ln in log.splitlines()) == 1
    finally:
        if guessers.poll() is None:
            guessers.kill()
            guessers.wait()
        agent.stop()


# Sends new wrong passwords from THREADS threads spread over ADDRESSES source addresses
# (127.0.0.2 ...) until its stdin closes, then prints {status: count} as JSON.
_GUESSER = """
import base64, http.client, json, sys, threading
port, threads, addresses = (int(a) for a in sys.argv[1:4])
stop = threading.Event()
codes = {}
lock = threading.Lock()
def guess(n):
    i = 0
    while not stop.is_set():
        i += 1
        token = base64.b64encode(f"prometheus:guess-{n}-{i}".encode()).decode()
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10,
                                          source_address=(f"127.0.0.{2 + n % addresses}", 0))
        try:
            conn.request("GET", "/metrics", headers={"Authorization": "Basic " + token})
            code = conn.getresponse().status
        except OSError:
            code = 0
        finally:
            conn.close()
        with lock:
            codes[code] = codes.get(code, 0) + 1
workers = [threading.Thread(target=guess, args=(n,), daemon=True) for n in range(threads)]
for w in workers:
    w.start()
sys.stdin.read()
stop.set()
for w in workers:
    w.join(15)
print(json.dumps(codes))
"""


# -- the server in-process: one limit at a time ----------------------------------------------


BIG = b"x" * (4 * 2**20)


async def _big_or_echo(scope, receive, send) -> None:
    """/big answers 4 MB; anything else answers the length of the request body it read."""
    if scope["path"] == "/big":
        body = BIG
    else:
        message = await receive()
        body = str(len(message.get("body", b""))).encode()
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


@contextlib.contextmanager
def serving(app=_big_or_echo, request_timeout: float = 2.0, max_connections: int = 64,
            stalled_bytes_budget: int = 32 * 2**20) -> Iterator[Tuple[int, HTTPStats]]:
    from agent.server import AgentServer

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    stats = HTTPStats()
    server = AgentServer(app, "127.0.0.1", port, stats=stats, request_timeout=request_timeout,
                         max_connections=max_connections, stalled_bytes_budget=stalled_bytes_budget)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
        time.sleep(0.02)
    try:
        yield port, stats
    finally:
        server.stop()
        thread.join(10)
        assert not thread.is_alive(), "the server did not stop"
        sock.close()


def _non_reader(port: int, request: bytes) -> socket.socket:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(("127.0.0.1", port))
    s.sendall(request)
    return s


def _read_until(sock: socket.socket, end: bytes) -> bytes:
    out = b""
    while not out.endswith(end):
        chunk = sock.recv(4096)
        assert chunk, out
        out += chunk
    return out


def test_a_response_nobody_reads_is_reset_at_the_write_deadline() -> None:
    with serving(request_timeout=1.5) as (port, stats):
        s = _non_reader(port, b"GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
        time.sleep(0.5)
        assert _tcp_state(s) == TCP_ESTABLISHED and stats.open_connections == 1
        deadline = time.monotonic() + 10
        # the reset is counted when it is decided; the connection leaves the table a loop turn later
        while ((stats.closed["write_timeout"] == 0 or stats.open_connections)
               and time.monotonic() < deadline):
            time.sleep(0.1)
        assert stats.closed["write_timeout"] == 1 and stats.open_connections == 0
        time.sleep(0.2)
        assert _tcp_state(s) != TCP_ESTABLISHED  # reset: the kernel holds nothing more for it
        s.close()
        # a client that reads, however slowly, is not cut off while it keeps up
        status, body, _ = get(port, "/big", timeout=10)
        assert status == 200 and len(body) == len(BIG)


def test_responses_held_for_non_readers_stay_within_the_budget() -> None:
    """Ten clients ask for 4 MB and read nothing; a budget of 10 MB keeps at most two of them
    (the rest are reset, the longest-stalled first); a reader still gets its answer."""
    with serving(request_timeout=30, stalled_bytes_budget=10 * 2**20) as (port, stats):
        socks = [_non_reader(port, b"GET /big HTTP/1.1\r\nHost: x\r\n\r\n") for _ in range(10)]
        deadline = time.monotonic() + 10
        while ((stats.closed["evicted_not_draining"] < 8 or stats.open_connections > 2)
               and time.monotonic() < deadline):
            time.sleep(0.1)
        print(f"\n  reset for the budget: {stats.closed['evicted_not_draining']} of 10")
        assert stats.closed["evicted_not_draining"] >= 8
        assert stats.open_connections <= 2
        status, _, _ = get(port, "/other", timeout=5)
        assert status == 200
        for s in socks:
            s.close()


def test_head_expect_continue_bodies_and_malformed_requests() -> None:
    with serving() as (port, stats):
        out = _exchange(port, b"HEAD /big HTTP/1.1\r\nHost: x\r\n\r\n", wait=1.0)
        assert out.startswith(b"HTTP/1.1 200") and b"content-length: 4194304" in out
        assert out.endswith(b"\r\n\r\n")  # no body
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            s.sendall(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
            assert _read_until(s, b"\r\n\r\n").startswith(b"HTTP/1.1 100 ")  # before the body is sent
            s.sendall(b"hello")
            assert _read_until(s, b"\r\n\r\n5").startswith(b"HTTP/1.1 200")
        out = _exchange(port, b"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                              b"3\r\nabc\r\n0\r\n\r\n", wait=1.0)
        assert out.startswith(b"HTTP/1.1 200") and out.endswith(b"\r\n\r\n3")
        out = _exchange(port, b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n", wait=2.0)
        assert out.startswith(b"HTTP/1.1 413") and out.endswith((b"<closed>", b"<reset>"))
        for garbage in (b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n", b"GET / HTTP/1.1\r\nHost x\r\n\r\n",
                        b"GET / HTTP/1.1\r\n" + b"X-Long: " + b"a" * 20000 + b"\r\n\r\n"):
            out = _exchange(port, garbage, wait=2.0)
            assert re.match(rb"HTTP/1\.1 (400|431) ", out) and out.endswith((b"<closed>", b"<reset>")), out[:80]
        assert stats.closed["body_too_large"] == 1 and stats.closed["bad_request"] == 3


def test_idle_and_half_sent_connections_close_at_their_deadlines() -> None:
    with serving(request_timeout=1.5) as (port, stats):
        idle = socket.create_connection(("127.0.0.1", port))
        idle.sendall(b"GET /x HTTP/1.1\r\nHost: x\r\n\r\n")
        assert _read_until(idle, b"\r\n\r\n0").startswith(b"HTTP/1.1 200")
        half = socket.create_connection(("127.0.0.1", port))
        half.sendall(b"GET /x HTTP/1.1\r\nHost:")
        idle.settimeout(5)
        half.settimeout(5)
        assert idle.recv(1) == b"" and half.recv(1) == b""
        assert stats.closed["idle_timeout"] == 1 and stats.closed["request_timeout"] == 1
        idle.close()
        half.close()


def test_stop_does_not_wait_for_clients_that_do_not_read() -> None:
    started = time.monotonic()
    with serving(request_timeout=60) as (port, stats):
        socks = [_non_reader(port, b"GET /big HTTP/1.1\r\nHost: x\r\n\r\n") for _ in range(5)]
        time.sleep(0.5)
        assert stats.open_connections == 5
        stop_at = time.monotonic()
    took = time.monotonic() - stop_at
    print(f"\n  stopped in {took:.2f}s with 5 clients not reading")
    assert took < 6.0  # SHUTDOWN_GRACE_SECONDS (3), then every connection is reset
    assert time.monotonic() - started < 20
    for s in socks:
        s.close()


def test_the_server_uses_no_private_api() -> None:
    """Issue 25: nothing under agent/ imports uvicorn, or a private module of h11."""
    for path in sorted((ROOT / "agent").glob("*.py")):
        text = path.read_text()
        assert not re.search(r"^\s*(import|from)\s+uvicorn", text, re.M), path
        assert not re.search(r"\bh11\._", text), path


# -- issue 32: the fast path, and a scraper's repeated request answered without h11 ----------

class _FastApp:
    """An app with the agent's answer-now hook: ``fast`` answers ``GET /metrics`` (a body that
    counts the answers, ``size`` bytes long) and records the scope it was given; everything
    else goes to the ASGI side, which counts its calls."""

    def __init__(self, size: int = 100, fail: bool = False) -> None:
        self.scopes: List[Dict] = []
        self.asgi_calls = 0
        self.size = size
        self.fail = fail

    def fast(self, scope: Dict):
        if scope["path"] != "/metrics" or scope["method"] != "GET":
            return None
        if self.fail:
            raise RuntimeError("broken renderer")
        self.scopes.append(scope)
        body = str(len(self.scopes)).encode().ljust(self.size, b".")
        return 200, [(b"content-type", b"text/plain"), (b"content-length", str(len(body)).encode())], [body[:10], body[10:]]

    async def __call__(self, scope, receive, send) -> None:
        self.asgi_calls += 1
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
        await send({"type": "http.response.body", "body": b"ok"})


def _answers(sock: socket.socket, count: int, timeout: float = 5.0) -> List[Tuple[bytes, bytes]]:
    """``count`` responses (head, body) read off ``sock``, framed by their Content-Length."""
    sock.settimeout(timeout)
    out, buf = [], b""
    while len(out) < count:
        while b"\r\n\r\n" not in buf:
            chunk = sock.recv(65536)
            assert chunk, f"closed after {len(out)} answers"
            buf += chunk
        head, _, buf = buf.partition(b"\r\n\r\n")
        length = int(re.search(rb"(?im)^content-length: *(\d+)", head).group(1))
        while len(buf) < length:
            chunk = sock.recv(65536)
            assert chunk, "closed inside a body"
            buf += chunk
        out.append((head, buf[:length]))
        buf = buf[length:]
    return out


SCRAPE = b"GET /metrics HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip\r\nUser-Agent: Prometheus/2.42.0\r\n\r\n"


def test_a_repeated_scrape_is_answered_from_its_first_parse_exactly_as_h11_answered_it() -> None:
    app = _FastApp()
    with serving(app=app, request_timeout=1.5) as (port, stats):
        with socket.create_connection(("127.0.0.1", port)) as s:
            answers = []
            for _ in range(5):
                s.sendall(SCRAPE)
                answers += _answers(s, 1)
            # every answer in order, the head the same bytes but for the date
            assert [body.rstrip(b".") for _, body in answers] == [b"1", b"2", b"3", b"4", b"5"]
            heads = {re.sub(rb"(?im)^date: .*$", b"date: -", head) for head, _ in answers}
            assert heads == {b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 100\r\ndate: -"}
            # the first was parsed by h11 (a scope of its own); the four after it reused that scope
            assert len({id(scope) for scope in app.scopes}) == 1 and app.asgi_calls == 0
            # another request on the same connection is parsed again, then repeats in turn
            other = SCRAPE.replace(b"gzip", b"identity")
            for _ in range(2):
                s.sendall(other)
                _answers(s, 1)
            assert len({id(scope) for scope in app.scopes}) == 2
            assert dict(app.scopes[-1]["headers"])[b"accept-encoding"] == b"identity"
            # HEAD and other paths take the app's own way, on the same connection
            s.sendall(b"HEAD /metrics HTTP/1.1\r\nHost: x\r\n\r\n" + b"GET /else HTTP/1.1\r\nHost: x\r\n\r\n")
            s.settimeout(5)
            assert _read_until(s, b"\r\n\r\nok").count(b"HTTP/1.1 200") == 2 and app.asgi_calls == 2
            # pipelined repeats (two requests in one read) are parsed, and answered in order
            s.sendall(SCRAPE * 2)
            assert [body.rstrip(b".") for _, body in _answers(s, 2)] == [b"8", b"9"]
            # an idle connection still closes at its deadline after repeated answers
            s.settimeout(10)
            assert s.recv(1) == b""
        assert stats.closed["idle_timeout"] == 1
        # garbage after a repeated scrape is h11's to refuse: 400, and the connection ends
        with socket.create_connection(("127.0.0.1", port)) as s:
            for _ in range(2):
                s.sendall(SCRAPE)
                _answers(s, 1)
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost x\r\n\r\n")
            s.settimeout(5)
            refused = b""
            while chunk := s.recv(4096):
                refused += chunk
            assert refused.startswith(b"HTTP/1.1 400 ")
        assert stats.closed["bad_request"] == 1
        # a scrape asking to close gets Connection: close, and the connection ends
        with socket.create_connection(("127.0.0.1", port)) as s:
            s.sendall(SCRAPE)
            _answers(s, 1)
            s.sendall(SCRAPE.replace(b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n"))
            head, _ = _answers(s, 1)[0]
            assert b"connection: close" in head.lower()
            s.settimeout(5)
            assert s.recv(1) == b""


def test_a_request_split_across_reads_and_a_large_or_failing_fast_answer() -> None:
    app = _FastApp(size=600_000)  # over FAST_ANSWER_MAX: sent in chunks, each after the client took the last
    with serving(app=app) as (port, stats):
        with socket.create_connection(("127.0.0.1", port)) as s:
            for _ in range(3):
                s.sendall(SCRAPE[:20])
                time.sleep(0.05)
                s.sendall(SCRAPE[20:])
                head, body = _answers(s, 1)[0]
                assert head.startswith(b"HTTP/1.1 200") and len(body) == 600_000
            s.sendall(SCRAPE)
            s.sendall(SCRAPE)
            assert len(_answers(s, 2)) == 2
        # a request that arrived in parts is never answered from a repeat: five parses
        assert len({id(scope) for scope in app.scopes}) == 5
    failing = _FastApp(fail=True)
    with serving(app=failing) as (port, stats):
        out = _exchange(port, SCRAPE, wait=2.0)
        assert out.startswith(b"HTTP/1.1 500") and out.endswith((b"<closed>", b"<reset>"))
        assert stats.closed["app_error"] == 1


def test_a_fast_answer_written_at_once_to_a_client_that_reads_nothing_is_reset_at_the_deadline() -> None:
    """400 KB answered on the fast path goes out in one write: the kernel takes what its buffer
    holds, the transport the rest; a client that never reads is still reset at the write
    deadline, and one that reads gets every byte."""
    app = _FastApp(size=400_000)
    with serving(app=app, request_timeout=1.5) as (port, stats):
        s = _non_reader(port, SCRAPE)
        deadline = time.monotonic() + 10
        # the reset is counted when it is decided; the connection leaves the table a loop turn later
        while ((stats.closed["write_timeout"] == 0 or stats.open_connections)
               and time.monotonic() < deadline):
            time.sleep(0.1)
        assert stats.closed["write_timeout"] == 1 and stats.open_connections == 0
        s.close()
        with socket.create_connection(("127.0.0.1", port)) as reader:
            reader.sendall(SCRAPE)
            assert len(_answers(reader, 1)[0][1]) == 400_000
