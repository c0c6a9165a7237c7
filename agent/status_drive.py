"""``ssdfleet status --drive``: everything about one drive, from the JSON form of
:class:`agent.views.DriveView`: its flags, life and spare, the wear-out arithmetic of every
method, writes, write cache and sync-write latency, temperatures, errors, where each figure
came from, and its history. One function per block of lines; no I/O."""

from __future__ import annotations

import time
from typing import Any, Dict, List, Optional, Tuple

from agent.health import CRITICAL, OK, WARNING
from agent.status_table import (
    DAY,
    UNKNOWN,
    cache_mismatch,
    flag_reasons,
    has_health_data,
    hot,
    latency_text,
    life_style,
    model_cell,
    paint,
    printable_text,
    wrap_text,
)
from agent.views import (
    WATCH,
    controller_places,
    controller_text,
    counted,
    error_classes,
    human_bytes,
    human_duration,
    input_rows,
    percent,
    series_change,
    utc_date,
    utc_time,
)
from collectors.model import holds_text

LABEL_WIDTH = 13
INPUT_INDENT = 16


def _history_rows(points: List[Dict[str, Any]], limit: int = 16) -> List[Dict[str, Any]]:
    """At most ``limit`` points spread over the history, always with the newest."""
    if len(points) <= limit:
        return points
    step = (len(points) - 1) / (limit - 1)
    return [points[round(i * step)] for i in range(limit)]


def _verdict(ts: Optional[float], now: float) -> str:
    if ts is None:
        return "no date"
    return f"{utc_date(ts)} (in {human_duration(ts - now)})" if ts > now else f"{utc_date(ts)} (now)"


def projection_lines(v: Dict[str, Any], now: float) -> List[Tuple[str, str, List[Tuple[str, str]]]]:
    """Every wear-out method as ``(mark, "method  verdict: note", [(what, value), ...])``,
    in order of preference; ``mark`` is "*" for the method whose date the drive shows. Methods
    and inputs are in words (views.method_label, views.input_rows), in the order the method
    used them, ending with the host writes it found still to go; /api/v1/drives has the same
    figures under their keys."""
    out = []
    for p in v.get("projections") or []:
        chosen = p["method"] == v.get("wearout_method") and v.get("wearout_timestamp") is not None
        # a method without a date says why; a dated one shows its sums below (the rating says
        # where it is from)
        shown = p.get("note") and (p.get("wearout_timestamp") is None or p["method"] == "rated")
        note = f": {p['note']}" if shown else ""
        label = p.get("label") or p["method"]
        out.append(("*" if chosen else " ", f"{label}: {_verdict(p.get('wearout_timestamp'), now)}{note}",
                    input_rows(p)))
    return out


class _Sheet:
    """The lines of one drive's sheet as they are written, folded to ``width`` (None: no
    limit), coloured when ``color``."""

    def __init__(self, color: bool, width: Optional[int]) -> None:
        self.color, self.width = color, width
        self.out: List[str] = []

    def line(self, label: str, text: str, paint_word: str = "", style: Optional[str] = None) -> None:
        """A labelled line, folded; ``paint_word`` (in the first line) gets ``style``."""
        folded = wrap_text(f"{label:<{LABEL_WIDTH}}{text}", self.width, LABEL_WIDTH)
        if paint_word:
            folded[0] = folded[0][:LABEL_WIDTH] + folded[0][LABEL_WIDTH:].replace(
                paint_word, paint(paint_word, style, self.color), 1)
        self.out.extend(folded)

    def marked(self, word: str, style: str, reason: str) -> None:
        """A flag or a watch note under the status line, its word painted."""
        label = word.ljust(8)
        folded = wrap_text(f"  {label}   {reason}", self.width, 13)
        folded[0] = folded[0].replace(word, paint(word, style, self.color), 1)
        self.out.extend(folded)


def _status(sheet: _Sheet, v: Dict[str, Any]) -> None:
    """Which drive, how it is and why: the heading, the status line, every flag and watch note."""
    head = f"{v.get('device')}  {model_cell(v)[0]}  serial {v.get('serial')}  ({v.get('kind')}"
    head += f", firmware {v['firmware']})" if v.get("firmware") else ")"
    sheet.out.extend(paint(part, "bold", sheet.color) for part in wrap_text(head, sheet.width, 2))
    sev = v.get("severity") or OK
    status = "UNKNOWN: no health data" if not has_health_data(v) else sev.upper()
    sheet.line("status", status, status, sev if has_health_data(v) else UNKNOWN)
    for fsev, reason in flag_reasons(v, with_since=True):
        sheet.marked(fsev.upper(), fsev, reason)
    for reason in v.get("watch") or []:
        sheet.marked("WATCH", WATCH, reason)
    if v.get("holds"):
        sheet.line("holds", holds_text(v["holds"]))  # issue 15: what lives on the drive
    for place in controller_places(v):  # issue 28: read through a RAID controller
        sheet.line("controller", controller_text(place) + "; write cache and I/O are the volume's")


def _life_and_wearout(sheet: _Sheet, v: Dict[str, Any], now: float) -> None:
    """Life and spare left, the wear-out date and every method's arithmetic."""
    life = v.get("life_left_ratio")
    source = f"  ({v['life_left_source']})" if v.get("life_left_source") else ""
    sheet.line("life left", percent(life) + source, percent(life), life_style(life))
    if v.get("spare_left_ratio") is not None:
        thr = v.get("spare_threshold_ratio")
        sheet.line("spare", percent(v["spare_left_ratio"]) + (f" (threshold {percent(thr)})" if thr is not None else ""))
    ts = v.get("wearout_timestamp")
    if ts is not None:
        label = v.get("wearout_method_label") or v.get("wearout_method")
        sheet.line("wear-out", f"{_verdict(ts, now)}, {label} (marked *)")
    elif v.get("projections"):
        sheet.line("wear-out", "no date: no method could project one yet (why, below)")
    else:
        sheet.line("wear-out", "no date")
    for mark, text, inputs in projection_lines(v, now):
        sheet.out.extend(wrap_text(f"  {mark} {text}", sheet.width, 14))
        for name, value in inputs:
            sheet.out.append(f"{'':<{INPUT_INDENT}}{name + ':':<34}{value}")
        if not inputs:
            sheet.out.append(f"{'':<{INPUT_INDENT}}(no inputs)")


def _writes_cache_temperatures(sheet: _Sheet, v: Dict[str, Any]) -> None:
    """Host and NAND writes, the rating, the write cache, sync-write latency, temperatures."""
    rate = v.get("write_rate_bytes_per_second")
    sheet.line("host writes", f"{human_bytes(v.get('host_written_bytes'))} written in total; "
               + (f"{human_bytes(rate * DAY)}/day" if rate is not None else "no rate yet (needs an hour of history)"))
    if v.get("nand_written_bytes") is not None:
        wa = v.get("write_amplification")
        sheet.line("NAND writes", human_bytes(v["nand_written_bytes"])
                   + (f" (write amplification {wa:.2f})" if wa else ""))
    if v.get("rated_endurance_bytes") is not None:
        sheet.line("rated", human_bytes(v["rated_endurance_bytes"]) + " of host writes")
    cache = v.get("write_cache") or "unknown"
    sources = ", ".join(f"{s['source']}: {s['state']}" for s in v.get("write_cache_sources") or [])
    sheet.line("write cache", f"{cache} (expected {v.get('write_cache_expected') or 'any'})"
               + (f"; {sources}" if sources else ""), cache, CRITICAL if cache_mismatch(v) else None)
    latency = latency_text(v)
    if latency:
        sheet.line("sync writes", latency)
    for t in v.get("temperatures") or []:
        extra = []
        if t.get("limit_celsius") is not None:
            extra.append(f"limit {t['limit_celsius']:.0f}")
        if t.get("max_celsius") is not None:
            extra.append(f"max seen {t['max_celsius']:.0f}")
        reading = f"{t['celsius']:.0f} C"
        sheet.line("temperature", f"{t['sensor']} {reading}" + (f" ({', '.join(extra)})" if extra else ""),
                   reading, WARNING if hot(t) else None)


def _errors_evidence_age(sheet: _Sheet, v: Dict[str, Any]) -> None:
    """Bad blocks, media and cable errors, where each figure came from, the data age."""
    classes = error_classes(v)
    bad = [f"{percent(v['bad_block_ratio'], 3)} of blocks"] if v.get("bad_block_ratio") is not None else []
    bad += [counted(n, words) for words, n in classes.get("reallocations", [])]
    sheet.line("bad blocks", ", ".join(bad) or "-")
    sheet.line("media errors", ", ".join(counted(n, words) for words, n in classes.get("media", [])) or "-")
    if classes.get("link"):
        sheet.line("cable errors", ", ".join(counted(n, words) for words, n in classes["link"])
                   + " (the link to the drive, not the flash)")
    # What smartd would tell (issue 30): the newest self-test and the newest logged error.
    extra = v.get("extra") or {}
    for label, key in (("self-test", "selftest_last"), ("", "selftest_running"), ("error log", "error_log_last")):
        if extra.get(key):
            said = f"running: {extra[key]}" if key == "selftest_running" else extra[key]
            sheet.line(label or "self-test", printable_text(said))
    # Where each figure came from, or why the agent gives none (agent/views.py, evidence).
    for index, row in enumerate(v.get("evidence") or []):
        text = (f"{row['label']} from {row['source']}" if row.get("state") == "given"
                else f"{row['label']} WITHHELD: {row.get('reason', '')}")
        if row.get("set_aside"):
            text += f" (set aside: {row['set_aside']})"
        sheet.line("evidence" if index == 0 else "", printable_text(text))
    age = v.get("data_age_seconds")
    polls = ", ".join(f"{k} {utc_time(t)}" for k, t in sorted((v.get("last_poll") or {}).items()))
    sheet.line("data age", (human_duration(age) if age is not None else "no health data")
               + (f" ({polls})" if polls else ""))


def _history(sheet: _Sheet, v: Dict[str, Any]) -> None:
    """The drive's history: how much there is, how life and bad blocks moved, a table."""
    points = v.get("history")
    if points is None:
        sheet.line("history", "not available (a one-off local poll keeps none; the agent's API gives it)")
        return
    if not points:
        sheet.line("history", "no samples of this drive yet")
        return
    if len(points) == 1:
        sheet.line("history", f"1 sample, at {utc_time(points[0]['ts'])}: no trend yet")
    else:
        sheet.line("history", f"{len(points)} samples from {utc_time(points[0]['ts'])} to {utc_time(points[-1]['ts'])}")
    for name, label, fmt in (("life_left_ratio", "life left", percent),
                             ("bad_block_ratio", "bad blocks", lambda r: percent(r, 4))):
        change = series_change(points, name)
        if change is not None:
            sheet.out.append(f"  {label}: {fmt(change['first'])} -> {fmt(change['last'])} "
                             f"over {human_duration(change['last_ts'] - change['first_ts'])}")
    sheet.out.append(f"  {'TIME (UTC)':<17}  {'LIFE':>6}  {'WRITTEN':>9}  {'WRITES/DAY':>10}  BAD-BLOCKS")
    prev = None
    for p in _history_rows(points):
        # the rate since the row above, so it agrees with the WRITTEN column
        r = None
        if (prev is not None and p.get("host_written_bytes") is not None
                and prev.get("host_written_bytes") is not None and p["ts"] > prev["ts"]
                and p["host_written_bytes"] >= prev["host_written_bytes"]):
            r = (p["host_written_bytes"] - prev["host_written_bytes"]) / (p["ts"] - prev["ts"])
        prev = p
        sheet.out.append(f"  {time.strftime('%Y-%m-%d %H:%M', time.gmtime(p['ts'])):<17}  "
                         f"{percent(p.get('life_left_ratio')):>6}  {human_bytes(p.get('host_written_bytes')):>9}  "
                         f"{(human_bytes(r * DAY) if r is not None else '-'):>10}  "
                         f"{percent(p.get('bad_block_ratio'), 4)}")


def format_drive(v: Dict[str, Any], color: bool = False, now: Optional[float] = None,
                 width: Optional[int] = None) -> str:
    """Everything about one drive: why it is flagged, the wear-out arithmetic of all three
    methods, history; long lines folded to ``width`` (None: no limit)."""
    now = time.time() if now is None else now
    sheet = _Sheet(color, width)
    _status(sheet, v)
    _life_and_wearout(sheet, v, now)
    _writes_cache_temperatures(sheet, v)
    _errors_evidence_age(sheet, v)
    _history(sheet, v)
    return "\n".join(sheet.out) + "\n"
