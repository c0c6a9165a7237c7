"""HPE Smart Array parser (collectors/ssacli/) against real hpacucli captures: ``show config
detail`` of two controllers, ``show config`` (one line per item, with a degraded RAID 5),
``show status``, and the answer of a host with no Smart Array. Expectations read off the captures."""

from __future__ import annotations

import pytest

from collectors.controller_model import (
    ALWAYS_WRITE_BACK,
    NO_READ_CACHE,
    READ_CACHE,
    WRITE_BACK,
    WRITE_THROUGH,
    ControllerReport,
    ParseError,
)
from collectors.ssacli import parse_ssacli
from tests.conftest import fixture_files, read_fixture

F = "ssacli/"


def test_every_ssacli_fixture_is_parsed():
    for path in fixture_files("ssacli"):
        report = parse_ssacli(path.read_bytes())
        assert report.controllers or report.notes == ("ssacli: no controllers detected",), path.name


def test_config_detail_two_controllers_batteries_and_cache():
    report = parse_ssacli(read_fixture(F + "percona__hpaculi-002.txt"))
    p410, p800 = report.controllers
    assert (p410.id, p410.model, p410.serial, p410.firmware) == ("0", "Smart Array P410i", "50123456789ABCDE", "2.74")
    assert (p800.id, p800.model, p800.firmware) == ("1", "Smart Array P800", "5.22")
    assert (p410.cache_bytes, p800.cache_bytes) == (256 * 2**20, 512 * 2**20)  # "Total Cache Size: 256 MB"
    assert p410.status == "ok" and p410.disk_cache == "disabled"  # "Drive Write Cache: Disabled"
    assert p410.cache_when_bad_battery is False  # "No-Battery Write Cache: Disabled"
    volume = report.volume("0", "1")
    # "Fault Tolerance: RAID 1+0", "Size: 410.1 GB" (binary: 3 x 146.8e9 bytes), "Array Accelerator: Enabled"
    assert (volume.raid_level, volume.state, volume.os_device) == ("RAID10", "optimal", "/dev/cciss/c0d0")
    assert volume.size_bytes == round(410.1 * 2**30)
    assert volume.default_cache.write == WRITE_BACK and volume.default_cache.read == READ_CACHE
    assert volume.current_cache.write == WRITE_BACK  # "Cache Status: OK"
    assert volume.write_back_lost is False and volume.disk_cache == "disabled"
    assert volume.members == ("1I:1:1", "1I:1:2", "1I:1:3", "1I:1:4", "2I:1:5", "2I:1:6")
    assert len(report.volume("1", "1").members) == 10
    drive = report.drive("0", "1I:1:1")
    assert (drive.model, drive.serial, drive.firmware) == ("HP EH0146FAWJB", "3TB150EA00009027YKMS", "HPDD")
    assert (drive.media, drive.interface, drive.size_bytes) == ("hdd", "SAS", 146 * 10**9)  # 15000 rpm
    batteries = {b.controller: b for b in report.batteries}
    # "Cache Backup Power Source: Batteries", "Battery/Capacitor Status: OK"
    assert (batteries["0"].kind, batteries["0"].state, batteries["0"].replacement_required) == ("bbu", "optimal",
                                                                                               False)
    assert batteries["1"].state == "optimal"


def test_short_config_degraded_volume_interim_recovery():
    report = parse_ssacli(read_fixture(F + "check_raid__hpacucli.interim_recovery_mode.show.txt"))
    (controller,) = report.controllers  # the FIRMWARE UPGRADE REQUIRED banner above is not one
    assert controller.model == "Smart Array E200i"
    (volume,) = report.volumes
    # "logicaldrive 1 (136.7 GB, RAID 5, Interim Recovery Mode)"
    assert (volume.raid_level, volume.state, volume.state_raw) == ("RAID5", "degraded", "Interim Recovery Mode")
    assert volume.size_bytes == round(136.7 * 2**30) and volume.current_cache is None


def test_short_config_with_serial_in_the_header():
    report = parse_ssacli(read_fixture(F + "percona__hpaculi-001.txt"))
    (controller,) = report.controllers
    assert (controller.model, controller.serial) == ("Smart Array P400i", "PH73MU7325")  # "(sn: PH73MU7325     )"
    (volume,) = report.volumes
    assert (volume.raid_level, volume.state, volume.members) == ("RAID1", "optimal", ("1I:1:1", "1I:1:2"))
    assert {d.size_bytes for d in report.drives} == {146 * 10**9}


def test_show_status_and_no_controller():
    report = parse_ssacli(read_fixture(F + "percona__hpaculi-003.txt"))
    assert [(c.id, c.status) for c in report.controllers] == [("0", "ok"), ("1", "ok")]
    assert [b.state for b in report.batteries] == ["optimal", "optimal"]
    empty = parse_ssacli(read_fixture(F + "check_raid__pr207_controller.txt"))  # "Error: No controllers detected."
    assert empty == ControllerReport(notes=("ssacli: no controllers detected",))


def _detail(cache_status: str, no_battery: str = "Disabled", battery: str = "Failed (Replace Batteries/Capacitors)"):
    """hpaculi-002's first controller with its cache and battery lines changed the way a failed
    battery changes them (HPE: the cache is "Temporarily Disabled" until the battery is replaced)."""
    text = read_fixture(F + "percona__hpaculi-002.txt").decode()
    text = text.replace("   Cache Status: OK\n", f"   Cache Status: {cache_status}\n", 1)
    text = text.replace("   No-Battery Write Cache: Disabled\n", f"   No-Battery Write Cache: {no_battery}\n", 1)
    return text.replace("   Battery/Capacitor Status: OK\n", f"   Battery/Capacitor Status: {battery}\n", 1)


def test_cache_disabled_by_a_failed_battery_is_the_write_back_cliff():
    report = parse_ssacli(_detail("Temporarily Disabled"))
    volume = report.volume("0", "1")
    assert volume.default_cache.write == WRITE_BACK and volume.current_cache.write == WRITE_THROUGH
    assert volume.write_back_lost is True
    battery = next(b for b in report.batteries if b.controller == "0")
    assert (battery.state, battery.replacement_required) == ("failed", True)
    assert report.volume("1", "1").write_back_lost is False  # the other controller's cache is fine


def test_no_battery_write_cache_keeps_write_back_without_protection():
    volume = parse_ssacli(_detail("Temporarily Disabled", no_battery="Enabled")).volume("0", "1")
    assert volume.default_cache.write == ALWAYS_WRITE_BACK and volume.current_cache.write == ALWAYS_WRITE_BACK
    assert volume.default_cache.cache_when_bad_battery is True and volume.write_back_lost is False


def test_accelerator_disabled_volume_is_write_through_by_choice():
    text = read_fixture(F + "percona__hpaculi-002.txt").decode().replace("Array Accelerator: Enabled",
                                                                          "Array Accelerator: Disabled", 1)
    volume = parse_ssacli(text).volume("0", "1")
    assert volume.default_cache.write == WRITE_THROUGH and volume.default_cache.read == NO_READ_CACHE
    assert volume.write_back_lost is False


@pytest.mark.parametrize("status,state,progress", [
    ("OK", "optimal", None), ("Interim Recovery Mode", "degraded", None), ("Ready for Rebuild", "degraded", None),
    ("Recovering, 26% complete", "rebuilding", 0.26), ("Failed", "failed", None), ("Recovering, 900% complete",
                                                                                    "rebuilding", None),
    ("Something New", "unknown", None),
])
def test_logical_drive_states(status, state, progress):
    text = f"Smart Array 6i in Slot 0 (Embedded)\n   array A\n      logicaldrive 1 (33.9 GB, RAID 1, {status})\n"
    (volume,) = parse_ssacli(text).volumes
    assert (volume.state, volume.progress, volume.state_raw) == (state, progress, status)


MALFORMED = [
    ("empty", b"", "empty output"),
    ("blank", b"\n  \n", "empty output"),
    ("garbage", b"\xff\xfe garbage\x00\nnot a controller\n", "no '... in Slot N' controller line"),
    ("error", b"\nError: The controller must be identified by slot, chassisname, wwn,\n", "controller must be"),
    ("banner only", b"FIRMWARE UPGRADE REQUIRED: A firmware update is recommended\n", "no '... in Slot N'"),
]


@pytest.mark.parametrize("name,data,message", MALFORMED, ids=[m[0] for m in MALFORMED])
def test_malformed_input_is_a_parse_error(name, data, message):
    with pytest.raises(ParseError, match=message.replace("(", r"\(")):
        parse_ssacli(data)


def test_truncated_and_impossible_values_are_withheld():
    text = read_fixture(F + "percona__hpaculi-002.txt").decode()
    cut = text[: text.index("      physicaldrive 1I:1:4\n")]  # stops after three drive blocks
    report = parse_ssacli(cut)
    assert [d.slot for d in report.drives] == ["1I:1:1", "1I:1:2", "1I:1:3"]
    assert report.volume("0", "1").members == ("1I:1:1", "1I:1:2", "1I:1:3")
    odd = ("Smart Array X in Slot 3\n   Total Cache Size: 99999999999999999999 MB\n   Controller Status: Weird\n"
           "   array A\n      logicaldrive 1 (1e99 GB, RAID 99999, OK)\n"
           "      physicaldrive 1I:1:1 (port 1I:box 1:bay 1, SAS, -3 GB, OK)\n"
           "      physicaldrive 1I:1:2\n         Current Temperature (C): 9999\n")
    report = parse_ssacli(odd)
    assert report.controllers[0].cache_bytes is None and report.controllers[0].status == "degraded"
    assert report.volumes[0].size_bytes is None and report.volumes[0].raid_level is None
    assert [d.size_bytes for d in report.drives] == [None, None]
    assert report.drive("3", "1I:1:2").temperature_celsius is None
