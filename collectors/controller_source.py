"""What the three RAID controller sources (collectors/megaraid, collectors/ssacli,
collectors/arcconf) share: the host result they report, and the run loop around their tool calls.

A controller source is a *host* source: a controller, its volumes and its battery belong to the
host, not to one drive. Each run calls the family's tool a few times (bounded, through
``ctx.run``, each call the only one in flight under the source's probe name), parses the answers
with the family's pure parsers and keeps one :class:`ControllerResult`, which the shared view
(:mod:`collectors.controller_view`) shows.

A host without the tool is no failure: most hosts have no such controller. The first run that
finds the tool missing says so once at INFO and the source reports nothing until the tool
appears. A tool that is there and fails (a bad exit, garbage, a timeout) is an error each run,
logged once per distinct failure (:class:`collectors.failures.FailureLog`); the last good result
is kept and its age shown (``ssd_controller_last_read_timestamp_seconds``).
"""

from __future__ import annotations

import calendar
import logging
import time
from dataclasses import dataclass
from typing import Callable, List, Optional, Tuple

from collectors.controller_model import ControllerReport, ParseError
from collectors.failures import FailureLog
from collectors.runner import ToolResult
from collectors.source import Report, RunResult, Source, SourceContext

log = logging.getLogger("ssdfleet.controllers")

# Where a controller's clock runs: storcli and MegaCli print the next learn cycle in the
# controller's time with no zone. The controller takes its time from the host (the driver at
# load, or the firmware from the RTC the BIOS keeps), so it is read as the host's local time
# unless the operator says the RTC runs UTC.
CLOCKS = ("local", "utc")


@dataclass(frozen=True)
class ControllerResult:
    """One family's last good read. ``tool``: the program that answered (storcli, perccli,
    MegaCli, ssacli, arcconf). ``next_learn``: (controller id, battery kind, unix time) for
    each battery whose next learn cycle the tool printed, converted with the configured clock."""

    family: str
    tool: str
    report: ControllerReport
    read_at: float
    next_learn: Tuple[Tuple[str, str, float], ...] = ()

    def learn_at(self, controller: str, kind: str) -> Optional[float]:
        return next((t for c, k, t in self.next_learn if c == controller and k == kind), None)


def epoch(iso: Optional[str], clock: str = "local") -> Optional[float]:
    """``2023-06-03T10:00:00`` (a parser's zone-less controller time) as a unix time."""
    if not iso:
        return None
    try:
        parsed = time.strptime(iso, "%Y-%m-%dT%H:%M:%S")
    except ValueError:
        return None
    try:
        return float(calendar.timegm(parsed) if clock == "utc" else time.mktime(parsed))
    except (OverflowError, ValueError):
        return None


def learn_times(report: ControllerReport, clock: str) -> Tuple[Tuple[str, str, float], ...]:
    out = []
    for battery in report.batteries:
        when = epoch(battery.next_learn, clock)
        if when is not None:
            out.append((battery.controller, battery.kind, when))
    return tuple(out)


def missing(result: Optional[ToolResult]) -> bool:
    """The tool is not installed (not a failure of a tool that is there)."""
    return result is not None and result.error is not None and result.error.endswith(": not found")


class Reading:
    """One run's outcome, built by a family's ``read``: the report parts parsed, the errors."""

    def __init__(self) -> None:
        self.report = ControllerReport()
        self.errors: List[str] = []
        self.tool: Optional[str] = None  # None: no tool of the family is installed
        self.parsed = False  # at least one answer parsed: the result is replaced

    def add(self, what: str, result: Optional[ToolResult], parse: Callable[[bytes], ControllerReport]) -> bool:
        """Parse one call's answer into the report; False (and an error) when it failed."""
        if result is None:
            self.errors.append(f"{what}: skipped, an earlier call is stuck")
            return False
        if not result.ok_to_parse:
            self.errors.append(f"{what}: {result.describe()}")
            return False
        try:
            part = parse(result.stdout)
        except ParseError as exc:
            self.errors.append(f"{what}: {exc}")
            return False
        self.report = self.report.merged(part)
        self.parsed = True
        return True


class ControllerSource(Source):
    """The run loop of a controller source. A family implements :meth:`read` (its calls, through
    :meth:`call`) and sets ``family``; ``probe_name`` is what its calls are quarantined under."""

    family = ""
    probe_name = ""

    def __init__(self, ctx: SourceContext) -> None:
        super().__init__(ctx)
        self._result: Optional[ControllerResult] = None
        self._failures = FailureLog(log, f"{self.family}: ")
        self._absent_said = False
        self.clock = getattr(ctx.settings, "controller_clock", "local") if ctx.settings is not None else "local"

    def call(self, argv: List[str]) -> Optional[ToolResult]:
        """Run one command, bounded, as the only call of this source in flight (None when an
        earlier call is stuck: the source is quarantined)."""
        return self.ctx.probe(self.probe_name, lambda: self.ctx.run(argv))

    def read(self) -> Reading:  # pragma: no cover - abstract
        raise NotImplementedError

    def run(self, budget: Optional[float] = None) -> RunResult:
        reading = self.read()
        if reading.tool is None:
            if not self._absent_said:
                self._absent_said = True
                log.info("%s: no %s tool installed; no such controller is read", self.family, self.family)
            self._result = None
            return RunResult()
        self._absent_said = False
        self._failures.run(reading.errors)
        if reading.parsed:
            report = reading.report
            self._result = ControllerResult(family=self.family, tool=reading.tool, report=report,
                                            read_at=self.ctx.clock(), next_learn=learn_times(report, self.clock))
            for note in report.notes:
                log.debug("%s: %s", self.family, note)
        return RunResult(tuple(reading.errors))

    def report(self) -> Report:
        result = self._result
        if result is None or not (result.report.controllers or result.report.volumes):
            return Report()  # no controller of this family here: nothing to show
        return Report(host=result)
