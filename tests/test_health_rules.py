"""agent/health.py against the shipped alert rules, and the page and ``ssdfleet status`` at the
rules' boundaries.

Each alert's expression is read from the rule files (Prometheus and, when present, the
VictoriaMetrics copy) and its comparisons found by the series they compare, so the test does
not care how the rest of an expression is written (raw series or recorded ones). For each
threshold: the literal must equal the constant in agent/health.py, and the health rule must
agree with the alert's comparison just below, at and just above it (``<`` against ``<=`` is a
difference too). And each alert's severity label (``page``, ``ticket``) against the severity of
the flag the page shows for the same condition (critical, warning).

Where the rules and agent/health.py part today the case is an xfail(strict=True) with the
reason: it fails as soon as one side is changed, so the mark is removed with the difference.
"""

from __future__ import annotations

import dataclasses
import operator
import re
from typing import Callable, Dict, List, NamedTuple, Optional, Tuple

import pytest
import yaml

from agent import health
from agent.health import CRITICAL, OK, WARNING
from agent.page import render_page
from agent.status import format_table, paint
from agent.views import snapshot_views
from collectors.model import CACHE_DISABLED, CACHE_ENABLED, Drive, Projection, Snapshot, Temperature, WriteCacheState
from tests.conftest import ROOT
from tests.support.e2e import SDA_SERIAL
from tests.support.page import Node, cell, drive_rows, parse
from tests.support.snapshots import polled_snapshot

RULE_FILES = [p for p in (ROOT / "deploy/prometheus/ssdfleet-alerts.yml",
                          ROOT / "deploy/victoriametrics/ssdfleet-alerts.yml") if p.exists()]
RULE_IDS = [p.parent.name for p in RULE_FILES]

OPS: Dict[str, Callable[[float, float], bool]] = {
    "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
    "==": operator.eq, "!=": operator.ne,
}
_OP = r"(?P<op><=|>=|==|!=|<|>)"
_NUMBER = r"\d+(?:\.\d+)?(?:[eE][+-]?\d+)?"
# A selector: a series name (raw or recorded) with optional label matchers.
_SELECTOR = r"[A-Za-z_:][\w:]*(?:\{[^}]*\})?"
# PromQL words that look like series names but are not.
_KEYWORDS = {"and", "or", "unless", "on", "ignoring", "by", "without", "bool", "group_left",
             "group_right", "offset"}


class Comparison(NamedTuple):
    left: str  # the nearest series selector left of the operator
    op: str
    right: str  # a selector, or the literal's text
    value: Optional[float]  # the literal's value (products like 30 * 86400 evaluated)


def _last_selector(text: str) -> str:
    """The last series selector in ``text`` that is not a function name or a keyword."""
    found = ""
    for m in re.finditer(_SELECTOR, text):
        after = text[m.end():m.end() + 1]
        name = m.group(0).split("{")[0]
        if after == "(" or name in _KEYWORDS or name[0].isdigit():
            continue
        found = m.group(0)
    return found


def _product(text: str) -> float:
    value = 1.0
    for factor in re.split(r"\s*\*\s*", text.strip()):
        value *= float(factor)
    return value


def comparisons(expr: str) -> List[Comparison]:
    """Every comparison in a PromQL expression, with a number or with a series on its right."""
    out = []
    pattern = re.compile(
        _OP + r"\s*(?:bool\s+)?(?:(?:on|ignoring)\s*\([^)]*\)\s*)?"
        rf"(?:(?P<number>{_NUMBER}(?:\s*\*\s*{_NUMBER})*)(?![\w.:])|(?P<series>{_SELECTOR}))")
    for m in pattern.finditer(expr):
        # "=~" and "!~" inside label matchers are not comparisons; "=" alone is not matched.
        if expr[max(0, m.start() - 1)] in "=!<>~":
            continue
        left = _last_selector(expr[:m.start()])
        if m.group("number") is not None:
            out.append(Comparison(left, m.group("op"), m.group("number"), _product(m.group("number"))))
        elif m.group("series").split("{")[0] not in _KEYWORDS:
            out.append(Comparison(left, m.group("op"), m.group("series"), None))
    return out


def load_alerts(path) -> Dict[str, dict]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    return {rule["alert"]: rule for group in data["groups"] for rule in group["rules"] if "alert" in rule}


def the_comparison(alerts: Dict[str, dict], alert: str, left: str, right: Optional[str] = None) -> Comparison:
    """The one comparison of ``alert`` whose left side matches the regex ``left`` (and whose
    right side matches ``right``, or is a number when ``right`` is None)."""
    assert alert in alerts, f"alert {alert} is gone from the rules: agent/health.py's rule for it has no alert"
    expr = alerts[alert]["expr"]
    found = [c for c in comparisons(expr)
             if re.search(left, c.left) and (c.value is not None if right is None else re.search(right, c.right))]
    assert len(found) == 1, f"{alert}: expected one comparison of {left!r} in {expr!r}, found {found}"
    return found[0]


# alert, left-side series, health's constant for the literal, the health rule as a predicate
# on the compared value (True: the alert's condition holds).
THRESHOLDS: List[Tuple[str, str, float, Callable[[float], bool]]] = [
    ("SSDLifeLeftLow", r"life_left", health.LIFE_WARNING_RATIO,
     lambda x: health.life_severity(x) in (WARNING, CRITICAL)),
    ("SSDLifeLeftCritical", r"life_left", health.LIFE_CRITICAL_RATIO,
     lambda x: health.life_severity(x) == CRITICAL),
    # the left side is "wear-out time - time()", the seconds still to go
    ("SSDWearOutWithin30Days", r"wearout", health.WEAROUT_WARNING_DAYS * health.DAY_SECONDS,
     lambda x: health.wearout_severity(1e9 + x, 1e9) in (WARNING, CRITICAL)),
    ("SSDWearOutWithin7Days", r"wearout", health.WEAROUT_CRITICAL_DAYS * health.DAY_SECONDS,
     lambda x: health.wearout_severity(1e9 + x, 1e9) == CRITICAL),
    ("SSDFleetDataStale", r"data_age", health.STALE_WARNING_SECONDS,
     lambda x: health.data_stale(x, None)),
    ("SSDTemperatureHigh", r'temperature_celsius\{sensor=~"', health.SENSOR_CEILING_CELSIUS,
     lambda x: health.above_ceiling("drive", x, None)),
    ("SSDTemperatureHigh", r'temperature_celsius\{sensor!~"', health.OTHER_SENSOR_CEILING_CELSIUS,
     lambda x: health.above_ceiling("controller", x, None)),
]


def _around(value: float) -> List[float]:
    step = max(abs(value) * 1e-3, 1e-6)
    return [value - step, value, value + step]


@pytest.mark.parametrize("path", RULE_FILES, ids=RULE_IDS)
@pytest.mark.parametrize("alert,left,constant,rule", THRESHOLDS,
                         ids=[f"{a}:{left}" for a, left, _c, _r in THRESHOLDS])
def test_alert_threshold_is_the_health_constant(path, alert, left, constant, rule):
    c = the_comparison(load_alerts(path), alert, left)
    assert c.value == pytest.approx(constant, rel=1e-12), \
        f"{alert} compares with {c.right} ({c.value}), agent/health.py says {constant}"
    for x in _around(constant):
        assert rule(x) == OPS[c.op](x, c.value), \
            f"{alert} ({c.left} {c.op} {c.right}) and agent/health.py disagree at {x}"


@pytest.mark.parametrize("path", RULE_FILES, ids=RULE_IDS)
def test_the_ceiling_sensors_are_the_same(path):
    expr = load_alerts(path)["SSDTemperatureHigh"]["expr"]
    matchers = set(re.findall(r'sensor[=!]~"([^"]*)"', expr))
    assert matchers == {"|".join(health.CEILING_SENSORS)}, matchers
    # the ceiling applies only where no limit is known ("unless ... limit")
    assert re.search(r"unless\s+\S*temperature_limit", expr)
    assert not health.above_ceiling("drive", 99.0, 100.0)


# alert, left series, right series, the health rule on (left, right)
SERIES_RULES: List[Tuple[str, str, str, Callable[[float, float], bool]]] = [
    ("SSDSpareBelowThreshold", r"spare_left", r"spare_threshold", health.spare_exhausted),
    ("SSDTemperatureAboveLimit", r"temperature_celsius", r"temperature_limit", health.above_limit),
]


@pytest.mark.parametrize("path", RULE_FILES, ids=RULE_IDS)
@pytest.mark.parametrize("alert,left,right,rule", [
    pytest.param(*row) for row in SERIES_RULES], ids=[row[0] for row in SERIES_RULES])
def test_series_against_series_alerts_compare_as_health_does(path, alert, left, right, rule):
    c = the_comparison(load_alerts(path), alert, left, right)
    for x in _around(0.5):
        assert rule(x, 0.5) == OPS[c.op](x, 0.5), f"{alert} ({c.left} {c.op} {c.right}) and agent/health.py disagree"


@pytest.mark.parametrize("path", RULE_FILES, ids=RULE_IDS)
def test_nvme_critical_warning_bits_are_the_same(path):
    expr = load_alerts(path)["SSDNVMeCriticalWarning"]["expr"]
    bits = {}
    for m in re.finditer(r'label_replace\(\s*(?:floor\(\s*)?\(?\s*\S*?nvme_critical_warning(?:\s*>\s*0\s*\))?(?:\s*/\s*(\d+)\s*\))?\s*%\s*2\s*>=\s*1\s*,'
                         r'\s*"bit"\s*,\s*"(\w+)"', expr):
        divisor = int(m.group(1) or 1)
        assert divisor & (divisor - 1) == 0, f"{divisor} is not a power of two"
        bits[divisor.bit_length() - 1] = m.group(2)
    assert bits == dict(health.NVME_WARNING_BITS)
    for bit, name in health.NVME_WARNING_BITS:
        assert health.critical_warning_bits(1 << bit) == [name]


@pytest.mark.parametrize("path", RULE_FILES, ids=RULE_IDS)
def test_the_verdict_and_exception_alerts_are_still_there(path):
    """The alerts whose condition is a 0/1 series the agent computes with agent/health.py, and
    the exceptions the rules and health share."""
    alerts = load_alerts(path)
    expected = {
        "SSDReadOnly": r"ssd_readonly\s*==\s*1",
        "SSDWriteReduced": r"ssd_write_reduced\s*==\s*1",
        "SSDSmartHealthFailed": r"ssd_smart_healthy\s*==\s*0",
        "SSDWriteCacheDisabled": r"ssd_write_cache_mismatch\s*==\s*1",
        "SSDWriteCacheUnexpectedlyEnabled": r"ssd_write_cache_mismatch\s*==\s*1",
        # health.flush_unprotected: a drive with power-loss protection may run without flushes
        "SSDWriteCacheFlushIgnored": r"flush_ignored\s*==\s*1\s+unless\b.*power_loss_protection\s*==\s*1",
        # health.data_stale: a drive in standby is not woken, its data age harmlessly
        "SSDFleetDataStale": r"unless\b.*standby\s*==\s*1",
    }
    for alert, pattern in expected.items():
        assert alert in alerts, f"alert {alert} is gone from {path}"
        assert re.search(pattern, alerts[alert]["expr"], re.S), f"{alert}: {alerts[alert]['expr']!r}"
    assert health.flush_unprotected(True, None) and health.flush_unprotected(True, False)
    assert not health.flush_unprotected(True, True) and not health.flush_unprotected(None, None)
    assert not health.data_stale(1e6, "standby")


def test_comparisons_parser_on_shapes_the_rules_use():
    got = comparisons('ssd_data_age_seconds > 1200 unless on(instance, device, serial) ssd_standby == 1')
    assert got == [Comparison("ssd_data_age_seconds", ">", "1200", 1200.0),
                   Comparison("ssd_standby", "==", "1", 1.0)]
    got = comparisons("ssd_projected_wearout_timestamp_seconds - time() < 30 * 86400")
    assert got == [Comparison("ssd_projected_wearout_timestamp_seconds", "<", "30 * 86400", 2592000.0)]
    got = comparisons('ssd:life_left_ratio:min{job=~"a|b"} <= bool 0.1')
    assert got == [Comparison('ssd:life_left_ratio:min{job=~"a|b"}', "<=", "0.1", 0.1)]
    got = comparisons("ssd_spare_left_ratio <= on(serial) ssd_spare_threshold_ratio")
    assert got == [Comparison("ssd_spare_left_ratio", "<=", "ssd_spare_threshold_ratio", None)]
    assert comparisons('ssd_defects{type!~"x|y"} - ssd:defects:min1d{type=~"a"}') == []
    with pytest.raises(AssertionError, match="gone"):
        the_comparison({}, "SSDLifeLeftLow", "life_left")


# -- the page and `ssdfleet status` at the boundaries -------------------------------------------

@pytest.fixture(scope="module")
def polled(tmp_path_factory):
    """A real poll of the default fake host; sda is the healthy SATA drive the cases edit."""
    snap, clock = polled_snapshot(tmp_path_factory.mktemp("host"))
    return snap, clock.now


def _with_sda(snap: Snapshot, change: Callable[[Drive], Drive]) -> Snapshot:
    return dataclasses.replace(snap, drives=tuple(change(d) if d.serial == SDA_SERIAL else d for d in snap.drives))


def _life(ratio: float) -> Callable[[Drive], Drive]:
    return lambda d: dataclasses.replace(d, reading=dataclasses.replace(d.reading, life_left_ratio=ratio))


def _shown(snap: Snapshot, now: float) -> Tuple[Dict[str, str], Node, str]:
    """sda's flags by key (their severity), its row on the page, and its status table line."""
    (view,) = [v for v in snapshot_views(snap, now) if v.serial == SDA_SERIAL]
    flags = {f.key: f.severity for f in view.flags}
    (row,) = [r for r in drive_rows(parse(render_page(snap, now, hostname="h"))) if r.attrs["data-serial"] == SDA_SERIAL]
    (line,) = [ln for ln in format_table([dataclasses.asdict(view)], color=True).splitlines() if SDA_SERIAL in ln]
    return flags, row, line


def _painted(line: str, text: str, style: str) -> bool:
    """Whether ``text`` is in ``line`` in the colour of ``style`` (the table pads inside it)."""
    before, after = paint("\0", style, True).split("\0")
    return re.search(re.escape(before + text) + r"\s*" + re.escape(after), line) is not None


@pytest.mark.parametrize("ratio,severity,text", [
    (0.099, WARNING, "9.9%"),
    (0.100, OK, "10%"),
    (0.029, CRITICAL, "2.9%"),
    (0.030, WARNING, "3%"),
])
def test_life_left_at_the_boundary(polled, ratio, severity, text):
    snap, now = polled
    flags, row, line = _shown(_with_sda(snap, _life(ratio)), now)
    assert flags.get("life_left", OK) == severity
    assert health.life_severity(ratio) == severity
    # the page's life bar takes the rule's colour; the terminal paints the figure the same
    (bar,) = cell(row, "c-life").find_all(lambda n: n.tag == "svg" and n.has_class("bar"))
    assert bar.has_class(f"sev-{severity}"), bar.attrs
    assert text in line
    for style in (WARNING, CRITICAL):
        assert _painted(line, text, style) is (style == severity), repr(line)


@pytest.mark.parametrize("ratio,words", [
    (0.025, "life left 2.5%"),   # not "2%": a half step rounded to even read as a step worse
    (0.095, "life left 9.5%"),   # not "10%": the flag would name the threshold it is under
    (0.125, "life left 12.5%, below 20%"),  # a reason to watch, in the same words
])
def test_life_left_in_words_keeps_its_fraction(polled, ratio, words):
    snap, now = polled
    (view,) = [v for v in snapshot_views(_with_sda(snap, _life(ratio)), now) if v.serial == SDA_SERIAL]
    said = [f.reason for f in view.flags] + list(view.watch)
    assert any(words in text for text in said), said


@pytest.mark.parametrize("days,severity", [
    (6.99, CRITICAL), (7.0, WARNING), (29.99, WARNING), (30.0, OK),
])
def test_wearout_at_the_boundary(polled, days, severity):
    snap, now = polled
    projection = Projection(method="observed", wearout_timestamp=now + days * health.DAY_SECONDS)
    flags, _row, _line = _shown(_with_sda(snap, lambda d: dataclasses.replace(d, projections=(projection,))), now)
    assert flags.get("wearout", OK) == severity


@pytest.mark.parametrize("sensor,celsius,limit,hot", [
    ("drive", 70.0, None, False), ("drive", 71.0, None, True),
    ("controller", 90.0, None, False), ("controller", 91.0, None, True),
    ("drive", 64.5, 65.0, False), ("drive", 65.0, 65.0, True),
])
def test_temperature_at_the_boundary(polled, sensor, celsius, limit, hot):
    snap, now = polled
    temps = (Temperature(sensor=sensor, celsius=celsius, limit_celsius=limit),)
    flags, row, line = _shown(_with_sda(snap, lambda d: dataclasses.replace(
        d, reading=dataclasses.replace(d.reading, temperatures=temps))), now)
    severity = health.ABOVE_CEILING_SEVERITY if limit is None else health.ABOVE_LIMIT_SEVERITY
    assert (flags.get(f"temperature:{sensor}") == severity) is hot
    assert bool(cell(row, "c-temp").find_all(lambda n: n.tag == "li" and n.has_class("hot"))) is hot
    shown = f"{celsius:.0f} C" + ("" if limit is None else f" (limit {limit:.0f})")
    assert shown in line and _painted(line, shown, severity) is hot, repr(line)


def test_stale_at_the_boundary(polled):
    snap, now = polled
    (view,) = [v for v in snapshot_views(snap, now) if v.serial == SDA_SERIAL]
    polled_at = now - view.data_age_seconds
    at = {age: {f.key for v in snapshot_views(snap, polled_at + age) if v.serial == SDA_SERIAL for f in v.flags}
          for age in (health.STALE_WARNING_SECONDS, health.STALE_WARNING_SECONDS + 1)}
    assert "stale" not in at[health.STALE_WARNING_SECONDS]
    assert "stale" in at[health.STALE_WARNING_SECONDS + 1]


def test_the_page_footer_states_the_thresholds(polled):
    snap, now = polled
    page = render_page(snap, now, hostname="h")
    footer = page[page.index("<footer>"):]
    assert "life left below 10% warning" in footer and "below 3% critical" in footer
    assert "wear-out within 30 days warning" in footer and "7 days critical" in footer



# -- how bad: an alert's severity label against the flag's severity ------------------------------

def _reading(**changes) -> Callable[[Drive], Drive]:
    return lambda d: dataclasses.replace(d, reading=dataclasses.replace(d.reading, **changes))


def _cache(state: str, expected: str) -> Callable[[Drive], Drive]:
    return lambda d: dataclasses.replace(d, write_cache=(WriteCacheState(state, "hdparm"),), write_cache_expected=expected)


# alert -> (a change to sda that makes the alert's condition true, the flag key it raises, seconds
# after the poll to look). Alertmanager's `page` is the page's critical, `ticket` its warning.
SEVERITY_CASES: Dict[str, Tuple[Callable[[Drive], Drive], str, float]] = {
    "SSDLifeLeftLow": (_life(0.05), "life_left", 0),
    "SSDLifeLeftCritical": (_life(0.02), "life_left", 0),
    "SSDWearOutWithin30Days": (lambda d: dataclasses.replace(d, projections=(
        Projection(method="observed", wearout_timestamp=d.last_poll["smartctl"] + 20 * health.DAY_SECONDS),)), "wearout", 0),
    "SSDWearOutWithin7Days": (lambda d: dataclasses.replace(d, projections=(
        Projection(method="observed", wearout_timestamp=d.last_poll["smartctl"] + 3 * health.DAY_SECONDS),)), "wearout", 0),
    "SSDSpareBelowThreshold": (_reading(spare_left_ratio=0.05, spare_threshold_ratio=0.10), "spare", 0),
    "SSDReadOnly": (_reading(readonly=True), "readonly", 0),
    "SSDWriteReduced": (_reading(access_mode="reduced_write"), "reduced_write", 0),
    "SSDSmartHealthFailed": (_reading(smart_healthy=False), "smart_health", 0),
    "SSDNVMeCriticalWarning": (_reading(critical_warning=4), "nvme_critical_warning", 0),
    "SSDWriteCacheDisabled": (_cache(CACHE_DISABLED, CACHE_ENABLED), "write_cache", 0),
    "SSDWriteCacheUnexpectedlyEnabled": (_cache(CACHE_ENABLED, CACHE_DISABLED), "write_cache", 0),
    "SSDTemperatureAboveLimit": (_reading(temperatures=(Temperature("drive", 80.0, limit_celsius=70.0),)),
                                 "temperature:drive", 0),
    "SSDTemperatureHigh": (_reading(temperatures=(Temperature("drive", 75.0),)), "temperature:drive", 0),
    "SSDFleetDataStale": (lambda d: d, "stale", health.STALE_WARNING_SECONDS + 60),
}
ALERT_SEVERITY = {"page": CRITICAL, "ticket": WARNING}
# Where the rules and the page part today; deploy/ and a decision own them (see the reasons).
SEVERITY_DIFFERS: Dict[str, str] = {}


@pytest.mark.parametrize("alert", [
    pytest.param(a, marks=pytest.mark.xfail(strict=True, reason=SEVERITY_DIFFERS[a]) if a in SEVERITY_DIFFERS else ())
    for a in SEVERITY_CASES])
def test_the_flag_is_as_bad_as_the_alert(polled, alert):
    snap, _now = polled
    change, key, later = SEVERITY_CASES[alert]
    changed = _with_sda(snap, change)
    (sda,) = [d for d in changed.drives if d.serial == SDA_SERIAL]
    (view,) = [v for v in snapshot_views(changed, sda.last_poll["smartctl"] + later) if v.serial == SDA_SERIAL]
    flags = {f.key: f.severity for f in view.flags}
    assert key in flags, (alert, flags)
    for path in RULE_FILES:
        label = load_alerts(path)[alert]["labels"]["severity"]
        assert ALERT_SEVERITY[label] == flags[key], f"{alert} is a {label} in {path.name}, the page says {flags[key]}"
