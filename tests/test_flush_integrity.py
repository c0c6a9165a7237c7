"""Issue 15, part 2: the kernel says `write through` while the drive's cache is on.

The fake host is the default one (tests/fakehost.py): a Samsung 860 EVO on sda whose fake
``hdparm -W`` replays captured output (cache on, or off) and whose sysfs
``queue/write_cache`` the test rewrites. The poller and the exposition are the real ones; the
end-to-end case runs the real agent process, a Debian Prometheus with the SHIPPED rules and a
Debian Alertmanager with the SHIPPED routing, as tests/test_alerting_e2e.py does.
"""

from __future__ import annotations

import time
from typing import Dict

import pytest

from agent import durability
from agent.metrics import make_registry
from agent.poller import Poller
from collectors.model import CACHE_DISABLED, CACHE_ENABLED, WriteCacheState
from collectors.smartctl import text_report as smartctl_text
from tests.conftest import fixture_path
from tests.fakehost import AgentProcess, build_default_host
from tests.livefleet import FAST_INTERVALS
from tests.promstack import alertmanager_factory, prometheus_factory  # noqa: F401 (fixtures)
from tests.support.alerting import (  # noqa: F401 (webhook is a fixture)
    ALERT_RULES,
    ALERTMANAGER_CONFIG,
    RECORDING_RULES,
    _alert_state,
    _alerts_text,
    _wait_for,
    paging_stack,
    shortened_rules,
    wait_until_paging_works,
    webhook,
)
from tests.support.e2e import SDA_SERIAL

ALERT = "SSDWriteCacheFlushIgnored"
ALERT_FOR = "3s"  # shipped: 5m
SDA = {"device": "sda", "serial": SDA_SERIAL}
HDPARM_OFF = "fakehost/hdparm-W-sda-off.txt"


def _poll(tmp_path, kernel: str, hdparm_off: bool = False, **config) -> Dict[str, float]:
    host = build_default_host(tmp_path / "db1")
    host.set_write_cache("sda", kernel)
    if hdparm_off:
        host.set_response("hdparm", "sda", fixture_path(HDPARM_OFF))
    poller = Poller(host.config(**config))
    try:
        poller.poll_once()
    finally:
        poller.stop()
    registry = make_registry(poller.snapshot)
    names = ("ssd_write_cache_flush_ignored", "ssd_write_cache_enabled", "ssd_power_loss_protection",
             "ssd_write_cache_expected_enabled", "ssd_write_cache_mismatch")
    return {name: registry.get_sample_value(name, SDA) for name in names}


def test_write_through_while_the_drive_caches_is_flagged(tmp_path):
    got = _poll(tmp_path, "write through")
    assert got["ssd_write_cache_flush_ignored"] == 1
    # The older view alone looks healthy: the drive's own answer says the cache is on, as expected.
    assert got["ssd_write_cache_enabled"] == 1 and got["ssd_write_cache_mismatch"] == 0
    assert got["ssd_power_loss_protection"] is None  # an 860 EVO is not in the model table


def test_write_back_with_the_cache_on_is_not_flagged(tmp_path):
    assert _poll(tmp_path, "write back")["ssd_write_cache_flush_ignored"] == 0


def test_write_through_with_the_drive_cache_off_is_not_flagged(tmp_path):
    got = _poll(tmp_path, "write through", hdparm_off=True)
    assert got["ssd_write_cache_flush_ignored"] == 0  # no volatile cache: nothing to flush
    assert got["ssd_write_cache_enabled"] == 0


def test_no_drive_side_answer_means_unknown_not_fine(tmp_path):
    host = build_default_host(tmp_path / "db1")
    host.set_write_cache("sda", "write through")
    host.remove_tool("hdparm")
    host.remove_tool("smartctl")  # nothing can ask the drive
    poller = Poller(host.config(collectors=["write_cache"]))
    try:
        poller.poll_once()
    finally:
        poller.stop()
    samples = [s for f in make_registry(poller.snapshot).collect() for s in f.samples]
    # the kernel's side was read ...
    assert any(s.name == "ssd_write_cache_state" and s.labels["device"] == "sda"
               and s.labels["source"] == "sysfs_queue" for s in samples), samples
    # ... but with no answer from the drive there is no verdict, rather than a reassuring 0
    assert [s for s in samples if s.name == "ssd_write_cache_flush_ignored"] == []


def test_configured_protection_sets_the_expected_cache_state(tmp_path):
    without = _poll(tmp_path / "a", "write back",
                    power_loss_protection=[{"serial": SDA_SERIAL, "protected": False}])
    assert without["ssd_power_loss_protection"] == 0
    assert without["ssd_write_cache_expected_enabled"] == 0
    assert without["ssd_write_cache_mismatch"] == 1  # cache on, a drive without protection
    with_plp = _poll(tmp_path / "b", "write through",
                     power_loss_protection=[{"model": "^Samsung SSD 860"}])
    assert with_plp["ssd_power_loss_protection"] == 1
    assert with_plp["ssd_write_cache_expected_enabled"] == 1 and with_plp["ssd_write_cache_mismatch"] == 0
    assert with_plp["ssd_write_cache_flush_ignored"] == 1  # still exported; the alert lets it pass
    # An explicit write_cache_rules entry wins over the protection it would imply.
    ruled = _poll(tmp_path / "c", "write back", power_loss_protection=[{"serial": SDA_SERIAL, "protected": False}],
                  write_cache_rules=[{"serial": SDA_SERIAL, "expected": "enabled"}])
    assert ruled["ssd_write_cache_expected_enabled"] == 1 and ruled["ssd_power_loss_protection"] == 0


@pytest.mark.parametrize("fixture, product", [
    ("smartctl-text/linuxhw-EnterpriseDrive__SSD_Intel_SSDSA2CW120G3_0EA0F3696753.txt", "Intel SSD 320 Series"),
    ("smartctl-text/linuxhw-EnterpriseDrive__SSD_Intel_SSDSC2BA200G4C_6C79314DCB8A.txt", "Intel SSD DC S3700 / S3710 Series"),
    ("smartctl-text-bsdhw/bsdhw__SSD_Intel_SSDSC2BA100G3L_A6DF2EC4A7C7.txt", "Intel SSD DC S3700 / S3710 Series"),
])
def test_model_table_recognises_real_reports(fixture, product):
    reading = smartctl_text.parse_smartctl_text_reading(fixture_path(fixture).read_text(errors="replace"),
                                                        device="/dev/sda")
    protected, source = durability.power_loss_protection(_NoConfig(), reading.serial, reading.model)
    assert protected is True, reading.model
    row = next(r for r in durability.PLP_MODELS if r.product == product)
    assert source == f"model table: {row.document}"


def test_every_model_table_row_cites_a_vendor_document():
    assert durability.PLP_MODELS
    for row in durability.PLP_MODELS:
        assert len(row.document) > 40 and row.product.split()[0] in row.document, row


def test_flush_ignored_reads_every_drive_side_source():
    kernel_wt = WriteCacheState(CACHE_DISABLED, "sysfs_queue")
    for source in ("hdparm", "nvme_feature", "smartctl", "scsi_cache_type"):
        assert durability.flush_ignored([kernel_wt, WriteCacheState(CACHE_ENABLED, source)]) is True, source
    assert durability.flush_ignored([kernel_wt]) is None
    assert durability.flush_ignored([WriteCacheState(CACHE_ENABLED, "hdparm")]) is None


class _NoConfig:
    power_loss_protection = ()
    write_cache_rules = ()


# ------------------------------------------------------------------ end to end


def test_write_through_while_cached_pages_the_on_call(
    tmp_path,
    prometheus_factory,  # noqa: F811
    alertmanager_factory,  # noqa: F811
    webhook,  # noqa: F811
    capsys,
):
    host = build_default_host(tmp_path / "db1")
    agent = AgentProcess(host, FAST_INTERVALS)
    try:
        agent.wait_ready()
        prom = paging_stack(tmp_path, agent, prometheus_factory, alertmanager_factory, webhook, {ALERT: ALERT_FOR})
        instance = f"127.0.0.1:{agent.port}"
        prom.wait_for_query(f'ssd_write_cache_flush_ignored{{serial="{SDA_SERIAL}"}} == 0', timeout=30)
        wait_until_paging_works(prom)
        time.sleep(5.0)  # longer than for: + group_wait: nothing pages while kernel and drive agree
        assert webhook.notifications() == [], _alerts_text(webhook.notifications())

        # Someone runs `echo "write through" > /sys/block/sda/queue/write_cache`; hdparm still says on.
        flipped = time.monotonic()
        host.set_write_cache("sda", "write through")
        page = _wait_for(lambda: webhook.notifications("pager"), "the page", 45)[0]
        took = page.received - flipped
        assert page.body["status"] == "firing", page.body
        (alert,) = page.body["alerts"]
        assert alert["labels"] == {"alertname": ALERT, "severity": "page", "instance": instance,
                                   "job": "ssdfleet", "device": "sda", "serial": SDA_SERIAL}, alert["labels"]
        assert "sda" in alert["annotations"]["summary"] and SDA_SERIAL in alert["annotations"]["summary"]
        assert alert["annotations"]["runbook_url"].endswith("#ssdwritecacheflushignored")
        # The old write-cache alert stays quiet: by the drive's own answer its cache is on, as expected.
        assert _alert_state(prom, "SSDWriteCacheDisabled") is None
        with capsys.disabled():
            print(f"\n[flush integrity] write through on sda with hdparm -W on -> page after {took:.1f} s")

        # Back to write back: the pager hears it resolved.
        host.set_write_cache("sda", "write back")
        resolved = _wait_for(
            lambda: [n for n in webhook.notifications("pager") if n.body["status"] == "resolved"],
            "the resolved notification", 30,
        )
        assert [a["labels"]["alertname"] for a in resolved[0].body["alerts"]] == [ALERT]
        assert webhook.notifications("tickets") == [], _alerts_text(webhook.notifications("tickets"))
    except BaseException:
        print(f"agent log (tail):\n{agent.log()[-3000:]}")
        raise
    finally:
        agent.stop()


def test_the_page_and_the_views_flag_it(tmp_path):
    from agent.page import render_page
    from agent.views import snapshot_views

    host = build_default_host(tmp_path / "db1")
    host.set_write_cache("sda", "write through")
    poller = Poller(host.config())
    try:
        snap = poller.poll_once()
    finally:
        poller.stop()
    (view,) = [v for v in snapshot_views(snap, time.time()) if v.device == "sda"]
    assert view.write_cache_flush_ignored is True and view.severity == "critical"
    assert "flush_ignored" in [f.key for f in view.flags], view.flags
    assert "kernel sends no cache flush" in render_page(snap, time.time(), hostname="db1")


def test_ssdfleet_status_reports_it_as_critical(tmp_path):
    import os
    import subprocess
    import sys

    host = build_default_host(tmp_path / "db1")
    host.set_write_cache("sda", "write through")
    result = subprocess.run([sys.executable, "-m", "agent", "status", "--local", *host.config_args()],
                            capture_output=True, text=True, timeout=120, env=dict(os.environ, COLUMNS="200"))
    assert result.returncode == 2, result.stdout + result.stderr  # Nagios CRITICAL
    assert "sda: kernel sends no cache flush" in result.stdout, result.stdout
