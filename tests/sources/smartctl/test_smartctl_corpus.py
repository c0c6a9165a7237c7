"""Every vendored smartctl JSON file through the parser, with coverage figures.

Whether a file *carries* a wear indicator or a host write counter is decided here from the raw
JSON by name, independently of the parser's attribute table, so a table that forgets a vendor
shows up as a coverage drop. Run with ``-s`` to see the summary.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Dict, List

from collectors.model import ParseError
from collectors.smartctl import NoSmartData, parse_scan_json, parse_smartctl_json
from tests.conftest import fixture_files

WEAR_NAME = re.compile(r"Life|Wearout|Wear_Leveling|Lifetime_Remain", re.IGNORECASE)
HOST_WRITE_NAME = re.compile(
    r"Total_LBAs_Written|Host_Writes|Lifetime_Writes|Total_Writes|Host_GB_Written|Wts_Frm_Hst|Host_Sector_Write"
)


def _attribute_names(doc: Dict[str, Any]) -> List[str]:
    table = (doc.get("ata_smart_attributes") or {}).get("table") or []
    return [row.get("name", "") for row in table if isinstance(row, dict)]


def _devstat_names(doc: Dict[str, Any]) -> List[str]:
    pages = (doc.get("ata_device_statistics") or {}).get("pages") or []
    return [row.get("name", "") for page in pages for row in page.get("table", [])]


def _is_ssd(doc: Dict[str, Any]) -> bool:
    return doc.get("rotation_rate") == 0 or (doc.get("device") or {}).get("protocol") == "NVMe"


def _carries_wear(doc: Dict[str, Any]) -> bool:
    if "percentage_used" in (doc.get("nvme_smart_health_information_log") or {}):
        return True
    if "scsi_percentage_used_endurance_indicator" in doc:
        return True
    if "Percentage Used Endurance Indicator" in _devstat_names(doc):
        return True
    return any(WEAR_NAME.search(name) for name in _attribute_names(doc))


def _carries_host_writes(doc: Dict[str, Any]) -> bool:
    if "data_units_written" in (doc.get("nvme_smart_health_information_log") or {}):
        return True
    if "gigabytes_processed" in ((doc.get("scsi_error_counter_log") or {}).get("write") or {}):
        return True
    if "Logical Sectors Written" in _devstat_names(doc):
        return True
    return any(HOST_WRITE_NAME.search(name) for name in _attribute_names(doc))


def test_corpus() -> None:
    files: List[Path] = fixture_files("smartctl-json", ".json")
    # every smartctl-json file in ../shared/fixtures, plus the project's own standby capture and
    # driveforge's SAS self-test log (issue 30; no identity: counted without SMART data)
    assert len(files) == 208
    counts = dict(files=len(files), drives=0, scans=0, no_data=0, parse_errors=0, ssds=0, ssd_wear=0,
                  life_left=0, ssd_writes=0, host_writes=0, nand_writes=0, failing=0)
    missing_life: List[str] = []
    missing_writes: List[str] = []
    for path in files:
        raw = path.read_bytes()
        if "devices" in json.loads(raw):
            # smartctl --scan --json: a device list, not a drive
            assert parse_scan_json(raw), path.name
            counts["scans"] += 1
            continue
        try:
            reading = parse_smartctl_json(raw)
        except NoSmartData as exc:
            assert str(exc), path.name
            counts["no_data"] += 1
            continue
        except ParseError as exc:
            assert str(exc), path.name
            counts["parse_errors"] += 1
            continue
        doc = json.loads(raw)
        counts["drives"] += 1
        assert reading.kind in ("ata", "nvme", "scsi"), path.name
        if reading.smart_healthy is False or (reading.critical_warning or 0) > 0:
            counts["failing"] += 1
        if reading.life_left_ratio is not None:
            assert 0.0 <= reading.life_left_ratio <= 1.0, path.name
        if reading.write_amplification is not None:
            assert reading.write_amplification > 0, path.name
        if not _is_ssd(doc):
            continue
        assert reading.is_ssd is True, path.name
        counts["ssds"] += 1
        if reading.life_left_ratio is not None:
            counts["life_left"] += 1
        if reading.host_written_bytes is not None:
            counts["host_writes"] += 1
        if reading.nand_written_bytes is not None:
            counts["nand_writes"] += 1
        if _carries_wear(doc):
            counts["ssd_wear"] += 1
            if reading.life_left_ratio is None:
                missing_life.append(path.name)
        if _carries_host_writes(doc):
            counts["ssd_writes"] += 1
            if reading.host_written_bytes is None:
                missing_writes.append(path.name)

    print(
        "\nsmartctl JSON corpus: {files} files, {scans} scans, {drives} drives, {no_data} without SMART data, "
        "{parse_errors} parse errors, {failing} failing; {ssds} SSDs, {life_left} with life left "
        "({ssd_wear} carry a wear indicator), {host_writes} with host writes ({ssd_writes} carry a "
        "write counter), {nand_writes} with NAND writes".format(**counts)
    )
    if missing_life:
        print("  wear indicator not understood:", ", ".join(missing_life))
    if missing_writes:
        print("  write counter not understood:", ", ".join(missing_writes))
    assert counts["parse_errors"] == 0
    assert counts["scans"] == 8
    assert counts["ssd_wear"] > 0 and counts["ssd_writes"] > 0
    assert (counts["ssd_wear"] - len(missing_life)) / counts["ssd_wear"] >= 0.95
    assert (counts["ssd_writes"] - len(missing_writes)) / counts["ssd_writes"] >= 0.90
