"""What the three RAID controller sources' specs share: how their results are shown, with the
hooks of :mod:`collectors.controller_view` named lazily, so that reading the registry at start
does not import the controller model and view (issue 32)."""

from __future__ import annotations

from collectors.source import HostView, lazy

STATUS_HEADING = "RAID controllers (volumes' write cache: running now, configured):"

VIEW = HostView(
    families=lazy("collectors.controller_view", "families"),
    api=lazy("collectors.controller_view", "api"),
    status_heading=STATUS_HEADING,
    status_lines=lazy("collectors.controller_view", "status_lines"),
    page=lazy("collectors.controller_view", "page"),
    per_drive=lazy("collectors.controller_view", "per_drive"),
)
