"""Stale health data can no longer read as fresh (issue 27).

An Intel NVMe drive whose smartctl output turns unreadable, first garbage and then a failing
exit status, while its vendor log keeps answering through nvme-cli: the real agent keeps
serving the drive's last good values, its ``ssd_data_age_seconds`` grows from the last good
smartctl read, and ``SSDFleetDataStale`` fires on the series the agent exported (a promtool unit
test written from what was scraped). Before issue 27 every source that did not annotate counted
as a health source, so the vendor log's answers (a supplement) kept the age at 0 and the alert
silent while life left and media errors were an hour old.

Both cases replay real captures: the default fake host's nvme0 is smartctl's JSON of an INTEL
SSDPEKNW010T8 (scrutiny), and nvme-cli answers ``intel smart-log-add`` with a real capture whose
host count does not match that drive, so the vendor figure is withheld with its reason (the
supplement's reading still arrives on every pass). The second case pairs the capture with the
smartctl JSON built from the same drive's real ``smart-log``, so the vendor figures reach
/metrics and are seen to stay while the data age grows.
"""

from __future__ import annotations

import shutil
import subprocess
import time

import pytest
import yaml

from tests.conftest import ROOT, fixture_path
from tests.fakehost import AgentProcess, build_default_host
from tests.promstack import skip_or_fail
from tests.support.e2e import FAST, NVME0_SERIAL, SDA_SERIAL, scrape, value, wait_for

ADD = "nvme-vendor/intel-collector-readme__intel_smart-log-add_nvme0n1.txt"
PAIRED_SMARTCTL = "nvme-vendor/constructed__smartctl-json_SSDPELKX020T8.json"
PAIRED_SERIAL = "PHLJ9371009E2P0J"  # the serial of the paired capture's drive
ALERTS = ROOT / "deploy" / "prometheus" / "ssdfleet-alerts.yml"
ENABLE_VENDOR = ["--collector.nvme_vendor", "--interval.nvme_vendor", "1"]
# smartctl's own words when the device cannot be opened (exit status 2: bit 1, no data).
OPEN_FAILED = "Smartctl open device: /dev/nvme0 failed: No such device\n"


def _host(tmp_path, paired: bool):
    host = build_default_host(tmp_path)
    if paired:
        host.set_response("smartctl", "nvme0", fixture_path(PAIRED_SMARTCTL))
    host.set_response("nvme", "nvme0", fixture_path(ADD))
    return host


def _vendor_calls(host) -> int:
    return sum(1 for c in host.calls() if c == "nvme intel smart-log-add /dev/nvme0")


def _age(samples, serial):
    return value(samples, "ssd_data_age_seconds", serial=serial)


@pytest.mark.parametrize("paired", [False, True], ids=["real-smartctl-capture", "paired-vendor-capture"])
def test_unreadable_smartctl_makes_the_data_age_grow_while_the_vendor_log_answers(tmp_path, paired):
    serial = PAIRED_SERIAL if paired else NVME0_SERIAL
    host = _host(tmp_path, paired)
    agent = AgentProcess(host, FAST + ENABLE_VENDOR)
    try:
        agent.wait_ready()

        def both_read():
            s = scrape(agent)
            fresh = _age(s, serial) is not None and _age(s, serial) < 3
            return s if fresh and value(s, "ssd_collector_success", collector="nvme_vendor") == 1 else None

        good = wait_for(both_read, timeout=60)
        life_left = value(good, "ssd_life_left_ratio", serial=serial)
        assert life_left is not None
        nand = value(good, "ssd_nand_written_bytes_total", serial=serial)
        assert (nand is not None) == paired  # the unpaired capture's unit does not check out
        if not paired:
            assert value(good, "ssd_value_withheld", serial=serial, field="nand_written_bytes") == 1

        # smartctl's output turns unreadable: garbage with exit status 0, later a failing open.
        host.set_response("smartctl", "nvme0", b"\x00\xffSMART data: {{ truncated")
        turned = time.time()
        wait_for(lambda: value(scrape(agent), "ssd_collector_success", collector="smartctl") == 0, timeout=60)
        calls_before = _vendor_calls(host)
        first = scrape(agent)
        time.sleep(3)
        host.set_response("smartctl", "nvme0", OPEN_FAILED, exit_code=2)
        time.sleep(3)
        later = wait_for(lambda: (lambda s: s if _vendor_calls(host) > calls_before + 1 else None)(scrape(agent)),
                         timeout=60)
        waited = time.time() - turned

        # The vendor log kept answering, and its answers did not make the data fresh.
        assert value(later, "ssd_collector_success", collector="nvme_vendor") == 1
        assert value(later, "ssd_nand_written_bytes_total", serial=serial) == nand
        assert _age(later, serial) > _age(first, serial) + 4, (_age(first, serial), _age(later, serial))
        # The age counts from the last good smartctl read, a moment before the output turned.
        assert waited - 3 < _age(later, serial) < waited + 5, (_age(later, serial), waited)
        # The last good values stay, marked by their age; the other drives stay fresh.
        assert value(later, "ssd_life_left_ratio", serial=serial) == life_left
        assert _age(later, SDA_SERIAL) < 3
        assert agent.proc.poll() is None
        _the_alert_fires_on(later, serial, tmp_path)
    finally:
        agent.stop()


def _series(samples, name, **labels) -> str:
    """The series as Prometheus would store it from this scrape (instance and job added)."""
    found = [dict(ls) for (n, ls) in samples if n == name and set(labels.items()) <= set(ls)]
    assert len(found) == 1, (name, labels, found)
    found[0].update(instance="db1:9877", job="ssdfleet")
    return name + "{" + ", ".join(f'{k}="{v}"' for k, v in sorted(found[0].items())) + "}"


def _humanized(seconds: int) -> str:
    """Prometheus's humanizeDuration of a whole number of seconds over a minute."""
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [(days, "d"), (hours, "h"), (minutes, "m"), (secs, "s")]
    while parts[0][0] == 0:
        parts.pop(0)
    return " ".join(f"{n}{unit}" for n, unit in parts)


def _the_alert_fires_on(samples, serial, tmp_path) -> None:
    """A promtool unit test over the shipped alert rules with the scraped series: the stale
    drive's age grows by a minute each minute from where the agent left it (it was seen to grow
    with the clock above), the fresh SATA drive's age saws between 0 and 60 s, and the vendor
    log's collector keeps succeeding. SSDFleetDataStale fires for the stale drive alone, once
    the age has been over 1200 s for 10 minutes."""
    tool = shutil.which("promtool")
    if tool is None:
        skip_or_fail("promtool not installed (Debian package prometheus)")
    age = int(_age(samples, serial))
    stale = _series(samples, "ssd_data_age_seconds", serial=serial)
    labels = dict(next(ls for (n, ls) in samples if n == "ssd_data_age_seconds" and dict(ls)["serial"] == serial))
    over_at = (1200 - age) // 60 + 1  # the first minute the age is over 1200 s
    fires_at = over_at + 10
    case = {
        "rule_files": [str(ALERTS)],
        "evaluation_interval": "1m",
        "tests": [{
            "interval": "1m",
            "input_series": [
                {"series": stale, "values": f"{age}+60x{fires_at + 5}"},
                {"series": _series(samples, "ssd_data_age_seconds", serial=SDA_SERIAL),
                 "values": " ".join(["0+60x1"] * ((fires_at + 6) // 2 + 1))},
                {"series": _series(samples, "ssd_collector_success", collector="nvme_vendor"),
                 "values": f"1x{fires_at + 5}"},
                {"series": _series(samples, "ssd_collector_success", collector="smartctl"),
                 "values": f"0x{fires_at + 5}"},
            ],
            "alert_rule_test": [
                {"eval_time": f"{fires_at - 1}m", "alertname": "SSDFleetDataStale", "exp_alerts": []},
                {"eval_time": f"{fires_at}m", "alertname": "SSDFleetDataStale", "exp_alerts": [{
                    "exp_labels": {"severity": "ticket", "instance": "db1:9877", "job": "ssdfleet",
                                   "device": labels["device"], "serial": serial},
                    "exp_annotations": {
                        "summary": f"db1:9877: health data for drive {labels['device']} (serial {serial}) is stale",
                        "description": f"The last successful health poll of this drive is "
                                       f"{_humanized(age + 60 * fires_at)} old.",
                        "runbook_url": "http://db1:9877/runbooks#ssdfleetdatastale",
                    },
                }]},
            ],
        }],
    }
    path = tmp_path / "stale_test.yml"
    path.write_text(yaml.safe_dump(case, sort_keys=False))
    r = subprocess.run([tool, "test", "rules", str(path)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr + path.read_text()
