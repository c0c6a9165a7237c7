"""The sync-write probe as a source: off unless ``syncwrite.directories`` names directories.
Each run writes one bounded burst of 8 kB blocks, each followed by a sync, into a small file
the agent owns in each directory (collectors/syncwrite.py does the measuring)."""

from __future__ import annotations

import logging
from typing import List, Optional

from pydantic import BaseModel, ConfigDict, Field

from collectors.source import Report, RunResult, Source, SourceContext, SourceSpec
from collectors.syncwrite import SyncWriteProbe, SyncWriteSettings

log = logging.getLogger("ssdfleet.syncwrite")


class SyncWrite(BaseModel):
    """The opt-in sync-write probe (collectors/syncwrite.py): off while ``directories`` is
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


def probe_from_config(config) -> Optional[SyncWriteProbe]:
    """The probe for the configured directories, or None when the probe is off (the default)."""
    sw = config.syncwrite
    if not sw.directories:
        return None
    settings = SyncWriteSettings(
        max_writes=sw.writes,
        max_seconds=sw.max_seconds,
        max_ops_per_second=sw.max_ops_per_second,
        file_bytes=sw.file_bytes,
        min_free_bytes=sw.min_free_bytes,
        min_free_ratio=sw.min_free_ratio,
        o_dsync=sw.o_dsync,
    )
    return SyncWriteProbe(sw.directories, settings, grace_seconds=config.tool_kill_grace_seconds + 3.0,
                          sysfs_root=config.paths.sysfs)


class SyncWriteSource(Source):
    def __init__(self, ctx: SourceContext) -> None:
        super().__init__(ctx)
        self.probe = probe_from_config(ctx.config)
        self._results: tuple = ()

    def run(self, budget: Optional[float] = None) -> RunResult:
        """A directory skipped for being read-only or nearly full is not a failure; an error
        or a stuck sync is."""
        if self.probe is None:
            return RunResult()
        results = self.probe.run()
        errors: List[str] = [f"{r.directory}: {r.skipped}: {r.detail}" for r in results
                             if r.skipped in ("error", "stuck")]
        for e in errors:
            log.warning("syncwrite %s", e)
        self._results = tuple(results)
        return RunResult(tuple(errors))

    def report(self) -> Report:
        return Report(host=self._results)


SPEC = SourceSpec(
    name="syncwrite",
    help="opt-in sync-write latency probe in configured directories (off until directories are set)",
    interval=300.0,
    build=SyncWriteSource,
    settings=SyncWrite,
    active=lambda settings: bool(settings.directories),
    priority=95,
)
