"""The history file on disk: still the file we opened? and one agent per state directory.

* :class:`FileWatch` remembers the device and inode of the database and of its ``-wal`` as
  History opened them. A file deleted while the agent runs (``rm``, a clean-up script, a
  restore that moved another file into place) is still open, so SQLite writes on into an
  unlinked inode that is gone at the next start. History asks :meth:`FileWatch.lost` before
  every write (one ``stat`` of each path: microseconds) and, when the answer is not None,
  starts a new file at the path and copies everything into it (see agent/history.py).
* :class:`StateLock` is an ``flock`` on ``<state dir>/ssdfleet.lock``, held for the life of
  the agent: a second agent on the same state directory refuses to start (it would write the
  same history from a second process and each would thin out the other's samples). The
  kernel drops the lock when the process ends, however it ends, so a ``kill -9`` leaves
  nothing to clean up. The file holds the holder's pid for the error message.
* :func:`sync_directory` makes a new or renamed file's directory entry durable.
"""

from __future__ import annotations

import errno
import fcntl
import logging
import os
from typing import Optional, Tuple

log = logging.getLogger("ssdfleet.history")

LOCK_NAME = "ssdfleet.lock"

# How History lost its file (``reason`` of ssd_history_file_lost_total).
DELETED = "deleted"
REPLACED = "replaced"
WAL_DELETED = "wal_deleted"
LOST_REASONS = (DELETED, REPLACED, WAL_DELETED)


def identity(path: str) -> Optional[Tuple[int, int]]:
    """(device, inode) of the file at ``path``, None when there is none."""
    try:
        st = os.stat(path)
    except OSError:
        return None  # none there, or an unreadable directory (the next write tells)
    return st.st_dev, st.st_ino


class FileWatch:
    """Whether the database (and its ``-wal``) at ``path`` is still the one opened."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.main = identity(path)
        self.wal = identity(path + "-wal")

    def note_written(self) -> None:
        """After a write: SQLite creates the ``-wal`` at the first write of a connection."""
        if self.wal is None:
            self.wal = identity(self.path + "-wal")

    def lost(self) -> Optional[str]:
        """None while the files are the ones opened; else how they were lost."""
        if self.main is None:
            return None
        try:
            st = os.stat(self.path)
        except (FileNotFoundError, NotADirectoryError):
            return DELETED  # the file, or its directory, is gone
        except OSError:
            return None
        if (st.st_dev, st.st_ino) != self.main:
            return REPLACED
        # SQLite removes the -wal only when its last connection closes, and ours is open:
        # a -wal that vanished or changed was removed by someone else.
        if self.wal is not None and identity(self.path + "-wal") != self.wal:
            return WAL_DELETED
        return None

    def remove_stale_wal(self) -> bool:
        """After our connection closed: remove the ``-wal`` at the path if it is still ours.
        SQLite neither checkpoints nor removes the log of a database file that was moved or
        deleted while open, and whoever opens the path next would replay our log onto the file
        now there (SQLite ignores a log only next to an empty database). The rows it held were
        read through our connection before it closed. Returns whether one was removed."""
        if self.wal is None or identity(self.path + "-wal") != self.wal:
            return False
        try:
            os.remove(self.path + "-wal")
        except OSError:
            return False
        return True


class StateDirectoryInUse(ValueError):
    """Another agent holds the state directory. A start-up refusal like a bad setting:
    ``ssdfleet agent`` prints it on one line and exits 64."""


class StateLock:
    """An exclusive ``flock`` on ``<directory>/ssdfleet.lock`` (see the module docstring)."""

    def __init__(self, directory: str) -> None:
        self.path = os.path.join(directory, LOCK_NAME)
        self._fd: Optional[int] = None

    def acquire(self) -> bool:
        """Take the lock. Raises StateDirectoryInUse when another process holds it; returns
        False (and logs) when no lock can be taken at all (a read-only directory, a file
        system without flock): history then finds out for itself whether it can write."""
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o640)
        except OSError:
            try:
                fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)  # flock works read-only too
            except OSError as exc:
                log.warning("history: cannot open the lock file %s (%s); not guarding the state "
                            "directory against a second agent", self.path, exc)
                return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            holder = _holder(fd)
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise StateDirectoryInUse(
                    f"state directory {os.path.dirname(self.path)} is in use by another ssdfleet agent"
                    f"{f' (pid {holder})' if holder else ''}: it holds {self.path}; stop that agent or "
                    "give this one its own --state-dir") from None
            log.warning("history: cannot lock %s (%s); not guarding the state directory against a "
                        "second agent", self.path, exc)
            return False
        try:
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
        except OSError:
            pass  # opened read-only: the lock holds all the same
        self._fd = fd
        return True

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        """Drop the lock. The file stays: deleting it would let a third agent lock a new file
        while a second still waits on the old one."""
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            fcntl.flock(fd, fcntl.LOCK_UN)
        except OSError:
            pass
        os.close(fd)


def _holder(fd: int) -> str:
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return ""
    return text if text.isdigit() else ""


def sync_directory(path: str) -> None:
    """fsync the directory holding ``path``, so a file just created or renamed there survives
    a power cut (its name is data of the directory, not of the file). Errors are ignored:
    some file systems refuse fsync on a directory and have nothing to sync."""
    directory = os.path.dirname(os.path.abspath(path))
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
