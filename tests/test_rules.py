"""Prometheus rules and scrape configuration under deploy/prometheus.

Runs the real ``promtool`` (Debian's prometheus package; CI installs it): ``check rules``,
``check config`` and the unit tests in tests/rules/. The other tests read the rule files as
data: every alert is labelled, annotated and linked to an existing runbook section, every metric
a rule reads is documented in docs/metrics.md, and every alert and recording rule is exercised
by a unit test.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
PROM_DIR = ROOT / "deploy" / "prometheus"
ALERTS = PROM_DIR / "ssdfleet-alerts.yml"
RECORDING = PROM_DIR / "ssdfleet-recording.yml"
RUNBOOKS = ROOT / "docs" / "runbooks.md"
METRICS_DOC = ROOT / "docs" / "metrics.md"
UNIT_TESTS = sorted((ROOT / "tests" / "rules").glob("*.yml"))
RUNBOOK_BASE = "https://github.com/ssdfleet/ssdfleet/blob/main/docs/runbooks.md#"

PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(PROMTOOL is None, reason="promtool is not installed (Debian package prometheus)")

# Alerts about the agent rather than one drive: their summary names the host (and the device
# where there is one) but there is no serial to name.
AGENT_ALERTS = {"SSDFleetAgentDown", "SSDFleetCollectorFailing", "SSDFleetProbeStuck"}


def _promtool(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run(
        [PROMTOOL, *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )


def _rules(path: Path) -> list:
    doc = yaml.safe_load(path.read_text())
    return [rule for group in doc["groups"] for rule in group["rules"]]


def _alerts() -> list:
    return [r for r in _rules(ALERTS) if "alert" in r]


def _recorded_names() -> set:
    return {r["record"] for path in (ALERTS, RECORDING) for r in _rules(path) if "record" in r}


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a Markdown heading: lower case, punctuation dropped, spaces to '-'."""
    text = heading.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _runbook_anchors() -> set:
    anchors = set()
    for line in RUNBOOKS.read_text().splitlines():
        m = re.match(r"^#{1,6}\s+(.*)$", line)
        if m:
            anchors.add(github_anchor(m.group(1)))
    return anchors


def _documented_metrics() -> set:
    names = set()
    for line in METRICS_DOC.read_text().splitlines():
        m = re.match(r"^\|\s*`([a-z_:][a-z0-9_:]*)`\s*\|", line)
        if m:
            names.add(m.group(1))
    return names


_PROMQL_WORDS = {"and", "or", "unless", "by", "without", "on", "ignoring", "group_left",
                 "group_right", "offset", "bool", "inf", "nan"}


def metric_names(expr: str) -> set:
    """Metric names an expression selects: identifiers that are not functions, keywords,
    label names (inside {...} or a by/without/on/ignoring list) or durations."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)  # string literals
    text = re.sub(r"\{[^}]*\}", "", text)  # label matchers
    text = re.sub(r"\[[^\]]*\]", "", text)  # range and subquery durations
    text = re.sub(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", text)
    names = set()
    for m in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*", text):
        name = m.group(0)
        rest = text[m.end():].lstrip()
        if rest.startswith("("):  # a function call
            continue
        if name.lower() in _PROMQL_WORDS:
            continue
        names.add(name)
    return names


# ---------------------------------------------------------------- promtool


@needs_promtool
def test_promtool_check_rules_is_clean():
    result = _promtool("check", "rules", str(ALERTS), str(RECORDING))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "FAILED" not in result.stdout + result.stderr


@needs_promtool
def test_promtool_check_config_is_clean(tmp_path):
    # Work on a copy so the relative rule_files and file_sd paths resolve exactly as they would
    # for a user who copies the directory, whatever the current directory is.
    copy = tmp_path / "prometheus"
    shutil.copytree(PROM_DIR, copy)
    result = _promtool("check", "config", str(copy / "prometheus.yml"), cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 rule files found" in result.stdout + result.stderr


@needs_promtool
def test_promtool_check_config_reads_the_file_sd_targets(tmp_path):
    copy = tmp_path / "prometheus"
    shutil.copytree(PROM_DIR, copy)
    (copy / "targets" / "ssdfleet.json").write_text('[{"targets": 5}]')
    result = _promtool("check", "config", str(copy / "prometheus.yml"), cwd=tmp_path)
    assert result.returncode != 0, "promtool should have rejected a broken target file"


@needs_promtool
def test_promtool_unit_tests_pass():
    assert UNIT_TESTS, "no promtool unit tests in tests/rules/"
    result = _promtool("test", "rules", *[str(p.relative_to(ROOT)) for p in UNIT_TESTS])
    assert result.returncode == 0, result.stdout + result.stderr


# ---------------------------------------------------------------- the alert file as data


def test_every_alert_is_labelled_and_annotated():
    alerts = _alerts()
    assert len(alerts) >= 15
    anchors = _runbook_anchors()
    for rule in alerts:
        name = rule["alert"]
        assert rule.get("labels", {}).get("severity") in {"page", "ticket"}, name
        ann = rule.get("annotations", {})
        assert "{{ $labels.instance }}" in ann.get("summary", ""), name
        if name not in AGENT_ALERTS:
            assert "{{ $labels.device }}" in ann["summary"], name
            assert "{{ $labels.serial }}" in ann["summary"], name
        assert ann.get("description", "").strip(), name
        url = ann.get("runbook_url", "")
        assert url.startswith(RUNBOOK_BASE), name
        anchor = url[len(RUNBOOK_BASE):]
        assert anchor in anchors, f"{name}: no heading in docs/runbooks.md gives #{anchor}"


def test_alert_names_are_unique():
    names = [r["alert"] for r in _alerts()]
    assert len(names) == len(set(names))


def test_the_required_alerts_exist_with_their_severity():
    by_name = {r["alert"]: r for r in _alerts()}
    expected = {
        "SSDLifeLeftLow": "ticket",
        "SSDLifeLeftCritical": "page",
        "SSDWearOutWithin30Days": "ticket",
        "SSDWearOutWithin7Days": "page",
        "SSDWriteCacheDisabled": "page",
        "SSDReadOnly": "page",
        "SSDWriteReduced": "page",
        "SSDSmartHealthFailed": "page",
        "SSDNVMeCriticalWarning": "page",
        "SSDSpareBelowThreshold": "page",
        "SSDDefectsGrowing": "ticket",
        "SSDMediaErrorsGrowing": "page",
        "SSDTemperatureAboveLimit": "page",
        "SSDWriteLatencyHigh": "ticket",
        "SSDUtilisationHigh": "ticket",
        "SSDFleetAgentDown": "ticket",
        "SSDFleetCollectorFailing": "ticket",
        "SSDFleetDataStale": "ticket",
    }
    for name, severity in expected.items():
        assert name in by_name, name
        assert by_name[name]["labels"]["severity"] == severity, name


def test_every_metric_a_rule_reads_is_documented():
    documented = _documented_metrics()
    assert "ssd_life_left_ratio" in documented  # the doc parser works
    allowed = documented | _recorded_names() | {"up"}
    for path in (ALERTS, RECORDING):
        for rule in _rules(path):
            unknown = metric_names(rule["expr"]) - allowed
            assert not unknown, f"{path.name} {rule.get('alert') or rule.get('record')}: {unknown}"


def test_metric_name_extraction():
    expr = ('(ssd_temperature_celsius{sensor=~"drive|flash"} > 70) unless on(instance, device) '
            'max without (sensor) (rate(ssd_io_busy_seconds_total[5m])) and ssd:x:rate5m')
    assert metric_names(expr) == {"ssd_temperature_celsius", "ssd_io_busy_seconds_total", "ssd:x:rate5m"}


def test_recording_rule_names_follow_level_metric_operations():
    for rule in _rules(RECORDING):
        parts = rule["record"].split(":")
        assert len(parts) == 3 and all(parts), rule["record"]
        assert parts[0] in {"ssd", "instance", "job"}, rule["record"]


def test_runbook_has_a_section_for_every_alert():
    anchors = _runbook_anchors()
    for rule in _alerts():
        assert github_anchor(rule["alert"]) in anchors, rule["alert"]


# ---------------------------------------------------------------- coverage of the unit tests


def _unit_test_docs() -> list:
    return [yaml.safe_load(p.read_text()) for p in UNIT_TESTS]


def test_every_alert_fires_and_stays_silent_in_a_unit_test():
    fired, silent = set(), set()
    for doc in _unit_test_docs():
        for case in doc.get("tests", []):
            for check in case.get("alert_rule_test", []) or []:
                (fired if check.get("exp_alerts") else silent).add(check["alertname"])
    for rule in _alerts():
        assert rule["alert"] in fired, f"{rule['alert']} never fires in tests/rules"
        assert rule["alert"] in silent, f"{rule['alert']} is never shown silent in tests/rules"


def test_every_recording_rule_is_checked_in_a_unit_test():
    exprs = " ".join(
        check["expr"]
        for doc in _unit_test_docs()
        for case in doc.get("tests", [])
        for check in case.get("promql_expr_test", []) or []
    )
    checked = metric_names(exprs)
    for name in _recorded_names():
        assert name in checked, f"{name} has no promql_expr_test"


def test_unit_tests_load_the_shipped_rule_files():
    for path, doc in zip(UNIT_TESTS, _unit_test_docs()):
        files = {(path.parent / f).resolve() for f in doc["rule_files"]}
        assert files & {ALERTS.resolve(), RECORDING.resolve()}, path.name
