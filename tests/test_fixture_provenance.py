"""Every fixture file carries its provenance; the top-level table is the folders' tables merged."""

from __future__ import annotations

import csv

from tests.conftest import FIXTURES, all_fixture_files

HEADER = ["file", "source_repo", "path_in_repo", "commit", "license", "device_type", "model",
          "smartctl_version", "is_ssd", "notes"]


def _rows(path):
    with open(path, newline="", encoding="utf-8") as fh:
        reader = csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_NONE)
        header = next(reader)
        return header, [r for r in reader if r]


def test_every_fixture_has_one_provenance_row():
    header, rows = _rows(FIXTURES / "PROVENANCE.tsv")
    assert header == HEADER
    files = [r[0] for r in rows]
    assert len(files) == len(set(files)), "duplicate rows"
    assert sorted(files) == all_fixture_files()
    for r in rows:
        assert len(r) == len(HEADER), r[0]
        assert r[1], f"{r[0]}: no source"
        # Copied files name their licence; constructed ones say so.
        assert r[4] or "constructed" in r[1], f"{r[0]}: no licence"


def test_top_level_table_is_the_folder_tables_merged():
    merged = []
    for table in sorted(FIXTURES.glob("*/PROVENANCE.tsv")):
        header, rows = _rows(table)
        assert header == HEADER, table
        folder = table.parent.name
        assert all(r[0].startswith(folder + "/") for r in rows), table
        merged += rows
    assert merged == _rows(FIXTURES / "PROVENANCE.tsv")[1]
