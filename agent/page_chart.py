"""The life-left chart of the ``/`` page: one drive's life left over its history, with axes,
dates, and the projected line down to its wear-out date, as inline SVG.

Server-rendered and self-contained (no script, no font or stylesheet from elsewhere: the page
must work on a host with no route out), drawn from the drive's view alone (its thinned history
and its projection), so it costs no I/O. The y axis is always 0-100% of life, so drives compare
at a glance and a flat line means a drive that barely wears; the x axis runs from the first
sample to the projected wear-out date (at most a year ahead, or three times the history when that
is longer; a later date is
written at the right edge with an arrow). The warning and critical zones of the shipped alert
rules (10% and 3% life left) are shaded, so the DBA sees how far the line is from them.
"""

from __future__ import annotations

import calendar
import html
import time
from typing import Any, List, Optional, Sequence, Tuple

from agent import health
from agent.views import DriveView, percent, utc_date

DAY = 86400.0
WIDTH, HEIGHT = 440, 150
LEFT, RIGHT, TOP, BOTTOM = 38, 14, 14, 26
# How far ahead the chart reaches: a year, or three times the history it has when that is
# longer (then the measured part keeps a quarter of the width). A wear-out date further out is
# written at the right edge with an arrow; the facts beside the chart give it in full.
MIN_HORIZON_SECONDS = 365 * DAY
MAX_TICKS = 6
CHAR_WIDTH = 6.2  # of an 11 px label, to keep tick labels inside the chart

# Candidate x-axis steps, finest first: (seconds or months, strftime label). The first that
# puts at most MAX_TICKS ticks on the axis is taken.
_SECOND_STEPS = ((3600, "%H:%M"), (6 * 3600, "%H:%M"), (DAY, "%d %b"), (2 * DAY, "%d %b"),
                 (7 * DAY, "%d %b"), (14 * DAY, "%d %b"))
# "%b" labels carry the year on the first label shown and on January (see _tick_label).
_MONTH_STEPS = ((1, "%b"), (2, "%b"), (3, "%b"), (6, "%b"), (12, "%Y"), (24, "%Y"), (60, "%Y"), (120, "%Y"))


def _esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _month_ticks(t0: float, t1: float, months: int) -> List[float]:
    g = time.gmtime(t0)
    year, month = g.tm_year, g.tm_mon
    # the first month boundary after t0 that is a multiple of the step (Jan, Apr, Jul, Oct...)
    index = year * 12 + (month - 1) + 1
    index += (-index) % months
    ticks = []
    while True:
        ts = float(calendar.timegm((index // 12, index % 12 + 1, 1, 0, 0, 0)))
        if ts > t1:
            return ticks
        ticks.append(ts)
        index += months


def x_ticks(t0: float, t1: float) -> Tuple[List[float], str]:
    """Tick times between ``t0`` and ``t1`` on round UTC boundaries (hours, days, months or
    years), at most MAX_TICKS of them, and the strftime format to label them with."""
    for step, fmt in _SECOND_STEPS:
        first = (t0 // step + 1) * step
        count = int((t1 - first) // step) + 1
        if count <= MAX_TICKS:
            return [first + i * step for i in range(max(count, 0))], fmt
    for months, fmt in _MONTH_STEPS:
        ticks = _month_ticks(t0, t1, months)
        if len(ticks) <= MAX_TICKS:
            return ticks, fmt
    return [], "%Y"


def _tick_label(ts: float, fmt: str, first: bool) -> str:
    g = time.gmtime(ts)
    if fmt == "%b" and (first or g.tm_mon == 1):
        return time.strftime("%b %Y", g)
    return time.strftime(fmt, g)


def _known_points(v: DriveView, now: float) -> List[Tuple[float, float]]:
    points = [(p["ts"], float(p["life_left_ratio"])) for p in (v.history or [])
              if p.get("life_left_ratio") is not None and p["ts"] <= now]
    if v.life_left_ratio is not None:
        read_at = now - v.data_age_seconds if v.data_age_seconds is not None else now
        if not points or read_at > points[-1][0]:
            points.append((read_at, float(v.life_left_ratio)))
    return points


def _time_range(points: Sequence[Tuple[float, float]], wearout: Optional[float], now: float) -> Tuple[float, float]:
    t0 = points[0][0] if points else now - DAY
    t0 = min(t0, now - 3600)
    if wearout is not None and wearout > now:
        t1 = min(wearout, now + max(MIN_HORIZON_SECONDS, 3 * (now - t0)))
    else:
        t1 = now
    t1 += max(t1 - t0, DAY) * 0.04  # room for the last point and the wear-out marker
    return t0, t1


def life_chart(v: DriveView, now: float) -> str:
    """The chart as an ``<svg>`` (or a short sentence when the drive reports no life-left
    figure). Classes the page styles and the tests read: ``life-chart``, ``axis-x``,
    ``axis-y``, ``history`` (the polyline of samples), ``projection`` (the dashed line),
    ``wearout-date`` (the label with the date) and ``now``."""
    points = _known_points(v, now)
    if not points:
        return ('<p class="chart-none"><b>Life left: not reported.</b> <span class="muted">The drive '
                'gives no life-left figure the agent can read (see "sources" below), so there is '
                'nothing to chart and no date to project; its errors and write cache still '
                'count.</span></p>')
    wearout = v.wearout_timestamp
    t0, t1 = _time_range(points, wearout, now)
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x(t: float) -> float:
        return LEFT + plot_w * (t - t0) / (t1 - t0)

    def y(ratio: float) -> float:
        return TOP + plot_h * (1.0 - max(0.0, min(1.0, ratio)))

    parts: List[str] = []
    # the alert zones: below 10% a ticket, below 3% a page
    for ratio, css in ((health.LIFE_WARNING_RATIO, "zone-warning"), (health.LIFE_CRITICAL_RATIO, "zone-critical")):
        parts.append(f'<rect class="{css}" x="{LEFT}" y="{y(ratio):.1f}" width="{plot_w}" '
                     f'height="{y(0) - y(ratio):.1f}"/>')
    axis_y = []
    for ratio in (0.0, 0.25, 0.5, 0.75, 1.0):
        axis_y.append(f'<line class="grid" x1="{LEFT}" x2="{LEFT + plot_w}" y1="{y(ratio):.1f}" y2="{y(ratio):.1f}"/>'
                      f'<text x="{LEFT - 5}" y="{y(ratio) + 4:.1f}" text-anchor="end">{ratio:.0%}</text>')
    parts.append(f'<g class="axis-y">{"".join(axis_y)}</g>')
    ticks, fmt = x_ticks(t0, t1)
    axis_x = [f'<line class="axis" x1="{LEFT}" x2="{LEFT + plot_w}" y1="{y(0):.1f}" y2="{y(0):.1f}"/>']
    shown = 0
    for ts in ticks:
        text = _tick_label(ts, fmt, first=not shown)
        half = len(text) * CHAR_WIDTH / 2
        if x(ts) - half < LEFT - 4 or x(ts) + half > WIDTH:
            continue  # a label cut by the edge reads as a different date
        shown += 1
        axis_x.append(f'<line class="tick" x1="{x(ts):.1f}" x2="{x(ts):.1f}" y1="{y(0):.1f}" y2="{y(0) + 4:.1f}"/>'
                      f'<text x="{x(ts):.1f}" y="{y(0) + 16:.1f}" text-anchor="middle">'
                      f'{_esc(text)}</text>')
    parts.append(f'<g class="axis-x">{"".join(axis_x)}</g>')
    # now: a dotted vertical line, labelled at the top
    parts.append(f'<g class="now"><line x1="{x(now):.1f}" x2="{x(now):.1f}" y1="{TOP}" y2="{y(0):.1f}"/>'
                 f'<text x="{x(now) - 3:.1f}" y="{TOP - 3}" text-anchor="end">now</text></g>')
    if len(points) >= 2:
        line = " ".join(f"{x(t):.1f},{y(r):.1f}" for t, r in points)
        parts.append(f'<polyline class="history" points="{line}"/>')
    last_t, last_r = points[-1]
    parts.append(f'<circle class="current" cx="{x(last_t):.1f}" cy="{y(last_r):.1f}" r="3"/>')
    parts.append(f'<text class="value" x="{x(last_t) - 6:.1f}" y="{y(last_r) - 7:.1f}" '
                 f'text-anchor="end">{_esc(percent(last_r))}</text>')
    parts += _projection(v, now, last_r, t1, x, y)
    label = _label(v, points, now)
    return (f'<svg class="life-chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{_esc(label)}" '
            f'preserveAspectRatio="xMinYMin meet"><title>{_esc(label)}</title>{"".join(parts)}</svg>')


def _projection(v: DriveView, now: float, life: float, t1: float, x, y) -> List[str]:
    """The dashed line from life left now to 0% at the wear-out date, and the date's label."""
    wearout = v.wearout_timestamp
    if wearout is None or v.life_left_ratio is None:
        return []
    if wearout <= now:
        return [f'<text class="wearout-date" x="{x(now) - 6:.1f}" y="{y(0) - 6:.1f}" text-anchor="end">'
                f'worn out: {_esc(utc_date(wearout))}</text>']
    end_t, end_r = wearout, 0.0
    beyond = wearout > t1
    if beyond:  # drawn to the right edge at the height it will have then
        end_t = t1
        end_r = life * (wearout - t1) / (wearout - now)
    out = [f'<line class="projection" x1="{x(now):.1f}" y1="{y(life):.1f}" x2="{x(end_t):.1f}" y2="{y(end_r):.1f}"/>']
    text = f"wear-out {utc_date(wearout)}"
    if beyond:
        out.append(f'<text class="wearout-date" x="{x(t1):.1f}" y="{y(end_r) - 8:.1f}" text-anchor="end">'
                   f'{_esc(text)} &#8594;</text>')
    else:
        anchor = "end" if x(wearout) > LEFT + 0.5 * (WIDTH - LEFT - RIGHT) else "start"
        shift = -6 if anchor == "end" else 6
        out.append(f'<circle class="wearout" cx="{x(wearout):.1f}" cy="{y(0):.1f}" r="3.5"/>'
                   f'<text class="wearout-date" x="{x(wearout) + shift:.1f}" y="{y(0) - 12:.1f}" '
                   f'text-anchor="{anchor}">{_esc(text)}</text>')
    return out


def _label(v: DriveView, points: Sequence[Tuple[float, float]], now: float) -> str:
    """What the chart says, in one sentence (its title and the screen reader's text)."""
    first_t, first_r = points[0]
    said = f"life left {percent(first_r)} on {utc_date(first_t)}, {percent(points[-1][1])} now"
    if len(points) < 2:
        said = f"life left {percent(points[-1][1])} now (one sample so far)"
    if v.wearout_timestamp is not None:
        said += f"; projected to reach 0% on {utc_date(v.wearout_timestamp)} ({v.wearout_method_label})"
    return said
