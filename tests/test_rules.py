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
import time
from pathlib import Path

import pytest
import yaml

from tests.support.rules import (  # noqa: F401 (RUNBOOKS and METRICS_DOC for tests that read them)
    METRICS_DOC,
    PROMTOOL,
    RUNBOOK_BASE,
    RUNBOOKS,
    _documented_metrics,
    _runbook_anchors,
    github_anchor,
    metric_names,
    needs_promtool,
    parse_duration,
)

ROOT = Path(__file__).resolve().parent.parent
PROM_DIR = ROOT / "deploy" / "prometheus"
ALERTS = PROM_DIR / "ssdfleet-alerts.yml"
RECORDING = PROM_DIR / "ssdfleet-recording.yml"
UNIT_TESTS = sorted((ROOT / "tests" / "rules").glob("*.yml"))


# Alerts about the agent rather than one drive: their summary names the host (and the device
# where there is one) but there is no serial to name.
AGENT_ALERTS = {"SSDFleetAgentDown", "SSDFleetCollectorFailing", "SSDFleetProbeStuck"}


def _promtool(*args: str, cwd: Path = ROOT, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(
        [PROMTOOL, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False
    )


# Seconds one `promtool test rules FILE` took (promtool 2.42), measured one file at a time on
# this project's 2-core machine while other jobs kept it busy (load average 5 to 7; 198 s for
# all 13, where one call over all of them took 95 s on a quiet machine). Each call's timeout is
# TIMEOUT_FACTOR times its figure (at least MIN_TIMEOUT): at load average 8.7 with a second
# test run beside it the files took 1.1 to 3.5 times these figures (life_and_wear 158 s), still
# a third of their timeouts, and a hung promtool still ends. A file not listed here is given
# UNMEASURED_COST; measure it (the test prints each file's time) and add it.
PROMTOOL_TEST_SECONDS = {
    "agent_test.yml": 4.8,
    "drive_verdicts_test.yml": 12.0,
    "flush_integrity_test.yml": 0.7,
    "flush_test.yml": 17.0,
    "holds_test.yml": 0.7,
    "life_and_wear_test.yml": 51.0,
    "performance_test.yml": 32.5,
    "recording_test.yml": 21.9,
    "scaling_test.yml": 5.8,
    "syncwrite_test.yml": 20.3,
    "temperature_test.yml": 1.9,
    "write_cache_test.yml": 1.4,
    "young_series_test.yml": 30.1,
}
TIMEOUT_FACTOR = 10
MIN_TIMEOUT = 60.0
UNMEASURED_COST = 60.0


def promtool_test_timeout(name: str) -> float:
    return max(MIN_TIMEOUT, TIMEOUT_FACTOR * PROMTOOL_TEST_SECONDS.get(name, UNMEASURED_COST))


def _rules(path: Path) -> list:
    doc = yaml.safe_load(path.read_text())
    return [rule for group in doc["groups"] for rule in group["rules"]]


def _alerts() -> list:
    return [r for r in _rules(ALERTS) if "alert" in r]


def _recorded_names() -> set:
    return {r["record"] for path in (ALERTS, RECORDING) for r in _rules(path) if "record" in r}








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
    assert "4 rule files found" in result.stdout + result.stderr  # recording, alerts, controller, self-test alerts


@needs_promtool
def test_promtool_check_config_reads_the_file_sd_targets(tmp_path):
    copy = tmp_path / "prometheus"
    shutil.copytree(PROM_DIR, copy)
    (copy / "targets" / "ssdfleet.json").write_text('[{"targets": 5}]')
    result = _promtool("check", "config", str(copy / "prometheus.yml"), cwd=tmp_path)
    assert result.returncode != 0, "promtool should have rejected a broken target file"


def test_there_are_promtool_unit_tests():
    assert UNIT_TESTS, "no promtool unit tests in tests/rules/"


@needs_promtool
@pytest.mark.parametrize("path", UNIT_TESTS, ids=[p.name for p in UNIT_TESTS])
def test_promtool_unit_tests_pass(path: Path, capsys):
    """One promtool call per file, so each timeout fits the file it guards; its time goes to
    the test log, so PROMTOOL_TEST_SECONDS can be checked against it."""
    timeout = promtool_test_timeout(path.name)
    started = time.monotonic()
    result = _promtool("test", "rules", str(path.relative_to(ROOT)), timeout=timeout)
    took = time.monotonic() - started
    with capsys.disabled():
        print(f"\n[promtool] test rules {path.name}: {took:.1f} s (timeout {timeout:.0f} s)")
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
    assert metric_names("(ssd_x - ssd_x offset 1d >= 0) / 86400 or ssd_y offset 1h30m") == {"ssd_x", "ssd_y"}
    assert metric_names("ssd_x2 - 1e-9 * ssd_y / 2.5E+3") == {"ssd_x2", "ssd_y"}


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


LOOKBACK_SECONDS = 300  # Prometheus' default lookback: a sample is visible for 5 minutes


def sample_presence(values: str) -> list:
    """One entry per sample slot of a promtool ``values`` string: True for a sample, False
    for a missing one (``_``), None for a stale marker. ``a+bxN`` and ``axN`` are N+1
    samples, ``_xN`` is N missing ones."""
    slots: list = []
    for token in str(values).split():
        m = re.fullmatch(r"(.*?)x(\d+)", token)
        if m and m.group(1) == "_":
            slots += [False] * int(m.group(2))
        elif m:
            slots += [True] * (int(m.group(2)) + 1)
        elif token == "_":
            slots.append(False)
        elif token == "stale":
            slots.append(None)
        else:
            slots.append(True)
    return slots


def series_live_at(values: str, interval: float, t: float) -> bool:
    """Does an input series have a sample a query at time t sees (the latest sample at or
    before t, not a stale marker, at most LOOKBACK_SECONDS old)?"""
    latest = None
    for i, present in enumerate(sample_presence(values)):
        if i * interval > t:
            break
        if present is None:
            latest = None
        elif present:
            latest = i * interval
    return latest is not None and t - latest <= LOOKBACK_SECONDS


def ordered_metric_names(expr: str) -> list:
    """metric_names() in order of first appearance: the first is what the rule is about."""
    names = metric_names(expr)
    order: list = []
    for m in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*", expr):
        if m.group(0) in names and m.group(0) not in order:
            order.append(m.group(0))
    return order


def _recording_inputs() -> dict:
    """recorded name -> the metric-name sets of the rules that record it."""
    out: dict = {}
    for path in (ALERTS, RECORDING):
        for rule in _rules(path):
            if "record" in rule:
                out.setdefault(rule["record"], []).append(metric_names(rule["expr"]))
    return out


def silent_after_for(docs: list, alerts: list) -> set:
    """Alerts that some unit test expects to be silent (``exp_alerts: []``) at an eval_time at
    or after the alert's ``for:``, while a series of the metric the alert is about exists at
    that time: an input series, or a recorded series all of whose inputs exist then."""
    recorded = _recording_inputs()
    subject = {r["alert"]: ordered_metric_names(r["expr"])[0] for r in alerts}
    hold = {r["alert"]: parse_duration(r.get("for")) for r in alerts}
    found: set = set()
    for doc in docs:
        default_interval = doc.get("evaluation_interval", "1m")
        for case in doc.get("tests", []):
            interval = parse_duration(case.get("interval", default_interval))
            inputs: dict = {}
            for item in case.get("input_series", []) or []:
                name = item["series"].split("{", 1)[0].strip()
                inputs.setdefault(name, []).append(item["values"])

            def exists(name: str, t: float, inputs: dict = inputs, interval: float = interval, depth: int = 0) -> bool:
                if any(series_live_at(v, interval, t) for v in inputs.get(name, [])):
                    return True
                if depth < 5 and name in recorded:
                    return any(
                        reads and all(exists(m, t, inputs, interval, depth + 1) for m in reads) for reads in recorded[name]
                    )
                return False

            for check in case.get("alert_rule_test", []) or []:
                name = check["alertname"]
                if name not in subject or check.get("exp_alerts"):
                    continue
                t = parse_duration(check["eval_time"])
                if t >= hold[name] and exists(subject[name], t):
                    found.add(name)
    return found


def test_every_alert_fires_and_stays_silent_in_a_unit_test():
    """Fires: some test expects the alert. Silent: some test expects nothing from it AFTER its
    for: has elapsed, with a series of the metric it watches present at that moment (a check
    before the for: ends, or on a series that no longer exists, proves nothing)."""
    docs = _unit_test_docs()
    alerts = _alerts()
    fired = {
        check["alertname"]
        for doc in docs
        for case in doc.get("tests", [])
        for check in case.get("alert_rule_test", []) or []
        if check.get("exp_alerts")
    }
    silent = silent_after_for(docs, alerts)
    for rule in alerts:
        assert rule["alert"] in fired, f"{rule['alert']} never fires in tests/rules"
        assert rule["alert"] in silent, (
            f"{rule['alert']} is never shown silent in tests/rules after its for: "
            f"({rule.get('for', '0m')}) with a {ordered_metric_names(rule['expr'])[0]} series present"
        )


def test_silence_check_rejects_weak_evidence():
    """The checker itself: an empty expectation before the for: ends, after the series is
    gone, or on another metric does not count; one after the for: on a live series does."""
    alerts = [{"alert": "A", "expr": "ssd_x > 1", "for": "10m"}]

    def doc(values: str, eval_time: str, series: str = "ssd_x") -> list:
        return [{"evaluation_interval": "1m", "tests": [{
            "interval": "1m",
            "input_series": [{"series": series + '{device="sda"}', "values": values}],
            "alert_rule_test": [{"eval_time": eval_time, "alertname": "A", "exp_alerts": []}],
        }]}]

    assert silent_after_for(doc("0x30", "10m"), alerts) == {"A"}
    assert silent_after_for(doc("0x30", "9m"), alerts) == set()  # for: not elapsed
    assert silent_after_for(doc("0x5", "20m"), alerts) == set()  # series gone (last sample 5m)
    assert silent_after_for(doc("0x30", "20m", series="ssd_y"), alerts) == set()  # other metric
    assert silent_after_for(doc("0x8 stale _x20", "15m"), alerts) == set()  # stale marker
    assert parse_duration("1h30m") == 5400 and parse_duration(None) == 0
    with pytest.raises(ValueError):
        parse_duration("1hour")
    assert sample_presence("1x2 _ _x2 3+1x1 stale") == [True, True, True, False, False, False, True, True, None]


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
        assert files & {ALERTS.resolve(), RECORDING.resolve(), (PROM_DIR / "ssdfleet-controller-alerts.yml").resolve(),
                        (PROM_DIR / "ssdfleet-selftest-alerts.yml").resolve()}, \
            path.name


def test_unit_tests_evaluate_the_groups_in_file_order():
    """promtool orders groups at random without group_eval_order, and the shipped groups chain
    (5-minute rates -> hourly figures -> the day once an hour -> the 4-minute day figures ->
    alerts): every test file lists every group it loads, in the rule files' order
    (scripts/rule_test_order.py writes the lists)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("rule_test_order", ROOT / "scripts" / "rule_test_order.py")
    order = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(order)
    for path, doc in zip(UNIT_TESTS, _unit_test_docs()):
        assert doc.get("group_eval_order") == order.group_order(path), (
            f"{path.name}: run python scripts/rule_test_order.py")
    # The check can fail: a file without the list, or with a group missing, is rewritten.
    text = "rule_files:\n  - x.yml\n\nevaluation_interval: 1m\n\ntests: []\n"
    written = order.with_order(text, ["a", "b"])
    assert "group_eval_order:\n  - a\n  - b\n" in written
    assert order.with_order(written, ["a", "b"]) == written
    assert "  - c\n" in order.with_order(written, ["a", "b", "c"])
    with pytest.raises(ValueError):
        order.with_order("tests: []\n", ["a"])


def test_recording_groups_read_only_groups_above_them():
    """The file order is the evaluation order the unit tests use: a recorded series read by a
    rule must be recorded by a group above it (or earlier in its own group)."""
    doc = yaml.safe_load(RECORDING.read_text())
    recorded_where = {}
    for index, group in enumerate(doc["groups"]):
        for rule in group["rules"]:
            recorded_where.setdefault(rule.get("record"), index)
    for index, group in enumerate(doc["groups"]):
        seen = set()
        for rule in group["rules"]:
            for name in metric_names(rule["expr"]):
                if name in recorded_where and name not in seen:
                    assert recorded_where[name] < index, (
                        f"{group['name']}: {rule.get('record')} reads {name}, recorded below it")
            seen.add(rule.get("record"))
