"""History against wall-clock steps (issue 26, item 2), with the clocks in the test's hands.

The wall clock and the boot clock are the test's own (agent.history_clock.Clocks), so a year
passes in a line. The same cases with the real agent process under libfaketime are in
tests/test_faults_history.py.
"""

from __future__ import annotations

import logging
import sqlite3

import pytest

from agent.history import History
from agent.history_clock import Clocks, ClockWatch, Look, boot_key, describe, step_between, system_clocks
from collectors.model import DriveReading

DAY = 86400.0
HOUR = 3600.0
YEAR = 365 * DAY
T0 = 1_780_000_000.0
EARLIER_BOOT, THIS_BOOT = 11, 22


class FakeClocks:
    """A wall clock that can step and a boot clock that cannot."""

    def __init__(self, wall: float = T0, since_boot: float = 30 * DAY, boot: int = THIS_BOOT) -> None:
        self.wall = wall
        self.since_boot = since_boot
        self.boot = boot

    def clocks(self) -> Clocks:
        return Clocks(wall=lambda: self.wall, since_boot=lambda: self.since_boot, boot=self.boot)

    def advance(self, seconds: float) -> None:
        self.wall += seconds
        self.since_boot += seconds

    def step(self, seconds: float) -> None:
        self.wall += seconds


def reading(host: int) -> DriveReading:
    return DriveReading(kind="ata", device="/dev/sda", serial="S1", host_written_bytes=host, life_left_ratio=0.9)


def open_history(path, fake: FakeClocks, **kw) -> History:
    kw.setdefault("min_interval_seconds", 600)
    kw.setdefault("clock_settle_seconds", DAY)
    return History(str(path), clocks=fake.clocks(), **kw)


def all_rows(path) -> dict:
    """{table: rows} as they are on disk."""
    conn = sqlite3.connect(str(path))
    try:
        return {t: conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in ("samples", "samples_displaced")}
    finally:
        conn.close()


def seed_earlier_boot(path, days: int = 390, per_day: int = 4) -> int:
    """History an earlier boot recorded: ``days`` back from T0, ``per_day`` samples a day."""
    fake = FakeClocks(wall=T0 - days * DAY, boot=EARLIER_BOOT)
    with open_history(path, fake, clock_settle_seconds=0) as h:
        for i in range(days * per_day):
            h.record("S1", fake.wall, reading(i * 1000))
            fake.advance(DAY / per_day)
    return days * per_day


# ---------------------------------------------------------------------------- pure parts


def test_a_step_is_what_the_boot_clock_did_not_see():
    then = Look(1, 1000.0, T0, 0.0)
    assert step_between(then, Look(1, 1600.0, T0 + 600, 0.0), 60) is None
    assert step_between(then, Look(1, 1600.0, T0 + 600 + YEAR, 0.0), 60) == pytest.approx(YEAR)
    assert step_between(then, Look(1, 1600.0, T0 + 600 - DAY, 0.0), 60) == pytest.approx(-DAY)
    assert step_between(then, Look(1, 1600.0, T0 + 659, 0.0), 60) is None  # within tolerance
    # NTP slews up to 500 ppm: ten days apart, 400 s of drift is a slew, not a step
    assert step_between(then, Look(1, 1000.0 + 10 * DAY, T0 + 10 * DAY + 400, 0.0), 60) is None
    assert step_between(then, Look(2, 1600.0, T0 + YEAR, 0.0), 60) is None  # another boot: unknown


def test_boot_key_and_system_clocks(tmp_path):
    assert boot_key("a142fd80-4806-4087-940e-1c8757295e35") == boot_key("a142fd80-4806-4087-940e-1c8757295e35\n")
    assert 0 <= boot_key("x") < 2**31 and boot_key("x") != boot_key("y")
    boot_id = tmp_path / "boot_id"
    boot_id.write_text("c0ffee00-0000-4000-8000-000000000001\n")
    clocks = system_clocks(str(boot_id))
    assert clocks.boot == boot_key("c0ffee00-0000-4000-8000-000000000001")
    assert clocks.since_boot() > 0
    # no boot id: a key of this process's own, so steps are still found while it runs
    assert 0 <= system_clocks(str(tmp_path / "missing")).boot < 2**31
    assert describe(YEAR) == "365 d 0 h" and describe(-2 * HOUR - 300) == "2 h 5 min" and describe(90) == "90 s"


def test_watch_holds_retention_after_boot_and_after_a_step():
    fake = FakeClocks(since_boot=HOUR)
    watch = ClockWatch(fake.clocks(), settle_seconds=DAY)
    assert not watch.retention_allowed()  # an hour after boot
    fake.advance(DAY)
    assert watch.observe() is None and watch.retention_allowed()
    fake.step(-DAY)
    assert watch.observe() == pytest.approx(-DAY)
    assert not watch.retention_allowed() and watch.anomaly_pending()
    assert watch.anomalies == {"step_forward": 0, "step_back": 1, "future_samples": 0}
    fake.advance(DAY)
    assert watch.observe() is None and watch.retention_allowed() and not watch.anomaly_pending()


# ---------------------------------------------------------------------------- the cases


def test_a_year_forward_and_back_deletes_nothing_and_recording_goes_on(tmp_path, caplog):
    path = tmp_path / "history.sqlite"
    seeded = seed_earlier_boot(path)
    fake = FakeClocks()
    h = open_history(path, fake, retention_days=400)
    assert not h.retention_held()  # 30 days up with a steady clock: retention runs
    for _ in range(6):
        h.record("S1", fake.wall, reading(10**9))
        fake.advance(600)
    assert all_rows(path)["samples"] == seeded + 6

    with caplog.at_level(logging.ERROR, logger="ssdfleet.history"):
        fake.step(YEAR)  # a bad NTP server
        for _ in range(6):
            h.record("S1", fake.wall, reading(2 * 10**9))
            fake.advance(600)
    # without the hold, retention would have deleted every row older than 35 days: 91 %
    assert all_rows(path)["samples"] == seeded + 12
    assert h.retention_held() and h.clock_anomalies()["step_forward"] == 1
    steps = [r.getMessage() for r in caplog.records if "stepped" in r.getMessage()]
    assert len(steps) == 1 and "forward by 365 d 0 h" in steps[0] and "moved the 6 samples" in steps[0]
    # this boot's samples moved with the clock: still ten minutes apart, the newest now-ish
    mine = [s.ts for s in h.samples("S1") if s.ts >= T0]
    assert len(mine) == 12 and mine[-1] == pytest.approx(fake.wall - 600)
    assert all(b - a == pytest.approx(600) for a, b in zip(mine, mine[1:]))

    fake.step(-YEAR)  # the clock comes back
    h.record("S1", fake.wall, reading(3 * 10**9))
    assert h.clock_anomalies()["step_back"] == 1
    newest = h.samples("S1")[-1]
    assert newest.ts == pytest.approx(fake.wall) and newest.host_written_bytes == 3 * 10**9
    fake.advance(600)
    h.record("S1", fake.wall, reading(4 * 10**9))  # one interval later: recorded
    samples = h.samples("S1")
    assert samples[-1].ts == pytest.approx(fake.wall)
    assert all(s.ts <= fake.wall for s in samples)  # nothing left in the future
    # this boot's 14 samples, in the order taken, 600 s apart as the boot clock measured
    mine = [s.ts for s in samples if s.ts >= T0]
    assert len(mine) == 14 and all(b - a == pytest.approx(600) for a, b in zip(mine, mine[1:]))
    assert all_rows(path) == {"samples": seeded + 14, "samples_displaced": 0}
    h.close()


def test_a_day_back_does_not_stop_recording_for_a_day(tmp_path):
    path = tmp_path / "history.sqlite"
    fake = FakeClocks()
    with open_history(path, fake) as h:
        h.record("S1", fake.wall, reading(1))
        fake.advance(600)
        fake.step(-DAY)
        h.record("S1", fake.wall, reading(2))  # one interval after the last, by the boot clock
        fake.advance(600)
        h.record("S1", fake.wall, reading(3))
        assert [s.host_written_bytes for s in h.samples("S1")] == [1, 2, 3]
        assert [s.ts - fake.wall for s in h.samples("S1")] == pytest.approx([-1200, -600, 0])
        assert h.clock_anomalies() == {"step_forward": 0, "step_back": 1, "future_samples": 0}
        assert "stepped back by 1 d 0 h" in h.clock_problem()


def test_a_reading_taken_before_the_step_moves_with_it(tmp_path):
    fake = FakeClocks()
    with open_history(tmp_path / "h.sqlite", fake) as h:
        h.record("S1", fake.wall, reading(1))
        fake.advance(600)
        taken = fake.wall  # smartctl ran, then the clock stepped before the sample was stored
        fake.step(YEAR)
        h.record("S1", taken, reading(2))
        assert [s.ts for s in h.samples("S1")] == pytest.approx([T0 + YEAR, T0 + YEAR + 600])


def test_a_reading_taken_before_a_step_another_thread_found_moves_too(tmp_path):
    """Two sources record from their own threads: smartctl read its drive before the clock
    came back, shannon's sample found the step first."""
    fake = FakeClocks()
    with open_history(tmp_path / "h.sqlite", fake) as h:
        fake.step(YEAR)
        h.record("S1", fake.wall, reading(1))
        h.record("S2", fake.wall, reading(1))
        fake.advance(600)
        taken = fake.wall  # smartctl's reading of S1, on the clock a year ahead
        fake.step(-YEAR)
        h.record("S2", fake.wall, reading(2))  # shannon's: finds the step, moves the stored ones
        h.record("S1", taken, reading(2))  # smartctl's, late: moved too, not left a year ahead
        assert [s.ts for s in h.samples("S1")] == pytest.approx([T0, T0 + 600])
        assert h.clock_anomalies()["step_back"] == 1
        fake.advance(3 * 3600)
        h.record("S3", T0 - 5 * YEAR, reading(3))  # long after the step: a time is taken as given
        assert [s.ts for s in h.samples("S3")] == pytest.approx([T0 - 5 * YEAR])


def test_a_step_while_the_agent_was_stopped_is_found_at_the_next_start(tmp_path, caplog):
    path = tmp_path / "history.sqlite"
    fake = FakeClocks()
    with open_history(path, fake) as h:
        for i in range(3):
            h.record("S1", fake.wall, reading(i))
            fake.advance(600)
    fake.advance(HOUR)
    fake.step(YEAR)
    with caplog.at_level(logging.ERROR, logger="ssdfleet.history"):
        h = open_history(path, fake)
    assert h.clock_anomalies()["step_forward"] == 1
    assert any("while the agent was stopped" in r.getMessage() for r in caplog.records)
    assert [s.ts for s in h.samples("S1")] == pytest.approx([T0 + YEAR, T0 + YEAR + 600, T0 + YEAR + 1200])
    h.record("S1", fake.wall, reading(9))
    assert len(h.samples("S1")) == 4
    h.close()


def test_samples_an_earlier_boot_wrote_in_the_future_are_kept_aside(tmp_path, caplog):
    path = tmp_path / "history.sqlite"
    ahead = FakeClocks(wall=T0 + YEAR, boot=EARLIER_BOOT)  # a bad RTC, never corrected
    with open_history(path, ahead) as h:
        for i in range(5):
            h.record("S1", ahead.wall, reading(i))
            ahead.advance(600)
    fake = FakeClocks(wall=T0 + DAY)  # the next boot has the right time
    with caplog.at_level(logging.ERROR, logger="ssdfleet.history"):
        h = open_history(path, fake)
    assert h.clock_anomalies()["future_samples"] == 1
    assert any("5 samples of an earlier boot lie up to 364 d" in r.getMessage() for r in caplog.records)
    assert h.samples("S1") == []  # not read: they would block recording and bend every rate
    h.record("S1", fake.wall, reading(100))  # recording goes on at once
    assert [s.host_written_bytes for s in h.samples("S1")] == [100]
    h.close()
    assert all_rows(path) == {"samples": 1, "samples_displaced": 5}  # nothing deleted
    with open_history(path, fake) as h:  # and found once, not at every start
        assert h.clock_anomalies()["future_samples"] == 0


def test_retention_waits_for_a_steady_clock_after_boot(tmp_path):
    path = tmp_path / "history.sqlite"
    seeded = seed_earlier_boot(path, days=20, per_day=1)
    fake = FakeClocks(since_boot=HOUR)
    with open_history(path, fake, retention_days=10) as h:
        h.record("S1", fake.wall, reading(10**9))
        assert h.retention_held()
        assert all_rows(path)["samples"] == seeded + 1
        fake.advance(DAY)
        h.record("S1", fake.wall, reading(10**9 + 1))
        assert not h.retention_held()
        assert min(s.ts for s in h.samples("S1")) >= fake.wall - 10 * DAY
        assert all_rows(path)["samples"] == seeded + 2 - 11  # the 11 days older than 10


@pytest.mark.parametrize("step", [600.0, -600.0])
def test_moving_samples_by_their_own_spacing_loses_none(tmp_path, step):
    """SQLite checks the key row by row during an UPDATE: a step of exactly the sampling
    interval collides with the next sample half-way through (forward), or with another
    boot's sample right where one of ours lands (back, here)."""
    path = tmp_path / "h.sqlite"
    other = FakeClocks(boot=EARLIER_BOOT)
    with open_history(path, other) as h:
        h.record("S1", T0 - 600, reading(0))
    fake = FakeClocks()
    with open_history(path, fake) as h:
        for i in range(10):
            h.record("S1", fake.wall, reading(i + 1))
            fake.advance(600)
        fake.step(step)
        h.record("S1", fake.wall, reading(99))
        stored = [s.host_written_bytes for s in h.samples("S1")]
        times = [s.ts for s in h.samples("S1")]
    assert times == sorted(times) and len(set(times)) == len(times)
    if step > 0:  # every sample moved, in order
        assert stored == [0, *range(1, 11), 99] and all_rows(path) == {"samples": 12, "samples_displaced": 0}
    else:  # ours moved back; the first landed on the other boot's sample: kept aside, not lost
        assert stored == [0, *range(2, 11), 99] and all_rows(path) == {"samples": 11, "samples_displaced": 1}


def test_a_clock_given_without_a_boot_clock_is_not_checked(tmp_path):
    """A test that drives the wall clock by hand has no boot clock to compare it with."""
    now = [T0]
    with History(str(tmp_path / "h.sqlite"), clock=lambda: now[0]) as h:
        h.record("S1", T0, reading(1))
        now[0] += YEAR
        h.record("S1", T0 + 600, reading(2))
        assert h.clock_anomalies() == {} and not h.retention_held()
