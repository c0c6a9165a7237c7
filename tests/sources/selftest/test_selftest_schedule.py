"""The schedule maths (collectors/selftest/schedule.py): windows, due slots, next due, period,
and the settings' bounds. Pure; times are local and naive, as the scheduler gives them."""

from __future__ import annotations

from datetime import datetime

import pytest
from pydantic import ValidationError

from collectors.selftest import schedule as sched
from collectors.selftest.schedule import Schedule, SelfTestSettings

DAILY_2 = Schedule()  # smartd S/../.././02, retried 4 hours
SATURDAY_3 = Schedule(weekdays=[6], hour=3)  # smartd L/../../6/03
LATE = Schedule(weekdays=[5], hour=22, window_hours=4)  # Friday 22:00 into Saturday 02:00

# 2026-11-27 is a Friday, 2026-11-28 a Saturday.
FRI = datetime(2026, 11, 27)


@pytest.mark.parametrize("schedule,now,slot", [
    (DAILY_2, datetime(2026, 11, 27, 1, 59), None),
    (DAILY_2, datetime(2026, 11, 27, 2, 0), datetime(2026, 11, 27, 2)),
    (DAILY_2, datetime(2026, 11, 27, 5, 59, 59), datetime(2026, 11, 27, 2)),
    (DAILY_2, datetime(2026, 11, 27, 6, 0), None),
    (SATURDAY_3, datetime(2026, 11, 27, 3, 30), None),  # a Friday
    (SATURDAY_3, datetime(2026, 11, 28, 3, 30), datetime(2026, 11, 28, 3)),
    (LATE, datetime(2026, 11, 27, 23, 0), datetime(2026, 11, 27, 22)),
    (LATE, datetime(2026, 11, 28, 1, 59), datetime(2026, 11, 27, 22)),  # past midnight: Friday's window
    (LATE, datetime(2026, 11, 28, 2, 0), None),
    (LATE, datetime(2026, 11, 28, 23, 0), None),  # Saturday 22:00 is not a window
    (Schedule(hour=0, window_hours=24), datetime(2026, 11, 27, 23, 59), datetime(2026, 11, 27, 0)),
])
def test_current_slot(schedule, now, slot):
    assert sched.current_slot(schedule, now) == slot


def test_a_slot_once_done_is_not_due_again_and_the_next_window_is():
    now = datetime(2026, 11, 27, 3)
    slot = sched.due_slot(DAILY_2, now, None)
    assert slot == datetime(2026, 11, 27, 2)
    done = sched.slot_key(slot)
    assert done == "2026-11-27T02:00"
    assert sched.due_slot(DAILY_2, now, done) is None
    assert sched.due_slot(DAILY_2, datetime(2026, 11, 28, 2, 30), done) == datetime(2026, 11, 28, 2)
    assert sched.due_slot(None, now, None) is None  # a type switched off


@pytest.mark.parametrize("schedule,now,done,due", [
    (DAILY_2, datetime(2026, 11, 27, 3), None, datetime(2026, 11, 27, 2)),  # due now: in the past
    (DAILY_2, datetime(2026, 11, 27, 3), "2026-11-27T02:00", datetime(2026, 11, 28, 2)),
    (DAILY_2, datetime(2026, 11, 27, 1), None, datetime(2026, 11, 27, 2)),
    (SATURDAY_3, datetime(2026, 11, 28, 8), None, datetime(2026, 12, 5, 3)),
    (SATURDAY_3, datetime(2026, 11, 28, 3, 1), "2026-11-28T03:00", datetime(2026, 12, 5, 3)),
    (Schedule(weekdays=[1, 4], hour=1), datetime(2026, 11, 27, 12), None, datetime(2026, 11, 30, 1)),
])
def test_next_due(schedule, now, done, due):
    assert sched.next_due(schedule, now, done) == due


@pytest.mark.parametrize("weekdays,days", [
    ([1, 2, 3, 4, 5, 6, 7], 1), ([6], 7), ([1, 4], 4), ([7, 1], 6), ([1, 2, 3, 4, 5], 3),
])
def test_period_is_the_longest_gap_between_windows(weekdays, days):
    assert sched.period_seconds(Schedule(weekdays=weekdays)) == days * 86400


def test_defaults_are_smartds_example_and_off():
    settings = SelfTestSettings()
    assert settings.enabled is False
    assert (settings.short.weekdays, settings.short.hour) == ([1, 2, 3, 4, 5, 6, 7], 2)
    assert (settings.long.weekdays, settings.long.hour) == ([6], 3)
    assert sched.TYPES == ("long", "short")  # a long test due with a short one goes first


@pytest.mark.parametrize("bad", [
    {"short": {"weekdays": [0]}},
    {"short": {"weekdays": [8]}},
    {"short": {"weekdays": []}},
    {"short": {"hour": 24}},
    {"short": {"hour": -1}},
    {"long": {"window_hours": 0}},
    {"long": {"window_hours": 25}},
    {"long": {"days": [1]}},
    {"max_utilisation": 1.5},
    {"max_utilisation": -0.1},
    {"utilisation_sample_seconds": 0},
    {"retry_minutes": -1},
    {"max_test_hours": 0},
    {"max_test_hours": float("inf")},
    {"enabled": "sometimes"},
    {"schedule": "(S/../.././02)"},
])
def test_malformed_settings_are_refused(bad):
    with pytest.raises(ValidationError):
        SelfTestSettings(**bad)


def test_weekdays_are_sorted_and_unique():
    assert Schedule(weekdays=[6, 1, 6]).weekdays == [1, 6]
