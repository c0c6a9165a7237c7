"""The write-cache source: for every drive in the snapshot, the cache state as the kernel
(sysfs), the drive (hdparm -W, smartctl -g wcache, nvme get-feature 6) and SCSI mode pages
see it. A drive SMART found asleep is not woken for it: sysfs answers alone."""

from __future__ import annotations

import logging
from typing import Dict, List, Mapping, Optional, Tuple

from collectors import write_cache
from collectors.model import KIND_ATA, KIND_SCSI, Drive, WriteCacheState
from collectors.source import Command, HelperChecks, Refused, Report, RunResult, Source, SourceContext, SourceSpec, built

log = logging.getLogger("ssdfleet.write_cache")


def cache_block_device(drive: Drive, block: Mapping[str, object]) -> Optional[str]:
    """The kernel block device whose queue files describe ``drive``'s cache, or None (a drive
    behind a RAID controller has none of its own). NVMe: the queue files live on the
    namespace (nvme0n1), SMART on the controller (nvme0)."""
    label = drive.device
    if ":" in label:
        return None
    if label in block:
        return label
    for name in sorted(block):
        if getattr(block[name], "drive_name", None) == label:
            return name
    return None


class WriteCacheSource(Source):
    def __init__(self, ctx: SourceContext) -> None:
        super().__init__(ctx)
        config = ctx.config
        self.reader = write_cache.WriteCacheReader(
            sysfs_root=config.paths.sysfs,
            hdparm=ctx.tool_paths["hdparm"],
            nvme=ctx.tool_paths["nvme"],
            smartctl=ctx.tool_paths["smartctl"],
            runner=ctx.run,
            timeout=config.tool_timeout_seconds,
            dev_root=config.paths.dev,
        )
        self._states: Dict[str, Tuple[Tuple[WriteCacheState, ...], float]] = {}

    def run(self, budget: Optional[float] = None) -> RunResult:
        errors: List[str] = []
        now = self.ctx.clock()
        block = self.ctx.block_devices()
        states = dict(self._states)
        for drive in self.ctx.snapshot().drives:
            name = cache_block_device(drive, block)
            if name is None:
                continue
            asleep = drive.reading.power_state == "standby"
            got = self.ctx.probe(
                drive.device,
                lambda b=name, k=drive.reading.kind, z=asleep: tuple(self.reader.read(b, k, standby=z)),
            )
            if got is None:
                continue
            states[drive.device] = (got, now)
            for s in got:
                if s.state == "unknown" and s.detail:
                    errors.append(f"{drive.device} {s.source}: {s.detail}")
        for e in errors:
            log.warning("write cache: %s", e)
        self._states = states
        return RunResult(tuple(errors))

    def report(self) -> Report:
        return Report(per_drive=dict(self._states))


# Device families each command may name (collectors.source: the helper's kernel-name patterns).
SMARTCTL_DEVICES = ("sd", "sg", "nvme_ctrl", "nvme_ns")
HDPARM_DEVICES = ("sd",)
NVME_DEVICES = ("nvme_ctrl",)


def _reader(checks: HelperChecks, prefix: str, runner, smartctl_json: Optional[bool] = None):
    return write_cache.WriteCacheReader(
        sysfs_root=checks.sysfs, hdparm=checks.paths["hdparm"], nvme=checks.paths["nvme"],
        smartctl=checks.paths["smartctl"], runner=runner, dev_root=prefix.rstrip("/"),
        smartctl_json=smartctl_json)


def helper_rule(checks: HelperChecks, tool: str, args: List[str]) -> Optional[Command]:
    """The reader's own builders (one definition of each argv): smartctl -g wcache for ATA and
    SCSI drives (JSON or text), hdparm -W for ATA, nvme get-feature 6 for NVMe."""
    if tool == "smartctl":
        if "-g" not in args:
            return None
        dev_type = None
        if "-d" in args and args.index("-d") + 1 < len(args):
            dev_type = checks.dev_type(args[args.index("-d") + 1])
        prefix, name = checks.device(args[-1], SMARTCTL_DEVICES, dev_type)
        candidates = [
            built(lambda r, k=kind, j=as_json: _reader(checks, prefix, r, j)._smartctl(name, k))
            for kind in (KIND_ATA, KIND_SCSI, "") for as_json in (True, False)
        ]
        return checks.match("smartctl", "wcache", args, candidates, name)
    if tool == "hdparm":
        if not args:
            raise Refused("hdparm needs a device")
        prefix, name = checks.device(args[-1], HDPARM_DEVICES)
        return checks.match("hdparm", "write-cache", args,
                            [built(lambda r: _reader(checks, prefix, r)._hdparm(name))], name)
    if tool == "nvme":
        if args[:1] != ["get-feature"]:
            return None  # another source's nvme command (vendor logs), or none: refused there
        if len(args) < 2:
            raise Refused("nvme needs a sub-command and a device")
        prefix, name = checks.device(args[1], NVME_DEVICES)
        return checks.match("nvme", "get-feature", args,
                            [built(lambda r: _reader(checks, prefix, r)._nvme(name))], name)
    return None


SPEC = SourceSpec(
    name="write_cache",
    help="write cache state: sysfs, hdparm -W, smartctl -g wcache, nvme get-feature",
    interval=60.0,
    build=WriteCacheSource,
    tools={"hdparm": ("hdparm", "hdparm"), "nvme": ("nvme", "nvme"), "smartctl": ("smartctl", "smartctl")},
    waits_for=("smartctl",),
    helper=helper_rule,
    annotates="write_cache",
    priority=80,
)
