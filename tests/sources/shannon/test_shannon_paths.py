"""One Shannon card read every way the agent can read it gives one record.

The card is the real one of seed document 000 (shannon-status -p /dev/scta after 9h15m, driver
2.6.9). The same card in the newer driver's key=value layout and as the driver's sysfs files are
constructed from those real figures (tests/fixtures/shannon/PROVENANCE.tsv says how). Parsers
first, then the real agent against fake tools: the newer layout, the sysfs-only case (tool
missing, tool hanging) and the probe helper (which runs exactly what the source builds).
"""

from __future__ import annotations

import os
import shutil

import pytest
import yaml

from collectors.shannon import parse_status_a, parse_status_p, parse_sysfs
from tests.conftest import fixture_files, fixture_path, read_fixture
from tests.fakehost import AgentProcess, build_default_host
from tests.support.e2e import FAST, SHANNON_SERIAL, scrape, value, wait_for

GEN1_P = "shannon/seed000__status-p_scta_9h.txt"
GEN1_A = "shannon/seed000__status-a_9h.txt"
GEN2 = "shannon/constructed__status-p-a_gen2_seed000_card.txt"
SYSFS = "shannon/sysfs-seed000/class/block/dfa/shannon"

# The card's geometry as -a / -p print it: 7 channels x 8 lunsets x 2 luns x 2116 eblocks.
BLOCKS = 7 * 8 * 2 * 2116
# Read off seed000__status-p_scta_9h.txt.
LIFE, BAD_RATIO, HOST, NAND, WA = 0.99, 0.010760, 13801.32e9, 20001.57e9, 1.4493


def _text(rel: str) -> str:
    return read_fixture(rel).decode()


def _sysfs_files() -> dict:
    files = {}
    for path in fixture_files(SYSFS):
        files[os.path.relpath(path, fixture_path(SYSFS))] = path.read_text()
    return files


def readings():
    gen1 = parse_status_p(_text(GEN1_P))[0]
    gen1_a = parse_status_a(_text(GEN1_A))[0]
    gen2_p = parse_status_p(_text(GEN2))[0]
    gen2_a = parse_status_a(_text(GEN2))[0]  # newer drivers print this layout under -a too
    sysfs = parse_sysfs(_sysfs_files(), "dfa")
    return {"gen1 -p": gen1, "gen1 -a": gen1_a, "gen2 -p -a": gen2_p, "gen2 -a": gen2_a, "sysfs": sysfs}


def test_every_path_gives_the_same_life_bytes_and_write_amplification():
    for path, r in readings().items():
        assert r.serial == SHANNON_SERIAL, path
        assert r.life_left_ratio == pytest.approx(LIFE), path
        # -a prints host writes 0.02% below -p (a few seconds apart in the post): 4 digits.
        assert r.host_written_bytes == pytest.approx(HOST, rel=3e-3), path
        assert r.nand_written_bytes == pytest.approx(NAND, rel=3e-3), path
        assert r.write_amplification == pytest.approx(WA, abs=1e-3), path
        assert r.access_mode == "readwrite" and r.readonly is False, path
        assert r.block_device == "dfa", path


def test_sysfs_computes_write_amplification_and_names_its_source():
    r = readings()["sysfs"]
    assert r.write_amplification == round(39065566406 / 26955703125, 4) == WA
    assert "total_write_sectors" in r.sources["write_amplification"]
    assert r.host_written_bytes == 26955703125 * 512 == int(HOST)


def test_bad_blocks_the_same_share_and_the_same_counts():
    rs = readings()
    # gen 1 prints the share; gen 2 prints static and grown counts and the geometry.
    assert rs["gen1 -p"].bad_block_ratio == pytest.approx(BAD_RATIO)
    assert rs["gen2 -p -a"].bad_block_ratio == pytest.approx(BAD_RATIO, abs=5e-7)
    assert rs["gen2 -p -a"].bad_block_ratio == 2550 / BLOCKS
    assert "static_bad_blocks" in rs["gen2 -p -a"].sources["bad_block_ratio"]
    for path in ("gen2 -p -a", "gen2 -a", "sysfs"):
        assert rs[path].defects == {"static_bad_block": 2348, "dynamic_bad_block": 202}, path
    # The share printed by gen 1 is the same number of blocks.
    assert round(BAD_RATIO * BLOCKS) == 2348 + 202
    # sysfs has no geometry: the share is not made up.
    assert rs["sysfs"].bad_block_ratio is None


def test_implausible_sysfs_write_amplification_is_withheld_with_a_reason():
    files = _sysfs_files()
    files["total_write_sectors"] = "100\n"  # NAND below host on a card that does not compress
    r = parse_sysfs(files, "dfa")
    assert r.write_amplification is None
    assert "outside" in r.extra["write_amplification_withheld"]


# ---------------------------------------------------------------------------------------
# the real agent


def _expect_tool_values(s, sysfs=False):
    assert value(s, "ssd_life_left_ratio", serial=SHANNON_SERIAL) == pytest.approx(LIFE)
    assert value(s, "ssd_host_written_bytes_total", serial=SHANNON_SERIAL) == pytest.approx(HOST)
    assert value(s, "ssd_nand_written_bytes_total", serial=SHANNON_SERIAL) == pytest.approx(NAND, rel=1e-9)
    assert value(s, "ssd_write_amplification", serial=SHANNON_SERIAL) == pytest.approx(WA)
    assert value(s, "ssd_readonly", serial=SHANNON_SERIAL) == 0
    assert value(s, "ssd_write_reduced", serial=SHANNON_SERIAL) == 0
    assert value(s, "ssd_defects", serial=SHANNON_SERIAL, type="static_bad_block") == 2348
    assert value(s, "ssd_defects", serial=SHANNON_SERIAL, type="dynamic_bad_block") == 202
    if not sysfs:
        assert value(s, "ssd_bad_block_ratio", serial=SHANNON_SERIAL) == pytest.approx(BAD_RATIO, abs=5e-7)


def _card_seen(agent):
    s = scrape(agent)
    return s if value(s, "ssd_life_left_ratio", serial=SHANNON_SERIAL) is not None else None


def test_newer_layout_under_a_through_the_agent(tmp_path):
    """-p -a not answered (exit 2), -a prints the key=value layout: it used to fail with
    "'control_device_node=/dev/scta' before any 'Direct-IO drive' line"."""
    host = build_default_host(tmp_path)
    host.set_response("shannon-status", "all", fixture_path(GEN2))
    host.set_response("shannon-status", "scta", fixture_path(GEN2))
    agent = AgentProcess(host, FAST)
    try:
        agent.wait_ready()
        s = wait_for(lambda: _card_seen(agent))
        _expect_tool_values(s)
        assert value(s, "ssd_collector_success", collector="shannon") == 1
        assert "before any 'Direct-IO drive' line" not in agent.log()
    finally:
        agent.stop()


def _sysfs_host(tmp_path):
    host = build_default_host(tmp_path)
    shutil.copytree(fixture_path(SYSFS), host.sys / "class" / "block" / "dfa" / "shannon")
    return host


@pytest.mark.parametrize("how", ["missing", "hangs"])
def test_sysfs_only_through_the_agent(tmp_path, how):
    host = _sysfs_host(tmp_path)
    if how == "missing":
        host.remove_tool("shannon-status")
    else:
        for key in ("all", "-a", "scta"):
            host.set_response("shannon-status", key, "", sleep=30)
    agent = AgentProcess(host, FAST[:-1] + ["2"])  # --tool-timeout 2
    try:
        agent.wait_ready()
        s = wait_for(lambda: _card_seen(agent), timeout=30)
        _expect_tool_values(s, sysfs=True)
        api_sources = agent.get("/api/v1/drives").decode()
        assert "shannon sysfs estimated_life_left" in api_sources
        ok = value(s, "ssd_collector_success", collector="shannon")
        # Missing tool, sysfs has every card: the run is good. A hanging tool is a failure
        # to see (the values still come from sysfs).
        assert ok == (1 if how == "missing" else 0)
    finally:
        agent.stop()


def test_through_the_helper_p_a_is_used_when_the_driver_has_it(tmp_path):
    import tempfile

    from tests.support.probe_helper import HelperProcess

    host = build_default_host(tmp_path)
    host.set_response("shannon-status", "-a", fixture_path(GEN2))  # `-p -a`: key is the last arg
    sockdir = tempfile.mkdtemp(prefix="ssdf-", dir="/tmp")
    sock = os.path.join(sockdir, "a.sock")
    helper = HelperProcess(host, sock, ["--tool-timeout", "5"])
    cfg = tmp_path / "agent.yml"
    cfg.write_text(yaml.safe_dump({"probe_helper_socket": sock}))
    agent = AgentProcess(host, ["--config", str(cfg), "--shannon-status", "/nonexistent/shannon-status"] + FAST)
    try:
        agent.wait_ready()
        s = wait_for(lambda: _card_seen(agent))
        _expect_tool_values(s)
        assert "refused" not in helper.log(), helper.log()
        calls = [c for c in host.calls() if c.startswith("shannon-status")]
        assert "shannon-status -p -a" in calls
        # -p -a gave every card: no per-card call, no -a listing.
        assert not any(c.startswith("shannon-status -p /dev/") for c in calls), calls
        # Exactly the source's three forms: anything else is refused without running the tool.
        from agent.privhelper import HelperRunner

        run = HelperRunner(sock)
        for argv in (["shannon-status", "-p", "-a", "-x"], ["shannon-status", "-a", "-p"],
                     ["shannon-status", "-p", "/dev/dfa"], ["shannon-status", "-m", "/dev/scta"],
                     ["shannon-status", "-p", "/dev/scta", "-a"]):
            refused = run(argv, timeout=10)
            assert refused.error is not None and "refused" in refused.error, (argv, refused)
            # The agent keeps polling meanwhile, so look for this exact command, not a count.
            assert " ".join(argv) not in host.calls(), argv
        assert run(["shannon-status", "-p", "-a"], timeout=10).stdout == read_fixture(GEN2)
    finally:
        agent.stop()
        helper.stop()
        shutil.rmtree(sockdir, ignore_errors=True)


@pytest.mark.parametrize("change", [
    ("channels=7", "channels=0"),
    ("channels=7", "channels=seven"),
    ("eblocks_in_lun=2116", "eblocks_in_lun="),
    ("static_bad_blocks=2348", "static_bad_blocks=99999999"),
    ("dynamic_bad_blocks=202\n", ""),
])
def test_bad_block_share_not_derived_from_broken_parts(change):
    """Geometry zero, not a number or missing, more bad blocks than blocks, or one of the two
    counts missing: no share is derived (the counts that are there are still reported)."""
    text = _text(GEN2).replace(*change)
    try:
        r = parse_status_p(text)[0]
    except Exception as exc:  # a malformed value is a ParseError, nothing else
        from collectors.model import ParseError
        assert isinstance(exc, ParseError), exc
        return
    assert r.bad_block_ratio is None


def test_tool_then_sysfs_is_one_record(tmp_path):
    """The tool answers, then disappears: the card is read from sysfs from then on, as the same
    drive (one series per metric, same values), not a second one."""
    import json

    host = _sysfs_host(tmp_path)
    agent = AgentProcess(host, FAST)
    try:
        agent.wait_ready()
        wait_for(lambda: _card_seen(agent))
        host.remove_tool("shannon-status")

        def from_sysfs():
            drives = json.loads(agent.get("/api/v1/drives"))["drives"]
            card = [d for d in drives if d["serial"] == SHANNON_SERIAL]
            return card if card and "sysfs" in json.dumps(card[0].get("sources", card[0])) else None

        card = wait_for(from_sysfs, timeout=30)
        assert len(card) == 1
        s = scrape(agent)
        _expect_tool_values(s, sysfs=True)  # value() fails on two series of one serial
        infos = [ls for (n, ls) in s if n == "ssd_drive_info" and dict(ls).get("serial") == SHANNON_SERIAL]
        assert len(infos) == 1 and dict(infos[0])["device"] == "dfa"
    finally:
        agent.stop()
