"""Readers of what RAID controller tools print, shared by the three parsers (MegaRAID's storcli
and MegaCli, HPE's ssacli, Adaptec's arcconf): units, plausibility and the tools' words for
states, each in one place so that a capacity, a temperature or a battery state reads the same
whichever tool printed it. Pure functions: no I/O.

A reader returns None for a value it cannot establish (absent, a placeholder, out of range):
the record keeps None, never a guess.
"""

from __future__ import annotations

import math
import re
from dataclasses import replace
from typing import Dict, Mapping, Optional, Sequence, Tuple, Union

from collectors.controller_model import MAX_BYTES, MAX_CELSIUS, MIN_CELSIUS, ControllerReport, ParseError

# --------------------------------------------------------------------------- the output as a whole


def decode(data: Union[bytes, str], what: str) -> str:
    """The tool's output as text (a stray non-UTF-8 byte becomes U+FFFD, never an exception);
    :class:`ParseError` naming ``what`` when there is nothing to read."""
    if isinstance(data, bytes):
        data = data.decode("utf-8", errors="replace")
    if not data.strip():
        raise ParseError(f"{what}: empty output")
    return data


def with_note(report: ControllerReport, note: str) -> ControllerReport:
    return replace(report, notes=report.notes + (note,))


def first(fields: Mapping[str, str], *keys: str) -> Optional[str]:
    """The value of the first of ``keys`` present: releases of one tool name a field
    differently ("Status of logical device" / "Status of Logical Device")."""
    return next((fields[k] for k in keys if k in fields), None)


# --------------------------------------------------------------------------- words


def by_needle(word: str, table: Sequence[Tuple[str, str]], default: str = "unknown") -> str:
    """The state of the first (needle, state) row whose needle is in ``word`` (lower case);
    ``default`` when none is. Order matters: "non operational" must come before anything
    that would match inside it."""
    return next((state for needle, state in table if needle in word), default)


# Battery and flash-module states, in the words of all three families (storcli ``Optimal``,
# ``Learning``, ``Non Operational``, ``Absent``; MegaCli the same spelled out; arcconf ``Optimal``,
# ``Ready``, ``Charging``, ``Learn cycle in progress``, ``Not Installed``; ssacli ``OK``,
# ``Recharging``, ``Failed (Replace Batteries)``, ``Not Present``). "ok" is whole-word only
# (the caller's job: ssacli's ``OK``), being inside too many words.
BATTERY_WORDS: Tuple[Tuple[str, str], ...] = (
    ("non operational", "non-operational"), ("optimal", "optimal"), ("ready", "optimal"),
    ("learn", "learning"), ("charging", "charging"), ("degraded", "degraded"), ("fail", "failed"),
    ("missing", "missing"), ("absent", "missing"), ("not present", "missing"), ("not installed", "missing"),
)


def battery_state(raw: Optional[str]) -> str:
    """One of :data:`collectors.controller_model.BATTERY_STATES` for a printed battery state."""
    word = (raw or "").strip().lower()
    if word == "ok":
        return "optimal"
    return by_needle(word, BATTERY_WORDS) if word else "unknown"


def controller_status(raw: Optional[str], ok_words: Sequence[str]) -> str:
    """ok, degraded, failed or unknown for a controller's printed status; a status that is not
    one of the tool's words for healthy is at least degraded."""
    word = (clean(raw) or "").lower()
    if not word:
        return "unknown"
    if word in ok_words:
        return "ok"
    return "failed" if "fail" in word else "degraded"


def on_off(raw) -> Optional[bool]:
    """``Enabled (write-back)``, ``On``, ``Disabled``, ``Off (...)``: the leading word decides."""
    text = (clean(raw) or "").lower()
    if text.startswith(("enabled", "on")):
        return True
    if text.startswith(("disabled", "off")):
        return False
    return None


def yes_no(text) -> Optional[bool]:
    value = str(text).strip().lower() if text is not None else ""
    if value in ("yes", "true", "on", "enabled"):
        return True
    if value in ("no", "false", "off", "disabled"):
        return False
    return None


def clean(text) -> Optional[str]:
    """A printed string, trimmed; None when empty, a placeholder or not a string."""
    if not isinstance(text, str):
        return None
    value = " ".join(text.split())
    return value if value and value not in ("-", "N/A", "NA", "None", "Unknown") else None


# RAID levels the three families build (their manuals' lists); anything else is withheld.
KNOWN_RAID_LEVELS = frozenset({"RAID0", "RAID00", "RAID1", "RAID1E", "RAID1-ADM", "RAID10", "RAID10-ADM", "RAID3",
                               "RAID4", "RAID5", "RAID5EE", "RAID50", "RAID6", "RAID60"})


def known_raid_level(level: Optional[str]) -> Optional[str]:
    return level if level in KNOWN_RAID_LEVELS else None


# --------------------------------------------------------------------------- numbers and units

_BINARY_UNITS: Dict[str, int] = {"B": 1, "KB": 2**10, "MB": 2**20, "GB": 2**30, "TB": 2**40, "PB": 2**50,
                                 "KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40, "PIB": 2**50}
_DECIMAL_UNITS: Dict[str, int] = {"B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12, "PB": 10**15}
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
