"""Every source the agent can run, listed once. Adding a source is one module with a
:class:`~collectors.source.SourceSpec` named ``SPEC`` and one line here; the config keys,
flags, probe-helper rules and ``ssd_collector_*`` series follow from it
(docs/adding-a-source.md)."""

from __future__ import annotations

from typing import Dict, Tuple

from collectors import diskstats, holders, syncwrite, write_cache
from collectors.fusionio import source as fusionio
from collectors.nvme_vendor import source as nvme_vendor
from collectors.plugin import source as plugin
from collectors.shannon import source as shannon
from collectors.smartctl import source as smartctl
from collectors.source import SourceSpec

SOURCES: Tuple[SourceSpec, ...] = (
    shannon.SPEC,
    smartctl.SPEC,
    fusionio.SPEC,
    write_cache.SPEC,
    nvme_vendor.SPEC,
    diskstats.SPEC,
    holders.SPEC,
    syncwrite.SPEC,
    plugin.SPEC,
)

BY_NAME: Dict[str, SourceSpec] = {spec.name: spec for spec in SOURCES}
NAMES: Tuple[str, ...] = tuple(BY_NAME)
DEFAULT_ENABLED: Tuple[str, ...] = tuple(spec.name for spec in SOURCES if spec.enabled)

if len(BY_NAME) != len(SOURCES):  # pragma: no cover - a registration mistake
    raise ImportError("two sources share a name")
