"""The schedule on disk (collectors/selftest/state.py): it round-trips, a corrupt file is set
aside and the schedule starts afresh, and a directory that cannot be written keeps the schedule
in memory with the error said once, never a crash."""

from __future__ import annotations

import json
import logging

import pytest

from collectors.selftest.state import FILE_NAME, Running, State, StateFile, from_json, to_json


def _state() -> State:
    state = State()
    state.entry("S3YZNB0KB00864E", "short", 100.0)
    state.update("S3YZNB0KB00864E", "short", done="2026-11-27T02:00", last_started=7300.0, result="aborted",
                 detail="Short offline: Aborted by host", completed=50.0, skipped="busy", skipped_at=7000.0)
    state.running = Running(identity="S3YZNB0KB00864E", test="long", device="/dev/sda", device_type="sat",
                            kind="ata", started=7400.0, slot="2026-11-28T03:00",
                            before=(("short", "passed", "Completed without error", 14417),))
    return state


def test_round_trip(tmp_path):
    state = _state()
    again = from_json(to_json(state))
    assert again.entries == state.entries and again.running == state.running
    file = StateFile(str(tmp_path))
    assert file.save(state)
    assert not list(tmp_path.glob("*.tmp"))  # written through a temporary file, renamed
    loaded = file.load()
    assert loaded.entries == state.entries and loaded.running == state.running


@pytest.mark.parametrize("text", [
    "",
    "{",
    "[]",
    json.dumps({"version": 2, "entries": {}}),
    json.dumps({"version": 1}),
    json.dumps({"version": 1, "entries": []}),
    json.dumps({"version": 1, "entries": {"S1|short": {"since": 1.0, "colour": "red"}}}),
    json.dumps({"version": 1, "entries": {"S1|short": {}}}),
    json.dumps({"version": 1, "entries": {"no-bar": {"since": 1.0}}}),
    json.dumps({"version": 1, "entries": {"S1|short": {"since": "yesterday"}}}),
    json.dumps({"version": 1, "entries": {}, "running": {"identity": "S1"}}),
])
def test_a_corrupt_file_is_set_aside_and_the_schedule_starts_afresh(tmp_path, caplog, text):
    (tmp_path / FILE_NAME).write_text(text)
    with caplog.at_level(logging.ERROR, logger="ssdfleet.selftest"):
        state = StateFile(str(tmp_path)).load()
    assert state.entries == {} and state.running is None
    assert (tmp_path / (FILE_NAME + ".corrupt")).read_text() == text
    assert "cannot be read" in caplog.text


def test_no_file_and_no_directory(tmp_path, caplog):
    assert StateFile(str(tmp_path)).load().entries == {}
    with caplog.at_level(logging.WARNING, logger="ssdfleet.selftest"):
        file = StateFile(None)
        assert file.load().entries == {} and file.save(_state())
    assert "not kept across restarts" in caplog.text


def test_a_state_directory_that_cannot_be_written_keeps_the_schedule_in_memory(tmp_path, caplog):
    """A state "directory" that is a file (as a full or read-only disk, the write fails; this
    one fails for root too): the run goes on, the error is said once and shown until a write
    works again."""
    where = tmp_path / "state"
    where.write_text("not a directory")
    file = StateFile(str(where))
    with caplog.at_level(logging.ERROR, logger="ssdfleet.selftest"):
        assert file.save(_state()) is False
        assert file.save(_state()) is False
    assert caplog.text.count("cannot keep the schedule") == 1  # said once, not every run
    assert file.error and "Not a directory" in file.error
    where.unlink()
    where.mkdir()
    assert file.save(_state()) and file.error is None
    assert StateFile(str(where)).load().running == _state().running
