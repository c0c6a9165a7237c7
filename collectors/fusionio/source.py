"""The Fusion-io source: ``fio-status -a`` lists every ioMemory module with its health, in
one call (the tool takes no device argument we need); the parser is
:func:`collectors.fusionio.parse.parse_status`.

A host without the VSL utilities and without ``fio*`` block devices is no failure: the tool is
simply not there. A missing or failing tool while ``fioX`` devices exist is one error."""

from __future__ import annotations

import logging
from typing import Dict, List, Optional, Tuple

from collectors import evidence
from collectors.failures import FailureLog
from collectors.fusionio import parse
from collectors.fusionio.spec import (  # noqa: F401 (re-exported: their old home)
    SPEC,
)
from collectors.model import DriveReading, ParseError
from collectors.runner import ToolResult, run_tool
from collectors.source import (
    Command,
    HelperChecks,
    Refused,
    Report,
    RunResult,
    Source,
    SourceContext,
    built,
    newest,
)

log = logging.getLogger("ssdfleet.fusionio")

PROBE = "fio-status -a"  # the host-wide call is quarantined under this name


class FioStatus:
    """Runs ``fio-status``; parses nothing. The builder the probe helper's rule rebuilds."""

    def __init__(self, tool: str = "fio-status", runner=run_tool) -> None:
        self.tool = tool
        self.runner = runner  # bounded by its caller: the agent's runner applies the tool timeout

    def status_all(self) -> ToolResult:
        """``fio-status -a``: every adapter, module and block device, all fields."""
        return self.runner([self.tool, "-a"])


def _has_cards(block_devices) -> bool:
    return any(str(name).startswith("fio") for name in block_devices)


class FusionioSource(Source):
    def __init__(self, ctx: SourceContext) -> None:
        super().__init__(ctx)
        self.tool = FioStatus(ctx.tool_paths["fio_status"], ctx.run)
        self._readings: Dict[str, Tuple[DriveReading, float]] = {}  # control device -> reading
        self._failures = FailureLog(log, "fusionio: ")

    def run(self, budget: Optional[float] = None) -> RunResult:
        errors: List[str] = []
        now = self.ctx.clock()
        has_cards = _has_cards(self.ctx.block_devices())
        result = self.ctx.probe(PROBE, self.tool.status_all)
        cards: Optional[Dict[str, DriveReading]] = None
        unreadable: Dict[str, str] = {}  # control device -> why its block could not be read
        if result is None:
            errors.append("fio-status -a: skipped, an earlier call is stuck")
        elif not has_cards and (not result.ok_to_parse or result.exit_code != 0 or not result.stdout.strip()):
            log.debug("fio-status: %s, and no fioX devices: no ioMemory cards here", result.describe())
            cards = {}
        elif not result.ok_to_parse or result.exit_code != 0:
            errors.append(f"fio-status -a: {result.describe()}")
        else:
            text = result.stdout.decode("utf-8", "replace")
            try:
                status = parse.read_status(text)
            except ParseError as exc:
                errors.append(f"fio-status -a: {exc}")
            else:
                cards = {r.device: r for r in status.readings}
                unreadable = {f"/dev/{fct}": why for fct, why in status.unreadable}
        self._log_outcome(errors, unreadable)
        errors += [f"fio-status -a: {device}: {why}" for device, why in unreadable.items()]
        if cards is None:  # a failed pass keeps what was known (its age shows in data age)
            return RunResult(tuple(errors))
        found = {device: evidence.contain(reading) for device, reading in cards.items()}
        # A module whose block could not be read this time keeps its last reading, as a failed
        # pass does; the others are read as usual.
        kept = {d: self._readings[d] for d in unreadable if d in self._readings and d not in found}
        self._readings = dict(newest(self._readings, found, now, self.ctx.record), **kept)
        return RunResult(tuple(errors))

    def _log_outcome(self, errors: List[str], unreadable: Dict[str, str]) -> None:
        """One WARNING per distinct failure (collectors/failures.py), not one per poll: of the
        call, and of each module block."""
        for e in errors:
            self._failures.failed("fio-status -a", e)
        if not errors:
            self._failures.ok("fio-status -a")
        for device in self._failures.failing():
            if device.startswith("/dev/") and device not in unreadable:
                self._failures.ok(device)
        for device, why in unreadable.items():
            self._failures.failed(device, f"fio-status -a: {device}: {why}")

    def report(self) -> Report:
        return Report(readings=dict(self._readings))


def helper_rule(checks: HelperChecks, tool: str, args: List[str]) -> Optional[Command]:
    if tool != "fio-status":
        return None
    if args == ["-a"]:
        path = checks.paths["fio_status"]
        return checks.match(tool, "status", args, [built(lambda r: FioStatus(path, r).status_all())])
    raise Refused(f"arguments are not an allowed fio-status command: {' '.join(args)!r}")
