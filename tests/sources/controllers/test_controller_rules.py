"""The RAID controller alert rules (deploy/prometheus/ssdfleet-controller-alerts.yml) against
collectors/controller_health.py, the runbook and the metrics catalogue. promtool checks the file
here; its unit tests (tests/rules/controller_test.yml) run with the others in tests/test_rules.py,
one promtool call per file."""

from __future__ import annotations

import re

import pytest

from collectors import controller_health as rules
from collectors.controller_model import BATTERY_STATES, VOLUME_STATES, Battery, CachePolicy, VirtualDisk
from tests.conftest import ROOT
from tests.support.rules import (
    METRICS_DOC,
    RUNBOOK_BASE,
    _documented_metrics,
    _runbook_anchors,
    alerts_in,
    metric_names,
    needs_promtool,
    promtool_check_rules,
)

RULES = ROOT / "deploy" / "prometheus" / "ssdfleet-controller-alerts.yml"
ALERTS = alerts_in(RULES)


@needs_promtool
def test_promtool_checks_the_rule_file():
    promtool_check_rules(RULES)


def test_prometheus_config_loads_it_and_unit_tests_cover_every_alert():
    assert "ssdfleet-controller-alerts.yml" in (ROOT / "deploy/prometheus/prometheus.yml").read_text()
    tested = set(re.findall(r"alertname: (\w+)", (ROOT / "tests/rules/controller_test.yml").read_text()))
    assert tested == set(ALERTS)


@pytest.mark.parametrize("name", sorted(ALERTS))
def test_each_alert_is_labelled_linked_and_reads_documented_series(name):
    rule = ALERTS[name]
    assert rule["labels"]["severity"] in ("page", "ticket")
    assert rule["annotations"]["runbook_url"] == RUNBOOK_BASE + name.lower()
    assert name.lower() in _runbook_anchors()
    documented = _documented_metrics()
    assert metric_names(rule["expr"]) <= documented, (metric_names(rule["expr"]) - documented, METRICS_DOC)


def test_the_learn_cycle_notice_is_the_health_rule():
    expr = ALERTS["SSDControllerLearnCycleSoon"]["expr"]
    assert f"< {rules.LEARN_NOTICE_SECONDS:.0f}" in expr and ">= 0" in expr
    now = 1_700_000_000.0
    for ahead, fires in ((rules.LEARN_NOTICE_SECONDS - 1, True), (rules.LEARN_NOTICE_SECONDS, False), (0, True),
                         (-1, False)):
        assert rules.learn_soon(now + ahead, now) is fires, ahead


def test_volume_states_page_and_ticket_as_the_health_rule_says():
    paging = set(re.search(r'state=~"([^"]+)"', ALERTS["SSDControllerVolumeDegraded"]["expr"]).group(1).split("|"))
    ticket = {re.search(r'state="([^"]+)"', ALERTS["SSDControllerVolumeRebuilding"]["expr"]).group(1)}
    assert ALERTS["SSDControllerVolumeDegraded"]["labels"]["severity"] == "page"
    assert ALERTS["SSDControllerVolumeRebuilding"]["labels"]["severity"] == "ticket"
    for state in VOLUME_STATES:
        severity = rules.volume_severity(VirtualDisk(controller="0", id="0", state=state))
        assert (severity == rules.CRITICAL) == (state in paging), state
        assert (severity == rules.WARNING) == (state in ticket), state


def test_battery_states_that_alert_are_those_that_cause_write_through():
    failing = set(re.search(r'state=~"([^"]+)"', ALERTS["SSDControllerBatteryFailed"]["expr"]).group(1).split("|"))
    for state in BATTERY_STATES:
        cause = rules.write_through_cause([Battery(controller="0", kind="bbu", state=state)])
        if state in failing:
            assert cause is not None, state
    assert rules.write_through_cause([Battery(controller="0", kind="bbu", state="optimal")]) is None
    assert rules.write_through_cause([Battery(controller="0", kind="bbu", state="optimal", learn_active=True)]) \
        == "battery learn cycle"
    assert rules.write_through_cause([Battery(controller="0", kind="bbu", state="unknown",
                                              replacement_required=True)]) == "battery failed"


@pytest.mark.parametrize("write, bad_battery, disk_cache, protected, unprotected", [
    ("write-through", None, "enabled", None, False),
    ("write-back", False, "disabled", None, False),
    ("write-back", False, "enabled", None, True),  # drives' caches on, protection unknown
    ("write-back", False, "enabled", True, False),  # ... behind drives with capacitors
    ("write-back", True, "disabled", True, True),  # CachedBadBBU: the controller's cache itself
    ("always-write-back", True, "default", None, True),
    ("write-back", False, "default", None, False),  # the drives keep their own setting: unknown
])
def test_volatile_cache_unprotected(write, bad_battery, disk_cache, protected, unprotected):
    volume = VirtualDisk(controller="0", id="0", disk_cache=disk_cache,
                         current_cache=CachePolicy(write=write, cache_when_bad_battery=bad_battery))
    assert rules.volatile_cache_unprotected(volume, protected) is unprotected
    assert rules.volatile_cache_unprotected(VirtualDisk(controller="0", id="0"), protected) is None
