"""The smartctl source as the registry lists it: its settings, the device names its reads may
name, and its spec. The implementation (collectors/smartctl/source.py) and the parsers are
imported when the source is built, not when the registry is read (issue 32)."""

from __future__ import annotations

from typing import List

from pydantic import BaseModel, ConfigDict, Field

from collectors.smartctl import passthrough
from collectors.source import HEALTH, NVME_CTRL, NVME_NS, SD, SG, DeviceFamily, Refused, SourceSpec, lazy

# After this many consecutive reads skipped because the drive was in standby, read it once
# without --nocheck (waking it). At the default 5-minute interval that is one wake-up an hour.
STANDBY_MAX_SKIPS = 12


class SmartctlSettings(BaseModel):
    """The ``smartctl:`` config section. ``devices``: extra ``DEVICE[:TYPE]`` entries beyond
    what ``--scan-open`` finds. ``drivedb``: smartmontools' drive database, ``auto`` (the newest
    of the host's copies, update-smart-drivedb's and the package's, and the one ssdfleet ships)
    or a path. ``standby_max_skips``: after this many consecutive polls that found a drive
    asleep, read it once anyway (it wakes), like smartd's ``-n standby,N``; 0 never wakes a
    drive. (Until issue 27 these were the top-level ``smartctl_devices``, ``smartctl_drivedb``
    and ``smartctl_standby_max_skips``; those are still read for one release, with a warning.)
    A device listed without a type that smartctl cannot type ("Unable to detect device type")
    is read once more with ``-d sat`` (SmartctlSource._try_sat). ``all_attributes``: export every
    ATA attribute's value, worst, threshold and raw value (docs/metrics.md says what it costs).
    ``reads_per_second``: the pace of a pass after the first (:meth:`SmartctlSource.run`)."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    devices: List[str] = []
    drivedb: str = "auto"
    standby_max_skips: int = Field(STANDBY_MAX_SKIPS, ge=0)
    # Issue 30: export every ATA attribute (ssd_ata_attribute_{value,worst,threshold,raw} and
    # ssd_ata_attribute_failing_now), named by the drive database. Off: up to 150 series a drive.
    all_attributes: bool = False
    # Issue 32: after the first pass, a pass's reads start at most this many a second (spread
    # over at most half the interval), so 1,024 drives are read over 51 s instead of in a burst
    # of 10 s that the scrape waited behind. 0: no limit (every read queued at once).
    reads_per_second: float = Field(20.0, ge=0, le=10000)


# Device-name families a SMART read may name (the helper's checks; collectors.source).
BUS = DeviceFamily("bus", r"bus/\d{1,3}", "MegaRAID: smartctl's name for controller N",
                   node="megaraid_sas_ioctl_node", with_type="megaraid")
CCISS = DeviceFamily("cciss", r"cciss/c\d{1,2}d\d{1,3}", "HP Smart Array (cciss driver)")
THREEWARE = DeviceFamily("3ware", r"tw[ael]\d{1,3}", "3ware 9000/7000/9750 controllers")
DF = DeviceFamily("df", r"df[a-z]{1,4}", "Shannon block device")
READ_DEVICES = (SD, NVME_CTRL, NVME_NS, SG, BUS, CCISS, THREEWARE, DF)


def checked_type(requested: str) -> str:
    """A ``-d`` value the helper may pass: one of collectors.smartctl.passthrough's (plain
    types, RAID/HBA and bridge pass-through with their arguments), matched whole, so
    ``sat,12,foo`` or ``megaraid,0 -x`` never pass."""
    if not passthrough.is_valid(requested):
        raise Refused(f"device type {requested!r} is not allowed")
    return requested


SPEC = SourceSpec(
    name="smartctl",
    help="SMART and health logs of SATA, SAS and NVMe drives through smartctl",
    interval=300.0,
    build=lazy("collectors.smartctl.source", "SmartctlSource"),
    role=HEALTH,
    tools={"smartctl": ("smartctl", "smartctl")},
    settings=SmartctlSettings,
    devices=READ_DEVICES,
    helper=lazy("collectors.smartctl.source", "helper_rule"),
    priority=20,
    moved_keys={"smartctl_devices": "devices", "smartctl_drivedb": "drivedb",
                "smartctl_standby_max_skips": "standby_max_skips"},
)
