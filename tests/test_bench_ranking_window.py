"""bench/ranking_window.py writes the week the ranking rules would record and asks the panels.

No timing is asserted (the script prints its figures). What is checked is that the lists it
writes are the ones the rules choose from the fleet model (every drive in a list ranks ahead of
every drive left out, by the model's own readings), that the worst churn changes all ten at
every evaluation, that the four week-long panels of the fleet dashboard are the ones asked, and
that the series a real Prometheus matches over the window are the series written.
"""

from __future__ import annotations

import importlib
import math
import shutil

import pytest

from simulator.wear import state_at

needs_prometheus = pytest.mark.skipif(
    shutil.which("prometheus") is None or shutil.which("promtool") is None,
    reason="prometheus and promtool are not installed (Debian package prometheus)")

NOW = 1_790_000_000 // 3600 * 3600 - 600
DAYS = 0.05  # 72 minutes: 19 evaluations every 4 minutes, 73 of the collector rule


@pytest.fixture(scope="module")
def bench():
    # imported by its name (not tests.support.bench.load_bench): the worker processes that rank
    # the week are handed its functions by name
    return importlib.import_module("bench.ranking_window")


@pytest.fixture(scope="module")
def fleet(bench):
    return bench.Fleet(4, 8, float(NOW))


def _serial(labels: str) -> str:
    return labels.split('serial="')[1].split('"')[0]


def _members(week, name):
    """evaluation time -> serials in the list then."""
    out = {}
    for labels, points in week[name].items():
        for t, _ in points:
            out.setdefault(t, set()).add(_serial(labels))
    return out


def test_every_listed_drive_ranks_ahead_of_every_drive_left_out(bench, fleet):
    intervals = bench.rule_intervals()
    week = bench.rank_week(fleet, NOW, DAYS, intervals, "model", workers=1)
    specs = {spec.serial: spec for _, drives in fleet.hosts for spec in drives}
    hours = {}

    def day_rate(spec, t):
        hour = t // 3600 * 3600
        for h in (hour, hour - 86400):
            hours.setdefault((spec.serial, h), state_at(spec, h).host_written)
        return (hours[(spec.serial, hour)] - hours[(spec.serial, hour - 86400)]) / 86400

    readings = {
        bench.LIFE: lambda spec, t: -math.floor(state_at(spec, t).life_left * 100) / 100,  # least first
        bench.TEMPERATURE: lambda spec, t: round(state_at(spec, t).celsius),
        bench.WRITES: day_rate,
    }
    for name, reading in readings.items():
        members = _members(week, name)
        assert len(members) == len(bench.evaluations(NOW, DAYS, intervals[name]))
        for t, listed in members.items():
            assert len(listed) == bench.TEN
            worst_in = min(reading(specs[s], t) for s in listed)
            best_out = max(reading(spec, t) for serial, spec in specs.items() if serial not in listed)
            assert worst_in >= best_out, (name, t)
    # the values written are the readings themselves
    some = next(iter(week[bench.TEMPERATURE].items()))
    t, value = some[1][0]
    assert value == round(state_at(specs[_serial(some[0])], t).celsius)
    collectors = week[bench.COLLECTOR]
    assert set(collectors) == {f'job="{bench.JOB}",collector="{c}"' for c in fleet.collectors()}
    assert all(len(points) == len(bench.evaluations(NOW, DAYS, intervals[bench.COLLECTOR]))
               for points in collectors.values())


def test_the_worst_churn_lists_ten_other_drives_at_every_evaluation(bench, fleet):
    intervals = bench.rule_intervals()
    week = bench.rank_week(fleet, NOW, DAYS, intervals, "worst")
    drives = fleet.drive_count
    for name in bench.LISTS:
        members = [listed for _, listed in sorted(_members(week, name).items())]
        for before, after in zip(members, members[1:]):
            assert len(after) == bench.TEN and not before & after
        evaluations = len(bench.evaluations(NOW, DAYS, intervals[name]))
        assert len(week[name]) == min(drives, evaluations * bench.TEN)


def test_jitter_moves_temperatures_by_a_degree_at_most(bench, fleet):
    intervals = bench.rule_intervals()
    week = bench.rank_week(fleet, NOW, DAYS, intervals, "jitter", workers=1)
    specs = {spec.serial: spec for _, drives in fleet.hosts for spec in drives}
    offsets = set()
    for labels, points in week[bench.TEMPERATURE].items():
        for t, value in points:
            offsets.add(value - round(state_at(specs[_serial(labels)], t).celsius))
    assert offsets <= {-1, 0, 1} and len(offsets) > 1
    assert bench.rank_week(fleet, NOW, DAYS, intervals, "jitter", workers=1) == week  # seeded


def test_the_four_week_long_list_panels_are_asked(bench):
    asked = {record for _, record, _ in bench.panels()}
    assert asked == set(bench.LISTS) | {bench.COLLECTOR}


@needs_prometheus
def test_prometheus_matches_the_series_written(bench, fleet, tmp_path):
    intervals = bench.rule_intervals()
    for churn in ("model", "worst"):
        rows = bench.measure(fleet, NOW, DAYS, churn, 1, tmp_path, intervals, say=lambda _: None)
        assert {r["record"] for r in rows} == set(bench.LISTS) | {bench.COLLECTOR}
        for r in rows:
            assert r["matched"] == r["written"] > 0, r
            assert 0 < r["returned"] <= r["matched"], r
        if churn == "worst":
            assert all(r["written"] == fleet.drive_count for r in rows if r["record"] in bench.LISTS)


@pytest.mark.parametrize("args", [["--hosts", "0"], ["--days", "-1"], ["--days", "inf"], ["--days", "nan"],
                                  ["--repeat", "many"],
                                  ["--churn", "sometimes"], ["--churn", ","]])
def test_nonsense_is_refused(bench, args, capsys):
    with pytest.raises(SystemExit) as stop:
        bench.main(args)
    assert stop.value.code == 2
    assert args[0] in capsys.readouterr().err
