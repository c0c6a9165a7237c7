"""Power-on time checked before it is given (issue 29, class 9).

ATA drives report power-on time twice: the device statistics' Power-on Hours (a standard
counter) and attribute 9 (in a unit the drive database gives). WD Blue / SanDisk firmware keeps
the first at 0, or 8-50 times below the second. When the two disagree, the least time the drive
must have been on decides: the bytes its device statistics say it wrote, at the most a SATA link
carries, and the newest self-test's power-on stamp. A counter below either is refuted; when both
stand, the time is withheld with both named.
The expectations below are worked out by hand from each report's lines (quoted per case).
"""

from __future__ import annotations

from typing import Optional

import pytest

from collectors.smartctl import ata
from collectors.smartctl.text_report import parse_smartctl_text_reading
from tests.conftest import fixture_path

B = "smartctl-text-bsdhw/bsdhw__SSD_"
L = "smartctl-text/linuxhw-EnterpriseDrive__SSD_"


def reading(name: str):
    return parse_smartctl_text_reading(fixture_path(name).read_text(errors="replace"), "/dev/sdx")


@pytest.mark.parametrize("name,hours,source,why", [
    # devstat 0, attribute 9 20,425; 8,168,382,065 sectors written = 4.18 TB, 1.9 h at 600 MB/s:
    # 0 hours cannot be true, attribute 9 can
    (B + "WDC_WDS500G2B0A-00SM50_8D43CEFBFD01.txt", 20425, "ata 9 Power_On_Hours", "less than the 1.9 hours"),
    # devstat 0 beside 22,877 and 140.1 TB written (64.9 h at the most a SATA link carries)
    (L + "SanDisk_SDSSDH31000G_041A56D32C18.txt", 22877, "ata 9 Power_On_Hours", "less than the 64.9 hours"),
    # devstat 1,085 against 20,786: 29.75 TB written needs only 13.8 h, but the self-test log's
    # newest test is stamped 20,753: devstat is refuted, attribute 9 fits the stamps
    (B + "SanDisk_SD8SB8U128G1001_C8AE031C5B1B.txt", 20786, "ata 9 Power_On_Hours",
     "below the self-test log's stamp at power-on hour 20,753"),
    # devstat 190 against 19,320; 4.54 TB written (2.1 h) and no self-test log: withheld
    (B + "SanDisk_SD8SB8U128G1001_0852004B7DE9.txt", None, None,
     "ata devstat Power-on Hours says 190 hours and ata 9 Power_On_Hours says 19,320 hours"),
    # devstat 17 against 4,075, 4.84 TB written (2.2 h): withheld
    (B + "WDC_WDS250G1B0A-00H9H0_B9CACBF4A00D.txt", None, None, "nothing on the drive tells which is right"),
    # Intel 330: attribute 9 reads 915,090 hours (over 20 years, a firmware offset): devstat 20,296 stands alone
    (B + "Intel_SSDSC2CT060A3_7E9052CAAFBF.txt", 20296, "ata devstat Power-on Hours", "over 20 years"),
    # KingFast: devstat 16,781,792 hours is impossible; attribute 9 4,576 stands alone
    (B + "KingFast_SSD_16GB_C8F2EFADA009.txt", 4576, "ata 9 Power_On_Hours", "over 20 years"),
    # Samsung 860 EVO: both 23,654: agreement, nothing rejected
    (B + "Samsung_SSD_860_EVO_250GB_1D5D8CC0AC8E.txt", 23654, "ata devstat Power-on Hours", None),
])
def test_power_on_on_real_reports(name, hours, source, why):
    r = reading(name)
    assert r.power_on_seconds == (None if hours is None else hours * 3600)
    assert r.sources.get("power_on_seconds") == source
    said = r.extra.get("power_on_seconds_withheld" if hours is None else "power_on_seconds_rejected")
    if why is None:
        assert said is None
    else:
        assert said and why in said, said


@pytest.mark.parametrize("devstat,least", [
    ({}, 0),                                                  # no counter: nothing proven
    ({"Logical Sectors Written": 0}, 0),
    ({"Logical Sectors Written": -5}, 0),                    # not a count
    ({"Logical Sectors Written": 2**70}, 0),                 # beyond any drive: proves nothing
    ({"Logical Sectors Written": 1_171_875}, 1),             # 600 MB: one second at 600 MB/s
])
def test_least_power_on_from_what_the_drive_wrote(devstat, least):
    seconds, _why = ata._least_power_on(devstat, 512)
    assert seconds == least


@pytest.mark.parametrize("a,b,agree", [
    (3600 * 1000, 3600 * 1000, True),
    (3600 * 1000, 3600 * 1047, True),     # 47 h apart: within two days
    (3600 * 1000, 3600 * 1060, False),    # 60 h apart on 1,060: past both margins (48 h, 53 h)
    (3600 * 20000, 3600 * 20900, True),   # 4.3%: within 5%
    (3600 * 20000, 3600 * 21100, False),  # 5.2%
])
def test_two_counters_agree_within_a_margin(a: int, b: int, agree: Optional[bool]):
    assert ata._agree(a, b) is agree
