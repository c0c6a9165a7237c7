"""The Adaptec / Microsemi / Microchip source: ``arcconf GETCONFIG N AL`` and ``arcconf
GETSTATUS N`` for each controller N (the first answer's ``Controllers found:`` line says how
many), parsed by :mod:`collectors.arcconf.parse`. A host source shown by
:mod:`collectors.controller_view`. ``Controllers found: 0`` is a host without one: no error.

arcconf writes a log file (UcliEvt.log) into its working directory. Under the shipped service
unit (ProtectSystem=strict) that directory is read-only; how every arcconf release takes that was
not tried on hardware (docs/controllers.md).
"""

from __future__ import annotations

from typing import Callable, List, Optional

from collectors.arcconf.parse import controllers_found, parse_getconfig, parse_getstatus, with_tasks
from collectors.arcconf.spec import (  # noqa: F401 (re-exported: their old home)
    SPEC,
)
from collectors.controller_model import ControllerReport
from collectors.controller_source import ControllerSource, Reading, missing
from collectors.runner import ToolResult, run_tool
from collectors.source import Command, HelperChecks, Refused, built

PROBE = "arcconf"
MAX_CONTROLLERS = 16  # a host with more is beyond any server's PCIe slots


class Arcconf:
    """Builds and runs arcconf commands; parses nothing."""

    def __init__(self, tool: str, runner: Callable[..., ToolResult] = run_tool) -> None:
        self.tool = tool
        self.runner = runner

    def getconfig(self, controller: int) -> ToolResult:
        return self.runner([self.tool, "GETCONFIG", str(controller), "AL"])

    def getstatus(self, controller: int) -> ToolResult:
        return self.runner([self.tool, "GETSTATUS", str(controller)])


class ArcconfSource(ControllerSource):
    family = "arcconf"
    probe_name = PROBE

    def read(self) -> Reading:
        reading = Reading()
        arcconf = Arcconf(self.ctx.tool_paths["arcconf"], self.call)
        first = arcconf.getconfig(1)
        if missing(first):
            return reading
        reading.tool = "arcconf"
        if first is not None and first.ok_to_parse and controllers_found(first.stdout) == 0:
            reading.parsed = True
            return reading
        count = min(controllers_found(first.stdout) or 1, MAX_CONTROLLERS) if first is not None else 1
        for number in range(1, count + 1):
            config = first if number == 1 else arcconf.getconfig(number)
            what = f"arcconf GETCONFIG {number} AL"
            if not reading.add(what, config, lambda data, n=number: parse_getconfig(data, str(n))):
                continue
            status = arcconf.getstatus(number)
            reading.add(f"arcconf GETSTATUS {number}", status,
                        lambda data, n=number, r=reading: _with_tasks(r.report, data, str(n)))
        return reading


def _with_tasks(report: ControllerReport, data: bytes, controller: str) -> ControllerReport:
    """The report's volumes with their running tasks (rebuild progress), to merge over them."""
    return with_tasks(ControllerReport(volumes=report.volumes), parse_getstatus(data), controller)


def helper_rule(checks: HelperChecks, tool: str, args: List[str]) -> Optional[Command]:
    if tool != "arcconf":
        return None
    path = checks.paths["arcconf"]
    if len(args) >= 2 and args[1].isdigit() and 1 <= int(args[1]) <= MAX_CONTROLLERS:
        number = int(args[1])
        return checks.match(tool, "config", args, [built(lambda r: Arcconf(path, r).getconfig(number)),
                                                   built(lambda r: Arcconf(path, r).getstatus(number))])
    raise Refused(f"arguments are not an allowed arcconf command: {' '.join(args)!r}")
