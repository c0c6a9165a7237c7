"""Wear-out projection: when will a drive use up its life at its recent write rate?

Three estimates, each a pure function returning a :class:`Projection` that carries every input
it used (so the API and the HTML page can show the arithmetic) and a note when it cannot
answer. ``wearout_timestamp`` is ``None`` whenever the estimate is not meaningful: no life used
yet, no writes, missing inputs, or life already at 0 (the drive is worn out *now*; the
``ssd_life_left_ratio`` metric says so more plainly than a timestamp could).

1. observed: bytes written per 1% of life used so far, times the percent left, over the recent
   write rate. Published endurance tests reason this way (StorageReview, "SSD Performance
   Review - 270TB Written", https://storagereview.com/review/ssd-performance-review-270tb-written:
   270 TB took 79% of a 120 GB drive's life, so 21% is worth ~71.8 TB more).
2. rated: the vendor's endurance (TBW, or capacity x P/E cycles of NAND) minus what has been
   written, over the recent write rate (https://developer.aliyun.com/article/17226: 1.2 TB x
   10,000 lasts ~200 days at that test's rate; Aaron Toponce, "ZFS Administration, Part III",
   https://pthree.org/2012/12/06/zfs-administration-part-iii-the-zfs-intent-log/: 300 GB x
   5,000 P/E at 3 MB/s lasts ~15 years).
3. trend: the least-squares slope of life left over the agent's own history, extrapolated to
   0 as Prometheus' ``predict_linear`` does.

Preference (see :func:`project_all`): observed, then rated, then trend. Observed uses the
drive's own wear indicator, so it already includes the real write amplification, the real
NAND and the real workload, and needs no table; but life left is reported in whole percent,
so it is only trusted after ``min_life_used`` (5%) of life is gone. Rated is right from day
one but only as good as the table and the write amplification we know. Trend comes last:
with 1% steps it is flat for weeks and then jumps, and it forgets everything before its
window.

Units: bytes are decimal bytes as the drive counts them; rates are bytes per second; times
are unix seconds.
"""

from __future__ import annotations

import dataclasses
from typing import Dict, List, Optional, Tuple, Union

from agent.endurance import RatedEndurance
from collectors.model import DriveReading, Projection

OBSERVED = "observed"
RATED = "rated"
TREND = "trend"

# Life left comes in whole percent; with less than 5 points used the quantisation alone can
# be off by 20% or more, so the observed method waits until then.
DEFAULT_MIN_LIFE_USED = 0.05


def remaining_host_writes(
    life_left: Optional[float], host_written: Optional[float]
) -> Optional[float]:
    """Host bytes the drive can still take if the life used so far scales linearly:
    ``host_written x life_left / (1 - life_left)``.

    ``None`` when it cannot be said: inputs missing, no life used yet, or a ratio out of 0..1.
    """
    if life_left is None or host_written is None:
        return None
    if not 0.0 <= life_left < 1.0 or host_written < 0:
        return None
    return float(host_written) * life_left / (1.0 - life_left)


def _none(method: str, note: str, inputs: Dict[str, float], **fields) -> Projection:
    return Projection(method=method, wearout_timestamp=None, inputs=inputs, note=note, **fields)


def _worn_out(life_left: Optional[float]) -> bool:
    return life_left is not None and life_left <= 0.0


def project_observed(
    reading: DriveReading,
    now: float,
    host_write_rate: Optional[float],
    nand_write_rate: Optional[float] = None,
    min_life_used: float = DEFAULT_MIN_LIFE_USED,
) -> Projection:
    """Extrapolate the drive's own wear: bytes per 1% of life so far x percent left / rate.

    Counts NAND bytes against the NAND write rate when both are known, else host bytes
    against the host rate; never one against the other.
    """
    life_left = reading.life_left_ratio
    inputs: Dict[str, float] = {"now": float(now), "min_life_used_ratio": float(min_life_used)}
    if life_left is not None:
        inputs["life_left_ratio"] = float(life_left)
    if reading.nand_written_bytes is not None and nand_write_rate is not None:
        written, rate, domain = reading.nand_written_bytes, nand_write_rate, "NAND"
        inputs["nand_domain"] = 1.0
    else:
        written, rate, domain = reading.host_written_bytes, host_write_rate, "host"
        inputs["nand_domain"] = 0.0
    if written is not None:
        inputs["written_bytes"] = float(written)
    if rate is not None:
        inputs["write_rate_bytes_per_second"] = float(rate)

    if life_left is None:
        return _none(OBSERVED, "drive reports no life left figure", inputs)
    if _worn_out(life_left):
        return _none(OBSERVED, "life left is 0: the drive is worn out now", inputs)
    if life_left > 1.0:
        return _none(OBSERVED, f"life left {life_left} is above 1", inputs)
    life_used = 1.0 - life_left
    inputs["life_used_ratio"] = life_used
    if written is None:
        return _none(OBSERVED, f"drive reports no {domain} bytes written", inputs)
    if life_used <= 0.0:
        return _none(OBSERVED, "no life used yet: nothing to extrapolate from", inputs)
    remaining = remaining_host_writes(life_left, written)  # same formula for NAND bytes
    if remaining is None:
        return _none(OBSERVED, f"{domain} bytes written is negative", inputs)
    inputs["bytes_per_percent"] = float(written) / (life_used * 100.0)
    fields = {"endurance_remaining_bytes": remaining, "write_rate_bytes_per_second": rate}
    if life_used < min_life_used:
        # Inside the quantisation step the extrapolation says nothing (1% used of a 240 GB
        # Intel 335 extrapolates to 2.8 times its rating): kept in the inputs, never given as
        # the bytes left.
        inputs["extrapolated_remaining_bytes"] = float(remaining)
        return _none(
            OBSERVED,
            f"only {life_used:.1%} of life used; life left is reported in whole percent, "
            f"so the observed method waits for {min_life_used:.0%}",
            inputs,
            write_rate_bytes_per_second=rate,
        )
    if rate is None:
        return _none(
            OBSERVED, "no write rate yet (needs history spanning an hour)", inputs, **fields
        )
    if rate <= 0:
        return _none(
            OBSERVED, "no writes in the rate window: wear is not advancing", inputs, **fields
        )
    return Projection(
        method=OBSERVED,
        wearout_timestamp=float(now) + remaining / rate,
        endurance_remaining_bytes=remaining,
        write_rate_bytes_per_second=float(rate),
        inputs=inputs,
        note=f"{domain} bytes: {inputs['bytes_per_percent']:.4g} per 1% of life",
    )


def _write_amplification(reading: DriveReading) -> Optional[float]:
    """Lifetime write amplification: the drive's own figure, else NAND / host bytes, unless the
    normaliser found that ratio implausible (then it is not one to project with)."""
    if reading.write_amplification is not None and reading.write_amplification > 0:
        return float(reading.write_amplification)
    if "write_amplification_rejected" in reading.extra or "write_amplification_withheld" in reading.extra:
        return None
    host, nand = reading.host_written_bytes, reading.nand_written_bytes
    if host and nand:
        return float(nand) / float(host)
    return None


def _rated_terms(
    reading: DriveReading,
    rated: RatedEndurance,
    inputs: Dict[str, float],
    note_parts: List[str],
    host_write_rate: Optional[float],
    nand_write_rate: Optional[float],
    write_amplification: Optional[float] = None,
) -> Union[str, Tuple[float, Optional[int], Optional[float], str]]:
    """(endurance total, bytes written, write rate, "host" or "NAND") the rating is counted
    in, or why there are none; the figures used go into ``inputs``, assumptions into
    ``note_parts``."""
    if rated.tbw_bytes is not None:
        inputs["tbw_bytes"] = float(rated.tbw_bytes)
        return rated.tbw_bytes, reading.host_written_bytes, host_write_rate, "host"
    if rated.pe_cycles is None and not rated.nand_bytes:
        return "rating has neither TBW nor P/E cycles"
    if rated.nand_bytes:
        nand_total = float(rated.nand_bytes)
    else:
        inputs["pe_cycles"] = float(rated.pe_cycles)
        capacity = reading.capacity_bytes
        if not capacity:
            return "rated in P/E cycles but the capacity is unknown"
        inputs["capacity_bytes"] = float(capacity)
        nand_total = float(capacity) * rated.pe_cycles
    inputs["nand_endurance_bytes"] = nand_total
    if reading.nand_written_bytes is not None and nand_write_rate is not None:
        return nand_total, reading.nand_written_bytes, nand_write_rate, "NAND"
    wa = write_amplification or _write_amplification(reading)
    if wa is None:
        wa = 1.0
        note_parts.append("write amplification unknown, assumed 1.0")
    inputs["write_amplification"] = wa
    return nand_total / wa, reading.host_written_bytes, host_write_rate, "host"


def project_rated(
    reading: DriveReading,
    rated: Optional[RatedEndurance],
    now: float,
    host_write_rate: Optional[float],
    nand_write_rate: Optional[float] = None,
    write_amplification: Optional[float] = None,
) -> Projection:
    """Rated endurance minus bytes written, over the recent write rate.

    TBW is counted in host bytes. Capacity x P/E cycles is NAND bytes: counted against NAND
    bytes written and the NAND rate when both are known, else divided by
    ``write_amplification`` (the one :func:`project_all` uses for every figure; the lifetime
    one when not given; 1.0 when unknown, which the note says) to compare with host bytes. When
    the rating is used up but the drive still reports life left, the projection is *now*:
    past its rating is exactly what an operator wants to hear about.
    """
    inputs: Dict[str, float] = {"now": float(now)}
    life_left = reading.life_left_ratio
    if life_left is not None:
        inputs["life_left_ratio"] = float(life_left)
    if rated is None:
        return _none(
            RATED, "no rated endurance known for this model (add one in the config)", inputs
        )
    if _worn_out(life_left):
        return _none(RATED, "life left is 0: the drive is worn out now", inputs)

    note_parts = [rated.source]
    terms = _rated_terms(reading, rated, inputs, note_parts, host_write_rate, nand_write_rate,
                         write_amplification)
    if isinstance(terms, str):
        return _none(RATED, terms, inputs)
    total, written, rate, domain = terms
    inputs["nand_domain"] = 1.0 if domain == "NAND" else 0.0
    inputs["endurance_total_bytes"] = float(total)
    if written is None:
        return _none(RATED, f"drive reports no {domain} bytes written", inputs)
    inputs["written_bytes"] = float(written)
    remaining = float(total) - float(written)
    if rate is not None:
        inputs["write_rate_bytes_per_second"] = float(rate)
    fields = {"endurance_remaining_bytes": remaining, "write_rate_bytes_per_second": rate}
    if remaining <= 0:
        note_parts.append(f"rated endurance used up ({domain} bytes)")
        return Projection(RATED, float(now), inputs=inputs, note="; ".join(note_parts), **fields)
    if rate is None:
        return _none(RATED, "no write rate yet (needs history spanning an hour)", inputs, **fields)
    if rate <= 0:
        return _none(RATED, "no writes in the rate window: wear is not advancing", inputs, **fields)
    note_parts.append(f"{domain} bytes")
    return Projection(
        method=RATED,
        wearout_timestamp=float(now) + remaining / rate,
        endurance_remaining_bytes=remaining,
        write_rate_bytes_per_second=float(rate),
        inputs=inputs,
        note="; ".join(note_parts),
    )


def project_trend(
    life_slope_per_second: Optional[float], life_left: Optional[float], now: float
) -> Projection:
    """Extrapolate life left linearly to 0, as ``predict_linear(life_left[30d], ...)``."""
    inputs: Dict[str, float] = {"now": float(now)}
    if life_left is not None:
        inputs["life_left_ratio"] = float(life_left)
    if life_slope_per_second is not None:
        inputs["life_slope_per_second"] = float(life_slope_per_second)
    if life_left is None:
        return _none(TREND, "drive reports no life left figure", inputs)
    if _worn_out(life_left):
        return _none(TREND, "life left is 0: the drive is worn out now", inputs)
    if life_slope_per_second is None:
        return _none(TREND, "not enough history for a trend", inputs)
    if life_slope_per_second >= 0:
        return _none(TREND, "life left is not falling over the window", inputs)
    return Projection(
        method=TREND,
        wearout_timestamp=float(now) + float(life_left) / -float(life_slope_per_second),
        inputs=inputs,
        note="least-squares slope of life left over the history window",
    )


def project_all(
    reading: DriveReading,
    now: float,
    history,
    rated: Optional[RatedEndurance] = None,
    min_life_used: float = DEFAULT_MIN_LIFE_USED,
) -> Tuple[Projection, ...]:
    """All three estimates in order of preference: observed, rated, trend (see module doc).

    ``history`` is a :class:`agent.history.History` (anything with ``write_rate``,
    ``nand_write_rate`` and ``life_slope``), or ``None`` when there is none yet.
    """
    serial = reading.identity
    host_rate = nand_rate = slope = None
    if history is not None:
        host_rate = history.write_rate(serial, now)
        nand_rate = history.nand_write_rate(serial, now)
        slope = history.life_slope(serial, now)
    wa = None
    if host_rate and nand_rate and host_rate > 0:
        wa = nand_rate / host_rate  # recent amplification: what the next writes will cost
    if wa is None or wa < 1.0:
        wa = _write_amplification(reading)
    # One write amplification for every NAND figure turned into host bytes (issue 29): the
    # rated total (:func:`rated_host_bytes`) and what is left of it, so the part is never
    # larger than the whole (a lifetime 1.45 for the total beside a recent 1.2 for the rest
    # gave 113-118% on seeds/000's card).
    projections = (
        project_observed(reading, now, host_rate, nand_rate, min_life_used=min_life_used),
        project_rated(reading, rated, now, host_rate, nand_rate, write_amplification=wa),
        project_trend(slope, reading.life_left_ratio, now),
    )
    return tuple(_in_host_bytes(p, host_rate, wa) for p in projections)


def rated_host_bytes(rated: Optional[RatedEndurance], reading: DriveReading,
                     projections: Tuple[Projection, ...] = ()) -> Optional[float]:
    """The rating in host bytes: TBW as given; capacity x P/E cycles (NAND bytes) divided by the
    write amplification the rated projection used (``projections`` from :func:`project_all`),
    else the drive's lifetime one, else 1.0."""
    if rated is None:
        return None
    if rated.tbw_bytes:
        return float(rated.tbw_bytes)
    if rated.nand_bytes:
        nand = float(rated.nand_bytes)
    elif rated.pe_cycles and reading.capacity_bytes:
        nand = float(rated.pe_cycles) * reading.capacity_bytes
    else:
        return None
    used = next((p.inputs for p in projections if p.method == RATED), {})
    wa = used.get("write_amplification_used") or used.get("write_amplification") or _write_amplification(reading)
    return nand / wa if wa and wa > 0 else nand


def _in_host_bytes(p: Projection, host_rate: Optional[float], wa: Optional[float]) -> Projection:
    """Exported figures are host bytes whatever domain a method worked in: the write rate is
    the host rate, and NAND bytes still to go become host bytes through the write
    amplification. The NAND figures stay in ``inputs`` so the date can still be defended."""
    changes: Dict[str, object] = {"write_rate_bytes_per_second": host_rate}
    if p.inputs.get("nand_domain") == 1.0:
        inputs = dict(p.inputs)
        if p.write_rate_bytes_per_second is not None:
            inputs["nand_write_rate_bytes_per_second"] = float(p.write_rate_bytes_per_second)
        remaining = p.endurance_remaining_bytes
        if remaining is not None:
            inputs["nand_endurance_remaining_bytes"] = float(remaining)
            changes["endurance_remaining_bytes"] = remaining / wa if wa and wa > 0 else None
            if wa:
                inputs["write_amplification_used"] = float(wa)
        changes["inputs"] = inputs
    return dataclasses.replace(p, **changes)


def best(projections) -> Optional[Projection]:
    """The first projection (in preference order) that has a wear-out time."""
    for projection in projections:
        if projection.wearout_timestamp is not None:
            return projection
    return None
