"""The paging stack of the end-to-end alert tests: shortened rules, Prometheus and Alertmanager
started for a test, a webhook receiver, and waiting for a page.

Moved out of test_alerting_e2e.py, issue 27: test modules import helpers from tests/support/
only).
"""

from __future__ import annotations

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

from tests.conftest import ROOT
from tests.fakehost import AgentProcess
from tests.promstack import alertmanager_factory, prometheus_factory  # noqa: F401 (fixtures)

ALERT_RULES = ROOT / "deploy" / "prometheus" / "ssdfleet-alerts.yml"
RECORDING_RULES = ROOT / "deploy" / "prometheus" / "ssdfleet-recording.yml"
ALERTMANAGER_CONFIG = ROOT / "deploy" / "alertmanager" / "alertmanager.yml"
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


def _wait_for(fn, what: str, timeout: float, step: float = 0.1):
    deadline = time.monotonic() + timeout
    while True:
        value = fn()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(step)


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
