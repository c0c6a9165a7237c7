"""Every shipped recording rule returns data on the fleet bench's model, checked by promtool.

The fleet is bench/fleet_scale.py's own model at the real agent's density (its
:class:`AgentSeries` is captured from the agent's code on a simulated host), small enough for
promtool's in-memory test storage: 24 hosts of 4 drives, host generations in their shares
(``stratified``), a tenth of the hosts running the sync-write probe. Each series is rendered
every 60 s for 150 minutes, which covers the longest raw window a shipped rule reads (an hour,
and the hour before it for ``offset 1h``); the hourly rules' day windows read the recorded
hourly series, which the test's own evaluations write.

For each recording rule of deploy/prometheus/ssdfleet-recording.yml (its record name and its
static labels), ``promtool test rules`` checks that the rule's output has a series at the end
of the window. A rule that returns nothing fails the test, named by its selector.

promtool's clock starts at 0, so timestamp-valued series (``*_timestamp_seconds``) are given
relative to the window's start, as ``time()`` in the rules sees them.
"""

from __future__ import annotations

import copy
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Dict, List

import pytest
import yaml

from tests.support.bench import load_fleet_scale

ROOT = Path(__file__).resolve().parent.parent
RULES = ROOT / "deploy" / "prometheus" / "ssdfleet-recording.yml"
PROMTOOL = shutil.which("promtool")
pytestmark = pytest.mark.skipif(PROMTOOL is None, reason="promtool is not installed (Debian package prometheus)")

NOW = 1_790_000_000 - 1_790_000_000 % 7200
MINUTES = 150
HOSTS, PER_HOST = 24, 4


def _fleet_scale():
    return load_fleet_scale("fleet_scale_coverage")


def _values(values: List[str]) -> str:
    """promtool's series notation: runs of one value as ``vxN``, the others one by one."""
    out = []
    i = 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and values[j + 1] == values[i]:
            j += 1
        out.append(values[i] if j == i else f"{values[i]}x{j - i}")
        i = j + 1
    return " ".join(out)


def _input_series(fs, fleet, start: float) -> List[Dict[str, str]]:
    series: Dict[str, List[str]] = {}
    for minute in range(MINUTES + 1):
        t = start + 60 * minute
        for line in fs.render_live(fleet, t, generation=minute).decode().splitlines():
            key, value = line.rsplit(" ", 1)
            name = key.split("{", 1)[0]
            if name.endswith("_timestamp_seconds"):
                value = f"{float(value) - start:.0f}"
            series.setdefault(key, []).append(value)
    # a series the model starts or stops rendering mid-window is given from its first sample on
    # (promtool's "_" marks a missing step)
    return [{"series": key, "values": _values(["_"] * (MINUTES + 1 - len(vals)) + vals)}
            for key, vals in series.items()]


@pytest.fixture(scope="module")
def coverage_file(tmp_path_factory):
    fs = _fleet_scale()
    start = NOW - MINUTES * 60
    models = sorted({m for _, ms in fs.HOST_TYPES for m in ms})
    agent = fs.AgentSeries.capture(models, start)
    fleet = fs.Fleet(HOSTS, PER_HOST, float(NOW), seed=17, agent=agent, syncwrite_share=0.1, stratified=True)
    rules = fs.recording_rules(RULES)
    tests = [{
        "expr": f"count(last_over_time({fs.rule_selector(record, labels)}[65m])) > bool 0",
        "eval_time": f"{MINUTES}m",
        "exp_samples": [{"labels": "{}", "value": 1}],
    } for _, record, labels in rules]
    doc = {
        "rule_files": [str(RULES)],
        "evaluation_interval": "1m",
        # promtool orders groups at random without this; the shipped groups chain in file order
        "group_eval_order": list(dict.fromkeys(group for group, _, _ in rules)),
        "tests": [{"interval": "1m", "input_series": _input_series(fs, fleet, start), "promql_expr_test": tests}],
    }
    path = tmp_path_factory.mktemp("coverage") / "coverage-test.yml"
    path.write_text(json.dumps(doc), encoding="utf-8")  # JSON is YAML, and written 50x faster
    return path, rules, fleet, doc


def test_the_model_fleet_has_what_the_rules_read(coverage_file):
    fleet = coverage_file[2]
    kinds = {spec.kind for _, drives in fleet.hosts for spec in drives}
    assert kinds == {"nvme", "ata", "shannon"}, kinds
    assert fleet.syncwrite_hosts
    assert fleet.agent.collectors and len(fleet.agent.per_agent) > 0


def test_every_shipped_recording_rule_returns_data_on_the_bench_model(coverage_file):
    path, rules = coverage_file[:2]
    assert len(rules) >= 50
    # promtool takes about 19 s here (2 cores); the timeout is a generous multiple of that
    proc = subprocess.run([PROMTOOL, "test", "rules", str(path)], capture_output=True, text=True,
                          timeout=900, check=False)
    failed = sorted(set(re.findall(r'expr: "count\(last_over_time\((\{[^}]*\})', proc.stdout + proc.stderr)))
    assert proc.returncode == 0, ("rules that returned nothing: " + "; ".join(failed) + "\n"
                                  + (proc.stdout + proc.stderr)[-3000:])


def test_a_rule_that_returns_nothing_fails_the_check(coverage_file, tmp_path):
    """The check can fail: a copy of the rules with one rule that matches nothing is named."""
    rules = yaml.safe_load(RULES.read_text(encoding="utf-8"))
    rules["groups"][0]["rules"].append({"record": "ssd:coverage_probe:none", "expr": "ssd_life_left_ratio > 2"})
    (tmp_path / "rules.yml").write_text(yaml.safe_dump(rules, sort_keys=False), encoding="utf-8")
    doc = copy.deepcopy(coverage_file[3])
    doc["rule_files"] = [str(tmp_path / "rules.yml")]
    # the first host's series are enough to evaluate every rule; the whole fleet is the test above
    first = f'instance="{coverage_file[2].hosts[0][0]}"'
    doc["tests"][0]["input_series"] = [s for s in doc["tests"][0]["input_series"] if first in s["series"]]
    doc["tests"][0]["promql_expr_test"].append({
        "expr": 'count(last_over_time({__name__="ssd:coverage_probe:none"}[65m])) > bool 0',
        "eval_time": f"{MINUTES}m", "exp_samples": [{"labels": "{}", "value": 1}]})
    (tmp_path / "test.yml").write_text(json.dumps(doc), encoding="utf-8")
    proc = subprocess.run([PROMTOOL, "test", "rules", str(tmp_path / "test.yml")], capture_output=True, text=True,
                          timeout=900, check=False)
    assert proc.returncode != 0
    assert "ssd:coverage_probe:none" in proc.stdout + proc.stderr


def test_the_bench_excuses_an_empty_rule_only_by_name_and_condition():
    """bench/fleet_scale.py accepts a rule's emptiness only for the rules it names, each with the
    query that must be empty too and a reason; the names are shipped rules, and the coverage
    test above gives none of them that excuse."""
    fs = _fleet_scale()
    records = {record for _, record, _ in fs.recording_rules(RULES)}
    for record, (condition, reason) in fs.ALLOWED_EMPTY.items():
        assert record in records, record
        assert condition.strip() and len(reason) > 20
