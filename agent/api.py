"""HTTP side of the agent: /metrics, /healthz, /api/v1/drives (and / in later versions).

Handlers only read the poller's current snapshot; no device command ever runs inside a
request, and no request parameter reaches a command.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any, Callable, Dict, List, Optional

from fastapi import FastAPI
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST
from pydantic import BaseModel

from agent import __version__
from agent.metrics import Exposition
from agent.model import Snapshot
from agent.views import DriveView, FlagTracker, snapshot_views, worst


class CollectorOut(BaseModel):
    name: str
    success: bool
    duration_seconds: float
    last_run: float
    error: Optional[str] = None
    errors_total: int = 0


class DrivesOut(BaseModel):
    version: str
    generated: float
    snapshot_created: float
    severity: str
    drives: List[DriveView]
    collectors: List[CollectorOut]
    problems: List[str]


def create_app(get_snapshot: Callable[[], Snapshot], clock: Callable[[], float] = time.time,
               page: Optional[Callable[[Snapshot, float], str]] = None,
               history: Any = None, flags: Optional[FlagTracker] = None) -> FastAPI:
    """``history`` (the poller's History, or None) adds each drive's thinned samples to
    /api/v1/drives, so ``ssdfleet status --drive`` can show them. The lookup uses the serials
    already in the snapshot: no request input reaches it."""
    app = FastAPI(title="ssdfleet", version=__version__, docs_url=None, redoc_url=None)
    exposition = Exposition(get_snapshot, clock=clock)
    # The agent hands each new snapshot to exposition.prepare (Poller.add_listener), so a
    # scrape finds the text already rendered.
    app.state.exposition = exposition

    @app.get("/metrics")
    def metrics() -> Response:
        return Response(exposition.render(), media_type=CONTENT_TYPE_LATEST)

    @app.get("/healthz")
    def healthz() -> Dict[str, Any]:
        snap = get_snapshot()
        return {"status": "ok", "drives": len(snap.drives), "snapshot_age_seconds": clock() - snap.created}

    @app.get("/api/v1/drives", response_model=DrivesOut)
    def drives() -> DrivesOut:
        snap = get_snapshot()
        now = clock()
        views = snapshot_views(snap, now, history=history, flags=flags)
        return DrivesOut(
            version=__version__,
            generated=now,
            snapshot_created=snap.created,
            severity=worst(views),
            drives=views,
            collectors=[CollectorOut(**dataclasses.asdict(c)) for c in snap.collectors],
            problems=list(snap.problems),
        )

    if page is not None:
        from fastapi.responses import HTMLResponse

        @app.get("/", response_class=HTMLResponse)
        def index() -> HTMLResponse:
            return HTMLResponse(page(get_snapshot(), clock()))
    else:
        @app.get("/")
        def index_plain() -> JSONResponse:
            return JSONResponse({"ssdfleet": __version__, "endpoints": ["/metrics", "/healthz", "/api/v1/drives"]})

    return app
