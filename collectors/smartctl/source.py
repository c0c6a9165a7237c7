"""The smartctl source: discover drives with ``--scan-open``, read each with one bounded call,
parse (JSON from smartmontools 7, text before), keep the last good reading per drive.

Bounds, and what they do not cover (the scheduler, agent/poller.py, adds the per-device lock
and the quarantine of a device whose probe outlived SIGKILL):

* A cycle in the background loop waits at most its interval for its reads. A read still
  running then finishes on its own and is applied when it arrives; the next cycles skip that
  drive instead of queueing a second read, so one hanging drive never delays the others.
* ``-n standby``: smartctl does not wake a sleeping drive and exits with
  :data:`collectors.smartctl.STANDBY_EXIT_STATUS`; the drive keeps its last values and is
  marked in standby. Like smartd's ``-n standby,N``, after ``smartctl.standby_max_skips``
  consecutive skips the next read goes without ``--nocheck``, waking the drive once; 0 never
  wakes it.
* A drive that vanishes between discovery and its read ("No such device") is an error for
  that cycle and keeps its last values until the next discovery (asked to run early) drops it.
"""

from __future__ import annotations

import functools
import logging
import re
import threading
import time
from concurrent.futures import Future
from concurrent.futures import wait as wait_futures
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Set, Tuple

from collectors import evidence
from collectors.model import DriveReading, ParseError
from collectors.smartctl import drivedb, passthrough
from collectors.smartctl import json_report as smartctl
from collectors.smartctl import text_report as smartctl_text
from collectors.smartctl.spec import (  # noqa: F401 (re-exported: their old home)
    BUS,
    CCISS,
    DF,
    READ_DEVICES,
    SPEC,
    STANDBY_MAX_SKIPS,
    THREEWARE,
    SmartctlSettings,
    checked_type,
)
from collectors.source import (
    Command,
    HelperChecks,
    Refused,
    Report,
    RunResult,
    Source,
    SourceContext,
    built,
    recording_runner,
)

log = logging.getLogger("ssdfleet.smartctl")

# Names under which host-wide calls are quarantined (they are not one device's probe;
# --scan-open opens every device and can hang on any of them).
SCAN_PROBE = "smartctl --scan-open"
VERSION_PROBE = "smartctl --version"

# smartctl's message when the device node is gone (ENODEV/ENOENT on open).
_VANISHED = ("No such device", "No such file or directory")
# smartctl's message when it cannot tell how to talk to a device it opened ("Please specify
# device type with the -d option"): seeds/000's smartctl 6.2 on a PCIe card, and RevoDrive-style
# cards whose SATA controllers sit behind a SCSI-presenting driver. ATA behind a SCSI layer is
# what SAT (-d sat) is for; it is tried once per device (see SmartctlSource._read).
_UNDETECTED = b"Unable to detect device type"


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


def argv_for(probe: smartctl.SmartctlProbe, target: SmartTarget, version: Optional[Tuple[int, int]],
             use_json: bool, wake: bool) -> List[str]:
    """The one command line of a SMART read, every variant in one place: JSON or text (before
    7.0), without the devstat and SSD log pages before 6.0, without ``--nocheck`` to wake a
    drive that slept too long. The probe helper accepts exactly these (:func:`helper_rule`)."""
    argv = probe.read_argv(target.device, target.dev_type or "auto")
    if not use_json:
        old = version is not None and version < (6, 0)
        argv = [a for a in argv if a != "--json=c" and not (old and a in smartctl.OLD_SMARTCTL_DROPS)]
    if wake:
        argv = [a for a in argv if not a.startswith("--nocheck")]
    return argv


def choose_drive_database(setting: str) -> drivedb.DriveDatabase:
    """smartmontools' drive database the SMART normaliser names attributes by: the newest of
    the host's copies and the bundled one ("auto"), or the configured file. A file that cannot
    be read is logged and the bundled copy used: names from an older database are still better
    than none. The source holds the result and hands it to each parse (:func:`interpret`)."""
    try:
        database = drivedb.best_available() if setting == "auto" else drivedb.load(setting)
    except OSError as exc:
        log.error("smartctl.drivedb %s cannot be read (%s); using the bundled %s", setting, exc,
                  drivedb.bundled().label)
        database = drivedb.bundled()
    if not database.entries or not database.defaults:
        log.error("smartctl.drivedb %s has no drive entries; using the bundled %s", setting, drivedb.bundled().label)
        database = drivedb.bundled()
    log.info("drive database: %s from %s", database.label, database.origin)
    return database


class SmartctlSource(Source):
    def __init__(self, ctx: SourceContext) -> None:
        super().__init__(ctx)
        self.settings: SmartctlSettings = ctx.settings or SmartctlSettings()
        # The drive database is read on first use, in the source's own thread: parsing drivedb.h
        # costs ~0.14 s, which would otherwise come before the agent listens (issue 32).
        self._database: Optional[drivedb.DriveDatabase] = None
        self._database_lock = threading.Lock()
        self._passes = 0  # runs started: the first is not paced (the agent's first full data)
        # No timeout here: ctx.run applies the agent's one tool timeout to every call.
        self.probe_tool = smartctl.SmartctlProbe(tool=ctx.tool_paths["smartctl"], runner=ctx.run)
        self._lock = threading.Lock()
        self._json: Optional[bool] = None
        self._version: Optional[Tuple[int, int]] = None
        self._targets: List[SmartTarget] = []
        self._readings: Dict[str, Tuple[DriveReading, float]] = {}
        self._notes: Dict[str, str] = {}  # target key -> why there is no data
        self._inflight: Dict[str, Future] = {}  # target key -> read not finished
        self._slow: Set[str] = set()  # targets whose last read failed or timed out
        self._standby_skips: Dict[str, int] = {}
        # targets smartctl could not type: True once -d sat read them, False once it did not
        self._sat_fallback: Dict[str, bool] = {}
        self._logged: Dict[str, str] = {}  # target key -> the failure last logged
        self._tracebacks: Set[Tuple[str, str]] = set()  # (target key, error) logged with its traceback
        self._late_errors: List[str] = []
        self._standby_max_skips = self.settings.standby_max_skips

    @property
    def database(self) -> drivedb.DriveDatabase:
        with self._database_lock:
            if self._database is None:
                self._database = choose_drive_database(self.settings.drivedb)
            return self._database

    # -------------------------------------------------------------- discovery

    def _detect_json(self) -> Optional[bool]:
        """smartctl has JSON output from 7.0; older hosts get the text parser."""
        result = self.ctx.probe(VERSION_PROBE, self.probe_tool.version)
        if result is None or not result.ok_to_parse:
            return None
        self._version = smartctl.smartctl_version(result.stdout)
        if self._version is None:
            return True  # an unknown banner: try JSON, the parse error will say more
        return smartctl.supports_json(result.stdout)

    def _load_database_meanwhile(self) -> None:
        """Start reading the drive database in a thread of its own: discovery's tool calls
        wait on the tools (the GIL free), so the 0.14-0.2 s of parsing drivedb.h overlaps them
        instead of delaying the first parse, which takes the lock and waits for it (first
        full data at 8 drives, issue 32)."""
        if self._database is None:
            threading.Thread(target=self._load_quietly, name="drivedb-load", daemon=True).start()

    def _load_quietly(self) -> None:
        try:
            self.database  # noqa: B018 - loads it
        except Exception:  # the first parse loads it again and says what failed, where it is seen
            log.debug("drive database: the early load failed", exc_info=True)

    def discover(self) -> Sequence[str]:
        self._load_database_meanwhile()
        errors: List[str] = []
        if self._json is None:
            self._json = self._detect_json()
        json_scan = bool(self._json)
        targets: List[SmartTarget] = []
        scanned = False
        result = self.ctx.probe(SCAN_PROBE, lambda: self.probe_tool.scan(json_output=json_scan))
        if result is None:
            errors.append("smartctl scan: skipped, an earlier scan is stuck")
        elif not result.ok_to_parse:
            errors.append(f"smartctl scan: {result.describe()}")
        else:
            try:
                if self._json:
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
                targets = list(self._targets)
        for extra in self.settings.devices:
            dev, _, typ = extra.partition(":")
            targets.append(SmartTarget(dev, typ or None))
        unique: Dict[str, SmartTarget] = {}
        for t in targets:
            unique.setdefault(t.key, t)
        with self._lock:
            if scanned or unique:
                self._targets = list(unique.values())
                for key in set(self._readings) | set(self._notes):
                    if key not in unique:
                        if key in self._readings:
                            log.info("%s is no longer discovered; dropping it", key)
                        self._forget(key)
        return errors

    def _forget(self, key: str) -> None:
        self._readings.pop(key, None)
        self._notes.pop(key, None)
        self._standby_skips.pop(key, None)
        self._sat_fallback.pop(key, None)
        self._slow.discard(key)

    # -------------------------------------------------------------- reading

    def run(self, budget: Optional[float] = None) -> RunResult:
        """Read SMART from every target. ``budget`` is how long to wait for the reads (the
        background loop passes its interval); ``None`` waits for every read. A reading's time
        is when its read started."""
        with self._lock:
            targets = list(self._targets)
            running = {key for key, f in self._inflight.items() if not f.done()}
            slow = set(self._slow)
            late, self._late_errors = self._late_errors, []
        if self._json is None:
            self._json = self._detect_json()
        use_json = self._json is not False
        # Drives that failed or timed out last time go to the back of the queue, so they do
        # not hold the probe slots while healthy drives wait.
        targets.sort(key=lambda t: t.key in slow)
        futures: Dict[str, Future] = {}
        unread: List[str] = []
        gap = self._pace(len(targets), budget)
        started = time.monotonic()
        for i, t in enumerate(targets):
            if t.key in running:
                unread.append(f"{t.key}: the previous read has not finished")
                continue
            # The pace's wait is the agent's stop event: a stop ends a paced pass at once.
            if self.ctx.stopping.wait(max(0.0, started + i * gap - time.monotonic())):
                break
            try:
                futures[t.key] = self.ctx.submit(self._timed_read, t, use_json)
            except RuntimeError:  # the executor was shut down: the agent is stopping
                break
        self._passes += 1
        with self._lock:
            self._inflight.update(futures)
        done, _ = wait_futures(list(futures.values()), timeout=budget)
        errors: List[str] = list(late)
        for t in targets:
            fut = futures.get(t.key)
            if fut is None:
                continue
            if fut in done:
                error, skipped = self._apply(t, fut)
                if error:
                    errors.append(error)
                if skipped:
                    unread.append(skipped)
            else:
                unread.append(f"{t.key}: still reading after {budget:.0f}s")
                fut.add_done_callback(functools.partial(self._apply_late, t))
        return RunResult(tuple(errors), tuple(unread))

    def _pace(self, count: int, budget: Optional[float]) -> float:
        """Seconds between the starts of this pass's reads: 0 for the first pass (the agent's
        first full data), for a pass that waits for every read (``collect``, tests: budget None)
        and without a limit; else ``1 / reads_per_second``, shortened so the pass starts its last read within
        half the budget. A paced pass merges once, at its end, like any other."""
        rate = self.settings.reads_per_second
        if not self._passes or budget is None or rate <= 0 or count < 2:
            return 0.0
        return min(1.0 / rate, 0.5 * budget / count)

    def _timed_read(self, target: SmartTarget, use_json: bool) -> Tuple[float, Tuple[str, object]]:
        """A read and when it started: the reading's time (a paced pass's reads start up to
        half an interval after the pass)."""
        when = self.ctx.clock()
        return when, self._read(target, use_json)

    def _apply_late(self, target: SmartTarget, fut: Future) -> None:
        """A read that outlasted its cycle: apply it now; its error counts in the next run."""
        if fut.cancelled():
            return
        error, _ = self._apply(target, fut)
        if error:
            with self._lock:
                self._late_errors.append(error)
        self.ctx.changed()

    def _apply(self, target: SmartTarget, fut: Future) -> Tuple[Optional[str], Optional[str]]:
        """Fold one finished read (:meth:`_timed_read`) in. Returns (error, unread)."""
        key = target.key
        when = self.ctx.clock()
        try:
            when, (outcome, value) = fut.result()
        except Exception as exc:  # defensive: a parser bug is one drive's error
            outcome, value = "error", f"internal error: {type(exc).__name__}: {str(exc)[:300]}"
            # The traceback once per drive and distinct error, then the one-line warning below.
            signature = (key, re.sub(r"[0-9.]+", "#", str(value)))
            if signature not in self._tracebacks:
                self._tracebacks.add(signature)
                log.error("smartctl %s: unexpected error", key, exc_info=exc)
                self._logged[key] = re.sub(r"[0-9.]+", "#", f"{outcome}: {value}")
        error: Optional[str] = None
        unread: Optional[str] = None
        with self._lock:
            if self._inflight.get(key) is fut:
                del self._inflight[key]
            if outcome == "ok":
                assert isinstance(value, DriveReading)
                before = self._readings.get(key)
                value = evidence.monotone(before[0] if before else None, value)
                self._readings[key] = (value, when)
                self._notes.pop(key, None)
                self._standby_skips.pop(key, None)
                self._slow.discard(key)
            else:
                self._notes[key] = str(value)
                if outcome == "standby":
                    self._standby_skips[key] = self._standby_skips.get(key, 0) + 1
                    if key in self._readings:
                        reading, at = self._readings[key]
                        self._readings[key] = (reading.replace(power_state="standby"), at)
                elif outcome == "quarantined":
                    unread = f"{key}: {value}"
                elif outcome == "gone":
                    # Keep the last values until discovery confirms the drive is gone.
                    error = f"{key}: {value}"
                    self.ctx.gone()
                elif outcome == "error":
                    error = f"{key}: {value}"
                    self._slow.add(key)
        if outcome == "ok":
            self._logged.pop(key, None)
            self.ctx.record(value.identity, when, value)
        elif outcome in ("nodata", "standby", "busy", "quarantined"):
            log.debug("smartctl %s: %s", key, value)
        else:
            # The same failure every cycle is one WARNING line, then DEBUG until it changes
            # or the drive reads fine again (the metric keeps counting every failure).
            said = re.sub(r"[0-9.]+", "#", f"{outcome}: {value}")
            if self._logged.get(key) != said:
                self._logged[key] = said
                log.warning("smartctl %s: %s", key, value)
            else:
                log.debug("smartctl %s: %s (again)", key, value)
        return error, unread

    def _read(self, target: SmartTarget, use_json: bool) -> Tuple[str, object]:
        wake = False
        with self._lock:
            limit = self._standby_max_skips
            skipped = self._standby_skips.get(target.key, 0)
            if limit > 0 and skipped >= limit:
                # Reset now, whatever this read brings: at most one wake-up per N cycles.
                wake = True
                self._standby_skips[target.key] = 0
        if wake:
            log.info("smartctl %s: in standby for %d reads; reading once without --nocheck (wakes it)",
                     target.key, skipped)
        with self._lock:
            fallback = self._sat_fallback.get(target.key)
        asked = SmartTarget(target.device, "sat") if fallback else target
        result = self._call(asked, use_json, wake)
        if isinstance(result, tuple):
            return result
        outcome = interpret(result, asked, use_json, self.database, self.settings.all_attributes)
        if fallback is None and not target.dev_type and outcome[0] != "ok" and _undetected(result):
            return self._try_sat(target, use_json, wake, outcome)
        return _fallback_noted(outcome) if fallback else outcome

    def _call(self, target: SmartTarget, use_json: bool, wake: bool):
        """One smartctl run through the device's probe slot: its result, or (outcome, reason)."""
        argv = argv_for(self.probe_tool, target, self._version, use_json, wake)
        result = self.ctx.probe(target.label, lambda: self.ctx.run(argv))
        if result is None:
            if self.ctx.quarantined(target.label):
                return "quarantined", "not probed: quarantined behind a stuck probe"
            return "busy", "skipped: another probe is in flight on this device"
        return result

    def _try_sat(self, target: SmartTarget, use_json: bool, wake: bool, first: Tuple[str, object]) -> Tuple[str, object]:
        """smartctl said "Unable to detect device type": read once more as SAT. Bounded: one
        extra run, once per device (remembered until the device is forgotten), within the
        same tool timeout; what it found decides every later read."""
        sat = SmartTarget(target.device, "sat")
        result = self._call(sat, use_json, wake)
        if isinstance(result, tuple):
            return first  # busy or quarantined: try again next cycle
        outcome = interpret(result, sat, use_json, self.database, self.settings.all_attributes)
        worked = outcome[0] == "ok"
        with self._lock:
            self._sat_fallback[target.key] = worked
        if worked:
            log.info("smartctl %s: device type not detected; read with -d sat, which will be used from now on", target.key)
            return _fallback_noted(outcome)
        return first[0], f"{first[1]}; -d sat also failed: {outcome[1]}"

    def report(self) -> Report:
        with self._lock:
            readings = dict(self._readings)
            notes = dict(self._notes)
        return Report(readings=readings, notes=notes)


def _fallback_noted(outcome: Tuple[str, object]) -> Tuple[str, object]:
    """A reading taken with the SAT fallback says so (the API and page show ``extra``)."""
    if outcome[0] != "ok" or not isinstance(outcome[1], DriveReading):
        return outcome
    reading = outcome[1]
    return "ok", reading.replace(extra=dict(reading.extra, device_type_fallback=(
        "smartctl could not detect the device type; read as SAT (-d sat)")))


def _undetected(result) -> bool:
    return _UNDETECTED in result.stdout[-8192:] or _UNDETECTED in result.stderr[-8192:]


def interpret(result, target: SmartTarget, use_json: bool,
              database: Optional[drivedb.DriveDatabase] = None, all_attributes: bool = False) -> Tuple[str, object]:
    """One finished smartctl call as (outcome, reading or reason); pure. Outcomes: ok, error,
    standby, gone, nodata. ``database``: the drive database to name ATA attributes by (the
    source's; the bundled one when None). ``all_attributes``: keep every ATA attribute row
    (``smartctl.all_attributes``); without it the reading carries none."""
    if result.error:
        return "error", result.describe()
    if smartctl.is_standby(result):
        return "standby", "standby: not woken"
    if not result.ok_to_parse:
        return "error", result.describe()
    if result.exit_code is not None and result.exit_code & 0x02:
        said = result.stdout[-4096:] + result.stderr[-4096:]
        if any(v.encode() in said for v in _VANISHED):
            return "gone", f"device vanished (exit status {result.exit_code}: no such device)"
    try:
        with drivedb.using(database):
            if use_json:
                reading = smartctl.parse_smartctl_json(result.stdout, device=target.device)
            else:
                reading = smartctl_text.parse_smartctl_text_reading(
                    result.stdout.decode("utf-8", "replace"), device=target.device)
    except smartctl.NoSmartData as exc:
        if result.exit_code is not None and result.exit_code & smartctl.NO_DATA_BITS:
            # Bit 0: smartctl rejected our command line; bit 1: it could not open or identify
            # a drive that discovery found. Both need a person: count them.
            return "error", f"no SMART data: {exc}"
        return "nodata", f"no SMART data: {exc}"
    except ParseError as exc:
        return "error", f"unreadable output ({result.describe()}): {exc}"
    block = None if ":" in target.label else target.label
    if not all_attributes:
        extra = {k: v for k, v in reading.extra.items() if k != "ata_attributes_withheld"}
        reading = reading.replace(ata_attributes=(), extra=extra)
    return "ok", reading.replace(
        block_device=block,
        # Through a controller the -d type asked for names the disk (megaraid,3); smartctl's
        # JSON may name only the family ("cciss") or the protocol behind it: keep ours.
        device_type=(target.dev_type if passthrough.is_pass_through(target.dev_type)
                     else reading.device_type or target.dev_type),
        power_state="active",
        tool_exit_status=(
            reading.tool_exit_status if reading.tool_exit_status is not None else result.exit_code
        ),
    )


# ------------------------------------------------------------------ probe helper rules

def helper_rule(checks: HelperChecks, tool: str, args: List[str]) -> Optional[Command]:
    """Which smartctl commands the probe helper runs for this source: ``--version``, the four
    scans, and a SMART read in every form :func:`argv_for` builds. ``-g`` (the write cache) is
    the write_cache source's; ``-t`` and ``-c`` (a self-test and its status) the selftest source's."""
    if tool != "smartctl" or "-g" in args or "-t" in args or "-c" in args:
        return None
    path = checks.paths["smartctl"]

    def probe(runner) -> smartctl.SmartctlProbe:
        return smartctl.SmartctlProbe(tool=path, runner=runner)

    if "--version" in args:
        return checks.match("smartctl", "version", args, [built(lambda r: probe(r).version())])
    if "--scan" in args or "--scan-open" in args:
        candidates = [
            built(lambda r, j=j, o=o: probe(r).scan(json_output=j, open_devices=o))
            for j in (True, False) for o in (True, False)
        ]
        return checks.match("smartctl", "scan", args, candidates)
    if args.count("-d") != 1 or args.index("-d") + 1 >= len(args):
        raise Refused("smartctl read needs exactly one -d TYPE")
    dev_type = checked_type(args[args.index("-d") + 1])
    prefix, name = checks.device(args[-1], READ_DEVICES, dev_type)
    target = SmartTarget(prefix + name, dev_type)
    builder = probe(recording_runner())
    candidates: List[List[str]] = []
    for version in (None, (5, 43)):
        for use_json in (True, False):
            for wake in (False, True):
                argv = argv_for(builder, target, version, use_json, wake)
                if argv not in candidates:
                    candidates.append(argv)
    return checks.match("smartctl", "read", args, candidates, name)
