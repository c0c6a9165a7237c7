"""Ranked fleet panels show the same drives on Prometheus and on VictoriaMetrics.

``bottomk(20, ...)`` picks among drives with equal values in an order each store decides for
itself, so "Worst 20 drives" listed different drives on the two. The panel now breaks ties by
the data (at equal life left, the drive that has written more ranks worse). Here a fleet whose
20th place is a fifteen-way tie is served to a real Prometheus (scraping it) and a real
VictoriaMetrics (the same samples imported), the table's query is taken from the generated
dashboard JSON, and both stores must return exactly the drives that ranking defines.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from tests.promstack import prometheus_factory, static_exporter_factory, victoriametrics_factory  # noqa: F401

ROOT = Path(__file__).resolve().parent.parent
FLEET_DASHBOARD = ROOT / "dashboards" / "json" / "ssdfleet-fleet.json"
JOB = "ssdfleet"
INSTANCE = "db1:9877"

# 12 drives at 2 % and 15 at 10 %: the 20th lowest is one of fifteen equal drives. Three
# healthy drives stay out. Lifetime host bytes written differ per drive, in an order unrelated
# to the serials; T-13 reports no write counter.
LIFE_LEFT = {f"T-{i:02d}": 0.02 for i in range(12)}
LIFE_LEFT |= {f"T-{i:02d}": 0.10 for i in range(12, 27)}
LIFE_LEFT |= {f"T-{i:02d}": 0.90 for i in range(27, 30)}
WRITTEN = {serial: float((i * 7) % 30 + 1) * 1e12 for i, serial in enumerate(LIFE_LEFT) if serial != "T-13"}


def expected_worst() -> set:
    """The 20 lowest by (life left, then most bytes written); no counter: after those with one."""
    top = max(WRITTEN.values())
    key = {s: LIFE_LEFT[s] - (1e-9 * WRITTEN[s] / top if s in WRITTEN else 0.0) for s in LIFE_LEFT}
    return set(sorted(LIFE_LEFT, key=lambda s: key[s])[:20])


def _device(serial: str) -> str:
    return "sd" + chr(ord("a") + int(serial[2:]) % 26) + serial[2:]


def exposition() -> str:
    lines = ["# TYPE ssd_life_left_ratio gauge"]
    for serial, value in LIFE_LEFT.items():
        lines.append(f'ssd_life_left_ratio{{device="{_device(serial)}",serial="{serial}"}} {value}')
    lines.append("# TYPE ssd_host_written_bytes_total counter")
    for serial, value in WRITTEN.items():
        lines.append(f'ssd_host_written_bytes_total{{device="{_device(serial)}",serial="{serial}"}} {value:.0f}')
    lines.append("# TYPE ssd_drive_info gauge")
    for serial in LIFE_LEFT:
        lines.append(f'ssd_drive_info{{device="{_device(serial)}",serial="{serial}",model="M",kind="ata"}} 1')
    return "\n".join(lines) + "\n"


def worst_table_query() -> str:
    doc = json.loads(FLEET_DASHBOARD.read_text(encoding="utf-8"))
    (panel,) = [p for p in doc["panels"] if p.get("title") == "Worst 20 drives by life left"]
    (target,) = [t for t in panel["targets"] if t["refId"] == "A"]
    return target["expr"].replace("$job", JOB)


def _serials(answer: dict) -> set:
    assert answer.get("status") == "success", answer
    return {r["metric"]["serial"] for r in answer["data"]["result"]}


def test_worst_drives_table_is_the_same_on_prometheus_and_victoriametrics(
    prometheus_factory, static_exporter_factory, victoriametrics_factory  # noqa: F811
):
    expr = worst_table_query()
    assert "bottomk(20" in expr  # the query under test is the ranked one

    exporter = static_exporter_factory(exposition())
    prom = prometheus_factory(
        scrape_configs=[{
            "job_name": JOB,
            "static_configs": [{"targets": [exporter.target]}],
            # the drives' instance is the agent's address, not the test server's port
            "relabel_configs": [{"target_label": "instance", "replacement": INSTANCE}],
        }]
    )
    prom.wait_for_query(f'count(ssd_drive_info{{job="{JOB}"}}) == {len(LIFE_LEFT)}')

    store = victoriametrics_factory()
    stamp = int((time.time() - 60) * 1000)
    series = []
    for line in exposition().splitlines():
        if line.startswith("#"):
            continue
        name_labels, value = line.rsplit(" ", 1)
        name, _, labels = name_labels.partition("{")
        metric = {"__name__": name, "job": JOB, "instance": INSTANCE}
        for pair in labels.rstrip("}").split(","):
            key, _, quoted = pair.partition("=")
            metric[key] = quoted.strip('"')
        series.append({"metric": metric, "values": [float(value)], "timestamps": [stamp]})
    store.import_series(series)

    worst = expected_worst()
    assert len(worst) == 20 and "T-13" not in worst
    assert {s for s in worst if LIFE_LEFT[s] == 0.10} == {s for s in WRITTEN if LIFE_LEFT[s] == 0.10 and WRITTEN[s] >= sorted(
        (WRITTEN[x] for x in WRITTEN if LIFE_LEFT[x] == 0.10), reverse=True)[7]}
    on_prometheus = _serials(prom.query(expr))
    on_victoriametrics = _serials(store.query(expr, time=time.time()))
    assert on_prometheus == worst
    assert on_victoriametrics == worst
