"""Plain-text smartctl parser: real captures from smartmontools 5.0 (2002) to 7.5 (2025).

Expected values were read off the raw files by hand; the line they come from is quoted
next to each check where it is not obvious.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

import pytest
import yaml

from collectors.model import ParseError
from collectors.smartctl import NoSmartData, ScanEntry, normalise_smartctl, parse_scan_text, parse_smartctl_json
from collectors.smartctl.text_report import (
    parse_smartctl_text,
    parse_smartctl_text_reading,
    smartctl_version,
)
from tests.conftest import ROOT, fixture_files, fixture_path, read_fixture

FOLDER = "smartctl-text"
LINUXHW = f"{FOLDER}/linuxhw-EnterpriseDrive__"


def load(name: str) -> str:
    # The probe decodes smartctl's bytes as UTF-8 with replacement: Windows builds print
    # digit grouping in the console code page (byte 0xA0), which must not stop the parse.
    return read_fixture(name).decode("utf-8", errors="replace")


def attribute(doc: Dict[str, Any], attr_id: int) -> Dict[str, Any]:
    rows = [a for a in doc["ata_smart_attributes"]["table"] if a["id"] == attr_id]
    assert len(rows) == 1, f"attribute {attr_id} appears {len(rows)} times"
    return rows[0]


def devstat(doc: Dict[str, Any], name: str) -> Optional[int]:
    for page in doc["ata_device_statistics"]["pages"]:
        for entry in page["table"]:
            if entry["name"] == name:
                return entry.get("value")
    raise AssertionError(f"no device statistic {name!r}")


# --------------------------------------------------------------------------- real files

def check_intel_s4510_brief_layout_failed(doc: Dict[str, Any]) -> None:
    # smartctl 7.4 -x, brief FLAGS layout, "SMART overall-health ... FAILED!" and
    # "184 End-to-End_Error_Count  PO--CK   090   090   090    NOW  10"
    assert doc["smartctl"]["version"] == [7, 4]
    assert doc["smartctl"]["svn_revision"] == "5530"
    assert doc["device"]["protocol"] == "ATA"
    assert doc["smart_status"] == {"passed": False}
    assert "serial_number" not in doc  # "Serial Number:    --" (hw-probe anonymised it)
    assert "wwn" not in doc  # "LU WWN Device Id: 5 5cd2e4 ..."
    assert doc["user_capacity"]["bytes"] == 1_920_383_410_176
    assert (doc["logical_block_size"], doc["physical_block_size"]) == (512, 4096)
    assert doc["rotation_rate"] == 0  # "Rotation Rate:    Solid State Device"
    e2e = attribute(doc, 184)
    assert e2e["when_failed"] == "now"
    assert (e2e["value"], e2e["worst"], e2e["thresh"]) == (90, 90, 90)
    assert e2e["flags"]["string"] == "PO--CK "
    assert e2e["flags"]["value"] == 0x33 and e2e["flags"]["prefailure"] is True
    temp190 = attribute(doc, 190)
    assert temp190["raw"] == {"string": "23 (Min/Max 20/28)", "value": 23}
    assert attribute(doc, 234)["raw"] == {"string": "0/0", "value": 0}
    assert attribute(doc, 241)["raw"]["value"] == 20439331
    assert doc["power_on_time"] == {"hours": 43665}
    assert doc["power_cycle_count"] == 60
    assert doc["temperature"]["current"] == 23
    assert doc["temperature"]["lifetime_max"] == 45  # "Lifetime    Min/Max Temperature:  1/45"
    assert doc["temperature"]["op_limit_max"] == 73
    assert devstat(doc, "Logical Sectors Written") == 1339512008232
    assert devstat(doc, "Percentage Used Endurance Indicator") == 5
    assert doc["write_cache"] == {"enabled": True}


def check_maxtor_5_0_type_layout(doc: Dict[str, Any]) -> None:
    # "smartctl version 5.0-24": no UPDATED column, hex flags, 2002.
    assert doc["smartctl"]["version"] == [5, 0]
    assert doc["smartctl"]["release"] == 24
    assert doc["model_name"] == "MAXTOR 4K080H4"
    assert doc["serial_number"] == "674205306226"
    assert doc["firmware_version"] == "A08.1500"
    assert doc["ata_smart_attributes"]["revision"] == 11
    assert len(doc["ata_smart_attributes"]["table"]) == 16
    realloc = attribute(doc, 5)  # "  5 Reallocated_Sector_Ct   0x0033   100   100   020    Pre-fail     -       1"
    assert (realloc["value"], realloc["thresh"], realloc["raw"]["value"]) == (100, 20, 1)
    assert realloc["flags"]["value"] == 0x33 and realloc["flags"]["string"] == "PO--CK "
    assert attribute(doc, 1)["flags"]["string"] == "P--R-K "  # 0x0029
    assert doc["smart_status"] == {"passed": True}
    assert doc["power_on_time"] == {"hours": 1992}
    assert doc["ata_smart_error_log"]["summary"]["count"] == 11


def check_wd800jd_failing_now_and_past(doc: Dict[str, Any]) -> None:
    # 5.37 with -F-style letter flags in the old layout, "M" for the self-preserving bit.
    assert smartctl_version(load(f"{FOLDER}/gsmartcontrol__smartmon-site_WD800JD.txt.funky_attrs.txt")) == (5, 37)
    assert doc["smart_status"] == {"passed": False}
    assert attribute(doc, 5)["when_failed"] == "now"  # FAILING_NOW 562
    assert attribute(doc, 5)["raw"]["value"] == 562
    assert attribute(doc, 190)["when_failed"] == "past"  # In_the_past 18
    assert attribute(doc, 9)["flags"]["string"] == "-O--CK "  # "-O--CM"
    assert attribute(doc, 12)["when_failed"] == ""
    assert doc["model_family"] == "Western Digital Caviar SE (Serial ATA) family"
    assert doc["user_capacity"] == {"bytes": 80_032_038_912}


def check_toshiba_names_with_spaces(doc: Dict[str, Any]) -> None:
    # smartctl 5.1-7: "240 Head flying hours       0x0001   100   100   001    Pre-fail     -       0"
    names = {a["id"]: a["name"] for a in doc["ata_smart_attributes"]["table"]}
    assert names[240] == "Head flying hours"
    assert attribute(doc, 240)["thresh"] == 1
    assert doc["power_on_time"] == {"hours": 39}


def check_hitachi_hours_plus_minutes(doc: Dict[str, Any]) -> None:
    # smartctl 5.0-25: "  9 Power_On_Hours  0x0032   099   099   060    Old_age      -       701 h + 42 m"
    assert doc["model_name"] == "HITACHI_DK23BA-20"  # trailing padding stripped
    assert attribute(doc, 9)["raw"] == {"string": "701 h + 42 m", "value": 701}
    assert doc["power_on_time"] == {"hours": 701, "minutes": 42}


def check_samsung_nvme_failed(doc: Dict[str, Any]) -> None:
    log = doc["nvme_smart_health_information_log"]
    assert doc["device"]["protocol"] == "NVMe"
    assert doc["smart_status"] == {"passed": False, "nvme": {"value": 0x0D}}
    assert log["critical_warning"] == 0x0D
    assert log["available_spare"] == 1 and log["available_spare_threshold"] == 10
    assert log["percentage_used"] == 113
    assert log["data_units_read"] == 39_078_842
    assert log["data_units_written"] == 268_638_668
    assert log["host_writes"] == 17_368_230_920
    assert log["power_on_hours"] == 2683 and log["unsafe_shutdowns"] == 18
    assert log["num_err_log_entries"] == 22
    assert log["temperature_sensors"] == [45, 64]
    assert doc["nvme_total_capacity"] == 250_059_350_016
    assert doc["user_capacity"]["bytes"] == 250_059_350_016  # "Namespace 1 Size/Capacity"
    assert doc["nvme_namespaces"][0]["utilization"] == {"bytes": 215_203_880_960}
    assert doc["nvme_ieee_oui_identifier"] == 0x002538
    assert doc["temperature"] == {"current": 45}
    assert doc["power_cycle_count"] == 30


def check_nvme_swiss_grouping(doc: Dict[str, Any]) -> None:
    # de_CH locale: "Data Units Written:  49’987’853 [25.5 TB]", "Power On Hours: 6’433"
    log = doc["nvme_smart_health_information_log"]
    assert log["data_units_written"] == 49_987_853
    assert log["power_on_hours"] == 6433
    assert doc["nvme_total_capacity"] == 2_000_398_934_016
    assert doc["serial_number"] == "215119800624"


def check_windows_nbsp_grouping(doc: Dict[str, Any]) -> None:
    # Windows console code page: "User Capacity: 240<0xA0>057<0xA0>409<0xA0>536 bytes"
    assert doc["smartctl"]["platform_info"] == "x86_64-w64-mingw32-w10-b19045"
    assert doc["user_capacity"]["bytes"] == 240_057_409_536
    assert doc["serial_number"] == "LKC125R001176"
    assert attribute(doc, 169)["name"] == "Unknown_Attribute"


def check_nvme_pre_release_banner(doc: Dict[str, Any]) -> None:
    assert doc["smartctl"]["version"] == [7, 4]
    assert doc["smartctl"]["pre_release"] is True
    assert doc["smartctl"]["platform_info"] == "x86_64-w64-mingw32-w10-22H2"
    assert doc["nvme_version"] == {"string": "1.3"}
    assert doc["nvme_smart_health_information_log"]["percentage_used"] == 13


def check_sas_ssd_russian_locale(doc: Dict[str, Any]) -> None:
    # "User Capacity: 7 681 501 126 656 bytes [7,68 TB]"; "write: ... 11472,811 ..."
    assert doc["device"]["protocol"] == "SCSI"
    assert doc["model_name"] == "SAMSUNG MZILT7T6HALA/007"
    assert doc["serial_number"] == "S5DDNE0R801692"
    assert doc["revision"] == "GXA0"
    assert doc["user_capacity"]["bytes"] == 7_681_501_126_656
    assert doc["rotation_rate"] == 0
    assert doc["smart_status"] == {"passed": True}
    assert doc["scsi_percentage_used_endurance_indicator"] == 0
    assert doc["scsi_grown_defect_list"] == 0
    assert doc["temperature"]["current"] == 25  # "Current temperature = 25"
    assert doc["temperature"]["lifetime_max"] == 54
    write = doc["scsi_error_counter_log"]["write"]
    assert write["gigabytes_processed"] == "11472.811"
    assert write["total_uncorrected_errors"] == 0
    assert doc["scsi_error_counter_log"]["read"]["gigabytes_processed"] == "10311.154"
    assert doc["power_on_time"] == {"hours": 146, "minutes": 2}
    assert doc["scsi_start_stop_cycle_counter"]["accumulated_start_stop_cycles"] == 892
    assert doc["logical_unit_id"] == "0x5002538b1184df60"


def check_scsi_5_1(doc: Dict[str, Any]) -> None:
    # 2003: "Device: SEAGATE  ST373207LC       Version: 0005", "SMART Sense: Ok!"
    assert doc["smartctl"]["version"] == [5, 1] and doc["smartctl"]["release"] == 11
    assert doc["vendor"] == "SEAGATE" and doc["product"] == "ST373207LC"
    assert doc["revision"] == "0005"
    assert doc["serial_number"] == "3KT5AGCJ000077052QFF"
    assert doc["smart_status"] == {"passed": True}
    assert doc["temperature"] == {"current": 24, "drive_trip": 68}
    read = doc["scsi_error_counter_log"]["read"]
    assert read["errors_corrected_by_eccfast"] == 56343
    assert read["correction_algorithm_invocations"] == 56344
    assert read["gigabytes_processed"] == "43.729"


def check_hgst_sas_ssd(doc: Dict[str, Any]) -> None:
    assert doc["model_name"] == "HGST HUSMM1640ASS200"
    assert doc["temperature"] == {"current": 28, "drive_trip": 70}
    assert doc["scsi_percentage_used_endurance_indicator"] == 0
    assert doc["write_cache"] == {"enabled": True}  # "Writeback Cache is:   Enabled"


def check_crlf_really_old(doc: Dict[str, Any]) -> None:
    # 5.38 on an ATA-2 drive, CRLF line ends, only seven attributes.
    assert doc["model_name"] == "ST32120A"
    assert doc["user_capacity"] == {"bytes": 2_111_864_832}
    assert [a["id"] for a in doc["ata_smart_attributes"]["table"]] == [1, 3, 4, 5, 7, 10, 12]
    assert attribute(doc, 7)["raw"]["value"] == 1687947712760
    assert doc["power_cycle_count"] == 1019


def check_info_only(doc: Dict[str, Any]) -> None:
    # "smartctl -i": identity, no health; still a drive the agent can list.
    assert doc["model_name"] == "ST31000340AS"
    assert doc["serial_number"] == "9QJ0FFG7"
    assert doc["smart_support"] == {"available": True, "enabled": True}
    assert "smart_status" not in doc and "ata_smart_attributes" not in doc


def check_smart_disabled(doc: Dict[str, Any]) -> None:
    assert doc["smart_support"] == {"available": True, "enabled": False}
    assert doc["serial_number"] == "5ND2QZMQ"


def check_freebsd_samsung(doc: Dict[str, Any]) -> None:
    assert doc["smartctl"]["platform_info"] == "FreeBSD 11.1-RELEASE-p13 amd64"
    assert attribute(doc, 177)["value"] == 1  # Wear_Leveling_Count normalised 001
    assert doc["temperature"]["current"] == 19  # 190 Airflow_Temperature_Cel


def check_old_layout_updated(doc: Dict[str, Any]) -> None:
    # smartctl 7.4 default -a layout (TYPE/UPDATED), Transcend, hex flags.
    assert attribute(doc, 241)["name"] == "Host_Writes_32MiB"
    assert attribute(doc, 241)["flags"]["value"] == 0x30
    assert attribute(doc, 241)["flags"]["updated_online"] is False
    assert attribute(doc, 169)["raw"]["value"] == 100


REAL_FILES: List[Tuple[str, Callable[[Dict[str, Any]], None]]] = [
    (LINUXHW + "SSD_Intel_SSDSC2KB019T8_AD89C82F2AC1.txt", check_intel_s4510_brief_layout_failed),
    (f"{FOLDER}/gsmartcontrol__smartmon-site_MAXTOR-0.txt", check_maxtor_5_0_type_layout),
    (f"{FOLDER}/gsmartcontrol__smartmon-site_WD800JD.txt.funky_attrs.txt", check_wd800jd_failing_now_and_past),
    (f"{FOLDER}/gsmartcontrol__smartmon-site_TOSHIBA-MK6021GAS.txt", check_toshiba_names_with_spaces),
    (f"{FOLDER}/gsmartcontrol__smartmon-site_HITACHI_DK23BA-20-0.txt", check_hitachi_hours_plus_minutes),
    (LINUXHW + "NVMe_Samsung_SSD_970_EVO_Plus_250GB_99E505C842B4.txt", check_samsung_nvme_failed),
    (f"{FOLDER}/pySMART__nvme_12_issue_89_-d_nvme_--all_nvme0.txt", check_nvme_swiss_grouping),
    (f"{FOLDER}/pySMART__sata_ssd_1_issue_72_-d_ata_--all_sda.txt", check_windows_nbsp_grouping),
    (f"{FOLDER}/pySMART__nvme_win10_0_issue_64_-d_nvme_--all_sda.txt", check_nvme_pre_release_banner),
    (f"{FOLDER}/pySMART__sas_ssd_0_issue_57_-x_sdb.txt", check_sas_ssd_russian_locale),
    (f"{FOLDER}/gsmartcontrol__mine_sea10K.7_scsi_bil-a.1-11.uns.txt", check_scsi_5_1),
    (f"{FOLDER}/telegraf__mockHGST.txt", check_hgst_sas_ssd),
    (f"{FOLDER}/gsmartcontrol__smartmon-mail_ST32120A.smartctl-a-Tpermissive.txt.reallyold.txt",
     check_crlf_really_old),
    (f"{FOLDER}/gsmartcontrol__mine_sea7200.11_1T_my-i.37.txt", check_info_only),
    (f"{FOLDER}/gsmartcontrol__mine_sea7200.9_sata_worm-a.37_smrt_dis.txt", check_smart_disabled),
    (f"{FOLDER}/telegraf__ssdRaidInfoData.txt", check_freebsd_samsung),
    (f"{FOLDER}/sonic__output_transcend_vendor.txt", check_old_layout_updated),
]


@pytest.mark.parametrize("name,check", REAL_FILES, ids=[Path(n).name[:60] for n, _ in REAL_FILES])
def test_real_files(name: str, check: Callable[[Dict[str, Any]], None]) -> None:
    doc = parse_smartctl_text(load(name), "/dev/sda")
    assert doc["device"]["name"] == "/dev/sda"
    check(doc)


# The same drive answered "no data" in many ways; all are NoSmartData, with a reason.
NO_DATA_FILES = [
    (f"{FOLDER}/gsmartcontrol__actions_sda_nopermission.txt", "could not be opened"),
    (f"{FOLDER}/gsmartcontrol__mine_dvd_ide-a.37.uns.txt", "lacks SMART"),
    (f"{FOLDER}/gsmartcontrol__actions_sda_testing.txt", "no drive identity"),
    (f"{FOLDER}/pySMART__nvme_0_-d_test_nvme0.txt", "no drive identity"),
    (f"{FOLDER}/pySMART__megaraid_vd_0_-d_scsi_--all_sda.txt", "lacks SMART"),
    (f"{FOLDER}/pySMART__sas_hdd_0_issue_51_-d_scsi_-l_background_sdc.txt", "no drive identity"),
    (f"{FOLDER}/telegraf__mockStandbyData.txt", "low-power"),
]


@pytest.mark.parametrize("name,reason", NO_DATA_FILES, ids=[Path(n).name[:50] for n, _ in NO_DATA_FILES])
def test_real_files_without_smart_data(name: str, reason: str) -> None:
    with pytest.raises(NoSmartData, match=reason):
        parse_smartctl_text(load(name))


SCAN_OPEN_FILES = [
    ("pySMART__linux_multiple_devices_--scan-open.txt",
     [ScanEntry("/dev/nvme0", "nvme", "NVMe"), ScanEntry("/dev/nvme1", "nvme", "NVMe"),
      ScanEntry("/dev/bus/0", "sat+megaraid,60", "ATA")]),
    ("pySMART__linux_usb_nvme_asmedia_issue_97_--scan-open.txt",
     [ScanEntry("/dev/sda", "sntasmedia", "NVMe")]),
    ("pySMART__nvme_10_issue_73_--scan-open.txt",
     [ScanEntry("/dev/sda", "nvme", "NVMe"), ScanEntry("/dev/sdb", "nvme", "NVMe"),
      ScanEntry("/dev/sdc", "sat", "ATA"), ScanEntry("/dev/sdd", "scsi", "SCSI"),
      ScanEntry("/dev/sde", "scsi", "SCSI")]),
    ("pySMART__mac_02_issue_84_--scan-open.txt",
     [ScanEntry("IOService:/AppleARMPE/arm-io@10F00000/AppleT811xIO/ans@77400000/AppleASCWrapV4/"
                "iop-ans-nub/RTBuddy(ANS2)/RTBuddyService/AppleANS3NVMeController/NS_01@1", "nvme", "NVMe")]),
]


@pytest.mark.parametrize("name,expected", SCAN_OPEN_FILES, ids=[n[9:50] for n, _ in SCAN_OPEN_FILES])
def test_scan_open_real_files(name: str, expected: List[ScanEntry]) -> None:
    # Read off the files: one line per device; a disk behind MegaRAID and an NVMe drive behind
    # an ASMedia USB bridge are entries of their own, told apart by -d TYPE.
    assert parse_scan_text(load(f"{FOLDER}/{name}")) == expected


def test_real_file_with_corrupt_capacity_keeps_the_rest() -> None:
    # telegraf's htSASInfoData fixture has "User Capacity: 300,$00,000,000 bytes" on line 9,
    # a damaged capture: only the capacity is lost, the named line is kept as a warning.
    name = f"{FOLDER}/telegraf__htSASInfoData.txt"
    doc = parse_smartctl_text(load(name))
    assert "user_capacity" not in doc
    [warning] = doc["smartctl"]["messages"]
    assert warning["severity"] == "warning" and re.match(r"line 9: user capacity .*300,\$00", warning["string"])
    reading = parse_smartctl_text_reading(load(name), "/dev/sdb")
    assert reading.capacity_bytes is None
    assert (reading.kind, reading.model, reading.serial) == ("scsi", "HITACHI HUC103030CSS600", "PDWAR9GE")
    assert reading.is_ssd is False  # "Rotation Rate: 10020 rpm"
    assert reading.logical_sector_bytes == 512  # "Logical block size: 512 bytes"
    assert reading.wwn == "5000cca00a4bdbc8"  # "Logical Unit id: 0x5000cca00a4bdbc8"
    assert reading.smart_healthy is True  # "SMART Health Status: OK"
    # "Current Drive Temperature: 36 C", "Drive Trip Temperature: 85 C"
    assert [(t.sensor, t.celsius, t.limit_celsius) for t in reading.temperatures] == [("drive", 36.0, 85.0)]
    assert reading.defects == {"grown_defect": 0}  # "Elements in grown defect list: 0"


# --------------------------------------------------------------------------- versions

@pytest.mark.parametrize(
    "banner,expected",
    [
        ("smartctl 5.43 2012-06-30 r3573 [x86_64-linux-2.6.32] (local build)", (5, 43)),
        ("smartctl 7.3 2022-02-28 r5338 [x86_64-linux-5.4.0-99-generic] (local build)", (7, 3)),
        ("smartctl version 5.37 [i686-suse-linux-gnu] Copyright (C) 2002-6 Bruce Allen", (5, 37)),
        ("smartctl version 5.1-11 Copyright (C) 2002-3 Bruce Allen", (5, 1, 11)),
        ("smartctl pre-7.4 2023-03-21 r5470 [x86_64-w64-mingw32-w10-22H2] (CircleCI)", (7, 4)),
        ("[root@linux ~]# smartctl -a /dev/sda\nsmartctl 5.39 2008-05-08 21:56 [i686-pc-linux-gnu]", (5, 39)),
        ("/dev/sda -d sat # /dev/sda [SAT], ATA device", None),
        ("", None),
    ],
)
def test_smartctl_version(banner: str, expected: Optional[tuple]) -> None:
    assert smartctl_version(banner) == expected


def test_versions_across_the_corpus_sort_in_release_order() -> None:
    old = smartctl_version(load(f"{FOLDER}/gsmartcontrol__smartmon-site_MAXTOR-0.txt"))
    mid = smartctl_version(load(f"{FOLDER}/gsmartcontrol__mine_sea10K.7_scsi_bil-a.1-11.uns.txt"))
    new = smartctl_version(load(f"{FOLDER}/telegraf__seagateSATAInfoData75.txt"))
    assert old == (5, 0, 24) and mid == (5, 1, 11) and new == (7, 5)
    assert old < mid < (5, 20) < new


# --------------------------------------------------------------------------- malformed

BANNER = "smartctl 6.5 2016-05-07 r4318 [x86_64-linux-4.4.0] (local build)\n\n"
ATA_HEAD = (
    BANNER
    + "=== START OF INFORMATION SECTION ===\nDevice Model:     INTEL SSDSC2BB120G6\n\n"
    + "=== START OF READ SMART DATA SECTION ===\n"
    + "ID# ATTRIBUTE_NAME          FLAG     VALUE WORST THRESH TYPE      UPDATED  WHEN_FAILED RAW_VALUE\n"
)

MALFORMED = [
    ("empty", "", NoSmartData, "empty"),
    ("whitespace", " \n\t\n", NoSmartData, "empty"),
    ("garbage", "hello world\nthis is not smartctl\n", ParseError, "line 1: not smartctl output"),
    ("binary noise", "\x00\x01\x02garbage\x7f", ParseError, "not smartctl output"),
    ("banner only", BANNER, NoSmartData, "no drive identity"),
    ("truncated attribute row", ATA_HEAD + "  5 Reallocated_Sector_Ct   0x0032   100\n", ParseError, "line 8: malformed ATA attribute row"),
    ("attribute row with wrong layout", ATA_HEAD + "  5 Reallocated_Sector_Ct   0x0032   100   100   000    -    0\n", ParseError, "line 8: ATA attribute row does not fit the updated layout"),
    ("attribute header without rows", ATA_HEAD + "\n", ParseError, "line 7: ATA attribute table has no rows"),
    ("unknown attribute header", BANNER + "ID# ATTRIBUTE_NAME  WHATEVER\n  1 X 0x0001 100 100 000 Y\n", ParseError, "line 3: unknown ATA attribute table header"),
    ("bad NVMe number", BANNER + "Model Number:   X\nData Units Written:   12x4 [1 TB]\n", ParseError, "line 4: expected an integer"),
    ("bad NVMe warning", BANNER + "Model Number:   X\nCritical Warning:   none\n", ParseError, "line 4: NVMe critical warning is not hex"),
    ("bad SCSI counter row", BANNER + "Vendor: SEAGATE\nError counter log:\nread:  1 2 three\n", ParseError, "line 5: malformed SCSI error counter row"),
    ("bad device statistics row", BANNER + "Device Model: X\nDevice Statistics (GP Log 0x04)\n0x01  0x008  4  ??  ---  Lifetime Power-On Resets\n", ParseError, "line 5: malformed Device Statistics row"),
    ("open failed", BANNER + "Smartctl open device: /dev/sdz failed: No such device\n", NoSmartData, "could not be opened"),
    ("unknown USB bridge", BANNER + "/dev/sdb: Unknown USB bridge [0x152d:0x0578 (0x508)]\nPlease specify device type with the -d option.\n", NoSmartData, "USB bridge"),
    ("not a string", b"smartctl 7.3", ParseError, "expected text"),
]


@pytest.mark.parametrize("text,error,message", [m[1:] for m in MALFORMED], ids=[m[0] for m in MALFORMED])
def test_malformed(text: Any, error: type, message: str) -> None:
    with pytest.raises(error, match=message) as info:
        parse_smartctl_text(text)
    assert isinstance(info.value, ParseError)  # NoSmartData is a ParseError: one type to catch


def test_unreadable_capacity_is_skipped() -> None:
    doc = parse_smartctl_text(BANNER + "Device Model:     X\nUser Capacity:    lots of bytes\n")
    assert doc["model_name"] == "X" and "user_capacity" not in doc
    assert doc["smartctl"]["messages"][0]["string"].startswith("line 4: user capacity without a byte count")


def test_no_smart_data_is_a_parse_error() -> None:
    assert issubclass(NoSmartData, ParseError)


# --------------------------------------------------------------------------- corpus

def test_corpus_every_vendored_text_file() -> None:
    files = fixture_files(FOLDER, ".txt")
    assert len(files) == 368  # every smartctl-text file in ../shared/fixtures, and seeds/001's LCH
    summary = {"files": len(files), "drives": 0, "ssd": 0, "life_left": 0, "host_writes": 0,
               "nand_writes": 0, "no_smart_data": 0, "parse_error": 0, "scan": 0}
    versions = set()
    for path in files:
        text = path.read_bytes().decode("utf-8", errors="replace")
        if "--scan" in path.name:
            # --scan-open output has no banner: it goes to the scan parser, one entry a device
            assert parse_scan_text(text), path.name
            summary["scan"] += 1
            continue
        version = smartctl_version(text)
        if version:
            versions.add(version[0])
        try:
            reading = parse_smartctl_text_reading(text, "/dev/sdx")
        except NoSmartData as exc:
            assert str(exc), path.name
            summary["no_smart_data"] += 1
            continue
        except ParseError as exc:
            assert "line " in str(exc), f"{path.name}: {exc}"
            summary["parse_error"] += 1
            continue
        summary["drives"] += 1
        summary["ssd"] += bool(reading.is_ssd)
        summary["life_left"] += reading.life_left_ratio is not None
        summary["host_writes"] += reading.host_written_bytes is not None
        summary["nand_writes"] += reading.nand_written_bytes is not None
        if reading.life_left_ratio is not None:
            assert 0.0 <= reading.life_left_ratio <= 1.0, path.name
        for temp in reading.temperatures:
            assert -40 <= temp.celsius <= 130, (path.name, temp)
    print("\nsmartctl text corpus:", summary)
    assert versions == {5, 6, 7}
    assert summary["parse_error"] == 0  # telegraf__htSASInfoData.txt loses only its capacity
    assert summary["scan"] == 7
    assert summary["drives"] >= 300
    assert summary["ssd"] >= 170 and summary["host_writes"] >= 150 and summary["nand_writes"] >= 30


# --------------------------------------------------------------------------- golden

def golden_cases() -> List[Dict[str, Any]]:
    path = ROOT / "tests" / "golden" / "smartctl_text_expected.yaml"
    return yaml.safe_load(path.read_text())["drives"]


def test_golden_file_spans_enough_drives_and_vendors() -> None:
    cases = golden_cases()
    assert len(cases) >= 20
    assert len({c["vendor"] for c in cases}) >= 8


@pytest.mark.parametrize("case", golden_cases(), ids=lambda c: Path(c["file"]).name[:60])
def test_golden(case: Dict[str, Any]) -> None:
    reading = parse_smartctl_text_reading(load(case["file"]), "/dev/sda")
    for field_name, expected in case["expect"].items():
        if field_name == "temperature":
            drive = [t for t in reading.temperatures if t.sensor == "drive"]
            actual: Any = drive[0].celsius if drive else None
        else:
            actual = getattr(reading, field_name)
        if isinstance(expected, float):
            assert actual == pytest.approx(expected, abs=1e-9), field_name
        else:
            assert actual == expected, field_name


# --------------------------------------------------------------------------- JSON vs text

# No physical drive appears in both corpora: hw-probe (linuxhw) blanks serials to "--", and
# the one serial printed in both, "XXXXXXXXXXXX", is a mask on different models
# (test_no_drive_is_in_both_corpora proves it). Life left, bytes written or temperatures of two
# different drives need not agree, so values cannot be compared. What must agree for the same
# model is what the normaliser decides from the model: the kind, SSD flag, family rules and the
# same source (attribute and unit) for each derived value; for the same model and firmware, also
# the values the firmware fixes (see SAME_FIRMWARE below).
SAME_MODEL = [
    (LINUXHW + "SSD_Intel_SSDSC2KB019T8_AD89C82F2AC1.txt",
     "smartctl-json/smartctl_exporter__sat-Intel_S4510_S4610_S4500_S4600_Series_SSDs-INTEL_SSDSC2KB019T8-sdr.json"),
    (LINUXHW + "SSD_Intel_SSDSC2KB960G8_497A8EA0D22F.txt",
     "smartctl-json/smartctl_exporter__sat-Intel_S4510_S4610_S4500_S4600_Series_SSDs-INTEL_SSDSC2KB960G8-sde.json"),
    (LINUXHW + "SSD_Samsung_MZ7LH1T9HMLT-00005_05233B2043A3.txt",
     "smartctl-json/smartctl_exporter__sat-Samsung_based_SSDs-SAMSUNG_MZ7LH1T9HMLT-00005-sda.json"),
    (LINUXHW + "NVMe_Intel_SSDPE2KX010T8_027913D73A97.txt",
     "smartctl-json/smartctl_exporter__nvme-null-INTEL_SSDPE2KX010T8-nvme1.json"),
    (LINUXHW + "NVMe_Samsung_SSD_970_EVO_Plus_250GB_99E505C842B4.txt",
     "smartctl-json/smartctl_exporter__nvme-null-Samsung_SSD_970_EVO_Plus_250GB-nvme0.json"),
    (LINUXHW + "NVMe_Intel_SSDPEKNW010T8_3C8A1EBD453B.txt", "smartctl-json/scrutiny__smart-nvme.json"),
    (LINUXHW + "HDD_Seagate_ST16000NM001G-2KK103_3CA78111DB82.txt",
     "smartctl-json/smartctl_exporter__sat-Seagate_Exos_X16-ST16000NM001G-2KK103-sda.json"),
]


@pytest.mark.parametrize("text_name,json_name", SAME_MODEL, ids=[Path(t).name[30:70] for t, _ in SAME_MODEL])
def test_text_and_json_agree_for_the_same_model(text_name: str, json_name: str) -> None:
    try:
        json_bytes = read_fixture(json_name)
    except FileNotFoundError:
        pytest.skip(f"{json_name} is not vendored by the JSON parser's tests")
    from_json = parse_smartctl_json(json_bytes, "/dev/sda")
    text_doc = parse_smartctl_text(load(text_name), "/dev/sda")
    if "ata_device_statistics" not in json.loads(json_bytes):
        # The text was captured with -x, the JSON without: compare like with like.
        text_doc.pop("ata_device_statistics", None)
    from_text = normalise_smartctl(text_doc, "/dev/sda")
    # model_family is left out: it comes from each host's drive database, which differs by
    # smartctl release ("Intel S4510/S4610..." became "Intel/Solidigm S46x0/S45x0...").
    for field_name in ("kind", "model", "is_ssd", "capacity_bytes"):
        assert getattr(from_text, field_name) == getattr(from_json, field_name), field_name
    if from_json.logical_sector_bytes is not None:  # smartctl 7.3 NVMe JSON omits it
        assert from_text.logical_sector_bytes == from_json.logical_sector_bytes
    for field_name in ("life_left_ratio", "host_written_bytes", "nand_written_bytes", "spare_left_ratio",
                       "power_on_seconds", "power_cycles", "smart_healthy"):
        text_value, json_value = getattr(from_text, field_name), getattr(from_json, field_name)
        assert (text_value is None) == (json_value is None), f"{field_name}: text {text_value!r} json {json_value!r}"
    assert from_text.sources == from_json.sources
    assert bool(from_text.temperatures) == bool(from_json.temperatures)


def _identities(folder: str, suffix: str) -> Dict[str, List[Tuple[str, Any]]]:
    out: Dict[str, List[Tuple[str, Any]]] = {}
    for path in fixture_files(folder, suffix):
        if "--scan" in path.name:
            continue
        raw = path.read_bytes()
        if suffix == ".json" and b'"devices"' in raw[:200]:
            continue
        try:
            reading = (parse_smartctl_json(raw) if suffix == ".json"
                       else parse_smartctl_text_reading(raw.decode("utf-8", errors="replace"), "/dev/sdx"))
        except ParseError:
            continue
        if reading.serial and reading.identity == reading.serial:  # not a masked serial
            out.setdefault("serial " + reading.serial, []).append((path.name, reading))
        if reading.wwn:
            out.setdefault("wwn " + reading.wwn, []).append((path.name, reading))
        out.setdefault(f"model {reading.model} firmware {reading.firmware}", []).append((path.name, reading))
    return out


def test_no_drive_is_in_both_corpora() -> None:
    """If this fails, a file of the same physical drive was vendored in both formats: compare
    its values (life left, bytes, temperatures), not just the paths, in a test of its own."""
    json_ids, text_ids = _identities("smartctl-json", ".json"), _identities(FOLDER, ".txt")
    both = {key for key in set(json_ids) & set(text_ids) if not key.startswith("model ")}
    assert both == set()
    firmware = {key for key in set(json_ids) & set(text_ids) if key.startswith("model ")}
    assert firmware == {f"model {m} firmware {f}" for m, f in SAME_FIRMWARE_MODELS}


# Same model and same firmware in both corpora (found by test_no_drive_is_in_both_corpora): the
# Intel 660p 1 TB with firmware 002C. Besides the paths, the values fixed by the model and its
# firmware must agree: capacity, sector size, the spare threshold the firmware reports
# ("Available Spare Threshold: 10%" / "available_spare_threshold": 10), which health-log fields
# exist, which temperature sensors exist.
SAME_FIRMWARE_MODELS = [("INTEL SSDPEKNW010T8", "002C")]
SAME_FIRMWARE = [
    (LINUXHW + "NVMe_Intel_SSDPEKNW010T8_3C8A1EBD453B.txt", "smartctl-json/scrutiny__smart-nvme.json"),
]


@pytest.mark.parametrize("text_name,json_name", SAME_FIRMWARE, ids=[Path(t).name[30:70] for t, _ in SAME_FIRMWARE])
def test_text_and_json_agree_for_the_same_model_and_firmware(text_name: str, json_name: str) -> None:
    from_json = parse_smartctl_json(read_fixture(json_name), "/dev/nvme0")
    from_text = parse_smartctl_text_reading(load(text_name), "/dev/nvme0")
    for field_name in ("kind", "model", "firmware", "is_ssd"):
        assert getattr(from_text, field_name) == getattr(from_json, field_name), field_name
    # "Namespace 1 Size/Capacity: 1,024,209,543,168" and "user_capacity": {"bytes": 1024209543168}
    assert from_text.capacity_bytes == from_json.capacity_bytes == 1_024_209_543_168
    assert from_text.logical_sector_bytes == from_json.logical_sector_bytes == 512
    assert from_text.spare_threshold_ratio == from_json.spare_threshold_ratio == 0.10
    # the same unit and field for every derived value: "nvme data_units_written x 512000" ...
    assert from_text.sources == from_json.sources
    assert from_json.sources["host_written_bytes"] == "nvme data_units_written x 512000"
    assert sorted(from_text.extra) == sorted(from_json.extra)
    assert [t.sensor for t in from_text.temperatures] == [t.sensor for t in from_json.temperatures]


def test_text_dict_keys_are_smartctl_json_keys() -> None:
    """Every top-level key the text parser emits exists in real smartctl JSON (corpus-wide),
    apart from the few documented text-only extras."""
    json_keys = set()
    for path in sorted((ROOT / "tests" / "fixtures" / "smartctl-json").glob("*.json")):
        try:
            doc = json.loads(fixture_path(f"smartctl-json/{path.name}").read_text())
        except ValueError:
            continue
        if isinstance(doc, dict):
            json_keys |= set(doc)
    if not json_keys:
        pytest.skip("no smartctl-json fixtures vendored")
    # Keys smartctl's JSON has but the vendored JSON corpus happens not to show.
    known_elsewhere = {"scsi_percentage_used_endurance_indicator", "nvme_version", "trim",
                       "read_lookahead", "read_cache", "sata_version", "ata_security",
                       "ata_smart_error_log", "in_smartctl_database", "scsi_grown_defect_list",
                       "scsi_start_stop_cycle_counter", "scsi_transport_protocol", "logical_unit_id",
                       "nvme_unallocated_capacity", "nvme_total_capacity", "form_factor",
                       "scsi_version", "device_type", "local_time", "ata_sct_status", "smart_support"}
    # ssdfleet's own: the drive database revision the report's smartctl searched ("7.3/5528")
    known_elsewhere.add("smartctl_database_revision")
    emitted = set()
    for path in fixture_files(FOLDER, ".txt"):
        try:
            emitted |= set(parse_smartctl_text(path.read_bytes().decode("utf-8", errors="replace")))
        except ParseError:
            continue
    unknown = emitted - json_keys - known_elsewhere
    assert not unknown, sorted(unknown)


# --------------------------------------------------------------------------- readings: SCSI, pass-through, fixes

GB = 1000**3

# (file, expected DriveReading fields) read off the raw captures.
READINGS = [
    (  # SAS SSD, ru locale: "Percentage used endurance indicator: 0%", "write: ... 11472,811 ..."
        f"{FOLDER}/pySMART__sas_ssd_0_issue_57_-x_sdb.txt",
        dict(kind="scsi", is_ssd=True, life_left_ratio=1.0, media_errors=0, defects={"grown_defect": 0},
             host_written_bytes=11_472_811_000_000, host_read_bytes=10_311_154_000_000,
             temperature=(25.0, 54.0, None), sources_life="scsi percentage used endurance indicator"),
    ),
    (  # SAS SSD: "Current Drive Temperature: 28 C", "Drive Trip Temperature: 70 C"
        f"{FOLDER}/telegraf__mockHGST.txt",
        dict(kind="scsi", is_ssd=True, life_left_ratio=1.0, defects={"grown_defect": 0},
             temperature=(28.0, None, 70.0)),
    ),
    (  # SAS HDD behind MegaRAID (-d megaraid,44): trip 85 C; read/write/verify rows, 0 uncorrected
        f"{FOLDER}/pySMART__megaraid_ph_sas_hdd_0_-d_megaraid_44_--all_bus_7.txt",
        dict(kind="scsi", is_ssd=False, model="HGST HUS726040AL5210", media_errors=0,
             defects={"grown_defect": 0}, host_written_bytes=574_543_134_000_000,
             host_read_bytes=16_772_475_000_000, temperature=(40.0, None, 85.0)),
    ),
    (  # SATA SSD behind MegaRAID (-d megaraid,28): 233 normalized 086, 241 Host_Writes_32MiB
        f"{FOLDER}/pySMART__megaraid_ph_sata_ssd_0_-d_megaraid_28_--all_bus_0.txt",
        dict(kind="ata", model="INTEL SSDSC2BB120G6", life_left_ratio=0.86,
             host_written_bytes=1_412_735 * 32 * 1024**2, host_read_bytes=907_688 * 32 * 1024**2,
             power_on_seconds=43_583 * 3600, power_cycles=55),
    ),
    (  # SATA SSD behind MegaRAID as -d sat+megaraid,60
        f"{FOLDER}/pySMART__megaraid_ph_sata_hdd_1_issue_56_-d_sat+megaraid_60_--all_bus_0.txt",
        dict(kind="ata", model="INTEL SSDSC2KB480G8", life_left_ratio=1.0,
             host_written_bytes=7154 * 32 * 1024**2, temperature=(19.0, None, None)),
    ),
    (  # WD Blue: "230 Media_Wearout_Indicator ... 015" is not life left; devstat says 5% used.
        # Host writes: devstat "Logical Sectors Written" 260062170119 x 512 (was 241
        # Host_Writes_GiB 124007 x GiB, the same figure rounded down to a GiB).
        LINUXHW + "SSD_WDC_WDS100T2B0A-00SM50_6B27A984F0FE.txt",
        dict(life_left_ratio=0.95, sources_life="ata devstat Percentage Used Endurance Indicator",
             host_written_bytes=260_062_170_119 * 512, nand_written_bytes=57_881 * GB),
    ),
    (  # Lite-On: blank lines between Device Statistics pages; page 7 says 21% used
        LINUXHW + "SSD_Lite-On_L8H-128V2G-HP_6E314D902314.txt",
        dict(life_left_ratio=0.79, sources_life="ata devstat Percentage Used Endurance Indicator",
             temperature=(55.0, None, None)),
    ),
]


@pytest.mark.parametrize("name,expected", READINGS, ids=[Path(n).name[:50] for n, _ in READINGS])
def test_readings_from_real_files(name: str, expected: Dict[str, Any]) -> None:
    reading = parse_smartctl_text_reading(load(name), "/dev/bus/0")
    for key, want in expected.items():
        if key == "temperature":
            drive = [t for t in reading.temperatures if t.sensor == "drive"][0]
            got: Any = (drive.celsius, drive.max_celsius, drive.limit_celsius)
        elif key == "sources_life":
            got = reading.sources["life_left_ratio"]
        else:
            got = getattr(reading, key)
        if isinstance(want, float):
            assert got == pytest.approx(want), key
        else:
            assert got == want, key


def test_devstat_pages_after_blank_lines_are_kept() -> None:
    doc = parse_smartctl_text(load(LINUXHW + "SSD_Lite-On_L8H-128V2G-HP_6E314D902314.txt"))
    assert [p["number"] for p in doc["ata_device_statistics"]["pages"]] == [1, 4, 5, 6, 7]
    assert devstat(doc, "Number of Interface CRC Errors") == 4
