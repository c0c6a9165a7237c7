"""The Grafana dashboards: generated JSON is current, well formed, and every query has data.

(a) dashboards/json/*.json equals what ``python -m dashboards.build`` renders now;
(b) the JSON validates against Grafana's published JSON schema (grafana-foundation-sdk's
    jsonschema/ files, vendored in tests/fixtures/grafana-schema/ with their provenance):
    the dashboard schema for the dashboard and every panel, and each panel's options and field
    config against its panel type's schema where one is vendored; an unknown panel type is an
    error. It also loads back into grafana-foundation-sdk's typed models unchanged, and a
    structural check that needs no SDK: required keys, unique ids, grid positions inside 24
    columns and not overlapping, every panel with a templated Prometheus data source and
    targets, variables defined, and every metric name one that docs/metrics.md (or the
    recording rules) defines;
(c) every panel query, with the template variables resolved the way Grafana resolves them
    (label_values() through the HTTP API of a real Prometheus), returns data from a live fake
    fleet: five real ``ssdfleet agent`` processes on fake hosts (tests/livefleet.py) - the
    default host, one whose SATA drive has its write cache switched off, one with a nearly
    worn-out Shannon card and a drive whose smartctl output is cut short, and one with a rack
    of twelve more cards spread over every band of life left and every 30-day wear-out bucket
    of the next year, and one whose drives sit behind a MegaRAID (battery failed, volume
    write-back lost) and an Adaptec (RAID 10 rebuilding) - plus a scrape target on a port nothing listens on. Each host's state
    directory holds a history.sqlite seeded over the past two weeks before its agent starts
    (the file earlier runs would have left), so the agents export write rates and wear-out
    projections; a workload thread moves /proc/diskstats and the card counters while
    Prometheus scrapes every second. That Prometheus runs the shipped recording rules AND the
    shipped alert rules (every group evaluated each second, every for: 1 s), as the alerting
    end-to-end test does with its real agent, so the queries the panels show are answered by
    the Prometheus that pages. A target ending in ``or vector(0)`` (a stat or bar that must
    say 0 rather than "No data") is also run without that fallback and must still have data.

(a), the SDK round trip and the schema-versus-SDK check need grafana-foundation-sdk
(Python >= 3.11) and skip without it; schema validation needs the ``jsonschema`` package; the
rest reads only the committed JSON.
"""

from __future__ import annotations

import copy
import json
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
from tests.livefleet import (
    CARD_RACK,
    SHANNON_SERIAL,
    WORN_LIFE_LEFT_PERCENT,
    WORN_SERIAL,
    LiveHost,
    build_card_rack_host,
    prepare_controller_host,
    prepare_host,
    with_syncwrite_probe,
    worn_card_status,
)
from tests.promstack import Prometheus, free_port, prometheus_binary, skip_or_fail
from tests.support.alerting import shortened_rules
from tests.support.dashboards import (
    DASHBOARD_FILES,
    _has_data,
    _run,
    _substitute,
    _variable_combinations,
    all_panels,
    load,
    query_panels,
)
from tests.support.e2e import NVME0_SERIAL, NVME1_SERIAL, SDA_SERIAL

METRICS_DOC = ROOT / "docs" / "metrics.md"
RECORDING_RULES = ROOT / "deploy" / "prometheus" / "ssdfleet-recording.yml"
ALERT_RULES = ROOT / "deploy" / "prometheus" / "ssdfleet-alerts.yml"
# Seconds to wait for every query to have data, on top of two passes over every query at the
# slowest pass's cost: one pass took 67.7 s at load average 12 on a 2-core machine, so a wait
# counted from the start left room for no second pass.
DATA_TIMEOUT = 90.0


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


# Grafana's published JSON schema (grafana-foundation-sdk's jsonschema/*.jsonschema.json,
# vendored verbatim; versions and commits in tests/fixtures/grafana-schema/PROVENANCE.tsv).
SCHEMA_DIR = "grafana-schema/"
DASHBOARD_SCHEMA = SCHEMA_DIR + "dashboard.jsonschema.json"
# Panel type (the "type" of a panel) -> its published schema: definitions "Options" (the
# panel's options) and "FieldConfig" (its fieldConfig.defaults.custom).
PANEL_SCHEMAS = {
    "stat": SCHEMA_DIR + "stat.jsonschema.json",
    "timeseries": SCHEMA_DIR + "timeseries.jsonschema.json",
    "state-timeline": SCHEMA_DIR + "statetimeline.jsonschema.json",
}
# Panel types the dashboards use whose Grafana 11.x schema the index we vendor from does not
# hold in a version that accepts what the pinned SDK writes (the bargauge copy predates its
# legend; no table copy could be dated): the dashboard schema's Panel definition still checks
# them. Any other type is unknown, hence an error.
PANEL_TYPES_WITHOUT_SCHEMA = {"bargauge", "table"}
# Schemas that match the pinned SDK (11.6) definition for definition; the older panel
# schemas only have to be no looser than it (see test_vendored_schemas_agree_with_the_pinned_sdk).
SCHEMAS_MATCHING_THE_SDK = {DASHBOARD_SCHEMA, PANEL_SCHEMAS["stat"]}


def _schema(relative: str) -> dict:
    return json.loads(fixture_path(relative).read_text(encoding="utf-8"))


def as_grafana_writes_it(schema: dict) -> dict:
    """The dashboard schema with the three places where the generated JSON schema is stricter
    than Grafana itself loosened (the vendored file stays verbatim):

    * Threshold.value: the base step of every thresholds list is ``null`` (-Infinity), which
      the schema's own description of the field says ("Nulls currently appear here when
      serializing -Infinity to JSON") but its type does not allow;
    * MatcherConfig.options and DynamicConfigValue.value are "any" in Grafana's CUE schema
      (``options?: _``), rendered as "object" by the generator; Grafana's byName matcher takes
      a string and override values are strings, numbers or objects.

    test_published_schema_needs_exactly_these_patches proves each one is needed and that
    nothing else differs."""
    patched = copy.deepcopy(schema)
    definitions = patched["definitions"]
    definitions["Threshold"]["properties"]["value"] = {"type": ["number", "null"]}
    definitions["MatcherConfig"]["properties"]["options"] = {}
    definitions["DynamicConfigValue"]["properties"]["value"] = {}
    return patched


# Where the unpatched schema is expected to complain, one pattern per patch above.
PATCHED_PATHS = {
    "Threshold.value": re.compile(r"/thresholds/steps/\d+/value$"),
    "MatcherConfig.options": re.compile(r"fieldConfig/overrides/\d+/matcher/options$"),
    "DynamicConfigValue.value": re.compile(r"fieldConfig/overrides/\d+/properties/\d+/value$"),
}


def _validator(definitions: dict, name: str):
    jsonschema = pytest.importorskip("jsonschema", reason="jsonschema not installed (test extras)")
    return jsonschema.Draft7Validator({"$ref": f"#/definitions/{name}", "definitions": definitions})


def _errors(validator, instance, where: str) -> List[str]:
    out = []
    for error in validator.iter_errors(instance):
        path = "/".join(str(p) for p in error.absolute_path)
        out.append(f"{where}/{path}: {error.message[:200]}".rstrip("/"))
    return out


def schema_errors(dashboard: dict, patched: bool = True) -> List[str]:
    """Every way ``dashboard`` breaks the published schema, as "where: what" strings.

    The dashboard without its panels is checked against Dashboard, then each panel on its
    own against RowPanel or Panel (so a broken panel names its own problem instead of a
    oneOf failure), and, where its type has a published schema, its options against that
    schema's Options and its fieldConfig.defaults.custom against its FieldConfig."""
    schema = _schema(DASHBOARD_SCHEMA)
    if patched:
        schema = as_grafana_writes_it(schema)
    definitions = schema["definitions"]
    errors = _errors(_validator(definitions, "Dashboard"), dict(dashboard, panels=[]), "dashboard")
    panel_v, row_v = _validator(definitions, "Panel"), _validator(definitions, "RowPanel")
    panels = [(f"panels/{i}", p) for i, p in enumerate(dashboard.get("panels", []))]
    panels += [(f"{where}/panels/{j}", q) for where, p in list(panels) for j, q in enumerate(p.get("panels", []))]
    for where, panel in panels:
        kind = panel.get("type")
        if kind == "row" and "/panels/" not in where[len("panels/"):]:
            errors += _errors(row_v, dict(panel, panels=[]), where)
            continue
        errors += _errors(panel_v, panel, where)
        if kind in PANEL_SCHEMAS:
            plugin = _schema(PANEL_SCHEMAS[kind])["definitions"]
            errors += _errors(_validator(plugin, "Options"), panel.get("options", {}), f"{where}/options")
            custom = (panel.get("fieldConfig") or {}).get("defaults", {}).get("custom")
            if "FieldConfig" in plugin and custom is not None:
                errors += _errors(_validator(plugin, "FieldConfig"), custom, f"{where}/fieldConfig/defaults/custom")
        elif kind not in PANEL_TYPES_WITHOUT_SCHEMA:
            errors.append(f"{where}/type: unknown panel type {kind!r}")
    return errors


@pytest.mark.parametrize("name", DASHBOARD_FILES)
def test_json_validates_against_grafanas_published_schema(name):
    dashboard = load(name)
    assert {p["type"] for p in query_panels(dashboard)} & set(PANEL_SCHEMAS), "no panel checked by a panel schema"
    errors = schema_errors(dashboard)
    assert not errors, "\n".join(errors)
    # The same dashboard, whole, against the schema's own root (panels as its oneOf of
    # Panel and RowPanel): what Grafana's schema says of the file as one document.
    whole = _validator(as_grafana_writes_it(_schema(DASHBOARD_SCHEMA))["definitions"], "Dashboard")
    assert not _errors(whole, dashboard, name)


def test_published_schema_needs_exactly_these_patches():
    """Without as_grafana_writes_it() the only complaints are at the three patched places,
    and each patch is needed by at least one dashboard."""
    seen = set()
    for name in DASHBOARD_FILES:
        for error in schema_errors(load(name), patched=False):
            where = error.split(": ", 1)[0]
            matched = [k for k, pattern in PATCHED_PATHS.items() if pattern.search(where)]
            assert matched, f"{name}: {error} is not one of the documented schema patches"
            seen.update(matched)
    assert seen == set(PATCHED_PATHS), f"patches no dashboard needs: {set(PATCHED_PATHS) - seen}"


def _first(dashboard: dict, kind: str) -> dict:
    return next(p for p in query_panels(dashboard) if p["type"] == kind)


def test_schema_rejects_a_string_grid_height():
    dashboard = load("ssdfleet-fleet.json")
    assert not schema_errors(dashboard)
    broken = copy.deepcopy(dashboard)
    panel = _first(broken, "stat")
    panel["gridPos"]["h"] = str(panel["gridPos"]["h"])
    errors = schema_errors(broken)
    assert errors and all("/gridPos/h" in e for e in errors), errors


def test_schema_rejects_an_unknown_panel_type():
    dashboard = load("ssdfleet-host.json")
    assert not schema_errors(dashboard)
    broken = copy.deepcopy(dashboard)
    _first(broken, "timeseries")["type"] = "timeseries-v2"
    errors = schema_errors(broken)
    assert len(errors) == 1 and "unknown panel type 'timeseries-v2'" in errors[0], errors


@pytest.mark.parametrize("kind", ["timeseries", "state-timeline"])
def test_schema_rejects_a_bogus_legend_display_mode(kind):
    dashboard = load("ssdfleet-drive.json")
    assert not schema_errors(dashboard)
    broken = copy.deepcopy(dashboard)
    _first(broken, kind)["options"]["legend"]["displayMode"] = "sideways"
    errors = schema_errors(broken)
    assert len(errors) == 1 and "/options/legend/displayMode" in errors[0] and "'sideways'" in errors[0], errors


def test_schema_rejects_a_bogus_stat_option():
    dashboard = load("ssdfleet-fleet.json")
    broken = copy.deepcopy(dashboard)
    _first(broken, "stat")["options"]["colorMode"] = "rainbow"
    errors = schema_errors(broken)
    assert len(errors) == 1 and "/options/colorMode" in errors[0], errors


def _sdk_fields(cls) -> set:
    """JSON keys a grafana-foundation-sdk model class reads or writes."""
    import inspect

    source = inspect.getsource(cls.from_json) + inspect.getsource(cls.to_json)
    return set(re.findall(r'if "(\w+)" in data', source)) | set(re.findall(r'"(\w+)": self\.', source)) | set(
        re.findall(r'payload\["(\w+)"\]', source)
    )


def test_vendored_schemas_agree_with_the_pinned_sdk():
    """The SDK pinned in pyproject.toml is generated from Grafana's schema for 11.6: every
    vendored definition is compared with the SDK class of the same name (object properties,
    enum values). The dashboard and stat schemas must match it exactly; the older panel
    schemas must allow nothing the SDK does not know (they may lack fields 11.6 added)."""
    pytest.importorskip("grafana_foundation_sdk", reason="grafana-foundation-sdk not installed (needs Python >= 3.11)")
    import enum
    import importlib

    from grafana_foundation_sdk.models import common

    modules = {DASHBOARD_SCHEMA: "dashboard", **{path: Path(path).name.split(".")[0] for path in PANEL_SCHEMAS.values()}}
    compared = 0
    for path, module_name in modules.items():
        module = importlib.import_module(f"grafana_foundation_sdk.models.{module_name}")
        for name, definition in _schema(path)["definitions"].items():
            cls = getattr(module, name, None) or getattr(common, name, None)
            if cls is None:
                continue
            if isinstance(cls, type) and issubclass(cls, enum.Enum):
                schema_side, sdk_side = set(definition.get("enum", [])), {e.value for e in cls}
            elif "properties" in definition and hasattr(cls, "from_json"):
                schema_side, sdk_side = set(definition["properties"]), _sdk_fields(cls)
            else:
                continue
            compared += 1
            if path in SCHEMAS_MATCHING_THE_SDK:
                assert schema_side == sdk_side, f"{path} {name}: schema-only {schema_side - sdk_side}, SDK-only {sdk_side - schema_side}"
            else:
                assert schema_side <= sdk_side, f"{path} {name}: the schema allows {schema_side - sdk_side}, unknown to the SDK"
    assert compared > 60


def test_panel_types_are_the_sdks():
    """Every panel type the validation accepts is one the pinned SDK knows as a panel plugin,
    and the unknown one of the negative test is not."""
    pytest.importorskip("grafana_foundation_sdk", reason="grafana-foundation-sdk not installed (needs Python >= 3.11)")
    from grafana_foundation_sdk.cog import plugins, runtime

    plugins.register_default_plugins()
    for kind in set(PANEL_SCHEMAS) | PANEL_TYPES_WITHOUT_SCHEMA:
        assert runtime.panelcfg_config(kind) is not None, kind
    assert runtime.panelcfg_config("timeseries-v2") is None
    used = {p["type"] for name in DASHBOARD_FILES for p in query_panels(load(name))}
    assert used <= set(PANEL_SCHEMAS) | PANEL_TYPES_WITHOUT_SCHEMA


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


def _fast_rules(tmp_path: Path) -> List[Path]:
    """The recording rules with every group evaluated each second (their own intervals are
    minutes) and their 5-minute windows shrunk with the 1 s scrape (shortened_rules), so
    recording-rule panels have data within seconds."""
    if not RECORDING_RULES.exists():
        return []
    return [shortened_rules(RECORDING_RULES, tmp_path / RECORDING_RULES.name, {})]


# The live fleet: five agents on fake hosts and a target nobody answers on.
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
    # db1: the default host as it comes, with the sync-write probe on (its directory on sda).
    db1 = with_syncwrite_probe(prepare_host("db1", build_default_host(root / "db1"), now=now))
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
    # db4: the default host plus a rack of twelve cards (tests/livefleet.py CARD_RACK), one in
    # every band of life left and every 30-day wear-out bucket of the fleet dashboard, each
    # with the history (write rate) that puts its projection there.
    host = build_default_host(root / "db4")
    rates = build_card_rack_host(host)
    db4 = prepare_host("db4-cards", host, write_rates=rates, now=now)
    # db5: drives behind RAID controllers (issue 28): seven read through a MegaRAID whose
    # battery failed and whose volume runs write-through though configured write-back, and an
    # Adaptec RAID 10 rebuilding, for the host dashboard's controller rows.
    db5 = prepare_controller_host("db5-raid", root / "db5", now=now)
    return {h.name: h for h in (db1, db2, db3, db4, db5)}


def _fast_alert_rules(rules_dir: Path) -> Path:
    """The shipped alert rules as the alerting end-to-end test runs them: every group each
    second, and here every for: 1 s (keep_firing_for and every expression as shipped)."""
    import yaml

    names = [r["alert"] for g in yaml.safe_load(ALERT_RULES.read_text())["groups"] for r in g["rules"] if "alert" in r]
    return shortened_rules(ALERT_RULES, rules_dir / ALERT_RULES.name, {name: "1s" for name in names})


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
    """Five real agents on fake hosts with seeded history and a moving workload, one dead
    target (a port nothing listens on), and a real Prometheus scraping them every second.

    This Prometheus is set up as the alerting end-to-end test's (tests/test_alerting_e2e.py):
    it scrapes real ``ssdfleet agent`` processes reading fake tools (there one host, here
    five) and evaluates the shipped recording AND alert rules every second, so the panel
    queries below run on a Prometheus that also raises the shipped alerts (see
    test_the_same_prometheus_raises_the_fleets_alerts)."""
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
            rule_files=[*_fast_rules(rules_dir), _fast_alert_rules(rules_dir)],
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


# A target ending in this returns 0 rather than "No data" when nothing matches (a count on a
# stat or a bar gauge): it always has data, so it is also run without the fallback.
ZERO_FALLBACK = re.compile(r"\s+or\s+vector\(0\)\s*$")
# Targets whose query legitimately matches nothing in the live fleet, so only the fallback
# answers: (dashboard, panel title, refId) -> why. The test checks that each still has no data
# without the fallback (when the fleet grows one, remove it here).
FALLBACK_ONLY = {
    ("ssdfleet-fleet.json", "Stuck probes", "A"): (
        "no probe of the live fleet is stuck: that needs a tool process that survives SIGKILL "
        "for the whole module (tests/test_faults.py fakes one with ptrace for seconds)"
    ),
}


def without_zero_fallback(expr: str) -> Optional[str]:
    """``expr`` without its trailing ``or vector(0)``, or None when it has none."""
    stripped = ZERO_FALLBACK.sub("", expr)
    return stripped if stripped != expr else None


def test_zero_fallback_is_recognised():
    assert without_zero_fallback("count(ssd_x == 0) or vector(0)") == "count(ssd_x == 0)"
    assert without_zero_fallback("count(ssd_x) or vector(0) > 1") is None
    assert without_zero_fallback("count(ssd_x)") is None
    found = [
        t["expr"] for n in DASHBOARD_FILES for p in query_panels(load(n)) for t in p["targets"]
        if without_zero_fallback(t["expr"])
    ]
    assert len(found) == sum(t["expr"].count("vector(0)") for n in DASHBOARD_FILES for p in query_panels(load(n))
                             for t in p["targets"])


def test_every_panel_query_returns_data(fleet, capsys, record_property):
    prom = fleet.prom
    groups = prom.rules()
    assert groups, "the recording rules did not load"
    prom.wait_for_query("count(ssd:temperature_celsius:max)", timeout=30)
    broken = [(r["name"], r.get("lastError")) for g in prom.rules() for r in g["rules"] if r.get("health") == "err"]
    assert not broken, broken
    # rate() needs two samples of every counter inside its window
    prom.wait_for_query("count(rate(ssd_io_writes_completed_total[1m]) > 0) >= 12", timeout=30)

    # Keyed by panel id as well as title: two panels of a dashboard may share a title (the
    # "Write caches off" stat and table), and each must have data on its own. A target with
    # an "or vector(0)" fallback is checked twice, as written and without the fallback.
    # (dashboard, panel id, panel title, refId, variant) -> {"errors": [...], "data": bool}
    checks: Dict[Tuple[str, int, str, str, str], Dict[str, object]] = {}
    slowest: Tuple[float, str] = (0.0, "")
    runs = 0
    started = time.monotonic()
    deadline = started + DATA_TIMEOUT
    pending: Optional[set] = None
    slowest_pass = 0.0
    while True:
        pass_started = time.monotonic()
        now = time.time()
        for name in DASHBOARD_FILES:
            dashboard = load(name)
            combos = _variable_combinations(prom, dashboard)
            for panel, target in ((p, t) for p in query_panels(dashboard) for t in p["targets"]):
                variants = [("as written", target["expr"])]
                stripped = without_zero_fallback(target["expr"])
                if stripped is not None:
                    variants.append(("without or vector(0)", stripped))
                for variant, template in variants:
                    key = (name, panel["id"], panel["title"], target["refId"], variant)
                    if pending is not None and key not in pending:
                        continue
                    state = checks.setdefault(key, {"errors": [], "data": False})
                    state["errors"] = []
                    for combo in combos:
                        expr = _substitute(template, combo)
                        assert "$" not in expr, f"{key}: unresolved variable in {expr}"
                        answer, took = _run(prom, target, expr, now)
                        runs += 1
                        if took > slowest[0]:
                            slowest = (took, f"{name} / {panel['title']} / {target['refId']}")
                        if answer.get("status") != "success":
                            state["errors"].append(f"{combo}: {answer.get('error')} in {expr}")
                        elif _has_data(answer):
                            state["data"] = True
        expected_empty = {k for k in checks if k[4] != "as written" and (k[0], k[2], k[3]) in FALLBACK_ONLY}
        pending = {k for k, st in checks.items() if st["errors"] or (not st["data"] and k not in expected_empty)}
        slowest_pass = max(slowest_pass, time.monotonic() - pass_started)
        if not pending or time.monotonic() > deadline + 2 * slowest_pass:
            break
        time.sleep(1.0)

    stripped_checks = [k for k in checks if k[4] != "as written"]
    record_property("panel_queries", len(checks) - len(stripped_checks))
    record_property("zero_fallback_queries", len(stripped_checks))
    record_property("query_runs", runs)
    record_property("slowest_panel_query_seconds", round(slowest[0], 4))
    with capsys.disabled():
        print(
            f"\n[dashboards] {len(checks) - len(stripped_checks)} panel queries (+{len(stripped_checks)} run again "
            f"without their or vector(0) fallback, {len(expected_empty)} of them expected empty), {runs} runs "
            f"with variables substituted, done after {time.monotonic() - started:.1f} s (slowest pass "
            f"{slowest_pass:.1f} s); "
            f"slowest {slowest[0] * 1000:.1f} ms: {slowest[1]}"
        )
    problems = [
        f"{key}: " + ("; ".join(state["errors"]) if state["errors"] else "no data for any variable value")
        for key, state in sorted(checks.items())
        if key in pending
    ]
    assert not problems, "\n".join(problems)
    # The fallback-only targets really have nothing without the fallback (else drop them).
    assert not [k for k in expected_empty if checks[k]["data"]], [k for k in expected_empty if checks[k]["data"]]
    assert {(k[0], k[2], k[3]) for k in expected_empty} == set(FALLBACK_ONLY), "FALLBACK_ONLY names a missing target"
    assert len(checks) - len(stripped_checks) > 60 and len(stripped_checks) >= 20


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
    # From how the fleet was built: the worn card (5 %, then 4 %; due in 5-7 weeks) and the
    # rack's cards by their designed life left and wear-out date.
    expected = {
        "Drives": float(sum(len(h.drives) for h in fleet.hosts.values())),
        "Under 10 % life left": 1.0 + sum(c.life_left_percent < 10 for c in CARD_RACK),
        "Wear-out within 90 days": 1.0 + sum(c.wearout_days <= 90 for c in CARD_RACK),
        "Write caches off": 1.0,  # sda on db2
        "Write cache not as expected": 1.0,
        "Stale agents": 1.0,  # the dead target
        "Collectors failing": 1.0,  # smartctl on db3
        "Stuck probes": 0.0,
    }
    assert WORN_LIFE_LEFT_PERCENT < 10
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


def test_fleet_bands_and_buckets_have_the_designed_drives(fleet):
    """The rack puts one card in every band of life left and every 30-day wear-out bucket:
    read back through the recording rules and the agents' projections on Prometheus."""
    prom = fleet.prom
    bands = prom.wait_for_query(
        "job:ssd_life_left_ratio:count", timeout=30,
        predicate=lambda a: a.get("status") == "success" and len(a["data"]["result"]) == 6,
    )
    counts = {r["metric"]["band"]: float(r["value"][1]) for r in bands["data"]["result"]}
    assert set(counts) == {"0-3%", "3-10%", "10-25%", "25-50%", "50-75%", "75-100%"} and min(counts.values()) >= 1
    answer = prom.query(
        f'floor((min by (serial) (ssd_projected_wearout_timestamp_seconds{{instance="{fleet.hosts["db4-cards"].target}"}})'
        " - time()) / 86400 / 30)"
    )
    month = {r["metric"]["serial"]: int(float(r["value"][1])) for r in answer["data"]["result"]}
    assert {c.serial: month.get(c.serial) for c in CARD_RACK} == {c.serial: int(c.wearout_days // 30) for c in CARD_RACK}
    assert sorted(month[c.serial] for c in CARD_RACK) == list(range(12))


def test_the_same_prometheus_raises_the_fleets_alerts(fleet):
    """The Prometheus that answered the panel queries evaluates the shipped alert rules too
    (every for: 1 s): the fleet's problems fire there, as designed."""
    db2, db3, db4 = (fleet.hosts[n].target for n in ("db2-cache-off", "db3-worn", "db4-cards"))
    critical = [c for c in CARD_RACK if c.life_left_percent < 3]
    within_30 = [c for c in CARD_RACK if c.wearout_days <= 30]
    assert critical and within_30
    expected = {
        ("SSDWriteCacheDisabled", db2, SDA_SERIAL),
        ("SSDFleetAgentDown", fleet.dead_target, ""),
        ("SSDFleetCollectorFailing", db3, "smartctl"),
        ("SSDLifeLeftLow", db3, WORN_SERIAL),
        *(("SSDLifeLeftCritical", db4, c.serial) for c in critical),
        *(("SSDWearOutWithin30Days", db4, c.serial) for c in within_30),
    }

    def firing() -> set:
        return {
            (a["labels"]["alertname"], a["labels"].get("instance"), a["labels"].get("serial") or a["labels"].get("collector", ""))
            for a in fleet.prom.alerts()
            if a["state"] == "firing"
        }

    deadline = time.monotonic() + 30
    seen = firing()
    while not expected <= seen and time.monotonic() < deadline:
        time.sleep(0.5)
        seen = firing()
    assert expected <= seen, f"missing {expected - seen}; firing {sorted(seen)}"
    # and nothing about a card that is healthy (10 % life left exactly is not under 10 %)
    healthy = {c.serial for c in CARD_RACK if c.life_left_percent >= 10 and c.wearout_days > 30}
    assert not [a for a in seen if a[2] in healthy], sorted(seen)


def _host_panel_answer(fleet: Fleet, title: str, ref_id: str, instance: str, wait: bool = True) -> List[dict]:
    """The result of one host-dashboard target for ``instance`` (all jobs); ``wait``: until
    it has data."""
    dashboard = load("ssdfleet-host.json")
    (panel,) = [p for p in query_panels(dashboard) if p["title"] == title]
    (target,) = [t for t in panel["targets"] if t["refId"] == ref_id]
    expr = _substitute(target["expr"], {"job": "(ssdfleet)", "instance": instance})
    answer = fleet.prom.wait_for_query(expr, timeout=30) if wait else fleet.prom.query(expr)
    assert answer.get("status") == "success", answer
    return answer["data"]["result"]


def test_host_dashboard_controller_rows_show_the_cliff(fleet):
    """On the controller host, the volumes table says what the fake tools' captures say: the
    MegaRAID volume configured write-back runs write-through (WRITE-BACK LOST), the Adaptec
    RAID 10 rebuilds at 1 %, the MegaRAID battery failed (replace: yes) at 97 % charge, and the
    controllers table names the causes; every other host has no controller rows."""
    db5 = fleet.hosts["db5-raid"].target

    def by_key(title: str, ref_id: str, *labels: str) -> Dict[tuple, float]:
        return {tuple(r["metric"].get(k, "") for k in labels): float(r["value"][1])
                for r in _host_panel_answer(fleet, title, ref_id, db5)}

    volumes = "Volumes: write cache now and as configured"
    assert by_key(volumes, "C", "controller", "volume")[("megaraid/0", "0")] == 1.0  # write-back lost
    assert by_key(volumes, "A", "controller", "volume")[("megaraid/0", "0")] == 0.0  # write-through now
    assert by_key(volumes, "B", "controller", "volume")[("megaraid/0", "0")] == 1.0  # configured write-back
    assert by_key(volumes, "E", "controller", "volume") == {("arcconf/1", "0"): 0.01}
    assert ("megaraid/0", "0", "optimal") in by_key(volumes, "D", "controller", "volume", "state")
    assert ("arcconf/1", "0", "rebuilding") in by_key(volumes, "D", "controller", "volume", "state")
    batteries = "Batteries and flash modules (BBU, CacheVault, FBWC, ZMM)"
    assert by_key(batteries, "F", "controller", "kind") == {("megaraid/0", "bbu"): 1.0}
    assert by_key(batteries, "C", "controller", "kind") == {("megaraid/0", "bbu"): 0.97}
    assert by_key(batteries, "A", "controller", "kind", "model")[("arcconf/1", "zmm", "-")] == 0.0
    causes = by_key("RAID controllers on $instance", "D", "controller", "cause")
    # (the Adaptec has no flash module fitted: its write-back volumes would run write-through)
    assert causes == {("megaraid/0", "battery failed"): 1.0, ("arcconf/1", "battery missing"): 1.0}, causes
    for name, live in fleet.hosts.items():
        if name != "db5-raid":
            assert _host_panel_answer(fleet, volumes, "C", live.target, wait=False) == [], name
