"""History's clock: sample times kept consistent with the kernel's boot clock.

The wall clock (``time.time``) can step: a bad RTC at boot, an NTP server that is a year off,
an operator's ``date -s``. The kernel's boot clock (``CLOCK_BOOTTIME``: monotonic, and unlike
``CLOCK_MONOTONIC`` it keeps counting through a suspend) never steps. A wall-clock step is the
difference between how far the two clocks moved between two looks at them::

    step = (wall_now - wall_then) - (boot_now - boot_then)

NTP slews at most 500 ppm, so a difference larger than ``tolerance_seconds`` plus
:data:`SLEW` of the elapsed boot time is a step, not a slew.

What history does with a step (agent/history.py applies it):

* **Sample order and spacing follow the boot clock.** Every sample carries the key of the
  boot that recorded it (:func:`boot_key`). When the wall clock steps by ``d``, every sample
  of the current boot is moved by ``d``, so it keeps the distance to now that the boot clock
  measured: after +1 year and back, each sample sits where it was recorded, in real time.
  Samples of earlier boots cannot be re-timed (their boot clock is gone) and stay as they are.
* **Recording resumes at once.** A drive's newest sample, moved with the step, is never in
  the future, so the ``min_interval_seconds`` gate lets the next sample in after one interval.
  Samples of an earlier boot that lie in the future at start (that boot ran with a clock ahead
  and never saw it corrected) are moved to the ``samples_displaced`` table: kept in the file,
  never deleted by retention, not used for rates or the row cap.
* **Retention never deletes on a clock step.** It deletes only once the wall clock has agreed
  with the boot clock for ``settle_seconds`` (default a day): counted from the last step, and
  at a new boot from the boot itself, since a bad RTC is only corrected after boot. Retention
  held for a day keeps one extra day of rows (and the row cap still bounds the file).
* **A step is an anomaly**: logged once with its size, counted by direction
  (``ssd_history_clock_anomalies_total{kind}``), and shown in the problems list while
  retention waits.

The last look at both clocks is saved in the file at every write (table ``clock``), so a step
while the agent was stopped is found at the next start of the same boot too. Without a boot
id (not Linux, or ``/proc`` hidden) each process is its own "boot": steps are still found
while the agent runs.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import secrets
import sqlite3
import time
from dataclasses import dataclass
from typing import Callable, Optional, Tuple

log = logging.getLogger("ssdfleet.history")

BOOT_ID_PATH = "/proc/sys/kernel/random/boot_id"
# NTP's largest slew rate (ntpd and chrony both cap it at 500 ppm); twice that, for margin.
SLEW = 0.001
DAY = 86400.0
# A reading reaches history at most this long after it was taken (a tool run, its timeout, a
# slow merge); older times are not fresh readings and are stored as given.
READING_MAX_AGE = 3600.0

# ``kind`` labels of ssd_history_clock_anomalies_total, all exported from the start.
STEP_FORWARD = "step_forward"
STEP_BACK = "step_back"
FUTURE_SAMPLES = "future_samples"
ANOMALY_KINDS = (STEP_FORWARD, STEP_BACK, FUTURE_SAMPLES)


def boot_key(boot_id: str) -> int:
    """A small positive integer naming one boot (31 bits: stored in 4 bytes per row)."""
    digest = hashlib.sha256(boot_id.strip().encode("utf-8", "replace")).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def _boot_clock() -> Callable[[], float]:
    clock_id = getattr(time, "CLOCK_BOOTTIME", None)
    if clock_id is not None:
        try:
            time.clock_gettime(clock_id)
            return lambda: time.clock_gettime(clock_id)
        except OSError:
            pass
    return time.monotonic


@dataclass(frozen=True)
class Clocks:
    """The wall clock, a clock that never steps, and the key of the boot that clock counts
    from. Tests pass their own; :func:`system_clocks` gives the host's."""

    wall: Callable[[], float]
    since_boot: Callable[[], float]
    boot: int


def system_clocks(boot_id_path: str = BOOT_ID_PATH) -> Clocks:
    """``time.time``, ``CLOCK_BOOTTIME`` (``time.monotonic`` where there is none) and this
    boot's key from the kernel's boot id; without one, a random key for this process."""
    try:
        with open(boot_id_path, encoding="ascii", errors="replace") as f:
            boot_id = f.read().strip()
    except OSError:
        boot_id = ""
    key = boot_key(boot_id) if boot_id else secrets.randbits(31)
    return Clocks(wall=time.time, since_boot=_boot_clock(), boot=key)


@dataclass(frozen=True)
class Look:
    """Both clocks read at one moment, and since when (boot clock) the wall clock has been
    steady. Saved in the history file's ``clock`` table at every write."""

    boot: int
    since_boot: float
    wall: float
    steady_since: float


def step_between(then: Look, now: Look, tolerance_seconds: float) -> Optional[float]:
    """How far the wall clock stepped between two looks of the same boot (positive: forward),
    or None when the difference is within the tolerance plus NTP's slew."""
    if then.boot != now.boot:
        return None
    elapsed = max(0.0, now.since_boot - then.since_boot)
    drift = (now.wall - then.wall) - (now.since_boot - then.since_boot)
    if abs(drift) <= tolerance_seconds + SLEW * elapsed:
        return None
    return drift


def describe(seconds: float) -> str:
    """A step's size for a log line: ``365 d 0 h``, ``2 h 5 min``, ``90 s``."""
    size = round(abs(seconds))  # a measured step of a day is 86,399.98 s
    if size >= DAY:
        return f"{int(size // DAY)} d {int(size % DAY // 3600)} h"
    if size >= 3600:
        return f"{int(size // 3600)} h {int(size % 3600 // 60)} min"
    return f"{size:.0f} s"


class ClockWatch:
    """Looks at both clocks at every sample and says when the wall clock stepped and whether
    retention may delete (see the module docstring). Not thread-safe: History's lock guards it."""

    def __init__(self, clocks: Clocks, tolerance_seconds: float = 60.0, settle_seconds: float = DAY) -> None:
        self.clocks = clocks
        self.tolerance_seconds = float(tolerance_seconds)
        self.settle_seconds = float(settle_seconds)
        # At a new boot the clock counts as steady from the boot itself (since_boot 0).
        self.last = Look(clocks.boot, clocks.since_boot(), clocks.wall(), 0.0)
        self.anomalies = {kind: 0 for kind in ANOMALY_KINDS}
        self.last_anomaly: Optional[str] = None  # the newest anomaly, as logged
        self.last_step: Optional[Tuple[float, float]] = None  # (boot clock when found, step)

    def look(self) -> Look:
        since_boot = self.clocks.since_boot()
        return Look(self.clocks.boot, since_boot, self.clocks.wall(), self.last.steady_since)

    def resume(self, saved: Optional[Look]) -> Optional[float]:
        """Continue from the look saved in the file by an earlier process. Returns the step
        the wall clock made since then when it is the same boot, else None."""
        if saved is None or saved.boot != self.clocks.boot:
            return None
        now = self.look()
        step = step_between(saved, now, self.tolerance_seconds)
        self.last = Look(now.boot, now.since_boot, now.wall, saved.steady_since)
        if step is not None:
            self._stepped(step, now, "while the agent was stopped")
        return step

    def observe(self) -> Optional[float]:
        """Look at both clocks; returns the step since the last look, or None."""
        now = self.look()
        step = step_between(self.last, now, self.tolerance_seconds)
        self.last = now
        if step is not None:
            self._stepped(step, now, "")
        return step

    def restamp(self, ts: float, max_age: float = READING_MAX_AGE) -> float:
        """The time of a reading, on the clock as it is now. A reading taken just before a
        step carries the old clock's time and may be stored after another thread found the
        step: a time that does not fit "now" (from ``max_age`` ago to the tolerance ahead)
        but fits it once moved by the latest step (found less than ``max_age`` ago) is moved."""
        if self.last_step is None:
            return ts
        found, step = self.last_step
        if self.clocks.since_boot() - found > max_age:
            return ts
        now = self.clocks.wall()

        def fits(t: float) -> bool:
            return now - max_age <= t <= now + self.tolerance_seconds

        return ts + step if not fits(ts) and fits(ts + step) else ts

    def _stepped(self, step: float, now: Look, when: str) -> None:
        kind = STEP_FORWARD if step > 0 else STEP_BACK
        self.anomalies[kind] += 1
        self.last_step = (now.since_boot, step)
        self.last = Look(now.boot, now.since_boot, now.wall, now.since_boot)
        direction = "forward" if step > 0 else "back"
        self.last_anomaly = (f"the wall clock stepped {direction} by {describe(step)}"
                             + (f" {when}" if when else "") + f" (now {_utc(now.wall)})")

    def future_samples(self, count: int, newest: float) -> None:
        """Count samples of earlier boots found in the future (moved aside by History)."""
        self.anomalies[FUTURE_SAMPLES] += 1
        now = self.look()
        self.last = Look(now.boot, now.since_boot, now.wall, now.since_boot)
        self.last_anomaly = (f"{count} samples of an earlier boot lie up to {describe(newest - now.wall)} "
                             f"in the future (now {_utc(now.wall)})")

    def retention_allowed(self) -> bool:
        return self.clocks.since_boot() - self.last.steady_since >= self.settle_seconds

    def steady_for(self) -> float:
        return max(0.0, self.clocks.since_boot() - self.last.steady_since)

    def anomaly_pending(self) -> bool:
        """An anomaly was seen and retention still waits for the clock to settle after it."""
        return self.last_anomaly is not None and not self.retention_allowed()


def _utc(ts: float) -> str:
    try:
        return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(ts))
    except (OverflowError, OSError, ValueError):
        return f"{ts:.0f}"


# -- what history does in its file (SQL on the caller's connection, inside its transaction) --


def saved_look(conn: sqlite3.Connection) -> Optional[Look]:
    """The look saved by the last write, None when there is none (an older file)."""
    try:
        row = conn.execute("SELECT boot, since_boot, wall, steady_since FROM clock WHERE id = 1").fetchone()
    except sqlite3.Error:
        return None
    if not row or any(v is None for v in row):
        return None
    return Look(int(row[0]), float(row[1]), float(row[2]), float(row[3]))


def save_look(conn: sqlite3.Connection, look: Look) -> None:
    conn.execute("INSERT OR REPLACE INTO clock (id, boot, since_boot, wall, steady_since) VALUES (1, ?, ?, ?, ?)",
                 (look.boot, look.since_boot, look.wall, look.steady_since))


def retime_boot(conn: sqlite3.Connection, boot: int, step: float, columns: str) -> int:
    """Move every sample of ``boot`` by ``step`` seconds, in one transaction; returns how many.

    One UPDATE does it, unless a moved sample would land on the key (serial, ts) of another:
    SQLite checks the key row by row during an UPDATE, so a step of exactly a multiple of the
    sampling interval (a test's round clock) collides with the next sample half-way through,
    and a sample may land to the microsecond on one of another boot. Then the rows go through
    negative times (no real sample has one) and back, and a sample that still lands on another
    boot's goes to ``samples_displaced`` rather than being lost. The single UPDATE rewrites
    both indexes of every row: 7 to 14 s for 480,000 rows (24 drives at the row cap) on the
    project's loaded 2-core VM (bench/history_sync_cost.py), once per step.
    """
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute("SAVEPOINT direct")
        try:
            moved = conn.execute("UPDATE samples SET ts = ts + ? WHERE boot = ? AND ts + ? > 0",
                                 (step, boot, step)).rowcount
            conn.execute("RELEASE direct")
        except sqlite3.IntegrityError:
            conn.execute("ROLLBACK TO direct")
            conn.execute("RELEASE direct")
            moved = _retime_around_collisions(conn, boot, step, columns)
        conn.execute("COMMIT")
    except BaseException:
        with contextlib.suppress(sqlite3.Error):
            conn.execute("ROLLBACK")
        raise
    return max(0, moved)


def _retime_around_collisions(conn: sqlite3.Connection, boot: int, step: float, columns: str) -> int:
    moved = conn.execute("UPDATE samples SET ts = -(ts + ?) WHERE boot = ? AND ts + ? > 0",
                         (step, boot, step)).rowcount
    conn.execute("UPDATE OR IGNORE samples SET ts = -ts WHERE boot = ? AND ts < 0", (boot,))
    select = ", ".join("-ts" if name.strip() == "ts" else name.strip() for name in columns.split(","))
    conn.execute(f"INSERT INTO samples_displaced ({columns}, displaced_at) "
                 f"SELECT {select}, ? FROM samples WHERE boot = ? AND ts < 0", (time.time(), boot))
    conn.execute("DELETE FROM samples WHERE boot = ? AND ts < 0", (boot,))
    return moved


def displace_future(conn: sqlite3.Connection, boot: int, limit: float, columns: str) -> Tuple[int, float]:
    """Move the samples of other boots (or of no known boot) later than ``limit`` to
    ``samples_displaced``. Returns (how many, the latest time among them)."""
    where = "FROM samples WHERE ts > ? AND (boot IS NULL OR boot != ?)"
    count, newest = conn.execute(f"SELECT COUNT(*), MAX(ts) {where}", (limit, boot)).fetchone()
    if not count:
        return 0, 0.0
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute(f"INSERT INTO samples_displaced ({columns}, displaced_at) SELECT {columns}, ? {where}",
                     (time.time(), limit, boot))
        conn.execute(f"DELETE {where}", (limit, boot))
        conn.execute("COMMIT")
    except BaseException:
        with contextlib.suppress(sqlite3.Error):
            conn.execute("ROLLBACK")
        raise
    return int(count), float(newest)
