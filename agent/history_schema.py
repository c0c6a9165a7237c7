"""The history file's rows: the schema of each version, one :class:`Sample` and how its values
are stored (any integer a tool prints, without error or loss), the grown-bad-block count, and
the reasons a row SQLite refuses is dropped for. No I/O beyond the connection it is given
(agent/history.py keeps the file).
"""

from __future__ import annotations

import contextlib
import math
import sqlite3
from dataclasses import dataclass
from typing import Iterator, Optional, Sequence, Set

from collectors.model import DriveReading

SCHEMA = (
    """CREATE TABLE IF NOT EXISTS samples (
        serial TEXT NOT NULL,
        ts REAL NOT NULL,
        life_left_ratio REAL,
        host_written_bytes INTEGER,
        nand_written_bytes INTEGER,
        bad_block_ratio REAL,
        power_on_seconds INTEGER,
        bad_blocks INTEGER,
        media_errors INTEGER,
        boot INTEGER,
        PRIMARY KEY (serial, ts)
    )""",
    # retention deletes by time across all drives, including drives that have vanished
    "CREATE INDEX IF NOT EXISTS samples_ts ON samples (ts)",
)
# Since when each of a drive's flags (agent.views) has been raised, so "since when" survives a
# restart. Created by the first save, not at open: opening must not write (read-only files).
FLAGS_TABLE = (
    "CREATE TABLE IF NOT EXISTS flags (serial TEXT NOT NULL, key TEXT NOT NULL, since REAL NOT NULL, "
    "PRIMARY KEY (serial, key))"
)
V1_COLUMNS = (
    "serial, ts, life_left_ratio, host_written_bytes, nand_written_bytes, "
    "bad_block_ratio, power_on_seconds"
)
# Columns added after version 1, in order; each ALTER TABLE ADD COLUMN appends one. ``boot``
# (version 3) names the boot that recorded the sample (agent.history_clock.boot_key): the
# samples a wall-clock step re-times.
ADDED = (("bad_blocks", "INTEGER"), ("media_errors", "INTEGER"), ("boot", "INTEGER"))
# What a Sample holds, and what is stored (the same and the boot).
COLUMNS = V1_COLUMNS + ", bad_blocks, media_errors"
STORED = COLUMNS + ", boot"
STORED_NAMES = tuple(name.strip() for name in STORED.split(","))
# Tables of version 3, created by the upgrade (opening a file must not write to it):
# the last look at the clocks (agent.history_clock.Look), and samples taken out of the time
# line because an earlier boot wrote them in the future (kept, never deleted, never read).
V3_TABLES = (
    "CREATE TABLE IF NOT EXISTS clock (id INTEGER PRIMARY KEY CHECK (id = 1), boot INTEGER, "
    "since_boot REAL, wall REAL, steady_since REAL)",
    "CREATE TABLE IF NOT EXISTS samples_displaced (serial TEXT NOT NULL, ts REAL NOT NULL, "
    "life_left_ratio REAL, host_written_bytes INTEGER, nand_written_bytes INTEGER, bad_block_ratio REAL, "
    "power_on_seconds INTEGER, bad_blocks INTEGER, media_errors INTEGER, boot INTEGER, displaced_at REAL)",
)


def select_list(have: Set[str], names: Sequence[str] = STORED_NAMES) -> str:
    """The columns to select from a file whose samples table has the columns ``have``: an
    older file not yet upgraded reads NULL for the columns it lacks (not recorded then)."""
    return ", ".join(name if name in have else f"NULL AS {name}" for name in names)


# Defect types (DriveReading.defects keys) counted as grown bad blocks, one per drive kind:
# ATA "reallocated" (attribute 5: Reallocated_Sector_Ct, Reallocate_NAND_Blk_Cnt,
# Retired_Block_Count: sectors or NAND blocks the drive has retired), SCSI "grown_defect"
# (Elements in grown defect list) and Shannon "dynamic_bad_block" (blocks gone bad in use).
# Every other type is left out, among them: Shannon "static_bad_block" (factory defects,
# like the SCSI primary list: not grown, and constant); "pending" and
# "offline_uncorrectable" (sectors not yet retired, which may yet be rewritten fine);
# "reallocation_events" (events, not blocks); "program_fail" and "erase_fail" (failed
# operations, not blocks); error counters such as "reported_uncorrectable" or
# "udma_crc_errors". NVMe reports no bad-block count: its ``bad_blocks`` is None and
# ``media_errors`` carries its health log's media errors.
BAD_BLOCK_DEFECTS = ("reallocated", "grown_defect", "dynamic_bad_block")

INSERT = f"INSERT OR REPLACE INTO samples ({STORED}) VALUES ({', '.join('?' * len(STORED_NAMES))})"

# What SQLite (or the row's own conversion) raises for a value it cannot store: the row's
# fault, not the storage's. Anything else from a write is a storage error (kept pending).
ROW_ERRORS = (
    OverflowError,
    TypeError,
    ValueError,
    sqlite3.InterfaceError,
    sqlite3.ProgrammingError,
    sqlite3.IntegrityError,
    sqlite3.DataError,
)


def drop_reason(exc: BaseException) -> str:
    """The ``reason`` label of a dropped row: a small fixed set."""
    if isinstance(exc, OverflowError):
        return "out_of_range"
    if isinstance(exc, sqlite3.IntegrityError):
        return "constraint"
    if isinstance(exc, (TypeError, sqlite3.InterfaceError, sqlite3.ProgrammingError)):
        return "unsupported_type"
    return "invalid_value"


@contextlib.contextmanager
def immediate(conn: sqlite3.Connection) -> Iterator[None]:
    """One write transaction: BEGIN IMMEDIATE, COMMIT, or ROLLBACK and re-raise."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
        conn.execute("COMMIT")
    except BaseException:
        try:
            conn.execute("ROLLBACK")
        except sqlite3.Error:
            pass
        raise


@dataclass(frozen=True)
class Sample:
    """One stored reading of one drive. ``None`` means the source did not report it."""

    serial: str
    ts: float
    life_left_ratio: Optional[float] = None
    host_written_bytes: Optional[int] = None
    nand_written_bytes: Optional[int] = None
    bad_block_ratio: Optional[float] = None
    power_on_seconds: Optional[int] = None
    bad_blocks: Optional[int] = None  # grown bad blocks, see BAD_BLOCK_DEFECTS
    media_errors: Optional[int] = None

    def as_row(self, boot: Optional[int] = None) -> tuple:
        """The row as SQLite binds it (every value through :func:`to_db`), with the key of
        the boot that recorded it."""
        return (
            str(self.serial),
            float(self.ts),
            to_db(self.life_left_ratio),
            to_db(self.host_written_bytes),
            to_db(self.nand_written_bytes),
            to_db(self.bad_block_ratio),
            to_db(self.power_on_seconds),
            to_db(self.bad_blocks),
            to_db(self.media_errors),
            boot,
        )

    @classmethod
    def from_row(cls, row: Sequence) -> Sample:
        return cls(row[0], float(row[1]), *(from_db(v) for v in row[2:]))


# SQLite's INTEGER storage class: a signed 64-bit integer.
INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1


def to_db(value: object) -> object:
    """A sample value as SQLite can store it without error or loss.

    Integers outside the signed 64-bit range become a BLOB of their decimal digits: SQLite
    would refuse them (OverflowError at bind), and a TEXT or REAL value in an INTEGER column
    would be converted to a rounded REAL by column affinity; a BLOB is stored as given.
    """
    if value is None or isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        if INT64_MIN <= value <= INT64_MAX:
            return value
        return str(value).encode("ascii")
    return value  # float or str; any other type is refused by SQLite and isolated by _flush


def from_db(value: object) -> object:
    """The inverse of :func:`to_db`."""
    if isinstance(value, bytes):
        try:
            return int(value.decode("ascii"))
        except (UnicodeDecodeError, ValueError):
            return None  # not ours: an unreadable value is absent, not zero
    return value


def bad_blocks_of(reading: DriveReading) -> Optional[int]:
    """Grown bad blocks of a reading: the sum of its defects of the BAD_BLOCK_DEFECTS types,
    None when it reports none of them (absent is not zero)."""
    counts = [reading.defects[kind] for kind in BAD_BLOCK_DEFECTS if reading.defects.get(kind) is not None]
    return sum(counts) if counts else None
