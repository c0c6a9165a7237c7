"""The chosen source and the withheld reason reach the user: /api/v1/drives' view, `ssdfleet
status --drive`, the page and /metrics, from a real report with an impossible counter."""

from __future__ import annotations

import dataclasses
import time

from agent.metrics import drive_families
from agent.page import render_page
from agent.status import format_drive
from agent.views import drive_view
from collectors.model import Drive, Snapshot
from collectors.smartctl.text_report import parse_smartctl_text_reading
from tests.conftest import read_fixture

KINGFAST = "smartctl-text-bsdhw/bsdhw__SSD_KingFast_SSD_16GB_C8F2EFADA009.txt"


def _drive() -> Drive:
    text = read_fixture(KINGFAST).decode("utf-8", errors="replace")
    return Drive(reading=parse_smartctl_text_reading(text, "/dev/sdb"))


def test_view_lists_each_figure_given_or_withheld() -> None:
    view = drive_view(_drive(), time.time())
    rows = {r["field"]: r for r in view.evidence}
    assert rows["host_written_bytes"]["state"] == "withheld"
    assert "2**63" in rows["host_written_bytes"]["reason"] or "capacity" in rows["host_written_bytes"]["reason"]
    # this report's devstat Power-on Hours is garbled (16,781,792 h): attribute 9 is read, and why
    assert rows["power_on_seconds"]["source"] == "ata 9 Power_On_Hours"
    assert "over 20 years" in rows["power_on_seconds"]["set_aside"]
    assert rows["life_left_ratio"]["state"] == "given"


def test_status_drive_prints_the_evidence() -> None:
    view = dataclasses.asdict(drive_view(_drive(), time.time()))
    text = format_drive(view, color=False, width=200)
    lines = [line for line in text.splitlines() if "host writes WITHHELD" in line]
    assert lines and "beyond any drive's lifetime" in lines[0]
    assert "power-on time from ata 9 Power_On_Hours" in text


def test_page_shows_the_evidence_under_the_life_bar() -> None:
    drive = _drive()
    page = render_page(Snapshot(drives=(drive,), created=time.time()), time.time())
    assert 'data-field="host_written_bytes" data-state="withheld"' in page
    assert "sources, 2 withheld" in page  # host writes and host reads


def test_metrics_mark_the_withheld_figure() -> None:
    families = {f.name: f for f in drive_families([_drive()])}
    withheld = {s.labels["field"] for s in families["ssd_value_withheld"].samples}
    assert "host_written_bytes" in withheld
    assert "ssd_host_written_bytes" not in families
