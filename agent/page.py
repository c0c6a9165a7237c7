"""The agent's ``/`` page: which drive, how bad, since when, and when it wears out, read by a
DBA in ten seconds.

A header counts the drives by state (critical, warning, watch, healthy). Each drive is a card,
flagged drives first: its state and why, then its life-left chart over its history with the
projected wear-out line and date (agent/page_chart.py), and beside it the facts a DBA acts on:
the wear-out date and how it was worked out, the write cache against what it should be, the
latency of synchronous writes, host writes a day, temperatures against their limits, and the
errors by what they are (media errors, reallocated blocks, cable errors). Plain words
throughout; the raw keys are in ``/api/v1/drives``.

Server-rendered HTML from the same :class:`agent.views.DriveView` as ``/api/v1/drives`` and
``ssdfleet status``, so the three never disagree. Everything is inline (CSS, SVG, a short
refresh script): the page must work on a host with no route to any CDN, and reads whole
without JavaScript. The cards are a CSS grid that becomes one column on a narrow screen, and
every box inside wraps its text (``min-width: 0``, ``overflow-wrap``), so opening the details
makes a card taller, never wider than the screen (tests/test_ui_page_layout.py measures it
in Chromium at 1280, 800 and 390 px). Every value that came from a device or a file goes
through :func:`esc`: :func:`agent.text.printable` (control characters such as the ESC of a
terminal escape sequence written as ``\\x1b``, issue 26) and then :func:`html.escape`; model
strings and serials are whatever the firmware says.
"""

from __future__ import annotations

import html
import socket
from typing import Any, Dict, List, Optional

from agent import __version__, health, host_views
from agent.health import CRITICAL, OK, WARNING
from agent.page_chart import life_chart
from agent.text import printable
from agent.views import (
    HEALTHY,
    STATES,
    WATCH,
    DriveView,
    ViewState,
    controller_places,
    controller_text,
    error_classes,
    flagged_first,
    human_bytes,
    human_duration,
    input_rows,
    percent,
    series_change,
    since_text,
    snapshot_views,
    utc_date,
    utc_time,
    worst,
)
from agent.views import (
    counted as count_words,
)
from collectors.model import Snapshot, holds_text

DAY = 86400.0
DEFAULT_REFRESH_SECONDS = 30

BAR_WIDTH = 96
BAR_HEIGHT = 10

# What each state means, for the header's counts and the footer.
STATE_WORDS = {
    CRITICAL: "critical",
    WARNING: "warning",
    WATCH: "to watch",
    HEALTHY: "healthy",
}


def esc(value: Any) -> str:
    return html.escape(printable(value), quote=True)


def _sev_class(severity: str) -> str:
    return f"sev-{severity}" if severity in (OK, WARNING, CRITICAL) else "sev-unknown"


def _state_badge(v: DriveView) -> str:
    if v.data_age_seconds is None:
        return '<span class="badge state-unknown">NO DATA</span>'
    word = {HEALTHY: "OK", WATCH: "WATCH"}.get(v.state, v.state.upper())
    return f'<span class="badge state-{esc(v.state)}">{esc(word)}</span>'


# -- the card's parts ------------------------------------------------------------------

def drive_head(v: DriveView) -> str:
    """Device, model, capacity, serial and firmware on one line that wraps, and the data's age."""
    model = esc(v.model) if v.model else '<span class="muted">model unknown</span>'
    bits = [f'<span class="kind">{esc(v.kind)}</span>']
    if v.capacity_bytes:
        bits.append(esc(human_bytes(v.capacity_bytes)))
    bits.append(f'serial <span class="serial">{esc(v.serial)}</span>')
    if v.firmware:
        bits.append(f'<span title="firmware">fw {esc(v.firmware)}</span>')
    return (f'<header class="d-head c-drive">{_state_badge(v)} <span class="dev">{esc(v.device)}</span> '
            f'<span class="model">{model}</span> <span class="muted ident">{" · ".join(bits)}</span>'
            f"{age_line(v)}"
            + (f'<div class="holds">holds: {esc(holds_text(v.holds))}</div>' if v.holds else "")  # issue 15
            + behind_line(v)
            + selftest_line(v)
            + "</header>")


def selftest_line(v: DriveView) -> str:
    """Issue 30: what smartd would tell, from the drive's own logs: its newest self-test (or the
    one running now) and its newest logged error."""
    said = [("self-test", v.extra.get("selftest_last")), ("self-test running", v.extra.get("selftest_running")),
            ("last logged error", v.extra.get("error_log_last"))]
    return "".join(f'<div class="logs">{esc(label)}: {esc(text)}</div>' for label, text in said if text)


def behind_line(v: DriveView) -> str:
    """Issue 28: the controller, slot and volume of a drive read through a RAID controller. Its
    device node (/dev/bus/N, or the volume's /dev/sdX) is shared with the controller's other
    drives, so the slot is what names it; its write cache and I/O are the volume's."""
    places = controller_places(v)
    if not places:
        return ""
    note = places[0].get("note") or ""
    return "".join(
        f'<div class="behind" data-controller="{esc(p["controller"])}" data-slot="{esc(p["slot"])}" '
        f'data-volume="{esc(p.get("volume") if p.get("volume") is not None else "")}" title="{esc(note)}">'
        f"behind RAID controller {esc(controller_text(p))}</div>" for p in places)


def age_line(v: DriveView) -> str:
    """How old the health data is: how far the state can be trusted."""
    age = v.data_age_seconds
    if age is None:
        return '<span class="age" data-value="">no health data</span>'
    stale = health.data_stale(age, v.power_state)
    polls = "; ".join(f"{k} {utc_time(t)}" for k, t in sorted(v.last_poll.items()))
    cls = "age stale" if stale else "age"
    return (f'<span class="{cls}" data-value="{age:.0f}" title="last polls: {esc(polls)}">'
            f"data {esc(human_duration(age))} old</span>")


def flags_cell(v: DriveView, now: float) -> str:
    """Why the drive is flagged (each reason, since when), or why it is worth watching."""
    if v.flags:
        items = "".join(
            f'<li class="{_sev_class(f.severity)}" data-key="{esc(f.key)}">{esc(f.reason)}'
            + (f' <span class="since" data-since="{f.since:.0f}">{esc(since_text(f.since, now))}</span>'
               if f.since is not None else "")
            + "</li>"
            for f in v.flags)
        return f'<div class="c-flags"><ul>{items}</ul></div>'
    if v.watch:
        items = "".join(f'<li class="state-watch" data-key="watch">{esc(reason)}</li>' for reason in v.watch)
        return f'<div class="c-flags"><ul>{items}</ul></div>'
    note = "no health data: no tool could read this drive" if v.data_age_seconds is None else "nothing flagged"
    return f'<div class="c-flags"><span class="muted">{esc(note)}</span></div>'


def life_cell(v: DriveView, now: float) -> str:
    """The chart of life left over time, a key to it, and under it life left now as a bar and
    a figure with where that figure came from."""
    ratio = v.life_left_ratio
    bar = ""
    if ratio is not None:
        filled = max(0.0, min(1.0, ratio)) * BAR_WIDTH
        bar = (f'<span class="life"><svg class="bar {_sev_class(health.life_severity(ratio) or "unknown")}" '
               f'width="{BAR_WIDTH}" height="{BAR_HEIGHT}" viewBox="0 0 {BAR_WIDTH} {BAR_HEIGHT}" aria-hidden="true">'
               f'<rect class="track" width="{BAR_WIDTH}" height="{BAR_HEIGHT}" rx="2"/>'
               f'<rect class="fill" width="{filled:.1f}" height="{BAR_HEIGHT}" rx="2"/></svg>'
               f' <span class="num">{esc(percent(ratio))}</span> life left</span>')
    source = f' title="{esc(v.life_left_source)}"' if v.life_left_source else ""
    value = "" if ratio is None else f"{ratio:.4f}"
    legend = ""
    if ratio is not None:
        legend = ('<div class="legend muted"><span class="key-history"></span>measured'
                  + ('<span class="key-projection"></span>projected' if v.wearout_timestamp is not None else "")
                  + '<span class="key-zone"></span>below 10% / 3%: the alert levels</div>')
    return (f'<div class="c-life" data-value="{value}"{source}>{life_chart(v, now)}{legend}'
            f'<div class="life-now">{bar}{_evidence_details(v)}</div></div>')


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
    summary = "sources" + (f", {withheld} withheld" if withheld else "") + ": where each figure comes from"
    return (f'<details class="evidence" data-key="evidence-{esc(v.serial)}"><summary>{summary}</summary>'
            f"<ul>{items}</ul></details>")


def _projection_details(v: DriveView) -> str:
    """How the date was worked out: every method, in order of preference, with its date or
    why it has none, and what it reckoned with, in words; the method behind the date marked."""
    blocks = []
    for p in v.projections:
        ts = p.get("wearout_timestamp")
        chosen = p["method"] == v.wearout_method and v.wearout_timestamp is not None
        verdict = '<span class="none">no date</span>' if ts is None else f'<span class="date">{esc(utc_date(ts))}</span>'
        mark = ' <span class="chosen-mark">shown</span>' if chosen else ""
        # a method without a date says why; one with a date shows its sums below
        note = f'<div class="note">{esc(p["note"])}</div>' if p.get("note") and (ts is None or p["method"] == "rated") else ""
        rows = "".join(f"<tr><th>{esc(label)}</th><td>{esc(value)}</td></tr>" for label, value in input_rows(p))
        table = f'<table class="inputs">{rows}</table>' if rows else ""
        cls = "method chosen" if chosen else "method"
        blocks.append(f'<li class="{cls}" data-method="{esc(p["method"])}"><b>{esc(p.get("label") or p["method"])}</b>: '
                      f"{verdict}{mark}{note}{table}</li>")
    rated = ""
    if v.rated_endurance_bytes is not None:
        rated = f'<div class="muted">rated endurance {esc(human_bytes(v.rated_endurance_bytes))} of host writes</div>'
    return (f'<details data-key="why-{esc(v.serial)}"><summary>how this date was worked out</summary>'
            f'<ol class="methods">{"".join(blocks)}</ol>{rated}</details>')


def _fact(css: str, title: str, body: str, value: str = "", extra_class: str = "") -> str:
    cls = f"fact {css}" + (f" {extra_class}" if extra_class else "")
    return f'<div class="{cls}" data-value="{esc(value)}"><div class="fact-title">{esc(title)}</div>{body}</div>'


def wearout_cell(v: DriveView, now: float) -> str:
    ts = v.wearout_timestamp
    if ts is None:
        first = v.projections[0] if v.projections else None
        why = first.get("note") if first else "no projection"
        body = f'<span class="none">no date</span><div class="muted why">{esc(why)}</div>'
        value = ""
    else:
        when = f"in {human_duration(ts - now)}" if ts > now else "now: past its rating"
        body = (f'<span class="date big">{esc(utc_date(ts))}</span>'
                f'<div class="muted">{esc(when)}, <span class="method">{esc(v.wearout_method_label)}</span></div>')
        value = f"{ts:.0f}"
    details = _projection_details(v) if v.projections else ""
    return _fact("c-wearout", "Projected wear-out", body + details, value)


def cache_cell(v: DriveView) -> str:
    state = v.write_cache or "unknown"
    expected = v.write_cache_expected
    mismatch = any(f.key == "write_cache" for f in v.flags)
    sources = "; ".join(f"{s['source']}: {s['state']}" for s in v.write_cache_sources)
    if not expected:
        want = '<div class="muted">no expectation set</div>'
    elif v.write_cache is None:
        # nothing read: whether the cache is as it should be is not known either
        want = f'<div class="muted">not read; should be {esc(expected)}</div>'
    elif mismatch:
        want = f'<div class="muted">should be {esc(expected)}</div>'
    else:
        want = '<div class="muted">as expected</div>'
    body = f'<span class="state" title="{esc(sources)}">{esc(state)}</span>{want}'
    return _fact("c-cache", "Write cache", body, state, "bad" if mismatch else "")


def _ms(seconds: float) -> str:
    ms = seconds * 1000.0
    return f"{ms:.2g} ms" if ms < 10 else f"{ms:.0f} ms"


def latency_cell(v: DriveView) -> str:
    """Synchronous writes: a host source's burst timed on this drive (the sync-write probe's)
    when one times writes there, else the mean time of one write and one cache flush from
    /proc/diskstats over the last minutes."""
    burst = v.latency_burst
    if burst:
        p99 = burst.get("p99_seconds")
        body = (f'<span class="num">{esc(_ms(burst["median_seconds"]))}</span> median'
                + (f", p99 {esc(_ms(p99))}" if p99 is not None else "")
                + f'<div class="muted">{esc(burst["how"])}</div>')
        return _fact("c-latency", "Sync-write latency", body, f'{burst["median_seconds"]:.6f}')
    write, flush = v.write_latency_seconds, v.flush_latency_seconds
    if write is None and flush is None:
        body = '<span class="muted">measured once the agent has run a minute</span>'
        return _fact("c-latency", "Write latency", body)
    parts = []
    if write is not None:
        parts.append(f'<span class="num">{esc(_ms(write))}</span> per write')
    if flush is not None:
        parts.append(f'<span class="num">{esc(_ms(flush))}</span> per flush')
    window = f"mean of the last {human_duration(v.latency_window_seconds)}" if v.latency_window_seconds else ""
    body = "<br>".join(parts) + (f'<div class="muted" title="from the kernel\'s counters (/proc/diskstats)">'
                                 f"{esc(window)}</div>" if window else "")
    return _fact("c-latency", "Write latency", body, "" if write is None else f"{write:.6f}")


def writes_cell(v: DriveView) -> str:
    rate = v.write_rate_bytes_per_second
    if rate is None:
        head = '<div class="muted" title="the rate needs an hour of history">no rate yet</div>'
        value = ""
    else:
        head = f'<div class="rate"><span class="num">{esc(human_bytes(rate * DAY))}</span> a day</div>'
        value = f"{rate * DAY:.0f}"
    total = (f'<div class="total muted"><span class="num">{esc(human_bytes(v.host_written_bytes))}</span> written</div>'
             if v.host_written_bytes is not None else '<div class="muted">total not reported</div>')
    return _fact("c-writes", "Host writes", head + total, value)


def temp_cell(v: DriveView) -> str:
    if not v.temperatures:
        return _fact("c-temp", "Temperature", '<span class="muted">not reported</span>')
    lines = []
    for t in v.temperatures:
        limit = t.get("limit_celsius")
        hot = health.temperature_hot(t["sensor"], t["celsius"], limit)
        # the limit is what the reading is judged by, so it stays in view; the lifetime
        # maximum is history, so it goes in the tooltip
        tail = f' <span class="muted small">limit {limit:.0f}</span>' if limit is not None else ""
        title = f' title="max seen {t["max_celsius"]:.0f} °C"' if t.get("max_celsius") is not None else ""
        cls = ' class="hot"' if hot else ""
        lines.append(f'<li{cls}{title}><span class="sensor">{esc(t["sensor"].replace("_", " "))}</span> '
                     f'<b>{t["celsius"]:.0f}&nbsp;°C</b>{tail}</li>')
    return _fact("c-temp", "Temperature", f'<ul>{"".join(lines)}</ul>')


def errors_cell(v: DriveView) -> str:
    """Bad blocks, media errors and cable errors, each under its own name: a CRC error on the
    SATA cable is not a bad block, and an uncorrectable read is worse than a retired block."""
    classes = error_classes(v)
    lines: List[str] = []
    if v.bad_block_ratio is not None:
        lines.append(f'<li><span class="num">{esc(percent(v.bad_block_ratio, 3))}</span> of blocks bad'
                     f"{_bad_trend(v)}</li>")
    quiet = []  # the classes counted and at zero, said together on one line
    for key, none in (("reallocations", "none reallocated"), ("media", "no media errors"),
                      ("link", "no cable errors")):
        found = classes.get(key)
        if not found:
            continue
        counted = [(words, n) for words, n in found if n]
        if not counted:
            quiet.append(f'<span data-class="{key}" title="{esc(", ".join(w for w, _ in found))}">{none}</span>')
            continue
        warn = key in ("media", "reallocations") and any(w != "factory bad blocks" for w, _ in counted)
        text = ", ".join(count_words(n, words) for words, n in counted)
        if key == "link":
            text += " (the cable, not the flash)"
        lines.append(f'<li class="{"warn" if warn else ""}" data-class="{key}">{esc(text)}</li>')
    if quiet:
        lines.append(f'<li class="muted">{", ".join(quiet)}</li>')
    if not lines:
        lines.append('<li class="muted">not reported</li>')
    value = "" if v.bad_block_ratio is None else f"{v.bad_block_ratio:.6f}"
    return _fact("c-bad", "Errors and bad blocks", f'<ul>{"".join(lines)}</ul>', value)


def _bad_trend(v: DriveView) -> str:
    change = series_change(v.history or [], "bad_block_ratio")
    if change is None:
        return ""
    span = esc(human_duration(change["last_ts"] - change["first_ts"]))  # "0 days" said nothing
    if change["change"] > 0:
        return f'<div class="trend up">↑ {esc(percent(change["change"], 4))} in {span}</div>'
    if change["change"] < 0:
        return f'<div class="trend">↓ {esc(percent(-change["change"], 4))} in {span}</div>'
    return f'<div class="trend muted">steady for {span}</div>'


def drive_card(v: DriveView, now: float) -> str:
    return (f'<article class="drive state-{esc(v.state)} {_sev_class(v.severity)}" data-serial="{esc(v.serial)}" '
            f'data-device="{esc(v.device)}" data-severity="{esc(v.severity)}" data-state="{esc(v.state)}">'
            f"{drive_head(v)}{flags_cell(v, now)}"
            f'<div class="d-body"><div class="d-left">{life_cell(v, now)}{wearout_cell(v, now)}</div>'
            f'<div class="facts">{cache_cell(v)}{latency_cell(v)}{writes_cell(v)}{temp_cell(v)}{errors_cell(v)}'
            f"</div></div></article>")


# -- the page --------------------------------------------------------------------------

def state_counts(views: List[DriveView]) -> Dict[str, int]:
    return {s: sum(1 for v in views if v.state == s) for s in STATES}


def anchor(v: DriveView, views: List[DriveView]) -> str:
    """The card's id: ``drive-DEVICE``, with the serial added where several drives share the
    device node (drives read through a RAID controller are all opened on /dev/bus/N)."""
    shared = sum(1 for w in views if w.device == v.device) > 1
    return f"drive-{v.device}-{v.serial}" if shared else f"drive-{v.device}"


def _counts(views: List[DriveView]) -> str:
    """The header: how many drives in each state, each linking to the first such drive."""
    if not views:
        return '<p class="counts"><span class="badge state-unknown">UNKNOWN</span> no drives found</p>'
    counts = state_counts(views)
    chips = []
    for s in STATES:
        n = counts[s]
        first = next((v for v in views if v.state == s), None)
        inner = f'<b>{n}</b> {esc(STATE_WORDS[s])}'
        if first is not None:
            inner = f'<a href="#{esc(anchor(first, views))}">{inner}</a>'
        chips.append(f'<span class="count state-{s}{" zero" if not n else ""}" data-state="{s}" data-count="{n}">'
                     f"{inner}</span>")
    unread = sum(1 for v in views if v.data_age_seconds is None)
    tail = f'<span class="muted"> ({unread} without health data, counted as warning)</span>' if unread else ""
    return f'<p class="counts">{"".join(chips)}<span class="total">{len(views)} drives</span>{tail}</p>'


def _problems(snapshot: Snapshot) -> str:
    items = [f"collector {esc(c.name)} failing: {esc(c.error or 'see the agent log')}"
             for c in snapshot.collectors if not c.success]
    items += [esc(p) for p in snapshot.problems]
    items += [f"probe stuck on {esc(d)}: device quarantined" for d in snapshot.stuck]
    if not items:
        return ""
    return ('<section class="problems"><h2>Agent problems</h2><ul>'
            + "".join(f"<li>{i}</li>" for i in items) + "</ul></section>")


_CSS = """
:root { --fg:#1d2125; --muted:#5f6872; --bg:#f4f5f7; --card:#fff; --line:#dde1e5;
  --ok:#1f7a3a; --ok-bg:#e5f3e9; --warn:#8a5300; --warn-bg:#fff1d1; --crit:#a8071a; --crit-bg:#fde4e6;
  --watch:#0b5f8a; --watch-bg:#e1f0f8; --unk:#4b5563; --unk-bg:#eceef1; --track:#e6e8eb; --line-c:#2f5f98; }
@media (prefers-color-scheme: dark) {
  :root { --fg:#e4e6e9; --muted:#a3abb4; --bg:#121417; --card:#1d2125; --line:#343a40;
    --ok:#6fcf8a; --ok-bg:#1d3325; --warn:#f0b54a; --warn-bg:#3a2d12; --crit:#ff7a85; --crit-bg:#451a1f;
    --watch:#7cc4ec; --watch-bg:#17303f; --unk:#b6bcc4; --unk-bg:#2b3036; --track:#343a40; --line-c:#8ab8ec; } }
* { box-sizing: border-box; }
body { margin:0; font:14px/1.4 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color:var(--fg); background:var(--bg); }
header.top { display:flex; flex-wrap:wrap; gap:.3rem 1.2rem; align-items:baseline; padding:.6rem 1rem; border-bottom:1px solid var(--line); background:var(--card); }
header.top h1 { font-size:1.15rem; margin:0; }
#live { color:var(--muted); font-size:.85rem; }
#live.stale { color:var(--crit); font-weight:600; }
main { padding:.7rem 1rem 1rem; max-width:1500px; }
.counts { display:flex; flex-wrap:wrap; gap:.5rem; align-items:center; margin:0 0 .4rem; font-size:1rem; }
.count { border-radius:6px; padding:.25rem .7rem; border:1px solid var(--line); background:var(--card); }
.count a { color:inherit; text-decoration:none; }
.count b { font-size:1.3rem; margin-right:.2rem; }
.count.zero { opacity:.55; }
.count.state-critical:not(.zero) { background:var(--crit); border-color:var(--crit); color:#fff; }
.count.state-warning:not(.zero) { background:var(--warn-bg); border-color:var(--warn); color:var(--warn); }
.count.state-watch:not(.zero) { background:var(--watch-bg); border-color:var(--watch); color:var(--watch); }
.count.state-healthy:not(.zero) { background:var(--ok-bg); border-color:var(--ok); color:var(--ok); }
.counts .total { color:var(--muted); margin-left:.3rem; }
.meta { color:var(--muted); font-size:.82rem; margin:0 0 .7rem; }
.problems { border:1px solid var(--warn); background:var(--warn-bg); border-radius:6px; padding:.4rem .8rem; margin:0 0 .8rem; }
.problems h2 { font-size:.95rem; margin:.2rem 0; }
.problems ul { margin:.2rem 0; padding-left:1.2rem; overflow-wrap:anywhere; }
.drives { display:flex; flex-direction:column; gap:.7rem; }
article.drive { background:var(--card); border:1px solid var(--line); border-left:5px solid var(--ok); border-radius:6px; padding:.55rem .8rem .6rem; min-width:0; }
article.drive.state-watch { border-left-color:var(--watch); }
article.drive.state-warning { border-left-color:var(--warn); }
article.drive.state-critical { border-left-color:var(--crit); }
.d-head { display:flex; flex-wrap:wrap; align-items:baseline; gap:.15rem .5rem; overflow-wrap:anywhere; }
.dev { font-weight:700; font-size:1.1rem; }
.model { font-weight:600; }
.kind { font-size:.72rem; border:1px solid var(--line); border-radius:3px; padding:0 .3rem; }
.serial { font-family:ui-monospace, "DejaVu Sans Mono", monospace; font-size:.85rem; }
.ident { font-size:.85rem; }
.age { margin-left:auto; font-size:.78rem; color:var(--muted); white-space:nowrap; }
.age.stale { color:var(--crit); font-weight:600; }
.holds, .behind, .logs { flex-basis:100%; font-size:.82rem; color:var(--muted); }
.badge { display:inline-block; font-size:.72rem; font-weight:700; padding:.1rem .45rem; border-radius:3px; letter-spacing:.03em; border:1px solid; }
.badge.state-healthy { color:var(--ok); background:var(--ok-bg); }
.badge.state-watch { color:var(--watch); background:var(--watch-bg); }
.badge.state-warning { color:var(--warn); background:var(--warn-bg); }
.badge.state-critical { color:#fff; background:var(--crit); border-color:var(--crit); }
.badge.state-unknown { color:var(--unk); background:var(--unk-bg); }
.c-flags { margin:.3rem 0 .2rem; }
.c-flags ul { list-style:none; margin:0; padding:0; display:flex; flex-wrap:wrap; gap:.3rem; }
.c-flags li { padding:.15rem .5rem; border-radius:3px; font-weight:600; overflow-wrap:anywhere; }
.c-flags li.sev-critical { color:#fff; background:var(--crit); }
.c-flags li.sev-warning { color:var(--warn); background:var(--warn-bg); border:1px solid var(--warn); }
.c-flags li.state-watch { color:var(--watch); background:var(--watch-bg); border:1px solid var(--watch); font-weight:500; }
.c-flags li .since { font-weight:400; font-size:.85em; opacity:.9; margin-left:.3rem; }
.d-body { display:grid; grid-template-columns:minmax(0, 1fr); gap:.5rem .9rem; margin-top:.4rem; align-items:start; }
.d-left { min-width:0; display:flex; flex-direction:column; gap:.3rem; }
.c-life { min-width:0; }
.life-now { display:flex; flex-wrap:wrap; align-items:baseline; gap:.2rem .8rem; }
.life-now details { margin-top:0; }
.life { display:inline-flex; align-items:center; gap:.4rem; white-space:nowrap; }
svg.bar .track { fill:var(--track); }
svg.bar.sev-ok .fill { fill:var(--ok); }
svg.bar.sev-warning .fill { fill:var(--warn); }
svg.bar.sev-critical .fill { fill:var(--crit); }
svg.life-chart { display:block; width:100%; max-width:470px; height:auto; margin-top:.2rem; }
svg.life-chart text { fill:var(--muted); font-size:11px; font-family:inherit; }
svg.life-chart .grid { stroke:var(--line); stroke-width:1; }
svg.life-chart .axis, svg.life-chart .tick { stroke:var(--muted); stroke-width:1; }
svg.life-chart .zone-warning { fill:var(--warn-bg); }
svg.life-chart .zone-critical { fill:var(--crit-bg); }
svg.life-chart .now line { stroke:var(--muted); stroke-dasharray:2 3; }
svg.life-chart .history { fill:none; stroke:var(--line-c); stroke-width:2.2; stroke-linejoin:round; }
svg.life-chart .projection { stroke:var(--line-c); stroke-width:1.6; stroke-dasharray:6 4; }
svg.life-chart circle.current { fill:var(--line-c); }
svg.life-chart circle.wearout { fill:var(--card); stroke:var(--crit); stroke-width:2; }
svg.life-chart text.value, svg.life-chart text.wearout-date { fill:var(--fg); font-weight:700;
  paint-order:stroke; stroke:var(--card); stroke-width:3px; stroke-linejoin:round; }
.legend { font-size:.75rem; }
.legend span { display:inline-block; width:16px; height:0; vertical-align:middle; margin:0 .25rem 0 .6rem; border-top:2px solid var(--line-c); }
.legend span:first-child { margin-left:0; }
.legend span.key-projection { border-top-style:dashed; }
.legend span.key-zone { height:8px; border:0; background:var(--warn-bg); outline:1px solid var(--line); }
.chart-none { margin:.4rem 0; }
.facts { display:grid; grid-template-columns:minmax(0, 1fr) minmax(0, 1fr); gap:.4rem .7rem; align-content:start; min-width:0; }
.fact { min-width:0; overflow-wrap:anywhere; }
.fact-title { font-size:.72rem; text-transform:uppercase; letter-spacing:.04em; color:var(--muted); }
.fact ul { list-style:none; margin:0; padding:0; }
.date.big { font-size:1.15rem; }
.num, .date { font-weight:600; font-variant-numeric:tabular-nums; }
.none { font-weight:600; color:var(--muted); }
.why { font-size:.82rem; }
.c-cache .state { font-weight:600; }
.c-cache.bad .state { color:var(--crit); text-transform:uppercase; }
.c-temp li.hot b { color:var(--crit); }
.sensor { color:var(--muted); }
.small { font-size:.8rem; }
.muted { color:var(--muted); }
.warn { color:var(--warn); font-weight:600; }
.trend { font-size:.8rem; font-weight:400; }
.trend.up { color:var(--warn); font-weight:600; }
details { margin-top:.25rem; font-size:.82rem; min-width:0; }
details summary { cursor:pointer; color:var(--line-c); }
details ul, ol.methods { margin:.2rem 0; padding-left:1.1rem; overflow-wrap:anywhere; }
ol.methods li.method { margin:0 0 .4rem; }
ol.methods .note { color:var(--muted); }
ol.methods li.chosen > b { color:var(--line-c); }
.chosen-mark { font-size:.7rem; font-weight:700; color:var(--line-c); border:1px solid var(--line-c); border-radius:3px; padding:0 .25rem; margin-left:.2rem; }
table.inputs { border-collapse:collapse; font-size:.8rem; margin-top:.1rem; max-width:100%; }
table.inputs th, table.inputs td { padding:0 .6rem 0 0; border:0; text-align:left; font-weight:normal; vertical-align:top; overflow-wrap:anywhere; }
table.inputs th { color:var(--muted); }
section.host { margin-top:1rem; }
section.host h2 { font-size:1rem; }
.scroll { overflow-x:auto; background:var(--card); border:1px solid var(--line); border-radius:6px; }
table.drives { border-collapse:collapse; width:100%; }
table.drives th, table.drives td { text-align:left; padding:.35rem .6rem; border-bottom:1px solid var(--line); }
footer { color:var(--muted); font-size:.8rem; padding:0 1rem 1rem; max-width:1500px; }
footer a { color:var(--line-c); }
"""

# The card's layout, narrow screens first. A phone (up to NARROW_PX): the chart, the wear-out
# date under it, then the facts two to a row. Wider, the chart and the wear-out date hold the
# left column and the facts fill two columns beside them (.d-left and .facts step aside with
# display: contents, so that their children are the grid's items); wider than MEDIUM_PX, the
# wear-out date heads three columns of facts beside the chart, where the eye goes after it.
MEDIUM_PX = 1000
NARROW_PX = 640
_CSS += (
    f"@media (min-width: {NARROW_PX + 1}px) {{\n"
    "  .d-left, .facts { display:contents; }\n"
    "  .d-body { grid-template-columns:minmax(0, 400px) repeat(2, minmax(0, 1fr)); gap:.45rem .9rem; }\n"
    "  .c-life { grid-column:1; grid-row:1 / span 2; }\n"
    "  .c-wearout { grid-column:1; grid-row:3; } }\n"
    f"@media (min-width: {MEDIUM_PX + 1}px) {{\n"
    "  .d-body { grid-template-columns:minmax(0, 470px) repeat(3, minmax(0, 1fr)); gap:.5rem 1.2rem; }\n"
    "  .c-life { grid-row:1 / span 3; }\n"
    "  .c-wearout { grid-column:2 / -1; grid-row:1; } }\n"
    f"@media (max-width: {MEDIUM_PX}px) {{\n"
    "  main { padding:.5rem .5rem .8rem; } }\n"
    "@media (max-width: 480px) {\n"
    "  body { font-size:13px; }\n"
    "  article.drive { padding:.45rem .55rem; }\n"
    "  .age { margin-left:0; }\n"
    "  .c-bad { grid-column:1 / -1; } }\n"
)

# Re-fetches the page and swaps <main>: rendering stays in one place (Python), and the
# page keeps working for anyone without JavaScript. Open "details" boxes stay open across a
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
    poller feeds) gives each drive's history for the chart and the bad-block trend, the recent
    write latency, and since when each flag is up; without it the page has none of them."""
    host = hostname if hostname is not None else socket.gethostname()
    views = flagged_first(snapshot_views(snapshot, now, state=state))
    overall = worst(views) if views else "unknown"
    flagged = [v.device for v in views if v.severity != OK]
    title = f"{overall.upper()} · {', '.join(flagged)} — " if flagged else f"{overall.upper()} — "
    cards = "".join(drive_card(v, now).replace("<article ", f'<article id="{esc(anchor(v, views))}" ', 1) for v in views)
    if not views:
        cards = '<p class="muted">no drives found on this host</p>'
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
{_counts(views)}
<p class="meta">generated {esc(utc_time(now))} · snapshot {esc(snap_age)} old · dates in UTC · ssdfleet {esc(__version__)}</p>
{_problems(snapshot)}
<div class="drives">{cards}</div>
{host_views.page_sections(snapshot, esc)}
</main>
<footer>Worst drives first. Thresholds as in the shipped alert rules: life left below {percent(health.LIFE_WARNING_RATIO)} warning,
below {percent(health.LIFE_CRITICAL_RATIO)} critical; wear-out within {health.WEAROUT_WARNING_DAYS} days warning,
{health.WEAROUT_CRITICAL_DAYS} days critical. To watch (no alert yet, plan the replacement): life left below
{percent(health.WATCH_LIFE_RATIO)} or wear-out within {health.WATCH_WEAROUT_DAYS} days.
What to do about each: <a href="runbooks">runbooks</a> · raw data: <a href="api/v1/drives">/api/v1/drives</a> · <a href="metrics">/metrics</a></footer>
<script>{_SCRIPT % {"seconds": seconds}}</script>
</body>
</html>
"""
