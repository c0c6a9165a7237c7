"""The self-test scheduler as the agent shows it: metric families, the API value, ``ssdfleet
status`` lines and the page section (the spec's HostView hooks). Pure functions of the
scheduler's :class:`SchedulerResult` and the drives: no I/O.

Per-drive series carry ``device`` and ``serial`` as the drive's own series do (looked up by the
drive's identity among the drives; a drive no longer there has none), and ``type`` (short,
long). The overdue rule (agent/health.py ``selftest_overdue``, SSDSelfTestOverdue) reads
``ssd_selftest_schedule_last_completed_timestamp_seconds`` and
``ssd_selftest_schedule_period_seconds``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple

from collectors.families import CounterMetricFamily, GaugeMetricFamily


@dataclass(frozen=True)
class Row:
    """One drive and test type as the scheduler sees it."""

    identity: str
    name: str
    test: str
    period_seconds: int
    next_due: float
    last_completed: float
    last_started: Optional[float] = None
    result: Optional[str] = None
    detail: Optional[str] = None
    skipped: Optional[str] = None
    skipped_at: Optional[float] = None
    running: bool = False
    remaining_percent: Optional[int] = None


@dataclass(frozen=True)
class SchedulerResult:
    rows: Tuple[Row, ...] = ()
    started: Tuple[Tuple[str, int], ...] = ()  # (type, count)
    skipped: Tuple[Tuple[Tuple[str, str], int], ...] = ()  # ((type, reason), count)
    results: Tuple[Tuple[Tuple[str, str], int], ...] = ()  # ((type, result), count)
    state_error: Optional[str] = None


def _labels(drives: Iterable[Any]) -> Callable[[Row], Optional[List[str]]]:
    by_identity = {d.serial: d.device for d in drives}

    def labels(row: Row) -> Optional[List[str]]:
        device = by_identity.get(row.identity)
        return None if device is None else [device, row.identity, row.test]
    return labels


def families(result: SchedulerResult, drives: Iterable[Any] = ()) -> List[Any]:
    ids = ["device", "serial", "type"]
    started = CounterMetricFamily("ssd_selftest_scheduler_started", "Self-tests the scheduler started, by type.",
                                  labels=["type"])
    skipped = CounterMetricFamily(
        "ssd_selftest_scheduler_skipped",
        "Due self-tests the scheduler did not start, by type and reason (busy, unmeasured, standby, testing, "
        "one_at_a_time, identity, unsupported, quarantined, probe_busy, error); each is asked again later in "
        "its window.", labels=["type", "reason"])
    results = CounterMetricFamily(
        "ssd_selftest_scheduler_results",
        "Self-tests the scheduler started that ended, by type and how the drive's log says they ended (passed, "
        "failed, aborted, interrupted, unknown; lost: not finished within selftest.max_test_hours).",
        labels=["type", "result"])
    for test, count in result.started:
        started.add_metric([test], count)
    for (test, reason), count in result.skipped:
        skipped.add_metric([test, reason], count)
    for (test, outcome), count in result.results:
        results.add_metric([test, outcome], count)
    period = GaugeMetricFamily("ssd_selftest_schedule_period_seconds",
                               "The longest time the schedule leaves between two windows of this test type.",
                               labels=ids)
    next_due = GaugeMetricFamily(
        "ssd_selftest_next_due_timestamp_seconds",
        "When the scheduler next starts this test on the drive: the start of its next window, or of the current "
        "one (in the past) while it is due and not yet started.", labels=ids)
    completed = GaugeMetricFamily(
        "ssd_selftest_schedule_last_completed_timestamp_seconds",
        "When the newest test of this type (a long one counts as a short one) ran to its end, as far as the "
        "scheduler knows (tests it saw finish; log entries dated by the drive's power-on hours), or when the "
        "schedule began covering the drive if it knows of none. SSDSelfTestOverdue counts from it.", labels=ids)
    running = GaugeMetricFamily("ssd_selftest_scheduler_running",
                                "1 while a self-test the scheduler started runs on the drive.", labels=ids)
    labels = _labels(drives)
    for row in result.rows:
        row_labels = labels(row)
        if row_labels is None:
            continue
        period.add_metric(row_labels, row.period_seconds)
        next_due.add_metric(row_labels, row.next_due)
        completed.add_metric(row_labels, row.last_completed)
        running.add_metric(row_labels, 1.0 if row.running else 0.0)
    return [started, skipped, results, period, next_due, completed, running]


def api(result: SchedulerResult, drives: Iterable[Any] = ()) -> Dict[str, Any]:
    return {"rows": [asdict(row) for row in result.rows], "started": dict(result.started),
            "skipped": {f"{t}/{r}": n for (t, r), n in result.skipped},
            "results": {f"{t}/{r}": n for (t, r), n in result.results}, "state_error": result.state_error}


def _when(timestamp: Optional[float]) -> str:
    import datetime

    if timestamp is None:
        return "-"
    return datetime.datetime.fromtimestamp(timestamp).strftime("%Y-%m-%d %H:%M")


def _row_words(row: Dict[str, Any]) -> str:
    if row.get("running"):
        left = f", {row['remaining_percent']}% left" if row.get("remaining_percent") is not None else ""
        state = f"running{left}"
    elif row.get("result"):
        state = f"last {row['result']} ({row.get('detail') or ''})"
    else:
        state = "not run yet"
    skipped = f"; skipped: {row['skipped']} at {_when(row.get('skipped_at'))}" if row.get("skipped") else ""
    return f"{row['name']} {row['test']}: {state}; next {_when(row.get('next_due'))}{skipped}"


def status_lines(value: Dict[str, Any]) -> List[str]:
    """``sda short: last passed (Short offline: Completed without error); next 2026-11-28 02:00``."""
    lines = [_row_words(row) for row in value.get("rows", [])]
    if value.get("state_error"):
        lines.append(f"schedule not kept on disk: {value['state_error']}")
    return lines


def page_section(result: SchedulerResult, drives: Iterable[Any], esc: Callable[[str], str]) -> str:
    if not result.rows:
        return ""
    rows = "".join(f"<tr><td>{esc(line)}</td></tr>" for line in status_lines(api(result, drives)))
    return ('<section class="selftest"><h2>Self-test scheduler</h2><table class="drives"><tbody>'
            + rows + "</tbody></table></section>")
