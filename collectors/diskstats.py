"""Block-layer I/O counters from /proc/diskstats (what iostat reads).

A line of /proc/diskstats (Documentation/admin-guide/iostats.rst)::

       8       0 sda 14200 3361 892828 5058 18736 13416 715384 12604 0 24940 17663 0 0 0 0 0 0

after major, minor and name: reads completed, reads merged, sectors read, ms reading; writes
completed, writes merged, sectors written, ms writing; I/Os in flight, ms busy, weighted ms;
then (4.18+) discards completed, merged, sectors, ms; then (5.5+) flushes completed, ms.

Field counts. The kernel only ever appends whole groups of counters: 3 + 11 fields (up to
4.17), 3 + 15 (4.18 adds discards completed/merged/sectors/ms) or 3 + 17 (5.5 adds flushes
completed/ms). Kernels before 2.6.25 printed partitions with 4 counters only (reads, sectors
read, writes, sectors written): 7 fields. Lines of 15 to 17 fields are printed by no mainline
kernel but exist: sysstat's test suite carries one (``sds`` in its root1..root3 trees) and
sysstat reads such a line as the 11 classic counters, since it uses the discard group only
when all four fields are there. We do the same: a partial group is checked (every field must
still be a counter) and ignored, so 15..17 fields read as 14 and 19 as 18. More than 20 fields
read as 20 (a future kernel appending a group).

One bad line does not cost the other disks their counters. Like node_exporter, the parser
keeps every line it can read and reports the others in ``errors`` of the result (a line of 8
to 13 or fewer than 7 fields, a counter that is not an unsigned decimal, a device listed
twice); only input with nothing usable in it raises ParseError.

Units are converted here, once: a diskstats "sector" is always 512 bytes whatever the device's
logical sector size (the block layer counts in 512-byte units), and all times are milliseconds.

``parse_*`` and :func:`fold_by_drive` are pure; :class:`DiskstatsReader` does the reading.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import logging
import os
import re
from typing import Dict, Iterator, List, Mapping, Optional, Sequence, Set, Tuple

from pydantic import BaseModel, ConfigDict

from collectors import numbers
from collectors.model import IoStats, ParseError
from collectors.source import ANNOTATE, Report, RunResult, Source, SourceContext, SourceSpec

# The block layer's unit, independent of the device's logical block size (see the module doc).
DISKSTATS_SECTOR_BYTES = 512
_MS_PER_SECOND = 1000.0

# 3 identifying fields + counters. 7: partition on kernels < 2.6.25; 14: base; 18: + discards
# (4.18); 20: + flushes (5.5). Counts in between read as the group below (see the module doc).
_OLD_PARTITION_FIELDS = 7
_BASE_FIELDS = 14
_DISCARD_FIELDS = 18
_FLUSH_FIELDS = 20

# Devices that are not drives: left out of whole_disks() unless asked for (dm, loop).
_DM = re.compile(r"^dm-\d+$")
_LOOP = re.compile(r"^loop\d+$")
# ram/zram: memory; sr: optical; md: software RAID over drives we already count; fd: floppy
# (virtual machines still show one).
_ALWAYS_VIRTUAL = re.compile(r"^(?:ram\d+|zram\d+|sr\d+|md\d+|md_d\d+|fd\d+)$")

# Partition names. The kernel names a partition "<disk><N>", or "<disk>p<N>" when the disk's
# name ends in a digit (nvme0n1p1, mmcblk0p1, cciss/c0d0p1, loop0p1). A name ending in digits
# is therefore ambiguous on its own (md0 is a disk, sda1 is not), so the "<disk><N>" form is only
# trusted for families whose disk names are letters only: sd, hd, vd, xvd and Shannon's df.
_PARTITION_P = re.compile(r"^(?P<disk>.*\d)p\d+$")
_PARTITION_LETTERS = re.compile(r"^(?P<disk>(?:sd|hd|vd|xvd|df)[a-z]+)\d+$")
# NVMe namespace (optionally a multipath path nvme0c1n1, optionally a partition) -> controller.
_NVME_NAMESPACE = re.compile(r"^(?P<ctrl>nvme\d+)(?:c\d+)?n\d+(?:p\d+)?$")


@dataclasses.dataclass(frozen=True)
class LineError:
    """A diskstats line that was skipped, and why.

    ``reason`` names the fault (a field count, the one bad token), not the line's counters, so
    a line that stays broken gives the same reason on every read while its counters move:
    ``(device, reason)`` is a key for logging it once.
    """

    lineno: int
    device: Optional[str]  # the third field, when the line has one
    reason: str
    line: str

    def __str__(self) -> str:
        return f"line {self.lineno}: {self.reason}: {self.line!r}"


class DiskstatsReading(collections.abc.Mapping):
    """One diskstats snapshot: counters keyed by kernel device name, plus the lines skipped.

    It is a read-only mapping (``reading["sda"]``, ``.items()``), so code that wants the
    counters alone uses it as a dict; ``errors`` lists the lines that could not be read.
    """

    def __init__(self, stats: Mapping[str, IoStats], errors: Sequence[LineError] = ()) -> None:
        self._stats: Dict[str, IoStats] = dict(stats)
        self.errors: Tuple[LineError, ...] = tuple(errors)

    def __getitem__(self, name: str) -> IoStats:
        return self._stats[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._stats)

    def __len__(self) -> int:
        return len(self._stats)

    def __eq__(self, other: object) -> bool:
        # Against another reading the skipped lines count too; against a plain mapping only
        # the counters can be compared.
        if isinstance(other, DiskstatsReading):
            return self._stats == other._stats and self.errors == other.errors
        if isinstance(other, collections.abc.Mapping):
            return self._stats == dict(other.items())
        return NotImplemented

    def __repr__(self) -> str:
        return f"DiskstatsReading({self._stats!r}, errors={self.errors!r})"


class _BadLine(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _counter(token: str) -> int:
    # isdigit() rejects "-1", "+1", "1.5" and "0x10": the kernel prints unsigned decimals.
    if not token.isascii() or not token.isdigit():
        raise _BadLine(f"{token!r} is not a non-negative integer")
    return int(token)


def _parse_line(fields: List[str]) -> Optional[IoStats]:
    """The counters of one split line; None for an old 7-field partition line. Raises _BadLine."""
    count = len(fields)
    if count != _OLD_PARTITION_FIELDS and count < _BASE_FIELDS:
        raise _BadLine(f"{count} fields, expected 7 or at least 14")
    _counter(fields[0])  # major
    _counter(fields[1])  # minor
    values = [_counter(tok) for tok in fields[3:]]  # every field is checked, used or not
    if count == _OLD_PARTITION_FIELDS:
        # Pre-2.6.25 partition line: only reads, sectors read, writes, sectors written. IoStats
        # cannot say "merged/time unknown" and absent is not zero, so the line is checked and
        # then left out; the parent disk's own line carries the full counters.
        return None
    v = values
    stats = IoStats(
        reads_completed=v[0],
        reads_merged=v[1],
        read_bytes=v[2] * DISKSTATS_SECTOR_BYTES,
        read_time_seconds=v[3] / _MS_PER_SECOND,
        writes_completed=v[4],
        writes_merged=v[5],
        written_bytes=v[6] * DISKSTATS_SECTOR_BYTES,
        write_time_seconds=v[7] / _MS_PER_SECOND,
        in_flight=v[8],  # a gauge, not a counter
        io_time_seconds=v[9] / _MS_PER_SECOND,
        weighted_io_time_seconds=v[10] / _MS_PER_SECOND,
    )
    # 15..17 fields: a partial discard group, checked above and not used (see the module doc).
    if count >= _DISCARD_FIELDS:
        # v[12] is "discards merged": IoStats has no field for it.
        stats = dataclasses.replace(
            stats,
            discards_completed=v[11],
            discarded_bytes=v[13] * DISKSTATS_SECTOR_BYTES,
            discard_time_seconds=v[14] / _MS_PER_SECOND,
        )
    if count >= _FLUSH_FIELDS:
        stats = dataclasses.replace(stats, flushes_completed=v[15], flush_time_seconds=v[16] / _MS_PER_SECOND)
    return stats


class _Collector:
    """Accumulates one snapshot: good lines into ``stats``, bad ones into ``errors``."""

    def __init__(self) -> None:
        self.stats: Dict[str, IoStats] = {}
        self.errors: List[LineError] = []

    def add(self, fields: List[str], lineno: int, line: str) -> bool:
        """Read one device line; True when it was usable (an old partition line counts)."""
        device = fields[2] if len(fields) > 2 else None
        try:
            stats = _parse_line(fields)
            if stats is not None and device in self.stats:
                raise _BadLine(f"device {device!r} appears twice in one snapshot; the first line is kept")
        except _BadLine as bad:
            self.errors.append(LineError(lineno, device, bad.reason, line.strip()))
            return False
        if stats is not None:
            self.stats[fields[2]] = stats  # a line with counters has at least 14 fields
        return True

    def reading(self) -> DiskstatsReading:
        return DiskstatsReading(self.stats, self.errors)


def _nothing_usable(errors: Sequence[LineError]) -> ParseError:
    first = errors[0]
    more = f" (and {len(errors) - 1} more bad lines)" if len(errors) > 1 else ""
    return ParseError(f"no usable diskstats line: {first}{more}")


@numbers.guarded("/proc/diskstats")
def parse_diskstats(text: str) -> DiskstatsReading:
    """Parse one /proc/diskstats snapshot into counters keyed by kernel device name.

    Every device is returned, partitions and virtual devices included (see whole_disks()),
    except 7-field partition lines of kernels before 2.6.25, which are checked and skipped.
    A line that cannot be read is left out and listed in the result's ``errors``; the other
    lines are kept. Raises ParseError for empty input, input with no usable line, and a
    pt-stalk ``TS`` line (use parse_diskstats_snapshots).
    """
    collector = _Collector()
    seen_line = False
    usable = False
    for lineno, line in enumerate(text.splitlines(), start=1):
        fields = line.split()
        if not fields:
            continue
        seen_line = True
        if fields[0] == "TS":
            raise ParseError(
                f"line {lineno}: timestamp line in a single snapshot (use parse_diskstats_snapshots): {line.strip()!r}"
            )
        usable = collector.add(fields, lineno, line) or usable
    if not seen_line:
        raise ParseError("empty diskstats")
    if not usable:
        raise _nothing_usable(collector.errors)
    return collector.reading()


@numbers.guarded("/proc/diskstats")
def parse_diskstats_snapshots(text: str) -> List[Tuple[Optional[float], DiskstatsReading]]:
    """Parse a series of diskstats snapshots as pt-stalk / pt-diskstats capture them.

    Each snapshot starts with ``TS <unix time> [<anything>]``; lines before the first TS line
    form a snapshot without a time (so plain /proc/diskstats gives one ``(None, {...})``).
    A TS line with no device lines after it gives an empty snapshot: it is what was captured.
    Bad device lines are left out and listed in their snapshot's ``errors``. Raises ParseError
    for empty input, a malformed TS line (it would misplace every snapshot boundary after it),
    and device lines none of which could be read.
    """
    snapshots: List[Tuple[Optional[float], _Collector]] = []
    current: Optional[_Collector] = None
    seen_line = False
    device_lines = 0
    usable = False
    for lineno, line in enumerate(text.splitlines(), start=1):
        fields = line.split()
        if not fields:
            continue
        seen_line = True
        if fields[0] == "TS":
            if len(fields) < 2:
                raise ParseError(f"line {lineno}: TS line without a time: {line.strip()!r}")
            try:
                stamp = float(fields[1])
            except ValueError:
                raise ParseError(f"line {lineno}: TS time {fields[1]!r} is not a number: {line.strip()!r}") from None
            if stamp != stamp or stamp < 0:  # NaN or negative
                raise ParseError(f"line {lineno}: TS time out of range: {line.strip()!r}")
            current = _Collector()
            snapshots.append((stamp, current))
            continue
        if current is None:
            current = _Collector()
            snapshots.append((None, current))
        device_lines += 1
        usable = current.add(fields, lineno, line) or usable
    if not seen_line:
        raise ParseError("empty diskstats")
    if device_lines and not usable:
        raise _nothing_usable([e for _, c in snapshots for e in c.errors])
    return [(stamp, collector.reading()) for stamp, collector in snapshots]


def _is_partition(name: str) -> bool:
    return bool(_PARTITION_P.match(name) or _PARTITION_LETTERS.match(name))


def _is_excluded_virtual(name: str, include_dm: bool, include_loop: bool) -> bool:
    if _ALWAYS_VIRTUAL.match(name):
        return True
    if _DM.match(name):
        return not include_dm
    if _LOOP.match(name):
        return not include_loop
    return False


def whole_disks(
    stats: Mapping[str, IoStats],
    sysfs_root: Optional[str] = None,
    include_dm: bool = False,
    include_loop: bool = False,
) -> Dict[str, IoStats]:
    """Keep one entry per whole disk.

    Partitions are dropped, not summed: the disk's own line already counts every I/O to its
    partitions, so adding them would count those twice. Virtual devices (ram, zram, sr, md, fd;
    dm-* and loop* unless asked for) are dropped by name in both modes.

    Without ``sysfs_root`` partitions are recognised by the kernel's naming rules (see
    _PARTITION_*). With it, a device is a whole disk when ``<sysfs_root>/block/<name>`` exists
    (the kernel lists only whole disks there; a "/" in a name such as cciss/c0d0 is "!" in
    sysfs). A missing ``<sysfs_root>/block`` raises OSError: it means a wrong configuration.
    """
    members = None
    if sysfs_root is not None:
        members = set(os.listdir(os.path.join(sysfs_root, "block")))
    out: Dict[str, IoStats] = {}
    for name, counters in stats.items():
        if _is_excluded_virtual(name, include_dm, include_loop):
            continue
        if members is not None:
            if name.replace("/", "!") not in members:
                continue
        elif _is_partition(name):
            continue
        out[name] = counters
    return out


def drive_device_for(block_device: str) -> str:
    """The drive name the agent keys a block device's I/O under.

    NVMe counters are per namespace (nvme0n1) while the drive is the controller (nvme0); a
    partition maps to its disk (sda1 -> sda, dfa1 -> dfa); everything else, Shannon's dfa
    included, is its own drive. Name-based: with native NVMe multipath the number in nvme0n1 is
    the subsystem's, which need not match a controller's; sysfs would be needed to tell.
    """
    nvme = _NVME_NAMESPACE.match(block_device)
    if nvme:
        return nvme.group("ctrl")
    for pattern in (_PARTITION_P, _PARTITION_LETTERS):
        part = pattern.match(block_device)
        if part:
            return part.group("disk")
    return block_device


def fold_by_drive(disks: Mapping[str, IoStats]) -> Dict[str, IoStats]:
    """Fold whole-disk counters into one entry per drive, keyed by :func:`drive_device_for`.

    Only NVMe folds in practice: namespaces nvme0n1, nvme0n2 (and multipath paths nvme0c1n1)
    become controller nvme0. Pass whole disks (see whole_disks()): a partition folded into its
    disk would count its I/O twice.

    Counts, bytes and times spent (read, write, discard, flush and the weighted time, which
    adds up every request's time in the queue) are summed, as are the requests in flight.
    Busy time (``io_time_seconds``, the wall time with at least one request in flight) is
    not: two namespaces busy during the same second would add up to two busy seconds, a
    utilisation of 200%. The controller's true busy time lies between the largest namespace's
    and the sum; the largest is taken, a lower bound that never exceeds wall time and is exact
    when one namespace carries the load. A maximum of counters still only grows, unless the
    busiest namespace is removed, which reads as a counter reset. A field that any namespace
    does not report (None) is None for the drive.
    """
    out: Dict[str, IoStats] = {}
    for name in sorted(disks):
        label = drive_device_for(name)
        out[label] = _fold(out.get(label), disks[name])
    return out


def _fold(a: Optional[IoStats], b: IoStats) -> IoStats:
    if a is None:
        return b
    values = {}
    for field in dataclasses.fields(IoStats):
        x, y = getattr(a, field.name), getattr(b, field.name)
        if x is None or y is None:
            values[field.name] = None
        elif field.name == "io_time_seconds":
            values[field.name] = max(x, y)
        else:
            values[field.name] = x + y
    return IoStats(**values)


_DEFAULT_PROCFS = "/proc"


class DiskstatsReader:
    """Reads ``<procfs_root>/diskstats`` and parses it.

    OSError from reading propagates, and so does ParseError for a file with no usable line:
    the source records the run as failed. Lines skipped in a file that was otherwise read are
    in the result's ``errors``.
    """

    def __init__(self, procfs_root: str = _DEFAULT_PROCFS) -> None:
        self.procfs_root = procfs_root

    @property
    def path(self) -> str:
        return os.path.join(self.procfs_root, "diskstats")

    def read(self) -> DiskstatsReading:
        """The current counters; bad lines are in the result's ``errors``."""
        with open(self.path, encoding="ascii", errors="replace") as handle:
            return parse_diskstats(handle.read())


# ------------------------------------------------------------------ the source

log = logging.getLogger("ssdfleet.diskstats")


class DiskstatsSettings(BaseModel):
    """The ``diskstats:`` config section. Device-mapper and loop devices are not drives; a host
    that wants their counters anyway (a dm-crypt volume as the only view of a disk) can have
    them, and discovery then lists them as drives of their own. (Until issue 27 these were the
    top-level ``include_device_mapper`` and ``include_loop``; those are still read for one
    release, with a warning.)"""

    model_config = ConfigDict(extra="forbid", frozen=True)

    include_device_mapper: bool = False
    include_loop: bool = False


def virtual_devices(settings: Optional[DiskstatsSettings]) -> Tuple[str, ...]:
    """The virtual block devices (kernel-name prefixes) discovery lists as drives for us."""
    if settings is None:
        return ()
    return tuple(prefix for prefix, wanted in (("dm-", settings.include_device_mapper),
                                               ("loop", settings.include_loop)) if wanted)


class DiskstatsSource(Source):
    def __init__(self, ctx: SourceContext) -> None:
        super().__init__(ctx)
        self.settings: DiskstatsSettings = ctx.settings or DiskstatsSettings()
        self.reader = DiskstatsReader(procfs_root=ctx.config.paths.procfs)
        self._io: Dict[str, IoStats] = {}
        self._time = 0.0
        self._bad_lines: Set[Tuple[str, str]] = set()  # (device, reason) already counted

    def run(self, budget: Optional[float] = None) -> RunResult:
        config = self.ctx.config
        errors: List[str] = []
        unread: List[str] = []
        try:
            stats = self.reader.read()
            disks = whole_disks(stats, sysfs_root=config.paths.sysfs,
                                include_dm=self.settings.include_device_mapper,
                                include_loop=self.settings.include_loop)
        except (OSError, ParseError) as exc:
            errors.append(f"diskstats: {exc}")
            disks = None
        if disks is not None:
            # A line the parser could not read costs only that device its counters. Each bad
            # line is counted once; while it stays, the source is not a success.
            for bad in stats.errors:
                key = (bad.device, bad.reason)
                if key in self._bad_lines:
                    unread.append(f"diskstats: {bad}")
                else:
                    self._bad_lines.add(key)
                    errors.append(f"diskstats: skipped {bad}")
            self._io = fold_by_drive(disks)
            self._time = self.ctx.clock()
        for e in errors:
            log.warning("%s", e)
        return RunResult(tuple(errors), tuple(unread))

    def report(self) -> Report:
        when = self._time
        if not when:
            return Report()
        return Report(per_drive={name: (io, when) for name, io in self._io.items()})


SPEC = SourceSpec(
    name="diskstats",
    help="iostat-style counters per drive from /proc/diskstats",
    interval=15.0,
    build=DiskstatsSource,
    role=ANNOTATE,
    settings=DiskstatsSettings,
    virtual_devices=virtual_devices,
    annotates="io",
    priority=90,
    moved_keys={"include_device_mapper": "include_device_mapper", "include_loop": "include_loop"},
)
