"""The self-test and error-log alert rules (deploy/prometheus/ssdfleet-selftest-alerts.yml)
against agent/health.py, the runbook, the metrics catalogue and the exposition of real captures.
promtool checks the file here; its unit tests (tests/rules/selftest_test.yml) run with the others
in tests/test_rules.py, one promtool call per file."""

from __future__ import annotations

import re

import pytest

from agent import health
from agent.metrics import make_registry
from collectors.model import Drive, Snapshot
from collectors.smartctl import parse_smartctl_json, parse_smartctl_text_reading
from tests.conftest import ROOT, read_fixture
from tests.support.rules import (
    RUNBOOK_BASE,
    _documented_metrics,
    _runbook_anchors,
    alerts_in,
    metric_names,
    needs_promtool,
    promtool_check_rules,
)

RULES = ROOT / "deploy" / "prometheus" / "ssdfleet-selftest-alerts.yml"
ALERTS = alerts_in(RULES)


@needs_promtool
def test_promtool_checks_the_rule_file():
    promtool_check_rules(RULES)


def test_prometheus_config_loads_it_packaging_ships_it_and_unit_tests_cover_every_alert():
    assert "ssdfleet-selftest-alerts.yml" in (ROOT / "deploy/prometheus/prometheus.yml").read_text()
    assert 'deploy/prometheus/ssdfleet-*.yml' in (ROOT / "packaging/build.sh").read_text()
    tested = set(re.findall(r"alertname: (\w+)", (ROOT / "tests/rules/selftest_test.yml").read_text()))
    assert tested == set(ALERTS) == {"SSDSelfTestFailed", "SSDErrorLogGrowing", "SSDAttributeFailingNow", "SSDSelfTestOverdue"}


@pytest.mark.parametrize("name", sorted(ALERTS))
def test_each_alert_is_labelled_linked_and_reads_documented_series(name):
    rule = ALERTS[name]
    assert rule["labels"]["severity"] in ("page", "ticket")
    assert rule["annotations"]["runbook_url"] == RUNBOOK_BASE + name.lower()
    assert name.lower() in _runbook_anchors()
    assert metric_names(rule["expr"]) <= _documented_metrics()


def _exported(name: str, reading):
    drive = Drive(reading=reading, last_poll={"smartctl": 1.0})
    registry = make_registry(lambda: Snapshot(drives=(drive,)))
    return registry.get_sample_value(name, {"device": "sda", "serial": reading.identity})


@pytest.mark.parametrize("name,fails", [
    ("smartctl-text/gsmartcontrol__smartmon-site_IC35L120AVV207-1.txt", True),  # Completed: read failure
    ("smartctl-text-bsdhw/bsdhw__HDD_Seagate_ST8000AS0002-1NA17Z_6ED8A353F360.txt", False),  # Aborted by host
    ("smartctl-json/scrutiny__smart-fail2.json", False),  # failures in the log, the newest test passed
])
def test_the_page_fires_exactly_when_the_health_rule_says_the_last_test_failed(name: str, fails: bool):
    data = read_fixture(name)
    reading = (parse_smartctl_json(data, "/dev/sda") if name.endswith(".json")
               else parse_smartctl_text_reading(data.decode("utf-8", "replace"), "/dev/sda"))
    assert health.selftest_failed(reading.smart_logs) is fails
    assert ALERTS["SSDSelfTestFailed"]["expr"] == "ssd_selftest_last_failed == 1"
    assert _exported("ssd_selftest_last_failed", reading) == (1.0 if fails else 0.0)
    assert ALERTS["SSDSelfTestFailed"]["labels"]["severity"] == "page"
    assert (health.selftest_reason(reading.smart_logs) is not None) is fails
