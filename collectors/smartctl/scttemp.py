"""The drive's own temperature history: ATA SCT temperature history (``smartctl -l scttemp``).

Pure functions. :func:`read_history` takes smartctl's JSON (7.0 and later)::

    "ata_sct_temperature_history": {"version": 2, "sampling_period_minutes": 1,
        "logging_interval_minutes": 10,
        "temperature": {"op_limit_min": 0, "op_limit_max": 70, "limit_min": 0, "limit_max": 70},
        "size": 128, "index": 30, "table": [39, 39, null, 40, ...]}

and :func:`text_section` gives the same shape from the text smartctl 5.38 and later prints::

    SCT Temperature History Version:     2
    Temperature Sampling Period:         1 minute
    Temperature Logging Interval:        10 minutes
    Min/Max recommended Temperature:      0/70 Celsius
    Min/Max Temperature Limit:            0/70 Celsius
    Temperature History Size (Index):    128 (8)

    Index    Estimated Time   Temperature Celsius
       9    2021-10-07 03:40    44  *************************
     ...    ..(  2 skipped).    ..  *************************
      12    2021-10-07 04:10    44  *************************
      13    2021-10-07 04:20     ?  -

Each table entry is one logging interval; smartctl prints the table oldest first from the entry
after ``index``, folds runs of one temperature into "(N skipped)" and prints an entry the drive
left empty (80h) as ``?`` (JSON ``null``). Totals and the maximum do not depend on the order, so
the JSON table is read as it comes. What cannot be true (an interval of 0, a sample outside
-40..150 C, a table whose length is not its size, an index past it) is withheld with the reason;
a limit of +-127 or -128 is the signed byte's extreme, which drives print when they give no
limit, and is simply absent.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Tuple

from collectors import smart_logs as sl
from collectors.model import ParseError
from collectors.smartctl.json_fields import json_int

PATH = "ata_sct_temperature_history"
# Drives that give no limit print the signed byte's extremes (smartctl shows -127/127; -128 is
# the 80h "no value" that smartctl prints as "?").
_NO_LIMIT = (-128, -127, 127)


def _celsius_problem(value: int) -> Optional[str]:
    low, high = sl.SCT_CELSIUS_RANGE
    if not low <= value <= high:
        return f"{value} C is outside {low}..{high}"
    return None


def _limits(doc: Dict[str, Any], withheld: List[str]) -> Tuple[Optional[int], Optional[int]]:
    """The drive's recommended maximum operating temperature and its absolute maximum."""
    limits = doc.get("temperature")
    if limits is None:
        return None, None
    if not isinstance(limits, dict):
        raise ParseError(f"smartctl JSON: {PATH}.temperature is {type(limits).__name__}, expected an object")
    found: Dict[str, Optional[int]] = {}
    for key in ("op_limit_min", "op_limit_max", "limit_max"):
        value = json_int(limits.get(key), f"{PATH}.temperature.{key}")
        # A maximum of 0 C is what drives without limits print (0/0), like the SCSI trip 0.
        if value is None or value in _NO_LIMIT or (value == 0 and key != "op_limit_min"):
            found[key] = None
            continue
        problem = _celsius_problem(value)
        if problem is None and key != "op_limit_min" and value < sl.LIMIT_FLOOR_CELSIUS:
            problem = f"{value} C is below {sl.LIMIT_FLOOR_CELSIUS} C, lower than any drive's stated maximum"
        if problem:
            withheld.append(f"{PATH}.temperature.{key}: {problem}")
            value = None
        found[key] = value
    low, operating, absolute = found["op_limit_min"], found["op_limit_max"], found["limit_max"]
    if operating is not None and low is not None and low >= operating:
        withheld.append(f"{PATH}.temperature: recommended range {low}..{operating} C is empty")
        operating = None
    if absolute is not None and operating is not None and absolute < operating:
        withheld.append(f"{PATH}.temperature.limit_max {absolute} C is below the recommended maximum {operating} C")
        absolute = None
    return operating, absolute


def _minutes(doc: Dict[str, Any], key: str, withheld: List[str]) -> Optional[int]:
    """A period in minutes. 0 is how drives that keep no history fill the header (SandForce,
    Lite-On, Plextor and Intel SSDs among the captures): absent, without a complaint."""
    value = json_int(doc.get(key), f"{PATH}.{key}")
    if value is None or value == 0:
        return None
    if not 0 < value <= sl.SCT_INTERVAL_MAX_MINUTES:
        withheld.append(f"{PATH}.{key} {value} is not 1..{sl.SCT_INTERVAL_MAX_MINUTES} minutes")
        return None
    return value


def _samples(doc: Dict[str, Any], withheld: List[str]) -> Optional[List[int]]:
    """The logged samples, or None (with the reason) when the table cannot be trusted."""
    table = doc.get("table")
    if table is None:
        return None
    if not isinstance(table, list):
        raise ParseError(f"smartctl JSON: {PATH}.table is {type(table).__name__}, expected a list")
    size = json_int(doc.get("size"), f"{PATH}.size")
    index = json_int(doc.get("index"), f"{PATH}.index")
    if size == 0 and not table:
        return None  # "Temperature History is empty"
    if size is None or not 0 < size <= sl.SCT_TABLE_MAX or size != len(table):
        withheld.append(f"{PATH}: a table of {len(table)} entries with size {size} (at most {sl.SCT_TABLE_MAX})")
        return None
    if index is not None and not 0 <= index < size:
        withheld.append(f"{PATH}.index {index} is past the table's {size} entries")
        return None
    samples = []
    for position, entry in enumerate(table):
        value = json_int(entry, f"{PATH}.table[{position}]")
        # null: no sample in that interval; 0 C: what firmware without a sample there writes
        # (as for the drive's current temperature, json_report._celsius_problem)
        if value is None or value == 0:
            continue
        problem = _celsius_problem(value)
        if problem:
            withheld.append(f"{PATH}.table[{position}]: {problem}; the history is not used")
            return None
        samples.append(value)
    return samples


def read_history(doc: Dict[str, Any], withheld: List[str]) -> Optional[sl.TemperatureHistory]:
    """The SCT temperature history in one smartctl JSON document, None when it has none or its
    logging interval cannot be true (every figure is counted in it). Reasons for what was left
    out are appended to ``withheld``; ParseError names a field of the wrong JSON type."""
    history = doc.get(PATH)
    if history is None:
        return None
    if not isinstance(history, dict):
        raise ParseError(f"smartctl JSON: {PATH} is {type(history).__name__}, expected an object")
    interval = _minutes(history, "logging_interval_minutes", withheld)
    sampling = _minutes(history, "sampling_period_minutes", withheld)
    operating, absolute = _limits(history, withheld)
    if interval is None:
        return None
    size = json_int(history.get("size"), f"{PATH}.size") or 0
    if history.get("table") is None and not 0 <= size <= sl.SCT_TABLE_MAX:
        withheld.append(f"{PATH}.size {size} is more than the {sl.SCT_TABLE_MAX} entries the table holds")
        size = 0
    samples = _samples(history, withheld)
    if samples is None:
        return sl.TemperatureHistory(logging_interval_seconds=interval * 60, sampling_period_seconds=(
            None if sampling is None else sampling * 60), size=size, operating_limit_celsius=operating,
            absolute_limit_celsius=absolute)
    above = None if operating is None else sum(1 for s in samples if s > operating)
    return sl.TemperatureHistory(
        logging_interval_seconds=interval * 60,  # the table's unit: one entry per logging interval
        sampling_period_seconds=None if sampling is None else sampling * 60,
        size=size, samples=len(samples), max_celsius=max(samples) if samples else None,
        operating_limit_celsius=operating, absolute_limit_celsius=absolute, above_limit_samples=above)


def summary(history: sl.TemperatureHistory) -> Dict[str, str]:
    """The history in words for the reading's ``extra`` (shown by /api/v1/drives)."""
    every = history.logging_interval_seconds // 60
    if history.window_seconds is None:
        words = [f"one entry every {every} min, no table read"]
    else:
        words = [f"{history.samples} samples every {every} min ({history.window_seconds / 3600:.1f} h)"]
    if history.max_celsius is not None:
        words.append(f"max {history.max_celsius} C")
    if history.operating_limit_celsius is not None:
        words.append(f"recommended max {history.operating_limit_celsius} C")
        if history.above_limit_seconds is not None:
            words.append(f"{history.above_limit_seconds // 60} min above it")
    if history.absolute_limit_celsius is not None:
        words.append(f"limit {history.absolute_limit_celsius} C")
    return {"temperature_history": ", ".join(words)}


# ------------------------------------------------------------------ text

_HEADER = re.compile(r"^SCT Temperature History Version:\s+(?P<version>\d+)")
_FIELDS = {
    "Temperature Sampling Period": re.compile(r"^Temperature Sampling Period:\s+(?P<a>\d+) minutes?\s*$"),
    "Temperature Logging Interval": re.compile(r"^Temperature Logging Interval:\s+(?P<a>\d+) minutes?\s*$"),
    "Min/Max recommended Temperature": re.compile(
        r"^Min/Max recommended Temperature:\s+(?P<a>-?\d+|\?)/\s*(?P<b>-?\d+|\?) Celsius\s*$"),
    "Min/Max Temperature Limit": re.compile(r"^Min/Max Temperature Limit:\s+(?P<a>-?\d+|\?)/\s*(?P<b>-?\d+|\?) Celsius\s*$"),
    "Temperature History Size (Index)": re.compile(
        r"^Temperature History Size \(Index\):\s+(?P<a>\d+) \((?P<b>\d+)\)\s*$"),
}
_ROW = re.compile(r"^\s*(?P<index>\d+)\s+\d{4}-\d\d-\d\d \d\d:\d\d\s+(?P<celsius>-?\d+|\?)(?:\s+.*)?$")
_SKIPPED = re.compile(r"^\s*\.\.\.\s+\.\.\(\s*(?P<count>\d+) skipped\)\.\s+\.\.(?:\s+.*)?$")


def _number(word: Optional[str]) -> Optional[int]:
    return None if word is None or word == "?" else int(word)


def _text_table(lines: List[str]) -> List[Optional[int]]:
    """The table rows after "Index    Estimated Time ...", a "(N skipped)" row expanded to N
    copies of the temperature printed before it; stops at the first line that is neither."""
    table: List[Optional[int]] = []
    for line in lines:
        row = _ROW.match(line)
        if row:
            table.append(_number(row.group("celsius")))
            continue
        skipped = _SKIPPED.match(line)
        if skipped and table:
            # never more than one entry past what any table holds: a garbled count then fails
            # the size check (read_history withholds the table) instead of filling memory
            count = min(int(skipped.group("count")), sl.SCT_TABLE_MAX + 1 - len(table))
            table.extend([table[-1]] * max(count, 0))
            continue
        break
    return table


def text_section(lines: List[str]) -> Dict[str, Any]:
    """The SCT temperature history block of smartctl's text output in the JSON shape
    :func:`read_history` reads; empty when the text has none. A field line that does not
    read as smartctl prints it raises ParseError naming it."""
    start = next((n for n, line in enumerate(lines) if _HEADER.match(line)), None)
    if start is None:
        return {}
    history: Dict[str, Any] = {"version": int(_HEADER.match(lines[start]).group("version"))}
    limits: Dict[str, Optional[int]] = {}
    end = start + 1
    for end in range(start + 1, min(start + 12, len(lines))):
        text = lines[end].rstrip()
        if not text:
            break
        name = text.split(":", 1)[0]
        pattern = _FIELDS.get(name)
        if pattern is None:
            continue  # "Temperature History is empty", "Invalid Temperature History Size or Index"
        match = pattern.match(text)
        if match is None:
            raise ParseError(f"smartctl text: SCT temperature history line not understood: {text[:100]!r}")
        a, b = match.group("a"), match.groupdict().get("b")
        if name == "Temperature Sampling Period":
            history["sampling_period_minutes"] = int(a)
        elif name == "Temperature Logging Interval":
            history["logging_interval_minutes"] = int(a)
        elif name == "Min/Max recommended Temperature":
            limits["op_limit_min"], limits["op_limit_max"] = _number(a), _number(b)
        elif name == "Min/Max Temperature Limit":
            limits["limit_min"], limits["limit_max"] = _number(a), _number(b)
        else:
            history["size"], history["index"] = int(a), int(b)
    if limits:
        history["temperature"] = limits
    for offset, line in enumerate(lines[end:end + 3]):
        if line.startswith("Index    Estimated Time"):
            history["table"] = _text_table(lines[end + offset + 1:])
            break
    return {PATH: history}
