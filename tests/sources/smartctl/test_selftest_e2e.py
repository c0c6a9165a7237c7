"""A failed self-test pages through the shipped rules on the real parts (issue 30): the
``ssdfleet agent`` process reading a fake smartctl that replays real captures (found through the
``--smartctl`` path a user sets), a Debian ``prometheus`` scraping it every second with the
SHIPPED self-test rules (deploy/prometheus/ssdfleet-selftest-alerts.yml, only ``for:``
shortened, as tests/test_alerting_e2e.py does), and a Debian ``prometheus-alertmanager`` with the
SHIPPED routing, whose receivers are this test's webhook.

No real JSON capture in the corpus has a failed newest self-test, so the fake smartctl speaks
text: ``--version`` answers with the banner of a real smartctl 6.2 report (the agent reads
smartctl before 7.0 as text), and the drive's read answers with a real smartctl 7.3 report of a
Toshiba MK3259GSXP whose newest test is "Short offline  Completed: read failure  00%  7449
6010464" (bsdhw). The drive is listed in ``smartctl.devices``, as a user lists one that
``--scan-open`` misses; the fake has no scan answer (an error a cycle, the listed drive stands).
The report's serial is anonymised, so the drive's identity is its device and type.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import ROOT, fixture_path
from tests.fakehost import AgentProcess, FakeHost
from tests.promstack import alertmanager_factory, prometheus_factory  # noqa: F401 (fixtures)
from tests.support.alerting import (  # noqa: F401 (webhook is a fixture)
    _alert_state,
    _alerts_text,
    _wait_for,
    alertmanager_config,
    shortened_rules,
    wait_until_paging_works,
    webhook,
)

SELFTEST_RULES = ROOT / "deploy" / "prometheus" / "ssdfleet-selftest-alerts.yml"
BANNER = "smartctl-text/linuxhw-EnterpriseDrive__HDD_Fujitsu_MHW2120BH_9C7E938C123C.txt"  # smartctl 6.2
FAILED = "smartctl-text-bsdhw/bsdhw__HDD_Toshiba_MK3259GSXP_E9365256C3D1.txt"
PAGE_TIMEOUT = 90.0


def _agent(tmp_path: Path) -> AgentProcess:
    host = FakeHost(tmp_path)
    host.diskstats("")
    host.set_response("smartctl", "version", fixture_path(BANNER))
    host.set_response("smartctl", "sdb", fixture_path(FAILED))
    config = tmp_path / "agent.yml"
    config.write_text(json.dumps({"collectors": ["smartctl"], "smartctl": {"devices": ["/dev/sdb:sat"]}}))
    return AgentProcess(host, ["--config", str(config), "--interval.smartctl", "1", "--tool-timeout", "5"])


def test_a_failed_self_test_pages(tmp_path, prometheus_factory, alertmanager_factory, webhook):  # noqa: F811
    alert = "SSDSelfTestFailed"
    text = fixture_path(FAILED).read_text(encoding="utf-8", errors="replace")
    assert "# 1  Short offline       Completed: read failure       00%      7449         6010464" in text
    agent = _agent(tmp_path)
    try:
        agent.wait_ready(timeout=60)
        _wait_for(lambda: "ssd_selftest_last_failed{" in agent.get("/metrics").decode(), "the self-test series", 60)
        alertmanager = alertmanager_factory(config=alertmanager_config(webhook.base))
        rules_dir = tmp_path / "rules"
        rules_dir.mkdir()
        prom = prometheus_factory(
            scrape_targets={"ssdfleet": [f"127.0.0.1:{agent.port}"]},
            rule_files=[shortened_rules(SELFTEST_RULES, rules_dir / SELFTEST_RULES.name, {alert: "2s"})],
            scrape_interval="1s", evaluation_interval="1s", alertmanager_url=alertmanager.url)
        prom.wait_for_targets_up(timeout=30)
        wait_until_paging_works(prom)

        def pages():
            return [a for n in webhook.notifications("pager") for a in n.body["alerts"]
                    if a["labels"]["alertname"] == alert]

        _wait_for(pages, f"the {alert} page", PAGE_TIMEOUT)
        page = pages()[0]
        instance = f"127.0.0.1:{agent.port}"
        serial = page["labels"]["serial"]
        assert serial and page["labels"]["severity"] == "page" and page["labels"]["instance"] == instance
        assert page["annotations"]["summary"] == (
            f"{instance}: drive sdb (serial {serial}) failed its last self-test (short test)"), page["annotations"]
        assert page["annotations"]["runbook_url"].endswith("#ssdselftestfailed")
        assert _alert_state(prom, alert) == "firing"
        # the words and the failing LBA are in the API, as the description says
        drives = json.loads(agent.get("/api/v1/drives"))
        drives = drives["drives"] if isinstance(drives, dict) else drives
        (drive,) = [d for d in drives if d["serial"] == serial]
        assert drive["extra"]["selftest_last"] == (
            "Short offline: Completed: read failure at power-on hour 7,449, first failing LBA 6010464")
    except BaseException:
        print(f"agent log (tail):\n{agent.log()[-3000:]}\nnotifications: {_alerts_text(webhook.notifications())}")
        raise
    finally:
        agent.stop()
