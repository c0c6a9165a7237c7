"""The central rule file, evaluated on VictoriaMetrics over two simulated sites' `job:` series.

Two sites of the fleet bench's model (bench/fleet_scale.py): dc1 (12 hosts of 4 drives) and
dc2 (8 hosts of 4 drives, one host's write caches off), each host's series rendered every
minute for 40 minutes with its ``site`` label, as the sites' Prometheus servers would
remote-write them. dc2 stops sending after 20 minutes. Then, on a real VictoriaMetrics with
Debian's vmalert in replay mode:

1. the shipped site rules that record the central file's inputs (the `job:` counts of
   deploy/prometheus/ssdfleet-recording.yml) run over the raw series, once per site's data as
   a site's Prometheus would;
2. deploy/victoriametrics/ssdfleet-central.yml runs over what they recorded.

The fleet totals must be the two sites' sums while both send and dc1's alone after, and
SSDFleetSiteSilent must fire for dc2 and only for it.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from tests.promstack import victoriametrics_factory  # noqa: F401
from tests.support.bench import load_fleet_scale

ROOT = Path(__file__).resolve().parent.parent
CENTRAL = ROOT / "deploy" / "victoriametrics" / "ssdfleet-central.yml"
RECORDING = ROOT / "deploy" / "prometheus" / "ssdfleet-recording.yml"
MINUTES = 40
SILENT_AFTER = 20
SITE_GROUPS = ("ssdfleet-recording-state", "ssdfleet-recording-agents", "ssdfleet-recording-life",
               "ssdfleet-recording-wearout")


def _fleet_scale():
    return load_fleet_scale("fleet_scale_central")


def _site_series(fs, fleet, site: str, start: float, minutes: int):
    """VictoriaMetrics import lines: every series of ``fleet`` each minute, with ``site``."""
    by_key = {}
    for minute in range(minutes + 1):
        t = start + 60 * minute
        for line in fs.render_live(fleet, t, generation=1).decode().splitlines():
            name, labels, value = fs._parse_sample(line)
            key = (name, tuple(sorted(labels.items())))
            entry = by_key.setdefault(key, {"metric": {"__name__": name, "site": site, **labels},
                                            "values": [], "timestamps": []})
            entry["values"].append(float(value))
            entry["timestamps"].append(int(t * 1000))
    return list(by_key.values())


def _replay_in_order(store, groups, start: float, end: float, tmp_path: Path) -> None:
    """Each rule of ``groups`` replayed on its own, in file order, each after the store has
    flushed what the one before recorded: a rule reads what the rules above it recorded (in
    one replay, a rule run a second after the one it reads lost samples now and then)."""
    for group in groups:
        for index, rule in enumerate(group["rules"]):
            path = tmp_path / f"{group['name']}-{index}.yml"
            path.write_text(yaml.safe_dump({"groups": [{"name": f"{group['name']}-{index}", "interval": "1m",
                                                        "rules": [rule]}]}, sort_keys=False), encoding="utf-8")
            store.replay_rules(path, start, end, step="1m")


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool is not installed (Debian package prometheus)")
def test_the_central_file_loads_in_promtool():
    proc = subprocess.run(["promtool", "check", "rules", str(CENTRAL)], capture_output=True, text=True, timeout=60,
                          check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "SUCCESS: 7 rules found" in proc.stdout


def test_central_rules_on_victoriametrics_over_two_sites(victoriametrics_factory, tmp_path):  # noqa: F811
    fs = _fleet_scale()
    end = (int(time.time()) // 60) * 60 - 120
    start = end - MINUTES * 60
    dc1 = fs.Fleet(12, 4, float(end), seed=3, stratified=True)
    dc2 = fs.Fleet(8, 4, float(end), seed=4, stratified=True, bad_day=True)
    assert dc2.cache_off_hosts and not dc1.cache_off_hosts
    store = victoriametrics_factory()
    store.import_series(_site_series(fs, dc1, "dc1", start, MINUTES))
    store.import_series(_site_series(fs, dc2, "dc2", start, SILENT_AFTER))

    # the site rules that record the central file's inputs, unchanged, then the central file
    doc = yaml.safe_load(RECORDING.read_text(encoding="utf-8"))
    site_groups = [g for g in doc["groups"] if g["name"] in SITE_GROUPS]
    assert len(site_groups) == len(SITE_GROUPS)
    _replay_in_order(store, site_groups, start, end, tmp_path)
    _replay_in_order(store, yaml.safe_load(CENTRAL.read_text(encoding="utf-8"))["groups"], start + 60, end, tmp_path)

    def at(expr: str, t: float) -> dict:
        answer = store.query(expr, time=t)
        assert answer.get("status") == "success", answer
        return {tuple(sorted((k, v) for k, v in r["metric"].items() if k != "__name__")): float(r["value"][1])
                for r in answer["data"]["result"]}

    both = start + 10 * 60
    drives = {"dc1": dc1.drive_count, "dc2": dc2.drive_count}
    assert at("job:ssd_drives:sum", both) == {(("job", fs.JOB), ("site", s)): float(n) for s, n in drives.items()}
    assert at("fleet:ssd_drives:sum", both) == {(): float(sum(drives.values()))}
    assert at("fleet:ssd_drives:sum", end) == {(): float(drives["dc1"])}
    assert at("site:ssd_drives:sum", both) == {(("site", s),): float(n) for s, n in drives.items()}
    # the write caches dc2's firmware switched off, counted at the centre
    off = sum(len(d) for inst, d in dc2.hosts if inst in dc2.cache_off_hosts)
    assert at("fleet:ssd_write_cache_disabled:count", both) == {(): float(off)}
    assert at("fleet:ssd_write_cache_disabled:count", end) == {(): 0.0}
    # the bands are the sites' bands added
    bands = at("fleet:ssd_life_left_ratio:count", both)
    assert bands == at("sum by (band) (job:ssd_life_left_ratio:count)", both)
    assert len(bands) == 6 and sum(bands.values()) == float(sum(drives.values()))  # every band, empty ones as 0
    months = at("fleet:ssd_projected_wearout:count_by_month", both)
    assert months == at("sum by (month) (job:ssd_projected_wearout:count_by_month)", both) and months
    assert at("fleet:ssd_agents_stale:count", both) == {(): 0.0}

    # SSDFleetSiteSilent: dc2 went quiet 20 minutes before the end (for: 15m)
    firing = at('ALERTS{alertname="SSDFleetSiteSilent", alertstate="firing"}', end)
    assert [dict(k)["site"] for k in firing] == ["dc2"], (firing, store._get_json(
        "/api/v1/query_range", {"query": "ALERTS", "start": start, "end": end, "step": "60"}))
    assert not at('ALERTS{alertname="SSDFleetSiteSilent"}', both)
