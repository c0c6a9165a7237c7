"""The three RAID controller sources in the agent (collectors/megaraid, ssacli, arcconf
source.py): fake tools replaying real captures, found through the configured tool paths, run by
the real poller and runner; the metrics they export, their API value, status lines and page
section; a missing tool; the probe helper's rules.

The fake hosts here compose captures of public hosts (tests/fixtures/*/PROVENANCE.tsv): the
MegaCli host answers -AdpAllInfo with a PERC 6/i capture and -LDInfo/-AdpBbuCmd with the two
captures of check_raid issue 39 (one host, before and after its battery failed)."""

from __future__ import annotations

import calendar
import logging
import subprocess
from pathlib import Path

import pytest

from agent.config import load_config
from agent.host_views import api as host_api
from agent.host_views import status_blocks
from agent.metrics import make_registry
from agent.poller import Poller
from agent.privhelper import Refused, Validator
from collectors.controller_view import VIEW
from tests.controller_fakes import ARC, MEGACLI, MR, SSA, FakeControllerTool
from tests.fakehost import FakeHost, promtool

try:
    from prometheus_client import generate_latest as render
except ImportError:  # pragma: no cover
    raise



def controller_host(tmp_path: Path, tools: dict, collectors, **extra):
    """A Config whose controller tools are the fakes given (the others: paths that do not exist)."""
    host = FakeHost(tmp_path)
    host.diskstats("")
    absent = str(tmp_path / "absent")
    paths = {"storcli": absent + "/storcli64", "perccli": absent + "/perccli64", "megacli": absent + "/MegaCli64",
             "ssacli": absent + "/ssacli", "arcconf": absent + "/arcconf"}
    paths.update({k: str(v.path) for k, v in tools.items()})
    config = load_config(None, {"tools": dict(paths, smartctl=absent + "/smartctl"),
                                "paths": {"sysfs": str(host.sys), "procfs": str(host.proc)}, "history": False,
                                "collectors": list(collectors), **extra})
    return host, config


def megacli_host(tmp_path: Path, ldinfo: str, bbu: str) -> FakeControllerTool:
    megacli = FakeControllerTool(tmp_path, "MegaCli64")
    for args, fixture in MEGACLI.items():
        megacli.answer(args, fixture)
    megacli.answer("-LDInfo -Lall -aALL -NoLog", MR + ldinfo)
    megacli.answer("-AdpBbuCmd -aALL -NoLog", MR + bbu)
    return megacli


def poll(config, times: int = 1):
    poller = Poller(config)
    try:
        for _ in range(times):
            poller.poll_once()
    finally:
        poller.stop()
    return poller


def check_metrics(body: bytes) -> None:
    if promtool() is not None:
        check = subprocess.run([promtool(), "check", "metrics"], input=body, capture_output=True, timeout=60)
        assert check.returncode == 0, check.stdout + check.stderr


def test_megacli_fallback_sees_the_battery_fail_and_the_volume_lose_write_back(tmp_path):
    megacli = megacli_host(tmp_path, "check_raid__issue39_batteries.ldinfo.3.txt",
                           "check_raid__issue39_batteries.bbustatus.3.txt")
    _, config = controller_host(tmp_path, {"megacli": megacli}, ["megaraid"])
    poller = Poller(config)
    try:
        poller.poll_once()
        before = make_registry(poller.snapshot)
        vd = {"controller": "megaraid/0", "volume": "0"}
        assert before.get_sample_value("ssd_controller_volume_write_back", dict(vd, policy="current")) == 1
        assert before.get_sample_value("ssd_controller_volume_write_back_lost", vd) == 0
        bbu = {"controller": "megaraid/0", "kind": "bbu"}
        assert before.get_sample_value("ssd_controller_battery_learn_active", bbu) == 1
        # The battery fails: the controller drops the volume to write-through (No Write Cache if Bad BBU).
        megacli.answer("-LDInfo -Lall -aALL -NoLog", MR + "check_raid__issue39_batteries.ldinfo.txt")
        megacli.answer("-AdpBbuCmd -aALL -NoLog", MR + "check_raid__issue39_batteries.bbustatus.txt")
        poller.poll_once()
        after = make_registry(poller.snapshot)
        body = render(after)
    finally:
        poller.stop()
    assert after.get_sample_value("ssd_controller_volume_write_back", dict(vd, policy="current")) == 0
    assert after.get_sample_value("ssd_controller_volume_write_back", dict(vd, policy="default")) == 1
    assert after.get_sample_value("ssd_controller_volume_write_back_lost", vd) == 1
    assert after.get_sample_value("ssd_controller_write_through_cause",
                                  {"controller": "megaraid/0", "cause": "battery failed"}) == 1
    assert after.get_sample_value("ssd_controller_battery_replacement_required", bbu) == 1
    assert after.get_sample_value("ssd_controller_battery_charge_ratio", bbu) == 0.97
    assert after.get_sample_value("ssd_controller_battery_state", dict(bbu, state="failed")) == 1
    assert after.get_sample_value("ssd_controller_info", {
        "controller": "megaraid/0", "family": "megaraid", "tool": "megacli", "model": "PERC 6/i Integrated",
        "serial": "1122334455667788", "firmware": "1.11.52-0349"}) == 1
    assert after.get_sample_value("ssd_collector_success", {"collector": "megaraid"}) == 1
    check_metrics(body)
    value = host_api(poller.snapshot())["megaraid"]
    (volume,) = value["volumes"]
    assert volume["write_back_lost"] is True and volume["write_through_cause"] == "battery failed"
    (heading, lines), = status_blocks({"host": {"megaraid": value}})
    assert any("WRITE-BACK LOST: battery failed" in line for line in lines), lines
    # storcli and perccli were looked for first, then MegaCli ran its four commands, no more.
    assert sorted({c.split()[1] for c in megacli.calls()}) == ["-AdpAllInfo", "-AdpBbuCmd", "-LDInfo", "-PDList"]


def test_storcli_reads_controller_cachevault_and_drive_serials(tmp_path):
    storcli = FakeControllerTool(tmp_path, "storcli64")
    storcli.answer("/call show all J", MR + "textfile__storcli_cALL_show_all.json")
    storcli.answer("/call/eall/sall show all J", MR + "textfile__storcli_cALL-eALL-sALL_show_all.json")
    # /call/vall gets no answer (the fake exits 2): one error, the rest of the read stands.
    _, config = controller_host(tmp_path, {"storcli": storcli}, ["megaraid"], megaraid={"controller_clock": "utc"})
    poller = poll(config)
    registry = make_registry(poller.snapshot)
    cv = {"controller": "megaraid/0", "kind": "cachevault"}
    # Scheduled Tasks "Next Battery Learn" : "06/03/2023, 10:00:00", read as UTC
    assert registry.get_sample_value("ssd_controller_battery_next_learn_timestamp_seconds", cv) == \
        calendar.timegm((2023, 6, 3, 10, 0, 0))
    assert registry.get_sample_value("ssd_controller_battery_state", dict(cv, state="optimal")) == 1
    assert registry.get_sample_value("ssd_controller_volume_state", {"controller": "megaraid/0", "volume": "0",
                                                                     "state": "optimal"}) == 1
    # The default policy needs /call/vall: not read, so write_back_lost is absent, not 0.
    assert registry.get_sample_value("ssd_controller_volume_write_back_lost",
                                     {"controller": "megaraid/0", "volume": "0"}) is None
    drives = [s for s in next(m for m in registry.collect() if m.name == "ssd_controller_drive_info").samples]
    assert sorted(s.labels["serial"] for s in drives) == ["20032656D5D1", "20032656D63C", "20032656D641",
                                                          "20032656D649"]
    assert registry.get_sample_value("ssd_collector_errors_total", {"collector": "megaraid"}) == 1
    assert registry.get_sample_value("ssd_collector_success", {"collector": "megaraid"}) == 0
    check_metrics(render(registry))


def test_ssacli_degraded_volume_and_a_host_without_a_smart_array(tmp_path):
    ssacli = FakeControllerTool(tmp_path, "ssacli")
    ssacli.answer("ctrl all show config detail", SSA + "check_raid__hpacucli.interim_recovery_mode.show.txt")
    _, config = controller_host(tmp_path, {"ssacli": ssacli}, ["ssacli"])
    poller = poll(config)
    registry = make_registry(poller.snapshot)
    vd = {"controller": "ssacli/0", "volume": "1"}
    assert registry.get_sample_value("ssd_controller_volume_state", dict(vd, state="degraded")) == 1
    assert registry.get_sample_value("ssd_controller_volume_state", dict(vd, state="optimal")) == 0
    check_metrics(render(registry))
    ssacli.answer("ctrl all show config detail", "\nError: No controllers detected.\n", exit_code=1)
    poller = poll(config)
    assert "ssacli" not in poller.snapshot().host
    assert make_registry(poller.snapshot).get_sample_value("ssd_collector_success", {"collector": "ssacli"}) == 1


def test_arcconf_rebuild_with_its_progress(tmp_path):
    arcconf = FakeControllerTool(tmp_path, "arcconf")
    arcconf.answer("GETCONFIG 1 AL", ARC + "check_raid__issue47_getconfig2.txt")
    arcconf.answer("GETSTATUS 1", ARC + "check_raid__issue47_getstatus2.txt")
    _, config = controller_host(tmp_path, {"arcconf": arcconf}, ["arcconf"])
    registry = make_registry(poll(config).snapshot)
    vd = {"controller": "arcconf/1", "volume": "0"}
    assert registry.get_sample_value("ssd_controller_volume_state", dict(vd, state="rebuilding")) == 1
    assert registry.get_sample_value("ssd_controller_volume_progress_ratio", vd) == 0.01
    # "Write-cache setting : Enabled" (always write-back) and no ZMM: unprotected
    assert registry.get_sample_value("ssd_controller_volume_volatile_cache_unprotected", vd) == 1
    assert registry.get_sample_value("ssd_controller_battery_present", {"controller": "arcconf/1", "kind": "zmm"}) == 0
    assert [c.split(" ", 1)[1] for c in arcconf.calls()] == ["GETCONFIG 1 AL", "GETSTATUS 1"]


def test_missing_tools_are_no_error_and_said_once(tmp_path, caplog):
    _, config = controller_host(tmp_path, {}, ["megaraid", "ssacli", "arcconf"])
    with caplog.at_level(logging.INFO, logger="ssdfleet.controllers"):
        poller = poll(config, times=3)
    registry = make_registry(poller.snapshot)
    for name in ("megaraid", "ssacli", "arcconf"):
        assert registry.get_sample_value("ssd_collector_success", {"collector": name}) == 1
        assert registry.get_sample_value("ssd_collector_errors_total", {"collector": name}) == 0
        said = [r for r in caplog.records if r.getMessage().startswith(f"{name}: no ")]
        assert len(said) == 1, said
    assert not poller.snapshot().host
    assert b"ssd_controller_" not in render(registry)


@pytest.mark.parametrize("garbage, error", [
    (b"", "empty output"), (b"{\"Controllers\": 3}", "no 'Controllers' list"), (b"\xff\xfe garbage", "not JSON"),
])
def test_storcli_garbage_is_one_error_and_keeps_the_last_result(tmp_path, garbage, error, caplog):
    storcli = FakeControllerTool(tmp_path, "storcli64")
    for args in ("/call show all J", "/call/vall show all J", "/call/eall/sall show all J"):
        storcli.answer(args, MR + "textfile__storcli_cALL_show_all.json")
    _, config = controller_host(tmp_path, {"storcli": storcli}, ["megaraid"])
    poller = Poller(config)
    try:
        poller.poll_once()
        first = poller.snapshot().host["megaraid"]
        for args in ("/call show all J", "/call/vall show all J", "/call/eall/sall show all J"):
            storcli.answer(args, garbage)
        with caplog.at_level(logging.WARNING, logger="ssdfleet.controllers"):
            poller.poll_once()
            poller.poll_once()
        registry = make_registry(poller.snapshot)
    finally:
        poller.stop()
    assert poller.snapshot().host["megaraid"] is first  # the last good read is kept, with its time
    # each failed call counts (three commands, two polls); each distinct failure is logged once
    assert registry.get_sample_value("ssd_collector_errors_total", {"collector": "megaraid"}) == 6
    warned = [r.getMessage() for r in caplog.records if error in r.getMessage()]
    assert len(warned) == 3, warned


def test_views_do_not_fail_on_an_empty_result():
    from collectors.controller_model import ControllerReport
    from collectors.controller_source import ControllerResult

    result = ControllerResult(family="megaraid", tool="storcli", report=ControllerReport(), read_at=0.0)
    assert VIEW.families(result, []) == [] and VIEW.status_lines(VIEW.api(result, [])) == []
    assert "<table" in VIEW.page(result, [], lambda s: s)


def test_probe_helper_runs_exactly_the_built_commands(tmp_path):
    _, config = controller_host(tmp_path, {}, ["megaraid"])
    validator = Validator(config)
    storcli = config.tools.storcli
    for args in (["/call", "show", "all", "J"], ["/call/vall", "show", "all", "J"], ["/call/eall/sall", "show", "all", "J"]):
        assert validator.check([storcli, *args]).argv == (storcli, *args)
    assert validator.check(["MegaCli64", "-AdpBbuCmd", "-aALL", "-NoLog"]).argv[1:] == ("-AdpBbuCmd", "-aALL", "-NoLog")
    assert validator.check(["ssacli", "ctrl", "all", "show", "config", "detail"]).operation == "config"
    assert validator.check(["arcconf", "GETSTATUS", "2"]).argv[1:] == ("GETSTATUS", "2")
    for bad in ([storcli, "/c0", "set", "wrcache=wt"], [storcli, "/call", "show", "all"],
                ["MegaCli64", "-LDSetProp", "WT", "-LALL", "-aALL"], ["ssacli", "ctrl", "slot=0", "delete"],
                ["arcconf", "SETCACHE", "1", "LOGICALDRIVE", "0", "wt"], ["arcconf", "GETCONFIG", "99", "AL"],
                ["arcconf", "GETCONFIG", "1", "AL", "; reboot"]):
        with pytest.raises(Refused):
            validator.check(bad)
