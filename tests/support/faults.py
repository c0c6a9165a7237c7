"""smartctl output for the fault tests: an ATA report, a no-data answer, a scan listing.

Moved out of test_faults.py (issue 27: test modules import helpers from tests/support/ only).
"""

from __future__ import annotations

import json
from typing import List

from tests.conftest import read_fixture


def scan_json(devices: List[str]) -> str:
    """``smartctl --scan-open --json`` listing: the default host's three plus ``devices``."""
    entries = [
        {"name": "/dev/sda", "type": "sat", "protocol": "ATA"},
        {"name": "/dev/nvme0", "type": "nvme", "protocol": "NVMe"},
        {"name": "/dev/nvme1", "type": "nvme", "protocol": "NVMe"},
    ]
    entries += [{"name": f"/dev/{d}", "type": "sat", "protocol": "ATA"} for d in devices]
    return json.dumps({"json_format_version": [1, 0],
                       "smartctl": {"version": [7, 4], "exit_status": 0}, "devices": entries})


def ata_output(device: str, serial: str, exit_status: int = 0) -> str:
    """The real Samsung 860 EVO capture as another drive: its own name and serial (so drives
    do not merge by identity) and the exit status smartctl would put in its JSON."""
    doc = json.loads(read_fixture("fakehost/scrutiny__smart-ata-full.json"))
    doc["serial_number"] = serial
    doc.pop("wwn", None)
    doc["device"]["name"] = f"/dev/{device}"
    doc["smartctl"]["exit_status"] = exit_status
    return json.dumps(doc)


def no_data_output(exit_status: int, message: str) -> str:
    """What smartctl --json prints when it stops before reading the drive."""
    return json.dumps({"json_format_version": [1, 0],
                       "smartctl": {"version": [7, 4], "exit_status": exit_status,
                                    "messages": [{"string": message, "severity": "error"}]}})
