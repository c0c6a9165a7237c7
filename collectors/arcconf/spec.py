"""The arcconf source as the registry lists it; its implementation (collectors/arcconf/source.py) and
parser are imported when it is built (issue 32: the registry is read before the agent listens)."""

from __future__ import annotations

from collectors.controller_spec import VIEW
from collectors.source import HOST, SourceSpec, lazy

SPEC = SourceSpec(
    name="arcconf",
    help="Adaptec / Microchip SmartRAID controllers, logical devices and battery or ZMM through arcconf",
    interval=300.0,
    build=lazy("collectors.arcconf.source", "ArcconfSource"),
    role=HOST,
    tools={"arcconf": ("arcconf", "arcconf")},
    helper=lazy("collectors.arcconf.source", "helper_rule"),
    host_view=VIEW,
    priority=96,
)
