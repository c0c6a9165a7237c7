"""The normaliser's context counters and plausibility checks, on real captures.

* ATA 187/188/199 (reported uncorrectable, command timeouts, link CRC errors) as defect counts;
* the NVMe SMART/Health log in full (busy time, thermal times, commands, unsafe shutdowns,
  error log entries) from smartctl JSON, smartctl text and nvme-cli;
* values that cannot be true are absent, with the reason in ``extra``: write amplification
  outside 1..50, temperatures of 0 C or outside -40..150 C, NaN and negative percentages;
* ratios carry no float noise;
* disks behind an HP Smart Array (``-d cciss,N``) are told apart.

Expected values were read by hand off the raw files; the attribute row or log line is quoted
next to each.
"""

from __future__ import annotations

import json
from typing import Any, Dict

import pytest

from collectors.model import KIND_SCSI, ParseError
from collectors.nvme_vendor.nvme_cli import parse_smart_log_json
from collectors.smartctl import attributes as attrs
from collectors.smartctl import normalise_smartctl, parse_smartctl_json
from collectors.smartctl.text_report import parse_smartctl_text, parse_smartctl_text_reading
from tests.conftest import fixture_files, read_fixture

J = "smartctl-json/"
T = "smartctl-text/"
LINUXHW = T + "linuxhw-EnterpriseDrive__"


def _text(name: str):
    return parse_smartctl_text_reading(read_fixture(name).decode("utf-8", "replace"), "/dev/sda")


def _json(name: str):
    return parse_smartctl_json(read_fixture(J + name))


# ------------------------------------------------------------------ 187 / 188 / 199

ERROR_COUNTS = [
    (  # "187 Reported_Uncorrect ... 19", "188 Command_Timeout ... 55835557908" (13, 15 and 20
        # packed in 16-bit words: 13 * 2**32 + 15 * 2**16 + 20), "199 UDMA_CRC_Error_Count ... 20"
        LINUXHW + "HDD_Maxtor_STM3500320AS_7D9AD98B909C.txt",
        {"reported_uncorrectable": 19, "command_timeout": 20, "udma_crc_errors": 20},
    ),
    (  # "187 Reported_Uncorrect ... 1", "188 Command_Timeout ... 8590065673" (2, 2, 9)
        LINUXHW + "HDD_Seagate_ST32000645NS_7461BEFBF3D1.txt",
        {"reported_uncorrectable": 1, "command_timeout": 9, "udma_crc_errors": 0},
    ),
    (  # Crucial MX500: "199 UDMA_CRC_Error_Count ... 1410" (a bad cable, not a bad drive)
        LINUXHW + "SSD_Crucial_CT1000MX500SSD1_D5312FEA43F3.txt",
        {"reported_uncorrectable": 0, "udma_crc_errors": 1410},
    ),
    (  # Micron 5200: "188 Command_Timeout ... 27", a plain counter
        LINUXHW + "SSD_Micron_5200_MTFDDAK1T9TDD_CC3497B129CD.txt",
        {"command_timeout": 27},
    ),
    (  # Seagate Nytro SATA: "187 Uncorrectable_ECC_Ct ... 0", "199 UDMA_CRC_Error_Count ... 0"
        LINUXHW + "SSD_Seagate_XA480ME10063_633EB5B87E12.txt",
        {"reported_uncorrectable": 0, "udma_crc_errors": 0},
    ),
    (  # SanDisk (Marvell): "188 Command_Timeout ... 0", "199 SATA_CRC_Error ... 0"
        LINUXHW + "SSD_SanDisk_SSD_PLUS_240_GB_72F5C2EA2BCE.txt",
        {"reported_uncorrectable": 0, "command_timeout": 0, "udma_crc_errors": 0},
    ),
    (  # smartctl 7.3 knows Seagate's format: 188 raw.string "2 2 2", raw.value 8590065666
        J + "smartctl_exporter__sat-Seagate_Enterprise_Capacity_3.5_HDD-ST2000NM0008-2F3100-sdl.json",
        {"reported_uncorrectable": 0, "command_timeout": 2, "udma_crc_errors": 0},
    ),
    (  # its database lacks this one: 188 raw.string "17180131332" = 4 * 2**32 + 4 * 2**16 + 4
        J + "smartctl_exporter__sat-Seagate_Constellation_ES.3-ST3000NM0033-9ZM178-sdc.json",
        {"command_timeout": 4},
    ),
    (  # smartctl 7.1, 188 raw.string "51540393996" = 12 * 2**32 + 12 * 2**16 + 12
        J + "smartctl_exporter__sat-Seagate_Exos_X16-ST16000NM001G-2KK103-sda.json",
        {"command_timeout": 12},
    ),
]


@pytest.mark.parametrize("name,expected", ERROR_COUNTS, ids=[n.split("/")[-1][:50] for n, _ in ERROR_COUNTS])
def test_error_counts_as_defects(name: str, expected: Dict[str, int]) -> None:
    reading = _json(name[len(J):]) if name.startswith(J) else _text(name)
    for key, want in expected.items():
        assert reading.defects.get(key) == want, key


def test_unknown_attribute_187_is_not_read() -> None:
    # smartctl 5.37 without a database entry: "187 Unknown_Attribute ... 0"; the ID alone
    # is no meaning, while "199 UDMA_CRC_Error_Count ... 0" on the same drive is kept.
    reading = _text(T + "gsmartcontrol__mine_sea7200.10_250G_mighty-a.37.txt")
    assert "reported_uncorrectable" not in reading.defects
    assert reading.defects["udma_crc_errors"] == 0


def test_command_timeout_reads_the_low_word() -> None:
    rule = attrs.find_rule(188, "Command_Timeout")
    assert rule is not None and rule.unit == attrs.COUNT_LOW16
    assert attrs.find_rule(187, "Unknown_Attribute") is None
    assert attrs.find_rule(188, "Unknown_Attribute") is None


# ------------------------------------------------------------------ NVMe health log in full

NVME_LOGS = [
    (  # smartctl JSON: "controller_busy_time": 7601, "host_reads": 118020838,
        # "host_writes": 874050000, "unsafe_shutdowns": 10, "num_err_log_entries": 62
        J + "scrutiny__smart-nvme-failed.json",
        {"controller_busy_seconds": str(7601 * 60), "warning_temperature_seconds": "0",
         "critical_temperature_seconds": "0", "host_read_commands": "118020838",
         "host_write_commands": "874050000", "unsafe_shutdowns": "10", "error_log_entries": "62"},
    ),
    (  # smartctl text: "Controller Busy Time: 4,042", "Warning  Comp. Temperature Time: 11",
        # "Critical Comp. Temperature Time: 7", "Host Read Commands: 135,924,188",
        # "Host Write Commands: 7,715,573,429", "Unsafe Shutdowns: 355",
        # "Error Information Log Entries: 119,699"
        T + "telegraf__smartctlNVMeInfoData.txt",
        {"controller_busy_seconds": str(4042 * 60), "warning_temperature_seconds": str(11 * 60),
         "critical_temperature_seconds": str(7 * 60), "host_read_commands": "135924188",
         "host_write_commands": "7715573429", "unsafe_shutdowns": "355", "error_log_entries": "119699"},
    ),
    (  # de_CH grouping: "Controller Busy Time: 4’473", "Critical Comp. Temperature Time: 3",
        # "Host Write Commands: 1’698’774’134", "Unsafe Shutdowns: 35"
        T + "pySMART__nvme_12_issue_89_-d_nvme_--all_nvme0.txt",
        {"controller_busy_seconds": str(4473 * 60), "warning_temperature_seconds": "0",
         "critical_temperature_seconds": str(3 * 60), "host_read_commands": "483239411",
         "host_write_commands": "1698774134", "unsafe_shutdowns": "35", "error_log_entries": "0"},
    ),
]


@pytest.mark.parametrize("name,expected", NVME_LOGS, ids=[n.split("/")[-1][:50] for n, _ in NVME_LOGS])
def test_nvme_health_log_in_full(name: str, expected: Dict[str, str]) -> None:
    reading = _json(name[len(J):]) if name.startswith(J) else _text(name)
    assert reading.kind == "nvme"
    assert {k: reading.extra.get(k) for k in expected} == expected
    # the old, unit-less key names are gone
    assert "num_err_log_entries" not in reading.extra


def test_nvme_health_log_from_nvme_cli() -> None:
    # nvme-cli 2.11: "controller_busy_time": 69549, "warning_temp_time": 0,
    # "host_write_commands": 24273507789, "num_err_log_entries": 212
    reading = parse_smart_log_json(read_fixture("nvme-cli/netdata__v2.11_nvme-smart-log.json"), "/dev/nvme0")
    assert reading.extra["controller_busy_seconds"] == str(69549 * 60)
    assert reading.extra["warning_temperature_seconds"] == "0"
    assert reading.extra["host_write_commands"] == "24273507789"
    assert reading.extra["error_log_entries"] == "212"


# ------------------------------------------------------------------ write amplification

REJECTED_WA = [
    (  # Kingston A400: "233 Flash_Writes_GiB ... 5220" below "241 Lifetime_Writes_GiB ... 10001"
        LINUXHW + "SSD_Kingston_SA400S37240G_1F32249E46F2.txt", 5220 / 10001),
    (  # WD Blue 3D: "233 NAND_GB_Written_TLC ... 57881" counts the TLC part only ("234
        # NAND_GB_Written_SLC ... 187651"); host: devstat "Logical Sectors Written 260062170119"
        LINUXHW + "SSD_WDC_WDS100T2B0A-00SM50_6B27A984F0FE.txt", 57881 * 10**9 / (260062170119 * 512)),
    (  # SanDisk SSD PLUS: "233 Total_NAND_Writes_GiB ... 5345", devstat "Logical Sectors
        # Written 32509439391"
        LINUXHW + "SSD_SanDisk_SSD_PLUS_240_GB_72F5C2EA2BCE.txt", 5345 * 2**30 / (32509439391 * 512)),
    (  # netdata's WDS400T1R0A (smartctl without the WD entry): 233 raw 65406 (GB), 241 raw
        # 173833 (GiB)
        J + "netdata__type-sat_device-ssd-sdc.json", 65406 * 10**9 / (173833 * 2**30)),
]


@pytest.mark.parametrize("name,ratio", REJECTED_WA, ids=[n.split("/")[-1][:50] for n, _ in REJECTED_WA])
def test_write_amplification_below_one_is_absent(name: str, ratio: float) -> None:
    reading = _json(name[len(J):]) if name.startswith(J) else _text(name)
    assert ratio < 1.0
    assert reading.write_amplification is None
    assert "write_amplification" not in reading.sources
    why = reading.extra["write_amplification_rejected"]
    assert why.startswith(f"nand/host = {ratio:.1f} outside 1..50"), why
    # the counters themselves are still reported, each with its source
    assert reading.nand_written_bytes is not None and reading.host_written_bytes is not None


def test_compressing_controller_keeps_a_write_amplification_below_one() -> None:
    # Seagate Nytro (SandForce's DuraWrite compresses before writing): "233
    # Lifetime_Wts_To_Flsh_GB" against devstat "Logical Sectors Written": a real 0.38 on
    # compressible data. The same figure on a drive that does not compress is rejected (A400 above).
    reading = _text(LINUXHW + "SSD_Seagate_XA480ME10063_633EB5B87E12.txt")
    assert reading.model_family == "Seagate Nytro SATA SSD"
    assert reading.write_amplification == round(reading.nand_written_bytes / reading.host_written_bytes, 6)
    assert 0.1 < reading.write_amplification < 1.0
    assert "write_amplification_rejected" not in reading.extra


def test_samsung_pm871a_241_is_not_sectors() -> None:
    # "241 Total_LBAs_Written ... 3949" and "242 Total_LBAs_Read ... 5176" after "9
    # Power_On_Hours ... 3528", while "251 NAND_Writes ... 61261294592" sectors (31 TB) and
    # "173 Wear_Leveling_Count ... 28" erase cycles: read as sectors the write amplification
    # would be 15.5 million. No device statistics to find the unit: withheld.
    reading = _text(LINUXHW + "SSD_Samsung_MZ7LN1T0HAJQ-00000_049B7EFCCC9F.txt")
    assert reading.host_written_bytes is None and reading.host_read_bytes is None
    assert "unit unknown" in reading.extra["host_written_bytes_withheld"]
    # 249 NAND_Writes_1GiB (29211 GiB) comes first in the table; 251 NAND_Writes
    # (61261294592 sectors) says the same volume to within one GiB
    assert abs(reading.nand_written_bytes - 61261294592 * 512) <= 1024**3
    assert reading.write_amplification is None


def test_write_amplification_above_fifty_is_absent() -> None:
    # The Intel S4510 capture with its 241 host counter cut to a thousandth: 233/241 = 1841.
    doc = json.loads(read_fixture(J + "smartctl_exporter__sat-Intel_S4510_S4610_S4500_S4600_Series_SSDs"
                                       "-INTEL_SSDSC2KB019T7-sdq.json"))
    for row in doc["ata_smart_attributes"]["table"]:
        if row["id"] == 225:  # "225 Host_Writes_32MiB ... 29748724"
            row["raw"]["value"] = 29748
    reading = normalise_smartctl(doc)
    assert reading.write_amplification is None
    assert reading.extra["write_amplification_rejected"].startswith(f"nand/host = {54777356 / 29748:.1f} outside")


def test_plausible_write_amplification_is_rounded() -> None:
    # "243 NAND_Writes_32MiB ... 54777356" / "225 Host_Writes_32MiB ... 29748724"
    reading = _json("smartctl_exporter__sat-Intel_S4510_S4610_S4500_S4600_Series_SSDs-INTEL_SSDSC2KB019T7-sdq.json")
    assert reading.write_amplification == round(54777356 / 29748724, 6)
    assert "write_amplification_rejected" not in reading.extra


# ------------------------------------------------------------------ temperatures

def test_zero_celsius_is_no_sensor() -> None:
    # Crucial m4: "194 Temperature_Celsius ... 0", "Current Temperature: 0 Celsius" (SCT) and
    # devstat "Current Temperature" 0 and "Highest Temperature" 0.
    reading = _text(LINUXHW + "SSD_Crucial_M4-CT128M4SSD2_8E597C262895.txt")
    assert reading.temperatures == ()
    assert reading.extra["temperature_rejected"].startswith("drive 0 C")


def _nvme_doc() -> Dict[str, Any]:
    return json.loads(read_fixture(J + "smartctl_exporter__nvme-null-Micron_7450_MTFDKCC3T2TFS-nvme1.json"))


@pytest.mark.parametrize("celsius", [0, -41, 151, float("nan"), float("inf")])
def test_implausible_nvme_temperature_is_absent(celsius: float) -> None:
    # The Micron 7450 says "temperature": {"current": 33} and sensors [38, 35, 33]; the first
    # sensor is replaced by a value no sensor can read.
    doc = _nvme_doc()
    doc["temperature"]["current"] = celsius
    doc["nvme_smart_health_information_log"]["temperature"] = celsius
    doc["nvme_smart_health_information_log"]["temperature_sensors"][0] = celsius
    reading = parse_smartctl_json(json.dumps(doc, allow_nan=True))
    assert {t.sensor: t.celsius for t in reading.temperatures} == {"sensor_2": 35.0, "sensor_3": 33.0}
    assert "drive" in reading.extra["temperature_rejected"] and "sensor_1" in reading.extra["temperature_rejected"]


def test_plausible_extremes_are_kept() -> None:
    doc = _nvme_doc()
    doc["temperature"]["current"] = -40
    assert [t.celsius for t in parse_smartctl_json(json.dumps(doc)).temperatures][0] == -40.0


# ------------------------------------------------------------------ percentages and ratios

@pytest.mark.parametrize("used", [-1, float("nan"), float("-inf")])
def test_nvme_percentage_used_not_a_percentage(used: float) -> None:
    doc = _nvme_doc()
    doc["nvme_smart_health_information_log"]["percentage_used"] = used
    reading = parse_smartctl_json(json.dumps(doc, allow_nan=True))
    assert reading.life_left_ratio is None
    assert "percentage_used" in reading.extra["life_left_ratio_rejected"]
    assert reading.spare_left_ratio == 1.0  # "available_spare": 100, unaffected


def test_nvme_percentage_used_over_100_is_no_life_left() -> None:
    # Samsung 970 EVO Plus, text: "Percentage Used: 113%"
    reading = _text(LINUXHW + "NVMe_Samsung_SSD_970_EVO_Plus_250GB_99E505C842B4.txt")
    assert reading.life_left_ratio == 0.0


@pytest.mark.parametrize("name,used", [
    ("smartctl_exporter__nvme-null-INTEL_SSDPEDMD016T4-nvme0.json", 41),  # "percentage_used": 41
    ("smartctl_exporter__nvme-null-MTFDHAX1T6MCE-1AN1ZABYY-nvme0.json", 69),  # "percentage_used": 69
])
def test_life_left_has_no_float_noise(name: str, used: int) -> None:
    reading = _json(name)
    assert 1 - used / 100 != (100 - used) / 100  # the noise this guards against
    assert reading.life_left_ratio == (100 - used) / 100
    assert repr(reading.life_left_ratio) == f"0.{100 - used}"


def test_every_ratio_is_rounded_across_the_corpus() -> None:
    for path in fixture_files("smartctl-json", ".json"):
        doc = json.loads(path.read_bytes())
        if "devices" in doc:
            continue
        try:
            reading = normalise_smartctl(doc)
        except ParseError:  # no SMART data: the corpus tests count those
            continue
        for field in ("life_left_ratio", "spare_left_ratio", "spare_threshold_ratio", "write_amplification"):
            value = getattr(reading, field)
            assert value is None or value == round(value, 6), (path.name, field, value)


# ------------------------------------------------------------------ cciss pass-through

# No capture of a disk behind an HP Smart Array exists in tests/fixtures or ../shared/fixtures,
# and smartctl --scan does not list such disks (they are configured as "DEVICE:cciss,N"). What
# smartctl prints for one is in its source (os_linux.cpp, linux_cciss_device): device type
# "cciss" without the disk number, info name "/dev/sda [cciss_disk_NN]", and in text output
# "/dev/sda [cciss_disk_NN] [SCSI]: Device open changed type from 'sat,auto' to 'cciss'". The
# tests give two real SAS captures that device block and drop their serial and WWN, as
# "smartctl -q noserial" does: nothing but the disk number tells the two apart.
SAS_JSON = ("smartctl_exporter__HITACHI_H109060SESUN600G_10.json", "scrutiny__smart-scsi.json")


def _cciss_doc(name: str, disk: int) -> Dict[str, Any]:
    doc = json.loads(read_fixture(J + name))
    for key in ("serial_number", "wwn", "logical_unit_id"):
        doc.pop(key, None)
    doc["device"] = {"name": "/dev/sda", "info_name": f"/dev/sda [cciss_disk_{disk:02d}] [SCSI]",
                     "type": "cciss", "protocol": "SCSI"}
    return doc


def test_two_cciss_disks_on_one_controller_are_two_drives_json() -> None:
    first, second = (normalise_smartctl(_cciss_doc(name, disk)) for disk, name in enumerate(SAS_JSON))
    assert (first.device_type, second.device_type) == ("cciss,0", "cciss,1")
    assert (first.identity, second.identity) == ("/dev/sda:cciss,0", "/dev/sda:cciss,1")
    assert first.block_device is None and second.block_device is None  # /dev/sda is the array
    assert first.kind == second.kind == KIND_SCSI
    # values still come from each disk's own capture ("write: ... 127551.260" vs "86472.611" GB)
    assert first.host_written_bytes != second.host_written_bytes


def test_two_cciss_disks_on_one_controller_are_two_drives_text() -> None:
    # telegraf's HGST SAS SSD capture, with the device line smartctl prints for a cciss disk
    # after its banner, once as disk 0 and once as disk 3; serial line removed (-q noserial).
    lines = read_fixture(T + "telegraf__mockHGST.txt").decode("utf-8", "replace").splitlines()
    lines = [ln for ln in lines if not ln.startswith(("Serial number:", "Logical Unit id:"))]
    readings = []
    for disk in (0, 3):
        device_line = f"/dev/sda [cciss_disk_{disk:02d}] [SCSI]: Device open changed type from 'sat,auto' to 'cciss'"
        after_banner = next(i for i, ln in enumerate(lines) if ln.startswith("Copyright")) + 1
        text = "\n".join(lines[:after_banner] + ["", device_line] + lines[after_banner:])
        doc = parse_smartctl_text(text, "/dev/sda")
        assert doc["device"]["info_name"] == f"/dev/sda [cciss_disk_{disk:02d}] [SCSI]"
        readings.append(normalise_smartctl(doc, "/dev/sda"))
    assert [r.serial for r in readings] == [None, None]
    assert [r.identity for r in readings] == ["/dev/sda:cciss,0", "/dev/sda:cciss,3"]
    assert readings[0].model == readings[1].model == "HGST HUSMM1640ASS200"


def test_text_without_a_device_line_leaves_the_type_to_the_caller() -> None:
    # A plain "-d megaraid,44" capture names no type: the record must not claim "scsi", or the
    # poller's own "megaraid,44" would be overwritten.
    doc = parse_smartctl_text(read_fixture(T + "pySMART__megaraid_ph_sas_hdd_0_-d_megaraid_44_--all_bus_7.txt")
                              .decode("utf-8", "replace"), "/dev/bus/7")
    assert "type" not in doc["device"] and doc["device"]["protocol"] == "SCSI"
    assert normalise_smartctl(doc, "/dev/bus/7").device_type is None
