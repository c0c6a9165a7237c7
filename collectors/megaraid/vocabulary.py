"""MegaRAID's words, shared by the storcli/perccli JSON parser and the MegaCli text parser.

storcli abbreviates in its tables and prints the legend under them when run without ``J``
(StorCLI Reference Manual, Broadcom doc 12352476, "Virtual Drive" and "Physical Drive" legends):

* VD state: ``Optl`` Optimal, ``OfLn`` OffLine, ``Pdgd`` Partially Degraded, ``Dgrd`` Degraded,
  ``Rec`` Recovery (a rebuild in progress);
* PD state: ``Onln`` Online, ``Offln`` Offline, ``UGood``/``UBad`` Unconfigured Good/Bad,
  ``Rbld`` Rebuild, ``DHS``/``GHS`` Dedicated/Global Hot Spare, ``Msng`` Missing,
  ``Cpybck`` Copyback, ``JBOD``;
* VD cache: ``R`` Read Ahead Always, ``NR`` No Read Ahead; ``WB`` WriteBack, ``AWB`` Always
  WriteBack (``FWB`` Force WriteBack in later legends), ``WT`` WriteThrough; ``C`` Cached IO,
  ``D`` Direct IO. ``RWBD`` is read-ahead, write-back, direct;
* disk cache (``PDC`` column): ``dflt`` Disk's Default, ``enbl`` Enabled, ``dsbl`` Disabled.

MegaCli spells the same policy out: ``WriteBack, ReadAheadNone, Direct, No Write Cache if Bad
BBU``. "No Write Cache if Bad BBU" is MegaCli's ``NoCachedBadBBU`` (``-LDSetProp
NoCachedBadBBU``): with the battery bad, learning or charging the controller runs the volume
write-through. "Write Cache OK if Bad BBU" (``CachedBadBBU``) keeps write-back with no
protection: storcli shows such a volume as ``AWB``.
"""

from __future__ import annotations

import re
from typing import Dict, Optional

from collectors.controller_model import (
    ADAPTIVE_READ_AHEAD,
    ALWAYS_WRITE_BACK,
    DISK_CACHE_DEFAULT,
    DISK_CACHE_DISABLED,
    DISK_CACHE_ENABLED,
    IO_CACHED,
    IO_DIRECT,
    NO_READ_AHEAD,
    READ_AHEAD,
    WRITE_BACK,
    WRITE_THROUGH,
    CachePolicy,
)
from collectors.controller_text import known_raid_level

VOLUME_STATES: Dict[str, str] = {
    "optl": "optimal", "optimal": "optimal",
    "dgrd": "degraded", "degraded": "degraded",
    "pdgd": "partially-degraded", "partially degraded": "partially-degraded",
    "ofln": "offline", "offline": "offline",
    "rec": "rebuilding", "recovery": "rebuilding",
    "failed": "failed",
}

DRIVE_STATES: Dict[str, str] = {
    "onln": "online", "online": "online",
    "rbld": "rebuilding", "rebuild": "rebuilding",
    "dhs": "hotspare", "ghs": "hotspare", "hotspare": "hotspare", "hot spare": "hotspare",
    "ugood": "unconfigured-good", "unconfigured(good)": "unconfigured-good",
    "ubad": "unconfigured-bad", "unconfigured(bad)": "unconfigured-bad",
    "offln": "offline", "offline": "offline",
    "failed": "failed",
    "msng": "missing", "missing": "missing",
    "jbod": "jbod",
    "cpybck": "copyback", "copyback": "copyback",
}

DISK_CACHE: Dict[str, str] = {
    "dflt": DISK_CACHE_DEFAULT, "disk's default": DISK_CACHE_DEFAULT, "default": DISK_CACHE_DEFAULT,
    "enbl": DISK_CACHE_ENABLED, "enabled": DISK_CACHE_ENABLED, "on": DISK_CACHE_ENABLED,
    "dsbl": DISK_CACHE_DISABLED, "disabled": DISK_CACHE_DISABLED, "off": DISK_CACHE_DISABLED,
}

# storcli's VD LIST "Cache" column: read part, write part, I/O part run together.
_ABBREVIATED = re.compile(r"^(?P<read>NR|R)?(?P<write>AWB|FWB|WB|WT)(?P<io>C|D)?$")
_WRITE_WORDS = {"writeback": WRITE_BACK, "writethrough": WRITE_THROUGH, "alwayswriteback": ALWAYS_WRITE_BACK,
                "wb": WRITE_BACK, "wt": WRITE_THROUGH, "awb": ALWAYS_WRITE_BACK, "fwb": ALWAYS_WRITE_BACK}
_READ_WORDS = {"readahead": READ_AHEAD, "readaheadnone": NO_READ_AHEAD, "readadaptive": ADAPTIVE_READ_AHEAD,
               "noreadahead": NO_READ_AHEAD, "ra": READ_AHEAD, "nora": NO_READ_AHEAD, "adra": ADAPTIVE_READ_AHEAD}


def state(table: Dict[str, str], raw) -> str:
    """The normalised state for a printed one; MegaCli adds ", Spun Up" and the like."""
    if not isinstance(raw, str):
        return "unknown"
    word = raw.strip().lower()
    return table.get(word) or table.get(word.split(",")[0].strip()) or "unknown"


def disk_cache(raw) -> Optional[str]:
    return DISK_CACHE.get(raw.strip().lower()) if isinstance(raw, str) else None


def abbreviated_policy(raw) -> Optional[CachePolicy]:
    """storcli's ``RWBD``, ``NRWTD``, ``RAWBC``... or None when it is not one."""
    if not isinstance(raw, str):
        return None
    match = _ABBREVIATED.match(raw.strip())
    if match is None:
        return None
    write = _WRITE_WORDS[match.group("write").lower()]
    read = {"R": READ_AHEAD, "NR": NO_READ_AHEAD}.get(match.group("read") or "")
    io = {"C": IO_CACHED, "D": IO_DIRECT}.get(match.group("io") or "")
    return CachePolicy(write=write, read=read, io=io, cache_when_bad_battery=_bad_battery(write), raw=raw.strip())


def spelled_policy(raw) -> Optional[CachePolicy]:
    """MegaCli's ``WriteBack, ReadAheadNone, Direct, No Write Cache if Bad BBU`` (and storcli's
    single word ``WriteBack`` for a volume's initial setting)."""
    if not isinstance(raw, str) or not raw.strip():
        return None
    write = read = io = None
    bad_battery: Optional[bool] = None
    for part in (p.strip().lower() for p in raw.split(",")):
        word = part.replace(" ", "")
        if word in _WRITE_WORDS:
            write = _WRITE_WORDS[word]
        elif word in _READ_WORDS:
            read = _READ_WORDS[word]
        elif word in ("direct", "cached"):
            io = IO_DIRECT if word == "direct" else IO_CACHED
        elif "if bad bbu" in part:
            bad_battery = part.startswith("write cache ok")
    if write is None:
        return None
    if write == WRITE_BACK and bad_battery:
        write = ALWAYS_WRITE_BACK  # CachedBadBBU: write-back whatever the battery does
    if write == WRITE_THROUGH:
        bad_battery = None  # nothing to protect
    elif bad_battery is None:
        bad_battery = _bad_battery(write)
    return CachePolicy(write=write, read=read, io=io, cache_when_bad_battery=bad_battery, raw=raw.strip())


def _bad_battery(write: str) -> Optional[bool]:
    # WB is write-back only while the battery is good (NoCachedBadBBU); AWB/FWB regardless.
    return {WRITE_BACK: False, ALWAYS_WRITE_BACK: True}.get(write)


def raid_level(raw) -> Optional[str]:
    """``RAID1``, ``RAID10`` from storcli's ``TYPE``; MegaCli's ``Primary-1, Secondary-0, RAID
    Level Qualifier-0`` with ``Span Depth`` > 1 is a spanned level (RAID10, 50, 60)."""
    if not isinstance(raw, str):
        return None
    text = raw.strip().upper()
    if re.fullmatch(r"RAID\d{1,2}E?", text):
        return known_raid_level(text)
    match = re.match(r"^PRIMARY-(\d{1,2}),", text)
    return known_raid_level(f"RAID{match.group(1)}") if match else None


def spanned(level: Optional[str], span_depth: Optional[int]) -> Optional[str]:
    """MegaCli names a RAID 10 ``Primary-1, Secondary-3`` (older) or ``Primary-1, Secondary-0``
    with ``Span Depth: 2``: a span of mirrors. Same for 50 and 60."""
    if level in ("RAID1", "RAID5", "RAID6") and span_depth is not None and span_depth > 1:
        return level + "0"
    return level
