"""collectors/smartctl/drivedb.py: smartmontools' drive database read as data, and what happens when the
file the user points at is missing, unreadable or garbage."""

from __future__ import annotations

import logging

import pytest

from collectors.smartctl import drivedb
from collectors.smartctl.source import choose_drive_database

DB = drivedb.bundled()


def test_the_bundled_database():
    # the drivedb/7.3 branch of 2026-07-20 (collectors/smartctl/data/README.md says why that branch)
    assert DB.revision == 6204 and DB.date == "2026-07-20"
    assert "smartmontools 7.3-7.4 drive database" in drivedb.BUNDLED.read_text()[:200]
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
    newer.write_text(drivedb.BUNDLED.read_text().replace("VERSION: 7.3/6204 2026-07-20", "VERSION: 7.5/9999 2030-01-01"))
    chosen = choose_drive_database(str(newer))
    assert chosen.revision == 9999 and drivedb.active() is DB
    seen = []
    with drivedb.using(chosen):
        seen.append(drivedb.active().revision)
        other = threading.Thread(target=lambda: seen.append(drivedb.active().revision))
        other.start()
        other.join()
    assert seen == [9999, DB.revision] and drivedb.active() is DB


def test_best_available_takes_a_newer_host_copy(tmp_path):
    newer = tmp_path / "drivedb.h"
    newer.write_text(drivedb.BUNDLED.read_text().replace("VERSION: 7.3/6204 2026-07-20", "VERSION: 7.5/9999 2030-01-01"))
    assert drivedb.best_available([str(newer)]).revision == 9999
    older = tmp_path / "old.h"
    older.write_text(drivedb.BUNDLED.read_text().replace("VERSION: 7.3/6204 2026-07-20", "VERSION: 7.3/100 2001-01-01"))
    assert drivedb.best_available([str(older), str(tmp_path / "missing")]) is DB


def test_a_header_newer_than_its_entries_is_parsed_and_refused(tmp_path):
    """The header decides whether a host copy is parsed at all; what is taken is decided on the
    parse: a copy stating a newer revision but holding no entries (truncated by an interrupted
    update-smart-drivedb) is not taken."""
    broken = tmp_path / "drivedb.h"
    broken.write_text('{ "VERSION: 7.5/9999 2030-01-01 00:00:00 +0000 0", "-", "-", "", "" },\n')
    assert drivedb.stated_revision(broken.read_text()) == 9999
    assert drivedb.best_available([str(broken)]) is DB
    assert drivedb.stated_revision("no revision line") == 0


def test_lookups_are_remembered_and_bounded(monkeypatch):
    db = drivedb.parse(drivedb.BUNDLED.read_text())
    first = db.lookup("Samsung SSD 860 EVO 500GB", "RVT01B6Q")
    assert first is not None and db.lookup(" Samsung SSD 860 EVO 500GB ", "RVT01B6Q ") is first
    assert db.lookup("NO SUCH DRIVE 1") is None and ("NO SUCH DRIVE 1", None) in db._memo
    monkeypatch.setattr(drivedb, "LOOKUP_MEMO_MAX", 3)
    for i in range(10):
        assert db.lookup(f"NO SUCH DRIVE {i}") is None
    assert len(db._memo) <= 3
    assert db.lookup("Samsung SSD 860 EVO 500GB", "RVT01B6Q") is first
    assert db == drivedb.parse(drivedb.BUNDLED.read_text())  # the memo is not part of equality


def test_the_host_copy_smartmontools_7_3_ships_is_older(tmp_path):
    """Debian 12's smartmontools 7.3 package and its update-smart-drivedb download carry r5319 in the
    Subversion-era form of the version line; the bundled git-era 6204 is newer and wins."""
    old = tmp_path / "drivedb.h"
    old.write_text('{ "VERSION: 7.3 $Id: drivedb.h 5319 2022-02-19 17:48:34Z chrfranke $", "-", "-", "", "" },\n'
                   '{ "DEFAULT", "-", "-", "", "-v 9,raw24(raw8),Power_On_Hours" },\n'
                   '{ "Some SSD", "SOME SSD", "", "", "-v 241,raw48,Host_Writes_GiB" }\n')
    parsed = drivedb.load(old)
    assert (parsed.revision, parsed.date) == (5319, "2022-02-19") and parsed.entries
    assert drivedb.best_available([str(old)]) is DB


def test_the_licence_and_provenance_ship_with_it():
    data = drivedb.BUNDLED.parent
    assert "GNU GENERAL PUBLIC LICENSE" in (data / "COPYING").read_text()[:200]
    readme = (data / "README.md").read_text()
    assert "6204" in readme and "update-smart-drivedb" in readme and "COPYING" in readme


def test_seeds_001_liteon_lch_is_known_now():
    """seeds/001's drive (LITEON LCH-256V2S, firmware FC8020A) was "Not in smartctl database"
    for the author and for r5319; the current database files it under Silicon Motion."""
    entry = DB.lookup("LITEON LCH-256V2S", "FC8020A")
    assert entry is not None and entry.family == "Silicon Motion based SSDs"
    names = DB.names_of(entry, "FC8020A")
    assert names[241].name == "Host_Writes_32MiB" and names[241].trust == drivedb.NAMED


def test_a_default_checked_on_one_firmware_vouches_on_that_firmware_only():
    """The JMicron entry lists 241 Total_LBAs_Written "// FW SVN423b": checked on that firmware.
    KingSpec's NT-256 (firmware SN12574, a Maxiotek controller the entry also matches) prints 34
    there after 1,219 power-on hours (tests/fixtures/smartctl-text-bsdhw): not sectors."""
    entry = DB.lookup("NT-256 2242", "SN12574")
    assert entry is not None and entry.family.startswith("JMicron")
    assert DB.names_of(entry, "SN12574")[241].trust == drivedb.DEFAULT
    assert DB.names_of(entry, "SVN423b")[241].trust == drivedb.CONFIRMED
    # a note that names models, not a reservation, keeps the check (Samsung: "PM851, SM841N")
    samsung = DB.lookup("SAMSUNG MZ7LN256HMJP-00000", "MAV0100Q")
    assert DB.names_of(samsung, "MAV0100Q")[242].trust == drivedb.CONFIRMED


@pytest.mark.parametrize("line,revision,date", [
    ('{ "VERSION: 7.3 $Id: drivedb.h 5319 2022-02-19 17:48:34Z chrfranke $", "-", "-", "", "" }', 5319, "2022-02-19"),
    ('{ "VERSION: 7.5/6204 2026-07-20 17:31:50 +0000 98360bf7d5d9", "-", "-", "", "" }', 6204, "2026-07-20"),
    ('{ "VERSION: 7.3/ 2026-07-20", "-", "-", "", "" }', 0, ""),
])
def test_both_forms_of_the_version_line(line, revision, date):
    parsed = drivedb.parse(line)
    assert (parsed.revision, parsed.date) == (revision, date)


def _fixture_models():
    """Every model name a captured report in tests/fixtures prints (JSON and text)."""
    import re

    from tests.conftest import ROOT

    found = set()
    pattern = re.compile(r'"model_name": ?"([^"]+)"|Device Model: +(.+)')
    for path in (ROOT / "tests" / "fixtures").rglob("*"):
        if path.is_file() and path.suffix in (".json", ".txt", ".out", ""):
            for match in pattern.finditer(path.read_text(errors="replace")):
                found.add((match.group(1) or match.group(2)).strip())
    return sorted(found)


def test_the_literal_prefilter_never_changes_which_entry_matches():
    """Entry.matches rules a model out by the pattern's literal starts before compiling its
    regex; over every model of the captured reports (and each entry's own starts, which sit on
    the edge), the filtered answer equals the regex's, entry by entry."""
    models = _fixture_models()
    assert len(models) > 300
    for entry in DB.entries:
        models.extend(drivedb.literal_prefixes(entry.model))
    ruled_out = 0
    for entry in DB.entries:
        regex = entry._model_re
        prefixes = drivedb.literal_prefixes(entry.model)
        for model in models:
            if prefixes and not model.startswith(prefixes):
                ruled_out += 1
                assert regex is None or regex.fullmatch(model) is None, (entry.model, model)
    assert ruled_out > 0.9 * len(DB.entries) * len(models)  # the filter does rule out most


@pytest.mark.parametrize("pattern, starts", [
    ("ABC", ("ABC",)), ("AB?C", ("A",)), ("AB*", ("A",)), ("AB+", ("AB",)), ("AB{2}", ("A",)),
    ("A|B", ("A", "B")), ("A(B|C)|D", ("A", "D")), ("(A|B)C", ("A", "B")), ("(A |B )?CD", ("A ", "B ", "CD")),
    ("(A|B){2}C", ()), ("(A|)C", ()), ("[AB]C", ()), ("A|(B)", ("A", "B")), ("A[|]B|C", ("A", "C")),
    ("A[]|]B", ("A",)), ("X\\.Y", ("X",)), ("^AB", ()), (".*", ()), ("(A", ()), ("", ()),
    ("INTEL SSDSC2BB(080|120)G4", ("INTEL SSDSC2BB",)),
])
def test_literal_prefixes(pattern, starts):
    assert drivedb.literal_prefixes(pattern) == starts


@pytest.mark.parametrize("text, entries", [
    ('{ "a" "b", "c\\n\\"d" /* x */ }', [(["ab", 'c\n"d'], " x ")]),  # adjacent literals join; escapes
    ('{ "a", // note -v 1,raw48\n "b" }', [(["a", "b"], " note -v 1,raw48")]),
    ('{ "unterminated', []),  # a truncated file yields no half entry
    ('{ "a", /* open', []),
    ('x { "a" } y { "b", }', [(["a"], ""), (["b"], "")]),  # a trailing comma adds no field
    ('{ {"in"}, "x" }', [(["in", "x"], "")]),  # a nested brace is not an entry of its own
    ('"{" { "}" }', [(["}"], "")]),  # braces inside strings are text
    ('{ "a\\\\", "b\\', []),
])
def test_the_lexer(text, entries):
    """drivedb.h's lexer (one regex pass): what each entry's fields and comments are."""
    assert list(drivedb._entries(text)) == entries
