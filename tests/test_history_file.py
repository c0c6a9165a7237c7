"""The history file under the agent (issue 26, items 5 and 9, and the state directory lock).

Deleted or replaced while open, every commit synced before a sample counts as written (seen
in the system calls, with strace), and one agent per state directory. The same faults with
the real agent process running are in tests/test_faults_history.py.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import sqlite3
import subprocess
import sys

import pytest

from agent.history import History
from agent.history_file import FileWatch, StateDirectoryInUse, StateLock
from collectors.model import DriveReading
from tests.conftest import ROOT

T0 = 1_780_000_000.0


def reading(host: int) -> DriveReading:
    return DriveReading(kind="ata", device="/dev/sda", serial="S1", host_written_bytes=host)


def on_disk(path) -> list:
    conn = sqlite3.connect(str(path))
    try:
        return [r[0] for r in conn.execute("SELECT host_written_bytes FROM samples WHERE serial = 'S1' ORDER BY ts")]
    finally:
        conn.close()


def fill(h: History, start: int, count: int) -> None:
    for i in range(start, start + count):
        h.record("S1", T0 + i * 600, reading(i))


@pytest.mark.parametrize("how", ["deleted", "deleted with its -wal and -shm", "wal_deleted"])
def test_a_deleted_file_is_started_again_with_every_row(tmp_path, caplog, how):
    path = tmp_path / "history.sqlite"
    h = History(str(path), clock=lambda: T0)
    fill(h, 0, 20)
    if how == "wal_deleted":
        os.remove(f"{path}-wal")
    else:
        os.remove(path)
        if "-wal" in how:
            for suffix in ("-wal", "-shm"):
                os.remove(f"{path}{suffix}")
    with caplog.at_level(logging.ERROR, logger="ssdfleet.history"):
        fill(h, 20, 5)
    reason = "wal_deleted" if how == "wal_deleted" else "deleted"
    assert h.file_lost_total == {reason: 1}
    assert h.healthy and h.written_total == 25
    lines = [r.getMessage() for r in caplog.records if "while the agent ran" in r.getMessage()]
    assert len(lines) == 1, lines
    assert on_disk(path) == list(range(25))  # read by another connection: on disk, not in memory
    h.close()
    with History(str(path), clock=lambda: T0) as again:  # and still there at the next start
        assert [s.host_written_bytes for s in again.samples("S1")] == list(range(25))


def test_a_file_moved_into_place_is_merged_with_ours(tmp_path, caplog):
    path = tmp_path / "history.sqlite"
    restored = tmp_path / "restored.sqlite"
    with History(str(restored), clock=lambda: T0) as other:
        other.record("OLD", T0 - 86400, reading(7))
    h = History(str(path), clock=lambda: T0)
    fill(h, 0, 10)
    os.replace(restored, path)  # an operator restores a backup while the agent runs
    with caplog.at_level(logging.ERROR, logger="ssdfleet.history"):
        fill(h, 10, 1)
    assert h.file_lost_total == {"replaced": 1}
    assert any("replaced by another file" in r.getMessage() for r in caplog.records)
    assert on_disk(path) == list(range(11))
    assert [s.host_written_bytes for s in h.samples("OLD")] == [7]
    h.close()


def test_no_directory_to_start_again_in_keeps_everything_in_memory(tmp_path):
    state = tmp_path / "state"
    path = state / "history.sqlite"
    h = History(str(path), clock=lambda: T0, reopen_interval_seconds=0)
    fill(h, 0, 5)
    shutil.rmtree(state)
    state.write_text("a file where the directory was")
    fill(h, 5, 1)
    assert h.file_lost_total == {"deleted": 1}
    assert h.healthy is False and h.in_memory
    assert [s.host_written_bytes for s in h.samples("S1")] == list(range(6))
    os.remove(state)
    fill(h, 6, 1)  # the directory can be made again: everything goes into a new file
    assert h.healthy is True and not h.in_memory
    assert on_disk(path) == list(range(7))
    h.close()


def test_readers_of_the_file_are_not_taken_for_a_replacement(tmp_path):
    """Another connection opening and closing the file (sqlite3 by hand, a backup script)
    leaves our -wal in place: SQLite removes it only with its last connection."""
    path = tmp_path / "history.sqlite"
    with History(str(path), clock=lambda: T0) as h:
        fill(h, 0, 3)
        for _ in range(3):
            assert len(on_disk(path)) >= 3
            fill(h, len(h.samples("S1")), 1)
        assert h.file_lost_total == {}
        assert FileWatch(str(path)).lost() is None


# ---------------------------------------------------------------------------- durability

_SYNC_CHILD = r"""
import sys
from agent.history import History
from collectors.model import DriveReading
h = History(sys.argv[1], clock=lambda: 1_780_000_000.0)
for i in range(20):
    h.record("S1", 1_780_000_000.0 + i * 600, DriveReading(kind="ata", device="/dev/sda", host_written_bytes=i))
    sys.stdout.write(f"written {h.written_total}\n")
    sys.stdout.flush()
h.close()
"""


@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace")
def test_every_sample_is_synced_before_it_counts_as_written(tmp_path):
    """The system calls of a process recording 20 samples, in order: before each "written N"
    line reaches stdout, the -wal that holds sample N was written and then fdatasync'ed."""
    path = tmp_path / "history.sqlite"
    trace = tmp_path / "trace"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    subprocess.run(["strace", "-f", "-y", "-o", str(trace), "-e", "trace=pwrite64,write,fsync,fdatasync",
                    sys.executable, "-c", _SYNC_CHILD, str(path)], check=True, env=env, timeout=120,
                   capture_output=True)
    synced_since_write = True
    written = []
    for line in trace.read_text().splitlines():
        if re.search(r"pwrite64\(\d+<[^>]*history\.sqlite-wal>", line):
            synced_since_write = False
        elif re.search(r"f(data)?sync\(\d+<[^>]*history\.sqlite-wal>", line):
            synced_since_write = True
        m = re.search(r'write\(1<[^>]*>, "written (\d+)\\n"', line)
        if m:
            assert synced_since_write, f"sample {m.group(1)} reported written before its -wal was synced"
            written.append(int(m.group(1)))
    assert written == list(range(1, 21))
    print(f"  20 samples, each reported after an fdatasync of the -wal: "
          f"{trace.read_text().count('history.sqlite-wal>) = 0')} syncs")


# ---------------------------------------------------------------------------- one agent per directory


def test_a_second_holder_of_the_state_directory_is_refused(tmp_path):
    first = StateLock(str(tmp_path))
    assert first.acquire()
    with pytest.raises(StateDirectoryInUse, match=rf"in use by another ssdfleet agent \(pid {os.getpid()}\)"):
        StateLock(str(tmp_path)).acquire()
    first.release()
    second = StateLock(str(tmp_path))
    assert second.acquire()  # free again
    second.release()


def test_the_lock_goes_with_the_process_that_held_it(tmp_path):
    code = ("import sys, time; from agent.history_file import StateLock; StateLock(sys.argv[1]).acquire(); "
            "print('locked', flush=True); time.sleep(60)")
    child = subprocess.Popen([sys.executable, "-c", code, str(tmp_path)], stdout=subprocess.PIPE,
                             env=dict(os.environ, PYTHONPATH=str(ROOT)))
    try:
        assert child.stdout.readline().strip() == b"locked"
        with pytest.raises(StateDirectoryInUse, match=f"pid {child.pid}"):
            StateLock(str(tmp_path)).acquire()
    finally:
        child.kill()  # kill -9: nothing runs to unlock
        child.wait(timeout=10)
        child.stdout.close()
    lock = StateLock(str(tmp_path))
    assert lock.acquire()
    lock.release()


def test_two_pollers_on_one_state_directory(tmp_path):
    from agent.poller import Poller
    from tests.fakehost import build_default_host

    host = build_default_host(tmp_path)
    first = Poller(host.config(history=True, state_dir=str(host.state)))
    try:
        with pytest.raises(StateDirectoryInUse):
            Poller(host.config(history=True, state_dir=str(host.state)))
        # --no-history takes no lock: `ssdfleet collect` and `status --local` run beside the agent
        Poller(host.config(history=False, state_dir=str(host.state))).stop()
    finally:
        first.stop()
    Poller(host.config(history=True, state_dir=str(host.state))).stop()  # released at stop
