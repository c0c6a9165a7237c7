"""What a drive says about its self-tests, and how busy it is. Pure functions.

The scheduler asks a drive with one smartctl call (:func:`collectors.selftest.source.status_argv`)::

    smartctl --json=c -i -c -A -l selftest --nocheck=standby,3 -d sat /dev/sda

``-i`` gives the serial (a device name that now names another drive is not tested), ``-c`` the
ATA self-test execution status byte (ACS-3 SMART READ DATA byte 363: high nibble 0xF while a
test runs, low nibble the remaining tenths) and the drive's own estimate of each test's
minutes, ``-A`` the power-on hours, ``-l selftest`` the log: NVMe's current self-test
operation (log page 06h, smartctl 7.3 and later), SCSI's results log (page 10h, result 0xF
while a test runs) and the ATA log's entries, whose newest ones tell how the test the
scheduler started ended. From smartctl 7 as JSON::

    "ata_smart_data": {"self_test": {"status": {"value": 241, "string": "in progress, 10% remaining",
                                                "remaining_percent": 10},
                                     "polling_minutes": {"short": 2, "extended": 1479}}, ...}

and from smartctl 5.x/6.x as text (ATA only)::

    Self-test execution status:      ( 249) Self-test routine in progress...
                                            90% of test remaining.

Utilisation is measured, not asked of any other source: two reads of /proc/diskstats a few
seconds apart, the share of the time the kernel saw the device doing I/O (its ``io_ticks``),
as ``iostat -x``'s %util.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Dict, Mapping, Optional, Sequence, Tuple

from collectors import smart_logs as sl
from collectors.model import ParseError
from collectors.smartctl import logs as smart_log_parse
from collectors.smartctl.json_fields import json_int, json_obj

# ATA self-test execution status, high nibble 0xF: a self-test is in progress (ACS-3 table
# "Self-test execution status values"); the low nibble is the remaining work in tenths.
ATA_IN_PROGRESS = 0xF
# SCSI self-test results log parameter, SELF-TEST RESULTS field 0xF: in progress (SPC-4).
SCSI_IN_PROGRESS = 0xF
# SCSI SELF-TEST CODE values (SPC-4 SEND DIAGNOSTIC): 1 background short, 2 background
# extended, 5 and 6 the same in the foreground.
_SCSI_KINDS = {1: "short", 2: "extended", 5: "short", 6: "extended"}
_SCSI_RESULTS = {0: sl.PASSED, 1: sl.ABORTED, 2: sl.ABORTED, 3: sl.UNKNOWN, 4: sl.FAILED, 5: sl.FAILED,
                 6: sl.FAILED, 7: sl.FAILED, SCSI_IN_PROGRESS: sl.IN_PROGRESS}
_MAX_TEST_MINUTES = 7 * 24 * 60  # a drive's estimate above a week is not one
_MAX_HOURS = smart_log_parse.MAX_POWER_ON_HOURS


@dataclass(frozen=True)
class DriveStatus:
    """A drive's answer. ``running``: a self-test runs now (None: the drive did not say).
    ``tests``: its self-test log, newest first (ATA, NVMe and SCSI alike). ``minutes``: the
    drive's own estimate of a test's duration, by type (short, extended)."""

    kind: str
    serial: Optional[str] = None
    running: Optional[bool] = None
    remaining_percent: Optional[int] = None
    supported: Optional[bool] = None
    power_on_hours: Optional[int] = None
    tests: Tuple[sl.SelfTest, ...] = ()
    minutes: Mapping[str, int] = field(default_factory=dict)


def _obj(doc: Mapping[str, Any], key: str) -> Dict[str, Any]:
    return json_obj(doc.get(key), key)


def _serial(value: Any) -> Optional[str]:
    # Anonymised reports print "--" or "XXXX": no serial to compare.
    if not isinstance(value, str) or not value.strip() or set(value.strip()) <= {"-", "X"}:
        return None
    return value.strip()


def _ata(doc: Mapping[str, Any]) -> Dict[str, Any]:
    smart = _obj(doc, "ata_smart_data")
    self_test = _obj(smart, "self_test")
    out: Dict[str, Any] = {}
    status = _obj(self_test, "status")
    value = json_int(status.get("value"), "ata_smart_data.self_test.status.value")
    if value is not None:
        if not 0 <= value <= 0xFF:
            raise ParseError(f"smartctl JSON: self-test execution status {value} is not one byte")
        out["running"] = value >> 4 == ATA_IN_PROGRESS
        if out["running"]:
            out["remaining_percent"] = (value & 0xF) * 10
    supported = _obj(smart, "capabilities").get("self_tests_supported")
    if isinstance(supported, bool):
        out["supported"] = supported
    minutes = {}
    for kind, number in _obj(self_test, "polling_minutes").items():
        number = json_int(number, f"ata_smart_data.self_test.polling_minutes.{kind}")
        if number is not None and 0 < number <= _MAX_TEST_MINUTES:
            minutes[kind] = number
    out["minutes"] = minutes
    return out


def _scsi_tests(doc: Mapping[str, Any]) -> Tuple[sl.SelfTest, ...]:
    """smartctl's ``scsi_self_test_N`` objects (N from 0, newest first) as log entries."""
    tests = []
    for index in range(20):  # the results log page holds 20 parameters
        key = f"scsi_self_test_{index}"
        if key not in doc:
            break
        row = _obj(doc, key)
        code = _obj(row, "code")
        result = _obj(row, "result")
        kind = _SCSI_KINDS.get(json_int(code.get("value"), f"{key}.code.value") or 0, "vendor")
        value = json_int(result.get("value"), f"{key}.result.value")
        hours = json_int(_obj(row, "power_on_time").get("hours"), f"{key}.power_on_time.hours")
        tests.append(sl.SelfTest(
            kind=kind, description=str(code.get("string") or ""),
            result=sl.UNKNOWN if value is None else _SCSI_RESULTS.get(value, sl.UNKNOWN),
            status=str(result.get("string") or ""),
            power_on_hours=hours if hours is not None and 0 <= hours <= _MAX_HOURS else None))
    return tuple(tests)


def parse_status_json(data: bytes, kind: str) -> DriveStatus:
    """The status in smartctl's JSON (``kind``: ata, nvme, scsi). ParseError for output that is
    not a JSON object or a field of the wrong type."""
    import json

    try:
        doc = json.loads(data)
    except ValueError as exc:
        raise ParseError(f"smartctl JSON: not JSON ({exc})") from None
    if not isinstance(doc, dict):
        raise ParseError("smartctl JSON: the document is not an object")
    hours = json_int(_obj(doc, "power_on_time").get("hours"), "power_on_time.hours")
    out: Dict[str, Any] = {"serial": _serial(doc.get("serial_number")),
                           "power_on_hours": hours if hours is not None and 0 <= hours <= _MAX_HOURS else None}
    if kind == "scsi":
        tests = _scsi_tests(doc)
        out["tests"] = tests
        if tests:
            out["running"] = tests[0].result == sl.IN_PROGRESS
    else:
        logs = smart_log_parse.read_logs(doc, kind)
        out["tests"] = logs.self_tests if logs else ()
        if kind == "ata":
            out.update(_ata(doc))
        elif kind == "nvme" and "nvme_self_test_log" in doc:
            running = logs.self_test_running if logs else None
            out["running"] = running is not None
            if running is not None:
                out["remaining_percent"] = running.remaining_percent
    return DriveStatus(kind=kind, **out)


_EXEC_STATUS = re.compile(r"^Self-test execution status:\s+\(\s*(\d+)\)", re.MULTILINE)
_SERIAL = re.compile(r"^Serial Number:\s+(\S.*?)\s*$", re.MULTILINE)
_POLLING = re.compile(r"^(Short|Extended|Conveyance) self-test routine\s*\n\s*recommended polling time:\s+\(\s*(\d+)\) minutes",
                      re.MULTILINE)


def parse_status_text(text: str) -> DriveStatus:
    """The status in smartctl 5.x/6.x text (ATA). ParseError when the text has no self-test
    execution status (not an ATA drive's ``-c`` output, or a truncated one)."""
    match = _EXEC_STATUS.search(text)
    if match is None:
        raise ParseError("smartctl text: no \"Self-test execution status\" line")
    value = int(match.group(1))
    if value > 0xFF:
        raise ParseError(f"smartctl text: self-test execution status {value} is not one byte")
    running = value >> 4 == ATA_IN_PROGRESS
    serial = _SERIAL.search(text)
    minutes = {m.group(1).lower(): int(m.group(2)) for m in _POLLING.finditer(text)
               if 0 < int(m.group(2)) <= _MAX_TEST_MINUTES}
    logs = smart_log_parse.read_logs(smart_log_parse.text_sections(text.splitlines()), "ata")
    return DriveStatus(kind="ata", serial=_serial(serial.group(1)) if serial else None, running=running,
                       remaining_percent=(value & 0xF) * 10 if running else None,
                       tests=logs.self_tests if logs else (), minutes=minutes)


def _same(a: sl.SelfTest, b: sl.SelfTest) -> bool:
    return (a.kind, a.result, a.status, a.power_on_hours) == (b.kind, b.result, b.status, b.power_on_hours)


def new_tests(before: Sequence[sl.SelfTest], after: Sequence[sl.SelfTest]) -> Optional[Tuple[sl.SelfTest, ...]]:
    """The entries of ``after`` that were not in the log ``before`` (both newest first): those
    above the newest entry of ``before``. None when ``after`` no longer holds that entry
    (the log was cleared, or another drive answers): what is new cannot be told."""
    before = [t for t in before if t.result != sl.IN_PROGRESS]
    after = [t for t in after if t.result != sl.IN_PROGRESS]
    if not before:
        return tuple(after)
    for index, test in enumerate(after):
        if _same(test, before[0]) and all(_same(x, y) for x, y in zip(after[index:], before)):
            return tuple(after[:index])
    return None


def utilisation(before: Mapping[str, float], after: Mapping[str, float], elapsed: float,
                devices: Sequence[str]) -> Optional[float]:
    """The busiest of ``devices`` between two reads of their time doing I/O in seconds
    (diskstats field 10, ``io_ticks``), as a share of ``elapsed``; None when none of them is
    in both reads, or the time is not positive. A counter that went back (a device removed and
    added again) says nothing: that device is left out."""
    if elapsed <= 0:
        return None
    shares = [min(1.0, (after[d] - before[d]) / elapsed) for d in devices
              if d in before and d in after and after[d] >= before[d]]
    return max(shares) if shares else None
