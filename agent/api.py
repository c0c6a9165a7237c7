"""HTTP side of the agent: /metrics, /healthz, /api/v1/drives, the / page and /runbooks.

Handlers only read memory: the poller's current snapshot and what was derived from it in
the poller's listener thread (:class:`agent.metrics.Exposition` for /metrics, the
:class:`agent.views.ViewState` for each drive's history and flag times). No device command
and no SQLite query runs inside a request, and no request parameter reaches either.

The scrape never waits behind page or API work. ``/metrics`` and ``/healthz`` run on the
event loop and only copy bytes rendered ahead of time. ``/`` and ``/api/v1/drives`` build
their views per request (the data age and the wear-out countdown depend on the time), which
costs milliseconds per drive; they run in a small pool of their own (:data:`VIEW_THREADS`
threads, not the shared pool sync handlers use), and concurrent requests for the same
snapshot share one computation, reused for :data:`VIEW_MAX_AGE` seconds: forty browsers cost
what one does.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace
from typing import Any, Awaitable, Callable, Dict, Iterable, List, Optional, Tuple
from urllib.parse import quote

from pydantic import BaseModel, ConfigDict

from agent import __version__, host_views, runbooks
from agent.metrics import Exposition
from agent.server import HTTPStats
from agent.views import DriveView, ViewState, snapshot_views, worst
from collectors.families import CONTENT_TYPE as EXPOSITION_TYPE
from collectors.model import Snapshot

JSON = "application/json"
HTML = "text/html; charset=utf-8"


# The API's models build their validators on first use (defer_build), not at import: the
# agent imports this module before it listens, and the schema over DriveView's dataclasses costs
# 20 ms there (issue 32); the first /api/v1/drives pays it instead.
class CollectorOut(BaseModel):
    model_config = ConfigDict(defer_build=True)

    name: str
    success: bool
    duration_seconds: float
    last_run: float
    error: Optional[str] = None
    errors_total: int = 0


class DrivesOut(BaseModel):
    # The pre-issue-27 top-level keys of host sources (``syncwrite``) are added as extras for
    # one release (agent.host_views.legacy_api); ``host`` has the same values by source.
    model_config = ConfigDict(extra="allow", defer_build=True)

    version: str
    generated: float
    snapshot_created: float
    severity: str
    drives: List[DriveView]
    collectors: List[CollectorOut]
    problems: List[str]
    # What each host source measured, by source name, as its view gives it: ``syncwrite`` (the
    # sync-write probe's latest burst per directory), ``megaraid`` (controllers, volumes,
    # batteries) ...
    host: Dict[str, Any] = {}


VIEW_THREADS = 2
VIEW_MAX_AGE = 5.0


class _SharedView:
    """One computation of a view per snapshot (and per :data:`VIEW_MAX_AGE`), shared by every
    request that arrives while it runs or soon after, computed in ``executor``."""

    def __init__(self, compute: Callable[[Snapshot, float], bytes], executor: ThreadPoolExecutor,
                 clock: Callable[[], float]) -> None:
        self._compute = compute
        self._executor = executor
        self._clock = clock
        self._current: Optional[Tuple[Snapshot, float, asyncio.Future[bytes]]] = None

    async def get(self, snap: Snapshot) -> bytes:
        now = self._clock()
        current = self._current
        if current is not None:
            cached_snap, computed_at, future = current
            fresh = cached_snap is snap and 0 <= now - computed_at < VIEW_MAX_AGE
            failed = future.done() and (future.cancelled() or future.exception() is not None)
            if fresh and not failed:
                return await asyncio.shield(future)
        loop = asyncio.get_running_loop()
        future = asyncio.ensure_future(loop.run_in_executor(self._executor, self._compute, snap, now))
        self._current = (snap, now, future)
        return await asyncio.shield(future)


def accepts_gzip(header: str) -> bool:
    """Whether an ``Accept-Encoding`` value admits gzip (``gzip``, ``x-gzip`` or ``*`` with a
    q-value above 0, RFC 9110 12.5.3)."""
    for item in header.split(","):
        name, _, params = item.partition(";")
        if name.strip().lower() not in ("gzip", "x-gzip", "*"):
            continue
        q = 1.0
        for param in params.split(";"):
            key, _, value = param.partition("=")
            if key.strip().lower() == "q":
                try:
                    q = float(value.strip())
                except ValueError:
                    q = 0.0
        return q > 0
    return False


class HeadAsGet:
    """Answer ``HEAD`` wherever ``GET`` is answered (RFC 9110 asks it of every GET resource):
    run the GET and send its status and headers without the body."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.state = getattr(app, "state", None)  # the routes' state (the exposition), for the agent
        self.routes = getattr(app, "routes", [])
        self.fast = getattr(app, "fast", None)  # GET only: nothing for HEAD to change

    async def __call__(self, scope: Dict[str, Any], receive: Any, send: Any) -> None:
        if scope.get("type") != "http" or scope.get("method") != "HEAD":
            await self.app(scope, receive, send)
            return

        async def send_head(message: Dict[str, Any]) -> None:
            if message["type"] == "http.response.body":
                if message.get("more_body", False):
                    return
                message = {"type": "http.response.body", "body": b"", "more_body": False}
            await send(message)

        await self.app(dict(scope, method="GET"), receive, send_head)


class SlashRedirect:
    """``/metrics/`` -> ``/metrics``, with a path-only ``Location``.

    Starlette's own redirect builds an absolute URL from the request's ``Host`` header, so any
    client could make the agent answer with a link to a host of its choosing. Here the target
    is one of the app's own route paths (never the request's text, so ``//evil.example/``
    cannot become a scheme-relative link), plus the query string."""

    def __init__(self, app: Any, paths: Callable[[], Iterable[str]]) -> None:
        self.app = app
        self.state = getattr(app, "state", None)
        self.routes = getattr(app, "routes", [])
        self._paths = paths
        self.fast = getattr(app, "fast", None)  # exact route paths only: none ends with "/"

    async def __call__(self, scope: Dict[str, Any], receive: Any, send: Any) -> None:
        path = scope.get("path", "")
        if scope.get("type") == "http" and len(path) > 1 and path.endswith("/"):
            target = next((p for p in self._paths() if p == path[:-1]), None)
            if target is not None:
                query = scope.get("query_string", b"")
                location = quote(target) + ("?" + query.decode("latin-1") if query else "")
                await send({"type": "http.response.start", "status": 307,
                            "headers": [(b"location", location.encode("latin-1")), (b"content-length", b"0")]})
                await send({"type": "http.response.body", "body": b""})
                return
        await self.app(scope, receive, send)


Headers = List[Tuple[bytes, bytes]]
# What a route answers: status, headers (content-type and others; content-length is added)
# and the body in parts. The parts go out as separate ASGI messages, so a large part shared by
# every request (the rendered /metrics text) is sent without a copy per request: a client slow
# to read then holds no body of its own in the agent's memory.
Answer = Tuple[int, Headers, List[bytes]]
Handler = Callable[[Dict[str, Any]], Awaitable[Answer]]


def _json(content: Any, status: int = 200) -> Answer:
    # The encoding FastAPI's JSONResponse used (compact, UTF-8), so the bodies did not change.
    body = json.dumps(content, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode()
    return status, [(b"content-type", JSON.encode())], [body]


def _header(scope: Dict[str, Any], name: bytes) -> str:
    for key, value in scope.get("headers") or ():
        if key.lower() == name:
            return value.decode("latin-1")
    return ""


async def _send(send: Any, answer: Answer) -> None:
    status, headers, parts = answer
    length = str(sum(len(p) for p in parts)).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": list(headers) + [(b"content-length", length)]})
    if not parts:
        parts = [b""]
    for i, part in enumerate(parts):
        await send({"type": "http.response.body", "body": part, "more_body": i < len(parts) - 1})


async def _lifespan(receive: Any, send: Any) -> None:
    # Nothing to start or stop; answered so that an ASGI host that sends the events (a test
    # client) gets its replies.
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


class Routes:
    """The agent's routes as an ASGI app: an exact path each, ``GET`` (and so ``HEAD``) only.

    A handful of fixed paths needs no web framework: the server is our own
    (agent/server.py), and FastAPI with starlette cost 12.5 MiB and most of the start-up
    imports for a router of six entries (issue 32). Unknown paths get 404 and other methods
    405 with ``Allow``, in the JSON shape FastAPI gave (``{"detail": ...}``)."""

    def __init__(self) -> None:
        self.state = SimpleNamespace()
        self._handlers: Dict[str, Handler] = {}
        self._now: Dict[str, Callable[[Dict[str, Any]], Answer]] = {}
        self.routes: List[SimpleNamespace] = []  # each with .path, as FastAPI's list had

    def get(self, path: str, summary: str,
            now: Optional[Callable[[Dict[str, Any]], Answer]] = None) -> Callable[[Handler], Handler]:
        """Register ``handler`` for ``GET path``; ``now``, when given, is the same answer as a
        plain function, which :meth:`fast` offers the server."""
        def register(handler: Handler) -> Handler:
            self._handlers[path] = handler
            if now is not None:
                self._now[path] = now
            self.routes.append(SimpleNamespace(path=path, summary=summary))
            return handler
        return register

    async def __call__(self, scope: Dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        handler = self._handlers.get(scope.get("path", ""))
        if handler is None:
            answer = _json({"detail": "Not Found"}, 404)
        elif scope.get("method") != "GET":
            status, headers, parts = _json({"detail": "Method Not Allowed"}, 405)
            answer = (status, headers + [(b"allow", b"GET")], parts)
        else:
            answer = await handler(scope)
        await _send(send, answer)

    def fast(self, scope: Dict[str, Any]) -> Optional[Tuple[int, Headers, List[bytes]]]:
        """The answer to a ``GET`` whose route answers without awaiting (``/metrics``), with its
        ``content-length``, computed now; ``None`` for every other request (the server then
        runs the app). The scrape's fast path: a task and six ASGI messages were about half
        of a scrape's time in the agent at 64 drives (issue 32)."""
        now = self._now.get(scope.get("path", "")) if scope.get("method") == "GET" else None
        if now is None:
            return None
        status, headers, parts = now(scope)
        length = str(sum(len(p) for p in parts)).encode()
        return status, list(headers) + [(b"content-length", length)], parts

    def openapi(self) -> Dict[str, Any]:
        """An OpenAPI 3.1 description of the routes, with the drives document's schema."""
        schema = DrivesOut.model_json_schema(ref_template="#/components/schemas/{model}")
        components = schema.pop("$defs", {})
        components["DrivesOut"] = schema
        paths: Dict[str, Any] = {}
        for route in self.routes:
            ok: Dict[str, Any] = {"description": "Successful Response"}
            if route.path == "/api/v1/drives":
                ok["content"] = {JSON: {"schema": {"$ref": "#/components/schemas/DrivesOut"}}}
            paths[route.path] = {"get": {"summary": route.summary, "responses": {"200": ok}}}
        return {"openapi": "3.1.0", "info": {"title": "ssdfleet", "version": __version__},
                "paths": paths, "components": {"schemas": components}}


def create_app(get_snapshot: Callable[[], Snapshot], clock: Callable[[], float] = time.time,
               page: Optional[Callable[[Snapshot, float], str]] = None,
               state: Optional[ViewState] = None, http_stats: Optional[HTTPStats] = None) -> HeadAsGet:
    """``state`` (the ViewState the poller feeds) adds each drive's thinned samples and its
    flags' times to /api/v1/drives, so ``ssdfleet status --drive`` can show them.
    ``http_stats`` (the server's counters) are appended to /metrics. The app's ``state`` holds
    the :class:`Exposition` (``exposition``) the poller's listener feeds."""
    routes = Routes()
    exposition = Exposition(get_snapshot, clock=clock)
    # The agent hands each new snapshot to exposition.feed (Poller.add_listener), so a
    # scrape finds the text already rendered.
    routes.state.exposition = exposition
    views_pool = ThreadPoolExecutor(max_workers=VIEW_THREADS, thread_name_prefix="http-views")
    routes.state.views_pool = views_pool
    _scrape_routes(routes, exposition, get_snapshot, clock, http_stats)
    _view_routes(routes, get_snapshot, clock, page, state, views_pool)
    return HeadAsGet(SlashRedirect(routes, paths=lambda: [r.path for r in routes.routes]))


def _scrape_routes(routes: Routes, exposition: Exposition, get_snapshot: Callable[[], Snapshot],
                   clock: Callable[[], float], http_stats: Optional[HTTPStats]) -> None:
    # Served on the event loop from bytes rendered ahead, never queued behind a thread. gzip
    # when asked (Prometheus always asks): the snapshot's text is compressed once per snapshot
    # by the renderer; a scrape compresses only its ages and the server's counters.
    # The same answer is the server's fast path (Routes.fast): no task, no ASGI messages.
    def metrics_answer(scope: Dict[str, Any]) -> Answer:
        extra = http_stats.render() if http_stats is not None else b""
        headers = [(b"content-type", EXPOSITION_TYPE.encode())]
        if not accepts_gzip(_header(scope, b"accept-encoding")):
            static, ages = exposition.render_parts()
            return 200, headers, [static, ages + extra]
        headers += [(b"content-encoding", b"gzip"), (b"vary", b"Accept-Encoding")]
        return 200, headers, list(exposition.gzip_parts(extra))

    @routes.get("/metrics", "Prometheus exposition of the last snapshot", now=metrics_answer)
    async def metrics(scope: Dict[str, Any]) -> Answer:
        return metrics_answer(scope)

    @routes.get("/healthz", "Liveness: the number of drives and the snapshot's age")
    async def healthz(scope: Dict[str, Any]) -> Answer:
        snap = get_snapshot()
        return _json({"status": "ok", "drives": len(snap.drives), "snapshot_age_seconds": clock() - snap.created})


def _view_routes(routes: Routes, get_snapshot: Callable[[], Snapshot], clock: Callable[[], float],
                 page: Optional[Callable[[Snapshot, float], str]], state: Optional[ViewState],
                 views_pool: ThreadPoolExecutor) -> None:
    def drives_json(snap: Snapshot, now: float) -> bytes:
        views = snapshot_views(snap, now, state=state)
        host = host_views.api(snap)
        out = DrivesOut(
            version=__version__,
            generated=now,
            snapshot_created=snap.created,
            severity=worst(views),
            drives=views,
            collectors=[CollectorOut(**dataclasses.asdict(c)) for c in snap.collectors],
            problems=list(snap.problems),
            host=host,
            **host_views.legacy_api(host),
        )
        # Each drive's pre-issue-27 keys (``syncwrite``), kept for one release: only when a
        # host source has a value beside some drive, so the usual body is pydantic's own dump.
        legacy = [host_views.legacy_drive_keys(v.beside) for v in views]
        if not any(legacy):
            return out.model_dump_json().encode()
        body = out.model_dump(mode="json")
        for drive, keys in zip(body["drives"], legacy):
            drive.update(keys)
        return json.dumps(body).encode()

    shared_drives = _SharedView(drives_json, views_pool, clock)

    @routes.get("/api/v1/drives", "Every drive's view, the collectors and the problems (JSON)")
    async def drives(scope: Dict[str, Any]) -> Answer:
        return 200, [(b"content-type", JSON.encode())], [await shared_drives.get(get_snapshot())]

    # The shipped runbook, read once here (agent/runbooks.py): every alert's runbook_url points
    # at a section of it on the agent that raised the alert.
    runbook_status, runbook_page = runbooks.load_page()

    @routes.get(runbooks.ROUTE, "The runbook the alerts link to (HTML)")
    async def runbook(scope: Dict[str, Any]) -> Answer:
        return runbook_status, [(b"content-type", HTML.encode())], [runbook_page]

    if page is not None:
        shared_page = _SharedView(lambda snap, now: page(snap, now).encode(), views_pool, clock)

        @routes.get("/", "The status page (HTML)")
        async def index(scope: Dict[str, Any]) -> Answer:
            return 200, [(b"content-type", HTML.encode())], [await shared_page.get(get_snapshot())]
    else:
        @routes.get("/", "What the agent serves (JSON)")
        async def index_plain(scope: Dict[str, Any]) -> Answer:
            return _json({"ssdfleet": __version__,
                          "endpoints": ["/metrics", "/healthz", "/api/v1/drives", runbooks.ROUTE]})

    @routes.get("/openapi.json", "This description")
    async def openapi(scope: Dict[str, Any]) -> Answer:
        return _json(routes.openapi())
