"""The syncwrite source as the registry lists it: its settings and spec. The probe, the view and
the drop-in command are imported when the source is built, shown or its command run (issue 32:
the registry is read before the agent listens)."""

from __future__ import annotations

from typing import List

from pydantic import BaseModel, ConfigDict, Field

from collectors.source import HOST, HostView, SourceCommand, SourceSpec, lazy


class SyncWrite(BaseModel):
    """The opt-in sync-write probe (collectors/syncwrite/): off while ``directories`` is
    empty. Each run writes at most ``writes`` blocks of 8 kB, for at most ``max_seconds``, at
    most ``max_ops_per_second``, into one file of at most ``file_bytes`` per directory."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    directories: List[str] = []
    interval_seconds: float = Field(300.0, ge=1, le=7 * 86400)
    writes: int = Field(64, ge=1, le=100000)
    max_seconds: float = Field(1.0, gt=0, le=60)
    max_ops_per_second: float = Field(1000.0, gt=0, le=1000000)
    file_bytes: int = Field(64 * 1024, ge=8192, le=64 * 1024 * 1024)
    min_free_bytes: int = Field(64 * 1024 * 1024, ge=0)
    min_free_ratio: float = Field(0.02, ge=0, lt=1)
    o_dsync: bool = False


SPEC = SourceSpec(
    name="syncwrite",
    help="opt-in sync-write latency probe in configured directories (off until directories are set)",
    interval=300.0,
    build=lazy("collectors.syncwrite.source", "SyncWriteSource"),
    role=HOST,
    settings=SyncWrite,
    active=lambda settings: bool(settings.directories),
    host_view=HostView(
        families=lazy("collectors.syncwrite.view", "families"),
        api=lazy("collectors.syncwrite.view", "api"),
        status_heading="sync-write probe (8 kB write + sync, latest burst):",
        status_lines=lazy("collectors.syncwrite.view", "status_lines"),
        page=lazy("collectors.syncwrite.view", "page_section"),
        legacy_api_key="syncwrite",
        per_drive=lazy("collectors.syncwrite.view", "newest_by_serial"),
        latency=lazy("collectors.syncwrite.view", "latency"),
    ),
    priority=95,
    commands=(SourceCommand(
        name="syncwrite-dropin",
        help="the systemd drop-in that lets the agent's sandbox write the sync-write probe file in "
             "syncwrite.directories (checked first)",
        arguments=lazy("collectors.syncwrite.dropin", "add_arguments"),
        run=lazy("collectors.syncwrite.dropin", "run"),
    ),),
)
