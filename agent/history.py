"""The agent's own history of each drive, kept in an embedded SQLite file.

Why SQLite: the wear-out projection needs a write rate smoothed over days and the slope of
life left over weeks. Prometheus has those too, but the agent must work on a host whose
metrics nobody scrapes, and it must survive restarts. One small table in WAL mode gives
that with the standard library only.

Durability: WAL with ``synchronous=FULL``. Every ``record()`` that stores a sample is its own
committed transaction, and COMMIT returns only after the ``-wal`` is fdatasync'ed: a
``kill -9``, a power cut or a file system that goes read-only after an error loses nothing
counted in ``written_total`` (``ssd_history_samples_written_total``). A new file's directory
entry is synced too. ``NORMAL``, used before, synced only at checkpoints: a power cut could
take every sample of the last minutes although each had been reported written. One flush
costs 4 to 8 ms more that way on this project's test VM (bench/history_sync_cost.py), a
few seconds a day for a host's drives at the default interval.

Time (agent/history_clock.py): sample order and spacing follow the kernel's boot clock, not
the wall clock. A wall-clock step moves the samples of the current boot with it, samples an
earlier boot left in the future are moved to ``samples_displaced``, and retention deletes
nothing until the clock has been steady for ``clock_settle_seconds``. Each step is logged
and counted (``clock_anomalies()``).

The file under us (agent/history_file.py): before every write the file at ``path`` (and its
``-wal``) must still be the one opened. One deleted or replaced while the agent runs is
counted in ``file_lost_total``, logged, and started again: everything the open file holds
is read through the open connection and written into a new file at the path (merged into a
valid file put there), with the samples pending. Replace the file only with the agent
stopped: until the next write notices, whoever opens the path replays our ``-wal`` onto it.

Failure policy (a database host must never lose its agent over a state file):

* At open, a file that is not a database or is damaged (``quick_check`` fails) is moved aside
  to ``<path>.corrupt-<unix time>`` (its ``-wal``/``-shm`` companions too, so SQLite cannot
  replay a stale log onto a fresh file), a new file is started at ``<path>``, and every row
  that can still be read from the old one is copied into it: the table is scanned without its
  indexes (a damaged index loses nothing) and around damaged table pages (rowid ranges).
  ``moved_aside`` names the old file, ``recovered_rows`` counts what was saved, and recording
  goes on on disk.
* A file that is fine but cannot be opened for writing now (another user's 0600 file, a full
  disk, a lock held by another process, a read-only mount) is never moved aside: it is read
  read-only if possible (its rows still give rates), new samples wait in memory, and the file
  is opened again at a later write (every ``reopen_interval_seconds``), when the samples kept
  meanwhile move into it. ``healthy`` is False until then. Something that is not a regular
  file (a FIFO, a directory) is left alone and never opened: opening a FIFO would block.
* Any integer a tool prints is stored without error and without loss. SQLite's INTEGER is a
  signed 64-bit number; a counter outside that range (an NVMe ``data_units_written`` of all
  ones, a vendor figure in the 1e20s) is stored as a BLOB holding its decimal digits, which
  SQLite's column affinity never converts, and read back as the same Python int (see
  :func:`_to_db` / :func:`_from_db`). NaN is stored as NULL (not reported); an infinite float
  as SQLite's infinity.
* A row that SQLite still refuses for what it holds (a value of a type it cannot bind) is
  isolated: the batch is retried row by row, the refused row is dropped, logged once per
  reason and counted in ``dropped_total`` (``ssd_history_samples_dropped_total{reason}``),
  and every other row, of this drive and of all others, is written. A bad row never stays
  queued to fail every later flush.
* A write failure later (disk full, read-only directory, database locked) never raises out
  of :meth:`History.record`. It is logged once per distinct error, counted in
  ``errors_total``, and the sample stays in a bounded in-memory buffer that reads include and
  the next successful write flushes. Nothing is lost while the process runs.

Bad blocks are stored twice. ``bad_block_ratio`` (0..1) is what Shannon cards report.
``bad_blocks`` is a count of grown bad blocks, which most drives report in some form: it is
the sum of the reading's ``defects`` of the types in :data:`BAD_BLOCK_DEFECTS` (see there for
what is in and what is left out), so the "bad blocks and their trend" view works for ATA,
SCSI and Shannon alike. ``media_errors`` (NVMe media errors, SCSI uncorrected errors) is
stored beside it.

Schema versions (``PRAGMA user_version``): 1 had no ``bad_blocks`` or ``media_errors``;
2 adds them; 3 adds ``boot`` (the boot that recorded the sample: NULL in older rows, which
are never re-timed) and the tables ``clock`` and ``samples_displaced``. An older file is
upgraded in place at open with ``ALTER TABLE ... ADD COLUMN``, which keeps every row (its
old rows read ``None`` there: not recorded then). A file that cannot be written is read as
it is (NULL for the columns it lacks) and upgraded by the first write that succeeds.

Thread safety: the poller thread writes and the HTTP thread reads; one lock serialises all
use of the single connection (opened with ``check_same_thread=False``).
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import sqlite3
import threading
import time
from dataclasses import replace
from typing import Callable, Dict, List, Optional, Sequence, Set, Tuple

from agent import history_clock
from agent.history_clock import Clocks, ClockWatch, describe, system_clocks
from agent.history_file import FileWatch, sync_directory
from agent.history_maths import counter_rate, least_squares_slope
from agent.history_salvage import (
    Contents,
    IntegrityCheckFailed,
    columns_of,
    contents_of,
    copy_rows,
    header_problem,
    is_busy,
    is_damaged,
    missing_columns,
    missing_tables,
    read_only_connection,
    salvage,
)
from agent.history_schema import (  # noqa: F401 (BAD_BLOCK_DEFECTS: this module's readers use it from here)
    BAD_BLOCK_DEFECTS,
    FLAGS_TABLE,
    INSERT,
    ROW_ERRORS,
    SCHEMA,
    STORED,
    STORED_NAMES,
    V3_TABLES,
    Sample,
    bad_blocks_of,
    drop_reason,
    immediate,
    select_list,
)
from collectors.model import DriveReading

log = logging.getLogger("ssdfleet.history")

SCHEMA_VERSION = 3
DAY = 86400.0

def default_state_dir(
    environ: Optional[Dict[str, str]] = None,
    home: Optional[str] = None,
) -> str:
    """Where the history file lives when neither ``--state-dir`` nor ``state_dir`` says.

    ``$STATE_DIRECTORY`` when systemd sets it (a unit with ``StateDirectory=``; the first of
    its colon-separated paths), else the XDG state directory: ``$XDG_STATE_HOME/ssdfleet`` or
    ``~/.local/state/ssdfleet``. Never ``/var/lib/ssdfleet`` because the process runs as root:
    a trial run from a checkout (``sudo .venv/bin/ssdfleet agent``) must not write into the
    directory the package owns. The shipped units pass ``--state-dir`` themselves. The
    arguments exist so tests can ask the question for another environment without changing
    ours. Raises ValueError when there is no absolute home directory to fall back on.
    """
    env = os.environ if environ is None else environ
    systemd = env.get("STATE_DIRECTORY", "").split(":")[0]
    if systemd and os.path.isabs(systemd):
        return systemd
    xdg = env.get("XDG_STATE_HOME", "")
    # the XDG spec says a relative value is invalid and must be ignored
    if xdg and os.path.isabs(xdg):
        return os.path.join(xdg, "ssdfleet")
    base = home if home is not None else os.path.expanduser("~")
    if not os.path.isabs(base):
        # expanduser gives "~" back for a uid with no passwd entry and no $HOME: a relative
        # path would put the history wherever the agent happened to be started.
        raise ValueError("no home directory to keep history under (no $HOME, $XDG_STATE_HOME or "
                         "$STATE_DIRECTORY): pass --state-dir DIR or --no-history")
    return os.path.join(base, ".local", "state", "ssdfleet")


class History:
    """Per-drive samples over time, persisted in SQLite, with write rates and life slope.

    ``path=None`` keeps history in memory only (tests, ``--no-state``). Sample timestamps come
    from the caller; "now" (retention, the clock check) from ``clocks`` (agent.history_clock:
    the wall clock, a boot clock that never steps, the boot's key). By default the host's;
    a test that passes only a wall ``clock`` of its own has no clock check (no boot clock to
    compare it with): its samples are never re-timed and retention never waits.
    """

    def __init__(
        self,
        path: Optional[str],
        retention_days: float = 400,
        max_rows_per_drive: int = 20000,
        clock: Callable[[], float] = time.time,
        min_interval_seconds: float = 600.0,
        min_span_seconds: float = 3600.0,
        busy_timeout_seconds: float = 2.0,
        reopen_interval_seconds: float = 60.0,
        clocks: Optional[Clocks] = None,
        clock_tolerance_seconds: float = 60.0,
        clock_settle_seconds: float = DAY,
    ) -> None:
        self.path = path
        self.retention_seconds = float(retention_days) * DAY
        self.max_rows_per_drive = int(max_rows_per_drive)
        self.min_interval_seconds = float(min_interval_seconds)
        self.min_span_seconds = float(min_span_seconds)
        self._busy_timeout = float(busy_timeout_seconds)
        if clocks is None and clock is time.time:
            clocks = system_clocks()
        self._clock = clocks.wall if clocks is not None else clock
        self._boot = clocks.boot if clocks is not None else None
        self._watch = ClockWatch(clocks, clock_tolerance_seconds, clock_settle_seconds) if clocks else None
        self._lock = threading.RLock()
        # samples not yet committed to the database (write failed); reads include them
        self._pending: List[Sample] = []
        self._last_ts: Dict[str, float] = {}
        self._logged_errors: Set[str] = set()
        self._closed = False
        # False while the file is an old schema that could not be upgraded yet (read-only);
        # _have: the columns its samples table has (reads select NULL for the others)
        self._schema_current = True
        self._have: Set[str] = set(STORED_NAMES)

        # exported status
        self.healthy = True
        self.moved_aside: Optional[str] = None
        self.errors_total = 0
        self.last_error: Optional[str] = None
        self.in_memory = path is None
        # rows SQLite refused, by reason (see drop_reason); each also counts in errors_total
        self.dropped_total: Dict[str, int] = {}
        self._logged_drops: Set[str] = set()
        # set by the owner when it asked for a file and could not even create its directory
        self.lost_file = False
        self.recovered_rows = 0  # rows salvaged from damaged files into new ones
        self.recorded_total = 0  # samples accepted by record() (on disk, pending or dropped)
        self.written_total = 0  # of those, committed to the file (synced: synchronous=FULL)
        # the file was deleted or replaced under the running agent, by how (history_file)
        self.file_lost_total: Dict[str, int] = {}
        self._file: Optional[FileWatch] = None
        # The file could not be opened for writing (permissions, full disk, locked, I/O): try
        # again at a flush at most every reopen_interval_seconds; rows kept meanwhile (memory,
        # or read from the file read-only) move into it when it opens.
        self._reopen = False
        self._reopen_interval = float(reopen_interval_seconds)
        self._last_open_attempt = time.monotonic()

        conn = None
        if path is not None:
            conn = self._open_file(path)
            if conn is None:
                self.healthy = False
                self.in_memory = True
            elif self._reopen:
                # read from the file only: new samples wait in memory (see _try_reopen)
                self.healthy = False
                self.in_memory = True
        if conn is None:
            conn = self._connect(":memory:")
            self._configure(conn, check=False)
            self._schema_current = True
        self._conn = conn
        if path is not None and not self.in_memory:
            self._file = FileWatch(path)
        self._start_clock()

    # ------------------------------------------------------------------ opening

    def _connect(self, target: str) -> sqlite3.Connection:
        # isolation_level=None: we issue BEGIN/COMMIT ourselves so a batch is one transaction
        return sqlite3.connect(
            target,
            timeout=self._busy_timeout,
            check_same_thread=False,
            isolation_level=None,
        )

    def _configure(self, conn: sqlite3.Connection, check: bool = True) -> None:
        if check:
            # quick_check reads every page; a truncated or scribbled file fails here rather
            # than at some later write. The table is small (rows are capped), so it is cheap.
            result = conn.execute("PRAGMA quick_check").fetchone()
            if not result or result[0] != "ok":
                raise IntegrityCheckFailed(f"quick_check: {result[0] if result else 'no result'}")
            mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()
            if not mode or str(mode[0]).lower() != "wal":
                raise sqlite3.OperationalError(f"cannot switch to WAL mode (got {mode})")
            # FULL: in WAL mode every COMMIT syncs the -wal before it returns, so a sample
            # counted written survives a power cut or a file system that goes read-only after
            # an error (NORMAL syncs only at checkpoints: up to ~1,000 pages of commits could
            # vanish). Its cost, one fdatasync per sample, is measured in bench/history_sync_cost.py.
            conn.execute("PRAGMA synchronous=FULL")
        for statement in SCHEMA:
            conn.execute(statement)
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version == 0:
            for statement in V3_TABLES:
                conn.execute(statement)
            conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")

    def _open_file(self, path: str) -> Optional[sqlite3.Connection]:
        """Open the history file for writing, or the best that can be had: a damaged file is
        moved aside and what can still be read of it is copied into a new file; a file that
        cannot be opened for writing now is read if possible and opened again later
        (``_reopen``). Returns None when nothing at all could be opened."""
        if not self._may_open(path):
            return None
        damage = header_problem(path)
        if isinstance(damage, OSError):
            # cannot even read it (owned by another user, mode 0600): the file may be fine
            self._note_error(damage, log_it=False)
            log.error("history: cannot read %s (%s); leaving it as it is and keeping history in "
                      "memory; it is opened again once it can be read (fix its owner or mode)",
                      path, damage)
            self._reopen = True
            return None
        if damage is not None:
            # decided before SQLite opens it: SQLite would delete or reset a -wal file on
            # close, and that may be the only copy of the last hours of samples
            self._note_error(damage, log_it=False)
            return self._replace_damaged(path, damage)
        conn = None
        created = not os.path.exists(path)
        try:
            conn = self._connect(path)
            self._configure(conn)
        except (sqlite3.Error, OSError) as exc:
            if conn is not None:
                with contextlib.suppress(sqlite3.Error):
                    conn.close()
            self._note_error(exc, log_it=False)
            if is_damaged(exc) and not is_busy(exc):
                return self._replace_damaged(path, exc)
            return self._open_for_reading(path, exc)
        return self._writable(path, conn, created)

    def _may_open(self, path: str) -> bool:
        """Whether ``path`` may be opened at all: its directory exists (made if need be) and
        it is a regular file or absent. Otherwise logged, counted, retried later."""
        directory = os.path.dirname(os.path.abspath(path))
        try:
            os.makedirs(directory, mode=0o750, exist_ok=True)
        except OSError as exc:
            log.error("history: cannot create state directory %s (%s); keeping history in memory",
                      directory, exc)
            self._note_error(exc, log_it=False)
            self._reopen = True
            return False
        if os.path.exists(path) and not os.path.isfile(path):
            # a FIFO would block the open forever, a directory or device is not ours
            exc = OSError(f"{path} is not a regular file")
            self._note_error(exc, log_it=False)
            log.error("history: %s is not a regular file; leaving it alone and keeping history in "
                      "memory (remove it, or point --state-dir elsewhere)", path)
            self._reopen = True
            return False
        return True

    def _writable(self, path: str, conn: sqlite3.Connection, created: bool) -> Optional[sqlite3.Connection]:
        """The opened file, found writable and upgraded, or kept for reading while new
        samples wait in memory; another connection (read-only) when it is busy."""
        try:
            # SQLite opens a file it may not write (read-only mount, 0444 file) read-only and
            # only fails at the first write. Find out now, but keep the connection: the old
            # samples still give rates, and new ones wait in memory (see record()).
            # Only a real page write tells: with a -shm file present even BEGIN IMMEDIATE
            # succeeds read-only. Rewriting user_version and rolling back changes nothing.
            conn.execute("BEGIN IMMEDIATE")
            try:
                version = conn.execute("PRAGMA user_version").fetchone()[0]
                conn.execute(f"PRAGMA user_version={int(version)}")
            finally:
                conn.execute("ROLLBACK")
        except (sqlite3.Error, OSError) as exc:
            self._note_error(exc, log_it=False)
            if is_busy(exc):
                with contextlib.suppress(sqlite3.Error):
                    conn.close()
                return self._open_for_reading(path, exc)
            self.healthy = False
            self._reopen = True
            log.error("history: %s cannot be written (%s); reading its history and keeping new "
                      "samples in memory until it can", path, exc)
            self._note_schema(conn)
            return conn
        if created:
            sync_directory(path)  # the new file's name must survive a power cut too
        try:
            self._upgrade(conn)
        except (sqlite3.Error, OSError) as exc:
            # e.g. a full disk: the rows are fine, only the new columns could not be added
            self._note_schema(conn)
            self._note_error(exc, log_it=False)
            self.healthy = False
            log.error("history: cannot upgrade %s to schema version %d (%s); reading it as it is "
                      "and keeping new samples in memory until a write succeeds", path, SCHEMA_VERSION, exc)
        return conn

    def _note_schema(self, conn: sqlite3.Connection) -> None:
        """What the file's samples table has (reads select NULL for the rest), and whether the
        file is at the current schema (else the first write that can upgrades it)."""
        try:
            self._have = columns_of(conn)
            self._schema_current = not missing_columns(conn) and not missing_tables(conn)
        except sqlite3.Error:
            self._have = set(STORED_NAMES[:7])
            self._schema_current = False

    def _upgrade(self, conn: sqlite3.Connection) -> None:
        """Bring the file to SCHEMA_VERSION in one transaction. Raises sqlite3.Error."""
        missing = missing_columns(conn)
        tables = missing_tables(conn)
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        if missing or tables or version < SCHEMA_VERSION:
            with immediate(conn):
                for name, kind in missing:
                    conn.execute(f"ALTER TABLE samples ADD COLUMN {name} {kind}")
                for statement in V3_TABLES:
                    conn.execute(statement)
                if version < SCHEMA_VERSION:
                    conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
            log.info(
                "history: %s upgraded from schema version %d to %d (added: %s)",
                self.path,
                version,
                max(version, SCHEMA_VERSION),
                ", ".join(name for name, _ in missing) or "nothing",
            )
        self._schema_current = True
        self._have = set(STORED_NAMES)

    def _open_for_reading(self, path: str, exc: BaseException) -> Optional[sqlite3.Connection]:
        """The file cannot be opened for writing now (locked, full disk, permissions, I/O):
        read its rows if possible, keep new samples in memory, and open it again later."""
        self._reopen = True
        conn = read_only_connection(path, self._busy_timeout)
        if is_busy(exc):
            why = "is locked by another process"
        else:
            why = "cannot be opened for writing"
        if conn is None:
            log.error("history: %s %s (%s) and cannot be read either; keeping history in memory and "
                      "opening it again once it can be", path, why, exc)
            return None
        self._note_schema(conn)
        log.error("history: %s %s (%s); reading its history, keeping new samples in memory and "
                  "writing them once the file can be opened again", path, why, exc)
        return conn

    def _replace_damaged(self, path: str, exc: BaseException) -> Optional[sqlite3.Connection]:
        """Move a damaged file aside, start a new one at ``path`` and copy into it every row
        that can still be read from the old one (a damaged index or a damaged page loses only
        what it held)."""
        moved = self._move_aside(path, exc)
        if moved is None:
            return None
        contents = salvage(moved)
        conn = None
        try:
            conn = self._connect(path)
            self._configure(conn)
            sync_directory(path)  # the rename and the new file
            self._upgrade(conn)
            copied = copy_rows(conn, contents)
        except (sqlite3.Error, OSError) as new_exc:
            if conn is not None:
                with contextlib.suppress(sqlite3.Error):
                    conn.close()
            self._note_error(new_exc, log_it=False)
            log.error("history: cannot start a new file at %s (%s); keeping history in memory", path, new_exc)
            self._reopen = True
            return None
        self.recovered_rows += copied
        log.error("history: %s is damaged (%s); moved it to %s, recovered %d of its rows into a new "
                  "file and recording there", path, exc, moved, copied)
        return conn

    def _move_aside(self, path: str, exc: BaseException) -> Optional[str]:
        stamp = int(self._clock())
        target = f"{path}.corrupt-{stamp}"
        n = 1
        while os.path.exists(target):
            target = f"{path}.corrupt-{stamp}.{n}"
            n += 1
        try:
            os.replace(path, target)
        except OSError as move_exc:
            log.error(
                "history: %s is unusable (%s) and could not be moved aside (%s); "
                "keeping history in memory",
                path,
                exc,
                move_exc,
            )
            return None
        for suffix in ("-wal", "-shm"):
            if os.path.exists(path + suffix):
                try:
                    os.replace(path + suffix, target + suffix)
                except OSError as move_exc:
                    log.error("history: could not move %s aside: %s", path + suffix, move_exc)
        self.moved_aside = target
        return target

    def _try_reopen(self) -> None:
        """Open the file for writing again (it was locked, full, unreadable or read-only at
        open) and move every row kept meanwhile into it. Caller holds the lock."""
        if not self._reopen or self.path is None:
            return
        now = time.monotonic()
        if now - self._last_open_attempt < self._reopen_interval:
            return
        self._last_open_attempt = now
        self._reopen = False
        conn = self._open_file(self.path)
        if conn is None:
            self._reopen = True
            return
        if self._reopen:  # read-only again
            with contextlib.suppress(sqlite3.Error):
                conn.close()
            return
        old = self._conn
        try:
            copied = copy_rows(conn, contents_of(old))
        except (sqlite3.Error, OSError) as exc:
            self._note_error(exc)
            self._reopen = True
            with contextlib.suppress(sqlite3.Error):
                conn.close()
            return
        with contextlib.suppress(sqlite3.Error):
            old.close()
        self._conn = conn
        self.in_memory = False
        self._file = FileWatch(self.path)
        log.warning("history: %s is open for writing again; %d rows kept meanwhile are in it",
                    self.path, copied)
        self._displace_future()

    # ------------------------------------------------------------------ the file under us

    def _check_file(self) -> None:
        """Before a write: is the file at ``path`` still the one open? A file deleted or
        replaced under the agent would take every later sample with it (see history_file).
        Caller holds the lock."""
        if self._file is None or self._reopen:
            return
        how = self._file.lost()
        if how is None:
            return
        self.file_lost_total[how] = self.file_lost_total.get(how, 0) + 1
        self.errors_total += 1
        self.last_error = f"{self.path}: {how.replace('_', ' ')} while the agent ran"
        self._recover_file(how)

    def _recover_file(self, how: str) -> None:
        """Start over at ``path`` with everything the open (unlinked or replaced) file holds:
        read it all through the open connection, close that, remove our ``-wal`` left at the
        path (a new connection would replay it onto the new file: FileWatch.remove_stale_wal),
        then open the path as at start and copy everything in. Caller holds the lock."""
        old, watch, self._file = self._conn, self._file, None
        try:
            contents = contents_of(old)
        except sqlite3.Error as exc:  # the open file cannot be read: keep what is pending
            self._note_error(exc)
            contents = Contents([], [], [])
        with contextlib.suppress(sqlite3.Error):
            old.close()
        if watch is not None:
            watch.remove_stale_wal()
        what = {"deleted": "deleted", "replaced": "replaced by another file",
                "wal_deleted": "left without its -wal file (deleted)"}.get(how, how)
        conn = self._open_file(self.path)
        if conn is not None and not self._reopen:
            try:
                copied = copy_rows(conn, contents)
            except (sqlite3.Error, OSError) as exc:
                self._note_error(exc)
                with contextlib.suppress(sqlite3.Error):
                    conn.close()
                conn = None
        if conn is None or self._reopen:
            # Nothing writable at the path now: everything moves into memory and into the
            # file at a later write (_try_reopen), as when the file could not be opened.
            if conn is not None:
                with contextlib.suppress(sqlite3.Error):
                    conn.close()
            memory = self._connect(":memory:")
            self._configure(memory, check=False)
            copy_rows(memory, contents)
            self._conn, self.in_memory, self._reopen = memory, True, True
            self._schema_current, self._have = True, set(STORED_NAMES)
            self.healthy = False
            log.error("history: %s was %s while the agent ran, and no new file can be started there "
                      "now; keeping its %d rows and new samples in memory and writing them once it can",
                      self.path, what, len(contents.rows))
            return
        self._conn = conn
        self._file = FileWatch(self.path)
        log.error("history: %s was %s while the agent ran; started a new file there and wrote back the "
                  "%d rows the open one held (%d new to it) and %d pending samples",
                  self.path, what, len(contents.rows), copied, len(self._pending))

    # ------------------------------------------------------------------ the clock under us

    def _start_clock(self) -> None:
        """At open: a step of the wall clock since the last write of this boot re-times this
        boot's samples; samples of earlier boots in the future are moved aside."""
        if self._watch is None:
            return
        step = self._watch.resume(history_clock.saved_look(self._conn))
        if step is not None:
            self._stepped(step)
        self._displace_future()
        if not self._watch.retention_allowed():
            log.info("history: retention deletes nothing until the wall clock has agreed with the boot "
                     "clock for %s (steady for %s so far)", describe(self._watch.settle_seconds),
                     describe(self._watch.steady_for()))

    def _check_clock(self, ts: float) -> float:
        """Look at the clocks before a sample is stored; on a step, re-time this boot's samples.
        Returns the sample's time, moved with the latest step when it was read before it
        (ClockWatch.restamp: another source's thread may have found the step first)."""
        assert self._watch is not None
        step = self._watch.observe()
        if step is not None:
            self._stepped(step)
        return self._watch.restamp(ts)

    def _stepped(self, step: float) -> None:
        """The wall clock stepped by ``step``: move this boot's samples (kept in memory and on
        disk) with it, so each stays where the boot clock says it was taken. Logged once."""
        self._pending = [replace(s, ts=s.ts + step) for s in self._pending]
        self._last_ts = {serial: ts + step for serial, ts in self._last_ts.items()}
        moved = 0
        if self._boot is not None and self._schema_current:
            try:
                moved = history_clock.retime_boot(self._conn, self._boot, step, STORED)
            except sqlite3.Error as exc:
                self._note_error(exc)
        assert self._watch is not None
        log.error("history: %s; moved the %d samples this boot recorded (and %d pending) by the same "
                  "amount; retention deletes nothing until the clock has been steady for %s",
                  self._watch.last_anomaly, moved, len(self._pending), describe(self._watch.settle_seconds))

    def _displace_future(self) -> None:
        """Samples of other boots later than now (that boot's clock was ahead) would stop
        recording until real time passed them: move them to ``samples_displaced``."""
        if self._watch is None or self._boot is None or not self._schema_current or self._reopen:
            return
        limit = self._clock() + self._watch.tolerance_seconds
        try:
            count, newest = history_clock.displace_future(self._conn, self._boot, limit, STORED)
        except sqlite3.Error as exc:
            self._note_error(exc)
            return
        if count:
            self._last_ts.clear()
            self._watch.future_samples(count, newest)
            log.error("history: %s; moved them to the table samples_displaced of %s (kept there, not used "
                      "for rates); recording goes on; retention deletes nothing until the clock has been "
                      "steady for %s", self._watch.last_anomaly, self.path or ":memory:",
                      describe(self._watch.settle_seconds))

    # The status readers below take no lock: the poller's merge calls them, and must not wait
    # for a write in progress (re-timing a boot's samples takes seconds). Each reads fields
    # that are replaced whole, or copies a dict in one C call.

    def retention_held(self) -> bool:
        """Retention waits for the wall clock to hold steady (after a step, or a new boot)."""
        return self._watch is not None and not self._watch.retention_allowed()

    def clock_anomalies(self) -> Dict[str, int]:
        """Clock anomalies seen since start, by kind (agent.history_clock.ANOMALY_KINDS)."""
        return dict(self._watch.anomalies) if self._watch is not None else {}

    def clock_problem(self) -> Optional[str]:
        """The newest clock anomaly while retention still waits after it, else None."""
        watch = self._watch
        if watch is None or not watch.anomaly_pending():
            return None
        left = watch.settle_seconds - watch.steady_for()
        return f"{watch.last_anomaly}; retention waits {describe(left)} more for a steady clock"

    def file_losses(self) -> Dict[str, int]:
        """Times the file was found deleted or replaced under the agent, by how."""
        return dict(self.file_lost_total)

    # ------------------------------------------------------------------ writing

    def _note_error(self, exc: BaseException, log_it: bool = True) -> None:
        message = f"{type(exc).__name__}: {exc}"
        self.errors_total += 1
        self.last_error = message
        if log_it and message not in self._logged_errors:
            self._logged_errors.add(message)
            log.error(
                "history: write to %s failed (%s); keeping samples in memory and retrying "
                "on the next sample (logged once per distinct error)",
                self.path or ":memory:",
                message,
            )

    def record(self, serial: str, ts: float, reading: DriveReading) -> None:
        """Store one reading unless the drive already has a sample less than
        ``min_interval_seconds`` old (or newer). A step of the wall clock is found here first
        and moves this boot's samples with it (agent.history_clock), so after a step either
        way the next sample comes one interval after the last, as the boot clock measures.
        Never raises: a storage error keeps the sample in memory, a value SQLite refuses costs
        only its row (see the module's failure policy)."""
        with self._lock:
            if self._closed:
                return
            try:
                ts = float(ts)
                if self._watch is not None:
                    ts = self._check_clock(ts)
                last = self._last_ts.get(serial)
                if last is None:
                    last = self._newest_ts(serial)
                if last is not None and self._watch is not None and last > self._clock() + self._watch.tolerance_seconds:
                    last = None  # a sample in the future never holds up recording
                if last is not None and ts - last < self.min_interval_seconds:
                    return
                self._pending.append(
                    Sample(
                        serial=serial,
                        ts=float(ts),
                        life_left_ratio=reading.life_left_ratio,
                        host_written_bytes=reading.host_written_bytes,
                        nand_written_bytes=reading.nand_written_bytes,
                        bad_block_ratio=reading.bad_block_ratio,
                        power_on_seconds=reading.power_on_seconds,
                        bad_blocks=bad_blocks_of(reading),
                        media_errors=reading.media_errors,
                    )
                )
                self._last_ts[serial] = float(ts)
                self.recorded_total += 1
                self._flush()
            except Exception as exc:  # a bug here must cost a sample, never the collector
                self._note_error(exc)
                self.healthy = False

    def _flush(self) -> None:
        if not self._pending:
            return
        serials = sorted({s.serial for s in self._pending})
        # Retention waits while the wall clock is not to be trusted (agent.history_clock).
        retention = self._watch is None or self._watch.retention_allowed()
        cutoff = self._clock() - self.retention_seconds if retention else -math.inf
        self._try_reopen()
        self._check_file()
        conn = self._conn
        refused: List[Tuple[Sample, BaseException]] = []
        try:
            if not self._schema_current:
                self._upgrade(conn)  # the file was not writable at open, or the disk was full
            with immediate(conn):
                # Row by row inside one transaction: a value SQLite refuses fails before its
                # statement changes anything, so it costs that row only.
                for sample in self._pending:
                    try:
                        conn.execute(INSERT, sample.as_row(self._boot))
                    except ROW_ERRORS as exc:
                        refused.append((sample, exc))
                if retention:
                    conn.execute("DELETE FROM samples WHERE ts < ?", (cutoff,))
                for serial in serials:
                    # keep the newest max_rows_per_drive rows; a NULL bound deletes nothing
                    conn.execute(
                        "DELETE FROM samples WHERE serial = ? AND ts < ("
                        "SELECT ts FROM samples WHERE serial = ? "
                        "ORDER BY ts DESC LIMIT 1 OFFSET ?)",
                        (serial, serial, self.max_rows_per_drive - 1),
                    )
                if self._watch is not None:
                    history_clock.save_look(conn, self._watch.last)
        except (sqlite3.Error, OSError) as exc:
            self._note_error(exc)
            if not self.in_memory:
                self.healthy = False
            # A refused row will be refused again: drop it now, whatever became of the rest.
            self._drop(refused)
            self._bound_pending(cutoff)
            return
        # COMMIT has returned: with synchronous=FULL the -wal is synced, so these are written.
        if not self.in_memory:
            self.written_total += len(self._pending) - len(refused)
        if self._file is not None:
            self._file.note_written()
        self._pending.clear()
        self._drop(refused)
        # Healthy: the storage works. A dropped row is not a storage fault; the poller fails
        # the history collector for the run that dropped one (Poller._note_history).
        self.healthy = not self._storage_lost()

    def _storage_lost(self) -> bool:
        """Asked for a file and writing somewhere else (memory) instead, or not yet to it."""
        return self.lost_file or self._reopen or (self.path is not None and self.in_memory)

    def _drop(self, refused: Sequence[Tuple[Sample, BaseException]]) -> None:
        """Count and log (once per reason) rows SQLite refused, and forget them."""
        if not refused:
            return
        gone = {id(sample) for sample, _ in refused}
        self._pending = [s for s in self._pending if id(s) not in gone]
        for sample, exc in refused:
            reason = drop_reason(exc)
            self.dropped_total[reason] = self.dropped_total.get(reason, 0) + 1
            self.errors_total += 1
            self.last_error = f"sample of {sample.serial} at {sample.ts:.0f} dropped: {exc}"
            if reason not in self._logged_drops:
                self._logged_drops.add(reason)
                log.error(
                    "history: dropped the sample of %s at %.0f (%s: %s); the other samples are "
                    "kept (counted in ssd_history_samples_dropped_total{reason=\"%s\"}, "
                    "logged once per reason)",
                    sample.serial, sample.ts, type(exc).__name__, exc, reason,
                )

    def _bound_pending(self, cutoff: float) -> None:
        """Apply retention and the row cap to the unwritten buffer, so a disk that stays
        full cannot grow the agent's memory without bound."""
        kept = [s for s in self._pending if s.ts >= cutoff]
        by_serial: Dict[str, List[Sample]] = {}
        for s in kept:
            by_serial.setdefault(s.serial, []).append(s)
        bounded: List[Sample] = []
        for rows in by_serial.values():
            rows.sort(key=lambda s: s.ts)
            bounded.extend(rows[-self.max_rows_per_drive :])
        bounded.sort(key=lambda s: (s.ts, s.serial))
        self._pending = bounded

    # ------------------------------------------------------------------ reading

    def _newest_ts(self, serial: str) -> Optional[float]:
        newest = None
        try:
            row = self._conn.execute(
                "SELECT MAX(ts) FROM samples WHERE serial = ?", (serial,)
            ).fetchone()
            if row and row[0] is not None:
                newest = float(row[0])
        except sqlite3.Error as exc:
            self._note_error(exc)
        for s in self._pending:
            if s.serial == serial and (newest is None or s.ts > newest):
                newest = s.ts
        return newest

    def samples(self, serial: str, since: Optional[float] = None) -> List[Sample]:
        """Samples of one drive, oldest first, including any not yet written to disk."""
        with self._lock:
            lower = float("-inf") if since is None else float(since)
            found: Dict[float, Sample] = {}
            if not self._closed:
                try:
                    columns = select_list(self._have, STORED_NAMES[:-1])
                    query = f"SELECT {columns} FROM samples WHERE serial = ?"
                    args: tuple = (serial,)
                    if since is not None:
                        query += " AND ts >= ?"
                        args = (serial, lower)
                    for row in self._conn.execute(query + " ORDER BY ts", args):
                        sample = Sample.from_row(row)
                        found[sample.ts] = sample
                except sqlite3.Error as exc:
                    self._note_error(exc)
            for s in self._pending:
                if s.serial == serial and s.ts >= lower:
                    found[s.ts] = s
            return [found[ts] for ts in sorted(found)]

    def serials(self) -> List[str]:
        with self._lock:
            names = {s.serial for s in self._pending}
            if not self._closed:
                try:
                    names.update(
                        r[0] for r in self._conn.execute("SELECT DISTINCT serial FROM samples")
                    )
                except sqlite3.Error as exc:
                    self._note_error(exc)
            return sorted(names)

    def _points(
        self, serial: str, attribute: str, now: float, window_seconds: float
    ) -> List[Tuple[float, float]]:
        points = []
        for s in self.samples(serial, since=now - window_seconds):
            value = getattr(s, attribute)
            if s.ts <= now and value is not None:
                points.append((s.ts, float(value)))
        return points

    def write_rate(
        self, serial: str, now: float, window_seconds: float = 7 * DAY
    ) -> Optional[float]:
        """Host bytes written per second over the window (see :func:`counter_rate`)."""
        return counter_rate(
            self._points(serial, "host_written_bytes", now, window_seconds),
            self.min_span_seconds,
        )

    def nand_write_rate(
        self, serial: str, now: float, window_seconds: float = 7 * DAY
    ) -> Optional[float]:
        """NAND bytes written per second over the window (see :func:`counter_rate`)."""
        return counter_rate(
            self._points(serial, "nand_written_bytes", now, window_seconds),
            self.min_span_seconds,
        )

    def life_slope(
        self, serial: str, now: float, window_seconds: float = 30 * DAY
    ) -> Optional[float]:
        """Least-squares slope of life left (ratio per second) over the window; negative
        while the drive wears."""
        return least_squares_slope(
            self._points(serial, "life_left_ratio", now, window_seconds),
            self.min_span_seconds,
        )

    def bad_block_growth(
        self, serial: str, now: float, window_seconds: float = 30 * DAY
    ) -> Optional[int]:
        """Grown bad blocks added over the window: the newest known count minus the oldest
        (``bad_blocks`` of :func:`samples`); None with fewer than two known counts."""
        points = self._points(serial, "bad_blocks", now, window_seconds)
        if len(points) < 2:
            return None
        return int(points[-1][1] - points[0][1])

    @property
    def pending_count(self) -> int:
        """Samples held in memory because the last write failed (no lock: see retention_held)."""
        return len(self._pending)

    # ------------------------------------------------------------------ closing

    # ------------------------------------------------------------------ flags

    def flag_times(self) -> Dict[Tuple[str, str], float]:
        """When each (serial, flag key) that is up now was first raised, as last saved (see
        :class:`agent.views.FlagTracker`); empty for a file that never saved any."""
        with self._lock:
            if self._closed:
                return {}
            try:
                rows = self._conn.execute("SELECT serial, key, since FROM flags").fetchall()
            except sqlite3.Error:  # no such table yet (an older file, never saved flags)
                return {}
            return {(serial, key): float(since) for serial, key, since in rows}

    def save_flag_times(self, times: Dict[Tuple[str, str], float]) -> None:
        """Replace the saved flag times. A failure is logged and counted like a failed sample
        write; the caller keeps the times in memory."""
        with self._lock:
            if self._closed:
                return
            conn = self._conn
            try:
                with immediate(conn):
                    conn.execute(FLAGS_TABLE)
                    conn.execute("DELETE FROM flags")
                    conn.executemany("INSERT INTO flags (serial, key, since) VALUES (?, ?, ?)",
                                     [(serial, key, since) for (serial, key), since in sorted(times.items())])
            except (sqlite3.Error, OSError) as exc:
                self._note_error(exc)

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._flush()
            try:
                self._conn.close()
            except sqlite3.Error as exc:
                self._note_error(exc)
            self._closed = True

    def __enter__(self) -> History:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()
