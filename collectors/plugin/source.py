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
from typing import Dict, List, Optional, Tuple

from collectors import evidence
from collectors.model import DriveReading, ParseError
from collectors.plugin.contract import parse_document
from collectors.plugin.spec import (  # noqa: F401 (re-exported: their old home)
    SPEC,
    PluginCommand,
    PluginSettings,
)
from collectors.runner import ToolResult, run_tool
from collectors.source import Report, RunResult, Source, SourceContext, newest

log = logging.getLogger("ssdfleet.plugin")


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
