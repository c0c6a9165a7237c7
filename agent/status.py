"""``ssdfleet status``: this host's drives as a table, for the person logged in on the host.

It asks the running agent's ``/api/v1/drives`` when one answers, so it shows the same data
Prometheus sees (with history-based projections); otherwise it polls once by itself. The
exit code follows the Nagios plugin convention (0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN) so it
can run from cron or an existing monitoring system.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
import urllib.error
import urllib.request
from typing import Any, Dict, List, Optional

from agent.config import DEFAULT_PORT

UNKNOWN_EXIT = 3

_COLORS = {"ok": "\033[32m", "warning": "\033[33m", "critical": "\033[1;31m"}
_RESET = "\033[0m"


def human_bytes(n: Optional[float]) -> str:
    if n is None:
        return "-"
    for unit in ("B", "kB", "MB", "GB", "TB", "PB"):
        if abs(n) < 1000 or unit == "PB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000.0
    return "-"


def _get(v: Any, name: str) -> Any:
    return v.get(name) if isinstance(v, dict) else getattr(v, name)


def _temps(v: Any) -> str:
    temps = _get(v, "temperatures") or []
    if not temps:
        return "-"
    return "/".join(f"{t['celsius']:.0f}" for t in temps) + " C"


def _life(v: Any) -> str:
    life = _get(v, "life_left_ratio")
    return "-" if life is None else f"{life * 100:.1f}%".replace(".0%", "%")


def _wearout(v: Any) -> str:
    ts = _get(v, "wearout_timestamp")
    if ts is None:
        return "-"
    return time.strftime("%Y-%m-%d", time.gmtime(ts))


def _health(v: Any) -> str:
    flags = _get(v, "flags") or []
    sev = _get(v, "severity")
    if not flags:
        return sev.upper() if sev else "-"
    first = flags[0]
    reason = first["reason"] if isinstance(first, dict) else first.reason
    more = f" (+{len(flags) - 1})" if len(flags) > 1 else ""
    return f"{sev.upper()}: {reason}{more}"


COLUMNS = (
    ("DEVICE", lambda v: _get(v, "device")),
    ("KIND", lambda v: _get(v, "kind")),
    ("MODEL", lambda v: _get(v, "model") or "-"),
    ("SERIAL", lambda v: _get(v, "serial")),
    ("LIFE", _life),
    ("TEMP", _temps),
    ("WRITTEN", lambda v: human_bytes(_get(v, "host_written_bytes"))),
    ("CACHE", lambda v: _get(v, "write_cache") or "-"),
    ("WEAR-OUT", _wearout),
    ("HEALTH", _health),
)


def format_table(views: List[Any], color: bool = False) -> str:
    rows = [[str(fn(v)) for _, fn in COLUMNS] for v in views]
    headers = [h for h, _ in COLUMNS]
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths)).rstrip()]
    for v, row in zip(views, rows):
        line = "  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip()
        sev = _get(v, "severity")
        if color and sev in _COLORS and sev != "ok":
            line = _COLORS[sev] + line + _RESET
        lines.append(line)
    if not views:
        lines.append("(no drives found)")
    return "\n".join(lines) + "\n"


def fetch(url: str, timeout: float = 2.0, auth: Optional[str] = None) -> Optional[Dict[str, Any]]:
    """The running agent's /api/v1/drives, or None when no agent answers."""
    req = urllib.request.Request(url.rstrip("/") + "/api/v1/drives")
    if auth:
        import base64

        req.add_header("Authorization", "Basic " + base64.b64encode(auth.encode()).decode())
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:  # noqa: S310 - local agent URL
            return json.loads(resp.read().decode("utf-8"))
    except (urllib.error.URLError, OSError, ValueError):
        return None


def local_poll(config) -> Dict[str, Any]:
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
        "source": "local poll",
    }


def main(args, make_config) -> int:
    from agent.views import exit_code

    config = make_config(args)
    url = args.url
    if url is None:
        host, port = config.listen_host_port() if config.listen_address else ("127.0.0.1", DEFAULT_PORT)
        if host in ("0.0.0.0", "::", ""):
            host = "127.0.0.1"
        url = f"http://{host}:{port}"
    color = args.color == "always" or (args.color == "auto" and sys.stdout.isatty())

    while True:
        data = None if args.local else fetch(url)
        if data is not None:
            data["source"] = url
        else:
            data = local_poll(config)
        drives = data.get("drives", [])
        if args.drive:
            drives = [d for d in drives if args.drive in (d.get("serial"), d.get("device"))]
            if not drives:
                sys.stderr.write(f"ssdfleet: no drive {args.drive!r} on this host\n")
                return UNKNOWN_EXIT
        severity = max((d.get("severity", "ok") for d in drives),
                       key={"ok": 0, "warning": 1, "critical": 2}.get, default="ok")
        if args.json:
            json.dump({**data, "drives": drives}, sys.stdout, indent=2, default=str)
            sys.stdout.write("\n")
        else:
            if args.watch:
                sys.stdout.write("\033[H\033[2J")
            sys.stdout.write(format_table(drives, color=color))
            sys.stdout.write(f"source: {data.get('source')}\n")
        sys.stdout.flush()
        if not args.watch:
            return exit_code(severity)
        time.sleep(args.watch)
