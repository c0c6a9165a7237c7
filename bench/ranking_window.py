"""The fleet dashboard's week-long ranking panels over a week of their recorded inputs.

Four panels of dashboards/json/ssdfleet-fleet.json graph seven days of a recorded list rather
than ranking every drive at every step: the ten drives with the least life left, the ten that
wrote the most per day, the ten hottest (``job:..:bottom10`` / ``:top10*``, every 4 minutes)
and each collector's slowest agent (``job:ssd_collector_duration_seconds:max``, every minute).
A range query reads every series that was in the list at any evaluation of the window, so its
cost and its series count depend on how often the ten change (churn), which one instant cannot
show. bench/fleet_scale.py runs the rules live for minutes; this script writes the week the
rules would have recorded and asks the panels over it.

For every evaluation of the rule over ``--days`` days (at the rule group's interval, read from
deploy/prometheus/ssdfleet-recording.yml) the ten are chosen as the rule chooses them, from the
fleet model of bench/fleet_scale.py (:class:`Fleet`: the same hosts and drives for the same
``--hosts``): life left in whole percent as the agent reports it, the day's host writes from the
hourly figures, the hottest sensor in whole degrees, ties broken by the rules' tie-breaker
(``1e-9 * ln(host bytes + 1)``). ``--churn`` chooses how the ten change:

* ``model``: as the model's drives move (wear, the daily load cycle that drives temperature);
* ``jitter``: the model, with each temperature reading off by -1, 0 or +1 degree at random, as a
  sensor's last degree flickers (an assumption: the model's temperatures are smooth);
* ``worst``: ten other drives at every evaluation, so the week holds min(drives, evaluations x
  10) series per list: the bound whatever the drives do.

Each week goes into TSDB blocks (``promtool tsdb create-blocks-from openmetrics``), a
Prometheus with no scrape and no rules starts on them, and each panel's query is asked as
Grafana asks it (7 days, a 10-minute step; ``$job`` and ``$site`` as "All"), ``--repeat`` times.
Printed per panel: the series the week holds (counted by the script, and matched by Prometheus'
``/api/v1/series`` over the window), the query's median time and the series it returned.

Usage: ``python bench/ranking_window.py [--hosts 625] [--drives-per-host 8] [--days 7]
[--churn model,jitter,worst] [--repeat 5] [--workdir DIR] [--output FILE]``. Asserts nothing
(tests/test_bench_ranking_window.py runs it small and checks what it writes against the model).
"""

from __future__ import annotations

import argparse
import math
import os
import random
import shutil
import sys
import time
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.fleet_scale import (  # noqa: E402
    BLOCK,
    JOB,
    Fleet,
    _labels,
    _to_block,
    api,
    dashboard_queries,
    substitute,
    time_query,
)
from bench.procs import free_port, need_tools, start, stop, work_directory  # noqa: E402
from simulator.wear import DAY, DriveSpec, state_at  # noqa: E402

RULES = ROOT / "deploy" / "prometheus" / "ssdfleet-recording.yml"
DASHBOARD = ROOT / "dashboards" / "json" / "ssdfleet-fleet.json"
LIFE = "job:ssd_life_left_ratio:bottom10"
WRITES = "job:ssd_host_written_bytes:top10_rate1d"
TEMPERATURE = "job:ssd_temperature_celsius:top10"
COLLECTOR = "job:ssd_collector_duration_seconds:max"
LISTS = (LIFE, WRITES, TEMPERATURE)
CHURNS = ("model", "jitter", "worst")
TEN = 10
COLLECTOR_SECONDS = 0.2  # what bench/fleet_scale.py's agents report for every collector

# One recorded series: its labels (as the exposition writes them) -> [(timestamp, value)].
Week = Dict[str, Dict[str, List[Tuple[int, float]]]]


def rule_intervals(path: Path = RULES) -> Dict[str, int]:
    """Seconds between evaluations of each recording rule: its group's interval."""
    import yaml

    out = {}
    for group in yaml.safe_load(path.read_text(encoding="utf-8"))["groups"]:
        seconds = _duration(group.get("interval", "1m"))
        for rule in group["rules"]:
            if "record" in rule:
                out[rule["record"]] = seconds
    return out


def _duration(text: str) -> int:
    units = {"s": 1, "m": 60, "h": 3600, "d": DAY}
    return int(float(text[:-1]) * units[text[-1]])


class Reader:
    """What the agents report of a drive at a time, as the rules see it; each hour's host
    bytes are kept (the day figure reads two of them)."""

    def __init__(self) -> None:
        self._hours: Dict[Tuple[str, int], float] = {}

    def _host_bytes(self, spec: DriveSpec, hour: int) -> float:
        key = (spec.serial, hour)
        if key not in self._hours:
            self._hours[key] = state_at(spec, hour).host_written
        return self._hours[key]

    def values(self, spec: DriveSpec, t: int) -> Tuple[float, float, float, float]:
        """(life left in whole percent, hottest sensor in whole degrees, host bytes per second
        over the day of the last hourly figure, the rules' tie-breaker)."""
        st = state_at(spec, t)
        life = math.floor(st.life_left * 100) / 100
        # The hottest sensor: a Shannon card's controller, the drive's own sensor otherwise
        # (bench/fleet_scale.py's exposition); the agent reports whole degrees.
        celsius = float(f"{st.celsius:.0f}")
        hour = t // 3600 * 3600
        day_rate = (self._host_bytes(spec, hour) - self._host_bytes(spec, hour - DAY)) / DAY
        return life, celsius, day_rate, 1e-9 * math.log(st.host_written + 1)


def _jitter(serial: str, t: int, seed: int) -> int:
    """-1, 0 or +1 degree, the same for the same drive, evaluation and seed."""
    return random.Random(f"{seed}:{serial}:{t}").randint(-1, 1)


def evaluations(now: int, days: float, interval: int) -> List[int]:
    """The rule's evaluation times over the window ending at ``now``, oldest first."""
    count = int(days * DAY // interval)
    return [now - interval * i for i in range(count, -1, -1)]


# The fleet and the churn of the run, for the worker processes (forked: they inherit them).
_DRIVES: List[Tuple[str, DriveSpec]] = []
_CHURN = "model"
_SEED = 17
_READER: Optional[Reader] = None


def _rank_at(job: Tuple[int, Tuple[str, ...], int]) -> Tuple[int, Dict[str, List[Tuple[str, float]]]]:
    """The lists ``names`` as their rules choose them at ``t`` (evaluation ``index``)."""
    global _READER
    t, names, index = job
    if _READER is None:
        _READER = Reader()
    if _CHURN == "worst":
        # ten other drives at every evaluation, in turn through the fleet
        chosen = [_DRIVES[(index * TEN + k) % len(_DRIVES)] for k in range(min(TEN, len(_DRIVES)))]
    else:
        chosen = _DRIVES
    rows: Dict[str, List[Tuple[float, float, str]]] = {name: [] for name in names}
    for instance, spec in chosen:
        life, celsius, day_rate, tie = _READER.values(spec, t)
        if _CHURN == "jitter":
            celsius += _jitter(spec.serial, t, _SEED)
        labels = _labels(instance, spec)
        if LIFE in rows:
            rows[LIFE].append((life - tie, life, labels))  # bottomk of life left less the tie-breaker
        if WRITES in rows:
            rows[WRITES].append((-day_rate, day_rate, labels))  # topk; ties left to topk
        if TEMPERATURE in rows:
            rows[TEMPERATURE].append((-(celsius + tie), celsius, labels))  # topk with the tie-breaker
    out = {}
    for name, ranked in rows.items():
        ranked.sort(key=lambda r: r[0])
        out[name] = [(labels, value) for _, value, labels in ranked[:TEN]]
    return t, out


def rank_week(fleet: Fleet, now: int, days: float, intervals: Dict[str, int], churn: str,
              seed: int = 17, workers: int = 0) -> Week:
    """The three lists and the collector maxima the rules would have recorded over the window.
    The model's drives are read once per evaluation time for every list evaluated then, in
    ``workers`` processes (default: one per CPU)."""
    global _DRIVES, _CHURN, _SEED, _READER
    _DRIVES = [(instance, spec) for instance, specs in fleet.hosts for spec in specs]
    _CHURN, _SEED, _READER = churn, seed, None
    due: Dict[int, List[str]] = {}
    index: Dict[int, int] = {}
    for name in LISTS:
        for i, t in enumerate(evaluations(now, days, intervals[name])):
            due.setdefault(t, []).append(name)
            index.setdefault(t, i)
    jobs = [(t, tuple(due[t]), index[t]) for t in sorted(due)]
    week: Week = {name: {} for name in LISTS + (COLLECTOR,)}
    workers = workers or os.cpu_count() or 1
    if churn == "worst" or workers == 1:
        results = map(_rank_at, jobs)
        pool = None
    else:
        import multiprocessing

        pool = multiprocessing.get_context("fork").Pool(workers)
        # contiguous chunks: a worker's hourly figures are asked again by its next evaluations
        results = pool.imap(_rank_at, jobs, chunksize=max(1, len(jobs) // (8 * workers)))
    try:
        for t, lists in results:
            for name, chosen in lists.items():
                for labels, value in chosen:
                    week[name].setdefault(labels, []).append((t, value))
    finally:
        if pool is not None:
            pool.close()
            pool.join()
    for t in evaluations(now, days, intervals[COLLECTOR]):
        for collector in fleet.collectors():
            week[COLLECTOR].setdefault(f'job="{JOB}",collector="{collector}"', []).append((t, COLLECTOR_SECONDS))
    return week


def write_blocks(week: Week, workdir: Path, data: Path) -> int:
    """The week as OpenMetrics, one file per 2-hour block range, each made a block; returns
    the samples written."""
    by_range: Dict[int, Dict[str, Dict[str, List[Tuple[int, float]]]]] = {}
    for name, series in week.items():
        for labels, points in series.items():
            for t, value in points:
                by_range.setdefault(t // BLOCK * BLOCK, {}).setdefault(name, {}).setdefault(labels, []).append(
                    (t, value))
    samples = 0
    data.mkdir(parents=True, exist_ok=True)
    for start_at, families in sorted(by_range.items()):
        path = workdir / f"{start_at}.om"
        with open(path, "w", encoding="ascii") as fh:
            for name, series in families.items():
                fh.write(f"# TYPE {name} gauge\n")
                for labels, points in series.items():
                    fh.write("".join(f"{name}{{{labels}}} {value:.6g} {t}\n" for t, value in points))
                    samples += len(points)
            fh.write("# EOF\n")
        _to_block(path, data)
    return samples


def panels() -> List[Tuple[str, str, str]]:
    """(title, record, expr) of the fleet dashboard's queries that graph a recorded list."""
    out = []
    for title, expr, instant in dashboard_queries(DASHBOARD):
        for record in LISTS + (COLLECTOR,):
            if record in expr and not instant:
                out.append((title, record, expr))
    return out


def measure(fleet: Fleet, now: int, days: float, churn: str, repeat: int, workdir: Path,
            intervals: Dict[str, int], say: Callable[[str], None] = print) -> List[Dict]:
    started = time.monotonic()
    week = rank_week(fleet, now, days, intervals, churn)
    ranked = time.monotonic() - started
    data = workdir / f"data-{churn}"
    samples = write_blocks(week, workdir, data)
    say(f"  {churn}: ranked in {ranked:.0f} s, {samples} samples written into blocks")
    (workdir / "prometheus.yml").write_text("global: {}\n", encoding="ascii")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    prom = start(["prometheus", f"--config.file={workdir / 'prometheus.yml'}", f"--storage.tsdb.path={data}",
                  f"--web.listen-address=127.0.0.1:{port}", "--storage.tsdb.retention.time=90d"],
                 workdir / f"prometheus-{churn}.log", base + "/-/ready", timeout=300)
    rows = []
    try:
        for title, record, expr in panels():
            matched = api(base, "/api/v1/series", {"match[]": record, "start": f"{now - days * DAY:.0f}",
                                                   "end": f"{now:.0f}"})["data"]
            seconds, returned = time_query(base, substitute(expr, [JOB]), False, now, repeat)
            rows.append({"churn": churn, "panel": title, "record": record, "interval": intervals[record],
                         "written": len(week[record]), "matched": len(matched), "ms": 1000 * seconds,
                         "returned": returned})
    finally:
        stop(prom, grace=60)
        shutil.rmtree(data, ignore_errors=True)
    return rows


def _positive(kind: Callable[[str], float]) -> Callable[[str], float]:
    def check(text: str) -> float:
        value = kind(text)
        if not (value > 0 and math.isfinite(value)):
            raise argparse.ArgumentTypeError(f"must be a number more than 0, not {text}")
        return value
    return check


def _churns(text: str) -> List[str]:
    chosen = [c.strip() for c in text.split(",") if c.strip()]
    unknown = [c for c in chosen if c not in CHURNS]
    if not chosen or unknown:
        raise argparse.ArgumentTypeError(f"choose from {', '.join(CHURNS)}, not {text!r}")
    return chosen


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hosts", type=_positive(int), default=625)
    ap.add_argument("--drives-per-host", type=_positive(int), default=8)
    ap.add_argument("--days", type=_positive(float), default=7.0)
    ap.add_argument("--churn", type=_churns, default=list(CHURNS))
    ap.add_argument("--repeat", type=_positive(int), default=5)
    ap.add_argument("--workdir", help="work directory (default: a new temporary one, removed after)")
    ap.add_argument("--output", help="also write the table to this file")
    args = ap.parse_args(argv)
    need_tools("prometheus", "promtool")
    now = int(time.time()) // 3600 * 3600 - 600  # blocks must end before the head starts
    fleet = Fleet(args.hosts, args.drives_per_host, float(now))
    intervals = rule_intervals()
    lines: List[str] = []

    def say(text: str) -> None:
        print(text, flush=True)
        lines.append(text)

    say(f"{fleet.drive_count} drives on {args.hosts} hosts, one job; {args.days:g} days of the recorded lists; "
        f"each panel asked {args.repeat} times (7 days, 10-minute step); load average (1 min) "
        f"{os.getloadavg()[0]:.2f}")
    rows: List[Dict] = []
    with work_directory(args.workdir, "ssdfleet-ranking-") as workdir:
        for churn in args.churn:
            rows += measure(fleet, now, args.days, churn, args.repeat, workdir, intervals, say)
    say(f"load average (1 min) after: {os.getloadavg()[0]:.2f}")
    say("| churn | panel | recorded every | series in the window (written / matched) | query (median) | series returned |")
    say("|---|---|---:|---:|---:|---:|")
    for r in rows:
        say(f"| {r['churn']} | {r['panel']} | {r['interval'] // 60} min | {r['written']} / {r['matched']} | "
            f"{r['ms']:.0f} ms | {r['returned']} |")
    if args.output:
        Path(args.output).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
