"""End to end: a drive's write cache switched off pages the on-call, and nobody else.

Every part is the real one: the ``ssdfleet agent`` process polling a fake host (tests/fakehost.py,
whose fake ``hdparm`` replays captured output), a Debian ``prometheus`` scraping it every second
with the SHIPPED alert and recording rules, and a Debian ``prometheus-alertmanager`` with the
SHIPPED routing, whose two webhook receivers (pager, tickets) point at an HTTP server in this
test. Prometheus sends its alerts to that Alertmanager.

Only durations differ from what ships, so that the test takes seconds instead of minutes:
rule groups are evaluated every second, the ``for:`` of SSDWriteCacheDisabled is 3 s instead
of 5 m, and Alertmanager's group_wait / group_interval are 1 s. Every expression, label,
matcher and receiver is the shipped one; :func:`test_shortened_rules_differ_only_in_durations`
checks that for the rules.

The time from the flip of the fake drive's cache to the page reaching the pager receiver is
printed (and recorded as a junit property), with where the time went.
"""

from __future__ import annotations

import copy
import re
import time

import yaml

from tests.conftest import fixture_path
from tests.fakehost import AgentProcess, build_default_host
from tests.livefleet import FAST_INTERVALS
from tests.promstack import alertmanager_factory, prometheus_factory  # noqa: F401 (fixtures)
from tests.support.alerting import (  # noqa: F401 (paging_stack, webhook: fixtures)
    _FULL_WINDOW_RATE,
    ALERT_RULES,
    RECORDING_RULES,
    _alert_state,
    _alerts_text,
    _wait_for,
    paging_stack,
    shortened_rules,
    wait_for_page,
    wait_until_paging_works,
    webhook,
)
from tests.support.e2e import SDA_SERIAL

ALERT = "SSDWriteCacheDisabled"
ALERT_FOR = "3s"  # shipped: 5m
QUIET_SECONDS = 6.0  # before the flip: longer than for + group_wait + a scrape and an evaluation
PAGE_TIMEOUT = 45.0


# ------------------------------------------------------------------ the shipped files, faster


_ANY_FULL_WINDOW_RATE = re.compile(r"increase\((\w+)\[(?:5m|5s)\]\) / (?:300|5) and (\w+) offset (?:5m|5s)")


def _without_durations(rules: dict) -> dict:
    stripped = copy.deepcopy(rules)
    for group in stripped["groups"]:
        group.pop("interval", None)
        for rule in group["rules"]:
            rule.pop("for", None)
            if "expr" in rule:
                rule["expr"] = _ANY_FULL_WINDOW_RATE.sub(r"increase(\1[W]) / W and \2 offset W", rule["expr"])
    return stripped


# ------------------------------------------------------------------ the receivers' end


# ------------------------------------------------------------------ tests


def test_shortened_rules_differ_only_in_durations(tmp_path):
    for source, alert_for in ((ALERT_RULES, {ALERT: ALERT_FOR}), (RECORDING_RULES, {})):
        shipped = yaml.safe_load(source.read_text(encoding="utf-8"))
        fast = yaml.safe_load(shortened_rules(source, tmp_path / source.name, alert_for).read_text(encoding="utf-8"))
        assert _without_durations(fast) == _without_durations(shipped)
        assert [g["interval"] for g in fast["groups"]] == ["1s"] * len(shipped["groups"])
        # every full-window 5-minute rate is shortened, none is left at 5 minutes
        exprs = [r["expr"] for g in fast["groups"] for r in g["rules"]]
        shipped_exprs = [r["expr"] for g in shipped["groups"] for r in g["rules"]]
        assert sum(len(_FULL_WINDOW_RATE.findall(e)) for e in shipped_exprs) == sum(e.count("offset 5s") for e in exprs)
        assert not any(_FULL_WINDOW_RATE.search(e) for e in exprs)
    fast = {r["alert"]: r for g in yaml.safe_load((tmp_path / ALERT_RULES.name).read_text())["groups"] for r in g["rules"]}
    shipped = {r["alert"]: r for g in yaml.safe_load(ALERT_RULES.read_text())["groups"] for r in g["rules"]}
    assert fast[ALERT]["for"] == ALERT_FOR and shipped[ALERT]["for"] != ALERT_FOR
    # the other alerts keep their shipped wait
    assert all(fast[a].get("for") == shipped[a].get("for") for a in fast if a != ALERT)


def _agent_cache_off(agent: AgentProcess) -> bool:
    text = agent.get("/metrics").decode()
    return f'ssd_write_cache_enabled{{device="sda",serial="{SDA_SERIAL}"}} 0.0' in text


def test_write_cache_off_pages_the_on_call(
    tmp_path,
    prometheus_factory,  # noqa: F811 (the fixture imported above)
    alertmanager_factory,  # noqa: F811
    webhook,  # noqa: F811
    capsys,
    record_property,
):
    host = build_default_host(tmp_path / "db1")
    agent = AgentProcess(host, FAST_INTERVALS)
    try:
        agent.wait_ready()
        prom = paging_stack(tmp_path, agent, prometheus_factory, alertmanager_factory, webhook, {ALERT: ALERT_FOR})
        instance = f"127.0.0.1:{agent.port}"

        # Before the flip: Prometheus sees the cache on, evaluates the rule, knows where
        # Alertmanager is; and for longer than the alert's for: plus the group wait, no page.
        prom.wait_for_query(f'ssd_write_cache_mismatch{{serial="{SDA_SERIAL}"}} == 0', timeout=30)
        wait_until_paging_works(prom)
        time.sleep(QUIET_SECONDS)
        assert webhook.notifications() == [], _alerts_text(webhook.notifications())
        assert _alert_state(prom, ALERT) is None
        assert not [a for a in prom.alerts() if a["state"] == "firing"], prom.alerts()

        # Someone runs `hdparm -W0 /dev/sda`.
        flipped = time.monotonic()
        host.set_response("hdparm", "sda", fixture_path("fakehost/hdparm-W-sda-off.txt"))
        milestones = wait_for_page(webhook, flipped, PAGE_TIMEOUT, ("agent", lambda: _agent_cache_off(agent)),
                                   lambda: _alert_state(prom, ALERT), prom.alerts)
        (page,) = webhook.notifications("pager")
        took = page.received - flipped

        assert page.body["receiver"] == "pager" and page.body["status"] == "firing", page.body
        # The shipped grouping is per host: the group is the instance (within its job), and the
        # page names the alert inside it.
        assert page.body["groupLabels"] == {"instance": instance, "job": "ssdfleet"}, page.body["groupLabels"]
        (alert,) = page.body["alerts"]
        labels = alert["labels"]
        assert labels == {
            "alertname": ALERT,
            "severity": "page",
            "instance": instance,
            "job": "ssdfleet",
            "device": "sda",
            "serial": SDA_SERIAL,
        }, labels
        assert "sda" in alert["annotations"]["summary"] and SDA_SERIAL in alert["annotations"]["summary"]
        assert alert["annotations"]["runbook_url"].endswith("#ssdwritecachedisabled")
        # the alert waited its for: in pending before it fired
        assert "pending" in milestones and milestones.get("firing", took) - milestones["pending"] >= 2.0, milestones

        # The ticket queue hears nothing, now or after its own group wait.
        time.sleep(2.5)
        assert webhook.notifications("tickets") == [], _alerts_text(webhook.notifications("tickets"))
        assert len(webhook.notifications("pager")) == 1, _alerts_text(webhook.notifications("pager"))

        record_property("write_cache_flip_to_page_seconds", round(took, 2))
        with capsys.disabled():
            print(
                f"\n[alerting] write cache off on sda -> page at the pager receiver after {took:.1f} s "
                f"(agent exported it at {milestones.get('agent', float('nan')):.1f} s, alert pending at "
                f"{milestones['pending']:.1f} s, firing at {milestones.get('firing', took):.1f} s; "
                f"cache polled, scraped and evaluated every 1 s, for: {ALERT_FOR}, group_wait 1s)"
            )

        # Back on: the pager hears that it is resolved (send_resolved in the shipped config).
        host.set_response("hdparm", "sda", fixture_path("fakehost/hdparm-W-sda-on.txt"))
        resolved = _wait_for(
            lambda: [n for n in webhook.notifications("pager") if n.body["status"] == "resolved"],
            "the resolved notification", 30,
        )
        assert [a["labels"]["serial"] for a in resolved[0].body["alerts"]] == [SDA_SERIAL]
        assert webhook.notifications("tickets") == []
    except BaseException:
        print(f"agent log (tail):\n{agent.log()[-3000:]}")  # shown by pytest with the failure
        raise
    finally:
        agent.stop()


