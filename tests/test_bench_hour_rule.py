"""bench/hour_rule_cost.py prices each form of the hourly-rate rule on a real Prometheus.

No timing is asserted (the script prints its figures). What is checked is that the script
measures what it says: the block it writes holds a full hour and its offset for every drive, so
each form reads the samples its window holds (61 per drive for ``[1h]`` at 60 s, one for an
instant selection) and returns one series per drive, and the counters it writes carry the
timestamps and the rate each drive is given.
"""

from __future__ import annotations

import shutil

import pytest

from tests.support.bench import load_bench

pytestmark = pytest.mark.skipif(
    shutil.which("prometheus") is None or shutil.which("promtool") is None,
    reason="prometheus and promtool are not installed (Debian package prometheus)")

DRIVES = 40


def test_each_form_reads_the_hour_it_names_for_every_drive(tmp_path):
    bench = load_bench("hour_rule_cost")
    rows = {r["form"]: r for r in bench.measure(DRIVES, 1, tmp_path)}
    assert set(rows) == set(bench.FORMS)
    for row in rows.values():
        assert row["series"] == DRIVES, row
        assert row["eval_ms"] > 0 and row["wall_ms"] > 0
    # [1h] at a 60 s step: both ends of the window hold a sample
    assert rows["increase([1h]) / 3600 alone"]["samples"] == DRIVES * 61
    assert rows["the guard alone (offset 1h)"]["samples"] == DRIVES
    assert rows["instant selection"]["samples"] == DRIVES
    assert rows["shipped: increase([1h]) / 3600 and offset 1h"]["samples"] == DRIVES * 62


def test_the_written_counters_have_the_rates_the_rule_records(tmp_path):
    bench = load_bench("hour_rule_cost")
    path = tmp_path / "hour.om"
    now = 1_790_000_040
    assert bench.write_openmetrics(path, 3, now) == 3 * (bench.MINUTES + 1)
    lines = path.read_text().splitlines()
    assert lines[-1] == "# EOF"
    first = [line for line in lines if 'serial="S00000002"' in line]
    assert len(first) == bench.MINUTES + 1
    values = [float(line.split()[1]) for line in first]
    stamps = [int(line.split()[2]) for line in first]
    assert stamps[-1] == now and stamps[0] == now - 60 * bench.MINUTES
    # drive 2 is busy 7 % of the time: 4.2 s a minute
    assert values[1] - values[0] == pytest.approx(60 * 0.07)


@pytest.mark.parametrize("args", [["--drives", "0"], ["--drives", "-5"], ["--repeat", "0"], ["--drives", "many"]])
def test_a_count_that_prices_nothing_is_refused(args, capsys):
    """Zero or negative drives or repeats would print a table of empty queries: refused, named."""
    bench = load_bench("hour_rule_cost")
    with pytest.raises(SystemExit) as stop:
        bench.main(args)
    assert stop.value.code == 2
    assert args[0] in capsys.readouterr().err
