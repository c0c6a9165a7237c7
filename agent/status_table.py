"""``ssdfleet status``'s table: one line per drive, flagged drives first, fitted to the
terminal (see NARROWING), and the blocks under it (every flag's reason, what the drives hold,
the host sources' sections). Pure functions of the JSON form of :class:`agent.views.DriveView`
(a dict, from the agent's API or a local poll) or of the dataclass itself: no I/O besides
asking the output stream how wide it is (agent/status.py runs the command)."""

from __future__ import annotations

import dataclasses
import os
import re
import sys
import textwrap
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

from agent import health, host_views
from agent.health import CRITICAL, OK, WARNING, severity_rank
from agent.views import (
    WATCH,
    controller_places,
    controller_text,
    error_classes,
    flagged_first,
    human_bytes,
    human_duration,
    percent,
    series_change,
    since_text,
    utc_date,
)
from collectors.model import holds_text

UNKNOWN = "unknown"
UNKNOWN_EXIT = 3
DAY = 86400.0

_SGR = {OK: "32", WARNING: "33", CRITICAL: "1;31", UNKNOWN: "35", WATCH: "36", "bold": "1", "dim": "2"}
EXIT_CODES = {OK: 0, WARNING: 1, CRITICAL: 2, UNKNOWN: UNKNOWN_EXIT}

Cell = Tuple[str, Optional[str]]  # text and an _SGR style name (None: plain)


def paint(text: str, style: Optional[str], color: bool) -> str:
    if not color or not style or not text:
        return text
    return f"\033[{_SGR[style]}m{text}\033[0m"


def _get(v: Any, name: str) -> Any:
    """A DriveView field from the API's dict or from the dataclass (``ssdfleet collect``)."""
    return v.get(name) if isinstance(v, dict) else getattr(v, name, None)


def flag_reasons(v: Any, with_since: bool = False) -> List[Tuple[str, str]]:
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
    """Whether a health source (smartctl, shannon-status, fio-status, a plug-in) ever answered
    for this drive; a drive known only from sysfs has none."""
    return _get(v, "data_age_seconds") is not None


def life_style(ratio: Optional[float]) -> Optional[str]:
    severity = health.life_severity(ratio)
    return None if severity == OK else severity


def cache_mismatch(v: Any) -> bool:
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

def printable_text(text: str) -> str:
    """Text from a drive or a tool with every control character replaced: nothing a firmware
    string carries may drive the terminal."""
    return "".join(ch if ch.isprintable() else "?" for ch in text)


def model_cell(v: Any) -> Cell:
    model = _get(v, "model") or "-"
    # Model strings come from firmware: no control characters may reach the terminal. The
    # layout shortens long ones (MODEL_WIDTH) with an ellipsis.
    return "".join(ch if ch.isprintable() else "?" for ch in model), None


def _c_life(v: Any) -> Cell:
    ratio = _get(v, "life_left_ratio")
    return percent(ratio), life_style(ratio)


def _wearout_style(v: Any) -> Optional[str]:
    """The severity of the drive's wear-out flag, if it has one (views.flags_for)."""
    sevs = [sev for sev, reason in flag_reasons(v) if reason.startswith("projected wear-out")]
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
    if cache_mismatch(v):
        return f"{state.upper()}, want {_get(v, 'write_cache_expected')}", CRITICAL
    return state, None


def _c_cache_compact(v: Any) -> Cell:
    state = _get(v, "write_cache")
    if state is not None and cache_mismatch(v):
        return f"{state.upper()}!", CRITICAL
    return _c_cache(v)


def hot(t: Dict[str, Any]) -> bool:
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
    """The drive's sync-write latency in words: a host source's burst of synchronous writes on
    this drive (the sync-write probe's) when one times writes there, else the mean write and cache-flush time from /proc/diskstats over the last
    minutes; "" when neither is known yet."""
    burst = _get(v, "latency_burst")
    if burst is None and isinstance(v, dict):  # an agent of the last release
        burst = host_views.legacy_latency_burst(v)
    if burst:
        p99 = burst.get("p99_seconds")
        return (f"{burst['how']}: median {_ms(burst['median_seconds'])}"
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
    flags = flag_reasons(v)
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
    Column("MODEL", model_cell, max_width=MODEL_WIDTH, compact_max_width=MODEL_COMPACT_WIDTH),
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


def wrap_text(text: str, width: Optional[int], indent: int) -> List[str]:
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
        for sev, reason in flag_reasons(v, with_since=True):
            label = sev.upper().ljust(8)
            folded = wrap_text(f"  {label}  {_get(v, 'device')}: {reason}", width, 12)
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
        out += [folded for text in texts for folded in wrap_text(f"  {text}", width, 4)]
    return "\n".join(out) + "\n" if out else ""


def format_holds(views: List[Any], width: Optional[int] = None) -> str:
    """Issue 15: one line per drive that holds something: ``  sdb  holds: /var/lib/postgresql (md0, ext4)``."""
    lines = [folded for v in views if v.get("holds")
             for folded in wrap_text(f"  {_get(v, 'device')}  holds: {holds_text(v['holds'])}", width, 4)]
    return ("what the drives hold:\n" + "\n".join(lines) + "\n") if lines else ""


def format_behind(views: List[Any], width: Optional[int] = None) -> str:
    """Issue 28: one line per drive read through a RAID controller, naming the controller,
    the slot and the volume (the DEVICE column shows the node it is read on, which the
    controller's drives share): ``  /dev/bus/6  S3YZNB0KB00864E  megaraid/0 slot 8:2, volume 1``."""
    lines = [folded for v in views for place in controller_places(v)
             for folded in wrap_text(f"  {_get(v, 'device')}  {_get(v, 'serial')}  {controller_text(place)}", width, 4)]
    if not lines:
        return ""
    return ("behind RAID controllers (write cache and I/O are the volume's):\n" + "\n".join(lines) + "\n")
