"""The plug-in path (docs/plugins.md): the contract validated strictly (a table of malformed
documents), the settings, the worked example on a real capture, and the agent end to end with
real plug-in executables, good and deliberately broken (garbage, a hang past its timeout,
wrong units, a huge output, a non-zero exit): the agent keeps serving, the failure is visible
per plug-in, nothing else is lost."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError

from collectors.model import ParseError
from collectors.plugin.contract import parse_document
from collectors.plugin.source import PluginSettings
from tests.conftest import fixture_path
from tests.fakehost import ROOT, AgentProcess, build_default_host
from tests.support.e2e import FAST, NVME0_SERIAL, SDA_SERIAL, check_metrics, scrape, value, wait_for

EXAMPLE = ROOT / "examples" / "plugins" / "keyvalue_to_ssdfleet.py"
EXAMPLE_MAP = ROOT / "examples" / "plugins" / "shannon-p.map.json"
SHANNON_P = "fakehost/seed000__status-p_scta_9h.txt"
SHANNON_SERIAL = "006819246149b014"


def doc(**drive) -> bytes:
    base = {"serial": "MB123", "life_left_ratio": 0.97, "sources": {"life_left_ratio": "memmonitor 'life: 97%'"}}
    base.update(drive)
    return json.dumps({"ssdfleet_plugin": 1, "drives": [base]}).encode()


def test_a_valid_document_becomes_readings_with_the_plugin_named_in_the_evidence():
    (r,) = parse_document(doc(temperatures=[{"sensor": "controller", "celsius": 55.5}],
                              host_written_bytes=10**12, sources={"life_left_ratio": "a", "temperatures": "b",
                                                                  "host_written_bytes": "c"},
                              withheld={"nand_written_bytes": "the tool prints no NAND volume"}), "memblaze")
    assert (r.kind, r.serial, r.device) == ("plugin", "MB123", "plugin:memblaze/MB123")
    assert r.life_left_ratio == 0.97 and r.host_written_bytes == 10**12
    assert r.temperatures[0].celsius == 55.5
    assert r.sources["life_left_ratio"] == "plugin memblaze: a"
    assert r.extra["nand_written_bytes_withheld"] == "plugin memblaze: the tool prints no NAND volume"
    assert r.extra["plugin"] == "memblaze"


@pytest.mark.parametrize("data, why", [
    (b"", "no output"),
    (b"garbage", "not one JSON document"),
    (b'{"ssdfleet_plugin": 1, "drives": [', "not one JSON document"),
    (b"\xff\xfe\x00", "not UTF-8"),
    (b"[" * 100000 + b"]" * 100000, "not one JSON document"),
    (b'{"ssdfleet_plugin": 2, "drives": []}', "contract version 2"),
    (b'{"drives": []}', "ssdfleet_plugin"),
    (b'{"ssdfleet_plugin": "1", "drives": []}', "contract version"),
    (b'{"ssdfleet_plugin": 1, "drives": [], "extra": 1}', "extra"),
    (doc(life_left_ratio=97), "life_left_ratio"),  # a percentage where a ratio belongs
    (doc(life_left_ratio=-0.1), "life_left_ratio"),
    (doc(host_written_bytes=-1, sources={"life_left_ratio": "a", "host_written_bytes": "b"}), "host_written_bytes"),
    (doc(host_written_bytes=1.5, sources={"life_left_ratio": "a", "host_written_bytes": "b"}), "host_written_bytes"),
    (doc(host_written_bytes=2**64, sources={"life_left_ratio": "a", "host_written_bytes": "b"}), "host_written_bytes"),
    (doc(temperatures=[{"sensor": "drive", "celsius": 318.15}], sources={"life_left_ratio": "a", "temperatures": "K"}),
     "celsius"),  # kelvin
    (doc(temperatures=[{"sensor": "drive", "celsius": -50}], sources={"life_left_ratio": "a", "temperatures": "x"}),
     "celsius"),
    (doc(smart_healthy=1, sources={"life_left_ratio": "a", "smart_healthy": "b"}), "smart_healthy"),
    (doc(sources={}), "without evidence"),
    (doc(sources={"life_left_ratio": " "}), "evidence"),
    (doc(sources={"life_left_ratio": "a", "colour": "b"}), "not a figure"),
    (doc(withheld={"life_left_ratio": "unknown"}), "both given and withheld"),
    (doc(serial=None), "serial or a wwn"),
    (doc(serial="../../etc"), "serial"),
    (doc(device="sda"), "device"),
    (doc(write_amplification=97, sources={"life_left_ratio": "a", "write_amplification": "b"}), "write_amplification"),
    (doc(power_on_seconds=10**12, sources={"life_left_ratio": "a", "power_on_seconds": "b"}), "power_on_seconds"),
    (doc(defects={"Bad Blocks": 3}, sources={"life_left_ratio": "a", "defects": "b"}), "defects"),
    (doc(unknown_field=1), "unknown_field"),
    (json.dumps({"ssdfleet_plugin": 1, "drives": [json.loads(doc())["drives"][0]] * 2}).encode(), "share"),
    (b'{"ssdfleet_plugin": 1, "drives": [{"serial": "A", "life_left_ratio": NaN, "sources": {"life_left_ratio": "a"}}]}',
     "life_left_ratio"),
])
def test_malformed_documents_are_rejected_whole(data, why):
    with pytest.raises(ParseError) as err:
        parse_document(data, "t")
    assert why in str(err.value)


def test_settings_want_absolute_commands_and_unique_names():
    good = {"name": "memblaze", "command": ["/usr/local/bin/mb", "--json"]}
    assert PluginSettings(plugins=[good]).plugins[0].timeout_seconds is None  # the agent's tool_timeout_seconds
    for bad in ([dict(good, command=["mb"])], [good, good], [dict(good, name="Bad Name")],
                [dict(good, timeout_seconds=0)], [dict(good, shell="yes")], [dict(good, command=[])]):
        with pytest.raises(ValidationError):
            PluginSettings(plugins=bad)


def test_the_worked_example_turns_a_real_capture_into_the_contract():
    out = subprocess.run([sys.executable, str(EXAMPLE), "--map", str(EXAMPLE_MAP), "--file",
                          str(fixture_path(SHANNON_P))], stdout=subprocess.PIPE, check=True, timeout=30).stdout
    (r,) = parse_document(out, "shannon_kv")
    # values read off the capture by hand: estimated_life_left=99%, host_write_data=13801.32 GB
    assert r.serial == SHANNON_SERIAL and r.life_left_ratio == 0.99
    assert r.host_written_bytes == 13_801_320_000_000 and r.nand_written_bytes == 20_001_570_000_000
    assert r.write_amplification == 1.4493 and r.bad_block_ratio == pytest.approx(0.010760)
    assert {t.sensor: t.celsius for t in r.temperatures} == {"controller": 71, "board": 53, "flash": 53}
    assert "host_write_data=13801.32 GB" in r.sources["host_written_bytes"]


def test_the_example_withholds_a_value_in_a_unit_it_was_not_told():
    text = fixture_path(SHANNON_P).read_text().replace("host_write_data=13801.32 GB", "host_write_data=12853.7 GiB")
    out = subprocess.run([sys.executable, str(EXAMPLE), "--map", str(EXAMPLE_MAP), "--file", "/dev/stdin"],
                         input=text.encode(), stdout=subprocess.PIPE, check=True, timeout=30).stdout
    (r,) = parse_document(out, "shannon_kv")
    assert r.host_written_bytes is None and "GiB" in r.extra["host_written_bytes_withheld"]


# -- end to end -----------------------------------------------------------------------------

def script(path: Path, body: str) -> str:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def problems(agent) -> list:
    return json.loads(agent.get("/api/v1/drives"))["problems"]


def test_broken_plugins_cost_nothing_but_their_own_data(tmp_path):
    host = build_default_host(tmp_path / "host")
    bin_dir = tmp_path / "plugins"
    bin_dir.mkdir()
    good_out = bin_dir / "good.json"
    good_out.write_bytes(subprocess.run(
        [sys.executable, str(EXAMPLE), "--map", str(EXAMPLE_MAP), "--file", str(fixture_path(SHANNON_P))],
        stdout=subprocess.PIPE, check=True, timeout=30).stdout)
    wrong_units = doc(life_left_ratio=97).decode()
    plugins = [
        {"name": "good", "command": [script(bin_dir / "good", f'cat "{good_out}"\n')], "interval_seconds": 1},
        {"name": "garbage", "command": [script(bin_dir / "garbage", "echo 'life left: 97%'\n")], "interval_seconds": 1},
        {"name": "hang", "command": [script(bin_dir / "hang", "sleep 60\n")], "interval_seconds": 1,
         "timeout_seconds": 1},
        {"name": "wrong_units", "command": [script(bin_dir / "wrong", f"cat <<'EOF'\n{wrong_units}\nEOF\n")],
         "interval_seconds": 1},
        {"name": "huge", "command": [script(bin_dir / "huge", "yes '{\"ssdfleet_plugin\": 1}' | head -c 3000000\n")],
         "interval_seconds": 1, "max_output_bytes": 65536},
        {"name": "exit3", "command": [script(bin_dir / "exit3", f'cat "{good_out}"; echo "device busy" >&2; exit 3\n')],
         "interval_seconds": 1},
    ]
    cfg = tmp_path / "agent.yml"
    cfg.write_text(yaml.safe_dump({"plugin": {"plugins": plugins}}))
    # The Shannon card is read by the plug-in alone here, so its values are the plug-in's.
    agent = AgentProcess(host, ["--config", str(cfg), "--interval.plugin", "1", "--no-collector.shannon"] + FAST)
    try:
        agent.wait_ready()

        def settled():
            s = scrape(agent)
            seen = value(s, "ssd_life_left_ratio", serial=SHANNON_SERIAL) is not None
            errs = value(s, "ssd_collector_errors_total", collector="plugin") or 0
            # The write cache's first run waits for every health source's first pass, the
            # plug-ins' too (issue 27): wait for it as well.
            cache = value(s, "ssd_collector_success", collector="write_cache") is not None
            return s if seen and cache and errs >= 5 and "plugin hang:" in agent.log() else None

        s = wait_for(settled, timeout=40)
        assert value(s, "ssd_collector_success", collector="plugin") == 0
        # the good plug-in's drive, with its values and evidence
        assert value(s, "ssd_life_left_ratio", serial=SHANNON_SERIAL) == pytest.approx(0.99)
        assert value(s, "ssd_drive_info", serial=SHANNON_SERIAL, kind="plugin") == 1
        # everything else unchanged
        assert value(s, "ssd_smart_healthy", serial=SDA_SERIAL) == 1
        assert value(s, "ssd_drive_info", serial=NVME0_SERIAL) == 1
        for collector in ("smartctl", "write_cache", "diskstats", "discovery"):
            assert value(s, "ssd_collector_success", collector=collector) == 1, collector
        check_metrics(agent.get("/metrics"))
        # one clear log line per broken plug-in, naming it and why
        log = agent.log()
        assert "plugin garbage: output is not one JSON document" in log
        assert "plugin hang: timed out after" in log
        assert "plugin wrong_units: contract violation: drives.0.life_left_ratio" in log
        assert "plugin huge: output exceeded the size cap" in log
        assert "plugin exit3: exit status 3: device busy" in log
        assert "plugin good:" not in log
        shown = "\n".join(problems(agent))
        for name in ("garbage", "hang", "wrong_units", "huge", "exit3"):
            assert f"plugin:{name}: plug-in failed" in shown, name
        assert "plugin:good" not in shown
        # no value from a broken plug-in reached the drive list
        drives = json.loads(agent.get("/api/v1/drives"))["drives"]
        assert [d["serial"] for d in drives if d["kind"] == "plugin"] == [SHANNON_SERIAL]
        # the hang was bounded: the agent still answers quickly and keeps running plug-ins
        assert agent.proc.poll() is None
    finally:
        agent.stop()


def test_a_plugin_that_breaks_keeps_its_last_reading_and_recovers(tmp_path):
    host = build_default_host(tmp_path / "host")
    out = tmp_path / "out.json"
    out.write_bytes(doc())
    plug = script(tmp_path / "mb", f'cat "{out}"\n')
    cfg = tmp_path / "agent.yml"
    cfg.write_text(yaml.safe_dump({"plugin": {"plugins": [
        {"name": "memblaze", "command": [plug], "interval_seconds": 1}]}}))
    agent = AgentProcess(host, ["--config", str(cfg), "--interval.plugin", "1"] + FAST)
    try:
        agent.wait_ready()
        wait_for(lambda: value(scrape(agent), "ssd_life_left_ratio", serial="MB123") == pytest.approx(0.97))
        assert value(scrape(agent), "ssd_collector_success", collector="plugin") == 1
        out.write_bytes(doc(life_left_ratio=97))  # the plug-in starts printing percentages
        wait_for(lambda: value(scrape(agent), "ssd_collector_success", collector="plugin") == 0)
        s = scrape(agent)
        assert value(s, "ssd_life_left_ratio", serial="MB123") == pytest.approx(0.97)  # last good reading
        out.write_bytes(doc(life_left_ratio=0.96))
        wait_for(lambda: value(scrape(agent), "ssd_life_left_ratio", serial="MB123") == pytest.approx(0.96))
        wait_for(lambda: value(scrape(agent), "ssd_collector_success", collector="plugin") == 1)
        assert "plugin memblaze: works again" in agent.log()
    finally:
        agent.stop()


def test_plugins_run_in_the_agent_even_with_a_probe_helper(tmp_path):
    """With ``probe_helper_socket`` set, device tools go to the helper; a plug-in never does
    (the helper runs only argv it builds): it runs in the agent and the helper never sees it."""
    import os
    import shutil
    import tempfile

    from tests.support.probe_helper import HelperProcess

    host = build_default_host(tmp_path / "host")
    sockdir = tempfile.mkdtemp(prefix="ssdf-", dir="/tmp")
    sock = os.path.join(sockdir, "agent.sock")
    helper = HelperProcess(host, sock, ["--tool-timeout", "5"])
    out = tmp_path / "out.json"
    out.write_bytes(doc())
    ran = tmp_path / "ran"
    plug = script(tmp_path / "mb", f'echo $$ >> "{ran}"; cat "{out}"\n')
    cfg = tmp_path / "agent.yml"
    cfg.write_text(yaml.safe_dump({"probe_helper_socket": sock, "plugin": {"plugins": [
        {"name": "memblaze", "command": [plug], "interval_seconds": 1}]}}))
    agent = AgentProcess(host, ["--config", str(cfg), "--interval.plugin", "1"] + FAST)
    try:
        agent.wait_ready()
        wait_for(lambda: value(scrape(agent), "ssd_life_left_ratio", serial="MB123") == pytest.approx(0.97))
        assert value(scrape(agent), "ssd_collector_success", collector="plugin") == 1
        assert ran.read_text().strip()
        assert str(plug) not in helper.log() and "memblaze" not in helper.log()
        assert "refused" not in helper.log()
    finally:
        agent.stop()
        helper.stop()
        shutil.rmtree(sockdir, ignore_errors=True)
