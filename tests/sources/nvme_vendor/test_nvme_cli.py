"""nvme-cli parsers: smart-log JSON (2.3 and 2.11), nvme list JSON (flat and tree layouts),
id-ctrl text and the Intel plugin's smart-log-add; NVMe critical-warning bits on real files.

Expected values were read by hand off the files in tests/fixtures/nvme-cli (and, for the
critical-warning bits, the smartctl captures named next to each case).
"""

from __future__ import annotations

import json
from typing import Any, Dict, List

import pytest

from collectors.model import ParseError
from collectors.nvme_vendor.nvme_cli import (
    CRITICAL_WARNING_BITS,
    NvmeController,
    NvmeNamespace,
    decode_critical_warning,
    id_ctrl_identity,
    intel_smart_fields,
    parse_id_ctrl_text,
    parse_intel_smart_log_add,
    parse_list_json,
    parse_smart_log_json,
    smart_log_doc,
)
from collectors.smartctl import parse_smartctl_json
from collectors.smartctl.text_report import parse_smartctl_text_reading
from tests.conftest import read_fixture

N = "nvme-cli/"
NVME_UNIT = 512_000

# ---------------------------------------------------------------- smart-log JSON

SMART_LOG_CASES: List[Any] = [
    (  # nvme-cli 2.3: flat critical_warning, "temperature": 310 (kelvin)
        "netdata__v2.3_nvme-smart-log.json",
        dict(kind="nvme", is_ssd=True, critical_warning=0, smart_healthy=True, readonly=False,
             life_left_ratio=0.98, spare_left_ratio=1.0, spare_threshold_ratio=0.05, media_errors=0,
             host_written_bytes=136157684 * NVME_UNIT, host_read_bytes=9898518 * NVME_UNIT,
             power_on_seconds=4974 * 3600, power_cycles=64, temperatures={"drive": 37.0},
             # the rest of the log: "controller_busy_time": 8284 (minutes), "warning_temp_time": 0,
             # "critical_comp_time": 0, "host_read_commands": 313528805, "host_write_commands":
             # 1928062610, "unsafe_shutdowns": 39, "num_err_log_entries": 110
             extra={"controller_busy_seconds": str(8284 * 60), "warning_temperature_seconds": "0",
                    "critical_temperature_seconds": "0", "host_read_commands": "313528805",
                    "host_write_commands": "1928062610", "unsafe_shutdowns": "39",
                    "error_log_entries": "110", "source_tool": "nvme-cli"}),
    ),
    (  # nvme-cli 2.11 verbose: critical_warning object, "temperature": 324 (kelvin)
        "netdata__v2.11_nvme-smart-log.json",
        dict(kind="nvme", critical_warning=0, smart_healthy=True, life_left_ratio=0.70,
             spare_left_ratio=1.0, spare_threshold_ratio=0.05,
             host_written_bytes=1928683480 * NVME_UNIT, host_read_bytes=178037231 * NVME_UNIT,
             power_on_seconds=24424 * 3600, power_cycles=99, temperatures={"drive": 51.0},
             # "controller_busy_time": 69549, "host_read_commands": 5808178366,
             # "host_write_commands": 24273507789, "unsafe_shutdowns": 49, "num_err_log_entries": 212
             extra={"controller_busy_seconds": str(69549 * 60), "warning_temperature_seconds": "0",
                    "critical_temperature_seconds": "0", "host_read_commands": "5808178366",
                    "host_write_commands": "24273507789", "unsafe_shutdowns": "49",
                    "error_log_entries": "212", "source_tool": "nvme-cli"}),
    ),
]


@pytest.mark.parametrize("name,expected", SMART_LOG_CASES, ids=[c[0] for c in SMART_LOG_CASES])
def test_smart_log_real_files(name: str, expected: Dict[str, Any]) -> None:
    reading = parse_smart_log_json(read_fixture(N + name), "/dev/nvme0")
    assert reading.device == "/dev/nvme0" and reading.block_device == "nvme0"
    for key, want in expected.items():
        if key == "temperatures":
            got: Any = {t.sensor: t.celsius for t in reading.temperatures}
        else:
            got = getattr(reading, key)
        if isinstance(want, float):
            assert got == pytest.approx(want), key
        else:
            assert got == want, key


def test_smart_log_sources_match_smartctl() -> None:
    # Same normaliser as smartctl's JSON, so the same source strings.
    reading = parse_smart_log_json(read_fixture(N + "netdata__v2.3_nvme-smart-log.json"), "/dev/nvme0")
    assert reading.sources["life_left_ratio"] == "nvme percentage_used"
    assert reading.sources["host_written_bytes"] == "nvme data_units_written x 512000"


def test_smart_log_doc_uses_smartctl_key_names() -> None:
    doc = smart_log_doc(json.loads(read_fixture(N + "netdata__v2.11_nvme-smart-log.json")), "/dev/nvme1")
    log = doc["nvme_smart_health_information_log"]
    assert (log["available_spare"], log["available_spare_threshold"], log["percentage_used"]) == (100, 5, 30)
    assert (log["host_reads"], log["host_writes"]) == (5808178366, 24273507789)
    assert log["temperature"] == 324 - 273
    assert doc["smart_status"] == {"passed": True, "nvme": {"value": 0}}


def test_smart_log_with_identity_from_nvme_list() -> None:
    controllers = parse_list_json(read_fixture(N + "netdata__v2.3_nvme-list.json"))
    reading = parse_smart_log_json(read_fixture(N + "netdata__v2.3_nvme-smart-log.json"), "/dev/nvme0",
                                   controller=controllers[0])
    assert reading.serial == "XXX00YYY"
    assert reading.model == "Seagate FireCuda 530 ZP4000GM30023"
    assert reading.firmware == "SU6SM001"
    assert reading.capacity_bytes == 4000787030016
    assert reading.logical_sector_bytes == 512


def _log(name: str) -> Dict[str, Any]:
    return json.loads(read_fixture(N + name))


def test_several_temperature_sensors_kelvin_positional() -> None:
    # The real 2.3 log with sensors 1 and 3 added in nvme-cli's own form (kelvin, unused
    # slots left out): they become sensor_1 and sensor_3, not sensor_1 and sensor_2.
    log = _log("netdata__v2.3_nvme-smart-log.json")
    log.update(temperature_sensor_1=318, temperature_sensor_3=305)
    reading = parse_smart_log_json(json.dumps(log), "/dev/nvme0")
    assert {t.sensor: t.celsius for t in reading.temperatures} == {
        "drive": 37.0, "sensor_1": 45.0, "sensor_3": 32.0}


def test_128_bit_counters_exact_from_string_and_integer() -> None:
    log = _log("netdata__v2.11_nvme-smart-log.json")
    # read exactly, then withheld: no drive lives to 2**128 data units (evidence.contain)
    log["data_units_written"] = str(2**128 - 1)
    reading = parse_smart_log_json(json.dumps(log), "/dev/nvme0")
    assert reading.host_written_bytes is None and "over 2**63" in reading.extra["host_written_bytes_withheld"]
    log["data_units_written"] = 2**100 + 1  # nvme-cli 2.x prints uint128 as a bare number
    assert parse_smart_log_json(json.dumps(log), "/dev/nvme0").host_written_bytes is None
    log["data_units_written"] = str(2**33 + 1)  # beyond 32 bits, within physics: exact
    assert parse_smart_log_json(json.dumps(log), "/dev/nvme0").host_written_bytes == (2**33 + 1) * NVME_UNIT
    log["data_units_written"] = 1928683480.0  # nvme-cli 1.x printed doubles
    assert parse_smart_log_json(json.dumps(log), "/dev/nvme0").host_written_bytes == 1928683480 * NVME_UNIT


def test_critical_warning_object_and_readonly_bit() -> None:
    log = _log("netdata__v2.11_nvme-smart-log.json")
    log["critical_warning"].update(value=0x0C, reliability_degraded=1, ro=1)
    reading = parse_smart_log_json(json.dumps(log), "/dev/nvme0")
    assert reading.critical_warning == 0x0C
    assert reading.smart_healthy is False and reading.readonly is True


SMART_LOG_MALFORMED = [
    ("empty", b"", "empty output"),
    ("not utf-8", b"\xff{", "UTF-8"),
    ("truncated", read_fixture(N + "netdata__v2.3_nvme-smart-log.json")[:120], "nvme smart-log JSON"),
    ("list", b"[]", "document is list"),
    ("no log fields", b'{"temperature": 300}', "no SMART/Health log fields"),
    ("percent_used string word", b'{"critical_warning": 0, "percent_used": "lots"}', "percent_used is not a number"),
    ("percent_used bool", b'{"critical_warning": 0, "percent_used": true}', "percent_used is a boolean"),
    ("counter fractional", b'{"critical_warning": 0, "data_units_written": 1.5}', "not a whole number"),
    ("counter negative", b'{"critical_warning": 0, "media_errors": -1}', "media_errors is negative"),
    ("warning over a byte", b'{"critical_warning": 256}', "not a byte"),
    ("warning object without value", b'{"critical_warning": {"ro": 0}}', "has no value"),
    ("warning object disagrees", b'{"critical_warning": {"value": 8, "ro": 0}}', r"critical_warning.ro is 0"),
    ("temperature string", b'{"critical_warning": 0, "temperature": "51 C"}', "temperature is not a number"),
]


@pytest.mark.parametrize("data,message", [m[1:] for m in SMART_LOG_MALFORMED], ids=[m[0] for m in SMART_LOG_MALFORMED])
def test_smart_log_malformed(data: bytes, message: str) -> None:
    with pytest.raises(ParseError, match=message):
        parse_smart_log_json(data, "/dev/nvme0")


# ---------------------------------------------------------------- critical warning bits


def test_decode_each_bit_alone() -> None:
    for bit, name in CRITICAL_WARNING_BITS:
        decoded = decode_critical_warning(1 << bit)
        assert [n for n, on in decoded.items() if on] == [name]
    assert not any(decode_critical_warning(0).values())
    with pytest.raises(ParseError):
        decode_critical_warning(-1)


T = "smartctl-text/linuxhw-EnterpriseDrive__NVMe_"

# Real failing drives, "Critical Warning: 0x.." line of each capture; every one is FAILED.
WARNING_FILES = [
    (T + "Toshiba_KXG50ZNV512G_A25F7EB37FF8.txt", 0x01, {"available_spare"}),  # spare 1%
    (T + "Crucial_CT500P1SSD8_1AA37AE5B55C.txt", 0x04, {"reliability_degraded"}),  # 114% used
    (T + "Intel_SSDPEDMW400G4_C5E365CF5856.txt", 0x08, {"ro"}),
    (T + "Transcend_TS512GMTE220S_8631959734DC.txt", 0x09, {"available_spare", "ro"}),  # spare 0%
    (T + "Samsung_SSD_970_EVO_Plus_250GB_99E505C842B4.txt", 0x0D, {"available_spare", "reliability_degraded", "ro"}),
    ("smartctl-json/smartctl_exporter__nvme-null-SAMSUNG_MZWLL3T2HAJQ-00005-nvme0.json", 0x10, {"vmbu_failed"}),
]


@pytest.mark.parametrize("name,value,bits", WARNING_FILES, ids=[w[0].split("__")[-1][:40] for w in WARNING_FILES])
def test_critical_warning_bits_on_real_drives(name: str, value: int, bits: set) -> None:
    raw = read_fixture(name)
    if name.endswith(".json"):
        reading = parse_smartctl_json(raw)
    else:
        reading = parse_smartctl_text_reading(raw.decode("utf-8", errors="replace"), "/dev/nvme0")
    assert reading.critical_warning == value
    assert {n for n, on in decode_critical_warning(reading.critical_warning).items() if on} == bits
    assert reading.smart_healthy is False
    assert reading.readonly is ("ro" in bits)


# ---------------------------------------------------------------- nvme list JSON


def test_list_flat_layout_v2_3() -> None:
    assert parse_list_json(read_fixture(N + "netdata__v2.3_nvme-list.json")) == [
        NvmeController("nvme0", "XXX00YYY", "Seagate FireCuda 530 ZP4000GM30023", "SU6SM001",
                       namespaces=(NvmeNamespace("nvme0n1", 1, 4000787030016, 4000787030016, 512),)),
        NvmeController("nvme1", "XXX01YYY", "Seagate FireCuda 530 ZP4000GM30023", "SU6SM001",
                       namespaces=(NvmeNamespace("nvme1n1", 1, 4000787030016, 4000787030016, 512),)),
    ]


def test_list_tree_layout_v2_11() -> None:
    controllers = parse_list_json(read_fixture(N + "netdata__v2.11_nvme-list.json"))
    assert [(c.name, c.serial, c.firmware, c.address) for c in controllers] == [
        ("nvme0", "XXX02YYY", "SU6SM005", "0000:01:00.0"),
        ("nvme1", "XXX00YYY", "SU6SM001", "0000:81:00.0"),
        ("nvme2", "7VS00KNX", "SU6SM001", "0000:61:00.0"),
    ]
    assert [[ns.name for ns in c.namespaces] for c in controllers] == [["nvme0n1"], ["nvme1n1"], ["nvme2n1"]]
    assert all(c.capacity_bytes == 4000787030016 for c in controllers)


def test_list_empty() -> None:
    assert parse_list_json(read_fixture(N + "netdata__nvme-list-empty.json")) == []


def test_list_folds_namespaces_into_their_controller() -> None:
    # The real 2.3 list with a second namespace on nvme0 (nvme0n2, 1 TB) and a multipath
    # path name: three entries, two controllers.
    doc = json.loads(read_fixture(N + "netdata__v2.3_nvme-list.json"))
    second = dict(doc["Devices"][0], NameSpace=2, DevicePath="/dev/nvme0c0n2", PhysicalSize=10**12, UsedBytes=0)
    doc["Devices"].append(second)
    controllers = parse_list_json(json.dumps(doc))
    assert [c.name for c in controllers] == ["nvme0", "nvme1"]
    assert [ns.name for ns in controllers[0].namespaces] == ["nvme0n1", "nvme0n2"]
    assert controllers[0].capacity_bytes == 4000787030016 + 10**12


LIST_MALFORMED = [
    ("empty", b"", "empty output"),
    ("list document", b"[]", "document is list"),
    ("no Devices", b"{}", "Devices is missing"),
    ("entry not object", b'{"Devices": [1]}', r"Devices\[0\] is int"),
    ("path not nvme", b'{"Devices": [{"DevicePath": "/dev/sda"}]}', "not an NVMe namespace"),
    ("size string", b'{"Devices": [{"DevicePath": "/dev/nvme0n1", "PhysicalSize": "big"}]}', "PhysicalSize is not a number"),
    ("serial number", b'{"Devices": [{"DevicePath": "/dev/nvme0n1", "SerialNumber": 5}]}', "SerialNumber is int"),
    ("namespaces disagree",
     b'{"Devices": [{"DevicePath": "/dev/nvme0n1", "SerialNumber": "A"}, {"DevicePath": "/dev/nvme0n2", "SerialNumber": "B"}]}',
     "disagrees"),
    ("tree controller name", b'{"Devices": [{"Subsystems": [{"Controllers": [{"Controller": "sda"}]}]}]}',
     "not an NVMe controller"),
    ("tree subsystems not list", b'{"Devices": [{"Subsystems": 3}]}', "Subsystems is not a list"),
]


@pytest.mark.parametrize("data,message", [m[1:] for m in LIST_MALFORMED], ids=[m[0] for m in LIST_MALFORMED])
def test_list_malformed(data: bytes, message: str) -> None:
    with pytest.raises(ParseError, match=message):
        parse_list_json(data)


# ---------------------------------------------------------------- id-ctrl text


def test_id_ctrl_real_file() -> None:
    # telegraf's capture carries a stray "<<<<<<< HEAD" line (a merge marker upstream): skipped.
    fields = parse_id_ctrl_text(read_fixture(N + "telegraf__nvmeIdentifyController.txt"))
    assert fields["vid"] == "0x8086" and fields["ieee"] == "5cd2e4" and fields["nn"] == "1"
    assert fields["subnqn"] == ""
    assert fields["ps 0"].startswith("mp:25.00W operational")
    assert id_ctrl_identity(fields) == {
        "serial": "CVFT5123456789ABCD", "model": "INTEL SSDPEDABCDEFG", "firmware": "8DV10131",
        "pci_vendor_id": "0x8086", "warning_celsius": None, "critical_celsius": None}


def test_id_ctrl_thresholds_are_kelvin() -> None:
    text = read_fixture(N + "telegraf__nvmeIdentifyController.txt").decode()
    text = text.replace("wctemp  : 0", "wctemp  : 343").replace("cctemp  : 0", "cctemp  : 358")
    identity = id_ctrl_identity(parse_id_ctrl_text(text))
    assert (identity["warning_celsius"], identity["critical_celsius"]) == (70, 85)


@pytest.mark.parametrize("text,message", [
    ("", "empty output"),
    ("sn : X\nmn : Y\n", "line 1 is not the 'NVME Identify Controller:' header"),
    ("NVME Identify Controller:\nvid : 0x8086\nmn : Y\n", "no 'sn' field"),
    ("NVME Identify Controller:\nsn : X\nmn : Y\nwctemp : hot\n", None),
], ids=["empty", "no header", "no serial", "bad wctemp"])
def test_id_ctrl_malformed(text: str, message) -> None:
    if message is None:
        with pytest.raises(ParseError, match="wctemp is not a number"):
            id_ctrl_identity(parse_id_ctrl_text(text))
    else:
        with pytest.raises(ParseError, match=message):
            parse_id_ctrl_text(text)


# ---------------------------------------------------------------- intel smart-log-add


def test_intel_smart_log_add_table_layout() -> None:
    entries = parse_intel_smart_log_add(read_fixture(N + "telegraf__nvmeIntelInfoDataMetricsFormat.txt"))
    assert len(entries) == 11
    assert entries["program_fail_count"].attr_id == 0xAB
    assert entries["crc_error_count"].raw_int == 13
    assert entries["media_wear_percentage"].raw_int == 552
    assert entries["wear_leveling_count"].raw_int == 700090417315
    assert intel_smart_fields(entries) == {"defects": {"program_fail": 0, "erase_fail": 0}, "crc_errors": 13}


def test_intel_smart_log_add_old_layout() -> None:
    entries = parse_intel_smart_log_add(read_fixture(N + "telegraf__nvmeIntelInfoDataDeprecatedMetricsFormat.txt"))
    assert len(entries) == 13
    assert entries["timed_workload_media_wear"].raw == "0.130%"
    assert entries["nand_bytes_written"].normalized == 0 and entries["nand_bytes_written"].raw == "sectors: 0"
    assert entries["thermal_throttle_status"].raw == "0%, cnt: 0"
    assert intel_smart_fields(entries) == {
        "defects": {"program_fail": 0, "erase_fail": 0},
        "wear_leveling": {"min": 39, "max": 40, "avg": 39},
        "crc_errors": 13,
    }


@pytest.mark.parametrize("text,message", [
    ("", "empty output"),
    ("program_fail_count : 100% 0\n", "line 1 is not the 'Additional Smart Log' header"),
    ("Additional Smart Log for NVME device:nvme0 namespace-id:ffffffff\n", "no rows"),
    ("Additional Smart Log for NVME device:nvme0 namespace-id:ffffffff\nprogram_fail_count 0\n",
     "line 2 is not a 'key normalized raw' row"),
], ids=["empty", "no header", "no rows", "bad row"])
def test_intel_smart_log_add_malformed(text: str, message: str) -> None:
    with pytest.raises(ParseError, match=message):
        parse_intel_smart_log_add(text)


def test_intel_wear_levelling_malformed() -> None:
    text = ("Additional Smart Log for NVME device:nvme0 namespace-id:ffffffff\n"
            "wear_leveling                   : 100%       min: 39\n")
    with pytest.raises(ParseError, match="wear_leveling raw"):
        intel_smart_fields(parse_intel_smart_log_add(text))
