"""The self-test schedule: its settings and its maths. Pure: every function takes the time.

smartd says when to test with a regular expression over ``T/MM/DD/d/HH`` (``S/../.././02``: a
short test every day at 02:00; ``L/../../6/03``: a long one on Saturdays at 03:00). The same
two defaults are written here as a weekday list (smartd's ``d``: 1 is Monday, 7 Sunday), a start
hour (its ``HH``) and a window: where smartd tries in the one hour, the scheduler keeps trying
for ``window_hours`` (a drive busy at 02:00 is tested at 02:40), which is what a database host
needs. A window is a *slot*: the local start time of one occurrence (``2026-11-28T03:00``),
the key under which the state remembers that the test ran.

Times are the host's local time, as smartd's are; a slot that starts at 22:00 with a window of
4 hours runs into the next day and belongs to the weekday it starts on.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import List, Optional

from pydantic import BaseModel, ConfigDict, Field, field_validator

SHORT = "short"
LONG = "long"
# The order tests are considered in: the long test first; it covers what a short one checks
# (it reads the whole medium where the short one reads a part), so a drive due both runs the
# long one and its short slot counts as done, as smartd runs only the highest-priority test
# of an hour.
TYPES = (LONG, SHORT)
# How collectors.smart_logs names the kind of a self-test log entry of each type.
LOG_KINDS = {SHORT: ("short", "extended"), LONG: ("extended",)}

DAY_SECONDS = 86400


class Schedule(BaseModel):
    """When one type of test runs: on ``weekdays`` (1 Monday .. 7 Sunday, smartd's ``d``),
    starting at ``hour`` local time, retried until ``window_hours`` have passed."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    weekdays: List[int] = Field(default_factory=lambda: [1, 2, 3, 4, 5, 6, 7], min_length=1)
    hour: int = Field(2, ge=0, le=23)
    window_hours: int = Field(4, ge=1, le=24)

    @field_validator("weekdays")
    @classmethod
    def _days(cls, v: List[int]) -> List[int]:
        if any(not 1 <= d <= 7 for d in v):
            raise ValueError("weekdays are 1 (Monday) .. 7 (Sunday), as smartd's d field")
        return sorted(set(v))


class SelfTestSettings(BaseModel):
    """The ``selftest:`` config section (off unless ``enabled``).

    ``short``/``long``: the schedules (None: that type never runs). ``max_utilisation``: a
    drive busier than this share of the sample (from /proc/diskstats' time doing I/O, over
    ``utilisation_sample_seconds``) is not tested now. ``retry_minutes``: how long a drive
    found busy, asleep or testing waits before it is asked again, within the window.
    ``max_test_hours``: a test still running this long after it started is given up on
    (reported ``lost``) so the scheduler does not wait for it forever."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    enabled: bool = False
    short: Optional[Schedule] = Schedule()
    long: Optional[Schedule] = Schedule(weekdays=[6], hour=3, window_hours=4)
    max_utilisation: float = Field(0.2, ge=0, le=1)
    utilisation_sample_seconds: float = Field(2.0, ge=0.1, le=60)
    retry_minutes: float = Field(10.0, ge=0, le=24 * 60)
    max_test_hours: float = Field(24.0, gt=0, le=14 * 24)

    def schedule(self, test: str) -> Optional[Schedule]:
        return self.short if test == SHORT else self.long


def slot_key(start: datetime) -> str:
    return start.strftime("%Y-%m-%dT%H:%M")


def current_slot(schedule: Schedule, now: datetime) -> Optional[datetime]:
    """The start of the window ``now`` (local, naive) is in, or None outside every window."""
    for back in (0, 1):  # a window may start the day before and run past midnight
        day = (now - timedelta(days=back)).date()
        start = datetime(day.year, day.month, day.day, schedule.hour)
        if start.isoweekday() in schedule.weekdays and start <= now < start + timedelta(hours=schedule.window_hours):
            return start
    return None


def next_slot(schedule: Schedule, now: datetime) -> datetime:
    """The start of the first window that starts after ``now``."""
    for ahead in range(0, 9):
        day = (now + timedelta(days=ahead)).date()
        start = datetime(day.year, day.month, day.day, schedule.hour)
        if start > now and start.isoweekday() in schedule.weekdays:
            return start
    raise ValueError("a schedule with no weekday")  # pragma: no cover - the model forbids it


def due_slot(schedule: Optional[Schedule], now: datetime, done: Optional[str]) -> Optional[datetime]:
    """The window a test is due in now: ``now`` is in a window whose key is not ``done`` (the
    slot the state says the test last ran in). None when not due."""
    if schedule is None:
        return None
    start = current_slot(schedule, now)
    if start is None or slot_key(start) == done:
        return None
    return start


def next_due(schedule: Schedule, now: datetime, done: Optional[str]) -> datetime:
    """When the test is next due: the start of the current window when it has not run in it
    (a time in the past: due now), else the start of the next window."""
    due = due_slot(schedule, now, done)
    return due if due is not None else next_slot(schedule, now)


def period_seconds(schedule: Schedule) -> int:
    """The longest time the schedule leaves between two windows' starts: a day for a daily
    test, a week for a weekly one, four days for Monday and Thursday."""
    days = schedule.weekdays
    gaps = [(days[(i + 1) % len(days)] - d) % 7 or 7 for i, d in enumerate(days)]
    return max(gaps) * DAY_SECONDS
