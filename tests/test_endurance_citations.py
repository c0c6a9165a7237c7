"""Every row of the rated-endurance table cites where its figure comes from: a vendor document
or a dated public post, with the address it was read at. A row no
document supports is not in the table (issue 16): an unsupported rating must not drive a
wear-out date."""

from __future__ import annotations

import json
import re

import pytest

from agent.endurance import RATINGS, rated_endurance
from tests.conftest import read_fixture

GB = 10**9

# What a placeholder looks like: a marker standing in for a source, not a source.
_PLACEHOLDER = re.compile(r"uncited|unknown|todo|tbd|fixme|as remembered|placeholder|\?\?", re.IGNORECASE)

# Rows removed because no vendor document stating their figure was found; they must not come
# back without one (and a drive of theirs now gets no table rating).
REMOVED = {
    "Intel DC S3500": "INTEL SSDSC2BB480G4",
    "Intel DC S3510": "INTEL SSDSC2BB480G6",
    "Intel DC S3520": "INTEL SSDSC2BB016T7",
    "Intel D3-S4510": "INTEL SSDSC2KB019T8",
    "Intel D3-S4610": "INTEL SSDSC2KG480G8",
    "Intel DC P4510": "INTEL SSDPE2KX020T8",
    "Intel DC P4610": "INTEL SSDPE2KE016T8",
    "Samsung PM863": "SAMSUNG MZ7LM960HMJP-00005",
    "Samsung SM863": "SAMSUNG MZ7KM960HMJP-00005",
    "Samsung PM883": "SAMSUNG MZ7LH960HAJR-00005",
    "Samsung PM1725": "SAMSUNG MZPLL1T6HAJQ-00005",
    "Samsung PM9A3": "SAMSUNG MZQL21T9HCJR-00A07",
    "Micron 7300": "Micron_7300_MTFDHBE1T9TDF",
    "Micron 7400": "Micron_7400_MTFDKCB1T9TDZ",
    "Micron 9300": "Micron_9300_MTFDHAL3T8TDP",
}


@pytest.mark.parametrize("row", RATINGS, ids=lambda r: r.name)
def test_every_row_cites_a_source_that_is_not_a_placeholder(row):
    cite = row.cite.strip()
    assert cite, f"{row.name}: no citation"
    assert not _PLACEHOLDER.search(cite), f"{row.name}: placeholder citation {cite!r}"
    # a public document a user can open: where it was read, and the phrase quoted from it; never
    # a file that ships nowhere (the project's own source notes)
    assert "seeds/" not in cite and "seeds/" not in row.note, f"{row.name}: cites a file users do not have"
    assert re.search(r"\(https?://\S+\)", cite), f"{row.name}: no address in {cite!r}"
    assert re.search(r"'[^']+'", cite), f"{row.name}: no quoted phrase in {cite!r}"
    # a vendor's specification, or a dated post that states the figure (P/E ratings the vendors
    # never published in a specification)
    assert re.search(r"Specification|datasheet|Product Brief|\(post, \d{4}-\d\d-\d\d\)", cite, re.IGNORECASE), cite


@pytest.mark.parametrize("row", RATINGS, ids=lambda r: r.name)
def test_every_row_carries_a_figure(row):
    assert (row.dwpd, row.pe_cycles, row.tbw_bytes) != (None, None, None), row.name


@pytest.mark.parametrize("name,model", sorted(REMOVED.items()))
def test_rows_without_a_document_are_gone_and_rate_nothing(name, model):
    assert name not in {row.name for row in RATINGS}
    assert rated_endurance(model, 1920 * GB) is None


def test_a_cited_row_says_which_row_rated_the_drive():
    rated = rated_endurance("INTEL SSDSC2BA400G3", 400 * GB)  # a DC S3700
    assert rated is not None and rated.source == "table: Intel DC S3700, 10 DWPD x 5 y"
    assert rated.tbw_bytes == pytest.approx(10 * 400 * GB * 365 * 5)


def test_a_family_naming_several_series_rates_nothing_by_itself():
    """smartctl's family "Intel S4510/S4610/S4500/S4600 Series SSDs" names four series with
    different ratings: neither an S4500 nor an S4510 takes a rating from it."""
    for model in ("INTEL SSDSC2KB019T7", "INTEL SSDSC2KB019T8"):
        assert rated_endurance(model, 1920 * GB,
                               model_family="Intel S4510/S4610/S4500/S4600 Series SSDs") is None


def test_an_s3500_does_not_take_the_s3700_rating_from_its_family():
    """smartctl 6 names the family "Intel 730 and DC S3500/S3700 Series SSDs" (as printed for
    an INTEL SSDSC2BB240G4, https://pastebin.com/XTzDVpgP); with the S3500 row gone the
    family matches one row, the S3700's ten drive writes a day, which this drive is not."""
    assert rated_endurance("INTEL SSDSC2BB240G4", 240 * GB,
                           model_family="Intel 730 and DC S3500/S3700 Series SSDs") is None


def test_a_real_s3500_report_gets_no_table_rating():
    doc = json.loads(read_fixture(
        "smartctl-json/smartctl_exporter__sat-Intel_730_and_DC_S35x0_3610_3700_Series_SSDs-"
        "INTEL_SSDSC2BB240G4-sde.json"))
    assert doc["model_name"] == "INTEL SSDSC2BB240G4"
    assert rated_endurance(doc["model_name"], doc["user_capacity"]["bytes"],
                           model_family=doc["model_family"]) is None


def test_a_family_naming_one_series_rates_a_part_number_the_table_does_not_know():
    rated = rated_endurance("INTEL SSDSC2BA800G4", 800 * GB, model_family="Intel DC S3700 Series SSDs")
    assert rated is not None and "S3700" in rated.source


def test_seed_003_intel_335_part_number_needs_no_family_or_override():
    rated = rated_endurance("INTEL SSDSC2CT240A4", 240 * GB, model_family="Intel 330/335 Series SSDs")
    assert rated is not None and rated.pe_cycles == 3000 and "Intel 335" in rated.source
