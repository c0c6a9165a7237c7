"""The self-test scheduler as a source: a host source, off unless ``selftest.enabled``.

Every run (``intervals.selftest``, a minute by default) it does, in order:

1. If a test it started is still in its state, ask that drive how it goes (one smartctl call)
   and, once the drive no longer runs it, read how it ended from the drive's own log: the new
   entry of that type says passed, failed, aborted (by the host, a reset, a new command) or
   interrupted. Until then nothing else starts: one test at a time per host.
2. Else, for each drive of the scheduler's inventory (ATA, NVMe, SCSI) whose window is open
   and whose test has not run in it (long tests first), check in this order and start the
   first that passes: the device is not quarantined; NVMe needs smartctl 7.3; the drive is
   not busier than ``max_utilisation`` (two reads of /proc/diskstats); the drive answers
   ``--nocheck=standby`` without being woken; it is the drive the inventory says (serial);
   it supports self-tests; it is not running a test already. Then ``smartctl -t short|long``
   with the same ``-d`` type the drive is read with, and ``--nocheck=standby`` again. A drive
   that fails a check is skipped with the reason and asked again after ``retry_minutes``
   within the window.

No command runs while the scheduler is off, and while on, none runs when nothing is due or
running. smartctl is never given ``-t force``: it refuses to abort a test the drive runs.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from collectors import smart_logs as sl
from collectors.diskstats import DiskstatsReader
from collectors.model import KIND_ATA, KIND_NVME, KIND_SCSI, ParseError
from collectors.selftest import schedule as sched
from collectors.selftest import view
from collectors.selftest.spec import (  # noqa: F401 (re-exported: their old home)
    DEVICES,
    SPEC,
)
from collectors.selftest.state import Running, StateFile
from collectors.selftest.status import DriveStatus, new_tests, parse_status_json, parse_status_text, utilisation
from collectors.smartctl import json_report as smartctl
from collectors.smartctl.source import SmartTarget
from collectors.smartctl.spec import checked_type
from collectors.source import (
    Command,
    HelperChecks,
    Refused,
    Report,
    RunResult,
    Source,
    SourceContext,
    Target,
)

log = logging.getLogger("ssdfleet.selftest")

KINDS = (KIND_ATA, KIND_NVME, KIND_SCSI)
# smartctl's word for each test type (``-t short``, ``-t long``: the extended self-test).
ARGUMENT = {sched.SHORT: "short", sched.LONG: "long"}
# smartctl tests NVMe drives from 7.3 (Device Self-test command, log page 06h).
NVME_SELFTEST_SMARTCTL = (7, 3)
# Why a due test was not started (``ssd_selftest_scheduler_skipped_total{reason}``).
SKIP_REASONS = ("busy", "unmeasured", "standby", "testing", "one_at_a_time", "identity", "unsupported",
                "quarantined", "probe_busy", "error")
VERSION_PROBE = "smartctl --version"


def start_argv(tool: str, device: str, dev_type: str, test: str) -> List[str]:
    """``smartctl -t short|long``: the test runs in the background (ATA off-line mode, SCSI and
    NVMe background tests); the drive keeps serving I/O."""
    return [tool, "-t", ARGUMENT[test], f"--nocheck=standby,{smartctl.STANDBY_EXIT_STATUS}", "-d", dev_type, device]


def status_argv(tool: str, device: str, dev_type: str, use_json: bool) -> List[str]:
    """The one status query (collectors/selftest/status.py says what each part gives)."""
    return [tool] + (["--json=c"] if use_json else []) + [
        "-i", "-c", "-A", "-l", "selftest", f"--nocheck=standby,{smartctl.STANDBY_EXIT_STATUS}", "-d", dev_type, device]


def helper_rule(checks: HelperChecks, tool: str, args: List[str]) -> Optional[Command]:
    """The probe helper runs, for this source, exactly :func:`start_argv` (short or long) and
    :func:`status_argv` (JSON or text) on a device of :data:`DEVICES` with a ``-d`` type
    smartctl documents; every other smartctl command is another source's or refused."""
    if tool != "smartctl" or not ("-t" in args or "-c" in args):
        return None
    if args.count("-d") != 1 or args.index("-d") + 1 >= len(args):
        raise Refused("a self-test command needs exactly one -d TYPE")
    dev_type = checked_type(args[args.index("-d") + 1])
    prefix, name = checks.device(args[-1], DEVICES, dev_type)
    path = checks.paths["smartctl"]
    device = prefix + name
    if "-t" in args:
        candidates = [start_argv(path, device, dev_type, test) for test in sched.TYPES]
        return checks.match("smartctl", "selftest", args, candidates, name)
    candidates = [status_argv(path, device, dev_type, use_json) for use_json in (True, False)]
    return checks.match("smartctl", "selftest-status", args, candidates, name)


def diskstats_busy(procfs: str) -> Callable[[], Mapping[str, float]]:
    """The host's time doing I/O per device, in seconds (from /proc/diskstats under ``procfs``)."""
    reader = DiskstatsReader(procfs_root=procfs)
    return lambda: {name: stats.io_time_seconds for name, stats in reader.read().items()}


@dataclass(frozen=True)
class _Checked:
    """What asking a drive gave: ``status`` when it answered, else why not (a skip reason)."""

    status: Optional[DriveStatus] = None
    reason: Optional[str] = None
    detail: str = ""


class SelfTestSource(Source):
    def __init__(self, ctx: SourceContext, busy: Optional[Callable[[], Mapping[str, float]]] = None) -> None:
        super().__init__(ctx)
        self.settings: sched.SelfTestSettings = ctx.settings or sched.SelfTestSettings()
        self.tool = ctx.tool_paths["smartctl"]
        self.file = StateFile(getattr(ctx.config, "state_dir", None))
        self.state = self.file.load()
        self.busy = busy or diskstats_busy(ctx.config.paths.procfs)
        self._version: Optional[Tuple[int, int]] = None
        self._json: Optional[bool] = None
        self._lock = threading.Lock()
        self._started: Dict[str, int] = {}
        self._skipped: Dict[Tuple[str, str], int] = {}
        self._results: Dict[Tuple[str, str], int] = {}
        self._published: Optional[view.SchedulerResult] = None

    # ------------------------------------------------------------------ one run

    def run(self, budget: Optional[float] = None) -> RunResult:
        now = self.ctx.clock()
        local = datetime.fromtimestamp(now)
        # Only drives smartctl read (a kind and a -d type): a name known only from sysfs could
        # be anything behind it.
        targets = [t for t in self.ctx.targets()
                   if t.kind in KINDS and t.device_type and t.device.startswith("/dev/")]
        for target in targets:
            for test in self._tests():
                self.state.entry(target.identity, test, now)
        errors: List[str] = []
        if self.state.running is not None:
            errors += self._follow(now)
        errors += self._start_due(now, local, targets)
        if not self.file.save(self.state):
            errors.append(f"schedule not kept: {self.file.error}")
        self._publish(now, local, targets)
        return RunResult(tuple(errors))

    def _tests(self) -> List[str]:
        return [test for test in sched.TYPES if self.settings.schedule(test) is not None]

    def _detect(self) -> Optional[str]:
        """smartctl's version, once: JSON from 7.0, NVMe self-tests from 7.3."""
        if self._json is not None:
            return None
        probe = smartctl.SmartctlProbe(tool=self.tool, runner=self.ctx.run)
        result = self.ctx.probe(VERSION_PROBE, probe.version)
        if result is None or not result.ok_to_parse:
            return f"smartctl --version: {'a probe of it is stuck' if result is None else result.describe()}"
        self._version = smartctl.smartctl_version(result.stdout)
        self._json = self._version is None or smartctl.supports_json(result.stdout)
        return None

    # ------------------------------------------------------------------ the test running

    def _follow(self, now: float) -> List[str]:
        """Ask the drive of the running test how it goes; finish it when it no longer runs."""
        running = self.state.running
        assert running is not None
        checked = self._ask(running.device, running.device_type, running.kind)
        overdue = now - running.started > self.settings.max_test_hours * 3600
        status = checked.status
        if status is not None and status.running is False:
            self._finish(now, running, *self._outcome(running, status))
        elif overdue:
            self._finish(now, running, "lost", f"still not finished after {self.settings.max_test_hours:g} h "
                         f"({checked.detail or 'the drive says it runs'}); no longer waited for")
        elif status is not None and status.running and status.remaining_percent is not None:
            self.state.running = replace(running, remaining_percent=status.remaining_percent)
        return [f"{running.device}: self-test status: {checked.detail}"] if checked.reason == "error" else []

    @staticmethod
    def _outcome(running: Running, status: DriveStatus) -> Tuple[str, str]:
        """How the test ended, from the entries its log gained (``Running.before`` was the log
        before it started)."""
        before = [sl.SelfTest(kind=k, description="", result=r, status=s, power_on_hours=h)
                  for k, r, s, h in running.before]
        added = new_tests(before, status.tests)
        if added is None:
            return sl.UNKNOWN, "the drive's self-test log no longer holds its earlier entries"
        kind = sched.LOG_KINDS[running.test][0]
        mine = next((t for t in added if t.kind == kind), None)
        if mine is None:
            return sl.UNKNOWN, f"the drive runs no test and its log has no new {kind} entry"
        lba = f", first failing LBA {mine.failing_lba}" if mine.failing_lba is not None else ""
        return mine.result, f"{mine.description}: {mine.status}{lba}"

    def _finish(self, now: float, running: Running, result: str, detail: str) -> None:
        completed = now if result in (sl.PASSED, sl.FAILED) else None
        entry = self.state.entries.get(f"{running.identity}|{running.test}")
        if entry is not None:
            known = [x for x in (completed, entry.completed) if x is not None]
            self.state.update(running.identity, running.test, result=result, detail=detail,
                              completed=max(known) if known else None)
        self.state.running = None
        with self._lock:
            key = (running.test, result)
            self._results[key] = self._results.get(key, 0) + 1
        say = log.warning if result in (sl.FAILED, "lost") else log.info
        say("selftest %s (%s): %s test %s: %s", running.device, running.identity, running.test, result, detail)

    # ------------------------------------------------------------------ starting one

    def _start_due(self, now: float, local: datetime, targets: Sequence[Target]) -> List[str]:
        retry = self.settings.retry_minutes * 60
        for test in self._tests():
            schedule = self.settings.schedule(test)
            for target in targets:
                entry = self.state.entry(target.identity, test, now)
                slot = sched.due_slot(schedule, local, entry.done)
                if slot is None or (entry.skipped_at is not None and now - entry.skipped_at < retry
                                    and entry.skipped_at >= slot.timestamp()):
                    continue
                if self.state.running is not None:
                    self._skip(now, target, test, "one_at_a_time",
                               f"the {self.state.running.test} test on {self.state.running.device} runs")
                    continue
                error = self._try_start(now, local, target, test, sched.slot_key(slot))
                if error:
                    return [error]
        return []

    def _try_start(self, now: float, local: datetime, target: Target, test: str, slot: str) -> Optional[str]:
        """Check the drive and start the test; the error to count, if one happened."""
        failed = self._detect()
        if failed:
            self._skip(now, target, test, "error", failed)
            return failed
        dev_type = target.device_type or "auto"
        checked = self._check(target, dev_type)
        if checked.reason is not None:
            self._skip(now, target, test, checked.reason, checked.detail)
            return f"{target.device}: {checked.detail}" if checked.reason == "error" else None
        assert checked.status is not None
        self._note_completed(now, target, checked.status)
        argv = start_argv(self.tool, target.device, dev_type, test)
        result = self.ctx.probe(SmartTarget(target.device, target.device_type).label, lambda: self.ctx.run(argv))
        if result is None:
            self._skip(now, target, test, "probe_busy", "another probe of the drive is in flight")
            return None
        if smartctl.is_standby(result):
            self._skip(now, target, test, "standby", "in standby: not woken")
            return None
        if not result.ok_to_parse or result.exit_code != 0:
            said = (result.stdout + result.stderr).decode("utf-8", "replace").strip().splitlines()
            detail = f"smartctl -t {ARGUMENT[test]}: {result.describe()}" + (f": {said[-1]}" if said else "")
            self._skip(now, target, test, "error", detail)
            return f"{target.device}: {detail}"
        self._started_now(now, local, target, test, slot, checked.status)
        return None

    def _check(self, target: Target, dev_type: str) -> _Checked:
        """The checks before a start, cheapest first (no device command until the drive is
        known not to be busy)."""
        if self.ctx.quarantined(target.device):
            return _Checked(reason="quarantined", detail="its last probe is stuck")
        if target.kind == KIND_NVME and self._version is not None and self._version < NVME_SELFTEST_SMARTCTL:
            return _Checked(reason="unsupported", detail="smartctl tests NVMe drives from 7.3")
        busy = self._utilisation(target)
        if busy is None:
            return _Checked(reason="unmeasured", detail="its utilisation cannot be measured (/proc/diskstats)")
        if busy > self.settings.max_utilisation:
            return _Checked(reason="busy", detail=f"{busy:.0%} busy, above {self.settings.max_utilisation:.0%}")
        checked = self._ask(target.device, dev_type, target.kind)
        status = checked.status
        if status is None:
            return checked
        if status.serial and target.serial and status.serial != target.serial:
            return _Checked(reason="identity", detail=f"the device now answers with serial {status.serial}")
        if status.supported is False:
            return _Checked(reason="unsupported", detail="the drive does not support self-tests")
        if status.running:
            left = f", {status.remaining_percent}% left" if status.remaining_percent is not None else ""
            return _Checked(reason="testing", detail=f"the drive is running a self-test{left}")
        return checked

    def _ask(self, device: str, dev_type: Optional[str], kind: str) -> _Checked:
        """One status query, parsed."""
        argv = status_argv(self.tool, device, dev_type or "auto", self._json is not False)
        result = self.ctx.probe(SmartTarget(device, dev_type).label, lambda: self.ctx.run(argv))
        if result is None:
            return _Checked(reason="probe_busy", detail="another probe of the drive is in flight")
        if result.error is None and smartctl.is_standby(result):
            return _Checked(reason="standby", detail="in standby: not woken")
        if not result.ok_to_parse or (result.exit_code or 0) & smartctl.NO_DATA_BITS:
            return _Checked(reason="error", detail=result.describe() if not result.ok_to_parse
                            else f"exit status {result.exit_code}")
        try:
            if self._json is not False:
                return _Checked(status=parse_status_json(result.stdout, kind))
            return _Checked(status=parse_status_text(result.stdout.decode("utf-8", "replace")))
        except ParseError as exc:
            return _Checked(reason="error", detail=f"unreadable output: {exc}")

    def _utilisation(self, target: Target) -> Optional[float]:
        """The drive's busy share over the sample; for a drive behind a controller (no block
        device of its own), the busiest of the host's block devices: the controller hides
        which of its volumes holds the drive."""
        devices = list(target.queue_devices) or sorted(self.ctx.block_devices())
        try:
            before, start = self.busy(), time.monotonic()
            if self.ctx.stopping.wait(self.settings.utilisation_sample_seconds):
                return None
            after, elapsed = self.busy(), time.monotonic() - start
        except (OSError, ParseError) as exc:
            log.warning("selftest: /proc/diskstats cannot be read (%s)", exc)
            return None
        return utilisation(before, after, elapsed, devices)

    def _note_completed(self, now: float, target: Target, status: DriveStatus) -> None:
        """Date the newest completed test of each type in the drive's log by its power-on
        hours (the drive's clock; a drive that was off makes the test look newer)."""
        if status.power_on_hours is None:
            return
        for test in self._tests():
            newest = next((t for t in status.tests if t.kind in sched.LOG_KINDS[test]
                           and t.result in (sl.PASSED, sl.FAILED)), None)
            hours = newest.hours_before(status.power_on_hours) if newest is not None else None
            if hours is None:
                continue
            entry = self.state.entry(target.identity, test, now)
            when = now - hours * 3600
            if entry.completed is None or when > entry.completed:
                self.state.update(target.identity, test, completed=when)

    def _started_now(self, now: float, local: datetime, target: Target, test: str, slot: str,
                     status: DriveStatus) -> None:
        before = tuple((t.kind, t.result, t.status, t.power_on_hours) for t in status.tests)
        self.state.running = Running(identity=target.identity, test=test, device=target.device,
                                     device_type=target.device_type, kind=target.kind, started=now,
                                     slot=slot, before=before)
        self.state.update(target.identity, test, done=slot, last_started=now, skipped=None, skipped_at=None)
        short = self.settings.schedule(sched.SHORT)
        if test == sched.LONG and short is not None:
            covered = sched.current_slot(short, local)
            if covered is not None:
                self.state.entry(target.identity, sched.SHORT, now)
                self.state.update(target.identity, sched.SHORT, done=sched.slot_key(covered))
        with self._lock:
            self._started[test] = self._started.get(test, 0) + 1
        log.info("selftest %s (%s): %s test started (window %s)", target.device, target.identity, test, slot)

    def _skip(self, now: float, target: Target, test: str, reason: str, detail: str) -> None:
        self.state.update(target.identity, test, skipped=reason, skipped_at=now)
        with self._lock:
            key = (test, reason)
            self._skipped[key] = self._skipped.get(key, 0) + 1
        log.info("selftest %s (%s): %s test due, not started: %s (%s); asked again in %g min",
                 target.device, target.identity, test, reason, detail, self.settings.retry_minutes)

    # ------------------------------------------------------------------ what it shows

    def _publish(self, now: float, local: datetime, targets: Sequence[Target]) -> None:
        rows = []
        running = self.state.running
        for target in targets:
            for test in self._tests():
                schedule = self.settings.schedule(test)
                assert schedule is not None
                entry = self.state.entry(target.identity, test, now)
                mine = running is not None and running.identity == target.identity and running.test == test
                rows.append(view.Row(
                    identity=target.identity, name=target.name, test=test,
                    period_seconds=sched.period_seconds(schedule),
                    next_due=sched.next_due(schedule, local, entry.done).timestamp(),
                    last_completed=max(entry.since, entry.completed or entry.since),
                    last_started=entry.last_started, result=entry.result, detail=entry.detail,
                    skipped=entry.skipped, skipped_at=entry.skipped_at, running=mine,
                    remaining_percent=running.remaining_percent if mine and running else None))
        with self._lock:
            self._published = view.SchedulerResult(
                rows=tuple(rows), started=tuple(sorted(self._started.items())),
                skipped=tuple(sorted(self._skipped.items())), results=tuple(sorted(self._results.items())),
                state_error=self.file.error)

    def report(self) -> Report:
        with self._lock:
            return Report(host=self._published)
