"""The megaraid source as the registry lists it: its settings and spec. The implementation
(collectors/megaraid/source.py) and parsers are imported when it is built (issue 32: the registry
is read before the agent listens)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from collectors.controller_spec import VIEW
from collectors.source import HOST, SourceSpec, lazy


class MegaraidSettings(BaseModel):
    """The ``megaraid:`` config section. ``controller_clock``: how to read the next learn cycle
    storcli and MegaCli print without a zone: ``local`` (the host's time zone, the default: the
    controller takes its clock from the host) or ``utc`` (a host whose RTC runs UTC)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    controller_clock: Literal["local", "utc"] = "local"


SPEC = SourceSpec(
    name="megaraid",
    help="MegaRAID / Dell PERC controllers, volumes and battery through storcli, perccli or MegaCli",
    interval=300.0,
    build=lazy("collectors.megaraid.source", "MegaraidSource"),
    role=HOST,
    # The vendors' packages install these paths (Broadcom's storcli RPM/DEB, Dell's perccli,
    # the old MegaCli RPM); none is on PATH by default.
    tools={"storcli": ("/opt/MegaRAID/storcli/storcli64", "storcli"),
           "perccli": ("/opt/MegaRAID/perccli/perccli64", "perccli"),
           "megacli": ("/opt/MegaRAID/MegaCli/MegaCli64", "megacli")},
    settings=MegaraidSettings,
    helper=lazy("collectors.megaraid.source", "helper_rule"),
    host_view=VIEW,
    priority=96,
)
