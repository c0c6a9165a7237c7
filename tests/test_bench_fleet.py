"""The benchmarks under bench/ start, and the fleet bench's backfill is data promtool takes.

No timing is asserted here (bench/ prints its figures); these tests only keep the benchmarks
runnable: every script answers ``--help``, and the OpenMetrics the fleet bench writes for its
history (hourly, and with ``--raw-history`` at the scrape step) is turned into a TSDB block by
the real ``promtool tsdb create-blocks-from openmetrics``, with as many samples as were written.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from tests.support.bench import load_fleet_scale

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(PROMTOOL is None, reason="promtool is not installed (Debian package prometheus)")

# A fixed, block-aligned "now", so that the ranges written below are the same on every run.
NOW = 1_790_000_000 - 1_790_000_000 % 7200


def _load_fleet_scale():
    return load_fleet_scale()


@pytest.mark.parametrize("script", sorted(p.name for p in BENCH.glob("*.py") if "argparse" in p.read_text()))
def test_every_bench_script_answers_help(script):
    proc = subprocess.run([sys.executable, str(BENCH / script), "--help"], cwd=ROOT, capture_output=True,
                          text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage:")


def _samples(path: Path) -> Counter:
    """{sample name: lines} of an OpenMetrics file."""
    names = Counter()
    for line in path.read_text().splitlines():
        if line and not line.startswith("#"):
            names[re.match(r"[^{ ]+", line).group(0)] += 1
    return names


def _timestamps(path: Path, name: str):
    return sorted({int(line.rsplit(" ", 1)[1]) for line in path.read_text().splitlines()
                   if line.startswith(name + "{")})


@pytest.fixture(scope="module")
def fleet_scale():
    return _load_fleet_scale()


@pytest.fixture(scope="module")
def fleet(fleet_scale):
    return fleet_scale.Fleet(hosts=3, per_host=2, now=float(NOW), seed=5)


def test_raw_history_adds_the_counters_at_every_step_and_keeps_the_hourly_figures_on_the_hour(
        fleet_scale, fleet, tmp_path):
    start = NOW - 3 * 7200  # a range inside the last 25 hours, before the last hour
    hourly, raw = tmp_path / "hourly.om", tmp_path / "raw.om"
    n_hourly = fleet_scale.write_history_file(fleet, start, hourly, 3600)
    n_raw = fleet_scale.write_history_file(fleet, start, raw, 60, raw=True)
    assert n_hourly == sum(_samples(hourly).values())
    assert n_raw == sum(_samples(raw).values())
    plain, dense = _samples(hourly), _samples(raw)
    assert "ssd_io_writes_completed_total" not in plain
    drives = fleet.drive_count
    for name in ("ssd_io_writes_completed_total", "ssd_io_write_time_seconds_total", "ssd_io_busy_seconds_total"):
        assert dense[name] == drives * 120, name  # every minute of the 2-hour range
        assert _timestamps(raw, name) == list(range(start, start + 7200, 60))
    # the recorded hourly figures are those the hourly groups write: on the hour, whatever the step
    for name in ("ssd:host_written_bytes:rate1h", "ssd:io_busy_seconds:rate1h"):
        assert dense[name] == plain[name] == drives * 2, name
        assert _timestamps(raw, name) == [start, start + 3600]
    # counters written at every step never go backwards
    by_series = {}
    for line in raw.read_text().splitlines():
        if line.startswith(("ssd_io_writes_completed_total{", "ssd_io_write_time_seconds_total{",
                            "ssd_io_busy_seconds_total{")):
            labels, value, ts = line.rsplit(" ", 2)
            by_series.setdefault(labels, []).append((int(ts), float(value)))
    assert len(by_series) == 3 * drives
    for points in by_series.values():
        values = [v for _, v in sorted(points)]
        assert values == sorted(values)


@pytest.mark.parametrize("step", ["0", "-60", "7", "60.5", "abc", ""])
def test_fleet_bench_refuses_a_step_that_does_not_divide_an_hour(step):
    """The hourly figures are written on the hour: a step that misses it would leave them out
    silently (and 0 would divide by zero). Refused before anything is started."""
    proc = subprocess.run([sys.executable, str(BENCH / "fleet_scale.py"), "--step", step, "--hosts", "1"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "argument --step" in proc.stderr
    assert "fleet:" not in proc.stdout


@needs_promtool
@pytest.mark.parametrize("raw", [False, True], ids=["hourly", "raw"])
def test_promtool_turns_the_backfill_into_a_block_with_every_sample(fleet_scale, fleet, tmp_path, raw):
    path = tmp_path / "range.om"
    n = fleet_scale.write_history_file(fleet, NOW - 3 * 7200, path, 60 if raw else 3600, raw=raw)
    assert n > 0
    data = tmp_path / "data"
    proc = subprocess.run([PROMTOOL, "tsdb", "create-blocks-from", "openmetrics", str(path), str(data)],
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    listing = subprocess.run([PROMTOOL, "tsdb", "list", str(data)], capture_output=True, text=True,
                             timeout=60, check=True).stdout
    _, *rows = [line.split() for line in listing.strip().splitlines()]
    assert rows, listing
    # columns: BLOCK ULID, MIN TIME, MAX TIME, DURATION, NUM SAMPLES, NUM CHUNKS, NUM SERIES, SIZE
    assert sum(int(row[4]) for row in rows) == n, listing


def test_the_bench_serves_at_least_the_agents_own_series_per_drive(fleet_scale):
    """Issue 33: the bench renders the real agent's density. Per catalogue model, a drive in the
    bench's exposition has at least the series the agent itself served for that model (the
    wear model adds the history-derived ones: write rate, wear-out date, endurance left), and
    every host carries the agent's own per-agent series, with a timestamp that follows now."""
    import re

    models = sorted({m for _, ms in fleet_scale.HOST_TYPES for m in ms})
    agent = fleet_scale.AgentSeries.capture(models, float(NOW))
    assert set(agent.agent_per_model) == set(models) and min(agent.agent_per_model.values()) >= 30
    assert "smartctl" in agent.collectors and "megaraid" not in agent.collectors  # failed in the capture
    fleet = fleet_scale.Fleet(hosts=len(models) * 4, per_host=2, now=float(NOW), seed=5, agent=agent,
                              stratified=True)
    plain = fleet_scale.Fleet(hosts=len(models) * 4, per_host=2, now=float(NOW), seed=5, stratified=True)
    later = NOW + 600
    body = fleet_scale.render_live(fleet, later).decode()
    serials = {spec.serial: spec.catalogue for _, drives in fleet.hosts for spec in drives}
    per_drive: Counter = Counter()
    for line in body.splitlines():
        m = re.search(r'serial="([^"]+)"', line)
        if m:
            per_drive[m.group(1)] += 1
    for serial, model in serials.items():
        assert per_drive[serial] >= agent.agent_per_model[model], (model, per_drive[serial])
    assert len(body.splitlines()) > len(fleet_scale.render_live(plain, later).splitlines())
    # the drives' poll stamps follow the render's now, not the capture's
    stamps = [float(v) for v in re.findall(r'^ssd_last_poll_timestamp_seconds\{[^}]*\} (\S+)$', body, re.M)]
    assert stamps and all(abs(v - later) < 120 for v in stamps)
    assert body.count('ssd_collector_success{') == len(fleet.hosts) * len(agent.collectors)


@pytest.mark.parametrize("line", ["", "garbage", "ssd_x{a=\"1\"}", "ssd_x{a=\"1\"} ", "{a=\"1\"} 1", "9bad 1"])
def test_the_agent_capture_refuses_a_line_that_is_not_a_sample(fleet_scale, line):
    """The bench builds its density from the agent's exposition: a line that is not a sample
    (empty, no value, no name, a truncated line) stops the capture with the line named."""
    with pytest.raises(ValueError, match="not an exposition sample"):
        fleet_scale._parse_sample(line)
    with pytest.raises(ValueError):
        fleet_scale.AgentSeries.from_exposition(f'ssd_drives 1\n{line or "x"}\n', {}, float(NOW))


@needs_promtool
def test_the_raw_window_ends_where_it_is_told(fleet_scale, fleet, tmp_path):
    """The raw window the bench writes before its live run ends at ``end`` (the moment the
    backfill starts), not at the fleet's now: minutes spent before it (ranking a week of lists)
    would otherwise lie between the window and the first live scrape."""
    end = float(NOW + 1800)
    data = tmp_path / "data"
    stats = fleet_scale.backfill_live(fleet, 5, 60, tmp_path, data, end=end)
    assert stats["samples"] > 0
    listing = subprocess.run([PROMTOOL, "tsdb", "list", str(data)], capture_output=True, text=True,
                             timeout=60, check=True).stdout
    _, *rows = [line.split() for line in listing.strip().splitlines()]
    assert rows, listing
    # MIN TIME and MAX TIME in milliseconds: five samples a minute apart, the last a step before end
    assert min(int(row[1]) for row in rows) == (end - 5 * 60) * 1000
    assert max(int(row[2]) for row in rows) == (end - 60) * 1000 + 1  # a block's max time is exclusive


@pytest.mark.parametrize("days", ["inf", "nan", "-1", "week"])
def test_fleet_bench_refuses_ranked_days_that_are_not_a_finite_count(days):
    proc = subprocess.run([sys.executable, str(BENCH / "fleet_scale.py"), "--ranked-days", days, "--hosts", "1"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "argument --ranked-days" in proc.stderr
    assert "fleet:" not in proc.stdout
