"""MegaRAID / PERC parsers (collectors/megaraid/) against real captures: storcli JSON of three CLI
releases on two firmware generations, MegaCli text of every command the fallback uses. Each
expectation below was read off the capture by hand; the comment names the line it comes from."""

from __future__ import annotations

import json

import pytest

from collectors.controller_model import (
    ADAPTIVE_READ_AHEAD,
    IO_CACHED,
    IO_DIRECT,
    NO_READ_AHEAD,
    READ_AHEAD,
    WRITE_BACK,
    WRITE_THROUGH,
    ControllerReport,
    ParseError,
)
from collectors.megaraid import parse_adapter_info, parse_bbu, parse_ldinfo, parse_pdlist, parse_storcli_json
from tests.conftest import fixture_files, read_fixture

F = "megaraid/"
GIB, TIB = 2**30, 2**40

# Which parser reads which capture (every file in the folder is listed: a new one must be added).
PARSERS = {
    "cloudpods__storcli_c0_vall_show_all.json": parse_storcli_json,
    "netdata__storcli_megaraid-controllers-info.json": parse_storcli_json,
    "textfile__storcli_cALL-eALL-sALL_show_all.json": parse_storcli_json,
    "textfile__storcli_cALL_show_all.json": parse_storcli_json,
    "percona__MegaCli64_AdpAllInfo_aALL001.txt": parse_adapter_info,
    "percona__MegaCli64_LdPdInfo_aALL_886223.txt": parse_ldinfo,
    "check_raid__issue39_batteries.ldinfo.txt": parse_ldinfo,
    "check_raid__issue39_batteries.ldinfo.3.txt": parse_ldinfo,
    "check_raid__issue123_ldinfo.txt": parse_ldinfo,
    "check_raid__issue39_batteries.bbustatus.txt": parse_bbu,
    "check_raid__issue39_batteries.bbustatus.3.txt": parse_bbu,
    "check_raid__issue45_MegaCli64-adpbbucmd.txt": parse_bbu,
    "check_raid__issue32_bbustatus.MegaCli-8.07.10-1.txt": parse_bbu,
    "check_raid__pr74_pdlist.txt": parse_pdlist,
}


def test_every_megaraid_fixture_is_parsed_by_its_parser():
    names = sorted(p.name for p in fixture_files("megaraid"))
    assert names == sorted(PARSERS)
    for name, parser in PARSERS.items():
        report = parser(read_fixture(F + name))
        assert report.controllers or report.volumes or report.drives or report.batteries, name
        assert report.notes == (), name


# --------------------------------------------------------------------------- storcli JSON


def test_storcli_2020_show_all_sas3108_cachevault():
    report = parse_storcli_json(read_fixture(F + "textfile__storcli_cALL_show_all.json"))
    (controller,) = report.controllers
    # Basics / Version / HwCfg / Defaults of a Fujitsu PRAID EP420i, firmware 4.680.00-8417
    assert (controller.model, controller.serial, controller.firmware) == ("PRAID EP420i", "0000000061913681",
                                                                          "4.680.00-8417")
    assert (controller.status, controller.status_raw) == ("ok", "Optimal")
    assert controller.cache_bytes == 2048 * 2**20  # "On Board Memory Size" : "2048MB"
    assert controller.cache_when_bad_battery is False  # "Cache When BBU Bad" : "Off"
    (volume,) = report.volumes
    # VD LIST: "0/0", RAID6, Optl, Cache RWBD, 1.745 TB
    assert (volume.id, volume.raid_level, volume.state, volume.state_raw) == ("0", "RAID6", "optimal", "Optl")
    assert volume.current_cache.write == WRITE_BACK and volume.current_cache.read == READ_AHEAD
    assert volume.current_cache.io == IO_DIRECT and volume.current_cache.cache_when_bad_battery is False
    assert volume.size_bytes == round(1.745 * TIB)
    assert volume.disk_cache == "default"  # TOPOLOGY DG 0 "PDC" : "dflt"
    assert volume.default_cache is None and volume.write_back_lost is None  # show all has no initial setting
    assert volume.members == ("252:0", "252:1", "252:4", "252:5")
    # PD LIST: the DID is the N of smartctl -d megaraid,N
    assert {d.slot: d.device_id for d in report.drives} == {"252:0": 2, "252:1": 3, "252:4": 7, "252:5": 6}
    assert {(d.media, d.interface, d.model) for d in report.drives} == {("ssd", "SATA", "Micron_5200_MTFDDAK960TDC")}
    (battery,) = report.batteries
    # Cachevault_Info CVPM02 Optimal 18C; Scheduled Tasks "Next Battery Learn" : "06/03/2023, 10:00:00"
    assert (battery.kind, battery.model, battery.state, battery.temperature_celsius) == ("cachevault", "CVPM02",
                                                                                        "optimal", 18.0)
    assert battery.next_learn == "2023-06-03T10:00:00"


def test_storcli_2023_show_all_sas2108_bbu():
    report = parse_storcli_json(read_fixture(F + "netdata__storcli_megaraid-controllers-info.json"))
    (controller,) = report.controllers
    assert (controller.model, controller.firmware) == ("ServeRAID M5015 SAS/SATA Controller", "2.130.403-4660")
    assert controller.cache_bytes == 512 * 2**20
    (volume,) = report.volumes
    assert (volume.name, volume.raid_level, volume.state) == ("Sluthub", "RAID6", "optimal")
    assert volume.current_cache.write == WRITE_BACK
    assert volume.disk_cache == "disabled"  # "PDC": "dsbl": the drives' own caches are off
    assert len(report.drives) == 6 and {d.media for d in report.drives} == {"hdd"}
    (battery,) = report.batteries
    # BBU_Info: iBBU08, Optimal, 34C, "Next Learn": "2024/04/18  18:32:56"
    assert (battery.kind, battery.model, battery.state, battery.temperature_celsius) == ("bbu", "iBBU08", "optimal",
                                                                                        34.0)
    assert battery.next_learn == "2024-04-18T18:32:56" and battery.present


def test_storcli_vall_gives_default_and_current_write_policy():
    report = parse_storcli_json(read_fixture(F + "cloudpods__storcli_c0_vall_show_all.json"))
    volumes = {v.id: v for v in report.volumes}
    assert sorted(volumes) == ["0", "1", "2", "3", "4", "5", "6"]
    ssd = volumes["0"]  # /c0/v0: RAID1 RWBD of two Samsung SSDs, initial setting WriteBack, /dev/sda
    assert (ssd.raid_level, ssd.os_device, ssd.members) == ("RAID1", "/dev/sda", ("8:0", "8:1"))
    assert ssd.current_cache.write == WRITE_BACK and ssd.default_cache.write == WRITE_BACK
    assert ssd.write_back_lost is False
    assert ssd.disk_cache == "default"  # "Disk Cache Policy" : "Disk's Default"
    single = volumes["2"]  # /c0/v2: RAID0 NRWTD, initial setting WriteThrough: write-through by choice
    assert single.current_cache.write == WRITE_THROUGH and single.current_cache.read == NO_READ_AHEAD
    assert single.default_cache.write == WRITE_THROUGH and single.write_back_lost is False
    assert report.drive("0", "8:0").device_id == 16 and report.drive("0", "8:0").media == "ssd"
    assert report.controllers == () and report.batteries == ()


def test_storcli_drive_details_give_serials_and_temperatures():
    report = parse_storcli_json(read_fixture(F + "textfile__storcli_cALL-eALL-sALL_show_all.json"))
    first = report.drive("0", "252:0")
    assert (first.serial, first.firmware, first.device_id) == ("20032656D641", "D1MU004", 2)
    assert first.temperature_celsius == 21.0  # " 21C (69.80 F)"
    assert first.write_cache is None  # "Write Cache" : "N/A" is withheld, not false
    assert sorted(d.serial for d in report.drives) == ["20032656D5D1", "20032656D63C", "20032656D641",
                                                       "20032656D649"]


def test_storcli_show_all_and_drive_details_merge_into_one_record_per_drive():
    summary = parse_storcli_json(read_fixture(F + "textfile__storcli_cALL_show_all.json"))
    detail = parse_storcli_json(read_fixture(F + "textfile__storcli_cALL-eALL-sALL_show_all.json"))
    merged = summary.merged(detail)
    assert len(merged.drives) == 4 and len(merged.volumes) == 1 and len(merged.controllers) == 1
    assert merged.drive("0", "252:5").serial == "20032656D5D1"  # the detailed record wins
    assert merged.volumes[0].members == ("252:0", "252:1", "252:4", "252:5")


# --------------------------------------------------------------------------- MegaCli


def test_megacli_adapter_info_perc6():
    (controller,) = parse_adapter_info(read_fixture(F + "percona__MegaCli64_AdpAllInfo_aALL001.txt")).controllers
    assert (controller.model, controller.serial, controller.firmware) == ("PERC 6/i Integrated", "1122334455667788",
                                                                          "1.11.52-0349")
    assert controller.cache_bytes == 256 * 2**20  # "Memory Size     : 256MB"
    assert controller.cache_when_bad_battery is False  # "Cache When BBU Bad : Disabled"


def test_megacli_ldinfo_write_through_while_write_back_with_bad_battery():
    """The cliff: issue39's RAID 5 runs write-through, its default is write-back, and its policy
    says No Write Cache if Bad BBU; the same host's battery wants replacing (next test)."""
    (volume,) = parse_ldinfo(read_fixture(F + "check_raid__issue39_batteries.ldinfo.txt")).volumes
    assert (volume.raid_level, volume.state) == ("RAID5", "optimal")
    assert volume.default_cache.write == WRITE_BACK and volume.current_cache.write == WRITE_THROUGH
    assert volume.default_cache.cache_when_bad_battery is False  # NoCachedBadBBU
    assert volume.write_back_lost is True
    assert volume.size_bytes == round(24.555 * TIB)


def test_megacli_battery_replacement_required():
    (battery,) = parse_bbu(read_fixture(F + "check_raid__issue39_batteries.bbustatus.txt")).batteries
    # "Battery state: " is empty in this MegaCli: the flags say it
    assert (battery.state, battery.state_raw, battery.replacement_required) == ("failed", "", True)
    assert (battery.kind, battery.model, battery.charge_ratio, battery.temperature_celsius) == ("bbu", "iBBU", 0.97,
                                                                                               30.0)
    assert battery.learn_active is False


def test_megacli_battery_in_a_learn_cycle_and_its_volume_still_write_back():
    (battery,) = parse_bbu(read_fixture(F + "check_raid__issue39_batteries.bbustatus.3.txt")).batteries
    assert (battery.state, battery.state_raw, battery.learn_active) == ("non-operational", "Non Operational", True)
    assert battery.replacement_required is False and battery.charge_ratio == 1.0
    (volume,) = parse_ldinfo(read_fixture(F + "check_raid__issue39_batteries.ldinfo.3.txt")).volumes
    assert volume.current_cache.write == WRITE_BACK and volume.current_cache.read == ADAPTIVE_READ_AHEAD
    assert volume.write_back_lost is False


def test_megacli_later_battery_layout_and_no_battery():
    (battery,) = parse_bbu(read_fixture(F + "check_raid__issue45_MegaCli64-adpbbucmd.txt")).batteries
    assert (battery.state, battery.model, battery.charge_ratio, battery.temperature_celsius) == ("optimal", "iBBU08",
                                                                                                0.98, 34.0)
    (absent,) = parse_bbu(read_fixture(F + "check_raid__issue32_bbustatus.MegaCli-8.07.10-1.txt")).batteries
    assert (absent.present, absent.state, absent.controller) == (False, "missing", "0")


def test_megacli_cachecade_volume_write_through_with_disk_cache_on():
    (volume,) = parse_ldinfo(read_fixture(F + "check_raid__issue123_ldinfo.txt")).volumes
    assert volume.write_back_lost is True and volume.current_cache.io == IO_CACHED
    assert volume.disk_cache == "enabled"  # "Disk Cache Policy   : Enabled"


def test_megacli_ldpdinfo_spanned_mirror_and_its_drives():
    report = parse_ldinfo(read_fixture(F + "percona__MegaCli64_LdPdInfo_aALL_886223.txt"))
    (volume,) = report.volumes
    # "Primary-1, Secondary-3" with "Span Depth : 2" is a RAID 10
    assert (volume.raid_level, volume.state, volume.size_bytes) == ("RAID10", "optimal", round(135.5 * GIB))
    assert volume.members == ("32:0", "32:1", "32:2", "32:3")
    first = report.drive("0", "32:0")
    # "Inquiry Data: SEAGATE ST973451SS      SM043PD2JH68": vendor, product, revision, serial
    assert (first.model, first.firmware, first.serial, first.device_id) == ("ST973451SS", "SM04", "3PD2JH68", 0)
    assert (first.write_cache, first.temperature_celsius, first.media) == (False, 35.0, "hdd")


def test_megacli_pdlist_old_layout():
    report = parse_pdlist(read_fixture(F + "check_raid__pr74_pdlist.txt"))
    assert [d.slot for d in report.drives] == ["32:0", "32:1", "32:2", "32:3", "32:4", "32:5"]
    first = report.drives[0]
    # "Inquiry Data: ATA     ST9500620NS     FTA1            9XF1KAGA": a SAT-translated inquiry
    assert (first.model, first.firmware, first.serial) == ("ST9500620NS", "FTA1", "9XF1KAGA")
    assert first.size_bytes == 476940 * 2**20 and first.state == "online"


def test_megacli_sata_identify_inquiry_is_withheld_not_cut_wrong():
    # Later MegaCli prints an ATA drive's serial, model and firmware run together (a rebuild
    # capture quoted in public docs); the columns cannot be cut safely.
    text = ("Adapter #0\n\nEnclosure Device ID: 252\nSlot Number: 3\nDevice Id: 6\nPD Type: SATA\n"
            "Firmware state: Rebuild\n"
            "Inquiry Data:       PN2234P8JYP59YHGST HUS724030ALA640                    MF8OAA70\n")
    (drive,) = parse_pdlist(text).drives
    assert (drive.model, drive.serial, drive.state, drive.device_id) == (None, None, "rebuilding", 6)


# --------------------------------------------------------------------------- malformed input

TRUNCATED = read_fixture(F + "textfile__storcli_cALL_show_all.json")[:5000]
FAILED = json.dumps({"Controllers": [{"Command Status": {"Controller": 0, "Status": "Failure",
                                                         "Description": "Controller 0 not found"}}]})


def _storcli(response):
    return json.dumps({"Controllers": [{"Command Status": {"Controller": 0, "Status": "Success"},
                                        "Response Data": response}]})


STORCLI_MALFORMED = [
    ("empty", b"", "empty output"),
    ("blank", b"  \n", "empty output"),
    ("truncated", TRUNCATED, "not JSON"),
    ("garbage", b"\xff\xfe\x00\x01 storcli: command not found", "not JSON"),
    ("not an object", b"[]", "no 'Controllers' list"),
    ("no controllers", b'{"Controllers": []}', "no 'Controllers' list"),
    ("no command status", b'{"Controllers": [{}]}', "no 'Command Status'"),
    ("failed command", FAILED.encode(), "controller 0: command status 'Failure': Controller 0 not found"),
    ("response not an object", _storcli([1, 2]).encode(), "'Response Data' is not an object"),
    ("deep nesting", b"[" * 100000, "not JSON"),
]


@pytest.mark.parametrize("name,data,message", STORCLI_MALFORMED, ids=[m[0] for m in STORCLI_MALFORMED])
def test_storcli_malformed_input_is_a_parse_error(name, data, message):
    with pytest.raises(ParseError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_storcli_json(data)


def test_storcli_impossible_values_are_withheld_never_raised():
    report = parse_storcli_json(_storcli({
        "Basics": {"Model": "X", "Serial Number": 12}, "HwCfg": {"On Board Memory Size": "99999999999999999999MB"},
        "VD LIST": [{"DG/VD": "0/0", "TYPE": "RAID1", "State": "Weird", "Cache": "XYZ", "Size": "1e400 TB"}],
        "PD LIST": [{"EID:Slt": "252:0", "DID": 10**30, "State": "Onln", "DG": 0, "Size": "-5 GB"},
                    {"EID:Slt": None, "DID": 1}],
        "BBU_Info": [{"State": "Optimal", "Temp": "99999C", "Next Learn": "2024/13/45  99:99:99"}],
    }))
    (volume,) = report.volumes
    assert (volume.state, volume.current_cache, volume.size_bytes) == ("unknown", None, None)
    (drive,) = report.drives  # the row without a slot is left out
    assert (drive.device_id, drive.size_bytes) == (None, None)
    assert report.controllers[0].serial is None and report.controllers[0].cache_bytes is None
    (battery,) = report.batteries
    assert (battery.temperature_celsius, battery.next_learn) == (None, None)


def test_storcli_response_without_known_sections_is_noted():
    report = parse_storcli_json(_storcli({"Product Name": None, "Something": {}}))
    assert report.controllers  # "Product Name" marks a controller answer even when empty
    empty = parse_storcli_json(_storcli({"Something": {}}))
    assert empty == ControllerReport(notes=empty.notes) and "nothing this parser reads" in empty.notes[0]


MEGACLI_MALFORMED = [
    (parse_ldinfo, b"", "empty output"),
    (parse_ldinfo, b"\x00\xff garbage\nno colon here\n", "no 'Virtual Drive"),
    (parse_ldinfo, b"Adapter 0 -- Virtual Drive Information:\n\nExit Code: 0x01\n", "exit code 0x01"),
    (parse_pdlist, b"Adapter #0\n\nExit Code: 0x00\n", "no 'Enclosure Device ID'"),
    (parse_pdlist, b"", "empty output"),
    (parse_adapter_info, b"Product Name : x\n", "no 'Adapter #N'"),
    (parse_adapter_info, b"Adapter #0\nProduct Name : x\nExit Code: 0x05\n", "exit code 0x05"),
    (parse_bbu, b"", "empty output"),
    (parse_bbu, b"Relative State of Charge: 97 %\n", "no 'BBU status for Adapter'"),
    (parse_bbu, b"Adapter 0: Get BBU Status Failed.\n\nExit Code: 0x01\n", "exit code 0x01"),
]


@pytest.mark.parametrize("parser,data,message", MEGACLI_MALFORMED)
def test_megacli_malformed_input_is_a_parse_error(parser, data, message):
    with pytest.raises(ParseError, match=message):
        parser(data)


def test_megacli_truncated_and_impossible_values_are_withheld():
    text = read_fixture(F + "check_raid__issue39_batteries.ldinfo.txt").decode()
    cut = text[: text.index("Current Cache Policy")]  # the output stops mid-volume
    (volume,) = parse_ldinfo(cut).volumes
    assert volume.current_cache is None and volume.write_back_lost is None
    assert volume.default_cache.write == WRITE_BACK
    battery_text = ("BBU status for Adapter: 0\nBatteryType: iBBU\nTemperature: 100000 C\n"
                    "Relative State of Charge: 99999 %\nBattery State: Optimal\n")
    (battery,) = parse_bbu(battery_text).batteries
    assert (battery.temperature_celsius, battery.charge_ratio, battery.state) == (None, None, "optimal")
    drives = parse_pdlist("Enclosure Device ID: 32\nSlot Number: 99999999999999999999\n"
                          "Enclosure Device ID: 32\nSlot Number: 1\nDevice Id: 99999999999999999999\n").drives
    assert [(d.slot, d.device_id) for d in drives] == [("32:1", None)]
