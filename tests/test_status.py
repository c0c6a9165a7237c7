"""``ssdfleet status`` as a person or Nagios runs it: the real command on fake hosts.

Exit codes, exactly as README.md ("Commands") gives them: a host with only a healthy drive 0,
media errors 1, one drive unreadable beside a readable one 1, a write cache switched off 2,
nothing readable or no drives 3 (and 3 for an agent that refuses: tests/test_status_auth.py). The agent-backed tests run the real agent (with two weeks of seeded
history, see test_page) and read it over HTTP.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, Optional

import pytest

from agent.views import input_rows
from tests.conftest import fixture_path
from tests.fakehost import ROOT, FakeHost, build_default_host, free_port
from tests.support.e2e import NVME0_SERIAL, NVME1_SERIAL, SDA_SERIAL, SHANNON_SERIAL
from tests.support.page import start_seeded_agent
from tests.support.status_output import ANSI, on_a_terminal, projection_blocks, table_rows


def run_status(host: FakeHost, *args: str, env: Optional[Dict[str, str]] = None,
               agent_url: Optional[str] = None) -> subprocess.CompletedProcess:
    """The command with the host's tool paths. Without ``agent_url`` it is pointed at a port
    nobody listens on, so it must fall back to one poll of its own (and a real agent on
    the default port of this machine cannot leak in)."""
    url = agent_url or f"http://127.0.0.1:{free_port()}"
    full_env = dict(os.environ)
    full_env.pop("SSDFLEET_BASIC_AUTH", None)
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "agent", "status", "--url", url, *args] + host.config_args(),
                          capture_output=True, text=True, timeout=90, cwd=str(ROOT), env=full_env)


def only_nvme0_host(root: Path) -> FakeHost:
    """A host with just the healthy Intel NVMe drive: the scan output of the default host
    with the other devices taken out, and no Shannon card."""
    host = FakeHost(root)
    scan = json.loads(fixture_path("fakehost/telegraf__testcases_scan_all.json").read_text())
    scan["devices"] = [d for d in scan["devices"] if d["name"] == "/dev/nvme0"]
    host.set_response("smartctl", "version", fixture_path("fakehost/smartctl-version.txt"))
    host.set_response("smartctl", "scan", json.dumps(scan))
    host.set_response("smartctl", "nvme0", fixture_path("fakehost/scrutiny__smart-nvme.json"))
    host.tool("shannon-status")  # present, with nothing to say: no card
    host.tool("hdparm")
    host.block_device("nvme0n1", 2000409264)
    host.diskstats(" 259       0 nvme0n1 5000 0 400000 900 8000 0 1280000 1500 1 2100 2400 0 0 0 0 0 0\n")
    return host


@pytest.fixture
def host(tmp_path):
    return build_default_host(tmp_path)


# -- exit codes -------------------------------------------------------------------------

def test_healthy_host_exits_0(tmp_path):
    r = run_status(only_nvme0_host(tmp_path), "--color", "never")
    assert r.returncode == 0, r.stdout + r.stderr
    rows = table_rows(r.stdout)
    assert list(rows) == ["nvme0"]
    assert rows["nvme0"]["SERIAL"] == NVME0_SERIAL and rows["nvme0"]["HEALTH"] == "OK"
    assert rows["nvme0"]["WRITTEN"] == "4.0 TB"  # 7,773,431 NVMe data units of 512,000 bytes
    assert "why flagged" not in r.stdout
    assert r.stdout.rstrip().endswith("OK: 1 ok")
    assert "no agent answered" in r.stdout  # it says where the numbers came from


def test_media_errors_exit_1_and_json_agrees(host):
    r = run_status(host, "--json")
    assert r.returncode == 1, r.stderr
    data = json.loads(r.stdout)
    assert data["severity"] == "warning" and data["exit_code"] == 1
    by_serial = {d["serial"]: d for d in data["drives"]}
    assert set(by_serial) == {SDA_SERIAL, NVME0_SERIAL, NVME1_SERIAL, SHANNON_SERIAL}
    assert by_serial[NVME1_SERIAL]["media_errors"] == 7
    assert [f["reason"] for f in by_serial[NVME1_SERIAL]["flags"]] == ["7 media errors"]
    assert by_serial[SHANNON_SERIAL]["life_left_ratio"] == pytest.approx(0.99)
    # the projection's reasoning travels with it, even when it has no date yet
    methods = [p["method"] for p in by_serial[SHANNON_SERIAL]["projections"]]
    assert methods == ["observed", "rated", "trend"]
    assert "no write rate yet" in by_serial[SHANNON_SERIAL]["projections"][1]["note"]


def test_write_cache_off_exits_2_with_the_drive_first(host):
    host.set_response("hdparm", "sda", fixture_path("fakehost/hdparm-W-sda-off.txt"))
    r = run_status(host, "--color", "never")
    assert r.returncode == 2, r.stdout + r.stderr
    rows = table_rows(r.stdout)
    assert list(rows)[:2] == ["sda", "nvme1"]  # flagged first, worst first
    assert rows["sda"]["CACHE"] == "DISABLED, want enabled"
    assert rows["sda"]["HEALTH"] == "CRITICAL: write cache disabled, expected enabled"
    assert rows["dfa"]["LIFE"] == "99%" and rows["nvme1"]["LIFE"] == "97%"
    assert rows["sda"]["TEMP"] == "36 C (limit 70)"  # the ATA drive's own limit
    assert rows["dfa"]["WRITTEN"] == "13.8 TB"  # shannon-status -p: host_write_data=13801.32 GB
    why = r.stdout.split("why flagged:\n", 1)[1].splitlines()
    assert why[0].split() == ["CRITICAL", "sda:", "write", "cache", "disabled,", "expected", "enabled"]
    assert why[1].split() == ["WARNING", "nvme1:", "7", "media", "errors"]
    assert "CRITICAL: 1 critical, 1 warning, 2 ok" in r.stdout


def test_nothing_readable_exits_3(tmp_path):
    """smartctl answers nothing, no shannon-status: the kernel's sda is known, its health not."""
    host = FakeHost(tmp_path)
    host.set_response("smartctl", "version", fixture_path("fakehost/smartctl-version.txt"))
    host.set_response("smartctl", "scan", "", exit_code=2)
    host.set_response("smartctl", "sda", "", exit_code=2)
    host.block_device("sda", 976773168, model="Samsung SSD 860 EVO 500GB")
    host.diskstats("   8       0 sda 120 10 9000 50 400 20 64000 300 0 280 350 0 0 0 0 4 2\n")
    r = run_status(host, "--color", "never")
    assert r.returncode == 3, r.stdout + r.stderr
    rows = table_rows(r.stdout)
    assert rows["sda"]["HEALTH"] == "UNKNOWN: no health data"
    assert "UNKNOWN: 1 without health data" in r.stdout
    assert json.loads(run_status(host, "--json").stdout)["exit_code"] == 3


def test_one_drive_unreadable_beside_a_readable_one_exits_1(tmp_path):
    """The README's rule: a drive no health tool could read is a warning (its health is
    unknown, so the host is not OK); UNKNOWN is kept for a host where none could be read."""
    host = only_nvme0_host(tmp_path)
    scan = json.loads(fixture_path("fakehost/telegraf__testcases_scan_all.json").read_text())
    scan["devices"] = [d for d in scan["devices"] if d["name"] in ("/dev/nvme0", "/dev/sda")]
    host.set_response("smartctl", "scan", json.dumps(scan))
    host.set_response("smartctl", "sda", "", exit_code=2)
    host.block_device("sda", 976773168, model="Samsung SSD 860 EVO 500GB")
    host.diskstats(" 259       0 nvme0n1 5000 0 400000 900 8000 0 1280000 1500 1 2100 2400 0 0 0 0 0 0\n"
                   "   8       0 sda 120 10 9000 50 400 20 64000 300 0 280 350 0 0 0 0 4 2\n")
    r = run_status(host, "--color", "never")
    assert r.returncode == 1, r.stdout + r.stderr
    rows = table_rows(r.stdout)
    assert rows["sda"]["HEALTH"] == "UNKNOWN: no health data" and rows["nvme0"]["HEALTH"] == "OK"
    assert r.stdout.rstrip().endswith("WARNING: 1 ok, 1 without health data, collector failing: smartctl")
    data = json.loads(run_status(host, "--json").stdout)
    assert data["severity"] == "warning" and data["exit_code"] == 1
    # asked about the unreadable drive alone, the answer is UNKNOWN
    assert run_status(host, "--drive", "sda").returncode == 3


def test_no_drives_at_all_exits_3(tmp_path):
    host = FakeHost(tmp_path)
    host.diskstats("")
    r = run_status(host, "--color", "never")
    assert r.returncode == 3
    assert "(no drives found)" in r.stdout and "UNKNOWN: no drives could be read" in r.stdout


# -- colour -----------------------------------------------------------------------------

def test_colour_always_never_and_piped(host):
    host.set_response("hdparm", "sda", fixture_path("fakehost/hdparm-W-sda-off.txt"))
    coloured = run_status(host, "--color", "always").stdout
    assert "\x1b[1;31mCRITICAL: write cache disabled, expected enabled\x1b[0m" in coloured
    assert "\x1b[33mWARNING: 7 media errors\x1b[0m" in coloured
    # colours change nothing but the colours: same text, same alignment
    plain = run_status(host, "--color", "never").stdout
    assert "\x1b" not in plain
    assert table_rows(ANSI.sub("", coloured)).keys() == table_rows(plain).keys()
    assert "\x1b" not in run_status(host).stdout  # auto, and stdout is a pipe here


def test_colour_auto_on_a_terminal(host):
    """--color auto colours when stdout is a real terminal (a pty, as ssh gives)."""
    code, _, text = on_a_terminal(host)
    assert code == 1
    assert "\x1b[33mWARNING: 7 media errors\x1b[0m" in text, text


# -- against the running agent ------------------------------------------------------------

@pytest.fixture
def seeded_agent(tmp_path):
    h = build_default_host(tmp_path)
    agent = start_seeded_agent(h)
    try:
        yield h, agent
    finally:
        agent.stop()


def test_drive_details_from_the_agent(seeded_agent):
    host, agent = seeded_agent
    before = {d["serial"]: d for d in json.loads(agent.get("/api/v1/drives"))["drives"]}[SHANNON_SERIAL]
    r = run_status(host, "--drive", SHANNON_SERIAL, "--color", "never", agent_url=agent.url)
    assert r.returncode == 0, r.stdout + r.stderr
    out = r.stdout
    assert out.startswith(f"dfa  sh-shannon-pcie-ssd  serial {SHANNON_SERIAL}  (shannon")
    assert re.search(r"^life left\s+99%", out, re.M)
    # the wear-out date and the numbers behind it, the method named in words
    m = re.search(r"^wear-out\s+(\d{4}-\d\d-\d\d) \(in [\d.]+ years\), from the rated P/E cycles \(marked \*\)$",
                  out, re.M)
    assert m, out
    api = {d["serial"]: d for d in json.loads(agent.get("/api/v1/drives"))["drives"]}[SHANNON_SERIAL]
    # the API read before or after the command: a source's pass between the reads moves the date
    dates = {time.strftime("%Y-%m-%d", time.gmtime(d["wearout_timestamp"])) for d in (before, api)}
    assert m.group(1) in dates, (m.group(1), dates)
    # all three methods, each with its verdict and its own inputs in words; the one behind the
    # date marked
    methods = projection_blocks(out, api["projections"])
    assert [(name, mark) for name, (mark, _, _) in methods.items()] == [
        ("observed", " "), ("rated", "*"), ("trend", " ")]
    by_method = {p["method"]: p for p in api["projections"]}
    earlier = {p["method"]: p for p in before["projections"]}
    for name, (_, verdict, inputs) in methods.items():
        p = by_method[name]
        if p["wearout_timestamp"] is None:
            assert verdict == f"no date: {p['note']}", verdict
        else:
            # 45 years out, one more sample between the reads moves a date by days: either read's
            days = {time.strftime("%Y-%m-%d", time.gmtime(q["wearout_timestamp"]))
                    for q in (p, earlier[name]) if q["wearout_timestamp"] is not None}
            assert verdict[:10] in days, (verdict, days)
        assert list(inputs) == [label for label, _ in input_rows(p)]
        assert not any("_" in label for label in inputs), list(inputs)  # words, not the API's keys
    # observed waits: 1% of life used is too little to extrapolate from whole percents
    assert methods["observed"][1].startswith("no date: only 1.0% of life used")
    assert methods["observed"][2]["life used"] == "1%"
    assert methods["observed"][2]["trusted once life used reaches"] == "5%"
    assert "NAND written" in methods["observed"][2]  # the card counts NAND bytes: said by the name
    assert methods["rated"][2]["rated P/E cycles"] == "10000 P/E cycles"
    assert re.fullmatch(r"[\d.]+ [GT]B/day", methods["rated"][2]["NAND writes"])  # the card counts NAND bytes
    assert re.fullmatch(r"[\d.]+ PB", methods["rated"][2]["host writes left"])
    # the seeded history has life left falling 100% -> 99%: the trend has a slope to show
    assert re.fullmatch(r"[\d.]+%", methods["trend"][2]["life used a day"])
    assert "points/day" not in out and "min_life_used" not in out
    # history from the agent's own samples (seeded 1.000% -> 1.076% bad blocks, 100% -> 99% life)
    assert re.search(r"^history\s+\d+ samples from ", out, re.M)
    assert "life left: 100% -> 99% over" in out
    assert "bad blocks: 1% -> 1.076% over" in out
    hist = list(itertools.takewhile(lambda h: h.startswith("  "), out.split("TIME (UTC)", 1)[1].splitlines()[1:]))
    assert 10 <= len(hist) <= 16 and all(re.match(r"^  \d{4}-\d\d-\d\d \d\d:\d\d ", h) for h in hist)
    assert "source: agent at " + agent.url in out


def test_drive_by_device_name_and_its_exit_code(seeded_agent):
    host, agent = seeded_agent
    r = run_status(host, "--drive", "/dev/sda", "--color", "never", agent_url=agent.url)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "CRITICAL   write cache disabled, expected enabled" in r.stdout
    assert re.search(r"^write cache\s+disabled \(expected enabled\); .*hdparm: disabled", r.stdout, re.M)
    assert re.search(r"^wear-out\s+\d{4}-\d\d-\d\d .*, from host writes \(marked \*\)$", r.stdout, re.M)
    sda = json.loads(run_status(host, "--drive", "sda", "--json", agent_url=agent.url).stdout)["drives"][0]
    assert projection_blocks(r.stdout, sda["projections"])["observed"][0] == "*"
    r = run_status(host, "--drive", "nvme1", "--json", agent_url=agent.url)
    assert r.returncode == 1
    data = json.loads(r.stdout)
    (drive,) = data["drives"]
    assert drive["serial"] == NVME1_SERIAL and data["severity"] == "warning"
    assert len(drive["history"]) > 40 and drive["history"][-1]["life_left_ratio"] == pytest.approx(0.97)
    r = run_status(host, "--drive", "no-such-drive", agent_url=agent.url)
    assert r.returncode == 3 and "no drive 'no-such-drive'" in r.stderr


def test_agent_table_has_rates_and_dates(seeded_agent):
    host, agent = seeded_agent
    r = run_status(host, "--color", "never", agent_url=agent.url)
    assert r.returncode == 2
    rows = table_rows(r.stdout)
    assert re.fullmatch(r"\d{4}-\d\d-\d\d from the rated P/E cycles", rows["dfa"]["WEAR-OUT"])
    assert re.fullmatch(r"\d{4}-\d\d-\d\d from host writes", rows["sda"]["WEAR-OUT"])
    assert re.fullmatch(r"[\d.]+ [GT]B", rows["dfa"]["WRITES/DAY"])  # about 0.5 TB a day, seeded
    assert rows["dfa"]["WRITTEN"] == "13.8 TB"
    assert "1.076% rising" == rows["dfa"]["ERRORS"]


def test_watch_redraws(host):
    """--watch N on a pipe prints one block per round until stopped."""
    url = f"http://127.0.0.1:{free_port()}"
    proc = subprocess.Popen([sys.executable, "-m", "agent", "status", "--url", url, "--watch", "0.5",
                             "--color", "never"] + host.config_args(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=str(ROOT), text=True,
                            start_new_session=True)
    seen = []
    try:
        deadline = time.monotonic() + 60
        while len(seen) < 2 and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            if line.startswith("WARNING: 1 warning, 3 ok"):
                seen.append(line)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert len(seen) == 2, proc.stderr.read()


def test_a_failing_collector_makes_a_healthy_host_a_warning(tmp_path):
    """The drive is fine but /proc/diskstats cannot be read: the diskstats collector fails, so
    the host is not known to be OK (exit 1), and the last line names the collector."""
    host = only_nvme0_host(tmp_path)
    (host.proc / "diskstats").unlink()
    r = run_status(host, "--color", "never")
    assert r.returncode == 1, r.stdout + r.stderr
    assert table_rows(r.stdout)["nvme0"]["HEALTH"] == "OK"
    assert "collector diskstats failing" in r.stdout
    assert r.stdout.rstrip().endswith("WARNING: 1 ok, collector failing: diskstats")
    data = json.loads(run_status(host, "--json").stdout)
    assert data["severity"] == "warning" and data["exit_code"] == 1


def test_drive_details_name_the_newest_self_test(host):
    """`status --drive` says what smartd would: the newest self-test from the drive's own log
    (sda's capture: a short test that passed at power-on hour 14,417), and no error-log line
    for a drive whose log is empty."""
    r = run_status(host, "--drive", "sda", "--color", "never")
    lines = {line.split("  ")[0]: line for line in r.stdout.splitlines() if line and not line.startswith(" ")}
    assert lines["self-test"].endswith("Short offline: Completed without error at power-on hour 14,417"), r.stdout
    assert "error log" not in lines
