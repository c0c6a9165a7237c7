"""The background poller: discover, probe, parse, normalise, then swap in a new snapshot.

Each source runs in its own thread on its own interval (SMART every few minutes, diskstats
every few seconds), so a slow ``smartctl`` never delays iostat. Every tool call goes through
the bounded runner; at most ``max_concurrent_probes`` run at once and never two on the same
device. After each source run the poller builds a new immutable
:class:`~collectors.model.Snapshot`; HTTP handlers only ever read the current one.

A source that fails for one drive keeps serving that drive's last good values (their age is
exported); a drive that is no longer discovered leaves the snapshot.

Bounds, and what they do not cover:

* A probe that outlives SIGKILL (a process in D state, which the kernel will not let us reap)
  quarantines its device: no new probe starts on it until the process is gone, the device is
  listed in ``ssd_probe_stuck{device}`` and an error is logged. Host-wide calls (``smartctl
  --version``/``--scan-open``, ``shannon-status -a``) are quarantined the same way under their
  own name, since ``--scan-open`` opens every device and can hang on any of them.
* A SMART cycle in the background loop waits at most one interval for its probes. A probe
  still running then (a drive slower than the others, up to the tool timeout) finishes on its
  own and its result is applied when it arrives; the next cycle skips that drive instead of
  queueing a second probe, so one hanging drive never delays the others' data.
* ``-n standby``: smartctl does not wake a sleeping drive and exits with
  :data:`collectors.smartctl.STANDBY_EXIT_STATUS`; the drive keeps its last values (their age
  grows) and ``ssd_standby`` is 1. Like smartd's ``-n standby,N``, after
  ``smartctl_standby_max_skips`` (default :data:`STANDBY_MAX_SKIPS`) consecutive skips the next
  read goes without ``--nocheck``, waking the drive once, so its data is never unboundedly
  stale. 0 turns that off (never wake).
* A drive that vanishes between discovery and probe (smartctl: "No such device") is an error
  for that cycle, keeps its last values until the next discovery (which is asked to run early)
  drops it.
* Known gaps: the sysfs and procfs reads (block device discovery, write-cache queue files,
  /proc/diskstats) and the SQLite history run in this process; a driver that hangs a sysfs
  read, or a hung filesystem under the state directory, blocks that source's thread (only
  that one: the others and the HTTP side keep running) and Python cannot interrupt it.
  ``exec`` of a tool on a hung filesystem would block in ``Popen`` the same way.
"""

from __future__ import annotations

import functools
import logging
import os
import random
import re
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_futures
from dataclasses import dataclass, replace
from typing import Any, Callable, Dict, List, Optional, Sequence, Set, Tuple

from agent import durability
from agent import projection as projection_mod
from agent import syncwrite as syncwrite_mod
from agent.config import Config
from agent.endurance import rated_endurance
from agent.history import History, default_state_dir
from collectors import (
    blockdev,
    diskstats,
    drivedb,
    evidence,
    holders,
    passthrough,
    shannon,
    smartctl,
    smartctl_text,
    write_cache,
)
from collectors.model import (
    KIND_ATA,
    KIND_NVME,
    KIND_SCSI,
    KIND_SHANNON,
    CollectorStatus,
    Drive,
    DriveReading,
    IoStats,
    ParseError,
    Snapshot,
    WriteCacheState,
)
from collectors.runner import REAPER, ToolResult, run_tool

log = logging.getLogger("ssdfleet.poller")

Runner = Callable[..., ToolResult]

# smartctl -d types that reach a drive behind a controller: such a drive has no block device
# of its own (the kernel sees the controller's virtual disk).

# After this many consecutive SMART reads skipped because the drive was in standby, read it once
# without --nocheck (waking it), as smartd's "-n standby,N" does. At the default 5-minute
# interval that is one wake-up an hour. Config.smartctl_standby_max_skips overrides it.
STANDBY_MAX_SKIPS = 12

# Names under which host-wide tool calls are quarantined (they are not one device's probe).
SCAN_PROBE = "smartctl --scan-open"
VERSION_PROBE = "smartctl --version"
SHANNON_LIST_PROBE = "shannon-status -a"
HOLDERS_PROBE = "zpool status -P"  # issue 15: what each drive holds (host-wide, zpool can hang)

# smartctl's message when the device node is gone (ENODEV/ENOENT on open).
_VANISHED = ("No such device", "No such file or directory")


@dataclass(frozen=True)
class SmartTarget:
    device: str  # /dev/sda
    dev_type: Optional[str]  # sat, nvme, scsi, megaraid,0 ...

    @property
    def key(self) -> str:
        return f"{self.device}:{self.dev_type}" if self.dev_type else self.device

    @property
    def label(self) -> str:
        """The ``device`` label: the kernel name, qualified for pass-through drives."""
        name = self.device[5:] if self.device.startswith("/dev/") else self.device
        if passthrough.is_pass_through(self.dev_type):
            return f"{name}:{self.dev_type}"
        return name


class _SourceState:
    """What one collector last did, for ``ssd_collector_*``."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.success = True
        self.duration = 0.0
        self.last_run = 0.0
        self.error: Optional[str] = None
        self.errors_total = 0
        self.ran = False

    def status(self) -> CollectorStatus:
        return CollectorStatus(
            name=self.name,
            success=self.success,
            duration_seconds=self.duration,
            last_run=self.last_run,
            error=self.error,
            errors_total=self.errors_total,
        )


def use_drive_database(setting: str) -> None:
    """Load smartmontools' drive database the SMART normaliser names attributes by: the newest
    of the host's copies and the bundled one ("auto"), or the configured file. A file that
    cannot be read is logged and the bundled copy used: names from an older database are still
    better than none."""
    try:
        database = drivedb.best_available() if setting == "auto" else drivedb.load(setting)
    except OSError as exc:
        log.error("smartctl_drivedb %s cannot be read (%s); using the bundled %s", setting, exc,
                  drivedb.bundled().label)
        database = drivedb.bundled()
    if not database.entries or not database.defaults:
        log.error("smartctl_drivedb %s has no drive entries; using the bundled %s", setting, drivedb.bundled().label)
        database = drivedb.bundled()
    drivedb.use(database)
    log.info("drive database: %s from %s", database.label, database.origin)


class Poller:
    def __init__(
        self,
        config: Config,
        runner: Optional[Runner] = None,
        clock: Callable[[], float] = time.time,
        history: Optional[History] = None,
    ) -> None:
        self.config = config
        self.clock = clock
        use_drive_database(config.smartctl_drivedb)
        if runner is None and config.probe_helper_socket:
            from agent.privhelper import HelperRunner

            runner = HelperRunner(config.probe_helper_socket)
        self._run: Runner = runner or functools.partial(
            run_tool,
            timeout=config.tool_timeout_seconds,
            grace=config.tool_kill_grace_seconds,
            max_output=config.tool_max_output_bytes,
        )
        tools = config.tools
        timeout = config.tool_timeout_seconds
        # The collectors get a runner that notices a stuck tool wherever it runs (the write
        # cache reader hides its hdparm/nvme results inside the states it returns).
        watched = self._run_watched
        self.smartctl = smartctl.SmartctlProbe(tool=tools.smartctl, runner=watched, timeout=timeout)
        self.shannon = shannon.ShannonProbe(
            tool=tools.shannon_status, runner=watched, timeout=timeout, sysfs_root=config.paths.sysfs
        )
        self.write_cache = write_cache.WriteCacheReader(
            sysfs_root=config.paths.sysfs,
            hdparm=tools.hdparm,
            nvme=tools.nvme,
            smartctl=tools.smartctl,
            runner=watched,
            timeout=timeout,
            dev_root=config.paths.dev,
        )
        self.diskstats = diskstats.DiskstatsReader(procfs_root=config.paths.procfs)
        # Issue 15: what each drive holds, read with discovery; drive label -> Holding tuple.
        # `zpool status` needs no device privilege: it runs here, never through the probe helper.
        self.holders = holders.HoldingsReader(
            config.paths.sysfs, config.paths.procfs, config.paths.dev, zpool=tools.zpool, timeout=timeout,
            runner=functools.partial(run_tool, grace=config.tool_kill_grace_seconds, max_output=config.tool_max_output_bytes))
        self._holds: Dict[str, tuple] = {}
        self._virtual_included = tuple(
            prefix for prefix, wanted in (("dm-", config.include_device_mapper), ("loop", config.include_loop))
            if wanted
        )
        self.history = history if history is not None else self._open_history()

        self._lock = threading.RLock()
        self._idle = threading.Condition(self._lock)  # a device's probe finished
        # A probe waits at most this long for another one on the same device: one tool call
        # with its kill grace, and a little slack (a longer wait means it got stuck).
        self._busy_wait_seconds = config.tool_timeout_seconds + config.tool_kill_grace_seconds + 1.0
        self._listeners: List[Callable[[Snapshot], None]] = []
        self._published = threading.Event()  # a new snapshot is waiting for the listeners
        self._snapshot = Snapshot(created=clock())
        self._sources = {
            name: _SourceState(name)
            for name in ("discovery", "history") + tuple(config.collectors)
        }
        self._block: Dict[str, blockdev.BlockDevice] = {}
        self._smart_targets: List[SmartTarget] = []
        self._smart_json: Optional[bool] = None
        self._smart_version: Optional[Tuple[int, int]] = None
        self._smart: Dict[str, DriveReading] = {}  # target key -> reading
        self._smart_time: Dict[str, float] = {}
        self._smart_notes: Dict[str, str] = {}  # target key -> why there is no data
        self._shannon: Dict[str, DriveReading] = {}  # control device -> reading
        self._shannon_time: Dict[str, float] = {}
        self._cache: Dict[str, Tuple[WriteCacheState, ...]] = {}  # drive label -> states
        self._cache_time: Dict[str, float] = {}
        self._io: Dict[str, IoStats] = {}  # drive label -> counters
        self._io_time = 0.0
        self._diskstats_bad_lines: Set[Tuple[str, str]] = set()  # (device, reason) logged once
        self._busy: Dict[str, float] = {}  # device -> start of the probe in flight
        self._stuck: Dict[str, int] = {}  # device -> pid that outlived SIGKILL
        self._problems: Dict[str, str] = {}
        self._tls = threading.local()  # .device: the device whose probe this thread runs
        self._smart_inflight: Dict[str, Future] = {}  # target key -> SMART read not finished
        self._smart_slow: Set[str] = set()  # targets whose last read failed or timed out
        self._standby_skips: Dict[str, int] = {}  # target key -> consecutive standby skips
        self._smart_logged: Dict[str, str] = {}  # target key -> the failure last logged
        self._standby_max_skips = int(
            getattr(config, "smartctl_standby_max_skips", STANDBY_MAX_SKIPS)
        )
        self._discover_soon = threading.Event()  # a drive vanished: rediscover early
        # Set when the first SMART pass is over: which drives are ATA or NVMe (and so which
        # tool tells their write cache) is known only then.
        self._smart_first_pass = threading.Event()
        if "smartctl" not in config.collectors:
            self._smart_first_pass.set()
        self._probe_slots = threading.BoundedSemaphore(config.max_concurrent_probes)
        self._executor = ThreadPoolExecutor(
            max_workers=config.max_concurrent_probes, thread_name_prefix="probe"
        )
        self._stop = threading.Event()
        self._threads: List[threading.Thread] = []
        self._history_dropped_seen = 0  # history rows dropped as of the last history run
        self._crashes_logged: Set[Tuple[str, str]] = set()  # (source, error) with a traceback logged
        # The opt-in sync-write probe (issue 15): None unless syncwrite.directories is set.
        self.syncwrite = syncwrite_mod.probe_from_config(config)
        self._syncwrite: tuple = ()
        if self.syncwrite is not None:
            self._sources["syncwrite"] = _SourceState("syncwrite")

    # ------------------------------------------------------------------ lifecycle

    def _open_history(self) -> History:
        if not self.config.history:
            return History(None, retention_days=self.config.history_retention_days,
                           min_interval_seconds=self.config.history_min_interval_seconds)
        state_dir = self.config.state_dir or default_state_dir()
        path = os.path.join(state_dir, "history.sqlite")
        try:
            os.makedirs(state_dir, exist_ok=True)
        except OSError as exc:
            log.error("cannot create state directory %s (%s); history kept in memory", state_dir, exc)
            history = History(None, retention_days=self.config.history_retention_days,
                              min_interval_seconds=self.config.history_min_interval_seconds)
            history.lost_file = True  # asked for a file and did not get one: ssd_history_healthy 0
            history.healthy = False
            return history
        return History(path, retention_days=self.config.history_retention_days,
                       min_interval_seconds=self.config.history_min_interval_seconds)

    def snapshot(self) -> Snapshot:
        return self._snapshot

    def add_listener(self, fn: Callable[[Snapshot], None]) -> None:
        """Call ``fn`` with each new snapshot, from a thread of its own once :meth:`start` has
        run (the HTTP side uses it to render /metrics ahead of the scrape). A listener that
        falls behind sees only the newest snapshot."""
        self._listeners.append(fn)

    def poll_once(self) -> Snapshot:
        """Run every source once, in dependency order (used by ``ssdfleet collect``)."""
        self._guarded("discovery", self.run_discovery)
        for name in self.config.collectors:
            self._guarded(name, functools.partial(self._run_source, name))
        if self.syncwrite is not None:
            self._guarded("syncwrite", self.run_syncwrite)
        return self._snapshot

    def start(self) -> None:
        """Start one thread per source. Discovery runs first so the others have targets."""
        self._guarded("discovery", self.run_discovery)
        intervals = self.config.intervals
        plan = [("discovery", intervals.discovery, self.run_discovery)]
        for name in self.config.collectors:
            interval = getattr(intervals, name)
            if name == "smartctl":
                fn = functools.partial(self.run_smartctl, budget=interval)
            else:
                fn = functools.partial(self._run_source, name)
            plan.append((name, interval, fn))
        if self.syncwrite is not None:
            plan.append(("syncwrite", self.config.syncwrite.interval_seconds, self.run_syncwrite))
        for name, interval, fn in plan:
            t = threading.Thread(
                target=self._loop, args=(name, interval, fn, name != "discovery"),
                name=f"poll-{name}", daemon=True,
            )
            t.start()
            self._threads.append(t)
        if self._listeners:
            t = threading.Thread(target=self._publish_loop, name="poll-publish", daemon=True)
            t.start()
            self._threads.append(t)

    def _publish_loop(self) -> None:
        self._published.set()  # the snapshot discovery built
        while not self._stop.is_set():
            if not self._published.wait(1.0):
                continue
            self._published.clear()
            if self._stop.is_set():
                return
            snap = self._snapshot
            for fn in self._listeners:
                try:
                    fn(snap)
                except Exception as exc:  # a listener's bug must not stop the others or the poller
                    message = f"{type(exc).__name__}: {exc}"
                    if ("listener", message) in self._crashes_logged:
                        log.error("snapshot listener %r failed again (%s)", fn, message)
                    else:
                        self._crashes_logged.add(("listener", message))
                        log.exception("snapshot listener %r failed (%s)", fn, message)

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the sources, wait up to ``timeout`` in all for their threads, then flush and
        close the history. A thread still busy then (a hung sysfs read) is left behind: it is
        a daemon thread and its source writes nothing more."""
        deadline = time.monotonic() + timeout
        self._stop.set()
        self._discover_soon.set()
        self._published.set()
        self._smart_first_pass.set()
        with self._lock:
            self._idle.notify_all()
        self._executor.shutdown(wait=False, cancel_futures=True)
        for t in self._threads:
            t.join(max(0.0, deadline - time.monotonic()))
        left = [t.name for t in self._threads if t.is_alive()]
        if left:
            log.warning("stopping: %s still busy after %.1fs; not waiting for them", ", ".join(left), timeout)
        self.history.close()

    def _loop(self, name: str, interval: float, fn: Callable[[], None], run_now: bool) -> None:
        # Discovery also wakes early when a probe found its drive gone (stop() sets it too).
        wake = self._discover_soon if name == "discovery" else self._stop
        if not run_now:
            wake.wait(interval)
            if wake is not self._stop:
                wake.clear()
            if self._stop.is_set():
                return
        if name == "write_cache":
            # Without the drive kinds the first pass would see the kernel's view only; wait
            # for the first SMART pass, but not for a SMART cycle that hangs.
            self._smart_first_pass.wait(self.config.tool_timeout_seconds + self.config.tool_kill_grace_seconds + 5)
        while not self._stop.is_set():
            started = time.monotonic()
            self._guarded(name, fn, interval)
            # A little jitter keeps a fleet of agents from probing in lockstep.
            delay = max(0.0, interval - (time.monotonic() - started)) * random.uniform(0.95, 1.05)
            wake.wait(delay)
            if wake is not self._stop:
                wake.clear()
            if self._stop.is_set():
                return

    def _guarded(self, name: str, fn: Callable[[], None], interval: Optional[float] = None) -> None:
        """Run one source; a source that raises is failed for that run (``ssd_collector_success``
        0, its error counter up) and logged with its traceback once per distinct error, one
        line after that, so a bug that repeats every cycle cannot flood the log."""
        try:
            fn()
        except Exception as exc:  # a bug in one source must not stop the others
            message = f"{type(exc).__name__}: {exc}"
            again = f"; it will run again in {interval:.0f}s" if interval else ""
            if (name, message) in self._crashes_logged:
                log.error("collector %s crashed again (%s)%s", name, message, again)
            else:
                self._crashes_logged.add((name, message))
                log.exception("collector %s crashed (%s)%s", name, message, again)
            with self._lock:
                src = self._sources[name]
                src.ran = True
                src.success = False
                src.errors_total += 1
                src.error = f"internal error: {message}"[:300]
                src.last_run = self.clock()
                self._rebuild()

    def _run_source(self, name: str) -> None:
        {
            "shannon": self.run_shannon,
            "smartctl": self.run_smartctl,
            "write_cache": self.run_write_cache,
            "diskstats": self.run_diskstats,
        }[name]()

    # ------------------------------------------------------------------ probing helpers

    def _probe(self, device: str, fn: Callable[[], Any]) -> Any:
        """Run one probe for ``device``, one at a time per device. When another source's probe
        is in flight on it (hdparm while smartctl wants the drive), wait for that one, which
        the runner bounds in time, rather than skip the drive until the next cycle. Returns
        None when the device is quarantined, the wait ran out or the poller stops, else what
        ``fn`` returned."""
        deadline = time.monotonic() + self._busy_wait_seconds
        with self._lock:
            while True:
                if self._quarantined(device):
                    return None
                if device not in self._busy:
                    break
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self._stop.is_set():
                    return None
                self._idle.wait(min(remaining, 1.0))
            self._busy[device] = time.monotonic()
        self._tls.device = device
        try:
            with self._probe_slots:
                result = fn()
        finally:
            self._tls.device = None
            with self._lock:
                self._busy.pop(device, None)
                self._idle.notify_all()
        if isinstance(result, ToolResult) and result.stuck:
            self._mark_stuck(device, result)  # a runner passed in that bypasses _run_watched
        if isinstance(result, ToolResult) and result.quarantined:
            return None  # quarantined in the helper: not probed, as with a local quarantine
        return result

    def _run_watched(self, argv: Sequence[str], **kwargs: Any) -> ToolResult:
        """The runner every collector uses: ``self._run`` plus stuck-process bookkeeping."""
        result = self._run(argv, **kwargs)
        device = getattr(self._tls, "device", None) or str(argv[0])
        if result.stuck:
            self._mark_stuck(device, result)
        elif self._stuck.get(device) == REMOTE_PID and not result.quarantined:
            # The probe helper ran a command on the device again: its stuck process is gone.
            with self._lock:
                if self._stuck.get(device) == REMOTE_PID:
                    del self._stuck[device]
                    self._problems.pop(device, None)
                    log.info("%s: the probe helper runs probes on it again; quarantine lifted", device)
        return result

    def _mark_stuck(self, device: str, result: ToolResult) -> None:
        # A process in the probe helper has no pid here (REMOTE_PID): the helper quarantines
        # the device itself and refuses probes on it until the process is gone.
        pid = result.pid or REMOTE_PID
        with self._lock:
            if self._stuck.get(device) == pid:
                return
            self._stuck[device] = pid
            self._problems[device] = "probe stuck: " + result.describe()
        log.error(
            "%s: %s (pid %s) %s; device quarantined until it exits",
            device, result.argv[0] if result.argv else "tool", result.pid, result.describe(),
        )

    def _quarantined(self, device: str) -> bool:
        """Whether ``device`` waits for a stuck process; releases it once the reaper has it.
        Caller holds the lock."""
        pid = self._stuck.get(device)
        if pid is None:
            return False
        if pid == REMOTE_PID:
            # Ask the helper: it refuses while its process is stuck (the entry stays, and so
            # does ssd_probe_stuck), and the first answer that is not a refusal lifts it.
            return False
        if pid in REAPER.pending():
            return True
        del self._stuck[device]
        self._problems.pop(device, None)
        log.info("%s: the stuck probe (pid %s) is gone; probing again", device, pid)
        return False

    def _release_finished(self) -> None:
        """Lift the quarantine of every device whose stuck process is gone. Caller holds the
        lock."""
        for device in list(self._stuck):
            self._quarantined(device)

    def _finish(self, name: str, started: float, errors: Sequence[str],
                unread: Sequence[str] = ()) -> None:
        """Record a source run. ``errors`` are failed probes and parses (counted); ``unread``
        are drives not probed because they are quarantined: the run is not a success, but no
        probe failed, so the error counter does not grow every cycle."""
        with self._lock:
            self._release_finished()
            src = self._sources[name]
            src.ran = True
            src.duration = time.monotonic() - started
            src.last_run = self.clock()
            src.success = not errors and not unread
            shown = list(errors) + list(unread)
            src.error = "; ".join(shown[:5]) if shown else None
            src.errors_total += len(errors)
            self._rebuild()

    # ------------------------------------------------------------------ discovery

    def run_discovery(self) -> None:
        started = time.monotonic()
        errors: List[str] = []
        block = {b.name: b for b in blockdev.read_block_devices(self.config.paths.sysfs, include=self._virtual_included)}
        targets: List[SmartTarget] = []
        scanned = False
        if "smartctl" in self.config.collectors:
            if self._smart_json is None:
                self._smart_json = self._detect_smartctl_json()
                self.write_cache.smartctl_json = self._smart_json
            json_scan = bool(self._smart_json)
            result = self._probe(SCAN_PROBE, lambda: self.smartctl.scan(json_output=json_scan))
            if result is None:
                errors.append("smartctl scan: skipped, an earlier scan is stuck")
            elif not result.ok_to_parse:
                errors.append(f"smartctl scan: {result.describe()}")
            else:
                try:
                    if self._smart_json:
                        entries = smartctl.parse_scan_json(result.stdout)
                    else:
                        entries = smartctl.parse_scan_text(result.stdout.decode("utf-8", "replace"))
                    targets = [SmartTarget(e.name, e.type) for e in entries]
                    scanned = True
                except ParseError as exc:
                    errors.append(f"smartctl scan: {exc}")
            if not scanned:
                # A failed scan says nothing about which drives are gone: keep the known ones.
                with self._lock:
                    targets = list(self._smart_targets)
            for extra in self.config.smartctl_devices:
                dev, _, typ = extra.partition(":")
                targets.append(SmartTarget(dev, typ or None))
            seen = set()
            unique = []
            for t in targets:
                if t.key not in seen:
                    seen.add(t.key)
                    unique.append(t)
            targets = unique
        # Issue 15: what each drive holds; a hung or failing zpool is an error here, never a crash.
        holds_read = self._probe(HOLDERS_PROBE, self.holders.read)
        if holds_read is None:
            errors.append("zpool status -P: skipped, an earlier call is stuck")
        else:
            errors.extend(holds_read[1])
        if self.holders.stuck is not None:
            self._mark_stuck(HOLDERS_PROBE, self.holders.stuck)  # later discoveries skip zpool until it exits
        for e in errors:
            log.warning("discovery: %s", e)
        with self._lock:
            self._block = block
            if holds_read is not None:
                self._holds = holds_read[0]  # issue 15
            if scanned or targets:
                self._smart_targets = targets
                known = {t.key for t in targets}
                for key in set(self._smart) | set(self._smart_notes):
                    if key not in known:
                        if key in self._smart:
                            log.info("%s is no longer discovered; dropping it", key)
                        self._smart.pop(key, None)
                        self._smart_time.pop(key, None)
                        self._smart_notes.pop(key, None)
                        self._standby_skips.pop(key, None)
                        self._smart_slow.discard(key)
        self._finish("discovery", started, errors)

    def _detect_smartctl_json(self) -> Optional[bool]:
        """smartctl has JSON output from 7.0; older hosts get the text parser."""
        result = self._probe(VERSION_PROBE, self.smartctl.version)
        if result is None or not result.ok_to_parse:
            return None
        self._smart_version = smartctl.smartctl_version(result.stdout)
        if self._smart_version is None:
            return True  # an unknown banner: try JSON, the parse error will say more
        return smartctl.supports_json(result.stdout)

    # ------------------------------------------------------------------ smartctl

    def run_smartctl(self, budget: Optional[float] = None) -> None:
        """Read SMART from every target. ``budget`` is how long to wait for the reads (the
        background loop passes its interval); a read still running then is applied when it
        finishes and its drive is skipped by the next cycles until it has. ``None`` waits for
        every read (``ssdfleet collect``, tests)."""
        started = time.monotonic()
        now = self.clock()
        with self._lock:
            targets = list(self._smart_targets)
            running = {key for key, f in self._smart_inflight.items() if not f.done()}
            slow = set(self._smart_slow)
        if self._smart_json is None:
            self._smart_json = self._detect_smartctl_json()
            self.write_cache.smartctl_json = self._smart_json
        use_json = self._smart_json is not False
        # Drives that failed or timed out last time go to the back of the queue, so they do
        # not hold the probe slots while healthy drives wait.
        targets.sort(key=lambda t: t.key in slow)
        futures: Dict[str, Future] = {}
        # Not an error (the late read reports its own outcome), but not a fresh read either:
        # the cycle is not a success while a drive's data is this late.
        unread: List[str] = []
        for t in targets:
            if t.key in running:
                log.debug("smartctl %s: the previous read has not finished; not queueing another", t.key)
                unread.append(f"{t.key}: the previous read has not finished")
                continue
            if self._stop.is_set():
                break
            try:
                futures[t.key] = self._executor.submit(self._read_smart, t, use_json)
            except RuntimeError:  # the executor was shut down: the poller is stopping
                break
        with self._lock:
            self._smart_inflight.update(futures)
        done, _ = wait_futures(list(futures.values()), timeout=budget)
        errors: List[str] = []
        for t in targets:
            fut = futures.get(t.key)
            if fut is None:
                continue
            if fut in done:
                error, skipped = self._apply_smart(t, fut, now)
                if error:
                    errors.append(error)
                if skipped:
                    unread.append(skipped)
            else:
                unread.append(f"{t.key}: still reading after {budget:.0f}s")
                fut.add_done_callback(functools.partial(self._apply_late_smart, t))
        self._note_history()
        self._finish("smartctl", started, errors, unread)
        self._smart_first_pass.set()

    def _apply_late_smart(self, target: SmartTarget, fut: Future) -> None:
        """A read that outlasted its cycle: apply it now and count its error, if any."""
        if fut.cancelled():
            return
        error, _ = self._apply_smart(target, fut, self.clock())
        with self._lock:
            if error:
                src = self._sources["smartctl"]
                src.success = False
                src.error = error
                src.errors_total += 1
            self._rebuild()

    def _apply_smart(self, target: SmartTarget, fut: Future, when: float) -> Tuple[Optional[str], Optional[str]]:
        """Fold one finished read into the poller's state. Returns (error, unread): an error
        message for ``ssd_collector_errors``, or a note that the drive was not read because
        it is quarantined."""
        key = target.key
        try:
            outcome, value = fut.result()
        except Exception as exc:  # defensive: a parser bug is one drive's error
            log.error("smartctl %s: unexpected error", key, exc_info=exc)
            outcome, value = "error", f"internal error: {exc}"
        error: Optional[str] = None
        unread: Optional[str] = None
        with self._lock:
            if self._smart_inflight.get(key) is fut:
                del self._smart_inflight[key]
            if outcome == "ok":
                assert isinstance(value, DriveReading)
                value = evidence.monotone(self._smart.get(key), value)
                self._smart[key] = value
                self._smart_time[key] = when
                self._smart_notes.pop(key, None)
                self._standby_skips.pop(key, None)
                self._smart_slow.discard(key)
            else:
                self._smart_notes[key] = str(value)
                if outcome == "standby":
                    self._standby_skips[key] = self._standby_skips.get(key, 0) + 1
                    if key in self._smart:
                        self._smart[key] = self._smart[key].replace(power_state="standby")
                elif outcome == "quarantined":
                    unread = f"{key}: {value}"
                elif outcome == "gone":
                    # Keep the last values until discovery confirms the drive is gone.
                    error = f"{key}: {value}"
                    self._discover_soon.set()
                elif outcome in ("error",):
                    error = f"{key}: {value}"
                    self._smart_slow.add(key)
        if outcome == "ok":
            self._smart_logged.pop(key, None)
            self.history.record(value.identity, when, value)
        elif outcome in ("nodata", "standby", "busy", "quarantined"):
            log.debug("smartctl %s: %s", key, value)
        else:
            # The same failure every cycle is one WARNING line, then DEBUG until it changes
            # or the drive reads fine again (the metric keeps counting every failure).
            said = re.sub(r"[0-9.]+", "#", f"{outcome}: {value}")
            if self._smart_logged.get(key) != said:
                self._smart_logged[key] = said
                log.warning("smartctl %s: %s", key, value)
            else:
                log.debug("smartctl %s: %s (again)", key, value)
        return error, unread

    def _read_smart(self, target: SmartTarget, use_json: bool) -> Tuple[str, object]:
        argv = self.smartctl.read_argv(target.device, target.dev_type or "auto")
        if not use_json:
            # smartmontools before 7.0: same sections as plain text; the SSD log page needs 6.0
            old = self._smart_version is not None and self._smart_version < (6, 0)
            argv = [a for a in argv if a != "--json=c" and not (old and a in smartctl.OLD_SMARTCTL_DROPS)]
        wake = False
        with self._lock:
            limit = self._standby_max_skips
            skipped = self._standby_skips.get(target.key, 0)
            if limit > 0 and skipped >= limit:
                # Reset now, whatever this read brings: at most one wake-up per N cycles.
                wake = True
                self._standby_skips[target.key] = 0
        if wake:
            argv = [a for a in argv if not a.startswith("--nocheck")]
            log.info("smartctl %s: in standby for %d reads; reading once without --nocheck (wakes it)",
                     target.key, skipped)
        result = self._probe(
            target.label, lambda: self._run_watched(argv, timeout=self.config.tool_timeout_seconds)
        )
        if result is None:
            with self._lock:
                stuck = target.label in self._stuck
            if stuck:
                return "quarantined", "not probed: quarantined behind a stuck probe"
            return "busy", "skipped: another probe is in flight on this device"
        if result.error:
            return "error", result.describe()
        if self.smartctl.is_standby(result):
            return "standby", "standby: not woken"
        if not result.ok_to_parse:
            return "error", result.describe()
        if result.exit_code is not None and result.exit_code & 0x02:
            said = result.stdout[-4096:] + result.stderr[-4096:]
            if any(v.encode() in said for v in _VANISHED):
                return "gone", f"device vanished (exit status {result.exit_code}: no such device)"
        try:
            if use_json:
                reading = smartctl.parse_smartctl_json(result.stdout, device=target.device)
            else:
                reading = smartctl_text.parse_smartctl_text_reading(
                    result.stdout.decode("utf-8", "replace"), device=target.device
                )
        except smartctl.NoSmartData as exc:
            if result.exit_code is not None and result.exit_code & smartctl.NO_DATA_BITS:
                # Bit 0: smartctl rejected our command line; bit 1: it could not open or
                # identify a drive that discovery found. Both need a person: count them.
                return "error", f"no SMART data: {exc}"
            return "nodata", f"no SMART data: {exc}"
        except ParseError as exc:
            return "error", f"unreadable output ({result.describe()}): {exc}"
        block = None if ":" in target.label else target.label
        return "ok", reading.replace(
            block_device=block,
            device_type=reading.device_type or target.dev_type,
            power_state="active",
            tool_exit_status=(
                reading.tool_exit_status if reading.tool_exit_status is not None else result.exit_code
            ),
        )

    # ------------------------------------------------------------------ shannon

    def run_shannon(self) -> None:
        started = time.monotonic()
        errors: List[str] = []
        now = self.clock()
        with self._lock:
            has_cards = any(b.transport == "shannon" for b in self._block.values())
        listing = self._probe(SHANNON_LIST_PROBE, self.shannon.list_cards)
        cards: Dict[str, DriveReading] = {}
        if listing is None:
            errors.append("shannon-status -a: skipped, an earlier call is stuck")
        elif listing.error:
            if has_cards:
                errors.append(f"shannon-status: {listing.describe()}")
            else:
                log.debug("shannon-status not usable and no dfX devices: no Shannon cards here")
        elif not listing.ok_to_parse:
            errors.append(f"shannon-status -a: {listing.describe()}")
        else:
            text = listing.stdout.decode("utf-8", "replace")
            try:
                for reading in shannon.parse_status_a(text):
                    cards[reading.device] = reading
            except ParseError as exc:
                if has_cards or text.strip():
                    errors.append(f"shannon-status -a: {exc}")
        # -p gives exact key=value figures; the -a reading stands in when -p fails.
        for device, fallback in list(cards.items()):
            result = self._probe(device, lambda d=device: self.shannon.read_card(d))
            if result is None:
                continue
            if not result.ok_to_parse:
                errors.append(f"shannon-status -p {device}: {result.describe()}")
                continue
            try:
                parsed = shannon.parse_status_p(result.stdout.decode("utf-8", "replace"))
            except ParseError as exc:
                errors.append(f"shannon-status -p {device}: {exc}")
                continue
            if parsed:
                cards[device] = _fill(parsed[0], fallback)
        for e in errors:
            log.warning("shannon: %s", e)
        with self._lock:
            if cards or not errors:
                for device in list(self._shannon):
                    if device not in cards and not errors:
                        self._shannon.pop(device, None)
                        self._shannon_time.pop(device, None)
            for device, reading in list(cards.items()):
                reading = cards[device] = evidence.monotone(self._shannon.get(device), reading)
                self._shannon[device] = reading
                self._shannon_time[device] = now
        for reading in cards.values():
            self.history.record(reading.identity, now, reading)
        self._note_history()
        self._finish("shannon", started, errors)

    # ------------------------------------------------------------------ write cache

    def run_write_cache(self) -> None:
        started = time.monotonic()
        errors: List[str] = []
        now = self.clock()
        drives = self._snapshot.drives
        states: Dict[str, Tuple[WriteCacheState, ...]] = {}
        for drive in drives:
            block = self._cache_block_device(drive)
            if block is None:
                continue
            # A drive SMART found asleep is not woken for its cache state: sysfs answers alone.
            asleep = drive.reading.power_state == "standby"
            got = self._probe(
                drive.device,
                lambda b=block, k=drive.reading.kind, z=asleep: tuple(self.write_cache.read(b, k, standby=z)),
            )
            if got is None:
                continue
            states[drive.device] = got
            for s in got:
                if s.state == "unknown" and s.detail:
                    errors.append(f"{drive.device} {s.source}: {s.detail}")
        for e in errors:
            log.warning("write cache: %s", e)
        with self._lock:
            self._cache.update(states)
            for label in states:
                self._cache_time[label] = now
        self._finish("write_cache", started, errors)

    def _cache_block_device(self, drive: Drive) -> Optional[str]:
        label = drive.device
        if ":" in label:
            return None
        if label in self._block:
            return label
        # NVMe: the queue files live on the namespace (nvme0n1), SMART on the controller.
        for name in sorted(self._block):
            if self._block[name].drive_name == label:
                return name
        return None

    # ------------------------------------------------------------------ diskstats

    def run_diskstats(self) -> None:
        started = time.monotonic()
        errors: List[str] = []
        try:
            stats = self.diskstats.read()
            disks = diskstats.whole_disks(stats, sysfs_root=self.config.paths.sysfs,
                                          include_dm=self.config.include_device_mapper,
                                          include_loop=self.config.include_loop)
        except (OSError, ParseError) as exc:
            errors.append(f"diskstats: {exc}")
            disks = None
        # A line the parser could not read costs only that device its counters. Each bad line
        # is logged and counted once; while it stays, the collector is not a success.
        unread: List[str] = []
        if disks is not None:
            for bad in stats.errors:
                key = (bad.device, bad.reason)
                if key in self._diskstats_bad_lines:
                    unread.append(f"diskstats: {bad}")
                else:
                    self._diskstats_bad_lines.add(key)
                    errors.append(f"diskstats: skipped {bad}")
            folded = diskstats.fold_by_drive(disks)
            with self._lock:
                self._io = folded
                self._io_time = self.clock()
        for e in errors:
            log.warning("%s", e)
        self._finish("diskstats", started, errors, unread)

    # ------------------------------------------------------------------ sync-write probe

    def run_syncwrite(self) -> None:
        """One bounded burst per configured directory (collectors/syncwrite.py). A directory
        skipped for being read-only or nearly full is not a failure; an error or a stuck sync is."""
        started = time.monotonic()
        results = self.syncwrite.run()
        errors = [f"{r.directory}: {r.skipped}: {r.detail}" for r in results if r.skipped in ("error", "stuck")]
        for e in errors:
            log.warning("syncwrite %s", e)
        with self._lock:
            self._syncwrite = results
        self._finish("syncwrite", started, errors)

    # ------------------------------------------------------------------ history

    def _note_history(self) -> None:
        with self._lock:
            src = self._sources["history"]
            src.ran = True
            src.last_run = self.clock()
            dropped = sum(getattr(self.history, "dropped_total", {}).values())
            new_drops = dropped > self._history_dropped_seen
            self._history_dropped_seen = dropped
            src.success = bool(getattr(self.history, "healthy", True)) and not new_drops
            src.errors_total = int(getattr(self.history, "errors_total", 0))
            src.error = None if src.success else (
                getattr(self.history, "last_error", None) or "history not on disk (see log)")

    # ------------------------------------------------------------------ snapshot

    def _rebuild(self) -> None:
        """Merge what every source knows into a new immutable snapshot. Caller holds the lock."""
        now = self.clock()
        readings: Dict[str, Tuple[DriveReading, Dict[str, float]]] = {}
        for device, reading in self._shannon.items():
            readings.setdefault(reading.identity, (reading, {"shannon": self._shannon_time[device]}))
        for key, reading in self._smart.items():
            readings.setdefault(reading.identity, (reading, {"smartctl": self._smart_time[key]}))
        covered = set()
        for reading, _ in readings.values():
            if reading.block_device:
                covered.add(reading.block_device)
        if self.config.include_block_devices:
            for name, b in sorted(self._block.items()):
                if b.drive_name in covered or name in covered:
                    continue
                if b.transport == "shannon" and self._shannon:
                    continue
                reading = _reading_from_block(b)
                readings.setdefault(reading.identity, (reading, {}))
                covered.add(b.drive_name)
        drives = []
        for identity, (reading, polls) in sorted(readings.items(), key=lambda kv: kv[1][0].device):
            label = reading.block_device or os.path.basename(reading.device)
            if self.config.temperature_limits:
                reading = self._configured_limits(reading)
            polls = dict(polls)
            if label in self._cache_time:
                polls["write_cache"] = self._cache_time[label]
            io = self._io.get(label)
            if io is not None and self._io_time:
                polls["diskstats"] = self._io_time
            rated = rated_endurance(
                reading.model or "", reading.capacity_bytes, self._endurance_overrides(), reading.model_family
            )
            try:
                projections = projection_mod.project_all(reading, now, self.history, rated)
            except Exception:  # projection is advisory; never lose the drive over it
                log.exception("projection failed for %s", identity)
                projections = ()
            drives.append(
                Drive(
                    reading=reading,
                    write_cache=self._cache.get(label, ()),
                    write_cache_expected=durability.expected_write_cache(self.config, reading.serial, reading.model),
                    power_loss_protection=durability.power_loss_protection(self.config, reading.serial, reading.model)[0],
                    holds=self._holds.get(label, ()),  # issue 15: collectors/holders.py
                    io=io,
                    projections=tuple(projections),
                    rated_endurance_bytes=_rated_bytes(rated, reading),
                    last_poll=polls,
                )
            )
        problems = dict(self._problems)
        for key, note in self._smart_notes.items():
            problems.setdefault(key, note)
        self._snapshot = Snapshot(
            drives=tuple(drives),
            collectors=tuple(s.status() for s in self._sources.values() if s.ran),
            created=now,
            problems=tuple(f"{k}: {v}" for k, v in sorted(problems.items())),
            stuck=tuple(sorted(self._stuck)),
            history_dropped=tuple(sorted(getattr(self.history, "dropped_total", {}).items())),
            history_recorded=int(getattr(self.history, "recorded_total", 0)),
            history_pending=int(getattr(self.history, "pending_count", 0)),
            syncwrite=self._syncwrite,
        )
        self._published.set()

    def _configured_limits(self, reading: DriveReading) -> DriveReading:
        temps = []
        changed = False
        for t in reading.temperatures:
            limit = self.config.temperature_limit(reading.serial, reading.model, t.sensor)
            if limit is not None and limit != t.limit_celsius:
                t = replace(t, limit_celsius=limit)
                changed = True
            temps.append(t)
        if not changed:
            return reading
        sources = dict(reading.sources, temperature_limit_celsius="config")
        return reading.replace(temperatures=tuple(temps), sources=sources)

    def _endurance_overrides(self):
        return [r.model_dump() for r in self.config.endurance]


REMOTE_PID = -1  # a stuck process that lives in the probe helper


def _rated_bytes(rated, reading: DriveReading) -> Optional[float]:
    """Rated endurance in host bytes: TBW as given, or capacity x P/E cycles (NAND bytes)
    divided by the drive's write amplification when it reports one."""
    if rated is None:
        return None
    if rated.tbw_bytes:
        return float(rated.tbw_bytes)
    if rated.pe_cycles and reading.capacity_bytes:
        nand = float(rated.pe_cycles) * reading.capacity_bytes
        wa = reading.write_amplification
        return nand / wa if wa and wa >= 1.0 else nand
    return None


def _fill(primary: DriveReading, fallback: DriveReading) -> DriveReading:
    """Take every field ``primary`` lacks from ``fallback``."""
    changes = {}
    for name in primary.__dataclass_fields__:
        value = getattr(primary, name)
        if value is None or value == () or value == {}:
            other = getattr(fallback, name)
            if other is not None and other != () and other != {}:
                changes[name] = other
    return replace(primary, **changes) if changes else primary


def _reading_from_block(b: blockdev.BlockDevice) -> DriveReading:
    kind = {"nvme": KIND_NVME, "shannon": KIND_SHANNON, "scsi": KIND_SCSI}.get(b.transport or "", "block")
    if kind == KIND_SCSI and b.model is None:
        kind = KIND_ATA
    return DriveReading(
        kind=kind,
        device=f"/dev/{b.drive_name}",
        block_device=b.drive_name,
        serial=b.serial,
        wwn=b.wwid,
        model=b.model,
        firmware=b.firmware,
        capacity_bytes=b.size_bytes,
        is_ssd=None if b.rotational is None else not b.rotational,
        sources={"identity": "sysfs"},
    )
