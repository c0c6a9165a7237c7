"""The shared controller records (collectors/controller_model.py): units, plausibility, the
write-back-lost comparison, merging partial reports; and, for every controller parser, that no
input (arbitrary bytes, or the real captures mangled the way broken pipes mangle output) makes
it raise anything but its declared ParseError."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from collectors import controller_model as cm
from collectors import controller_text as ct
from collectors.arcconf import parse_getconfig, parse_getstatus
from collectors.controller_model import CachePolicy, ControllerReport, ParseError, PhysicalDrive, VirtualDisk
from collectors.megaraid import parse_adapter_info, parse_bbu, parse_ldinfo, parse_pdlist, parse_storcli_json
from collectors.ssacli import parse_ssacli
from tests.conftest import fixture_files


@pytest.mark.parametrize("text,decimal,expected", [
    ("893.750 GB", False, round(893.75 * 2**30)), ("1.745 TB", False, round(1.745 * 2**40)),
    ("279800 MB", False, 279800 * 2**20), ("2048MB", False, 2048 * 2**20), ("146 GB", True, 146 * 10**9),
    ("4 KB", False, 4096), ("1 GiB", True, 2**30), ("512B", False, 512),
    ("", False, None), (None, False, None), ("NA", False, None), ("-5 GB", False, None), ("1e400 TB", False, None),
    ("99999999999999999999 MB", False, None), ("999999999999999 PB", False, None), ("12 furlongs", False, None),
])
def test_size_bytes(text, decimal, expected):
    assert ct.size_bytes(text, decimal=decimal) == expected


@pytest.mark.parametrize("value,expected", [
    ("24C", 24.0), (" 21C (69.80 F)", 21.0), ("35 C/ 95 F (Normal)", 35.0), ("31 deg C", 31.0), (52, 52.0),
    ("-4 C/ 25 F (Normal)", -4.0), ("99999C", None), ("200 C", None), (True, None), (None, None), ("hot", None),
    (float("nan"), None),
])
def test_celsius(value, expected):
    assert ct.celsius(value) == expected


@pytest.mark.parametrize("value,expected", [("97 %", 0.97), ("99 percent", 0.99), (100, 1.0), ("0", 0.0),
                                            ("101 %", None), ("-1 %", None), ("x", None), (None, None)])
def test_percent_ratio(value, expected):
    assert ct.percent_ratio(value) == expected


def _volume(default: str, current: str) -> VirtualDisk:
    return VirtualDisk(controller="0", id="0", default_cache=CachePolicy(write=default),
                       current_cache=CachePolicy(write=current))


@pytest.mark.parametrize("default,current,lost", [
    (cm.WRITE_BACK, cm.WRITE_THROUGH, True), (cm.ALWAYS_WRITE_BACK, cm.WRITE_THROUGH, True),
    (cm.WRITE_BACK, cm.WRITE_BACK, False), (cm.WRITE_THROUGH, cm.WRITE_THROUGH, False),
    (cm.WRITE_THROUGH, cm.WRITE_BACK, False),
])
def test_write_back_lost(default, current, lost):
    assert _volume(default, current).write_back_lost is lost


def test_write_back_lost_needs_both_policies():
    assert VirtualDisk(controller="0", id="0", current_cache=CachePolicy(write=cm.WRITE_THROUGH)).write_back_lost is None
    assert VirtualDisk(controller="0", id="0", default_cache=CachePolicy(write=None),
                       current_cache=CachePolicy(write=cm.WRITE_THROUGH)).write_back_lost is None


def test_merged_keeps_one_record_per_key_and_the_later_wins():
    first = ControllerReport(drives=(PhysicalDrive(controller="0", slot="252:0", model="A"),
                                     PhysicalDrive(controller="0", slot="252:1")), notes=("a",))
    second = ControllerReport(drives=(PhysicalDrive(controller="0", slot="252:0", serial="S1"),
                                      PhysicalDrive(controller="1", slot="252:0")), notes=("b",))
    merged = first.merged(second)
    assert [(d.controller, d.slot, d.serial) for d in merged.drives] == [("0", "252:0", "S1"), ("0", "252:1", None),
                                                                         ("1", "252:0", None)]
    assert merged.notes == ("a", "b")


# --------------------------------------------------------------------------- property tests

PARSERS = {
    "storcli": parse_storcli_json, "megacli-adapter": parse_adapter_info, "megacli-ld": parse_ldinfo,
    "megacli-pd": parse_pdlist, "megacli-bbu": parse_bbu, "ssacli": parse_ssacli, "arcconf": parse_getconfig,
    "arcconf-status": parse_getstatus,
}
CAPTURES = [p.read_bytes() for folder in ("megaraid", "ssacli", "arcconf") for p in fixture_files(folder)]
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _only_parse_errors(parser, data) -> None:
    try:
        parser(data)
    except ParseError:
        pass


def _mangle(data: bytes, seed: int) -> bytes:
    """What broken tools do: flip bytes, drop, repeat or cut lines, blow numbers up."""
    rnd = random.Random(seed)
    lines = data.split(b"\n")
    for _ in range(rnd.randint(1, 6)):
        if not lines:
            break
        i = rnd.randrange(len(lines))
        choice = rnd.randrange(5)
        if choice == 0:
            del lines[i]
        elif choice == 1:
            lines.insert(i, lines[i])
        elif choice == 2:
            lines = lines[:i]
        elif choice == 3:
            lines[i] = bytes(b ^ rnd.randrange(256) if rnd.random() < 0.1 else b for b in lines[i])
        else:
            lines[i] = rnd.choice([b"1" * 400, b"-7", b"0.5", b"NaN", b"1e309"]).join(lines[i].split(b"0", 1))
    return b"\n".join(lines)


@pytest.mark.parametrize("name", sorted(PARSERS))
@SETTINGS
@given(data=st.binary(max_size=2000) | st.text(max_size=2000).map(lambda t: t.encode()))
def test_arbitrary_input_only_ever_raises_parse_error(name, data):
    _only_parse_errors(PARSERS[name], data)


@pytest.mark.parametrize("name", sorted(PARSERS))
@SETTINGS
@given(index=st.integers(min_value=0, max_value=len(CAPTURES) - 1), seed=st.integers(min_value=0, max_value=2**32))
def test_mangled_captures_only_ever_raise_parse_error(name, index, seed):
    _only_parse_errors(PARSERS[name], _mangle(CAPTURES[index], seed))


@pytest.mark.parametrize("name", sorted(PARSERS))
def test_every_capture_through_every_parser_raises_only_parse_error(name):
    for data in CAPTURES:  # a capture of one family given to another family's parser
        _only_parse_errors(PARSERS[name], data)


def test_every_capture_comes_out_within_the_bounds_table():
    """collectors/model.py FIGURE_BOUNDS rows for the controller records, against every capture."""
    import dataclasses

    from collectors.model import FIGURE_BOUNDS
    from tests.conftest import read_fixture

    parsers = {"megaraid": None, "ssacli": parse_ssacli, "arcconf": parse_getconfig}
    checked = 0
    for folder, parser in parsers.items():
        for path in fixture_files(folder):
            if path.suffix not in (".txt", ".json"):
                continue
            data = read_fixture(f"{folder}/{path.name}")
            if parser is None:
                chosen = parse_storcli_json if path.suffix == ".json" else next(
                    p for k, p in (("AdpAllInfo", parse_adapter_info), ("bbu", parse_bbu), ("BbuCmd", parse_bbu),
                                   ("pdlist", parse_pdlist), ("ldinfo", parse_ldinfo), ("LdPd", parse_ldinfo))
                    if k.lower() in path.name.lower())
            else:
                chosen = parse_getstatus if "getstatus" in path.name else parser
            report = chosen(data)
            if not isinstance(report, ControllerReport):
                continue
            for record in report.controllers + report.volumes + report.drives + report.batteries:
                for f in dataclasses.fields(record):
                    bound = FIGURE_BOUNDS.get(f"{type(record).__name__}.{f.name}")
                    value = getattr(record, f.name)
                    if bound is None or value is None:
                        continue
                    checked += 1
                    assert bound.low <= value <= bound.high, (path.name, f.name, value)
    assert checked > 100
