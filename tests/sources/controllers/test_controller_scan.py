"""Disks behind controllers in ``smartctl --scan-open`` (collectors/smartctl/passthrough.py): what a
pass-through ``-d`` value addresses, read from real scan captures, and the scan's JSON leaving out
devices it could not open as its text form does."""

from __future__ import annotations

import json

import pytest

from collectors.megaraid import parse_storcli_json
from collectors.smartctl import ScanEntry, parse_scan_json, parse_scan_text, passthrough
from tests.conftest import read_fixture

# smartctl(8) "-d TYPE": (type, family, numbers, protocol, disk index behind the controller)
ADDRESSES = [
    ("megaraid,0", "megaraid", (0,), None, 0),
    ("sat+megaraid,60", "megaraid", (60,), "sat", 60),
    ("sat,12+megaraid,7", "megaraid", (7,), "sat", 7),
    ("aacraid,0,0,4", "aacraid", (0, 0, 4), None, 4),  # host, LUN, id
    ("cciss,3", "cciss", (3,), None, 3),
    ("3ware,2", "3ware", (2,), None, 2),
    ("areca,3", "areca", (3,), None, 3),
    ("areca,3/1", "areca", (3, 1), None, 3),  # disk 3 of enclosure 1
    ("hpt,1/2", "hpt", (1, 2), None, None),  # controller/channel: no single index
    ("hpt,1/2/3", "hpt", (1, 2, 3), None, None),
    ("jmb39x,1,s33,force", "jmb39x", (1,), None, 1),
    ("jmb39x-q,0+sat", "jmb39x-q", (0,), "sat", 0),
    ("sssraid,1,5", "sssraid", (1, 5), None, 5),  # enclosure 1, slot 5
    ("intelliprop,0+ata", "intelliprop", (0,), "ata", 0),
]


@pytest.mark.parametrize("dev_type,family,numbers,protocol,disk", ADDRESSES)
def test_pass_through_address(dev_type, family, numbers, protocol, disk):
    found = passthrough.address(dev_type)
    assert (found.family, found.numbers, found.protocol, found.disk) == (family, numbers, protocol, disk)
    assert passthrough.controller(dev_type) == family  # the one table agrees with itself


@pytest.mark.parametrize("dev_type", ["sat", "nvme,0x1", "megaraid", "cciss", "megaraid,1234", "megaraid,0 -x",
                                      "areca,1/2/3", "", None, "x" * 41, "aacraid,0,0"])
def test_not_an_address(dev_type):
    assert passthrough.address(dev_type) is None


def test_megaraid_disks_in_a_real_json_scan():
    entries = parse_scan_json(read_fixture("smartctl-json/telegraf__testcases_scan_megaraid.json"))
    behind = passthrough.behind_controllers(entries)
    # three plain SCSI/SAT devices first, then /dev/bus/6 with megaraid,8 .. megaraid,14
    assert {node for node, _, _ in behind} == {"/dev/bus/6"}
    assert [address.disk for _, _, address in behind] == list(range(8, 15))
    assert len(entries) - len(behind) == 3


def test_sat_behind_megaraid_in_a_real_text_scan():
    entries = parse_scan_text(read_fixture("smartctl-text/pySMART__linux_multiple_devices_--scan-open.txt"))
    ((node, dev_type, address),) = [b for b in passthrough.behind_controllers(entries) if b[2].disk == 60]
    assert (node, dev_type, address.family, address.protocol) == ("/dev/bus/0", "sat+megaraid,60", "megaraid", "sat")


def test_scan_json_leaves_out_devices_it_could_not_open():
    """smartctl --scan-open -j keeps a device it failed to open, with "open_error" (smartctl.cpp,
    scan_devices), where the text form comments the line out; neither is a drive to probe."""
    doc = json.loads(read_fixture("smartctl-json/telegraf__testcases_scan_megaraid.json"))
    doc["devices"][-1]["open_error"] = "INQUIRY failed"
    entries = parse_scan_json(json.dumps(doc))
    assert len(entries) == len(doc["devices"]) - 1
    assert ScanEntry("/dev/bus/6", "megaraid,14", doc["devices"][-1].get("protocol")) not in entries


def test_megaraid_device_ids_are_the_scan_disk_numbers():
    """storcli's DID is the N of -d megaraid,N: a drive found by the scan finds its slot, model and
    state in the controller's report (the capture of one host: DIDs 2, 3, 6, 7)."""
    report = parse_storcli_json(read_fixture("megaraid/textfile__storcli_cALL_show_all.json"))
    scan = [ScanEntry("/dev/bus/0", f"megaraid,{n}", "ATA") for n in (2, 3, 6, 7)]
    by_id = {d.device_id: d for d in report.drives}
    slots = [by_id[address.disk].slot for _, _, address in passthrough.behind_controllers(scan)]
    assert slots == ["252:0", "252:1", "252:5", "252:4"]
