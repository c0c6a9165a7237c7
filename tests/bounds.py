"""Checks of readings and of /metrics against the bounds table (collectors/model.py), for tests.

Written apart from collectors/evidence.py on purpose: the normaliser applies the table, these
functions check what came out of it, so a path that skips the normaliser (or a bound the
normaliser misapplies) shows up as a violation. Each function returns the violations as text,
empty when everything is within bounds.
"""

from __future__ import annotations

import math
from typing import Dict, Iterable, List, Optional, Tuple

from prometheus_client.parser import text_string_to_metric_families

from collectors.model import (
    DEFAULT_DEFECT_BOUND,
    DEFECT_BOUNDS,
    FIGURE_BOUNDS,
    MAX_EVENTS,
    MAX_EVENTS_PER_SECOND,
    MAX_POWER_ON_SECONDS,
    Bound,
    DriveReading,
)

# Per-drive families that carry no figure: a 1 that says something exists, or a 0/1 flag.
FLAGS = frozenset({
    "ssd_drive_info", "ssd_health_data_missing", "ssd_value_withheld", "ssd_smart_healthy", "ssd_readonly",
    "ssd_write_reduced", "ssd_standby", "ssd_write_cache_state", "ssd_write_cache_enabled",
    "ssd_write_cache_expected_enabled", "ssd_write_cache_mismatch", "ssd_write_cache_flush_ignored",
    "ssd_power_loss_protection", "ssd_drive_holds_info", "ssd_drive_serial_shared",
    "ssd_selftest_last_result", "ssd_selftest_last_failed", "ssd_selftest_running",
    "ssd_ata_attribute_failing_now",
})
# Per-drive families whose bound is not a field of the model: the age of the data at the scrape.
OTHER_DRIVE_FAMILIES = {"ssd_data_age_seconds": (0.0, 2.0**33),
                        # issue 30, collectors/smart_logs.py: a stamp within the power-on time; at most
                        # the 21 entries of an ATA log; error counts as the defect events' bound
                        "ssd_selftest_last_age_seconds": (0.0, MAX_POWER_ON_SECONDS),
                        "ssd_selftest_failed_entries": (0.0, 21.0),
                        "ssd_error_log_entries_total": (0.0, float(MAX_EVENTS)),
                        "ssd_scsi_uncorrected_errors_total": (0.0, float(MAX_EVENTS)),
                        # the SCT temperature history (collectors/smartctl/scttemp.py): at most 478
                        # entries of at most 65,535 minutes; temperatures as every sensor's
                        "ssd_temperature_history_window_seconds": (0.0, 478 * 65535 * 60.0),
                        "ssd_temperature_history_above_limit_seconds": (0.0, 478 * 65535 * 60.0),
                        "ssd_temperature_history_max_celsius": (-40.0, 150.0),
                        "ssd_temperature_critical_limit_celsius": (-40.0, 150.0),
                        # opt in (smartctl.all_attributes): one byte each, smartctl's raw value 64 bits
                        "ssd_ata_attribute_value": (0.0, 255.0), "ssd_ata_attribute_worst": (0.0, 255.0),
                        "ssd_ata_attribute_threshold": (0.0, 255.0),
                        "ssd_ata_attribute_raw": (0.0, float(2**64 - 1))}
_VOLUME_WRITES = 100_000  # evidence.MAX_DRIVE_WRITES: full-capacity writes in a drive's life


def _by_metric() -> Dict[str, Bound]:
    out: Dict[str, Bound] = {}
    for bound in FIGURE_BOUNDS.values():
        for name in bound.metrics:
            if name:
                out[name] = bound
    return out


METRIC_BOUNDS = _by_metric()


def value_violation(bound: Bound, value: object, what: str) -> Optional[str]:
    """The absolute bound: type, finiteness, range and the all-ones sentinels."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"{what}: {value!r} is not a number"
    if isinstance(value, float) and not math.isfinite(value):
        return f"{what}: {value!r} is not finite"
    if bound.integer and isinstance(value, float) and not value.is_integer():
        return f"{what}: {value!r} is not a whole number"
    for bits in bound.sentinel_bits:
        if value == 2**bits - 1 or (isinstance(value, float) and value == float(2**bits - 1)):
            return f"{what}: {value!r} is the all-ones {bits}-bit value"
    if value < bound.low or (bound.low_exclusive and value == bound.low) or value > bound.high:
        return f"{what}: {value!r} outside {bound.low!r}..{bound.high!r} {bound.unit}"
    return None


def relative_violation(bound: Bound, value: float, capacity: Optional[float], power_on: Optional[float],
                       what: str) -> Optional[str]:
    if bound.relative == "sectors" and capacity and value > 2 * capacity / 512:
        return f"{what}: {value!r} is more sectors than a drive of {capacity!r} bytes has"
    if bound.relative == "events" and power_on is not None and value > (power_on + 3600) * MAX_EVENTS_PER_SECOND:
        return f"{what}: {value!r} events in {power_on!r} s of power-on"
    if bound.relative == "volume" and capacity and value > capacity * _VOLUME_WRITES:
        return f"{what}: {value!r} bytes is over {_VOLUME_WRITES:,} writes of {capacity!r} bytes"
    return None


def reading_violations(reading: DriveReading) -> List[str]:
    """Every figure of ``reading`` that is outside its bound."""
    out: List[Optional[str]] = []
    capacity, power_on = reading.capacity_bytes, reading.power_on_seconds
    for key, bound in FIGURE_BOUNDS.items():
        cls, name = key.split(".", 1)
        if cls != "DriveReading" or name == "defects":
            continue
        value = getattr(reading, name)
        if value is None:
            continue
        problem = value_violation(bound, value, name)
        if problem is None and isinstance(value, (int, float)):
            problem = relative_violation(bound, value, capacity, power_on, name)
        out.append(problem)
    for kind, count in reading.defects.items():
        bound = DEFECT_BOUNDS.get(kind, DEFAULT_DEFECT_BOUND)
        out.append(value_violation(bound, count, f"defect {kind}")
                   or relative_violation(bound, count, capacity, power_on, f"defect {kind}"))
    for t in reading.temperatures:
        for name in ("celsius", "max_celsius", "limit_celsius"):
            value = getattr(t, name)
            if value is not None:
                out.append(value_violation(FIGURE_BOUNDS[f"Temperature.{name}"], value, f"{t.sensor} {name}"))
    for v in reading.voltages:
        for name in ("volts", "max_volts"):
            value = getattr(v, name)
            if value is not None:
                out.append(value_violation(FIGURE_BOUNDS[f"Voltage.{name}"], value, f"{v.rail} {name}"))
    return [p for p in out if p]


def _samples(text: str) -> Iterable[Tuple[str, str, Dict[str, str], float]]:
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            yield family.name, sample.name, dict(sample.labels), float(sample.value)


def metrics_violations(text: str) -> Tuple[List[str], int]:
    """Every sample of a /metrics body outside its bound, and how many samples were checked.

    A per-drive sample (one with ``device`` and ``serial`` labels) must belong to a family the
    bounds table names (checked against its bound, and against the drive's exported capacity
    and power-on time where its bound is relative) or to :data:`FLAGS` (0 or 1); any other
    sample must be finite."""
    samples = list(_samples(text))
    per_drive: Dict[Tuple[str, str], Dict[str, float]] = {}
    for _family, name, labels, value in samples:
        if "device" in labels and "serial" in labels and name in (
                "ssd_capacity_bytes", "ssd_power_on_seconds_total"):
            per_drive.setdefault((labels["device"], labels["serial"]), {})[name] = value
    out: List[str] = []
    for family, name, labels, value in samples:
        what = f"{name}{labels}"
        if "device" not in labels or "serial" not in labels:
            if not math.isfinite(value):
                out.append(f"{what}: {value!r} is not finite")
            continue
        drive = per_drive.get((labels["device"], labels["serial"]), {})
        if family in FLAGS:
            if value not in (0.0, 1.0):
                out.append(f"{what}: {value!r} is not 0 or 1")
            continue
        if name in OTHER_DRIVE_FAMILIES:
            low, high = OTHER_DRIVE_FAMILIES[name]
            if not (math.isfinite(value) and low <= value <= high):
                out.append(f"{what}: {value!r} outside {low}..{high}")
            continue
        bound = (DEFECT_BOUNDS.get(labels.get("type", ""), DEFAULT_DEFECT_BOUND) if name == "ssd_defects"
                 else METRIC_BOUNDS.get(name))
        if bound is None:
            out.append(f"{what}: a per-drive family with no bound in collectors.model.FIGURE_BOUNDS")
            continue
        problem = value_violation(bound, value, what) or relative_violation(
            bound, value, drive.get("ssd_capacity_bytes"), drive.get("ssd_power_on_seconds_total"), what)
        if problem:
            out.append(problem)
    return out, len(samples)
