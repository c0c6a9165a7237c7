"""End to end: the write cache followed between polls, and history that survives bad state."""

from __future__ import annotations

import glob
import os
import subprocess
import time

import pytest

from tests.conftest import fixture_path
from tests.fakehost import DISKSTATS, AgentProcess, build_default_host
from tests.support.e2e import (
    FAST,
    NVME0_SERIAL,
    SDA_SERIAL,
    SHANNON_SERIAL,
    all_drives_seen,
    scrape,
    value,
    wait_for,
)


@pytest.fixture
def host(tmp_path):
    return build_default_host(tmp_path)


def test_hdparm_flipping_off_shows_on_metrics(host):
    agent = AgentProcess(host, FAST)
    try:
        agent.wait_ready()
        # The first write-cache pass may run before smartctl has said sda is an ATA drive (and
        # so before hdparm is asked): wait for the drive's own answer.
        s = wait_for(lambda: (lambda s: s if value(s, "ssd_write_cache_state", serial=SDA_SERIAL, source="hdparm", state="enabled") == 1 else None)(scrape(agent)))
        assert value(s, "ssd_write_cache_enabled", serial=SDA_SERIAL) == 1
        assert value(s, "ssd_write_cache_mismatch", serial=SDA_SERIAL) == 0
        # Someone runs `hdparm -W0 /dev/sda`: the kernel's sysfs view still says write back.
        host.set_response("hdparm", "sda", fixture_path("fakehost/hdparm-W-sda-off.txt"))
        s = wait_for(lambda: (lambda s: s if value(s, "ssd_write_cache_enabled", serial=SDA_SERIAL) == 0 else None)(scrape(agent)))
        assert value(s, "ssd_write_cache_mismatch", serial=SDA_SERIAL) == 1
        assert value(s, "ssd_write_cache_state", serial=SDA_SERIAL, source="hdparm", state="disabled") == 1
        assert value(s, "ssd_write_cache_state", serial=SDA_SERIAL, source="sysfs_queue", state="enabled") == 1
        # And back on.
        host.set_response("hdparm", "sda", fixture_path("fakehost/hdparm-W-sda-on.txt"))
        wait_for(lambda: value(scrape(agent), "ssd_write_cache_mismatch", serial=SDA_SERIAL) == 0)
    finally:
        agent.stop()


def test_sysfs_write_through_is_seen_without_hdparm(host):
    host.remove_tool("hdparm")
    host.set_write_cache("dfa", "write through")
    agent = AgentProcess(host, FAST)
    try:
        agent.wait_ready()
        s = wait_for(lambda: (lambda s: s if value(s, "ssd_write_cache_enabled", serial=SHANNON_SERIAL) is not None else None)(scrape(agent)))
        assert value(s, "ssd_write_cache_enabled", serial=SHANNON_SERIAL) == 0
        assert value(s, "ssd_write_cache_mismatch", serial=SHANNON_SERIAL) == 1
    finally:
        agent.stop()


@pytest.mark.parametrize("content", [b"garbage, not a database" * 100, b"SQLite format 3\x00" + b"\x00" * 40])
def test_corrupt_history_is_moved_aside_and_agent_records_to_a_new_file(host, content):
    db = host.state / "history.sqlite"
    db.write_bytes(content)
    agent = AgentProcess(host, FAST)
    try:
        agent.wait_ready()
        s = wait_for(lambda: all_drives_seen(agent))
        assert value(s, "ssd_life_left_ratio", serial=SHANNON_SERIAL) == pytest.approx(0.99)
        moved = glob.glob(str(db) + ".corrupt-*")
        assert moved, os.listdir(host.state)
        with open(moved[0], "rb") as fh:
            assert fh.read() == content
        assert "history" in agent.log().lower()
        # history goes on in a new file at the same path; the damage is counted
        s = wait_for(lambda: (lambda s: s if value(s, "ssd_history_healthy") is not None else None)(scrape(agent)))
        assert value(s, "ssd_history_healthy") == 1
        assert value(s, "ssd_collector_errors_total", collector="history") >= 1
        assert "moved it to" in agent.log()
        with open(db, "rb") as fh:
            assert fh.read(16) == b"SQLite format 3\x00"
    finally:
        agent.stop()


def test_unwritable_state_dir_keeps_history_in_memory(host):
    # A regular file where the state directory should be: nothing can be created there,
    # even as root.
    blocker = host.root / "blocked"
    blocker.write_text("not a directory\n")
    agent = AgentProcess(host, FAST + ["--state-dir", str(blocker / "state")])
    try:
        agent.wait_ready()
        s = wait_for(lambda: all_drives_seen(agent))
        assert value(s, "ssd_history_healthy") == 0
        assert value(s, "ssd_life_left_ratio", serial=SHANNON_SERIAL) == pytest.approx(0.99)
        assert agent.proc.poll() is None
    finally:
        agent.stop()


def test_history_survives_restart(host):
    agent = AgentProcess(host, FAST)
    try:
        agent.wait_ready()
        wait_for(lambda: all_drives_seen(agent))
    finally:
        agent.stop()
    import sqlite3

    db = host.state / "history.sqlite"
    assert db.exists()
    con = sqlite3.connect(str(db))
    try:
        tables = [r[0] for r in con.execute("select name from sqlite_master where type='table'")]
        assert tables
        rows = sum(con.execute(f"select count(*) from {t}").fetchone()[0] for t in tables)
    finally:
        con.close()
    assert rows >= 4  # one sample per drive at least
    agent = AgentProcess(host, FAST)
    try:
        agent.wait_ready()
        s = wait_for(lambda: all_drives_seen(agent))
        assert value(s, "ssd_history_healthy") == 1
        assert not glob.glob(str(db) + ".corrupt-*")
    finally:
        agent.stop()


# A drive swapped into sda: a new serial, so the poller has a first sample to write at once
# (the others are written at most every ten minutes).
SWAPPED_SERIAL = "S24ZN902000L"  # scrutiny__smart-ata2.json, Samsung SSD 850 PRO 128GB
NVME0_READ_SECTORS = 400000  # DISKSTATS: "259 0 nvme0n1 5000 0 400000 ..."


def _nvme0_reads(sectors: int) -> str:
    return DISKSTATS.replace(f"nvme0n1 5000 0 {NVME0_READ_SECTORS} ", f"nvme0n1 5000 0 {sectors} ")


def _fill(directory) -> int:
    """Write a filler file until the file system is full; bytes written."""
    written = 0
    with open(os.path.join(str(directory), "filler"), "wb", buffering=0) as f:
        try:
            while True:
                written += f.write(b"\0" * 4096)
        except OSError:
            pass
    return written


def test_disk_full_under_the_running_agent(host):
    """The state directory is a tiny real tmpfs that fills up while the agent runs."""
    state = host.root / "statefs"
    state.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(state)], capture_output=True, text=True
    )
    if mounted.returncode != 0:
        pytest.skip(f"mounting a tmpfs is not permitted here: {mounted.stderr.strip()}")
    agent = None
    try:
        agent = AgentProcess(host, FAST + ["--state-dir", str(state)])
        agent.wait_ready()
        s = wait_for(lambda: (lambda s: s if s and value(s, "ssd_history_healthy") == 1 else None)(all_drives_seen(agent)))
        assert (state / "history.sqlite").exists()
        assert value(s, "ssd_collector_errors_total", collector="history") == 0

        assert _fill(state) > 0
        # A new drive in sda: its first sample is due now, on a full disk.
        host.set_response("smartctl", "sda", fixture_path("smartctl-json/scrutiny__smart-ata2.json"))
        host.diskstats(_nvme0_reads(800000))

        def failure_shown():
            s = scrape(agent)
            seen = value(s, "ssd_drive_info", serial=SWAPPED_SERIAL) is not None
            failed = (value(s, "ssd_collector_errors_total", collector="history") or 0) > 0
            return s if seen and failed else None

        s = wait_for(failure_shown)
        assert value(s, "ssd_history_healthy") == 0
        assert value(s, "ssd_collector_success", collector="history") == 0
        assert value(s, "ssd_io_read_bytes_total", serial=NVME0_SERIAL) == 800000 * 512

        # Scrapes keep answering and values keep moving while the disk stays full.
        for step, sectors in enumerate((900000, 1000000, 1100000), start=1):
            host.diskstats(_nvme0_reads(sectors))
            wait_for(lambda n=sectors: value(scrape(agent), "ssd_io_read_bytes_total", serial=NVME0_SERIAL) == n * 512)
            assert agent.get("/healthz")
            assert agent.proc.poll() is None, f"agent died after step {step}"
        s = scrape(agent)
        assert value(s, "ssd_life_left_ratio", serial=SHANNON_SERIAL) == pytest.approx(0.99)
        assert value(s, "ssd_history_healthy") == 0

        time.sleep(0.5)
        log = agent.log()
        assert agent.proc.poll() is None
        assert "history: write to" in log and "disk is full" in log, log
        assert "Traceback" not in log, log
    finally:
        if agent is not None:
            agent.stop()
        subprocess.run(["umount", "-l", str(state)], capture_output=True)
