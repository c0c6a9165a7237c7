"""The agent's HTTP server: uvicorn, with the limits a host exposed to its network needs.

uvicorn alone lets anyone hold the agent down (issue 13): a connection that sends half a
request is never timed out, nothing caps the number of connections, and on SIGTERM it shuts
down and then re-raises the signal, so the process dies before the agent's own shutdown runs.
This module closes those holes without replacing uvicorn:

* :class:`LimitedH11Protocol` gives every connection a deadline for a complete request head
  (``request_timeout``) from the moment it opens or finishes its previous response; a client
  that sends nothing or a byte at a time is closed then. Idle keep-alive connections close
  after uvicorn's ``timeout_keep_alive``.
* It caps open connections at ``max_connections``. At the cap a new connection evicts the
  oldest one that has no request in progress (an idle or half-sent one: what a flood is made
  of); only when every connection is serving a request is the new one refused. A scraper
  therefore always gets in.
* :class:`AgentServer` handles SIGTERM and SIGINT by stopping the server and returning from
  :meth:`run` (a second signal skips the wait for open connections); it does not re-raise the
  signal, so the caller stops the poller, ends tool processes and flushes history, then exits 0.
* A TLS handshake must finish within the same deadline (asyncio's default is 60 s), since a
  connection is handed to the protocol, and counted, only after it.
* :func:`quiet_repeats` keeps an error that repeats (asyncio's "accept() out of system
  resource" when file descriptors run out, one per connection attempt) to one log line per
  distinct message a minute, without a traceback after the first.
* No ``server:`` header (it only tells an attacker what to try).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import resource
import signal
import socket
import threading
import time
from typing import Any, Dict, Generator, Optional, Tuple

import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

log = logging.getLogger("ssdfleet.http")

DEFAULT_REQUEST_TIMEOUT = 10.0
DEFAULT_MAX_CONNECTIONS = 512
# File descriptors kept for the agent itself (history, tool pipes, the probe helper's socket)
# when the connection cap is derived from RLIMIT_NOFILE.
FD_RESERVE = 256
# Connections asyncio accepts in one go before any of them runs (uvicorn's backlog is also the
# accept batch): kept small so the cap acts before a burst can use up the descriptors.
ACCEPT_BACKLOG = 64
# The kernel's queue of connections not yet accepted, set apart from the accept batch: a full
# queue drops a scraper's SYN, which costs it a 1 s retransmit, so it is kept long.
LISTEN_BACKLOG = 2048
# How far the agent raises its own soft RLIMIT_NOFILE (never past the hard limit).
WANTED_NOFILE = 8192


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


class _Limits:
    """Shared by every connection of one server (set by :func:`server_config`)."""

    def __init__(self, request_timeout: float, max_connections: int) -> None:
        self.request_timeout = request_timeout
        self.max_connections = max_connections
        self.evicted_total = 0
        self.refused_total = 0
        self.timed_out_total = 0
        self._last_logged: Dict[str, float] = {}

    def note(self, what: str, message: str, *args: Any) -> None:
        """Log ``message`` at most once a minute per kind (a flood must not flood the log)."""
        now = time.monotonic()
        if now - self._last_logged.get(what, -1e9) >= 60.0:
            self._last_logged[what] = now
            log.warning(message + " (logged at most once a minute)", *args)


class LimitedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a request-head deadline and a connection cap."""

    limits: _Limits  # set on the subclass server_config makes

    def connection_made(self, transport: Any) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._opened = time.monotonic()
        self._deadline: Optional[Any] = None
        self._await_request()
        if len(self.connections) > self.limits.max_connections:
            self._enforce_cap()

    # A connection is "waiting" while it has no request in progress: just opened, idle in
    # keep-alive, or part way through sending a request head.
    def _waiting(self) -> bool:
        return self.cycle is None or self.cycle.response_complete

    def _await_request(self) -> None:
        self._cancel_deadline()
        self._deadline = self.loop.call_later(self.limits.request_timeout, self._request_deadline)

    def _cancel_deadline(self) -> None:
        if getattr(self, "_deadline", None) is not None:
            self._deadline.cancel()
            self._deadline = None

    def _request_deadline(self) -> None:
        self._deadline = None
        if self._waiting() and not self.transport.is_closing():
            self.limits.timed_out_total += 1
            self.limits.note("timeout", "closed a connection that sent no complete request in %.0fs",
                             self.limits.request_timeout)
            self.transport.close()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if not self._waiting():
            self._cancel_deadline()  # the request head is complete

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._await_request()

    def connection_lost(self, exc: Optional[Exception]) -> None:
        self._cancel_deadline()
        super().connection_lost(exc)

    def _enforce_cap(self) -> None:
        idle = [c for c in self.connections
                if c is not self and isinstance(c, LimitedH11Protocol) and c._waiting()
                and not c.transport.is_closing()]
        if idle:
            victim = min(idle, key=lambda c: c._opened)
            self.limits.evicted_total += 1
            self.limits.note("evict", "%d connections open (the cap): closing the oldest idle one",
                             len(self.connections))
            victim.transport.close()
            self.connections.discard(victim)
            return
        self.limits.refused_total += 1
        self.limits.note("refuse", "%d connections open (the cap), all busy: refusing a new one",
                         len(self.connections))
        self.transport.close()
        self.connections.discard(self)


def server_config(app: Any, base: uvicorn.Config, request_timeout: float, max_connections: int) -> None:
    """Make ``base`` (a uvicorn.Config not yet loaded) use the limited protocol."""
    limits = _Limits(request_timeout, max_connections)
    protocol = type("AgentH11Protocol", (LimitedH11Protocol,), {"limits": limits})
    base.http = protocol
    base.server_header = False
    base.backlog = ACCEPT_BACKLOG
    base.timeout_graceful_shutdown = 3
    base.limits = limits  # type: ignore[attr-defined]


class AgentServer(uvicorn.Server):
    """uvicorn's Server, stopped by SIGTERM/SIGINT without re-raising the signal."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.stop_signal: Optional[int] = None

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        handled: Tuple[int, ...] = (signal.SIGINT, signal.SIGTERM)
        original = {sig: signal.signal(sig, self._on_signal) for sig in handled}
        try:
            yield
        finally:
            for sig, handler in original.items():
                signal.signal(sig, handler)

    async def startup(self, sockets: Any = None) -> None:
        # A TLS connection is handed to the protocol (and counted against the cap) only once
        # its handshake is done; asyncio's default 60 s for a handshake is the same hole as a
        # half-sent request. Bound it by the request deadline.
        limits = getattr(self.config, "limits", None)
        loop = asyncio.get_running_loop()
        create_server = loop.create_server

        async def bounded_create_server(*args: Any, **kwargs: Any) -> Any:
            if kwargs.get("ssl") is not None and limits is not None:
                kwargs.setdefault("ssl_handshake_timeout", limits.request_timeout)
            return await create_server(*args, **kwargs)

        loop.create_server = bounded_create_server  # type: ignore[method-assign]
        try:
            await super().startup(sockets=sockets)
        finally:
            del loop.create_server
        for server in getattr(self, "servers", []):
            for listening in server.sockets:
                sock = socket.socket(fileno=listening.fileno())
                try:
                    sock.listen(LISTEN_BACKLOG)  # asyncio listened with the accept batch size
                finally:
                    sock.detach()
        if self.started:
            limits = getattr(self.config, "limits", None)
            log.info("listening on %s:%d%s", self.config.host, self.config.port,
                     f" (at most {limits.max_connections} connections)" if limits else "")

    def _on_signal(self, sig: int, frame: Any) -> None:
        if self.should_exit:
            self.force_exit = True  # a second signal: do not wait for open connections
        self.should_exit = True
        if self.stop_signal is None:
            self.stop_signal = sig


class _RepeatFilter(logging.Filter):
    """One record per distinct message a minute, each on one line: the exception's type and
    message instead of its traceback (these are the event loop's and uvicorn's reports of
    what clients did, not bugs of ours)."""

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
    for name in logger_names or ("asyncio", "uvicorn.error"):
        logging.getLogger(name).addFilter(_RepeatFilter())
