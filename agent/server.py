"""The agent's HTTP server: HTTP/1.1 over asyncio, parsed by h11, serving the ASGI app.

Why our own protocol and not uvicorn (issue 25): every limit a host exposed to its network
needs is a property of the connection (how long a request head may take to arrive, how long a
response may sit unread, what counts as a connection worth keeping at the cap, how much input
and output one connection may hold). uvicorn keeps those in private classes: the agent used to
subclass ``uvicorn.protocols.http.h11_impl.H11Protocol``, replace ``loop.create_server`` during
start-up for a TLS handshake deadline and subclass ``Config.load`` for the TLS context, and the
fixes issue 26 needed (a write deadline, eviction by drain state) would have reached further
into its flow control. Pinning uvicorn to a tested range would freeze out its security fixes;
not pinning it left the agent one release from breaking. h11 is the parser uvicorn itself uses;
its API (``Connection``, events, ``send_with_data_passthrough``) is public and documented, so
the server below is built on it and owns every limit outright. FastAPI still builds the app.

What a connection may do:

* **Request deadline.** A complete request head must arrive within ``request_timeout`` of the
  connection opening or of its previous response; a client that sends nothing, or a byte at a
  time, is closed then. An idle keep-alive connection is closed after :data:`KEEP_ALIVE_SECONDS`.
* **Write deadline.** A response the client does not take resets the connection
  ``request_timeout`` after the output backed up (over the transport's high-water mark).
  Output is written in :data:`WRITE_CHUNK` pieces, each waiting for the client, into a kernel
  send buffer of fixed size (:data:`SEND_BUFFER`), so a client that reads nothing holds about
  128 kB of output in the agent and 256 kB in the kernel, plus the response body in progress.
* **One request at a time.** The next request is read only when the previous response has been
  handed to the kernel: a client pipelining thousands of requests has at most
  :data:`MAX_HEAD_BYTES` of them in the agent's memory; the rest wait in its own socket. A
  pipelined request (sent before the previous answer) starts only once the client has taken
  every earlier answer, in a lane that starts one per event-loop turn, and a connection is
  closed after :data:`MAX_PIPELINED` of them in a row.
* **Connection cap.** At most ``max_connections`` are open. At the cap a new connection evicts
  an existing one: first a connection whose client does not read its response, then the oldest
  one with no request being served (idle, half-sent, or pipelined and waiting); only when every
  connection is serving a request is the new one refused. A scraper therefore always gets in.
  Response bytes held for clients that do not read are capped over all connections too
  (:data:`STALLED_BYTES_BUDGET`).
* **Framing.** A request carrying both ``Content-Length`` and ``Transfer-Encoding`` is answered
  400 and the connection closed (RFC 9112 section 6.3: it may be an attempt at request
  smuggling). A body over :data:`MAX_BODY_BYTES` gets 413 (no endpoint takes a body).
* **TLS.** The handshake must finish within ``request_timeout`` (asyncio's default is 60 s), as
  a connection is counted against the cap only once it is done.

Every connection the agent closes for a reason is counted in
``ssd_http_connections_closed_total{reason}`` (:class:`HTTPStats`) and logged at most once a
minute per reason. :class:`AgentServer` stops on SIGTERM/SIGINT without re-raising the signal,
so the caller stops the poller, ends tool processes and flushes history, then exits 0. The app
gets no ASGI lifespan events (it declares no start-up or shut-down handlers).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import email.utils
import fcntl
import http
import logging
import resource
import signal
import socket
import ssl
import struct
import termios
import threading
import time
from typing import Any, Callable, Deque, Dict, List, Optional, Tuple
from urllib.parse import unquote

import h11

log = logging.getLogger("ssdfleet.http")

DEFAULT_REQUEST_TIMEOUT = 10.0
DEFAULT_MAX_CONNECTIONS = 512
KEEP_ALIVE_SECONDS = 5.0
# After SIGTERM, requests in progress get this long to finish (a second signal skips it).
SHUTDOWN_GRACE_SECONDS = 3.0
# File descriptors kept for the agent itself (history, tool pipes, the probe helper's socket)
# when the connection cap is derived from RLIMIT_NOFILE.
FD_RESERVE = 256
# Connections asyncio accepts in one go before any of them runs (its backlog argument is also
# the accept batch): kept small so the cap acts before a burst can use up the descriptors.
ACCEPT_BACKLOG = 64
# The kernel's queue of connections not yet accepted, set apart from the accept batch: a full
# queue drops a scraper's SYN, which costs it a 1 s retransmit, so it is kept long.
LISTEN_BACKLOG = 2048
# How far the agent raises its own soft RLIMIT_NOFILE (never past the hard limit).
WANTED_NOFILE = 8192
# A request line and headers larger than this get 431 (h11's default; a scrape sends ~200 B).
MAX_HEAD_BYTES = 16 * 1024
# Requests in a row sent behind another, before its answer (HTTP pipelining, which browsers,
# Prometheus and curl do not use): the connection is closed after the answer to this many.
MAX_PIPELINED = 16
# Pipelined requests start at most one per this many seconds over all connections (200 a
# second): 512 connections pipelining /healthz otherwise kept the event loop busy answering
# them, and a scrape on a loaded machine took up to 1.1 s instead of 0.35.
PIPELINED_INTERVAL = 0.005
# Every endpoint is GET/HEAD; a body is read (and dropped) only to keep the connection usable.
MAX_BODY_BYTES = 64 * 1024
# Output is written in pieces of this size; the transport is "backed up" over the high-water
# mark, and the next piece waits until it is back under the low one.
WRITE_CHUNK = 64 * 1024
# An answer the app gives at once (agent.api's /metrics) up to this size is written in one go:
# the kernel's send buffer (twice SEND_BUFFER) takes most of it at once and the transport holds
# the rest, with the write deadline and the output budget applying as for any chunk. 1,024
# drives gzipped are about 280 KB: in 64 KiB chunks, each waiting for the client, a scrape took
# five turns of the event loop, each a wait for the GIL behind a render (issue 32).
FAST_ANSWER_MAX = 512 * 1024
WRITE_HIGH_WATER = 64 * 1024
WRITE_LOW_WATER = 16 * 1024
# The kernel's send buffer for each connection (Linux doubles the figure). Left to autotuning,
# a loopback or LAN connection grows it to megabytes: a client that reads nothing would park
# that much kernel memory per connection, and the agent would see no backpressure until it is
# full. Smaller costs scrape time: a 1 MB body over loopback took 1.3 ms (p50) at 128 KiB with
# 64 KiB pieces, 16 ms at 64 KiB, 48 ms at 64 KiB with 16 KiB pieces (delayed acknowledgements).
SEND_BUFFER = 128 * 1024
# Response bytes held for clients that do not read, over all connections (what is left of the
# body being sent, and the unsent output): past it the longest-stalled connection is reset. A
# /metrics body is about 3 kB a drive. At 256 drives (724 kB) and 512 clients that never read,
# the agent's RSS grew 72 MB with 32 MiB here, 36 MB with 8 MiB, before /metrics sent its
# cached text without copying it per request.
STALLED_BYTES_BUDGET = 16 * 2**20

CLOSE_REASONS = (
    "request_timeout",  # no complete request head within the deadline
    "idle_timeout",  # keep-alive connection unused for KEEP_ALIVE_SECONDS (routine)
    "write_timeout",  # the client did not read its response within the deadline
    "evicted_idle",  # closed at the cap to admit a new connection: it had no request in progress
    "evicted_not_draining",  # closed at the cap, or over the output budget: it did not read
    "refused",  # a new connection at the cap when every other one was serving a request
    "pipeline_limit",  # MAX_PIPELINED requests in a row sent without waiting for an answer
    "bad_request",  # malformed HTTP, or Content-Length with Transfer-Encoding
    "body_too_large",  # a request body over MAX_BODY_BYTES
    "app_error",  # the app failed; answered 500 or cut off
)
AUTH_REASONS = (
    "missing",  # no credentials, or not a well-formed Basic header
    "wrong_credentials",  # checked by bcrypt (or a repeat of a guess already checked)
    "busy",  # answered 503: too many unverified logins waiting for bcrypt
)


def raise_nofile_limit(wanted: int = WANTED_NOFILE) -> int:
    """Raise the soft open-file limit towards ``wanted`` (a plain ``ulimit -n`` of 1,024
    would otherwise bound the connections and the poller together). Returns the soft limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):
            pass
    return soft


def connection_cap(configured: int, nofile: Optional[int] = None) -> int:
    """The connection cap: as configured, but always leaving :data:`FD_RESERVE` descriptors
    for the poller and history."""
    if nofile is None:
        nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if nofile == resource.RLIM_INFINITY:
        return configured
    return max(8, min(configured, int(nofile) - FD_RESERVE))


class HTTPStats:
    """Counters of what the HTTP side refused or cut off, rendered into ``/metrics``.

    Written from the event loop only (and the auth middleware, which runs there too); read by
    the scrape, also on the loop, so plain integers suffice."""

    def __init__(self) -> None:
        self.closed: Dict[str, int] = dict.fromkeys(CLOSE_REASONS, 0)
        self.auth_refused: Dict[str, int] = dict.fromkeys(AUTH_REASONS, 0)
        self.open_connections = 0
        self.max_connections = 0
        self._last_logged: Dict[str, float] = {}

    def count_close(self, reason: str, message: str, *args: Any) -> None:
        """Count one connection closed for ``reason`` and log ``message`` at most once a minute
        per reason (a flood must not flood the log)."""
        self.closed[reason] += 1
        self.note(reason, message, *args)

    def note(self, kind: str, message: str, *args: Any) -> None:
        now = time.monotonic()
        if now - self._last_logged.get(kind, -1e9) >= 60.0:
            self._last_logged[kind] = now
            log.warning(message + " (logged at most once a minute)", *args)

    def render(self) -> bytes:
        """The counters in the text exposition format, written out line by line: they change
        with every request, so they are formatted per scrape, and building families for these
        few lines cost about a millisecond a scrape (a third of the whole /metrics request,
        measured under load with prometheus_client's writer)."""
        lines = [
            "# HELP ssd_http_connections_open Open HTTP connections.",
            "# TYPE ssd_http_connections_open gauge",
            f"ssd_http_connections_open {self.open_connections}",
            "# HELP ssd_http_connections_max The cap on open HTTP connections.",
            "# TYPE ssd_http_connections_max gauge",
            f"ssd_http_connections_max {self.max_connections}",
            "# HELP ssd_http_connections_closed_total HTTP connections the agent closed, by reason.",
            "# TYPE ssd_http_connections_closed_total counter",
        ]
        lines += [f'ssd_http_connections_closed_total{{reason="{r}"}} {n}' for r, n in self.closed.items()]
        lines += [
            "# HELP ssd_http_auth_refused_total Requests refused by basic auth, by reason.",
            "# TYPE ssd_http_auth_refused_total counter",
        ]
        lines += [f'ssd_http_auth_refused_total{{reason="{r}"}} {n}' for r, n in self.auth_refused.items()]
        return ("\n".join(lines) + "\n").encode()


_STATUS_PHRASES = {s.value: s.phrase.encode() for s in http.HTTPStatus}


class _DateHeader:
    """RFC 9110's ``Date`` header, formatted once a second."""

    def __init__(self) -> None:
        self._second = -1
        self._value = b""

    def get(self) -> bytes:
        now = int(time.time())
        if now != self._second:
            self._second = now
            self._value = email.utils.formatdate(now, usegmt=True).encode()
        return self._value


class _Exchange:
    """One request and its response."""

    def __init__(self, scope: Dict[str, Any]) -> None:
        self.scope = scope
        self.head = scope["method"] == "HEAD"
        self.pipelined = False  # sent before the previous answer, or with more requests behind it
        self.running = False  # handed to the app
        self.last = False  # answered with Connection: close
        self.body = bytearray()
        self.body_complete = False
        self.body_delivered = False
        self.arrived = asyncio.Event()  # more body, the end of it, or a disconnect
        self.answer_now = False  # for the app's fast path once the request is read
        self.started = False  # response head written
        self.complete = False  # response fully written and drained
        self.disconnected = False


class _Shared:
    """What every connection of one server shares: the app, the limits, the open connections
    (in order of opening) and the counters."""

    def __init__(self, app: Any, stats: HTTPStats, request_timeout: float, max_connections: int,
                 stalled_budget: int = STALLED_BYTES_BUDGET) -> None:
        self.app = app
        # The app's answer-now hook (agent.api.Routes.fast, kept by its wrappers; a wrapper
        # that must see every request, as basic auth, does not offer one): a request it
        # answers is written without a task or ASGI messages.
        self.fast: Optional[Callable[[Dict[str, Any]], Any]] = getattr(app, "fast", None)
        self.stalled_budget = stalled_budget
        self.stats = stats
        self.request_timeout = request_timeout
        self.max_connections = max_connections
        stats.max_connections = max_connections
        self.connections: Dict[HTTPConnection, None] = {}
        self.stalled: Dict[HTTPConnection, int] = {}  # connection -> response bytes it holds
        self.stalled_bytes = 0
        self.shutting_down = False
        self.date = _DateHeader()
        # Requests that came pipelined behind another (which no common client does), started one
        # at a time, at most one per PIPELINED_INTERVAL, after everything else that is ready: a
        # burst of them from many connections cannot push a scraper's request to the back of
        # the loop's queue, nor take all of the agent's CPU time.
        self.pipelined: Deque[Tuple[HTTPConnection, _Exchange]] = collections.deque()
        self._starting_pipelined = False
        # One read buffer for every connection: the transport fills it and calls
        # buffer_updated at once, which copies the bytes into h11 (one thread, no await between).
        self.read_buffer = bytearray(MAX_HEAD_BYTES)

    def opened(self, conn: HTTPConnection) -> None:
        self.connections[conn] = None
        if len(self.connections) > self.max_connections:
            self._make_room(conn)
        self.stats.open_connections = len(self.connections)

    def closed(self, conn: HTTPConnection) -> None:
        self.connections.pop(conn, None)
        self.unstall(conn)
        self.stats.open_connections = len(self.connections)

    def _make_room(self, newcomer: HTTPConnection) -> None:
        """Evict one connection for ``newcomer``: the one that has left its output unread the
        longest, else the oldest one not serving a request; refuse ``newcomer`` if all are."""
        others = [c for c in self.connections if c is not newcomer and not c.gone]
        stalled = [c for c in others if c.stalled_since is not None]
        if stalled:
            victim = min(stalled, key=lambda c: c.stalled_since or 0.0)
        else:
            victim = next((c for c in others if not c.busy), None)
        if victim is not None:
            if victim.stalled_since is not None or victim.closing:
                self.stats.count_close("evicted_not_draining", "%d connections open (the cap): closing one whose "
                                       "client did not read its response", len(self.connections))
            else:
                self.stats.count_close("evicted_idle", "%d connections open (the cap): closing the oldest one not "
                                       "being served (idle, half-sent, or pipelined and waiting)",
                                       len(self.connections))
            victim.abort()
            return
        self.stats.count_close("refused", "%d connections open (the cap), all busy: refusing a new one",
                               len(self.connections))
        newcomer.abort()

    def start_pipelined(self, conn: HTTPConnection, exchange: _Exchange) -> None:
        self.pipelined.append((conn, exchange))
        if not self._starting_pipelined:
            self._starting_pipelined = True
            asyncio.get_running_loop().call_soon(self._start_one_pipelined)

    def _start_one_pipelined(self) -> None:
        while self.pipelined:
            conn, exchange = self.pipelined.popleft()
            if not conn.gone and conn.exchange is exchange and not exchange.disconnected:
                conn.start(exchange)
                break
        if self.pipelined:
            asyncio.get_running_loop().call_later(PIPELINED_INTERVAL, self._start_one_pipelined)
        else:
            self._starting_pipelined = False

    def stall(self, conn: HTTPConnection, held: int) -> None:
        """``conn`` waits for its client while holding ``held`` bytes of response."""
        self.unstall(conn)
        self.stalled[conn] = held
        self.stalled_bytes += held
        while self.stalled_bytes > self.stalled_budget and self.stalled:
            victim = min(self.stalled, key=lambda c: c.stalled_since or 0.0)
            self.stats.count_close("evicted_not_draining", "%d bytes of responses not read by their clients "
                                   "(over %d): closing the connection that did not read the longest",
                                   self.stalled_bytes, self.stalled_budget)
            victim.abort()
            self.unstall(victim)

    def unstall(self, conn: HTTPConnection) -> None:
        self.stalled_bytes -= self.stalled.pop(conn, 0)


class HTTPConnection(asyncio.BufferedProtocol):
    """One HTTP/1.1 connection: h11 parses, the ASGI app answers, the limits above apply."""

    def __init__(self, shared: _Shared) -> None:
        self.shared = shared
        self.loop = asyncio.get_running_loop()
        self.h11 = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD_BYTES)
        self.transport: Any = None
        self.exchange: Optional[_Exchange] = None
        self.closing = False  # no further request is read; unsent output may still be flushing
        self.gone = False  # aborted or lost: nothing more happens on it
        self.stalled_since: Optional[float] = None  # since when the client has not read its output
        self._pipelined_run = 0  # requests in a row that arrived behind another
        self._behind_previous = False  # the next request was sent before the previous answer
        self._stall_reasons: set = set()
        self._unread_timer: Optional[asyncio.TimerHandle] = None
        self._writable = asyncio.Event()
        self._writable.set()
        self._read_timer: Optional[asyncio.TimerHandle] = None
        self._read_due: Optional[Tuple[float, str]] = None  # (loop time, reason) or none
        # The last request answered on the fast path, as read (bytes, its scope), and the
        # scope of one answered on it during the current read.
        self._repeat: Optional[Tuple[bytes, Dict[str, Any]]] = None
        self._answered_now: Optional[Dict[str, Any]] = None
        self._write_timer: Optional[asyncio.TimerHandle] = None
        self._cycle_started = time.monotonic()  # opened, or previous response done
        self._awaiting_first_byte = False
        self._scope_base: Dict[str, Any] = {}

    # -- asyncio protocol -----------------------------------------------------------------

    def connection_made(self, transport: Any) -> None:  # type: ignore[override]
        self.transport = transport
        transport.set_write_buffer_limits(high=WRITE_HIGH_WATER, low=WRITE_LOW_WATER)
        sock = transport.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER)
        self._scope_base = {
            "type": "http",
            "asgi": {"version": "3.0", "spec_version": "2.3"},
            "scheme": "https" if transport.get_extra_info("sslcontext") is not None else "http",
            "server": _address(transport.get_extra_info("sockname")),
            "client": _address(transport.get_extra_info("peername")),
            "root_path": "",
        }
        self.shared.opened(self)
        if not self.closing:
            self._arm_read(self.shared.request_timeout, "request_timeout")

    def get_buffer(self, sizehint: int) -> bytearray:
        return self.shared.read_buffer

    def buffer_updated(self, nbytes: int) -> None:
        if self.closing:
            return
        data = bytes(self.shared.read_buffer[:nbytes])
        between = self._between_requests()
        if between and self._repeat is not None and data == self._repeat[0] and self._answer_repeat():
            return
        self._answered_now = None
        self.h11.receive_data(data)
        if self._awaiting_first_byte:
            # An idle keep-alive connection started a request: the head deadline applies now,
            # counted from the end of the previous response.
            self._awaiting_first_byte = False
            elapsed = time.monotonic() - self._cycle_started
            self._arm_read(max(0.0, self.shared.request_timeout - elapsed), "request_timeout")
        self._process()
        if between and self._answered_now is not None and self._between_requests():
            # This read was one whole request, answered at once, and the connection is back
            # where it was: the same bytes next time mean the same request (see _answer_repeat).
            self._repeat = (data, self._answered_now)

    # -- a scraper's repeated request -----------------------------------------------------
    #
    # Prometheus sends the same bytes for every scrape of a target on a kept-alive connection.
    # h11 parsed and validated them once; parsing them again (four events, a state machine,
    # a scope, an exchange) was most of what a scrape cost the agent beyond the floor's write
    # of prepared bytes (issue 32). So a read that is byte for byte the last request answered
    # on the fast path, arriving between requests (h11 idle on both sides, nothing buffered),
    # is answered from the same scope without h11: h11 saw no bytes and sent none, so it is
    # still idle for the next request, exactly as after a full cycle. Anything else (a read
    # that is part of a request or more than one, another request, a slow client, a server
    # shutting down) takes the full path.

    def _between_requests(self) -> bool:
        return (self.exchange is None and not self.closing and not self.shared.shutting_down
                and self.h11.their_state is h11.IDLE and self.h11.our_state is h11.IDLE
                and not self.h11.trailing_data[0])

    def _answer_repeat(self) -> bool:
        """Answer the repeated request; False (nothing done) when it must take the full path."""
        assert self._repeat is not None
        if not self._writable.is_set():
            return False
        try:
            answer = self.shared.fast(self._repeat[1])
        except Exception:  # the full path answers it, and logs and counts the failure
            return False
        if answer is None:
            return False
        status, headers, parts = answer
        if sum(len(p) for p in parts) > FAST_ANSWER_MAX:
            return False
        # As h11 writes a response head: status line, the headers in order, a blank line.
        head = [b"HTTP/1.1 %d %s\r\n" % (status, _STATUS_PHRASES.get(status, b""))]
        head += [b"%s: %s\r\n" % (name, value) for name, value in headers]
        head.append(b"date: %s\r\n\r\n" % self.shared.date.get())
        self.transport.write(b"".join(head + [p for p in parts if p]))
        self._cycle_started = time.monotonic()
        self._awaiting_first_byte = True
        self._arm_read(min(KEEP_ALIVE_SECONDS, self.shared.request_timeout), "idle_timeout")
        if not self._writable.is_set():  # the client is slow to read: no next request until it has
            self.transport.pause_reading()
            self.loop.create_task(self._resume_when_drained())
        return True

    async def _resume_when_drained(self) -> None:
        await self._drain(0)
        if not self.closing:
            self.transport.resume_reading()

    def eof_received(self) -> bool:
        if not self.closing:
            self.h11.receive_data(b"")
            self._process()
        # Keep a plain TCP transport open: a response in progress may still be written (TLS
        # cannot half-close, and asyncio warns if asked to).
        return self._scope_base.get("scheme") == "http"

    def pause_writing(self) -> None:
        self._writable.clear()
        self._stall("paused", True)

    def resume_writing(self) -> None:
        self._stall("paused", False)
        self._writable.set()

    def _stall(self, why: str, on: bool) -> None:
        """The client is (or no longer is) leaving output unread: our buffer is over its
        high-water mark ("paused"), or a pipelined request waits for the client to take the
        earlier answers ("unread"). The write deadline runs while it is, and the connection is
        first in line for eviction."""
        if on:
            self._stall_reasons.add(why)
        else:
            self._stall_reasons.discard(why)
        if self._stall_reasons and self.stalled_since is None:
            self.stalled_since = time.monotonic()
            self._cancel("_write_timer")
            self._write_timer = self.loop.call_later(self.shared.request_timeout, self._write_deadline)
        elif not self._stall_reasons and self.stalled_since is not None:
            self.stalled_since = None
            self._cancel("_write_timer")
            self.shared.unstall(self)

    @property
    def busy(self) -> bool:
        """Serving a request whose output the client is taking: never evicted. (A request
        waiting in the pipelined lane is not being served yet.)"""
        return (self.exchange is not None and self.exchange.running and not self.closing
                and self.stalled_since is None)

    def connection_lost(self, exc: Optional[Exception]) -> None:
        self.closing = self.gone = True
        self._cancel("_read_timer")
        self._cancel("_write_timer")
        self._cancel("_unread_timer")
        self.shared.closed(self)
        if self.exchange is not None:
            self.exchange.disconnected = True
            self.exchange.arrived.set()
        self._writable.set()  # wake a send() waiting for the client: it returns at once

    # -- closing --------------------------------------------------------------------------

    def abort(self) -> None:
        """Close now with a reset, dropping unsent output in the agent and in the kernel (a
        plain close would leave the kernel retrying it to a client that reads nothing)."""
        if not self.gone:
            self.closing = self.gone = True
            sock = self.transport.get_extra_info("socket")
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.transport.abort()
            self.shared.closed(self)

    def close(self) -> None:
        """Close after the unsent output is taken, within the write deadline."""
        if self.closing:
            return
        self.closing = True
        self._cancel("_read_timer")
        self.transport.close()
        if self.transport.get_write_buffer_size() and self._write_timer is None:
            self._write_timer = self.loop.call_later(self.shared.request_timeout, self._write_deadline)

    def _write_deadline(self) -> None:
        self._write_timer = None
        self.shared.stats.count_close("write_timeout", "closed a connection that did not read its response "
                                      "in %.0fs", self.shared.request_timeout)
        self.abort()

    def _arm_read(self, delay: float, reason: str) -> None:
        """The read deadline is now ``delay`` from now. Timers are lazy: one armed for an
        earlier time stays and, when it fires, re-arms for the deadline then due; so a
        keep-alive scrape creates no timer (it moved the deadline four times a request,
        three timer handles and a heap entry each, 7% of a scrape's time in the agent)."""
        deadline = self.loop.time() + delay
        self._read_due = (deadline, reason)
        timer = self._read_timer
        if timer is not None:
            if timer.when() <= deadline:
                return
            timer.cancel()
        self._read_timer = self.loop.call_at(deadline, self._read_deadline)

    def _disarm_read(self) -> None:
        """No read deadline (a request is being answered); a timer still armed finds none due."""
        self._read_due = None

    def _read_deadline(self) -> None:
        self._read_timer = None
        due = self._read_due
        if self.closing or due is None:
            return
        deadline, reason = due
        if self.loop.time() + 0.001 < deadline:  # moved later since this timer was armed
            self._read_timer = self.loop.call_at(deadline, self._read_deadline)
            return
        self._read_due = None
        if reason == "idle_timeout":
            self.shared.stats.closed[reason] += 1  # routine, not worth a log line
        else:
            self.shared.stats.count_close(reason, "closed a connection that sent no complete request in %.0fs",
                                          self.shared.request_timeout)
        self.close()

    def _cancel(self, name: str) -> None:
        timer = getattr(self, name)
        if timer is not None:
            timer.cancel()
            setattr(self, name, None)

    # -- reading requests -------------------------------------------------------------------

    def _process(self) -> None:
        """Handle what h11 has buffered; read more only when it needs more for this request."""
        while not self.closing:
            if self.exchange is not None and self.exchange.body_complete:
                self.transport.pause_reading()  # the next request waits for this response
                return
            try:
                event = self.h11.next_event()
            except h11.RemoteProtocolError as err:
                self._refuse(err.error_status_hint, "bad_request", "refused a malformed request: %s", err)
                return
            if event is h11.NEED_DATA:
                self.transport.resume_reading()
                return
            if event is h11.PAUSED:
                self.transport.pause_reading()
                return
            if isinstance(event, h11.Request):
                self._begin(event)
            elif isinstance(event, h11.Data):
                self._body(event.data)
            elif isinstance(event, h11.EndOfMessage):
                self._end_of_body()
            elif isinstance(event, h11.ConnectionClosed):
                self.close()

    def _begin(self, request: h11.Request) -> None:
        self._disarm_read()
        names = [name for name, _ in request.headers]
        if b"content-length" in names and b"transfer-encoding" in names:
            self._refuse(400, "bad_request", "refused a request with both Content-Length and Transfer-Encoding "
                         "(RFC 9112 6.3: a smuggling attempt?)")
            return
        length = next((int(v) for n, v in request.headers if n == b"content-length"), 0)
        if length > MAX_BODY_BYTES:
            self._refuse(413, "body_too_large", "refused a request body of %d bytes", length)
            return
        raw_path, _, query = request.target.partition(b"?")
        scope = dict(self._scope_base)
        scope.update({
            "http_version": request.http_version.decode("ascii"),
            "method": request.method.decode("ascii"),
            "path": unquote(raw_path.decode("ascii", "replace")),
            "raw_path": raw_path,
            "query_string": query,
            "headers": list(request.headers),
        })
        self.exchange = _Exchange(scope)
        # Pipelined: sent before the answer to the previous request, or with more requests
        # behind it in the same read (a request with a body has its body there: not counted).
        framed = any(name in (b"content-length", b"transfer-encoding") for name in names)
        self.exchange.pipelined = self._behind_previous or (not framed and bool(self.h11.trailing_data[0]))
        self._behind_previous = False
        # A body (none of our endpoints takes one) must arrive within the request deadline too.
        self._arm_read(self.shared.request_timeout, "request_timeout")
        self._start_or_queue(self.exchange)

    def _start_or_queue(self, exchange: _Exchange) -> None:
        """Start the app on ``exchange`` now, or in the pipelined lane if more requests were
        already buffered behind it; past :data:`MAX_PIPELINED` in a row, answer it and close."""
        if not exchange.pipelined:
            self._pipelined_run = 0
            self.start(exchange)
            return
        self._pipelined_run += 1
        if self._pipelined_run >= MAX_PIPELINED:
            exchange.last = True
            self.shared.stats.count_close("pipeline_limit", "closed a connection after %d pipelined requests "
                                          "in a row", MAX_PIPELINED)
        self._when_read(exchange, 0.0)

    def _when_read(self, exchange: _Exchange, waited: float) -> None:
        """Queue a pipelined request once the client has taken every earlier answer.

        Otherwise a client that pipelines and reads nothing is answered until the kernel's
        send buffer and ours are full, a response each at the event loop's cost. The kernel's
        count of sent but unacknowledged bytes (``SIOCOUTQ``) says whether it has; checked
        again at 20, 40, 80 ms and so on, then every 0.5 s, while the write deadline runs."""
        self._unread_timer = None
        if self.closing or exchange is not self.exchange or exchange.disconnected:
            return
        if _unacknowledged(self.transport) + self.transport.get_write_buffer_size():
            self._stall("unread", True)
            delay = min(0.5, max(0.02, waited))
            self._unread_timer = self.loop.call_later(delay, self._when_read, exchange, waited + delay)
            return
        self._stall("unread", False)
        self.shared.start_pipelined(self, exchange)

    def _body(self, data: bytes) -> None:
        exchange = self.exchange
        if exchange is None:
            return
        if len(exchange.body) + len(data) > MAX_BODY_BYTES:
            if exchange.started:
                self.shared.stats.closed["body_too_large"] += 1
                self.abort()
            else:
                self._refuse(413, "body_too_large", "refused a request body over %d bytes", MAX_BODY_BYTES)
            return
        exchange.body += data
        exchange.arrived.set()

    def _end_of_body(self) -> None:
        self._disarm_read()
        exchange = self.exchange
        if exchange is None:
            return
        exchange.body_complete = True
        exchange.arrived.set()
        if exchange.answer_now and not exchange.started:
            self._answer_now(exchange)  # completes it and reads the next request, if it can
            return
        if exchange.complete:  # answered before its body was read: now the next one
            self._next_cycle()

    def _refuse(self, status: int, reason: str, message: str, *args: Any) -> None:
        """Answer ``status`` with Connection: close, count and log it, then close."""
        self.shared.stats.count_close(reason, message, *args)
        if self.exchange is not None and self.exchange.started:
            self.abort()
            return
        if self.exchange is not None:
            self.exchange.disconnected = True  # the app's answer, if any, is dropped
            self.exchange.arrived.set()
        self.exchange = None
        body = _STATUS_PHRASES.get(status, b"Error") + b"\n"
        try:
            head = h11.Response(status_code=status, reason=_STATUS_PHRASES.get(status, b""), headers=[
                (b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"), (b"date", self.shared.date.get())])
            self.transport.write(self.h11.send(head) + self.h11.send(h11.Data(data=body))
                                 + self.h11.send(h11.EndOfMessage()))
        except h11.LocalProtocolError:
            # A broken request line or head: h11 has no request to tie an answer to. Answer
            # anyway, outside it, since the connection ends here.
            self.transport.write(b"HTTP/1.1 %d %s\r\ncontent-type: text/plain; charset=utf-8\r\n"
                                 b"content-length: %d\r\nconnection: close\r\n\r\n%s"
                                 % (status, _STATUS_PHRASES.get(status, b""), len(body), body))
        # Half-close and stop reading: the rest of what the client sent is never parsed.
        self.transport.pause_reading()
        self.close()

    # -- the ASGI exchange --------------------------------------------------------------------

    def start(self, exchange: _Exchange) -> None:
        exchange.running = True
        if self.shared.fast is not None and exchange.scope["method"] == "GET":
            # Answered as soon as the request's end is read (the next event for a GET), or
            # now if it was (a request from the pipelined lane).
            exchange.answer_now = True
            if exchange.body_complete:
                self._answer_now(exchange)
            return
        self.loop.create_task(self._respond(exchange))

    def _answer_now(self, exchange: _Exchange) -> None:
        """The fast path: a request the app answers at once (``/metrics``) is written here as
        one buffer, head and body together (one ``send``); any other, or an answer too large
        to write without waiting for the client, goes the ASGI way."""
        if exchange.disconnected or self.closing or exchange is not self.exchange:
            return
        try:
            answer = self.shared.fast(exchange.scope)
        except Exception as exc:  # as for the app: a 500 for this client
            self._app_failed(exchange, f"{type(exc).__name__}: {exc}")
            return
        if answer is None:
            self.loop.create_task(self._respond(exchange))
            return
        status, headers, parts = answer
        if not self._writable.is_set() or sum(len(p) for p in parts) > FAST_ANSWER_MAX:
            self.loop.create_task(self._send_answer(exchange, status, headers, parts))
            return
        headers.append((b"date", self.shared.date.get()))
        if self.shared.shutting_down or exchange.last:
            headers.append((b"connection", b"close"))
        self.transport.write(b"".join([
            self.h11.send(h11.Response(status_code=status, headers=headers, reason=_STATUS_PHRASES.get(status, b""))),
            *(self.h11.send(h11.Data(data=p)) for p in parts if p),
            self.h11.send(h11.EndOfMessage()),
        ]))
        exchange.started = True
        if not self._writable.is_set():  # over the high-water mark: complete once it drains
            self.loop.create_task(self._complete_when_drained(exchange))
            return
        exchange.complete = True
        exchange.arrived.set()
        if not (self.shared.shutting_down or exchange.last):
            self._answered_now = exchange.scope
        self._response_done(exchange)

    async def _complete_when_drained(self, exchange: _Exchange) -> None:
        """The response is written: once the client has taken it, the exchange is complete
        and the connection reads the next request."""
        await self._drain(0)
        if not (exchange.disconnected or self.closing):
            exchange.complete = True
            exchange.arrived.set()
            self._response_done(exchange)

    async def _send_answer(self, exchange: _Exchange, status: int, headers: List[Tuple[bytes, bytes]],
                           parts: List[bytes]) -> None:
        """``_answer_now``'s answer sent as the app would: in chunks, each after the client took
        the last."""
        try:
            await self._send(exchange, {"type": "http.response.start", "status": status, "headers": headers})
            for i, part in enumerate(parts or [b""]):
                await self._send(exchange, {"type": "http.response.body", "body": part,
                                            "more_body": i < len(parts) - 1})
        except Exception as exc:
            self._app_failed(exchange, f"{type(exc).__name__}: {exc}")

    async def _respond(self, exchange: _Exchange) -> None:
        async def receive() -> Dict[str, Any]:
            return await self._receive(exchange)

        async def send(message: Dict[str, Any]) -> None:
            await self._send(exchange, message)

        try:
            await self.shared.app(exchange.scope, receive, send)
        except Exception as exc:  # the app's failure is a 500 for this client, not the server's
            self._app_failed(exchange, f"{type(exc).__name__}: {exc}")
            return
        if not exchange.complete and not exchange.disconnected and not self.closing:
            self._app_failed(exchange, "returned without completing its response")

    def _app_failed(self, exchange: _Exchange, what: str) -> None:
        if exchange.disconnected or self.closing:
            return
        if exchange.started:
            self.shared.stats.count_close("app_error", "the app failed after answering %s %s: %s",
                                          exchange.scope["method"], exchange.scope["path"], what)
            self.abort()
            return
        self._refuse(500, "app_error", "the app failed on %s %s: %s",
                     exchange.scope["method"], exchange.scope["path"], what)

    async def _receive(self, exchange: _Exchange) -> Dict[str, Any]:
        if not exchange.body_delivered and not exchange.disconnected:
            if self.h11.they_are_waiting_for_100_continue and not exchange.started:
                self.transport.write(self.h11.send(h11.InformationalResponse(status_code=100, headers=[])))
            while not exchange.body_complete and not exchange.disconnected:
                exchange.arrived.clear()
                await exchange.arrived.wait()
            if not exchange.disconnected:
                exchange.body_delivered = True
                return {"type": "http.request", "body": bytes(exchange.body), "more_body": False}
        while not exchange.disconnected and not exchange.complete:
            exchange.arrived.clear()
            await exchange.arrived.wait()
        return {"type": "http.disconnect"}

    async def _send(self, exchange: _Exchange, message: Dict[str, Any]) -> None:
        if exchange.disconnected or exchange.complete or self.closing:
            return
        kind = message["type"]
        if kind == "http.response.start":
            if exchange.started:
                raise RuntimeError("http.response.start sent twice")
            headers = [(bytes(n).lower(), bytes(v)) for n, v in message.get("headers", ())]
            headers.append((b"date", self.shared.date.get()))
            if self.shared.shutting_down or exchange.last:
                headers.append((b"connection", b"close"))
            status = int(message["status"])
            self.transport.write(self.h11.send(h11.Response(
                status_code=status, headers=headers, reason=_STATUS_PHRASES.get(status, b""))))
            exchange.started = True
        elif kind == "http.response.body":
            if not exchange.started:
                raise RuntimeError("http.response.body before http.response.start")
            body = memoryview(message.get("body", b""))
            if not exchange.head:
                for offset in range(0, len(body), WRITE_CHUNK):
                    piece = body[offset:offset + WRITE_CHUNK]
                    for out in self.h11.send_with_data_passthrough(h11.Data(data=piece)):
                        self.transport.write(out)
                    await self._drain(len(body) - offset - len(piece))
                    if exchange.disconnected or self.closing:
                        return
            if not message.get("more_body", False):
                self.transport.write(self.h11.send(h11.EndOfMessage()))
                await self._complete_when_drained(exchange)

    async def _drain(self, unsent: int) -> None:
        """Wait until the client has taken enough of the output (the write deadline runs);
        ``unsent`` is what is left of the body being sent, held meanwhile."""
        if self._writable.is_set():
            return
        self.shared.stall(self, unsent + self.transport.get_write_buffer_size())
        try:
            await self._writable.wait()
        finally:
            self.shared.unstall(self)

    def _response_done(self, exchange: _Exchange) -> None:
        if self.h11.our_state is h11.MUST_CLOSE or self.shared.shutting_down:
            self.exchange = None
            self.close()
        elif exchange.body_complete:
            self._next_cycle()
        else:
            self._process()  # the rest of its body, then the next request

    def _next_cycle(self) -> None:
        self.exchange = None
        try:
            self.h11.start_next_cycle()
        except h11.LocalProtocolError:
            self.close()
            return
        self._cycle_started = time.monotonic()
        self._behind_previous = bool(self.h11.trailing_data[0])
        self._awaiting_first_byte = not self._behind_previous
        self._arm_read(min(KEEP_ALIVE_SECONDS, self.shared.request_timeout) if self._awaiting_first_byte
                       else self.shared.request_timeout,
                       "idle_timeout" if self._awaiting_first_byte else "request_timeout")
        self._process()

    def shutdown(self) -> None:
        """Server stopping: close now if no request is in progress (else after its response)."""
        if self.exchange is None:
            self.close()


def _unacknowledged(transport: Any) -> int:
    """Bytes the kernel holds for this connection that the client has not acknowledged."""
    sock = transport.get_extra_info("socket")
    if sock is None:
        return 0
    try:
        return struct.unpack("i", fcntl.ioctl(sock.fileno(), termios.TIOCOUTQ, b"\0\0\0\0"))[0]
    except (OSError, ValueError):
        return 0


def _address(value: Any) -> Optional[Tuple[str, int]]:
    if isinstance(value, tuple) and len(value) >= 2:
        return (str(value[0]), int(value[1]))
    return None


class AgentServer:
    """Serves ``app`` on ``host:port`` until SIGTERM/SIGINT (or :meth:`stop`).

    ``run()`` returns after the listening socket is closed and the connections are done;
    ``started`` says whether it ever listened (False: the bind failed, and the log says why),
    ``stop_signal`` which signal stopped it."""

    def __init__(self, app: Any, host: str, port: int, *, stats: Optional[HTTPStats] = None,
                 ssl_context: Optional[ssl.SSLContext] = None,
                 request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
                 max_connections: int = DEFAULT_MAX_CONNECTIONS,
                 stalled_bytes_budget: int = STALLED_BYTES_BUDGET,
                 on_listening: Optional[Callable[[], None]] = None) -> None:
        self.app = app
        self.on_listening = on_listening  # called on the loop once the socket listens
        self.host = host
        self.port = port
        self.stats = stats if stats is not None else HTTPStats()
        self.ssl_context = ssl_context
        self.request_timeout = request_timeout
        self.max_connections = max_connections
        self.stalled_bytes_budget = stalled_bytes_budget
        self.started = False
        self.stop_signal: Optional[int] = None
        self.force_exit = False
        self.sockets: List[socket.socket] = []
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._stop: Optional[asyncio.Event] = None
        self._stop_requested = False

    def run(self, sockets: Optional[List[socket.socket]] = None) -> None:
        asyncio.run(self.serve(sockets))

    async def serve(self, sockets: Optional[List[socket.socket]] = None) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        if self._stop_requested:
            return
        shared = _Shared(self.app, self.stats, self.request_timeout, self.max_connections,
                         self.stalled_bytes_budget)
        server = await self._listen(shared, sockets)
        if server is None:
            return
        if self.on_listening is not None:
            self.on_listening()
        previous = self._capture_signals()  # through the shutdown: a second signal hurries it
        try:
            await self._stop.wait()
            await self._shutdown(server, shared)
        finally:
            for sig, handler in previous.items():
                self._loop.remove_signal_handler(sig)
                if handler is not None:
                    signal.signal(sig, handler)

    async def _listen(self, shared: _Shared, sockets: Optional[List[socket.socket]]) -> Optional[Any]:
        loop = asyncio.get_running_loop()
        kwargs: Dict[str, Any] = {"backlog": ACCEPT_BACKLOG}
        if self.ssl_context is not None:
            # asyncio's default of 60 s for a handshake is the same hole as a half-sent request
            kwargs.update(ssl=self.ssl_context, ssl_handshake_timeout=self.request_timeout)
        try:
            if sockets:
                server = await loop.create_server(lambda: HTTPConnection(shared), sock=sockets[0], **kwargs)
            else:
                server = await loop.create_server(lambda: HTTPConnection(shared), self.host, self.port,
                                                  reuse_address=True, **kwargs)
        except OSError as err:
            log.error("cannot listen on %s:%d: %s", self.host, self.port, err.strerror or err)
            return None
        for listening in server.sockets:
            sock = socket.socket(fileno=listening.fileno())
            try:
                sock.listen(LISTEN_BACKLOG)  # asyncio listened with the accept batch size
            finally:
                sock.detach()
        self.sockets = list(server.sockets)
        self.started = True
        log.info("listening on %s:%d%s (at most %d connections)", self.host, self.port,
                 " with TLS" if self.ssl_context is not None else "", self.max_connections)
        return server

    def _capture_signals(self) -> Dict[int, Any]:
        """SIGINT and SIGTERM stop the server while it runs; the handlers that were there
        before come back afterwards (the caller's own, for the rest of its shutdown)."""
        if threading.current_thread() is not threading.main_thread():
            return {}
        assert self._loop is not None
        previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
        for sig in previous:
            self._loop.add_signal_handler(sig, self.stop, sig)
        return previous

    def stop(self, sig: Optional[int] = None) -> None:
        """Stop serving (thread-safe). A second call skips the wait for requests in progress."""
        if self._stop_requested:
            self.force_exit = True
        self._stop_requested = True
        if self.stop_signal is None and sig is not None:
            self.stop_signal = sig
        if self._loop is not None and self._stop is not None:
            try:
                self._loop.call_soon_threadsafe(self._stop.set)
            except RuntimeError:
                pass  # the loop has already ended

    # uvicorn's name for the same request, kept for callers written against it
    @property
    def should_exit(self) -> bool:
        return self._stop_requested

    @should_exit.setter
    def should_exit(self, value: bool) -> None:
        if value:
            self.stop()

    async def _shutdown(self, server: Any, shared: _Shared) -> None:
        server.close()  # no new connections
        shared.shutting_down = True
        for conn in list(shared.connections):
            conn.shutdown()
        deadline = time.monotonic() + SHUTDOWN_GRACE_SECONDS
        while shared.connections and time.monotonic() < deadline and not self.force_exit:
            await asyncio.sleep(0.05)
        for conn in list(shared.connections):
            conn.abort()
        await asyncio.sleep(0)  # let the transports run connection_lost
        pending = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.wait(pending, timeout=1.0)


class _RepeatFilter(logging.Filter):
    """One record per distinct message a minute, each on one line: the exception's type and
    message instead of its traceback (these are the event loop's reports of what clients did,
    not bugs of ours)."""

    def __init__(self, period: float = 60.0) -> None:
        super().__init__()
        self.period = period
        self._seen: Dict[str, float] = {}
        self._suppressed: Dict[str, int] = {}
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING:
            return True
        key = f"{record.name}:{record.msg!s}"
        now = time.monotonic()
        with self._lock:
            last = self._seen.get(key)
            if last is not None and now - last < self.period:
                self._suppressed[key] = self._suppressed.get(key, 0) + 1
                return False
            self._seen[key] = now
            suppressed = self._suppressed.pop(key, 0)
            if len(self._seen) > 1000:
                self._seen.clear()
        text = record.getMessage()
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            text += f" ({type(exc).__name__}: {exc})"
        if suppressed:
            text += f" (and {suppressed} more like it in the last minute)"
        record.msg = text.replace("\n", " | ")
        record.args = ()
        record.exc_info = None
        record.exc_text = None
        record.stack_info = None
        return True


def quiet_repeats(*logger_names: str) -> None:
    """Keep an error that repeats (asyncio's "accept() out of system resource" when file
    descriptors run out, one per connection attempt) to one log line per distinct message a
    minute, without a traceback after the first."""
    for name in logger_names or ("asyncio", "ssdfleet.http"):
        logging.getLogger(name).addFilter(_RepeatFilter())
