"""Rates and slopes over a drive's history: pure functions of ``(ts, value)`` points."""

from __future__ import annotations

from typing import Optional, Sequence, Tuple


def counter_rate(
    points: Sequence[Tuple[float, float]], min_span_seconds: float = 3600.0
) -> Optional[float]:
    """Rate per second of a cumulative counter from ``(ts, value)`` points sorted by time.

    Uses the oldest point of the current run against the newest, which smooths over the whole
    window (a database host writes in bursts). A decrease means the counter was reset or the
    drive replaced, so the run restarts at the point after it. ``None`` when the run spans
    less than ``min_span_seconds``: two samples a minute apart say nothing about next month.
    """
    if not points:
        return None
    start = 0
    for i in range(1, len(points)):
        if points[i][1] < points[i - 1][1]:
            start = i
    oldest_ts, oldest_value = points[start]
    newest_ts, newest_value = points[-1]
    span = newest_ts - oldest_ts
    if span < min_span_seconds or span <= 0:
        return None
    return (newest_value - oldest_value) / span


def least_squares_slope(
    points: Sequence[Tuple[float, float]], min_span_seconds: float = 3600.0
) -> Optional[float]:
    """Least-squares slope (value per second) of ``(ts, value)`` points, as PromQL ``deriv``.

    ``None`` with fewer than two points or a span under ``min_span_seconds``.
    """
    if len(points) < 2:
        return None
    t0 = points[0][0]
    # shift time to the first point: unix timestamps squared lose precision in a double
    xs = [p[0] - t0 for p in points]
    ys = [float(p[1]) for p in points]
    if max(xs) - min(xs) < min_span_seconds:
        return None
    n = float(len(points))
    mean_x = sum(xs) / n
    mean_y = sum(ys) / n
    sxx = sum((x - mean_x) ** 2 for x in xs)
    if sxx <= 0:
        return None
    sxy = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys))
    return sxy / sxx
