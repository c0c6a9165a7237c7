"""What a drive's own logs say (issue 30): its self-test log, its error logs and, for SCSI,
its error counters. The records here are what the parsers give (collectors/smartctl/logs.py);
the bounds each figure must pass are beside them, with the standard they come from.

* ATA self-test log (ACS-3 SMART READ LOG 06h / GP log 07h): up to 21 entries, newest first,
  each with the self-test execution status byte (high nibble: the result, low nibble: the
  remaining tenths), the life timestamp in power-on hours (16 bits: it wraps at 65,536) and the
  LBA of the first failure (28 bits in the summary log, 48 in the extended one).
* NVMe Device Self-test log (log page 06h): up to 20 results, newest first, the power-on hours
  at the test (64 bits) and the failing LBA when the controller gives one.
* ATA SMART error log (log 01h, "ATA Error Count") or extended comprehensive error log (03h,
  "Device Error Count"): a lifetime count of errors and the most recent entries, each stamped
  with the power-on hour (16 bits). NVMe counts its error-information entries in the SMART /
  Health log (Number of Error Information Log Entries, 128 bits).
* SCSI error counter log pages 02h/03h/05h (SPC-4): total uncorrected errors by direction.
* SCSI self-test results log page 10h (SPC-4): 20 entries of 20 bytes, newest first, the
  self-test code, the result nibble, the power-on hours at the test (16 bits that stop at
  FFFFh rather than wrap) and the address of the first failure.
* ATA SCT temperature history (ACS-3 SCT Data Table 2, log E1h after SCT command 5): a circular
  table of one signed byte per logging interval (at most 478 entries in the 512-byte table),
  80h for an interval with no sample, and the drive's recommended operating range and its
  absolute limits.

Every record is absent (None, empty) where the drive did not report it: absent is not zero.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple

# Results of one self-test, normalised over ATA and NVMe.
PASSED = "passed"
FAILED = "failed"  # the test found a fault: read, electrical, servo, handling, failed segment, fatal
ABORTED = "aborted"  # stopped by the host's abort command, a reset, a format or a sanitize
INTERRUPTED = "interrupted"  # ATA: interrupted by a hardware or software reset
IN_PROGRESS = "in_progress"
UNKNOWN = "unknown"
RESULTS = (PASSED, FAILED, ABORTED, INTERRUPTED, IN_PROGRESS, UNKNOWN)

# Kinds of self-test: what smartctl -t runs (short, long = extended, conveyance, selective),
# the automatic offline data collection (ATA "Offline"), and vendor-specific codes.
KINDS = ("short", "extended", "conveyance", "selective", "offline", "vendor", "unknown")

# ATA life timestamps are a 16-bit word (ACS-3 7.43 table "Self-test log data structure" and
# the SMART error log's "Life timestamp"): hour 65,536 is written as 0.
ATA_HOURS_WRAP = 1 << 16
# ATA LBAs are 28 bits in the summary logs and 48 in the extended ones; NVMe's are 64 bits.
MAX_LBA = (1 << 64) - 1


@dataclass(frozen=True)
class SelfTest:
    """One self-test log entry. ``power_on_hours`` as the drive stamped it: ATA stamps are the
    power-on hours modulo :data:`ATA_HOURS_WRAP` (``hours_wrap``), NVMe's are whole."""

    kind: str  # one of KINDS
    description: str  # as smartctl names it: "Short offline", "Extended", "Vendor (0xff)"
    result: str  # one of RESULTS
    status: str  # as smartctl says it: "Completed: read failure"
    power_on_hours: Optional[int] = None
    remaining_percent: Optional[int] = None  # ATA: 0..90 in steps of 10 (in progress or stopped)
    failing_lba: Optional[int] = None
    hours_wrap: Optional[int] = None  # ATA_HOURS_WRAP for ATA stamps, None where they do not wrap

    def hours_before(self, now_hours: int) -> Optional[int]:
        """Power-on hours from this test to ``now_hours`` (:func:`hours_since`), None without a
        stamp or when the stamp is after ``now_hours`` (a clock that contradicts itself)."""
        if self.power_on_hours is None:
            return None
        since = hours_since(now_hours, self.power_on_hours, self.hours_wrap)
        return since if since >= 0 else None


@dataclass(frozen=True)
class LoggedError:
    """The newest entry of a drive's error log."""

    number: Optional[int] = None  # the error's number in the lifetime count (ATA) or its count (NVMe)
    power_on_hours: Optional[int] = None  # ATA: 16 bits, wraps like the self-test stamps
    description: str = ""  # "Error: UNC 8 sectors at LBA = 0x0042ea00 = 4385280"
    command: str = ""  # the command that failed: "READ DMA EXT"


# SCT temperature history (ACS-3 "SCT Temperature History Table"): the table holds at most 478
# one-byte entries; the logging interval and sampling period are 16-bit minute counts.
SCT_TABLE_MAX = 478
SCT_INTERVAL_MAX_MINUTES = (1 << 16) - 1
# A logged sample or a limit outside this range is no drive temperature (the same bounds as the
# drive's current temperature, collectors/smartctl/json_report.TEMPERATURE_RANGE).
SCT_CELSIUS_RANGE = (-40, 150)
# The lowest maximum operating temperature a drive can truly state. A server room's air may be
# up to 27 C (ASHRAE's recommended envelope) and a working drive runs warmer than its air, so a
# maximum below 30 C would forbid the drive any server room: it is a firmware's filler (an
# IronWolf ST8000VN004's SCT status says 10/25 C recommended while its device statistics say
# 70 C), withheld like a reading outside SCT_CELSIUS_RANGE, never a limit an alert compares
# with. Real stated maxima start at 40 C (Toshiba client SSDs, in SCT and device statistics
# alike) in the corpus's 570 SCT blocks.
LIMIT_FLOOR_CELSIUS = 30


@dataclass(frozen=True)
class TemperatureHistory:
    """What the drive's own SCT temperature history shows (smartctl ``-l scttemp``). Only the
    samples the drive logged count: an interval with no sample (80h, JSON ``null``, text ``?``:
    the drive was off or the table not yet filled) is neither above nor below anything, so
    ``window_seconds`` is the logged samples x the logging interval, not the table's size."""

    logging_interval_seconds: int
    sampling_period_seconds: Optional[int] = None
    size: int = 0  # entries in the circular table
    samples: Optional[int] = None  # entries holding a temperature; None: no table, or not one to trust
    max_celsius: Optional[int] = None  # the highest logged sample
    # the drive's recommended maximum operating temperature ("Min/Max recommended
    # Temperature"; JSON temperature.op_limit_max), and its absolute over-temperature limit
    operating_limit_celsius: Optional[int] = None
    absolute_limit_celsius: Optional[int] = None
    above_limit_samples: Optional[int] = None  # logged samples above operating_limit_celsius

    @property
    def window_seconds(self) -> Optional[int]:
        if self.samples is None:
            return None
        return self.samples * self.logging_interval_seconds

    @property
    def above_limit_seconds(self) -> Optional[int]:
        if self.above_limit_samples is None:
            return None
        return self.above_limit_samples * self.logging_interval_seconds


@dataclass(frozen=True)
class SmartLogs:
    """A drive's logs as one read gave them (``source``: where they were read from)."""

    source: str = ""
    self_tests: Tuple[SelfTest, ...] = ()  # newest first
    self_test_running: Optional[SelfTest] = None  # NVMe, SCSI: the test in progress now
    error_count: Optional[int] = None  # lifetime errors the drive logged
    last_error: Optional[LoggedError] = None
    # SCSI error counter log: total uncorrected errors by direction (read, write, verify)
    uncorrected: Tuple[Tuple[str, int], ...] = ()
    temperature_history: Optional[TemperatureHistory] = None  # ATA SCT (-l scttemp)
    withheld: Tuple[str, ...] = ()  # what was read but could not be true, each with why

    @property
    def last_test(self) -> Optional[SelfTest]:
        """The newest finished (or stopped) self-test; a test still running is not a result."""
        for test in self.self_tests:
            if test.result != IN_PROGRESS:
                return test
        return None

    @property
    def failed_tests(self) -> int:
        """How many of the entries the log still holds found a fault (the log keeps the newest
        21 on ATA, 20 on NVMe, so this is no lifetime count: it can fall as entries age out)."""
        return sum(1 for t in self.self_tests if t.result == FAILED)

    def empty(self) -> bool:
        return not (self.self_tests or self.self_test_running or self.error_count is not None
                    or self.uncorrected or self.temperature_history is not None or self.withheld)


# ATA SMART attribute table (ATA/ATAPI-8 and earlier: SMART READ DATA, 30 entries of 12 bytes).
MAX_ATTRIBUTES = 30
ATTRIBUTE_BYTE = 255  # the normalised value, worst value and threshold are one byte each
# The raw field is 6 bytes, but smartctl decodes some attributes with the reserved byte and the
# value byte too (drivedb formats raw56, raw64, hex64: Seagate's 188 and 240): its raw.value is
# an unsigned 64-bit integer.
ATTRIBUTE_RAW_MAX = (1 << 64) - 1


@dataclass(frozen=True)
class AttributeRow:
    """One ATA SMART attribute as the drive gives it, named by smartmontools' drive database
    (issue 30, ``smartctl.all_attributes``): the normalised value, its worst, the drive's
    threshold and the raw field as smartctl decodes it. ``failing_now``: the value is at or below
    a non-zero threshold (smartctl's WHEN_FAILED "now", FAILING_NOW)."""

    attr_id: int
    name: str
    value: Optional[int] = None
    worst: Optional[int] = None
    threshold: Optional[int] = None
    raw: Optional[int] = None
    failing_now: bool = False


def hours_since(now_hours: int, stamp: int, wrap: Optional[int]) -> int:
    """Power-on hours from ``stamp`` to ``now_hours``; with ``wrap``, ``stamp`` is the hour
    modulo ``wrap`` (ATA), so the answer is the distance back to the latest hour with that
    remainder, never negative: a drive at 70,000 hours whose newest test reads 4,400 tested
    it 64 hours ago (70,000 - 65,536 = 4,464), not 65,600."""
    if wrap is None:
        return now_hours - stamp
    return (now_hours - stamp) % wrap
