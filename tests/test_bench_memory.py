"""The memory benchmarks (bench/memory_breakdown.py, bench/import_cost.py) run and print figures
that could be wrong: the agent's RSS grows from its first answer to full data, the traced
growth names the agent's own files, and a library imported last costs something."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_memory_breakdown_prints_rss_and_the_traced_growth():
    out = subprocess.run([sys.executable, str(ROOT / "bench" / "memory_breakdown.py"), "--size", "4", "--rounds", "1",
                          "--top", "40"], capture_output=True, text=True, cwd=str(ROOT), timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    rows = dict(re.findall(r"^\| (first [^|]+?) \| ([\d.]+) \|", out.stdout, re.M))
    assert set(rows) == {"first /metrics answer", "first full data"}, out.stdout
    assert 5 < float(rows["first /metrics answer"]) <= float(rows["first full data"]) < 500, out.stdout
    files = re.findall(r"^\| (\S[^|]*?) \| (-?\d+) \| -?\d+ \|$", out.stdout, re.M)
    assert any(name.startswith(("agent/", "collectors/")) for name, _ in files), out.stdout
    assert sum(int(kib) for _, kib in files) > 0, out.stdout


def test_a_library_imported_last_costs_memory():
    sys.path.insert(0, str(ROOT))
    try:
        from bench.import_cost import last_growth
    finally:
        sys.path.remove(str(ROOT))
    # pydantic with its compiled core, after the standard library the agent loads: megabytes.
    assert last_growth(sys.executable, ROOT, "pydantic") > 1024
