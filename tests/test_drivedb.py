"""collectors/smartctl/drivedb.py: smartmontools' drive database read as data, and what happens when the
file the user points at is missing, unreadable or garbage."""

from __future__ import annotations

import logging

import pytest

from collectors.smartctl import drivedb
from collectors.smartctl.source import choose_drive_database

DB = drivedb.bundled()


def test_the_bundled_database():
    assert DB.revision == 5319 and DB.date == "2022-02-19"
    assert len(DB.entries) > 500
    assert DB.default_name(241) == "Total_LBAs_Written" and DB.default_name(233) == "Media_Wearout_Indicator"


@pytest.mark.parametrize("model,firmware,attr_id,name,trust", [
    # Samsung's entry lists 241 among the defaults it has checked (a // comment)
    ("Samsung SSD 860 EVO 500GB", "RVT04B6Q", 241, "Total_LBAs_Written", drivedb.CONFIRMED),
    # Phison's entry names its own counters
    ("KINGSTON SA400S37240G", "S1Z40102", 241, "Lifetime_Writes_GiB", drivedb.NAMED),
    ("KINGSTON SA400S37240G", "S1Z40102", 231, "SSD_Life_Left", drivedb.NAMED),
    # Intel 520: attribute 9 counts hours and milliseconds
    ("INTEL SSDSC2CW120A3", "400i", 9, "Power_On_Hours_and_Msec", drivedb.NAMED),
    # an entry silent about an ID: the default name, unchecked
    ("KINGSTON SA400S37240G", "S1Z40102", 177, "Wear_Leveling_Count", drivedb.DEFAULT),
    # a model no entry describes: every name a default
    ("Lexar SSD NS100 512GB", "SN11035", 241, "Total_LBAs_Written", drivedb.UNKNOWN_DRIVE),
])
def test_names_and_trust(model, firmware, attr_id, name, trust):
    found = DB.names_for(model, firmware)[attr_id]
    assert (found.name, found.trust) == (name, trust)
    assert found.vouched == (trust in (drivedb.NAMED, drivedb.CONFIRMED))


def test_the_whole_model_string_must_match():
    # drivedb's regexes match the whole string, as smartctl's do
    assert DB.lookup("Samsung SSD 860 EVO 500GB") is not None
    assert DB.lookup("Samsung SSD 860 EVO 500GB extra") is None
    assert DB.lookup("") is None and DB.lookup(None) is None


MALFORMED = [
    ("empty", ""),
    ("garbage", "\x00\xff not a C file {{{ ]]] \"unterminated"),
    ("truncated in a string", drivedb.BUNDLED.read_text()[:50_000]),
    ("unbalanced braces", '{ "Family", "Model", "", "", "-v 9,raw48,X" '),
    ("bad regex skipped", '{ "DEFAULT", "-", "-", "", "-v 9,raw48,Power_On_Hours" },\n'
                          '{ "Broken", "([", "", "", "-v 241,raw48,Host_Writes_GiB" },\n'
                          '{ "Good", "GOOD 1", "", "", "-v 241,raw48,Host_Writes_GiB" }'),
    ("ids out of range ignored", '{ "Odd", "ODD", "", "", "-v 999,raw48,X -v 0,raw48,Y -v 12,raw48,Ok" }'),
    ("huge", '{ "A", "' + "x" * 200_000 + '", "", "", "" }'),
]


@pytest.mark.parametrize("case,text", MALFORMED, ids=[n for n, _ in MALFORMED])
def test_malformed_text_never_raises(case, text):
    db = drivedb.parse(text)
    assert isinstance(db.entries, tuple)
    for entry in db.entries:  # an entry whose regex does not compile matches nothing
        entry.matches("GOOD 1", None)
    if case == "bad regex skipped":
        assert db.lookup("GOOD 1").presets[241].name == "Host_Writes_GiB"
        assert db.lookup("([") is None
    if case == "ids out of range ignored":
        assert set(db.entries[0].presets) == {12}


@pytest.mark.parametrize("setting", ["missing", "directory", "garbage"])
def test_a_bad_drivedb_setting_falls_back_to_the_bundled_copy(setting, tmp_path, caplog):
    path = {"missing": tmp_path / "nope.h", "directory": tmp_path,
            "garbage": tmp_path / "garbage.h"}[setting]
    if setting == "garbage":
        path.write_text("this is not a drive database\n")
    caplog.set_level(logging.INFO, logger="ssdfleet.poller")
    assert choose_drive_database(str(path)) is DB
    assert any(r.levelno == logging.ERROR and "smartctl.drivedb" in r.getMessage() for r in caplog.records)


def test_the_database_is_the_sources_value_not_a_global(tmp_path):
    """Issue 27: a database is used for the parses it is handed to (the smartctl source holds
    its own), and only there: another parse, here or in another thread, names by the bundled
    copy."""
    import threading

    newer = tmp_path / "drivedb.h"
    newer.write_text(drivedb.BUNDLED.read_text().replace("drivedb.h 5319 2022-02-19", "drivedb.h 9999 2030-01-01"))
    chosen = choose_drive_database(str(newer))
    assert chosen.revision == 9999 and drivedb.active() is DB
    seen = []
    with drivedb.using(chosen):
        seen.append(drivedb.active().revision)
        other = threading.Thread(target=lambda: seen.append(drivedb.active().revision))
        other.start()
        other.join()
    assert seen == [9999, 5319] and drivedb.active() is DB


def test_best_available_takes_a_newer_host_copy(tmp_path):
    newer = tmp_path / "drivedb.h"
    newer.write_text(drivedb.BUNDLED.read_text().replace("drivedb.h 5319 2022-02-19", "drivedb.h 9999 2030-01-01"))
    assert drivedb.best_available([str(newer)]).revision == 9999
    older = tmp_path / "old.h"
    older.write_text(drivedb.BUNDLED.read_text().replace("drivedb.h 5319 2022-02-19", "drivedb.h 100 2001-01-01"))
    assert drivedb.best_available([str(older), str(tmp_path / "missing")]) is DB
