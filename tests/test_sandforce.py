"""SandForce SF-2281 NAND writes, as smartmontools' drive database names them per model:
249 NAND_Writes_1GiB on Intel's SF-2281 drives (520, 330/335, 53x), read in GiB with the
compressing controller's write-amplification range (0.1..50); 233 SandForce_Internal on the
other SF-2281 drives, never read as NAND writes (the database does not say what it counts)."""

from __future__ import annotations

import re

import pytest

from collectors.smartctl import drivedb
from collectors.smartctl.json_report import COMPRESSING_WRITE_AMPLIFICATION_RANGE
from collectors.smartctl.text_report import parse_smartctl_text_reading
from tests.conftest import fixture_path

B = "smartctl-text-bsdhw/bsdhw__"
L = "smartctl-text/linuxhw-EnterpriseDrive__"
GIB = 2**30


def _path(name):
    return fixture_path(name if "/" in name else B + name)


def reading(name):
    return parse_smartctl_text_reading(_path(name).read_text(errors="replace"), "/dev/ada0")


def raw(name, attr):
    m = re.search(rf"^{attr} (\S+)\s.*?(\d+)\s*$", _path(name).read_text(errors="replace"), re.M)
    return m.group(1), int(m.group(2))


@pytest.mark.parametrize("name", [
    "SSD_Intel_SSDSC2CT240A4_E554F9853ED8.txt",  # 335 (seeds/003's drive)
    "SSD_Intel_SSDSC2CW240A3_E93C9BAFC9E4.txt",  # 520
    "SSD_Intel_SSDSC2BW180A4_6F5F9B319D51.txt",  # 530
])
def test_intel_sf2281_nand_writes_are_249_in_gib(name):
    r = reading(name)
    label, value = raw(name, 249)
    assert label == "NAND_Writes_1GiB"
    assert r.nand_written_bytes == value * GIB
    assert "249" in r.sources["nand_written_bytes"]
    low, high = COMPRESSING_WRITE_AMPLIFICATION_RANGE
    assert r.write_amplification == pytest.approx(r.nand_written_bytes / r.host_written_bytes, rel=1e-5)
    assert low <= r.write_amplification <= high


def test_intel_335_compresses_below_one_and_is_kept():
    """19,229 GiB reached the NAND for about 23 TiB from the host (241: 721,230 x 32 MiB): a
    write amplification near 0.82, a compressing controller's figure, inside 0.1..50."""
    r = reading("SSD_Intel_SSDSC2CT240A4_E554F9853ED8.txt")
    assert r.nand_written_bytes == 19229 * GIB
    assert r.host_written_bytes >= 721230 * 32 * 2**20
    assert 0.75 < r.write_amplification < 1


@pytest.mark.parametrize("name", [
    "SSD_OCZ_VERTEX3_128GB_8ED549AECAB3.txt",
    L + "SSD_Kingston_SH103S3240G_CF267880CFDB.txt",  # HyperX 3K
    "SSD_Corsair_Force_3_SSD_120GB_11070068A243.txt",
])
def test_sandforce_internal_233_is_not_nand_writes(name):
    assert raw(name, 233)[0] == "SandForce_Internal"
    r = reading(name)
    assert r.model_family == "SandForce Driven SSDs"
    assert r.nand_written_bytes is None and r.write_amplification is None


def test_the_bundled_drive_database_names_them_so():
    db = drivedb.bundled()
    names = db.names_of(db.lookup("INTEL SSDSC2CT240A4"))
    assert names[249].name == "NAND_Writes_1GiB" and names[249].vouched
    names = db.names_of(db.lookup("KINGSTON SH103S3240G"))
    assert names[233].name == "SandForce_Internal"
