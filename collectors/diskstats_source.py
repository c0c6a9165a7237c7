"""The diskstats source: /proc/diskstats, folded per whole drive (partitions and NVMe
namespaces summed), every few seconds."""

from __future__ import annotations

import logging
from typing import Dict, List, Optional, Set, Tuple

from collectors import diskstats
from collectors.model import IoStats, ParseError
from collectors.source import Report, RunResult, Source, SourceContext, SourceSpec

log = logging.getLogger("ssdfleet.diskstats")


class DiskstatsSource(Source):
    def __init__(self, ctx: SourceContext) -> None:
        super().__init__(ctx)
        self.reader = diskstats.DiskstatsReader(procfs_root=ctx.config.paths.procfs)
        self._io: Dict[str, IoStats] = {}
        self._time = 0.0
        self._bad_lines: Set[Tuple[str, str]] = set()  # (device, reason) already counted

    def run(self, budget: Optional[float] = None) -> RunResult:
        config = self.ctx.config
        errors: List[str] = []
        unread: List[str] = []
        try:
            stats = self.reader.read()
            disks = diskstats.whole_disks(stats, sysfs_root=config.paths.sysfs,
                                          include_dm=config.include_device_mapper,
                                          include_loop=config.include_loop)
        except (OSError, ParseError) as exc:
            errors.append(f"diskstats: {exc}")
            disks = None
        if disks is not None:
            # A line the parser could not read costs only that device its counters. Each bad
            # line is counted once; while it stays, the source is not a success.
            for bad in stats.errors:
                key = (bad.device, bad.reason)
                if key in self._bad_lines:
                    unread.append(f"diskstats: {bad}")
                else:
                    self._bad_lines.add(key)
                    errors.append(f"diskstats: skipped {bad}")
            self._io = diskstats.fold_by_drive(disks)
            self._time = self.ctx.clock()
        for e in errors:
            log.warning("%s", e)
        return RunResult(tuple(errors), tuple(unread))

    def report(self) -> Report:
        when = self._time
        if not when:
            return Report()
        return Report(per_drive={name: (io, when) for name, io in self._io.items()})


SPEC = SourceSpec(
    name="diskstats",
    help="iostat-style counters per drive from /proc/diskstats",
    interval=15.0,
    build=DiskstatsSource,
    annotates="io",
    priority=90,
)
