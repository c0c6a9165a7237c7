"""Endurance left is never larger than endurance rated (issue 29, class 3).

A rating in P/E cycles is NAND bytes; both the rated total and what is left of it are shown in
host bytes, so both are divided by a write amplification. They were divided by two different
ones (the lifetime figure for the total, the recent NAND/host rate for the rest): on seeds/000's
Shannon card, 12,000 TB / 1.1618 = 10,329 TB rated beside (12,000 - 48.2) TB / 1.0187 = 11,732 TB
left, 113.6%. Now one write amplification serves both. The observed method's extrapolation
inside the whole-percent step (1% used) is no figure of bytes left either: 1% used of a 240 GB
Intel 335 extrapolates to 2.8 times its rating."""

from __future__ import annotations

import json

import pytest

from agent.endurance import rated_endurance
from agent.projection import OBSERVED, RATED, best, project_all, rated_host_bytes
from collectors.smartctl import parse_smartctl_json
from collectors.smartctl.text_report import parse_smartctl_text_reading
from tests.conftest import FIXTURES, fixture_path
from tests.support.seed000 import (
    GB,
    LATE,
    SHANNON_CAPACITY,
    SHANNON_MODEL,
    T0,
    TB,
    days_from,
    shannon_history,
    shannon_reading,
)


def test_seed000_rated_and_left_use_one_write_amplification():
    history = shannon_history()
    now = T0 + LATE["poh"]
    reading = shannon_reading(LATE)
    rated = rated_endurance(SHANNON_MODEL, SHANNON_CAPACITY)
    projections = project_all(reading, now, history, rated)
    chosen = best(projections)
    assert chosen.method == RATED
    wa = chosen.inputs["write_amplification_used"]
    assert wa == pytest.approx(659.05 / 646.94, rel=1e-3)  # recent NAND / host rate
    total = rated_host_bytes(rated, reading, projections)
    assert total == pytest.approx(12000 * TB / wa)
    assert chosen.endurance_remaining_bytes == pytest.approx((12000 * TB - 48235.25 * GB) / wa)
    assert chosen.endurance_remaining_bytes <= total
    # the lifetime amplification on one side only gave 113.6%
    assert chosen.endurance_remaining_bytes / (12000 * TB / LATE["wa"]) == pytest.approx(1.136, abs=0.001)
    # the seed's own arithmetic is unchanged: about 210 days
    assert days_from(chosen, now) == pytest.approx(209.9, abs=0.1)


def test_without_history_the_lifetime_amplification_serves_both():
    reading = shannon_reading(LATE)
    rated = rated_endurance(SHANNON_MODEL, SHANNON_CAPACITY)
    projections = project_all(reading, T0, None, rated)
    p = next(p for p in projections if p.method == RATED)
    assert p.inputs["write_amplification"] == LATE["wa"]
    assert rated_host_bytes(rated, reading, projections) == pytest.approx(12000 * TB / LATE["wa"])
    assert p.endurance_remaining_bytes == pytest.approx(12000 * TB / LATE["wa"] - 41516.25 * GB)


def test_intel_335_one_percent_used_gives_no_bytes_left():
    """seeds/003's Intel 335 family, a real bsdhw report: 233 Media_Wearout_Indicator 99 after
    25.2 TB of host writes. 1% used is the quantisation step: the observed method waits and
    gives no bytes left (its extrapolation, 2,494 TB, stays among the inputs)."""
    reading = parse_smartctl_text_reading(
        fixture_path("smartctl-text-bsdhw/bsdhw__SSD_Intel_SSDSC2CT240A4_E554F9853ED8.txt").read_text(), "/dev/ada0")
    rated = rated_endurance(reading.model, reading.capacity_bytes, model_family=reading.model_family)
    assert rated is not None and rated.pe_cycles == 3000
    projections = project_all(reading, T0, None, rated)
    observed = next(p for p in projections if p.method == OBSERVED)
    assert observed.endurance_remaining_bytes is None
    assert observed.inputs["extrapolated_remaining_bytes"] > 2 * rated_host_bytes(rated, reading, projections)
    rated_p = next(p for p in projections if p.method == RATED)
    assert 0 < rated_p.endurance_remaining_bytes <= rated_host_bytes(rated, reading, projections)


def _corpus():
    for folder in ("smartctl-json", "smartctl-text", "smartctl-text-bsdhw"):
        for path in sorted((FIXTURES / folder).iterdir()):
            if path.suffix not in (".json", ".txt") or "--scan" in path.name:
                continue
            text = path.read_text(errors="replace")
            try:
                if folder == "smartctl-json":
                    doc = json.loads(text)
                    if not isinstance(doc, dict) or "devices" in doc:
                        continue
                    yield path.name, parse_smartctl_json(text, "/dev/sdx")
                else:
                    yield path.name, parse_smartctl_text_reading(text, "/dev/sdx")
            except Exception:  # reports with no SMART data, scans: counted by the corpus tests
                continue


def test_remaining_never_above_rated_on_the_corpus():
    rated_drives, over = 0, []
    for name, reading in _corpus():
        rated = rated_endurance(reading.model or "", reading.capacity_bytes, model_family=reading.model_family)
        if rated is None:
            continue
        projections = project_all(reading, T0, None, rated)
        total = rated_host_bytes(rated, reading, projections)
        if total is None:
            continue
        rated_drives += 1
        over += [(name, p.method) for p in projections
                 if p.endurance_remaining_bytes is not None and p.endurance_remaining_bytes > total]
    assert rated_drives >= 9
    assert over == []
