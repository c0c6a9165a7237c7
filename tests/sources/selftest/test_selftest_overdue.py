"""SSDSelfTestOverdue (deploy/prometheus/ssdfleet-selftest-alerts.yml) says what agent/health.py's
``selftest_overdue`` says, checked on a real promtool: the expression is built from the rule's
constants, and the alert's condition is evaluated at times on both sides of the boundary with
the answers the rule gives. The scheduler's exposition carries the series the alert reads, with
the labels of the drive's own series, and passes ``promtool check metrics``."""

from __future__ import annotations

import subprocess

import pytest
import yaml
from prometheus_client import CollectorRegistry, generate_latest

from agent import health
from collectors.model import Drive, DriveReading
from collectors.selftest import view
from tests.conftest import ROOT
from tests.support.rules import (
    PROMTOOL,
    RUNBOOK_BASE,
    _documented_metrics,
    _runbook_anchors,
    alerts_in,
    metric_names,
    needs_promtool,
)

RULES = ROOT / "deploy" / "prometheus" / "ssdfleet-selftest-alerts.yml"
ALERT = alerts_in(RULES)["SSDSelfTestOverdue"]
DAY = 86400


def test_the_expression_is_the_rule():
    assert ALERT["expr"] == (
        "time() - ssd_selftest_schedule_last_completed_timestamp_seconds > "
        f"{health.SELFTEST_OVERDUE_PERIODS} * ssd_selftest_schedule_period_seconds + "
        f"{health.SELFTEST_OVERDUE_GRACE_SECONDS}")
    assert ALERT["labels"]["severity"] == "ticket"
    assert ALERT["annotations"]["runbook_url"] == RUNBOOK_BASE + "ssdselftestoverdue"
    assert "ssdselftestoverdue" in _runbook_anchors()
    assert metric_names(ALERT["expr"]) <= _documented_metrics()


# (hours since the newest test ended, the period in days): around each boundary
CASES = [(53, 1), (54, 1), (55, 1), (24, 1), (0, 1), (343, 7), (344, 7), (345, 7), (198, 4), (199, 4)]


@pytest.mark.parametrize("hours,days,overdue", [
    (53, 1, False), (54, 1, False), (54.01, 1, True), (200, 7, False), (344.5, 7, True),
    (None, 1, None), (10, None, None),
])
def test_the_rule(hours, days, overdue):
    now = 10_000_000.0
    last = None if hours is None else now - hours * 3600
    assert health.selftest_overdue(last, None if days is None else days * DAY, now) is overdue


@needs_promtool
def test_promtool_evaluates_the_alert_as_the_rule_decides(tmp_path):
    """One series per case, each ended ``hours`` before the evaluation time; the alert's
    expression must return exactly the cases the rule calls overdue."""
    eval_hours = 400
    series, expected = [], []
    for index, (hours, days) in enumerate(CASES):
        labels = f'instance="db:9877",device="sd{chr(97 + index)}",serial="S{index}",type="short"'
        last = (eval_hours - hours) * 3600
        series.append({"series": f"ssd_selftest_schedule_last_completed_timestamp_seconds{{{labels}}}",
                       "values": f"{last}x{eval_hours * 12 + 2}"})
        series.append({"series": f"ssd_selftest_schedule_period_seconds{{{labels}}}",
                       "values": f"{days * DAY}x{eval_hours * 12 + 2}"})
        if health.selftest_overdue(float(last), float(days * DAY), float(eval_hours * 3600)):
            expected.append({"labels": "{" + labels + "}", "value": float(hours * 3600)})
    assert 0 < len(expected) < len(CASES)  # both answers occur
    doc = {"rule_files": [], "evaluation_interval": "1m", "tests": [{
        "interval": "5m", "input_series": series,
        "promql_expr_test": [{"expr": ALERT["expr"], "eval_time": f"{eval_hours}h", "exp_samples": expected}]}]}
    path = tmp_path / "overdue_test.yml"
    path.write_text(yaml.safe_dump(doc))
    result = subprocess.run([PROMTOOL, "test", "rules", str(path)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


def _drive(serial: str, device: str) -> Drive:
    return Drive(reading=DriveReading(kind="ata", device=f"/dev/{device}", block_device=device, serial=serial),
                 last_poll={"smartctl": 1.0})


def _result() -> view.SchedulerResult:
    rows = (
        view.Row(identity="S1", name="sda", test="short", period_seconds=DAY, next_due=1_800_000_000.0,
                 last_completed=1_799_990_000.0, result="passed", detail="Short offline: Completed without error"),
        view.Row(identity="S1", name="sda", test="long", period_seconds=7 * DAY, next_due=1_800_100_000.0,
                 last_completed=1_799_000_000.0, running=True, remaining_percent=60),
        view.Row(identity="GONE", name="sdz", test="short", period_seconds=DAY, next_due=1.0, last_completed=1.0),
    )
    return view.SchedulerResult(rows=rows, started=(("long", 1), ("short", 3)),
                                skipped=((("short", "busy"), 4), (("short", "standby"), 1)),
                                results=((("short", "aborted"), 1), (("short", "passed"), 2)))


class _Families:
    def __init__(self, families):
        self._families = families

    def collect(self):
        return iter(self._families)


def test_exposition_labels_series_as_the_drive_and_passes_promtool(tmp_path):
    drives = [_drive("S1", "sda")]
    registry = CollectorRegistry()
    registry.register(_Families(view.families(_result(), drives)))
    get = registry.get_sample_value
    ids = {"device": "sda", "serial": "S1"}
    assert get("ssd_selftest_schedule_period_seconds", dict(ids, type="long")) == 7 * DAY
    assert get("ssd_selftest_schedule_last_completed_timestamp_seconds", dict(ids, type="short")) == 1_799_990_000.0
    assert get("ssd_selftest_next_due_timestamp_seconds", dict(ids, type="short")) == 1_800_000_000.0
    assert get("ssd_selftest_scheduler_running", dict(ids, type="long")) == 1.0
    assert get("ssd_selftest_scheduler_running", dict(ids, type="short")) == 0.0
    assert get("ssd_selftest_scheduler_started_total", {"type": "short"}) == 3
    assert get("ssd_selftest_scheduler_skipped_total", {"type": "short", "reason": "busy"}) == 4
    assert get("ssd_selftest_scheduler_results_total", {"type": "short", "result": "aborted"}) == 1
    # a drive no longer in the inventory's merge has no series
    assert get("ssd_selftest_schedule_period_seconds", {"device": "sdz", "serial": "GONE", "type": "short"}) is None
    text = generate_latest(registry)
    names = {line.split()[2] for line in text.decode().splitlines() if line.startswith("# TYPE")}
    assert names - {"ssd_selftest_scheduler_started", "ssd_selftest_scheduler_skipped",
                    "ssd_selftest_scheduler_results"} <= _documented_metrics()
    if PROMTOOL:
        path = tmp_path / "metrics.txt"
        path.write_bytes(text)
        result = subprocess.run([PROMTOOL, "check", "metrics"], input=text, capture_output=True, timeout=60)
        assert result.returncode == 0, result.stdout + result.stderr


def test_status_and_page_say_each_drive_and_type():
    result = _result()
    lines = view.status_lines(view.api(result, []))
    assert lines[0].startswith("sda short: last passed (Short offline: Completed without error); next ")
    assert lines[1].startswith("sda long: running, 60% left; next ")
    page = view.page_section(result, [], lambda s: s.replace("<", "&lt;"))
    assert "Self-test scheduler" in page and "sda long: running, 60% left" in page
    assert view.page_section(view.SchedulerResult(), [], str) == ""
