"""Ranked fleet panels show the same drives on Prometheus and on VictoriaMetrics.

``bottomk(N, ...)`` picks among drives with equal values in an order each store decides for
itself. The fleet table "Worst 10 drives by life left" ranks again the ten drives each job's
recording rule ranked (job:ssd_life_left_ratio:bottom10), across jobs and sites; it ranks them
by the rule's own key (job:ssd_life_left_ratio:bottom10_key: life left less the tie-breaker of
the bytes written), so that ties are broken by the data, not by the store. Here two sites'
recorded tens, whose tenth place overall is a six-way tie in life left, are served to a real
Prometheus (scraping them) and a real VictoriaMetrics (the same samples imported); the table's
query is taken from the generated dashboard JSON, and both stores must return exactly the ten
drives the keys define. (That the rule records these keys is a promtool case in
tests/rules/recording_test.yml.)
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

from tests.promstack import prometheus_factory, static_exporter_factory, victoriametrics_factory  # noqa: F401

ROOT = Path(__file__).resolve().parent.parent
FLEET_DASHBOARD = ROOT / "dashboards" / "json" / "ssdfleet-fleet.json"
JOB = "ssdfleet"

# Each site's recorded ten: four drives at 2 % and six at 10 % on both sites, so the table's
# tenth place is one of twelve drives at 10 %. Bytes written differ per drive, in an order
# unrelated to the serials; T-B-05 had no write counter (its key is its life left).
SITES = ("dc1", "dc2")
LIFE_LEFT = {}
WRITTEN = {}
for site_index, site in enumerate(SITES):
    for i in range(10):
        serial = f"T-{site[-1]}-{i:02d}"
        LIFE_LEFT[(site, serial)] = 0.02 if i < 4 else 0.10
        if serial != "T-2-05":
            WRITTEN[(site, serial)] = float((i * 7 + site_index * 3) % 20 + 1) * 1e12


def key(drive) -> float:
    """The recording rule's key: life left less 1e-9 x ln(bytes written + 1)."""
    if drive in WRITTEN:
        return LIFE_LEFT[drive] - 1e-9 * math.log(WRITTEN[drive] + 1)
    return LIFE_LEFT[drive]


def expected_worst() -> set:
    return {serial for _, serial in sorted(LIFE_LEFT, key=key)[:10]}


def _device(serial: str) -> str:
    return "sd" + chr(ord("a") + int(serial[-2:]))


def exposition() -> str:
    lines = []
    for (site, serial), value in LIFE_LEFT.items():
        labels = f'site="{site}",job="{JOB}",instance="db-{site}:9877",device="{_device(serial)}",serial="{serial}"'
        lines.append(f"job:ssd_life_left_ratio:bottom10{{{labels}}} {value}")
        lines.append(f"job:ssd_life_left_ratio:bottom10_key{{{labels}}} {key((site, serial))!r}")
        lines.append(f'job:ssd_drive_info:listed{{{labels},model="M",kind="ata"}} 1')
    return "\n".join(lines) + "\n"


def worst_table_query() -> str:
    doc = json.loads(FLEET_DASHBOARD.read_text(encoding="utf-8"))
    (panel,) = [p for p in doc["panels"] if p.get("title") == "Worst 10 drives by life left"]
    (target,) = [t for t in panel["targets"] if t["refId"] == "A"]
    return target["expr"].replace("$site", ".*").replace("$job", JOB)


def _serials(answer: dict) -> set:
    assert answer.get("status") == "success", answer
    return {r["metric"]["serial"] for r in answer["data"]["result"]}


def test_worst_drives_table_is_the_same_on_prometheus_and_victoriametrics(
    prometheus_factory, static_exporter_factory, victoriametrics_factory  # noqa: F811
):
    expr = worst_table_query()
    assert "bottomk(10, job:ssd_life_left_ratio:bottom10_key" in expr  # the query under test is the ranked one

    exporter = static_exporter_factory(exposition())
    prom = prometheus_factory(
        scrape_configs=[{
            "job_name": "recorded",
            "honor_labels": True,  # the sites' labels as a central store receives them
            "static_configs": [{"targets": [exporter.target]}],
        }]
    )
    prom.wait_for_query(f'count(job:ssd_drive_info:listed{{job="{JOB}"}}) == {len(LIFE_LEFT)}')

    store = victoriametrics_factory()
    stamp = int((time.time() - 60) * 1000)
    series = []
    for line in exposition().splitlines():
        name_labels, value = line.rsplit(" ", 1)
        name, _, labels = name_labels.partition("{")
        metric = {"__name__": name}
        for pair in labels.rstrip("}").split(","):
            label, _, quoted = pair.partition("=")
            metric[label] = quoted.strip('"')
        series.append({"metric": metric, "values": [float(value)], "timestamps": [stamp]})
    store.import_series(series)

    worst = expected_worst()
    tied = {serial for (_, serial), v in LIFE_LEFT.items() if v == 0.10}
    assert len(worst) == 10 and 0 < len(worst & tied) < len(tied)  # the tenth place is a tie
    on_prometheus = _serials(prom.query(expr))
    on_victoriametrics = _serials(store.query(expr, time=time.time()))
    assert on_prometheus == worst
    assert on_victoriametrics == worst
