"""Fleet scale: 20,000 simulated drives on 2,500 hosts in a real Prometheus with the shipped rules.

Two sources of data, because a rule is evaluated at wall-clock *now* and backfilled blocks
cannot reach now (``promtool`` writes immutable blocks; the head must start after them):

1. **History, backfilled.** 30 days of hourly samples of the slow per-drive series (life left,
   host and NAND bytes written, projected wear-out) rendered as OpenMetrics from the wear
   model, one file per 2-hour block range, each turned into a TSDB block by
   ``promtool tsdb create-blocks-from openmetrics``. (promtool 2.42 re-reads its whole input
   once per 2-hour range, so one file per range keeps the work linear.)
2. **Live.** One HTTP endpoint on 127.0.0.1 serves the whole fleet's current exposition
   (every host's agent series with its own ``instance`` and ``job``, plus ``up``), scraped
   with ``honor_labels: true`` every 60 s: the way a federating or aggregating proxy looks to
   Prometheus. The per-drive series are those of docs/metrics.md, with the counts per kind
   that the real agent exports (bench/agent_bench.py measures them).

Prometheus then runs the shipped recording and alert rules. After a few evaluation rounds the
script reads each group's ``evaluationTime`` from /api/v1/rules (several samples) and times
every query of the fleet dashboard (dashboards/json/ssdfleet-fleet.json) with ``$job``
substituted: as Grafana sends it (instant, or a range over the dashboard's 7 days) and
repeated to take a median.

``--rules-dir DIR`` loads the two rule files from DIR instead of deploy/prometheus (another
version's, to compare rule group times). With ``--before-dashboard OLD.json`` it also times the panels of another version of the fleet
dashboard (``git show REF:dashboards/json/ssdfleet-fleet.json > OLD.json``) against the same
Prometheus at the same moment, and prints both per panel: the before/after of a dashboard
change. ``--output FILE`` writes everything printed after the backfill to FILE as well.

Usage: ``python bench/fleet_scale.py [--hosts 2500] [--drives-per-host 8] [--days 30]
[--before-dashboard OLD.json] [--output FILE] [--workdir DIR] [--keep]``. Everything it starts
is stopped at the end (and on Ctrl-C).
"""

from __future__ import annotations

import argparse
import http.server
import json
import math
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Dict, List, Optional, Tuple

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simulator.demo import demo_drives  # noqa: E402
from simulator.wear import DAY, DriveSpec, state_at, wearout_time  # noqa: E402

JOB = "ssdfleet-fleet"
BLOCK = 2 * 3600
COLLECTORS = ("discovery", "history", "shannon", "smartctl", "write_cache", "diskstats")


# --------------------------------------------------------------------------- the fleet

class Fleet:
    def __init__(self, hosts: int, per_host: int, now: float) -> None:
        self.now = now
        self.hosts: List[Tuple[str, List[DriveSpec]]] = []
        for h in range(hosts):
            instance = f"db{h:05d}.example.internal:9877"
            # demo_drives spreads life used and kinds; the offset varies serials and wear
            self.hosts.append((instance, demo_drives(per_host, now - 60 * DAY, seed_offset=h + 1)))
        self.drive_count = hosts * per_host

    @staticmethod
    def block(spec: DriveSpec) -> str:
        if spec.kind == "nvme":
            return spec.device
        if spec.kind == "shannon":
            return "df" + spec.device[3:]
        return spec.device


def _labels(instance: str, spec: DriveSpec) -> str:
    return f'instance="{instance}",job="{JOB}",device="{Fleet.block(spec)}",serial="{spec.serial}"'


# --------------------------------------------------------------------------- history

HISTORY_FAMILIES = (
    ("ssd_life_left_ratio", "gauge", ""),
    ("ssd_host_written_bytes", "counter", "_total"),
    ("ssd_nand_written_bytes", "counter", "_total"),
    ("ssd_projected_wearout_timestamp_seconds", "gauge", ""),
)


def _history_values(spec: DriveSpec, t: float) -> Tuple[float, float, float, Optional[float]]:
    st = state_at(spec, t)
    left = math.floor(st.life_left * 100) / 100
    used = 1 - left
    wear = None
    if used >= 0.05 and st.write_rate > 0:
        wear = t + st.host_written * left / used / (spec.writes_per_day / DAY)
    return left, st.host_written, st.nand_written, wear


def write_history_file(fleet: Fleet, start: float, path: Path, step: float) -> int:
    """One 2-hour range of OpenMetrics (families grouped, as the format requires)."""
    times = [start + i * step for i in range(int(BLOCK // step)) if start + i * step < fleet.now - 3600]
    if not times:
        return 0
    rows: Dict[str, List[str]] = {name: [] for name, _, _ in HISTORY_FAMILIES}
    for instance, drives in fleet.hosts:
        for spec in drives:
            labels = _labels(instance, spec)
            for t in times:
                left, host, nand, wear = _history_values(spec, t)
                ts = f"{t:.0f}"
                rows["ssd_life_left_ratio"].append(f"ssd_life_left_ratio{{{labels}}} {left:.2f} {ts}")
                rows["ssd_host_written_bytes"].append(f"ssd_host_written_bytes_total{{{labels}}} {host:.0f} {ts}")
                rows["ssd_nand_written_bytes"].append(f"ssd_nand_written_bytes_total{{{labels}}} {nand:.0f} {ts}")
                if wear is not None:
                    rows["ssd_projected_wearout_timestamp_seconds"].append(
                        f'ssd_projected_wearout_timestamp_seconds{{{labels},method="observed"}} {wear:.0f} {ts}')
    n = 0
    with open(path, "w") as fh:
        for name, kind, _ in HISTORY_FAMILIES:
            fh.write(f"# TYPE {name} {kind}\n")
            fh.write("\n".join(rows[name]))
            fh.write("\n")
            n += len(rows[name])
        fh.write("# EOF\n")
    return n


def backfill(fleet: Fleet, days: float, step: float, workdir: Path, data: Path) -> Dict[str, float]:
    first = (int(fleet.now - days * DAY) // BLOCK) * BLOCK
    starts = list(range(first, int(fleet.now - 3600), BLOCK))
    data.mkdir(parents=True, exist_ok=True)
    files = workdir / "openmetrics"
    files.mkdir(exist_ok=True)
    samples = 0
    gen_time = 0.0
    tool_time = 0.0
    total_bytes = 0

    def convert(path: Path) -> float:
        t = time.monotonic()
        subprocess.run(["promtool", "tsdb", "create-blocks-from", "openmetrics", "-q", str(path), str(data)],
                       check=True, stdout=subprocess.DEVNULL, timeout=1800)
        path.unlink()
        return time.monotonic() - t

    # generate in this process while promtool converts the previous range in another
    with ThreadPoolExecutor(max_workers=1) as pool:
        pending = None
        for i, start in enumerate(starts):
            path = files / f"{start}.om"
            t = time.monotonic()
            n = write_history_file(fleet, start, path, step)
            gen_time += time.monotonic() - t
            if n == 0:
                path.unlink(missing_ok=True)
                continue
            samples += n
            total_bytes += path.stat().st_size
            if pending is not None:
                tool_time += pending.result()
            pending = pool.submit(convert, path)
            if i % 24 == 0:
                print(f"  backfill {i + 1}/{len(starts)} ranges, {samples / 1e6:.1f} M samples", flush=True)
        if pending is not None:
            tool_time += pending.result()
    return {"samples": samples, "bytes": total_bytes, "generate_seconds": gen_time,
            "promtool_seconds": tool_time, "blocks": len(starts)}


# --------------------------------------------------------------------------- live exposition

def render_live(fleet: Fleet, now: float) -> bytes:
    """Every host's agent series, as the agents would serve them, with instance and job."""
    fam: Dict[str, List[str]] = {}

    def add(name: str, line: str) -> None:
        fam.setdefault(name, []).append(line)

    for instance, drives in fleet.hosts:
        host_labels = f'instance="{instance}",job="{JOB}"'
        add("up", f"up{{{host_labels}}} 1")
        add("ssd_drives", f"ssd_drives{{{host_labels}}} {len(drives)}")
        add("ssd_history_healthy", f"ssd_history_healthy{{{host_labels}}} 1")
        add("ssd_exporter_build_info", f'ssd_exporter_build_info{{{host_labels},version="0.1.0",python="3.11.7"}} 1')
        for c in COLLECTORS:
            add("ssd_collector_success", f'ssd_collector_success{{{host_labels},collector="{c}"}} 1')
            add("ssd_collector_duration_seconds", f'ssd_collector_duration_seconds{{{host_labels},collector="{c}"}} 0.2')
            add("ssd_collector_errors_total", f'ssd_collector_errors_total{{{host_labels},collector="{c}"}} 0')
            add("ssd_collector_last_run_timestamp_seconds",
                f'ssd_collector_last_run_timestamp_seconds{{{host_labels},collector="{c}"}} {now:.0f}')
        for spec in drives:
            st = state_at(spec, now)
            lb = _labels(instance, spec)
            left = math.floor(st.life_left * 100) / 100
            kind = spec.kind
            add("ssd_drive_info", f'ssd_drive_info{{{lb},kind="{kind}",model="{spec.model}",firmware="x"}} 1')
            add("ssd_capacity_bytes", f"ssd_capacity_bytes{{{lb}}} {spec.capacity_bytes}")
            add("ssd_life_left_ratio", f"ssd_life_left_ratio{{{lb}}} {left:.2f}")
            add("ssd_smart_healthy", f"ssd_smart_healthy{{{lb}}} {1 if left > 0 else 0}")
            add("ssd_host_written_bytes_total", f"ssd_host_written_bytes_total{{{lb}}} {st.host_written:.0f}")
            add("ssd_host_read_bytes_total", f"ssd_host_read_bytes_total{{{lb}}} {st.host_read:.0f}")
            add("ssd_power_on_seconds_total", f"ssd_power_on_seconds_total{{{lb}}} {st.power_on_seconds:.0f}")
            add("ssd_power_cycles_total", f"ssd_power_cycles_total{{{lb}}} {spec.power_cycles}")
            add("ssd_temperature_celsius", f'ssd_temperature_celsius{{{lb},sensor="drive"}} {st.celsius:.0f}')
            add("ssd_temperature_limit_celsius", f'ssd_temperature_limit_celsius{{{lb},sensor="drive"}} 70')
            add("ssd_write_cache_enabled", f"ssd_write_cache_enabled{{{lb}}} {1 if st.write_cache else 0}")
            add("ssd_write_cache_expected_enabled", f"ssd_write_cache_expected_enabled{{{lb}}} 1")
            add("ssd_write_cache_mismatch", f"ssd_write_cache_mismatch{{{lb}}} {0 if st.write_cache else 1}")
            add("ssd_write_cache_state", f'ssd_write_cache_state{{{lb},source="sysfs_queue",state="{"enabled" if st.write_cache else "disabled"}"}} 1')
            add("ssd_data_age_seconds", f"ssd_data_age_seconds{{{lb}}} 120")
            rate = spec.writes_per_day / DAY
            add("ssd_write_rate_bytes_per_second", f"ssd_write_rate_bytes_per_second{{{lb}}} {rate:.0f}")
            if 1 - left >= 0.05 and left > 0:
                wear = now + st.host_written * left / (1 - left) / rate
                add("ssd_projected_wearout_timestamp_seconds",
                    f'ssd_projected_wearout_timestamp_seconds{{{lb},method="observed"}} {wear:.0f}')
                add("ssd_endurance_remaining_bytes", f"ssd_endurance_remaining_bytes{{{lb}}} {st.host_written * left / (1 - left):.0f}")
            io_w = st.host_written / spec.io_size_bytes
            io_r = st.host_read / spec.io_size_bytes
            lat = spec.write_latency_cache_on if st.write_cache else spec.write_latency_cache_off
            add("ssd_io_writes_completed_total", f"ssd_io_writes_completed_total{{{lb}}} {io_w:.0f}")
            add("ssd_io_reads_completed_total", f"ssd_io_reads_completed_total{{{lb}}} {io_r:.0f}")
            add("ssd_io_written_bytes_total", f"ssd_io_written_bytes_total{{{lb}}} {st.host_written:.0f}")
            add("ssd_io_read_bytes_total", f"ssd_io_read_bytes_total{{{lb}}} {st.host_read:.0f}")
            add("ssd_io_write_time_seconds_total", f"ssd_io_write_time_seconds_total{{{lb}}} {io_w * lat:.3f}")
            add("ssd_io_read_time_seconds_total", f"ssd_io_read_time_seconds_total{{{lb}}} {io_r * spec.read_latency:.3f}")
            add("ssd_io_busy_seconds_total", f"ssd_io_busy_seconds_total{{{lb}}} {io_w * lat + io_r * spec.read_latency:.3f}")
            add("ssd_io_in_flight", f"ssd_io_in_flight{{{lb}}} 0")
            for sensor in (("controller", "board", "flash") if kind == "shannon" else ()):
                add("ssd_temperature_celsius", f'ssd_temperature_celsius{{{lb},sensor="{sensor}"}} {st.celsius:.0f}')
            if kind in ("shannon", "ata"):
                add("ssd_nand_written_bytes_total", f"ssd_nand_written_bytes_total{{{lb}}} {st.nand_written:.0f}")
                add("ssd_write_amplification", f"ssd_write_amplification{{{lb}}} {spec.write_amplification}")
                add("ssd_defects", f'ssd_defects{{{lb},type="reallocated"}} {int(st.grown_bad_ratio * 1e5)}')
            if kind == "shannon":
                add("ssd_bad_block_ratio", f"ssd_bad_block_ratio{{{lb}}} {st.bad_block_ratio:.6f}")
                add("ssd_spare_left_ratio", f"ssd_spare_left_ratio{{{lb}}} {0.27 * st.spare_left:.4f}")
                add("ssd_spare_threshold_ratio", f"ssd_spare_threshold_ratio{{{lb}}} 0.10")
                add("ssd_readonly", f"ssd_readonly{{{lb}}} {1 if st.access_mode == 'readonly' else 0}")
                add("ssd_write_reduced", f"ssd_write_reduced{{{lb}}} {1 if st.access_mode == 'reduced_write' else 0}")
                for rail, volts in (("internal", 1.0), ("auxiliary", 1.79)):
                    add("ssd_voltage_volts", f'ssd_voltage_volts{{{lb},rail="{rail}"}} {volts}')
            if kind == "nvme":
                add("ssd_spare_left_ratio", f"ssd_spare_left_ratio{{{lb}}} {st.spare_left:.2f}")
                add("ssd_spare_threshold_ratio", f"ssd_spare_threshold_ratio{{{lb}}} 0.10")
                add("ssd_media_errors_total", f"ssd_media_errors_total{{{lb}}} {int(st.grown_bad_ratio * 2000)}")
                add("ssd_nvme_critical_warning", f"ssd_nvme_critical_warning{{{lb}}} 0")
    out = []
    for lines in fam.values():
        out.append("\n".join(lines))
    return ("\n".join(out) + "\n").encode()


class LiveExposition:
    """Serves the fleet's current exposition; re-rendered in the background every 60 s."""

    def __init__(self, fleet: Fleet) -> None:
        self.fleet = fleet
        self.body = render_live(fleet, time.time())
        self.series = self.body.count(b"\n") + 1
        self.render_seconds = 0.0
        self._stop = threading.Event()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
                body = outer.body
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self._threads = [threading.Thread(target=self.server.serve_forever, daemon=True),
                         threading.Thread(target=self._refresh, daemon=True)]
        for t in self._threads:
            t.start()

    def _refresh(self) -> None:
        while not self._stop.wait(60):
            t = time.monotonic()
            self.body = render_live(self.fleet, time.time())
            self.render_seconds = time.monotonic() - t

    def stop(self) -> None:
        self._stop.set()
        self.server.shutdown()
        self.server.server_close()


# --------------------------------------------------------------------------- Prometheus

def api(base: str, path: str, params: Optional[Dict[str, str]] = None, timeout: float = 120) -> Dict:
    url = base + path + ("?" + urllib.parse.urlencode(params) if params else "")
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return json.load(r)


def dashboard_queries(path: Path) -> List[Tuple[str, str, bool]]:
    doc = json.loads(path.read_text())
    out = []

    def walk(panels):
        for p in panels:
            walk(p.get("panels", []))
            for t in p.get("targets", []) or []:
                if t.get("expr"):
                    out.append((p.get("title", "?"), t["expr"], bool(t.get("instant"))))

    walk(doc["panels"])
    return out


def substitute(expr: str, jobs: List[str]) -> str:
    # Grafana's "All" for a multi-value regex variable is the values joined as a regex group
    value = "(" + "|".join(jobs) + ")"
    return (expr.replace("$job", value).replace("${job}", value)
            .replace("$__rate_interval", "4m").replace("$__interval", "10m").replace("$__range", "7d"))


def time_query(base: str, expr: str, instant: bool, now: float, repeat: int) -> Tuple[float, int]:
    """(median seconds, series returned) of the query as Grafana sends it."""
    times = []
    n = 0
    for _ in range(repeat):
        t = time.perf_counter()
        if instant:
            r = api(base, "/api/v1/query", {"query": expr, "time": f"{now:.0f}"})
        else:
            # Grafana: 7 days over ~1,000 px gives a 10-minute step
            r = api(base, "/api/v1/query_range", {"query": expr, "start": f"{now - 7 * DAY:.0f}",
                                                  "end": f"{now:.0f}", "step": "600"})
        times.append(time.perf_counter() - t)
        if r.get("status") != "success":
            raise RuntimeError(f"{expr}: {r}")
        n = len(r["data"]["result"])
    return statistics.median(times), n


def time_dashboard(base: str, path: Path, jobs: List[str], now: float,
                   repeat: int = 3) -> List[Tuple[str, str, bool, float, int]]:
    """(panel, expr, instant, median seconds, series) for every query of a dashboard file."""
    out = []
    for title, expr, instant in dashboard_queries(path):
        seconds, n = time_query(base, substitute(expr, jobs), instant, now, repeat)
        out.append((title, expr, instant, seconds, n))
    return out


def per_panel(timings: List[Tuple[str, str, bool, float, int]]) -> Dict[str, Tuple[float, int]]:
    """panel title -> (summed median seconds of its queries, number of queries), in order."""
    panels: Dict[str, Tuple[float, int]] = {}
    for title, _, _, seconds, _ in timings:
        total, count = panels.get(title, (0.0, 0))
        panels[title] = (total + seconds, count + 1)
    return panels


class Tee:
    """print() to stdout and, from the moment it is opened, to a file too."""

    def __init__(self) -> None:
        self.file = None

    def open(self, path: str) -> None:
        self.file = open(path, "w", encoding="utf-8")

    def __call__(self, *args, **kwargs) -> None:
        print(*args, **kwargs)
        if self.file is not None:
            kwargs.pop("flush", None)
            print(*args, file=self.file, **kwargs)
            self.file.flush()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hosts", type=int, default=2500)
    ap.add_argument("--drives-per-host", type=int, default=8)
    ap.add_argument("--days", type=float, default=30)
    ap.add_argument("--step", type=float, default=3600, help="seconds between history samples")
    ap.add_argument("--settle", type=float, default=420, help="seconds of live scraping before measuring")
    ap.add_argument("--workdir")
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    ap.add_argument("--before-dashboard", help="another fleet dashboard JSON to time alongside")
    ap.add_argument("--output", help="also write the results to this file")
    ap.add_argument("--rules-dir", help="load ssdfleet-recording.yml and ssdfleet-alerts.yml from here "
                    "(default deploy/prometheus), e.g. another version's, to time its rule groups")
    args = ap.parse_args()
    out = Tee()
    for tool in ("prometheus", "promtool"):
        if shutil.which(tool) is None:
            sys.exit(f"{tool} is not installed")
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="ssdfleet-fleet-"))
    workdir.mkdir(parents=True, exist_ok=True)
    data = workdir / "data"
    prom = None
    live = None
    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    try:
        now = time.time()
        fleet = Fleet(args.hosts, args.drives_per_host, now)
        print(f"fleet: {fleet.drive_count} drives on {args.hosts} hosts; history {args.days:g} days "
              f"at {args.step:g} s", flush=True)
        t = time.monotonic()
        stats = backfill(fleet, args.days, args.step, workdir, data)
        stats["wall_seconds"] = time.monotonic() - t
        print(f"backfill: {stats['samples'] / 1e6:.1f} M samples, {stats['bytes'] / 1e9:.2f} GB OpenMetrics, "
              f"{stats['blocks']} blocks, generate {stats['generate_seconds']:.0f} s, promtool "
              f"{stats['promtool_seconds']:.0f} s, wall {stats['wall_seconds']:.0f} s", flush=True)

        t = time.monotonic()
        live = LiveExposition(fleet)
        print(f"live exposition: {live.series} series, {len(live.body) / 1e6:.1f} MB, rendered in "
              f"{time.monotonic() - t:.1f} s", flush=True)

        for name in ("ssdfleet-recording.yml", "ssdfleet-alerts.yml"):
            src = Path(args.rules_dir or ROOT / "deploy" / "prometheus") / name
            if src.exists():
                shutil.copy(src, workdir / name)
        rules = [n for n in ("ssdfleet-recording.yml", "ssdfleet-alerts.yml") if (workdir / n).exists()]
        config = {
            "global": {"scrape_interval": "60s", "scrape_timeout": "55s", "evaluation_interval": "1m"},
            "rule_files": rules,
            "scrape_configs": [{"job_name": "fleet-sim", "honor_labels": True,
                                "static_configs": [{"targets": [f"127.0.0.1:{live.port}"]}]}],
        }
        (workdir / "prometheus.yml").write_text(json.dumps(config, indent=1))
        port = _free_port()
        base = f"http://127.0.0.1:{port}"
        log = open(workdir / "prometheus.log", "wb")
        prom = subprocess.Popen(
            ["prometheus", f"--config.file={workdir / 'prometheus.yml'}", f"--storage.tsdb.path={data}",
             f"--web.listen-address=127.0.0.1:{port}", "--storage.tsdb.retention.time=60d"],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline and not stopping.is_set():
            if prom.poll() is not None:
                raise RuntimeError((workdir / "prometheus.log").read_text()[-3000:])
            try:
                if urllib.request.urlopen(base + "/-/ready", timeout=5).status == 200:
                    break
            except OSError:
                pass
            time.sleep(2)
        print(f"prometheus ready on {base}; scraping and evaluating for {args.settle:.0f} s", flush=True)
        if args.output:
            out.open(args.output)
            out(f"fleet: {fleet.drive_count} drives on {args.hosts} hosts; history {args.days:g} days at "
                f"{args.step:g} s; live scrape every 60 s for {args.settle:.0f} s before measuring; rules from "
                f"{args.rules_dir or 'deploy/prometheus'}\n")
        stopping.wait(args.settle)

        head = api(base, "/api/v1/status/tsdb")["data"]["headStats"]
        out(f"head: {head['numSeries']} series", flush=True)
        groups: Dict[str, List[float]] = {}
        rule_times: Dict[str, List[float]] = {}
        errors = set()
        for _ in range(4):  # four readings, a minute apart: the groups run every 1 and 3 minutes
            for g in api(base, "/api/v1/rules")["data"]["groups"]:
                groups.setdefault(g["name"], []).append(g["evaluationTime"])
                for r in g["rules"]:
                    rule_times.setdefault(r.get("name", "?"), []).append(r.get("evaluationTime", 0))
                    if r.get("lastError"):
                        errors.add(f"{r.get('name')}: {r['lastError']}")
            if stopping.wait(60):
                break
        out("\n| rule group | evaluation time (median of 4 readings) | max |")
        out("|---|---:|---:|")
        for name, values in groups.items():
            out(f"| {name} | {statistics.median(values) * 1e3:.0f} ms | {max(values) * 1e3:.0f} ms |")
        slow = sorted(rule_times.items(), key=lambda kv: -statistics.median(kv[1]))[:8]
        out("\nslowest rules: " + "; ".join(f"{k} {statistics.median(v) * 1e3:.0f} ms" for k, v in slow))
        if errors:
            out("rule errors: " + "; ".join(sorted(errors)))

        jobs = [v for v in api(base, "/api/v1/label/job/values")["data"] if v.startswith("ssdfleet")]
        qnow = time.time()
        out("\n| panel | query | as sent | median | series |")
        out("|---|---|---|---:|---:|")
        totals = []
        after = time_dashboard(base, ROOT / "dashboards" / "json" / "ssdfleet-fleet.json", jobs, qnow)
        for title, expr, instant, seconds, n in after:
            totals.append(seconds)
            short = expr if len(expr) <= 70 else expr[:67] + "..."
            out(f"| {title} | `{short}` | {'instant' if instant else 'range 7d/10m'} | "
                f"{seconds * 1e3:.0f} ms | {n} |", flush=True)
        out(f"\ndashboard total (sequential): {sum(totals):.2f} s over {len(totals)} queries")
        if args.before_dashboard:
            # Interleaved, query for query (before, after, before, after, ...), so that load
            # from anything else on the machine falls on both sides alike.
            old_queries = dashboard_queries(Path(args.before_dashboard))
            new_queries = dashboard_queries(ROOT / "dashboards" / "json" / "ssdfleet-fleet.json")
            samples: Dict[Tuple[str, int], List[float]] = {}
            for _ in range(5):
                for side, queries in (("before", old_queries), ("after", new_queries)):
                    for index, (_title, expr, instant) in enumerate(queries):
                        seconds, _ = time_query(base, substitute(expr, jobs), instant, qnow, 1)
                        samples.setdefault((side, index), []).append(seconds)
            before = [(title, expr, instant, statistics.median(samples[("before", i)]), 0)
                      for i, (title, expr, instant) in enumerate(old_queries)]
            after = [(title, expr, instant, statistics.median(samples[("after", i)]), 0)
                     for i, (title, expr, instant) in enumerate(new_queries)]
            old_panels, new_panels = per_panel(before), per_panel(after)
            out(f"\npanel query time, {args.before_dashboard} (before) against the current dashboard "
                "(after), same Prometheus, timed in turns (sum over a panel's queries of the median of 5):\n")
            out("| panel | before | queries | after | queries |")
            out("|---|---:|---:|---:|---:|")
            for title in dict.fromkeys([*old_panels, *new_panels]):
                b, nb = old_panels.get(title, (float("nan"), 0))
                a, na = new_panels.get(title, (float("nan"), 0))
                out(f"| {title} | {b * 1e3:.1f} ms | {nb} | {a * 1e3:.1f} ms | {na} |")
            out(f"| **whole dashboard** | {sum(s for *_, s, _ in before):.2f} s | {len(before)} | "
                f"{sum(s for *_, s, _ in after):.2f} s | {len(after)} |")
        rss = _rss_mib(prom.pid)
        out(f"prometheus RSS {rss:.0f} MiB; data dir {_du(data) / 1e9:.2f} GB; live render "
              f"{live.render_seconds:.1f} s")
        sample = fleet.hosts[0][1][0]
        out(f"(model check: {sample.serial} wears out at {wearout_time(sample)})")
    finally:
        if prom is not None and prom.poll() is None:
            prom.terminate()
            try:
                prom.wait(timeout=30)
            except subprocess.TimeoutExpired:
                prom.kill()
                prom.wait(timeout=10)
        if live is not None:
            live.stop()
        if not args.keep and not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)
    return 0


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return -1.0


def _du(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


if __name__ == "__main__":
    sys.exit(main())
