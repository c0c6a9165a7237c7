"""Block-layer I/O counters from /proc/diskstats (what iostat reads).

A line of /proc/diskstats (Documentation/admin-guide/iostats.rst)::

       8       0 sda 14200 3361 892828 5058 18736 13416 715384 12604 0 24940 17663 0 0 0 0 0 0

after major, minor and name: reads completed, reads merged, sectors read, ms reading; writes
completed, writes merged, sectors written, ms writing; I/Os in flight, ms busy, weighted ms;
then (4.18+) discards completed, merged, sectors, ms; then (5.5+) flushes completed, ms.

The kernel only ever appends groups of counters, so a whole-disk line has 3 + 11 fields (up to
4.17), 3 + 15 (4.18 adds discards completed/merged/sectors/ms) or 3 + 17 (5.5 adds flushes
completed/ms). Kernels before 2.6.25 printed partitions with 4 counters only (reads, sectors
read, writes, sectors written): 7 fields. Any other count is not kernel output and is rejected:
sysstat's test suite, for one, carries a 17-field line.

Units are converted here, once: a diskstats "sector" is always 512 bytes whatever the device's
logical sector size (the block layer counts in 512-byte units), and all times are milliseconds.

``parse_*`` functions are pure; :class:`DiskstatsReader` does the reading.
"""

from __future__ import annotations

import dataclasses
import os
import re
from typing import Dict, List, Mapping, Optional, Tuple

from agent.model import IoStats, ParseError

# The block layer's unit, independent of the device's logical block size (see the module doc).
DISKSTATS_SECTOR_BYTES = 512
_MS_PER_SECOND = 1000.0

# 3 identifying fields + counters. 7: partition on kernels < 2.6.25; 14: base; 18: + discards
# (4.18); 20: + flushes (5.5). Longer lines are read as 20 (a future kernel appending a group).
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


def _counter(token: str, lineno: int, line: str) -> int:
    # isdigit() rejects "-1", "+1", "1.5" and "0x10": the kernel prints unsigned decimals.
    if not token.isascii() or not token.isdigit():
        raise ParseError(f"line {lineno}: {token!r} is not a non-negative integer: {line.strip()!r}")
    return int(token)


def _parse_line(line: str, lineno: int) -> Optional[Tuple[str, IoStats]]:
    """One diskstats line -> (name, counters); None for an old 7-field partition line."""
    fields = line.split()
    count = len(fields)
    if count not in (_OLD_PARTITION_FIELDS, _BASE_FIELDS, _DISCARD_FIELDS) and count < _FLUSH_FIELDS:
        raise ParseError(f"line {lineno}: {count} fields, expected 7, 14, 18 or 20: {line.strip()!r}")
    _counter(fields[0], lineno, line)  # major
    _counter(fields[1], lineno, line)  # minor
    name = fields[2]
    values = [_counter(tok, lineno, line) for tok in fields[3:]]
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
    return name, stats


def _add(snapshot: Dict[str, IoStats], parsed: Optional[Tuple[str, IoStats]], lineno: int) -> None:
    if parsed is None:
        return
    name, stats = parsed
    if name in snapshot:
        raise ParseError(f"line {lineno}: device {name!r} appears twice in one snapshot")
    snapshot[name] = stats


def parse_diskstats(text: str) -> Dict[str, IoStats]:
    """Parse one /proc/diskstats snapshot into counters keyed by kernel device name.

    Every device is returned, partitions and virtual devices included (see whole_disks()),
    except 7-field partition lines of kernels before 2.6.25, which are checked and skipped.
    Raises ParseError for empty input, a line of the wrong shape, a non-numeric or negative
    counter, a device listed twice, or a pt-stalk ``TS`` line (use parse_diskstats_snapshots).
    """
    snapshot: Dict[str, IoStats] = {}
    seen_line = False
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        seen_line = True
        if line.split()[0] == "TS":
            raise ParseError(
                f"line {lineno}: timestamp line in a single snapshot (use parse_diskstats_snapshots): {line.strip()!r}"
            )
        _add(snapshot, _parse_line(line, lineno), lineno)
    if not seen_line:
        raise ParseError("empty diskstats")
    return snapshot


def parse_diskstats_snapshots(text: str) -> List[Tuple[Optional[float], Dict[str, IoStats]]]:
    """Parse a series of diskstats snapshots as pt-stalk / pt-diskstats capture them.

    Each snapshot starts with ``TS <unix time> [<anything>]``; lines before the first TS line
    form a snapshot without a time (so plain /proc/diskstats gives one ``(None, {...})``).
    A TS line with no device lines after it gives an empty snapshot: it is what was captured.
    """
    snapshots: List[Tuple[Optional[float], Dict[str, IoStats]]] = []
    current: Optional[Dict[str, IoStats]] = None
    seen_line = False
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        seen_line = True
        fields = line.split()
        if fields[0] == "TS":
            if len(fields) < 2:
                raise ParseError(f"line {lineno}: TS line without a time: {line.strip()!r}")
            try:
                stamp = float(fields[1])
            except ValueError:
                raise ParseError(f"line {lineno}: TS time {fields[1]!r} is not a number: {line.strip()!r}") from None
            if stamp != stamp or stamp < 0:  # NaN or negative
                raise ParseError(f"line {lineno}: TS time out of range: {line.strip()!r}")
            current = {}
            snapshots.append((stamp, current))
            continue
        if current is None:
            current = {}
            snapshots.append((None, current))
        _add(current, _parse_line(line, lineno), lineno)
    if not seen_line:
        raise ParseError("empty diskstats")
    return snapshots


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


_DEFAULT_PROCFS = "/proc"


class DiskstatsReader:
    """Reads ``<procfs_root>/diskstats`` and parses it.

    ``use_psutil`` reads through ``psutil.disk_io_counters(perdisk=True, nowrap=False)``
    instead; psutil can only read the real /proc, so it is used only when ``procfs_root`` is the
    default. psutil itself reads /proc/diskstats and reports fewer fields: it has no in-flight
    count, weighted time, discards or flushes. The discard and flush fields are left absent;
    ``in_flight`` and ``weighted_io_time_seconds`` are required by IoStats and are set to 0,
    which is not a measurement. Prefer the file.

    OSError from reading propagates: the poller records the collector as failed.
    """

    def __init__(self, procfs_root: str = _DEFAULT_PROCFS, use_psutil: bool = False) -> None:
        self.procfs_root = procfs_root
        self.use_psutil = use_psutil

    @property
    def path(self) -> str:
        return os.path.join(self.procfs_root, "diskstats")

    def read(self) -> Dict[str, IoStats]:
        if self.use_psutil and os.path.normpath(self.procfs_root) == _DEFAULT_PROCFS:
            return self._read_psutil()
        with open(self.path, encoding="ascii", errors="replace") as handle:
            return parse_diskstats(handle.read())

    @staticmethod
    def _read_psutil() -> Dict[str, IoStats]:
        import psutil  # optional dependency, imported only on this path

        # nowrap=False: psutil would otherwise keep process-wide state to hide counter wraps,
        # and the two paths would disagree.
        counters = psutil.disk_io_counters(perdisk=True, nowrap=False) or {}
        out: Dict[str, IoStats] = {}
        for name, c in counters.items():
            out[name] = IoStats(
                reads_completed=c.read_count,
                reads_merged=c.read_merged_count,
                read_bytes=c.read_bytes,  # psutil already multiplied sectors by 512
                read_time_seconds=c.read_time / _MS_PER_SECOND,
                writes_completed=c.write_count,
                writes_merged=c.write_merged_count,
                written_bytes=c.write_bytes,
                write_time_seconds=c.write_time / _MS_PER_SECOND,
                in_flight=0,  # not reported by psutil (see the class doc)
                io_time_seconds=c.busy_time / _MS_PER_SECOND,
                weighted_io_time_seconds=0.0,  # not reported by psutil
            )
        return out
