"""What a person sees: one flat view per drive, with the reasons it is flagged.

Shared by ``/api/v1/drives``, the status page and ``ssdfleet status`` so all three agree on
"which drive, how bad, since when". The thresholds and rules are agent/health.py's, the same
as the shipped alert rules (deploy/prometheus/ssdfleet-alerts.yml).

Exposition does no I/O: what a view needs beyond the snapshot (the drive's recent history,
since when each flag is up) comes from a :class:`ViewState` that the poller hands every new
snapshot in its listener thread, so a request renders from memory and never reads SQLite.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

from agent import durability, health, host_views
from agent.health import CRITICAL, OK, WARNING
from agent.text import percent
from collectors import registry
from collectors.model import EVIDENCE_FIELDS, Drive, Projection, Snapshot, drive_list

# The sources whose per-drive values are the I/O counters (diskstats): when they were read.
_IO_SOURCES = tuple(spec.name for spec in registry.SOURCES if spec.annotates == "io")

# How much local history the views carry: three months give the life-left chart a slope to
# project from without making the JSON heavy (samples are 10 minutes apart, so three months
# are ~13,000 rows, read in the poller's listener thread when a sample is added and thinned to
# this many points).
HISTORY_WINDOW_SECONDS = 90 * 86400
HISTORY_MAX_POINTS = 90

# The page's states, worst first: a drive's severity, with "watch" for an OK drive that is
# near the end of its life (agent/health.py, watch_reasons) and "healthy" for the rest.
HEALTHY, WATCH = "healthy", "watch"
STATES = (CRITICAL, WARNING, WATCH, HEALTHY)

# Recent write and flush latency come from two diskstats readings at least this far apart
# (the kernel counts milliseconds, so a shorter span of an idle drive says little).
LATENCY_MIN_SPAN_SECONDS = 60.0
LATENCY_KEEP_SECONDS = 600.0


@dataclass
class Flag:
    severity: str
    reason: str
    # What is wrong, stable while the figures in ``reason`` move ("life_left",
    # "write_cache", "temperature:drive"): the agent tracks since when on it.
    key: str = ""
    since: Optional[float] = None  # when the agent first saw this flag up, without a break


@dataclass
class DriveView:
    device: str
    serial: str
    kind: str
    model: Optional[str]
    firmware: Optional[str]
    capacity_bytes: Optional[int]
    is_ssd: Optional[bool]
    smart_healthy: Optional[bool]
    life_left_ratio: Optional[float]
    life_left_source: Optional[str]
    spare_left_ratio: Optional[float]
    spare_threshold_ratio: Optional[float]
    bad_block_ratio: Optional[float]
    defects: Dict[str, int]
    media_errors: Optional[int]
    write_amplification: Optional[float]
    host_written_bytes: Optional[int]
    nand_written_bytes: Optional[int]
    host_read_bytes: Optional[int]
    temperatures: List[Dict[str, Any]]
    voltages: List[Dict[str, Any]]
    critical_warning: Optional[int]  # NVMe byte as reported; its set bits decoded below
    critical_warning_bits: List[str]
    power_on_seconds: Optional[int]
    access_mode: Optional[str]
    power_state: Optional[str]
    write_cache: Optional[str]
    write_cache_expected: Optional[str]
    write_cache_sources: List[Dict[str, Any]]
    write_rate_bytes_per_second: Optional[float]
    rated_endurance_bytes: Optional[float]
    wearout_timestamp: Optional[float]
    wearout_method: Optional[str]
    projections: List[Dict[str, Any]]
    data_age_seconds: Optional[float]
    last_poll: Dict[str, float]
    severity: str = OK
    flags: List[Flag] = field(default_factory=list)
    sources: Dict[str, str] = field(default_factory=dict)
    extra: Dict[str, str] = field(default_factory=dict)
    # Where each figure came from, or why it was withheld (see evidence())
    evidence: List[Dict[str, str]] = field(default_factory=list)
    # Thinned local history (see history_points); None when no history was asked for, which is
    # not the same as an empty list (asked, but the agent has no samples of this drive yet).
    history: Optional[List[Dict[str, Any]]] = None
    # Issue 15 (agent/durability.py): the kernel sends no FLUSH while the drive caches (None:
    # cannot tell), and whether the drive has power-loss protection (None: unknown).
    write_cache_flush_ignored: Optional[bool] = None
    power_loss_protection: Optional[bool] = None
    # Issue 15 (collectors/holders.py): what the drive holds, as Holding dicts.
    holds: List[Dict[str, Any]] = field(default_factory=list)
    # healthy, watch, warning or critical (STATES); watch gives why (health.watch_reasons)
    state: str = HEALTHY
    watch: List[str] = field(default_factory=list)
    # The wear-out method behind the date in words ("from NAND writes"); see method_label.
    wearout_method_label: Optional[str] = None
    # Mean time of one write and of one cache flush over the last minutes, from two
    # /proc/diskstats readings (ViewState keeps them); None until two readings a minute apart.
    write_latency_seconds: Optional[float] = None
    flush_latency_seconds: Optional[float] = None
    latency_window_seconds: Optional[float] = None
    # A burst of synchronous writes timed on this drive by a host source (the sync-write probe),
    # as collectors.source.LatencyBurst plus ``source``; None when no source times writes here.
    latency_burst: Optional[Dict[str, Any]] = None
    # What host sources show beside this drive, by source (a RAID controller's slot and volume,
    # the sync-write probe's newest burst).
    beside: Dict[str, Any] = field(default_factory=dict)


def evidence(sources: Dict[str, str], extra: Dict[str, str]) -> List[Dict[str, str]]:
    """Per figure: ``given`` with its source, or ``withheld`` with the reason, and any candidate
    the normaliser set aside (``rejected``). Figures the drive has no source for are left out."""
    rows = []
    for name, label in EVIDENCE_FIELDS:
        row: Dict[str, str] = {"field": name, "label": label}
        if name in sources:
            row.update(state="given", source=sources[name])
        elif f"{name}_withheld" in extra:
            row.update(state="withheld", reason=extra[f"{name}_withheld"])
        else:
            continue
        for key in (f"{name}_rejected", f"{name}_devstat_ignored"):
            if key in extra:
                row["set_aside"] = "; ".join(filter(None, (row.get("set_aside"), extra[key])))
        rows.append(row)
    return rows


def _projection_dict(p: Projection) -> Dict[str, Any]:
    out = dataclasses.asdict(p)
    out["label"] = method_label(out)
    return out


def drive_view(d: Drive, now: float) -> DriveView:
    r = d.reading
    best = d.best_projection
    rate = best.write_rate_bytes_per_second if best else None
    if rate is None:
        rate = next((p.write_rate_bytes_per_second for p in d.projections
                     if p.write_rate_bytes_per_second is not None), None)
    if rate is None:
        # A projection that stops early (no life used yet) still records the host rate it
        # was given; a NAND-domain rate is not a host rate, so it is not taken.
        rate = next((p.inputs["write_rate_bytes_per_second"] for p in d.projections
                     if "write_rate_bytes_per_second" in p.inputs and not p.inputs.get("nand_domain")), None)
    health_time = health.health_data_time(d.last_poll)
    view = DriveView(
        device=d.device,
        serial=d.serial,
        kind=r.kind,
        model=r.model,
        firmware=r.firmware,
        capacity_bytes=r.capacity_bytes,
        is_ssd=r.is_ssd,
        smart_healthy=r.smart_healthy,
        life_left_ratio=r.life_left_ratio,
        life_left_source=r.sources.get("life_left_ratio"),
        spare_left_ratio=r.spare_left_ratio,
        spare_threshold_ratio=r.spare_threshold_ratio,
        bad_block_ratio=r.bad_block_ratio,
        defects=dict(r.defects),
        media_errors=r.media_errors,
        write_amplification=r.write_amplification,
        host_written_bytes=r.host_written_bytes,
        nand_written_bytes=r.nand_written_bytes,
        host_read_bytes=r.host_read_bytes,
        temperatures=[dataclasses.asdict(t) for t in r.temperatures],
        voltages=[dataclasses.asdict(v) for v in r.voltages],
        critical_warning=r.critical_warning,
        critical_warning_bits=health.critical_warning_bits(r.critical_warning),
        power_on_seconds=r.power_on_seconds,
        access_mode=r.access_mode,
        power_state=r.power_state,
        write_cache=health.known_write_cache(d.write_cache),
        write_cache_expected=d.write_cache_expected,
        write_cache_sources=[dataclasses.asdict(s) for s in d.write_cache],
        write_rate_bytes_per_second=rate,
        rated_endurance_bytes=d.rated_endurance_bytes,
        wearout_timestamp=best.wearout_timestamp if best else None,
        wearout_method=best.method if best else None,
        projections=[_projection_dict(p) for p in d.projections],
        wearout_method_label=method_label(_projection_dict(best)) if best else None,
        data_age_seconds=(now - health_time) if health_time is not None else None,
        last_poll=dict(d.last_poll),
        sources=dict(r.sources),
        extra=dict(r.extra),
        evidence=evidence(r.sources, r.extra),
    )
    view.write_cache_flush_ignored = durability.flush_ignored(d.write_cache)
    view.power_loss_protection = d.power_loss_protection
    view.holds = [dataclasses.asdict(h) for h in d.holds]
    view.flags = flags_for(view, d, now)
    view.severity = health.worst_severity(f.severity for f in view.flags)
    view.watch = (health.watch_reasons(view.life_left_ratio, view.wearout_timestamp, now,
                                       r.extra.get("life_left_disagreement")) if view.severity == OK else [])
    view.state = view.severity if view.severity != OK else (WATCH if view.watch else HEALTHY)
    return view


def flags_for(v: DriveView, d: Drive, now: float) -> List[Flag]:
    """The drive's flags, each rule as agent/health.py has it."""
    flags: List[Flag] = []
    r = d.reading
    if v.smart_healthy is False:
        flags.append(Flag(CRITICAL, r.extra.get("health_failed") or "SMART overall health: FAILED", "smart_health"))
    if r.critical_warning:
        bits = v.critical_warning_bits
        flags.append(Flag(CRITICAL, "NVMe critical warning: " + ", ".join(bits or [hex(r.critical_warning)]),
                          "nvme_critical_warning"))
    if health.is_readonly(r):
        flags.append(Flag(CRITICAL, "drive is read-only", "readonly"))
    elif health.is_write_reduced(r):
        flags.append(Flag(CRITICAL, "drive is in reduced-write mode", "reduced_write"))
    life = health.life_severity(v.life_left_ratio)
    if life in (WARNING, CRITICAL):
        flags.append(Flag(life, f"life left {percent(v.life_left_ratio)}", "life_left"))
    wearout = health.wearout_severity(v.wearout_timestamp, now)
    if wearout in (WARNING, CRITICAL):
        days = (v.wearout_timestamp - now) / health.DAY_SECONDS
        when = f"{max(days, 0):.1f}" if wearout == CRITICAL else f"{days:.0f}"
        flags.append(Flag(wearout, f"projected wear-out in {when} days ({v.wearout_method_label})", "wearout"))
    if health.spare_exhausted(v.spare_left_ratio, v.spare_threshold_ratio):
        flags.append(Flag(CRITICAL, f"spare {percent(v.spare_left_ratio)} at or below threshold {percent(v.spare_threshold_ratio)}",
                          "spare"))
    if v.write_cache is not None and health.write_cache_mismatch(v.write_cache, v.write_cache_expected):
        flags.append(Flag(health.write_cache_mismatch_severity(v.write_cache),
                          f"write cache {v.write_cache}, expected {v.write_cache_expected}", "write_cache"))
    if health.flush_unprotected(v.write_cache_flush_ignored, v.power_loss_protection):
        flags.append(Flag(CRITICAL, "kernel sends no cache flush (queue/write_cache is write through) "
                                    "while the drive caches writes", "flush_ignored"))
    for t in r.temperatures:
        if health.above_limit(t.celsius, t.limit_celsius):
            flags.append(Flag(health.ABOVE_LIMIT_SEVERITY,
                              f"{t.sensor} temperature {t.celsius:.0f} C at or above limit {t.limit_celsius:.0f} C",
                              f"temperature:{t.sensor}"))
        elif health.above_ceiling(t.sensor, t.celsius, t.limit_celsius):
            flags.append(Flag(health.ABOVE_CEILING_SEVERITY,
                              f"{t.sensor} temperature {t.celsius:.0f} C above {health.temperature_ceiling(t.sensor):.0f} C "
                                       "(no limit known for this sensor)", f"temperature:{t.sensor}"))
    if v.media_errors:
        flags.append(Flag(WARNING, f"{v.media_errors} media error{'' if v.media_errors == 1 else 's'}", "media_errors"))
    if health.data_stale(v.data_age_seconds, v.power_state):
        flags.append(Flag(WARNING, f"health data is {v.data_age_seconds / 60:.0f} min old (last poll failed?)", "stale"))
    if v.data_age_seconds is None:
        # Known from sysfs only: no health tool ever answered for it. Its health is unknown,
        # and unknown is not "OK" (a host whose smartctl fails on 8 of 9 drives must not look
        # green).
        flags.append(Flag(WARNING, "no health data: no tool could read this drive", "no_health_data"))
    return flags


def history_points(samples: Sequence[Any], now: float,
                   max_points: int = HISTORY_MAX_POINTS) -> List[Dict[str, Any]]:
    """Thin a drive's samples (oldest first) to at most ``max_points`` for sparklines and the
    API, keeping the newest sample of each equal slice of time so the last point is current.

    Each point carries ``write_rate_bytes_per_second`` over the gap since the previous kept
    point, computed after thinning so a point stands for the whole gap, not its last 10
    minutes. A counter that went down (drive replaced, counter reset) gives no rate there.
    """
    rows = [s for s in samples if s.ts <= now]
    if len(rows) > max_points > 2:
        first, last = rows[0].ts, rows[-1].ts
        # max_points - 1 slices (the last sample alone in the final one) plus the oldest point
        width = (last - first) / (max_points - 2) or 1.0
        kept: Dict[int, Any] = {}
        for s in rows:
            kept[int((s.ts - first) // width)] = s  # later samples overwrite: newest wins
        rows = [rows[0]] + [kept[k] for k in sorted(kept) if kept[k] is not rows[0]]
    points: List[Dict[str, Any]] = []
    prev = None
    for s in rows:
        rate = None
        if (prev is not None and s.host_written_bytes is not None
                and prev.host_written_bytes is not None and s.ts > prev.ts
                and s.host_written_bytes >= prev.host_written_bytes):
            rate = (s.host_written_bytes - prev.host_written_bytes) / (s.ts - prev.ts)
        points.append({
            "ts": s.ts,
            "life_left_ratio": s.life_left_ratio,
            "host_written_bytes": s.host_written_bytes,
            "bad_block_ratio": s.bad_block_ratio,
            "bad_blocks": s.bad_blocks,
            "media_errors": s.media_errors,
            "write_rate_bytes_per_second": rate,
        })
        prev = s
    return points


def snapshot_views(snap: Snapshot, now: float, state: Optional[ViewState] = None) -> List[DriveView]:
    """One view per drive, by device name. With ``state`` (fed the snapshots by the poller),
    each view also carries its thinned history in ``history`` and each flag its ``since``;
    nothing here reads the history file."""
    views = [drive_view(d, now) for d in drive_list(snap)]
    beside = host_views.per_drive(snap)
    for v in views:
        v.beside = beside.get(v.serial, {})
        v.latency_burst = host_views.latency_burst(v.beside)
    if state is not None:
        for v in views:
            v.history = state.history(v.serial)
            for f in v.flags:
                f.since = state.since(v.serial, f.key)
            latency = state.latency(v.serial)
            if latency is not None:
                v.write_latency_seconds, v.flush_latency_seconds, v.latency_window_seconds = latency
    return views


def controller_places(v: Any) -> List[Dict[str, Any]]:
    """Where a drive read through a RAID controller sits: the values the controller sources
    put beside it (collectors/controller_view.py, per_drive: controller, slot, device id,
    volume and the volume's OS device and write cache), one per controller source that
    matched the drive; [] for a drive on its own. Takes a DriveView or its JSON form."""
    beside = v.get("beside") if isinstance(v, dict) else getattr(v, "beside", None)
    if not isinstance(beside, dict):
        return []
    return [place for _source, place in sorted(beside.items())
            if isinstance(place, dict) and place.get("controller") and place.get("slot") is not None]


def controller_text(place: Dict[str, Any]) -> str:
    """``megaraid/0 slot 8:2 (device id 15), volume 1 on /dev/sdb (write-back now)``."""
    text = f"{place['controller']} slot {place['slot']}"
    if place.get("device_id") is not None:
        text += f" (device id {place['device_id']})"
    if place.get("volume") is not None:
        text += f", volume {place['volume']}"
        if place.get("volume_os_device"):
            text += f" on {place['volume_os_device']}"
        if place.get("volume_write_cache"):
            text += f" ({place['volume_write_cache']} now)"
    else:
        text += ", in no volume"
    return text


def io_latency(older: Any, newer: Any) -> Tuple[Optional[float], Optional[float]]:
    """(mean seconds per write, mean seconds per cache flush) between two IoStats readings of
    one drive; None where nothing completed in between or a counter went back (a reset)."""
    def mean(time_a: Optional[float], time_b: Optional[float], n_a: Optional[int], n_b: Optional[int]) -> Optional[float]:
        if None in (time_a, time_b, n_a, n_b) or n_b <= n_a or time_b < time_a:
            return None
        return (time_b - time_a) / (n_b - n_a)

    return (mean(older.write_time_seconds, newer.write_time_seconds, older.writes_completed, newer.writes_completed),
            mean(older.flush_time_seconds, newer.flush_time_seconds, older.flushes_completed, newer.flushes_completed))


class ViewState:
    """What the views show beyond the snapshot, taken from History when a snapshot arrives
    (a poller listener, so no request waits on SQLite and none touches it):

    * since when each drive's flags have been up: "which drive, how bad, since when". A flag
      seen for the first time gets the snapshot's time; a flag that clears and comes back
      starts again. With a History the times are saved whenever the set of flags changes and
      read back at start, so a restart does not reset them; without one they live in memory.
    * each drive's recent history, thinned (:func:`history_points`), for the sparklines, the
      bad-block trend and ``ssdfleet status --drive``. Read again only when History has
      accepted a sample or the set of drives changed (a snapshot comes every 15 s, a sample
      every 10 minutes). Without a History, no drive has history (``None``: not asked).
    """

    def __init__(self, history: Any = None, window_seconds: float = HISTORY_WINDOW_SECONDS) -> None:
        self._history = history
        self._window = window_seconds
        self._lock = threading.Lock()
        # saved before a restart: a flag still up at the first update keeps its time
        self._since: Dict[Tuple[str, str], float] = dict(history.flag_times()) if history is not None else {}
        self._points: Dict[str, List[Dict[str, Any]]] = {}
        self._points_key: Optional[Tuple[int, Tuple[str, ...]]] = None
        # per drive, the diskstats readings of the last LATENCY_KEEP_SECONDS: (time, IoStats)
        self._io: Dict[str, List[Tuple[float, Any]]] = {}

    def update(self, snap: Snapshot, now: Optional[float] = None) -> None:
        now = snap.created if now is None else now
        up = set()
        for d in snap.drives:
            view = drive_view(d, now)
            up.update((view.serial, f.key) for f in view.flags if f.key)
        points = self._read_history(snap, now)
        with self._lock:
            before = dict(self._since)
            since = {key: before.get(key, now) for key in up}
            self._since = since
            if points is not None:
                self._points = points
            self._note_io(snap, now)
        if since != before and self._history is not None:
            self._history.save_flag_times(since)

    def _read_history(self, snap: Snapshot, now: float) -> Optional[Dict[str, List[Dict[str, Any]]]]:
        """Each drive's thinned samples, or None when nothing changed since the last read."""
        if self._history is None:
            return None
        serials = tuple(sorted({d.serial for d in snap.drives}))
        key = (self._history.recorded_total, serials)
        if key == self._points_key:
            return None
        points = {serial: history_points(self._history.samples(serial, since=now - self._window), now)
                  for serial in serials}
        self._points_key = key
        return points

    def _note_io(self, snap: Snapshot, now: float) -> None:
        """Keep each drive's recent diskstats readings (a new one only when the counters
        moved on), for :meth:`latency`. Called with the lock held."""
        io: Dict[str, List[Tuple[float, Any]]] = {}
        for d in snap.drives:
            if d.io is None:
                continue
            when = next((d.last_poll[name] for name in _IO_SOURCES if name in d.last_poll), now)
            kept = [(t, x) for t, x in self._io.get(d.serial, []) if when - t <= LATENCY_KEEP_SECONDS and t < when]
            if not kept or kept[-1][1] != d.io:
                kept.append((when, d.io))
            io[d.serial] = kept
        self._io = io

    def latency(self, serial: str) -> Optional[Tuple[Optional[float], Optional[float], float]]:
        """(seconds per write, seconds per flush, over how many seconds) between the drive's
        oldest kept diskstats reading and its newest, when they are at least
        LATENCY_MIN_SPAN_SECONDS apart; None before that."""
        with self._lock:
            kept = self._io.get(serial) or []
        if len(kept) < 2 or kept[-1][0] - kept[0][0] < LATENCY_MIN_SPAN_SECONDS:
            return None
        write, flush = io_latency(kept[0][1], kept[-1][1])
        return write, flush, kept[-1][0] - kept[0][0]

    def since(self, serial: str, key: str) -> Optional[float]:
        with self._lock:
            return self._since.get((serial, key))

    def history(self, serial: str) -> Optional[List[Dict[str, Any]]]:
        """The drive's thinned history as of the last snapshot; None without a History."""
        if self._history is None:
            return None
        with self._lock:
            return list(self._points.get(serial, ()))




def flagged_first(views: Sequence[Any]) -> List[Any]:
    """Critical drives first, then warnings, then drives to watch, then the rest; by device
    within each. Takes DriveView objects or their JSON dicts."""
    def key(v: Any):
        get = v.get if isinstance(v, dict) else lambda name: getattr(v, name, None)
        watch = 1 if (get("severity") or OK) == OK and get("watch") else 0
        return (-health.severity_rank(get("severity") or OK), -watch, get("device") or "")
    return sorted(views, key=key)


def series_change(points: Sequence[Dict[str, Any]], name: str) -> Optional[Dict[str, float]]:
    """First and last known values of ``name`` in history points, with their times:
    ``{"first", "last", "first_ts", "last_ts", "change"}``; None with fewer than two values."""
    known = [(p["ts"], p[name]) for p in points if p.get(name) is not None]
    if len(known) < 2:
        return None
    (t0, v0), (t1, v1) = known[0], known[-1]
    return {"first": v0, "last": v1, "first_ts": t0, "last_ts": t1, "change": v1 - v0}


def worst(views: List[DriveView]) -> str:
    return health.worst_severity(v.severity for v in views)


# -- formatting shared by the page and the terminal -------------------------------------

def human_bytes(n: Optional[float]) -> str:
    """Decimal units, as drives and their vendors count (a 500 GB drive is 500e9 bytes)."""
    if n is None:
        return "-"
    for unit in ("B", "kB", "MB", "GB", "TB", "PB"):
        if abs(n) < 1000 or unit == "PB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000.0
    return "-"


def human_duration(seconds: Optional[float]) -> str:
    if seconds is None:
        return "-"
    s = max(0.0, float(seconds))
    if s < 90:
        return f"{s:.0f} s"
    if s < 90 * 60:
        return f"{s / 60:.0f} min"
    if s < 48 * 3600:
        return f"{s / 3600:.1f} h"
    if s < 730 * 86400:
        return f"{s / 86400:.0f} days"
    return f"{s / (365.25 * 86400):.1f} years"


def since_text(since: Optional[float], now: float) -> str:
    """``for 2.5 h, since 2026-11-23 04:10 UTC``; empty when the agent has no start time."""
    if since is None:
        return ""
    return f"for {human_duration(now - since)}, since {utc_time(since)}"


def utc_date(ts: Optional[float]) -> str:
    return "-" if ts is None else time.strftime("%Y-%m-%d", time.gmtime(ts))


def utc_time(ts: Optional[float]) -> str:
    return "-" if ts is None else time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(ts))


def describe_input(name: str, value: float) -> str:
    """A projection input in words a person checks against the drive's datasheet; the unit
    follows from the name (``*_bytes``, ``*_ratio``, ``*_per_second``)."""
    if name == "now":
        return utc_time(value)
    if name == "nand_domain":  # a 0/1 flag
        return "yes: counted in NAND bytes" if value else "no: counted in host bytes"
    if name.endswith("_bytes_per_second"):  # host and NAND write rates alike
        return f"{human_bytes(value * 86400)}/day"
    if name == "life_slope_per_second":
        # the share of the drive's life used per day (a fall of life left is positive here)
        return f"{-value * 86400 * 100:.3g}%" if value <= 0 else f"none: life left rising {value * 86400 * 100:.3g}% a day"
    if name == "bytes_per_percent":  # the label says "per 1% of life"
        return human_bytes(value)
    if name.startswith("write_amplification"):
        return f"{value:.2f}"
    if name.endswith("_bytes"):
        return human_bytes(value)
    if name.endswith("_ratio"):
        return percent(value, 2)
    if name == "pe_cycles":
        return f"{value:.0f} P/E cycles"
    return f"{value:.4g}"


# -- the same in words a DBA reads (the page and ``ssdfleet status``; the API keeps the keys) --

def method_label(p: Dict[str, Any]) -> str:
    """A projection method named by what it reckons from: "from NAND writes" (observed, NAND
    bytes), "from host writes" (observed, host bytes), "from the rated P/E cycles", "from the
    rated TBW" and "from the trend" (of life left over the agent's history)."""
    inputs = p.get("inputs") or {}
    method = p.get("method")
    if method == "observed":
        return "from NAND writes" if inputs.get("nand_domain") else "from host writes"
    if method == "rated":
        if "pe_cycles" in inputs:
            return "from the rated P/E cycles"
        if "tbw_bytes" in inputs:
            return "from the rated TBW"
        return "from the rating"
    if method == "trend":
        return "from the trend"
    return str(method)


# What each projection input is, for a person: label, and for the domain-dependent ones
# ("written_bytes" counts NAND or host bytes) the label per domain.
_INPUT_WORDS: Dict[str, str] = {
    "life_left_ratio": "life left",
    "life_used_ratio": "life used",
    "min_life_used_ratio": "trusted once life used reaches",
    "bytes_per_percent": "written per 1% of life",
    "tbw_bytes": "rated endurance (TBW)",
    "pe_cycles": "rated P/E cycles",
    "capacity_bytes": "capacity",
    "nand_endurance_bytes": "NAND endurance (capacity x P/E)",
    "write_amplification": "write amplification",
    "write_amplification_used": "write amplification now",
    "nand_write_rate_bytes_per_second": "NAND writes",
    "nand_endurance_remaining_bytes": "NAND writes left",
    "life_slope_per_second": "life used a day",
}
_DOMAIN_WORDS: Dict[str, Tuple[str, str]] = {  # NAND, host
    "written_bytes": ("NAND written", "host written"),
    "write_rate_bytes_per_second": ("NAND writes", "host writes"),
    "endurance_total_bytes": ("rated NAND writes", "rated host writes"),
}


def input_rows(p: Dict[str, Any]) -> List[Tuple[str, str]]:
    """A projection's inputs as (what, value) in words, in the order the method used them,
    then the host writes it found still to go: what the page and ``status --drive`` show."""
    inputs = p.get("inputs") or {}
    nand = bool(inputs.get("nand_domain"))
    rows = []
    for name, value in inputs.items():
        if name in ("now", "nand_domain"):
            continue  # the time is the page's, the domain is in the method's name
        if name == "endurance_total_bytes" and nand and "nand_endurance_bytes" in inputs:
            continue  # in NAND bytes the rated total is capacity x P/E, shown just before
        if name in _DOMAIN_WORDS:
            label = _DOMAIN_WORDS[name][0 if nand else 1]
        else:
            label = _INPUT_WORDS.get(name, name.replace("_", " "))
        if any(label == shown for shown, _ in rows):
            continue  # a NAND-domain method carries its NAND rate twice (projection._in_host_bytes)
        rows.append((label, describe_input(name, value)))
    if p.get("endurance_remaining_bytes") is not None:
        rows.append(("host writes left", human_bytes(p["endurance_remaining_bytes"])))
    return rows


# Error and defect counters by what they say about the drive. Media: the flash could not give
# data back. Reallocations: blocks the drive retired and replaced from its spare (wear, the
# normal end of flash). Link: the cable, backplane or controller between host and drive, not
# the flash (SATA CRC errors, command timeouts): never counted as bad blocks.
ERROR_CLASSES: Tuple[Tuple[str, str, Tuple[Tuple[str, str], ...]], ...] = (
    ("media", "media errors", (
        ("media_errors", "media errors"),
        ("reported_uncorrectable", "uncorrectable reads"),
        ("offline_uncorrectable", "unreadable sectors found offline"),
        ("pending", "sectors waiting to be remapped"),
    )),
    ("reallocations", "reallocations", (
        ("reallocated", "reallocated sectors"),
        ("reallocation_events", "reallocation events"),
        ("grown_defect", "grown defects"),
        ("dynamic_bad_block", "bad blocks grown in service"),
        ("program_fail", "program failures"),
        ("erase_fail", "erase failures"),
        ("static_bad_block", "factory bad blocks"),
    )),
    ("link", "cable errors", (
        ("udma_crc_errors", "cable CRC errors"),
        ("command_timeout", "command timeouts"),
    )),
)


_ONE = {"media errors": "media error", "uncorrectable reads": "uncorrectable read",
        "unreadable sectors found offline": "unreadable sector found offline",
        "sectors waiting to be remapped": "sector waiting to be remapped",
        "reallocated sectors": "reallocated sector", "reallocation events": "reallocation event",
        "grown defects": "grown defect", "bad blocks grown in service": "bad block grown in service",
        "program failures": "program failure", "erase failures": "erase failure",
        "factory bad blocks": "factory bad block", "cable CRC errors": "cable CRC error",
        "command timeouts": "command timeout"}


def counted(n: int, words: str) -> str:
    """``3 media errors``, ``1 media error``: a count with its words (ERROR_CLASSES)."""
    return f"{n} {_ONE.get(words, words) if n == 1 else words}"


def error_classes(v: Any) -> Dict[str, List[Tuple[str, int]]]:
    """The drive's counters by class (see ERROR_CLASSES), each as (words, count), only those
    the drive reports; takes a DriveView or its JSON dict."""
    get = (lambda name: v.get(name)) if isinstance(v, dict) else (lambda name: getattr(v, name, None))
    counts: Dict[str, Any] = dict(get("defects") or {})
    if get("media_errors") is not None:
        counts["media_errors"] = get("media_errors")
    out: Dict[str, List[Tuple[str, int]]] = {}
    for key, _, members in ERROR_CLASSES:
        found = [(words, int(counts[name])) for name, words in members if counts.get(name) is not None]
        if found:
            out[key] = found
    return out
