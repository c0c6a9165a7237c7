"""A Shannon card's own health verdict (issue 29, class 2).

Generation 2 of the driver prints ``media_status`` (the flash: Healthy / Unhealthy) and
``seu_flag`` (single-event upsets in the controller's logic: Normal / Correctable /
Uncorrectable) in ``shannon-status -p -a`` and ``-a``; the driver's sysfs has ``seu_flag``. A card
that says Unhealthy or Uncorrectable is failing by its own account: ``smart_healthy`` is False
(the same field a SMART FAILED or a Fusion-io reserve status sets), ``ssd_smart_healthy`` is 0,
the page shows a critical flag that names the word, and SSDSmartHealthFailed pages
(tests/rules/drive_verdicts_test.yml). No public capture of a failing generation-2 card exists:
the fixtures are written by hand in the layout of the healthy ones (PROVENANCE.tsv)."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry

from agent.metrics import SnapshotCollector
from agent.views import drive_view
from collectors.model import Drive, ParseError, Snapshot
from collectors.shannon import ShannonProbe, parse_status_a, parse_status_p, parse_sysfs
from collectors.shannon.parse import HEALTH_WORDS
from tests.conftest import fixture_path, read_fixture

UNHEALTHY = "shannon/constructed__status-p-a_gen2_unhealthy.txt"
HEALTHY = "shannon/constructed__status-p-a_gen2_two_cards.txt"
SEED_A = "shannon/seed000__status-a_9h.txt"
SYSFS = "shannon/sysfs"


def cards(relative: str):
    return {r.device: r for r in parse_status_p(read_fixture(relative).decode())}


def test_media_unhealthy_is_a_failed_verdict():
    r = cards(UNHEALTHY)["/dev/sctc"]
    assert r.smart_healthy is False
    assert r.extra["health_failed"] == "card reports media_status=Unhealthy"
    assert "media_status Unhealthy" in r.sources["smart_healthy"]
    assert r.life_left_ratio == pytest.approx(0.9682)  # the wear figures are unchanged


def test_seu_uncorrectable_is_a_failed_verdict():
    r = cards(UNHEALTHY)["/dev/sctd"]
    assert r.smart_healthy is False and r.extra["health_failed"] == "card reports seu_flag=Uncorrectable"


def test_healthy_and_correctable_cards_pass():
    """Healthy + Normal, and Healthy + Correctable (an upset the controller corrected): passed."""
    both = cards(HEALTHY)
    assert both["/dev/scta"].smart_healthy is True and both["/dev/sctb"].smart_healthy is True
    assert "health_failed" not in both["/dev/sctb"].extra


def test_generation_1_has_no_verdict():
    """The seed's driver 2.6.9 prints "Media status: 1.0760% bad block": a share, not a verdict."""
    (r,) = parse_status_a(read_fixture(SEED_A).decode())
    assert r.smart_healthy is None and "health_failed" not in r.extra


def test_sysfs_seu_flag_uncorrectable():
    files = ShannonProbe(tool="/nonexistent/shannon-status", sysfs_root=str(fixture_path(SYSFS))).read_sysfs("dfd")
    r = parse_sysfs(files, "dfd")
    assert r.smart_healthy is False and r.extra["health_failed"] == "card reports seu_flag=Uncorrectable"
    assert r.sources["smart_healthy"] == "shannon sysfs seu_flag Uncorrectable"


def test_sysfs_seu_flag_normal_passes():
    files = ShannonProbe(tool="/nonexistent/shannon-status", sysfs_root=str(fixture_path(SYSFS))).read_sysfs("dfa")
    assert parse_sysfs(files, "dfa").smart_healthy is True


def test_human_readable_gen2_words():
    """``-a`` on a generation-2 driver prints "Media status: Unhealthy" (no bad-block share)."""
    text = read_fixture("shannon/constructed__status-a_two_cards.txt").decode()
    changed = text.replace("Media status: 1.1402% bad block", "Media status: Unhealthy")
    assert changed != text
    r = {c.device: c for c in parse_status_a(changed)}["/dev/scta"]
    assert r.smart_healthy is False and r.sources["smart_healthy"] == "shannon -a Media status Unhealthy"


@pytest.mark.parametrize("word", ["Degraded", "", "unhealthy!", "Uncorrectable?"])
def test_unknown_words_withhold_the_verdict(word):
    text = read_fixture(HEALTHY).decode().replace("seu_flag=Normal", f"seu_flag={word}", 1)
    try:
        r = cards_from(text)["/dev/scta"]
    except ParseError:
        return  # an empty value may be refused as malformed: never a verdict either way
    assert r.smart_healthy is None
    if word:
        assert "not a state this parser knows" in r.extra["smart_healthy_withheld"]


def cards_from(text: str):
    return {r.device: r for r in parse_status_p(text)}


def test_the_words_are_case_insensitive():
    text = read_fixture(UNHEALTHY).decode().replace("media_status=Unhealthy", "media_status=UNHEALTHY")
    assert cards_from(text)["/dev/sctc"].smart_healthy is False
    assert set(HEALTH_WORDS) == {"media_status", "seu_flag"}


def test_metric_and_page_flag():
    """The reading's verdict reaches /metrics as ssd_smart_healthy 0 and the page as a critical
    flag naming the card's word."""
    r = cards(UNHEALTHY)["/dev/sctc"]
    drive = Drive(reading=r, last_poll={"shannon": 1000.0})
    registry = CollectorRegistry()
    registry.register(SnapshotCollector(lambda: Snapshot(created=1000.0, drives=(drive,)), clock=lambda: 1000.0))
    values = [s.value for m in registry.collect() for s in m.samples
              if s.name == "ssd_smart_healthy" and s.labels.get("serial") == r.serial]
    assert values == [0]
    view = drive_view(drive, 1000.0)
    flag = next(f for f in view.flags if f.key == "smart_health")
    assert flag.severity == "critical" and flag.reason == "card reports media_status=Unhealthy"
