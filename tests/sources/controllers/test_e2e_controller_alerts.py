"""End to end on the real parts (issue 28): the ``ssdfleet agent`` process reading a fake RAID
controller tool that replays real captures (tests/controller_fakes.py, found through the tool
paths a user configures), a Debian ``prometheus`` scraping it every second with the SHIPPED
controller alert rules (deploy/prometheus/ssdfleet-controller-alerts.yml, only durations
shortened as in tests/test_alerting_e2e.py), and a Debian ``prometheus-alertmanager`` with the
SHIPPED routing, whose receivers are this test's webhook.

* A MegaRAID whose battery fails: the fake MegaCli (storcli and perccli are not installed on
  this host) answers first with check_raid issue 39's captures of a host whose battery runs a
  learn cycle and whose volume is write-back, then with the same host's captures after the
  battery wanted replacing and the controller dropped the volume to write-through. The page
  names the volume and, in its summary, the cause.
* An Adaptec whose RAID 10 lost a drive (a real GETCONFIG capture): the page comes.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from tests.conftest import ROOT
from tests.controller_fakes import MEGACLI, MR, FakeControllerTool
from tests.fakehost import AgentProcess, FakeHost
from tests.promstack import alertmanager_factory, prometheus_factory  # noqa: F401 (fixtures)
from tests.support.alerting import (  # noqa: F401 (webhook is a fixture)
    _alert_state,
    _alerts_text,
    _wait_for,
    alertmanager_config,
    shortened_rules,
    wait_for_page,
    wait_until_paging_works,
    webhook,
)

CONTROLLER_RULES = ROOT / "deploy" / "prometheus" / "ssdfleet-controller-alerts.yml"
PAGE_TIMEOUT = 60.0
QUIET_SECONDS = 6.0


def controller_agent(tmp_path: Path, tools: dict, collector: str) -> AgentProcess:
    host = FakeHost(tmp_path)
    host.diskstats("")
    absent = tmp_path / "absent"
    config = tmp_path / "agent.yml"
    config.write_text(json.dumps({"collectors": [collector]}))
    args = ["--config", str(config), f"--interval.{collector}", "1", "--tool-timeout", "5"]
    for key in ("storcli", "perccli", "megacli", "ssacli", "arcconf"):
        args += [f"--{key}", str(tools[key].path) if key in tools else str(absent / key)]
    return AgentProcess(host, args)


def stack(tmp_path: Path, agent: AgentProcess, prometheus_factory, alertmanager_factory, webhook,  # noqa: F811
          alert_for: dict):
    alertmanager = alertmanager_factory(config=alertmanager_config(webhook.base))
    rules_dir = tmp_path / "rules"
    rules_dir.mkdir()
    prom = prometheus_factory(
        scrape_targets={"ssdfleet": [f"127.0.0.1:{agent.port}"]},
        rule_files=[shortened_rules(CONTROLLER_RULES, rules_dir / CONTROLLER_RULES.name, alert_for)],
        scrape_interval="1s", evaluation_interval="1s", alertmanager_url=alertmanager.url)
    prom.wait_for_targets_up(timeout=30)
    wait_until_paging_works(prom)
    return prom


def test_battery_fails_and_the_volume_loses_write_back_pages_with_the_cause(
        tmp_path, prometheus_factory, alertmanager_factory, webhook, capsys):  # noqa: F811
    alert = "SSDControllerWriteBackLost"
    megacli = FakeControllerTool(tmp_path, "MegaCli64")
    for args, fixture in MEGACLI.items():
        megacli.answer(args, fixture)
    megacli.answer("-LDInfo -Lall -aALL -NoLog", MR + "check_raid__issue39_batteries.ldinfo.3.txt")
    megacli.answer("-AdpBbuCmd -aALL -NoLog", MR + "check_raid__issue39_batteries.bbustatus.3.txt")
    agent = controller_agent(tmp_path, {"megacli": megacli}, "megaraid")
    try:
        agent.wait_ready(timeout=60)
        prom = stack(tmp_path, agent, prometheus_factory, alertmanager_factory, webhook, {alert: "3s"})
        instance = f"127.0.0.1:{agent.port}"
        prom.wait_for_query('ssd_controller_volume_write_back_lost{controller="megaraid/0",volume="0"} == 0',
                            timeout=30)
        time.sleep(QUIET_SECONDS)
        assert webhook.notifications("pager") == [], _alerts_text(webhook.notifications())

        flipped = time.monotonic()
        megacli.answer("-LDInfo -Lall -aALL -NoLog", MR + "check_raid__issue39_batteries.ldinfo.txt")
        megacli.answer("-AdpBbuCmd -aALL -NoLog", MR + "check_raid__issue39_batteries.bbustatus.txt")

        def exported() -> bool:
            return 'ssd_controller_volume_write_back_lost{controller="megaraid/0",volume="0"} 1.0' in \
                agent.get("/metrics").decode()

        milestones = wait_for_page(webhook, flipped, PAGE_TIMEOUT, ("agent", exported),
                                   lambda: _alert_state(prom, alert), prom.alerts)
        pages = [a for n in webhook.notifications("pager") for a in n.body["alerts"]
                 if a["labels"]["alertname"] == alert]
        assert pages, _alerts_text(webhook.notifications())
        page = pages[0]
        assert page["labels"] == {"alertname": alert, "severity": "page", "instance": instance, "job": "ssdfleet",
                                  "controller": "megaraid/0", "volume": "0"}, page["labels"]
        assert page["annotations"]["summary"] == (
            f"{instance}: volume 0 on controller megaraid/0 runs write-through, configured write-back "
            "(battery failed)"), page["annotations"]["summary"]
        took = time.monotonic() - flipped
        with capsys.disabled():
            print(f"\n[controller alerting] battery failed -> write-back lost page after {took:.1f} s "
                  f"(milestones {milestones})")
    except BaseException:
        print(f"agent log (tail):\n{agent.log()[-3000:]}")
        raise
    finally:
        agent.stop()


def test_a_degraded_volume_pages(tmp_path, prometheus_factory, alertmanager_factory, webhook):  # noqa: F811
    alert = "SSDControllerVolumeDegraded"
    arcconf = FakeControllerTool(tmp_path, "arcconf")
    arcconf.answer("GETCONFIG 1 AL", "arcconf/check_raid__issue155_getconfig.txt")
    # No GETSTATUS was captured on that host: the fake has no answer (one error a run, the
    # GETCONFIG read stands), rather than another host's task list.
    agent = controller_agent(tmp_path, {"arcconf": arcconf}, "arcconf")
    try:
        agent.wait_ready(timeout=60)
        prom = stack(tmp_path, agent, prometheus_factory, alertmanager_factory, webhook, {alert: "2s"})
        _wait_for(lambda: [a for n in webhook.notifications("pager") for a in n.body["alerts"]
                           if a["labels"]["alertname"] == alert], "the degraded page", PAGE_TIMEOUT)
        page = next(a for n in webhook.notifications("pager") for a in n.body["alerts"]
                    if a["labels"]["alertname"] == alert)
        assert page["labels"]["controller"] == "arcconf/1" and page["labels"]["state"] == "degraded", page
        assert page["annotations"]["runbook_url"].endswith("#ssdcontrollervolumedegraded")
        assert _alert_state(prom, alert) == "firing"
    except BaseException:
        print(f"agent log (tail):\n{agent.log()[-3000:]}")
        raise
    finally:
        agent.stop()

