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
import http.server
import json
import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

import pytest
import requests
import yaml

from tests.conftest import ROOT, fixture_path
from tests.fakehost import AgentProcess, build_default_host
from tests.livefleet import FAST_INTERVALS
from tests.promstack import alertmanager_factory, prometheus_factory  # noqa: F401 (fixtures)
from tests.test_e2e_agent import SDA_SERIAL

ALERT_RULES = ROOT / "deploy" / "prometheus" / "ssdfleet-alerts.yml"
RECORDING_RULES = ROOT / "deploy" / "prometheus" / "ssdfleet-recording.yml"
ALERTMANAGER_CONFIG = ROOT / "deploy" / "alertmanager" / "alertmanager.yml"

ALERT = "SSDWriteCacheDisabled"
ALERT_FOR = "3s"  # shipped: 5m
QUIET_SECONDS = 6.0  # before the flip: longer than for + group_wait + a scrape and an evaluation
PAGE_TIMEOUT = 45.0


# ------------------------------------------------------------------ the shipped files, faster


# The 5-minute rates of the recording file: the rate over a full window, only for a series with
# a sample a window back.
_FULL_WINDOW_RATE = re.compile(r"increase\((\w+)\[5m\]\) / 300 and (\w+) offset 5m")


def shortened_rules(source: Path, dest: Path, alert_for: Dict[str, str]) -> Path:
    """A copy of a shipped rule file in which every group is evaluated each second and the
    alerts named in ``alert_for`` wait that long instead of their shipped ``for:``. The
    5-minute rates' window shrinks with the scrape: the tests scrape every second, so 5 s
    holds the five samples 5 minutes hold at a 60 s scrape (the shipped rules give a series no
    5-minute rate until it is 5 minutes old, and a test lasts seconds). Nothing but those
    durations changes."""
    rules = yaml.safe_load(source.read_text(encoding="utf-8"))
    for group in rules["groups"]:
        group["interval"] = "1s"
        for rule in group["rules"]:
            if rule.get("alert") in alert_for:
                rule["for"] = alert_for[rule["alert"]]
            if "expr" in rule:
                rule["expr"] = _FULL_WINDOW_RATE.sub(r"increase(\1[5s]) / 5 and \2 offset 5s", rule["expr"])
    dest.write_text(yaml.safe_dump(rules, sort_keys=False), encoding="utf-8")
    return dest


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


def alertmanager_config(webhook_base: str) -> Dict[str, Any]:
    """The shipped configuration with its receivers on the test's webhook server and its
    group timers at one second."""
    config = yaml.safe_load(ALERTMANAGER_CONFIG.read_text(encoding="utf-8"))
    for receiver in config["receivers"]:
        for hook in receiver.get("webhook_configs", []):
            hook["url"] = f"{webhook_base}/{receiver['name']}"
    for route in [config["route"], *config["route"].get("routes", [])]:
        route["group_wait"] = "1s"
        route["group_interval"] = "1s"
    return config


# ------------------------------------------------------------------ the receivers' end


@dataclass(frozen=True)
class Notification:
    received: float  # time.monotonic() when it arrived
    path: str
    body: Dict[str, Any]


class Webhook:
    """An HTTP server on 127.0.0.1 that keeps every notification Alertmanager posts."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._notifications: List[Notification] = []
        webhook = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                received = time.monotonic()
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                with webhook._lock:
                    webhook._notifications.append(Notification(received, self.path, json.loads(body)))
                self.send_response(200)
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.base = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, name="webhook", daemon=True)
        self._thread.start()

    def notifications(self, receiver: Optional[str] = None) -> List[Notification]:
        with self._lock:
            return [n for n in self._notifications if receiver is None or n.path == f"/{receiver}"]

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5.0)


@pytest.fixture
def webhook():
    hook = Webhook()
    yield hook
    hook.stop()


def _alerts_text(notifications: List[Notification]) -> str:
    return json.dumps([(n.path, n.body.get("status"), [a["labels"] for a in n.body["alerts"]]) for n in notifications])


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


def wait_for_page(webhook, flipped: float, timeout: float, first_sign: Tuple[str, Callable[[], bool]],
                  alert_state: Callable[[], Optional[str]], store_alerts: Callable[[], object],
                  poll: float = 0.05) -> Dict[str, float]:
    """Wait until the pager receiver has a notification, noting when after ``flipped`` the
    change was first seen (``first_sign``: its name and a check), and when the alert went
    pending and firing. Fails with all of that when no page comes within ``timeout``."""
    milestones: Dict[str, float] = {}
    name, seen = first_sign
    while not webhook.notifications("pager"):
        if time.monotonic() > flipped + timeout:
            pytest.fail(f"no page {timeout:.0f} s after the flip; milestones {milestones}; "
                        f"notifications {_alerts_text(webhook.notifications())}; alerts {store_alerts()}")
        now = time.monotonic()
        if name not in milestones and seen():
            milestones[name] = now - flipped
        state = alert_state()
        if state and "pending" not in milestones:
            milestones["pending"] = now - flipped
        if state == "firing" and "firing" not in milestones:
            milestones["firing"] = now - flipped
        time.sleep(poll)
    return milestones


def _alert_state(prom, name: str) -> Optional[str]:
    states = {a["state"] for a in prom.alerts() if a["labels"].get("alertname") == name}
    return "firing" if "firing" in states else ("pending" if "pending" in states else None)


def test_write_cache_off_pages_the_on_call(
    tmp_path,
    prometheus_factory,  # noqa: F811 (the fixture imported above)
    alertmanager_factory,  # noqa: F811
    webhook,
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


def paging_stack(tmp_path: Path, agent: AgentProcess, prometheus_factory, alertmanager_factory, webhook,  # noqa: F811
                 alert_for: Dict[str, str]):
    """Alertmanager (routing to ``webhook``) and Prometheus scraping ``agent`` every second with
    the shipped rules, the ``for:`` of the alerts in ``alert_for`` shortened. Returns the
    Prometheus once its target is up."""
    alertmanager = alertmanager_factory(config=alertmanager_config(webhook.base))
    rules_dir = tmp_path / "rules"
    rules_dir.mkdir()
    prom = prometheus_factory(
        scrape_targets={"ssdfleet": [f"127.0.0.1:{agent.port}"]},
        rule_files=[
            shortened_rules(RECORDING_RULES, rules_dir / RECORDING_RULES.name, {}),
            shortened_rules(ALERT_RULES, rules_dir / ALERT_RULES.name, alert_for),
        ],
        scrape_interval="1s",
        evaluation_interval="1s",
        alertmanager_url=alertmanager.url,
    )
    prom.wait_for_targets_up(timeout=30)
    return prom


def _wait_for(fn, what: str, timeout: float):
    deadline = time.monotonic() + timeout
    while True:
        value = fn()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.1)


def wait_until_paging_works(prom) -> None:
    """Every rule evaluated without an error, and Prometheus knows where Alertmanager is: from
    here on an alert that fires reaches the receiver."""
    _wait_for_healthy_alert_rules(prom)
    _wait_for(
        lambda: requests.get(f"{prom.url}/api/v1/alertmanagers", timeout=5).json()["data"]["activeAlertmanagers"],
        "Prometheus to find Alertmanager", 30,
    )


def _wait_for_healthy_alert_rules(prom) -> None:
    """Every rule group has been evaluated at least once, without an error."""

    def ready():
        groups = prom.rules()
        if not groups:
            return False
        rules = [r for g in groups for r in g["rules"]]
        broken = [(r["name"], r.get("lastError")) for r in rules if r.get("health") == "err"]
        assert not broken, broken
        return all(r.get("health") == "ok" for r in rules)

    _wait_for(ready, "every rule evaluated", 30)
