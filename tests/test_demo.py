"""The demo script (deploy/demo/run_demo.py) as a user runs it: simulated agents, the real
Prometheus and Alertmanager on 127.0.0.1 with the shipped rules, a report of the alerts."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys

from tests.fakehost import ROOT
from tests.promstack import skip_or_fail


def test_demo_starts_the_stack_and_reports_the_cache_alert(tmp_path):
    for binary in ("prometheus", "prometheus-alertmanager"):
        if shutil.which(binary) is None:
            skip_or_fail(f"{binary} is not installed")
    r = subprocess.run(
        [sys.executable, str(ROOT / "deploy/demo/run_demo.py"), "--agents", "1", "--drives", "8",
         "--minutes", "0.4", "--report-every", "8", "--scrape-interval", "2", "--workdir", str(tmp_path / "demo")],
        capture_output=True, text=True, timeout=180, cwd=str(tmp_path))
    out = r.stdout
    assert r.returncode == 0, out + r.stderr
    assert re.search(r"agent +http://127\.0\.0\.1:\d+/", out), out
    assert "alertmanager http://127.0.0.1:" in out
    reports = [line for line in out.splitlines() if line.startswith("[")]
    assert len(reports) >= 2, out
    assert all("1/1 agents up" in line for line in reports[1:]), reports
    # The demo host's LITEON (sdb) has its write cache off: the shipped rule sees it.
    assert any(re.search(r"(pending|firing): [^;]*SSDWriteCacheDisabled x1 \(sdb\)", line) for line in reports), reports
    # Everything it started is gone.
    left = subprocess.run(["pgrep", "-f", str(tmp_path / "demo")], capture_output=True, text=True)
    assert left.stdout.strip() == "", left.stdout
