"""The shipped rules on VictoriaMetrics + vmalert: the promtool cases, replayed.

docs/scaling.md recommends loading the rules into vmalert. Each case below is a
``promtool test rules`` case from tests/rules/, run unchanged on a real VictoriaMetrics (Debian's
victoria-metrics package, which ships vmalert too): its input series are imported with
timestamps a few days back, ``vmalert -replay.*`` evaluates the recording file and the vmalert
alert file (deploy/victoriametrics/, generated) over that range, group after group, and the
ALERTS series vmalert writes must show, at every ``eval_time``, exactly the alerts (labels)
that promtool expects from Prometheus; the ``promql_expr_test`` values must match too.

Only the rules a case reads are loaded (the alerts it checks, the recorded series it queries,
and what those read), so that vmalert's pause between the rules of a group stays short.
Cases about keep_firing_for are not replayed: vmalert 1.79 has no such field (see
scripts/vmalert_rules.py).
"""

from __future__ import annotations

import copy
import math
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Set, Tuple

import pytest
import yaml

from tests.promstack import skip_or_fail, victoriametrics_factory, vmalert_binary  # noqa: F401 (fixture)
from tests.support.rules import metric_names, parse_duration

ROOT = Path(__file__).resolve().parent.parent
RECORDING = ROOT / "deploy" / "prometheus" / "ssdfleet-recording.yml"
PROM_ALERTS = ROOT / "deploy" / "prometheus" / "ssdfleet-alerts.yml"
VM_ALERTS = ROOT / "deploy" / "victoriametrics" / "ssdfleet-alerts.yml"
RULE_TESTS = ROOT / "tests" / "rules"

# (promtool test file, case name): every case of young_series_test.yml, the existing cases
# about growing counters and day baselines, which must keep their meaning on this store, and
# the rankings with ties (topk/bottomk alone pick different drives on the two stores).
CASES = [
    ("young_series_test.yml", "a busy drive that appears mid-test stays silent"),
    ("young_series_test.yml", "a young drive that becomes busy beyond its normal fires"),
    ("young_series_test.yml", "error counters of a drive that appears mid-test, unchanged, stay silent"),
    ("young_series_test.yml", "error counters of a drive that appears mid-test, then grow, alert"),
    ("drive_verdicts_test.yml", "defect counts growing"),
    ("drive_verdicts_test.yml", "defect counts that do not grow stay silent"),
    ("drive_verdicts_test.yml", "media errors growing"),
    ("drive_verdicts_test.yml", "old media errors stay silent"),
    ("performance_test.yml", "write latency far above the drive's normal"),
    ("performance_test.yml", "utilisation far above the drive's normal"),
    ("recording_test.yml", "rankings break ties by bytes written"),
    # the chain from 5-minute rates to hourly and day figures (docs/scaling.md)
    ("scaling_test.yml", "5-minute, hourly and day figures of steady counters"),
    ("scaling_test.yml", "lowest defect count of the day"),
]


# ------------------------------------------------------------------ the generated alert file


def test_vmalert_alert_file_is_up_to_date():
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "vmalert_rules.py"), "--check"],
        capture_output=True, text=True, timeout=60, check=False,
    )
    assert result.returncode == 0, result.stderr


def test_vmalert_alert_file_differs_only_in_keep_firing_for():
    source = yaml.safe_load(PROM_ALERTS.read_text(encoding="utf-8"))
    generated = yaml.safe_load(VM_ALERTS.read_text(encoding="utf-8"))
    dropped = 0
    for group in source["groups"]:
        for rule in group["rules"]:
            dropped += rule.pop("keep_firing_for", None) is not None
    assert dropped >= 1
    assert generated == source


def test_vmalert_loads_the_shipped_files():
    binary = vmalert_binary()
    if not binary:
        skip_or_fail("vmalert binary not found (apt-get install victoria-metrics)")
    result = subprocess.run(
        [binary, "-dryRun", "-rule.validateExpressions", "-rule.validateTemplates",
         f"-rule={RECORDING}", f"-rule={VM_ALERTS}"],
        capture_output=True, text=True, timeout=60, check=False,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]


# ------------------------------------------------------------------ promtool's input format


_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_EXPANDING = re.compile(rf"^({_NUMBER})(?:([+-])({_NUMBER}))?x(\d+)$")


def expand_values(values: str) -> List[Optional[float]]:
    """One entry per sample slot of a promtool ``values`` string, None where there is no
    sample (``_``, ``_xN``, ``stale``). ``a+bxN`` and ``axN`` are N+1 samples."""
    out: List[Optional[float]] = []
    for token in str(values).split():
        if token in ("_", "stale"):
            out.append(None)
            continue
        if token.startswith("_x"):
            out += [None] * int(token[2:])
            continue
        m = _EXPANDING.match(token)
        if m:
            start, sign, step, count = m.groups()
            inc = float(step or 0) * (-1 if sign == "-" else 1)
            out += [float(start) + inc * i for i in range(int(count) + 1)]
        else:
            out.append(float(token))
    return out


def parse_series(text: str) -> Dict[str, str]:
    """``name{a="b", ...}`` as a label dict with ``__name__``."""
    name, _, rest = text.strip().partition("{")
    labels = {k: bytes(v, "utf-8").decode("unicode_escape") for k, v in re.findall(r'(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"', rest)}
    if name.strip():
        labels["__name__"] = name.strip()
    return labels


def test_expand_values():
    assert expand_values("0+2x2 _ _x2 5x1 1-1x2 stale") == [0, 2, 4, None, None, None, 5, 5, 1, 0, -1, None]
    assert parse_series('x{a="b", c="d"}') == {"__name__": "x", "a": "b", "c": "d"}


# ------------------------------------------------------------------ which rules a case needs


def _rule_groups() -> List[Dict[str, Any]]:
    groups = []
    for path in (RECORDING, VM_ALERTS):
        groups += yaml.safe_load(path.read_text(encoding="utf-8"))["groups"]
    return groups


def needed_groups(case: Dict[str, Any]) -> List[Dict[str, Any]]:
    """The shipped groups, in order, cut down to the rules the case reads."""
    groups = _rule_groups()
    recorded: Dict[str, List[Dict[str, Any]]] = {}
    for group in groups:
        for rule in group["rules"]:
            if "record" in rule:
                recorded.setdefault(rule["record"], []).append(rule)
    wanted_alerts = {c["alertname"] for c in case.get("alert_rule_test") or []}
    todo: Set[str] = set()
    for group in groups:
        for rule in group["rules"]:
            if rule.get("alert") in wanted_alerts:
                todo |= metric_names(rule["expr"])
    for check in case.get("promql_expr_test") or []:
        todo |= metric_names(check["expr"])
    wanted_records: Set[str] = set()
    while todo:
        name = todo.pop()
        if name in recorded and name not in wanted_records:
            wanted_records.add(name)
            for rule in recorded[name]:
                todo |= metric_names(rule["expr"])
    out = []
    for group in groups:
        rules = [r for r in group["rules"] if r.get("alert") in wanted_alerts or r.get("record") in wanted_records]
        if rules:
            out.append({**group, "rules": rules})
    return out


# ------------------------------------------------------------------ replaying a case


def _load_case(file_name: str, case_name: str) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    doc = yaml.safe_load((RULE_TESTS / file_name).read_text(encoding="utf-8"))
    for case in doc["tests"]:
        if case.get("name") == case_name:
            return doc, case
    raise LookupError(f"{file_name}: no case named {case_name!r}")


def _labels_key(labels: Dict[str, Any]) -> Tuple[Tuple[str, str], ...]:
    return tuple(sorted((str(k), str(v)) for k, v in labels.items()))


def _case_end(case: Dict[str, Any]) -> float:
    times = [parse_duration(c["eval_time"]) for c in (case.get("alert_rule_test") or [])]
    times += [parse_duration(c["eval_time"]) for c in (case.get("promql_expr_test") or [])]
    return max(times)


@pytest.mark.parametrize("file_name,case_name", CASES, ids=[c[1] for c in CASES])
def test_promtool_case_on_victoriametrics(victoriametrics_factory, tmp_path, file_name, case_name):  # noqa: F811
    doc, case = _load_case(file_name, case_name)
    interval = parse_duration(case.get("interval", doc.get("evaluation_interval", "1m")))
    store = victoriametrics_factory()

    # A whole number of days back, so the case's interval divides the offsets.
    base = (int(time.time()) // 86400 - 3) * 86400
    end = base + _case_end(case)

    imported = []
    for item in case["input_series"]:
        samples = [(i, v) for i, v in enumerate(expand_values(item["values"])) if v is not None]
        samples = [(i, v) for i, v in samples if i * interval <= end - base]
        if samples:
            imported.append({
                "metric": parse_series(item["series"]),
                "values": [v for _, v in samples],
                "timestamps": [int((base + i * interval) * 1000) for i, _ in samples],
            })
    store.import_series(imported)

    # Group after group, each flushed before the next reads it (as Prometheus' later groups
    # see what earlier ones recorded; promtool's minute of slack covers the order).
    for index, group in enumerate(needed_groups(case)):
        rule_file = tmp_path / f"group-{index}.yml"
        group = copy.deepcopy(group)
        for rule in group["rules"]:
            # vmalert -replay refuses the `query` template function (the summaries name what the
            # drive holds from ssd_drive_holds_info, issue 15); replay compares ALERTS labels only.
            rule.pop("annotations", None)
        rule_file.write_text(yaml.safe_dump({"groups": [group]}, sort_keys=False), encoding="utf-8")
        chained = any(
            metric_names(rule["expr"]) & {r.get("record") for r in group["rules"][:i]}
            for i, rule in enumerate(group["rules"])
        )
        # Every group at the case's interval, as promtool evaluates them (whatever a group's own
        # interval): an hourly or 4-minute group replayed at its own step would have no
        # evaluation at most of the case's eval_times.
        store.replay_rules(rule_file, base, end, step=f"{int(interval)}s", rules_delay="2s" if chained else "100ms")

    problems: List[str] = []

    firing: Dict[str, Dict[int, Set[Tuple[Tuple[str, str], ...]]]] = {}
    for series in store.export('{__name__="ALERTS", alertstate="firing"}', base, end + 60):
        labels = {k: v for k, v in series["metric"].items() if k not in ("__name__", "alertstate")}
        alertname = labels.get("alertname", "")
        for ts in series["timestamps"]:
            firing.setdefault(alertname, {}).setdefault(int(ts // 1000), set()).add(_labels_key(labels))

    for check in case.get("alert_rule_test") or []:
        t = base + parse_duration(check["eval_time"])
        name = check["alertname"]
        expected = {
            _labels_key({**{k: str(v) for k, v in (a.get("exp_labels") or {}).items()}, "alertname": name})
            for a in check.get("exp_alerts") or []
        }
        got = firing.get(name, {}).get(int(t), set())
        if got != expected:
            problems.append(f"{name} at {check['eval_time']}: expected {sorted(expected)}, vmalert fired {sorted(got)}")

    for check in case.get("promql_expr_test") or []:
        t = base + parse_duration(check["eval_time"])
        answer = store.query(check["expr"], time=t)
        assert answer.get("status") == "success", answer
        got_samples = {
            _labels_key(r["metric"]): float(r["value"][1]) for r in answer["data"]["result"]
        }
        expected_samples = {
            _labels_key(parse_series(s["labels"])): float(s["value"]) for s in check.get("exp_samples") or []
        }
        if set(got_samples) != set(expected_samples) or any(
            not math.isclose(got_samples[k], v, rel_tol=1e-9, abs_tol=1e-12) for k, v in expected_samples.items()
        ):
            problems.append(f"{check['expr']} at {check['eval_time']}: expected {expected_samples}, got {got_samples}")

    assert not problems, f"{file_name} / {case_name} differs on VictoriaMetrics:\n" + "\n".join(problems)
