"""Every fleet-dashboard query stays under the stores' default limits at 1,000,000 drives.

Issue 33: a central store holds 1,000,000 drives (125,000 hosts of 8 drives each), in fifty
sites of 20,000 drives or in two hundred of 5,000 (the size at which every rule group is under
a second on two vCPUs, docs/scaling.md); both are checked. Nobody runs 80 M series here; the
figures are computed from per-site inputs measured on a real Prometheus:

1. One site, small: the fleet bench's model (bench/fleet_scale.py, at the real agent's density)
   for 40 hosts of 4 drives, served to a real Prometheus 2.42 that evaluates the shipped
   recording rules (each group every second, windows shortened as in the other end-to-end
   tests).
2. For every query of the fleet dashboard (and its variables), each series selector is counted
   there, and scaled by what it grows with: a ``job:`` series is per site (the site's one job),
   an ``instance:`` series and a raw series without a ``serial`` per host, a raw series with a
   ``serial`` per drive.
   A range query over a recorded list (the ten per job with the least life left, the busiest,
   the hottest) counts every drive the list held over the dashboard's 7 days, as the rules
   would have recorded them at this site from the same model (bench/ranking_window.py, with a
   flickering last degree of temperature), not the ten of one instant.
3. The query's series at 1,000,000 drives must stay under VictoriaMetrics' default
   ``-search.maxUniqueTimeseries`` (300,000), and a range query's samples (7 days at one sample
   a minute per series, an upper bound) under Prometheus' default ``--query.max-samples``
   (50,000,000).

The arithmetic can fail: a per-drive family, which the fleet panels read before this issue,
is a million series (checked below).
"""

from __future__ import annotations

import importlib
import re
import time
from pathlib import Path
from typing import Dict, List, Tuple

from tests.promstack import prometheus_factory, static_exporter_factory  # noqa: F401
from tests.support.alerting import shortened_rules
from tests.support.bench import load_fleet_scale
from tests.support.dashboards import load, query_panels

ROOT = Path(__file__).resolve().parent.parent
RECORDING = ROOT / "deploy" / "prometheus" / "ssdfleet-recording.yml"

FLEET_DRIVES = 1_000_000
DRIVES_PER_HOST = 8
FLEET_HOSTS = FLEET_DRIVES // DRIVES_PER_HOST
SITE_DRIVES = 20_000
SITES = FLEET_DRIVES // SITE_DRIVES
SMALL_SITES = FLEET_DRIVES // 5_000  # the site size docs/scaling.md recommends on two vCPUs
VM_MAX_UNIQUE_TIMESERIES = 300_000  # VictoriaMetrics -search.maxUniqueTimeseries default
PROM_MAX_SAMPLES = 50_000_000  # Prometheus --query.max-samples default
RANGE_SAMPLES_PER_SERIES = 7 * 24 * 60  # the dashboard's 7 days at one sample a minute (upper bound)

HOSTS, PER_HOST = 40, 4
SELECTOR = re.compile(r"([A-Za-z_:][A-Za-z0-9_:]*)\{([^{}]*)\}")


def _fleet_scale():
    return load_fleet_scale("fleet_scale_limits")


def _substitute(expr: str, job: str) -> str:
    return expr.replace("$site", ".*").replace("$job", job).replace("$__rate_interval", "5m")


def _fleet_queries() -> List[Tuple[str, str, bool]]:
    dashboard = load("ssdfleet-fleet.json")
    out = [(panel["title"], target["expr"], bool(target.get("instant")) or target.get("format") == "table")
           for panel in query_panels(dashboard) for target in panel["targets"]]
    out += [(f"variable {v['name']}", v["query"], True) for v in dashboard["templating"]["list"] if v["type"] == "query"]
    return out


def _at_scale(name: str, per_drive: int, per_other: int, drives: int, hosts: int, sites: int = SITES) -> int:
    if name.startswith("job:"):
        return (per_drive + per_other) * sites
    if name.startswith("instance:"):
        return (per_drive + per_other) * FLEET_HOSTS // hosts
    return per_drive * FLEET_DRIVES // drives + per_other * FLEET_HOSTS // hosts


def test_the_arithmetic_flags_a_per_drive_family():
    """A selector of a per-drive family (one series per drive at the site) is a million series."""
    assert _at_scale("ssd_life_left_ratio", per_drive=160, per_other=0, drives=160, hosts=40) == FLEET_DRIVES
    assert _at_scale("ssd_life_left_ratio", 160, 0, 160, 40) > VM_MAX_UNIQUE_TIMESERIES
    assert _at_scale("job:ssd_life_left_ratio:bottom10", 10, 0, 160, 40) == 10 * SITES
    assert _at_scale("job:ssd_life_left_ratio:bottom10", 10, 0, 160, 40, sites=SMALL_SITES) == 10 * SMALL_SITES
    assert _at_scale("up", 0, 40, 160, 40) == FLEET_HOSTS


def test_every_fleet_query_fits_the_default_limits_at_a_million_drives(
    prometheus_factory, static_exporter_factory, tmp_path, capsys  # noqa: F811
):
    fs = _fleet_scale()
    models = sorted({m for _, ms in fs.HOST_TYPES for m in ms})
    now = time.time()
    agent = fs.AgentSeries.capture(models, now)
    fleet = fs.Fleet(HOSTS, PER_HOST, now, seed=17, agent=agent, syncwrite_share=0.1, stratified=True)
    exporter = static_exporter_factory(lambda: fs.render_live(fleet, time.time(), generation=1))
    prom = prometheus_factory(
        scrape_configs=[{"job_name": "site", "honor_labels": True, "static_configs": [{"targets": [exporter.target]}]}],
        rule_files=[shortened_rules(RECORDING, tmp_path / RECORDING.name, {})],
    )
    queries = _fleet_queries()
    names = sorted({m.group(1) for _, expr, _ in queries for m in SELECTOR.finditer(expr)})
    recorded = [n for n in names if n.startswith(("job:", "instance:"))]
    assert recorded, names
    # every recorded input of the dashboard exists at the site, and the rankings are full
    for name in recorded:
        prom.wait_for_query(f"count({name})", timeout=60)
    prom.wait_for_query("count(job:ssd_life_left_ratio:bottom10) == 10", timeout=60)
    prom.wait_for_query("count(job:ssd_write_cache_enabled:bottom10) == 10", timeout=60)

    drives, hosts = fleet.drive_count, len(fleet.hosts)
    counts: Dict[str, Tuple[str, int, int]] = {}  # selector: (name, per drive, per other) at the site

    def count(selector: str) -> int:
        answer = prom.query(f"count({selector})")
        assert answer.get("status") == "success", answer
        result = answer["data"]["result"]
        return int(float(result[0]["value"][1])) if result else 0

    selectors: List[Tuple[str, str, bool, List[str]]] = []
    for title, expr, instant in queries:
        text = _substitute(expr, fs.JOB)
        keys = []
        for match in {m.group(0): m for m in SELECTOR.finditer(text)}.values():
            name, matchers = match.group(1), match.group(2)
            key = match.group(0)
            if key not in counts:
                inner = ", ".join(x for x in (matchers.strip(), f'__name__="{name}"') if x)
                counts[key] = (name, count("{" + inner + ', serial!=""}'), count("{" + inner + ', serial=""}'))
            keys.append(key)
        selectors.append((title, expr, instant, keys))

    # A range query over a recorded list reads every drive that was in it at any evaluation of
    # the 7 days, not the ten of one instant: the week the rules would have recorded at this
    # site, from the same fleet model with each temperature's last degree flickering
    # (bench/ranking_window.py; at 5,000 drives it holds 12, 18 and 66 series, docs/scaling.md).
    ranking = importlib.import_module("bench.ranking_window")
    week = ranking.rank_week(fleet, int(now), 7, ranking.rule_intervals(RECORDING), "jitter")
    week_series = {name: len(series) for name, series in week.items()}
    assert set(week_series) <= set(names), week_series  # the lists the panels read

    def site_series(key: str, instant: bool) -> Tuple[int, int]:
        name, per_drive, per_other = counts[key]
        if not instant and name in week_series and per_drive:
            return max(per_drive, week_series[name]), per_other
        return per_drive, per_other

    def rows_for(sites: int) -> List[Tuple[str, int, int, bool]]:
        rows = []
        for title, _, instant, keys in selectors:
            series = sum(_at_scale(counts[k][0], *site_series(k, instant), drives, hosts, sites) for k in keys)
            rows.append((title, series, series * (1 if instant else RANGE_SAMPLES_PER_SERIES), instant))
        return rows

    title_exprs: Dict[str, str] = {}
    for title, expr, _ in queries:
        title_exprs[title] = title_exprs.get(title, "") + expr
    rows = rows_for(SITES)
    small_rows = rows_for(SMALL_SITES)
    with capsys.disabled():
        for sites, table in ((SITES, rows), (SMALL_SITES, small_rows)):
            print(f"\n[fleet limits] {len(table)} fleet-dashboard queries at {FLEET_DRIVES:,} drives "
                  f"({sites} sites, {FLEET_HOSTS:,} hosts), from a site of {drives} drives on {hosts} hosts:")
            if sites == SITES:
                print("  the recorded lists over 7 days at the site: "
                      + "; ".join(f"{n} {c}" for n, c in sorted(week_series.items())))
            for title, series, samples, instant in sorted(table, key=lambda r: -r[1])[:8]:
                print(f"  {title}: {series:,} series" + ("" if instant else f", {samples:,} samples over 7 days"))
            print("  the week-long list panels: " + "; ".join(
                f"{title} {series:,} series" for title, series, _, instant in table
                if not instant and any(name in title_exprs[title] for name in week_series)))
    # What a central store holds at a million drives for each remote_write choice (docs/scaling.md):
    # every series; the recorded ones (per drive `ssd:` included); only what the fleet views read
    # (the `job:`, `instance:` and per-host series).
    kinds = {
        "raw per drive": count('{__name__=~"ssd_.+", serial!=""}') * FLEET_DRIVES // drives,
        "raw per host": count('{__name__=~"ssd_.+|up", serial=""}') * FLEET_HOSTS // hosts,
        "ssd: per drive": count('{__name__=~"ssd:.+"}') * FLEET_DRIVES // drives,
        "instance:": count('{__name__=~"instance:.+"}') * FLEET_HOSTS // hosts,
        "job:": count('{__name__=~"job:.+"}') * SITES,
    }
    fleet_read = {n for _, expr, _ in queries for n in (m.group(1) for m in SELECTOR.finditer(expr))
                  if not n.startswith(("job:", "instance:"))}
    per_host_read = sum(count(f'{{__name__="{n}", serial=""}}') for n in fleet_read) * FLEET_HOSTS // hosts
    choices = {
        "everything": sum(kinds.values()),
        "recorded only": kinds["ssd: per drive"] + kinds["instance:"] + kinds["job:"],
        "fleet inputs only": kinds["instance:"] + kinds["job:"] + per_host_read,
    }
    with capsys.disabled():
        print("  series by kind at 1,000,000 drives: " + "; ".join(f"{k} {v:,}" for k, v in kinds.items()))
        print("  central store by remote_write choice: " + "; ".join(f"{k} {v:,}" for k, v in choices.items())
              + f" (raw series the fleet views read: {', '.join(sorted(fleet_read))})")
    assert choices["fleet inputs only"] * 20 < choices["everything"]
    assert kinds["job:"] < 100_000  # per site, not per drive
    small_job = kinds["job:"] * SMALL_SITES // SITES
    with capsys.disabled():
        print(f"  with {SMALL_SITES} sites: job: {small_job:,}; fleet inputs only "
              f"{choices['fleet inputs only'] - kinds['job:'] + small_job:,}")
    assert small_job < 400_000  # two hundred sites' worth of per-site series
    over = [r for r in rows + small_rows if r[1] > VM_MAX_UNIQUE_TIMESERIES or r[2] > PROM_MAX_SAMPLES]
    assert not over, over
    # smaller sites add per-site series only: the per-host and per-drive selectors do not move
    assert sum(r[1] for r in small_rows) > sum(r[1] for r in rows)
    # the per-drive figures are real: the site's drives were counted
    assert count('{__name__="ssd_life_left_ratio", serial!=""}') > 0.8 * drives


def test_the_recorded_stale_agents_use_the_dashboards_threshold():
    """job:ssd_agents_stale:count counts data older than STALE_DATA_SECONDS, the threshold the
    Agents table colours by: one figure, written twice, held equal here."""
    import yaml

    from dashboards.common import STALE_DATA_SECONDS

    doc = yaml.safe_load(RECORDING.read_text(encoding="utf-8"))
    (expr,) = [r["expr"] for g in doc["groups"] for r in g["rules"] if r.get("record") == "job:ssd_agents_stale:count"]
    assert f"instance:ssd_data_age_seconds:max > {STALE_DATA_SECONDS})" in expr
