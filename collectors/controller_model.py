"""Records for what a RAID controller says about itself, its volumes, its drives and the battery
or flash module that protects its write cache.

One shape for the three families (MegaRAID/PERC through storcli, perccli or MegaCli; HPE Smart
Array through ssacli/hpssacli/hpacucli; Adaptec/Microsemi through arcconf): each parser returns a
:class:`ControllerReport`, and the agent never needs to know which tool printed it.

Vocabulary, one word per meaning, the tool's own word always kept beside it (``*_raw``):

* write policy: ``write-back`` (the controller acknowledges a write once it is in its cache),
  ``write-through`` (only once the drives have it: every fsync waits for the flash) and
  ``always-write-back`` (write-back even with no working battery: MegaRAID ``AWB`` /
  ``CachedBadBBU``, arcconf ``Enabled (write-back)`` without "when protected by battery");
* ``cache_when_bad_battery``: True for ``CachedBadBBU``-like settings (acknowledged writes can be
  lost on power failure), False for ``NoCachedBadBBU`` (the controller drops to write-through),
  None when the tool does not say or it does not apply (write-through);
* read policy: ``read-ahead``, ``no-read-ahead``, ``adaptive-read-ahead`` (MegaRAID), or
  ``read-cache`` / ``no-read-cache`` (arcconf and ssacli, whose read cache is not read-ahead);
* I/O policy (MegaRAID only): ``direct`` or ``cached``;
* disk cache policy (the drives' own volatile caches behind the controller): ``enabled``,
  ``disabled``, ``default`` (the drive keeps its own setting, whatever it is).

A value a tool does not print, or prints out of range, is None (the readers of printed values are
in :mod:`collectors.controller_text`); a withheld value leaves a line in
:attr:`ControllerReport.notes`. Nothing here does I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Tuple

from collectors.model import ParseError

__all__ = [
    "ParseError", "CachePolicy", "Controller", "VirtualDisk", "PhysicalDrive", "Battery", "ControllerReport",
    "WRITE_BACK", "WRITE_THROUGH", "ALWAYS_WRITE_BACK",
]

WRITE_BACK = "write-back"
WRITE_THROUGH = "write-through"
ALWAYS_WRITE_BACK = "always-write-back"
WRITE_POLICIES = (WRITE_BACK, WRITE_THROUGH, ALWAYS_WRITE_BACK)

READ_AHEAD = "read-ahead"
NO_READ_AHEAD = "no-read-ahead"
ADAPTIVE_READ_AHEAD = "adaptive-read-ahead"
READ_CACHE = "read-cache"
NO_READ_CACHE = "no-read-cache"

IO_DIRECT = "direct"
IO_CACHED = "cached"

DISK_CACHE_ENABLED = "enabled"
DISK_CACHE_DISABLED = "disabled"
DISK_CACHE_DEFAULT = "default"

# Volume states. ``partially-degraded``: a RAID 6/60 volume that lost one of its two parities.
VOLUME_STATES = ("optimal", "degraded", "partially-degraded", "rebuilding", "initializing", "offline",
                 "failed", "unknown")
# Drive states (behind a controller, as the controller sees them).
DRIVE_STATES = ("online", "rebuilding", "hotspare", "unconfigured-good", "unconfigured-bad", "offline", "failed",
                "missing", "predictive-failure", "jbod", "copyback", "unknown")
# Battery / flash module states.
BATTERY_STATES = ("optimal", "learning", "charging", "degraded", "non-operational", "failed", "missing", "unknown")

# Plausibility bounds: a value outside them cannot be true and is withheld.
MAX_BYTES = 2**70  # a zebibyte: far beyond any controller volume
MIN_CELSIUS, MAX_CELSIUS = -40.0, 150.0


@dataclass(frozen=True)
class CachePolicy:
    """One cache policy (a volume's current one, or its default), split into its parts."""

    write: Optional[str] = None
    read: Optional[str] = None
    io: Optional[str] = None
    cache_when_bad_battery: Optional[bool] = None
    raw: str = ""

    @property
    def write_back(self) -> Optional[bool]:
        """True when the controller acknowledges writes from its cache (either write-back form)."""
        return None if self.write is None else self.write in (WRITE_BACK, ALWAYS_WRITE_BACK)


@dataclass(frozen=True)
class Controller:
    family: str  # megaraid, ssacli, arcconf
    id: str  # MegaRAID controller index, Smart Array slot, arcconf controller number
    model: Optional[str] = None
    serial: Optional[str] = None
    firmware: Optional[str] = None
    status: str = "unknown"  # ok, degraded, failed, unknown
    status_raw: str = ""
    cache_bytes: Optional[int] = None
    # The controller's default for new volumes ("Cache When BBU Bad"), where it prints one.
    cache_when_bad_battery: Optional[bool] = None
    # The controller-wide setting of the drives' own caches (Smart Array "Drive Write Cache").
    disk_cache: Optional[str] = None


@dataclass(frozen=True)
class VirtualDisk:
    controller: str
    id: str  # MegaRAID target id (the N of /cX/vN), Smart Array logical drive number, arcconf number
    name: Optional[str] = None
    raid_level: Optional[str] = None  # RAID0, RAID1, RAID5, RAID6, RAID10, RAID50, RAID60, RAID1E...
    state: str = "unknown"
    state_raw: str = ""
    progress: Optional[float] = None  # rebuild (or initialisation) progress, 0-1, when printed
    size_bytes: Optional[int] = None
    current_cache: Optional[CachePolicy] = None
    default_cache: Optional[CachePolicy] = None
    disk_cache: Optional[str] = None
    os_device: Optional[str] = None  # /dev/sda when the tool names it
    members: Tuple[str, ...] = ()  # slots of its drives, as in PhysicalDrive.slot
    drive_group: Optional[str] = None  # MegaRAID DG, Smart Array array letter

    @property
    def write_back_lost(self) -> Optional[bool]:
        """The fsync cliff: configured for write-back, running write-through now. None when the
        tool gives only one of the two policies."""
        if self.current_cache is None or self.default_cache is None:
            return None
        if self.current_cache.write is None or self.default_cache.write is None:
            return None
        return bool(self.default_cache.write_back) and self.current_cache.write == WRITE_THROUGH


@dataclass(frozen=True)
class PhysicalDrive:
    controller: str
    slot: str  # "252:0" (enclosure:slot), "1I:1:1" (port:box:bay), "0,3" (channel,device)
    device_id: Optional[int] = None  # MegaRAID DID: the N of ``smartctl -d megaraid,N``
    model: Optional[str] = None
    serial: Optional[str] = None
    firmware: Optional[str] = None
    media: Optional[str] = None  # ssd, hdd
    interface: Optional[str] = None  # SAS, SATA, NVMe
    state: str = "unknown"
    state_raw: str = ""
    size_bytes: Optional[int] = None
    write_cache: Optional[bool] = None  # the drive's own volatile cache, as the controller reports it
    temperature_celsius: Optional[float] = None
    drive_group: Optional[str] = None
    location: Optional[str] = None  # where the tool says the drive sits: "Enclosure 0, Slot 3"


@dataclass(frozen=True)
class Battery:
    controller: str
    kind: str  # bbu (lithium battery), cachevault / fbwc / zmm / supercap (flash-backed), unknown
    present: bool = True
    model: Optional[str] = None
    state: str = "unknown"
    state_raw: str = ""
    charge_ratio: Optional[float] = None  # 0-1 (MegaCli relative state of charge, arcconf capacity)
    temperature_celsius: Optional[float] = None
    learn_active: Optional[bool] = None
    next_learn: Optional[str] = None  # ISO 8601 in the controller's local time, no zone: as printed
    replacement_required: Optional[bool] = None


@dataclass(frozen=True)
class ControllerReport:
    """What one or more tool calls said. Parsers of partial commands (``-LDInfo`` alone, the
    volume listing alone) fill only their part; :meth:`merged` puts the parts together."""

    controllers: Tuple[Controller, ...] = ()
    volumes: Tuple[VirtualDisk, ...] = ()
    drives: Tuple[PhysicalDrive, ...] = ()
    batteries: Tuple[Battery, ...] = ()
    notes: Tuple[str, ...] = field(default=())

    def merged(self, other: ControllerReport) -> ControllerReport:
        """Both reports' records; a record of ``other`` with the same key (controller and id,
        slot or battery kind) replaces this one's, so a detailed listing wins over a summary."""
        return ControllerReport(
            controllers=_merge(self.controllers, other.controllers, lambda c: (c.family, c.id)),
            volumes=_merge(self.volumes, other.volumes, lambda v: (v.controller, v.id)),
            drives=_merge(self.drives, other.drives, lambda d: (d.controller, d.slot)),
            batteries=_merge(self.batteries, other.batteries, lambda b: (b.controller, b.kind)),
            notes=self.notes + other.notes,
        )

    def volume(self, controller: str, volume_id: str) -> Optional[VirtualDisk]:
        return next((v for v in self.volumes if v.controller == controller and v.id == volume_id), None)

    def drive(self, controller: str, slot: str) -> Optional[PhysicalDrive]:
        return next((d for d in self.drives if d.controller == controller and d.slot == slot), None)


def _merge(mine, theirs, key):
    out = {key(r): r for r in mine}
    for record in theirs:
        out[key(record)] = record
    return tuple(out.values())
