"""The schedule, kept: which window each drive's test last ran in, the test running now, and
what the scheduler last saw, in ``<state dir>/selftest-schedule.json`` beside the history.

A restart must neither repeat a test that ran in the current window nor forget one that is
due, nor lose track of a test it started: the file is written after every change, atomically
(a temporary file, fsync, rename, fsync of the directory), so a crash or a full disk leaves the
previous version whole. A file that cannot be read (corrupt, another version, unreadable) is
logged and set aside as ``.corrupt`` and the schedule starts afresh: tests may then run once
more than planned, never on a drive that is testing (the drive is asked first).

Keys are ``IDENTITY|TYPE``: the drive's identity (its serial, qualified where two drives share
one), so a drive that moves to another device name keeps its schedule.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Dict, Optional

log = logging.getLogger("ssdfleet.selftest")

FILE_NAME = "selftest-schedule.json"
VERSION = 1


@dataclass(frozen=True)
class Entry:
    """One drive and test type. ``since``: when the schedule began covering it. ``done``: the
    slot key the test last ran in. ``last_started``: when the scheduler last started it.
    ``result``/``detail``: how the scheduler's last test of it ended (from the drive's log).
    ``completed``: when the newest test of the type that ran to its end completed, as far as
    the scheduler knows. ``skipped``/``skipped_at``: the last reason a due test was not
    started, and when."""

    since: float
    done: Optional[str] = None
    last_started: Optional[float] = None
    result: Optional[str] = None
    detail: Optional[str] = None
    completed: Optional[float] = None
    skipped: Optional[str] = None
    skipped_at: Optional[float] = None


@dataclass(frozen=True)
class Running:
    """The test the scheduler started and has not yet seen end (at most one per host).
    ``before``: the drive's log before it started, as (kind, result, status, hours) rows."""

    identity: str
    test: str
    device: str
    device_type: Optional[str]
    kind: str
    started: float
    slot: str
    before: tuple = ()
    remaining_percent: Optional[int] = None


@dataclass
class State:
    entries: Dict[str, Entry] = field(default_factory=dict)
    running: Optional[Running] = None

    def entry(self, identity: str, test: str, now: float) -> Entry:
        key = f"{identity}|{test}"
        if key not in self.entries:
            self.entries[key] = Entry(since=now)
        return self.entries[key]

    def update(self, identity: str, test: str, **changes: Any) -> Entry:
        key = f"{identity}|{test}"
        self.entries[key] = replace(self.entries[key], **changes)
        return self.entries[key]


def to_json(state: State) -> str:
    return json.dumps({"version": VERSION, "entries": {k: asdict(v) for k, v in sorted(state.entries.items())},
                       "running": asdict(state.running) if state.running else None}, indent=1)


def from_json(text: str) -> State:
    """The state in ``text``; ValueError (with the reason) for anything else."""
    doc = json.loads(text)
    if not isinstance(doc, dict) or doc.get("version") != VERSION:
        raise ValueError(f"not a version {VERSION} schedule")
    entries = doc.get("entries")
    if not isinstance(entries, dict):
        raise ValueError("no entries object")
    try:
        out = State({str(k): Entry(**v) for k, v in entries.items()})
        running = doc.get("running")
        if running is not None:
            running = dict(running, before=tuple(tuple(row) for row in running.get("before", ())))
            out.running = Running(**running)
    except TypeError as exc:
        raise ValueError(f"an entry does not fit: {exc}") from None
    for key, entry in out.entries.items():
        if "|" not in key or not isinstance(entry.since, (int, float)):
            raise ValueError(f"entry {key!r} does not fit")
    return out


class StateFile:
    """The schedule on disk, or in memory only when ``directory`` is None."""

    def __init__(self, directory: Optional[str]) -> None:
        self.path = os.path.join(directory, FILE_NAME) if directory else None
        self.error: Optional[str] = None  # the last failure to write, until a write works

    def load(self) -> State:
        if self.path is None:
            log.warning("selftest: no state directory; the schedule is not kept across restarts")
            return State()
        try:
            with open(self.path, encoding="utf-8") as handle:
                return from_json(handle.read())
        except FileNotFoundError:
            return State()
        except (OSError, ValueError) as exc:
            log.error("selftest: %s cannot be read (%s); set aside as .corrupt, the schedule starts afresh",
                      self.path, exc)
            try:
                os.replace(self.path, self.path + ".corrupt")
            except OSError:
                pass
            return State()

    def save(self, state: State) -> bool:
        """Write ``state``; False (logged once per distinct error) when it could not be."""
        if self.path is None:
            return True
        tmp = f"{self.path}.{os.getpid()}.tmp"
        try:
            with open(tmp, "w", encoding="utf-8") as handle:
                handle.write(to_json(state))
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, self.path)
            directory = os.open(os.path.dirname(self.path), os.O_RDONLY)
            try:
                os.fsync(directory)
            finally:
                os.close(directory)
        except OSError as exc:
            message = f"{self.path}: {exc.strerror or exc}"
            if message != self.error:
                log.error("selftest: cannot keep the schedule (%s); it is kept in memory", message)
            self.error = message
            try:
                os.unlink(tmp)
            except OSError:
                pass
            return False
        self.error = None
        return True
