"""What the history file is when it is not what it should be: SQLite's errors told apart
(busy, damaged, refused), a file that is plainly not a database, a read-only look at a file
that cannot be written, and the rows that can still be read from a damaged one, copied into a
new file (agent/history.py, "Failure policy").
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import urllib.parse
from dataclasses import dataclass
from typing import List, Optional, Set, Tuple

from agent.history_schema import ADDED, FLAGS_TABLE, INSERT, ROW_ERRORS, STORED, STORED_NAMES, immediate, select_list

# SQLite primary result codes (sqlite3.h). Python 3.11+ exposes them on the exception as
# ``sqlite_errorcode``; on 3.9/3.10 we fall back to the message text.
SQLITE_PERM = 3
SQLITE_BUSY = 5
SQLITE_LOCKED = 6
SQLITE_READONLY = 8
SQLITE_CORRUPT = 11
SQLITE_CANTOPEN = 14
SQLITE_AUTH = 23
SQLITE_NOTADB = 26


def error_code(exc: BaseException) -> Optional[int]:
    code = getattr(exc, "sqlite_errorcode", None)
    if code is None:
        return None
    return int(code) & 0xFF  # extended codes keep the primary code in the low byte


def is_busy(exc: BaseException) -> bool:
    code = error_code(exc)
    if code is not None:
        return code in (SQLITE_BUSY, SQLITE_LOCKED)
    text = str(exc).lower()
    return "locked" in text or "busy" in text


def is_damaged(exc: BaseException) -> bool:
    """Errors at open that mean the file itself is damaged (moved aside, its rows salvaged).
    Not: locked, disk full, I/O errors, or a file we may not open or read (permissions): that
    file may be perfectly good, so it is left alone and opened again later."""
    if isinstance(exc, IntegrityCheckFailed):
        return True
    code = error_code(exc)
    if code is not None:
        return code in (SQLITE_NOTADB, SQLITE_CORRUPT)
    text = str(exc).lower()
    return any(marker in text for marker in ("not a database", "malformed", "corrupt"))


class IntegrityCheckFailed(sqlite3.DatabaseError):
    pass


SQLITE_MAGIC = b"SQLite format 3\x00"


def header_problem(path: str) -> Optional[BaseException]:
    """Why an existing file is plainly not our database (unreadable, or not SQLite), else
    ``None``. An empty file is a valid empty database to SQLite."""
    try:
        with open(path, "rb") as f:
            head = f.read(len(SQLITE_MAGIC))
    except FileNotFoundError:
        return None
    except OSError as exc:
        return exc
    if head and head != SQLITE_MAGIC:
        return sqlite3.DatabaseError("file is not a database (no SQLite header)")
    return None


def read_only_connection(path: str, busy_timeout: float, tolerant: bool = False) -> Optional[sqlite3.Connection]:
    """The file opened for reading only, or None. ``immutable`` as a last resort reads a file
    whose -shm cannot be created (full disk, read-only directory), ignoring its -wal."""
    if not os.path.isfile(path):
        return None
    uri = "file:" + urllib.parse.quote(os.path.abspath(path))
    for mode in ("?mode=ro", "?mode=ro&immutable=1"):
        conn = None
        try:
            conn = sqlite3.connect(uri + mode, uri=True, timeout=busy_timeout,
                                   check_same_thread=False, isolation_level=None)
            if tolerant:
                # a damaged file: let SQLite read a schema whose pages point past the end
                conn.execute("PRAGMA writable_schema=ON")
            conn.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchone()
            return conn
        except sqlite3.Error:
            if conn is not None:
                with contextlib.suppress(sqlite3.Error):
                    conn.close()
    return None


@dataclass
class Contents:
    """Everything a history file holds, as stored: sample rows (in :data:`STORED` order),
    flag times and displaced samples. What moves into a new file when the old one is damaged,
    deleted or could not be written."""

    rows: List[tuple]
    flags: List[tuple]
    displaced: List[tuple]


def salvage(path: str) -> Contents:
    """Every sample row (and flag time) that can still be read from a damaged file. The table
    is scanned without its indexes (a damaged index loses nothing), and a scan that hits a
    damaged table page keeps the rows before it."""
    conn = read_only_connection(path, 0.1, tolerant=True)
    if conn is None:
        return Contents([], [], [])
    try:
        return contents_of(conn, tolerate_damage=True)
    finally:
        with contextlib.suppress(sqlite3.Error):
            conn.close()


def contents_of(conn: sqlite3.Connection, tolerate_damage: bool = False) -> Contents:
    """All sample rows, flag rows and displaced rows of ``conn``."""
    rows: List[tuple] = []
    columns = select_list(columns_of(conn, tolerate_damage))
    try:
        rows.extend(tuple(r) for r in conn.execute(f"SELECT {columns} FROM samples NOT INDEXED"))
    except sqlite3.Error:
        if not tolerate_damage:
            raise
        rows = rows_around_damage(conn, columns)
    flags: List[tuple] = []
    displaced: List[tuple] = []
    try:
        flags.extend(tuple(r) for r in conn.execute("SELECT serial, key, since FROM flags NOT INDEXED"))
    except sqlite3.Error:
        pass  # no flags table (an older file), or damaged: flags are rebuilt as they are raised
    try:
        displaced.extend(tuple(r) for r in conn.execute(f"SELECT {STORED}, displaced_at FROM samples_displaced"))
    except sqlite3.Error:
        pass  # none yet (an older file), or damaged
    return Contents(rows, flags, displaced)


def rows_around_damage(conn: sqlite3.Connection, columns: str, chunk: int = 256) -> List[tuple]:
    """The rows a full scan could not reach: read the table in rowid ranges, each a seek that
    visits only the pages on its path, skipping the ranges whose pages are damaged."""
    try:
        highest = int(conn.execute("SELECT MAX(rowid) FROM samples").fetchone()[0] or 0)
    except sqlite3.Error:
        highest = 2_000_000  # the rightmost path is damaged too: look far enough
    rows: List[tuple] = []
    empty_run = 0
    for low in range(1, highest + 1, chunk):
        try:
            got = conn.execute(f"SELECT {columns} FROM samples NOT INDEXED WHERE rowid BETWEEN ? AND ?",
                               (low, low + chunk - 1)).fetchall()
        except sqlite3.Error:
            continue
        rows.extend(tuple(r) for r in got)
        empty_run = 0 if got else empty_run + 1
        if empty_run > 1000 and rows:
            break
    return rows


def copy_rows(conn: sqlite3.Connection, contents: Contents) -> int:
    """Insert what another file held (values as stored there) unless the key is taken.
    Returns how many sample rows were new. Raises sqlite3.Error for a storage failure; the
    file must be at the current schema."""
    copied = 0
    insert = INSERT.replace("INSERT OR REPLACE", "INSERT OR IGNORE")
    with immediate(conn):
        for row in contents.rows:
            try:
                cursor = conn.execute(insert, row)
                copied += cursor.rowcount if cursor.rowcount > 0 else 0
            except ROW_ERRORS:
                continue  # a row whose values were damaged too
        if contents.flags:
            conn.execute(FLAGS_TABLE)
            for flag in contents.flags:
                with contextlib.suppress(*ROW_ERRORS):
                    conn.execute("INSERT OR IGNORE INTO flags (serial, key, since) VALUES (?, ?, ?)", flag)
        for row in contents.displaced:
            with contextlib.suppress(*ROW_ERRORS):
                conn.execute(f"INSERT INTO samples_displaced ({STORED}, displaced_at) "
                             f"VALUES ({', '.join('?' * (len(STORED_NAMES) + 1))})", row)
    return copied


def columns_of(conn: sqlite3.Connection, tolerate_damage: bool = False) -> Set[str]:
    """The columns of the file's samples table. Raises sqlite3.Error unless told to tolerate
    damage (then: the version 1 columns, the rest read as NULL)."""
    try:
        return {row[1] for row in conn.execute("PRAGMA table_info(samples)")}
    except sqlite3.Error:
        if not tolerate_damage:
            raise
        return set(STORED_NAMES[:7])


def missing_columns(conn: sqlite3.Connection) -> List[Tuple[str, str]]:
    """Columns of the current schema that the file's samples table lacks (an older file).
    Raises sqlite3.Error."""
    have = columns_of(conn)
    return [(name, kind) for name, kind in ADDED if name not in have]


def missing_tables(conn: sqlite3.Connection) -> bool:
    """Whether the file lacks a table of schema version 3. Raises sqlite3.Error."""
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    return not {"clock", "samples_displaced"} <= names
