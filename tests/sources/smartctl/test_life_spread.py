"""Two life figures of one drive, and how far apart they are (issue 29, classes 5 and 11).

An ATA drive may report its life three ways: the device statistics' Percentage Used Endurance
Indicator (ACS-3, a standard), the vendor's life attribute (231 SSD_Life_Left, 202, 233...) and the
wear-levelling counter's normalised VALUE. The reading gives one of them and says, in
``life_left_spread_ratio``, how far apart all of them are; past LIFE_LEFT_SPREAD_MARGIN the reading
carries ``extra["life_left_disagreement"]`` naming both ends, so a user sees the doubt.

Samsung's CM871/PM871 and SK hynix's SATA family keep their wear counter at 173, where the drive
database names it (``-v 173,raw48,Wear_Leveling_Count``): its VALUE is the life left there too."""

from __future__ import annotations

import pytest

from collectors.model import FIGURE_BOUNDS, LIFE_LEFT_SPREAD_MARGIN
from collectors.smartctl import parse_smartctl_json
from collectors.smartctl.text_report import parse_smartctl_text_reading
from tests.conftest import fixture_path, read_fixture

B = "smartctl-text-bsdhw/bsdhw__"
L = "smartctl-text/linuxhw-EnterpriseDrive__"


def reading(name: str):
    return parse_smartctl_text_reading(fixture_path(name).read_text(errors="replace"), "/dev/sdx")


def test_adata_sp900_figures_disagree_and_say_so():
    """The issue's SP900: device statistics 0% used, 231 SSD_Life_Left VALUE 87. The standard figure
    is still the one given (19 full-capacity writes of NAND on an MLC drive cannot have used 13% of
    its life), and the spread of 0.13 names both."""
    r = reading(B + "SSD_ADATA_SP900_256GB_87CF0FDE58FA.txt")
    assert r.life_left_ratio == 1.0
    assert r.life_left_spread_ratio == pytest.approx(0.13)
    assert r.life_left_spread_ratio > LIFE_LEFT_SPREAD_MARGIN
    said = r.extra["life_left_disagreement"]
    assert "Percentage Used Endurance Indicator says 100% left" in said and "231 SSD_Life_Left normalized 87%" in said
    assert "Percentage Used Endurance Indicator: 100%" in r.sources["life_left_spread_ratio"]


def test_adata_sp900_figures_that_agree_carry_no_flag():
    """The other SP900 of the corpus: 2% used against 231 at 95: three points, within the margin."""
    r = reading(B + "SSD_ADATA_SP900_128GB_59CF3887872A.txt")
    assert r.life_left_ratio == 0.98 and r.life_left_spread_ratio == pytest.approx(0.03)
    assert "life_left_disagreement" not in r.extra


def test_a_worn_phison_drive_whose_devstat_froze():
    """Kingston A400 (drive database "Phison Driven SSDs", 231 raw is the life left): device
    statistics 0% used after 1,382 average erase cycles, 231 at 0. The erase count refutes the
    standard figure, 0 is given, and the spread is the whole range."""
    r = reading(B + "SSD_Kingston_SA400S37120G_8AF73FAF90A0.txt")
    assert r.life_left_ratio == 0.0
    assert r.life_left_spread_ratio == 1.0 and "life_left_disagreement" in r.extra


def test_erase_counts_that_contradict_each_other_still_bound_the_wear():
    """Phison 173 MaxAvgErase_Ct prints "max (Average avg)"; on these reports the average is above
    the maximum, so neither is an average to compute with, but the smaller is still wear done.
    The OEM 16 GB drive: device statistics 0% used beside "3456 (Average 5390)" (and 173's own
    normalized value at 7): 3,456 cycles is past any MLC/TLC rating at 100% left, so life left
    is withheld with both counts named, never shown as 100%. The Patriot Blaze's "151 (Average
    4350)" beside 5% used: 151 cycles fit 95% left, and the figure stands."""
    worn = reading(B + "SSD_China_SATA_SSD_16GB_72768B5CF727.txt")
    assert worn.life_left_ratio is None
    why = worn.extra["life_left_ratio_withheld"]
    assert "says 100% left" in why and "MaxAvgErase_Ct 3456 (Average 5390)" in why and "3,456 cycles" in why
    blaze = reading(B + "SSD_Patriot_Blaze_64GB_B4F4F2746B19.txt")
    assert blaze.life_left_ratio == 0.95 and "life_left_ratio_withheld" not in blaze.extra


def test_json_report_agreeing_figures():
    """smartctl JSON (scrutiny's capture): device statistics and 177 Wear_Leveling_Count both 81."""
    r = parse_smartctl_json(read_fixture("smartctl-json/scrutiny__smart-ata-full.json").decode(), "/dev/sda")
    assert r.life_left_ratio == 0.81 and r.life_left_spread_ratio == 0.0
    assert "life_left_disagreement" not in r.extra


def test_one_figure_has_no_spread():
    """Samsung CM871 (MZ7TY128HDHP), no device statistics: 173 Wear_Leveling_Count VALUE 73 is the
    only life figure, so there is nothing to compare."""
    r = reading(B + "SSD_Samsung_MZ7TY128HDHP-000L1_EADCB300977F.txt")
    assert r.life_left_ratio == 0.73 and r.sources["life_left_ratio"] == "ata 173 Wear_Leveling_Count normalized"
    assert r.life_left_spread_ratio is None


@pytest.mark.parametrize("name, left", [
    (B + "SSD_Samsung_MZ7LN256HMJP-00000_E20B808CF6B7.txt", 0.93),  # PM871, drivedb "// CM871" row
    (L + "SSD_Samsung_MZ7LN1T0HAJQ-00000_049B7EFCCC9F.txt", 0.97),  # PM871a
])
def test_samsung_173_is_the_life_figure_where_the_database_puts_it(name, left):
    r = reading(name)
    assert r.life_left_ratio == left and "173 Wear_Leveling_Count" in r.sources["life_left_ratio"]


def test_sk_hynix_173_agrees_with_the_device_statistics():
    """SK hynix HFS256G32TNF: the database names 173 Wear_Leveling_Count (177 commented out); its
    VALUE 97 beside device statistics' 3% used: the standard figure given, no disagreement."""
    r = reading(B + "SSD_SK_hynix_HFS256G32TNF-N3A0A_371798C7B805.txt")
    assert r.life_left_ratio == 0.97 and r.life_left_spread_ratio == 0.0
    assert r.extra["life_left_ratio_also"] == "ata 173 Wear_Leveling_Count normalized: 97%"


def test_the_spread_has_a_bound():
    bound = FIGURE_BOUNDS["DriveReading.life_left_spread_ratio"]
    assert (bound.low, bound.high) == (0.0, 1.0)


def test_the_spread_is_exported_and_a_disagreement_is_a_reason_to_watch():
    """The SP900 that contradicts itself: ssd_life_left_spread_ratio 0.13 on /metrics, and the
    page and status list the disagreement among the reasons to watch the (otherwise OK) drive;
    the SP900 whose figures agree exports its spread and has no such reason."""
    import time

    from agent.metrics import make_registry
    from agent.views import drive_view
    from collectors.model import Drive, Snapshot

    now = time.time()
    worn = Drive(reading=reading(B + "SSD_ADATA_SP900_256GB_87CF0FDE58FA.txt").replace(device="/dev/sdx", serial="SP900-A"),
                 last_poll={"smartctl": now})
    fine = Drive(reading=reading(B + "SSD_ADATA_SP900_128GB_59CF3887872A.txt").replace(device="/dev/sdy", serial="SP900-B"),
                 last_poll={"smartctl": now})
    snap = Snapshot(drives=(worn, fine), created=now)
    registry = make_registry(lambda: snap)
    spreads = {s.labels["serial"]: s.value for m in registry.collect() if m.name == "ssd_life_left_spread_ratio"
               for s in m.samples}
    assert spreads == {"SP900-A": pytest.approx(0.13), "SP900-B": pytest.approx(0.03)}
    view = drive_view(worn, now)
    assert view.severity == "ok" and view.state == "watch", (view.severity, view.state, view.watch)
    assert any("life figures disagree" in w and "231 SSD_Life_Left" in w for w in view.watch)
    assert not any("disagree" in w for w in drive_view(fine, now).watch)
