"""smartctl's view of a drive's logs (issue 30): self-test logs, error logs, SCSI error counters.

Pure functions. :func:`read_logs` takes smartctl's JSON document (``--json=c`` with
``--log=selftest --log=error``; smartmontools 7.3 and later give NVMe's self-test log too)::

    "ata_smart_self_test_log": {"standard": {"revision": 1, "table": [
        {"type": {"value": 1, "string": "Short offline"},
         "status": {"value": 121, "string": "Completed: read failure",
                    "remaining_percent": 90, "passed": false},
         "lifetime_hours": 16402, "lba": 494591083}]}},
    "ata_smart_error_log": {"summary": {"revision": 1, "count": 84, "table": [
        {"error_number": 84, "lifetime_hours": 16402,
         "error_description": "Error: UNC 8 sectors at LBA = 0x0042ea00 = 4385280",
         "previous_commands": [{"command_name": "READ DMA EXT"}, ...]}]}},
    "nvme_self_test_log": {"current_self_test_operation": {"value": 0, "string": "No self-test in progress"},
        "table": [{"self_test_code": {"value": 1, "string": "Short"},
                   "self_test_result": {"value": 0, "string": "Completed without error"},
                   "power_on_hours": 2100}]}

and the text parser of smartmontools 5.x/6.x output feeds it the same shape from the printed
tables (:func:`text_sections`). Each figure is checked against what the standard allows and
against the drive (an LBA past the drive's last sector, a stamp past 20 years); one that cannot
be true is left out and named in ``SmartLogs.withheld``. :func:`power_on_contradiction` uses the
self-test stamps as a second clock against the drive's power-on time.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Tuple

from collectors import smart_logs as sl
from collectors.model import MAX_EVENTS, MAX_POWER_ON_SECONDS, ParseError
from collectors.smartctl import scttemp
from collectors.smartctl.json_fields import json_int, json_obj

# ATA self-test execution status, high nibble (ACS-3 table "Self-test execution status values").
_ATA_RESULTS = {0: sl.PASSED, 1: sl.ABORTED, 2: sl.INTERRUPTED, 3: sl.FAILED, 4: sl.FAILED, 5: sl.FAILED,
                6: sl.FAILED, 7: sl.FAILED, 8: sl.FAILED, 15: sl.IN_PROGRESS}
# The same as smartctl prints it (ataprint.cpp), for the text output and JSON without a value.
_ATA_STATUS_WORDS = (("completed without error", sl.PASSED), ("aborted by host", sl.ABORTED),
                     ("interrupted", sl.INTERRUPTED), ("fatal or unknown error", sl.FAILED),
                     ("completed:", sl.FAILED), ("in progress", sl.IN_PROGRESS),
                     ("completed", sl.PASSED))  # smartctl 5.x's word for status 0
# NVMe Device Self-test Result, bits 3:0 (NVMe base spec 2.0, "Self-test Result Data Structure");
# 0xF marks an unused entry.
_NVME_RESULTS = {0: sl.PASSED, 1: sl.ABORTED, 2: sl.ABORTED, 3: sl.ABORTED, 4: sl.ABORTED, 5: sl.FAILED,
                 6: sl.FAILED, 7: sl.FAILED, 8: sl.ABORTED, 9: sl.ABORTED}
_NVME_UNUSED = 0xF
# SCSI self-test results log page (SPC-4 "Self-test results log parameter"): the result nibble
# and the self-test code. Result 2 is an abort by a reset or task management function, ATA's
# "interrupted"; 3 is an error that kept the test from completing (smartctl counts it a SMART
# failure, as ATA's "fatal or unknown error"); 8..14 are reserved.
_SCSI_RESULTS = {0: sl.PASSED, 1: sl.ABORTED, 2: sl.INTERRUPTED, 3: sl.FAILED, 4: sl.FAILED, 5: sl.FAILED,
                 6: sl.FAILED, 7: sl.FAILED, 15: sl.IN_PROGRESS}
# Code 0 is the "default self-test" whose content the vendor defines; 3 and 7 are reserved and
# 4 is the abort command itself.
_SCSI_KINDS = {0: "vendor", 1: "short", 2: "extended", 5: "short", 6: "extended"}
# The stamp is 16 bits and stops at FFFFh (SPC-4: set to FFFFh past 65,535 hours): a test
# stamped 65,535 ran at that hour or later, so it gives no hour.
_SCSI_HOURS_SATURATED = 0xFFFF
_SCSI_MAX_ENTRIES = 20
# The result as smartctl words it (scsiprint.cpp), by value, for text output and JSON without a
# value; the longest that starts the status wins ("completed" is 0, "completed, segment failed" 4).
_SCSI_RESULT_WORDS = ("completed", "aborted (by user command)", "aborted (device reset ?)",
                      "unknown error, incomplete", "completed, segment failed", "failed in first segment",
                      "failed in second segment", "failed in segment", "", "", "", "", "", "", "",
                      "self test in progress")
# A failing LBA with every bit of its field set is firmware's "no LBA" (ATA summary logs are 28 bits).
_LBA_SENTINEL_BITS = (28, 32, 48, 64)
MAX_POWER_ON_HOURS = int(MAX_POWER_ON_SECONDS // 3600)
# A self-test stamp this far past the power-on figure refutes it (see power_on_contradiction).
CONTRADICTION_HOURS = 24
CONTRADICTION_SHARE = 0.10


def _kind(description: str) -> str:
    word = description.strip().lower()
    for kind in ("short", "extended", "conveyance", "selective", "vendor"):
        if word.startswith(kind):
            return kind
    if word.startswith("offline"):
        return "offline"
    return "unknown"


def _list(value: Any, where: str) -> List[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ParseError(f"smartctl JSON: {where} is {type(value).__name__}, expected a list")
    return value


def _str(value: Any, where: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ParseError(f"smartctl JSON: {where} is {type(value).__name__}, expected a string")
    return value


class _Checks:
    """The drive's limits the logs' figures are checked against, and what was withheld."""

    def __init__(self, capacity: Optional[int], sector: Optional[int]) -> None:
        self.last_lba = capacity // (sector or 512) - 1 if capacity else None
        self.withheld: List[str] = []

    def lba(self, value: Optional[int], where: str) -> Optional[int]:
        if value is None:
            return None
        if value < 0 or value > sl.MAX_LBA:
            self.withheld.append(f"{where} {value} is no LBA (0..2**64 - 1)")
            return None
        if any(value == (1 << bits) - 1 for bits in _LBA_SENTINEL_BITS):
            return None  # all ones: the drive gives no LBA
        if self.last_lba is not None and value > self.last_lba:
            self.withheld.append(f"{where} {value} is past the drive's last LBA {self.last_lba}")
            return None
        return value

    def hours(self, value: Optional[int], wrap: Optional[int], where: str) -> Optional[int]:
        if value is None:
            return None
        high = (wrap - 1) if wrap else MAX_POWER_ON_HOURS
        if not 0 <= value <= high:
            self.withheld.append(f"{where} {value} is outside 0..{high:,} power-on hours")
            return None
        return value

    def count(self, value: Optional[int], where: str) -> Optional[int]:
        if value is None:
            return None
        if not 0 <= value <= MAX_EVENTS or value == (1 << 64) - 1:
            self.withheld.append(f"{where} {value} is no count of errors")
            return None
        return value


def _ata_result(status: Dict[str, Any], where: str) -> str:
    value = json_int(status.get("value"), f"{where}.value")
    if value is not None:
        return _ATA_RESULTS.get((value >> 4) & 0xF, sl.UNKNOWN)
    words = _str(status.get("string"), f"{where}.string").lower()
    return next((result for prefix, result in _ATA_STATUS_WORDS if prefix in words), sl.UNKNOWN)


def _ata_self_tests(doc: Dict[str, Any], checks: _Checks) -> Tuple[str, Tuple[sl.SelfTest, ...]]:
    log = json_obj(doc.get("ata_smart_self_test_log"), "ata_smart_self_test_log")
    # smartctl -x reads the extended (GP) log where the drive has one, else the summary one.
    for variant in ("extended", "standard"):
        part = json_obj(log.get(variant), f"ata_smart_self_test_log.{variant}")
        if part:
            break
    else:
        return "", ()
    path = f"ata_smart_self_test_log.{variant}"
    tests = []
    for index, row in enumerate(_list(part.get("table"), f"{path}.table")):
        where = f"{path}.table[{index}]"
        row = json_obj(row, where)
        status = json_obj(row.get("status"), f"{where}.status")
        description = _str(json_obj(row.get("type"), f"{where}.type").get("string"), f"{where}.type.string")
        remaining = json_int(status.get("remaining_percent"), f"{where}.status.remaining_percent")
        if remaining is not None and not 0 <= remaining <= 100:
            checks.withheld.append(f"{where}.status.remaining_percent {remaining} is outside 0..100")
            remaining = None
        tests.append(sl.SelfTest(
            kind=_kind(description), description=description, result=_ata_result(status, f"{where}.status"),
            status=_str(status.get("string"), f"{where}.status.string"),
            power_on_hours=checks.hours(json_int(row.get("lifetime_hours"), f"{where}.lifetime_hours"),
                                        sl.ATA_HOURS_WRAP, f"{where}.lifetime_hours"),
            remaining_percent=remaining, failing_lba=checks.lba(json_int(row.get("lba"), f"{where}.lba"), f"{where}.lba"),
            hours_wrap=sl.ATA_HOURS_WRAP))
    return path, tuple(tests)


def _nvme_self_tests(doc: Dict[str, Any], checks: _Checks) -> Tuple[str, Tuple[sl.SelfTest, ...], Optional[sl.SelfTest]]:
    path = "nvme_self_test_log"
    log = json_obj(doc.get(path), path)
    if not log:
        return "", (), None
    tests = []
    for index, row in enumerate(_list(log.get("table"), f"{path}.table")):
        where = f"{path}.table[{index}]"
        row = json_obj(row, where)
        code = json_obj(row.get("self_test_code"), f"{where}.self_test_code")
        result = json_obj(row.get("self_test_result"), f"{where}.self_test_result")
        value = json_int(result.get("value"), f"{where}.self_test_result.value")
        if value == _NVME_UNUSED:
            continue
        description = _str(code.get("string"), f"{where}.self_test_code.string")
        tests.append(sl.SelfTest(
            kind=_kind(description), description=description,
            result=sl.UNKNOWN if value is None else _NVME_RESULTS.get(value, sl.UNKNOWN),
            status=_str(result.get("string"), f"{where}.self_test_result.string"),
            power_on_hours=checks.hours(json_int(row.get("power_on_hours"), f"{where}.power_on_hours"), None,
                                        f"{where}.power_on_hours"),
            failing_lba=checks.lba(json_int(row.get("lba"), f"{where}.lba"), f"{where}.lba")))
    running = None
    current = json_obj(log.get("current_self_test_operation"), f"{path}.current_self_test_operation")
    operation = json_int(current.get("value"), f"{path}.current_self_test_operation.value")
    if operation:  # 0: no self-test in progress
        done = json_int(log.get("current_self_test_completion_percent"), f"{path}.current_self_test_completion_percent")
        description = _str(current.get("string"), f"{path}.current_self_test_operation.string")
        running = sl.SelfTest(kind=_kind(description), description=description, result=sl.IN_PROGRESS,
                              status=description, remaining_percent=None if done is None or not 0 <= done <= 100
                              else 100 - done)
    return path, tuple(tests), running


def _scsi_result(result: Dict[str, Any], where: str) -> int:
    value = json_int(result.get("value"), f"{where}.value")
    if value is not None:
        return value
    words = _str(result.get("string"), f"{where}.string").lower()
    found = [(len(text), n) for n, text in enumerate(_SCSI_RESULT_WORDS) if text and words.startswith(text)]
    return max(found)[1] if found else -1


def _scsi_self_tests(doc: Dict[str, Any], checks: _Checks) -> Tuple[str, Tuple[sl.SelfTest, ...]]:
    """smartctl 7's ``scsi_self_test_0`` .. ``scsi_self_test_19`` (newest first), one key each."""
    tests = []
    for number in range(_SCSI_MAX_ENTRIES):
        where = f"scsi_self_test_{number}"
        if where not in doc:
            break
        row = json_obj(doc[where], where)
        code = json_obj(row.get("code"), f"{where}.code")
        value = _scsi_result(json_obj(row.get("result"), f"{where}.result"), f"{where}.result")
        code_value = json_int(code.get("value"), f"{where}.code.value")
        description = _str(code.get("string"), f"{where}.code.string")
        kind = _SCSI_KINDS.get(code_value, "unknown") if code_value is not None else _kind(
            description.lower().replace("background ", "").replace("foreground ", "").replace("long", "extended"))
        hours = json_int(json_obj(row.get("power_on_time"), f"{where}.power_on_time").get("hours"), f"{where}.power_on_time.hours")
        lba = json_int(json_obj(row.get("lba_first_failure"), f"{where}.lba_first_failure").get("value"),
                   f"{where}.lba_first_failure.value")
        tests.append(sl.SelfTest(
            kind=kind, description=description, result=_SCSI_RESULTS.get(value, sl.UNKNOWN),
            status=_str(json_obj(row.get("result"), f"{where}.result").get("string"), f"{where}.result.string"),
            power_on_hours=None if hours == _SCSI_HOURS_SATURATED else checks.hours(
                hours, _SCSI_HOURS_SATURATED + 1, f"{where}.power_on_time.hours"),
            failing_lba=checks.lba(lba, f"{where}.lba_first_failure.value")))
    return ("scsi_self_test_log" if tests else ""), tuple(tests)


def _ata_error_log(doc: Dict[str, Any], checks: _Checks) -> Tuple[str, Optional[int], Optional[sl.LoggedError]]:
    log = json_obj(doc.get("ata_smart_error_log"), "ata_smart_error_log")
    for variant in ("extended", "summary"):
        part = json_obj(log.get(variant), f"ata_smart_error_log.{variant}")
        if part:
            break
    else:
        return "", None, None
    path = f"ata_smart_error_log.{variant}"
    count = checks.count(json_int(part.get("count"), f"{path}.count"), f"{path}.count")
    rows = _list(part.get("table"), f"{path}.table")
    if not rows:
        return path, count, None
    row = json_obj(rows[0], f"{path}.table[0]")
    commands = _list(row.get("previous_commands") or row.get("commands"), f"{path}.table[0].previous_commands")
    command = ""
    if commands:
        first = json_obj(commands[0], f"{path}.table[0].previous_commands[0]")
        command = _str(first.get("command_name"), f"{path}.table[0].previous_commands[0].command_name")
    return path, count, sl.LoggedError(
        number=json_int(row.get("error_number"), f"{path}.table[0].error_number"),
        power_on_hours=checks.hours(json_int(row.get("lifetime_hours"), f"{path}.table[0].lifetime_hours"),
                                    sl.ATA_HOURS_WRAP, f"{path}.table[0].lifetime_hours"),
        description=_str(row.get("error_description"), f"{path}.table[0].error_description"), command=command)


def _nvme_error_log(doc: Dict[str, Any], checks: _Checks) -> Tuple[str, Optional[int], Optional[sl.LoggedError]]:
    health = json_obj(doc.get("nvme_smart_health_information_log"), "nvme_smart_health_information_log")
    count = checks.count(json_int(health.get("num_err_log_entries"), "nvme num_err_log_entries"), "nvme num_err_log_entries")
    log = json_obj(doc.get("nvme_error_information_log"), "nvme_error_information_log")
    rows = _list(log.get("table"), "nvme_error_information_log.table")
    if not rows:
        return ("nvme_smart_health_information_log" if count is not None else ""), count, None
    row = json_obj(rows[0], "nvme_error_information_log.table[0]")
    status = json_obj(row.get("status_field"), "nvme_error_information_log.table[0].status_field")
    return "nvme_error_information_log", count, sl.LoggedError(
        number=json_int(row.get("error_count"), "nvme_error_information_log.table[0].error_count"),
        description=_str(status.get("string"), "nvme_error_information_log.table[0].status_field.string"))


def _scsi_uncorrected(doc: Dict[str, Any], checks: _Checks) -> Tuple[Tuple[str, int], ...]:
    log = json_obj(doc.get("scsi_error_counter_log"), "scsi_error_counter_log")
    out = []
    for direction in ("read", "write", "verify"):
        where = f"scsi_error_counter_log.{direction}.total_uncorrected_errors"
        value = checks.count(json_int(json_obj(log.get(direction), f"scsi_error_counter_log.{direction}")
                                  .get("total_uncorrected_errors"), where), where)
        if value is not None:
            out.append((direction, value))
    return tuple(out)


def read_logs(doc: Dict[str, Any], kind: str, capacity: Optional[int] = None,
              sector: Optional[int] = None) -> Optional[sl.SmartLogs]:
    """The logs in one smartctl JSON document (``kind``: ata, nvme, scsi), None when it holds
    none. ParseError names a field of the wrong JSON type; an impossible value is withheld."""
    checks = _Checks(capacity, sector)
    sources: List[str] = []
    tests: Tuple[sl.SelfTest, ...] = ()
    running = None
    count, last, uncorrected = None, None, ()
    if kind == "ata":
        path, tests = _ata_self_tests(doc, checks)
        where, count, last = _ata_error_log(doc, checks)
        sources += [path, where]
    elif kind == "nvme":
        path, tests, running = _nvme_self_tests(doc, checks)
        where, count, last = _nvme_error_log(doc, checks)
        sources += [path, where]
    elif kind == "scsi":
        path, tests = _scsi_self_tests(doc, checks)
        uncorrected = _scsi_uncorrected(doc, checks)
        sources += [path, "scsi_error_counter_log" if uncorrected else ""]
    history = scttemp.read_history(doc, checks.withheld) if kind == "ata" else None
    if history is not None:
        sources.append(scttemp.PATH)
    if running is None and tests and tests[0].result == sl.IN_PROGRESS:
        running = tests[0]
    logs = sl.SmartLogs(source="smartctl " + ", ".join(s for s in sources if s), self_tests=tests,
                        self_test_running=running, error_count=count, last_error=last,
                        uncorrected=uncorrected, temperature_history=history, withheld=tuple(checks.withheld))
    return None if logs.empty() else logs


def power_on_contradiction(logs: Optional[sl.SmartLogs], power_on_seconds: Optional[int]) -> Optional[str]:
    """Why the drive's power-on figure cannot be true given its self-test log, or None.

    The drive stamps each self-test with its power-on hours when the test ran, so no stamp can
    be above the power-on hours it reports later. A stamp more than a day and a tenth above
    (whole hours on both sides; firmware that keeps the stamp's hour counter apart from the
    attribute's drifts a little) refutes the figure. ATA stamps are 16 bits: once the drive
    reports 65,536 hours or more any stamp fits some earlier wrap, so nothing is refuted; below
    that, a stamp cannot have wrapped."""
    if logs is None or power_on_seconds is None:
        return None
    now = power_on_seconds // 3600
    for test in logs.self_tests:
        stamp = test.power_on_hours
        if stamp is None or (test.hours_wrap is not None and now >= test.hours_wrap):
            continue
        if stamp > now + max(CONTRADICTION_HOURS, now * CONTRADICTION_SHARE):
            return (f"the self-test log holds a {test.description or 'self-test'} stamped at power-on hour "
                    f"{stamp:,}, above the {now:,} hours the drive reports")
    return None


def newest_stamp(logs: Optional[sl.SmartLogs]) -> Optional[int]:
    """The highest power-on hour a self-test is stamped with. The drive ran that test at that
    hour, so it has been on at least that long; a 16-bit stamp that wrapped is only lower, so
    it is a lower bound either way (ata.power_on_seconds uses it to decide between two
    counters that disagree)."""
    if logs is None:
        return None
    stamps = [t.power_on_hours for t in logs.self_tests if t.power_on_hours is not None]
    return max(stamps) if stamps else None


def summary(logs: sl.SmartLogs) -> Dict[str, str]:
    """The logs in words for the reading's ``extra`` (shown by /api/v1/drives)."""
    out: Dict[str, str] = {}
    last = logs.last_test
    if last is not None:
        at = f" at power-on hour {last.power_on_hours:,}" if last.power_on_hours is not None else ""
        lba = f", first failing LBA {last.failing_lba}" if last.failing_lba is not None else ""
        out["selftest_last"] = f"{last.description}: {last.status}{at}{lba}"
    if logs.self_test_running is not None:
        out["selftest_running"] = logs.self_test_running.status
    if logs.last_error is not None:
        err = logs.last_error
        at = f" at power-on hour {err.power_on_hours:,}" if err.power_on_hours is not None else ""
        words = "; ".join(w for w in (err.description, err.command) if w)
        out["error_log_last"] = f"error {err.number if err.number is not None else '?'}{at}: {words}".rstrip(": ")
    if logs.temperature_history is not None:
        out.update(scttemp.summary(logs.temperature_history))
    if logs.withheld:
        out["smart_logs_withheld"] = "; ".join(logs.withheld)
    return out


# ------------------------------------------------------------------ text (smartmontools 5.x/6.x)

_ST_HEADER = re.compile(r"^SMART (?:Extended )?Self-test [Ll]og")
_ST_ROW = re.compile(
    r"^#\s*(?P<num>\d+)\s+(?P<desc>(?:Short|Extended|Conveyance|Selective|Offline|Vendor \(0x[0-9a-fA-F]+\)|"
    r"Reserved \(0x[0-9a-fA-F]+\)|Abort offline test|Abort\w*)(?: (?:off-?line|captive))?)\s+(?P<status>\S.*?)\s+"
    r"(?P<remaining>\d{1,3})%\s+(?P<hours>\d+)(?:\s+(?P<lba>\S+))?\s*$")
_ERR_COUNT = re.compile(r"^(?:ATA|Device) Error Count:\s+(?P<count>\d+)")
_ERR_ENTRY = re.compile(r"^Error (?P<num>\d+)(?: \[\d+\])? (?:occurred )?at disk power-on lifetime: (?P<hours>\d+) hours")
_ERR_WORDS = re.compile(r"^\s+(?:[0-9a-f]{2} ){5,}[0-9a-f]{2}\s+(?P<words>Error: .*)$")
_ERR_CMD = re.compile(r"^\s+(?:[0-9a-f]{2} ){6,}[0-9a-f]{2}\s+[\d:.+ d]+?\s+(?P<cmd>[A-Z][A-Z0-9 /\[\]-]+)$")


def _text_lba(word: str) -> Dict[str, int]:
    """smartctl prints the failing LBA in decimal (6.x, 7.x) or hex (5.x: ``0x08702f11``), ``-``
    for none."""
    if word.isdigit():
        return {"lba": int(word)}
    if re.fullmatch(r"0x[0-9a-fA-F]{1,16}", word):
        return {"lba": int(word, 16)}
    return {}


def _text_self_tests(lines: List[str]) -> Optional[Dict[str, Any]]:
    """The first self-test log table in the text, in smartctl's JSON shape."""
    rows: List[Dict[str, Any]] = []
    seen = False
    for index, line in enumerate(lines):
        if _ST_HEADER.match(line) and "not supported" not in line:
            if index + 1 < len(lines) and "segment" in lines[index + 1]:
                return None  # the SCSI form (_text_scsi_self_tests)
            seen = True
            for row in lines[index + 1:]:
                if row.startswith("Num") or not row.strip():
                    if rows:
                        break
                    continue
                match = _ST_ROW.match(row)
                if match is None:
                    if row.startswith("#"):
                        raise ParseError(f"smartctl text: self-test log row not understood: {row[:100]!r}")
                    break
                lba = match.group("lba") or "-"  # smartctl 5.x has no LBA column
                rows.append({"type": {"string": match.group("desc")},
                             "status": {"string": match.group("status"), "remaining_percent": int(match.group("remaining"))},
                             "lifetime_hours": int(match.group("hours")),
                             **_text_lba(lba)})
            break
    if not seen:
        return None
    return {"standard": {"table": rows}}


def _text_error_log(lines: List[str]) -> Optional[Dict[str, Any]]:
    count: Optional[int] = None
    entry: Dict[str, Any] = {}
    for index, line in enumerate(lines):
        if line.startswith("No Errors Logged") and count is None:
            count = 0
        match = _ERR_COUNT.match(line)
        if match and count is None:
            count = int(match.group("count"))
        match = _ERR_ENTRY.match(line)
        if match and not entry:
            entry = {"error_number": int(match.group("num")), "lifetime_hours": int(match.group("hours"))}
            for follow in lines[index + 1:index + 40]:
                if _ERR_ENTRY.match(follow):
                    break
                words = _ERR_WORDS.match(follow)
                if words and "error_description" not in entry:
                    entry["error_description"] = words.group("words").strip()
                cmd = _ERR_CMD.match(follow)
                if cmd and "previous_commands" not in entry:
                    entry["previous_commands"] = [{"command_name": cmd.group("cmd").strip()}]
    if count is None:
        return None
    return {"summary": {"count": count, **({"table": [entry]} if entry else {})}}


_SCSI_ST_ROW = re.compile(
    r"^#\s*(?P<num>\d+)\s+(?P<code>Default|Background short|Background long|Reserved\(\d+\)|Abort background|"
    r"Foreground short|Foreground long)\s+(?P<status>\S.*?)\s+(?:-->\s+)?(?P<segment>\d+|-)\s+(?P<hours>\d+|NOW)"
    r"\s+(?P<lba>\d+|-)\s+\[[^\]]*\]\s*$")
_SCSI_CODES = ("Default", "Background short", "Background long", "Reserved(3)", "Abort background",
               "Foreground short", "Foreground long", "Reserved(7)")


def _text_scsi_self_tests(lines: List[str]) -> Dict[str, Any]:
    """SCSI's "SMART Self-test log" table (scsiprint.cpp) as smartctl 7's scsi_self_test_N keys::

        Num  Test              Status                 segment  LifeTime  LBA_first_err [SK ASC ASQ]
             Description                              number   (hours)
        # 1  Background short  Completed                   -     302                 - [-   -    -]
    """
    out: Dict[str, Any] = {}
    for index, line in enumerate(lines):
        if not (line.startswith("SMART Self-test log") and index + 1 < len(lines) and "segment" in lines[index + 1]):
            continue
        for row in lines[index + 3:index + 3 + _SCSI_MAX_ENTRIES]:
            match = _SCSI_ST_ROW.match(row)
            if match is None:
                if row.startswith("#"):
                    raise ParseError(f"smartctl text: SCSI self-test log row not understood: {row[:100]!r}")
                break
            code, status = match.group("code"), match.group("status").replace("-->", "").strip()
            entry: Dict[str, Any] = {"code": {"string": code}, "result": {"string": status}}
            if code in _SCSI_CODES:
                entry["code"]["value"] = _SCSI_CODES.index(code)
            if match.group("hours") == "NOW":
                entry["self_test_in_progress"] = True
            else:
                entry["power_on_time"] = {"hours": int(match.group("hours"))}
            if match.group("lba") != "-":
                entry["lba_first_failure"] = {"value": int(match.group("lba"))}
            out[f"scsi_self_test_{len(out)}"] = entry
        break
    return out


_NVME_ST_HEADER = "Self-test Log (NVMe Log 0x06"
_NVME_ST_STATUS = re.compile(r"^Self-test status: (?P<what>.*?)(?: \((?P<done>\d{1,3})% completed\))?\s*$")
_NVME_ST_ROW = re.compile(
    r"^\s*(?P<num>\d+)\s+(?P<desc>Short|Extended|Vendor specific|Unknown \(0x[0-9a-fA-F]+\))\s+(?P<status>\S.*?)\s+"
    r"(?P<hours>\d+)\s+(?P<lba>\d+|-)(?:\s+\S+){3,4}\s*$")  # 7.3 has no Seg column
# nvmeprint.cpp's words for the result nibble and the operation, by value (see _NVME_RESULTS)
_NVME_RESULT_WORDS = ("Completed without error", "Aborted: Self-test command", "Aborted: Controller Reset",
                      "Aborted: Namespace removed", "Aborted: Format NVM command", "Fatal or unknown test error",
                      "Completed: unknown failed segment", "Completed: failed segments", "Aborted: Unknown reason",
                      "Aborted: Sanitize operation")
_NVME_OPERATIONS = {"Short": 1, "Extended": 2, "Vendor specific": 0xE}


def _text_nvme_self_tests(lines: List[str]) -> Dict[str, Any]:
    """NVMe's "Self-test Log (NVMe Log 0x06)" (smartctl 7.3+) in the nvme_self_test_log shape::

        Self-test status: Short self-test in progress (58% completed)
        Num  Test_Description  Status                       Power_on_Hours  Failing_LBA  NSID Seg SCT Code
         0   Short             Completed without error                9254            -     -   -   -    -
    """
    index = next((n for n, line in enumerate(lines) if line.startswith(_NVME_ST_HEADER)), None)
    if index is None:
        return {}
    log: Dict[str, Any] = {}
    table: List[Dict[str, Any]] = []
    for row in lines[index + 1:index + 24]:
        status = _NVME_ST_STATUS.match(row)
        if status:
            what = status.group("what")
            operation = next((v for k, v in _NVME_OPERATIONS.items() if what.startswith(k + " self-test")), 0)
            log["current_self_test_operation"] = {"value": operation, "string": what}
            if status.group("done") is not None:
                log["current_self_test_completion_percent"] = int(status.group("done"))
            continue
        if row.startswith("Num ") or row.startswith("No Self-tests Logged"):
            continue
        match = _NVME_ST_ROW.match(row)
        if match is None:
            if re.match(r"^\s*\d+\s", row):
                raise ParseError(f"smartctl text: NVMe self-test log row not understood: {row[:100]!r}")
            break
        words = match.group("status")
        result: Dict[str, Any] = {"string": words}
        if words in _NVME_RESULT_WORDS:
            result["value"] = _NVME_RESULT_WORDS.index(words)
        entry = {"self_test_code": {"string": match.group("desc")}, "self_test_result": result,
                 "power_on_hours": int(match.group("hours"))}
        if match.group("lba") != "-":
            entry["lba"] = int(match.group("lba"))
        table.append(entry)
    log["table"] = table
    return {"nvme_self_test_log": log}


def text_sections(lines: List[str]) -> Dict[str, Any]:
    """The self-test and error logs of smartctl's text output (``-a``/``-x``; ATA from 5.x on,
    SCSI's self-test log, NVMe's from 7.3) and the ATA SCT temperature history, in the JSON
    shape :func:`read_logs` reads; empty when the text has none of them."""
    out: Dict[str, Any] = {}
    out.update(_text_scsi_self_tests(lines))
    out.update(_text_nvme_self_tests(lines))
    out.update(scttemp.text_section(lines))
    self_tests = _text_self_tests(lines)
    if self_tests is not None:
        out["ata_smart_self_test_log"] = self_tests
    errors = _text_error_log(lines)
    if errors is not None:
        out["ata_smart_error_log"] = errors
    return out


# ------------------------------------------------------------------ every attribute (opt in)

def attribute_rows(doc: Dict[str, Any], names: Dict[int, str]) -> Tuple[Tuple[sl.AttributeRow, ...], List[str]]:
    """Every row of ``ata_smart_attributes.table`` with the drive database's name (``names``: id
    -> name, the vocabulary the normaliser uses; smartctl's printed name where it has none), and
    what was left out: a value, worst or threshold outside one byte, a raw value beyond 64 bits, a
    second row with the same id (two series with one label set), rows past the table's 30 entries."""
    table = _list(json_obj(doc.get("ata_smart_attributes"), "ata_smart_attributes").get("table"),
                  "ata_smart_attributes.table")
    rows: List[sl.AttributeRow] = []
    left_out: List[str] = []
    seen = set()
    for index, row in enumerate(table):
        where = f"ata_smart_attributes.table[{index}]"
        row = json_obj(row, where)
        attr_id = json_int(row.get("id"), f"{where}.id")
        why = ("no id" if attr_id is None else f"id {attr_id} is outside 1..255" if not 1 <= attr_id <= 255
               else f"id {attr_id} again (the first row is kept)" if attr_id in seen
               else "past the table's 30 rows" if len(rows) >= sl.MAX_ATTRIBUTES else None)
        if why:
            left_out.append(f"{where}: {why}")
            continue
        seen.add(attr_id)
        values = {}
        for key, column in (("value", "value"), ("worst", "worst"), ("threshold", "thresh")):
            number = json_int(row.get(column), f"{where}.{column}")
            if number is not None and not 0 <= number <= sl.ATTRIBUTE_BYTE:
                left_out.append(f"{where}.{column} {number} is not one byte")
                number = None
            values[key] = number
        raw = json_int(json_obj(row.get("raw"), f"{where}.raw").get("value"), f"{where}.raw.value")
        if raw is not None and not 0 <= raw <= sl.ATTRIBUTE_RAW_MAX:
            left_out.append(f"{where}.raw.value {raw} is beyond smartctl's 64-bit raw value")
            raw = None
        threshold, value = values["threshold"], values["value"]
        failing = bool(threshold and value is not None and value <= threshold)
        name = names.get(attr_id) or _str(row.get("name"), f"{where}.name")
        rows.append(sl.AttributeRow(attr_id=attr_id, name=name, raw=raw, failing_now=failing, **values))
    return tuple(rows), left_out
