"""The ssacli source as the registry lists it; its implementation (collectors/ssacli/source.py) and
parser are imported when it is built (issue 32: the registry is read before the agent listens)."""

from __future__ import annotations

from collectors.controller_spec import VIEW
from collectors.source import HOST, SourceSpec, lazy

SPEC = SourceSpec(
    name="ssacli",
    help="HPE Smart Array controllers, logical drives and battery through ssacli",
    interval=300.0,
    build=lazy("collectors.ssacli.source", "SsacliSource"),
    role=HOST,
    tools={"ssacli": ("ssacli", "ssacli")},
    helper=lazy("collectors.ssacli.source", "helper_rule"),
    host_view=VIEW,
    priority=96,
)
