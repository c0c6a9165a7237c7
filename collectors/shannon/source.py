"""The Shannon source: ``shannon-status -a`` lists the cards, ``-p /dev/sctX`` reads each one
exactly (key=value); the ``-a`` reading fills what ``-p`` lacks or stands in when it fails."""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Dict, List, Optional, Tuple

from collectors import evidence
from collectors.shannon import parse as shannon
from collectors.model import DriveReading, ParseError
from collectors.source import Command, HelperChecks, Refused, Report, RunResult, Source, SourceContext, SourceSpec, built

log = logging.getLogger("ssdfleet.shannon")

LIST_PROBE = "shannon-status -a"  # the host-wide call is quarantined under this name


def fill(primary: DriveReading, fallback: DriveReading) -> DriveReading:
    """Take every field ``primary`` lacks from ``fallback``."""
    changes = {}
    for name in primary.__dataclass_fields__:
        value = getattr(primary, name)
        if value is None or value == () or value == {}:
            other = getattr(fallback, name)
            if other is not None and other != () and other != {}:
                changes[name] = other
    return replace(primary, **changes) if changes else primary


class ShannonSource(Source):
    def __init__(self, ctx: SourceContext) -> None:
        super().__init__(ctx)
        self.tool = shannon.ShannonProbe(
            tool=ctx.tool_paths["shannon_status"], runner=ctx.run,
            timeout=ctx.config.tool_timeout_seconds, sysfs_root=ctx.config.paths.sysfs)
        self._readings: Dict[str, Tuple[DriveReading, float]] = {}  # control device -> reading

    def run(self, budget: Optional[float] = None) -> RunResult:
        errors: List[str] = []
        now = self.ctx.clock()
        has_cards = any(b.transport == "shannon" for b in self.ctx.block_devices().values())
        listing = self.ctx.probe(LIST_PROBE, self.tool.list_cards)
        cards: Dict[str, DriveReading] = {}
        if listing is None:
            errors.append("shannon-status -a: skipped, an earlier call is stuck")
        elif listing.error:
            if has_cards:
                errors.append(f"shannon-status: {listing.describe()}")
            else:
                log.debug("shannon-status not usable and no dfX devices: no Shannon cards here")
        elif not listing.ok_to_parse:
            errors.append(f"shannon-status -a: {listing.describe()}")
        else:
            text = listing.stdout.decode("utf-8", "replace")
            try:
                for reading in shannon.parse_status_a(text):
                    cards[reading.device] = reading
            except ParseError as exc:
                if has_cards or text.strip():
                    errors.append(f"shannon-status -a: {exc}")
        for device, fallback in list(cards.items()):
            result = self.ctx.probe(device, lambda d=device: self.tool.read_card(d))
            if result is None:
                continue
            if not result.ok_to_parse:
                errors.append(f"shannon-status -p {device}: {result.describe()}")
                continue
            try:
                parsed = shannon.parse_status_p(result.stdout.decode("utf-8", "replace"))
            except ParseError as exc:
                errors.append(f"shannon-status -p {device}: {exc}")
                continue
            if parsed:
                cards[device] = fill(parsed[0], fallback)
        for e in errors:
            log.warning("shannon: %s", e)
        known = dict(self._readings)
        if cards or not errors:
            for device in list(known):
                if device not in cards and not errors:
                    known.pop(device, None)
        for device, reading in cards.items():
            before = known.get(device)
            reading = evidence.monotone(before[0] if before else None, reading)
            known[device] = (reading, now)
            self.ctx.record(reading.identity, now, reading)
        self._readings = known
        return RunResult(tuple(errors))

    def report(self) -> Report:
        return Report(readings=dict(self._readings))


CONTROL_DEVICES = ("sct",)


def helper_rule(checks: HelperChecks, tool: str, args: List[str]) -> Optional[Command]:
    if tool != "shannon-status":
        return None
    path = checks.paths["shannon_status"]

    def probe(runner) -> shannon.ShannonProbe:
        return shannon.ShannonProbe(tool=path, runner=runner, sysfs_root=checks.sysfs)

    if args == ["-a"]:
        return checks.match(tool, "cards", args, [built(lambda r: probe(r).list_cards())])
    if args == ["-p", "-a"]:
        return checks.match(tool, "cards-p", args, [built(lambda r: probe(r).read_all_p())])
    if len(args) == 2 and args[0] == "-p":
        prefix, name = checks.device(args[1], CONTROL_DEVICES)
        return checks.match(tool, "card", args, [built(lambda r: probe(r).read_card(prefix + name))], name)
    raise Refused(f"arguments are not an allowed shannon-status command: {' '.join(args)!r}")


SPEC = SourceSpec(
    name="shannon",
    help="Shannon Direct-IO PCIe flash cards through shannon-status",
    interval=60.0,
    build=ShannonSource,
    tools={"shannon_status": ("shannon-status", "shannon-status")},
    helper=helper_rule,
    priority=10,
)
