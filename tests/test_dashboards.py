"""The Grafana dashboards: generated JSON is current, well formed, and every query has data.

(a) dashboards/json/*.json equals what ``python -m dashboards.build`` renders now;
(b) the JSON loads back into grafana-foundation-sdk's typed models unchanged (the SDK's
    types are generated from Grafana's own schema), and a structural check that needs no SDK:
    required keys, unique ids, grid positions inside 24 columns and not overlapping, every
    panel with a templated Prometheus data source and targets, variables defined, and every
    metric name one that docs/metrics.md (or the recording rules) defines;
(c) every panel query, with the template variables resolved the way Grafana resolves them
    (label_values() through the HTTP API of a real Prometheus), returns data from a live fake
    fleet: three real ``ssdfleet agent`` processes on fake hosts (tests/livefleet.py) - the
    default host, one whose SATA drive has its write cache switched off, one with a nearly
    worn-out Shannon card and a drive whose smartctl output is cut short - plus a scrape
    target on a port nothing listens on. Each host's state directory holds a history.sqlite
    seeded over the past two weeks before its agent starts (the file earlier runs would have
    left), so the agents export write rates and wear-out projections; a workload thread moves
    /proc/diskstats and the card counters while Prometheus scrapes every second, with the
    shipped recording rules evaluated every second.

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
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Tuple

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import ROOT, fixture_path
from tests.fakehost import build_default_host
from tests.livefleet import SHANNON_SERIAL, WORN_SERIAL, LiveHost, prepare_host, worn_card_status
from tests.promstack import Prometheus, free_port, prometheus_binary, skip_or_fail
from tests.test_e2e_agent import NVME0_SERIAL, NVME1_SERIAL, SDA_SERIAL

JSON_DIR = ROOT / "dashboards" / "json"
DASHBOARD_FILES = ["ssdfleet-fleet.json", "ssdfleet-host.json", "ssdfleet-drive.json"]
METRICS_DOC = ROOT / "docs" / "metrics.md"
RECORDING_RULES = ROOT / "deploy" / "prometheus" / "ssdfleet-recording.yml"
RATE_INTERVAL = "1m"  # what $__rate_interval becomes; the agents are scraped every second
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


# (c) every query returns data from a real Prometheus

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




# The live fleet: three agents on fake hosts and a target nobody answers on.
WORN_WRITE_RATE = 100e6  # bytes per second the worn card's history shows: due in about 7 weeks


@dataclass
class Fleet:
    hosts: Dict[str, LiveHost]
    prom: Prometheus
    dead_target: str

    def samples(self, name: str) -> Dict[Tuple[str, frozenset], float]:
        """{(metric, labels): value} from one agent's /metrics, read over HTTP."""
        out = {}
        text = self.hosts[name].agent.get("/metrics").decode()
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                out[(sample.name, frozenset(sample.labels.items()))] = sample.value
        return out


def _value(samples: dict, metric: str, **labels: str) -> Optional[float]:
    found = [v for (n, ls), v in samples.items() if n == metric and set(labels.items()) <= set(ls)]
    assert len(found) <= 1, f"{metric}{labels} matched {len(found)} series"
    return found[0] if found else None


def _build_fleet(root: Path, now: float) -> Dict[str, LiveHost]:
    # db1: the default host as it comes.
    db1 = prepare_host("db1", build_default_host(root / "db1"), now=now)
    # db2: someone ran `hdparm -W0 /dev/sda` (the kernel still says write back).
    host = build_default_host(root / "db2")
    host.set_response("hdparm", "sda", fixture_path("fakehost/hdparm-W-sda-off.txt"))
    db2 = prepare_host("db2-cache-off", host, now=now)
    # db3: a Shannon card near the end of its life, and an NVMe drive whose smartctl answer is
    # cut short (the tool was killed mid-write): the smartctl collector fails on every poll.
    host = build_default_host(root / "db3")
    status_a, status_p = worn_card_status()
    host.set_response("shannon-status", "all", status_a)
    host.set_response("shannon-status", "scta", status_p)
    smart = fixture_path("fakehost/scrutiny__smart-nvme-failed.json").read_bytes()
    host.set_response("smartctl", "nvme1", smart[: len(smart) // 3])
    db3 = prepare_host("db3-worn", host, write_rates={WORN_SERIAL: WORN_WRITE_RATE}, now=now)
    return {h.name: h for h in (db1, db2, db3)}


def _wait_for_targets(prom: Prometheus, up: List[str], down: List[str], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    health: Dict[str, str] = {}
    while time.monotonic() < deadline:
        health = {t["labels"]["instance"]: t.get("health") for t in prom.targets()}
        if all(health.get(t) == "up" for t in up) and all(health.get(t) == "down" for t in down):
            return
        time.sleep(0.2)
    raise AssertionError(f"targets not as expected after {timeout}s: {health}")


@pytest.fixture(scope="module")
def fleet(tmp_path_factory) -> Iterator[Fleet]:
    """Three real agents on fake hosts with seeded history and a moving workload, one dead
    target (a port nothing listens on), and a real Prometheus scraping them every second
    with the shipped recording rules evaluated every second."""
    if not prometheus_binary():
        skip_or_fail("prometheus binary not found (apt-get install prometheus, or set PROMETHEUS_BIN)")
    root = tmp_path_factory.mktemp("fleet")
    hosts: Dict[str, LiveHost] = {}
    prom: Optional[Prometheus] = None
    try:
        hosts = _build_fleet(root, time.time())
        for live in hosts.values():
            live.start()
        for live in hosts.values():
            live.wait_ready()
        dead_target = f"127.0.0.1:{free_port()}"
        rules_dir = root / "rules"
        rules_dir.mkdir()
        prom = Prometheus(
            workdir=root / "prometheus",
            scrape_targets={"ssdfleet": [h.target for h in hosts.values()] + [dead_target]},
            rule_files=_fast_rules(rules_dir),
            scrape_interval="1s",
            evaluation_interval="1s",
        )
        prom.start()
        prom.wait_ready(30)
        _wait_for_targets(prom, up=[h.target for h in hosts.values()], down=[dead_target])
        # The worn card loses one more percent while Prometheus watches, so deriv() over its
        # life left is negative (real drives take weeks per percent at this point).
        prom.wait_for_query(f'ssd_life_left_ratio{{serial="{WORN_SERIAL}"}} == 0.05', timeout=30)
        hosts["db3-worn"].workload.wear_one_percent()
        yield Fleet(hosts, prom, dead_target)
    finally:
        if prom is not None:
            prom.stop()
        for live in hosts.values():
            live.stop()


def _wait_for_samples(fleet: Fleet, name: str, ready, timeout: float = 20.0) -> dict:
    deadline = time.monotonic() + timeout
    samples: dict = {}
    while time.monotonic() < deadline:
        samples = fleet.samples(name)
        if ready(samples):
            return samples
        time.sleep(0.2)
    raise AssertionError(f"{name}: agent metrics not ready after {timeout}s:\n{fleet.hosts[name].agent.log()[-3000:]}")


def test_seeded_history_gives_write_rate_and_projection(fleet):
    """The agents read the history earlier runs left and project from it."""
    for name, live in fleet.hosts.items():
        serials = [d["serial"] for d in live.drives]
        samples = _wait_for_samples(
            fleet, name, lambda s, serials=serials: all(_value(s, "ssd_drive_info", serial=x) == 1 for x in serials)
        )
        assert _value(samples, "ssd_history_healthy") == 1, name
        assert live.seeded, f"{name}: nothing seeded"
        for seeded in live.seeded.values():
            assert seeded.samples >= 50 and seeded.newest_ts - seeded.oldest_ts > 13 * 86400, seeded
        # The exported write rate is the host rate: from the oldest sample in the 7 day
        # window to the agent's own first reading, the rate its history was seeded with.
        for serial in [SDA_SERIAL, SHANNON_SERIAL, WORN_SERIAL]:
            if serial in live.seeded:
                rate = _value(samples, "ssd_write_rate_bytes_per_second", serial=serial)
                assert rate is not None and rate > 0, (name, serial)
        if SDA_SERIAL in live.seeded:
            rate = _value(samples, "ssd_write_rate_bytes_per_second", serial=SDA_SERIAL)
            assert rate == pytest.approx(live.seeded[SDA_SERIAL].host_write_rate, rel=1e-3), name

    def projection(name: str, serial: str) -> Tuple[str, float]:
        found = [
            (dict(ls)["method"], v)
            for (n, ls), v in fleet.samples(name).items()
            if n == "ssd_projected_wearout_timestamp_seconds" and dict(ls)["serial"] == serial
        ]
        assert len(found) == 1, (name, serial, found)
        return found[0]

    now = time.time()
    # sda: 19% used, so the observed method (bytes per percent so far); the Shannon card has
    # used 1% only but its model has a rating; nvme1 (3% used, no rating) falls back on the
    # trend of life left in the history. nvme0 has used nothing: a write rate, no projection.
    assert projection("db1", SDA_SERIAL)[0] == "observed"
    assert projection("db1", SHANNON_SERIAL)[0] == "rated"
    assert projection("db1", NVME1_SERIAL)[0] == "trend"
    assert _value(fleet.samples("db1"), "ssd_projected_wearout_timestamp_seconds", serial=NVME0_SERIAL) is None
    method, when = projection("db3-worn", WORN_SERIAL)
    assert method == "observed"
    assert 20 * 86400 < when - now < 60 * 86400, (when - now) / 86400


def _nand_counting(live: LiveHost) -> set:
    """Serials of the drives that report NAND bytes written besides host bytes."""
    return {d["serial"] for d in live.drives if d.get("nand_written_bytes")}


def test_write_rate_is_the_host_rate_from_history_for_every_drive(fleet):
    wrong = []
    for name, live in fleet.hosts.items():
        samples = fleet.samples(name)
        for serial, seeded in live.seeded.items():
            rate = _value(samples, "ssd_write_rate_bytes_per_second", serial=serial)
            if rate is None or rate != pytest.approx(seeded.host_write_rate, rel=1e-3):
                wrong.append(f"{name} {serial}: {rate} instead of {seeded.host_write_rate}")
    assert not wrong, "\n".join(wrong)


def test_remaining_endurance_is_in_host_bytes_like_the_rating(fleet):
    checked = []
    for name in fleet.hosts:
        samples = fleet.samples(name)
        for (metric, labels), rated in samples.items():
            if metric != "ssd_endurance_rated_bytes":
                continue
            serial = dict(labels)["serial"]
            remaining = _value(samples, "ssd_endurance_remaining_bytes", serial=serial)
            if remaining is not None:
                checked.append((name, serial))
                assert remaining <= rated, f"{name} {serial}: {remaining:.4g} left of a {rated:.4g} rating"
    assert checked


def test_live_expositions_lint_clean(fleet):
    promtool = shutil.which("promtool")
    if not promtool:
        skip_or_fail("promtool not found (apt-get install prometheus)")
    documented = _documented_metrics()
    for name, live in fleet.hosts.items():
        text = live.agent.get("/metrics")
        result = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, timeout=30)
        assert result.returncode == 0, f"{name}: {result.stdout.decode()} {result.stderr.decode()}"
        families = {f.decode() for f in re.findall(rb"^# TYPE (\w+) ", text, re.M)}
        assert families <= documented, f"{name}: undocumented {families - documented}"


def test_every_panel_query_returns_data(fleet, capsys, record_property):
    prom = fleet.prom
    groups = prom.rules()
    assert groups, "the recording rules did not load"
    prom.wait_for_query("count(ssd:temperature_celsius:max)", timeout=30)
    broken = [(r["name"], r.get("lastError")) for g in prom.rules() for r in g["rules"] if r.get("health") == "err"]
    assert not broken, broken
    # rate() needs two samples of every counter inside its window
    prom.wait_for_query("count(rate(ssd_io_writes_completed_total[1m]) > 0) >= 9", timeout=30)

    # (dashboard, panel title, refId) -> {"errors": [...], "data": bool}
    checks: Dict[Tuple[str, str, str], Dict[str, object]] = {}
    slowest: Tuple[float, str] = (0.0, "")
    runs = 0
    started = time.monotonic()
    deadline = started + DATA_TIMEOUT
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
                    runs += 1
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

    record_property("panel_queries", len(checks))
    record_property("query_runs", runs)
    record_property("slowest_panel_query_seconds", round(slowest[0], 4))
    with capsys.disabled():
        print(
            f"\n[dashboards] {len(checks)} panel queries, {runs} runs with variables substituted, "
            f"all with data after {time.monotonic() - started:.1f} s; "
            f"slowest {slowest[0] * 1000:.1f} ms: {slowest[1]}"
        )
    problems = [
        f"{key}: " + ("; ".join(state["errors"]) if state["errors"] else "no data for any variable value")
        for key, state in sorted(checks.items())
        if key in pending
    ]
    assert not problems, "\n".join(problems)
    assert len(checks) > 60


def _stat(prom: Prometheus, title: str) -> Optional[float]:
    """The value a fleet-overview stat panel shows for all jobs."""
    dashboard = load("ssdfleet-fleet.json")
    (panel,) = [p for p in query_panels(dashboard) if p["title"] == title and p["type"] == "stat"]
    (combo,) = _variable_combinations(prom, dashboard)
    answer = prom.query(_substitute(panel["targets"][0]["expr"], combo))
    assert answer.get("status") == "success", answer
    result = answer["data"]["result"]
    return float(result[0]["value"][1]) if len(result) == 1 else None


def test_fleet_overview_counts_what_the_fleet_has(fleet):
    """The headline numbers match the fleet the test built, not just "some data"."""
    expected = {
        "Drives": float(sum(len(h.drives) for h in fleet.hosts.values())),
        "Under 10 % life left": 1.0,  # the worn card
        "Wear-out within 90 days": 1.0,  # the worn card, due in about 7 weeks
        "Write caches off": 1.0,  # sda on db2
        "Write cache not as expected": 1.0,
        "Stale agents": 1.0,  # the dead target
        "Collectors failing": 1.0,  # smartctl on db3
        "Stuck probes": 0.0,
    }
    deadline = time.monotonic() + 30
    while True:
        seen = {title: _stat(fleet.prom, title) for title in expected}
        if seen == expected or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert seen == expected
    # The worn card lost a percent while Prometheus watched: the drive dashboard's trend
    # (deriv over life left) is negative for it, and only for it.
    worn = fleet.hosts["db3-worn"]
    assert worn.workload.worn_at is not None
    falling = fleet.prom.wait_for_query("deriv(ssd_life_left_ratio[7d]) < 0", timeout=20)
    assert {r["metric"]["serial"] for r in falling["data"]["result"]} == {WORN_SERIAL}
