"""What one hourly-rate rule costs a Prometheus by itself, at a site's size.

The hourly recording rules (deploy/prometheus/ssdfleet-recording.yml, ``ssdfleet-recording-1h``
and its siblings) each read an hour of one raw counter for every drive. In the fleet bench
(bench/fleet_scale.py) their evaluation time is that work plus the wait for two CPUs shared
with the ingestion and every other group. This script prices the work alone: one counter for
``--drives`` drives, a sample every 60 s over the last 130 minutes, written into a block by
``promtool tsdb create-blocks-from openmetrics``; a Prometheus with no scrape and no rules; then
each form of the rule asked as an instant query with ``stats=all``, one at a time, ``--repeat``
times after one uncounted run. Printed per form: Prometheus' own evaluation time (median), the
wall time of the HTTP answer (median; it includes encoding the result as JSON, which a rule does
not do), the samples read and the series returned.

Usage: ``python bench/hour_rule_cost.py [--drives 20000] [--repeat 7] [--workdir DIR]``.
Asserts nothing (tests/test_bench_hour_rule.py runs it small and checks its arithmetic).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Dict, List

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.procs import free_port, need_tools, start, stop, work_directory  # noqa: E402

METRIC = "ssd_io_busy_seconds_total"
MINUTES = 130  # the hour, its offset 1h, and ten minutes to spare
FORMS = {
    "shipped: increase([1h]) / 3600 and offset 1h": f"increase({METRIC}[1h]) / 3600 and {METRIC} offset 1h",
    "increase([1h]) / 3600 alone": f"increase({METRIC}[1h]) / 3600",
    "the guard alone (offset 1h)": f"{METRIC} offset 1h",
    "instant selection": METRIC,
}


def write_openmetrics(path: Path, drives: int, now: int) -> int:
    """One counter per drive, 8 drives per host, every 60 s over the last MINUTES minutes,
    each drive at its own rate. Returns the samples written."""
    samples = 0
    with open(path, "w", encoding="ascii") as fh:
        for i in range(drives):
            labels = (f'{{job="fleet-sim",instance="host{i // 8:05d}:9877",device="nvme{i % 8}n1",'
                      f'serial="S{i:08d}"}}')
            rate = 0.05 + (i % 90) / 100.0  # busy seconds per second: 5 % to 94 %
            fh.write("".join(f"{METRIC}{labels} {i * 1000.0 + 60 * rate * k:.1f} {now - 60 * (MINUTES - k)}\n"
                             for k in range(MINUTES + 1)))
            samples += MINUTES + 1
        fh.write("# EOF\n")
    return samples


def query(base: str, expr: str, at: float) -> Dict:
    url = base + "/api/v1/query?" + urllib.parse.urlencode({"query": expr, "time": f"{at:.3f}", "stats": "all"})
    with urllib.request.urlopen(url, timeout=600) as resp:
        return json.load(resp)


def measure(drives: int, repeat: int, workdir: Path) -> List[Dict]:
    now = int(time.time()) // 60 * 60
    om = workdir / "hour.om"
    data = workdir / "data"
    write_openmetrics(om, drives, now)
    subprocess.run(["promtool", "tsdb", "create-blocks-from", "openmetrics", "-q", str(om), str(data)],
                   check=True, stdout=subprocess.DEVNULL, timeout=3600)
    om.unlink()
    (workdir / "prometheus.yml").write_text("global: {}\n", encoding="ascii")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    prom = start(["prometheus", f"--config.file={workdir / 'prometheus.yml'}", f"--storage.tsdb.path={data}",
                  f"--web.listen-address=127.0.0.1:{port}", "--storage.tsdb.retention.time=60d"],
                 workdir / "prometheus.log", base + "/-/ready", timeout=300)
    rows = []
    try:
        at = now - 120  # the newest samples two minutes back: the whole hour and its offset are in the block
        for name, expr in FORMS.items():
            runs = []
            for attempt in range(repeat + 1):
                started = time.monotonic()
                body = query(base, expr, at)
                wall = time.monotonic() - started
                if attempt:
                    runs.append((body["data"]["stats"]["timings"]["evalTotalTime"], wall,
                                 body["data"]["stats"]["samples"]["totalQueryableSamples"],
                                 len(body["data"]["result"])))
            rows.append({"form": name, "expr": expr,
                         "eval_ms": 1000 * statistics.median(r[0] for r in runs),
                         "wall_ms": 1000 * statistics.median(r[1] for r in runs),
                         "samples": runs[0][2], "series": runs[0][3]})
    finally:
        stop(prom, grace=60)
    return rows


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, not {value}")
    return value


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--drives", type=_positive, default=20000)
    ap.add_argument("--repeat", type=_positive, default=7)
    ap.add_argument("--workdir", help="work directory (default: a new temporary one, removed after)")
    args = ap.parse_args(argv)
    need_tools("prometheus", "promtool")
    with work_directory(args.workdir, "ssdfleet-hour-") as workdir:
        rows = measure(args.drives, args.repeat, workdir)
    print(f"{args.drives} drives, one counter, 60 s samples over {MINUTES} min; median of {args.repeat} "
          f"queries each; load average (1 min) {os.getloadavg()[0]:.2f}")
    print("| form | evaluation (median) | HTTP answer (median) | samples read | series |")
    print("|---|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['form']} | {r['eval_ms']:.0f} ms | {r['wall_ms']:.0f} ms | {r['samples']} | {r['series']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
