"""Every source the agent can run, listed once. Adding a source is one module (or folder) with a
:class:`~collectors.source.SourceSpec` named ``SPEC`` and one line here; the config keys,
flags, probe-helper rules and device names, ``ssd_collector_*`` series and, for a host source,
its metric families and page and status sections follow from it (docs/adding-a-source.md).

Policy and exposition (agent/health.py, agent/metrics.py, the page, ``ssdfleet status``, the
API) reach sources only through this module: by role, never by name."""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Tuple

from collectors import diskstats, holders, write_cache
from collectors.arcconf import spec as arcconf
from collectors.fusionio import spec as fusionio
from collectors.megaraid import spec as megaraid
from collectors.nvme_vendor import spec as nvme_vendor
from collectors.plugin import spec as plugin
from collectors.selftest import spec as selftest
from collectors.shannon import spec as shannon
from collectors.smartctl import spec as smartctl
from collectors.source import HEALTH, DeviceFamily, HostView, SourceSpec
from collectors.ssacli import spec as ssacli
from collectors.syncwrite import spec as syncwrite

SOURCES: Tuple[SourceSpec, ...] = (
    shannon.SPEC,
    smartctl.SPEC,
    fusionio.SPEC,
    write_cache.SPEC,
    nvme_vendor.SPEC,
    diskstats.SPEC,
    holders.SPEC,
    syncwrite.SPEC,
    megaraid.SPEC,
    ssacli.SPEC,
    arcconf.SPEC,
    plugin.SPEC,
    selftest.SPEC,
)

BY_NAME: Dict[str, SourceSpec] = {spec.name: spec for spec in SOURCES}
NAMES: Tuple[str, ...] = tuple(BY_NAME)
DEFAULT_ENABLED: Tuple[str, ...] = tuple(spec.name for spec in SOURCES if spec.enabled)
# The sources whose readings are drives' health: their read times are the data age.
HEALTH_SOURCES: Tuple[str, ...] = tuple(spec.name for spec in SOURCES if spec.role == HEALTH)
# Host sources and how their results are shown, in registry order.
HOST_VIEWS: Tuple[Tuple[str, HostView], ...] = tuple(
    (spec.name, spec.host_view) for spec in SOURCES if spec.host_view is not None)

if len(BY_NAME) != len(SOURCES):  # pragma: no cover - a registration mistake
    raise ImportError("two sources share a name")


def _device_families() -> Dict[str, DeviceFamily]:
    out: Dict[str, DeviceFamily] = {}
    for spec in SOURCES:
        for family in spec.devices:
            if out.setdefault(family.name, family) != family:
                raise ImportError(f"device family {family.name!r} is defined twice, differently "
                                  f"(source {spec.name})")
    return out


# The device-name families the probe helper knows: the union of what the sources declare.
DEVICE_FAMILIES: Dict[str, DeviceFamily] = _device_families()


def host_results(host: Mapping[str, Any]) -> List[Tuple[str, HostView, Any]]:
    """(source name, its view, its result) for each host source with a result in ``host``
    (a snapshot's), in registry order."""
    return [(name, view, host[name]) for name, view in HOST_VIEWS if host.get(name) is not None]
