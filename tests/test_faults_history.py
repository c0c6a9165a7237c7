"""Issue 26's history faults with the real agent process running (items 2, 5, 9, and the lock).

Each case runs ``ssdfleet agent`` on the default fake host with real history on disk and
checks what the fault matrix checks (tests/test_fault_matrix.py): /metrics answers within
1 s throughout, no sample the agent reported written is missing from the file afterwards,
no process outlives the agent, and the fault shows in a metric and in one log line.

The clock cases move the clock of the running agent with libfaketime (Debian's faketime):
``FAKETIME_TIMESTAMP_FILE`` names a file holding the offset ("+365d", "-1d", "+0") and
``FAKETIME_CACHE_DURATION=1`` makes the agent read it again every second, so the test steps
the wall clock by rewriting the file (``FAKETIME_NO_CACHE=1`` would read the file at every
clock read, about 45 us each, which slows the whole agent down). ``FAKETIME_DONT_FAKE_MONOTONIC=1`` leaves the monotonic
and boot clocks alone, as a real step does (by default libfaketime shifts them too, and the
agent could not tell a step from time passing). libfaketime 0.9.10 has a bug there
(wolfcw/libfaketime#426): with that setting it hands ``clock_nanosleep(CLOCK_MONOTONIC,
TIMER_ABSTIME)`` a negative deadline, and Python 3.11+ sleeps that way, so every
``time.sleep`` fails with EINVAL. :func:`sleep_fix` builds a small preload (gcc) that passes
those sleeps to the kernel unchanged; it goes before libfaketime in ``LD_PRELOAD``.
"""

from __future__ import annotations

import glob
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import pytest
from prometheus_client.parser import text_string_to_metric_families

from agent.history import History
from agent.history_clock import Clocks, boot_key, system_clocks
from collectors.model import DriveReading
from tests.conftest import ROOT
from tests.fakehost import AgentProcess, FakeHost, build_default_host, free_port
from tests.support.e2e import NVME0_SERIAL, SDA_SERIAL, SHANNON_SERIAL, scrape, value, wait_for
from tests.support.processes import SCRAPE_BOUND, descendants, left_behind

HEALTHY = (SDA_SERIAL, NVME0_SERIAL, SHANNON_SERIAL)
DAY = 86400.0
INTERVAL = 1.0  # history_min_interval_seconds in these runs: one sample per drive a second
POLL = 0.5  # smartctl and shannon poll interval

LIBFAKETIME = next(iter(sorted(glob.glob("/usr/lib/*/faketime/libfaketime.so.1"))), None)
needs_faketime = pytest.mark.skipif(LIBFAKETIME is None or shutil.which("gcc") is None,
                                    reason="needs Debian's libfaketime and gcc")

_SLEEP_FIX = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* Sleeps on any clock but the wall clock go straight to the kernel (see the test's docstring). */
int clock_nanosleep(clockid_t clock_id, int flags, const struct timespec *req, struct timespec *rem)
{
    static int (*next)(clockid_t, int, const struct timespec *, struct timespec *);
    if (clock_id != CLOCK_REALTIME)
        return syscall(SYS_clock_nanosleep, clock_id, flags, req, rem) == 0 ? 0 : errno;
    if (!next)
        next = (int (*)(clockid_t, int, const struct timespec *, struct timespec *))dlsym(RTLD_NEXT, "clock_nanosleep");
    return next(clock_id, flags, req, rem);
}
"""


@pytest.fixture(scope="module")
def sleep_fix(tmp_path_factory) -> Path:
    work = tmp_path_factory.mktemp("sleepfix")
    (work / "sleepfix.c").write_text(_SLEEP_FIX)
    lib = work / "sleepfix.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-O2", "-o", str(lib), str(work / "sleepfix.c"), "-ldl"],
                   check=True, capture_output=True, timeout=120)
    return lib


class WallClock:
    """The running agent's wall clock, through libfaketime's timestamp file."""

    def __init__(self, root: Path, sleep_fix: Path) -> None:
        self.spec = root / "faketime.spec"
        self.set("+0")
        self.env = {"LD_PRELOAD": f"{sleep_fix}:{LIBFAKETIME}", "FAKETIME_TIMESTAMP_FILE": str(self.spec),
                    "FAKETIME_CACHE_DURATION": "1", "FAKETIME_DONT_FAKE_MONOTONIC": "1"}

    def set(self, offset: str) -> None:
        tmp = self.spec.with_suffix(".tmp")
        tmp.write_text(offset + "\n")
        os.replace(tmp, self.spec)


class Watcher:
    """Scrapes /metrics every 0.2 s in a thread: the slowest answer, failures, and the values
    of a few series seen on the way (a history run that failed shows for one poll only)."""

    NAMES = ("ssd_history_healthy", "ssd_history_samples_written_total")

    def __init__(self, agent: AgentProcess) -> None:
        self.agent = agent
        self.times: List[float] = []
        self.failures: List[str] = []
        self.seen: Dict[str, List[float]] = {name: [] for name in self.NAMES}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Watcher:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(10)

    def _run(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                text = self.agent.get("/metrics", timeout=SCRAPE_BOUND * 3).decode()
                self.times.append(time.monotonic() - started)
                samples = {(s.name, frozenset(s.labels.items())): s.value
                           for family in text_string_to_metric_families(text) for s in family.samples}
                for name in self.NAMES:
                    found = value(samples, name)
                    if found is not None:
                        self.seen[name].append(found)
            except OSError as exc:
                self.failures.append(f"{type(exc).__name__}: {exc}")
            self._stop.wait(0.2)

    def check(self) -> None:
        assert self.times, "no scrape answered"
        print(f"  /metrics: {len(self.times)} scrapes, slowest {max(self.times) * 1000:.0f} ms")
        assert not self.failures, self.failures[:3]
        slow = [t for t in self.times if t > SCRAPE_BOUND]
        assert not slow, f"{len(slow)} scrapes over {SCRAPE_BOUND}s, slowest {max(slow):.2f}s"


def start(host: FakeHost, env: Optional[Dict[str, str]] = None, poll: float = POLL, **config) -> AgentProcess:
    settings = {"history_min_interval_seconds": INTERVAL, **config}
    path = host.root / "history-faults.yml"
    path.write_text("".join(f"{k}: {v}\n" for k, v in settings.items()))
    args = ["--interval.smartctl", str(poll), "--interval.shannon", str(poll), "--interval.write_cache", "1",
            "--interval.diskstats", "0.5", "--tool-timeout", "3", "--config", str(path)]
    agent = AgentProcess(host, args, env=env)
    agent.wait_ready()
    wait_for(lambda: all(value(scrape(agent), "ssd_data_age_seconds", serial=s) is not None for s in HEALTHY),
             timeout=30)
    return agent


def stop(agent: AgentProcess, host: FakeHost) -> str:
    """SIGTERM, a clean exit, nothing left running; returns the log."""
    pid = agent.proc.pid
    try:
        agent.proc.send_signal(signal.SIGTERM)
        assert agent.proc.wait(timeout=30) == 0, agent.log()[-3000:]
    finally:
        agent.stop()
    assert not descendants(pid) and not left_behind(host), left_behind(host)
    log = agent.log()
    assert "Traceback" not in log, log[-3000:]
    return log


def rows(path: Path, where: str = "1", args: tuple = ()) -> List[Tuple[str, float]]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return conn.execute(f"SELECT serial, ts FROM samples WHERE {where} ORDER BY ts", args).fetchall()
    finally:
        conn.close()


def seed_earlier_boot(host: FakeHost, days: int = 399) -> Tuple[int, int]:
    """Daily samples of the three drives over ``days`` days, and three more 410 days old
    (past the 400-day retention), written by an earlier boot: what a host that ran the
    agent for a year has. Returns (within retention, past it)."""
    now = time.time()
    earlier = Clocks(wall=time.time, since_boot=system_clocks().since_boot, boot=boot_key("an earlier boot"))
    with History(str(host.state / "history.sqlite"), clocks=earlier, clock_settle_seconds=1e9) as h:
        for serial in HEALTHY:
            h.record(serial, now - 410 * DAY, DriveReading(kind="ata", device="/dev/x", host_written_bytes=0))
            for day in range(days, 0, -1):
                h.record(serial, now - day * DAY,
                         DriveReading(kind="ata", device="/dev/x", host_written_bytes=(400 - day) * 10**9))
    return days * len(HEALTHY), len(HEALTHY)


def written(agent: AgentProcess) -> float:
    return value(scrape(agent), "ssd_history_samples_written_total") or 0.0


def anomalies(agent: AgentProcess, kind: str) -> float:
    return value(scrape(agent), "ssd_history_clock_anomalies_total", kind=kind) or 0.0


def recorded_since(path: Path, since: float, until: float) -> bool:
    """Every healthy drive has a sample taken in [since, until] (real time)."""
    got = {serial for serial, _ in rows(path, "ts >= ? AND ts <= ?", (since, until))}
    return set(HEALTHY) <= got


# -- item 2: a wall-clock step -------------------------------------------------------------


@needs_faketime
def test_a_year_ahead_and_back_deletes_nothing_and_recording_resumes_within_an_interval(tmp_path, sleep_fix):
    host = build_default_host(tmp_path)
    kept, expired = seed_earlier_boot(host)
    db = host.state / "history.sqlite"
    clock = WallClock(tmp_path, sleep_fix)
    started = time.time()
    # Retention waits for a minute of steady clock: the machine has been up longer, so it runs
    # from the first sample on, and this test's year ahead lasts a few seconds (the shipped
    # wait is a day: a bad clock fixed within a day deletes nothing).
    agent = start(host, env=clock.env, history_clock_settle_seconds=60, history_retention_days=400)
    try:
        with Watcher(agent) as watcher:
            wait_for(lambda: written(agent) >= 6, timeout=20)
            seeded = rows(db, "ts < ?", (started - 3600,))
            assert len(seeded) == kept, "retention ran: the 410-day-old samples are gone, the rest kept"
            assert value(scrape(agent), "ssd_history_retention_held") == 0

            clock.set("+365d")  # a bad NTP server
            wait_for(lambda: anomalies(agent, "step_forward") == 1, timeout=10)
            assert value(scrape(agent), "ssd_history_retention_held") == 1
            before = written(agent)
            wait_for(lambda: written(agent) >= before + 3 * len(HEALTHY), timeout=20)  # recording goes on
            # naive retention would now delete every seeded sample older than 35 days
            assert rows(db, "ts < ?", (started - 3600,)) == seeded

            back = time.time()
            clock.set("+0")  # the clock comes back
            wait_for(lambda: anomalies(agent, "step_back") == 1, timeout=10)
            wait_for(lambda: recorded_since(db, back, time.time() + 60), timeout=10)
            resumed = time.time() - back
            written_at_end = written(agent)
        watcher.check()
    finally:
        log = stop(agent, host)
    print(f"  recording resumed {resumed:.2f} s after the clock came back (interval {INTERVAL:.0f} s, "
          f"polls every {POLL} s)")
    assert resumed < INTERVAL + POLL + 3.0  # one interval, its poll, and the detour through a scrape
    assert rows(db, "ts < ?", (started - 3600,)) == seeded  # 0 rows deleted, expired ones aside
    mine = rows(db, "ts >= ?", (started - 3600,))
    assert max(ts for _, ts in mine) < time.time() + 60, "a sample was left in the future"
    print(f"  {len(seeded)} seeded samples kept ({expired} past retention deleted before the step); "
          f"{len(mine)} recorded by the agent, {written_at_end:.0f} reported written at the last scrape")
    assert len(mine) >= written_at_end
    assert 0.0 in watcher.seen["ssd_history_healthy"]
    assert log.count("the wall clock stepped forward by 365 d") == 1
    assert log.count("the wall clock stepped back by 365 d") == 1


@needs_faketime
def test_a_day_back_does_not_stop_recording(tmp_path, sleep_fix):
    host = build_default_host(tmp_path)
    db = host.state / "history.sqlite"
    clock = WallClock(tmp_path, sleep_fix)
    agent = start(host, env=clock.env, history_clock_settle_seconds=60)
    try:
        with Watcher(agent) as watcher:
            wait_for(lambda: written(agent) >= 6, timeout=20)
            step = time.time()
            clock.set("-1d")
            wait_for(lambda: anomalies(agent, "step_back") == 1, timeout=10)
            # the agent's now is a day behind: its next samples are there, within an interval
            wait_for(lambda: recorded_since(db, step - DAY, step - DAY + 60), timeout=10)
            resumed = time.time() - step
            assert value(scrape(agent), "ssd_history_retention_held") == 1
            written_at_end = written(agent)
        watcher.check()
        problems = agent.get("/api/v1/drives").decode()
    finally:
        log = stop(agent, host)
    print(f"  recording went on {resumed:.2f} s after the clock went back a day")
    assert resumed < INTERVAL + POLL + 3.0
    assert "stepped back by 1 d 0 h" in problems  # in the problems list while retention waits
    every = rows(db)
    assert max(ts for _, ts in every) < time.time() - DAY + 60  # all moved back with the clock
    assert len(every) >= written_at_end
    # The step is counted (ssd_history_clock_anomalies_total, waited for above), which no scrape
    # can miss. ssd_history_healthy is 0 for one history interval (1 s here): the test above
    # catches that window; this one does not insist, as a loaded machine's scrapes can step over it.
    assert log.count("the wall clock stepped back by 1 d 0 h") == 1


# -- item 5: the history file deleted while the agent runs ----------------------------------


def test_the_history_file_deleted_while_running_is_started_again(tmp_path):
    host = build_default_host(tmp_path)
    db = host.state / "history.sqlite"
    agent = start(host)
    try:
        with Watcher(agent) as watcher:
            wait_for(lambda: written(agent) >= 9, timeout=20)
            for suffix in ("", "-wal", "-shm"):  # rm -f /var/lib/ssdfleet/history.sqlite*
                os.remove(f"{db}{suffix}")
            wait_for(lambda: value(scrape(agent), "ssd_history_file_lost_total", reason="deleted") == 1, timeout=10)
            assert db.exists()
            errors = value(scrape(agent), "ssd_collector_errors_total", collector="history")
            time.sleep(2.0)  # more samples into the new file
            written_at_end = written(agent)
        watcher.check()
    finally:
        log = stop(agent, host)
    stored = rows(db)
    print(f"  {len(stored)} samples in the new file after SIGTERM, {written_at_end:.0f} reported written; "
          f"ssd_history_healthy seen {sorted(set(watcher.seen['ssd_history_healthy']))}")
    assert len(stored) >= written_at_end, "a sample reported written is not in the file"
    # the run that found it fails the history collector for one history interval
    assert errors >= 1 and 0.0 in watcher.seen["ssd_history_healthy"]
    assert log.count("was deleted while the agent ran") == 1


# -- item 9: durability: a power cut right after a sample was reported written ---------------


def _mountable() -> bool:
    return os.geteuid() == 0 and all(shutil.which(t) for t in ("unshare", "mkfs.ext4", "e2fsck", "debugfs"))


@pytest.mark.skipif(not _mountable(), reason="needs root, unshare, e2fsprogs")
def test_a_power_cut_keeps_every_sample_reported_written(tmp_path):
    """The state directory is a real ext4 file system on a loop device of its own, mounted in
    a private mount namespace that lives as long as the agent. "Power cut" is a copy of the
    loop device's image taken while the agent runs, right after a scrape: the copy holds what
    the file system had sent to its disk, and nothing of what sat in the page cache (the
    kernel writes that back only after 30 s). The copy is checked with e2fsck, as after a
    real crash, and read: every sample the scrape reported written must be in it."""
    host = build_default_host(tmp_path)
    image = tmp_path / "state.img"
    subprocess.run(["truncate", "-s", "64M", str(image)], check=True)
    subprocess.run(["mkfs.ext4", "-q", "-F", str(image)], check=True, capture_output=True)
    wrapper = tmp_path / "in-namespace.sh"
    # the namespace dies with the agent: the mount goes, and the loop device with it (autoclear)
    wrapper.write_text(f'#!/bin/sh\nmount -o loop "{image}" "{host.state}" || exit 1\nexec "$@"\n')
    wrapper.chmod(0o755)
    settings = host.root / "durability.yml"
    settings.write_text(f"history_min_interval_seconds: {INTERVAL}\n")
    args = ["unshare", "-m", "--propagation", "private", str(wrapper), sys.executable, "-m", "agent", "agent"]
    agent = _wrapped_agent(host, args + ["--interval.smartctl", str(POLL), "--interval.shannon", str(POLL),
                                         "--tool-timeout", "3", "--config", str(settings)])
    try:
        with Watcher(agent) as watcher:
            wait_for(lambda: written(agent) >= 15, timeout=30)
            reported = written(agent)
            shutil.copyfile(image, tmp_path / "after-cut.img")  # the disk as it was at the cut
        watcher.check()
    finally:
        stop(agent, host)
    cut = tmp_path / "after-cut.img"
    fsck = subprocess.run(["e2fsck", "-f", "-y", str(cut)], capture_output=True, text=True)
    assert fsck.returncode in (0, 1), fsck.stdout + fsck.stderr  # 1: errors corrected
    out = tmp_path / "recovered"
    out.mkdir()
    for name in ("history.sqlite", "history.sqlite-wal"):
        subprocess.run(["debugfs", "-R", f"dump /{name} {out / name}", str(cut)], capture_output=True, check=True)
    try:
        survived = len(rows(out / "history.sqlite"))
    except sqlite3.Error as exc:  # what synchronous=NORMAL leaves: not even the table
        print(f"  the history file after the cut is unreadable: {exc}")
        survived = 0
    print(f"  {reported:.0f} samples reported written before the cut, {survived} in the file after it")
    assert survived >= reported


class NamespacedAgent(AgentProcess):
    """AgentProcess started through a wrapper command (``argv`` runs the agent)."""

    def __init__(self, host: FakeHost, argv: List[str]) -> None:  # noqa: D107 - no super(): other argv
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = host.root / "agent.log"
        env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(argv + ["--listen-address", f"127.0.0.1:{self.port}"] + host.config_args(),
                                     stdout=self._log, stderr=subprocess.STDOUT, env=env, cwd=str(ROOT),
                                     start_new_session=True)


def _wrapped_agent(host: FakeHost, argv: List[str]) -> AgentProcess:
    agent = NamespacedAgent(host, argv)
    agent.wait_ready()
    wait_for(lambda: all(value(scrape(agent), "ssd_data_age_seconds", serial=s) is not None for s in HEALTHY),
             timeout=30)
    return agent


# -- rough edge: two agents on one state directory ------------------------------------------


def test_a_second_agent_on_the_same_state_directory_refuses_to_start(tmp_path):
    host = build_default_host(tmp_path)
    agent = start(host)
    try:
        with Watcher(agent) as watcher:
            wait_for(lambda: written(agent) >= 3, timeout=20)
            second = subprocess.run([sys.executable, "-m", "agent", "agent", "--listen-address",
                                     f"127.0.0.1:{free_port()}",
                                     *host.config_args()], capture_output=True, text=True, timeout=60,
                                    env=dict(os.environ, PYTHONPATH=str(ROOT)))
            time.sleep(1.0)
            written_at_end = written(agent)
        watcher.check()
    finally:
        stop(agent, host)
    print(f"  second agent: exit {second.returncode}: {second.stderr.strip()}")
    assert second.returncode == 64
    assert second.stderr.count("\n") == 1 and f"pid {agent.proc.pid}" in second.stderr
    assert "in use by another ssdfleet agent" in second.stderr
    assert len(rows(host.state / "history.sqlite")) >= written_at_end
