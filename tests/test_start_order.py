"""Listen first, discover after (issue 32): the real agent answers /metrics before its first
discovery has finished, with its own series and no drives yet, then fills in.

The host is the simulator's (8 drives, real output layouts); its smartctl is reached through
a fake executable at the configured tool path that takes 3 s over ``--scan-open`` and writes
down when that scan ended, so the test can tell an answer given before discovery from one
given after, whatever the machine's speed.
"""

from __future__ import annotations

import http.client
import os
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Optional

from simulator.demo import demo_drives
from simulator.host import SimHost
from tests.fakehost import ROOT, free_port, stop_process

SCAN_SECONDS = 3.0
DRIVES = 8
# The goal is 0.5 s on a quiet machine; the bound here allows a loaded 2-core one (the
# interpreter and imports alone took 0.7-6 s there at load 12). The order is what the test holds to.
FIRST_ANSWER_BOUND = 30.0

_SLOW_SCAN = """#!/bin/sh
case "$*" in
  *--scan*) sleep {sleep}; "{real}" "$@"; rc=$?; date +%s.%N > "{ended}"; exit $rc ;;
esac
exec "{real}" "$@"
"""


def _metrics(port: int) -> Optional[bytes]:
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        try:
            conn.request("GET", "/metrics")
            response = conn.getresponse()
            return response.read() if response.status == 200 else None
        finally:
            conn.close()
    except OSError:
        return None


def _slow_scan_smartctl(host: SimHost, root: Path) -> Path:
    wrapper = root / "smartctl-slow-scan"
    wrapper.write_text(_SLOW_SCAN.format(sleep=SCAN_SECONDS, real=host.tool_path("smartctl"),
                                         ended=root / "scan-ended"))
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    return wrapper


def test_metrics_answer_before_discovery_then_every_drive(tmp_path):
    now = time.time()
    host = SimHost(tmp_path / "host", demo_drives(DRIVES, now), speed=0.0, sim_start=now)
    o = host.overrides()
    port = free_port()
    args = [sys.executable, "-m", "agent", "agent", "--listen-address", f"127.0.0.1:{port}", "--no-history",
            "--smartctl", str(_slow_scan_smartctl(host, tmp_path)), "--shannon-status", o["tool_shannon_status"],
            "--hdparm", o["tool_hdparm"], "--nvme", o["tool_nvme"], "--path.sysfs", o["path_sysfs"],
            "--path.procfs", o["path_procfs"]]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    with open(tmp_path / "agent.log", "wb") as log:
        spawned_wall, spawned = time.time(), time.perf_counter()
        proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=str(ROOT),
                                start_new_session=True)
        try:
            first = first_at = None
            while first is None and time.perf_counter() - spawned < 60 and proc.poll() is None:
                first = _metrics(port)
                first_at = time.perf_counter() - spawned
                time.sleep(0.01)
            assert first is not None, (tmp_path / "agent.log").read_text()
            drives_at = None
            while drives_at is None and time.perf_counter() - spawned < 120:
                body = _metrics(port) or b""
                if body.count(b"\nssd_drive_info{") == DRIVES:
                    drives_at = time.perf_counter() - spawned
                time.sleep(0.05)
        finally:
            stop_process(proc)
    scan_ended = float((tmp_path / "scan-ended").read_text()) - spawned_wall
    print(f"\n[start order] {DRIVES} drives: first /metrics {first_at:.2f} s after spawn; discovery's scan "
          f"ended at {scan_ended:.2f} s; every drive on /metrics at {drives_at:.2f} s; "
          f"load average {os.getloadavg()[0]:.2f}")
    # Answered before discovery was done: the agent's own series, no drive yet.
    assert first_at < scan_ended
    assert b"ssd_exporter_build_info{" in first and b"\nssd_drives 0.0\n" in first
    assert b"ssd_drive_info{" not in first
    assert first_at < FIRST_ANSWER_BOUND
    assert drives_at is not None and drives_at > scan_ended
