"""The sync-write probe as a source: a host source (its results are the host's, per directory,
not a drive's) run on its own interval (``syncwrite.interval_seconds``), off until its settings
name directories. The probe is :mod:`collectors.syncwrite.probe`; its metric families, page
section and status lines are :mod:`collectors.syncwrite.view`."""

from __future__ import annotations

import logging
from typing import Dict, List, Optional

from pydantic import BaseModel, ConfigDict, Field

from collectors.source import HOST, HostView, Report, RunResult, Source, SourceCommand, SourceContext, SourceSpec
from collectors.syncwrite import dropin, view
from collectors.syncwrite.probe import SKIP_FAILURES, SyncWriteProbe, SyncWriteResult, SyncWriteSettings

log = logging.getLogger("ssdfleet.syncwrite")


class SyncWrite(BaseModel):
    """The opt-in sync-write probe (collectors/syncwrite/): off while ``directories`` is
    empty. Each run writes at most ``writes`` blocks of 8 kB, for at most ``max_seconds``, at
    most ``max_ops_per_second``, into one file of at most ``file_bytes`` per directory."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    directories: List[str] = []
    interval_seconds: float = Field(300.0, ge=1, le=7 * 86400)
    writes: int = Field(64, ge=1, le=100000)
    max_seconds: float = Field(1.0, gt=0, le=60)
    max_ops_per_second: float = Field(1000.0, gt=0, le=1000000)
    file_bytes: int = Field(64 * 1024, ge=8192, le=64 * 1024 * 1024)
    min_free_bytes: int = Field(64 * 1024 * 1024, ge=0)
    min_free_ratio: float = Field(0.02, ge=0, lt=1)
    o_dsync: bool = False


def probe_from_config(config, settings: Optional[SyncWrite] = None) -> Optional[SyncWriteProbe]:
    """The probe for the configured directories, or None when the probe is off (the default).
    ``settings``: the source's section (``config.syncwrite`` when not given)."""
    sw = settings if settings is not None else config.syncwrite
    if not sw.directories:
        return None
    probe_settings = SyncWriteSettings(
        max_writes=sw.writes,
        max_seconds=sw.max_seconds,
        max_ops_per_second=sw.max_ops_per_second,
        file_bytes=sw.file_bytes,
        min_free_bytes=sw.min_free_bytes,
        min_free_ratio=sw.min_free_ratio,
        o_dsync=sw.o_dsync,
    )
    return SyncWriteProbe(sw.directories, probe_settings, grace_seconds=config.tool_kill_grace_seconds + 3.0,
                          sysfs_root=config.paths.sysfs)


class SyncWriteSource(Source):
    def __init__(self, ctx: SourceContext) -> None:
        super().__init__(ctx)
        self.probe = probe_from_config(ctx.config, ctx.settings)
        self._results: tuple = ()
        self._said: Dict[str, Optional[str]] = {}  # directory -> the outcome last logged

    def run(self, budget: Optional[float] = None) -> RunResult:
        """A directory skipped for being on a read-only or nearly full filesystem is not a
        failure; an error, a stuck sync, or a directory the agent alone may not write (its
        sandbox, its permissions: the operator's to fix) is."""
        if self.probe is None:
            return RunResult()
        results = self.probe.run()
        errors: List[str] = [f"{r.directory}: {r.skipped}: {r.detail}" for r in results
                             if r.skipped in SKIP_FAILURES]
        for r in results:
            self._log_change(r)
        self._results = tuple(results)
        return RunResult(tuple(errors))

    def _log_change(self, r: SyncWriteResult) -> None:
        """One line when a directory's outcome changes (not one every interval)."""
        outcome = r.skipped or "ok"
        if self._said.get(r.directory) == outcome:
            return
        self._said[r.directory] = outcome
        if r.skipped in SKIP_FAILURES:
            log.warning("syncwrite %s: %s: %s", r.directory, r.skipped, r.detail)
        elif r.skipped is not None:
            log.info("syncwrite %s: skipped (%s: %s)", r.directory, r.skipped, r.detail)
        else:
            rate = r.ops_per_second
            log.info("syncwrite %s: probing, %s", r.directory,
                     f"{rate:,.0f} {r.method}/s" if rate is not None else f"{r.ops} {r.method} writes")

    def report(self) -> Report:
        # () before the first run: no results yet, nothing to show (host_results skips None only).
        return Report(host=self._results or None)


SPEC = SourceSpec(
    name="syncwrite",
    help="opt-in sync-write latency probe in configured directories (off until directories are set)",
    interval=300.0,
    build=SyncWriteSource,
    role=HOST,
    settings=SyncWrite,
    active=lambda settings: bool(settings.directories),
    host_view=HostView(
        families=view.families,
        api=lambda results, drives: [v.model_dump() for v in view.views(results, drives)],
        status_heading="sync-write probe (8 kB write + sync, latest burst):",
        status_lines=view.status_lines,
        page=view.page_section,
        legacy_api_key="syncwrite",
        per_drive=view.newest_by_serial,
        latency=view.latency,
    ),
    priority=95,
    commands=(SourceCommand(
        name="syncwrite-dropin",
        help="the systemd drop-in that lets the agent's sandbox write the sync-write probe file in "
             "syncwrite.directories (checked first)",
        arguments=dropin.add_arguments,
        run=dropin.run,
    ),),
)
