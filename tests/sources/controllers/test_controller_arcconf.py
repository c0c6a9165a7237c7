"""Adaptec / Microsemi parser (collectors/arcconf/) against real ``arcconf GETCONFIG`` captures of
four generations (ServeRAID 8k-l, Adaptec 3405, 5805Z with a ZMM, 6405 rebuilding a RAID 10) and a
GETSTATUS during that rebuild. Expectations read off the captures."""

from __future__ import annotations

import pytest

from collectors.arcconf import Task, parse_getconfig, parse_getstatus, with_tasks
from collectors.controller_model import ALWAYS_WRITE_BACK, READ_CACHE, WRITE_BACK, WRITE_THROUGH, ParseError
from tests.conftest import fixture_files, read_fixture

F = "arcconf/"
MIB = 2**20


def test_every_arcconf_fixture_is_parsed():
    for path in fixture_files("arcconf"):
        if "getstatus" in path.name:
            assert parse_getstatus(path.read_bytes()), path.name
        else:
            report = parse_getconfig(path.read_bytes())
            assert report.controllers and report.volumes and report.drives, path.name


def test_battery_backed_3405_write_back_when_protected():
    report = parse_getconfig(read_fixture(F + "percona__arcconf-001.txt"))
    (controller,) = report.controllers
    assert (controller.model, controller.serial, controller.firmware) == ("Adaptec 3405", "8C16103E017",
                                                                          "5.2-0 (17304)")
    assert (controller.status, controller.cache_bytes) == ("ok", 128 * MIB)  # "Installed memory : 128 MB"
    (battery,) = report.batteries
    # "Controller Battery Information": Status Optimal, Capacity remaining 99 percent
    assert (battery.kind, battery.state, battery.charge_ratio, battery.present) == ("bbu", "optimal", 0.99, True)
    (volume,) = report.volumes
    assert (volume.name, volume.raid_level, volume.state, volume.size_bytes) == ("raid10", "RAID10", "optimal",
                                                                                 279800 * MIB)
    # "Write-cache setting : Enabled (write-back) when protected by battery" (wbb), mode write-back
    assert volume.default_cache.write == WRITE_BACK and volume.default_cache.cache_when_bad_battery is False
    assert volume.current_cache.write == WRITE_BACK and volume.current_cache.read == READ_CACHE
    assert volume.write_back_lost is False
    assert volume.members == ("0,0", "0,1", "0,2", "0,3")  # "Present (0,0) 3LN6552C00009903T8E4" ...
    # every member's own "Write Cache : Enabled (write-back)": the drives' volatile caches are on
    assert volume.disk_cache == "enabled"
    drive = report.drive("1", "0,0")
    assert (drive.model, drive.serial, drive.firmware, drive.size_bytes) == ("SEAGATE ST3146855SS",
                                                                             "3LN6552C00009903T8E4", "0002", 140014 * MIB)
    assert (drive.write_cache, drive.interface, drive.location) == (True, "SAS", "Connector 0, Device 0")


def test_zmm_flash_module_and_ssd_volumes():
    report = parse_getconfig(read_fixture(F + "percona__arcconf-003_900285.txt"))
    (zmm,) = report.batteries
    assert (zmm.kind, zmm.state, zmm.state_raw) == ("zmm", "optimal", "ZMM Optimal")
    ssd, hdd = report.volumes
    assert (ssd.name, ssd.members) == ("RAID10-A", ("0,0", "0,1", "0,2", "0,3"))
    assert {report.drive("1", m).media for m in ssd.members} == {"ssd"}  # "SSD : Yes"
    assert (hdd.name, hdd.raid_level, hdd.members) == ("RAID1-A", "RAID1", ("0,4", "0,5"))
    assert report.drive("1", "0,4").media == "hdd"


def test_rebuilding_raid10_without_a_zmm_runs_write_back_unprotected():
    report = parse_getconfig(read_fixture(F + "check_raid__issue47_getconfig2.txt"))
    (volume,) = report.volumes
    # "Status of logical device : Degraded" and Device #3 "State : Rebuilding"
    assert (volume.state_raw, volume.state, volume.progress) == ("Degraded", "rebuilding", None)
    assert report.drive("1", "0,3").state == "rebuilding" and report.drive("1", "0,0").state == "online"
    # "Group 1, Segment 1 : Rebuilding (Controller:1,Enclosure:0,Slot:3)" finds the drive by its location
    assert volume.members == ("0,0", "0,1", "0,2", "0,3")
    # "Write-cache setting : Enabled" (wb, not "when protected") and "Write-cache status : On"
    assert volume.default_cache.write == ALWAYS_WRITE_BACK and volume.current_cache.write == ALWAYS_WRITE_BACK
    assert volume.current_cache.cache_when_bad_battery is True
    assert volume.disk_cache == "disabled"  # each drive "Write Cache : Disabled (write-through)"
    (zmm,) = report.batteries
    assert (zmm.present, zmm.state, zmm.state_raw) == (False, "missing", "ZMM not installed")
    tasks = parse_getstatus(read_fixture(F + "check_raid__issue47_getstatus2.txt"))
    assert tasks == (Task(volume="0", operation="Rebuild", status="In Progress", progress=0.01),)
    (rebuilding,) = with_tasks(report, tasks).volumes
    assert (rebuilding.state, rebuilding.progress) == ("rebuilding", 0.01)


def test_old_serveraid_without_battery_and_without_write_cache_support():
    report = parse_getconfig(read_fixture(F + "check_raid__4_arcconf_getconfig_1_al.txt"))
    (controller,) = report.controllers
    assert (controller.model, controller.status, controller.status_raw) == ("IBM ServeRAID 8k-l", "ok", "Okay")
    (battery,) = report.batteries
    assert (battery.present, battery.state) == (False, "missing")  # "Status : Not Installed"
    (volume,) = report.volumes
    # "Logical drive number 1", "Write-cache mode : Not supported", "Drive(s) (Channel,Device) : 0,0 0,1"
    assert (volume.id, volume.name, volume.state) == ("1", "MailMerak", "optimal")
    assert volume.current_cache is None and volume.default_cache is None and volume.write_back_lost is None
    assert volume.members == ("0,0", "0,1") and volume.disk_cache == "enabled"


def test_capture_without_the_closing_line_is_kept_with_a_note():
    report = parse_getconfig(read_fixture(F + "percona__arcconf-002.txt"))
    assert len(report.drives) == 4 and report.volumes[0].name == "Raid10-A"  # the SES device is not a drive
    assert report.notes and "may be truncated" in report.notes[0]


def test_write_cache_turned_off_by_the_controller_is_the_cliff():
    text = read_fixture(F + "percona__arcconf-001.txt").decode().replace(
        "Write-cache mode                         : Enabled (write-back)",
        "Write-cache mode                         : Disabled (write-through)")
    (volume,) = parse_getconfig(text).volumes
    assert volume.current_cache.write == WRITE_THROUGH and volume.write_back_lost is True


def test_task_on_an_unknown_volume_is_noted():
    report = parse_getconfig(read_fixture(F + "percona__arcconf-001.txt"))
    out = with_tasks(report, (Task(volume="7", operation="Rebuild", status="In Progress", progress=0.5),))
    assert out.volumes == report.volumes and "logical device 7" in out.notes[-1]


MALFORMED = [
    ("empty", b"", "empty output"),
    ("blank", b" \n\n", "empty output"),
    ("garbage", b"\xff\x00garbage\nno sections\n", "no controller, logical device or physical device section"),
    ("aborted", b"Controllers found: 1\nInvalid controller number.\nCommand aborted.\n", "Invalid controller number"),
    ("only the closing line", b"Command completed successfully.\n", "no controller, logical device"),
]


@pytest.mark.parametrize("name,data,message", MALFORMED, ids=[m[0] for m in MALFORMED])
def test_malformed_input_is_a_parse_error(name, data, message):
    with pytest.raises(ParseError, match=message):
        parse_getconfig(data)


def test_no_controller_is_an_empty_report():
    report = parse_getconfig(b"Controllers found: 0\n\nCommand completed successfully.\n")
    assert report.controllers == () and report.notes == ("arcconf: no controllers found",)


def test_getstatus_malformed_and_idle():
    with pytest.raises(ParseError, match="empty output"):
        parse_getstatus(b"")
    assert parse_getstatus(b"Controllers found: 1\nLogical device Task:\n   Logical device : 99999999\n\n"
                           b"Command completed successfully.\n") == ()
    assert parse_getstatus(b"Controllers found: 1\n\nCommand completed successfully.\n") == ()


def test_truncated_and_impossible_values_are_withheld():
    text = read_fixture(F + "percona__arcconf-001.txt").decode()
    cut = text[: text.index("      Device #2")]
    report = parse_getconfig(cut)
    assert [d.slot for d in report.drives] == ["0,0", "0,1"] and "truncated" in report.notes[0]
    assert report.volumes[0].members == ("0,0", "0,1", "0,2", "0,3")  # the segment lines name them all
    odd = text.replace("99 percent", "99999 percent").replace("279800 MB", "99999999999999999999 MB").replace(
        "RAID level                               : 10", "RAID level                               : 97")
    report = parse_getconfig(odd)
    assert report.batteries[0].charge_ratio is None
    assert report.volumes[0].size_bytes is None and report.volumes[0].raid_level is None


def test_degraded_ssd_raid10_with_a_missing_drive_write_back_unprotected():
    """issue155: an SSD RAID 10 lost a drive; both volumes cache writes whatever happens (setting
    Enabled (write-back), no battery or ZMM section) and the drives' own caches are on too."""
    report = parse_getconfig(read_fixture(F + "check_raid__issue155_getconfig.txt"))
    hdd, ssd = report.volumes
    assert (ssd.name, ssd.state, ssd.state_raw, ssd.size_bytes) == ("SSD", "degraded", "Degraded", 974838 * MIB)
    assert ssd.members == ("0,2", "0,3", "0,6", "0,7")  # "Inconsistent (0,2)" is still a member
    assert ssd.current_cache.write == ALWAYS_WRITE_BACK and ssd.current_cache.cache_when_bad_battery is True
    assert ssd.disk_cache == "enabled"  # from the three drives present; the missing one has no cache
    assert hdd.state == "optimal" and hdd.disk_cache == "enabled"
    missing = report.drive("1", "0,2")
    # "State : Failed", "Vendor : *MISSING*", "Size : 0 MB", "Write Cache : Unknown"
    assert (missing.state, missing.model, missing.size_bytes, missing.write_cache) == ("failed", None, None, None)
    assert report.drive("1", "0,3").model == "KINGSTON SKC400S37512G"
    assert report.batteries == ()  # nothing printed: no record, neither present nor missing
