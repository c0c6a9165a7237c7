"""The shipped Prometheus rules read as data: metric names in an expression, durations.

Moved out of test_rules.py (issue 27: test modules import helpers from tests/support/ only).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any, Dict

import pytest
import yaml

from tests.conftest import ROOT

RUNBOOKS = ROOT / "docs" / "runbooks.md"
METRICS_DOC = ROOT / "docs" / "metrics.md"
# Every alert's runbook_url: the section on the agent that raised the alert (its /runbooks), or
# under the ssdfleet_runbook_url external label when one is set (tests/test_ui_runbook_links.py
# follows the links).
RUNBOOK_BASE = ("{{ with $externalLabels.ssdfleet_runbook_url }}{{ . }}{{ else }}"
                "http://{{ $labels.instance }}/runbooks{{ end }}#")

PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(PROMTOOL is None, reason="promtool is not installed (Debian package prometheus)")


_PROMQL_WORDS = {"and", "or", "unless", "by", "without", "on", "ignoring", "group_left",
                 "group_right", "offset", "bool", "inf", "nan"}


def metric_names(expr: str) -> set:
    """Metric names an expression selects: identifiers that are not functions, keywords,
    label names (inside {...} or a by/without/on/ignoring list) or durations."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)  # string literals
    text = re.sub(r"\{[^}]*\}", "", text)  # label matchers
    text = re.sub(r"\[[^\]]*\]", "", text)  # range and subquery durations
    text = re.sub(r"\boffset\s+-?[0-9][0-9a-z]*", "", text)  # offset durations
    text = re.sub(r"\b\d+(?:\.\d*)?(?:[eE][-+]?\d+)?", "", text)  # numbers (1e-9 is not a metric e)
    text = re.sub(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", text)
    names = set()
    for m in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*", text):
        name = m.group(0)
        rest = text[m.end():].lstrip()
        if rest.startswith("("):  # a function call
            continue
        if name.lower() in _PROMQL_WORDS:
            continue
        names.add(name)
    return names


_DURATION_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800, "y": 31536000}


def parse_duration(text) -> float:
    """Seconds in a Prometheus duration ("1h30m", "15m", "0m"); 0 for None."""
    if text in (None, "", 0):
        return 0.0
    parts = re.findall(r"(\d+)(ms|s|m|h|d|w|y)", str(text))
    if not parts or "".join(n + u for n, u in parts) != str(text):
        raise ValueError(f"not a Prometheus duration: {text!r}")
    return float(sum(int(n) * _DURATION_UNITS[u] for n, u in parts))


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a Markdown heading: lower case, punctuation dropped, spaces to '-'."""
    text = heading.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _runbook_anchors() -> set:
    anchors = set()
    for line in RUNBOOKS.read_text().splitlines():
        m = re.match(r"^#{1,6}\s+(.*)$", line)
        if m:
            anchors.add(github_anchor(m.group(1)))
    return anchors


def _documented_metrics() -> set:
    names = set()
    for line in METRICS_DOC.read_text().splitlines():
        m = re.match(r"^\|\s*`([a-z_:][a-z0-9_:]*)`\s*\|", line)
        if m:
            names.add(m.group(1))
    return names


def alerts_in(path: Path) -> Dict[str, Dict[str, Any]]:
    """The alerting rules of one rule file, by alert name."""
    return {r["alert"]: r for g in yaml.safe_load(path.read_text())["groups"] for r in g["rules"] if "alert" in r}


def promtool_check_rules(path: Path) -> None:
    """``promtool check rules`` passes on the file (the caller is marked needs_promtool)."""
    out = subprocess.run([PROMTOOL, "check", "rules", str(path)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
