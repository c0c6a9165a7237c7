"""The shipped Grafana dashboards read as data: their panels' queries with the variables
substituted, run against a Prometheus.

Moved out of test_dashboards.py, issue 27: test modules import helpers from tests/support/
only).
"""

from __future__ import annotations

import json
import math
import re
import time
from typing import Dict, Iterator, List, Tuple

from tests.conftest import ROOT

JSON_DIR = ROOT / "dashboards" / "json"
DASHBOARD_FILES = ["ssdfleet-fleet.json", "ssdfleet-host.json", "ssdfleet-drive.json"]
RATE_INTERVAL = "1m"  # what $__rate_interval becomes; the agents are scraped every second


def load(name: str) -> dict:
    return json.loads((JSON_DIR / name).read_text(encoding="utf-8"))


def all_panels(dashboard: dict) -> Iterator[dict]:
    for panel in dashboard.get("panels", []):
        yield panel
        yield from panel.get("panels", [])


def query_panels(dashboard: dict) -> Iterator[dict]:
    return (p for p in all_panels(dashboard) if p.get("type") != "row")


LABEL_VALUES = re.compile(r"^label_values\((?:(?P<selector>.*),\s*)?(?P<label>\w+)\)$")


def _substitute(text: str, values: Dict[str, str]) -> str:
    text = text.replace("$__rate_interval", RATE_INTERVAL)
    for name in sorted(values, key=len, reverse=True):
        text = text.replace("${" + name + "}", values[name]).replace("$" + name, values[name])
    return text


def _variable_combinations(prom, dashboard: dict) -> List[Dict[str, str]]:
    """Every combination of variable values, each query variable resolved with the values
    chosen before it, as Grafana does. Multi-value "All" becomes the regex alternation of all
    values (Grafana's formatting for Prometheus when allValue is not set), or the allValue."""
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
            if variable.get("includeAll") and variable.get("allValue"):
                # "All" is the variable's own value (the site's ".*"), with or without values
                expanded.append(dict(combo, **{variable["name"]: variable["allValue"]}))
                continue
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
