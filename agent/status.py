"""``ssdfleet status``: this host's drives in the terminal, for the person logged in on the host.

It asks the running agent's ``/api/v1/drives`` when one answers, so it shows the same data
Prometheus and the ``/`` page see (with history-based projections and the drive's history);
otherwise it polls once by itself and says so. ``--simulate`` shows the demo host
(simulator/demo.py) with its seeded history.

Exit codes, the Nagios plugin convention (README.md, "Commands"), so it can run from cron or an
existing monitoring system:

* 0 OK: every drive was read and none is flagged (a drive to "watch" is OK: nothing alerts yet);
* 1 WARNING: a drive has a warning, or a drive could not be read while others could (its
  health is unknown, so the host is not "OK");
* 2 CRITICAL: a drive has a critical flag;
* 3 UNKNOWN: the health of no drive could be established (no drives found, or none could be
  read), the agent answered but not with the drives (401, a TLS failure, an error), ``--drive``
  named no drive, or the command could not run as asked (an unreadable credentials file).

Credentials for an agent behind basic auth and TLS (its ``--web-config``) never go on the
command line, where ``ps`` shows them: ``--basic-auth-file`` (one line, ``user:password``),
``--client-config`` (the fields of a Prometheus scrape config: ``basic_auth`` and
``tls_config``), ``--ca-file`` for an agent with a self-signed certificate, or the
environment (``SSDFLEET_BASIC_AUTH=user:password``). ``--url https://user:password@host:port``
works too, for a quick look.

Everything here works on the JSON form of :class:`agent.views.DriveView` (a dict), whether
it came over HTTP or from a local poll, so both paths print the same thing.

Width: on a terminal the table fits the terminal's width (``$COLUMNS`` wins when set), dropping
or shortening the less urgent columns first (see NARROWING) and keeping device, serial, life
left, wear-out date and the flag reason. Piped, it uses ``$COLUMNS`` when set and otherwise
no limit: a log, a cron mail or ``grep`` gets every column (``COLUMNS=80 ssdfleet status |
...`` to narrow it). Colours only on a terminal (``--color`` overrides).
"""

from __future__ import annotations

import argparse
import base64
import dataclasses
import http.client
import json
import os
import re
import socket
import ssl
import sys
import textwrap
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Callable, Dict, List, Optional, Tuple

import yaml

from agent import health, host_views
from agent.config import DEFAULT_PORT
from agent.health import CRITICAL, OK, WARNING, severity_rank
from agent.text import defang
from agent.views import (
    WATCH,
    counted,
    error_classes,
    flagged_first,
    human_bytes,
    human_duration,
    input_rows,
    percent,
    series_change,
    since_text,
    utc_date,
    utc_time,
)
from collectors.model import holds_text

UNKNOWN = "unknown"
UNKNOWN_EXIT = 3
DAY = 86400.0
# "user:password" for an agent behind basic auth (web config); the environment or a file
# (--basic-auth-file, --client-config) rather than a flag, so the password does not show in `ps`.
AUTH_ENV = "SSDFLEET_BASIC_AUTH"

_SGR = {OK: "32", WARNING: "33", CRITICAL: "1;31", UNKNOWN: "35", WATCH: "36", "bold": "1", "dim": "2"}
_EXIT = {OK: 0, WARNING: 1, CRITICAL: 2, UNKNOWN: UNKNOWN_EXIT}

Cell = Tuple[str, Optional[str]]  # text and an _SGR style name (None: plain)


def paint(text: str, style: Optional[str], color: bool) -> str:
    if not color or not style or not text:
        return text
    return f"\033[{_SGR[style]}m{text}\033[0m"


def _get(v: Any, name: str) -> Any:
    """A DriveView field from the API's dict or from the dataclass (``ssdfleet collect``)."""
    return v.get(name) if isinstance(v, dict) else getattr(v, name, None)


def _flags(v: Any, with_since: bool = False) -> List[Tuple[str, str]]:
    """(severity, reason) of each flag; ``with_since`` adds since when the agent has seen it."""
    out = []
    for f in _get(v, "flags") or []:
        if isinstance(f, dict):
            sev, reason, since = f["severity"], f["reason"], f.get("since")
        else:
            sev, reason, since = f.severity, f.reason, f.since
        if with_since and since is not None:
            reason = f"{reason} ({since_text(since, time.time())})"
        out.append((sev, reason))
    return out


def has_health_data(v: Any) -> bool:
    """Whether a health source (smartctl, shannon-status) ever answered for this drive; a
    drive known only from sysfs has none."""
    return _get(v, "data_age_seconds") is not None


def _life_style(ratio: Optional[float]) -> Optional[str]:
    severity = health.life_severity(ratio)
    return None if severity == OK else severity


def _cache_mismatch(v: Any) -> bool:
    state, expected = _get(v, "write_cache"), _get(v, "write_cache_expected")
    if state is None or expected is None:
        return False
    try:
        return bool(health.write_cache_mismatch(state, expected))
    except ValueError:
        return False


# -- table cells ---------------------------------------------------------------------
#
# Each column has a full form and, for some, a compact one for narrow terminals; the layout
# (format_table) picks forms and drops columns until the table fits, see NARROWING.

def _printable(text: str) -> str:
    """Text from a drive or a tool with every control character replaced: nothing a firmware
    string carries may drive the terminal."""
    return "".join(ch if ch.isprintable() else "?" for ch in text)


def _c_model(v: Any) -> Cell:
    model = _get(v, "model") or "-"
    # Model strings come from firmware: no control characters may reach the terminal. The
    # layout shortens long ones (MODEL_WIDTH) with an ellipsis.
    return "".join(ch if ch.isprintable() else "?" for ch in model), None


def _c_life(v: Any) -> Cell:
    ratio = _get(v, "life_left_ratio")
    return percent(ratio), _life_style(ratio)


def _wearout_style(v: Any) -> Optional[str]:
    """The severity of the drive's wear-out flag, if it has one (views.flags_for)."""
    sevs = [sev for sev, reason in _flags(v) if reason.startswith("projected wear-out")]
    return max(sevs, key=severity_rank) if sevs else None


def _c_wearout(v: Any) -> Cell:
    ts = _get(v, "wearout_timestamp")
    if ts is None:
        return "-", None
    return f"{utc_date(ts)} {_get(v, 'wearout_method_label') or _get(v, 'wearout_method')}", _wearout_style(v)


def _c_wearout_compact(v: Any) -> Cell:
    ts = _get(v, "wearout_timestamp")
    return ("-", None) if ts is None else (utc_date(ts), _wearout_style(v))


def _c_cache(v: Any) -> Cell:
    state = _get(v, "write_cache")
    if state is None:
        return "-", None
    if _cache_mismatch(v):
        return f"{state.upper()}, want {_get(v, 'write_cache_expected')}", CRITICAL
    return state, None


def _c_cache_compact(v: Any) -> Cell:
    state = _get(v, "write_cache")
    if state is not None and _cache_mismatch(v):
        return f"{state.upper()}!", CRITICAL
    return _c_cache(v)


def _hot(t: Dict[str, Any]) -> bool:
    return health.temperature_hot(t["sensor"], t["celsius"], t.get("limit_celsius"))


def _temperature_severity(temps: List[Dict[str, Any]]) -> Optional[str]:
    found = [s for s in (health.temperature_severity(t["sensor"], t["celsius"], t.get("limit_celsius"))
                         for t in temps) if s]
    return health.worst_severity(found) if found else None


def _telling_temperature(temps: List[Dict[str, Any]]) -> Dict[str, Any]:
    """The sensor to show when there is room for one: the closest to its limit when any has
    a limit, else the hottest."""
    limited = [t for t in temps if t.get("limit_celsius") is not None]
    if limited:
        return min(limited, key=lambda t: t["limit_celsius"] - t["celsius"])
    return max(temps, key=lambda t: t["celsius"])


def _c_temp(v: Any) -> Cell:
    temps = _get(v, "temperatures") or []
    if not temps:
        return "-", None
    t = _telling_temperature(temps)
    limit = f" (limit {t['limit_celsius']:.0f})" if t.get("limit_celsius") is not None else ""
    return f"{t['celsius']:.0f} C{limit}", _temperature_severity(temps)


def _c_temp_compact(v: Any) -> Cell:
    temps = _get(v, "temperatures") or []
    if not temps:
        return "-", None
    t = _telling_temperature(temps)
    severity = _temperature_severity(temps)
    return f"{t['celsius']:.0f}C" + ("!" if severity else ""), severity


def _c_bad(v: Any) -> Cell:
    """Bad blocks (the ratio and the blocks the drive retired), media errors and cable errors,
    each counted apart: a cable CRC error is not a bad block."""
    parts, style = [], None
    ratio = _get(v, "bad_block_ratio")
    if ratio is not None:
        parts.append(percent(ratio, 3))
    classes = error_classes(v)
    grown = sum(n for words, n in classes.get("reallocations", []) if words != "factory bad blocks")
    if grown:
        parts.append(f"{grown} realloc")
        style = WARNING
    media = sum(n for _, n in classes.get("media", []))
    if media:
        parts.append(f"{media} media err")
        style = WARNING
    link = sum(n for _, n in classes.get("link", []))
    if link:
        parts.append(f"{link} cable err")
    change = series_change(_get(v, "history") or [], "bad_block_ratio")
    if change is not None and change["change"] > 0:
        parts.append("rising")
        style = WARNING
    return (" ".join(parts) or "-"), style


def latency_text(v: Any) -> str:
    """The drive's sync-write latency in words: the sync-write probe's burst when it runs on
    this drive, else the mean write and cache-flush time from /proc/diskstats over the last
    minutes; "" when neither is known yet."""
    probe = _get(v, "syncwrite")
    if probe and probe.get("latency_median_seconds") is not None:
        p99 = probe.get("latency_p99_seconds")
        return (f"{probe['method']} of 8 kB in {probe['directory']}: median {_ms(probe['latency_median_seconds'])}"
                + (f", p99 {_ms(p99)}" if p99 is not None else ""))
    write, flush = _get(v, "write_latency_seconds"), _get(v, "flush_latency_seconds")
    parts = []
    if write is not None:
        parts.append(f"{_ms(write)} per write")
    if flush is not None:
        parts.append(f"{_ms(flush)} per flush")
    if not parts:
        return ""
    window = _get(v, "latency_window_seconds")
    return ", ".join(parts) + (f" (mean over the last {human_duration(window)})" if window else "")


def _ms(seconds: float) -> str:
    """0.068 ms, 1.9 ms, 12 ms: two significant figures, in milliseconds."""
    ms = seconds * 1000.0
    return f"{ms:.2g} ms" if ms < 10 else f"{ms:.0f} ms"


def _c_written(v: Any) -> Cell:
    return human_bytes(_get(v, "host_written_bytes")), None


def _c_writes(v: Any) -> Cell:
    rate = _get(v, "write_rate_bytes_per_second")
    return ("-" if rate is None else human_bytes(rate * DAY)), None


def _c_age(v: Any) -> Cell:
    age = _get(v, "data_age_seconds")
    if age is None:
        return "none", UNKNOWN
    return human_duration(age).replace(" ", ""), (WARNING if health.data_stale(age, _get(v, "power_state")) else None)


def _c_health(v: Any) -> Cell:
    flags = _flags(v)
    sev = _get(v, "severity") or OK
    if not has_health_data(v):
        return "UNKNOWN: no health data", UNKNOWN
    if not flags:
        watch = _get(v, "watch") or []
        if watch:
            more = f" (+{len(watch) - 1})" if len(watch) > 1 else ""
            return f"OK, WATCH: {watch[0]}{more}", WATCH
        return sev.upper(), sev
    more = f" (+{len(flags) - 1})" if len(flags) > 1 else ""
    return f"{sev.upper()}: {flags[0][1]}{more}", sev


@dataclasses.dataclass(frozen=True)
class Column:
    header: str
    cell: Callable[[Any], Cell]
    compact: Optional[Callable[[Any], Cell]] = None  # the narrow form (None: same as cell)
    max_width: Optional[int] = None  # longer text is cut with an ellipsis
    compact_max_width: Optional[int] = None


MODEL_WIDTH = 28
MODEL_COMPACT_WIDTH = 16
# The flag reason (last column) keeps at least this much room before it is cut; every
# reason is also printed in full, wrapped, under "why flagged:".
HEALTH_MIN_WIDTH = 32
GAP = "  "

COLUMNS: Tuple[Column, ...] = (
    Column("DEVICE", lambda v: (str(_get(v, "device")), "bold")),
    Column("KIND", lambda v: (str(_get(v, "kind")), None)),
    Column("MODEL", _c_model, max_width=MODEL_WIDTH, compact_max_width=MODEL_COMPACT_WIDTH),
    Column("SERIAL", lambda v: (str(_get(v, "serial")), None)),
    Column("LIFE", _c_life),
    Column("WEAR-OUT", _c_wearout, _c_wearout_compact),
    Column("CACHE", _c_cache, _c_cache_compact),
    Column("TEMP", _c_temp, _c_temp_compact),
    Column("ERRORS", _c_bad),
    Column("WRITTEN", _c_written),
    Column("WRITES/DAY", _c_writes),
    Column("AGE", _c_age),
    Column("HEALTH", _c_health),
)

# How the table gives way when the terminal is narrower than the full table, first step
# first, until it fits with at least HEALTH_MIN_WIDTH left for the reason. Columns that are
# "-" on every drive go before these steps. KEPT ("which drive, how bad, since when") always
# stays; everything dropped is in `ssdfleet status --drive SERIAL`.
KEPT = ("DEVICE", "SERIAL", "LIFE", "WEAR-OUT", "HEALTH")
NARROWING: Tuple[Tuple[str, str], ...] = (
    ("MODEL", "compact"),
    ("TEMP", "compact"),
    ("KIND", "drop"),
    ("WRITTEN", "drop"),
    ("CACHE", "compact"),
    ("WEAR-OUT", "compact"),
    ("AGE", "drop"),  # a stale drive is flagged, so HEALTH says so anyway
    ("MODEL", "drop"),
    ("WRITES/DAY", "drop"),
    ("TEMP", "drop"),
    ("ERRORS", "drop"),
    ("CACHE", "drop"),
)


def ellipsis_for(stream: Any) -> str:
    """"…" where the output encoding has it, "..." elsewhere (a C locale, an old cron)."""
    try:
        "\u2026".encode(getattr(stream, "encoding", None) or "ascii")
        return "\u2026"
    except (UnicodeEncodeError, LookupError):
        return "..."


def clip(text: str, width: int, ellipsis: str = "\u2026") -> str:
    """``text`` cut to ``width`` characters, the cut marked with ``ellipsis``."""
    if len(text) <= width:
        return text
    if width <= len(ellipsis):
        return text[:max(width, 0)]
    return text[:width - len(ellipsis)] + ellipsis


def table_width(stream: Any = None, environ: Optional[Dict[str, str]] = None) -> Optional[int]:
    """How wide the table may be: the terminal's width when ``stream`` is a terminal (where
    $COLUMNS, when set, wins as usual); when piped, $COLUMNS if set, else no limit (None), so
    a log, a mail from cron or `| grep` keeps every column (`| less -S` scrolls sideways)."""
    stream = sys.stdout if stream is None else stream
    environ = os.environ if environ is None else environ
    env = (environ.get("COLUMNS") or "").strip()
    if re.fullmatch(r"[0-9]{1,5}", env) and int(env) > 0:  # ASCII digits only: "²".isdigit()
        return int(env)
    try:
        if stream.isatty():
            return os.get_terminal_size(stream.fileno()).columns or None
    except (AttributeError, ValueError, OSError):
        pass
    return None


def _render(views: List[Any], forms: Dict[str, str], ellipsis: str) -> Tuple[List[Column], List[List[Cell]], List[int]]:
    cols = [c for c in COLUMNS if forms[c.header] != "drop"]
    rows = []
    for v in views:
        row = []
        for c in cols:
            compact = forms[c.header] == "compact"
            text, style = (c.compact if compact and c.compact else c.cell)(v)
            limit = c.compact_max_width if compact and c.compact_max_width else c.max_width
            row.append((clip(text, limit, ellipsis) if limit else text, style))
        rows.append(row)
    widths = [max([len(c.header)] + [len(r[i][0]) for r in rows]) for i, c in enumerate(cols)]
    return cols, rows, widths


def format_table(views: List[Any], color: bool = False, width: Optional[int] = None,
                 ellipsis: Optional[str] = None) -> str:
    """One line per drive, flagged drives first; colours only when ``color``. With ``width``,
    every line fits in that many columns (see NARROWING) as long as the columns that always
    stay fit with a few characters of the reason; ``None`` is no limit."""
    ellipsis = ellipsis_for(sys.stdout) if ellipsis is None else ellipsis
    views = flagged_first(views)
    forms = {c.header: "full" for c in COLUMNS}
    cols, rows, widths = _render(views, forms, ellipsis)

    def needed(health_cap: int) -> int:
        fixed = sum(widths[:-1]) + len(GAP) * (len(widths) - 1)
        return fixed + min(widths[-1], health_cap)

    if width is not None:
        # under pressure, a column with nothing to say on any drive goes first
        empty = [c.header for i, c in enumerate(cols)
                 if c.header not in KEPT and rows and all(r[i][0] == "-" for r in rows)]
        for header, form in [(h, "drop") for h in empty] + list(NARROWING):
            if needed(HEALTH_MIN_WIDTH) <= width:
                break
            forms[header] = form
            cols, rows, widths = _render(views, forms, ellipsis)
        room = width - (needed(0))
        if widths[-1] > room:
            widths[-1] = max(room, len(cols[-1].header))
            rows = [r[:-1] + [(clip(r[-1][0], widths[-1], ellipsis), r[-1][1])] for r in rows]
    # pad before painting: escape codes have no width on screen
    lines = [GAP.join(paint(c.header.ljust(w), "dim", color) for c, w in zip(cols, widths)).rstrip()]
    for row in rows:
        cells = [paint(text.ljust(w), style, color) for (text, style), w in zip(row[:-1], widths)]
        cells.append(paint(row[-1][0], row[-1][1], color))  # last column unpadded: no trailing blanks
        lines.append(GAP.join(cells).rstrip())
    if not views:
        lines.append("(no drives found)")
    return "\n".join(lines) + "\n"


def _wrap(text: str, width: Optional[int], indent: int) -> List[str]:
    """``text`` (which starts at column 0) folded to ``width`` with continuation lines
    indented by ``indent``; one line when ``width`` is None."""
    if width is None or len(text) <= width:
        return [text]
    return textwrap.wrap(text, width=max(width, indent + 20), subsequent_indent=" " * indent,
                         break_long_words=True, break_on_hyphens=False) or [text]


def format_reasons(views: List[Any], color: bool = False, width: Optional[int] = None) -> str:
    """Every flag of every flagged drive (the table shows only the first), each in full,
    folded to ``width``."""
    lines = []
    for v in flagged_first(views):
        for sev, reason in _flags(v, with_since=True):
            label = sev.upper().ljust(8)
            folded = _wrap(f"  {label}  {_get(v, 'device')}: {reason}", width, 12)
            folded[0] = folded[0].replace(label, paint(label, sev, color), 1)
            lines += folded
    return ("why flagged:\n" + "\n".join(lines) + "\n") if lines else ""


def format_host(data: Dict[str, Any], width: Optional[int] = None) -> str:
    """Each host source's block (the sync-write probe's latest burst per directory, a RAID
    controller's volumes...), under its heading, as its own view words it; "" when none has
    anything to say."""
    out = []
    for heading, texts in host_views.status_blocks(data):
        out.append(heading)
        out += [folded for text in texts for folded in _wrap(f"  {text}", width, 4)]
    return "\n".join(out) + "\n" if out else ""


def format_holds(views: List[Any], width: Optional[int] = None) -> str:
    """Issue 15: one line per drive that holds something: ``  sdb  holds: /var/lib/postgresql (md0, ext4)``."""
    lines = [folded for v in views if v.get("holds")
             for folded in _wrap(f"  {_get(v, 'device')}  holds: {holds_text(v['holds'])}", width, 4)]
    return ("what the drives hold:\n" + "\n".join(lines) + "\n") if lines else ""


# -- one drive in detail -------------------------------------------------------------

LABEL_WIDTH = 13
INPUT_INDENT = 16


def _history_rows(points: List[Dict[str, Any]], limit: int = 16) -> List[Dict[str, Any]]:
    """At most ``limit`` points spread over the history, always with the newest."""
    if len(points) <= limit:
        return points
    step = (len(points) - 1) / (limit - 1)
    return [points[round(i * step)] for i in range(limit)]


def _verdict(ts: Optional[float], now: float) -> str:
    if ts is None:
        return "no date"
    return f"{utc_date(ts)} (in {human_duration(ts - now)})" if ts > now else f"{utc_date(ts)} (now)"


def projection_lines(v: Dict[str, Any], now: float) -> List[Tuple[str, str, List[Tuple[str, str]]]]:
    """Every wear-out method as ``(mark, "method  verdict: note", [(what, value), ...])``,
    in order of preference; ``mark`` is "*" for the method whose date the drive shows. Methods
    and inputs are in words (views.method_label, views.input_rows), in the order the method
    used them, ending with the host writes it found still to go; /api/v1/drives has the same
    figures under their keys."""
    out = []
    for p in v.get("projections") or []:
        chosen = p["method"] == v.get("wearout_method") and v.get("wearout_timestamp") is not None
        # a method without a date says why; a dated one shows its sums below (the rating says
        # where it is from)
        shown = p.get("note") and (p.get("wearout_timestamp") is None or p["method"] == "rated")
        note = f": {p['note']}" if shown else ""
        label = p.get("label") or p["method"]
        out.append(("*" if chosen else " ", f"{label}: {_verdict(p.get('wearout_timestamp'), now)}{note}",
                    input_rows(p)))
    return out


def format_drive(v: Dict[str, Any], color: bool = False, now: Optional[float] = None,
                 width: Optional[int] = None) -> str:
    """Everything about one drive: why it is flagged, the wear-out arithmetic of all three
    methods, history; long lines folded to ``width`` (None: no limit)."""
    now = time.time() if now is None else now
    sev = v.get("severity") or OK
    out: List[str] = []

    def line(label: str, text: str, paint_word: str = "", style: Optional[str] = None) -> None:
        """A labelled line, folded; ``paint_word`` (in the first line) gets ``style``."""
        folded = _wrap(f"{label:<{LABEL_WIDTH}}{text}", width, LABEL_WIDTH)
        if paint_word:
            folded[0] = folded[0][:LABEL_WIDTH] + folded[0][LABEL_WIDTH:].replace(
                paint_word, paint(paint_word, style, color), 1)
        out.extend(folded)

    head = f"{v.get('device')}  {_c_model(v)[0]}  serial {v.get('serial')}  ({v.get('kind')}"
    head += f", firmware {v['firmware']})" if v.get("firmware") else ")"
    out.extend(paint(part, "bold", color) for part in _wrap(head, width, 2))
    status = "UNKNOWN: no health data" if not has_health_data(v) else sev.upper()
    line("status", status, status, sev if has_health_data(v) else UNKNOWN)
    for fsev, reason in _flags(v, with_since=True):
        label = fsev.upper().ljust(8)
        folded = _wrap(f"  {label}   {reason}", width, 13)
        folded[0] = folded[0].replace(label, paint(label, fsev, color), 1)
        out.extend(folded)
    for reason in v.get("watch") or []:
        folded = _wrap(f"  {'WATCH'.ljust(8)}   {reason}", width, 13)
        folded[0] = folded[0].replace("WATCH", paint("WATCH", WATCH, color), 1)
        out.extend(folded)
    if v.get("holds"):
        line("holds", holds_text(v["holds"]))  # issue 15: what lives on the drive
    life = v.get("life_left_ratio")
    source = f"  ({v['life_left_source']})" if v.get("life_left_source") else ""
    line("life left", percent(life) + source, percent(life), _life_style(life))
    if v.get("spare_left_ratio") is not None:
        thr = v.get("spare_threshold_ratio")
        line("spare", percent(v["spare_left_ratio"]) + (f" (threshold {percent(thr)})" if thr is not None else ""))

    ts = v.get("wearout_timestamp")
    if ts is not None:
        label = v.get("wearout_method_label") or v.get("wearout_method")
        line("wear-out", f"{_verdict(ts, now)}, {label} (marked *)")
    elif v.get("projections"):
        line("wear-out", "no date: no method could project one yet (why, below)")
    else:
        line("wear-out", "no date")
    for mark, text, inputs in projection_lines(v, now):
        out.extend(_wrap(f"  {mark} {text}", width, 14))
        for name, value in inputs:
            out.append(f"{'':<{INPUT_INDENT}}{name + ':':<34}{value}")
        if not inputs:
            out.append(f"{'':<{INPUT_INDENT}}(no inputs)")
    rate = v.get("write_rate_bytes_per_second")
    line("host writes", f"{human_bytes(v.get('host_written_bytes'))} written in total; "
         + (f"{human_bytes(rate * DAY)}/day" if rate is not None else "no rate yet (needs an hour of history)"))
    if v.get("nand_written_bytes") is not None:
        wa = v.get("write_amplification")
        line("NAND writes", human_bytes(v["nand_written_bytes"]) + (f" (write amplification {wa:.2f})" if wa else ""))
    if v.get("rated_endurance_bytes") is not None:
        line("rated", human_bytes(v["rated_endurance_bytes"]) + " of host writes")

    cache = v.get("write_cache") or "unknown"
    sources = ", ".join(f"{s['source']}: {s['state']}" for s in v.get("write_cache_sources") or [])
    line("write cache", f"{cache} (expected {v.get('write_cache_expected') or 'any'})"
         + (f"; {sources}" if sources else ""), cache, CRITICAL if _cache_mismatch(v) else None)
    latency = latency_text(v)
    if latency:
        line("sync writes", latency)
    for t in v.get("temperatures") or []:
        extra = []
        if t.get("limit_celsius") is not None:
            extra.append(f"limit {t['limit_celsius']:.0f}")
        if t.get("max_celsius") is not None:
            extra.append(f"max seen {t['max_celsius']:.0f}")
        reading = f"{t['celsius']:.0f} C"
        line("temperature", f"{t['sensor']} {reading}" + (f" ({', '.join(extra)})" if extra else ""),
             reading, WARNING if _hot(t) else None)
    classes = error_classes(v)
    bad = [f"{percent(v['bad_block_ratio'], 3)} of blocks"] if v.get("bad_block_ratio") is not None else []
    bad += [counted(n, words) for words, n in classes.get("reallocations", [])]
    line("bad blocks", ", ".join(bad) or "-")
    line("media errors", ", ".join(counted(n, words) for words, n in classes.get("media", [])) or "-")
    if classes.get("link"):
        line("cable errors", ", ".join(counted(n, words) for words, n in classes["link"])
             + " (the link to the drive, not the flash)")
    # Where each figure came from, or why the agent gives none (collectors/smartctl/ata.py).
    for index, row in enumerate(v.get("evidence") or []):
        text = (f"{row['label']} from {row['source']}" if row.get("state") == "given"
                else f"{row['label']} WITHHELD: {row.get('reason', '')}")
        if row.get("set_aside"):
            text += f" (set aside: {row['set_aside']})"
        line("evidence" if index == 0 else "", _printable(text))
    age = v.get("data_age_seconds")
    polls = ", ".join(f"{k} {utc_time(t)}" for k, t in sorted((v.get("last_poll") or {}).items()))
    line("data age", (human_duration(age) if age is not None else "no health data") + (f" ({polls})" if polls else ""))

    points = v.get("history")
    if points is None:
        line("history", "not available (a one-off local poll keeps none; the agent's API gives it)")
    elif not points:
        line("history", "no samples of this drive yet")
    else:
        if len(points) == 1:
            line("history", f"1 sample, at {utc_time(points[0]['ts'])}: no trend yet")
        else:
            line("history", f"{len(points)} samples from {utc_time(points[0]['ts'])} to {utc_time(points[-1]['ts'])}")
        for name, label, fmt in (("life_left_ratio", "life left", percent),
                                 ("bad_block_ratio", "bad blocks", lambda r: percent(r, 4))):
            change = series_change(points, name)
            if change is not None:
                out.append(f"  {label}: {fmt(change['first'])} -> {fmt(change['last'])} "
                           f"over {human_duration(change['last_ts'] - change['first_ts'])}")
        out.append(f"  {'TIME (UTC)':<17}  {'LIFE':>6}  {'WRITTEN':>9}  {'WRITES/DAY':>10}  BAD-BLOCKS")
        prev = None
        for p in _history_rows(points):
            # the rate since the row above, so it agrees with the WRITTEN column
            r = None
            if (prev is not None and p.get("host_written_bytes") is not None
                    and prev.get("host_written_bytes") is not None and p["ts"] > prev["ts"]
                    and p["host_written_bytes"] >= prev["host_written_bytes"]):
                r = (p["host_written_bytes"] - prev["host_written_bytes"]) / (p["ts"] - prev["ts"])
            prev = p
            out.append(f"  {time.strftime('%Y-%m-%d %H:%M', time.gmtime(p['ts'])):<17}  "
                       f"{percent(p.get('life_left_ratio')):>6}  {human_bytes(p.get('host_written_bytes')):>9}  "
                       f"{(human_bytes(r * DAY) if r is not None else '-'):>10}  "
                       f"{percent(p.get('bad_block_ratio'), 4)}")
    return "\n".join(out) + "\n"


# -- getting the data ----------------------------------------------------------------

class AgentRefused(Exception):
    """An agent answers at the URL but not with the drives (401, a TLS failure, an error):
    polling locally instead would hide that, so status says so and exits UNKNOWN."""


class ClientConfigError(ValueError):
    """The credentials or TLS settings given to ``status`` cannot be used (exit UNKNOWN)."""


@dataclasses.dataclass
class Client:
    """How ``status`` talks to the agent: basic auth and the TLS settings of a Prometheus
    scrape config (``tls_config``), which are what the agent's web config asks of a client."""

    username: Optional[str] = None
    password: Optional[str] = None
    ca_file: Optional[str] = None
    cert_file: Optional[str] = None
    key_file: Optional[str] = None
    server_name: Optional[str] = None
    insecure_skip_verify: bool = False

    def authorization(self) -> Optional[str]:
        if self.username is None:
            return None
        pair = f"{self.username}:{self.password or ''}"
        return "Basic " + base64.b64encode(pair.encode("utf-8")).decode("ascii")

    def ssl_context(self) -> ssl.SSLContext:
        try:
            context = ssl.create_default_context(cafile=self.ca_file)
        except (OSError, ssl.SSLError) as exc:
            raise ClientConfigError(f"TLS settings: CA file {self.ca_file}: {getattr(exc, 'strerror', None) or exc}") from None
        if self.cert_file:
            try:
                context.load_cert_chain(self.cert_file, self.key_file)
            except (OSError, ssl.SSLError) as exc:
                raise ClientConfigError(f"TLS settings: client certificate {self.cert_file}: "
                                        f"{getattr(exc, 'strerror', None) or exc}") from None
        if self.insecure_skip_verify:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        return context


def add_client_arguments(p: argparse.ArgumentParser) -> None:
    """The options that reach an agent behind basic auth and TLS (its --web-config)."""
    p.add_argument("--basic-auth-file", metavar="FILE",
                   help="read USER:PASSWORD for the agent's basic auth from FILE (first line)")
    p.add_argument("--client-config", metavar="FILE",
                   help="YAML with basic_auth (username, password or password_file) and tls_config "
                        "(ca_file, cert_file, key_file, server_name, insecure_skip_verify), as in a "
                        "Prometheus scrape config")
    p.add_argument("--ca-file", metavar="FILE", help="CA certificate(s) to verify an https agent with")


def _read_secret(path: str, what: str) -> str:
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.readline()
    except (OSError, UnicodeDecodeError) as exc:
        raise ClientConfigError(f"{what} {path}: {exc}") from None
    return text.rstrip("\r\n")


def _user_password(pair: str, where: str) -> Tuple[str, str]:
    if ":" not in pair:
        raise ClientConfigError(f"{where}: expected USER:PASSWORD")
    user, password = pair.split(":", 1)
    return user, password


def _load_client_config(path: str) -> Client:
    """A YAML file with the client half of a Prometheus scrape config: ``basic_auth``
    (``username`` and ``password`` or ``password_file``) and ``tls_config`` (``ca_file``,
    ``cert_file``, ``key_file``, ``server_name``, ``insecure_skip_verify``); relative paths are
    read from the file's directory. Any other key is refused, so a typo is not ignored."""
    try:
        with open(path, encoding="utf-8") as fh:
            doc = yaml.safe_load(fh) or {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ClientConfigError(f"--client-config {path}: {exc}") from None
    if not isinstance(doc, dict):
        raise ClientConfigError(f"--client-config {path}: expected a mapping")
    base = os.path.dirname(os.path.abspath(path))

    def section(name: str, keys: Tuple[str, ...]) -> Dict[str, Any]:
        value = doc.get(name) or {}
        if not isinstance(value, dict):
            raise ClientConfigError(f"--client-config {path}: {name} must be a mapping")
        unknown = sorted(set(value) - set(keys))
        if unknown:
            raise ClientConfigError(f"--client-config {path}: unknown key {name}.{unknown[0]}")
        return value

    unknown = sorted(set(doc) - {"basic_auth", "tls_config"})
    if unknown:
        raise ClientConfigError(f"--client-config {path}: unknown key {unknown[0]}")
    auth = section("basic_auth", ("username", "password", "password_file"))
    tls = section("tls_config", ("ca_file", "cert_file", "key_file", "server_name", "insecure_skip_verify"))

    def where(key: str) -> Optional[str]:
        value = tls.get(key)
        return None if value is None else os.path.join(base, str(value))

    client = Client(ca_file=where("ca_file"), cert_file=where("cert_file"), key_file=where("key_file"),
                    server_name=tls.get("server_name"), insecure_skip_verify=bool(tls.get("insecure_skip_verify")))
    if auth:
        if "password" in auth and "password_file" in auth:
            raise ClientConfigError(f"--client-config {path}: basic_auth has both password and password_file")
        client.username = str(auth.get("username") or "")
        if "password_file" in auth:
            client.password = _read_secret(os.path.join(base, str(auth["password_file"])), "password_file")
        else:
            client.password = str(auth.get("password") or "")
    return client


def client_from_args(args: Any, url: str, environ: Optional[Dict[str, str]] = None) -> Tuple[Client, str]:
    """The client settings and the URL to ask (without any user:password it carried). The
    credentials come from one place, checked in this order: the URL, --basic-auth-file,
    --client-config, $SSDFLEET_BASIC_AUTH; two explicit ones are refused as ambiguous."""
    environ = os.environ if environ is None else environ
    client = _load_client_config(args.client_config) if getattr(args, "client_config", None) else Client()
    given = ["--client-config"] if client.username is not None else []
    parts = urllib.parse.urlsplit(url)
    if parts.username is not None:
        client.username = urllib.parse.unquote(parts.username)
        client.password = urllib.parse.unquote(parts.password or "")
        given.append("--url")
        host = parts.hostname or ""
        netloc = (f"[{host}]" if ":" in host else host) + (f":{parts.port}" if parts.port else "")
        url = urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
    if getattr(args, "basic_auth_file", None):
        client.username, client.password = _user_password(
            _read_secret(args.basic_auth_file, "--basic-auth-file"), f"--basic-auth-file {args.basic_auth_file}")
        given.append("--basic-auth-file")
    if len(given) > 1:
        raise ClientConfigError(f"credentials given twice ({' and '.join(given)}): give one")
    if not given and environ.get(AUTH_ENV):
        client.username, client.password = _user_password(environ[AUTH_ENV], f"${AUTH_ENV}")
    if getattr(args, "ca_file", None):
        client.ca_file = args.ca_file
    return client, url


class _HTTPSConnection(http.client.HTTPSConnection):
    """An HTTPS connection that checks the certificate against ``server_name`` rather than the
    host in the URL (tls_config.server_name: an agent reached by address, its certificate
    issued to its name)."""

    server_name: Optional[str] = None

    def connect(self) -> None:
        sock = socket.create_connection((self.host, self.port), self.timeout, self.source_address)
        self.sock = self._context.wrap_socket(sock, server_hostname=self.server_name or self.host)


class _HTTPSHandler(urllib.request.HTTPSHandler):
    def __init__(self, context: ssl.SSLContext, server_name: Optional[str]) -> None:
        super().__init__(context=context)
        self._tls_context = context
        self._server_name = server_name

    def https_open(self, req: urllib.request.Request):  # noqa: ANN201 - urllib's own signature
        def connection(host: str, **kwargs: Any) -> _HTTPSConnection:
            conn = _HTTPSConnection(host, context=self._tls_context, timeout=kwargs.get("timeout"))
            conn.server_name = self._server_name
            return conn

        return self.do_open(connection, req)


def fetch(url: str, timeout: float = 2.0, client: Optional[Client] = None) -> Tuple[Optional[Dict[str, Any]], str]:
    """The running agent's /api/v1/drives, or None and why not when no agent listens there.
    Raises :class:`AgentRefused` when something answers but not with the drives."""
    client = client or Client()
    req = urllib.request.Request(url.rstrip("/") + "/api/v1/drives")
    auth = client.authorization()
    if auth:
        req.add_header("Authorization", auth)
    handlers = []
    if url.lower().startswith("https:"):
        handlers.append(_HTTPSHandler(client.ssl_context(), client.server_name))
    opener = urllib.request.build_opener(*handlers)
    try:
        with opener.open(req, timeout=timeout) as resp:  # noqa: S310 - the agent's URL
            return json.loads(resp.read().decode("utf-8")), ""
    except urllib.error.HTTPError as exc:
        hint = ""
        if exc.code == 401:
            hint = (" (wrong user or password)" if auth else
                    " (it wants a user and password: --basic-auth-file FILE or --client-config FILE)")
        raise AgentRefused(f"the agent at {url} answered HTTP {exc.code}{hint}") from None
    except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
        reason = getattr(exc, "reason", exc)
        if isinstance(reason, (ConnectionRefusedError, FileNotFoundError)):
            return None, str(reason)  # nobody listens: poll here
        hint = ""
        if isinstance(reason, ssl.SSLCertVerificationError):
            hint = " (--ca-file FILE names the CA that signed the agent's certificate)"
        elif isinstance(reason, (ssl.SSLError, http.client.BadStatusLine, ConnectionResetError)) \
                and url.lower().startswith("http:"):
            hint = " (does it serve https?)"
        raise AgentRefused(f"cannot read the agent at {url}: {reason}{hint}") from None
    except ValueError as exc:
        raise AgentRefused(f"the agent at {url} did not answer JSON: {exc}") from None


def local_poll(config, keep_history: bool = False) -> Dict[str, Any]:
    """Poll once here. Without ``keep_history`` the agent's history file is not touched (and
    no drive has a rate or a date); with it (a simulated host, whose history was seeded) the
    poll reads and adds to the history, and the views carry it as the agent's API would."""
    from agent.poller import Poller
    from agent.views import ViewState, snapshot_views, worst

    config = config.model_copy(update={"history": keep_history})
    poller = Poller(config)
    try:
        snap = poller.poll_once()
        state = None
        if keep_history:
            state = ViewState(poller.history)
            state.update(snap)
        views = snapshot_views(snap, time.time(), state=state)
    finally:
        poller.stop()
    return {
        "severity": worst(views),
        "drives": [dataclasses.asdict(v) for v in views],
        "collectors": [dataclasses.asdict(c) for c in snap.collectors],
        "problems": list(snap.problems),
        "host": host_views.api(snap),
    }


def overall(drives: List[Dict[str, Any]]) -> str:
    """Worst severity of all drives (a drive without health data is a warning); unknown when
    no drive could be read at all."""
    if not any(has_health_data(d) for d in drives):
        return UNKNOWN
    return health.worst_severity(d.get("severity") or OK for d in drives)


def _agent_url(args, config) -> str:
    if args.url:
        return args.url
    host, port = config.listen_host_port() if config.listen_address else ("127.0.0.1", DEFAULT_PORT)
    if host in ("0.0.0.0", "::", ""):
        host = "127.0.0.1"
    if ":" in host:
        host = f"[{host}]"
    return f"{'https' if _serves_tls(config) else 'http'}://{host}:{port}"


def _serves_tls(config) -> bool:
    """Whether the agent's configuration gives it a web config with a certificate (then it
    serves https only). Read leniently: the agent validates the file, status only looks."""
    path = getattr(config, "web_config_file", None)
    if not path:
        return False
    try:
        with open(path, encoding="utf-8") as fh:
            doc = yaml.safe_load(fh) or {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return False
    tls = doc.get("tls_server_config") if isinstance(doc, dict) else None
    return isinstance(tls, dict) and bool(tls.get("cert_file") or tls.get("cert"))


def _matches(d: Dict[str, Any], wanted: str) -> bool:
    name = wanted[5:] if wanted.startswith("/dev/") else wanted
    return wanted in (d.get("serial"), d.get("device")) or name == d.get("device")


def _footer(data: Dict[str, Any], drives: List[Dict[str, Any]], severity: str, color: bool,
            width: Optional[int] = None) -> str:
    notes = [f"source: {data['source']}"]
    for c in data.get("collectors") or []:
        if not c.get("success"):
            notes.append(f"collector {c['name']} failing: {c.get('error') or 'see the agent log'}")
    notes += [f"problem: {p}" for p in data.get("problems") or []]
    lines = [folded for note in notes for folded in _wrap(note, width, 4)]
    read = [d for d in drives if has_health_data(d)]
    counts = {CRITICAL: sum(1 for d in read if d.get("severity") == CRITICAL),
              WARNING: sum(1 for d in read if d.get("severity") == WARNING),
              WATCH: sum(1 for d in read if (d.get("severity") or OK) == OK and d.get("watch")),
              OK: sum(1 for d in read if (d.get("severity") or OK) == OK and not d.get("watch"))}
    unread = len(drives) - len(read)
    parts = [f"{n} to watch" if s == WATCH else f"{n} {s}" for s, n in counts.items() if n]
    if unread:
        parts.append(f"{unread} without health data")
    text = f"{severity.upper()}: " + (", ".join(parts) if parts else "no drives could be read")
    lines.append(paint(text, severity, color))
    return "\n".join(lines) + "\n"


def main(args, make_config) -> int:
    config = make_config(args)
    simulated = bool(getattr(args, "simulate", None))
    local = args.local or simulated
    try:
        client, url = client_from_args(args, _agent_url(args, config))
    except ClientConfigError as exc:
        sys.stderr.write(f"ssdfleet status: {exc}\n")
        return UNKNOWN_EXIT
    color = args.color == "always" or (args.color == "auto" and sys.stdout.isatty())
    first = True
    while True:
        try:
            data, why = (None, "--local") if local else fetch(url, client=client)
        except ClientConfigError as exc:
            sys.stderr.write(f"ssdfleet status: {exc}\n")
            return UNKNOWN_EXIT
        except AgentRefused as exc:
            sys.stderr.write(f"ssdfleet status: {exc}; not polling locally behind a running agent "
                             "(--local does)\n")
            return UNKNOWN_EXIT
        if data is not None:
            data["source"] = f"agent at {url}"
        else:
            data = local_poll(config, keep_history=simulated)
            if simulated:
                data["source"] = "one poll of the simulated host (--simulate), with its seeded history"
            elif args.local:
                data["source"] = "one poll by this command (--local)"
            else:
                data["source"] = f"one poll by this command (no agent answered at {url}: {why})"
        if not args.json:
            data = defang(data)  # JSON escapes control characters itself
        drives = data.get("drives") or []
        if args.drive:
            drives = [d for d in drives if _matches(d, args.drive)]
            if not drives:
                sys.stderr.write(f"ssdfleet: no drive {args.drive!r} on this host\n")
                return UNKNOWN_EXIT
        severity = overall(drives)
        code = _EXIT[severity]
        try:
            if args.json:
                json.dump({**data, "drives": drives, "severity": severity, "exit_code": code},
                          sys.stdout, indent=2, default=str)
                sys.stdout.write("\n")
            else:
                if args.watch:
                    # a terminal is redrawn in place; a pipe or log gets one block per round
                    sys.stdout.write("\033[H\033[2J" if sys.stdout.isatty() else ("" if first else "\n"))
                    sys.stdout.write(f"{utc_time(time.time())}, every {args.watch:g} s (Ctrl-C stops)\n")
                width = table_width(sys.stdout)  # each round: a terminal may have been resized
                if args.drive:
                    sys.stdout.write("\n".join(format_drive(d, color=color, width=width) for d in drives))
                else:
                    sys.stdout.write(format_table(drives, color=color, width=width, ellipsis=ellipsis_for(sys.stdout)))
                    sys.stdout.write(format_reasons(drives, color=color, width=width))
                    sys.stdout.write(format_holds(drives, width=width))
                    sys.stdout.write(format_host(data, width=width))
                sys.stdout.write(_footer(data, drives, severity, color, width))
            sys.stdout.flush()
        except BrokenPipeError:
            # `ssdfleet status | head`: the reader has gone. No traceback, and the exit code
            # still says how the drives are; the dup2 keeps the final flush at exit quiet.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return code
        first = False
        if not args.watch:
            return code
        time.sleep(max(0.2, args.watch))
