"""The MegaRAID / Dell PERC source: storcli (or perccli, the same program with Dell's name), and
MegaCli where neither is installed. A host source: the controller, its volumes and its battery or
CacheVault are the host's (:mod:`collectors.controller_source`, shown by
:mod:`collectors.controller_view`).

Calls per run (each bounded by the agent's tool timeout; JSON with storcli's ``J``):

* ``storcli /call show all J``: controllers, volumes with their *current* cache policy, drives,
  the BBU or CacheVault summary and the next learn cycle;
* ``storcli /call/vall show all J``: each volume's *default* write policy ("Write Cache(initial
  setting)"), its disk cache policy, its member drives and its OS device;
* ``storcli /call/eall/sall show all J``: each drive's serial, firmware and own write cache.

``/call/bbu show all J`` and ``/call/cv show all J`` (charge, learn cycle active, replacement
required) are not read yet: no public capture of them was found to test a parser against, and
``show all`` already gives the battery's state and next learn cycle.

MegaCli (``-AdpAllInfo``, ``-LDInfo -Lall``, ``-PDList``, ``-AdpBbuCmd``, each with ``-aALL
-NoLog`` so that it writes no MegaSAS.log into the agent's working directory) gives the same,
with the battery's charge, learn cycle and replacement flag.
"""

from __future__ import annotations

from typing import Callable, List, Optional

from collectors.controller_source import ControllerSource, Reading, missing
from collectors.megaraid.megacli import parse_adapter_info, parse_bbu, parse_ldinfo, parse_pdlist
from collectors.megaraid.spec import (  # noqa: F401 (re-exported: their old home)
    SPEC,
    MegaraidSettings,
)
from collectors.megaraid.storcli import parse_storcli_json
from collectors.runner import ToolResult, run_tool
from collectors.source import Command, HelperChecks, built

PROBE = "megaraid"  # the source's calls are quarantined under this name

# storcli's commands: (operation name, the arguments). Every one ends in "J" (JSON).
STORCLI_COMMANDS = {
    "show": ["/call", "show", "all", "J"],
    "volumes": ["/call/vall", "show", "all", "J"],
    "drives": ["/call/eall/sall", "show", "all", "J"],
}
MEGACLI_COMMANDS = {
    "adapter": ["-AdpAllInfo", "-aALL", "-NoLog"],
    "volumes": ["-LDInfo", "-Lall", "-aALL", "-NoLog"],
    "drives": ["-PDList", "-aALL", "-NoLog"],
    "battery": ["-AdpBbuCmd", "-aALL", "-NoLog"],
}
MEGACLI_PARSERS = {"adapter": parse_adapter_info, "volumes": parse_ldinfo, "drives": parse_pdlist,
                   "battery": parse_bbu}


class Storcli:
    """Builds and runs storcli/perccli commands; parses nothing (the helper's rule rebuilds
    argvs with it)."""

    def __init__(self, tool: str, runner: Callable[..., ToolResult] = run_tool) -> None:
        self.tool = tool
        self.runner = runner

    def command(self, operation: str) -> ToolResult:
        return self.runner([self.tool, *STORCLI_COMMANDS[operation]])


class MegaCli:
    def __init__(self, tool: str, runner: Callable[..., ToolResult] = run_tool) -> None:
        self.tool = tool
        self.runner = runner

    def command(self, operation: str) -> ToolResult:
        return self.runner([self.tool, *MEGACLI_COMMANDS[operation]])


def _no_controller(result: ToolResult) -> bool:
    """storcli installed on a host without a MegaRAID: it answers, in JSON, that it found none."""
    said = (result.stdout[-2048:] + result.stderr[-2048:]).lower()
    return b"no controller" in said or b"controller count = 0" in said or b'"controller count" : 0' in said


class MegaraidSource(ControllerSource):
    family = "megaraid"
    probe_name = PROBE

    def read(self) -> Reading:
        reading = Reading()
        for key in ("storcli", "perccli"):
            path = self.ctx.tool_paths[key]
            storcli = Storcli(path, self.call)
            first = storcli.command("show")
            if missing(first):
                continue
            reading.tool = key
            if first is not None and first.ok_to_parse and _no_controller(first):
                reading.parsed = True  # an empty report: nothing to show, nothing wrong
                return reading
            reading.add(f"{key} /call show all", first, parse_storcli_json)
            reading.add(f"{key} /call/vall show all", storcli.command("volumes"), parse_storcli_json)
            reading.add(f"{key} /call/eall/sall show all", storcli.command("drives"), parse_storcli_json)
            return reading
        return self._read_megacli(reading)

    def _read_megacli(self, reading: Reading) -> Reading:
        megacli = MegaCli(self.ctx.tool_paths["megacli"], self.call)
        first = megacli.command("adapter")
        if missing(first):
            return reading
        reading.tool = "megacli"
        reading.add("MegaCli -AdpAllInfo", first, parse_adapter_info)
        for operation in ("volumes", "drives", "battery"):
            reading.add(f"MegaCli {MEGACLI_COMMANDS[operation][0]}", megacli.command(operation),
                        MEGACLI_PARSERS[operation])
        return reading


def helper_rule(checks: HelperChecks, tool: str, args: List[str]) -> Optional[Command]:
    """The probe helper runs exactly the commands :class:`Storcli` and :class:`MegaCli` build."""
    if tool in ("storcli", "perccli"):
        path = checks.paths[tool]
        candidates = [built(lambda r, op=op: Storcli(path, r).command(op)) for op in STORCLI_COMMANDS]
        return checks.match(tool, "show", args, candidates)
    if tool == "megacli":
        path = checks.paths["megacli"]
        candidates = [built(lambda r, op=op: MegaCli(path, r).command(op)) for op in MEGACLI_COMMANDS]
        return checks.match(tool, "info", args, candidates)
    return None
