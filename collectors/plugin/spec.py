"""The plugin source as the registry lists it: its settings (the plug-in commands) and spec. The
implementation (collectors/plugin/source.py) and the document contract are imported when it is
built (issue 32: the registry is read before the agent listens)."""

from __future__ import annotations

import os
from typing import List, Optional

from pydantic import BaseModel, ConfigDict, Field, field_validator

from collectors.source import HEALTH, SourceSpec, lazy


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

    # A literal default (pydantic copies it per instance): default_factory=list costs 9 ms of
    # the start, pydantic reading the signature of the builtin.
    plugins: List[PluginCommand] = Field([], max_length=64)

    @field_validator("plugins")
    @classmethod
    def _unique(cls, plugins: List[PluginCommand]) -> List[PluginCommand]:
        names = [p.name for p in plugins]
        if len(set(names)) != len(names):
            raise ValueError("two plug-ins share a name")
        return plugins


SPEC = SourceSpec(
    name="plugin",
    help="operator-configured plug-in commands printing drive records (docs/plugins.md)",
    interval=15.0,
    build=lazy("collectors.plugin.source", "PluginSource"),
    role=HEALTH,
    settings=PluginSettings,
    active=lambda settings: bool(settings and settings.plugins),
    priority=200,
)
