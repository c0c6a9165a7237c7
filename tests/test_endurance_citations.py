"""Every row of the rated-endurance table cites where its figure comes from, and the rows no
vendor document confirms are a closed, named list (adding one is a visible decision)."""

from __future__ import annotations

from agent.endurance import RATINGS, UNCITED, rated_endurance

# Rows whose figure no vendor document found so far confirms: rated "[uncited]".
KNOWN_UNCITED = {
    "Intel DC S3500", "Intel DC S3510", "Intel DC S3520", "Intel D3-S4510", "Intel D3-S4610",
    "Intel DC P4510", "Intel DC P4610", "Samsung PM863", "Samsung SM863", "Samsung PM883",
    "Samsung PM1725", "Samsung PM9A3", "Micron 7300", "Micron 7400", "Micron 9300",
}


def test_every_row_has_a_citation():
    for row in RATINGS:
        assert row.cite.strip(), f"{row.name}: no citation"
        if row.cite == UNCITED:
            continue
        # a vendor document with where it was read, or the seed document the figure is from
        assert "http" in row.cite or row.cite.startswith("seeds/"), f"{row.name}: {row.cite!r}"


def test_the_uncited_rows_are_exactly_the_known_ones_and_say_so():
    uncited = {row.name for row in RATINGS if row.cite == UNCITED}
    assert uncited == KNOWN_UNCITED
    rated = rated_endurance("INTEL SSDSC2BB480G4", 480 * 10**9)  # a DC S3500
    assert rated is not None and rated.source.endswith("[uncited]")
    cited = rated_endurance("INTEL SSDSC2BA400G3", 400 * 10**9)  # a DC S3700
    assert cited is not None and "[uncited]" not in cited.source


def test_a_family_naming_several_series_rates_nothing_by_itself():
    """smartctl's family "Intel S4510/S4610/S4500/S4600 Series SSDs" names four series with
    different ratings: an S4500 (SSDSC2KB019T7) must not take the S4510's."""
    assert rated_endurance("INTEL SSDSC2KB019T7", 1920 * 10**9,
                           model_family="Intel S4510/S4610/S4500/S4600 Series SSDs") is None
    s4510 = rated_endurance("INTEL SSDSC2KB019T8", 1920 * 10**9,
                            model_family="Intel S4510/S4610/S4500/S4600 Series SSDs")
    assert s4510 is not None and "D3-S4510" in s4510.source


def test_a_family_naming_one_series_rates_a_part_number_the_table_does_not_know():
    rated = rated_endurance("INTEL SSDSC2BA800G4", 800 * 10**9, model_family="Intel DC S3700 Series SSDs")
    assert rated is not None and "S3700" in rated.source


def test_seed_003_intel_335_part_number_needs_no_family_or_override():
    rated = rated_endurance("INTEL SSDSC2CT240A4", 240 * 10**9, model_family="Intel 330/335 Series SSDs")
    assert rated is not None and rated.pe_cycles == 3000 and "Intel 335" in rated.source
    assert "[uncited]" not in rated.source
