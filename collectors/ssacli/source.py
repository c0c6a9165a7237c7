"""The HPE Smart Array source: ``ssacli ctrl all show config detail`` (hpssacli and hpacucli,
its earlier names, answer the same command: point ``tools.ssacli`` at them) in one call, parsed
by :func:`collectors.ssacli.parse.parse_ssacli`. A host source (the controller, its logical
drives and its battery or capacitor are the host's), shown by :mod:`collectors.controller_view`.
``Error: No controllers detected.`` is a host without a Smart Array: nothing to show, no error.
"""

from __future__ import annotations

from typing import Callable, List, Optional

from collectors.controller_source import ControllerSource, Reading, missing
from collectors.runner import ToolResult, run_tool
from collectors.source import Command, HelperChecks, built
from collectors.ssacli.parse import parse_ssacli
from collectors.ssacli.spec import (  # noqa: F401 (re-exported: their old home)
    SPEC,
)

PROBE = "ssacli"
CONFIG_DETAIL = ["ctrl", "all", "show", "config", "detail"]


class Ssacli:
    """Builds and runs the one ssacli command; parses nothing."""

    def __init__(self, tool: str, runner: Callable[..., ToolResult] = run_tool) -> None:
        self.tool = tool
        self.runner = runner

    def config_detail(self) -> ToolResult:
        return self.runner([self.tool, *CONFIG_DETAIL])


class SsacliSource(ControllerSource):
    family = "ssacli"
    probe_name = PROBE

    def read(self) -> Reading:
        reading = Reading()
        result = Ssacli(self.ctx.tool_paths["ssacli"], self.call).config_detail()
        if missing(result):
            return reading
        reading.tool = "ssacli"
        if result is not None and result.ok_to_parse and b"No controllers detected" in result.stdout + result.stderr:
            reading.parsed = True  # ssacli exits 1 with this on a host without a Smart Array
            return reading
        reading.add("ssacli ctrl all show config detail", result, parse_ssacli)
        return reading


def helper_rule(checks: HelperChecks, tool: str, args: List[str]) -> Optional[Command]:
    if tool != "ssacli":
        return None
    path = checks.paths["ssacli"]
    return checks.match(tool, "config", args, [built(lambda r: Ssacli(path, r).config_detail())])
