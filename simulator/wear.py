"""The wear model: what a simulated drive looks like at any simulated time.

Pure functions of (drive spec, time), with no stored state, so that a fake tool started at any
moment (a new process for every call) answers consistently, and so that the test can ask the
model for its own ground truth (when does life left reach 0?).

The model, per drive:

* Host writes follow a daily cycle around an average (``writes_per_day``): the rate at time
  ``t`` is ``avg x (1 + swing x sin(2 pi t / day))``. Its integral has a closed form, so host
  bytes written at any time cost a few floating-point operations.
* NAND bytes = host bytes x write amplification (constant per drive).
* Life used = NAND bytes / (capacity x rated P/E cycles). This is how the vendors rate the
  Shannon card (capacity x 10,000, simulator/catalogue.py's Shannon test) and how the ZIL post
  reasons about the Intel 320/335.
* Bad blocks grow late: nothing beyond the factory figure until 75% of life is used, then
  quadratically, eating into the spare pool (which is what turns spare/overprovision down).
* Temperature follows the load of the daily cycle between an idle and a busy figure.
* Shannon cards protect themselves: with 3% of life left the driver drops to reduced-write
  (writes throttled to a quarter), at 0% to read-only (no more writes). Other drives keep
  accepting writes past their rating, as real ones do (life left stays at 0, an NVMe drive's
  percentage used keeps climbing to 255).

Units are base units throughout: bytes, seconds, ratios 0..1, degrees Celsius.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Dict, Optional, Tuple

DAY = 86400.0

ACCESS_READWRITE = "readwrite"
ACCESS_REDUCED_WRITE = "reduced_write"
ACCESS_READONLY = "readonly"

# Shannon's self-protection thresholds, as life used (1 - life left).
REDUCED_WRITE_AT = 0.97
READONLY_AT = 1.0
REDUCED_WRITE_FACTOR = 0.25

# Bad blocks start growing once this much of the life is used.
LATE_LIFE_AT = 0.75


@dataclass(frozen=True)
class DriveSpec:
    """One simulated drive. ``t0`` is the simulated time the simulation starts; the drive has
    then already used ``start_life_used`` of its life (written at the same amplification)."""

    device: str  # what the tool is called with, without /dev/: sda, nvme0, scta
    catalogue: str  # key in simulator.catalogue.CATALOGUE
    serial: str
    kind: str  # ata, nvme, shannon
    model: str
    capacity_bytes: int
    pe_cycles: float
    write_amplification: float
    writes_per_day: float  # host bytes, on average
    t0: float
    born: float  # simulated time the drive was first powered on
    start_life_used: float = 0.0
    daily_swing: float = 0.5  # amplitude of the daily cycle, 0..<1
    read_ratio: float = 0.4  # host bytes read per host byte written
    power_cycles: int = 12
    write_cache: bool = True
    idle_celsius: float = 30.0
    busy_celsius: float = 45.0
    factory_bad_ratio: float = 0.0
    late_bad_ratio: float = 0.03  # grown bad blocks (fraction of all blocks) at 100% used
    spare_pool_ratio: float = 0.07  # spare blocks, as a fraction of all blocks
    io_size_bytes: int = 16384
    write_latency_cache_on: float = 68e-6  # the LITEON cache test: 14,640 fsync/s with the cache on
    write_latency_cache_off: float = 1.9e-3  # the LITEON cache test: 527 fsync/s with the cache off
    read_latency: float = 120e-6
    extra: Dict[str, Any] = field(default_factory=dict)

    @property
    def self_protecting(self) -> bool:
        """Only Shannon cards switch to reduced-write and read-only themselves."""
        return self.kind == "shannon"

    @property
    def nand_budget_bytes(self) -> float:
        return float(self.capacity_bytes) * float(self.pe_cycles)

    @property
    def host_budget_bytes(self) -> float:
        """Host bytes that use up the whole rated life at this drive's amplification."""
        return self.nand_budget_bytes / self.write_amplification

    @property
    def start_host_written(self) -> float:
        return self.start_life_used * self.host_budget_bytes

    def to_dict(self) -> Dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> DriveSpec:
        return cls(**data)


@dataclass(frozen=True)
class DriveState:
    """A drive at one simulated moment: what its tools would report, before rounding."""

    t: float
    host_written: float
    host_read: float
    nand_written: float
    life_used: float  # may pass 1 on drives that keep writing
    life_left: float  # 0..1
    grown_bad_ratio: float
    bad_block_ratio: float
    spare_left: float
    access_mode: str
    write_rate: float  # host bytes per second at this instant
    load: float  # 0..1, for temperature
    celsius: float
    power_on_seconds: float
    write_cache: bool


def _avg_rate(spec: DriveSpec) -> float:
    return spec.writes_per_day / DAY


def cumulative_writes(spec: DriveSpec, t: float) -> float:
    """Host bytes the daily cycle writes from ``t0`` to ``t``, before any throttling."""
    if t <= spec.t0:
        return 0.0
    w = 2.0 * math.pi / DAY
    swing = spec.daily_swing
    # integral of avg * (1 + swing sin(w s)) ds from t0 to t
    return _avg_rate(spec) * ((t - spec.t0) + swing / w * (math.cos(w * spec.t0) - math.cos(w * t)))


def _instant_rate(spec: DriveSpec, t: float) -> float:
    return _avg_rate(spec) * (1.0 + spec.daily_swing * math.sin(2.0 * math.pi * t / DAY))


def _solve(spec: DriveSpec, target: float) -> Optional[float]:
    """First time the unthrottled cumulative writes reach ``target`` (bisection; the function
    is non-decreasing because the swing is below 1)."""
    if target <= 0:
        return spec.t0
    if _avg_rate(spec) <= 0:
        return None
    lo, hi = spec.t0, spec.t0 + DAY
    for _ in range(80):  # doubling: 2^80 days is beyond any drive
        if cumulative_writes(spec, hi) >= target:
            break
        lo, hi = hi, spec.t0 + (hi - spec.t0) * 2.0
    else:
        return None
    for _ in range(100):  # bisection to well under a second
        mid = (lo + hi) / 2.0
        if cumulative_writes(spec, mid) >= target:
            hi = mid
        else:
            lo = mid
        if hi - lo < 0.01:
            break
    return hi


@dataclass(frozen=True)
class _Phases:
    """When a self-protecting drive enters reduced-write and read-only (None: never)."""

    reduced_at: Optional[float]
    readonly_at: Optional[float]


def _phases(spec: DriveSpec) -> _Phases:
    if not spec.self_protecting:
        return _Phases(None, None)
    budget = spec.host_budget_bytes
    start = spec.start_host_written
    reduced_target = REDUCED_WRITE_AT * budget - start
    reduced_at = _solve(spec, reduced_target)
    if reduced_at is None:
        return _Phases(None, None)
    # After reduced_at writes come at REDUCED_WRITE_FACTOR of the cycle.
    at_reduced = cumulative_writes(spec, reduced_at)
    remaining = READONLY_AT * budget - start - max(reduced_target, 0.0)
    readonly_at = _solve(spec, at_reduced + remaining / REDUCED_WRITE_FACTOR)
    return _Phases(reduced_at, readonly_at)


def host_written(spec: DriveSpec, t: float, phases: Optional[_Phases] = None) -> Tuple[float, str, float]:
    """(host bytes written, access mode, throttle factor) at ``t``."""
    p = phases if phases is not None else _phases(spec)
    base = spec.start_host_written
    if p.reduced_at is None or t < p.reduced_at:
        return base + cumulative_writes(spec, t), ACCESS_READWRITE, 1.0
    before = cumulative_writes(spec, p.reduced_at)
    if p.readonly_at is None or t < p.readonly_at:
        after = cumulative_writes(spec, t) - before
        return base + before + REDUCED_WRITE_FACTOR * after, ACCESS_REDUCED_WRITE, REDUCED_WRITE_FACTOR
    after = cumulative_writes(spec, p.readonly_at) - before
    return base + before + REDUCED_WRITE_FACTOR * after, ACCESS_READONLY, 0.0


def state_at(spec: DriveSpec, t: float, write_cache: Optional[bool] = None) -> DriveState:
    """The drive at simulated time ``t`` (``t`` before ``t0`` is read as ``t0``)."""
    t = max(t, spec.t0)
    written, mode, factor = host_written(spec, t)
    nand = written * spec.write_amplification
    used = nand / spec.nand_budget_bytes
    late = max(0.0, min(used, 1.5) - LATE_LIFE_AT) / (1.0 - LATE_LIFE_AT)
    grown = spec.late_bad_ratio * late * late
    spare_left = max(0.0, 1.0 - grown / spec.spare_pool_ratio) if spec.spare_pool_ratio > 0 else 1.0
    rate = _instant_rate(spec, t) * factor
    peak = _avg_rate(spec) * (1.0 + spec.daily_swing)
    load = rate / peak if peak > 0 else 0.0
    return DriveState(
        t=t,
        host_written=written,
        host_read=written * spec.read_ratio,
        nand_written=nand,
        life_used=used,
        life_left=max(0.0, 1.0 - used),
        grown_bad_ratio=grown,
        bad_block_ratio=spec.factory_bad_ratio + grown,
        spare_left=spare_left,
        access_mode=mode,
        write_rate=rate,
        load=load,
        celsius=spec.idle_celsius + (spec.busy_celsius - spec.idle_celsius) * load,
        power_on_seconds=max(0.0, t - spec.born),
        write_cache=spec.write_cache if write_cache is None else write_cache,
    )


def wearout_time(spec: DriveSpec) -> Optional[float]:
    """Ground truth: the simulated time at which life left reaches 0 (None: never)."""
    if spec.self_protecting:
        return _phases(spec).readonly_at
    return _solve(spec, spec.host_budget_bytes - spec.start_host_written)


def average_write_rate(spec: DriveSpec, start: float, end: float) -> float:
    """Host bytes per second between two simulated times, by the model (throttling included)."""
    if end <= start:
        raise ValueError("end must be after start")
    p = _phases(spec)
    return (host_written(spec, end, p)[0] - host_written(spec, start, p)[0]) / (end - start)


def life_percent_left(state: DriveState) -> int:
    """Life left as drives print it: whole percent, rounded down (a drive never claims more
    life than it has)."""
    return max(0, min(100, int(math.floor(state.life_left * 100.0 + 1e-9))))
