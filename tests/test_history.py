"""History on SQLite: restarts, kill -9, damaged files, failing writes, bounds, rates."""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading

import pytest

from agent.history import (
    BAD_BLOCK_DEFECTS,
    SCHEMA_VERSION,
    History,
    bad_blocks_of,
    counter_rate,
    least_squares_slope,
)
from collectors import shannon, smartctl
from collectors.model import DriveReading
from tests.conftest import ROOT, read_fixture

DAY = 86400.0
HOUR = 3600.0
T0 = 1_700_000_000.0


class Clock:
    def __init__(self, now: float = T0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def drive(host=None, nand=None, life=None, bad=None, poh=None) -> DriveReading:
    return DriveReading(
        kind="ata",
        device="/dev/sda",
        serial="S1",
        host_written_bytes=host,
        nand_written_bytes=nand,
        life_left_ratio=life,
        bad_block_ratio=bad,
        power_on_seconds=poh,
    )


def rows_on_disk(path) -> int:
    conn = sqlite3.connect(str(path))
    try:
        return conn.execute("SELECT COUNT(*) FROM samples").fetchone()[0]
    finally:
        conn.close()


def fill(
    history: History, serial: str, start: float, count: int, step: float = HOUR, rate: float = 1e6
):
    for i in range(count):
        history.record(serial, start + i * step, drive(host=int(i * step * rate), life=0.9))


def child_env():
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


# ---------------------------------------------------------------------------- persistence


def test_restart_keeps_samples_and_write_rate(tmp_path):
    path = str(tmp_path / "history.sqlite")
    clock = Clock(T0 + 3 * DAY)
    h = History(path, clock=clock)
    fill(h, "S1", T0, 72)  # three days, hourly, 1 MB/s
    now = T0 + 71 * HOUR
    rate = h.write_rate("S1", now)
    assert rate == pytest.approx(1e6)
    before = h.samples("S1")
    h.close()

    h2 = History(path, clock=clock)
    assert h2.healthy and h2.moved_aside is None
    assert h2.samples("S1") == before
    assert h2.write_rate("S1", now) == rate
    h2.close()


def test_thinning_keeps_one_sample_per_interval(tmp_path):
    h = History(str(tmp_path / "h.sqlite"), clock=Clock(T0))
    for offset in (0, 60, 300, 599, 600, 601, 1300):
        h.record("S1", T0 + offset, drive(host=offset))
    assert [s.ts - T0 for s in h.samples("S1")] == [0, 600, 1300]
    # a clock that went back does not rewrite history
    h.record("S1", T0 - 5000, drive(host=1))
    assert len(h.samples("S1")) == 3
    h.close()
    fine = History(None, clock=Clock(T0), min_interval_seconds=0)
    for offset in (0, 1, 2):
        fine.record("S1", T0 + offset, drive(host=offset))
    assert len(fine.samples("S1")) == 3


def test_sample_columns_round_trip(tmp_path):
    path = str(tmp_path / "h.sqlite")
    with History(path, clock=Clock(T0)) as h:
        h.record("S1", T0, drive(host=2**62, nand=2**62 + 5, life=0.42, bad=0.010760, poh=76140))
    with History(path, clock=Clock(T0)) as h:
        (s,) = h.samples("S1")
    assert (s.host_written_bytes, s.nand_written_bytes) == (2**62, 2**62 + 5)
    assert (s.life_left_ratio, s.bad_block_ratio, s.power_on_seconds) == (0.42, 0.010760, 76140)


# ---------------------------------------------------------------------------- schema 2: bad blocks

# The version 1 schema exactly as agent/history.py created it before bad_blocks/media_errors.
_V1_DDL = """CREATE TABLE IF NOT EXISTS samples (
        serial TEXT NOT NULL,
        ts REAL NOT NULL,
        life_left_ratio REAL,
        host_written_bytes INTEGER,
        nand_written_bytes INTEGER,
        bad_block_ratio REAL,
        power_on_seconds INTEGER,
        PRIMARY KEY (serial, ts)
    )"""
_V1_ROWS = [
    ("S1", T0, 0.95, 1000, 2000, None, 3600),
    ("S1", T0 + DAY, 0.94, 5000, 9000, None, 90000),
    ("SH", T0, 0.99, 7, None, 0.010760, 32400),
]


def make_v1_file(path) -> None:
    """A history file as version 1 of the agent left it (in WAL mode, as History sets)."""
    conn = sqlite3.connect(str(path))
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute(_V1_DDL)
        conn.execute("CREATE INDEX IF NOT EXISTS samples_ts ON samples (ts)")
        conn.executemany("INSERT INTO samples VALUES (?, ?, ?, ?, ?, ?, ?)", _V1_ROWS)
        conn.execute("PRAGMA user_version=1")
        conn.commit()
    finally:
        conn.close()


def columns_and_version(path):
    conn = sqlite3.connect(str(path))
    try:
        columns = [r[1] for r in conn.execute("PRAGMA table_info(samples)")]
        return columns, conn.execute("PRAGMA user_version").fetchone()[0]
    finally:
        conn.close()


def worn(serial="S1", reallocated=None, media_errors=None, **defects) -> DriveReading:
    if reallocated is not None:
        defects["reallocated"] = reallocated
    return DriveReading(kind="ata", device="/dev/sda", serial=serial, defects=defects, media_errors=media_errors)


def test_restart_on_a_version_1_file_keeps_its_rows_and_adds_the_columns(tmp_path, caplog):
    path = tmp_path / "history.sqlite"
    make_v1_file(path)
    assert columns_and_version(path) == (
        ["serial", "ts", "life_left_ratio", "host_written_bytes", "nand_written_bytes", "bad_block_ratio",
         "power_on_seconds"],
        1,
    )  # fmt: skip
    with caplog.at_level(logging.INFO, logger="ssdfleet.history"):
        h = History(str(path), clock=Clock(T0 + 2 * DAY))
    assert h.healthy and h.moved_aside is None
    assert any("upgraded from schema version 1 to 3" in r.getMessage() for r in caplog.records)
    columns, version = columns_and_version(path)
    assert columns[-3:] == ["bad_blocks", "media_errors", "boot"] and version == SCHEMA_VERSION == 3
    # the old rows, unchanged; the new columns were not recorded then
    old = h.samples("S1")
    assert [(s.ts, s.life_left_ratio, s.host_written_bytes, s.power_on_seconds) for s in old] == [
        (T0, 0.95, 1000, 3600),
        (T0 + DAY, 0.94, 5000, 90000),
    ]
    assert [(s.bad_blocks, s.media_errors) for s in old] == [(None, None), (None, None)]
    assert h.samples("SH")[0].bad_block_ratio == 0.010760
    h.record("S1", T0 + 2 * DAY, worn(reallocated=3, media_errors=1))
    h.close()

    # and again: nothing left to upgrade, every row there
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="ssdfleet.history"):
        h = History(str(path), clock=Clock(T0 + 2 * DAY))
    assert not any("upgraded" in r.getMessage() for r in caplog.records)
    assert rows_on_disk(path) == 4
    assert [(s.bad_blocks, s.media_errors) for s in h.samples("S1")] == [(None, None), (None, None), (3, 1)]
    h.close()


def test_a_new_file_is_created_at_version_3(tmp_path):
    path = tmp_path / "history.sqlite"
    History(str(path), clock=Clock(T0)).close()
    columns, version = columns_and_version(path)
    assert version == 3 and columns[-3:] == ["bad_blocks", "media_errors", "boot"]


def test_growing_reallocated_counts_show_their_trend(tmp_path):
    path = str(tmp_path / "history.sqlite")
    h = History(path, clock=Clock(T0 + 40 * DAY))
    counts = [0, 0, 2, 5, 9, 9, 14]  # one sample a week
    for week, count in enumerate(counts):
        h.record("S1", T0 + week * 7 * DAY, worn(reallocated=count, pending=1))
    h.close()
    h = History(path, clock=Clock(T0 + 40 * DAY))  # after a restart
    assert [s.bad_blocks for s in h.samples("S1")] == counts
    now = T0 + 6 * 7 * DAY
    assert h.bad_block_growth("S1", now, window_seconds=60 * DAY) == 14
    assert h.bad_block_growth("S1", now, window_seconds=15 * DAY) == 14 - 9  # weeks 4..6
    assert h.bad_block_growth("S1", now, window_seconds=1 * DAY) is None  # one sample only
    assert h.bad_block_growth("NOPE", now) is None
    h.close()


def test_bad_blocks_absent_is_not_zero():
    assert bad_blocks_of(worn()) is None
    assert bad_blocks_of(worn(pending=8, reallocation_events=3, program_fail=1)) is None
    assert bad_blocks_of(worn(reallocated=0)) == 0
    assert bad_blocks_of(worn(grown_defect=2, dynamic_bad_block=3)) == 5
    assert set(BAD_BLOCK_DEFECTS) == {"reallocated", "grown_defect", "dynamic_bad_block"}


def _smartctl_reading(name):
    return smartctl.parse_smartctl_json(read_fixture("smartctl-json/" + name), device="/dev/x")


@pytest.mark.parametrize(
    "load,bad_blocks,media_errors",
    [
        # ATA: "5 Reallocated_Sector_Ct ... 304"
        (lambda: _smartctl_reading("smartctl_exporter__ST3500418AS_12.json"), 304, None),
        # ATA SSD: Reallocated_Sector_Ct 4; its Program_Fail_Count 1 is not a bad block
        (
            lambda: _smartctl_reading(
                "smartctl_exporter__sat-Intel_S4510_S4610_S4500_S4600_Series_SSDs-INTEL_SSDSC2KB240G7-sdd.json"
            ),
            4,
            None,
        ),
        # SCSI: scsi_grown_defect_list 56, no uncorrected errors
        (lambda: _smartctl_reading("scrutiny__smart-scsi.json"), 56, 0),
        # SCSI: grown defect list 260, 536 uncorrected errors
        (lambda: _smartctl_reading("smartctl_exporter__SEAGATE_ST373453LC_26.json"), 260, 536),
        # NVMe: no bad-block count, media_errors 7
        (lambda: _smartctl_reading("scrutiny__smart-nvme-failed.json"), None, 7),
        # Shannon, newer driver: dynamic_bad_blocks=37 for the first card
        (
            lambda: shannon.parse_status_p(
                read_fixture("shannon/constructed__status-p-a_gen2_two_cards.txt").decode()
            )[0],
            37,
            None,
        ),
        # Shannon, driver 2.6: only bad_block_percentage, no count
        (lambda: shannon.parse_status_p(read_fixture("shannon/seed000__status-p_scta_9h.txt").decode())[0], None, None),
    ],
    ids=["ata", "ata-ssd", "scsi", "scsi-errors", "nvme", "shannon-gen2", "shannon-2.6"],
)
def test_bad_blocks_and_media_errors_of_real_readings_are_stored(tmp_path, load, bad_blocks, media_errors):
    reading = load()
    assert bad_blocks_of(reading) == bad_blocks
    path = str(tmp_path / "history.sqlite")
    with History(path, clock=Clock(T0)) as h:
        h.record("D", T0, reading)
    with History(path, clock=Clock(T0)) as h:
        (sample,) = h.samples("D")
    assert (sample.bad_blocks, sample.media_errors) == (bad_blocks, media_errors)
    assert sample.bad_block_ratio == reading.bad_block_ratio


_KILL_CHILD = r"""
import sys, time
from agent.history import History
from collectors.model import DriveReading
h = History(sys.argv[1], clock=lambda: 1_700_000_000.0 + 100 * 3600)
for i in range(50):
    h.record("S1", 1_700_000_000.0 + i * 3600, DriveReading(kind="ata", device="/dev/sda", host_written_bytes=i))
print("recorded", flush=True)
time.sleep(120)
"""


def test_kill_9_keeps_committed_rows(tmp_path):
    path = str(tmp_path / "h.sqlite")
    child = subprocess.Popen(
        [sys.executable, "-c", _KILL_CHILD, path],
        stdout=subprocess.PIPE,
        env=child_env(),
    )
    try:
        line = child.stdout.readline()
        assert line.strip() == b"recorded"
        # WAL mode: the committed rows sit in the -wal file, not yet checkpointed
        assert os.path.getsize(path + "-wal") > 0
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
        child.stdout.close()
    assert child.returncode == -signal.SIGKILL
    h = History(path, clock=Clock(T0 + 100 * HOUR))
    assert h.healthy
    assert [s.host_written_bytes for s in h.samples("S1")] == list(range(50))
    h.close()


# ---------------------------------------------------------------------------- damaged files


def _good_file(path: str) -> None:
    with History(path, clock=Clock(T0 + 400 * HOUR)) as h:
        for serial in ("A", "B", "C"):
            fill(h, serial, T0, 400)


@pytest.mark.parametrize("damage", ["truncated", "garbage"])
def test_damaged_file_is_moved_aside_its_rows_recovered_and_history_goes_on_in_a_new_file(tmp_path, caplog, damage):
    path = str(tmp_path / "h.sqlite")
    if damage == "truncated":
        _good_file(path)
        data = open(path, "rb").read()
        assert len(data) > 8192
        with open(path, "wb") as f:
            f.write(data[: len(data) // 2])
    else:
        with open(path, "wb") as f:
            f.write(os.urandom(16384))
        with open(path + "-wal", "wb") as f:  # a stale log must not be replayed later
            f.write(os.urandom(4096))
    damaged = open(path, "rb").read()

    clock = Clock(T0 + 500 * HOUR)
    with caplog.at_level(logging.ERROR, logger="ssdfleet.history"):
        h = History(path, clock=clock)
    # recording goes on in a new file at the same path, on disk
    assert h.healthy is True and not h.in_memory
    assert h.moved_aside == f"{path}.corrupt-{int(clock.now)}"
    assert open(h.moved_aside, "rb").read() == damaged  # kept for a post-mortem
    assert os.path.exists(path)
    if damage == "garbage":
        assert os.path.exists(h.moved_aside + "-wal")
        assert h.recovered_rows == 0
    else:
        # the rows in the surviving half of the table are copied into the new file
        assert 0 < h.recovered_rows < 1200
    assert any("moved it to" in r.getMessage() for r in caplog.records)
    assert h.errors_total >= 1
    recovered = h.recovered_rows

    fill(h, "A", clock.now - 10 * HOUR, 5)
    assert len([s for s in h.samples("A") if s.ts >= clock.now - 10 * HOUR]) == 5
    assert h.write_rate("A", clock.now) == pytest.approx(1e6)
    h.close()
    assert rows_on_disk(path) == recovered + 5


def test_locked_file_at_open_is_left_alone(tmp_path):
    path = str(tmp_path / "h.sqlite")
    _good_file(path)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("PRAGMA locking_mode=EXCLUSIVE")
    holder.execute("BEGIN EXCLUSIVE")
    try:
        h = History(path, clock=Clock(T0), busy_timeout_seconds=0.05)
        assert h.healthy is False and h.in_memory
        assert h.moved_aside is None
        assert os.path.exists(path)
        h.record("A", T0, drive(host=1))
        h.close()
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert rows_on_disk(path) == 1200


def test_state_directory_that_is_a_file(tmp_path):
    blocker = tmp_path / "state"
    blocker.write_text("not a directory")
    h = History(str(blocker / "history.sqlite"), clock=Clock(T0))
    assert h.healthy is False and h.in_memory and h.moved_aside is None
    assert h.errors_total == 1
    h.record("S1", T0, drive(host=5))
    assert [s.host_written_bytes for s in h.samples("S1")] == [5]
    assert blocker.read_text() == "not a directory"


# ---------------------------------------------------------------------------- failing writes


def test_write_while_locked_keeps_samples_and_flushes_later(tmp_path, caplog):
    path = str(tmp_path / "h.sqlite")
    clock = Clock(T0)
    h = History(path, clock=clock, busy_timeout_seconds=0.05)
    h.record("S1", T0, drive(host=0))
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    with caplog.at_level(logging.ERROR, logger="ssdfleet.history"):
        h.record("S1", T0 + HOUR, drive(host=3600 * 10))
        h.record("S1", T0 + 2 * HOUR, drive(host=7200 * 10))
    assert h.errors_total == 2
    assert h.healthy is False
    assert h.pending_count == 2
    assert len([r for r in caplog.records if "failed" in r.getMessage()]) == 1  # once per error
    assert h.write_rate("S1", T0 + 2 * HOUR) == pytest.approx(10.0)  # reads see pending rows
    holder.execute("ROLLBACK")
    holder.close()

    h.record("S1", T0 + 3 * HOUR, drive(host=10800 * 10))
    assert h.healthy is True and h.pending_count == 0
    h.close()
    assert rows_on_disk(path) == 4


_FULL_CHILD = r"""
import json, os, resource, signal, sys
from agent.history import History
from collectors.model import DriveReading
path = sys.argv[1]
h = History(path, clock=lambda: 1_700_000_000.0 + 400 * 3600, max_rows_per_drive=100000)
h.record("S0", 1_700_000_000.0, DriveReading(kind="ata", device="/dev/sda", host_written_bytes=0))
# from here on no file may grow: what a full disk looks like to SQLite
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
limit = max(os.path.getsize(p) for p in (path, path + "-wal") if os.path.exists(p))
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))
raised = None
try:
    for i in range(1, 400):
        for serial in ("S0", "S1", "S2"):
            h.record(serial, 1_700_000_000.0 + i * 3600,
                     DriveReading(kind="ata", device="/dev/sda", host_written_bytes=i * 3600 * 1000))
except Exception as exc:
    raised = repr(exc)
print(json.dumps({
    "raised": raised,
    "errors_total": h.errors_total,
    "healthy": h.healthy,
    "last_error": h.last_error,
    "samples": len(h.samples("S1")),
    "rate": h.write_rate("S1", 1_700_000_000.0 + 399 * 3600),
}), flush=True)
"""


def test_disk_full_does_not_raise_and_keeps_samples_in_memory(tmp_path):
    """RLIMIT_FSIZE makes every write that grows a file fail with EFBIG, as a full disk
    does, even for root and without mounting anything."""
    path = str(tmp_path / "h.sqlite")
    out = subprocess.run(
        [sys.executable, "-c", _FULL_CHILD, path],
        capture_output=True,
        env=child_env(),
        timeout=600,  # 28 s at load average 11 on 2 cores, 47 s at 15: 120 s was too near
    )
    assert out.returncode == 0, out.stderr.decode()
    result = json.loads(out.stdout.decode().strip().splitlines()[-1])
    assert result["raised"] is None
    assert result["errors_total"] > 0 and result["healthy"] is False, result
    assert result["samples"] == 399
    assert result["rate"] == pytest.approx(1000.0)


_READ_ONLY_DIRECTORY_CHILD = r"""
import errno, json, os, sys
from agent.history import History  # imported before the switch: nobody may not read our Python
from collectors.model import DriveReading
if os.geteuid() == 0:
    os.setgroups([]); os.setgid(65534); os.setuid(65534)
state = sys.argv[1]
try:  # the directory is reachable but not writable, or this test proves nothing
    os.close(os.open(os.path.join(state, "probe"), os.O_WRONLY | os.O_CREAT, 0o600))
    denied = None
except OSError as exc:
    denied = errno.errorcode.get(exc.errno)
h = History(os.path.join(state, "history.sqlite"), clock=lambda: 1_700_000_000.0)
h.record("S1", 1_700_000_000.0, DriveReading(kind="ata", device="/dev/sda", serial="S1", host_written_bytes=1))
print(json.dumps({"euid": os.geteuid(), "reachable": os.access(state, os.X_OK), "denied": denied,
                  "healthy": h.healthy, "in_memory": h.in_memory, "samples": len(h.samples("S1"))}))
"""


def test_read_only_directory():
    """A state directory the agent may not write: history is kept in memory and says so.

    Root ignores directory permissions, so as root (CI) the code under test runs in a child
    that drops to nobody (65534) after importing; the directory is made under a fresh 0711
    temporary directory, because pytest's own base directory is 0700 and nobody could not
    even reach it (which would fail for another reason than the one tested)."""
    base = tempfile.mkdtemp(prefix="ssdfleet-ro-")
    try:
        os.chmod(base, 0o711)
        state = os.path.join(base, "state")
        os.mkdir(state, 0o555)
        os.chmod(state, 0o555)  # whatever the umask
        out = subprocess.run([sys.executable, "-c", _READ_ONLY_DIRECTORY_CHILD, state], capture_output=True,
                             env=child_env(), timeout=60, cwd="/")
        assert out.returncode == 0, out.stderr.decode()
        result = json.loads(out.stdout.decode().strip().splitlines()[-1])
        print(result)
        assert result["euid"] != 0 and result["reachable"], result
        assert result["denied"] == "EACCES", result
        assert result == dict(result, healthy=False, in_memory=True, samples=1), result
        assert sorted(os.listdir(state)) == []
    finally:
        shutil.rmtree(base)  # an empty 0555 directory goes with its parent


def _mount_tmpfs(target, size: str) -> bool:
    if os.geteuid() != 0:
        return False
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(target)], capture_output=True
    )
    return done.returncode == 0


def test_tiny_tmpfs_full_then_read_only(tmp_path, caplog):
    """A real full file system and a real read-only remount, where we may mount (root with
    CAP_SYS_ADMIN); the RLIMIT_FSIZE test above covers the rest."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    if not _mount_tmpfs(mnt, "256k"):
        pytest.skip("cannot mount a tmpfs here")
    try:
        path = str(mnt / "history.sqlite")
        clock = Clock(T0 + 2000 * HOUR)
        h = History(path, clock=clock, max_rows_per_drive=100000)
        h.record("S1", T0, drive(host=0))
        with open(mnt / "filler", "wb", buffering=0) as f:
            try:
                while True:
                    f.write(b"\0" * 4096)
            except OSError:
                pass
        for i in range(1, 1500):
            h.record("S1", T0 + i * HOUR, drive(host=i * 3600 * 7))
        assert h.errors_total > 0 and h.healthy is False
        assert "full" in (h.last_error or "").lower() or "disk" in (h.last_error or "").lower()
        assert len(h.samples("S1")) == 1500
        assert h.write_rate("S1", T0 + 1499 * HOUR, window_seconds=10 * DAY) == pytest.approx(7.0)

        h.close()  # the final flush fails too, quietly
        os.remove(mnt / "filler")

        # the same directory seen through a read-only bind mount
        ro = tmp_path / "ro"
        ro.mkdir()
        subprocess.run(["mount", "--bind", str(mnt), str(ro)], check=True)
        try:
            subprocess.run(["mount", "-o", "remount,bind,ro", str(ro)], check=True)
            with caplog.at_level(logging.ERROR, logger="ssdfleet.history"):
                h = History(str(ro / "history.sqlite"), clock=clock)
            # readable but not writable: keep reading the old samples, new ones wait in memory
            assert h.healthy is False and h.moved_aside is None
            assert any("cannot be written" in r.getMessage() for r in caplog.records)
            old = len(h.samples("S1"))
            assert old >= 1
            errors = h.errors_total
            h.record("S1", T0 + 1500 * HOUR, drive(host=1500 * 3600 * 7))
            assert h.errors_total == errors + 1
            assert len(h.samples("S1")) == old + 1
            h.close()
        finally:
            subprocess.run(["umount", "-l", str(ro)], capture_output=True)
        assert rows_on_disk(path) >= 1  # the file itself is untouched
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def test_version_1_file_on_a_read_only_mount_is_read_as_it_is(tmp_path, caplog):
    rw = tmp_path / "rw"
    rw.mkdir()
    make_v1_file(rw / "history.sqlite")
    ro = tmp_path / "ro"
    ro.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "--bind", str(rw), str(ro)], capture_output=True).returncode:
        pytest.skip("cannot bind-mount here")
    # A WAL database opens read-only only next to its -shm file: a reader on the writable side
    # keeps it there (an agent that lost write access mid-life is in the same place).
    keeper = sqlite3.connect(str(rw / "history.sqlite"))
    keeper.execute("SELECT COUNT(*) FROM samples").fetchone()
    try:
        subprocess.run(["mount", "-o", "remount,bind,ro", str(ro)], check=True)
        with caplog.at_level(logging.ERROR, logger="ssdfleet.history"):
            h = History(str(ro / "history.sqlite"), clock=Clock(T0 + 2 * DAY))
        assert h.healthy is False and h.moved_aside is None  # not damaged: left where it is
        assert [(s.host_written_bytes, s.bad_blocks) for s in h.samples("S1")] == [(1000, None), (5000, None)]
        h.record("S1", T0 + 2 * DAY, worn(reallocated=6))
        assert [s.bad_blocks for s in h.samples("S1")] == [None, None, 6]  # the new one waits in memory
        assert h.pending_count == 1
        h.close()
    finally:
        keeper.close()
        subprocess.run(["umount", "-l", str(ro)], capture_output=True)
    assert columns_and_version(rw / "history.sqlite")[1] == 1  # untouched


def make_v2_file(path) -> None:
    """A history file as version 2 of the agent left it: bad_blocks and media_errors, no boot."""
    make_v1_file(path)
    conn = sqlite3.connect(str(path))
    try:
        conn.execute("ALTER TABLE samples ADD COLUMN bad_blocks INTEGER")
        conn.execute("ALTER TABLE samples ADD COLUMN media_errors INTEGER")
        conn.execute("UPDATE samples SET bad_blocks = 4, media_errors = 1 WHERE serial = 'S1'")
        conn.execute("PRAGMA user_version=2")
        conn.commit()
    finally:
        conn.close()


def test_a_version_2_file_gains_the_boot_column_and_clock_tables(tmp_path, caplog):
    path = tmp_path / "history.sqlite"
    make_v2_file(path)
    with caplog.at_level(logging.INFO, logger="ssdfleet.history"):
        # The host's clocks: new samples carry this boot's key. Retention long enough to keep the
        # file's 2023 rows: with the host's clocks it deletes once they have been steady for a
        # day, so on a machine up for more than a day the default 400 days would empty the file.
        h = History(str(path), retention_days=100 * 365)
    assert any("upgraded from schema version 2 to 3 (added: boot)" in r.getMessage() for r in caplog.records)
    h.record("S1", T0 + 2 * DAY, worn(reallocated=5))
    h.close()
    columns, version = columns_and_version(path)
    assert columns[-1] == "boot" and version == 3
    conn = sqlite3.connect(str(path))
    try:
        boots = conn.execute("SELECT boot FROM samples WHERE serial = 'S1' ORDER BY ts").fetchall()
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    finally:
        conn.close()
    assert boots[:2] == [(None,), (None,)] and boots[2][0] is not None  # old rows: boot unknown
    assert {"clock", "samples_displaced"} <= tables


def test_version_2_file_on_a_read_only_mount_keeps_its_bad_blocks(tmp_path):
    rw = tmp_path / "rw"
    rw.mkdir()
    make_v2_file(rw / "history.sqlite")
    ro = tmp_path / "ro"
    ro.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "--bind", str(rw), str(ro)], capture_output=True).returncode:
        pytest.skip("cannot bind-mount here")
    keeper = sqlite3.connect(str(rw / "history.sqlite"))
    keeper.execute("SELECT COUNT(*) FROM samples").fetchone()
    try:
        subprocess.run(["mount", "-o", "remount,bind,ro", str(ro)], check=True)
        h = History(str(ro / "history.sqlite"), clock=Clock(T0 + 2 * DAY))
        # read as it is: the columns it has, NULL only for the one it lacks
        assert [(s.bad_blocks, s.media_errors) for s in h.samples("S1")] == [(4, 1), (4, 1)]
        h.close()
    finally:
        keeper.close()
        subprocess.run(["umount", "-l", str(ro)], capture_output=True)
    assert columns_and_version(rw / "history.sqlite")[1] == 2  # untouched


def test_upgrade_on_a_full_disk_waits_for_the_first_write_that_succeeds(tmp_path):
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    if not _mount_tmpfs(mnt, "256k"):
        pytest.skip("cannot mount a tmpfs here")
    path = mnt / "history.sqlite"
    keeper = None
    try:
        make_v1_file(path)
        # A reader keeps the -wal and -shm files in place, as a running agent would: what is
        # left to fail on the full disk is the upgrade's own commit.
        keeper = sqlite3.connect(str(path))
        keeper.execute("SELECT COUNT(*) FROM samples").fetchone()
        with open(mnt / "filler", "wb", buffering=0) as f:
            try:
                while True:
                    f.write(b"\0" * 4096)
            except OSError:
                pass
        h = History(str(path), clock=Clock(T0 + 3 * DAY))
        assert h.healthy is False and h.moved_aside is None
        assert "full" in (h.last_error or "").lower()
        assert [s.host_written_bytes for s in h.samples("S1")] == [1000, 5000]
        h.record("S1", T0 + 2 * DAY, worn(reallocated=1))
        assert h.pending_count == 1 and h.healthy is False
        os.remove(mnt / "filler")
        h.record("S1", T0 + 3 * DAY, worn(reallocated=4))
        assert h.pending_count == 0 and h.healthy is True
        assert [s.bad_blocks for s in h.samples("S1")] == [None, None, 1, 4]
        h.close()
        keeper.close()
        keeper = None
        columns, version = columns_and_version(path)
        assert version == 3 and "bad_blocks" in columns and "boot" in columns
        assert rows_on_disk(path) == 5
    finally:
        if keeper is not None:
            keeper.close()
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


# ---------------------------------------------------------------------------- bounds


def test_retention_drops_old_rows_including_vanished_drives(tmp_path):
    path = str(tmp_path / "h.sqlite")
    clock = Clock(T0)
    h = History(path, retention_days=5, clock=clock)
    h.record("GONE", T0, drive(host=1))
    for day in range(11):
        clock.now = T0 + day * DAY
        h.record("S1", clock.now, drive(host=day))
    days_kept = sorted(int((s.ts - T0) / DAY) for s in h.samples("S1"))
    assert days_kept == [5, 6, 7, 8, 9, 10]
    assert h.serials() == ["S1"]
    h.close()
    assert rows_on_disk(path) == 6


def test_row_cap_keeps_the_newest_rows(tmp_path):
    path = str(tmp_path / "h.sqlite")
    h = History(path, max_rows_per_drive=50, clock=Clock(T0 + 300 * HOUR))
    fill(h, "S1", T0, 200)
    fill(h, "S2", T0, 20)
    samples = h.samples("S1")
    assert len(samples) == 50
    assert samples[0].ts == T0 + 150 * HOUR and samples[-1].ts == T0 + 199 * HOUR
    assert len(h.samples("S2")) == 20
    h.close()
    assert rows_on_disk(path) == 70


def test_pending_buffer_is_bounded_while_writes_fail(tmp_path):
    path = str(tmp_path / "h.sqlite")
    h = History(path, max_rows_per_drive=30, clock=Clock(T0 + 300 * HOUR), busy_timeout_seconds=0.0)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        fill(h, "S1", T0, 100)
        assert h.pending_count == 30
        assert h.samples("S1")[0].ts == T0 + 70 * HOUR
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    h.close()
    assert rows_on_disk(path) == 30


# ---------------------------------------------------------------------------- rates


def test_write_rate_restarts_after_a_counter_reset():
    h = History(None, clock=Clock(T0 + DAY))
    h.record("S1", T0, drive(host=10**12, nand=2 * 10**12))
    h.record("S1", T0 + 2 * HOUR, drive(host=10**12 + 7200 * 100, nand=2 * 10**12 + 7200 * 300))
    # drive replaced under the same identity (or counters cleared): values go down
    h.record("S1", T0 + 3 * HOUR, drive(host=50, nand=80))
    assert h.write_rate("S1", T0 + 3 * HOUR) is None  # a single point after the reset
    h.record("S1", T0 + 3.5 * HOUR, drive(host=50 + 1800 * 200, nand=80 + 1800 * 500))
    assert h.write_rate("S1", T0 + 3.5 * HOUR) is None  # 30 minutes: under the 1 h minimum
    h.record("S1", T0 + 5 * HOUR, drive(host=50 + 7200 * 200, nand=80 + 7200 * 500))
    assert h.write_rate("S1", T0 + 5 * HOUR) == pytest.approx(200.0)
    assert h.nand_write_rate("S1", T0 + 5 * HOUR) == pytest.approx(500.0)
    # asked about a moment before the reset, the old run answers
    assert h.write_rate("S1", T0 + 2 * HOUR) == pytest.approx(100.0)


def test_write_rate_uses_the_window_and_skips_missing_values():
    h = History(None, clock=Clock(T0 + 30 * DAY))
    h.record("S1", T0, drive(host=0))
    h.record("S1", T0 + 10 * DAY, drive(host=None))  # source did not report it
    h.record("S1", T0 + 20 * DAY, drive(host=20 * DAY * 5))
    h.record("S1", T0 + 27 * DAY, drive(host=20 * DAY * 5 + 7 * DAY * 2))
    assert h.write_rate("S1", T0 + 27 * DAY) == pytest.approx(2.0)  # 7-day window
    assert h.write_rate("S1", T0 + 27 * DAY, window_seconds=30 * DAY) == pytest.approx(
        (20 * 5 + 7 * 2) / 27
    )
    assert h.write_rate("NOPE", T0) is None
    assert h.nand_write_rate("S1", T0 + 27 * DAY) is None


def test_life_slope_least_squares():
    h = History(None, clock=Clock(T0 + 40 * DAY))
    for day in range(31):
        h.record("S1", T0 + day * DAY, drive(life=0.80 - 0.001 * day))
    assert h.life_slope("S1", T0 + 30 * DAY) == pytest.approx(-0.001 / DAY)
    assert least_squares_slope([(T0, 0.5)]) is None
    assert least_squares_slope([(T0, 0.5), (T0 + 60, 0.4)]) is None  # under an hour
    # noisy steps: slope of the best line, not of the end points
    assert least_squares_slope([(0, 1.0), (3600, 0.0), (7200, 1.0)]) == pytest.approx(0.0)


def test_counter_rate_pure():
    assert counter_rate([]) is None
    assert counter_rate([(0, 0), (7200, 7200)]) == 1.0
    assert counter_rate([(0, 5), (7200, 5)]) == 0.0  # idle is a rate, not "unknown"
    assert counter_rate([(0, 100), (3600, 50), (7200, 3650)]) == 1.0


# ---------------------------------------------------------------------------- misc


def test_poller_writes_while_http_reads(tmp_path):
    h = History(str(tmp_path / "h.sqlite"), clock=Clock(T0 + 3000 * HOUR), max_rows_per_drive=5000)
    failures = []
    stop = threading.Event()

    def reader():
        while not stop.is_set():
            try:
                h.samples("S1")
                h.write_rate("S1", T0 + 3000 * HOUR)
                h.life_slope("S1", T0 + 3000 * HOUR)
            except Exception as exc:  # noqa: BLE001 - the test reports any failure
                failures.append(exc)

    readers = [threading.Thread(target=reader) for _ in range(3)]
    for t in readers:
        t.start()
    try:
        fill(h, "S1", T0, 1000)
    finally:
        stop.set()
        for t in readers:
            t.join()
    assert failures == []
    assert len(h.samples("S1")) == 1000
    assert h.errors_total == 0
    h.close()
    h.close()  # idempotent
    h.record("S1", T0 + 5000 * HOUR, drive(host=1))  # after close: ignored, no raise


# -- any integer a tool prints is stored (issue 13, item 1) ------------------------------

HUGE = (2**63, 2**64 - 1, 10**29, -(2**63) - 1, 2**63 - 1, -(2**63))


@pytest.mark.parametrize("value", HUGE)
def test_any_integer_is_stored_losslessly_and_survives_a_restart(tmp_path, value):
    path = tmp_path / "h.sqlite"
    clock = Clock()
    with History(str(path), clock=clock) as h:
        h.record("S1", T0, drive(host=value, nand=value, poh=value))
        assert h.healthy and h.pending_count == 0 and h.dropped_total == {}
    with History(str(path), clock=clock) as h:
        (s,) = h.samples("S1")
        assert (s.host_written_bytes, s.nand_written_bytes, s.power_on_seconds) == (value, value, value)
        assert type(s.host_written_bytes) is int
    assert rows_on_disk(path) == 1


def test_nan_is_not_reported_and_infinity_is_kept(tmp_path):
    with History(str(tmp_path / "h.sqlite"), clock=Clock()) as h:
        h.record("S1", T0, drive(life=float("nan"), bad=float("inf")))
        (s,) = h.samples("S1")
        assert s.life_left_ratio is None and s.bad_block_ratio == float("inf")


def test_a_row_sqlite_refuses_costs_that_row_only(tmp_path, caplog):
    """A value of a type SQLite cannot bind (a parser bug) is dropped with a counted reason and
    one log line; the same flush writes every other drive's sample, and nothing stays queued
    to fail the next flush."""
    path = tmp_path / "h.sqlite"
    clock = Clock()
    h = History(str(path), clock=clock)
    bad = drive(host=1000).replace(serial="BAD", host_written_bytes=complex(1, 2))
    with caplog.at_level(logging.ERROR, logger="ssdfleet.history"):
        for i in range(3):
            now = T0 + i * HOUR
            h.record("GOOD1", now, drive(host=1000 + i))
            h.record("BAD", now, bad)
            h.record("GOOD2", now, drive(host=2**64 + i))
            assert h.pending_count == 0
    assert h.dropped_total == {"unsupported_type": 3}
    assert h.errors_total == 3
    assert h.healthy  # the storage is fine; the poller fails the run that dropped (below)
    h.close()
    assert rows_on_disk(path) == 6
    drops = [r for r in caplog.records if "dropped the sample of BAD" in r.getMessage()]
    assert len(drops) == 1, "logged once per reason, not once per cycle"
    assert not any(r.exc_info for r in caplog.records)


def test_poller_stores_an_all_ones_nvme_counter_and_stays_healthy(tmp_path):
    """The issue's case end to end: an NVMe data_units_written of all ones from the real
    capture. Every drive keeps its history; ssd_history_healthy and the smartctl collector are
    1; the counter reads back exactly."""
    from agent.metrics import make_registry
    from agent.poller import Poller
    from tests.fakehost import build_default_host

    host = build_default_host(tmp_path)
    doc = json.loads(read_fixture("fakehost/scrutiny__smart-nvme.json"))
    doc["nvme_smart_health_information_log"]["data_units_written"] = 2**64 - 1
    host.set_response("smartctl", "nvme0", json.dumps(doc))
    config = host.config(history=True, state_dir=str(tmp_path / "state"))
    poller = Poller(config)
    try:
        for _ in range(2):
            poller.poll_once()
        registry = make_registry(poller.snapshot)
        assert registry.get_sample_value("ssd_history_healthy") == 1
        assert registry.get_sample_value("ssd_collector_success", {"collector": "smartctl"}) == 1
        assert registry.get_sample_value("ssd_history_samples_dropped_total", {"reason": "out_of_range"}) == 0
        serials = poller.history.serials()
        assert len(serials) == 4
        # The normaliser withholds a counter no drive can reach (evidence.contain) before it
        # gets here: the drive's history goes on without it, the reason is on the reading.
        drive = next(d for d in poller.snapshot().drives if d.reading.kind == "nvme"
                     and "host_written_bytes_withheld" in d.reading.extra)
        assert drive.reading.host_written_bytes is None
        assert poller.history.samples(drive.serial)[0].host_written_bytes is None
    finally:
        poller.stop()


def test_collect_with_an_all_ones_counter_prints_the_table(tmp_path):
    from tests.fakehost import build_default_host

    host = build_default_host(tmp_path)
    doc = json.loads(read_fixture("fakehost/scrutiny__smart-nvme.json"))
    doc["nvme_smart_health_information_log"]["data_units_written"] = 2**64 - 1
    host.set_response("smartctl", "nvme0", json.dumps(doc))
    r = subprocess.run([sys.executable, "-m", "agent", "collect"] + host.config_args(),
                       capture_output=True, text=True, cwd=str(ROOT), timeout=60)
    assert r.returncode == 0, r.stderr
    assert "nvme0" in r.stdout and "Traceback" not in r.stderr


# -- recover what can be read, keep recording to a file (issue 13, item 6) -----------------


def test_one_damaged_index_page_costs_no_rows(tmp_path, caplog):
    """90,000 rows, and the root page of the time index overwritten: the file is moved aside,
    every row is read from the table (which is intact) into a new file, and recording goes
    on there."""
    path = str(tmp_path / "h.sqlite")
    History(path).close()
    conn = sqlite3.connect(path)
    with conn:
        for n in range(5):
            conn.executemany("INSERT INTO samples (serial, ts, host_written_bytes) VALUES (?, ?, ?)",
                             [(f"D{n}", T0 + i * 600.0, i * 1000) for i in range(18_000)])
    root = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'samples_ts'").fetchone()[0]
    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    with open(path, "r+b") as f:
        f.seek((root - 1) * page_size)
        f.write(os.urandom(page_size))
    clock = Clock(T0 + 18_000 * 600.0)
    with caplog.at_level(logging.ERROR, logger="ssdfleet.history"):
        h = History(path, clock=clock)
    assert h.moved_aside and os.path.exists(h.moved_aside)
    assert h.recovered_rows == 90_000
    assert h.healthy and not h.in_memory
    h.record("D0", clock.now + 600, drive(host=10**9))
    h.close()
    assert rows_on_disk(path) == 90_001
    assert sum("recovered 90000 of its rows" in r.getMessage() for r in caplog.records) == 1


def test_a_fifo_as_the_history_file_does_not_hang_the_start(tmp_path, caplog):
    path = tmp_path / "history.sqlite"
    os.mkfifo(path)
    with caplog.at_level(logging.ERROR, logger="ssdfleet.history"):
        h = History(str(path), clock=Clock(T0))
    assert h.in_memory and not h.healthy
    h.record("S1", T0, drive(host=1))
    assert len(h.samples("S1")) == 1
    h.close()
    assert any("not a regular file" in r.getMessage() for r in caplog.records)


_FULL_AT_START_CHILD = r"""
import json, os, resource, signal, sys
from agent.history import History
from collectors.model import DriveReading
path = sys.argv[1]
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
# the disk is full before the agent starts: no file may grow, the -shm cannot be created
resource.setrlimit(resource.RLIMIT_FSIZE, (0, resource.RLIM_INFINITY))
h = History(path, clock=lambda: 1_700_000_000.0 + 1000 * 3600, reopen_interval_seconds=0)
at_start = {"healthy": h.healthy, "old": len(h.samples("OLD"))}
for i in range(3):
    h.record("NEW", 1_700_000_000.0 + (901 + i) * 3600, DriveReading(kind="ata", device="/dev/sda", host_written_bytes=i))
while_full = {"healthy": h.healthy, "pending": h.pending_count, "old": len(h.samples("OLD"))}
resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))  # space again
h.record("NEW", 1_700_000_000.0 + 910 * 3600, DriveReading(kind="ata", device="/dev/sda", host_written_bytes=9))
after = {"healthy": h.healthy, "pending": h.pending_count}
h.close()
print(json.dumps({"at_start": at_start, "while_full": while_full, "after": after}), flush=True)
"""


def test_full_disk_at_start_keeps_the_old_rows_and_writes_once_there_is_space(tmp_path):
    path = str(tmp_path / "h.sqlite")
    with History(path, clock=Clock(T0 + 900 * HOUR)) as h:
        fill(h, "OLD", T0, 900)
    os.remove(path + "-shm") if os.path.exists(path + "-shm") else None
    out = subprocess.run([sys.executable, "-c", _FULL_AT_START_CHILD, path], capture_output=True,
                         env=child_env(), timeout=120)
    assert out.returncode == 0, out.stderr.decode()
    result = json.loads(out.stdout.decode().strip().splitlines()[-1])
    assert result["at_start"] == {"healthy": False, "old": 900}, result
    assert result["while_full"] == {"healthy": False, "pending": 3, "old": 900}, result
    assert result["after"] == {"healthy": True, "pending": 0}, result
    assert rows_on_disk(path) == 904


_NOBODY_CHILD = r"""
import json, os, sys
from agent.history import History  # imported first: nobody cannot read root's Python
from collectors.model import DriveReading
os.setgid(65534); os.setuid(65534)
h = History(sys.argv[1], clock=lambda: 1_700_000_000.0)
h.record("S1", 1_700_000_000.0, DriveReading(kind="ata", device="/dev/sda", host_written_bytes=1))
print(json.dumps({"moved_aside": h.moved_aside, "healthy": h.healthy, "samples": len(h.samples("S1"))}))
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to make a file another user cannot read")
def test_a_valid_file_the_agent_cannot_read_is_left_alone(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(tmp_path, 0o755)
    os.chmod(shared, 0o777)
    path = str(shared / "h.sqlite")
    with History(path, clock=Clock(T0 + 10 * HOUR)) as h:
        fill(h, "A", T0, 10)
    os.chmod(path, 0o600)  # root-owned 0600: a valid file the agent's user cannot read
    for extra in ("-wal", "-shm"):
        if os.path.exists(path + extra):
            os.remove(path + extra)
    out = subprocess.run([sys.executable, "-c", _NOBODY_CHILD, path], capture_output=True,
                         env=child_env(), timeout=60, cwd="/")
    if out.returncode != 0 and b"PermissionError" in out.stderr and b"setgid" in out.stderr:
        pytest.skip("cannot switch to nobody here")
    assert out.returncode == 0, out.stderr.decode()
    result = json.loads(out.stdout.decode().strip().splitlines()[-1])
    assert result == {"moved_aside": None, "healthy": False, "samples": 1}, result
    assert os.path.exists(path) and not [p for p in os.listdir(shared) if ".corrupt-" in p]
    assert rows_on_disk(path) == 10
