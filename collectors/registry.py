"""Every source the agent can run, listed once. Adding a source is one module with a
:class:`~collectors.source.SourceSpec` named ``SPEC`` and one line here; the config keys,
flags, probe-helper rules and ``ssd_collector_*`` series follow from it
(docs/adding-a-source.md)."""

from __future__ import annotations

from typing import Dict, Tuple

from collectors import diskstats_source, holders, shannon_source, syncwrite_source, write_cache_source
from collectors.fusionio import source as fusionio_source
from collectors.plugin import source as plugin_source
from collectors.smartctl import source as smartctl_source
from collectors.source import SourceSpec

SOURCES: Tuple[SourceSpec, ...] = (
    shannon_source.SPEC,
    smartctl_source.SPEC,
    fusionio_source.SPEC,
    write_cache_source.SPEC,
    diskstats_source.SPEC,
    holders.SPEC,
    syncwrite_source.SPEC,
    plugin_source.SPEC,
)

BY_NAME: Dict[str, SourceSpec] = {spec.name: spec for spec in SOURCES}
NAMES: Tuple[str, ...] = tuple(BY_NAME)
DEFAULT_ENABLED: Tuple[str, ...] = tuple(spec.name for spec in SOURCES if spec.enabled)

if len(BY_NAME) != len(SOURCES):  # pragma: no cover - a registration mistake
    raise ImportError("two sources share a name")
