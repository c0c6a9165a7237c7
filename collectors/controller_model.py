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

A value a tool does not print, or prints out of range, is None; a withheld value leaves a line in
:attr:`ControllerReport.notes`. Nothing here does I/O.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
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


# --------------------------------------------------------------------------- shared helpers
# Small pure functions the three parsers share: units and plausibility in one place.

_BINARY_UNITS = {"B": 1, "KB": 2**10, "MB": 2**20, "GB": 2**30, "TB": 2**40, "PB": 2**50,
                 "KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40, "PIB": 2**50}
_DECIMAL_UNITS = {"B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12, "PB": 10**15}
_SIZE = re.compile(r"^\s*(\d{1,15}(?:\.\d{1,6})?)\s*([KMGTP]i?B|B)\b", re.IGNORECASE)


def size_bytes(text: Optional[str], decimal: bool = False) -> Optional[int]:
    """``"893.750 GB"`` in bytes (None for 0). The three tools print volume and drive capacities in binary
    units (storcli's 893.750 GB for a 960 GB SSD is 960e9 / 2^30, MegaCli's ``Raw Size`` agrees
    with its sector count, arcconf's 140014 MB is 146.8e9 / 2^20); Smart Array's physical drive
    sizes are the nominal decimal ones (``decimal=True``). Rounded as the tool rounds; None when
    not a size or beyond :data:`MAX_BYTES`."""
    if not text:
        return None
    match = _SIZE.match(text)
    if match is None:
        return None
    unit = match.group(2).upper()
    # "GiB" is binary whoever prints it; a bare "GB" is binary unless the caller knows better.
    factor = _BINARY_UNITS[unit] if "I" in unit or not decimal else _DECIMAL_UNITS[unit]
    value = round(float(match.group(1)) * factor)
    # 0 is what the tools print for a missing drive or an empty slot: not a capacity.
    return value if 0 < value <= MAX_BYTES else None


def celsius(value) -> Optional[float]:
    """A temperature in degrees Celsius from ``24``, ``"24C"``, ``" 21C (69.80 F)"``,
    ``"35 C/ 95 F (Normal)"`` or ``"31 deg C"``; None when absent or impossible."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        number = float(value)
    else:
        match = re.match(r"^\s*(-?\d{1,4}(?:\.\d{1,3})?)\s*(?:deg\s*)?C\b", str(value))
        if match is None:
            return None
        number = float(match.group(1))
    if not math.isfinite(number) or not MIN_CELSIUS <= number <= MAX_CELSIUS:
        return None
    return number


def percent_ratio(text) -> Optional[float]:
    """``"97 %"``, ``"99 percent"`` or ``97`` as 0.97; None outside 0-100."""
    if isinstance(text, bool) or text is None:
        return None
    match = re.match(r"^\s*(\d{1,3}(?:\.\d{1,3})?)\s*(?:%|percent)?\s*$", str(text))
    if match is None:
        return None
    number = float(match.group(1))
    return number / 100 if 0 <= number <= 100 else None


# RAID levels the three families build (their manuals' lists); anything else is withheld.
KNOWN_RAID_LEVELS = frozenset({"RAID0", "RAID00", "RAID1", "RAID1E", "RAID1-ADM", "RAID10", "RAID10-ADM", "RAID3",
                               "RAID4", "RAID5", "RAID5EE", "RAID50", "RAID6", "RAID60"})


def known_raid_level(level: Optional[str]) -> Optional[str]:
    return level if level in KNOWN_RAID_LEVELS else None


def yes_no(text) -> Optional[bool]:
    value = str(text).strip().lower() if text is not None else ""
    if value in ("yes", "true", "on", "enabled"):
        return True
    if value in ("no", "false", "off", "disabled"):
        return False
    return None


def small_int(value, limit: int = 10**6) -> Optional[int]:
    """A non-negative integer id or count below ``limit`` (JSON number or decimal text)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if 0 <= value < limit else None
    text = str(value).strip() if value is not None else ""
    if text.isascii() and text.isdigit() and len(text) <= 12:
        number = int(text)
        return number if number < limit else None
    return None


def clean(text) -> Optional[str]:
    """A printed string, trimmed; None when empty, a placeholder or not a string."""
    if not isinstance(text, str):
        return None
    value = " ".join(text.split())
    return value if value and value not in ("-", "N/A", "NA", "None", "Unknown") else None


def with_note(report: ControllerReport, note: str) -> ControllerReport:
    return replace(report, notes=report.notes + (note,))
