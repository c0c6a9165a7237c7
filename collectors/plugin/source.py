"""The plug-in source: runs each configured plug-in command when it is due, bounded like every
tool (collectors.runner: own process group, timeout then SIGTERM/SIGKILL, output cap, no
stdin, ``LC_ALL=C``), and reads the one JSON document it prints (contract version 1,
:mod:`collectors.plugin.contract`, docs/plugins.md).

Plug-in commands are never sent to the probe helper: the helper runs only argv it builds itself
from its own tool paths, and a plug-in's argv is operator configuration it cannot check. They
run as the agent's user; a plug-in that needs privilege brings its own (a sudo rule for that
one command, a setuid wrapper, a file another process writes and the plug-in prints).

Faults are the built-in sources' faults: garbage, a hang past ``timeout_seconds``, a value out
of the contract's ranges (life 97 instead of 0.97), output over ``max_output_bytes`` or a
non-zero exit make that plug-in's run a failure: one error counted in
``ssd_collector_errors_total{collector="plugin"}``, ``ssd_collector_success{collector="plugin"}``
0 until it succeeds again, one log line per distinct failure naming the plug-in, a problem
``plugin:NAME`` in /api/v1/status. Its drives keep their last good reading (their data age
grows); other plug-ins, drives and sources are untouched.
"""

from __future__ import annotations

import logging
import os
from typing import Dict, List, Optional, Tuple

from pydantic import BaseModel, ConfigDict, Field, field_validator

from collectors import evidence
from collectors.model import DriveReading, ParseError
from collectors.plugin.contract import parse_document
from collectors.runner import ToolResult, run_tool
from collectors.source import HEALTH, Report, RunResult, Source, SourceContext, SourceSpec, newest

log = logging.getLogger("ssdfleet.plugin")


class PluginCommand(BaseModel):
    """One plug-in: ``command`` is an argv (no shell), its first element an absolute path."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    name: str = Field(pattern=r"^[a-z][a-z0-9_]{0,31}$")
    command: List[str] = Field(min_length=1, max_length=64)
    interval_seconds: float = Field(300.0, ge=1, le=7 * 86400)
    # None: the agent's tool timeout (tool_timeout_seconds), as for every built-in tool.
    timeout_seconds: Optional[float] = Field(None, gt=0, le=600)
    max_output_bytes: int = Field(1024 * 1024, ge=1024, le=64 * 1024 * 1024)

    @field_validator("command")
    @classmethod
    def _argv(cls, argv: List[str]) -> List[str]:
        if not os.path.isabs(argv[0]):
            raise ValueError(f"command[0] must be an absolute path, not {argv[0]!r}")
        if any("\x00" in a for a in argv):
            raise ValueError("an argument holds a NUL byte")
        return argv


class PluginSettings(BaseModel):
    """The ``plugin:`` config section: the plug-in commands (none by default)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    plugins: List[PluginCommand] = Field(default_factory=list, max_length=64)

    @field_validator("plugins")
    @classmethod
    def _unique(cls, plugins: List[PluginCommand]) -> List[PluginCommand]:
        names = [p.name for p in plugins]
        if len(set(names)) != len(names):
            raise ValueError("two plug-ins share a name")
        return plugins


def _why(result: ToolResult) -> str:
    why = result.describe()
    err = result.stderr.decode("utf-8", "replace").strip().splitlines()
    if result.exit_code not in (0, None) and err:
        why += f": {err[-1][:200]}"
    return why


class PluginSource(Source):
    def __init__(self, ctx: SourceContext) -> None:
        super().__init__(ctx)
        self.plugins: Tuple[PluginCommand, ...] = tuple(ctx.settings.plugins if ctx.settings else ())
        self._next: Dict[str, float] = {}
        self._failed: Dict[str, str] = {}  # plug-in -> why its last run failed
        self._readings: Dict[str, Dict[str, Tuple[DriveReading, float]]] = {}  # plug-in -> identity -> reading

    def _call(self, p: PluginCommand) -> ToolResult:
        # run_tool itself, not ctx.run: a plug-in is the operator's own command, never sent to
        # the probe helper; the agent's bounds apply unless the plug-in sets its own timeout.
        bounds = self.ctx.bounds()
        timeout = p.timeout_seconds if p.timeout_seconds is not None else bounds.timeout
        return run_tool(list(p.command), timeout=timeout, grace=bounds.grace,
                        max_output=min(p.max_output_bytes, bounds.max_output))

    def run_one(self, p: PluginCommand) -> Optional[str]:
        """Run plug-in ``p`` once; None on success, else why it failed."""
        now = self.ctx.clock()
        result = self.ctx.probe(f"plugin:{p.name}", lambda: self._call(p))
        if result is None:
            return "skipped: its last run is stuck (quarantined until the process exits)"
        if not result.ok_to_parse or result.exit_code != 0:
            return _why(result)
        try:
            readings = parse_document(result.stdout, p.name)
        except ParseError as exc:
            return str(exc)
        found = {reading.identity: evidence.contain(reading) for reading in readings}
        self._readings[p.name] = newest(self._readings.get(p.name, {}), found, now, self.ctx.record)
        return None

    def run(self, budget: Optional[float] = None) -> RunResult:
        errors: List[str] = []
        unread: List[str] = []
        for p in self.plugins:
            if self.ctx.stopping.is_set():
                break
            now = self.ctx.clock()
            if now < self._next.get(p.name, 0.0):
                if p.name in self._failed:  # still failed, not retried yet: not a new error
                    unread.append(f"plugin {p.name}: {self._failed[p.name]}")
                continue
            self._next[p.name] = now + p.interval_seconds
            why = self.run_one(p)
            if why is None:
                if p.name in self._failed:
                    log.info("plugin %s: works again", p.name)
                self._failed.pop(p.name, None)
                continue
            if self._failed.get(p.name) != why:
                log.warning("plugin %s: %s (its drives keep their last reading)", p.name, why)
            self._failed[p.name] = why
            errors.append(f"plugin {p.name}: {why}")
        return RunResult(tuple(errors), tuple(unread))

    def report(self) -> Report:
        readings = {f"{name}/{ident}": value for name, drives in self._readings.items()
                    for ident, value in drives.items()}
        notes = {f"plugin:{name}": f"plug-in failed: {why}" for name, why in self._failed.items()}
        return Report(readings=readings, notes=notes)


SPEC = SourceSpec(
    name="plugin",
    help="operator-configured plug-in commands printing drive records (docs/plugins.md)",
    interval=15.0,
    build=PluginSource,
    role=HEALTH,
    settings=PluginSettings,
    active=lambda settings: bool(settings and settings.plugins),
    priority=200,
)
