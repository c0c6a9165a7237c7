"""smartctl JSON parser, ATA attribute table, scan parsing and probe argv.

Expected values were read by hand off the raw fixture files (the attribute rows and log fields
named in the comments) and the unit conversion is written out, so a wrong unit fails.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List

import pytest
import yaml

from collectors.model import ParseError
from collectors.runner import ToolResult
from collectors.smartctl import (
    STANDBY_EXIT_STATUS,
    NoSmartData,
    ScanEntry,
    SmartctlProbe,
    is_standby,
    normalise_smartctl,
    parse_scan_json,
    parse_scan_text,
    parse_smartctl_json,
    supports_json,
)
from collectors.smartctl import attributes as attrs
from tests.conftest import read_fixture

J = "smartctl-json/"
MiB32 = 32 * 1024 * 1024
GiB = 1024**3
NVME_UNIT = 512_000

# (fixture, expected fields). Only the fields listed are checked; pytest.approx for ratios.
CASES: List[Any] = [
    (  # Intel S4510 SATA: 233 normalized 85, 241 Host_Writes_32MiB, 243 NAND_Writes_32MiB
        "smartctl_exporter__sat-Intel_S4510_S4610_S4500_S4600_Series_SSDs-INTEL_SSDSC2KB019T7-sdq.json",
        dict(kind="ata", device="/dev/sdq", device_type="sat", model="INTEL SSDSC2KB019T7",
             model_family="Intel S4510/S4610/S4500/S4600 Series SSDs", is_ssd=True,
             capacity_bytes=1920383410176, logical_sector_bytes=512, smart_healthy=True,
             life_left_ratio=0.85, host_written_bytes=29748724 * MiB32,
             host_read_bytes=5578367 * MiB32, nand_written_bytes=54777356 * MiB32,
             write_amplification=54777356 / 29748724, spare_left_ratio=1.0,
             spare_threshold_ratio=0.10, power_on_seconds=20904 * 3600, power_cycles=19,
             temperature=26.0, tool_exit_status=0, block_device="sdq",
             wwn=f"5{6083300:06x}{1234567890:09x}",
             # 187 Uncorrectable_Error_Cnt and 199 CRC_Error_Count, both raw 0
             defects={"reallocated": 0, "pending": 0, "program_fail": 0, "erase_fail": 0,
                      "reported_uncorrectable": 0, "udma_crc_errors": 0}),
    ),
    (  # Intel DC S3500-family 1.6 TB at 15% life (233 normalized 15)
        "smartctl_exporter__sat-Intel_730_and_DC_S35x0_3610_3700_Series_SSDs-INTEL_SSDSC2BB016T4-sdf.json",
        dict(kind="ata", life_left_ratio=0.15, host_written_bytes=62594010 * MiB32,
             nand_written_bytes=138721860 * MiB32, host_read_bytes=12767078 * MiB32,
             power_on_seconds=67329 * 3600, temperature=23.0),
    ),
    (  # Dell-firmware S3520: 241/233 printed as Total_LBAs_Written but equal to 225 (32 MiB).
        # 242 Total_LBAs_Read 573613 is 32 MiB units too (was read as sectors: 294 MB in 21213
        # hours next to 4.3 TB written); on the Dell S4x00 capture with device statistics,
        # Logical Sectors Read / 242 raw = 65536.1 sectors.
        "smartctl_exporter__sat-Dell_Certified_Intel_S3520_Series_SSDs-SSDSCKJB240G7R-sdm.json",
        dict(life_left_ratio=1.0, host_written_bytes=129493 * MiB32, nand_written_bytes=None,
             host_read_bytes=573613 * MiB32, temperature=47.0, power_cycles=186),
    ),
    (  # Micron 5300: 202 normalized 100 (raw 0 is percent used), 246 LBAs, 247/248 pages;
        # "188 Command_Timeout ... raw 29" and "199 UDMA_CRC_Error_Count ... raw 24"
        "smartctl_exporter__sat-Micron_5100_Pro___52x0___5300_SSDs-Micron_5300_MTFDDAK1T9TDS-sda.json",
        dict(life_left_ratio=1.0, host_written_bytes=130006927240 * 512,
             write_amplification=(4062707571 + 8824675195) / 4062707571, spare_left_ratio=1.0,
             temperature=24.0, defects={"reallocated": 0, "reallocation_events": 0, "pending": 0,
                                        "offline_uncorrectable": 0, "program_fail": 0,
                                        "erase_fail": 0, "reported_uncorrectable": 0,
                                        "command_timeout": 29, "udma_crc_errors": 24}),
    ),
    (  # Kingston KC400 (Phison): 231 raw 74 while normalized stays 100; GiB counters
        "smartctl_exporter__sat-Phison_Driven_SSDs-KINGSTON_SKC400S371T-sda.json",
        dict(life_left_ratio=0.74, host_written_bytes=391741 * GiB, host_read_bytes=1837742 * GiB,
             nand_written_bytes=840007 * GiB, write_amplification=840007 / 391741,
             spare_left_ratio=None, defects={"reallocated": 1, "reallocation_events": 1,
                                             "reported_uncorrectable": 0, "udma_crc_errors": 0},
             power_on_seconds=54450 * 3600),
    ),
    (  # Kingston A400, smartctl exit status 4 (bit 2) with good output
        "smartctl_exporter__sat-Phison_Driven_SSDs-KINGSTON_SA400M8120G-sda.json",
        dict(tool_exit_status=4, life_left_ratio=0.98, host_written_bytes=398 * GiB,
             nand_written_bytes=979 * GiB, temperature=38.0, smart_healthy=True),
    ),
    (  # Samsung PM883: 177 normalized 99, 241 LBAs, 251 NAND_Writes in 512-byte units
        "smartctl_exporter__sat-Samsung_based_SSDs-SAMSUNG_MZ7LH1T9HMLT-00005-sda.json",
        dict(life_left_ratio=0.99, host_written_bytes=63180483059 * 512,
             nand_written_bytes=64213448960 * 512, spare_left_ratio=1.0,
             spare_threshold_ratio=0.10, power_cycles=53),
    ),
    (  # Samsung 860 EVO: devstat page 7 says 19% used; SCT temperature limits
        "scrutiny__smart-ata-full.json",
        dict(serial="S3YZNB0KB00864E", firmware="RVT02B6Q", life_left_ratio=0.81,
             host_written_bytes=64777770148 * 512, host_read_bytes=34909544344 * 512,
             temperature=36.0, temperature_max=57.0, temperature_limit=70.0,
             wwn=f"5{9528:06x}{61213911380:09x}"),
    ),
    (  # Transcend (Silicon Motion): 169 raw 96 while normalized is 100
        "smartctl_exporter__sat-Silicon_Motion_based_SSDs-TS32GMTS400-sda.json",
        dict(life_left_ratio=0.96, host_written_bytes=30245 * MiB32, host_read_bytes=72455 * MiB32,
             nand_written_bytes=None, wwn=None),
    ),
    (  # SanDisk on a USB bridge: no life attribute the table trusts
        "telegraf__testcases_device_usb.json",
        dict(serial="06c9f4c44", life_left_ratio=None, host_written_bytes=10171055 * 512,
             spare_left_ratio=1.0, spare_threshold_ratio=0.05, temperature=None),
    ),
    (  # failing HDD behind a USB JMicron bridge: exit 216, FAILED, reallocated FAILING_NOW
        "scrutiny__smart-fail2.json",
        dict(kind="ata", device_type="usbjmicron", tool_exit_status=216, smart_healthy=False,
             is_ssd=False, life_left_ratio=None,
             defects={"reallocated": 1975, "reallocation_events": 3831, "pending": 8,
                      "offline_uncorrectable": 0, "udma_crc_errors": 0}),
    ),
    (  # SATA HDD behind MegaRAID, exit status 4
        "telegraf__testcases_device_megaraid.json",
        dict(device="/dev/bus/6", device_type="sat+megaraid,14", block_device=None,
             tool_exit_status=4, serial="ZAD2C11G", host_written_bytes=28111553262 * 512,
             is_ssd=False, temperature=25.0),
    ),
    (  # exit status 64 (error log entries) on a healthy HDD
        "smartctl_exporter__HGST_HUS724020ALE640_28.json",
        dict(tool_exit_status=64, smart_healthy=True, power_on_seconds=83425 * 3600),
    ),
    (  # NVMe failing: exit 8, critical warning 16 (volatile memory backup failed)
        "smartctl_exporter__nvme-null-SAMSUNG_MZWLL3T2HAJQ-00005-nvme0.json",
        dict(kind="nvme", is_ssd=True, tool_exit_status=8, smart_healthy=False,
             critical_warning=16, life_left_ratio=1.0, spare_left_ratio=1.0,
             spare_threshold_ratio=0.10, media_errors=0,
             host_written_bytes=147556750 * NVME_UNIT, host_read_bytes=146935678 * NVME_UNIT,
             sensors={"drive": 40.0, "sensor_1": 40.0, "sensor_2": 40.0, "sensor_3": 35.0}),
    ),
    (  # NVMe with media errors: Samsung 970 EVO, 7 media errors, 3% used
        "scrutiny__smart-nvme-failed.json",
        dict(serial="S466NX0M776250H", media_errors=7, life_left_ratio=0.97,
             spare_left_ratio=0.99, host_written_bytes=65602088 * NVME_UNIT,
             capacity_bytes=500107862016, power_on_seconds=12798 * 3600, power_cycles=25,
             block_device="nvme0"),
    ),
    (  # Intel P3700 NVMe: 51% used, spare 93
        "smartctl_exporter__nvme-null-INTEL_SSDPEDMD800G4-nvme0.json",
        dict(life_left_ratio=0.49, spare_left_ratio=0.93, logical_sector_bytes=4096,
             host_written_bytes=15055091656 * NVME_UNIT),
    ),
    (  # Micron 7450 NVMe with three extra sensors
        "smartctl_exporter__nvme-null-Micron_7450_MTFDKCC3T2TFS-nvme1.json",
        dict(sensors={"drive": 33.0, "sensor_1": 38.0, "sensor_2": 35.0, "sensor_3": 33.0},
             host_written_bytes=1248078 * NVME_UNIT, power_cycles=32),
    ),
    (  # Sabrent NVMe (telegraf)
        "telegraf__testcases_device_nvme.json",
        dict(model="Sabrent Rocket 4.0 1TB", life_left_ratio=0.96, spare_threshold_ratio=0.05,
             host_written_bytes=76471882 * NVME_UNIT, power_cycles=1815),
    ),
    (  # SAS HDD: error counter log GB processed, trip temperature
        "smartctl_exporter__HITACHI_H109060SESUN600G_10.json",
        dict(kind="scsi", model="HITACHI H109060SESUN600G", vendor="HITACHI", is_ssd=False,
             host_written_bytes=127551260 * 1000**2, host_read_bytes=162438759 * 1000**2,
             media_errors=0, defects={"grown_defect": 0}, temperature=26.0,
             temperature_limit=85.0, power_on_seconds=22364 * 3600 + 52 * 60,
             wwn="1234567890abcdef"),
    ),
    (  # SAS with 56 grown defects
        "scrutiny__smart-scsi.json",
        dict(kind="scsi", serial="Z1Z5DWJK0000XXXXXXXX", defects={"grown_defect": 56},
             tool_exit_status=None, host_written_bytes=86472611 * 1000**2),
    ),
    (  # Intel RAID volume as SCSI: temperature 0 is "not reported"
        "scrutiny__smart-raid.json",
        dict(kind="scsi", tool_exit_status=4, temperature=None, serial="Volume1"),
    ),
]


def _check(reading, expected: Dict[str, Any]) -> None:
    for key, want in expected.items():
        if key == "temperature":
            drive = [t for t in reading.temperatures if t.sensor == "drive"]
            got = drive[0].celsius if drive else None
        elif key == "temperature_max":
            got = [t for t in reading.temperatures if t.sensor == "drive"][0].max_celsius
        elif key == "temperature_limit":
            got = [t for t in reading.temperatures if t.sensor == "drive"][0].limit_celsius
        elif key == "sensors":
            got = {t.sensor: t.celsius for t in reading.temperatures}
        else:
            got = getattr(reading, key)
        if isinstance(want, float):
            # every ratio the normaliser produces is rounded to 6 decimals, and exactly so
            assert got == round(want, 6), key
        else:
            assert got == want, key


@pytest.mark.parametrize("name,expected", CASES, ids=[c[0][:60] for c in CASES])
def test_real_files(name: str, expected: Dict[str, Any]) -> None:
    _check(parse_smartctl_json(read_fixture(J + name)), expected)


def test_at_least_fifteen_files_and_all_kinds() -> None:
    kinds = {parse_smartctl_json(read_fixture(J + name)).kind for name, _ in CASES}
    assert len(CASES) >= 15 and kinds == {"ata", "nvme", "scsi"}


def test_sources_name_the_attribute() -> None:
    r = parse_smartctl_json(read_fixture(J + CASES[0][0]))
    assert r.sources["life_left_ratio"] == "ata 233 Media_Wearout_Indicator normalized"
    assert r.sources["host_written_bytes"] == "ata 225 Host_Writes_32MiB raw"
    assert r.sources["nand_written_bytes"] == "ata 243 NAND_Writes_32MiB raw"
    assert r.sources["spare_left_ratio"] == "ata 232 Available_Reservd_Space normalized"
    nvme = parse_smartctl_json(read_fixture(J + "scrutiny__smart-nvme-failed.json"))
    assert nvme.sources["life_left_ratio"] == "nvme percentage_used"


def test_device_argument_overrides_reported_name() -> None:
    r = parse_smartctl_json(read_fixture(J + "scrutiny__smart-nvme-failed.json"), device="/dev/nvme9")
    assert r.device == "/dev/nvme9"


# ---------------------------------------------------------------- quirks


def test_crucial_micron_202_normalized_is_life_left() -> None:
    # Micron 5300 MTFDDAV... row: "202 Percent_Lifetime_Remain v=99 raw=1": 1% used, 99% left
    doc = json.loads(read_fixture(J + "smartctl_exporter__sat-Micron_5100_Pro___52x0___5300_SSDs-Micron_5300_MTFDDAK960TDS-sdi.json"))
    row = [a for a in doc["ata_smart_attributes"]["table"] if a["id"] == 202][0]
    assert (row["name"], row["value"], row["raw"]["value"]) == ("Percent_Lifetime_Remain", 99, 1)
    r = normalise_smartctl(doc)
    assert r.life_left_ratio == pytest.approx(0.99)
    assert r.sources["life_left_ratio"] == "ata 202 Percent_Lifetime_Remain normalized"


def _ata_doc(rows, family=None, model="Test SSD") -> Dict[str, Any]:
    table = [
        {"id": i, "name": n, "value": v, "worst": v, "thresh": t, "raw": {"value": raw, "string": s}}
        for i, n, v, t, raw, s in rows
    ]
    doc: Dict[str, Any] = {
        "device": {"name": "/dev/sdx", "type": "sat", "protocol": "ATA"},
        "model_name": model,
        "rotation_rate": 0,
        "logical_block_size": 512,
        "ata_smart_attributes": {"table": table},
    }
    if family:
        doc["model_family"] = family
    return doc


def test_231_temperature_is_not_life_left() -> None:
    # Rows of a BIWIN SSD (linuxhw-EnterpriseDrive__SSD_BIWIN_SSD_256GB_D96895BFC12E.txt in
    # the shared smartctl-text corpus): smartctl names 231 Temperature_Celsius, raw 0.
    doc = _ata_doc([
        (177, "Wear_Leveling_Count", 100, 50, 0, "0"),
        (194, "Temperature_Celsius", 35, 0, 35, "35"),
        (231, "Temperature_Celsius", 100, 0, 0, "0"),
        (241, "Total_LBAs_Written", 100, 0, 6538195, "6538195"),
    ], model="BIWIN SSD")
    r = normalise_smartctl(doc)
    # never 0 from 231; and 177 is smartctl's default name on a drive its database does not
    # describe (no Model Family line), so its normalized 100 is not known to be life left
    assert r.life_left_ratio is None
    assert r.extra["life_left_ratio_withheld"]
    # 241 counts MiB on this BIWIN, not sectors: its 242 Total_LBAs_Read 1992439 x 2048 sectors
    # is devstat Logical Sectors Read 4080516368 to within one MiB, and 6538195 x 2048 sectors
    # is devstat Logical Sectors Written 505323225 modulo 2**32 (a 32-bit devstat counter).
    assert r.host_written_bytes == 6538195 * 1024**2
    # with no top-level temperature the table gives 194, not 231's 0
    assert [t.celsius for t in r.temperatures] == [35.0]


def test_sandforce_241_gib_not_multiplied_by_512() -> None:
    # Rows of a Corsair Force LS (SandForce Driven SSDs) in the shared smartctl-text corpus:
    # linuxhw-EnterpriseDrive__SSD_Corsair_Force_LS_SSD_64GB_04A7CC832AEB.txt
    doc = _ata_doc([
        (194, "Temperature_Celsius", 67, 0, 33, "33"),
        (231, "SSD_Life_Left", 100, 0, 94, "94"),
        (241, "Lifetime_Writes_GiB", 100, 0, 3719, "3719"),
        (242, "Lifetime_Reads_GiB", 100, 0, 14327, "14327"),
    ], family="SandForce Driven SSDs", model="Corsair Force LS SSD")
    r = normalise_smartctl(doc)
    assert r.host_written_bytes == 3719 * GiB
    assert r.host_written_bytes != 3719 * 512
    assert r.host_read_bytes == 14327 * GiB
    assert r.life_left_ratio == pytest.approx(0.94)


def test_table_keys_on_name_and_family() -> None:
    assert attrs.find_rule(231, "SSD_Life_Left").meaning == attrs.LIFE_LEFT
    assert attrs.find_rule(231, "Temperature_Celsius").meaning == attrs.TEMPERATURE
    assert attrs.find_rule(233, "Flash_Writes_GiB").meaning == attrs.NAND_WRITTEN
    # Intel's wear indicator; the same default name on other firmware is not a life figure
    assert attrs.find_rule(233, "Media_Wearout_Indicator", "Intel 730 and DC S35x0/3610/3700 Series SSDs").meaning == attrs.LIFE_LEFT
    assert attrs.find_rule(233, "Media_Wearout_Indicator", "Plextor M3/M5/M6/M7 Series SSDs") is None
    assert attrs.find_rule(202, "Exception_Mode_Status") is None
    assert attrs.find_rule(202, "Data_Address_Mark_Errs") is None
    dell = attrs.find_rule(241, "Total_LBAs_Written", "Dell Certified Intel S3520 Series SSDs X")
    assert dell.unit == attrs.UNIT_32MIB
    assert attrs.find_rule(241, "Total_LBAs_Written", "Samsung based SSDs").unit == attrs.LBA
    # Micron's 180 normalized is not a spare percentage; Samsung's is
    assert attrs.find_rule(180, "Unused_Rsvd_Blk_Cnt_Tot", "Micron 5100 Pro") is None
    assert attrs.find_rule(180, "Unused_Rsvd_Blk_Cnt_Tot", "Samsung based SSDs") is not None


def test_wd_sa500_with_smartctl_default_names() -> None:
    # netdata's WD Red SA500 (WDS400T1R0A): this smartctl's database lacks the model, so it
    # prints "233 Media_Wearout_Indicator" (raw 65406) and "241 Total_LBAs_Written" (raw 173833)
    # for what WD's entry calls NAND_GB_Written_TLC and Host_Writes_GiB. 173833 sectors would be
    # 89 MB after 8244 hours; 173833 GiB sits next to 234's 190852 GB of SLC writes.
    r = parse_smartctl_json(read_fixture(J + "netdata__type-sat_device-ssd-sdc.json"))
    assert r.model == "WDC  WDS400T1R0A-68A4W0" and r.model_family is None
    assert r.host_written_bytes == 173833 * GiB
    assert r.host_read_bytes == 76778 * GiB
    assert r.nand_written_bytes == 65406 * 1000**3
    assert r.life_left_ratio is None  # normalized 100 of a NAND counter is not life left
    assert attrs.find_rule(233, "Media_Wearout_Indicator", "INTEL SSDSC2KB019T7").meaning == attrs.LIFE_LEFT
    assert attrs.find_rule(230, "Media_Wearout_Indicator", "WDC WDS100T2B0A-00SM50") is None


def test_megaraid_disks_on_one_controller_are_separate_drives() -> None:
    # -d sat+megaraid,0 and ,1 on the same /dev/sda; serials are masked upstream, WWNs are not.
    disks = [parse_smartctl_json(read_fixture(J + f"scrutiny__smart-megaraid{n}.json")) for n in (0, 1)]
    assert [d.device for d in disks] == ["/dev/sda", "/dev/sda"]
    assert [d.device_type for d in disks] == ["sat+megaraid,0", "sat+megaraid,1"]
    assert [d.block_device for d in disks] == [None, None]  # /dev/sda is the controller
    assert [d.wwn for d in disks] == [f"5{5358:06x}{10217451239:09x}", f"5{5358:06x}{11649125727:09x}"]
    assert [d.host_written_bytes for d in disks] == [2754608750246 * 512, 3920560799278 * 512]
    assert len({(d.device, d.device_type, d.wwn) for d in disks}) == 2


def test_hdd_normalized_above_100_is_not_a_percentage() -> None:
    doc = _ata_doc([(177, "Wear_Leveling_Count", 184, 100, 32768294, "32768294")])
    assert normalise_smartctl(doc).life_left_ratio is None


def test_nvme_128bit_string_form_preferred() -> None:
    doc = json.loads(read_fixture(J + "telegraf__testcases_device_nvme.json"))
    log = doc["nvme_smart_health_information_log"]
    # the string form is read exactly; all 128 bits set is no drive's lifetime: withheld
    log["data_units_written_s"] = "340282366920938463463374607431768211455"
    r = normalise_smartctl(doc)
    assert r.host_written_bytes is None
    assert "over 2**63" in r.extra["host_written_bytes_withheld"]
    log["data_units_written_s"] = "18014398509"  # above 2**32: the string form, taken as is
    assert normalise_smartctl(doc).host_written_bytes == 18014398509 * NVME_UNIT
    log.pop("data_units_written_s")
    log["data_units_written_le"] = [1, 1] + [0] * 14
    log["host_writes"] = 1000  # fewer commands than the 257,000 sectors
    assert normalise_smartctl(doc).host_written_bytes == 257 * NVME_UNIT


def test_nvme_percentage_used_over_100_clamps_to_zero() -> None:
    doc = json.loads(read_fixture(J + "telegraf__testcases_device_nvme.json"))
    doc["nvme_smart_health_information_log"]["percentage_used"] = 255
    assert normalise_smartctl(doc).life_left_ratio == 0.0


# ---------------------------------------------------------------- no data / malformed


def test_open_failed_is_no_smart_data() -> None:
    with pytest.raises(NoSmartData, match="Open failed"):
        parse_smartctl_json(read_fixture(J + "scrutiny__smart-fail.json"))


def test_scan_output_is_no_smart_data() -> None:
    with pytest.raises(NoSmartData):
        parse_smartctl_json(read_fixture(J + "telegraf__testcases_scan_all.json"))


GOOD = json.loads(read_fixture(J + "telegraf__testcases_device_nvme.json"))


def _mutated(path: str, value: Any) -> str:
    doc = json.loads(json.dumps(GOOD))
    node = doc
    parts = path.split(".")
    for part in parts[:-1]:
        node = node[part]
    node[parts[-1]] = value
    return json.dumps(doc)


MALFORMED = [
    ("empty", b"", NoSmartData, "nothing"),
    ("whitespace", b"  \n", NoSmartData, "nothing"),
    ("truncated", read_fixture(J + "telegraf__testcases_device_nvme.json")[:300], ParseError, "smartctl JSON"),
    ("garbage", b"smartctl 6.6 2016-05-31 r4324 [x86_64-linux]\n", ParseError, "smartctl JSON"),
    ("not utf-8", b"\xff\xfe{", ParseError, "UTF-8"),
    ("list document", b"[1, 2]", ParseError, "document is list"),
    ("number document", b"42", ParseError, "document is int"),
    ("exit_status string", _mutated("smartctl.exit_status", "0"), ParseError, "smartctl.exit_status"),
    ("exit 2 no content", b'{"smartctl": {"exit_status": 2}}', NoSmartData, "exit status 2"),
    # A damaged report whose messages are null or not a list (found by the fuzz test): no
    # reason from them, never a crash.
    ("messages null", b'{"smartctl": {"exit_status": 2, "messages": null}}', NoSmartData, "exit status 2"),
    ("messages a string", b'{"smartctl": {"exit_status": 2, "messages": "x"}}', NoSmartData, "exit status 2"),
    ("serial number", _mutated("serial_number", 12345), ParseError, "serial_number"),
    ("percentage_used string", _mutated("nvme_smart_health_information_log.percentage_used", "4"),
     ParseError, "percentage_used"),
    ("nvme log is list", _mutated("nvme_smart_health_information_log", [1]), ParseError,
     "nvme_smart_health_information_log"),
    ("capacity bool", _mutated("user_capacity.bytes", True), ParseError, "user_capacity.bytes"),
    ("passed string", _mutated("smart_status.passed", "yes"), ParseError, "smart_status.passed"),
    ("temperature object is int", _mutated("temperature", 5), ParseError, "temperature"),
    ("_s not decimal", _mutated("nvme_smart_health_information_log.media_errors_s", "x1"),
     ParseError, "media_errors_s"),
    ("attribute table not list",
     b'{"model_name": "x", "device": {"protocol": "ATA"}, "ata_smart_attributes": {"table": 3}}',
     ParseError, "ata_smart_attributes.table"),
    ("attribute row id string",
     b'{"model_name": "x", "device": {"protocol": "ATA"}, "ata_smart_attributes": '
     b'{"table": [{"id": "5", "name": "Reallocated_Sector_Ct"}]}}',
     ParseError, r"table\[0\]\.id"),
    ("attribute raw value string",
     b'{"model_name": "x", "device": {"protocol": "ATA"}, "ata_smart_attributes": '
     b'{"table": [{"id": 5, "name": "Reallocated_Sector_Ct", "raw": {"value": "0"}}]}}',
     ParseError, r"table\[0\]\.raw\.value"),
    ("scsi gigabytes not number",
     b'{"model_name": "x", "device": {"protocol": "SCSI"}, "scsi_error_counter_log": '
     b'{"write": {"gigabytes_processed": "lots"}}}', ParseError, "gigabytes_processed"),
]


@pytest.mark.parametrize("label,data,error,message", MALFORMED, ids=[m[0] for m in MALFORMED])
def test_malformed(label: str, data, error, message: str) -> None:
    with pytest.raises(error, match=message):
        parse_smartctl_json(data)


def test_normalise_rejects_non_dict() -> None:
    with pytest.raises(ParseError, match="document is list"):
        normalise_smartctl([])  # type: ignore[arg-type]


# ---------------------------------------------------------------- scan


def test_scan_json_megaraid_entries_are_separate() -> None:
    entries = parse_scan_json(read_fixture(J + "telegraf__testcases_scan_megaraid.json"))
    assert len(entries) == 10
    assert entries[0] == ScanEntry("/dev/sda", "scsi", "SCSI")
    assert entries[2] == ScanEntry("/dev/sdc", "sat", "ATA")
    bus6 = [e for e in entries if e.name == "/dev/bus/6"]
    assert [e.type for e in bus6] == [f"megaraid,{n}" for n in range(8, 15)]


@pytest.mark.parametrize("name,expected", [
    ("telegraf__testcases_scan_all.json",
     [ScanEntry("/dev/sda", "sat", "ATA"), ScanEntry("/dev/nvme0", "nvme", "NVMe"),
      ScanEntry("/dev/nvme1", "nvme", "NVMe")]),
    ("scrutiny__detect_smartctl_scan_megaraid.json",
     [ScanEntry("/dev/bus/0", "megaraid,0", "SCSI"), ScanEntry("/dev/bus/0", "megaraid,1", "SCSI")]),
    ("scrutiny__detect_smartctl_scan_simple.json",
     [ScanEntry(f"/dev/sd{c}", "scsi", "SCSI") for c in "abcdefg"]),
    ("scrutiny__detect_smartctl_scan_nvme.json", None),
])
def test_scan_json_files(name: str, expected) -> None:
    entries = parse_scan_json(read_fixture(J + name))
    if expected is None:
        assert entries and all(e.type.startswith("nvme") for e in entries)
    else:
        assert entries == expected


# Same shape as the real --scan-open captures in the shared smartctl-text corpus
# (pySMART__linux_multiple_devices_--scan-open.txt and ..._usb_nvme_asmedia_...).
SCAN_TEXT = """\
/dev/nvme0 -d nvme # /dev/nvme0, NVMe device
/dev/bus/0 -d sat+megaraid,60 # /dev/bus/0 [megaraid_disk_60] [SAT], ATA device
/dev/bus/0 -d megaraid,61 # /dev/bus/0 [megaraid_disk_61], SCSI device
/dev/sda -d sntasmedia # /dev/sda [USB NVMe ASMedia], NVMe device
/dev/sdb -d sat # /dev/sdb [SAT], ATA device
/dev/sdc -d cciss,0 # /dev/sdc [cciss_disk_00], SCSI device
# /dev/sdd -d scsi # /dev/sdd, SCSI device open failed: No such device
"""


def test_scan_text() -> None:
    assert parse_scan_text(SCAN_TEXT) == [
        ScanEntry("/dev/nvme0", "nvme", "NVMe"),
        ScanEntry("/dev/bus/0", "sat+megaraid,60", "ATA"),
        ScanEntry("/dev/bus/0", "megaraid,61", "SCSI"),
        ScanEntry("/dev/sda", "sntasmedia", "NVMe"),
        ScanEntry("/dev/sdb", "sat", "ATA"),
        ScanEntry("/dev/sdc", "cciss,0", "SCSI"),
    ]
    assert parse_scan_text("") == []


@pytest.mark.parametrize("data", [b"", b"{", b"[]", b'{"devices": 3}', b'{"devices": [{"type": "sat"}]}',
                                  b'{"devices": [{"name": "/dev/sda", "type": 5}]}', b'{"devices": ["x"]}'])
def test_scan_json_malformed(data: bytes) -> None:
    with pytest.raises(ParseError):
        parse_scan_json(data)


def test_scan_text_garbage() -> None:
    with pytest.raises(ParseError, match="line 2"):
        parse_scan_text("/dev/sda -d sat # ok\nsmartctl: unknown option\n")


# ---------------------------------------------------------------- probe


class RecordingRunner:
    """Stands in for the process runner: records argv, returns a prepared ToolResult."""

    def __init__(self, exit_code: int = 0, stdout: bytes = b"{}") -> None:
        self.calls: List[Dict[str, Any]] = []
        self.exit_code = exit_code
        self.stdout = stdout

    def __call__(self, argv, timeout=None, **kwargs) -> ToolResult:
        self.calls.append({"argv": list(argv), "timeout": timeout})
        return ToolResult(tuple(argv), self.exit_code, self.stdout, b"", 0.01)


def test_probe_argv_ata() -> None:
    runner = RecordingRunner()
    SmartctlProbe("/usr/sbin/smartctl", runner=runner, timeout=12.0).read("/dev/sda", "sat")
    assert runner.calls == [{
        "argv": ["/usr/sbin/smartctl", "--json=c", "--info", "--health", "--attributes",
                 "--log=devstat", "--log=selftest", "--log=error", "--log=scttemp", "--nocheck=standby,3", "-d", "sat",
                 "/dev/sda"],
        "timeout": 12.0,
    }]


def test_probe_argv_nvme_scsi_megaraid() -> None:
    runner = RecordingRunner()
    probe = SmartctlProbe(runner=runner)
    probe.read("/dev/nvme0", "nvme")
    probe.read("/dev/sdb", "scsi")
    probe.read("/dev/bus/0", "sat+megaraid,3")
    argvs = [c["argv"] for c in runner.calls]
    assert argvs[0] == ["smartctl", "--json=c", "--info", "--health", "--attributes",
                        "--log=selftest", "--log=error", "--nocheck=standby,3", "-d", "nvme", "/dev/nvme0"]
    assert argvs[1][5:8] == ["--log=error", "--log=ssd", "--log=selftest"] and argvs[1][-3:] == ["-d", "scsi", "/dev/sdb"]
    assert "--log=scttemp" not in argvs[0] + argvs[1] and "--log=scttemp" in argvs[2]
    assert argvs[2][-3:] == ["-d", "sat+megaraid,3", "/dev/bus/0"] and "--log=devstat" in argvs[2]
    assert all(isinstance(a, str) for argv in argvs for a in argv)


def test_probe_scan_argv() -> None:
    runner = RecordingRunner()
    probe = SmartctlProbe(runner=runner)
    probe.scan()
    probe.scan(json_output=False)
    probe.scan(json_output=False, open_devices=False)
    probe.version()
    assert [c["argv"] for c in runner.calls] == [
        ["smartctl", "--scan-open", "--json=c"],
        ["smartctl", "--scan-open"],
        ["smartctl", "--scan"],
        ["smartctl", "--version"],
    ]


def test_standby_is_recognisable() -> None:
    runner = RecordingRunner(exit_code=STANDBY_EXIT_STATUS, stdout=b"")
    result = SmartctlProbe(runner=runner).read("/dev/sda", "sat")
    assert is_standby(result)
    assert not is_standby(ToolResult(("smartctl",), 2, b"", b"", 0.1))
    assert not is_standby(ToolResult(("smartctl",), 0, read_fixture(J + "scrutiny__smart-ata-full.json"), b"", 0.1))


def test_supports_json() -> None:
    assert supports_json("smartctl 7.3 2022-02-28 r5338 [x86_64-linux-6.1] (local build)\n")
    assert supports_json(b"smartctl 7.0 2018-12-30 r4883 [x86_64-w64-mingw32-w10-1809]")
    assert not supports_json("smartctl 6.6 2016-05-31 r4324 [x86_64-linux-4.9.0] (local build)")
    assert not supports_json("smartctl 5.43 2012-06-30 r3573 [x86_64-linux]")
    assert not supports_json("")


# ---------------------------------------------------------------- golden file
# tests/golden/smartctl_expected.yaml holds numbers as they appear in the raw files, with their
# units; the conversion happens here, so the golden file can be checked against a fixture by eye.

GOLDEN = Path(__file__).resolve().parents[2] / "golden" / "smartctl_expected.yaml"
GOLDEN_ENTRIES: List[Dict[str, Any]] = yaml.safe_load(GOLDEN.read_text())

GOLDEN_UNIT_BYTES = {"32MiB": 32 * 1024 * 1024, "GiB": 1024**3, "nvme_data_unit": 512_000}


def _bytes(spec: Dict[str, Any], sector: int) -> int:
    if "gigabytes" in spec:
        return int(round(float(spec["gigabytes"]) * 1000**3))
    unit = spec["unit"]
    return spec["count"] * (sector if unit == "sectors" else GOLDEN_UNIT_BYTES[unit])


def test_golden_breadth() -> None:
    vendors = {e["vendor"] for e in GOLDEN_ENTRIES}
    failing = [e for e in GOLDEN_ENTRIES if e["smart_healthy"] is False or e.get("critical_warning")]
    assert len(GOLDEN_ENTRIES) >= 25 and len(vendors) >= 8 and failing


@pytest.mark.parametrize("entry", GOLDEN_ENTRIES, ids=[e["file"][:60] for e in GOLDEN_ENTRIES])
def test_golden(entry: Dict[str, Any]) -> None:
    r = parse_smartctl_json(read_fixture("smartctl-json/" + entry["file"]))
    sector = r.logical_sector_bytes or 512
    for key in ("kind", "model", "serial", "smart_healthy", "tool_exit_status", "is_ssd"):
        assert getattr(r, key) == entry[key], key

    drive = [t for t in r.temperatures if t.sensor == "drive"]
    assert (drive[0].celsius if drive else None) == entry["temperature_celsius"]
    if "temperature_limit_celsius" in entry:
        assert drive[0].limit_celsius == entry["temperature_limit_celsius"]
    if "nvme_sensors" in entry:
        sensors = [t.celsius for t in r.temperatures if t.sensor.startswith("sensor_")]
        assert sensors == entry["nvme_sensors"]
    hours = entry["power_on_hours"]
    assert (None if r.power_on_seconds is None else r.power_on_seconds // 3600) == hours

    life = entry["life_left_percent"]
    if life is None:
        assert r.life_left_ratio is None
    else:
        assert r.life_left_ratio == pytest.approx(life / 100)
        note = entry["life_note"]
        source = r.sources["life_left_ratio"]
        if note.startswith("nvme"):
            assert source == "nvme percentage_used"
        elif note.startswith("devstat"):
            assert source == "ata devstat Percentage Used Endurance Indicator"
        else:
            assert source == "ata " + note

    host = entry["host_written"]
    if host is None:
        assert r.host_written_bytes is None
    else:
        assert r.host_written_bytes == _bytes(host, sector)
        if "attribute" in host:
            assert r.sources["host_written_bytes"] == f"ata {host['attribute']} raw"
        if "devstat" in host:
            assert r.sources["host_written_bytes"] == f"ata devstat {host['devstat']} x sector size"
    if entry.get("host_read") is not None:
        assert r.host_read_bytes == _bytes(entry["host_read"], sector)

    nand = entry.get("nand_written", None)
    if nand is None:
        assert r.nand_written_bytes is None
    elif nand == "estimated":
        pages = entry["write_amplification"]
        amplification = (pages["host_pages"] + pages["background_pages"]) / pages["host_pages"]
        assert r.write_amplification == round(amplification, 6)
        assert r.sources["nand_written_bytes"].startswith("estimated")
        assert r.nand_written_bytes == int(r.host_written_bytes * amplification)
    else:
        assert r.nand_written_bytes == _bytes(nand, sector)
        assert r.sources["nand_written_bytes"] == f"ata {nand['attribute']} raw"
        assert r.write_amplification == round(r.nand_written_bytes / r.host_written_bytes, 6)

    if "spare_left_percent" in entry:
        spare = entry["spare_left_percent"]
        assert r.spare_left_ratio == (None if spare is None else pytest.approx(spare / 100))
    if entry.get("spare_threshold_percent") is not None:
        assert r.spare_threshold_ratio == pytest.approx(entry["spare_threshold_percent"] / 100)
    if "defects" in entry:
        assert r.defects == entry["defects"]
    for key in ("critical_warning", "media_errors"):
        if key in entry:
            assert getattr(r, key) == entry[key], key


def test_real_standby_capture() -> None:
    # captured on the build host with the probe's own options: exit 3, "SLEEP mode" message
    raw = read_fixture(J + "ssdfleet__standby-sleep-dev-null.json")
    assert is_standby(ToolResult(("smartctl",), 3, raw, b"", 0.1))
    assert SmartctlProbe().is_standby(ToolResult(("smartctl",), None, raw, b"", 0.1))
    with pytest.raises(NoSmartData, match="SLEEP mode"):
        parse_smartctl_json(raw)
