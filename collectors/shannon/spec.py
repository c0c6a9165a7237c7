"""The shannon source as the registry lists it; its implementation (collectors/shannon/source.py)
and parser are imported when it is built (issue 32: the registry is read before the agent listens)."""

from __future__ import annotations

from collectors.source import HEALTH, DeviceFamily, SourceSpec, lazy

CONTROL = DeviceFamily("sct", r"sct[a-z]{1,4}", "Shannon control device")
CONTROL_DEVICES = (CONTROL,)


SPEC = SourceSpec(
    name="shannon",
    help="Shannon Direct-IO PCIe flash cards through shannon-status",
    interval=60.0,
    build=lazy("collectors.shannon.source", "ShannonSource"),
    role=HEALTH,
    devices=CONTROL_DEVICES,
    tools={"shannon_status": ("shannon-status", "shannon-status")},
    helper=lazy("collectors.shannon.source", "helper_rule"),
    priority=10,
)
