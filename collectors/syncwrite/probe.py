"""An opt-in sync-write probe: how long a commit-sized synchronous write takes, measured.

The kernel's counters say how long flushes took for whatever the host did; this probe asks the
question a database asks, in the directory it uses. Like pg_test_fsync's one-write test, it
writes 8 kB and calls ``fdatasync`` (or opens the file ``O_DSYNC`` so that each write is
synchronous), repeatedly, and times each write-and-sync. The source documents show the spread
this measures: a consumer SSD did 13,786 fdatasync/s with its write cache on and 519/s with it
off (seeds/001); a Shannon card sustained 80,000/s and an OCZ RevoDrive 2,000 (seeds/000).

Safety on a database host, which is why every bound is explicit:

* It writes only to one file it owns, :data:`PROBE_FILE_NAME` in the configured directory,
  created ``0600`` and reused. The file is opened ``O_NOFOLLOW`` and must be a regular file
  owned by the agent's user: a symlink or someone else's file of that name is left alone and
  the run is skipped with the reason. No other file is opened, read or written.
* The file never grows beyond ``file_bytes``: writes cycle through its blocks.
* A burst stops at ``max_writes`` writes, at ``max_seconds`` (checked before every write) and is
  paced to at most ``max_ops_per_second``, so it cannot saturate the drive the database uses.
* It does not write at all on a read-only filesystem or one with less than ``min_free_bytes``
  and ``min_free_ratio`` free; the result says why it skipped. A directory that is read-only
  only to this process (a read-only mount over a writable filesystem, which is what the
  shipped unit's ``ProtectSystem=strict`` makes of every directory it does not list in
  ``ReadWritePaths=``) is told apart, from ``/proc/self/mountinfo``, so the reason names the
  fix (``ssdfleet syncwrite-dropin``, docs/runbooks.md).
* A single fdatasync on a hung device can block in the kernel for ever and Python cannot
  interrupt it: :class:`SyncWriteProbe` runs each burst in a worker thread, waits at most
  ``max_seconds`` plus a grace, reports the directory as stuck and starts no new burst there
  until the old one has returned.

The source that runs it on its interval is :mod:`collectors.syncwrite.source`; how its
results are shown, :mod:`collectors.syncwrite.view`. :func:`run_burst` does the I/O; :func:`summarise`, :func:`quantile`, :func:`parse_mountinfo`
and :func:`mount_of` are pure.
"""

from __future__ import annotations

import errno
import math
import os
import re
import stat
import threading
import time
from dataclasses import dataclass, replace
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from collectors.model import ParseError

PROBE_FILE_NAME = ".ssdfleet-syncwrite.probe"
METHOD_FDATASYNC = "fdatasync"
METHOD_O_DSYNC = "o_dsync"

# Why a run wrote nothing (the ``reason`` label of ssd_syncwrite_skipped).
SKIP_READ_ONLY = "read_only"
# Read-only to the agent alone: a read-only mount over a writable filesystem (the unit's sandbox).
SKIP_SANDBOX = "read_only_sandbox"
SKIP_NO_PERMISSION = "no_permission"
SKIP_NEARLY_FULL = "nearly_full"
SKIP_NOT_OURS = "not_our_file"
SKIP_MISSING = "no_directory"
SKIP_ERROR = "error"
SKIP_STUCK = "stuck"
# Reasons only the operator can clear: the collector fails (ssd_collector_success 0) with them.
SKIP_FAILURES = (SKIP_ERROR, SKIP_STUCK, SKIP_SANDBOX, SKIP_NO_PERMISSION)

# The mount table of this process's own mount namespace: the question is why *this* process
# cannot write, so it is not taken from paths.procfs (which may point at another host's tree).
MOUNTINFO = "/proc/self/mountinfo"
FIX_DOC = "docs/runbooks.md, \"The sync-write probe under systemd\""


@dataclass(frozen=True)
class SyncWriteSettings:
    block_bytes: int = 8192  # one PostgreSQL WAL block, as pg_test_fsync writes
    max_writes: int = 64
    max_seconds: float = 1.0
    max_ops_per_second: float = 1000.0
    file_bytes: int = 64 * 1024
    min_free_bytes: int = 64 * 1024 * 1024
    min_free_ratio: float = 0.02
    o_dsync: bool = False

    @property
    def method(self) -> str:
        return METHOD_O_DSYNC if self.o_dsync else METHOD_FDATASYNC


@dataclass(frozen=True)
class SyncWriteResult:
    """One burst in one directory. ``latencies`` are seconds per write-and-sync, in order."""

    directory: str
    method: str
    started: float  # unix time
    latencies: Tuple[float, ...] = ()
    elapsed_seconds: float = 0.0
    written_bytes: int = 0
    skipped: Optional[str] = None  # one of the SKIP_* reasons; None when it wrote
    detail: Optional[str] = None  # the error or the numbers behind a skip
    # Filled in by SyncWriteProbe: the kernel name of the drive under the directory (sysfs),
    # and the probe's totals for this directory since the agent started.
    device: Optional[str] = None
    ops_total: int = 0
    latency_seconds_total: float = 0.0
    written_bytes_total: int = 0

    @property
    def ops(self) -> int:
        return len(self.latencies)

    @property
    def ops_per_second(self) -> Optional[float]:
        busy = sum(self.latencies)
        return self.ops / busy if self.ops and busy > 0 else None


def quantile(values: Sequence[float], q: float) -> Optional[float]:
    """The q-quantile (0..1) of ``values`` by linear interpolation between closest ranks;
    None for no values."""
    if not values:
        return None
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"quantile {q} is outside 0..1")
    ordered = sorted(values)
    pos = q * (len(ordered) - 1)
    low, high = math.floor(pos), math.ceil(pos)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def summarise(result: SyncWriteResult, quantiles: Sequence[float] = (0.5, 0.9, 0.99, 1.0)) -> Dict[float, float]:
    """Latency quantiles of one burst (1.0 is the slowest write)."""
    out = {}
    for q in quantiles:
        value = quantile(result.latencies, q)
        if value is not None:
            out[q] = value
    return out


@dataclass(frozen=True)
class Mount:
    """One line of /proc/PID/mountinfo (proc(5)), the fields the probe needs."""

    mount_point: str
    fstype: str
    source: str
    mount_read_only: bool  # this mount's own flag (a bind mount can be read-only on its own)
    fs_read_only: bool  # the filesystem's (superblock's) flag


def _unescape(field: str) -> str:
    # The kernel writes space, tab, newline and backslash in paths as octal escapes (\040).
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def parse_mountinfo(text: str) -> List[Mount]:
    """The mounts in a /proc/PID/mountinfo text, in the kernel's order (later mounts on the
    same point are on top). A line::

        36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue

    is mount ID, parent ID, major:minor, root, mount point, mount options, optional fields
    ending at ``-``, then filesystem type, source and superblock options."""
    mounts = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        fields = line.split(" ")
        try:
            sep = fields.index("-", 6)
        except ValueError:
            raise ParseError(f"mountinfo line {number}: no ' - ' after the optional fields: {line[:200]!r}") from None
        if sep + 3 >= len(fields) or not fields[4].startswith("/"):
            raise ParseError(f"mountinfo line {number}: too few fields or no mount point: {line[:200]!r}")
        mounts.append(Mount(mount_point=_unescape(fields[4]), fstype=fields[sep + 1], source=_unescape(fields[sep + 2]),
                            mount_read_only="ro" in fields[5].split(","),
                            fs_read_only="ro" in fields[sep + 3].split(",")))
    return mounts


def mount_of(mounts: Sequence[Mount], path: str) -> Optional[Mount]:
    """The mount ``path`` (absolute, symlinks resolved) lies on: the longest mount point that is
    ``path`` or one of its parents; of several on one point, the last listed (it is on top)."""
    best = None
    for mount in mounts:
        point = mount.mount_point
        if path == point or path.startswith(point.rstrip("/") + "/"):
            if best is None or len(point) >= len(best.mount_point):
                best = mount
    return best


def read_only_reason(directory: str, mountinfo: str) -> Tuple[str, str]:
    """Why ``directory`` is read-only: the filesystem itself, or a read-only mount over a
    writable filesystem (a sandbox), from this process's mount table."""
    try:
        with open(mountinfo, encoding="utf-8", errors="surrogateescape") as handle:
            mount = mount_of(parse_mountinfo(handle.read()), os.path.realpath(directory))
    except (OSError, ParseError) as exc:
        return SKIP_READ_ONLY, f"{directory} is on a read-only mount ({mountinfo} unreadable: {exc})"
    if mount is not None and mount.mount_read_only and not mount.fs_read_only:
        return SKIP_SANDBOX, (
            f"{directory} is read-only to the agent although its filesystem ({mount.fstype} on {mount.source}) "
            f"is writable: a read-only mount over {mount.mount_point}, as the unit's ProtectSystem=strict makes; "
            f"allow it with `ssdfleet syncwrite-dropin` ({FIX_DOC})")
    return SKIP_READ_ONLY, f"{directory} is on a read-only filesystem"


def _space_problem(directory: str, settings: SyncWriteSettings, mountinfo: str) -> Optional[Tuple[str, str]]:
    st = os.statvfs(directory)
    if st.f_flag & os.ST_RDONLY:
        return read_only_reason(directory, mountinfo)
    free = st.f_bavail * st.f_frsize
    total = st.f_blocks * st.f_frsize
    need = settings.min_free_bytes + settings.file_bytes
    if free < need or (total and free / total < settings.min_free_ratio):
        return SKIP_NEARLY_FULL, (f"{free} bytes free of {total}: the probe needs {need} bytes and "
                                  f"{settings.min_free_ratio:.0%} free")
    return None


def _open_probe_file(path: str, settings: SyncWriteSettings) -> int:
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
    if settings.o_dsync:
        flags |= os.O_DSYNC
    return os.open(path, flags, 0o600)


def run_burst(
    directory: str,
    settings: SyncWriteSettings = SyncWriteSettings(),
    clock: Callable[[], float] = time.monotonic,
    wall_clock: Callable[[], float] = time.time,
    sleep: Callable[[float], None] = time.sleep,
    mountinfo: str = MOUNTINFO,
) -> SyncWriteResult:
    """One bounded burst of synchronous writes into ``directory``'s probe file."""
    started = wall_clock()
    method = settings.method

    def skipped(reason: str, detail: str) -> SyncWriteResult:
        return SyncWriteResult(directory, method, started, skipped=reason, detail=detail)

    try:
        if not stat.S_ISDIR(os.stat(directory).st_mode):
            return skipped(SKIP_MISSING, f"{directory} is not a directory")
    except PermissionError:
        return skipped(SKIP_NO_PERMISSION, (
            f"{directory}: a directory above it is not searchable by uid {os.geteuid()}; give the probe a "
            f"directory of its own that the agent's user can reach ({FIX_DOC})"))
    except OSError as exc:
        return skipped(SKIP_MISSING, f"{directory}: {exc.strerror}")
    try:
        problem = _space_problem(directory, settings, mountinfo)
    except OSError as exc:
        return skipped(SKIP_ERROR, f"statvfs {directory}: {exc.strerror}")
    if problem is not None:
        return skipped(*problem)
    path = os.path.join(directory, PROBE_FILE_NAME)
    try:
        fd = _open_probe_file(path, settings)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return skipped(SKIP_NOT_OURS, f"{path} is a symbolic link; not following it")
        if exc.errno == errno.EROFS:
            return skipped(*read_only_reason(directory, mountinfo))
        if exc.errno in (errno.EACCES, errno.EPERM):
            return skipped(SKIP_NO_PERMISSION, (
                f"open {path}: {exc.strerror}: uid {os.geteuid()} may not create files there; give the probe a "
                f"directory of its own owned by the agent's user ({FIX_DOC})"))
        return skipped(SKIP_ERROR, f"open {path}: {exc.strerror}")
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
            return skipped(SKIP_NOT_OURS, f"{path} is not a regular file owned by uid {os.geteuid()}")
        slots = max(1, settings.file_bytes // settings.block_bytes)
        block = os.urandom(settings.block_bytes)  # incompressible, like WAL
        latencies = []
        written = 0
        spacing = 1.0 / settings.max_ops_per_second
        begin = clock()
        deadline = begin + settings.max_seconds
        next_start = begin
        for i in range(settings.max_writes):
            now = clock()
            if now >= deadline:
                break
            if now < next_start:
                if next_start >= deadline:
                    break
                sleep(next_start - now)
            t0 = clock()
            os.pwrite(fd, block, (i % slots) * settings.block_bytes)
            if not settings.o_dsync:
                os.fdatasync(fd)
            t1 = clock()
            latencies.append(t1 - t0)
            written += settings.block_bytes
            next_start = t0 + spacing
        return SyncWriteResult(directory, method, started, tuple(latencies), clock() - begin, written)
    except OSError as exc:
        reason = SKIP_NEARLY_FULL if exc.errno == errno.ENOSPC else SKIP_ERROR
        return skipped(reason, f"writing {path}: {exc.strerror}")
    finally:
        os.close(fd)


def block_device_of(directory: str, sysfs_root: str = "/sys") -> Optional[str]:
    """The whole-disk kernel name (sda, nvme0n1) holding ``directory``, from its st_dev and
    ``<sysfs>/dev/block/MAJ:MIN``; None for a filesystem on no block device (tmpfs, NFS) or
    one sysfs does not list. A partition gives its disk. A device-mapper or md device gives
    its own name (dm-0, md0): what lies under it is not followed here."""
    try:
        dev = os.stat(directory).st_dev
    except OSError:
        return None
    node = os.path.join(sysfs_root, "dev", "block", f"{os.major(dev)}:{os.minor(dev)}")
    if not os.path.exists(node):
        return None
    real = os.path.realpath(node)
    if os.path.exists(os.path.join(real, "partition")):
        real = os.path.dirname(real)
    return os.path.basename(real)


@dataclass
class _Directory:
    worker: Optional[threading.Thread] = None
    result: Optional[SyncWriteResult] = None
    device: Optional[str] = None
    late: Optional[Dict[str, SyncWriteResult]] = None  # the holder of a burst reported stuck
    # cumulative since the agent started, for the _count/_sum/_total series
    ops_total: int = 0
    seconds_total: float = 0.0
    bytes_total: int = 0


class SyncWriteProbe:
    """Runs bursts for a list of directories, one at a time, each bounded in wall time.

    :meth:`run` probes every directory once and returns the latest result per directory
    (a skip counts as a result). A burst that has not returned ``max_seconds + grace`` after
    it started is reported as ``stuck``; that directory gets no new burst until it returns.
    """

    def __init__(self, directories: Sequence[str], settings: SyncWriteSettings = SyncWriteSettings(),
                 grace_seconds: float = 5.0, sysfs_root: str = "/sys",
                 burst: Callable[..., SyncWriteResult] = run_burst) -> None:
        self.directories = [os.path.abspath(d) for d in directories]
        self.settings = settings
        self.grace_seconds = grace_seconds
        self.sysfs_root = sysfs_root
        self._burst = burst
        self._state: Dict[str, _Directory] = {d: _Directory() for d in self.directories}
        self._lock = threading.Lock()

    def run(self) -> Tuple[SyncWriteResult, ...]:
        for directory in self.directories:
            self._run_one(directory)
        return self.results()

    def _finish(self, state: _Directory, result: SyncWriteResult) -> None:
        """Record a result with the directory's device and totals. Caller holds the lock."""
        state.ops_total += result.ops
        state.seconds_total += sum(result.latencies)
        state.bytes_total += result.written_bytes
        state.result = replace(result, device=state.device, ops_total=state.ops_total,
                               latency_seconds_total=state.seconds_total, written_bytes_total=state.bytes_total)

    def _run_one(self, directory: str) -> None:
        state = self._state[directory]
        if state.worker is not None and state.worker.is_alive():
            with self._lock:
                self._finish(state, SyncWriteResult(
                    directory, self.settings.method, time.time(), skipped=SKIP_STUCK,
                    detail="the previous burst has not returned (a sync blocked in the kernel)"))
            return
        if state.late is not None:
            # A burst reported stuck has returned since: its writes count in the totals.
            late = state.late.get("result")
            state.late = None
            if late is not None:
                with self._lock:
                    state.ops_total += late.ops
                    state.seconds_total += sum(late.latencies)
                    state.bytes_total += late.written_bytes
        if state.device is None:
            state.device = block_device_of(directory, self.sysfs_root)
        holder: Dict[str, SyncWriteResult] = {}

        def work() -> None:
            holder["result"] = self._burst(directory, self.settings)

        started = time.time()
        worker = threading.Thread(target=work, name=f"syncwrite {directory}", daemon=True)
        state.worker = worker
        worker.start()
        worker.join(self.settings.max_seconds + self.grace_seconds)
        with self._lock:
            if worker.is_alive():
                state.late = holder
                self._finish(state, SyncWriteResult(
                    directory, self.settings.method, started, skipped=SKIP_STUCK,
                    detail=f"no answer {self.settings.max_seconds + self.grace_seconds:.0f} s "
                           "after the burst started (a sync blocked in the kernel)"))
                return
            self._finish(state, holder["result"])

    def results(self) -> Tuple[SyncWriteResult, ...]:
        with self._lock:
            return tuple(s.result for s in self._state.values() if s.result is not None)
