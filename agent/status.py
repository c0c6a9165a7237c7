"""``ssdfleet status``: this host's drives in the terminal, for the person logged in on the host.

It asks the running agent's ``/api/v1/drives`` when one answers, so it shows the same data
Prometheus and the ``/`` page see (with history-based projections and the drive's history);
otherwise it polls once by itself and says so. The exit code follows the Nagios plugin
convention (0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN when no drive's health could be read) so
it can run from cron or an existing monitoring system.

Everything here works on the JSON form of :class:`agent.views.DriveView` (a dict), whether
it came over HTTP or from a local poll, so both paths print the same thing.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import os
import sys
import time
import urllib.error
import urllib.request
from typing import Any, Callable, Dict, List, Optional, Tuple

from agent.config import DEFAULT_PORT
from agent.views import (
    CRITICAL,
    LIFE_CRITICAL,
    LIFE_WARNING,
    OK,
    STALE_WARNING_SECONDS,
    WARNING,
    describe_input,
    flagged_first,
    human_bytes,
    human_duration,
    percent,
    series_change,
    severity_rank,
    utc_date,
    utc_time,
)
from collectors import write_cache

UNKNOWN = "unknown"
UNKNOWN_EXIT = 3
DAY = 86400.0
# "user:password" for an agent behind basic auth (web config); the environment rather than a
# flag so the password does not show in `ps`.
AUTH_ENV = "SSDFLEET_BASIC_AUTH"

_SGR = {OK: "32", WARNING: "33", CRITICAL: "1;31", UNKNOWN: "35", "bold": "1", "dim": "2"}
_EXIT = {OK: 0, WARNING: 1, CRITICAL: 2, UNKNOWN: UNKNOWN_EXIT}

Cell = Tuple[str, Optional[str]]  # text and an _SGR style name (None: plain)


def paint(text: str, style: Optional[str], color: bool) -> str:
    if not color or not style or not text:
        return text
    return f"\033[{_SGR[style]}m{text}\033[0m"


def _get(v: Any, name: str) -> Any:
    """A DriveView field from the API's dict or from the dataclass (``ssdfleet collect``)."""
    return v.get(name) if isinstance(v, dict) else getattr(v, name, None)


def _flags(v: Any) -> List[Tuple[str, str]]:
    out = []
    for f in _get(v, "flags") or []:
        if isinstance(f, dict):
            out.append((f["severity"], f["reason"]))
        else:
            out.append((f.severity, f.reason))
    return out


def has_health_data(v: Any) -> bool:
    """Whether a health source (smartctl, shannon-status) ever answered for this drive; a
    drive known only from sysfs has none."""
    return _get(v, "data_age_seconds") is not None


def _life_style(ratio: Optional[float]) -> Optional[str]:
    if ratio is None:
        return None
    if ratio < LIFE_CRITICAL:
        return CRITICAL
    if ratio < LIFE_WARNING:
        return WARNING
    return None


def _cache_mismatch(v: Any) -> bool:
    state, expected = _get(v, "write_cache"), _get(v, "write_cache_expected")
    if state is None or expected is None:
        return False
    try:
        return bool(write_cache.mismatch(state, expected))
    except ValueError:
        return False


# -- table cells ---------------------------------------------------------------------

def _c_model(v: Any) -> Cell:
    model = _get(v, "model") or "-"
    # Model strings come from firmware: keep the table one line per drive, and no control
    # characters may reach the terminal.
    model = "".join(ch if ch.isprintable() else "?" for ch in model)
    return (model if len(model) <= 28 else model[:27] + "~"), None


def _c_life(v: Any) -> Cell:
    ratio = _get(v, "life_left_ratio")
    return percent(ratio), _life_style(ratio)


def _c_wearout(v: Any) -> Cell:
    ts = _get(v, "wearout_timestamp")
    if ts is None:
        return "-", None
    return f"{utc_date(ts)} {_get(v, 'wearout_method')}", None


def _c_cache(v: Any) -> Cell:
    state = _get(v, "write_cache")
    if state is None:
        return "-", None
    if _cache_mismatch(v):
        return f"{state.upper()}!={_get(v, 'write_cache_expected')}", CRITICAL
    return state, None


def _c_temp(v: Any) -> Cell:
    temps = _get(v, "temperatures") or []
    if not temps:
        return "-", None
    hot = any(t.get("limit_celsius") is not None and t["celsius"] >= t["limit_celsius"] for t in temps)
    return "/".join(f"{t['celsius']:.0f}" for t in temps) + " C", (WARNING if hot else None)


def _c_bad(v: Any) -> Cell:
    parts, style = [], None
    ratio = _get(v, "bad_block_ratio")
    if ratio is not None:
        parts.append(percent(ratio, 3))
    defects = sum((_get(v, "defects") or {}).values())
    if defects:
        parts.append(f"{defects} defects")
        style = WARNING
    media = _get(v, "media_errors")
    if media:
        parts.append(f"{media} media err")
        style = WARNING
    change = series_change(_get(v, "history") or [], "bad_block_ratio")
    if change is not None and change["change"] > 0:
        parts.append("rising")
        style = WARNING
    return (" ".join(parts) or "-"), style


def _c_writes(v: Any) -> Cell:
    rate = _get(v, "write_rate_bytes_per_second")
    return ("-" if rate is None else human_bytes(rate * DAY)), None


def _c_age(v: Any) -> Cell:
    age = _get(v, "data_age_seconds")
    if age is None:
        return "none", UNKNOWN
    return human_duration(age).replace(" ", ""), (WARNING if age > STALE_WARNING_SECONDS else None)


def _c_health(v: Any) -> Cell:
    flags = _flags(v)
    sev = _get(v, "severity") or OK
    if not has_health_data(v):
        return "UNKNOWN: no health data", UNKNOWN
    if not flags:
        return sev.upper(), sev
    more = f" (+{len(flags) - 1})" if len(flags) > 1 else ""
    return f"{sev.upper()}: {flags[0][1]}{more}", sev


COLUMNS: Tuple[Tuple[str, Callable[[Any], Cell]], ...] = (
    ("DEVICE", lambda v: (str(_get(v, "device")), "bold")),
    ("KIND", lambda v: (str(_get(v, "kind")), None)),
    ("MODEL", _c_model),
    ("SERIAL", lambda v: (str(_get(v, "serial")), None)),
    ("LIFE", _c_life),
    ("WEAR-OUT", _c_wearout),
    ("CACHE", _c_cache),
    ("TEMP", _c_temp),
    ("BAD-BLOCKS", _c_bad),
    ("WRITES/DAY", _c_writes),
    ("AGE", _c_age),
    ("HEALTH", _c_health),
)


def format_table(views: List[Any], color: bool = False) -> str:
    """One line per drive, flagged drives first; colours only when ``color``."""
    views = flagged_first(views)
    rows = [[fn(v) for _, fn in COLUMNS] for v in views]
    headers = [h for h, _ in COLUMNS]
    widths = [max([len(h)] + [len(r[i][0]) for r in rows]) for i, h in enumerate(headers)]
    # pad before painting: escape codes have no width on screen
    lines = ["  ".join(paint(h.ljust(w), "dim", color) for h, w in zip(headers, widths)).rstrip()]
    for row in rows:
        cells = [paint(text.ljust(w), style, color) for (text, style), w in zip(row[:-1], widths)]
        cells.append(paint(row[-1][0], row[-1][1], color))  # last column unpadded: no trailing blanks
        lines.append("  ".join(cells).rstrip())
    if not views:
        lines.append("(no drives found)")
    return "\n".join(lines) + "\n"


def format_reasons(views: List[Any], color: bool = False) -> str:
    """Every flag of every flagged drive (the table shows only the first)."""
    lines = []
    for v in flagged_first(views):
        for sev, reason in _flags(v):
            lines.append(f"  {paint(sev.upper().ljust(8), sev, color)}  {_get(v, 'device')}: {reason}")
    return ("why flagged:\n" + "\n".join(lines) + "\n") if lines else ""


# -- one drive in detail -------------------------------------------------------------

def _history_rows(points: List[Dict[str, Any]], limit: int = 16) -> List[Dict[str, Any]]:
    """At most ``limit`` points spread over the history, always with the newest."""
    if len(points) <= limit:
        return points
    step = (len(points) - 1) / (limit - 1)
    return [points[round(i * step)] for i in range(limit)]


def format_drive(v: Dict[str, Any], color: bool = False, now: Optional[float] = None) -> str:
    """Everything about one drive: why it is flagged, the wear-out arithmetic, history."""
    now = time.time() if now is None else now
    sev = v.get("severity") or OK
    out: List[str] = []

    def line(label: str, text: str) -> None:
        out.append(f"{label:<13}{text}")

    head = f"{v.get('device')}  {_c_model(v)[0]}  serial {v.get('serial')}  ({v.get('kind')}"
    head += f", firmware {v['firmware']})" if v.get("firmware") else ")"
    out.append(paint(head, "bold", color))
    status = "UNKNOWN: no health data" if not has_health_data(v) else sev.upper()
    line("status", paint(status, sev if has_health_data(v) else UNKNOWN, color))
    for fsev, reason in _flags(v):
        out.append(f"  {paint(fsev.upper().ljust(8), fsev, color)}   {reason}")
    life = v.get("life_left_ratio")
    source = f"  ({v['life_left_source']})" if v.get("life_left_source") else ""
    line("life left", paint(percent(life), _life_style(life), color) + source)
    if v.get("spare_left_ratio") is not None:
        thr = v.get("spare_threshold_ratio")
        line("spare", percent(v["spare_left_ratio"]) + (f" (threshold {percent(thr)})" if thr is not None else ""))

    ts = v.get("wearout_timestamp")
    if ts is not None:
        line("wear-out", f"{utc_date(ts)} (in {human_duration(ts - now)}) by the {v.get('wearout_method')} method")
    else:
        line("wear-out", "no date")
    for p in v.get("projections") or []:
        verdict = utc_date(p["wearout_timestamp"]) if p.get("wearout_timestamp") is not None else "no date"
        mark = "*" if p["method"] == v.get("wearout_method") else " "
        note = f": {p['note']}" if p.get("note") else ""
        out.append(f"  {mark} {p['method']:<8} {verdict}{note}")
        # the chosen method's inputs; with no date, the first (preferred) method's, to show what is missing
        if p["method"] == (v.get("wearout_method") or v["projections"][0]["method"]):
            for name, value in sorted((p.get("inputs") or {}).items()):
                if name != "now":
                    out.append(f"      {name:<30} {describe_input(name, value)}")
            if p.get("endurance_remaining_bytes") is not None:
                out.append(f"      {'endurance_remaining':<30} {human_bytes(p['endurance_remaining_bytes'])}")
    rate = v.get("write_rate_bytes_per_second")
    line("host writes", (f"{human_bytes(rate * DAY)}/day" if rate is not None else "no rate yet (needs an hour of history)")
         + f"; {human_bytes(v.get('host_written_bytes'))} written in total")
    if v.get("nand_written_bytes") is not None:
        wa = v.get("write_amplification")
        line("NAND writes", human_bytes(v["nand_written_bytes"]) + (f" (write amplification {wa:.2f})" if wa else ""))
    if v.get("rated_endurance_bytes") is not None:
        line("rated", human_bytes(v["rated_endurance_bytes"]) + " of host writes")

    cache = v.get("write_cache") or "unknown"
    sources = ", ".join(f"{s['source']}: {s['state']}" for s in v.get("write_cache_sources") or [])
    cache_text = paint(cache, CRITICAL if _cache_mismatch(v) else None, color)
    line("write cache", f"{cache_text} (expected {v.get('write_cache_expected') or 'any'})"
         + (f"; {sources}" if sources else ""))
    for t in v.get("temperatures") or []:
        extra = []
        if t.get("limit_celsius") is not None:
            extra.append(f"limit {t['limit_celsius']:.0f}")
        if t.get("max_celsius") is not None:
            extra.append(f"max seen {t['max_celsius']:.0f}")
        line("temperature", f"{t['sensor']} {t['celsius']:.0f} C" + (f" ({', '.join(extra)})" if extra else ""))
    bad = []
    if v.get("bad_block_ratio") is not None:
        bad.append(f"{percent(v['bad_block_ratio'], 3)} of blocks")
    bad += [f"{k.replace('_', ' ')} {n}" for k, n in sorted((v.get("defects") or {}).items())]
    if v.get("media_errors") is not None:
        bad.append(f"{v['media_errors']} media errors")
    line("bad blocks", ", ".join(bad) or "-")
    age = v.get("data_age_seconds")
    polls = ", ".join(f"{k} {utc_time(t)}" for k, t in sorted((v.get("last_poll") or {}).items()))
    line("data age", (human_duration(age) if age is not None else "no health data") + (f" ({polls})" if polls else ""))

    points = v.get("history")
    if points is None:
        line("history", "not available (a one-off local poll keeps none; the agent's API gives it)")
    elif not points:
        line("history", "no samples of this drive yet")
    else:
        line("history", f"{len(points)} points from {utc_time(points[0]['ts'])} to {utc_time(points[-1]['ts'])}")
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

def fetch(url: str, timeout: float = 2.0, auth: Optional[str] = None) -> Tuple[Optional[Dict[str, Any]], str]:
    """The running agent's /api/v1/drives, or None and why not."""
    req = urllib.request.Request(url.rstrip("/") + "/api/v1/drives")
    if auth:
        req.add_header("Authorization", "Basic " + base64.b64encode(auth.encode()).decode())
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:  # noqa: S310 - local agent URL
            return json.loads(resp.read().decode("utf-8")), ""
    except urllib.error.HTTPError as exc:
        hint = f" (set {AUTH_ENV}=user:password)" if exc.code == 401 else ""
        return None, f"HTTP {exc.code}{hint}"
    except (urllib.error.URLError, OSError) as exc:
        return None, str(getattr(exc, "reason", exc))
    except ValueError as exc:
        return None, f"not JSON: {exc}"


def local_poll(config) -> Dict[str, Any]:
    """Poll once here, without touching the agent's history file."""
    from agent.poller import Poller
    from agent.views import snapshot_views, worst

    config = config.model_copy(update={"history": False})
    poller = Poller(config)
    try:
        snap = poller.poll_once()
    finally:
        poller.stop()
    views = snapshot_views(snap, time.time())
    return {
        "severity": worst(views),
        "drives": [dataclasses.asdict(v) for v in views],
        "collectors": [dataclasses.asdict(c) for c in snap.collectors],
        "problems": list(snap.problems),
    }


def overall(drives: List[Dict[str, Any]]) -> str:
    """Worst severity of the drives that could be read; unknown when none could."""
    readable = [d for d in drives if has_health_data(d)]
    if not readable:
        return UNKNOWN
    return max((d.get("severity") or OK for d in readable), key=severity_rank)


def _agent_url(args, config) -> str:
    if args.url:
        return args.url
    host, port = config.listen_host_port() if config.listen_address else ("127.0.0.1", DEFAULT_PORT)
    if host in ("0.0.0.0", "::", ""):
        host = "127.0.0.1"
    if ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{port}"


def _matches(d: Dict[str, Any], wanted: str) -> bool:
    name = wanted[5:] if wanted.startswith("/dev/") else wanted
    return wanted in (d.get("serial"), d.get("device")) or name == d.get("device")


def _footer(data: Dict[str, Any], drives: List[Dict[str, Any]], severity: str, color: bool) -> str:
    lines = [f"source: {data['source']}"]
    for c in data.get("collectors") or []:
        if not c.get("success"):
            lines.append(f"collector {c['name']} failing: {c.get('error') or 'see the agent log'}")
    lines += [f"problem: {p}" for p in data.get("problems") or []]
    counts = {s: sum(1 for d in drives if has_health_data(d) and d.get("severity") == s) for s in (CRITICAL, WARNING, OK)}
    unread = sum(1 for d in drives if not has_health_data(d))
    parts = [f"{n} {s}" for s, n in counts.items() if n]
    if unread:
        parts.append(f"{unread} without health data")
    text = f"{severity.upper()}: " + (", ".join(parts) if parts else "no drives could be read")
    lines.append(paint(text, severity, color))
    return "\n".join(lines) + "\n"


def main(args, make_config) -> int:
    config = make_config(args)
    url = _agent_url(args, config)
    color = args.color == "always" or (args.color == "auto" and sys.stdout.isatty())
    auth = os.environ.get(AUTH_ENV) or None
    first = True
    while True:
        data, why = (None, "--local") if args.local else fetch(url, auth=auth)
        if data is not None:
            data["source"] = f"agent at {url}"
        else:
            data = local_poll(config)
            data["source"] = f"one poll by this command (no agent answered at {url}: {why})" if not args.local \
                else "one poll by this command (--local)"
        drives = data.get("drives") or []
        if args.drive:
            drives = [d for d in drives if _matches(d, args.drive)]
            if not drives:
                sys.stderr.write(f"ssdfleet: no drive {args.drive!r} on this host\n")
                return UNKNOWN_EXIT
        severity = overall(drives)
        code = _EXIT[severity]
        if args.json:
            json.dump({**data, "drives": drives, "severity": severity, "exit_code": code},
                      sys.stdout, indent=2, default=str)
            sys.stdout.write("\n")
        else:
            if args.watch:
                # a terminal is redrawn in place; a pipe or log gets one block per round
                sys.stdout.write("\033[H\033[2J" if sys.stdout.isatty() else ("" if first else "\n"))
                sys.stdout.write(f"{utc_time(time.time())}, every {args.watch:g} s (Ctrl-C stops)\n")
            if args.drive:
                sys.stdout.write("\n".join(format_drive(d, color=color) for d in drives))
            else:
                sys.stdout.write(format_table(drives, color=color))
                sys.stdout.write(format_reasons(drives, color=color))
            sys.stdout.write(_footer(data, drives, severity, color))
        sys.stdout.flush()
        first = False
        if not args.watch:
            return code
        time.sleep(max(0.2, args.watch))
