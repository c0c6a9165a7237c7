"""End to end on VictoriaMetrics: simulated agents -> vmagent -> VictoriaMetrics -> vmalert ->
Alertmanager, and every dashboard query answered by VictoriaMetrics' Prometheus API.

The path past one Prometheus that docs/scaling.md recommends, with the real binaries of
Debian's victoria-metrics package, at small scale:

* three hosts of the simulator (tests/livefleet.py SimulatedHost: the demo's Shannon card, Intel
  320 and Samsung PM983, with two hours of history seeded through the agent's own parsers),
  and a fourth host on real captures (drives behind a MegaRAID and beside it: self-test logs,
  SAS error counters, an SCT temperature history), each read by a real ``ssdfleet agent``
  process polling every second;
* ``vmagent`` scrapes the four agents every second and remote-writes to a single-node
  ``victoria-metrics``;
* ``vmalert`` evaluates the SHIPPED recording rules (deploy/prometheus/ssdfleet-recording.yml,
  the same file Prometheus loads) and the shipped alert rules in their vmalert copy
  (deploy/victoriametrics/ssdfleet-alerts.yml: keep_firing_for, which vmalert 1.79 rejects,
  is the only difference; scripts/vmalert_rules.py), writes recorded series and ALERTS back,
  and sends alerts to a real Alertmanager with the SHIPPED routing
  (deploy/alertmanager/alertmanager.yml), whose receivers post to this test.

As in tests/test_alerting_e2e.py only durations differ from what ships: rule groups are
evaluated every second, SSDWriteCacheDisabled waits 3 s instead of 5 m, Alertmanager's group
timers are 1 s. Someone switches the write cache of sda off on one host: the pager receiver
must get exactly that page, the ticket receiver nothing. Then every panel query of the three
dashboards (dashboards/json/), with its variables resolved from VictoriaMetrics as Grafana
would, must return data from VictoriaMetrics.

Skipped, with the reason, when a binary is missing; failed instead under
SSDFLEET_REQUIRE_TOOLS=1.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.promstack import (  # noqa: F401 (fixtures)
    VMAgent,
    VMAlert,
    alertmanager_binary,
    alertmanager_factory,
    skip_or_fail,
    victoriametrics_binary,
    victoriametrics_factory,
    vmagent_binary,
    vmalert_binary,
)
from tests.support.alerting import _alerts_text, alertmanager_config, shortened_rules, wait_for_page, webhook  # noqa: F401 (webhook is a fixture)
from tests.support.victoriametrics import (
    ALERT,
    ALERT_FOR,
    FLIPPED_DEVICE,
    PAGE_TIMEOUT,
    QUIET_SECONDS,
    _panel_queries,
    _wait,
    check_panels,
    start_fleet,
)

RECORDING_RULES = ROOT / "deploy" / "prometheus" / "ssdfleet-recording.yml"
VM_ALERT_RULES = ROOT / "deploy" / "victoriametrics" / "ssdfleet-alerts.yml"

HOSTS = 3
# Seconds to wait for every panel to have data, on top of two passes over the pending queries
# at the slowest pass's cost (a pass is slow on a loaded machine; the wait is for the data).
PANELS_TIMEOUT = 30.0


def _require_binaries() -> None:
    for found, name in ((victoriametrics_binary(), "victoria-metrics"), (vmagent_binary(), "vmagent"),
                        (vmalert_binary(), "vmalert"), (alertmanager_binary(), "alertmanager")):
        if not found:
            skip_or_fail(f"{name} binary not found (apt-get install victoria-metrics prometheus-alertmanager)")


def _rules_evaluated(vmalert: VMAlert) -> bool:
    """Every rule of every group evaluated at least once, none with an error."""
    groups = vmalert.rules()
    rules = [r for g in groups for r in g.get("rules", [])]
    broken = [(r.get("name"), r.get("lastError")) for r in rules if r.get("lastError")]
    assert not broken, broken
    return bool(rules) and all(not str(r.get("lastEvaluation", "")).startswith("0001-") for r in rules)


def _alert_state(vmalert: VMAlert, name: str) -> str:
    states = {a.get("state") for a in vmalert.alerts() if a.get("name", a.get("labels", {}).get("alertname")) == name}
    return "firing" if "firing" in states else ("pending" if "pending" in states else "")


def test_write_cache_off_pages_through_victoriametrics_and_every_panel_has_data(
    tmp_path: Path,
    request: pytest.FixtureRequest,
    victoriametrics_factory,  # noqa: F811 (the fixture imported above)
    alertmanager_factory,  # noqa: F811
    webhook,  # noqa: F811
    capsys,
    record_property,
):
    _require_binaries()
    started = time.monotonic()
    hosts, agents = start_fleet(tmp_path, request)
    targets = [f"127.0.0.1:{a.port}" for a in agents]

    # VictoriaMetrics shows samples at once (its default hides the last 30 s from queries).
    store = victoriametrics_factory(extra_args=["-search.latencyOffset=1s"])
    alertmanager = alertmanager_factory(config=alertmanager_config(webhook.base))
    rules_dir = tmp_path / "rules"
    rules_dir.mkdir()
    rule_files = [
        shortened_rules(RECORDING_RULES, rules_dir / RECORDING_RULES.name, {}),
        shortened_rules(VM_ALERT_RULES, rules_dir / VM_ALERT_RULES.name, {ALERT: ALERT_FOR}),
    ]
    scraper = VMAgent(f"{store.url}/api/v1/write", {"ssdfleet": targets}, workdir=tmp_path / "vmagent")
    request.addfinalizer(scraper.stop)
    scraper.start().wait_ready(30)
    vmalert = VMAlert(store.url, rule_files, notifier_url=alertmanager.url, workdir=tmp_path / "vmalert")
    request.addfinalizer(vmalert.stop)
    vmalert.start().wait_ready(30)

    flipped_serial = hosts[0].sim.spec(FLIPPED_DEVICE).serial
    instance = targets[0]
    try:
        # Before the flip: VictoriaMetrics has every agent's series, the cache is on, every
        # rule has been evaluated; and for longer than the alert's for: plus the group wait,
        # nobody is paged.
        _wait(lambda: store.query('count(up{job="ssdfleet"} == 1) == 4')["data"]["result"], "four agents up", 30)
        _wait(lambda: store.query(f'ssd_write_cache_mismatch{{serial="{flipped_serial}"}} == 0')["data"]["result"],
              "the cache state in VictoriaMetrics", 30)
        _wait(lambda: _rules_evaluated(vmalert), "every rule evaluated by vmalert", 30)
        time.sleep(QUIET_SECONDS)
        assert webhook.notifications() == [], _alerts_text(webhook.notifications())
        assert _alert_state(vmalert, ALERT) == ""

        # Someone runs `hdparm -W0 /dev/sda` on the first host.
        flipped = time.monotonic()
        hosts[0].set_write_cache(FLIPPED_DEVICE, False)
        stored = f'ssd_write_cache_enabled{{serial="{flipped_serial}"}} == 0'
        milestones = wait_for_page(webhook, flipped, PAGE_TIMEOUT,
                                   ("stored", lambda: bool(store.query(stored)["data"]["result"])),
                                   lambda: _alert_state(vmalert, ALERT), vmalert.alerts, poll=0.1)
        (page,) = webhook.notifications("pager")
        took = page.received - flipped
        assert page.body["receiver"] == "pager" and page.body["status"] == "firing", page.body
        assert page.body["groupLabels"] == {"instance": instance, "job": "ssdfleet"}, page.body["groupLabels"]
        (alert,) = page.body["alerts"]
        assert alert["labels"] == {
            "alertname": ALERT, "severity": "page", "instance": instance, "job": "ssdfleet",
            "device": FLIPPED_DEVICE, "serial": flipped_serial,
        }, alert["labels"]
        assert FLIPPED_DEVICE in alert["annotations"]["summary"] and flipped_serial in alert["annotations"]["summary"]
        assert alert["annotations"]["runbook_url"].endswith("#ssdwritecachedisabled")
        time.sleep(2.5)
        assert webhook.notifications("tickets") == [], _alerts_text(webhook.notifications("tickets"))
        assert len(webhook.notifications("pager")) == 1, _alerts_text(webhook.notifications("pager"))

        # Every panel query, as Grafana would send it, answered by VictoriaMetrics.
        problems, runs, slowest = check_panels(store, PANELS_TIMEOUT)
        assert not problems, "\n".join(f"{k}: {v}" for k, v in sorted(problems.items()))
    except BaseException:
        for agent in agents:
            print(f"agent log (tail):\n{agent.log()[-1500:]}")
        print(f"vmalert log (tail):\n{vmalert.log_tail(3000)}\nvmagent log (tail):\n{scraper.log_tail(2000)}")
        raise

    record_property("vm_write_cache_flip_to_page_seconds", round(took, 2))
    record_property("vm_panel_query_runs", runs)
    with capsys.disabled():
        print(
            f"\n[victoriametrics] write cache off on {FLIPPED_DEVICE} -> page at the pager receiver after {took:.1f} s "
            f"(in VictoriaMetrics at {milestones.get('stored', float('nan')):.1f} s, pending at "
            f"{milestones.get('pending', float('nan')):.1f} s, firing at {milestones.get('firing', float('nan')):.1f} s); "
            f"{len(_panel_queries())} panel queries all with data ({runs} runs, slowest {slowest[0] * 1000:.0f} ms: "
            f"{slowest[1]}); whole test {time.monotonic() - started:.0f} s"
        )
