"""The drive view names its controller, slot and volume (issue 28).

The host of tests/sources/controllers/test_e2e_controller_drives.py (eight drives behind a MegaRAID that a fake
smartctl reads with ``-d megaraid,N``), plus a direct NVMe drive and a fake storcli that answers
``/call/vall show all J`` with a real capture (tests/support/controller_host.py): the controller
source matches a drive to its slot by the MegaRAID device id (the N of ``-d megaraid,N``). The
real agent process serves the page and the API; ``ssdfleet status`` (the real command) reads the
API. Shown: the page's card and the status output name controller, slot and volume for each
matched drive, and nothing of the kind for the direct drive, nor for the one scanned drive whose
device id the controller does not report; ``ssd_controller_drive_info`` carries each matched
drive's device and serial labels, to join on ``ssd_drive_info``."""

from __future__ import annotations

import html
import json
import re
import subprocess
import sys
import time

import pytest
from prometheus_client.parser import text_string_to_metric_families

from agent.status_table import format_behind
from agent.views import controller_text
from tests.fakehost import ROOT, AgentProcess
from tests.support.controller_host import (
    BEHIND,
    CONFIGURED,
    configured_devices,
    controller_tool_args,
    megaraid_drives_host,
    storcli_volumes_only,
)

# Device id -> (slot, volume) in the cloudpods capture (storcli /c0/vall show all J):
# "EID:Slt", "DID" in each "PDs for VD n" list.
CAPTURE_SLOTS = {9: ("8:6", "4"), 10: ("8:5", "3"), 11: ("8:7", "5"), 12: ("8:3", "1"), 13: ("8:8", "6"),
                 14: ("8:4", "2"), 15: ("8:2", "1")}
NVME_SERIAL = "BTNH93710FS91P0B"  # fakehost/scrutiny__smart-nvme.json


def _device_id(dev_type: str) -> int:
    return int(dev_type.split(",")[1])


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """(page HTML, /api/v1/drives JSON, /metrics text, `ssdfleet status` text) of the agent."""
    root = tmp_path_factory.mktemp("behind")
    host, _smartctl = megaraid_drives_host(root)
    storcli = storcli_volumes_only(root)
    config = root / "agent.yml"
    config.write_text(json.dumps({"smartctl": {"devices": configured_devices()},
                                  "collectors": ["smartctl", "megaraid", "write_cache", "diskstats"]}))
    agent = AgentProcess(host, ["--config", str(config), "--interval.megaraid", "2"]
                         + controller_tool_args(root, {"storcli": storcli}))
    try:
        agent.wait_ready(timeout=60)
        deadline = time.monotonic() + 90
        while True:
            api = json.loads(agent.get("/api/v1/drives", timeout=20))
            matched = [d for d in api["drives"] if d.get("beside")]
            if len(matched) >= len(CAPTURE_SLOTS) or time.monotonic() > deadline:
                break
            time.sleep(1)
        page = agent.get("/", timeout=20).decode()
        metrics = agent.get("/metrics", timeout=20).decode()
        status = subprocess.run(
            [sys.executable, "-m", "agent", "status", "--url", f"http://127.0.0.1:{agent.port}", "--color", "never"],
            capture_output=True, text=True, timeout=60, cwd=str(ROOT), env={"COLUMNS": "400", "PATH": "/usr/bin:/bin"})
        yield page, api, metrics, status.stdout + status.stderr
    except BaseException:
        print(f"agent log (tail):\n{agent.log()[-3000:]}")
        raise
    finally:
        agent.stop()


def _serials() -> dict:
    """Device id -> serial of each drive the scan and the config put behind the controller."""
    out = {_device_id(t): serial for t, (_f, serial) in BEHIND.items()}
    out[_device_id(CONFIGURED[0])] = CONFIGURED[2]
    return out


def test_api_puts_controller_slot_and_volume_beside_each_matched_drive(served):
    _page, api, _metrics, _status = served
    by_serial = {d["serial"]: d for d in api["drives"]}
    serials = _serials()
    for did, (slot, volume) in CAPTURE_SLOTS.items():
        place = by_serial[serials[did]]["beside"]["megaraid"]
        assert (place["controller"], place["slot"], place["device_id"], place["volume"]) == \
            ("megaraid/0", slot, did, volume), place
    # megaraid,8: scanned, read, but the controller reports no drive 8; the NVMe drive is direct.
    for serial in (serials[8], NVME_SERIAL):
        assert by_serial[serial]["beside"] == {}, by_serial[serial]["beside"]


def _cards(page: str) -> dict:
    """serial -> the HTML of that drive's card on the page."""
    return {html.unescape(m.group(1)): m.group(0) for m in
            re.finditer(r'<article [^>]*data-serial="([^"]*)".*?</article>', page, re.S)}


def test_page_card_names_controller_slot_and_volume(served):
    page, api, _metrics, _status = served
    cards = _cards(page)
    serials = _serials()
    assert set(serials.values()) | {NVME_SERIAL} <= set(cards), sorted(cards)
    for did, (slot, volume) in CAPTURE_SLOTS.items():
        card = cards[serials[did]]
        m = re.search(r'<div class="behind" data-controller="megaraid/0" data-slot="([^"]*)" data-volume="([^"]*)"'
                      r'[^>]*>(.*?)</div>', card)
        assert m and m.group(1) == slot and m.group(2) == volume, card[:1500]
        assert f"megaraid/0 slot {slot} (device id {did}), volume {volume}" in html.unescape(m.group(3))
    for serial in (serials[8], NVME_SERIAL):
        assert 'class="behind"' not in cards[serial] and "RAID controller" not in cards[serial]


def test_page_card_ids_are_unique_though_the_drives_share_a_node(served):
    """Seven drives are read on /dev/bus/6: each card keeps an id of its own (the header's
    links jump to them), the serial added to the shared node's name."""
    page, api = served[0], served[1]
    ids = re.findall(r'<article id="([^"]*)"', page)
    assert len(ids) == len(set(ids)) >= 9, ids
    nvme = next(d["device"] for d in api["drives"] if d["serial"] == NVME_SERIAL)
    assert f"drive-/dev/bus/6-{BEHIND['megaraid,12'][1]}" in ids and f"drive-{nvme}" in ids, ids
    for target in re.findall(r'<a href="#(drive-[^"]*)"', page):
        assert html.unescape(target) in ids, target


def test_status_names_controller_slot_and_volume(served):
    _page, api, _metrics, status = served
    serials = _serials()
    assert "behind RAID controllers (write cache and I/O are the volume's):" in status, status
    block = []
    for line in status.split("behind RAID controllers", 1)[1].splitlines()[1:]:
        if not line.startswith("  "):
            break  # the next block's heading
        block.append(line)
    lines = {line.split()[1]: line for line in block}
    for did, (slot, volume) in CAPTURE_SLOTS.items():
        assert f"megaraid/0 slot {slot} (device id {did}), volume {volume}" in lines[serials[did]], block
    assert serials[8] not in lines and NVME_SERIAL not in lines, block
    # Every matched drive, and nothing else, is in the block.
    assert set(lines) == {serials[did] for did in CAPTURE_SLOTS}, block


def test_status_drive_sheet_names_the_controller(served):
    _page, api, _metrics, _status = served
    by_serial = {d["serial"]: d for d in api["drives"]}
    serials = _serials()
    from agent.status import format_drive

    sheet = format_drive(by_serial[serials[12]])
    assert re.search(r"^controller   megaraid/0 slot 8:3 \(device id 12\), volume 1( on /dev/\w+)?"
                     r"( \(write-\w+ now\))?; write cache and I/O are the volume's$", sheet, re.M), sheet
    assert "\ncontroller" not in format_drive(by_serial[NVME_SERIAL])


def test_controller_drive_info_carries_the_drives_labels(served):
    """ssd_drive_info's device and serial are on ssd_controller_drive_info for each matched drive
    (the small family that carries controller, slot and volume), so PromQL joins the two."""
    _page, _api, metrics, _status = served
    info = {}
    for family in text_string_to_metric_families(metrics):
        for s in family.samples:
            if s.name in ("ssd_controller_drive_info", "ssd_drive_info"):
                info.setdefault(s.name, []).append(s.labels)
    drives = {labels["serial"]: labels for labels in info["ssd_drive_info"]}
    by_did = {int(labels["device_id"]): labels for labels in info["ssd_controller_drive_info"]}
    serials = _serials()
    for did, (slot, volume) in CAPTURE_SLOTS.items():
        labels = by_did[did]
        assert (labels["slot"], labels["volume"], labels["serial"]) == (slot, volume, serials[did]), labels
        assert labels["device"] == drives[serials[did]]["device"]
    # The capture's drives 16 and 17 are not read by the agent: no device label (vall gives no serial).
    assert by_did[16]["device"] == "" and by_did[16]["serial"] == "" and by_did[16]["volume"] == "0"


@pytest.mark.parametrize("place, text", [
    ({"controller": "megaraid/0", "slot": "8:2", "device_id": 15, "volume": "1", "volume_os_device": "/dev/sda",
      "volume_write_cache": "write-through"},
     "megaraid/0 slot 8:2 (device id 15), volume 1 on /dev/sda (write-through now)"),
    ({"controller": "ssacli/0", "slot": "1I:1:1", "device_id": None, "volume": None}, "ssacli/0 slot 1I:1:1, in no volume"),
    ({"controller": "arcconf/1", "slot": "0,3", "volume": "0"}, "arcconf/1 slot 0,3, volume 0"),
])
def test_controller_text(place, text):
    assert controller_text(place) == text


@pytest.mark.parametrize("beside", [{}, None, {"syncwrite": {"path": "/x"}}, {"megaraid": {"controller": "megaraid/0"}},
                                    {"megaraid": "garbage"}])
def test_nothing_shown_without_a_controller_place(beside):
    assert format_behind([{"device": "nvme0", "serial": "X", "beside": beside}]) == ""
