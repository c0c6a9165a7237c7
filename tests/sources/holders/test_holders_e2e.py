"""End to end: the page for a drive whose write cache went off names the PostgreSQL directory on it.

The real ``ssdfleet agent`` polls the default fake host (tests/fakehost.py) to which this test
gives a stack in the kernel's sysfs layout: partition sda1 is the member of md0 (sysfs holders
and slaves links), and md0 is mounted at /var/lib/postgresql (the node_exporter /proc/mounts
capture, plus that line). A fake ``zpool`` replays "no pools available". Debian's Prometheus
scrapes the agent with the SHIPPED alert rules (only the ``for:`` shortened, as in
tests/test_alerting_e2e.py) and sends to Debian's Alertmanager with the SHIPPED routing; the
fake hdparm then reports the cache off, and the pager's notification must say where the
database lives. The same holding shows in /metrics, on the page and in ``ssdfleet status``.
"""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from tests.conftest import ROOT, fixture_path
from tests.fakehost import AgentProcess, FakeHost, build_default_host
from tests.livefleet import FAST_INTERVALS
from tests.promstack import alertmanager_factory, prometheus_factory  # noqa: F401 (fixtures)
from tests.support.alerting import paging_stack, wait_until_paging_works, webhook  # noqa: F401 (fixture)
from tests.support.e2e import SDA_SERIAL
from tests.support.holders import fake_zpool

ALERT = "SSDWriteCacheDisabled"
PAGE_TIMEOUT = 60.0


def give_sda_a_database(host: FakeHost) -> None:
    """sda1 (partition 1 of the Samsung 860 EVO) -> md0 -> ext4 at /var/lib/postgresql."""
    sda1 = host.sys / "block" / "sda" / "sda1"
    (sda1 / "holders").mkdir(parents=True)
    (sda1 / "partition").write_text("1\n")
    (sda1 / "holders" / "md0").touch()
    md0 = host.sys / "block" / "md0"
    (md0 / "slaves").mkdir(parents=True)
    (md0 / "slaves" / "sda1").touch()
    (md0 / "size").write_text("976771072\n")
    (host.proc / "mounts").write_text(
        fixture_path("holders/node_exporter__proc_1_mounts.txt").read_text()
        + "/dev/md0 /var/lib/postgresql ext4 rw,relatime 0 0\n")


def test_the_page_names_the_mount(tmp_path, prometheus_factory, alertmanager_factory, webhook, capsys):  # noqa: F811
    host = build_default_host(tmp_path / "db1")
    give_sda_a_database(host)
    zpool = fake_zpool(host, "no pools available\n")
    config = tmp_path / "ssdfleet.yml"
    config.write_text(f"tools:\n  zpool: {zpool}\n")
    agent = AgentProcess(host, FAST_INTERVALS + ["--config", str(config)])
    try:
        agent.wait_ready()
        held = ('ssd_drive_holds_info{device="sda",fstype="ext4",mountpoint="/var/lib/postgresql",'
                f'serial="{SDA_SERIAL}",stack="sda1>md0"}} 1.0')
        deadline = time.monotonic() + 30
        metrics = agent.get("/metrics").decode()
        while held not in metrics:  # the agent serves before its first SMART pass names the serial
            assert time.monotonic() < deadline, [line for line in metrics.splitlines() if "holds" in line]
            time.sleep(0.2)
            metrics = agent.get("/metrics").decode()
        series = [line for line in metrics.splitlines() if line.startswith("ssd_drive_holds_info{")]
        # besides md0: the capture's two kubelet mounts of the whole /dev/sda; the other drives hold nothing
        assert len(series) == 3 and all('device="sda"' in line for line in series), series
        assert sum('mountpoint="/var/lib/kubelet/' in line for line in series) == 2, series
        page_html = agent.get("/").decode()
        assert '<div class="holds">holds: ' in page_html and "/var/lib/postgresql (md0, ext4)" in page_html
        status = subprocess.run([sys.executable, "-m", "agent", "status", "--url", agent.url],
                                capture_output=True, text=True, timeout=60, cwd=str(ROOT),
                                env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
        line = [x for x in status.stdout.splitlines() if x.startswith("  sda  holds: ")]
        assert line and "/var/lib/postgresql (md0, ext4)" in line[0], status.stdout + status.stderr
        assert (host.root / "zpool" / "calls.log").read_text().startswith("zpool status -P\n")

        prom = paging_stack(tmp_path, agent, prometheus_factory, alertmanager_factory, webhook, {ALERT: "3s"})
        prom.wait_for_query(f'ssd_drive_holds_info{{serial="{SDA_SERIAL}"}} == 1', timeout=30)
        wait_until_paging_works(prom)
        assert webhook.notifications() == []

        host.set_response("hdparm", "sda", fixture_path("fakehost/hdparm-W-sda-off.txt"))
        deadline = time.monotonic() + PAGE_TIMEOUT
        while not webhook.notifications("pager"):
            if time.monotonic() > deadline:
                pytest.fail(f"no page {PAGE_TIMEOUT:.0f} s after the flip; alerts {prom.alerts()}")
            time.sleep(0.1)
        (page,) = webhook.notifications("pager")
        (alert,) = page.body["alerts"]
        assert alert["labels"]["alertname"] == ALERT and alert["labels"]["device"] == "sda"
        summary = alert["annotations"]["summary"]
        assert summary.startswith(f"127.0.0.1:{agent.port}: write cache is off on drive sda (serial {SDA_SERIAL}); "
                                  "it holds "), summary
        assert "/var/lib/postgresql (sda1>md0, ext4)" in summary, summary
        assert summary.count("/var/lib/kubelet/") == 2, summary  # and the capture's two mounts of /dev/sda
        with capsys.disabled():
            print(f"\n[holders] the page said: {summary}")
    except BaseException:
        print(f"agent log (tail):\n{agent.log()[-3000:]}")
        raise
    finally:
        agent.stop()
