"""The example Alertmanager configuration in deploy/alertmanager/alertmanager.yml.

``amtool`` checks it and walks the route tree; the inhibition rules are tested on a real
``prometheus-alertmanager`` started on 127.0.0.1 with a copy of the configuration whose webhook
URLs point at an HTTP server inside this test. Every process started here is stopped by its
fixture, and every wait is bounded.
"""

from __future__ import annotations

import datetime as dt
import http.server
import json
import os
import shutil
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest
import requests
import yaml

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / "deploy" / "alertmanager" / "alertmanager.yml"

AMTOOL = shutil.which("amtool")
ALERTMANAGER = shutil.which("prometheus-alertmanager") or shutil.which("alertmanager")
needs_amtool = pytest.mark.skipif(AMTOOL is None, reason="amtool is not installed (Debian package prometheus-alertmanager)")
needs_alertmanager = pytest.mark.skipif(
    ALERTMANAGER is None, reason="prometheus-alertmanager is not installed (Debian package prometheus-alertmanager)"
)

DRIVE_A = {"instance": "db1:9877", "job": "ssdfleet", "device": "sda", "serial": "S-A"}
DRIVE_B = {"instance": "db1:9877", "job": "ssdfleet", "device": "sdb", "serial": "S-B"}


def _amtool(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([AMTOOL, *args], capture_output=True, text=True, timeout=60, check=False)


def _route(*labels: str) -> str:
    result = _amtool("config", "routes", "test", f"--config.file={CONFIG}", *labels)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout.strip()


@needs_amtool
def test_amtool_check_config_is_clean():
    result = _amtool("check-config", str(CONFIG))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


@needs_amtool
def test_pages_go_to_the_pager():
    assert _route("severity=page", "alertname=SSDWriteCacheDisabled") == "pager"


@needs_amtool
def test_tickets_go_to_the_ticket_queue():
    assert _route("severity=ticket", "alertname=SSDLifeLeftLow") == "tickets"


@needs_amtool
def test_an_alert_without_severity_still_reaches_the_ticket_queue():
    assert _route("alertname=SomethingElse") == "tickets"


@needs_amtool
def test_one_hosts_pages_and_tickets_go_to_separate_receivers():
    # amtool exits non-zero when the route tree picks another receiver than --verify.receivers.
    host = ["instance=db1:9877", "job=ssdfleet"]
    for labels, receiver in (
        (["severity=page", "alertname=SSDWriteCacheDisabled", "device=sda"], "pager"),
        (["severity=page", "alertname=SSDSmartHealthFailed", "device=sdb"], "pager"),
        (["severity=ticket", "alertname=SSDLifeLeftLow", "device=sdc"], "tickets"),
        (["severity=ticket", "alertname=SSDFleetCollectorFailing", "collector=smartctl"], "tickets"),
    ):
        result = _amtool(
            "config", "routes", "test", f"--config.file={CONFIG}", f"--verify.receivers={receiver}", *host, *labels
        )
        assert result.returncode == 0, (labels, result.stdout + result.stderr)
    wrong = _amtool("config", "routes", "test", f"--config.file={CONFIG}", "--verify.receivers=tickets",
                    *host, "severity=page", "alertname=SSDReadOnly")
    assert wrong.returncode != 0, "amtool --verify.receivers did not catch a wrong receiver"


def test_config_groups_by_host():
    """One group per scrape target (instance within its job), on every route: no route puts
    alertname back into the grouping."""
    config = yaml.safe_load(CONFIG.read_text())
    assert sorted(config["route"]["group_by"]) == ["instance", "job"]
    routes = config["route"].get("routes", [])
    assert {r["receiver"] for r in routes} == {"pager", "tickets"}
    for route in routes:
        assert sorted(route.get("group_by", config["route"]["group_by"])) == ["instance", "job"], route
    for receiver in config["receivers"]:
        for hook in receiver.get("webhook_configs", []):
            assert hook["url"].startswith("http://127.0.0.1:"), hook["url"]


# ---------------------------------------------------------------- a real Alertmanager


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _Receiver:
    """Webhook endpoint: records each notification's receiver and alerts."""

    def __init__(self) -> None:
        self.notifications: list = []
        self.lock = threading.Lock()
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 (http.server's naming)
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                with receiver.lock:
                    receiver.notifications.append((self.path, json.loads(body)))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def bodies(self, path_suffix: str) -> list:
        with self.lock:
            return [body for path, body in self.notifications if path.endswith(path_suffix)]

    def alerts(self, path_suffix: str) -> list:
        with self.lock:
            return [
                alert
                for path, body in self.notifications
                if path.endswith(path_suffix)
                for alert in body["alerts"]
            ]


@pytest.fixture
def webhook():
    receiver = _Receiver()
    receiver.thread.start()
    yield receiver
    receiver.server.shutdown()
    receiver.server.server_close()
    receiver.thread.join(timeout=5)


@pytest.fixture
def alertmanager(tmp_path, webhook):
    """The shipped configuration, with receivers on the test's webhook and short timers."""
    config = yaml.safe_load(CONFIG.read_text())
    for receiver in config["receivers"]:
        for hook in receiver.get("webhook_configs", []):
            hook["url"] = f"http://127.0.0.1:{webhook.port}/{receiver['name']}"
    # Timing is not under test here: notify within a second instead of the shipped minutes.
    for route in [config["route"], *config["route"].get("routes", [])]:
        route["group_wait"] = "1s"
        route["group_interval"] = "1s"
    config_file = tmp_path / "alertmanager.yml"
    config_file.write_text(yaml.safe_dump(config))

    port = _free_port()
    log = open(tmp_path / "alertmanager.log", "wb")
    proc = subprocess.Popen(
        [
            ALERTMANAGER,
            f"--config.file={config_file}",
            f"--storage.path={tmp_path / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--cluster.listen-address=",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            if proc.poll() is not None:
                pytest.fail(f"alertmanager exited: {(tmp_path / 'alertmanager.log').read_text()}")
            try:
                if requests.get(f"{base}/-/ready", timeout=2).status_code == 200:
                    break
            except requests.RequestException:
                pass
            if time.monotonic() > deadline:
                pytest.fail("alertmanager not ready within 30 s")
            time.sleep(0.2)
        yield base
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        log.close()


def _alert(alertname: str, severity: str, labels: dict) -> dict:
    now = dt.datetime.now(dt.timezone.utc)
    return {
        "labels": {"alertname": alertname, "severity": severity, **labels},
        "annotations": {"summary": f"{alertname} on {labels.get('instance')}"},
        "startsAt": now.isoformat(),
        "endsAt": (now + dt.timedelta(hours=1)).isoformat(),
    }


def _post(base: str, *alerts: dict) -> None:
    response = requests.post(f"{base}/api/v2/alerts", json=list(alerts), timeout=10)
    assert response.status_code == 200, response.text


def _status(base: str) -> dict:
    """{(alertname, device or collector): (state, inhibitedBy)} for every alert held."""
    out = {}
    for alert in requests.get(f"{base}/api/v2/alerts", timeout=10).json():
        labels = alert["labels"]
        key = (labels["alertname"], labels.get("device") or labels.get("collector"))
        out[key] = (alert["status"]["state"], alert["status"]["inhibitedBy"])
    return out


def _wait_for(predicate, what: str, timeout: float = 20.0):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.2)


def _wait_for_count(base: str, count: int) -> dict:
    def ready():
        status = _status(base)
        return status if len(status) == count else None

    return _wait_for(ready, f"{count} alerts in Alertmanager")


@needs_alertmanager
def test_critical_life_alert_inhibits_the_low_one_for_the_same_drive(alertmanager, webhook):
    # Source first, so the inhibitor knows it before the targets arrive.
    _post(alertmanager, _alert("SSDLifeLeftCritical", "page", DRIVE_A))
    _wait_for(lambda: ("SSDLifeLeftCritical", "sda") in _status(alertmanager), "the critical alert")
    # Same drive: inhibited. Another drive on the same host: not.
    _post(alertmanager, _alert("SSDLifeLeftLow", "ticket", DRIVE_A), _alert("SSDLifeLeftLow", "ticket", DRIVE_B))

    status = _wait_for_count(alertmanager, 3)
    state, inhibited_by = status[("SSDLifeLeftLow", "sda")]
    assert state == "suppressed" and inhibited_by, status
    assert status[("SSDLifeLeftLow", "sdb")] == ("active", []), status
    assert status[("SSDLifeLeftCritical", "sda")] == ("active", []), status

    # What the receivers got: the page, and a ticket for sdb only.
    pages = _wait_for(lambda: webhook.alerts("/pager"), "the page notification")
    assert {a["labels"]["alertname"] for a in pages} == {"SSDLifeLeftCritical"}
    tickets = _wait_for(lambda: webhook.alerts("/tickets"), "the ticket notification")
    assert {(a["labels"]["alertname"], a["labels"]["device"]) for a in tickets} == {("SSDLifeLeftLow", "sdb")}


@needs_alertmanager
def test_wear_out_within_7_days_inhibits_the_30_day_ticket(alertmanager, webhook):
    _post(alertmanager, _alert("SSDWearOutWithin7Days", "page", DRIVE_A))
    _wait_for(lambda: ("SSDWearOutWithin7Days", "sda") in _status(alertmanager), "the 7 day alert")
    _post(alertmanager, _alert("SSDWearOutWithin30Days", "ticket", DRIVE_A))
    status = _wait_for_count(alertmanager, 2)
    assert status[("SSDWearOutWithin30Days", "sda")][0] == "suppressed", status
    assert status[("SSDWearOutWithin7Days", "sda")] == ("active", []), status


@needs_alertmanager
def test_agent_down_inhibits_its_own_health_alerts_on_that_host_only(alertmanager, webhook):
    host = {"instance": "db1:9877", "job": "ssdfleet"}
    other = {"instance": "db2:9877", "job": "ssdfleet"}
    _post(alertmanager, _alert("SSDFleetAgentDown", "ticket", host))
    _wait_for(lambda: ("SSDFleetAgentDown", None) in _status(alertmanager), "the agent-down alert")
    _post(
        alertmanager,
        _alert("SSDFleetDataStale", "ticket", {**host, "device": "sda", "serial": "S-A"}),
        _alert("SSDFleetCollectorFailing", "ticket", {**host, "collector": "smartctl"}),
        _alert("SSDFleetDataStale", "ticket", {**other, "device": "sdz", "serial": "S-Z"}),
    )
    status = _wait_for_count(alertmanager, 4)
    assert status[("SSDFleetDataStale", "sda")][0] == "suppressed", status
    assert status[("SSDFleetCollectorFailing", "smartctl")][0] == "suppressed", status
    assert status[("SSDFleetDataStale", "sdz")] == ("active", []), status


@needs_alertmanager
def test_one_host_one_notification_per_receiver(alertmanager, webhook):
    """Grouping by host: two pages of db1 arrive as ONE page listing both, db2's page as its
    own; db1's two tickets as one ticket, with no page in it."""
    db1 = {"instance": "db1:9877", "job": "ssdfleet"}
    db2 = {"instance": "db2:9877", "job": "ssdfleet"}
    _post(
        alertmanager,
        _alert("SSDWriteCacheDisabled", "page", {**db1, "device": "sda", "serial": "S-A"}),
        _alert("SSDSmartHealthFailed", "page", {**db1, "device": "sdb", "serial": "S-B"}),
        _alert("SSDLifeLeftLow", "ticket", {**db1, "device": "sdc", "serial": "S-C"}),
        _alert("SSDFleetCollectorFailing", "ticket", {**db1, "collector": "smartctl"}),
        _alert("SSDReadOnly", "page", {**db2, "device": "sda", "serial": "S-Z"}),
    )
    pages = _wait_for(lambda: (lambda b: b if len(b) >= 2 else None)(webhook.bodies("/pager")), "two page notifications")
    tickets = _wait_for(lambda: webhook.bodies("/tickets"), "the ticket notification")
    time.sleep(2.0)  # longer than group_wait and group_interval here: nothing else may arrive
    pages, tickets = webhook.bodies("/pager"), webhook.bodies("/tickets")

    def content(body: dict) -> tuple:
        return (body["groupLabels"].get("instance"), sorted(a["labels"]["alertname"] for a in body["alerts"]))

    assert sorted(content(b) for b in pages) == [
        ("db1:9877", ["SSDSmartHealthFailed", "SSDWriteCacheDisabled"]),
        ("db2:9877", ["SSDReadOnly"]),
    ], pages
    assert all(b["groupLabels"] == {"instance": b["groupLabels"]["instance"], "job": "ssdfleet"} for b in pages), pages
    assert [content(b) for b in tickets] == [("db1:9877", ["SSDFleetCollectorFailing", "SSDLifeLeftLow"])], tickets
    assert tickets[0]["groupLabels"] == db1
