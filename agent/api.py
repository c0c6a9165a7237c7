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
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple
from urllib.parse import quote

from fastapi import FastAPI

# At module level: with postponed annotations FastAPI resolves a handler's return type from
# these globals; imported inside create_app, HTMLResponse stayed an unresolved forward
# reference and every /openapi.json failed with a 500.
from fastapi.responses import HTMLResponse, JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST
from pydantic import BaseModel, ConfigDict

from agent import __version__, host_views, runbooks
from agent.metrics import Exposition
from agent.server import HTTPStats
from agent.views import DriveView, ViewState, snapshot_views, worst
from collectors.model import Snapshot


class CollectorOut(BaseModel):
    name: str
    success: bool
    duration_seconds: float
    last_run: float
    error: Optional[str] = None
    errors_total: int = 0


class DrivesOut(BaseModel):
    # The pre-issue-27 top-level keys of host sources (``syncwrite``) are added as extras for
    # one release (agent.host_views.legacy_api); ``host`` has the same values by source.
    model_config = ConfigDict(extra="allow")

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


class _PartsResponse(Response):
    """A response sent as several body messages, so that a large part shared by every request
    (the rendered /metrics text) goes out without a copy per request: a client slow to read
    then holds no body of its own in the agent's memory."""

    def __init__(self, parts: List[bytes], media_type: str) -> None:
        super().__init__(b"", media_type=media_type)
        self._parts = parts
        self.headers["content-length"] = str(sum(len(p) for p in parts))

    async def __call__(self, scope: Dict[str, Any], receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
        for i, part in enumerate(self._parts):
            await send({"type": "http.response.body", "body": part, "more_body": i < len(self._parts) - 1})


class HeadAsGet:
    """Answer ``HEAD`` wherever ``GET`` is answered (RFC 9110 asks it of every GET resource):
    run the GET and send its status and headers without the body."""

    def __init__(self, app: Any) -> None:
        self.app = app

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
        self._paths = paths

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


def create_app(get_snapshot: Callable[[], Snapshot], clock: Callable[[], float] = time.time,
               page: Optional[Callable[[Snapshot, float], str]] = None,
               state: Optional[ViewState] = None, http_stats: Optional[HTTPStats] = None) -> FastAPI:
    """``state`` (the ViewState the poller feeds) adds each drive's thinned samples and its
    flags' times to /api/v1/drives, so ``ssdfleet status --drive`` can show them.
    ``http_stats`` (the server's counters) are appended to /metrics."""
    app = FastAPI(title="ssdfleet", version=__version__, docs_url=None, redoc_url=None, redirect_slashes=False)
    app.add_middleware(HeadAsGet)
    app.add_middleware(SlashRedirect, paths=lambda: [getattr(r, "path", "") for r in app.routes])
    exposition = Exposition(get_snapshot, clock=clock)
    # The agent hands each new snapshot to exposition.prepare (Poller.add_listener), so a
    # scrape finds the text already rendered.
    app.state.exposition = exposition

    views_pool = ThreadPoolExecutor(max_workers=VIEW_THREADS, thread_name_prefix="http-views")
    app.state.views_pool = views_pool

    # async: served on the event loop from bytes rendered ahead, never queued behind a thread
    @app.get("/metrics")
    async def metrics() -> Response:
        static, ages = exposition.render_parts()
        return _PartsResponse([static, ages + (http_stats.render() if http_stats is not None else b"")],
                              media_type=CONTENT_TYPE_LATEST)

    @app.get("/healthz")
    async def healthz() -> Dict[str, Any]:
        snap = get_snapshot()
        return {"status": "ok", "drives": len(snap.drives), "snapshot_age_seconds": clock() - snap.created}

    def drives_json(snap: Snapshot, now: float) -> bytes:
        views = snapshot_views(snap, now, state=state)
        host = host_views.api(snap)
        return DrivesOut(
            version=__version__,
            generated=now,
            snapshot_created=snap.created,
            severity=worst(views),
            drives=views,
            collectors=[CollectorOut(**dataclasses.asdict(c)) for c in snap.collectors],
            problems=list(snap.problems),
            host=host,
            **host_views.legacy_api(host),
        ).model_dump_json().encode()

    shared_drives = _SharedView(drives_json, views_pool, clock)

    @app.get("/api/v1/drives", response_model=DrivesOut)
    async def drives() -> Response:
        return Response(await shared_drives.get(get_snapshot()), media_type="application/json")

    # The shipped runbook, read once here (agent/runbooks.py): every alert's runbook_url points
    # at a section of it on the agent that raised the alert.
    runbook_status, runbook_page = runbooks.load_page()

    @app.get(runbooks.ROUTE, response_class=HTMLResponse)
    async def runbook() -> Response:
        return HTMLResponse(runbook_page, status_code=runbook_status)

    if page is not None:
        shared_page = _SharedView(lambda snap, now: page(snap, now).encode(), views_pool, clock)

        @app.get("/", response_class=HTMLResponse)
        async def index() -> Response:
            return HTMLResponse(await shared_page.get(get_snapshot()))
    else:
        @app.get("/")
        async def index_plain() -> JSONResponse:
            return JSONResponse({"ssdfleet": __version__,
                                 "endpoints": ["/metrics", "/healthz", "/api/v1/drives", runbooks.ROUTE]})

    return app
