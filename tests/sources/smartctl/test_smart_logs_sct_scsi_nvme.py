"""The SCT temperature history, the SCSI self-test log and NVMe's self-test log in smartctl's text
(issue 30; collectors/smartctl/scttemp.py, collectors/smartctl/logs.py).

Every expectation below was read off the capture by eye: the JSON ``ata_sct_temperature_history``
table and header, the printed "SCT Temperature History" header lines, the rows of the printed
SCSI "SMART Self-test log" and NVMe "Self-test Log (NVMe Log 0x06)" tables, smartctl 7's
``scsi_self_test_N`` objects. None was produced by running the parser.
"""

from __future__ import annotations

import json
from typing import Optional, Tuple

import pytest
from prometheus_client import generate_latest

from agent.metrics import make_registry
from collectors import smart_logs as sl
from collectors.model import Drive, ParseError, Snapshot
from collectors.smartctl import logs, parse_smartctl_json, scttemp
from tests.conftest import read_fixture
from tests.support.e2e import check_metrics
from tests.support.smartctl_fixtures import B, J, T
from tests.support.smartctl_fixtures import reading_of as _reading

# ---------------------------------------------------------------- SCT temperature history

# (capture, logging interval s, recommended max C, absolute max C, samples, max sample C, above s)
History = Tuple[str, int, Optional[int], Optional[int], Optional[int], Optional[int], Optional[int]]
SCT_HAND_CHECKED = [
    # 128 entries every 10 minutes, none null, the highest 43 (entry 53); limits 0/70, 0/70
    (J + "scrutiny__smart-ata-full.json", 600, 70, 70, 128, 43, 0),
    # 128 entries every minute, 40 at most (the first ten)
    (J + "scrutiny__smart-ata-failed-scrutiny.json", 60, 70, 70, 128, 40, 0),
    # text: the header only (hw-probe leaves the table out): limits, no samples
    (T + "linuxhw-EnterpriseDrive__SSD_Micron_5100_MTFDDAK1T9TBY_724358C7D7FB.txt", 60, 70, 75, None, None, None),
    (T + "linuxhw-EnterpriseDrive__HDD_HGST_HUS722T1TALA604_774193D072FC.txt", 60, 60, 85, None, None, None),
    (T + "linuxhw-EnterpriseDrive__HDD_Apple_HDD_HTS545050A7E362_9ADC31772534.txt", 60, 60, 65, None, None, None),
    # "0/ 0 Celsius" both lines: a drive that gives no limits
    (T + "linuxhw-EnterpriseDrive__HDD_HPE_MM1000GBKAL_82BC2D21FA1E.txt", 600, None, None, None, None, None),
]


@pytest.mark.parametrize("name,interval,operating,absolute,samples,highest,above", SCT_HAND_CHECKED,
                         ids=[h[0].split("/")[-1][:50] for h in SCT_HAND_CHECKED])
def test_sct_history_hand_checked(name, interval, operating, absolute, samples, highest, above) -> None:
    found = _reading(name).smart_logs
    assert found is not None and not found.withheld, found and found.withheld
    h = found.temperature_history
    assert (h.logging_interval_seconds, h.operating_limit_celsius, h.absolute_limit_celsius) == (interval, operating,
                                                                                                 absolute)
    assert (h.samples, h.max_celsius, h.above_limit_seconds) == (samples, highest, above)
    assert h.window_seconds == (None if samples is None else samples * interval)


@pytest.mark.parametrize("name,why", [
    # "Min/Max Temperature Limit: -17/-122 Celsius" and a history size of 65380
    (B + "SSD_Kingston_SV300S37A60G_719E32187EF4.txt", "limit_max: -122 C is outside -40..150"),
    # recommended 1/61, absolute 2/60: the absolute maximum below the recommended one
    (B + "HDD_Seagate_ST3000VN007-2E4166_78B3C2DFEBB0.txt", "limit_max 60 C is below the recommended maximum 61 C"),
])
def test_sct_limits_that_cannot_be_true_are_withheld(name: str, why: str) -> None:
    found = _reading(name).smart_logs
    assert any(why in w for w in found.withheld), found.withheld
    assert found.temperature_history is None or found.temperature_history.absolute_limit_celsius is None


def test_a_drive_that_keeps_no_history_says_so_quietly() -> None:
    """Plextor M5S: "Temperature Logging Interval: 0 minutes", limits "?/ ?": no history, no complaint."""
    found = _reading(B + "SSD_Plextor_PX-128M5S_3462E9BB2065.txt").smart_logs
    assert found.temperature_history is None and not found.withheld


def _history(**fields):
    doc = {"sampling_period_minutes": 1, "logging_interval_minutes": 5, "size": 4, "index": 1,
           "temperature": {"op_limit_min": 0, "op_limit_max": 70, "limit_min": -5, "limit_max": 75},
           "table": [60, 72, None, 71]}
    doc.update(fields)
    withheld: list = []
    return scttemp.read_history({scttemp.PATH: doc}, withheld), withheld


def test_time_above_the_limit_counts_only_logged_samples_strictly_above() -> None:
    history, withheld = _history()
    assert not withheld
    assert (history.samples, history.window_seconds, history.above_limit_seconds, history.max_celsius) == (
        3, 900, 600, 72)
    at_limit, _ = _history(table=[70, 70, 0, None])  # at the limit is inside the range; 0 C is no sample
    assert (at_limit.samples, at_limit.above_limit_seconds) == (2, 0)


SCT_MALFORMED = [
    ("history not an object", {scttemp.PATH: [1]}, "is list"),
    ("table not a list", {scttemp.PATH: {"logging_interval_minutes": 1, "size": 1, "table": "44"}}, "table is str"),
    ("sample a string", {scttemp.PATH: {"logging_interval_minutes": 1, "size": 1, "table": ["44"]}}, r"table\[0\] is str"),
    ("interval a float", {scttemp.PATH: {"logging_interval_minutes": 1.5}}, "logging_interval_minutes is float"),
    ("limits not an object", {scttemp.PATH: {"logging_interval_minutes": 1, "temperature": 70}}, "temperature is int"),
    ("limit a bool", {scttemp.PATH: {"logging_interval_minutes": 1, "temperature": {"op_limit_max": True}}}, "is bool"),
]


@pytest.mark.parametrize("what,doc,words", SCT_MALFORMED, ids=[m[0] for m in SCT_MALFORMED])
def test_sct_malformed_json_names_the_field(what: str, doc, words: str) -> None:
    with pytest.raises(ParseError, match=words):
        scttemp.read_history(doc, [])


SCT_IMPOSSIBLE = [
    ("negative interval", {"logging_interval_minutes": -10}, "not 1..65535 minutes", False),
    ("interval past 16 bits", {"logging_interval_minutes": 70000}, "not 1..65535 minutes", False),
    ("table shorter than its size", {"size": 5}, "a table of 4 entries with size 5", True),
    ("table past 478 entries", {"size": 500, "table": [40] * 500}, "at most 478", True),
    ("index past the table", {"index": 4}, "index 4 is past the table's 4 entries", True),
    ("sample too hot", {"table": [40, 200, 41, 42]}, "table[1]: 200 C is outside -40..150", True),
    ("sample too cold", {"table": [40, -60, 41, 42]}, "table[1]: -60 C is outside -40..150", True),
    ("recommended range empty", {"temperature": {"op_limit_min": 80, "op_limit_max": 70}}, "range 80..70 C is empty",
     True),
    ("recommended maximum at room temperature", {"temperature": {"op_limit_min": 0, "op_limit_max": 25}},
     "op_limit_max: 25 C is below 30 C", True),
]


@pytest.mark.parametrize("what,fields,why,kept", SCT_IMPOSSIBLE, ids=[m[0] for m in SCT_IMPOSSIBLE])
def test_sct_values_that_cannot_be_true_are_withheld(what: str, fields, why: str, kept: bool) -> None:
    history, withheld = _history(**fields)
    assert any(why in w for w in withheld), withheld
    if not kept:
        assert history is None  # without an interval no figure can be counted
    else:
        assert history.samples is None or history.above_limit_seconds is None


def test_sct_placeholder_limits_are_absent_without_complaint() -> None:
    history, withheld = _history(temperature={"op_limit_min": -127, "op_limit_max": 127, "limit_min": -128,
                                              "limit_max": 127})
    assert not withheld and history.operating_limit_celsius is None and history.absolute_limit_celsius is None
    assert history.above_limit_seconds is None and history.samples == 3


# The text table in the layout smartctl prints it (ataprint.cpp ataPrintSCTTempHist): runs of one
# temperature folded into "(N skipped)", an empty entry as "?". The vendored text captures carry
# the header without the table, so the table's reading is tested on this shape.
_TEXT = ["SCT Temperature History Version:     2",
         "Temperature Sampling Period:         1 minute",
         "Temperature Logging Interval:        10 minutes",
         "Min/Max recommended Temperature:      0/45 Celsius",
         "Min/Max Temperature Limit:           -5/50 Celsius",
         "Temperature History Size (Index):    8 (2)",
         "",
         "Index    Estimated Time   Temperature Celsius",
         "   3    2021-10-07 03:40    44  *************************",
         " ...    ..(  2 skipped).    ..  *************************",
         "   6    2021-10-07 04:10    44  *************************",
         "   7    2021-10-07 04:20    46  ***************************",
         "   0    2021-10-07 04:30     ?  -",
         "   1    2021-10-07 04:40    47  ****************************",
         "   2    2021-10-07 04:50    45  **************************",
         "",
         "SCT Error Recovery Control:"]


def test_sct_text_table_expands_skipped_rows() -> None:
    doc = scttemp.text_section(_TEXT)
    assert doc[scttemp.PATH]["table"] == [44, 44, 44, 44, 46, None, 47, 45]
    history = scttemp.read_history(doc, [])
    assert (history.samples, history.max_celsius, history.above_limit_seconds, history.window_seconds) == (
        7, 47, 2 * 600, 7 * 600)  # 46 and 47 above 45
    truncated = scttemp.read_history(scttemp.text_section(_TEXT[:11]), withheld := [])
    assert truncated.samples is None and any("a table of 4 entries with size 8" in w for w in withheld)


def test_sct_text_garbled_skip_count_is_bounded_and_withheld() -> None:
    lines = list(_TEXT)
    lines[9] = " ...    ..(999999999999 skipped).    ..  *************************"
    doc = scttemp.text_section(lines)
    assert sl.SCT_TABLE_MAX < len(doc[scttemp.PATH]["table"]) <= sl.SCT_TABLE_MAX + len(lines)
    withheld: list = []
    assert scttemp.read_history(doc, withheld).samples is None and withheld


@pytest.mark.parametrize("lines", [
    ["SCT Temperature History Version:     2", "Temperature Logging Interval:        ten minutes"],
    ["SCT Temperature History Version:     2", "Min/Max recommended Temperature:      hot Celsius"],
])
def test_sct_text_garbage_names_the_line(lines) -> None:
    with pytest.raises(ParseError, match="SCT temperature history line not understood"):
        scttemp.text_section(lines)


def test_sct_series_on_metrics_pass_promtool() -> None:
    reading = _reading(J + "scrutiny__smart-ata-full.json")
    registry = make_registry(lambda: Snapshot(drives=(Drive(reading=reading, last_poll={"smartctl": 1.0}),)))
    labels = {"device": "sda", "serial": reading.identity, "sensor": "drive"}
    assert registry.get_sample_value("ssd_temperature_history_window_seconds", labels) == 128 * 600
    assert registry.get_sample_value("ssd_temperature_history_above_limit_seconds", labels) == 0
    assert registry.get_sample_value("ssd_temperature_history_max_celsius", labels) == 43
    assert registry.get_sample_value("ssd_temperature_critical_limit_celsius", labels) == 70
    assert registry.get_sample_value("ssd_temperature_limit_celsius", labels) == 70
    check_metrics(generate_latest(registry))


def test_a_stated_limit_below_any_drives_maximum_never_reaches_the_alert() -> None:
    """A drive's own limit is what SSDTemperatureAboveLimit pages on. An SCT status saying 25 C
    "recommended" (as an IronWolf ST8000VN004's does) gives way to the device statistics'
    specified maximum; without one, it is withheld with why (a 25 C maximum would page every
    drive in a server room), and the temperature itself stays. The real capture says 70 C in
    both places; only the limits are changed."""
    doc = json.loads(read_fixture(J + "scrutiny__smart-ata-full.json"))
    doc["temperature"]["op_limit_max"] = 25
    doc[scttemp.PATH]["temperature"]["op_limit_max"] = 25
    rows = [row for page in doc["ata_device_statistics"]["pages"] for row in page.get("table", [])
            if row.get("name") == "Specified Maximum Operating Temperature"]
    assert [row["value"] for row in rows] == [70]

    def drive_temperature(d):
        reading = parse_smartctl_json(json.dumps(d).encode(), "sda")
        (drive,) = [t for t in reading.temperatures if t.sensor == "drive"]
        assert drive.celsius == d["temperature"]["current"]
        return reading, drive

    _, drive = drive_temperature(doc)
    assert drive.limit_celsius == 70  # the specification wins over the SCT filler
    rows[0]["value"] = 20  # the device statistic below the floor too: no limit at all
    reading, drive = drive_temperature(doc)
    assert drive.limit_celsius is None
    assert "drive limit 25 C is below 30 C" in reading.extra["temperature_rejected"]
    registry = make_registry(lambda: Snapshot(drives=(Drive(reading=reading, last_poll={"smartctl": 1.0}),)))
    labels = {"device": "sda", "serial": reading.identity, "sensor": "drive"}
    assert registry.get_sample_value("ssd_temperature_limit_celsius", labels) is None
    assert registry.get_sample_value("ssd_temperature_celsius", labels) == doc["temperature"]["current"]


# ---------------------------------------------------------------- SCSI self-test log

# (capture, newest finished test (type, result, stamp), entries, failed entries)
SCSI_HAND_CHECKED = [
    # smartctl 7.4 JSON: Background long at 90 h, then long at 66, Reserved(7) at 5, short at 2
    (J + "telegraf__testcases_device_scsi_extended.json", ("extended", "passed", 90), 4, 0),
    # "# 1  Background short  Completed  -  302  - [-   -    -]"
    (T + "pySMART__megaraid_ph_sas_hdd_0_-d_megaraid_44_--all_bus_7.txt", ("short", "passed", 302), 1, 0),
    (T + "pySMART__sas_ssd_0_issue_57_-x_sdb.txt", ("short", "passed", 134), 5, 0),
    (T + "pySMART__megaraid_jbod_sas_hdd_0_issue_85_-d_scsi_--all_sdd.txt", ("short", "passed", 349), 1, 0),
]


@pytest.mark.parametrize("name,last,entries,failed", SCSI_HAND_CHECKED, ids=[h[0].split("/")[-1][:50] for h in SCSI_HAND_CHECKED])
def test_scsi_self_tests_hand_checked(name: str, last, entries: int, failed: int) -> None:
    r = _reading(name)
    assert r.kind == "scsi"
    found = r.smart_logs
    assert not found.withheld
    test = found.last_test
    assert (test.kind, test.result, test.power_on_hours) == last
    assert len(found.self_tests) == entries and found.failed_tests == failed


def test_scsi_saturated_stamps_give_no_hour() -> None:
    """driveforge's SAS capture (``-l selftest`` alone): the three newest tests are stamped
    65535, the field's ceiling, the older three 3, 3 and 1 hours; #4 has code Reserved(7)."""
    doc = json.loads(read_fixture(J + "driveforge__sas_selftest_example.json"))
    found = logs.read_logs(doc, "scsi")
    assert [t.power_on_hours for t in found.self_tests] == [None, None, None, 3, 3, 1]
    assert [t.kind for t in found.self_tests] == ["short", "short", "short", "short", "unknown", "short"]
    assert all(t.result == sl.PASSED for t in found.self_tests) and not found.withheld
    assert found.last_test.hours_before(70000) is None  # no age from a stamp that says "65,535 or later"


def test_scsi_results_follow_the_result_nibble() -> None:
    def entry(value: Optional[int], words: str, **more):
        return {"code": {"value": 2, "string": "Background long"}, "result": {"string": words, **(
            {} if value is None else {"value": value})}, "power_on_time": {"hours": 100}, **more}

    doc = {"scsi_self_test_0": entry(7, "Failed in segment -->", lba_first_failure={"value": 123456}),
           "scsi_self_test_1": entry(None, "Aborted (device reset ?)"),
           "scsi_self_test_2": entry(None, "Completed, segment failed"),
           "scsi_self_test_3": entry(3, "Unknown error, incomplete"),
           "scsi_self_test_4": entry(9, "Reserved(9)")}
    found = logs.read_logs(doc, "scsi", capacity=10**12, sector=512)
    assert [t.result for t in found.self_tests] == [sl.FAILED, sl.INTERRUPTED, sl.FAILED, sl.FAILED, sl.UNKNOWN]
    assert found.last_test.failing_lba == 123456 and found.failed_tests == 3
    running = logs.read_logs({"scsi_self_test_0": {"code": {"value": 1, "string": "Background short"},
                                                   "result": {"value": 15, "string": "Self test in progress ..."},
                                                   "self_test_in_progress": True}}, "scsi")
    assert running.self_test_running is not None and running.last_test is None


SCSI_MALFORMED = [
    ("entry not an object", {"scsi_self_test_0": "Completed"}, "scsi_self_test_0 is str"),
    ("hours a string", {"scsi_self_test_0": {"result": {"value": 0}, "power_on_time": {"hours": "5"}}},
     "power_on_time.hours is str"),
    ("result value a float", {"scsi_self_test_0": {"result": {"value": 0.5}}}, "result.value is float"),
    ("code not an object", {"scsi_self_test_0": {"code": [1]}}, "code is list"),
]


@pytest.mark.parametrize("what,doc,words", SCSI_MALFORMED, ids=[m[0] for m in SCSI_MALFORMED])
def test_scsi_malformed_json_names_the_field(what: str, doc, words: str) -> None:
    with pytest.raises(ParseError, match=words):
        logs.read_logs(doc, "scsi")


def test_scsi_impossible_lba_is_withheld_and_garbage_rows_named() -> None:
    found = logs.read_logs({"scsi_self_test_0": {"code": {"value": 1}, "result": {"value": 4},
                                                 "power_on_time": {"hours": 9},
                                                 "lba_first_failure": {"value": 10**12}}}, "scsi",
                           capacity=10**9, sector=512)
    assert found.last_test.failing_lba is None and any("past the drive's last LBA" in w for w in found.withheld)
    with pytest.raises(ParseError, match="SCSI self-test log row not understood"):
        logs.text_sections(["SMART Self-test log",
                            "Num  Test              Status                 segment  LifeTime  LBA_first_err [SK ASC ASQ]",
                            "     Description                              number   (hours)",
                            "# 1  Background short  Completed  garbage"])


# ---------------------------------------------------------------- NVMe self-test log (text, smartctl 7.3+)

# (capture, newest finished test (type, result, stamp), entries, running test's remaining percent)
NVME_HAND_CHECKED = [
    (T + "pySMART__nvme_win10_0_issue_64_-d_nvme_--all_sda.txt", ("extended", "passed", 3441), 6, 72),  # 28% completed
    (T + "pySMART__nvme_11_issue_75_-d_nvme_--all_sda.txt", ("extended", "passed", 8754), 4, None),
    (T + "pySMART__nvme_6_-d_nvme_--all_nvme0.txt", ("short", "passed", 8737), 1, None),  # 7.3: no Seg column
    (T + "linuxhw-EnterpriseDrive__NVMe_Dell_Express_Flash_PM1725b_1.6TB_AIC_4CE8DE2D989F.txt",
     ("extended", "passed", 16682), 2, None),
    (T + "linuxhw-EnterpriseDrive__NVMe_Samsung_MZVL21T0HDLU-00B07_1TB_85B426ECAD12.txt", ("extended", "passed", 473), 1, None),
    (B + "NVMe_SanDisk_WD_BLACK_SN770_500GB_A25ED2FC012E.txt", ("short", "aborted", 4056), 1, None),
    (B + "NVMe_Faspeed_P8-512G_3CB338C92A5D.txt", ("short", "passed", 3), 1, 42),  # 58% completed
    (B + "NVMe_Team_TM8FP6256G_DE2A983C3354.txt", ("extended", "passed", 588), 3, None),
    (B + "NVMe_Toshiba_KBG30ZMT128G_AEC726BD95A3.txt", ("extended", "passed", 9255), 2, None),
    (B + "NVMe_SanDisk_WD_PC_SN740_SDDQMQD-1T00-1001_4BF5D58830C8.txt", ("extended", "passed", 145), 4, None),
    (B + "NVMe_Toshiba_KXG50ZNV256G_2BE78A4AA823.txt", ("short", "passed", 11514), 1, None),
    (B + "NVMe_Silicon_Motion_GV128_45EA448FFAF5.txt", ("short", "passed", 5), 20, None),  # the log's 20, all Short
]


@pytest.mark.parametrize("name,last,entries,remaining", NVME_HAND_CHECKED, ids=[h[0].split("/")[-1][:50] for h in NVME_HAND_CHECKED])
def test_nvme_text_self_tests_hand_checked(name: str, last, entries: int, remaining) -> None:
    r = _reading(name)
    assert r.kind == "nvme"
    found = r.smart_logs
    assert not found.withheld
    assert (found.last_test.kind, found.last_test.result, found.last_test.power_on_hours) == last
    assert len(found.self_tests) == entries
    running = found.self_test_running
    assert (None if running is None else running.remaining_percent) == remaining


def test_nvme_text_garbage_row_is_named() -> None:
    with pytest.raises(ParseError, match="NVMe self-test log row not understood"):
        logs.text_sections(["Self-test Log (NVMe Log 0x06)", "Self-test status: No self-test in progress",
                            "Num  Test_Description  Status  Power_on_Hours  Failing_LBA  NSID Seg SCT Code",
                            " 0   Sideways          ???"])


def test_these_hand_checked_tables_add_to_test_smart_logs() -> None:
    """test_smart_logs.py holds 41 hand-checked captures of ATA/NVMe self-test and error logs;
    these add captures it does not name (NVMe text self-test logs, SCSI self-test logs, SCT)."""
    names = [h[0] for h in SCT_HAND_CHECKED + SCSI_HAND_CHECKED + NVME_HAND_CHECKED]
    assert len(names) == len(set(names)) >= 22
