"""The sync-write probe as a source: a host source (its results are the host's, per directory,
not a drive's) run on its own interval (``syncwrite.interval_seconds``), off until its settings
name directories. The probe is :mod:`collectors.syncwrite.probe`; its metric families, page
section and status lines are :mod:`collectors.syncwrite.view`."""

from __future__ import annotations

import logging
from typing import Dict, List, Optional

from collectors.source import Report, RunResult, Source, SourceContext
from collectors.syncwrite.probe import SKIP_FAILURES, SyncWriteProbe, SyncWriteResult, SyncWriteSettings
from collectors.syncwrite.spec import (  # noqa: F401 (re-exported: their old home)
    SPEC,
    SyncWrite,
)

log = logging.getLogger("ssdfleet.syncwrite")


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
