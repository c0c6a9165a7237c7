"""LITEON LCH (seeds/001's drive): a 32-bit device statistics counter against an attribute the drive
database names in 32 MiB units (issue 29, class 1).

The drive database files the LCH under "Silicon Motion based SSDs" and names 241/242
Host_Writes_32MiB / Host_Reads_32MiB. On Lite-On's own firmware (GC72201, WC87901, 3C87902,
FC82202) those counters count GiB, and the ATA Device Statistics counters of the same drives are kept
in 32 bits: 0.85 TB where 7.45 TB is true. The general rule (collectors/smartctl/ata.py,
``_wrap_match``): a devstat counter that equals an attribute's count modulo 2**32 sectors, in the
attribute's named unit or (when that unit disagrees) another unit attributes count in, is the low 32
bits of that count, and the attribute wins. Every check below is worked from the report's own
numbers, not from the code."""

from __future__ import annotations

import re

import pytest

from collectors.smartctl import ata, drivedb
from collectors.smartctl import attributes as attrs
from collectors.smartctl.text_report import parse_smartctl_text, parse_smartctl_text_reading
from tests.conftest import fixture_path

B = "smartctl-text-bsdhw/bsdhw__SSD_Lite-On_"
GIB_SECTORS = 2**21
MIB32_SECTORS = 2**16
WRAP = 2**32

# Real reports with device statistics: (file, firmware). hw-probe reports from bsdhw/SMART.
OWN_FIRMWARE = [
    (B + "LCH-128V2S_63274B0C615F.txt", "GC72201"),  # issue 29: 1.87 TB read where ~4.07 TB is true
    (B + "LCH-256V2S_85DFA9F0A83D.txt", "3C87902"),  # issue 29: 0.85 TB read where ~7.45 TB is true
    (B + "LCH-256V2S_164D4EE9531F.txt", "WC87901"),
    (B + "LCH-256V2S_E43A2BB29EC1.txt", "FC82202"),  # the FC82xxx line of the seed's FC8020A
]


def _text(name: str) -> str:
    return fixture_path(name).read_text(errors="replace")


def _raw(text: str, attr_id: int) -> int:
    return int(re.search(rf"^\s*{attr_id} \S+\s.*?(\d+)\s*$", text, re.M).group(1))


def _devstat(text: str, name: str) -> int:
    return int(re.search(rf"^0x01\s+0x0\w\w\s+\d+\s+(\d+)\s+\S+\s+{name}\s*$", text, re.M).group(1))


def _gap(count_sectors: int, low32: int) -> int:
    gap = (count_sectors - low32) % WRAP
    return min(gap, WRAP - gap)


@pytest.mark.parametrize("name,firmware", OWN_FIRMWARE, ids=[f for _, f in OWN_FIRMWARE])
def test_host_writes_are_the_attribute_in_gib(name, firmware):
    text = _text(name)
    raw = _raw(text, 241)
    low32 = _devstat(text, "Logical Sectors Written")
    # the report's own arithmetic: in GiB the attribute's low 32 bits are the devstat counter, to
    # within one GiB; in the 32 MiB its name says it would be less than the devstat counter itself
    assert low32 < WRAP <= raw * GIB_SECTORS and _gap(raw * GIB_SECTORS, low32) <= GIB_SECTORS
    assert raw * MIB32_SECTORS < low32
    r = parse_smartctl_text_reading(text, "/dev/ada0")
    assert r.firmware == firmware
    assert r.host_written_bytes == raw * 2**30
    assert "x GiB" in r.sources["host_written_bytes"]
    assert "32-bit counter" in r.extra["host_written_bytes_devstat_ignored"]


def test_the_issues_two_figures():
    got = {f: parse_smartctl_text_reading(_text(n), "/dev/ada0").host_written_bytes for n, f in OWN_FIRMWARE[:2]}
    assert got["GC72201"] / 1e12 == pytest.approx(4.07, abs=0.01)
    assert got["3C87902"] / 1e12 == pytest.approx(7.45, abs=0.01)


@pytest.mark.parametrize("name,firmware", OWN_FIRMWARE, ids=[f for _, f in OWN_FIRMWARE])
def test_the_general_rule_alone_finds_the_unit(name, firmware):
    """Without ssdfleet's row for the model: the attribute in the 32 MiB the database names,
    against the devstat counter. The named unit disagrees, GiB leaves exactly the counter in the
    low 32 bits, and the attribute is weighed above the counter."""
    text = _text(name)
    raw = _raw(text, 241)
    low32 = _devstat(text, "Logical Sectors Written")
    attr = attrs.Attribute(241, "Host_Writes_32MiB", 100, 0, raw, str(raw))
    named = ata._Reading(attr, (attrs.UNIT_32MIB,), "ata 241 Host_Writes_32MiB raw", True)
    found = ata._wrap_match(low32, 512, named)
    assert found is not None and found.bytes == raw * 2**30
    assert "not the 32MiB its name says" in found.source


def test_a_named_unit_that_agrees_is_not_second_guessed():
    """The HP firmware of the same drive counts 32 MiB, as the database says; its devstat counter
    wrapped too, and the match is found in the named unit."""
    text = _text(B + "LCH-256V2S-HP_47DAE05CC02C.txt")
    raw = _raw(text, 241)
    assert _gap(raw * MIB32_SECTORS, _devstat(text, "Logical Sectors Written")) <= MIB32_SECTORS
    r = parse_smartctl_text_reading(text, "/dev/ada0")
    assert r.host_written_bytes == raw * 32 * 2**20
    assert r.sources["host_written_bytes"] == "ata 241 Host_Writes_32MiB raw"


def test_no_second_unit_when_the_named_one_agrees_directly():
    """A devstat counter that equals the attribute in its named unit is taken as it is: no other
    unit is searched for a wrap (one would match about once in 2,000 drives by chance)."""
    attr = attrs.Attribute(241, "Host_Writes_32MiB", 100, 0, 15_259, "15259")
    named = ata._Reading(attr, (attrs.UNIT_32MIB,), "ata 241 Host_Writes_32MiB raw", True)
    assert ata._wrap_units(15_259 * MIB32_SECTORS + 100, 512, named) == (attrs.UNIT_32MIB,)
    assert len(ata._wrap_units(3 * 15_259 * MIB32_SECTORS, 512, named)) > 1


def test_without_device_statistics_the_models_row_gives_gib():
    """smartctl 7.1 -a on a 3C87902 drive (no devstat): 241 = 8992 and 249 (the Silicon Motion
    NAND counter) = 11007 after 294 hours; in GiB the NAND/host ratio is 1.22, in 32 MiB it would be
    39. ssdfleet's row for the model (the four reports above) reads GiB."""
    text = _text(B + "LCH-256V2S_1AE30F48EB6D.txt")
    r = parse_smartctl_text_reading(text, "/dev/ada0")
    assert r.host_written_bytes == 8992 * 2**30
    assert _raw(text, 249) / 8992 == pytest.approx(1.22, abs=0.01)


def test_seeds_001_information_section():
    """The seed's own text: the information section of smartctl -x on the author's drive. The
    drive is known to the current database (it was not to the author's smartctl), and the report
    carries no counters to read, so no volume is given."""
    text = fixture_path("smartctl-text/seed001__smartctl-x_liteon_lch-256v2s_info.txt").read_text()
    doc = parse_smartctl_text(text)
    assert (doc["model_name"], doc["firmware_version"]) == ("LITEON LCH-256V2S", "FC8020A")
    assert doc["in_smartctl_database"] is False
    r = parse_smartctl_text_reading(text, "/dev/sda")
    assert r.extra["drivedb_family"] == "Silicon Motion based SSDs"
    assert r.host_written_bytes is None and r.capacity_bytes == 256_060_514_304
    # the model row that reads this drive's 241 in GiB applies to it
    rule = attrs.find_rule(241, "Host_Writes_32MiB", "Silicon Motion based SSDs LITEON LCH-256V2S")
    assert rule is not None and rule.unit == attrs.GIB
    assert attrs.find_rule(241, "Host_Writes_32MiB", "Silicon Motion based SSDs LITEON LCH-256V2S-HP").unit \
        == attrs.UNIT_32MIB
    assert drivedb.bundled().lookup("LITEON LCH-256V2S", "FC8020A") is not None
