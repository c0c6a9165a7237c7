"""One pass over every vendored smartctl-json, smartctl-text and nvme-cli file, with one summary.

Each file is routed to the parser for what it is (drive output, ``--scan`` device list,
``nvme list``, ``nvme id-ctrl``, Intel plugin log) and must either give a record or fail with
:class:`ParseError` / :class:`NoSmartData` and a reason; any other exception fails the test.

Whether an SSD file *carries* a wear indicator or a host write counter is decided here from
the raw bytes, by field and attribute name, without the parsers or the attribute table: JSON by
key, text by grepping the lines smartctl prints. So a vendor the table forgets lowers the
coverage figure instead of vanishing from it. The summary is printed to the terminal in every
run (not only with ``-s``).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import List, Optional

import yaml

from collectors.model import DriveReading, ParseError
from collectors.nvme_vendor.nvme_cli import (
    parse_id_ctrl_text,
    parse_intel_smart_log_add,
    parse_list_json,
    parse_smart_log_json,
)
from collectors.smartctl import NoSmartData, parse_scan_json, parse_scan_text, parse_smartctl_json
from collectors.smartctl.text_report import parse_smartctl_text_reading
from tests.conftest import ROOT, fixture_files
from tests.sources.smartctl.test_smartctl_corpus import _carries_host_writes, _carries_wear, _is_ssd

SHARED_COUNTS = {"smartctl-json": 206, "smartctl-text": 367, "nvme-cli": 8}
# ssdfleet__standby-sleep-dev-null.json and driveforge__sas_selftest_example.json (issue 30);
# seed001__ (seeds/001): see their PROVENANCE rows
OWN_FILES = {"smartctl-json": 2, "smartctl-text": 1}
# No file may fail to parse. (telegraf's htSASInfoData.txt, whose "User Capacity:
# 300,$00,000,000 bytes" line is damaged, parses without its capacity.)
KNOWN_PARSE_ERRORS: set = set()

# ---------------------------------------------------------------- raw-text evidence

_ATTR_LINE = re.compile(r"^\s*\d{1,3}\s+(?P<name>\S+)\s+(?:0x[0-9a-fA-F]{4}|[-POSRCKM+]{6,7})\s+\d")
_WEAR_ATTR = re.compile(r"Life|Wearout|Wear_Leveling|Lifetime_Remain", re.IGNORECASE)
_WRITE_ATTR = re.compile(
    r"Total_LBAs_Written|Host_Writes|Lifetime_Writes|Total_Writes|Host_GB_Written|Wts_Frm_Hst|Host_Sector_Write"
)
_DEVSTAT_ROW = re.compile(r"^\s*0x0[0-9a-f]\s+0x[0-9a-f]{3}\s+\d+\s+\d+\s+\S*\s+(?P<name>.+?)\s*$")


def _text_attribute_names(text: str) -> List[str]:
    return [m.group("name") for m in map(_ATTR_LINE.match, text.splitlines()) if m]


def _text_devstats(text: str) -> List[str]:
    return [m.group("name") for m in map(_DEVSTAT_ROW.match, text.splitlines()) if m]


def _text_is_ssd(text: str) -> bool:
    # "Rotation Rate: Solid State Device" (not the devstat page title "Solid State Device
    # Statistics", which HDDs print too), or an NVMe health log.
    return bool(re.search(r"^Rotation Rate:\s+Solid State Device|^Percentage Used:\s+\d", text, re.MULTILINE))


def _text_carries_wear(text: str) -> bool:
    if re.search(r"^Percentage Used:\s+\d", text, re.MULTILINE):  # NVMe
        return True
    if re.search(r"^Percentage used endurance indicator:\s+\d", text, re.MULTILINE | re.IGNORECASE):  # SCSI
        return True
    if "Percentage Used Endurance Indicator" in _text_devstats(text):
        return True
    return any(_WEAR_ATTR.search(name) for name in _text_attribute_names(text))


def _text_carries_host_writes(text: str) -> bool:
    if re.search(r"^Data Units Written:\s+\d", text, re.MULTILINE):  # NVMe
        return True
    if re.search(r"^write:\s+(?:[\d.,]+\s+){5}[\d.,]+", text, re.MULTILINE):  # SCSI error counter log
        return True
    if "Logical Sectors Written" in _text_devstats(text):
        return True
    return any(_WRITE_ATTR.search(name) for name in _text_attribute_names(text))


# ---------------------------------------------------------------- routing


@dataclass
class Outcome:
    kind: str  # drive, device_list, identity, vendor_log, no_data, parse_error
    reading: Optional[DriveReading] = None
    reason: str = ""
    devices: int = 0
    raw_ssd: bool = False
    raw_wear: bool = False
    raw_writes: bool = False


def _json_file(path: Path) -> Outcome:
    raw = path.read_bytes()
    doc = json.loads(raw)
    if isinstance(doc, dict) and "devices" in doc:
        return Outcome("device_list", devices=len(parse_scan_json(raw)))
    reading = parse_smartctl_json(raw)
    ssd = _is_ssd(doc)
    return Outcome("drive", reading, raw_ssd=ssd, raw_wear=ssd and _carries_wear(doc),
                   raw_writes=ssd and _carries_host_writes(doc))


def _text_file(path: Path) -> Outcome:
    text = path.read_bytes().decode("utf-8", errors="replace")
    if "--scan" in path.name:
        return Outcome("device_list", devices=len(parse_scan_text(text)))
    reading = parse_smartctl_text_reading(text, "/dev/sdx")
    ssd = _text_is_ssd(text)
    return Outcome("drive", reading, raw_ssd=ssd, raw_wear=ssd and _text_carries_wear(text),
                   raw_writes=ssd and _text_carries_host_writes(text))


def _nvme_cli_file(path: Path) -> Outcome:
    raw = path.read_bytes()
    if "smart-log" in path.name:
        doc = json.loads(raw)
        reading = parse_smart_log_json(raw, "/dev/nvme0")
        return Outcome("drive", reading, raw_ssd=True, raw_wear="percent_used" in doc,
                       raw_writes="data_units_written" in doc)
    if "nvme-list" in path.name:
        return Outcome("device_list", devices=len(parse_list_json(raw)))
    if "IdentifyController" in path.name:
        parse_id_ctrl_text(raw)
        return Outcome("identity", devices=1)
    if "IntelInfoData" in path.name:
        parse_intel_smart_log_add(raw)
        return Outcome("vendor_log", devices=1)
    raise AssertionError(f"nvme-cli/{path.name}: no parser routed for this file")


ROUTES = {"smartctl-json": (".json", _json_file), "smartctl-text": (".txt", _text_file), "nvme-cli": ("", _nvme_cli_file)}


def _run(folder: str, path: Path) -> Outcome:
    try:
        return ROUTES[folder][1](path)
    except NoSmartData as exc:
        assert str(exc).strip(), f"{folder}/{path.name}: NoSmartData without a reason"
        return Outcome("no_data", reason=str(exc))
    except ParseError as exc:
        assert str(exc).strip(), f"{folder}/{path.name}: ParseError without a reason"
        return Outcome("parse_error", reason=str(exc))


@dataclass
class Tally:
    files: int = 0
    kinds: Counter = field(default_factory=Counter)
    listed_devices: int = 0
    ssds: int = 0
    life_left: int = 0
    host_writes: int = 0
    nand_writes: int = 0
    carry_wear: int = 0
    carry_writes: int = 0
    missing_life: List[str] = field(default_factory=list)
    missing_writes: List[str] = field(default_factory=list)
    # absent with the reason recorded: the evidence did not establish a figure
    withheld_life: List[str] = field(default_factory=list)
    withheld_writes: List[str] = field(default_factory=list)
    parse_errors: List[str] = field(default_factory=list)

    def add(self, name: str, out: Outcome) -> None:
        self.files += 1
        self.kinds[out.kind] += 1
        self.listed_devices += out.devices
        if out.kind == "parse_error":
            self.parse_errors.append(name)
        r = out.reading
        if r is None:
            return
        if out.raw_ssd:
            assert r.is_ssd is True, f"{name}: raw output says SSD, parser says is_ssd={r.is_ssd}"
        if not r.is_ssd:
            return
        self.ssds += 1
        self.life_left += r.life_left_ratio is not None
        self.host_writes += r.host_written_bytes is not None
        self.nand_writes += r.nand_written_bytes is not None
        if out.raw_wear:
            self.carry_wear += 1
            if r.life_left_ratio is None and "life_left_ratio_withheld" not in r.extra:
                self.missing_life.append(name)
            elif r.life_left_ratio is None:
                self.withheld_life.append(name)
        if out.raw_writes:
            self.carry_writes += 1
            if r.host_written_bytes is None and "host_written_bytes_withheld" not in r.extra:
                self.missing_writes.append(name)
            elif r.host_written_bytes is None:
                self.withheld_writes.append(name)

    def line(self, label: str) -> str:
        k = self.kinds
        return (
            f"{label:<14} {self.files:>4} files: {k['drive']:>3} drives, {k['device_list']} device lists "
            f"({self.listed_devices} devices), {k['identity'] + k['vendor_log']} identity/vendor logs, "
            f"{k['no_data']} no SMART data, {k['parse_error']} parse errors | {self.ssds} SSDs: "
            f"{self.life_left} with life left ({self.carry_wear} carry a wear indicator, "
            f"{len(self.withheld_life)} withheld with a reason, {len(self.missing_life)} not understood), "
            f"{self.host_writes} with host writes ({self.carry_writes} carry a write counter, "
            f"{len(self.withheld_writes)} withheld with a reason, {len(self.missing_writes)} not understood), "
            f"{self.nand_writes} with NAND writes"
        )


def test_corpus_summary(capsys) -> None:
    total = Tally()
    lines = []
    for folder, (suffix, _) in ROUTES.items():
        files = fixture_files(folder, suffix)
        assert len(files) == SHARED_COUNTS[folder] + OWN_FILES.get(folder, 0), folder
        tally = Tally()
        for path in files:
            out = _run(folder, path)
            tally.add(f"{folder}/{path.name}", out)
            total.add(f"{folder}/{path.name}", out)
        lines.append(tally.line(folder))
    lines.append(total.line("all"))
    wear_share = (total.carry_wear - len(total.missing_life) - len(total.withheld_life)) / total.carry_wear
    write_share = (total.carry_writes - len(total.missing_writes) - len(total.withheld_writes)) / total.carry_writes
    # Coverage is not correctness: a figure is given only where the evidence establishes it
    # (collectors/smartctl/ata.py); the rest is withheld with its reason. Every file that carries
    # a wear indicator or a write counter must end in one or the other.
    lines.append(f"life left given for {wear_share:.1%} of SSD files with a wear indicator, "
                 f"{len(total.withheld_life)} withheld with a reason; host writes given for {write_share:.1%} "
                 f"of those with a write counter, {len(total.withheld_writes)} withheld with a reason")
    for label, names in (("wear indicator not understood", total.missing_life),
                         ("write counter not understood", total.missing_writes),
                         ("parse errors", total.parse_errors)):
        if names:
            lines.append(f"  {label}: " + ", ".join(names))
    with capsys.disabled():
        print("\n\nssdfleet corpus summary\n" + "\n".join(lines))

    assert total.files == sum(SHARED_COUNTS.values()) + sum(OWN_FILES.values())
    assert {Path(n).name for n in total.parse_errors} == KNOWN_PARSE_ERRORS
    assert total.kinds["drive"] >= 500 and total.ssds >= 300
    assert total.carry_wear >= 250 and total.carry_writes >= 250
    assert not total.missing_life and not total.missing_writes
    assert wear_share >= 0.85 and write_share >= 0.85


def test_golden_files_together_cover_forty_drives_twelve_vendors() -> None:
    """The issue's floor for golden expectations, over both golden files together."""
    golden = ROOT / "tests" / "golden"
    json_entries = yaml.safe_load((golden / "smartctl_expected.yaml").read_text())
    text_entries = yaml.safe_load((golden / "smartctl_text_expected.yaml").read_text())["drives"]
    same_vendor = {"WD": "Western Digital"}
    drives = {("json", e["file"]) for e in json_entries} | {("text", e["file"]) for e in text_entries}
    vendors = {same_vendor.get(e["vendor"], e["vendor"]) for e in json_entries + text_entries}
    failing = [e for e in json_entries if e["smart_healthy"] is False or e.get("critical_warning")]
    failing += [e for e in text_entries if e["expect"].get("smart_healthy") is False]
    assert len(drives) == len(json_entries) + len(text_entries) >= 40
    assert len(vendors) >= 12
    assert len(failing) >= 5
