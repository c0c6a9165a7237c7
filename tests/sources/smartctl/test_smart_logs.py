"""Self-test logs, error logs and SCSI error counters (issue 30, collectors/smartctl/logs.py).

The expectations below were read off each capture by eye (the "# 1" row of the printed
self-test log, the rows naming a fault, the "ATA/Device Error Count" line, the JSON tables),
not produced by the parser. Each row: the capture, the newest finished test as (type, result,
stamp in power-on hours, remaining percent, first failing LBA) or None, the log's failed
entries, the lifetime error count, and the SCSI uncorrected counters by direction.
"""

from __future__ import annotations

from typing import Optional, Tuple

import pytest

from agent import health
from agent.metrics import make_registry
from collectors import smart_logs as sl
from collectors.model import Drive, ParseError, Snapshot
from collectors.smartctl import logs
from tests.support.smartctl_fixtures import B, J, T
from tests.support.smartctl_fixtures import reading_of as _reading

Last = Optional[Tuple[str, str, int, Optional[int], Optional[int]]]
HAND_CHECKED = [
    # smartctl 5.x/6.x/7.x text: failed tests and populated error logs
    (T + "gsmartcontrol__smartmon-mail_MAXTOR_STM3320620AS.txt", ("short", "passed", 1734, 0, None), 1, 120, ()),
    (T + "gsmartcontrol__smartmon-mail_WDC_WD3200BEVT-22ZCT0.txt", ("short", "passed", 85, 0, None), 6, 62, ()),
    (T + "gsmartcontrol__smartmon-site_FUJITSU_MHR2020AT.txt.health_failed.txt",
     ("short", "failed", 1819, 90, None), 2, 6861, ()),  # "Completed: servo/seek failure"
    (T + "gsmartcontrol__smartmon-site_HITACHI_DK23BA-20-0.txt", ("short", "passed", 691, 0, None), 7, 9, ()),
    (T + "gsmartcontrol__smartmon-site_IC35L120AVV207-1.txt", ("extended", "failed", 2692, 90, 173893), 3, 161, ()),
    # 5.x prints the LBA in hex: 0x08702f11
    (T + "gsmartcontrol__smartmon-site_MAXTOR-0.txt", ("extended", "failed", 1965, 90, 0x08702F11), 1, 11, ()),
    (T + "gsmartcontrol__smartmon-site_MAXTOR-1.txt.health_failed.txt", ("short", "failed", 9786, 90, None), 2, 20255, ()),
    (T + "gsmartcontrol__smartmon-site_MAXTOR-10.txt", ("extended", "failed", 18841, 80, 0x001F807F), 6, 28, ()),
    (T + "gsmartcontrol__smartmon-site_MAXTOR-7.txt.health_failed.txt", ("extended", "failed", 14757, 90, 0x000409BB), 2, 25, ()),
    (T + "gsmartcontrol__smartmon-site_ST910021AS.txt.health_failed.txt", ("short", "failed", 4957, 90, 22979632), 14, 7731, ()),
    (T + "gsmartcontrol__smartmon-site_WD800JD.txt.funky_attrs.txt", ("extended", "failed", 1207, 90, None), 11, 0, ()),
    (T + "linuxhw-EnterpriseDrive__HDD_Samsung_HM640JJ_1FECD339779E.txt", ("short", "failed", 6736, 90, 0), 2, 62653, ()),
    (T + "linuxhw-EnterpriseDrive__SSD_Micron_5100_MTFDDAK1T9TBY_724358C7D7FB.txt",
     ("vendor", "passed", 9641, 0, None), 2, 8, ()),
    (B + "HDD_Seagate_ST320LM001_HN-M320MBB_3A69CEC02168.txt", ("short", "failed", 20358, 90, 1147264), 4, 2389, ()),
    (B + "HDD_Seagate_ST750LM022_HN-M750MBB_912F083EA860.txt", ("short", "passed", 36522, 0, None), 3, 42, ()),
    (B + "HDD_Seagate_ST8000AS0002-1NA17Z_6ED8A353F360.txt", ("conveyance", "aborted", 10680, 80, None), 1, 4799, ()),
    # "Completed: read failure" with 00% remaining: a failure all the same
    (B + "HDD_Toshiba_MK3259GSXP_E9365256C3D1.txt", ("short", "failed", 7449, 0, 6010464), 1, 376, ()),
    (B + "SSD_OCZ_VERTEX2_56GB_B6A57779DA4E.txt", ("unknown", "failed", 531, 90, 0), 1, None, ()),
    # "SMART Extended Self-test Log (GP Log 0x07) not supported", then the summary log
    (B + "HDD_Maxtor_6Y080P0_993394391735.txt", ("short", "failed", 22046, 60, 36001978), 1, 1041, ()),
    # smartctl 7 JSON
    (J + "scrutiny__smart-fail2.json", ("short", "passed", 42, None, None), 3, 56, ()),
    (J + "scrutiny__smart-ata-date.json", ("short", "passed", 1708, None, None), 0, 0, ()),
    (J + "scrutiny__smart-megaraid0.json", ("short", "passed", 35990, None, None), 0, 0, ()),
    (J + "smartctl_exporter__HGST_HUS724020ALE640_28.json", None, 0, 12, ()),
    (J + "smartctl_exporter__ST3200820AS_16.json", None, 0, 98, ()),
    (J + "smartctl_exporter__sat-Toshiba_MG05ACA..._Enterprise_Capacity_HDD-TOSHIBA_MG05ACA800E-sdw.json", None, 0, 2, ()),
    (J + "smartctl_exporter__sat-Western_Digital_RE3_Serial_ATA-WDC_WD5002ABYS-02B1B0-sda.json", None, 0, 9, ()),
    (J + "smartctl_exporter__sat-Western_Digital_Ultrastar_DC_HC550-WDC__WUH721816ALE6L4-sdx.json", None, 0, 1, ()),
    (J + "smartctl_exporter__sat-Toshiba_3.5_HDD_MK.002TSKB-TOSHIBA_MK1002TSKB-sdb.json", None, 0, 0, ()),
    (J + "smartctl_exporter__sat-Toshiba_MG06ACA..._Enterprise_Capacity_HDD-TOSHIBA_MG06ACA10TE-sda.json", None, 0, 0, ()),
    (J + "smartctl_exporter__sat-Toshiba_MG08ACA..._Enterprise_Capacity_HDD-TOSHIBA_MG08ACA16TE-sda.json", None, 0, 0, ()),
    (J + "smartctl_exporter__sat-Toshiba_MG09ACA..._Enterprise_Capacity_HDD-TOSHIBA_MG09ACA18TE-sdd.json", None, 0, 0, ()),
    (J + "smartctl_exporter__sat-Toshiba_X300-TOSHIBA_HDWE160-sdb.json", None, 0, 0, ()),
    (J + "smartctl_exporter__sat-Western_Digital_RE3_Serial_ATA-WDC_WD1002FBYS-02A6B0-sdb.json", None, 0, 0, ()),
    (J + "smartctl_exporter__sat-Western_Digital_Ultrastar_DC_HC550-WDC__WUH721818ALE6L4-sda.json", None, 0, 0, ()),
    (J + "smartctl_exporter__sat-Western_Digital_Ultrastar_DC_HC550-WUH721818ALE6L4-sdd.json", None, 0, 0, ()),
    # NVMe: num_err_log_entries 4871, the newest error-information entry's error_count 4871
    (J + "telegraf__testcases_device_nvme.json", None, 0, 4871, ()),
    # SCSI error counter log, total uncorrected errors by direction
    (J + "smartctl_exporter__SEAGATE_ST373453LC_26.json", None, 0, None, (("read", 1), ("write", 535))),
    (J + "scrutiny__smart-scsi.json", None, 0, None, (("read", 0), ("write", 0))),
    (J + "netdata__type-scsi_device-sda.json", None, 0, None, (("read", 0), ("write", 0), ("verify", 0))),
    (J + "telegraf__testcases_device_scsi.json", None, 0, None, (("read", 0), ("write", 0), ("verify", 0))),
    (J + "smartctl_exporter__HITACHI_H109060SESUN600G_10.json", None, 0, None, (("read", 0), ("write", 0), ("verify", 0))),
]


@pytest.mark.parametrize("name,last,failed,errors,uncorrected", HAND_CHECKED, ids=[h[0].split("/")[-1][:50] for h in HAND_CHECKED])
def test_hand_checked_logs(name: str, last: Last, failed: int, errors: Optional[int], uncorrected) -> None:
    found = _reading(name).smart_logs
    assert found is not None and not found.withheld
    test = found.last_test
    got = None if test is None else (test.kind, test.result, test.power_on_hours, test.remaining_percent,
                                     test.failing_lba)
    assert got == last
    assert found.failed_tests == failed
    assert found.error_count == errors
    assert found.uncorrected == uncorrected


def test_the_hand_checked_table_is_large_and_varied() -> None:
    assert len(HAND_CHECKED) >= 40
    assert sum(1 for h in HAND_CHECKED if h[1] and h[1][1] == "failed") >= 10
    assert sum(1 for h in HAND_CHECKED if h[0].endswith(".json")) >= 15
    assert any(h[4] for h in HAND_CHECKED)


def test_failed_test_words_and_lba_in_extra_and_health() -> None:
    r = _reading(T + "gsmartcontrol__smartmon-site_IC35L120AVV207-1.txt")
    assert r.extra["selftest_last"] == ("Extended offline: Completed: read failure at power-on hour 2,692, "
                                        "first failing LBA 173893")
    assert health.selftest_failed(r.smart_logs) is True
    assert "173893" in health.selftest_reason(r.smart_logs)
    assert health.selftest_failed(_reading(J + "scrutiny__smart-ata-date.json").smart_logs) is False
    assert health.selftest_failed(None) is None and health.selftest_reason(None) is None


# ---------------------------------------------------------------- the second clock

def test_ata_stamps_that_wrapped_are_not_a_contradiction() -> None:
    """scrutiny smart-fail2: 65,592 power-on hours; the log runs 65482, 65506, 65530, then 4,
    18, 42 (the 16-bit stamp wrapped). Not evidence against the power-on time, and the newest
    test is 14 power-on hours old, not 65,550."""
    r = _reading(J + "scrutiny__smart-fail2.json")
    assert r.power_on_seconds == 65592 * 3600 and "power_on_seconds_withheld" not in r.extra
    stamps = [t.power_on_hours for t in r.smart_logs.self_tests[:6]]
    assert stamps == [42, 18, 4, 65530, 65506, 65482]
    assert r.smart_logs.last_test.hours_before(65592) == 14
    registry = make_registry(lambda: Snapshot(drives=(Drive(reading=r, last_poll={"smartctl": 1.0}),)))
    labels = {"device": "sda", "serial": r.identity}
    assert registry.get_sample_value("ssd_selftest_last_age_seconds", labels) == 14 * 3600
    assert registry.get_sample_value("ssd_selftest_failed_entries", labels) == 3  # the read failure at 4, and two older
    assert registry.get_sample_value("ssd_error_log_entries_total", labels) == 56


@pytest.mark.parametrize("name,stamp,reported", [
    # attribute 9 says 1,242 h; the only test is stamped 55,556
    (B + "SSD_Plextor_PX-256M5S_AE096C1A946D.txt", 55556, 1242),
    # attribute 9 reads 2 on a drive with tests stamped up to 53,875 h
    (B + "HDD_HGST_HMS5C4040ALE640_F6F5FBC95D78.txt", 53875, 2),
])
def test_a_stamp_above_the_power_on_time_withholds_it(name: str, stamp: int, reported: int) -> None:
    r = _reading(name)
    assert r.power_on_seconds is None
    why = r.extra["power_on_seconds_withheld"]
    assert f"power-on hour {stamp:,}" in why and f"the {reported:,} hours" in why


def test_a_stamp_decides_between_two_counters_that_disagree() -> None:
    """SanDisk Ultra II: devstat "Power-on Hours" 720 while the tests run to 5,750 and attribute
    9 says 5,828. The device statistics page is the broken one: the stamp refutes it, and
    attribute 9, which the stamps fit, is given (ata.power_on_seconds)."""
    r = _reading(B + "SSD_SanDisk_Ultra_II_240GB_379EF49DA280.txt")
    assert r.power_on_seconds == 5828 * 3600 and r.sources["power_on_seconds"] == "ata 9 Power_On_Hours"
    assert "below the self-test log's stamp at power-on hour 5,750" in r.extra["power_on_seconds_rejected"]


def test_the_contradiction_rule_at_its_edges() -> None:
    def entry(hours: int, wrap: Optional[int] = sl.ATA_HOURS_WRAP) -> sl.SmartLogs:
        return sl.SmartLogs(self_tests=(sl.SelfTest("short", "Short offline", sl.PASSED, "ok", hours, hours_wrap=wrap),))

    hour = 3600
    assert logs.power_on_contradiction(entry(1024), 1000 * hour) is None  # within 10%
    assert logs.power_on_contradiction(entry(1101), 1000 * hour) is not None
    assert logs.power_on_contradiction(entry(29), 5 * hour) is None  # within a day
    assert logs.power_on_contradiction(entry(30), 5 * hour) is not None
    assert logs.power_on_contradiction(entry(60000), 70000 * hour) is None  # past 65,536 h: any stamp fits
    assert logs.power_on_contradiction(entry(90000, None), 70000 * hour) is not None  # NVMe does not wrap
    assert logs.power_on_contradiction(entry(100), None) is None
    assert sl.hours_since(70000, 4400, sl.ATA_HOURS_WRAP) == 64


# ---------------------------------------------------------------- malformed input

MALFORMED_JSON = [
    ("self-test log not an object", {"ata_smart_self_test_log": []}, "ata_smart_self_test_log is list"),
    ("table not a list", {"ata_smart_self_test_log": {"standard": {"table": {}}}}, "table is dict"),
    ("row not an object", {"ata_smart_self_test_log": {"standard": {"table": [3]}}}, "table[0] is int"),
    ("hours a string", {"ata_smart_self_test_log": {"standard": {"table": [
        {"type": {"string": "Short offline"}, "status": {"value": 0}, "lifetime_hours": "12"}]}}}, "lifetime_hours is str"),
    ("status value a bool", {"ata_smart_self_test_log": {"standard": {"table": [
        {"status": {"value": True}}]}}}, "status.value is bool"),
    ("error count a float", {"ata_smart_error_log": {"summary": {"count": 1.5}}}, "count is float"),
    ("nvme table not a list", {"nvme_self_test_log": {"table": "x"}}, "nvme_self_test_log.table is str"),
]


@pytest.mark.parametrize("what,doc,words", MALFORMED_JSON, ids=[m[0] for m in MALFORMED_JSON])
def test_malformed_json_names_the_field(what: str, doc, words: str) -> None:
    kind = "nvme" if "nvme_self_test_log" in doc else "ata"
    with pytest.raises(ParseError, match=words.replace("[", r"\[").replace("]", r"\]")):
        logs.read_logs(doc, kind)


IMPOSSIBLE = [
    ("LBA past the drive", {"lifetime_hours": 5, "lba": 10**9}, "past the drive's last LBA"),
    ("stamp beyond 16 bits", {"lifetime_hours": 70000}, "outside 0..65,535"),
    ("negative stamp", {"lifetime_hours": -1}, "outside 0..65,535"),
    ("remaining above 100", {"lifetime_hours": 5, "status": {"value": 0xFF, "remaining_percent": 150}}, "outside 0..100"),
]


@pytest.mark.parametrize("what,row,words", IMPOSSIBLE, ids=[m[0] for m in IMPOSSIBLE])
def test_impossible_values_are_withheld_with_a_reason(what: str, row, words: str) -> None:
    entry = {"type": {"string": "Short offline"}, "status": {"value": 0x79}, **row}
    found = logs.read_logs({"ata_smart_self_test_log": {"standard": {"table": [entry]}}}, "ata",
                           capacity=256 * 10**9, sector=512)
    assert any(words in w for w in found.withheld), found.withheld
    assert logs.summary(found)["smart_logs_withheld"]


def test_all_ones_lba_is_no_lba_and_nvme_unused_entries_are_skipped() -> None:
    found = logs.read_logs({"ata_smart_self_test_log": {"standard": {"table": [
        {"type": {"string": "Short offline"}, "status": {"value": 0x70}, "lifetime_hours": 1, "lba": 2**28 - 1}]}}}, "ata")
    assert found.last_test.failing_lba is None and found.last_test.result == sl.FAILED and not found.withheld
    nvme = logs.read_logs({"nvme_self_test_log": {
        "current_self_test_operation": {"value": 2, "string": "Extended self-test in progress"},
        "current_self_test_completion_percent": 30,
        "table": [{"self_test_code": {"string": "Extended"}, "self_test_result": {"value": 15}},
                  {"self_test_code": {"value": 1, "string": "Short"}, "self_test_result": {"value": 7,
                   "string": "Completed: failed segments"}, "power_on_hours": 900, "lba": 12}]}}, "nvme")
    assert nvme.self_test_running.remaining_percent == 70
    assert (nvme.last_test.kind, nvme.last_test.result, nvme.last_test.failing_lba) == ("short", sl.FAILED, 12)


MALFORMED_TEXT = [
    ("row that is not a self-test", ["SMART Self-test log structure revision number 1",
                                     "Num  Test_Description    Status  Remaining  LifeTime(hours)  LBA_of_first_error",
                                     "# 1  Nonsense here"], "self-test log row not understood"),
]


@pytest.mark.parametrize("what,lines,words", MALFORMED_TEXT, ids=[m[0] for m in MALFORMED_TEXT])
def test_malformed_text_names_the_row(what: str, lines, words: str) -> None:
    with pytest.raises(ParseError, match=words):
        logs.text_sections(lines)


@pytest.mark.parametrize("lines,expected", [
    ([], {}),
    (["SMART Self-test log structure revision number 1", "No self-tests have been logged.  [To run self-tests, use: smartctl -t]"],
     {"ata_smart_self_test_log": {"standard": {"table": []}}}),
    (["SMART Error Log Version: 1", "No Errors Logged"], {"ata_smart_error_log": {"summary": {"count": 0}}}),
    # truncated in the middle of the table: the rows read so far
    (["SMART Self-test log structure revision number 1",
      "Num  Test_Description    Status                  Remaining  LifeTime(hours)  LBA_of_first_error",
      "# 1  Short offline       Completed without error       00%      1734         -"],
     {"ata_smart_self_test_log": {"standard": {"table": [{"type": {"string": "Short offline"},
      "status": {"string": "Completed without error", "remaining_percent": 0}, "lifetime_hours": 1734}]}}}),
])
def test_text_edges(lines, expected) -> None:
    assert logs.text_sections(lines) == expected
