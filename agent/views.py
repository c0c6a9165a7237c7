"""What a person sees: one flat view per drive, with the reasons it is flagged.

Shared by ``/api/v1/drives``, the status page and ``ssdfleet status`` so all three agree on
"which drive, how bad, since when". The thresholds match the shipped alert rules
(deploy/prometheus/ssdfleet-alerts.yml); docs/runbooks.md explains them.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from agent.metrics import NVME_WARNING_BITS, effective_cache
from agent.model import Drive, Projection, Snapshot, drive_list
from collectors import write_cache

OK, WARNING, CRITICAL = "ok", "warning", "critical"
_RANK = {OK: 0, WARNING: 1, CRITICAL: 2}

LIFE_WARNING = 0.10
LIFE_CRITICAL = 0.03
WEAROUT_WARNING_DAYS = 30
WEAROUT_CRITICAL_DAYS = 7


@dataclass
class Flag:
    severity: str
    reason: str


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


def _projection_dict(p: Projection) -> Dict[str, Any]:
    return dataclasses.asdict(p)


def drive_view(d: Drive, now: float) -> DriveView:
    r = d.reading
    best = d.best_projection
    rate = best.write_rate_bytes_per_second if best else None
    if rate is None:
        rate = next((p.write_rate_bytes_per_second for p in d.projections
                     if p.write_rate_bytes_per_second is not None), None)
    health_times = [d.last_poll[c] for c in ("smartctl", "shannon") if c in d.last_poll]
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
        power_on_seconds=r.power_on_seconds,
        access_mode=r.access_mode,
        power_state=r.power_state,
        write_cache=effective_cache(d),
        write_cache_expected=d.write_cache_expected,
        write_cache_sources=[dataclasses.asdict(s) for s in d.write_cache],
        write_rate_bytes_per_second=rate,
        rated_endurance_bytes=d.rated_endurance_bytes,
        wearout_timestamp=best.wearout_timestamp if best else None,
        wearout_method=best.method if best else None,
        projections=[_projection_dict(p) for p in d.projections],
        data_age_seconds=(now - max(health_times)) if health_times else None,
        last_poll=dict(d.last_poll),
        sources=dict(r.sources),
        extra=dict(r.extra),
    )
    view.flags = flags_for(view, d, now)
    view.severity = max((f.severity for f in view.flags), key=_RANK.get, default=OK)
    return view


def flags_for(v: DriveView, d: Drive, now: float) -> List[Flag]:
    flags: List[Flag] = []
    r = d.reading
    if v.smart_healthy is False:
        flags.append(Flag(CRITICAL, "SMART overall health: FAILED"))
    if r.critical_warning:
        bits = [name for bit, name in NVME_WARNING_BITS if (r.critical_warning >> bit) & 1]
        flags.append(Flag(CRITICAL, "NVMe critical warning: " + ", ".join(bits or [hex(r.critical_warning)])))
    if v.access_mode == "readonly" or r.readonly:
        flags.append(Flag(CRITICAL, "drive is read-only"))
    elif v.access_mode == "reduced_write":
        flags.append(Flag(CRITICAL, "drive is in reduced-write mode"))
    if v.life_left_ratio is not None:
        if v.life_left_ratio < LIFE_CRITICAL:
            flags.append(Flag(CRITICAL, f"life left {v.life_left_ratio:.0%}"))
        elif v.life_left_ratio < LIFE_WARNING:
            flags.append(Flag(WARNING, f"life left {v.life_left_ratio:.0%}"))
    if v.wearout_timestamp is not None:
        days = (v.wearout_timestamp - now) / 86400
        if days < WEAROUT_CRITICAL_DAYS:
            flags.append(Flag(CRITICAL, f"projected wear-out in {max(days, 0):.1f} days ({v.wearout_method})"))
        elif days < WEAROUT_WARNING_DAYS:
            flags.append(Flag(WARNING, f"projected wear-out in {days:.0f} days ({v.wearout_method})"))
    if (v.spare_left_ratio is not None and v.spare_threshold_ratio is not None
            and v.spare_left_ratio <= v.spare_threshold_ratio):
        flags.append(Flag(CRITICAL, f"spare {v.spare_left_ratio:.0%} at or below threshold {v.spare_threshold_ratio:.0%}"))
    if v.write_cache is not None and write_cache.mismatch(v.write_cache, v.write_cache_expected):
        flags.append(Flag(CRITICAL, f"write cache {v.write_cache}, expected {v.write_cache_expected}"))
    for t in r.temperatures:
        if t.limit_celsius is not None and t.celsius >= t.limit_celsius:
            flags.append(Flag(WARNING, f"{t.sensor} temperature {t.celsius:.0f} C at or above limit {t.limit_celsius:.0f} C"))
    if v.media_errors:
        flags.append(Flag(WARNING, f"{v.media_errors} media errors"))
    return flags


def snapshot_views(snap: Snapshot, now: float) -> List[DriveView]:
    return [drive_view(d, now) for d in drive_list(snap)]


def worst(views: List[DriveView]) -> str:
    return max((v.severity for v in views), key=_RANK.get, default=OK)


def exit_code(severity: str) -> int:
    """Nagios plugin convention: 0 OK, 1 WARNING, 2 CRITICAL."""
    return _RANK[severity]
