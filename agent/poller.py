"""The scheduler: run every source of collectors/registry.py on its own interval, then merge
what they know into a new immutable snapshot.

Data flows one way: discover (the kernel's block devices, and sources that find their own
drives), probe and parse (each source, through the bounded runner), merge (a pure function of
the sources' reports), snapshot (swapped in whole; HTTP handlers only ever read the current
one). Each source runs in its own thread (SMART every few minutes, diskstats every few
seconds), so a slow ``smartctl`` never delays iostat. At most ``max_concurrent_probes`` tool
calls run at once and never two on the same device.

A source that fails for one drive keeps serving that drive's last good values (their age is
exported); a drive that is no longer discovered leaves the snapshot.

Bounds, and what they do not cover:

* A probe that outlives SIGKILL (a process in D state, which the kernel will not let us reap)
  quarantines its device: no new probe starts on it until the process is gone, the device is
  listed in ``ssd_probe_stuck{device}`` and an error is logged. Host-wide calls (``smartctl
  --version``/``--scan-open``, ``shannon-status -a``) are quarantined the same way under their
  own name.
* Per-source bounds (SMART reads that outlast their cycle, drives in standby, drives that
  vanish) are the sources' own: see collectors/smartctl/source.py.
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
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Set, Tuple

from agent import durability
from agent import projection as projection_mod
from agent.config import SOURCE_KEYS, Config
from agent.endurance import rated_endurance, stated_endurance
from agent.history import History, default_state_dir
from agent.history_file import StateLock
from agent.text import printable
from collectors import blockdev, registry
from collectors.model import (
    AgentStatus,
    CollectorStatus,
    Drive,
    DriveReading,
    Projection,
    Snapshot,
    supplement,
)
from collectors.runner import LEFTOVERS, REAPER, Bounds, ToolResult, bounded, run_tool
from collectors.source import (
    ANNOTATE,
    HEALTH,
    HOST,
    READING_ROLES,
    ROLES,
    Report,
    Source,
    SourceContext,
    SourceSpec,
    Target,
)

log = logging.getLogger("ssdfleet.poller")

Runner = Callable[..., ToolResult]

DISCOVERY = "discovery"
HISTORY = "history"


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


@dataclass(frozen=True)
class ReloadStatus:
    """The last configuration reload: whether it succeeded, and when the configuration was
    last loaded successfully (the start counts), as ``ssd_config_last_reload_*``."""

    successful: bool
    last_success: float


class _LoopControl:
    """A source loop's events: ``stop`` ends it (a reload replaced or removed its source),
    ``wake`` ends its current wait (a reload changed intervals)."""

    def __init__(self) -> None:
        self.stop = threading.Event()
        self.wake = threading.Event()


class Poller:
    def __init__(
        self,
        config: Config,
        runner: Optional[Runner] = None,
        clock: Callable[[], float] = time.time,
        history: Optional[History] = None,
        build_sources: bool = True,
    ) -> None:
        self.config = config
        self.clock = clock
        if runner is None and config.probe_helper_socket:
            from agent.privhelper import HelperRunner

            runner = HelperRunner(config.probe_helper_socket)
        # The one place a tool call's bounds are set: the configuration's, read at each call
        # (a reload applies to the next call), whatever a probe passes (collectors.runner.bounded).
        self._run: Runner = bounded(runner or run_tool, self.bounds)
        self._state_lock: Optional[StateLock] = None
        self.history = history if history is not None else self._open_history()

        self._lock = threading.RLock()
        self._idle = threading.Condition(self._lock)  # a device's probe finished
        # A probe waits at most this long for another one on the same device: one tool call
        # with its kill grace, and a little slack (a longer wait means it got stuck).
        self._busy_wait_seconds = config.tool_timeout_seconds + config.tool_kill_grace_seconds + 1.0
        self._listeners: List[Callable[[Snapshot], None]] = []
        self._published = threading.Event()  # a new snapshot is waiting for the listeners
        self._snapshot = Snapshot(created=clock())
        self._withheld_logged: Set[Tuple[str, str]] = set()
        self._merge_lock = threading.Lock()  # one merge at a time; never held with _lock
        self._block: Dict[str, blockdev.BlockDevice] = {}
        self._busy: Dict[str, float] = {}  # device -> start of the probe in flight
        self._stuck: Dict[str, int] = {}  # device -> pid that outlived SIGKILL
        self._problems: Dict[str, str] = {}
        self._tls = threading.local()  # .device: the device whose probe this thread runs
        self._discover_soon = threading.Event()  # a drive vanished: rediscover early
        self._probe_slots = threading.BoundedSemaphore(config.max_concurrent_probes)
        self._executor = ThreadPoolExecutor(
            max_workers=config.max_concurrent_probes, thread_name_prefix="probe"
        )
        self._stop = threading.Event()
        self._threads: List[threading.Thread] = []
        self._history_dropped_seen = 0  # history rows dropped as of the last history run
        self._history_faults_seen = 0  # clock anomalies and lost files as of the last history run
        self._history_fault: Optional[Tuple[float, str]] = None  # (monotonic end, what) of the newest
        self._crashes_logged: Set[Tuple[str, str]] = set()  # (source, error) with a traceback logged
        # identity -> (when its sources read it, its projections, its rated endurance in host
        # bytes): computed once per new reading, not on every merge (diskstats merges every
        # 15 s), and never under _lock.
        self._projections: Dict[str, Tuple[Tuple[Tuple[str, float], ...], Tuple[Projection, ...], Optional[float]]] = {}
        self._rated_rules = [r.model_dump() for r in config.endurance]
        # Samples the sources asked to record, written at the next merge under the identity
        # the merge gives their drive (two drives that share a serial are kept apart).
        self._to_record: List[Tuple[DriveReading, float]] = []
        self._identities: Dict[Tuple[str, str], str] = {}  # (identity, place) -> merged identity
        self.reload_status = ReloadStatus(successful=True, last_success=clock())
        self._signals: Dict[str, int] = {}  # signals the agent handled without stopping
        self._reload_lock = threading.Lock()
        self._loops: Dict[str, _LoopControl] = {}  # source or discovery -> its thread's events
        self._carried: Dict[str, Report] = {}  # a rebuilt source's predecessor's last report
        self._shared_logged: Set[str] = set()  # identities whose shared serial was logged
        self._started = False  # start() ran: sources in threads, a running agent's snapshot

        # The sources: every enabled one in the registry whose settings make it active.
        self.specs: Dict[str, SourceSpec] = {}
        self.sources: Dict[str, Source] = {}
        self._first_pass: Dict[str, threading.Event] = {}
        self._sources = {name: _SourceState(name) for name in (DISCOVERY, HISTORY)}
        self._inventory: Tuple[Target, ...] = ()  # the drives sources act on (inventory())
        self._built = False
        if build_sources:
            for name, (spec, source) in self._build_sources(config, self._wanted(config)).items():
                self._add_built(name, spec, source)
            self._built = True

    def _add_built(self, name: str, spec: SourceSpec, source: Source) -> None:
        self.specs[name] = spec
        self.sources[name] = source
        self._first_pass[name] = threading.Event()
        self._sources[name] = _SourceState(name)

    def build_sources(self) -> None:
        """Build the configured sources, for a poller made with ``build_sources=False``
        (:meth:`start` calls it): the agent opens its listener before it imports and builds
        the sources' implementations (issue 32). A source that cannot be built is logged and
        reported as a failed collector (``ssd_collector_success`` 0, its error); the others
        run. A reload before this applies its configuration here."""
        with self._reload_lock:
            if self._built:
                return
            config = self.config
            for name in self._wanted(config):
                try:
                    built = self._build_sources(config, [name])
                except Exception as exc:  # one source's bug must not stop the agent
                    with self._lock:
                        self._sources.setdefault(name, _SourceState(name))
                    self._failed(name, self._log_crash(name, f"building collector {name}", exc, "; it does not run"))
                    continue
                self._add_built(name, *built[name])
            self._built = True

    def bounds(self) -> Bounds:
        """The bounds of every tool call, from the configuration."""
        config = self.config
        return Bounds(config.tool_timeout_seconds, config.tool_kill_grace_seconds, config.tool_max_output_bytes)

    def targets(self) -> Tuple[Target, ...]:
        """The scheduler's inventory of drives, as the last merge built it (see inventory())."""
        return self._inventory

    @staticmethod
    def _wanted(config: Config) -> List[str]:
        """The sources ``config`` runs: enabled, and active with their settings; health sources
        first, then supplements, annotations and host sources (``ssdfleet collect`` runs them
        once in that order, so each finds the inventory the health sources built)."""
        wanted = [spec for spec in registry.SOURCES if spec.name in config.collectors
                  and spec.active(_settings(config, spec))]
        return [spec.name for spec in sorted(wanted, key=lambda spec: ROLES.index(spec.role))]

    def _virtual_devices(self) -> Tuple[str, ...]:
        """Virtual block-device prefixes (dm-, loop) the running sources want as drives."""
        wanted = (p for spec in self.specs.values() for p in spec.virtual_devices(_settings(self.config, spec)))
        return tuple(dict.fromkeys(wanted))

    def _build_sources(self, config: Config, names: Sequence[str]) -> Dict[str, Tuple[SourceSpec, Source]]:
        """Build the sources ``names`` for ``config`` (nothing runs yet)."""
        tool_paths = config.tools.model_dump()
        built: Dict[str, Tuple[SourceSpec, Source]] = {}
        for name in names:
            spec = registry.BY_NAME[name]
            ctx = SourceContext(
                config=config, settings=_settings(config, spec), tool_paths=tool_paths, run=self._run_watched,
                probe=self._probe, submit=self._executor.submit, stopping=self._stop, clock=self.clock,
                record=self._record, changed=self._rebuild, gone=self._discover_soon.set,
                targets=self.targets, block_devices=lambda: self._block,
                quarantined=lambda device: device in self._stuck, bounds=self.bounds,
            )
            built[name] = (spec, spec.build(ctx))
        return built

    # ------------------------------------------------------------------ lifecycle

    def _open_history(self) -> History:
        """The history, in the state directory unless history is off. The directory is locked
        first (agent.history_file.StateLock): a second agent on it raises StateDirectoryInUse,
        a start-up refusal."""
        config = self.config
        kwargs = dict(retention_days=config.history_retention_days,
                      min_interval_seconds=config.history_min_interval_seconds,
                      clock_settle_seconds=config.history_clock_settle_seconds)
        if not config.history:
            return History(None, **kwargs)
        state_dir = config.state_dir or default_state_dir()
        try:
            os.makedirs(state_dir, exist_ok=True)
        except OSError as exc:
            log.error("cannot create state directory %s (%s); history kept in memory", state_dir, exc)
            history = History(None, **kwargs)
            history.lost_file = True  # asked for a file and did not get one: ssd_history_healthy 0
            history.healthy = False
            return history
        lock = StateLock(state_dir)
        lock.acquire()
        self._state_lock = lock
        return History(os.path.join(state_dir, "history.sqlite"), **kwargs)

    def snapshot(self) -> Snapshot:
        return self._snapshot

    def add_listener(self, fn: Callable[[Snapshot], None]) -> None:
        """Call ``fn`` with each new snapshot, from a thread of its own once :meth:`start` has
        run (the HTTP side uses it to render /metrics ahead of the scrape). A listener that
        falls behind sees only the newest snapshot."""
        self._listeners.append(fn)

    def interval(self, name: str) -> float:
        """Seconds between runs of a source: ``intervals.NAME``, or the source's own
        ``interval_seconds`` setting where it has one."""
        settings = getattr(self.config, name, None) if name in self.specs and self.specs[name].settings else None
        own = getattr(settings, "interval_seconds", None)
        return float(own) if own is not None else float(getattr(self.config.intervals, name))

    def poll_once(self) -> Snapshot:
        """Run every source once, health sources first (used by ``ssdfleet collect``)."""
        self._guarded(DISCOVERY, self.run_discovery)
        for name in self.sources:
            self._guarded(name, functools.partial(self.run, name))
        return self._snapshot

    def start(self) -> None:
        """Start one thread per source. Discovery runs first so the others have targets."""
        self.build_sources()
        self._started = True
        self._started_at = time.monotonic()
        self._hold_limit = 2 * (self.config.tool_timeout_seconds + self.config.tool_kill_grace_seconds) + 5.0
        self._guarded(DISCOVERY, self.run_discovery)
        for name in (DISCOVERY,) + tuple(self.sources):
            self._start_loop(name, self.sources.get(name))
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
                    self._log_crash("listener", f"snapshot listener {fn!r}", exc)

    def _start_loop(self, name: str, source: Optional[Source]) -> None:
        control = _LoopControl()
        self._loops[name] = control
        self._threads = [t for t in self._threads if t.is_alive()]  # a reload's ended loops
        t = threading.Thread(target=self._loop, args=(name, source, control), name=f"poll-{name}", daemon=True)
        t.start()
        self._threads.append(t)

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the sources, wait up to ``timeout`` in all for their threads, then flush and
        close the history. A thread still busy then (a hung sysfs read) is left behind: it is
        a daemon thread and its source writes nothing more."""
        deadline = time.monotonic() + timeout
        self._stop.set()
        self._discover_soon.set()
        self._published.set()
        for control in list(self._loops.values()):
            control.wake.set()
        for event in self._first_pass.values():
            event.set()
        with self._lock:
            self._idle.notify_all()
        self._executor.shutdown(wait=False, cancel_futures=True)
        for t in self._threads:
            t.join(max(0.0, deadline - time.monotonic()))
        left = [t.name for t in self._threads if t.is_alive()]
        if left:
            log.warning("stopping: %s still busy after %.1fs; not waiting for them", ", ".join(left), timeout)
        for source in self.sources.values():
            source.close()
        self._write_records(hold=False)  # samples asked for since the last merge
        self.history.close()
        if self._state_lock is not None:
            self._state_lock.release()

    def _loop(self, name: str, source: Optional[Source], control: _LoopControl) -> None:
        """Run one source (``source``; None for discovery) every interval until the poller
        stops or a reload replaces or removes the source (``control.stop``). The interval is
        read again every cycle, and a reload wakes the wait, so a new interval applies at
        once."""
        # Discovery also wakes early when a probe found its drive gone (stop() sets it too).
        discovery = name == DISCOVERY
        if not discovery:
            if self.specs[name].reads_targets:
                self._wait_for_inventory()
            fn = functools.partial(self.run, name, source=source)
        else:
            fn = self.run_discovery
        started = time.monotonic() if discovery else None  # discovery ran once in start()
        try:
            while not (self._stop.is_set() or control.stop.is_set()):
                if started is None:
                    started = time.monotonic()
                    self._guarded(name, lambda: fn(self._interval_of(name)), self._interval_of(name))
                # A little jitter keeps a fleet of agents from probing in lockstep.
                jitter = random.uniform(0.95, 1.05)
                while not (self._stop.is_set() or control.stop.is_set()):
                    delay = (self._interval_of(name) - (time.monotonic() - started)) * jitter
                    if delay <= 0:
                        break
                    if self._wait(discovery, control, delay):
                        if discovery and self._discover_soon.is_set():
                            self._discover_soon.clear()
                            break  # a drive vanished: rediscover now
                started = None
        finally:
            if source is not None and self.sources.get(name) is not source:
                source.close()  # replaced or removed by a reload: this thread was its last user

    def _wait_for_inventory(self) -> None:
        """Wait for the first pass of every health source: until then the inventory lacks the
        drives they read and their kinds (the write cache asks hdparm only of an ATA drive).
        Bounded: one tool call and its kill grace, and a little slack, so a health source that
        hangs does not hold the others back."""
        deadline = time.monotonic() + self.config.tool_timeout_seconds + self.config.tool_kill_grace_seconds + 5
        for other, spec in list(self.specs.items()):
            if spec.role == HEALTH and other in self._first_pass:
                self._first_pass[other].wait(max(0.0, deadline - time.monotonic()))

    def _interval_of(self, name: str) -> float:
        return float(self.config.intervals.discovery) if name == DISCOVERY else self.interval(name)

    def _wait(self, discovery: bool, control: _LoopControl, delay: float) -> bool:
        """Sleep up to ``delay``; True when woken early (a reload, a vanished drive, stop)."""
        if discovery:
            woke = self._discover_soon.wait(delay)
            if control.wake.is_set():
                control.wake.clear()
                return True
            return woke
        if control.wake.wait(delay):
            control.wake.clear()
            return True
        return False

    def _log_crash(self, name: str, what: str, exc: BaseException, again: str = "") -> str:
        """Log a crash with its traceback once per distinct error, one line after that, so a
        bug that repeats every cycle cannot flood the log."""
        message = f"{type(exc).__name__}: {exc}"
        if (name, message) in self._crashes_logged:
            log.error("%s crashed again (%s)%s", what, message, again)
        else:
            self._crashes_logged.add((name, message))
            log.exception("%s crashed (%s)%s", what, message, again)
        return message

    def _failed(self, name: str, message: str) -> None:
        """Source ``name`` crashed (``message``): failed in ``ssd_collector_success``, counted."""
        with self._lock:
            src = self._sources[name]
            src.ran = True
            src.success = False
            src.errors_total += 1
            src.error = f"internal error: {message}"[:300]
            src.last_run = self.clock()

    def _guarded(self, name: str, fn: Callable[[], None], interval: Optional[float] = None) -> None:
        """Run one source; a source that raises is failed for that run (``ssd_collector_success``
        0, its error counter up) and logged."""
        try:
            fn()
        except Exception as exc:  # a bug in one source must not stop the others
            again = f"; it will run again in {interval:.0f}s" if interval else ""
            self._failed(name, self._log_crash(name, f"collector {name}", exc, again))
            self._rebuild()
        finally:
            if name in self._first_pass:
                self._first_pass[name].set()

    def run(self, name: str, budget: Optional[float] = None, source: Optional[Source] = None) -> None:
        """Run source ``name`` once and merge. ``budget``: how long the source may wait for its
        probes (the background loop passes the interval; None waits for all). ``source``: the
        loop's own source object (a reload may have replaced the one under ``name``)."""
        started = time.monotonic()
        source = source or self.sources[name]
        outcome = source.run(budget)
        if source is not self.sources.get(name):
            return  # replaced by a reload while it ran: its successor reports now
        self._carried.pop(name, None)  # its own first pass is done
        if source.report().readings:
            self._note_history()
        self._finish(name, started, outcome.errors, outcome.unread)

    # ------------------------------------------------------------------ reload

    def reload(self, config: Config) -> List[str]:
        """Apply ``config``, validated, with the keys that need a restart already put back by
        the caller (:func:`agent.config.reload_plan`). Intervals, thresholds, rules and the
        tools' bounds apply at the next cycle (a waiting loop is woken to see its new
        interval). A source whose settings, tool paths or host paths changed is built again
        and discovers its drives; it takes over from the old one, whose last report stands in
        until the new one's first pass, so no drive drops out of /metrics meanwhile. Sources
        enabled or disabled start or stop. Raises, with nothing changed, when a source cannot
        be built. Returns what happened to the sources (``rebuilt smartctl``...)."""
        if self._stop.is_set():
            raise RuntimeError("the agent is stopping")
        with self._reload_lock:
            if not self._built:  # start() has not built them yet: it builds them for this config
                self._apply_config(config)
                return []
            old = self.config
            wanted = self._wanted(config)
            rebuilt = [n for n in wanted if n in self.sources and _source_changed(old, config, n)]
            added = [n for n in wanted if n not in self.sources]
            removed = [n for n in self.sources if n not in wanted]
            built = self._build_sources(config, rebuilt + added)  # may raise: nothing changed yet
            self._apply_config(config)
            for name, (_spec, source) in built.items():
                for error in source.discover():
                    log.warning("discovery (%s, after the reload): %s", name, error)
            before = dict(self.sources)
            with self._merge_lock:
                sources = {n: s for n, s in self.sources.items() if n not in removed}
                for name in rebuilt:
                    self._carried[name] = self.sources[name].report()
                for name in removed:
                    self._carried.pop(name, None)
                for name, (spec, source) in built.items():
                    sources[name] = source
                    self.specs[name] = spec
                    self._first_pass[name] = threading.Event()
                with self._lock:
                    for name in added:
                        self._sources[name] = _SourceState(name)
                    for name in removed:
                        self._sources.pop(name, None)
                self.sources = {n: sources[n] for n in wanted}  # registry order
            for name in rebuilt + removed:
                control = self._loops.pop(name, None)
                if control is not None:
                    control.stop.set()  # its thread closes the old source when its run ends
                    control.wake.set()
                else:
                    before[name].close()
            if self._started:  # the new sources run in threads of their own
                for name in rebuilt + added:
                    self._start_loop(name, self.sources[name])
            for control in self._loops.values():
                control.wake.set()
            self._discover_soon.set()
        self._rebuild()
        return [f"{what} {n}" for what, names in (("rebuilt", rebuilt), ("started", added), ("stopped", removed))
                for n in names]

    def _apply_config(self, config: Config) -> None:
        """What the poller itself derives from the configuration."""
        self.config = config  # the tools' bounds follow at the next call (bounds())
        self._busy_wait_seconds = config.tool_timeout_seconds + config.tool_kill_grace_seconds + 1.0
        self._rated_rules = [r.model_dump() for r in config.endurance]
        self._projections.clear()  # rated endurance rules may have changed

    def reload_failed(self) -> None:
        """A reload was refused: ``ssd_config_last_reload_successful`` 0, the time of the last
        good load kept."""
        self.reload_status = ReloadStatus(False, self.reload_status.last_success)
        self._publish_agent_status()

    def reload_succeeded(self) -> None:
        self.reload_status = ReloadStatus(True, self.clock())
        self._publish_agent_status()

    def note_signal(self, name: str) -> None:
        """Count a signal the agent handled without stopping (``ssd_signals_received_total``)."""
        with self._lock:
            self._signals[name] = self._signals.get(name, 0) + 1
        self._publish_agent_status()

    def _publish_agent_status(self) -> None:
        if not self._started:
            return  # not running as an agent (``collect``, tests): no process state to show
        with self._merge_lock:
            self._snapshot = replace(self._snapshot, agent=self._agent_status())
        self._published.set()

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
        """The runner every source uses: ``self._run`` plus stuck-process bookkeeping."""
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

    def _finish(self, name: str, started: float, errors: Sequence[str],
                unread: Sequence[str] = ()) -> None:
        """Record a source run. ``errors`` are failed probes and parses (counted); ``unread``
        are drives not read for a reason that is no new failure (quarantined, still reading):
        the run is not a success, but the error counter does not grow every cycle."""
        with self._lock:
            for device in list(self._stuck):
                self._quarantined(device)  # lift the quarantine of devices whose process is gone
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

    def run_discovery(self, _budget: Optional[float] = None) -> None:
        """Read the kernel's block devices, then let each source find its own drives."""
        started = time.monotonic()
        block = {b.name: b for b in blockdev.read_block_devices(self.config.paths.sysfs, include=self._virtual_devices())}
        with self._lock:
            self._block = block
        errors: List[str] = []
        for source in list(self.sources.values()):
            errors.extend(source.discover())
        for e in errors:
            log.warning("discovery: %s", e)
        self._finish(DISCOVERY, started, errors)

    # ------------------------------------------------------------------ history

    def _record(self, identity: str, when: float, reading: DriveReading) -> None:
        """A source asks for a history sample. It is written at the next merge (which follows
        every source run), under the identity the merge gives the drive: when two drives report
        one serial each is recorded under its own, never both under the serial."""
        with self._lock:
            self._to_record.append((reading, when))

    def _write_records(self, hold: bool = True) -> int:
        """Write the samples asked for since the last merge (called with the merge lock held,
        or at stop with ``hold`` False). Returns how many there were.

        In a running agent, nothing is written until every source has run once: two drives
        that share a serial are only known to once both are read, and a sample written under
        the bare serial before that would stay there, ambiguous. (A drive that shares a serial
        with one already known, plugged in later, is qualified from its first sample; the
        known drive's earlier samples stay under the bare serial, which was its own.)"""
        if hold and self._holding():
            return 0
        with self._lock:
            pending, self._to_record = self._to_record, []
            identities = dict(self._identities)
        for reading, when in pending:
            identity = identities.get((reading.identity, _place(reading)), reading.identity)
            self.history.record(identity, when, reading)
        return len(pending)

    def _holding(self) -> bool:
        """Whether history writes wait for the sources' first passes (see :meth:`_write_records`);
        at most two tool timeouts after the start, so a source that hangs cannot hold them."""
        if not self._started or time.monotonic() - self._started_at > self._hold_limit:
            return False
        return not all(e.is_set() for e in list(self._first_pass.values()))

    def _project(self, reading: DriveReading) -> Tuple[Tuple[Projection, ...], Optional[float]]:
        """The drive's wear-out projections and its rated endurance in host bytes."""
        rated = rated_endurance(reading.model or "", reading.capacity_bytes, self._rated_rules, reading.model_family,
                                stated=stated_endurance(reading))
        try:
            projections = tuple(projection_mod.project_all(reading, self.clock(), self.history, rated))
        except Exception:  # projection is advisory; never lose the drive over it
            log.exception("projection failed for %s", reading.identity)
            projections = ()
        return projections, projection_mod.rated_host_bytes(rated, reading, projections)

    def _note_history(self) -> None:
        with self._lock:
            src = self._sources[HISTORY]
            src.ran = True
            src.last_run = self.clock()
            dropped = sum(getattr(self.history, "dropped_total", {}).values())
            new_drops = dropped > self._history_dropped_seen
            self._history_dropped_seen = dropped
            # A clock step or a lost file was handled when found, but it fails the history
            # collector (ssd_history_healthy 0) for one history interval, long enough for a
            # scrape to see; the problems list keeps a clock step while retention waits.
            faults = sum(self.history.clock_anomalies().values()) + sum(self.history.file_losses().values())
            if faults > self._history_faults_seen:
                what = self.history.clock_problem() or self.history.last_error or "history file lost (see log)"
                self._history_fault = (time.monotonic() + self.config.history_min_interval_seconds, what)
            self._history_faults_seen = faults
            fault = self._history_fault if self._history_fault and time.monotonic() < self._history_fault[0] else None
            problem = self.history.clock_problem()
            if problem:
                self._problems["history clock"] = problem
            else:
                self._problems.pop("history clock", None)
            src.success = bool(getattr(self.history, "healthy", True)) and not new_drops and fault is None
            src.errors_total = int(getattr(self.history, "errors_total", 0))
            src.error = None if src.success else (
                fault[1] if fault else getattr(self.history, "last_error", None) or "history not on disk (see log)")

    # ------------------------------------------------------------------ snapshot

    def _rebuild(self) -> None:
        """Merge what every source knows into a new immutable snapshot and publish it."""
        with self._merge_lock:
            carried = dict(self._carried)
            reports = {name: carried[name] if name in carried else source.report()
                       for name, source in list(self.sources.items())}
            with self._lock:
                block = dict(self._block)
            roles = {n: self.specs[n].role for n in reports}
            readers = [(self.specs[n].priority, n, reports[n]) for n in reports if roles[n] in READING_ROLES]
            merged = merge_drives(readers, block, self.config.include_block_devices)
            self._inventory = inventory([r for r in readers if roles[r[1]] == HEALTH], block,
                                        self.config.include_block_devices)
            readings = [(d.reading, d.polls) for d in merged]
            with self._lock:
                self._identities = merged_identities(merged)
            # History first: the projections read it, and ssd_history_healthy tells this write.
            if self._write_records():
                self._note_history()
            with self._lock:
                problems = dict(self._problems)
                stuck = tuple(sorted(self._stuck))
                collectors = tuple(s.status() for s in self._sources.values() if s.ran)
            self._note_shared_serials([r for r, _polls in readings if "serial_shared" in r.extra], problems)
            self._note_withheld([r for r, _polls in readings])
            drives = []
            for reading, polls in readings:
                reading = self._configured(reading)
                drives.append(self._drive(reading, polls, reports))
            for gone in set(self._projections) - {d.reading.identity for d in drives}:
                del self._projections[gone]
            for report in reports.values():
                for key, note in report.notes.items():
                    problems.setdefault(key, note)
            host = {n: r.host for n, r in reports.items() if roles[n] == HOST and r.host is not None}
            self._snapshot = Snapshot(
                drives=tuple(drives),
                collectors=collectors,
                created=self.clock(),
                problems=tuple(f"{k}: {v}" for k, v in sorted(problems.items())),
                stuck=stuck,
                history_dropped=tuple(sorted(getattr(self.history, "dropped_total", {}).items())),
                history_recorded=int(getattr(self.history, "recorded_total", 0)),
                history_pending=int(getattr(self.history, "pending_count", 0)),
                history_written=self.history.written_total,
                history_clock_anomalies=tuple(sorted(self.history.clock_anomalies().items())),
                history_retention_held=self.history.retention_held(),
                history_file_lost=tuple(sorted(self.history.file_losses().items())),
                host=host,  # a new dict per snapshot, never changed after
                agent=self._agent_status() if self._started else None,
            )
        self._published.set()

    def _agent_status(self) -> AgentStatus:
        with self._lock:
            signals = tuple(sorted(self._signals.items()))
        status = self.reload_status
        return AgentStatus(config_reload_successful=status.successful,
                           config_reload_success_timestamp=status.last_success,
                           signals=signals, leftover_processes_killed=LEFTOVERS.counts())

    def _note_shared_serials(self, shared: Sequence[DriveReading], problems: Dict[str, str]) -> None:
        """Drives that share a serial: a problem each, and one log line per serial when it is
        first seen shared (again after it stopped being)."""
        by_serial: Dict[str, List[DriveReading]] = {}
        for reading in shared:
            problems.setdefault(reading.identity, reading.extra["serial_shared"])
            by_serial.setdefault(reading.replace(identity_qualifier=None).identity, []).append(reading)
        for serial, readings in sorted(by_serial.items()):
            if serial not in self._shared_logged:
                log.warning("%s", printable(
                    f"{len(readings)} drives report serial {serial} ({', '.join(r.device for r in readings)}): kept "
                    f"apart as {', '.join(r.identity for r in readings)}; ssd_drive_serial_shared is 1 for them"))
        self._shared_logged = set(by_serial)

    def _note_withheld(self, readings: Sequence[DriveReading]) -> None:
        """One INFO line per drive and figure when a figure is first withheld (again after it
        was given for a while): an impossible value is a fault to be told of once, not every
        poll; ``ssd_value_withheld`` carries it for as long as it lasts."""
        now = {(r.identity, key): r.extra[key] for r in readings for key in r.extra if key.endswith("_withheld")}
        for (identity, key), why in sorted(now.items()):
            if (identity, key) not in self._withheld_logged:
                log.info("%s", printable(f"{identity}: {key[: -len('_withheld')]} withheld: {why}"))
        self._withheld_logged = set(now)

    def _drive(self, reading: DriveReading, polls: Dict[str, float], reports: Mapping[str, Report]) -> Drive:
        """One drive record: the reading, what the annotating sources know of its device, its
        projections (computed when the reading arrived) and its expectations."""
        label = reading.block_device or os.path.basename(reading.device)
        if reading.block_device is None and reading.device_type:
            # Read through a controller (smartctl -d megaraid,N /dev/sda or /dev/bus/0): the
            # kernel device it was opened on is the controller's volume, whose write cache and
            # I/O are not this drive's. A name no annotating source keys by takes nothing.
            label = f"{label}:{reading.device_type}"
        fields: Dict[str, Any] = {}
        read_at = tuple(sorted(polls.items()))
        polls = dict(polls)
        for name, report in reports.items():
            field = self.specs[name].annotates if self.specs[name].role == ANNOTATE else None
            if field is None or label not in report.per_drive:
                continue
            value, when = report.per_drive[label]
            fields[field] = value
            polls[name] = when
        cached = self._projections.get(reading.identity)
        if cached is None or cached[0] != read_at:
            cached = (read_at, *self._project(reading))
            self._projections[reading.identity] = cached
        _read_at, projections, rated_bytes = cached
        return Drive(
            reading=reading,
            write_cache_expected=durability.expected_write_cache(self.config, reading.serial, reading.model,
                                                                 reading.power_loss_protection),
            power_loss_protection=durability.power_loss_protection(self.config, reading.serial, reading.model,
                                                                   reading.power_loss_protection)[0],
            projections=projections,
            rated_endurance_bytes=rated_bytes,
            last_poll=polls,
            **fields,
        )

    def _configured(self, reading: DriveReading) -> DriveReading:
        """The reading with the configured temperature limits applied."""
        if not self.config.temperature_limits:
            return reading
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


def _settings(config: Config, spec: SourceSpec) -> Any:
    """The source's own config section (None for a source without settings)."""
    return getattr(config, spec.name, None) if spec.settings else None


def inventory(
    health: Sequence[Tuple[int, str, Report]],
    block: Mapping[str, blockdev.BlockDevice],
    include_block_devices: bool,
) -> Tuple[Target, ...]:
    """The drives sources act on (a supplement, the write cache), pure: the merge of the
    health sources' readings and the kernel's block devices (:func:`merge_drives`), each as a
    :class:`~collectors.source.Target`. Supplements and annotations do not feed it, so a source
    never acts on another's figures, only on the drives and identities the health sources
    established. ``queue_devices``: the block devices discovery listed for the drive (its own
    name, or the namespaces of an NVMe controller)."""
    out: List[Target] = []
    by_drive: Dict[str, List[str]] = {}  # an NVMe controller's namespaces, computed once per call
    for device in sorted(block):
        by_drive.setdefault(block[device].drive_name, []).append(device)
    for drive in merge_drives(health, block, include_block_devices):
        r = drive.reading
        name = r.block_device or os.path.basename(r.device)
        if r.block_device is None:
            queues: Tuple[str, ...] = ()  # read through a controller: no kernel device of its own
        elif name in block:
            queues = (name,)
        else:
            queues = tuple(by_drive.get(name, ()))
        out.append(Target(
            identity=r.identity, kind=r.kind, name=name, device=r.device, block_device=r.block_device,
            queue_devices=queues, device_type=r.device_type, serial=r.serial, wwn=r.wwn, model=r.model,
            power_state=r.power_state, host_written_bytes=r.host_written_bytes,
            capacity_bytes=r.capacity_bytes, power_on_seconds=r.power_on_seconds))
    return tuple(out)


def _source_changed(old: Config, new: Config, name: str) -> bool:
    """Whether source ``name`` must be built again for ``new``: its own settings section, one
    of its tools' paths, or a setting sources read when they are built (host paths, tool
    bounds, SMART options: :data:`agent.config.SOURCE_KEYS`) changed."""
    spec = registry.BY_NAME[name]
    if spec.settings and getattr(old, name) != getattr(new, name):
        return True
    if any(getattr(old.tools, key) != getattr(new.tools, key) for key in spec.tools):
        return True
    return any(getattr(old, key) != getattr(new, key) for key in SOURCE_KEYS)


def merge_readings(
    reports: Sequence[Tuple[int, str, Report]],
    block: Mapping[str, blockdev.BlockDevice],
    include_block_devices: bool,
) -> List[Tuple[DriveReading, Dict[str, float]]]:
    """The drives of a snapshot, pure: each drive once, from the source that merges first
    (lowest priority number), each field it lacks filled from later sources' readings of the
    same drive (:func:`collectors.model.supplement`), then the kernel's block devices no
    source read (when wanted). Returns (reading, {source: unix time of its data}) sorted by
    device.

    Readings of one identity (serial, else WWN) are one drive unless they cannot be: two
    different WWNs, two different kernel names, or two readings from the same source. Drives
    that share a serial that way (a firmware or cloning fault, issue 26) are kept apart: each
    gets ``identity_qualifier`` (see :func:`_qualify`), and ``extra["serial_shared"]`` says
    which drives share it, shown in the snapshot's problems and as ``ssd_drive_serial_shared``.
    """
    return [(d.reading, d.polls) for d in merge_drives(reports, block, include_block_devices)]


def merge_drives(
    reports: Sequence[Tuple[int, str, Report]],
    block: Mapping[str, blockdev.BlockDevice],
    include_block_devices: bool,
) -> List[_Merged]:
    """:func:`merge_readings`, each drive with the source readings it was made of."""
    drives: List[_Merged] = []
    # The drives by identity, in the order they were made: a merged drive's identity is its
    # first reading's (identity fields are never supplemented). Scanning every drive for each
    # reading cost 14% of a CPU at 1,024 drives (a diskstats pass every 15 s; issue 32).
    by_identity: Dict[str, List[_Merged]] = {}

    def add(merged: _Merged) -> None:
        drives.append(merged)
        by_identity.setdefault(merged.reading.identity, []).append(merged)

    for _, name, report in sorted(reports, key=lambda pnr: pnr[:2]):
        for _key, (reading, when) in sorted(report.readings.items()):
            same = _same_drive(by_identity, reading, name)
            if same is None:
                add(_Merged(reading, {name: when}, [(name, reading)]))
            else:
                same.reading = supplement(same.reading, reading, name)
                same.polls[name] = when
                same.members.append((name, reading))
    covered = {r.block_device for d in drives for _n, r in d.members if r.block_device}
    if include_block_devices:
        for name, b in sorted(block.items()):
            if b.drive_name in covered or name in covered:
                continue
            reading = blockdev.reading_of(b)
            if _same_drive(by_identity, reading, "") is None:
                add(_Merged(reading, {}, [("", reading)]))
            covered.add(b.drive_name)
    _qualify(drives)
    return sorted(drives, key=lambda d: d.reading.device)


class _Merged:
    """One drive being merged: its reading so far, when each source read it, and the
    readings it was made of (to map a source's history sample to the merged identity)."""

    def __init__(self, reading: DriveReading, polls: Dict[str, float],
                 members: List[Tuple[str, DriveReading]]) -> None:
        self.reading = reading
        self.polls = polls
        self.members = members


def _same_drive(by_identity: Mapping[str, Sequence[_Merged]], reading: DriveReading,
                source: str) -> Optional[_Merged]:
    """The drive ``reading`` is about among those merged so far (by identity, in the order
    they were made), or None for a new one."""
    for drive in by_identity.get(reading.identity, ()):
        if not any(_apart(mine, reading, name == source) for name, mine in drive.members):
            return drive
    return None


def _apart(a: DriveReading, b: DriveReading, same_source: bool) -> bool:
    """Whether two readings of one identity must be two drives. One WWN is one drive (two
    paths to a dual-ported SAS drive); else two WWNs, one source reading the identity
    twice, or two kernel names are two drives. A reading with no kernel name and no WWN (a
    plug-in's, a sysfs one) says nothing against being the same drive."""
    if a.wwn and b.wwn:
        return _norm_wwn(a.wwn) != _norm_wwn(b.wwn)
    if same_source:
        return True
    return bool(a.block_device and b.block_device and a.block_device != b.block_device)


def _norm_wwn(wwn: str) -> str:
    # smartctl prints "5 002538 e40a22954", sysfs "naa.5002538e40a22954"
    text = wwn.lower().replace(" ", "")
    return text.split(".", 1)[1] if "." in text[:5] else text


def _qualify(drives: Sequence[_Merged]) -> None:
    """Give drives that share an identity a qualifier each: their WWNs when every one has a
    distinct WWN (stable across reboots), else their kernel names (or tool paths)."""
    by_identity: Dict[str, List[_Merged]] = {}
    for d in drives:
        by_identity.setdefault(d.reading.identity, []).append(d)
    for identity, group in by_identity.items():
        if len(group) < 2:
            continue
        wwns = [_norm_wwn(d.reading.wwn) if d.reading.wwn else None for d in group]
        if all(wwns) and len(set(wwns)) == len(wwns):
            how, names = "WWN", [str(w) for w in wwns]
        else:
            how, names = "device", [_where(d.reading) for d in group]
            if len(set(names)) != len(names):
                names = [f"{n}#{i}" for i, n in enumerate(names, 1)]
        paths = [d.reading.device for d in group]
        for d, name in zip(group, names):
            others = ", ".join(p for p in paths if p != d.reading.device) or "another drive"
            note = (f"{d.reading.device} reports serial {identity}, as does {others} (a firmware or "
                    f"cloning fault): kept apart by {how}")
            d.reading = d.reading.replace(identity_qualifier=name,
                                          extra=dict(d.reading.extra, serial_shared=note))


def _where(reading: DriveReading) -> str:
    if reading.block_device:
        return reading.block_device
    path = reading.device[len("/dev/"):] if reading.device.startswith("/dev/") else reading.device
    return f"{path}:{reading.device_type}" if reading.device_type else path


def _place(reading: DriveReading) -> str:
    """Where a reading was taken, to tell apart two readings of one identity."""
    return f"{reading.kind}|{reading.device}|{reading.device_type or ''}|{reading.block_device or ''}"


def merged_identities(drives: Sequence[_Merged]) -> Dict[Tuple[str, str], str]:
    """(a source reading's identity, its place) -> the identity the merge gave its drive, for
    the drives whose identity the merge qualified. Pure; see :func:`merge_readings`."""
    return {(r.identity, _place(r)): d.reading.identity
            for d in drives if d.reading.identity_qualifier for _name, r in d.members}


REMOTE_PID = -1  # a stuck process that lives in the probe helper


