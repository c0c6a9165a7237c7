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
* every other figure within its entry in collectors.model.FIGURE_BOUNDS, which names the
  standard or fact each bound comes from: capacity above 0 and at most 2**57 bytes, ratios
  0..1, the NVMe critical-warning byte 0..255, counters not negative, a counter whose value is
  all ones in a 16-, 32-, 48- or 64-bit field withheld as "not reported" (firmware's
  "not available"), counts of defective sectors at most the sectors the drive has, error
  counts at most 10**7 a second of power-on time, temperatures -40..150 C, voltages 0..15 V;
* counters below 2**63 (SQLite's and Prometheus's integer range).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, List, Optional, Tuple

from collectors import numbers
from collectors.model import (
    FIGURE_BOUNDS,
    MAX_COUNTER,
    MAX_EVENTS_PER_SECOND,
    MAX_POWER_ON_SECONDS,
    Bound,
    DriveReading,
    figure_bound,
)
from collectors.numbers import is_finite, show

# Bytes per second a link can move at most, by drive kind: SATA 3 (600 MB/s), SAS-4
# (24 Gb/s: 2.4 GB/s), NVMe on PCIe 5.0 x8 (32 GB/s), a Shannon card on PCIe 3.0 x8 (8 GB/s),
# an ioMemory card on PCIe 2.0 x16 (the ioDrive Octal: 8 GB/s).
LINK_BYTES_PER_SECOND = {"ata": 600e6, "scsi": 2.4e9, "nvme": 32e9, "shannon": 8e9, "fusionio": 8e9}
MAX_DRIVE_WRITES = 100_000  # full-capacity writes over a drive's life: SLC's rated P/E
MAX_RATED_CYCLES = 30_000  # the highest rated P/E among MLC/TLC drives, for the life check
__all__ = ["MAX_COUNTER", "MAX_POWER_ON_SECONDS", "admit", "bytes_problem", "contain", "counter_problem", "figure_problem",
           "events_per_second", "monotone", "power_on_problem", "relative_problem", "written_against_life_problem"]


def bytes_problem(
    value: float,
    capacity: Optional[int],
    power_on_seconds: Optional[int],
    kind: str,
    what: str = "host bytes written",
) -> Optional[str]:
    """Why a byte volume cannot be true for this drive, or None."""
    if not is_finite(value) or value < 0:
        return f"{what} is {show(value)}"
    if value > MAX_COUNTER:  # compared as an int: it may be beyond float range
        return f"{what} {show(value)} is beyond any drive's lifetime (over 2**63)"
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
    if not is_finite(seconds) or seconds < 0:
        return f"power-on time {show(seconds)}"
    if isinstance(seconds, int) and seconds > MAX_POWER_ON_SECONDS * 10:  # may be beyond float range
        return f"power-on time of {show(seconds)} seconds is over 20 years"
    if seconds > MAX_POWER_ON_SECONDS:
        return f"{seconds / 3600:,.0f} power-on hours is over 20 years"
    return None


def counter_problem(value: object) -> Optional[str]:
    """Why an integer counter cannot be stored or exported (None when it can)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"{_show(value)} is not a number"
    if not is_finite(value):
        return f"{value!r} is not finite"
    if value < 0:
        return f"{show(value)} is negative"
    if value > MAX_COUNTER:
        return f"{show(value)} is over 2**63"
    return None


def _show(value: object) -> str:
    return show(value) if isinstance(value, (int, float)) else numbers.quote(repr(value))


def figure_problem(bound: Bound, value: object) -> Optional[str]:
    """Why ``value`` cannot be a reading of a figure with ``bound``, by the figure alone (its
    type, finiteness, range and the all-ones sentinels of its field widths), or None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"{_show(value)} is not a number"
    if not is_finite(value):
        return f"{value!r} is not finite"
    if bound.integer and not isinstance(value, int):
        return f"{value!r} is not a whole number ({bound.unit})"
    for bits in bound.sentinel_bits:
        if value == 2**bits - 1:
            return (f"not reported: {show(value)} has all {bits} bits set, the value firmware gives for "
                    f"'not available' (and where a saturated counter stops), not a {bound.unit}")
    if value < bound.low or (bound.low_exclusive and value == bound.low):
        return f"{_amount(value, bound)} is {'negative' if value < 0 else 'not a reading'} ({bound.spec})"
    if value > bound.high:
        return f"{_amount(value, bound)} is over {show_bound(bound.high)} ({bound.spec})"
    return None


def _amount(value: float, bound: Bound) -> str:
    """``500 bytes``, ``4096`` (a count or a bit field), ``a 3,240-digit number``."""
    text = show(value)
    if text.startswith("a ") or bound.unit in ("count", "bit field", "status", "ratio"):
        return text
    return f"{text} {bound.unit}"


def admit(name: str, value: Any, extra: Dict[str, str], source: str) -> Any:
    """``value`` for the DriveReading field ``name`` when it is within its bound by itself, else
    None with the reason in ``extra[name + "_withheld"]``. For the figures a normaliser computes
    with (capacity, power-on time, sector size) before :func:`contain` sees the reading: an
    impossible one must not feed other figures' checks (nor overflow a float on the way)."""
    if value is None:
        return None
    problem = figure_problem(FIGURE_BOUNDS[f"DriveReading.{name}"], value)
    if problem:
        extra[f"{name}_withheld"] = f"{source}: {problem}"
        return None
    return value


def show_bound(limit: float) -> str:
    """A bound for a message: 2**57 as ``2**57``, 255 as ``255``."""
    if limit >= 2**20 and float(limit).is_integer():
        exact = int(limit)
        for bits in range(20, 80):
            if exact in (2**bits, 2**bits - 1):
                return f"2**{bits}" if exact == 2**bits else f"2**{bits} - 1"
    return f"{limit:,.6g}" if isinstance(limit, float) and not float(limit).is_integer() else f"{int(limit):,}"


def events_per_second(kind: str) -> float:
    """The most errors a drive of ``kind`` can count a second: each is one command or transfer
    of at least a 512-byte sector over its link (SATA: 1.2 million a second), and never more
    than collectors.model.MAX_EVENTS_PER_SECOND."""
    link = LINK_BYTES_PER_SECOND.get(kind)
    return min(float(MAX_EVENTS_PER_SECOND), link / 512) if link else float(MAX_EVENTS_PER_SECOND)


def relative_problem(bound: Bound, value: float, capacity: Optional[int], power_on_seconds: Optional[int],
                     kind: str = "") -> Optional[str]:
    """Why ``value`` cannot be true against the drive's capacity and power-on time (the
    ``sectors`` and ``events`` bounds of collectors.model.Bound), or None."""
    if bound.relative == "sectors" and capacity:
        sectors = 2 * capacity // 512
        if value > sectors:
            return (f"{show(value)} is more sectors than the drive has "
                    f"(at most {sectors:,}: twice its {capacity:,} bytes / 512)")
    if bound.relative == "events" and power_on_seconds is not None:
        rate = events_per_second(kind)
        if value > (power_on_seconds + 3600) * rate:  # an hour's slack: power-on is counted in hours
            return (f"{show(value)} errors in {power_on_seconds / 3600:,.0f} power-on hours is over "
                    f"{rate:,.0f} a second, more than the link can carry commands")
    return None


_VOLUMES = ("host_written_bytes", "host_read_bytes", "nand_written_bytes")
# Figures checked first: the relative bounds of the others are taken against them.
_FIRST = ("capacity_bytes", "power_on_seconds")


def _scalar_fields() -> Tuple[str, ...]:
    names = [k.split(".", 1)[1] for k in FIGURE_BOUNDS if k.startswith("DriveReading.")]
    return tuple(_FIRST) + tuple(n for n in names if n not in _FIRST and n != "defects")


class _Containment:
    """The changes :func:`contain` makes to one reading, with their reasons."""

    def __init__(self, reading: DriveReading) -> None:
        self.reading = reading
        self.changes: Dict[str, Any] = {}
        self.extra = dict(reading.extra)
        self.sources = dict(reading.sources)

    def value(self, name: str) -> Any:
        return self.changes[name] if name in self.changes else getattr(self.reading, name)

    def withhold(self, name: str, why: str) -> None:
        self.changes[name] = None
        self.extra[f"{name}_withheld"] = f"{self.sources.pop(name, name)}: {why}"

    def scalars(self) -> None:
        for name in _scalar_fields():
            value = self.value(name)
            if value is None:
                continue
            bound = FIGURE_BOUNDS[f"DriveReading.{name}"]
            problem = None
            if name in _VOLUMES and isinstance(value, (int, float)) and not isinstance(value, bool):
                problem = bytes_problem(value, self.value("capacity_bytes"), self.value("power_on_seconds"),
                                        self.reading.kind, name.replace("_", " "))
            elif name == "power_on_seconds" and isinstance(value, (int, float)) and not isinstance(value, bool):
                problem = power_on_problem(value)
            problem = problem or figure_problem(bound, value) or relative_problem(
                bound, value, self.value("capacity_bytes"), self.value("power_on_seconds"), self.reading.kind)
            if problem:
                self.withhold(name, problem)
                if name in ("host_written_bytes", "nand_written_bytes") and self.value("write_amplification") is not None:
                    self.withhold("write_amplification", f"{name} withheld")

    def defects(self) -> None:
        kept: Dict[str, int] = {}
        for kind, count in self.reading.defects.items():
            bound = figure_bound("DriveReading.defects", kind)
            problem = figure_problem(bound, count) or relative_problem(
                bound, count, self.value("capacity_bytes"), self.value("power_on_seconds"), self.reading.kind)
            if problem:
                self.extra[f"defect_{kind}_withheld"] = problem
            else:
                kept[kind] = count
        if len(kept) != len(self.reading.defects):
            self.changes["defects"] = kept

    def sensors(self) -> None:
        """Temperatures and voltages: a sensor whose current value is impossible is left out;
        an impossible maximum or limit is dropped from a sensor that is kept."""
        why: List[str] = []
        temperatures = []
        for t in self.reading.temperatures:
            problem = figure_problem(FIGURE_BOUNDS["Temperature.celsius"], t.celsius)
            if problem:
                why.append(f"{t.sensor}: {problem}")
                continue
            changes = {}
            for name in ("max_celsius", "limit_celsius"):
                value = getattr(t, name)
                bad = value is not None and figure_problem(FIGURE_BOUNDS[f"Temperature.{name}"], value)
                if bad:
                    why.append(f"{t.sensor} {name}: {bad}")
                    changes[name] = None
            temperatures.append(dataclasses.replace(t, **changes) if changes else t)
        if why:
            self.changes["temperatures"] = tuple(temperatures)
            self.extra["temperatures_withheld"] = "; ".join(why)
        why = []
        voltages = []
        for v in self.reading.voltages:
            problem = figure_problem(FIGURE_BOUNDS["Voltage.volts"], v.volts)
            if problem:
                why.append(f"{v.rail}: {problem}")
                continue
            bad = v.max_volts is not None and figure_problem(FIGURE_BOUNDS["Voltage.max_volts"], v.max_volts)
            if bad:
                why.append(f"{v.rail} max_volts: {bad}")
                v = dataclasses.replace(v, max_volts=None)
            voltages.append(v)
        if why:
            self.changes["voltages"] = tuple(voltages)
            self.extra["voltages_withheld"] = "; ".join(why)


def contain(reading: DriveReading) -> DriveReading:
    """The reading with every figure that cannot be true taken out, each with its reason in
    ``extra[field + "_withheld"]`` (``defect_TYPE_withheld``, ``temperatures_withheld``,
    ``voltages_withheld``): every figure within its bound in collectors.model.FIGURE_BOUNDS
    (type, range, the all-ones "not available" values of its field widths), counts of defective
    sectors within the drive's size, error counts within its power-on time, and volumes within
    its physical bounds. Every source's normaliser ends here, so no such value reaches history,
    /metrics or an alert."""
    work = _Containment(reading)
    work.scalars()
    work.defects()
    work.sensors()
    if not work.changes:
        return reading
    return dataclasses.replace(reading, extra=work.extra, sources=work.sources, **work.changes)


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
