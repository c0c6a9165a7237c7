"""What a drive says about its self-tests (collectors/selftest/status.py), on real captures
(expectations read off each file by hand), with malformed inputs, plus the comparison of two
logs and the utilisation from two diskstats reads."""

from __future__ import annotations

import json

import pytest

from collectors import smart_logs as sl
from collectors.diskstats import parse_diskstats
from collectors.model import ParseError
from collectors.selftest.status import new_tests, parse_status_json, parse_status_text, utilisation
from tests.conftest import read_fixture


@pytest.mark.parametrize("name,kind,serial,running,remaining,hours,minutes,newest", [
    # Samsung 860 EVO: status 0, "Short offline  Completed without error" at 14,417 of 14,551 hours
    ("fakehost/scrutiny__smart-ata-full.json", "ata", "S3YZNB0KB00864E", False, None, 14551,
     {"short": 2, "extended": 85}, ("short", sl.PASSED, 14417)),
    # status 241: "in progress, 10% remaining"; the log's newest is a short test at 1,708 h
    ("smartctl-json/scrutiny__smart-ata.json", "ata", "9RK1XXXX", True, 10, 1730,
     {"short": 2, "extended": 1479}, ("short", sl.PASSED, 1708)),
    # a WD behind a MegaRAID: serial masked; newest "Aborted by host" at 35,990 h
    ("smartctl-json/scrutiny__smart-megaraid1.json", "ata", None, False, None, 37788,
     {"short": 2, "extended": 503, "conveyance": 5}, ("short", sl.ABORTED, 35990)),
    # NVMe with smartctl 7.3's self-test log: "No self-test in progress", no entries
    ("smartctl-json/telegraf__testcases_device_nvme.json", "nvme", "6D1107091C9583054511", False, None, 8733,
     {}, None),
    # NVMe read by a smartctl without the self-test log: the drive did not say
    ("fakehost/scrutiny__smart-nvme.json", "nvme", "BTNH93710FS91P0B", None, None, 2401, {}, None),
    # SAS: the results log's newest is "Background long  Completed" at 90 h
    ("smartctl-json/telegraf__testcases_device_scsi_extended.json", "scsi", "XYZZZZ", False, None, 34222,
     {}, ("extended", sl.PASSED, 90)),
])
def test_status_json(name, kind, serial, running, remaining, hours, minutes, newest):
    status = parse_status_json(read_fixture(name), kind)
    assert status.serial == serial
    assert status.running is running
    assert status.remaining_percent == remaining
    assert status.power_on_hours == hours
    assert dict(status.minutes) == minutes
    top = status.tests[0] if status.tests else None
    assert (None if top is None else (top.kind, top.result, top.power_on_hours)) == newest


@pytest.mark.parametrize("name,serial,running,remaining,minutes,newest", [
    # 241: in progress, 10% remaining; no self-test log printed
    ("smartctl-text/gsmartcontrol__actions_sdb_testing_cap.txt", None, True, 10, {"short": 1, "extended": 163}, None),
    # 121: the previous test completed with a read failure; "# 1 Extended offline Completed: read failure 90% 2692"
    ("smartctl-text/gsmartcontrol__smartmon-site_IC35L120AVV207-1.txt", "VNVD09G4H3HPMT", False, None,
     {"short": 1, "extended": 48}, ("extended", sl.FAILED, 2692)),
    # 25: aborted by the host (the status byte); the log's newest entry passed at 570 h; serial "--"
    ("smartctl-text/linuxhw-EnterpriseDrive__SSD_Lite-On_L8H-128V2G-HP_6E314D902314.txt", None, False, None,
     None, ("short", sl.PASSED, 570)),
    # 241 with tabs, as smartctl 7 prints it
    ("smartctl-text-bsdhw/bsdhw__SSD_KingFast_SSD_16GB_6E0A7ABBA727.txt", None, True, 10,
     {"short": 2, "extended": 10}, None),
])
def test_status_text(name, serial, running, remaining, minutes, newest):
    status = parse_status_text(read_fixture(name).decode("utf-8", "replace"))
    assert status.kind == "ata"
    assert status.serial == serial
    assert status.running is running
    assert status.remaining_percent == remaining
    if minutes is not None:
        assert dict(status.minutes) == minutes
    top = status.tests[0] if status.tests else None
    assert (None if top is None else (top.kind, top.result, top.power_on_hours)) == newest


def _doc(**parts) -> bytes:
    return json.dumps(parts).encode()


@pytest.mark.parametrize("data,kind", [
    (b"", "ata"),
    (b"not json", "ata"),
    (b"[1, 2]", "ata"),
    (b'{"smartctl": {"exit_status": 2}', "ata"),  # truncated
    (_doc(ata_smart_data=[]), "ata"),
    (_doc(ata_smart_data={"self_test": {"status": {"value": "241"}}}), "ata"),
    (_doc(ata_smart_data={"self_test": {"status": {"value": 300}}}), "ata"),
    (_doc(ata_smart_data={"self_test": {"status": {"value": True}}}), "ata"),
    (_doc(ata_smart_data={"self_test": {"polling_minutes": {"short": "2"}}}), "ata"),
    (_doc(power_on_time={"hours": 1.5}), "ata"),
    (_doc(power_on_time=5), "nvme"),
    (_doc(nvme_self_test_log={"current_self_test_operation": {"value": "1"}}), "nvme"),
    (_doc(nvme_self_test_log={"table": {}}), "nvme"),
    (_doc(scsi_self_test_0=[]), "scsi"),
    (_doc(scsi_self_test_0={"result": {"value": "0"}}), "scsi"),
    (_doc(ata_smart_self_test_log={"standard": {"table": [{"status": {"value": "x"}}]}}), "ata"),
])
def test_malformed_json_is_a_parse_error(data, kind):
    with pytest.raises(ParseError):
        parse_status_json(data, kind)


@pytest.mark.parametrize("data,kind,field,value", [
    # figures out of range are left out, not trusted
    (_doc(power_on_time={"hours": -5}), "ata", "power_on_hours", None),
    (_doc(power_on_time={"hours": 10 ** 9}), "ata", "power_on_hours", None),
    (_doc(ata_smart_data={"self_test": {"polling_minutes": {"short": 0, "extended": 10 ** 7}}}), "ata", "minutes", {}),
    (_doc(serial_number="XXXXXXXX"), "ata", "serial", None),
    (_doc(serial_number=7), "ata", "serial", None),
    (_doc(), "ata", "running", None),  # a drive that said nothing
    (_doc(scsi_self_test_0={"code": {"value": 1}, "result": {"value": 15}}), "scsi", "running", True),
    (_doc(scsi_self_test_0={"code": {"value": 9}, "result": {"value": 99}}), "scsi", "running", False),
])
def test_implausible_json_figures_are_withheld(data, kind, field, value):
    status = parse_status_json(data, kind)
    assert (dict(status.minutes) if field == "minutes" else getattr(status, field)) == value


@pytest.mark.parametrize("text", [
    "",
    "smartctl 6.2\nSMART support is: Enabled\n",  # no -c part
    "Self-test execution status:      ( 999)\tnonsense\n",
    "Self-test execution status:      (\n",  # truncated
    "# 1  Short offline  Completed without error  00%  570  -\n",
])
def test_malformed_text_is_a_parse_error(text):
    with pytest.raises(ParseError):
        parse_status_text(text)


def _tests(name: str):
    return parse_status_json(read_fixture(name), "ata").tests


def test_the_new_entry_of_a_log_is_the_test_that_ended():
    """Two real logs of one host's MegaRAID disks: the second is the first with an "Aborted by
    host" short test on top, which is what a scheduled test that was aborted leaves."""
    before = _tests("smartctl-json/scrutiny__smart-megaraid0.json")
    after = _tests("smartctl-json/scrutiny__smart-megaraid1.json")
    added = new_tests(before, after)
    assert [(t.kind, t.result, t.status, t.power_on_hours) for t in added] == [
        ("short", sl.ABORTED, "Aborted by host", 35990)]
    assert new_tests(after, after) == ()
    assert new_tests((), before) == before  # a drive's first tests: all of them are new
    # a log that no longer holds the newest entry seen before: what is new cannot be told
    assert new_tests(before, _tests("fakehost/scrutiny__smart-ata-full.json")) is None
    running = sl.SelfTest(kind="short", description="", result=sl.IN_PROGRESS, status="")
    assert new_tests(before, (running,) + tuple(before)) == ()  # a test still running is not a result


DISKSTATS = ("   8       0 sda 120 10 9000 50 400 20 64000 300 0 {sda} 350 0 0 0 0 4 2\n"
             " 259       0 nvme0n1 5000 0 400000 900 8000 0 1280000 1500 1 {nvme} 2400 0 0 0 0 0 0\n")


def _busy(sda: int, nvme: int):
    return {name: s.io_time_seconds for name, s in parse_diskstats(DISKSTATS.format(sda=sda, nvme=nvme)).items()}


@pytest.mark.parametrize("before,after,elapsed,devices,share", [
    ((280, 2100), (280, 2100), 2.0, ["sda"], 0.0),  # idle
    ((280, 2100), (780, 2100), 2.0, ["sda"], 0.25),  # 500 ms busy in 2 s
    ((280, 2100), (780, 3100), 2.0, ["sda", "nvme0n1"], 0.5),  # the busiest counts
    ((280, 2100), (5280, 2100), 2.0, ["sda"], 1.0),  # more busy time than time: capped
    ((280, 2100), (100, 2100), 2.0, ["sda"], None),  # the counter went back: no figure
    ((280, 2100), (280, 2100), 2.0, ["sdz"], None),  # no such device
    ((280, 2100), (280, 2100), 0.0, ["sda"], None),  # no time passed
])
def test_utilisation(before, after, elapsed, devices, share):
    assert utilisation(_busy(*before), _busy(*after), elapsed, devices) == share
