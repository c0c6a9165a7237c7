"""The agent's ``/`` page: which drive, how bad, since when, for the person paged at night.

Server-rendered HTML from the same :class:`agent.views.DriveView` as ``/api/v1/drives`` and
``ssdfleet status``, so the three never disagree. Everything is inline (CSS, SVG sparklines,
a short refresh script): the page must work on a host with no route to any CDN, and the
table must read without JavaScript. Every value that came from a device or a file goes
through :func:`esc`: :func:`agent.text.printable` (control characters such as the ESC of a
terminal escape sequence written as ``\x1b``, issue 26) and then :func:`html.escape`; model
strings and serials are whatever the firmware says.
"""

from __future__ import annotations

import html
import socket
from typing import Any, Dict, List, Optional, Sequence, Tuple

from agent import __version__, health, host_views
from agent.health import CRITICAL, OK, WARNING
from agent.text import printable
from agent.views import (
    DriveView,
    ViewState,
    describe_input,
    flagged_first,
    human_bytes,
    human_duration,
    percent,
    series_change,
    since_text,
    snapshot_views,
    utc_date,
    utc_time,
    worst,
)
from collectors.model import Snapshot, holds_text

DAY = 86400.0
DEFAULT_REFRESH_SECONDS = 30

SPARK_WIDTH = 96
SPARK_HEIGHT = 22
BAR_WIDTH = 72
BAR_HEIGHT = 10


def esc(value: Any) -> str:
    return html.escape(printable(value), quote=True)


# -- sparklines ----------------------------------------------------------------------

def sparkline(points: Sequence[Tuple[float, Optional[float]]], label: str, css: str,
              y_min: Optional[float] = None, y_max: Optional[float] = None,
              min_span: float = 0.0) -> str:
    """An inline SVG line of ``(ts, value)`` points, x by time. ``None`` values break the
    line (a gap in the history is not a straight trend). ``min_span`` keeps a nearly flat
    series flat: life left moves in whole percent, and stretching 99..100 to the full height
    would draw a cliff out of one step."""
    known = [(t, v) for t, v in points if v is not None]
    if not known:
        return '<span class="muted spark-none">no history yet</span>'
    if len(known) == 1:
        # one dot on its own looks like a speck of dirt, not like "one sample so far"
        return f'<span class="muted spark-none" title="{esc(label)}">one sample so far</span>'
    t0, t1 = points[0][0], points[-1][0]
    lo = min(v for _, v in known) if y_min is None else y_min
    hi = max(v for _, v in known) if y_max is None else y_max
    if hi - lo < min_span:
        mid = (hi + lo) / 2.0
        lo, hi = mid - min_span / 2.0, mid + min_span / 2.0
    pad = 2.0
    w, h = SPARK_WIDTH - 2 * pad, SPARK_HEIGHT - 2 * pad

    def xy(t: float, v: float) -> str:
        x = pad + (w * (t - t0) / (t1 - t0) if t1 > t0 else w)
        y = pad + (h * (hi - v) / (hi - lo) if hi > lo else h / 2.0)
        return f"{x:.1f},{y:.1f}"

    segments: List[List[str]] = [[]]
    for t, v in points:
        if v is None:
            if segments[-1]:
                segments.append([])
        else:
            segments[-1].append(xy(t, v))
    shapes = []
    for seg in segments:
        if len(seg) == 1:
            x, y = seg[0].split(",")
            shapes.append(f'<circle cx="{x}" cy="{y}" r="1.8"/>')
        elif seg:
            shapes.append(f'<polyline points="{" ".join(seg)}"/>')
    return (f'<svg class="spark {css}" width="{SPARK_WIDTH}" height="{SPARK_HEIGHT}" '
            f'viewBox="0 0 {SPARK_WIDTH} {SPARK_HEIGHT}" role="img" aria-label="{esc(label)}">'
            f'<title>{esc(label)}</title>{"".join(shapes)}</svg>')


def _span_words(points: Sequence[Dict[str, Any]]) -> str:
    if len(points) < 2:
        return "one sample"
    return f"{utc_date(points[0]['ts'])} to {utc_date(points[-1]['ts'])}"


def life_sparkline(v: DriveView) -> str:
    points = v.history or []
    change = series_change(points, "life_left_ratio")
    if change is None:
        label = "life left: not enough history for a trend"
    else:
        label = (f"life left {percent(change['first'])} to {percent(change['last'])}, "
                 f"{_span_words(points)}")
    return sparkline([(p["ts"], p["life_left_ratio"]) for p in points], label, "spark-life",
                     min_span=0.05)


def writes_sparkline(v: DriveView) -> str:
    points = [p for p in (v.history or [])][1:]  # the first point has no interval before it
    rates = [p["write_rate_bytes_per_second"] for p in points if p["write_rate_bytes_per_second"] is not None]
    if rates:
        label = (f"host writes per day between samples: {human_bytes(min(rates) * DAY)} to "
                 f"{human_bytes(max(rates) * DAY)}, {_span_words(points)}")
    else:
        label = "host writes: not enough history"
    return sparkline([(p["ts"], p["write_rate_bytes_per_second"]) for p in points], label,
                     "spark-writes", y_min=0.0)


# -- cells ---------------------------------------------------------------------------

def _sev_class(severity: str) -> str:
    return f"sev-{severity}" if severity in (OK, WARNING, CRITICAL) else "sev-unknown"


def drive_cell(v: DriveView) -> str:
    model = esc(v.model) if v.model else '<span class="muted">model unknown</span>'
    fw = f' <span class="muted">fw {esc(v.firmware)}</span>' if v.firmware else ""
    cap = f' <span class="muted">{esc(human_bytes(v.capacity_bytes))}</span>' if v.capacity_bytes else ""
    return (f'<td class="c-drive"><span class="dev">{esc(v.device)}</span> '
            f'<span class="kind">{esc(v.kind)}</span>'
            f'<div class="model">{model}{cap}</div>'
            f'<div class="serial" title="serial">{esc(v.serial)}{fw}</div>'
            + (f'<div class="holds">holds: {esc(holds_text(v.holds))}</div>' if v.holds else "")  # issue 15
            + '</td>')


def life_cell(v: DriveView) -> str:
    ratio = v.life_left_ratio
    if ratio is None:
        bar = '<span class="muted">not reported</span>'
    else:
        filled = max(0.0, min(1.0, ratio)) * BAR_WIDTH
        bar = (f'<svg class="bar {_sev_class(health.life_severity(ratio) or "unknown")}" width="{BAR_WIDTH}" height="{BAR_HEIGHT}" '
               f'viewBox="0 0 {BAR_WIDTH} {BAR_HEIGHT}" aria-hidden="true">'
               f'<rect class="track" width="{BAR_WIDTH}" height="{BAR_HEIGHT}" rx="2"/>'
               f'<rect class="fill" width="{filled:.1f}" height="{BAR_HEIGHT}" rx="2"/></svg>'
               f' <span class="num">{esc(percent(ratio))}</span>')
    source = f' title="{esc(v.life_left_source)}"' if v.life_left_source else ""
    value = "" if ratio is None else f"{ratio:.4f}"
    return (f'<td class="c-life" data-value="{value}"{source}><div class="life">{bar}</div>'
            f'{life_sparkline(v)}{_evidence_details(v)}</td>')


def _evidence_details(v: DriveView) -> str:
    """Where each figure came from, or why none is given: a DBA sees why the agent says 7%."""
    if not v.evidence:
        return ""
    withheld = sum(1 for row in v.evidence if row.get("state") == "withheld")
    items = "".join(
        f'<li data-field="{esc(row["field"])}" data-state="{esc(row["state"])}">{esc(row["label"])}: '
        + (f'{esc(row["source"])}' if row["state"] == "given" else f'<b>withheld</b>: {esc(row.get("reason", ""))}')
        + (f' <span class="muted">(set aside: {esc(row["set_aside"])})</span>' if row.get("set_aside") else "")
        + "</li>"
        for row in v.evidence
    )
    summary = "sources" + (f", {withheld} withheld" if withheld else "")
    return (f'<details class="evidence" data-key="evidence-{esc(v.serial)}"><summary>{summary}</summary>'
            f'<ul>{items}</ul></details>')


def _projection_details(v: DriveView, now: float) -> str:
    """The arithmetic behind the date: all three methods, in order of preference, each with
    its verdict, its note (why it has no date, or what it counted) and its own inputs under
    the API's names; the method whose date the row shows is marked."""
    blocks = []
    for p in v.projections:
        ts = p.get("wearout_timestamp")
        chosen = p["method"] == v.wearout_method and v.wearout_timestamp is not None
        if ts is None:
            verdict = '<span class="none">no date</span>'
        else:
            verdict = f'<span class="date">{esc(utc_date(ts))}</span>'
        mark = ' <span class="chosen-mark">shown</span>' if chosen else ""
        note = f'<div class="note">{esc(p["note"])}</div>' if p.get("note") else ""
        rows = [f"<tr><th>{esc(name)}</th><td>{esc(describe_input(name, value))}</td></tr>"
                for name, value in (p.get("inputs") or {}).items() if name != "now"]
        if p.get("endurance_remaining_bytes") is not None:
            rows.append(f"<tr><th>endurance_remaining</th>"
                        f"<td>{esc(human_bytes(p['endurance_remaining_bytes']))}</td></tr>")
        table = (f'<table class="inputs">{"".join(rows)}</table>' if rows
                 else '<div class="muted">no inputs</div>')
        cls = "method chosen" if chosen else "method"
        blocks.append(f'<li class="{cls}" data-method="{esc(p["method"])}"><b>{esc(p["method"])}</b>: '
                      f"{verdict}{mark}{note}{table}</li>")
    rated = ""
    if v.rated_endurance_bytes is not None:
        rated = f'<div class="muted">rated endurance {esc(human_bytes(v.rated_endurance_bytes))} of host writes</div>'
    return (f'<details data-key="why-{esc(v.serial)}"><summary>how: {len(v.projections)} methods</summary>'
            f'<ol class="methods">{"".join(blocks)}</ol>{rated}</details>')


def wearout_cell(v: DriveView, now: float) -> str:
    ts = v.wearout_timestamp
    if ts is None:
        first = v.projections[0] if v.projections else None
        why = first.get("note") if first else "no projection"
        head = f'<span class="none">no date</span><div class="muted why">{esc(why)}</div>'
        value = ""
    else:
        days = (ts - now) / DAY
        head = (f'<span class="date">{esc(utc_date(ts))}</span>'
                f'<div class="muted">in {esc(human_duration(ts - now)) if days >= 0 else "the past"}'
                f' · <span class="method">{esc(v.wearout_method)}</span></div>')
        value = f"{ts:.0f}"
    details = _projection_details(v, now) if v.projections else ""
    return f'<td class="c-wearout" data-value="{value}">{head}{details}</td>'


def cache_cell(v: DriveView) -> str:
    state = v.write_cache or "unknown"
    expected = v.write_cache_expected
    mismatch = any(f.key == "write_cache" for f in v.flags)
    sources = "; ".join(f"{s['source']}: {s['state']}" for s in v.write_cache_sources)
    title = f' title="{esc(sources)}"' if sources else ""
    cls = "c-cache bad" if mismatch else "c-cache"
    if not expected:
        want = '<div class="muted">no expectation</div>'
    elif mismatch:
        want = f'<div class="muted">expected {esc(expected)}</div>'
    else:
        want = f'<div class="muted" title="expected: {esc(expected)}">as expected</div>'

    return f'<td class="{cls}" data-value="{esc(state)}"{title}><span class="state">{esc(state)}</span>{want}</td>'


def temp_cell(v: DriveView) -> str:
    if not v.temperatures:
        return '<td class="c-temp"><span class="muted">-</span></td>'
    lines = []
    for t in v.temperatures:
        limit = t.get("limit_celsius")
        hot = health.temperature_hot(t["sensor"], t["celsius"], limit)
        # the limit is what the reading is judged by, so it stays in view; the lifetime
        # maximum is history, so it goes in the tooltip
        tail = f' <span class="muted small">limit {limit:.0f}</span>' if limit is not None else ""
        title = f' title="max seen {t["max_celsius"]:.0f} °C"' if t.get("max_celsius") is not None else ""
        cls = ' class="hot"' if hot else ""
        lines.append(f'<li{cls}{title}><span class="sensor">{esc(t["sensor"])}</span> '
                     f'<b>{t["celsius"]:.0f}&nbsp;°C</b>{tail}</li>')
    return f'<td class="c-temp"><ul>{"".join(lines)}</ul></td>'


def bad_blocks_cell(v: DriveView) -> str:
    parts = []
    if v.bad_block_ratio is not None:
        parts.append(f'<span class="num">{esc(percent(v.bad_block_ratio, 3))}</span> of blocks')
    defects = {k: n for k, n in sorted(v.defects.items()) if n}
    if defects:
        parts.append('<span class="warn">' + ", ".join(f"{esc(k.replace('_', ' '))} {n}" for k, n in defects.items())
                     + "</span>")
    elif v.defects:
        counted = ", ".join(k.replace("_", " ") for k in sorted(v.defects))
        parts.append(f'<span class="muted" title="{esc(counted)}">no defects</span>')
    if v.media_errors is not None:
        cls = ' class="warn"' if v.media_errors else ' class="muted"'
        noun = "media error" if v.media_errors == 1 else "media errors"
        parts.append(f"<span{cls}>{v.media_errors} {noun}</span>")
    if not parts:
        parts.append('<span class="muted">not reported</span>')
    change = series_change(v.history or [], "bad_block_ratio")
    if change is not None:
        span = esc(human_duration(change["last_ts"] - change["first_ts"]))  # "0 days" said nothing
        if change["change"] > 0:
            trend = f'<div class="trend up">↑ {esc(percent(change["change"], 4))} in {span}</div>'
        elif change["change"] < 0:
            trend = f'<div class="trend">↓ {esc(percent(-change["change"], 4))} in {span}</div>'
        else:
            trend = f'<div class="trend muted">steady for {span}</div>'
    else:
        trend = ""
    value = "" if v.bad_block_ratio is None else f"{v.bad_block_ratio:.6f}"
    return f'<td class="c-bad" data-value="{value}">{"<br>".join(parts)}{trend}</td>'


def writes_cell(v: DriveView) -> str:
    rate = v.write_rate_bytes_per_second
    if rate is None:
        head = '<div class="muted" title="the rate needs an hour of history">no rate yet</div>'
        value = ""
    else:
        head = f'<div class="rate"><span class="num">{esc(human_bytes(rate * DAY))}</span>/day</div>'
        value = f"{rate * DAY:.0f}"
    total = (f'<div class="total"><span class="num">{esc(human_bytes(v.host_written_bytes))}</span> written</div>'
             if v.host_written_bytes is not None else '<div class="muted">total not reported</div>')
    # until there are two rates there is no line to draw, and "no rate yet" has said so
    rates = [p for p in (v.history or []) if p.get("write_rate_bytes_per_second") is not None]
    spark = writes_sparkline(v) if len(rates) >= 2 else ""
    return f'<td class="c-writes" data-value="{value}">{total}{head}{spark}</td>'


def age_line(v: DriveView) -> str:
    """How old the health data is, under the status badge: how far the status can be trusted."""
    age = v.data_age_seconds
    if age is None:
        return '<div class="age" data-value=""><span class="muted">no health data</span></div>'
    stale = health.data_stale(age, v.power_state)
    polls = "; ".join(f"{k} {utc_time(t)}" for k, t in sorted(v.last_poll.items()))
    cls = "age stale" if stale else "age"
    return (f'<div class="{cls}" data-value="{age:.0f}" title="last polls: {esc(polls)}">'
            f'data {esc(human_duration(age))} old</div>')


def flags_cell(v: DriveView, now: float) -> str:
    if not v.flags:
        note = "no health data: no tool could read this drive" if v.data_age_seconds is None else "nothing flagged"
        return f'<td class="c-flags"><span class="muted">{esc(note)}</span></td>'
    items = "".join(
        f'<li class="{_sev_class(f.severity)}" data-key="{esc(f.key)}">{esc(f.reason)}'
        + (f' <span class="since" data-since="{f.since:.0f}">{esc(since_text(f.since, now))}</span>'
           if f.since is not None else "")
        + "</li>"
        for f in v.flags
    )
    return f'<td class="c-flags"><ul>{items}</ul></td>'


def drive_row(v: DriveView, now: float) -> str:
    sev = v.severity
    return (f'<tr class="drive {_sev_class(sev)}" data-serial="{esc(v.serial)}" data-device="{esc(v.device)}" '
            f'data-severity="{esc(sev)}">'
            f'<td class="c-sev"><span class="badge {_sev_class(sev)}">{esc(sev.upper())}</span>{age_line(v)}</td>'
            f"{drive_cell(v)}{flags_cell(v, now)}{life_cell(v)}{wearout_cell(v, now)}{cache_cell(v)}"
            f"{temp_cell(v)}{bad_blocks_cell(v)}{writes_cell(v)}</tr>")


HEADERS = ("Status", "Drive", "Why flagged", "Life left", "Wear-out", "Write cache", "Temperature",
           "Bad blocks", "Host writes")


def _problems(snapshot: Snapshot) -> str:
    items = [f"collector {esc(c.name)} failing: {esc(c.error or 'see the agent log')}"
             for c in snapshot.collectors if not c.success]
    items += [esc(p) for p in snapshot.problems]
    items += [f"probe stuck on {esc(d)}: device quarantined" for d in snapshot.stuck]
    if not items:
        return ""
    return ('<section class="problems"><h2>Agent problems</h2><ul>'
            + "".join(f"<li>{i}</li>" for i in items) + "</ul></section>")


def _summary(views: List[DriveView]) -> str:
    counts = {s: sum(1 for v in views if v.severity == s) for s in (CRITICAL, WARNING, OK)}
    if not views:
        return '<span class="badge sev-unknown">UNKNOWN</span> no drives found'
    overall = worst(views)
    parts = [f"{counts[s]} {s}" for s in (CRITICAL, WARNING, OK) if counts[s]]
    names = ", ".join(v.device for v in views if v.severity == overall and overall != OK)
    which = f" — {esc(names)}" if names else ""
    return (f'<span class="badge {_sev_class(overall)}">{esc(overall.upper())}</span> '
            f'{len(views)} drives: {esc(", ".join(parts))}{which}')


_CSS = """
:root { --fg:#1d2125; --muted:#69717a; --bg:#fbfbfc; --card:#fff; --line:#dde1e5;
  --ok:#1f7a3a; --ok-bg:#e5f3e9; --warn:#8a5300; --warn-bg:#fff1d1; --crit:#a8071a; --crit-bg:#fde4e6;
  --unk:#4b5563; --unk-bg:#eceef1; --track:#e6e8eb; --spark:#3b6ea8; }
@media (prefers-color-scheme: dark) {
  :root { --fg:#e4e6e9; --muted:#9aa2ab; --bg:#15181b; --card:#1d2125; --line:#343a40;
    --ok:#6fcf8a; --ok-bg:#1d3325; --warn:#f0b54a; --warn-bg:#3a2d12; --crit:#ff7a85; --crit-bg:#451a1f;
    --unk:#b6bcc4; --unk-bg:#2b3036; --track:#343a40; --spark:#7fb0e6; } }
* { box-sizing: border-box; }
body { margin:0; font:14px/1.35 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color:var(--fg); background:var(--bg); }
header.top { display:flex; flex-wrap:wrap; gap:.4rem 1.2rem; align-items:baseline; padding:.7rem 1rem; border-bottom:1px solid var(--line); background:var(--card); }
header.top h1 { font-size:1.15rem; margin:0; }
#live { color:var(--muted); font-size:.85rem; }
#live.stale { color:var(--crit); font-weight:600; }
main { padding:.8rem 1rem 1rem; }
.summary { font-size:1.05rem; margin:0 0 .3rem; }
.meta { color:var(--muted); font-size:.85rem; margin:0 0 .8rem; }
.problems { border:1px solid var(--warn); background:var(--warn-bg); border-radius:6px; padding:.4rem .8rem; margin:0 0 .8rem; }
.problems h2 { font-size:.95rem; margin:.2rem 0; }
.problems ul { margin:.2rem 0; padding-left:1.2rem; }
.scroll { overflow-x:auto; background:var(--card); border:1px solid var(--line); border-radius:6px; }
table.drives { border-collapse:collapse; width:100%; }
table.drives th, table.drives td { text-align:left; vertical-align:top; padding:.45rem .6rem; border-bottom:1px solid var(--line); }
table.drives thead th { position:sticky; top:0; background:var(--card); font-size:.78rem; text-transform:uppercase; letter-spacing:.03em; color:var(--muted); white-space:nowrap; }
table.drives tbody tr:last-child td { border-bottom:0; }
tr.drive.sev-critical td:first-child { box-shadow: inset 4px 0 0 var(--crit); }
tr.drive.sev-warning td:first-child { box-shadow: inset 4px 0 0 var(--warn); }
tr.drive.sev-critical { background:var(--crit-bg); }
tr.drive.sev-warning { background:var(--warn-bg); }
.badge { display:inline-block; font-size:.75rem; font-weight:700; padding:.1rem .45rem; border-radius:3px; letter-spacing:.03em; }
.badge.sev-ok { color:var(--ok); background:var(--ok-bg); border:1px solid var(--ok); }
.badge.sev-warning { color:var(--warn); background:var(--warn-bg); border:1px solid var(--warn); }
.badge.sev-critical { color:#fff; background:var(--crit); border:1px solid var(--crit); }
.badge.sev-unknown { color:var(--unk); background:var(--unk-bg); border:1px solid var(--unk); }
.dev { font-weight:700; font-size:1rem; }
.kind { font-size:.72rem; color:var(--muted); border:1px solid var(--line); border-radius:3px; padding:0 .3rem; margin-left:.2rem; }
.c-drive { min-width:13rem; max-width:18rem; }
.serial { font-family:ui-monospace, "DejaVu Sans Mono", monospace; font-size:.82rem; white-space:nowrap; }
.muted { color:var(--muted); }
.num, .date { font-weight:600; font-variant-numeric:tabular-nums; }
.life { display:flex; align-items:center; gap:.4rem; white-space:nowrap; }
svg.bar .track { fill:var(--track); }
svg.bar.sev-ok .fill { fill:var(--ok); }
svg.bar.sev-warning .fill { fill:var(--warn); }
svg.bar.sev-critical .fill { fill:var(--crit); }
svg.spark { display:block; margin-top:.25rem; overflow:visible; }
svg.spark polyline { fill:none; stroke:var(--spark); stroke-width:1.5; stroke-linejoin:round; }
svg.spark circle { fill:var(--spark); }
.spark-none { display:block; font-size:.78rem; margin-top:.25rem; white-space:nowrap; }
.c-wearout { min-width:9rem; }
.c-wearout .date, .rate, .total { white-space:nowrap; }
.c-wearout .why { max-width:16rem; font-size:.8rem; }
details { margin-top:.2rem; font-size:.8rem; }
details summary { cursor:pointer; color:var(--spark); }
ol.methods { margin:.2rem 0; padding-left:1.1rem; max-width:24rem; }
ol.methods li.method { margin:0 0 .35rem; }
ol.methods .note { color:var(--muted); }
ol.methods li.chosen > b { color:var(--spark); }
.chosen-mark { font-size:.7rem; font-weight:700; color:var(--spark); border:1px solid var(--spark); border-radius:3px; padding:0 .25rem; margin-left:.2rem; }
table.inputs { border-collapse:collapse; font-size:.78rem; margin-top:.1rem; }
table.inputs th, table.inputs td { padding:0 .4rem 0 0; border:0; text-align:left; font-weight:normal; }
table.inputs th { color:var(--muted); }
table.inputs td { white-space:nowrap; }
.c-cache .state { font-weight:600; }
.c-cache.bad .state { color:var(--crit); text-transform:uppercase; }
.c-temp ul, .c-flags ul { list-style:none; margin:0; padding:0; }
.c-temp li { white-space:nowrap; }
.small { font-size:.8rem; }
.c-temp li.hot b { color:var(--crit); }
.sensor { color:var(--muted); }
.warn { color:var(--warn); font-weight:600; }
.trend { font-size:.8rem; }
.trend.up { color:var(--warn); font-weight:600; }
.c-sev .age { font-size:.75rem; color:var(--muted); margin-top:.3rem; white-space:nowrap; }
.c-sev .age.stale { color:var(--crit); font-weight:600; }
.c-flags { min-width:12rem; max-width:20rem; }
.c-flags li { padding:.1rem .4rem; margin:0 0 .2rem; border-radius:3px; }
.c-flags li.sev-critical { color:#fff; background:var(--crit); font-weight:600; }
.c-flags li.sev-warning { color:var(--warn); background:var(--warn-bg); border:1px solid var(--warn); font-weight:600; }
.c-flags li .since { display:block; color:inherit; opacity:.85; font-weight:400; font-size:.85em; }
footer { color:var(--muted); font-size:.8rem; padding:0 1rem 1rem; }
@media (max-width: 1400px) {
  body { font-size:13px; }
  main { padding:.6rem .5rem .8rem; }
  table.drives th, table.drives td { padding:.4rem .35rem; }
  .c-flags { min-width:10rem; }
  .c-drive { min-width:12rem; } }
footer a { color:var(--spark); }
"""

# Below this width the table no longer fits (a laptop split screen, a phone): each drive
# becomes a card whose cells stack, each under its column's name, so no column is cut off
# behind a horizontal scroll bar.
NARROW_PX = 1000
_CSS += (
    f"@media (max-width: {NARROW_PX}px) {{\n"
    "  table.drives thead { display:none; }\n"
    "  table.drives, table.drives tbody, table.drives tr, table.drives td { display:block; width:auto; }\n"
    "  table.drives tr.drive { border-bottom:2px solid var(--line); padding:.3rem 0; }\n"
    "  table.drives td { border:0; min-width:0; max-width:none; padding:.25rem .6rem; }\n"
    "  table.drives td::before { display:block; font-size:.7rem; text-transform:uppercase; "
    "letter-spacing:.03em; color:var(--muted); }\n"
    + "".join(f'  table.drives tr.drive td:nth-child({i})::before {{ content:"{h}"; }}\n'
              for i, h in enumerate(HEADERS, 1))
    + "  .scroll { overflow-x:visible; } }\n"
)

# Re-fetches the page and swaps <main>: rendering stays in one place (Python), and the
# table keeps working for anyone without JavaScript. Open "how" boxes stay open across a
# refresh; a failed fetch says so loudly instead of leaving old numbers looking current.
_SCRIPT = """
(function () {
  var every = %(seconds)d;
  var live = document.getElementById("live");
  var done = 0;
  var lastGood = new Date();
  live.textContent = "live: refreshes every " + every + " s";
  function openKeys() {
    var keys = {};
    var open = document.querySelectorAll("details[open]");
    for (var i = 0; i < open.length; i++) { keys[open[i].getAttribute("data-key")] = true; }
    return keys;
  }
  function refresh() {
    fetch(location.pathname, {cache: "no-store", credentials: "same-origin"})
      .then(function (r) { if (!r.ok) { throw new Error("HTTP " + r.status); } return r.text(); })
      .then(function (text) {
        var doc = new DOMParser().parseFromString(text, "text/html");
        var fresh = doc.getElementById("content");
        if (!fresh) { throw new Error("unexpected answer"); }
        var keys = openKeys();
        var node = document.importNode(fresh, true);
        var boxes = node.querySelectorAll("details");
        for (var i = 0; i < boxes.length; i++) {
          if (keys[boxes[i].getAttribute("data-key")]) { boxes[i].open = true; }
        }
        document.getElementById("content").replaceWith(node);
        document.title = doc.title;
        document.body.setAttribute("data-severity", doc.body.getAttribute("data-severity"));
        done += 1;
        document.body.setAttribute("data-refreshes", String(done));
        lastGood = new Date();
        live.className = "";
        live.textContent = "live: refreshed " + lastGood.toLocaleTimeString() + ", every " + every + " s";
      })
      .catch(function (e) {
        live.className = "stale";
        live.textContent = "agent not answering (" + e.message + "): data below is from "
          + lastGood.toLocaleTimeString() + " or earlier";
      })
      .then(function () { setTimeout(refresh, every * 1000); });
  }
  setTimeout(refresh, every * 1000);
})();
"""


def render_page(snapshot: Snapshot, now: float, state: Optional[ViewState] = None,
                hostname: Optional[str] = None,
                refresh_seconds: int = DEFAULT_REFRESH_SECONDS) -> str:
    """The whole ``/`` page, from memory. ``state`` (the :class:`agent.views.ViewState` the
    poller feeds) gives each drive's history for the sparklines and the bad-block trend, and
    since when each flag is up; without it the page has neither."""
    host = hostname if hostname is not None else socket.gethostname()
    views = flagged_first(snapshot_views(snapshot, now, state=state))
    overall = worst(views) if views else "unknown"
    flagged = [v.device for v in views if v.severity != OK]
    title = f"{overall.upper()} · {', '.join(flagged)} — " if flagged else f"{overall.upper()} — "
    rows = "".join(drive_row(v, now) for v in views)
    if not views:
        rows = f'<tr><td colspan="{len(HEADERS)}" class="muted">no drives found on this host</td></tr>'
    head = "".join(f"<th scope=\"col\">{h}</th>" for h in HEADERS)
    snap_age = human_duration(now - snapshot.created) if snapshot.created else "-"
    seconds = max(5, int(refresh_seconds))
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{esc(title)}ssdfleet on {esc(host)}</title>
<noscript><meta http-equiv="refresh" content="{seconds}"></noscript>
<style>{_CSS}</style>
</head>
<body data-severity="{esc(overall)}">
<header class="top"><h1>SSD health on {esc(host)}</h1><span id="live">static page: reload for new data</span></header>
<main id="content" data-generated="{now:.3f}">
<p class="summary">{_summary(views)}</p>
<p class="meta">generated {esc(utc_time(now))} · snapshot {esc(snap_age)} old · wear-out dates in UTC · ssdfleet {esc(__version__)}</p>
{_problems(snapshot)}
<div class="scroll"><table class="drives">
<thead><tr>{head}</tr></thead>
<tbody>{rows}</tbody>
</table></div>
{host_views.page_sections(snapshot, esc)}
</main>
<footer>Flagged drives first. Thresholds as in the shipped alert rules: life left below {percent(health.LIFE_WARNING_RATIO)} warning,
below {percent(health.LIFE_CRITICAL_RATIO)} critical; wear-out within {health.WEAROUT_WARNING_DAYS} days warning,
{health.WEAROUT_CRITICAL_DAYS} days critical.
Raw data: <a href="api/v1/drives">/api/v1/drives</a> · <a href="metrics">/metrics</a></footer>
<script>{_SCRIPT % {"seconds": seconds}}</script>
</body>
</html>
"""
