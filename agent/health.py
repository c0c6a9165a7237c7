"""The health rules, once: every threshold and flag rule the page, ``ssdfleet status``,
``/api/v1/drives`` and ``/metrics`` apply to a drive.

The shipped alert rules (deploy/prometheus/ssdfleet-alerts.yml) say the same in PromQL;
tests/test_health_rules.py reads them and fails when a threshold here and there part, so the
page never calls a drive OK that Alertmanager pages about, or the other way round.
docs/runbooks.md explains each threshold.

Pure functions of values already read: nothing here does I/O.
"""

from __future__ import annotations

from typing import Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from agent.text import percent
from collectors import registry
from collectors.model import (
    CACHE_DISABLED,
    CACHE_ENABLED,
    CACHE_SOURCE_HDPARM,
    CACHE_SOURCE_NVME,
    CACHE_SOURCE_SCSI_CACHE_TYPE,
    CACHE_SOURCE_SMARTCTL,
    CACHE_SOURCE_SYSFS_QUEUE,
    CACHE_UNKNOWN,
    CACHE_UNSUPPORTED,
    DriveReading,
    WriteCacheState,
)

# -- severities (the Nagios plugin order: a worse one has a higher rank) ----------------------

OK, WARNING, CRITICAL = "ok", "warning", "critical"
_RANK = {OK: 0, WARNING: 1, CRITICAL: 2}


def severity_rank(severity: str) -> int:
    return _RANK.get(severity, 0)


def worst_severity(severities: Iterable[str]) -> str:
    """The worst of ``severities``; OK for none."""
    return max(severities, key=severity_rank, default=OK)


# -- life left (SSDLifeLeftLow, SSDLifeLeftCritical) ------------------------------------------

LIFE_WARNING_RATIO = 0.10  # below: order a replacement (a ticket)
LIFE_CRITICAL_RATIO = 0.03  # below: move the data off now (a page)


def life_severity(ratio: Optional[float]) -> Optional[str]:
    """CRITICAL below 3 % life left, WARNING below 10 %, else OK; None when not reported."""
    if ratio is None:
        return None
    if ratio < LIFE_CRITICAL_RATIO:
        return CRITICAL
    if ratio < LIFE_WARNING_RATIO:
        return WARNING
    return OK


# -- projected wear-out (SSDWearOutWithin30Days, SSDWearOutWithin7Days) -----------------------

DAY_SECONDS = 86400.0
WEAROUT_WARNING_DAYS = 30
WEAROUT_CRITICAL_DAYS = 7


def wearout_severity(wearout_timestamp: Optional[float], now: float) -> Optional[str]:
    """CRITICAL when the projected wear-out is less than 7 days away (or past), WARNING when
    less than 30; else OK; None without a projected date."""
    if wearout_timestamp is None:
        return None
    days = (wearout_timestamp - now) / DAY_SECONDS
    if days < WEAROUT_CRITICAL_DAYS:
        return CRITICAL
    if days < WEAROUT_WARNING_DAYS:
        return WARNING
    return OK


# -- watch: nothing alerts yet, but the replacement should be planned --------------------------
#
# The page and ``ssdfleet status`` call an OK drive "watch" when it is in the last fifth of its
# life or its projected wear-out is within half a year: long enough ahead to budget and order a
# replacement (no alert rule fires on either; the alerts start at 10% and 30 days).
WATCH_LIFE_RATIO = 0.20
WATCH_WEAROUT_DAYS = 180


def watch_reasons(life_left_ratio: Optional[float], wearout_timestamp: Optional[float],
                  now: float, life_disagreement: Optional[str] = None) -> List[str]:
    """Why an otherwise OK drive is worth watching, in words; empty when it is not.
    ``life_disagreement``: the reading's note that its life figures are further apart than
    collectors.model.LIFE_LEFT_SPREAD_MARGIN (issue 29): a drive that contradicts itself about
    its wear is worth a look before either figure is trusted for a replacement date."""
    reasons = []
    if life_disagreement:
        reasons.append(f"its life figures disagree: {life_disagreement}")
    if life_left_ratio is not None and LIFE_WARNING_RATIO <= life_left_ratio < WATCH_LIFE_RATIO:
        reasons.append(f"life left {percent(life_left_ratio)}, below {WATCH_LIFE_RATIO:.0%}: plan its replacement")
    if wearout_timestamp is not None:
        days = (wearout_timestamp - now) / DAY_SECONDS
        if WEAROUT_WARNING_DAYS <= days < WATCH_WEAROUT_DAYS:
            reasons.append(f"projected wear-out in {days:.0f} days, within {WATCH_WEAROUT_DAYS}")
    return reasons


# -- spare (SSDSpareBelowThreshold) -----------------------------------------------------------

def spare_exhausted(spare_left_ratio: Optional[float], spare_threshold_ratio: Optional[float]) -> bool:
    """The drive's spare is at or below the drive's own warning threshold (NVMe Available
    Spare Threshold, a vendor's reserve limit). False when either is unknown."""
    return (spare_left_ratio is not None and spare_threshold_ratio is not None
            and spare_left_ratio <= spare_threshold_ratio)


# -- temperature (SSDTemperatureAboveLimit, SSDTemperatureHigh) -------------------------------

# Against the drive's own limit (or one from temperature_limits in the configuration): at or
# above it is hot. The NVMe base spec sets critical warning bit 1 when a temperature is
# "greater than or equal to an over temperature threshold".
#
# Sensors without any limit get a fixed ceiling: the usual top of an SSD's operating range
# for the drive and NAND sensors; controller and board sensors run hotter in normal service
# (a Shannon controller at 71-77 degC under load is healthy). Above it is hot.
CEILING_SENSORS = ("drive", "flash")
SENSOR_CEILING_CELSIUS = 70.0
OTHER_SENSOR_CEILING_CELSIUS = 90.0


def temperature_ceiling(sensor: str) -> float:
    """The fixed ceiling for a sensor that reports no limit."""
    return SENSOR_CEILING_CELSIUS if sensor in CEILING_SENSORS else OTHER_SENSOR_CEILING_CELSIUS


def above_limit(celsius: float, limit_celsius: Optional[float]) -> bool:
    """At or above the drive's (or the configuration's) limit; False without a limit."""
    return limit_celsius is not None and celsius >= limit_celsius


# At or above the drive's own limit the drive throttles or stops (NVMe warning composite
# temperature, a configured limit): SSDTemperatureAboveLimit pages. Above the fixed ceiling of
# a sensor with no limit of its own, SSDTemperatureHigh is a ticket.
ABOVE_LIMIT_SEVERITY = CRITICAL
ABOVE_CEILING_SEVERITY = WARNING


def above_ceiling(sensor: str, celsius: float, limit_celsius: Optional[float]) -> bool:
    """Above the fixed ceiling, for a sensor without a limit of its own (with one, the limit
    decides: :func:`above_limit`)."""
    return limit_celsius is None and celsius > temperature_ceiling(sensor)


def temperature_hot(sensor: str, celsius: float, limit_celsius: Optional[float]) -> bool:
    return above_limit(celsius, limit_celsius) or above_ceiling(sensor, celsius, limit_celsius)


def temperature_severity(sensor: str, celsius: float, limit_celsius: Optional[float]) -> Optional[str]:
    """The flag a sensor reading raises: at or above its limit, above the fixed ceiling of a
    sensor without one, or None."""
    if above_limit(celsius, limit_celsius):
        return ABOVE_LIMIT_SEVERITY
    if above_ceiling(sensor, celsius, limit_celsius):
        return ABOVE_CEILING_SEVERITY
    return None


# -- freshness (SSDFleetDataStale) ------------------------------------------------------------

# The collectors whose answer is a health reading: the sources whose spec declares the health
# role (collectors/source.py). A supplement (a vendor log adding NAND figures), a host-wide
# probe or an annotation (write cache, diskstats, holders) says nothing about whether the
# drive's wear and error figures are current: counting one would let an hour-old SMART
# reading pass as fresh while smartctl fails (issue 27).
HEALTH_SOURCES = registry.HEALTH_SOURCES
# Four SMART poll intervals of 300 s. A drive in standby is not woken for a poll (by design),
# so its data ages without anything being wrong.
STALE_WARNING_SECONDS = 1200.0


def health_data_time(last_poll: Mapping[str, float]) -> Optional[float]:
    """When the drive's newest health reading was taken; None when no health source has ever
    answered for it (its health is unknown, which is not OK)."""
    times = [last_poll[c] for c in HEALTH_SOURCES if c in last_poll]
    return max(times) if times else None


def data_stale(age_seconds: Optional[float], power_state: Optional[str]) -> bool:
    return age_seconds is not None and age_seconds > STALE_WARNING_SECONDS and power_state != "standby"


# -- the drive's own verdicts (SSDReadOnly, SSDWriteReduced, SSDNVMeCriticalWarning) ----------

def is_readonly(reading: DriveReading) -> Optional[bool]:
    """The drive has put itself in read-only mode; None when it reports neither."""
    if reading.access_mode is None and reading.readonly is None:
        return None
    return bool(reading.readonly) or reading.access_mode == "readonly"


def is_write_reduced(reading: DriveReading) -> Optional[bool]:
    """The drive throttles writes to protect itself; None for drives without such a mode
    (only Shannon cards report one)."""
    return None if reading.access_mode is None else reading.access_mode == "reduced_write"


# NVMe base spec, SMART / Health Information log, byte 0 (Critical Warning), by bit.
NVME_WARNING_BITS: Tuple[Tuple[int, str], ...] = (
    (0, "spare"),
    (1, "temperature"),
    (2, "reliability"),
    (3, "readonly"),
    (4, "volatile_backup"),
    (5, "pmr_readonly"),
)


def critical_warning_bits(value: Optional[int]) -> List[str]:
    """Names of the NVMe critical-warning bits set in ``value``."""
    if not value:
        return []
    return [name for bit, name in NVME_WARNING_BITS if (value >> bit) & 1]


# -- write cache (SSDWriteCacheDisabled, SSDWriteCacheUnexpectedlyEnabled) --------------------

# Which answer wins in effective_write_cache(), best first. The drive's own answer comes first:
# the kernel's view can be wrong in both directions. A USB/SAS bridge without a caching mode
# page makes sd assume "write through" while the drive caches; writing "write through" to
# queue/write_cache stops the kernel's flushes but leaves the drive's cache on. cache_type
# ranks above queue/write_cache because it is the drive's mode page as sd read it, whereas
# queue/write_cache can be overridden by hand and, for NVMe, only says a cache exists.
WRITE_CACHE_SOURCE_PRIORITY: Tuple[str, ...] = (
    CACHE_SOURCE_HDPARM,
    CACHE_SOURCE_NVME,
    CACHE_SOURCE_SMARTCTL,
    CACHE_SOURCE_SCSI_CACHE_TYPE,
    CACHE_SOURCE_SYSFS_QUEUE,
)


def effective_write_cache(states: Sequence[WriteCacheState]) -> str:
    """The one write cache state to show and export: the best-ranked source that gave a known
    answer.

    Ranking is WRITE_CACHE_SOURCE_PRIORITY (the drive's own answer over the kernel's, see
    there); within a source the first known answer wins; sources not in the ranking come last.
    Unknown answers are skipped. Returns CACHE_UNKNOWN when no source could tell.
    """
    rank: Dict[str, int] = {source: i for i, source in enumerate(WRITE_CACHE_SOURCE_PRIORITY)}
    best: Optional[Tuple[int, int, str]] = None
    for order, item in enumerate(states):
        if item.state == CACHE_UNKNOWN:
            continue
        key = (rank.get(item.source, len(WRITE_CACHE_SOURCE_PRIORITY)), order, item.state)
        if best is None or key < best:
            best = key
    return best[2] if best is not None else CACHE_UNKNOWN


def known_write_cache(states: Sequence[WriteCacheState]) -> Optional[str]:
    """:func:`effective_write_cache` when it is a known state (enabled, disabled or not
    supported), else None."""
    state = effective_write_cache(states)
    return state if state in (CACHE_ENABLED, CACHE_DISABLED, CACHE_UNSUPPORTED) else None


def write_cache_mismatch_severity(effective: str) -> str:
    """How bad a broken expectation is: a cache that is off where it should be on costs every
    commit its fast path (SSDWriteCacheDisabled pages); one that is on where it should be off
    risks acknowledged writes on a drive without power-loss protection, which the operator
    chose to run cache-off (SSDWriteCacheUnexpectedlyEnabled is a ticket; the flush-integrity
    alert pages for the dangerous case)."""
    return WARNING if effective == CACHE_ENABLED else CRITICAL


def write_cache_mismatch(effective: str, expected: Optional[str]) -> Optional[bool]:
    """Whether the effective state breaks the configured expectation.

    None when there is no expectation or the state is unknown (cannot tell, which is not the
    same as "fine"). A drive with no volatile cache meets an expectation of "disabled" (nothing
    can be lost) and breaks one of "enabled" (the fast fsync path is not there).
    Raises ValueError for an expectation other than enabled/disabled.
    """
    if expected is None:
        return None
    if expected not in (CACHE_ENABLED, CACHE_DISABLED):
        raise ValueError(f"expected write cache state must be enabled or disabled, not {expected!r}")
    if effective == CACHE_UNKNOWN:
        return None
    if effective == CACHE_UNSUPPORTED:
        return expected == CACHE_ENABLED
    return effective != expected


# -- flush integrity (SSDWriteCacheFlushIgnored) ----------------------------------------------

def flush_unprotected(flush_ignored: Optional[bool], power_loss_protection: Optional[bool]) -> bool:
    """The kernel sends no FLUSH while the drive caches writes (agent/durability.py), and the
    drive is not known to have power-loss protection: a drive with it may run so."""
    return bool(flush_ignored) and power_loss_protection is not True


# -- self-tests (SSDSelfTestFailed, deploy/prometheus/ssdfleet-selftest-alerts.yml) -----------

# collectors.smart_logs.FAILED: the result of a self-test that found a fault (read, electrical,
# servo, handling damage, a failed NVMe segment, a fatal error). Aborted and interrupted tests
# found nothing: they are not failures.
SELFTEST_FAILED = "failed"


def selftest_failed(logs) -> Optional[bool]:
    """Whether the drive's newest finished self-test failed (the page, as smartd mails it);
    None when the drive's log holds no finished test. ``logs``: DriveReading.smart_logs."""
    last = None if logs is None else logs.last_test
    if last is None:
        return None
    return last.result == SELFTEST_FAILED


def selftest_reason(logs) -> Optional[str]:
    """The failed last self-test in words, for the drive's reasons; None when it did not fail."""
    if not selftest_failed(logs):
        return None
    last = logs.last_test
    at = f" at power-on hour {last.power_on_hours:,}" if last.power_on_hours is not None else ""
    lba = f", first failing LBA {last.failing_lba}" if last.failing_lba is not None else ""
    return f"last self-test failed: {last.description or 'self-test'}{at}: {last.status}{lba}"


# -- self-tests overdue (SSDSelfTestOverdue, deploy/prometheus/ssdfleet-selftest-alerts.yml) -

# The self-test scheduler (collectors/selftest/) exports, per drive and test type, its schedule's
# period (a day for the daily short test, a week for the weekly long one) and when the newest
# test of the type ran to its end (or when the schedule began covering the drive). One missed
# window is tolerated (a night the drive was busy throughout: the scheduler retries the next
# one); a second one opens a ticket. The grace covers a test late in its window following one
# early in it (the default window is 4 hours).
SELFTEST_OVERDUE_PERIODS = 2
SELFTEST_OVERDUE_GRACE_SECONDS = 6 * 3600


def selftest_overdue(last_completed: Optional[float], period_seconds: Optional[float], now: float) -> Optional[bool]:
    """Whether a scheduled test type is overdue on a drive: more than two of its schedule's
    periods and the grace have passed since the newest test of the type ran to its end. None
    without a schedule (the scheduler is off, or the type is not scheduled)."""
    if last_completed is None or period_seconds is None:
        return None
    return now - last_completed > SELFTEST_OVERDUE_PERIODS * period_seconds + SELFTEST_OVERDUE_GRACE_SECONDS
