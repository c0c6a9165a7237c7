"""Physical bounds every normalised figure must pass, whatever source it came from.

A figure outside these bounds cannot be true: a unit was guessed wrong, a counter is broken,
or the tool printed garbage. The normaliser then withholds the figure and records why (in the
reading's ``extra`` as ``<field>_withheld``); it never reaches history, ``/metrics`` or an
alert. The bounds are deliberately generous, so that only impossible values fail:

* host bytes written <= capacity x 100,000 (single-level-cell NAND's rated program/erase
  cycles, the highest of any flash), and <= power-on time x the link's top speed;
* when ATA Device Statistics or the NVMe log say how much of the rated life is used (a whole
  percentage, so the true share is below used + 1), host bytes <= capacity x that share x
  30,000 rated cycles (enterprise MLC) / a write amplification of 1 (0.5 on compressing
  controllers): 564 TB on a 128 GB drive 6% used would need 73,000 rated cycles;
* power-on time <= 20 years;
* counters below 2**63 (SQLite's and Prometheus's integer range; the largest real volume,
  a 100 PB drive, is 2**57 bytes).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Dict, Optional

from collectors.model import DriveReading

# Bytes per second a link can move at most, by drive kind: SATA 3 (600 MB/s), SAS-4
# (24 Gb/s: 2.4 GB/s), NVMe on PCIe 5.0 x8 (32 GB/s), a Shannon card on PCIe 3.0 x8 (8 GB/s),
# an ioMemory card on PCIe 2.0 x16 (the ioDrive Octal: 8 GB/s).
LINK_BYTES_PER_SECOND = {"ata": 600e6, "scsi": 2.4e9, "nvme": 32e9, "shannon": 8e9, "fusionio": 8e9}
MAX_DRIVE_WRITES = 100_000  # full-capacity writes over a drive's life: SLC's rated P/E
MAX_RATED_CYCLES = 30_000  # the highest rated P/E among MLC/TLC drives, for the life check
MAX_POWER_ON_SECONDS = 20 * 365.25 * 86400
MAX_COUNTER = 2**63 - 1


def bytes_problem(
    value: float,
    capacity: Optional[int],
    power_on_seconds: Optional[int],
    kind: str,
    what: str = "host bytes written",
) -> Optional[str]:
    """Why a byte volume cannot be true for this drive, or None."""
    if isinstance(value, int) and value > MAX_COUNTER:  # an int may be beyond float range
        return f"{what} ({len(str(value))} digits) is beyond any drive's lifetime (over 2**63)"
    if not math.isfinite(value) or value < 0:
        return f"{what} is {value!r}"
    if value > MAX_COUNTER:
        return f"{what} {value:.3g} is beyond any drive's lifetime (over 2**63)"
    if capacity and value > capacity * MAX_DRIVE_WRITES:
        return (f"{what} {value:.3g} is {value / capacity:,.0f} times the capacity "
                f"(at most {MAX_DRIVE_WRITES:,} full writes in a drive's life)")
    link = LINK_BYTES_PER_SECOND.get(kind)
    if link and power_on_seconds and value > power_on_seconds * link:
        return (f"{what} {value:.3g} in {power_on_seconds / 3600:,.0f} power-on hours is faster "
                f"than the link ({link / 1e6:,.0f} MB/s)")
    return None


def written_against_life_problem(
    value: float, capacity: Optional[int], used_percent: Optional[float], compressing: bool = False
) -> Optional[str]:
    """Why ``value`` bytes written cannot fit a drive that has used ``used_percent`` of its rated
    life, or None. Only used from 2% on: some firmware never moves the indicator off 0 or 1."""
    if not capacity or used_percent is None or used_percent < 2:
        return None
    share = min(used_percent + 1, 100) / 100
    floor = 0.5 if compressing else 1.0
    limit = capacity * share * MAX_RATED_CYCLES / floor
    if value > limit:
        return (f"{value:.3g} bytes written is {value / capacity:,.0f} drive writes, more than "
                f"{used_percent:g}% of any rated life allows ({limit / capacity:,.0f})")
    return None


def power_on_problem(seconds: float) -> Optional[str]:
    if isinstance(seconds, int) and seconds > MAX_POWER_ON_SECONDS:  # may be beyond float range
        return f"power-on time ({len(str(seconds))} digits of seconds) is over 20 years"
    if not math.isfinite(seconds) or seconds < 0:
        return f"power-on time {seconds!r}"
    if seconds > MAX_POWER_ON_SECONDS:
        return f"{seconds / 3600:,.0f} power-on hours is over 20 years"
    return None


def counter_problem(value: object) -> Optional[str]:
    """Why an integer counter cannot be stored or exported (None when it can)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"{value!r} is not a number"
    if isinstance(value, float) and not math.isfinite(value):
        return f"{value!r} is not finite"
    if value < 0:
        return f"{value} is negative"
    if value > MAX_COUNTER:
        return f"{value:.4g} is over 2**63" if isinstance(value, float) else f"{len(str(value))} digits is over 2**63"
    return None


_VOLUMES = ("host_written_bytes", "host_read_bytes", "nand_written_bytes")
_COUNTERS = ("media_errors", "critical_warning", "power_cycles")


def contain(reading: DriveReading) -> DriveReading:
    """The reading with every figure that cannot be true taken out, each with its reason in
    ``extra[field + "_withheld"]``: volumes within the drive's physical bounds, power-on time
    within 20 years, counters within 2**63. Every source's normaliser ends here, so no such
    value reaches history, /metrics or an alert."""
    changes: Dict[str, Any] = {}
    extra = dict(reading.extra)
    sources = dict(reading.sources)

    def withhold(name: str, why: str) -> None:
        changes[name] = None
        extra[f"{name}_withheld"] = f"{sources.pop(name, name)}: {why}"

    power_on = reading.power_on_seconds
    if power_on is not None and power_on_problem(power_on):
        withhold("power_on_seconds", power_on_problem(power_on) or "")
        power_on = None
    for name in _VOLUMES:
        value = getattr(reading, name)
        problem = None if value is None else bytes_problem(
            value, reading.capacity_bytes, power_on, reading.kind, name.replace("_", " "))
        if problem:
            withhold(name, problem)
            if name != "host_read_bytes" and reading.write_amplification is not None:
                withhold("write_amplification", f"{name} withheld")
    for name in _COUNTERS:
        value = getattr(reading, name)
        problem = None if value is None else counter_problem(value)
        if problem:
            withhold(name, problem)
    defects = {k: v for k, v in reading.defects.items() if counter_problem(v) is None}
    for name in set(reading.defects) - set(defects):
        extra[f"defect_{name}_withheld"] = counter_problem(reading.defects[name]) or ""
    if len(defects) != len(reading.defects):
        changes["defects"] = defects
    if not changes:
        return reading
    return dataclasses.replace(reading, extra=extra, sources=sources, **changes)


_MONOTONE = ("host_written_bytes", "host_read_bytes", "nand_written_bytes", "power_on_seconds", "power_cycles")
# Two readings of one counter a poll apart may differ by the rounding of the unit it is kept
# in (32 MiB, a GiB, an hour), never more backwards than that.
_BACKWARDS_SLACK = {"host_written_bytes": 2**30, "host_read_bytes": 2**30, "nand_written_bytes": 2**30,
                    "power_on_seconds": 3600, "power_cycles": 0}


def monotone(previous: Optional[DriveReading], current: DriveReading) -> DriveReading:
    """``current`` with every lifetime counter that went backwards since ``previous`` (the same
    drive's last reading from the same source) withheld: a counter that shrinks is a unit that
    changed or a broken read, and a rate or projection built on it would be wrong."""
    if previous is None or previous.identity != current.identity or previous.kind != current.kind:
        return current
    changes: Dict[str, Any] = {}
    extra = dict(current.extra)
    sources = dict(current.sources)
    for name in _MONOTONE:
        before, now = getattr(previous, name), getattr(current, name)
        if before is None or now is None or now >= before - _BACKWARDS_SLACK[name]:
            continue
        changes[name] = None
        extra[f"{name}_withheld"] = f"{sources.pop(name, name)}: went backwards from {before} to {now}"
        if name in ("host_written_bytes", "nand_written_bytes") and current.write_amplification is not None:
            changes["write_amplification"] = None
    if not changes:
        return current
    return dataclasses.replace(current, extra=extra, sources=sources, **changes)
