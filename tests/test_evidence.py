"""The physical bounds and the monotone check of collectors/evidence.py, on real readings."""

from __future__ import annotations

import dataclasses

import pytest

from collectors import evidence
from collectors.smartctl import parse_smartctl_json
from tests.conftest import read_fixture

ATA = "fakehost/scrutiny__smart-ata-full.json"  # Samsung SSD 860 EVO 500GB


def _reading():
    return parse_smartctl_json(read_fixture(ATA), "/dev/sda")


def test_a_counter_that_went_backwards_is_withheld():
    before = _reading()
    assert before.host_written_bytes and before.power_on_seconds
    after = dataclasses.replace(before, host_written_bytes=before.host_written_bytes // 512)
    checked = evidence.monotone(before, after)
    assert checked.host_written_bytes is None
    assert "went backwards" in checked.extra["host_written_bytes_withheld"]
    assert checked.power_on_seconds == before.power_on_seconds  # the others stand


def test_rounding_and_growth_are_not_backwards():
    before = _reading()
    grown = dataclasses.replace(before, host_written_bytes=before.host_written_bytes + 10**9)
    assert evidence.monotone(before, grown) is grown
    rounded = dataclasses.replace(before, host_written_bytes=before.host_written_bytes - 2**25)
    assert evidence.monotone(before, rounded).host_written_bytes == rounded.host_written_bytes
    assert evidence.monotone(None, before) is before


def test_another_drive_is_not_compared():
    before = _reading()
    other = dataclasses.replace(before, serial="ANOTHER", host_written_bytes=1)
    assert evidence.monotone(before, other).host_written_bytes == 1


@pytest.mark.parametrize("field,value,why", [
    ("host_written_bytes", 2**64, "over 2**63"),
    ("host_written_bytes", 500107862016 * 200_000, "times the capacity"),
    ("power_on_seconds", 25 * 365 * 86400, "over 20 years"),
    ("power_cycles", -1, "negative"),
    ("media_errors", float("nan"), "not finite"),
])
def test_contain_withholds_what_cannot_be_true(field, value, why):
    reading = dataclasses.replace(_reading(), **{field: value})
    contained = evidence.contain(reading)
    assert getattr(contained, field) is None
    assert why in contained.extra[f"{field}_withheld"]


def test_poller_withholds_a_counter_that_went_backwards(tmp_path):
    """The poller compares each drive's reading with its last one: an NVMe drive whose
    data_units_written falls between two polls (a broken read) loses that figure only."""
    import json

    from agent.poller import Poller
    from tests.fakehost import build_default_host

    host = build_default_host(tmp_path)
    doc = json.loads(read_fixture("fakehost/scrutiny__smart-nvme.json"))
    poller = Poller(host.config())
    try:
        poller.poll_once()
        serial = "BTNH93710FS91P0B"  # nvme0: scrutiny__smart-nvme.json, INTEL SSDPEKNW010T8
        before = next(d for d in poller.snapshot().drives if d.serial == serial).reading.host_written_bytes
        doc["nvme_smart_health_information_log"]["data_units_written"] //= 10
        host.set_response("smartctl", "nvme0", json.dumps(doc))
        poller.poll_once()
        after = next(d for d in poller.snapshot().drives if d.serial == serial).reading
    finally:
        poller.stop()
    assert before > 0 and after.host_written_bytes is None
    assert "went backwards" in after.extra["host_written_bytes_withheld"]
    assert after.life_left_ratio is not None and after.power_on_seconds is not None


def test_integers_beyond_float_range_are_refused_not_crashed_on():
    """Found by fuzzing nvme-cli's JSON (data_units_read: 1e308 times 512,000 is an int no
    float holds): every bound check answers with a reason instead of raising OverflowError."""
    from collectors import evidence

    huge = 10 ** 400
    assert "2**63" in evidence.bytes_problem(huge, None, None, "nvme")
    assert "20 years" in evidence.power_on_problem(huge)
    assert "2**63" in evidence.counter_problem(huge)
