"""The normaliser against hand-checked expectations for real reports it was not written from.

tests/golden/bsdhw/part*.yaml hold, for a spread of the bsdhw training reports (SATA SSDs from
many vendor folders, NVMe drives and HDDs), what a careful reader of each raw report decides for
life left, host bytes written and power-on hours, with the reason (tests/golden/bsdhw/README.md
gives the reader's rules). The normaliser must give the same figure, or withhold it where the
reader wrote null. A figure given where the reader found none counts as wrong, like a figure
that differs.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any, Dict, List

import pytest
import yaml

from collectors.smartctl.text_report import parse_smartctl_text_reading
from tests.conftest import ROOT, fixture_path

GOLDEN = ROOT / "tests" / "golden" / "bsdhw"
FOLDER = "smartctl-text-bsdhw"


def _entries() -> List[Dict[str, Any]]:
    out: List[Dict[str, Any]] = []
    for part in sorted(GOLDEN.glob("part*.yaml")):
        out += yaml.safe_load(part.read_text(encoding="utf-8")) or []
    return out


ENTRIES = _entries()


def _reading(name: str):
    text = fixture_path(f"{FOLDER}/{name}").read_bytes().decode("utf-8", errors="replace")
    return parse_smartctl_text_reading(text, "/dev/sdx")


def _compare(entry: Dict[str, Any]) -> List[str]:
    """What the normaliser gives that the reader did not, one line each."""
    r = _reading(entry["file"])
    wrong = []
    life = None if r.life_left_ratio is None else round(r.life_left_ratio * 100, 4)
    want = entry["life_left_percent"]
    if (want is None) != (life is None) or (want is not None and abs(life - want) > 0.5):
        wrong.append(f"life left {life} (reader: {want}; {r.sources.get('life_left_ratio') or r.extra.get('life_left_ratio_withheld')})")
    got, want = r.host_written_bytes, entry["host_written_bytes"]
    if (want is None) != (got is None) or (want is not None and abs(got - want) > 0.01 * max(want, 1)):
        wrong.append(f"host bytes {got} (reader: {want}; "
                     f"{r.sources.get('host_written_bytes') or r.extra.get('host_written_bytes_withheld')})")
    hours = None if r.power_on_seconds is None else r.power_on_seconds / 3600
    want = entry["power_on_hours"]
    if (want is None) != (hours is None) or (want is not None and abs(hours - want) > max(1.0, 0.01 * want)):
        wrong.append(f"power-on hours {hours} (reader: {want}; "
                     f"{r.sources.get('power_on_seconds') or r.extra.get('power_on_seconds_withheld')})")
    return wrong


def test_the_expectations_are_many_varied_and_explained() -> None:
    assert len(ENTRIES) >= 300
    files = [e["file"] for e in ENTRIES]
    assert len(files) == len(set(files)), "a report listed twice"
    classes = Counter(e["class"] for e in ENTRIES)
    assert classes["sata_ssd"] >= 200 and classes["nvme"] >= 30 and classes["hdd"] >= 30, classes
    vendors = {Path(f).name.split("__")[1].split("_")[1] for f in files}
    assert len(vendors) >= 60
    for e in ENTRIES:
        for key in ("life_why", "host_why", "power_why"):
            assert isinstance(e.get(key), str) and len(e[key]) > 10, f"{e['file']}: no reason in {key}"
        if e["class"] == "hdd":
            assert e["life_left_percent"] is None, e["file"]
    # Entries changed after the normaliser was compared with them say why (README); few may be.
    amended = [e for e in ENTRIES if "amended" in e]
    assert all(len(e["amended"]) > 40 for e in amended)
    assert len(amended) <= 0.02 * len(ENTRIES), len(amended)


@pytest.mark.parametrize("entry", ENTRIES, ids=[e["file"][7:60] for e in ENTRIES])
def test_normaliser_matches_the_reader(entry: Dict[str, Any]) -> None:
    wrong = _compare(entry)
    assert not wrong, "; ".join(wrong)


def test_summary(capsys) -> None:
    given = Counter()
    withheld = Counter()
    wrong = Counter()
    for e in ENTRIES:
        r = _reading(e["file"])
        for field_name in ("life_left_ratio", "host_written_bytes", "power_on_seconds"):
            if getattr(r, field_name) is None:
                withheld[field_name] += 1
            else:
                given[field_name] += 1
        for line in _compare(e):
            wrong[line.split(" (")[0].rsplit(" ", 1)[0]] += 1
    with capsys.disabled():
        print(f"\n\nbsdhw golden: {len(ENTRIES)} hand-checked reports; given {dict(given)}; "
              f"absent {dict(withheld)}; disagreeing with the reader {dict(wrong) or 0}")
    assert not wrong


# ---------------------------------------------------------------- held out

# tests/golden/bsdhw/holdout*.yaml: 124 more reports, hand-checked by two more readers after the
# rules above were written, and never used to change them. They measure how the rules do on
# reports they were not fitted to; the figures are printed, and held to the bar.


def _holdout() -> List[Dict[str, Any]]:
    out: List[Dict[str, Any]] = []
    for part in sorted(GOLDEN.glob("holdout*.yaml")):
        out += yaml.safe_load(part.read_text(encoding="utf-8")) or []
    return out


def test_held_out_reports(capsys) -> None:
    entries = _holdout()
    assert len(entries) >= 100
    assert not {e["file"] for e in entries} & {e["file"] for e in ENTRIES}
    figures = given = wrong = withheld_decidable = 0
    lines = []
    for e in entries:
        r = _reading(e["file"])
        got = {"life": None if r.life_left_ratio is None else r.life_left_ratio * 100,
               "host": r.host_written_bytes,
               "power": None if r.power_on_seconds is None else r.power_on_seconds / 3600}
        want = {"life": e["life_left_percent"], "host": e["host_written_bytes"], "power": e["power_on_hours"]}
        tolerance = {"life": lambda w: 0.5, "host": lambda w: 0.01 * w, "power": lambda w: max(1.0, 0.01 * w)}
        for key in got:
            figures += 1
            if got[key] is not None:
                given += 1
                if want[key] is None or abs(got[key] - want[key]) > tolerance[key](want[key]):
                    wrong += 1
                    lines.append(f"  given, reader disagrees: {e['file']} {key} {got[key]} (reader {want[key]})")
            elif want[key] is not None:
                withheld_decidable += 1
                lines.append(f"  withheld, reader decided: {e['file']} {key} (reader {want[key]})")
    with capsys.disabled():
        print(f"\n\nbsdhw held out: {len(entries)} reports, {figures} figures, {given} given, "
              f"{wrong} given where the reader disagrees ({wrong / given:.2%}), "
              f"{withheld_decidable} withheld where the reader decided ({withheld_decidable / figures:.2%})\n"
              + "\n".join(lines))
    assert wrong <= 0.005 * given
    assert withheld_decidable <= 0.05 * figures
