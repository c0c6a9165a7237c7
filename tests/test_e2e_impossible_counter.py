"""End to end: a real report with a counter no drive can have, on a running agent.

The host runs smartctl 6.6 (text output). Its scan finds two NVMe drives and one SATA disk behind
a MegaRAID controller; that disk answers with a real hw-probe report of a KingFast 16GB whose
"241 Host_Writes_32MiB" reads 58113977622861 (1.9e21 bytes: 1.2e11 times the drive's capacity).
Before the evidence checks such a value overflowed the history insert and stopped every drive's
history. Now the figure is withheld with its reason, the collector stays healthy, and every
drive's history keeps growing.
"""

from __future__ import annotations

import json
import time

import pytest

from tests.conftest import fixture_path
from tests.fakehost import AgentProcess, FakeHost, history_rows
from tests.support.e2e import FAST, scrape, value, wait_for

BSDHW = "smartctl-text-bsdhw/"
KINGFAST = BSDHW + "bsdhw__SSD_KingFast_SSD_16GB_C8F2EFADA009.txt"
NVME_A = BSDHW + "bsdhw__NVMe_ADATA_SX6000LNP_512GB_300AD9014326.txt"
NVME_B = BSDHW + "bsdhw__NVMe_ADATA_APSFG-2T-CSUS_0189060AFC01.txt"
# smartctl 6.6's banner, the first lines `smartctl --version` prints, from a real 6.6 report
OLD_BANNER = "smartctl-text/linuxhw-EnterpriseDrive__SSD_Crucial_CT500MX200SSD1_6DF324EA380D.txt"
SCAN = "smartctl-text/pySMART__linux_multiple_devices_--scan-open.txt"
KINGFAST_ID = "/dev/bus/0:sat+megaraid,60"  # masked serial: identity is the path and -d type


@pytest.fixture
def host(tmp_path):
    host = FakeHost(tmp_path)
    banner = fixture_path(OLD_BANNER).read_text(errors="replace").splitlines()[:2]
    host.set_response("smartctl", "version", "\n".join(banner) + "\n")
    host.set_response("smartctl", "scan", fixture_path(SCAN))
    host.set_response("smartctl", "0", fixture_path(KINGFAST))
    host.set_response("smartctl", "nvme0", fixture_path(NVME_A))
    host.set_response("smartctl", "nvme1", fixture_path(NVME_B))
    host.block_device("nvme0n1", 1000215216)
    host.block_device("nvme1n1", 4000797360)
    host.diskstats("")
    return host


def test_impossible_counter_is_withheld_and_history_keeps_growing(host, tmp_path):
    config = tmp_path / "config.yml"
    config.write_text("history_min_interval_seconds: 1\n")
    agent = AgentProcess(host, FAST + ["--config", str(config)])
    try:
        agent.wait_ready()
        s = wait_for(lambda: (lambda s: s if value(s, "ssd_value_withheld", serial=KINGFAST_ID,
                                                   field="host_written_bytes") == 1 else None)(scrape(agent)))
        # the impossible figure is absent, the drive's other figures are there
        assert value(s, "ssd_host_written_bytes_total", serial=KINGFAST_ID) is None
        assert value(s, "ssd_power_on_seconds_total", serial=KINGFAST_ID) == 4576 * 3600
        assert value(s, "ssd_collector_success", collector="smartctl") == 1
        assert value(s, "ssd_history_healthy") == 1
        # the reason is in the API
        drives = json.loads(agent.get("/api/v1/drives"))
        drives = drives.get("drives", drives) if isinstance(drives, dict) else drives
        kingfast = next(d for d in drives if d["serial"] == KINGFAST_ID)
        row = next(r for r in kingfast["evidence"] if r["field"] == "host_written_bytes")
        assert row["state"] == "withheld" and ("2**63" in row["reason"] or "capacity" in row["reason"])
        # every drive, the KingFast included, keeps adding samples
        db = host.state / "history.sqlite"
        first = wait_for(lambda: (lambda r: r if len(r) == 3 else None)(history_rows(db)), timeout=30)
        time.sleep(4)
        later = history_rows(db)
        assert set(later) == set(first)
        assert all(later[k] > first[k] for k in first), (first, later)
        assert "Traceback" not in agent.log() and "crashed" not in agent.log()
    finally:
        agent.stop()
