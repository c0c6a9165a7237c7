"""The normalised drive record, in base units.

Every collector's parser returns :class:`DriveReading` objects; the poller merges the
readings of one drive (identified by serial or WWN, never by its /dev name) into a
:class:`Drive` and puts it in an immutable :class:`Snapshot`.

Rules that hold for every field:

* base units: ratios are 0..1, sizes and volumes are bytes, durations are seconds,
  temperatures are degrees Celsius, voltages are volts;
* ``None`` means the source did not report the value. Absent is not zero.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple

from collectors.smart_logs import AttributeRow, SmartLogs

# Drive kinds. "shannon" is a Shannon Direct-IO PCIe card read through shannon-status,
# "fusionio" a Fusion-io / SanDisk ioMemory module read through fio-status, "plugin" a drive
# an operator's plug-in command reports (docs/plugins.md).
KIND_SHANNON = "shannon"
KIND_FUSIONIO = "fusionio"
KIND_PLUGIN = "plugin"
KIND_ATA = "ata"
KIND_NVME = "nvme"
KIND_SCSI = "scsi"
KIND_BLOCK = "block"  # known only from sysfs: no tool could read its health
KINDS = (KIND_SHANNON, KIND_FUSIONIO, KIND_ATA, KIND_NVME, KIND_SCSI, KIND_PLUGIN, KIND_BLOCK)


_MASKED_SERIAL = re.compile(r"^(?:[Xx*]+|-+|\.+|0+|REDACTED|unknown|none|n/a)$", re.IGNORECASE)


class ParseError(ValueError):
    """Raised by every parser for input it cannot read. The message names the bad line."""


@dataclass(frozen=True)
class Temperature:
    """One temperature sensor. ``sensor`` is a short stable name: ``drive``,
    ``controller``, ``board``, ``flash``, ``nvme_sensor_1`` ..."""

    sensor: str
    celsius: float
    max_celsius: Optional[float] = None  # highest value the drive itself remembers
    limit_celsius: Optional[float] = None  # the drive's own warning/trip temperature


@dataclass(frozen=True)
class Voltage:
    rail: str  # ``internal``, ``auxiliary``
    volts: float
    max_volts: Optional[float] = None


@dataclass(frozen=True)
class DriveReading:
    """What one source says about one drive at one moment.

    ``sources`` records where a derived value came from, keyed by field name, e.g.
    ``{"life_left_ratio": "ata_attr 231 SSD_Life_Left normalized"}`` so a user can see
    why the agent says 7% left.
    """

    kind: str
    device: str  # the path the tool was called with: /dev/sda, /dev/nvme0, /dev/scta
    serial: Optional[str] = None
    wwn: Optional[str] = None
    model: Optional[str] = None
    model_family: Optional[str] = None
    vendor: Optional[str] = None
    firmware: Optional[str] = None
    driver_version: Optional[str] = None
    block_device: Optional[str] = None  # kernel name: sda, nvme0n1, dfa
    device_type: Optional[str] = None  # smartctl -d TYPE it was read with: sat, nvme, megaraid,0
    is_ssd: Optional[bool] = None
    capacity_bytes: Optional[int] = None
    physical_capacity_bytes: Optional[int] = None
    logical_sector_bytes: Optional[int] = None

    # health
    smart_healthy: Optional[bool] = None
    life_left_ratio: Optional[float] = None
    # The spread (0..1) between the independent life figures one drive reports (ATA device
    # statistics' Percentage Used against the vendor's life attribute, or two vendor attributes),
    # set where it has two or more; past LIFE_LEFT_SPREAD_MARGIN they disagree, and
    # extra["life_left_disagreement"] names both (sources["life_left_spread_ratio"] every figure).
    life_left_spread_ratio: Optional[float] = None
    spare_left_ratio: Optional[float] = None
    spare_threshold_ratio: Optional[float] = None
    bad_block_ratio: Optional[float] = None
    # counts of defects by type: reallocated, pending, offline_uncorrectable, grown_defect,
    # reallocation_events, dynamic_bad_block, static_bad_block, program_fail, erase_fail, and
    # the error counts kept as context: reported_uncorrectable (187), command_timeout (188),
    # udma_crc_errors (199: the cable or backplane, not the flash)
    defects: Dict[str, int] = field(default_factory=dict)
    media_errors: Optional[int] = None  # NVMe media_errors, SCSI uncorrected errors
    critical_warning: Optional[int] = None  # NVMe critical warning bitmask
    access_mode: Optional[str] = None  # readwrite, readonly, reduced_write (normalised)
    readonly: Optional[bool] = None

    # wear and volume
    write_amplification: Optional[float] = None
    host_written_bytes: Optional[int] = None
    host_read_bytes: Optional[int] = None
    nand_written_bytes: Optional[int] = None
    # What the drive's own tool states (Fusion-io fio-status, a plug-in): its rated endurance in
    # host bytes (TBW) or in media-side bytes (a PBW counted against nand_written_bytes), and
    # whether it has power-loss protection. The projection and the expected write cache use
    # them unless the configuration says otherwise (agent/endurance.py, agent/durability.py).
    rated_host_written_bytes: Optional[int] = None
    rated_nand_written_bytes: Optional[int] = None
    power_loss_protection: Optional[bool] = None

    # environment
    temperatures: Tuple[Temperature, ...] = ()
    voltages: Tuple[Voltage, ...] = ()

    # lifetime
    power_on_seconds: Optional[int] = None
    power_cycles: Optional[int] = None
    power_state: Optional[str] = None  # active, standby (a probe skipped a sleeping drive)

    # the drive's self-test and error logs (collectors/smart_logs.py; smartctl's, issue 30)
    smart_logs: Optional[SmartLogs] = None
    # every ATA SMART attribute, named by the drive database; only with smartctl.all_attributes
    ata_attributes: Tuple[AttributeRow, ...] = ()

    # raw tool status, e.g. smartctl exit bitmask
    tool_exit_status: Optional[int] = None
    sources: Dict[str, str] = field(default_factory=dict)
    # free-form extras that only some kinds have (kept out of metrics, shown in the API)
    extra: Dict[str, str] = field(default_factory=dict)
    # Set by the agent's merge when another drive on the host reports the same serial (a
    # firmware or a cloning fault): the WWN or kernel name that keeps this drive apart,
    # appended to the identity after "@" (agent/poller.py, merge_readings).
    identity_qualifier: Optional[str] = None

    @property
    def identity(self) -> str:
        """Stable identity: serial, else WWN, else the device path (with the -d type, since
        drives behind one RAID controller share a path). A masked serial such as
        ``XXXXXXXXXXXX`` or ``REDACTED`` (some controllers and anonymised captures print them)
        is no identity: two drives would merge. ``SERIAL@QUALIFIER`` when two drives share
        the serial."""
        if self.serial and not _MASKED_SERIAL.match(self.serial):
            base = self.serial
        elif self.wwn:
            base = self.wwn
        else:
            base = f"{self.device}:{self.device_type}" if self.device_type else self.device
        return f"{base}@{self.identity_qualifier}" if self.identity_qualifier else base

    def replace(self, **changes) -> DriveReading:
        return dataclasses.replace(self, **changes)


# Fields that say which drive a reading is about: never taken from a second source.
_IDENTITY_FIELDS = ("kind", "device", "block_device", "device_type", "serial", "wwn", "identity_qualifier")


def _absent(value) -> bool:
    return value is None or value == () or value == {}


def supplement(primary: DriveReading, other: DriveReading, source: str) -> DriveReading:
    """``primary`` with each field it lacks taken from ``other``, a second source's reading of
    the same drive (nvme-cli's vendor log beside smartctl's health log), its evidence recorded
    as ``source`` plus what ``other`` says. A field ``primary`` withheld on purpose (its
    ``extra`` holds ``FIELD_withheld``) stays withheld: a second source does not overrule the
    reason. A field neither gives keeps the second source's reason for withholding it."""
    changes = {}
    sources = dict(primary.sources)
    reasons = {}  # fields neither has, with the second source's reason for withholding them
    for name in primary.__dataclass_fields__:
        if name in _IDENTITY_FIELDS or name in ("sources", "extra"):
            continue
        if not _absent(getattr(primary, name)) or f"{name}_withheld" in primary.extra:
            continue
        value = getattr(other, name)
        if _absent(value):
            why = other.extra.get(f"{name}_withheld")
            if why:
                reasons[f"{name}_withheld"] = f"{source}: {why}"
            continue
        changes[name] = value
        said = other.sources.get(name)
        sources[name] = f"{source}: {said}" if said else source
    if not changes:
        if not reasons:
            return primary
        return dataclasses.replace(primary, extra=dict(primary.extra, **reasons))
    extra = dict(other.extra)
    extra.update(reasons)
    extra.update(primary.extra)
    return dataclasses.replace(primary, sources=sources, extra=extra, **changes)


# The figures a DBA acts on, with the label status output and the page give them. For each, a
# reading records the source it was read from (``sources``) or why no figure was given
# (``extra[field + "_withheld"]``).
EVIDENCE_FIELDS = (
    ("life_left_ratio", "life left"),
    ("host_written_bytes", "host writes"),
    ("host_read_bytes", "host reads"),
    ("nand_written_bytes", "NAND writes"),
    ("write_amplification", "write amplification"),
    ("power_on_seconds", "power-on time"),
)


# Two life figures of one drive further apart than this (in life left, 0..1) disagree: whole-percent
# rounding and the vendors' different curves (a normalized value stepping by 1, a count of spare
# blocks) stay within it on the drives whose figures agree (bench/corpus_report.py).
LIFE_LEFT_SPREAD_MARGIN = 0.10


# Write cache state values.
CACHE_ENABLED = "enabled"
CACHE_DISABLED = "disabled"
CACHE_UNSUPPORTED = "not_supported"
CACHE_UNKNOWN = "unknown"

# Who gave a write cache answer (WriteCacheState.source): the kernel's view, then the drive's
# own through each tool. The names of the answers, not of the agent's sources: health.py ranks
# them (effective_write_cache) and durability.py tells the drive's answers from the kernel's.
CACHE_SOURCE_SYSFS_QUEUE = "sysfs_queue"
CACHE_SOURCE_SCSI_CACHE_TYPE = "scsi_cache_type"
CACHE_SOURCE_HDPARM = "hdparm"
CACHE_SOURCE_NVME = "nvme_feature"
CACHE_SOURCE_SMARTCTL = "smartctl"
# The answers that come from the drive itself.
CACHE_SOURCES_DRIVE = (CACHE_SOURCE_HDPARM, CACHE_SOURCE_NVME, CACHE_SOURCE_SMARTCTL, CACHE_SOURCE_SCSI_CACHE_TYPE)


@dataclass(frozen=True)
class WriteCacheState:
    """Write cache as one source sees it. ``source`` is ``sysfs_queue``, ``scsi_cache_type``,
    ``hdparm``, ``nvme_feature`` or ``smartctl``."""

    state: str
    source: str
    detail: Optional[str] = None


@dataclass(frozen=True)
class IoStats:
    """iostat-style cumulative counters for one whole drive (partitions folded)."""

    reads_completed: int
    reads_merged: int
    read_bytes: int
    read_time_seconds: float
    writes_completed: int
    writes_merged: int
    written_bytes: int
    write_time_seconds: float
    in_flight: Optional[int]  # None where the source does not say
    io_time_seconds: float  # busy time
    weighted_io_time_seconds: Optional[float]
    discards_completed: Optional[int] = None
    discarded_bytes: Optional[int] = None
    discard_time_seconds: Optional[float] = None
    flushes_completed: Optional[int] = None
    flush_time_seconds: Optional[float] = None


@dataclass(frozen=True)
class Projection:
    """One wear-out estimate with the inputs it used."""

    method: str  # observed, rated, trend
    wearout_timestamp: Optional[float]  # unix seconds; None when it cannot be projected
    endurance_remaining_bytes: Optional[float] = None
    write_rate_bytes_per_second: Optional[float] = None
    inputs: Dict[str, float] = field(default_factory=dict)
    note: Optional[str] = None


@dataclass(frozen=True)
class Holding:
    """One thing a drive holds at the top of its block-device stack (collectors/holders.py):
    a mounted filesystem, a ZFS pool, or an array or volume that is not mounted (``mountpoint``
    empty). ``stack`` lists the layers between the drive and the filesystem, bottom first:
    ``md0``, ``crypt:pgdata``, ``lvm:vg0/pg``, ``mpath:mpatha``, ``dm:name``, ``zfs:tank``
    (``zfs:tank(log)`` for a log, cache or spare device)."""

    mountpoint: str = ""
    fstype: str = ""  # as /proc/mounts says: ext4, xfs, zfs; empty when not mounted
    partition: str = ""  # the drive's partition the stack starts on (sdb1), empty for the whole drive
    stack: Tuple[str, ...] = ()

    def describe(self) -> str:
        """``/var/lib/postgresql (md0, ext4)``; ``md0 (not mounted)`` for an unmounted top."""
        inner = list(self.stack) + ([self.fstype] if self.fstype else [])
        if self.mountpoint:
            return f"{self.mountpoint} ({', '.join(inner)})" if inner else self.mountpoint
        return f"{' > '.join(self.stack) or self.partition or '?'} (not mounted)"


def holds_text(holds: Iterable[object]) -> str:
    """What a drive holds in one line, from Holding objects or their dict form (the JSON API):
    ``/var/lib/postgresql (md0, ext4); /boot (ext2)``. Here, beside :class:`Holding`, so the
    page and ``ssdfleet status`` need not import the holders source to say it."""
    parts = []
    for h in holds:
        if isinstance(h, Mapping):
            h = Holding(str(h.get("mountpoint") or ""), str(h.get("fstype") or ""), str(h.get("partition") or ""),
                        tuple(str(x) for x in h.get("stack") or ()))
        if isinstance(h, Holding):
            parts.append(h.describe())
    return "; ".join(parts)


@dataclass(frozen=True)
class Drive:
    """The merged, normalised record for one drive, as served by the snapshot."""

    reading: DriveReading
    write_cache: Tuple[WriteCacheState, ...] = ()
    write_cache_expected: Optional[str] = None  # enabled / disabled / None = no expectation
    io: Optional[IoStats] = None
    projections: Tuple[Projection, ...] = ()
    rated_endurance_bytes: Optional[float] = None
    last_poll: Dict[str, float] = field(default_factory=dict)  # collector -> unix time of data
    # True / False: the drive has / lacks power-loss protection (configuration or model table,
    # agent/durability.py); None: unknown.
    power_loss_protection: Optional[bool] = None
    # What the drive holds: mounts, md arrays, LVM, dm-crypt, ZFS pools (collectors/holders.py).
    holds: Tuple[Holding, ...] = ()

    @property
    def serial(self) -> str:
        return self.reading.identity

    @property
    def device(self) -> str:
        return self.reading.block_device or self.reading.device

    @property
    def best_projection(self) -> Optional[Projection]:
        for p in self.projections:
            if p.wearout_timestamp is not None:
                return p
        return None


@dataclass(frozen=True)
class CollectorStatus:
    name: str
    success: bool
    duration_seconds: float
    last_run: float
    error: Optional[str] = None
    errors_total: int = 0


@dataclass(frozen=True)
class AgentStatus:
    """The agent process's own state, for its metrics: the last configuration reload
    (agent/reload.py), the signals it handled without stopping, and the processes tools left
    behind that the runner killed (collectors/runner.py), by how: ``group`` or ``adopted``."""

    config_reload_successful: bool = True
    config_reload_success_timestamp: float = 0.0
    signals: Tuple[Tuple[str, int], ...] = ()
    leftover_processes_killed: Tuple[Tuple[str, int], ...] = ()


@dataclass(frozen=True)
class Snapshot:
    drives: Tuple[Drive, ...] = ()
    collectors: Tuple[CollectorStatus, ...] = ()
    created: float = 0.0
    problems: Tuple[str, ...] = ()  # device-level problems: stuck probes, no data, standby
    stuck: Tuple[str, ...] = ()  # devices quarantined behind a probe that outlived SIGKILL
    # history rows SQLite refused since start, by reason (agent.history._drop_reason)
    history_dropped: Tuple[Tuple[str, int], ...] = ()
    history_recorded: int = 0  # samples the history accepted since start
    history_pending: int = 0  # of those, not yet on disk (a write failed)
    history_written: int = 0  # of those, committed and synced to the history file
    # wall-clock steps (and future samples) the history saw, by kind (agent.history_clock)
    history_clock_anomalies: Tuple[Tuple[str, int], ...] = ()
    history_retention_held: bool = False  # retention waits for a steady clock
    # the history file deleted or replaced under the running agent, by how (agent.history_file)
    history_file_lost: Tuple[Tuple[str, int], ...] = ()
    # What each host source measured (its report's ``host``), by source name: the sync-write
    # probe's latest burst per directory, a RAID controller's volumes and battery. Each is
    # shown by its source's own HostView (collectors/source.py); nothing else reads it.
    host: Mapping[str, Any] = field(default_factory=dict)
    agent: Optional[AgentStatus] = None  # None outside a running agent (tests, ``collect``)

    def by_serial(self) -> Dict[str, Drive]:
        return {d.serial: d for d in self.drives}


def drive_list(snapshot: Snapshot) -> List[Drive]:
    return sorted(snapshot.drives, key=lambda d: (d.device, d.serial))


# --------------------------------------------------------------------------- physical bounds
#
# Every figure the model holds, with the range it can physically take and where that range
# comes from. collectors.evidence.contain applies the DriveReading ones (and the sensors' and the
# defects') to every reading before it leaves its source, so nothing outside them reaches history,
# /metrics or an alert; the fuzz run over the whole collect path (tests/test_fuzz_collect.py)
# checks every exported sample against the same table, and tests/test_bounds.py fails when a
# numeric field of any dataclass here has no entry, so a new figure cannot skip it.


@dataclass(frozen=True)
class Bound:
    """The range one figure can take, in the unit of its field, and the source of that range.

    ``low``..``high`` are inclusive (``low_exclusive``: the low end is not a reading, e.g. a
    capacity of 0). ``integer``: the figure is a count or an exact size; a float is no reading
    of it. ``sentinel_bits``: widths of the fields the figure is read from whose all-ones value
    firmware uses for "not available" (and where a saturating counter stops): such a value is
    withheld as not reported. ``relative``: a tighter bound against the drive's other figures,
    applied by collectors.evidence: ``volume`` (capacity x lifetime writes and power-on time x
    link speed), ``sectors`` (a count of defective sectors or blocks: at most every sector of the
    flash, twice the user capacity / 512), ``events`` (errors counted per command or transfer: at
    most one per 512 bytes the drive's link can carry, and MAX_EVENTS_PER_SECOND, per power-on
    second). ``metrics``: the samples that export it.
    """

    unit: str
    low: float
    high: float
    spec: str
    low_exclusive: bool = False
    integer: bool = False
    sentinel_bits: Tuple[int, ...] = ()
    relative: Optional[str] = None
    metrics: Tuple[str, ...] = ()


# ATA's 48-bit LBA at 512-byte sectors addresses 2**57 bytes (144 PB), some 500 times the
# largest SSDs announced by 2025 (the 256 TB class, about 2**48 bytes). No drive is larger.
MAX_CAPACITY_BYTES = 2**57
# SQLite's and Prometheus's exact integer range; no lifetime volume comes near it.
MAX_COUNTER = 2**63 - 1
# No flash drive is powered for 20 years: rated lives are 3 to 5 years, warranties at most 10.
MAX_POWER_ON_SECONDS = 20 * 365.25 * 86400
# Errors are counted per command (or per retried transfer); the fastest NVMe drives complete
# about 3 million commands a second, so 10 million a second of power-on time is out of reach.
MAX_EVENTS_PER_SECOND = 10**7
MAX_EVENTS = MAX_POWER_ON_SECONDS * MAX_EVENTS_PER_SECOND
# A power cycle needs the supply to fall and rise and the controller to start again: not once
# a second for 20 years.
MAX_POWER_CYCLES = MAX_POWER_ON_SECONDS
# Counter fields are 16 bits (ATA raw16 words), 32, 48 (the ATA attribute raw field, ATA
# Device Statistics values) or 64 bits wide; all ones in any of them is firmware's "not
# available" (smartmontools prints such values as is; the SSSTC ER2 and Kingston reports in
# tests/fixtures carry 2**48 - 1, Seagate ones 65535).
SENTINEL_BITS = (16, 32, 48, 64)
_LAST_TIME = 2.0**33  # unix seconds in the year 2242: past any clock a host can have
_FLOAT_EXACT = 2.0**53

_RATIO = "a share, 0 to 1"
_COUNTER_SPEC = "/proc/diskstats: unsigned long counters (Documentation/admin-guide/iostats.rst)"


def _capacity(metrics: Tuple[str, ...]) -> Bound:
    return Bound("bytes", 0, MAX_CAPACITY_BYTES, low_exclusive=True, integer=True, metrics=metrics, spec=(
        "ATA 48-bit LBA at 512-byte sectors: 2**57 bytes, ~500x the largest SSDs of 2025; a capacity "
        "of 0 is a drive that did not say (RAID volume, USB bridge)"))


def _defect(relative: str, spec: str) -> Bound:
    high = 2 * MAX_CAPACITY_BYTES // 512 if relative == "sectors" else MAX_EVENTS
    return Bound("count", 0, high, integer=True, sentinel_bits=SENTINEL_BITS, relative=relative,
                 metrics=("ssd_defects",), spec=spec)


_SECTOR_COUNT = ("a count of defective sectors or blocks: never more than the flash has "
                 "(twice the user capacity / 512; a NAND block is far larger than a sector)")
_EVENT_COUNT = ("errors counted per command or transfer: at most one per 512 bytes the link carries "
                "(SATA 1.2 million) and 10**7 per power-on second")

# defect type (DriveReading.defects key) -> its bound; a type not listed takes DEFAULT_DEFECT_BOUND
DEFECT_BOUNDS: Dict[str, Bound] = {
    "reallocated": _defect("sectors", f"ATA 5 Reallocated_Sector_Ct: {_SECTOR_COUNT}"),
    "pending": _defect("sectors", f"ATA 197 Current_Pending_Sector: {_SECTOR_COUNT}"),
    "offline_uncorrectable": _defect("sectors", f"ATA 198 Offline_Uncorrectable: {_SECTOR_COUNT}"),
    "grown_defect": _defect("sectors", f"SCSI grown defect list (SBC READ DEFECT DATA): {_SECTOR_COUNT}"),
    "program_fail": _defect("sectors", f"ATA 171/175/181 program fails (a failed block is retired): {_SECTOR_COUNT}"),
    "erase_fail": _defect("sectors", f"ATA 172/176/182 erase fails (a failed block is retired): {_SECTOR_COUNT}"),
    "dynamic_bad_block": _defect("sectors", f"Shannon dynamic (grown) bad blocks: {_SECTOR_COUNT}"),
    "static_bad_block": _defect("sectors", f"Shannon static (factory) bad blocks: {_SECTOR_COUNT}"),
    "reallocation_events": _defect("events", f"ATA 196 Reallocated_Event_Count (attempts, failed ones too): {_EVENT_COUNT}"),
    "reported_uncorrectable": _defect("events", f"ATA 187 Reported_Uncorrect: {_EVENT_COUNT}"),
    "command_timeout": _defect("events", f"ATA 188 Command_Timeout: {_EVENT_COUNT}"),
    "udma_crc_errors": _defect("events", f"ATA 199 UDMA_CRC_Error_Count (per transfer): {_EVENT_COUNT}"),
}
DEFAULT_DEFECT_BOUND = _defect("events", f"a defect type without its own entry: {_EVENT_COUNT}")


def _temperature(metrics: Tuple[str, ...]) -> Bound:
    return Bound("celsius", -40.0, 150.0, metrics=metrics, spec=(
        "no drive works below -40 C or above 150 C (industrial parts are rated -40..85 C; "
        "NVMe thresholds are 16-bit kelvin, so a wrong unit lands far outside)"))


def _volts(metrics: Tuple[str, ...]) -> Bound:
    return Bound("volts", 0.0, 15.0, low_exclusive=True, metrics=metrics, spec=(
        "the highest rail a drive takes is 12 V (PCIe slot, SATA/SAS power, +8% tolerance); "
        "Shannon and ioMemory report their 1-2.5 V core and auxiliary rails"))


def _io(unit: str, high: float, metric: str, what: str) -> Bound:
    return Bound(unit, 0, high, integer=unit == "count", metrics=(metric,), spec=f"{_COUNTER_SPEC}: {what}")


_TIMESTAMP = Bound("unix seconds", 0.0, _LAST_TIME, spec="a time the agent's clock gave: after 1970, before 2242")

# "Class.field" -> bound, for every numeric field of the dataclasses above.
FIGURE_BOUNDS: Dict[str, Bound] = {
    "DriveReading.capacity_bytes": _capacity(("ssd_capacity_bytes",)),
    "DriveReading.physical_capacity_bytes": _capacity(()),
    "DriveReading.logical_sector_bytes": Bound("bytes", 512, 65536, integer=True, spec=(
        "NVMe LBA Data Size 2**LBADS with LBADS >= 9; ATA and SCSI drives format 512..4096 bytes "
        "plus at most 128 bytes of protection information")),
    "DriveReading.life_left_ratio": Bound("ratio", 0.0, 1.0, metrics=("ssd_life_left_ratio",), spec=(
        f"{_RATIO}: NVMe Percentage Used may pass 100, life left then stays at 0")),
    "DriveReading.life_left_spread_ratio": Bound("ratio", 0.0, 1.0, metrics=("ssd_life_left_spread_ratio",), spec=(
        f"{_RATIO}: the difference between two life-left figures, each 0..1")),
    "DriveReading.spare_left_ratio": Bound("ratio", 0.0, 1.0, metrics=("ssd_spare_left_ratio",), spec=(
        f"{_RATIO}: NVMe Available Spare is a normalised percent, 0..100")),
    "DriveReading.spare_threshold_ratio": Bound("ratio", 0.0, 1.0, metrics=("ssd_spare_threshold_ratio",), spec=(
        f"{_RATIO}: NVMe Available Spare Threshold, 0..100 percent")),
    "DriveReading.bad_block_ratio": Bound("ratio", 0.0, 1.0, metrics=("ssd_bad_block_ratio",), spec=(
        f"{_RATIO}: bad blocks of all blocks")),
    "DriveReading.defects": DEFAULT_DEFECT_BOUND,  # per type: DEFECT_BOUNDS
    "DriveReading.media_errors": Bound("count", 0, MAX_EVENTS, integer=True, sentinel_bits=SENTINEL_BITS,
                                       relative="events", metrics=("ssd_media_errors_total",), spec=(
        "NVMe Media and Data Integrity Errors (128-bit), SCSI total uncorrected errors: "
        f"{_EVENT_COUNT}")),
    "DriveReading.critical_warning": Bound("bit field", 0, 255, integer=True, metrics=("ssd_nvme_critical_warning",),
                                           spec=(
        "NVMe SMART / Health Information log byte 0: 8 bits (0-5 defined, 6-7 reserved; a byte "
        "with reserved bits set is shown, not withheld: a warning must not be silenced)")),
    "DriveReading.write_amplification": Bound("ratio", 0.1, 50.0, metrics=("ssd_write_amplification",), spec=(
        "NAND bytes / host bytes: compressing controllers (SandForce DuraWrite) write down to a "
        "tenth of the host's bytes; above 50 one of the counters is in another unit")),
    "DriveReading.host_written_bytes": Bound("bytes", 0, MAX_COUNTER, integer=True, relative="volume",
                                             metrics=("ssd_host_written_bytes_total",), spec=(
        "at most capacity x 100,000 full writes (SLC's rated P/E) and power-on time x link speed")),
    "DriveReading.host_read_bytes": Bound("bytes", 0, MAX_COUNTER, integer=True, relative="volume",
                                          metrics=("ssd_host_read_bytes_total",), spec=(
        "at most capacity x 100,000 and power-on time x link speed")),
    "DriveReading.nand_written_bytes": Bound("bytes", 0, MAX_COUNTER, integer=True, relative="volume",
                                             metrics=("ssd_nand_written_bytes_total",), spec=(
        "at most capacity x 100,000 full writes (SLC's rated P/E) and power-on time x link speed")),
    # metrics=(): shown through the projection (ssd_endurance_rated_bytes), not on their own
    "DriveReading.rated_host_written_bytes": Bound("bytes", 0, MAX_COUNTER, integer=True, low_exclusive=True, spec=(
        "a vendor's TBW: above 0, at most a 64-bit byte count")),
    "DriveReading.rated_nand_written_bytes": Bound("bytes", 0, MAX_COUNTER, integer=True, low_exclusive=True, spec=(
        "a vendor's PBW of media writes (fio-status 'Rated PBW'): above 0, at most a 64-bit byte count")),
    "DriveReading.power_on_seconds": Bound("seconds", 0, MAX_POWER_ON_SECONDS, integer=True,
                                           metrics=("ssd_power_on_seconds_total",), spec=(
        "20 years: flash drives are rated for 3 to 5, warranted for at most 10")),
    "DriveReading.power_cycles": Bound("count", 0, MAX_POWER_CYCLES, integer=True, sentinel_bits=SENTINEL_BITS,
                                       metrics=("ssd_power_cycles_total",), spec=(
        "ATA 12 Power_Cycle_Count (48-bit raw), NVMe Power Cycles (128-bit): at most one a second "
        "for 20 years")),
    "DriveReading.tool_exit_status": Bound("status", 0, 255, integer=True, spec=(
        "a process exit status is 8 bits (POSIX wait status); smartctl's is a bitmask in them")),
    "Temperature.celsius": _temperature(("ssd_temperature_celsius",)),
    "Temperature.max_celsius": _temperature(()),
    "Temperature.limit_celsius": _temperature(("ssd_temperature_limit_celsius",)),
    "Voltage.volts": _volts(("ssd_voltage_volts",)),
    "Voltage.max_volts": _volts(()),
    "IoStats.reads_completed": _io("count", 2**64 - 1, "ssd_io_reads_completed_total", "reads completed"),
    "IoStats.reads_merged": _io("count", 2**64 - 1, "ssd_io_reads_merged_total", "reads merged"),
    "IoStats.read_bytes": _io("bytes", 2**64 * 512, "ssd_io_read_bytes_total", "sectors read x 512"),
    "IoStats.read_time_seconds": _io("seconds", 2**64 / 1000, "ssd_io_read_time_seconds_total", "ms reading / 1000"),
    "IoStats.writes_completed": _io("count", 2**64 - 1, "ssd_io_writes_completed_total", "writes completed"),
    "IoStats.writes_merged": _io("count", 2**64 - 1, "ssd_io_writes_merged_total", "writes merged"),
    "IoStats.written_bytes": _io("bytes", 2**64 * 512, "ssd_io_written_bytes_total", "sectors written x 512"),
    "IoStats.write_time_seconds": _io("seconds", 2**64 / 1000, "ssd_io_write_time_seconds_total",
                                      "ms writing / 1000"),
    "IoStats.in_flight": _io("count", 2**32 - 1, "ssd_io_in_flight", "I/Os in flight (unsigned int)"),
    "IoStats.io_time_seconds": _io("seconds", 2**64 / 1000, "ssd_io_busy_seconds_total", "ms doing I/O / 1000"),
    "IoStats.weighted_io_time_seconds": _io("seconds", 2**64 / 1000, "ssd_io_weighted_time_seconds_total",
                                            "weighted ms doing I/O / 1000"),
    "IoStats.discards_completed": _io("count", 2**64 - 1, "ssd_io_discards_completed_total", "discards completed"),
    "IoStats.discarded_bytes": _io("bytes", 2**64 * 512, "", "sectors discarded x 512"),
    "IoStats.discard_time_seconds": _io("seconds", 2**64 / 1000, "", "ms discarding / 1000"),
    "IoStats.flushes_completed": _io("count", 2**64 - 1, "ssd_io_flushes_completed_total", "flushes completed"),
    "IoStats.flush_time_seconds": _io("seconds", 2**64 / 1000, "ssd_io_flush_time_seconds_total",
                                      "ms flushing / 1000"),
    # Figures the agent derives (agent/endurance.py, agent/projection.py, agent/poller.py) from
    # the bounded ones above; their bound is that they are finite and of the right sign.
    "Drive.rated_endurance_bytes": Bound("bytes", 0.0, _FLOAT_EXACT * 2**10, low_exclusive=True,
                                         metrics=("ssd_endurance_rated_bytes",), spec=(
        "TBW from a cited table or configuration, or capacity (<= 2**57) x P/E cycles")),
    "Drive.last_poll": Bound("unix seconds", 0.0, _LAST_TIME, metrics=("ssd_last_poll_timestamp_seconds",),
                             spec="per collector: when it read the drive (the agent's clock)"),
    "Projection.wearout_timestamp": Bound("unix seconds", 0.0, float("inf"), metrics=(
        "ssd_projected_wearout_timestamp_seconds",), spec="a projection: finite, after 1970"),
    "Projection.endurance_remaining_bytes": Bound("bytes", -_FLOAT_EXACT * 2**10, _FLOAT_EXACT * 2**10, metrics=(
        "ssd_endurance_remaining_bytes",), spec="rated or observed endurance minus bytes written: below 0 once past it"),
    "Projection.write_rate_bytes_per_second": Bound("bytes/second", 0.0, 32e9, metrics=(
        "ssd_write_rate_bytes_per_second",), spec="a smoothed host write rate: at most the fastest link (PCIe 5.0 x8)"),
    "Projection.inputs": Bound("various", -float("inf"), float("inf"), spec=(
        "the figures a projection used, each bounded where it came from; shown in the API only")),
    "CollectorStatus.duration_seconds": Bound("seconds", 0.0, 7 * 86400.0, metrics=(
        "ssd_collector_duration_seconds",), spec="one run: bounded by the tool timeouts, at most the longest interval (a week)"),
    "CollectorStatus.last_run": _TIMESTAMP,
    "CollectorStatus.errors_total": Bound("count", 0, MAX_COUNTER, integer=True, metrics=(
        "ssd_collector_errors_total",), spec="failures since the agent started"),
    "Snapshot.created": _TIMESTAMP,
    "Snapshot.history_recorded": Bound("count", 0, MAX_COUNTER, integer=True, metrics=(
        "ssd_history_samples_recorded_total",), spec="samples since the agent started"),
    "Snapshot.history_pending": Bound("count", 0, MAX_COUNTER, integer=True, metrics=(
        "ssd_history_samples_pending",), spec="samples waiting for a write"),
    "Snapshot.history_dropped": Bound("count", 0, MAX_COUNTER, integer=True, metrics=(
        "ssd_history_samples_dropped_total",), spec="samples SQLite refused, by reason"),
    "Snapshot.history_written": Bound("count", 0, MAX_COUNTER, integer=True, metrics=(
        "ssd_history_samples_written_total",), spec="samples committed and synced since start"),
    "Snapshot.history_clock_anomalies": Bound("count", 0, MAX_COUNTER, integer=True, metrics=(
        "ssd_history_clock_anomalies_total",), spec="wall-clock steps the history saw, by kind"),
    "Snapshot.history_file_lost": Bound("count", 0, MAX_COUNTER, integer=True, metrics=(
        "ssd_history_file_lost_total",), spec="history files found deleted or replaced, by reason"),
    "AgentStatus.config_reload_success_timestamp": Bound("s", 0, 2.0**33, metrics=(
        "ssd_config_last_reload_success_timestamp_seconds",),
        spec="Unix time of the last good configuration load (0 before any)"),
    "AgentStatus.signals": Bound("count", 0, MAX_COUNTER, integer=True, metrics=(
        "ssd_signals_received_total",), spec="signals handled without stopping, by signal"),
    "AgentStatus.leftover_processes_killed": Bound("count", 0, MAX_COUNTER, integer=True, metrics=(
        "ssd_tool_leftover_processes_killed_total",), spec="processes tools left behind, killed, by how"),
    # RAID controllers (collectors/controller_model.py records; the readers in
    # collectors/controller_text.py withhold anything outside these).
    "Controller.cache_bytes": Bound("bytes", 1, 2.0**70, integer=True, metrics=(
        "ssd_controller_cache_bytes",), spec="controller cache memory; 0 printed for none is not a size"),
    "VirtualDisk.size_bytes": Bound("bytes", 1, 2.0**70, integer=True, metrics=("ssd_controller_volume_size_bytes",),
                                    spec="a volume's size as the tool prints it (binary units), below a zebibyte"),
    "VirtualDisk.progress": Bound("ratio", 0.0, 1.0, metrics=("ssd_controller_volume_progress_ratio",), spec=(
        f"{_RATIO}: rebuild or initialisation percent complete, 0..100")),
    "PhysicalDrive.device_id": Bound("id", 0, 999, integer=True, spec=(
        "MegaRAID device id, the N of smartctl -d megaraid,N (smartctl takes three digits)")),
    "PhysicalDrive.size_bytes": Bound("bytes", 1, 2.0**70, integer=True, spec=(
        "a drive's size as the controller prints it; 0 (an empty slot) is not a size")),
    "PhysicalDrive.temperature_celsius": Bound("°C", -40.0, 150.0, spec=(
        "drive temperature as the controller reports it; outside -40..150 no sensor reading")),
    "Battery.charge_ratio": Bound("ratio", 0.0, 1.0, metrics=("ssd_controller_battery_charge_ratio",), spec=(
        f"{_RATIO}: MegaCli relative state of charge, arcconf capacity remaining, percent")),
    "Battery.temperature_celsius": Bound("°C", -40.0, 150.0, metrics=(
        "ssd_controller_battery_temperature_celsius",), spec="battery or CacheVault temperature; outside -40..150 "
        "no sensor reading"),
}

# Fields that are not figures although their type could hold one, each with the reason.
NOT_FIGURES: Dict[str, str] = {
    "Snapshot.host": "host sources' results (the sync-write probe's SyncWriteResult, bounded in its module; RAID controllers' ControllerResult, bounded by the controller rows above)",
    "VirtualDisk.members": "slots of the volume's drives (names, not figures)",
    "ControllerReport.controllers": "records, each bounded field by field",
    "ControllerReport.volumes": "records, each bounded field by field",
    "ControllerReport.drives": "records, each bounded field by field",
    "ControllerReport.batteries": "records, each bounded field by field",
    "ControllerReport.notes": "text: what a parser withheld and why",
}


def figure_bound(key: str, defect: Optional[str] = None) -> Bound:
    """The bound of ``Class.field`` (for ``DriveReading.defects``, of the defect type)."""
    if defect is not None:
        return DEFECT_BOUNDS.get(defect, DEFAULT_DEFECT_BOUND)
    return FIGURE_BOUNDS[key]
