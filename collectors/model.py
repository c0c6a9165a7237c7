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
from typing import Dict, List, Optional, Tuple

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

    # environment
    temperatures: Tuple[Temperature, ...] = ()
    voltages: Tuple[Voltage, ...] = ()

    # lifetime
    power_on_seconds: Optional[int] = None
    power_cycles: Optional[int] = None
    power_state: Optional[str] = None  # active, standby (a probe skipped a sleeping drive)

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


# Write cache state values.
CACHE_ENABLED = "enabled"
CACHE_DISABLED = "disabled"
CACHE_UNSUPPORTED = "not_supported"
CACHE_UNKNOWN = "unknown"


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
    # the sync-write probe's latest result per directory (collectors.syncwrite.SyncWriteResult)
    syncwrite: tuple = ()
    agent: Optional[AgentStatus] = None  # None outside a running agent (tests, ``collect``)

    def by_serial(self) -> Dict[str, Drive]:
        return {d.serial: d for d in self.drives}


def drive_list(snapshot: Snapshot) -> List[Drive]:
    return sorted(snapshot.drives, key=lambda d: (d.device, d.serial))
