"""A SMART pass after the first is paced (smartctl.reads_per_second, issue 32): its reads start
at most that many a second, within half the interval, each reading stamped with the time its
read started. The fake host's smartctl replays real captures; the clock is the real one."""

from __future__ import annotations

from agent.config import Config
from collectors.smartctl.spec import SmartctlSettings
from tests.fakehost import build_default_host
from tests.support.poller import make_poller


def _read_times(poller):
    return sorted(d.last_poll["smartctl"] for d in poller.snapshot().drives if "smartctl" in d.last_poll)


def _two_passes(tmp_path, budget, **settings):
    host = build_default_host(tmp_path)
    poller = make_poller(host, smartctl=SmartctlSettings(**settings))
    try:
        poller.run_discovery()
        poller.run("smartctl", budget=budget)
        first = _read_times(poller)
        poller.run("smartctl", budget=budget)
        return first, _read_times(poller)
    finally:
        poller.stop()


def test_a_pass_after_the_first_starts_its_reads_at_the_configured_pace(tmp_path):
    first, second = _two_passes(tmp_path, budget=300.0, reads_per_second=2.0)
    assert len(first) == len(second) == 3
    assert first[-1] - first[0] < 0.4  # the first pass is not paced: the agent's first full data
    gaps = [b - a for a, b in zip(second, second[1:])]
    assert all(gap >= 0.45 for gap in gaps), gaps  # 0.5 s apart, read start to read start
    assert second[0] > first[-1]


def test_the_pace_fits_half_the_budget_and_zero_or_no_budget_is_unpaced(tmp_path):
    _, tight = _two_passes(tmp_path / "tight", budget=0.6, reads_per_second=0.5)  # 2 s apart would not fit
    assert 0.15 <= tight[-1] - tight[0] < 1.0  # 3 reads started within half of 0.6 s (0.1 s apart)
    _, unpaced = _two_passes(tmp_path / "off", budget=300.0, reads_per_second=0)
    assert unpaced[-1] - unpaced[0] < 0.4
    _, collect = _two_passes(tmp_path / "collect", budget=None, reads_per_second=0.5)
    assert collect[-1] - collect[0] < 0.4


def test_the_setting_is_validated():
    assert Config().smartctl.reads_per_second == 20.0
    for bad in (-1, float("nan"), 1e9):
        try:
            SmartctlSettings(reads_per_second=bad)
        except ValueError:
            continue
        raise AssertionError(f"reads_per_second={bad} accepted")


def test_a_stop_ends_a_paced_pass_at_once(tmp_path):
    """The pace waits on the agent's stop event: stopping during a pass whose reads are 5 s
    apart returns within a second, not after the pass."""
    import threading
    import time

    host = build_default_host(tmp_path)
    poller = make_poller(host, smartctl=SmartctlSettings(reads_per_second=0.2))
    poller.run_discovery()
    poller.run("smartctl", budget=300.0)  # the first pass, not paced
    done = threading.Event()
    runner = threading.Thread(target=lambda: (poller.run("smartctl", budget=300.0), done.set()))
    runner.start()
    time.sleep(0.3)
    stopped = time.monotonic()
    poller.stop()
    assert done.wait(5.0)
    assert time.monotonic() - stopped < 2.0
    runner.join(5.0)
