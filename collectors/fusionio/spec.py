"""The fusionio source as the registry lists it; its implementation (collectors/fusionio/source.py)
and parser are imported when it is built (issue 32: the registry is read before the agent listens)."""

from __future__ import annotations

from collectors.source import HEALTH, SourceSpec, lazy

SPEC = SourceSpec(
    name="fusionio",
    help="Fusion-io / SanDisk ioMemory PCIe flash through fio-status -a",
    interval=60.0,
    build=lazy("collectors.fusionio.source", "FusionioSource"),
    role=HEALTH,
    tools={"fio_status": ("fio-status", "fio-status")},
    helper=lazy("collectors.fusionio.source", "helper_rule"),
    priority=20,
)
