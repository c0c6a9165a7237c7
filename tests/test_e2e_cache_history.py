"""End to end: the write cache followed between polls, and history that survives bad state."""

from __future__ import annotations

import glob
import os

import pytest

from tests.conftest import fixture_path
from tests.fakehost import AgentProcess, build_default_host
from tests.test_e2e_agent import FAST, SDA_SERIAL, SHANNON_SERIAL, all_drives_seen, scrape, value, wait_for


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
def test_corrupt_history_is_moved_aside_and_agent_serves(host, content):
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
