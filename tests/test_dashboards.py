"""The Grafana dashboards: generated JSON is current, well formed, and every query has data.

(a) dashboards/json/*.json equals what ``python -m dashboards.build`` renders now;
(b) the JSON loads back into grafana-foundation-sdk's typed models unchanged (the SDK's
    types are generated from Grafana's own schema), and a structural check that needs no SDK:
    required keys, unique ids, grid positions inside 24 columns and not overlapping, every
    panel with a templated Prometheus data source and targets, variables defined, and every
    metric name one that docs/metrics.md (or the recording rules) defines;
(c) every panel query, with the template variables resolved the way Grafana resolves them
    (label_values() through the HTTP API of a real Prometheus), returns data. Two static
    exporters stand in for two agents, serving tests/fixtures/dashboards/*.prom with the
    counters moving between scrapes so rate() has two different samples.

(a) and the SDK round trip need grafana-foundation-sdk (Python >= 3.11) and skip without it;
the rest reads only the committed JSON.
"""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
import time
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Tuple

import pytest

from tests.conftest import ROOT, fixture_path
from tests.promstack import prometheus_factory, skip_or_fail, static_exporter_factory  # noqa: F401 (fixtures)

JSON_DIR = ROOT / "dashboards" / "json"
DASHBOARD_FILES = ["ssdfleet-fleet.json", "ssdfleet-host.json", "ssdfleet-drive.json"]
METRICS_DOC = ROOT / "docs" / "metrics.md"
RECORDING_RULES = ROOT / "deploy" / "prometheus" / "ssdfleet-recording.yml"
SAMPLES = ["dashboards/sample-metrics.prom", "dashboards/sample-metrics-db2.prom"]
RATE_INTERVAL = "1m"  # what $__rate_interval becomes; the exporters are scraped every second
DATA_TIMEOUT = 90.0  # seconds to wait for every query to have data


def load(name: str) -> dict:
    return json.loads((JSON_DIR / name).read_text(encoding="utf-8"))


def all_panels(dashboard: dict) -> Iterator[dict]:
    for panel in dashboard.get("panels", []):
        yield panel
        yield from panel.get("panels", [])


def query_panels(dashboard: dict) -> Iterator[dict]:
    return (p for p in all_panels(dashboard) if p.get("type") != "row")


# (a) generated JSON is current


def test_generated_json_is_up_to_date():
    pytest.importorskip("grafana_foundation_sdk", reason="grafana-foundation-sdk not installed (needs Python >= 3.11)")
    from dashboards import build

    assert sorted(build.dashboards()) == sorted(DASHBOARD_FILES)
    stale = build.stale_files()
    assert not stale, f"run `python -m dashboards.build`: stale {stale}"


def test_build_check_mode_fails_on_stale_json(tmp_path):
    pytest.importorskip("grafana_foundation_sdk", reason="grafana-foundation-sdk not installed (needs Python >= 3.11)")
    from dashboards import build

    assert build.main(["--out", str(tmp_path)]) == 0
    assert build.main(["--check", "--out", str(tmp_path)]) == 0
    edited = tmp_path / DASHBOARD_FILES[0]
    edited.write_text(edited.read_text().replace('"ssdfleet / Fleet overview"', '"hand edited"'))
    assert build.main(["--check", "--out", str(tmp_path)]) == 1


# (b) schema and structure


@pytest.mark.parametrize("name", DASHBOARD_FILES)
def test_json_round_trips_through_sdk_models(name):
    pytest.importorskip("grafana_foundation_sdk", reason="grafana-foundation-sdk not installed (needs Python >= 3.11)")
    from grafana_foundation_sdk.cog import plugins
    from grafana_foundation_sdk.cog.encoder import JSONEncoder
    from grafana_foundation_sdk.models.dashboard import Dashboard

    # With the panel and query plugins registered, options, fieldConfig and targets decode into
    # each plugin's typed model too: a misspelt option or wrong type would not survive.
    plugins.register_default_plugins()
    original = load(name)
    decoded = Dashboard.from_json(json.loads(json.dumps(original)))
    assert json.loads(json.dumps(decoded, cls=JSONEncoder)) == original


def _grid_cells(panel: dict) -> set:
    g = panel["gridPos"]
    return {(x, y) for x in range(g["x"], g["x"] + g["w"]) for y in range(g["y"], g["y"] + g["h"])}


@pytest.mark.parametrize("name", DASHBOARD_FILES)
def test_dashboard_structure(name):
    dashboard = load(name)
    for key in ("uid", "title", "schemaVersion", "panels", "templating", "time"):
        assert key in dashboard, f"{name}: no {key}"
    assert 1 <= len(dashboard["uid"]) <= 40 and re.fullmatch(r"[A-Za-z0-9_-]+", dashboard["uid"])
    assert isinstance(dashboard["schemaVersion"], int) and dashboard["schemaVersion"] >= 36

    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource" and variables["datasource"]["query"] == "prometheus"
    for variable in variables.values():
        if variable["type"] == "query":
            assert variable["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
            assert variable["query"].startswith("label_values(")

    ids = [p["id"] for p in all_panels(dashboard)]
    assert len(ids) == len(set(ids)), f"{name}: duplicate panel ids"
    occupied: Dict[Tuple[int, int], str] = {}
    for panel in dashboard["panels"]:
        g = panel["gridPos"]
        assert all(isinstance(g[k], int) for k in "xywh"), panel["title"]
        assert g["x"] >= 0 and g["y"] >= 0 and g["w"] > 0 and g["h"] > 0 and g["x"] + g["w"] <= 24, panel["title"]
        for cell in _grid_cells(panel):
            assert cell not in occupied, f"{name}: {panel['title']!r} overlaps {occupied[cell]!r}"
            occupied[cell] = panel["title"]
        if panel["type"] == "row" and not panel.get("collapsed"):
            # Grafana shows the panels of an expanded row only when they follow it at the top level.
            assert not panel.get("panels"), f"{name}: expanded row {panel['title']!r} nests panels"

    used_variables = set()
    for panel in query_panels(dashboard):
        where = f"{name}: panel {panel.get('title')!r}"
        for key in ("id", "type", "title", "gridPos", "datasource", "targets", "fieldConfig"):
            assert key in panel, f"{where}: no {key}"
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, where
        assert panel["targets"], f"{where}: no targets"
        ref_ids = [t["refId"] for t in panel["targets"]]
        assert len(ref_ids) == len(set(ref_ids)), f"{where}: duplicate refId"
        for target in panel["targets"]:
            assert target["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, where
            assert target["expr"].strip(), where
            used_variables.update(re.findall(r"\$\{?(\w+)", target["expr"]))
        hidden = {
            column
            for t in panel.get("transformations", [])
            if t["id"] == "organize"
            for column, excluded in t["options"].get("excludeByName", {}).items()
            if excluded
        }
        for link in panel["fieldConfig"]["defaults"].get("links", []):
            for column in re.findall(r"\$\{__data\.fields\.(\w+)\}", link["url"]):
                assert column not in hidden, f"{where}: data link needs column {column}, which the table hides"
        unit = panel["fieldConfig"]["defaults"].get("unit")
        if panel["type"] in ("stat", "timeseries", "bargauge"):
            assert unit, f"{where}: no unit"
    builtin = {"__rate_interval", "__interval", "__range"}
    assert used_variables - builtin <= set(variables), (
        f"{name}: undefined variables {used_variables - builtin - set(variables)}"
    )


def test_units_follow_the_metric():
    """Ratios are percentunit, timestamps dateTimeAsIso (in ms), temperatures celsius."""
    checked = 0
    for name in DASHBOARD_FILES:
        for panel in query_panels(load(name)):
            unit = panel["fieldConfig"]["defaults"].get("unit")
            exprs = " ".join(t["expr"] for t in panel["targets"])
            if panel["type"] == "table" or not unit:
                continue
            checked += 1
            if unit == "dateTimeAsIso":
                assert "* 1000" in exprs, f"{panel['title']}: dateTimeAsIso takes milliseconds"
            if "_timestamp_seconds" in exprs and "time()" not in exprs:
                assert unit == "dateTimeAsIso", panel["title"]
            if re.search(r"ssd_temperature\w*_celsius", exprs):
                assert unit == "celsius", panel["title"]
            if re.fullmatch(r"(?s)\s*(ssd_life_left_ratio|bottomk\(10, ssd_life_left_ratio).*", exprs):
                assert unit == "percentunit", panel["title"]
    assert checked > 20


def _documented_metrics() -> set:
    names = set(re.findall(r"`(ssd_[a-z0-9_]+)`", METRICS_DOC.read_text(encoding="utf-8")))
    assert "ssd_life_left_ratio" in names
    return names


def _recorded_metrics() -> set:
    if not RECORDING_RULES.exists():
        return set()
    import yaml

    rules = yaml.safe_load(RECORDING_RULES.read_text(encoding="utf-8")) or {}
    return {r["record"] for g in rules.get("groups", []) for r in g.get("rules", []) if "record" in r}


def test_queries_use_only_documented_metrics():
    known = _documented_metrics() | _recorded_metrics() | {"up"}
    for name in DASHBOARD_FILES:
        dashboard = load(name)
        exprs = [t["expr"] for p in query_panels(dashboard) for t in p["targets"]]
        exprs += [v["query"] for v in dashboard["templating"]["list"] if v["type"] == "query"]
        for expr in exprs:
            for metric in re.findall(r"\b((?:ssd_|ssd:|instance:|job:)[a-zA-Z0-9_:]+)", expr):
                assert metric in known, f"{name}: {metric} is not in docs/metrics.md nor the recording rules"


def test_sample_expositions_lint_clean():
    promtool = shutil.which("promtool")
    if not promtool:
        skip_or_fail("promtool not found (apt-get install prometheus)")
    for sample in SAMPLES:
        text = fixture_path(sample).read_bytes()
        result = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, timeout=30)
        assert result.returncode == 0, f"{sample}: {result.stdout.decode()} {result.stderr.decode()}"
        families = set(re.findall(rb"^# TYPE (\w+) ", text, re.M))
        assert families <= {m.encode() for m in _documented_metrics()}, families - {
            m.encode() for m in _documented_metrics()
        }


# (c) every query returns data from a real Prometheus

# Per-second increments of the sample counters while the test runs: a busy database host.
COUNTER_RATES = {
    "ssd_host_written_bytes_total": 50e6,
    "ssd_nand_written_bytes_total": 58e6,
    "ssd_host_read_bytes_total": 80e6,
    "ssd_power_on_seconds_total": 1.0,
    "ssd_io_reads_completed_total": 2000.0,
    "ssd_io_writes_completed_total": 1500.0,
    "ssd_io_read_bytes_total": 80e6,
    "ssd_io_written_bytes_total": 50e6,
    "ssd_io_read_time_seconds_total": 2000 * 0.0002,
    "ssd_io_write_time_seconds_total": 1500 * 0.00005,
    "ssd_io_busy_seconds_total": 0.35,
    "ssd_collector_errors_total": 0.0,
    "ssd_media_errors_total": 0.0,
    "ssd_power_cycles_total": 0.0,
}
# Life left falls (much faster than any real drive) so deriv() and predict_linear() have a slope.
LIFE_LEFT_DROP_PER_SECOND = 1e-5


class MovingExposition:
    """Serves a fixture exposition with counters advanced by wall-clock time since start and
    every *_timestamp_seconds gauge moved by (now - the fixture's own time)."""

    def __init__(self, text: str) -> None:
        match = re.search(r"Fixture time: (\d+)", text)
        assert match, "the sample exposition must say its fixture time"
        self.fixture_time = float(match.group(1))
        self.lines = text.splitlines()
        self.counters = set(re.findall(r"^# TYPE (\w+) counter$", text, re.M))
        unknown = self.counters - set(COUNTER_RATES)
        assert not unknown, f"give COUNTER_RATES a rate for {unknown}"
        self.started = time.time()

    def __call__(self) -> str:
        now = time.time()
        elapsed = now - self.started
        out = []
        for line in self.lines:
            if line.startswith("#") or not line.strip():
                out.append(line)
                continue
            series, value_text = line.rsplit(" ", 1)
            name = re.match(r"[a-zA-Z_:][a-zA-Z0-9_:]*", series).group(0)
            value = float(value_text)
            if name in self.counters:
                value += COUNTER_RATES[name] * elapsed
            elif name.endswith("_timestamp_seconds"):
                value += now - self.fixture_time
            elif name == "ssd_life_left_ratio":
                value = max(0.0, value - LIFE_LEFT_DROP_PER_SECOND * elapsed)
            out.append(f"{series} {value!r}")
        return "\n".join(out) + "\n"


LABEL_VALUES = re.compile(r"^label_values\((?:(?P<selector>.*),\s*)?(?P<label>\w+)\)$")


def _substitute(text: str, values: Dict[str, str]) -> str:
    text = text.replace("$__rate_interval", RATE_INTERVAL)
    for name in sorted(values, key=len, reverse=True):
        text = text.replace("${" + name + "}", values[name]).replace("$" + name, values[name])
    return text


def _variable_combinations(prom, dashboard: dict) -> List[Dict[str, str]]:
    """Every combination of variable values, each query variable resolved with the values
    chosen before it, as Grafana does. Multi-value "All" becomes the regex alternation of all
    values (Grafana's formatting for Prometheus when allValue is not set)."""
    combos: List[Dict[str, str]] = [{}]
    for variable in dashboard["templating"]["list"]:
        if variable["type"] != "query":
            continue
        match = LABEL_VALUES.match(variable["query"])
        assert match, variable["query"]
        expanded = []
        for combo in combos:
            selector = match.group("selector")
            values = prom.label_values(match.group("label"), _substitute(selector, combo) if selector else None)
            assert values, f"variable {variable['name']} has no values for {combo}"
            if variable.get("includeAll") and variable.get("multi"):
                choices = ["(" + "|".join(re.escape(v) for v in values) + ")"]
            else:
                choices = values
            expanded.extend(dict(combo, **{variable["name"]: choice}) for choice in choices)
        combos = expanded
    return combos


def _has_data(answer: dict) -> bool:
    if answer.get("status") != "success":
        return False
    result = answer["data"]["result"]
    samples = []
    for series in result:
        samples.extend([series["value"]] if "value" in series else series.get("values", []))
    return any(not math.isnan(float(v)) for _, v in samples)


def _run(prom, target: dict, expr: str, now: float) -> Tuple[dict, float]:
    started = time.perf_counter()
    if target.get("instant") or target.get("format") == "table":
        answer = prom.query(expr, time=now)
    else:
        answer = prom.query_range(expr, start=now - 60, end=now, step=1)
    return answer, time.perf_counter() - started


def _fast_rules(tmp_path: Path) -> List[Path]:
    """The recording rules with every group evaluated each second (their own intervals are
    minutes), so recording-rule panels have data within seconds."""
    if not RECORDING_RULES.exists():
        return []
    import yaml

    rules = yaml.safe_load(RECORDING_RULES.read_text(encoding="utf-8")) or {}
    for group in rules.get("groups", []):
        group["interval"] = "1s"
    fast = tmp_path / RECORDING_RULES.name
    fast.write_text(yaml.safe_dump(rules, sort_keys=False), encoding="utf-8")
    return [fast]


def test_every_panel_query_returns_data(
    prometheus_factory,  # noqa: F811 (the fixture imported above)
    static_exporter_factory,  # noqa: F811
    capsys,
    record_property,
    tmp_path,
):
    exporters = [
        static_exporter_factory(MovingExposition(fixture_path(s).read_text(encoding="utf-8"))) for s in SAMPLES
    ]
    rule_files = _fast_rules(tmp_path)
    prom = prometheus_factory(
        scrape_targets={"ssdfleet": [e.target for e in exporters]},
        rule_files=rule_files,
        scrape_interval="1s",
        evaluation_interval="1s",
    )
    prom.wait_for_targets_up(timeout=30)
    if rule_files:
        groups = prom.rules()
        assert groups, "the recording rules did not load"
        prom.wait_for_query("count(ssd:temperature_celsius:max)", timeout=30)
        broken = [(r["name"], r.get("lastError")) for g in prom.rules() for r in g["rules"] if r.get("health") == "err"]
        assert not broken, broken
    # rate() needs two samples of every counter inside its window
    prom.wait_for_query("count(rate(ssd_host_written_bytes_total[1m]) > 0) == 4", timeout=30)

    # (dashboard, panel title, refId) -> {"failures": [...], "data": bool}
    checks: Dict[Tuple[str, str, str], Dict[str, object]] = {}
    slowest: Tuple[float, str] = (0.0, "")
    deadline = time.monotonic() + DATA_TIMEOUT
    pending: Optional[set] = None
    while True:
        now = time.time()
        for name in DASHBOARD_FILES:
            dashboard = load(name)
            combos = _variable_combinations(prom, dashboard)
            for panel, target in ((p, t) for p in query_panels(dashboard) for t in p["targets"]):
                key = (name, panel["title"], target["refId"])
                if pending is not None and key not in pending:
                    continue
                state = checks.setdefault(key, {"errors": [], "data": False})
                state["errors"] = []
                for combo in combos:
                    expr = _substitute(target["expr"], combo)
                    assert "$" not in expr, f"{key}: unresolved variable in {expr}"
                    answer, took = _run(prom, target, expr, now)
                    if took > slowest[0]:
                        slowest = (took, f"{name} / {panel['title']} / {target['refId']}")
                    if answer.get("status") != "success":
                        state["errors"].append(f"{combo}: {answer.get('error')} in {expr}")
                    elif _has_data(answer):
                        state["data"] = True
        pending = {k for k, s in checks.items() if s["errors"] or not s["data"]}
        if not pending or time.monotonic() > deadline:
            break
        time.sleep(1.0)

    record_property("slowest_panel_query_seconds", round(slowest[0], 4))
    with capsys.disabled():
        print(f"\n[dashboards] {len(checks)} panel queries checked; slowest {slowest[0] * 1000:.1f} ms: {slowest[1]}")
    problems = [
        f"{key}: " + ("; ".join(state["errors"]) if state["errors"] else "no data for any variable value")
        for key, state in sorted(checks.items())
        if key in pending
    ]
    assert not problems, "\n".join(problems)
    assert len(checks) > 60
