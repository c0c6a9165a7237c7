"""Tool output for simulated drives, rendered from real layouts with the model's values.

Each renderer takes a :class:`~simulator.wear.DriveSpec` and its
:class:`~simulator.wear.DriveState` and prints what the real tool prints for that drive:

* ``smartctl --json`` documents: the ATA document skeleton is a real ``smartctl --json``
  capture (Samsung MZ7WD, smartctl 7.3); its attribute table is replaced by the model's own
  real attribute rows (IDs, names, flags, thresholds) read from a real ``smartctl -x``
  capture of that model or family. The NVMe document is a real PM983 capture.
* ``smartctl`` text (an old-smartctl host): the same real capture's information section and
  attribute rows, printed in the classic ``-A`` layout smartctl 6.x prints without ``-f brief``.
* ``shannon-status -a`` and ``-p``: the Shannon test's card report (simulator/catalogue.py), line by line.
* ``hdparm -W``, ``nvme get-feature -f 6``, ``/proc/diskstats`` lines.

Only the standard library is used here: this module runs inside the fake tool, a fresh Python
process for every call.
"""

from __future__ import annotations

import copy
import json
import math
import os
import re
import time
from functools import cache
from typing import Any, Dict, List, Optional, Sequence, Tuple

from simulator.catalogue import CATALOGUE, CatalogueModel
from simulator.wear import (
    ACCESS_READONLY,
    ACCESS_REDUCED_WRITE,
    DriveSpec,
    DriveState,
    life_percent_left,
)

LAYOUTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "layouts")

MIB32 = 32 * 1024 * 1024
GIB = 1024**3
NVME_DATA_UNIT = 512 * 1000  # NVMe data units are thousands of 512-byte blocks
ERASE_BLOCK = 8 * 1024 * 1024  # the Shannon test: 256 pages of 32 KiB per erase block

SMARTCTL_JSON_VERSION = "7.3"
SMARTCTL_OLD_VERSION = "6.2"

# smartctl's attribute flag letters and their bits (ataprint.cpp).
_FLAG_BITS = (("P", 0x01, "prefailure"), ("O", 0x02, "updated_online"), ("S", 0x04, "performance"),
              ("R", 0x08, "error_rate"), ("C", 0x10, "event_count"), ("K", 0x20, "auto_keep"))


def _read(name: str) -> str:
    with open(os.path.join(LAYOUTS, name), encoding="utf-8") as fh:
        return fh.read()


# --------------------------------------------------------------------------- ATA layouts

_ROW = re.compile(
    r"^\s*(?P<id>\d{1,3})\s+(?P<name>\S+)\s+(?P<flags>[-POSRCK]{6})\s+(?P<value>\d+)\s+"
    r"(?P<worst>\d+)\s+(?P<thresh>\d+)\s+(?P<fail>\S+)\s+(?P<raw>.+?)\s*$"
)


@cache
def ata_layout(name: str) -> Tuple[List[str], List[Dict[str, Any]]]:
    """(information section lines, attribute rows) of a real ``smartctl -x`` capture."""
    info: List[str] = []
    rows: List[Dict[str, Any]] = []
    section = None
    for line in _read(name).splitlines():
        if line.startswith("=== START OF INFORMATION SECTION"):
            section = "info"
            continue
        if line.startswith("=== START OF READ SMART DATA SECTION"):
            section = "smart"
            continue
        if section == "info" and ":" in line:
            info.append(line)
        elif section == "smart":
            m = _ROW.match(line)
            if m:
                rows.append({
                    "id": int(m.group("id")), "name": m.group("name"), "flags": m.group("flags"),
                    "value": int(m.group("value")), "worst": int(m.group("worst")),
                    "thresh": int(m.group("thresh")), "raw": m.group("raw"),
                })
    return info, rows


def _flags_json(flags: str) -> Dict[str, Any]:
    out: Dict[str, Any] = {"value": 0, "string": flags + " "}
    for letter, bit, key in _FLAG_BITS:
        on = letter in flags
        out[key] = on
        if on:
            out["value"] |= bit
    return out


def _row(row: Dict[str, Any], value: Optional[int] = None, raw: Optional[int] = None,
         raw_string: Optional[str] = None, worst: Optional[int] = None) -> Dict[str, Any]:
    out = dict(row)
    if value is not None:
        out["value"] = value
        out["worst"] = min(out["worst"], value) if worst is None else worst
    if raw is not None:
        out["raw_value"] = raw
        out["raw"] = raw_string if raw_string is not None else str(raw)
    else:
        out["raw_value"] = _leading_int(row["raw"])
    return out


def _leading_int(text: str) -> int:
    m = re.match(r"\s*(\d+)", text)
    return int(m.group(1)) if m else 0


def ata_attributes(spec: DriveSpec, st: DriveState, layout: str) -> List[Dict[str, Any]]:
    """The layout's attribute rows with the model's values. Which attribute carries which
    figure follows the vendor's conventions for that family (see simulator.catalogue)."""
    _, rows = ata_layout(layout)
    life = life_percent_left(st)
    hours = int(st.power_on_seconds // 3600)
    minutes = int(st.power_on_seconds % 3600 // 60)
    grown_blocks = int(round(st.grown_bad_ratio * spec.capacity_bytes / ERASE_BLOCK))
    spare_pct = int(math.floor(st.spare_left * 100))
    celsius = int(round(st.celsius))
    max_celsius = int(round(spec.busy_celsius + 2))
    liteon = "LITEON" in spec.model.upper()
    liteon_unit = GIB if re.search(r"\bLCH-\d+V2S$", spec.model.upper()) else MIB32
    intel = "Intel" in (CATALOGUE[spec.catalogue].family or "")
    out = []
    for row in rows:
        name, attr_id = row["name"], row["id"]
        if name == "Power_On_Hours":
            out.append(_row(row, raw=hours))
        elif name == "Power_On_Hours_and_Msec":
            out.append(_row(row, raw=hours, raw_string=f"{hours}h+{minutes:02d}m+00.000s"))
        elif name == "Power_Cycle_Count":
            out.append(_row(row, raw=spec.power_cycles))
        elif name in ("Reallocated_Sector_Ct", "Retired_Block_Count"):
            out.append(_row(row, raw=grown_blocks))
        elif name in ("Host_Writes_32MiB",):
            out.append(_row(row, raw=int(st.host_written // MIB32)))
        elif name in ("Host_Reads_32MiB",):
            out.append(_row(row, raw=int(st.host_read // MIB32)))
        elif name == "NAND_Writes_1GiB":
            out.append(_row(row, raw=int(st.nand_written // GIB)))
        elif name == "Media_Wearout_Indicator":
            # Intel: the normalized value falls from 100 to 1 and stays there.
            out.append(_row(row, value=max(1, life), raw=0))
        elif name in ("Available_Reservd_Space", "Reserve_Block_Count") and intel:
            out.append(_row(row, value=max(1, spare_pct)))
        elif name == "SSD_Life_Left":
            # SandForce: normalized and (on this firmware) raw both carry the percentage.
            out.append(_row(row, value=life, raw=life, worst=life))
        elif name == "Lifetime_Writes_GiB":
            out.append(_row(row, raw=int(st.host_written // GIB)))
        elif name == "Lifetime_Reads_GiB":
            out.append(_row(row, raw=int(st.host_read // GIB)))
        elif name == "SandForce_Internal" and attr_id == 233:
            # SF-2281: 233 counts NAND writes in GiB.
            out.append(_row(row, raw=int(st.nand_written // GIB)))
        elif name in ("Temperature_Celsius", "Airflow_Temperature_Cel"):
            out.append(_row(row, value=celsius, worst=max_celsius, raw=celsius,
                            raw_string=f"{celsius} (Min/Max 18/{max_celsius})"))
        elif liteon and name == "Total_LBAs_Written":
            # LITEON firmware counts 32 MiB units, the own-firmware LCH (LCH-256V2S) GiB
            # (collectors/smartctl/attributes.py, tests/sources/smartctl/test_liteon_lch.py); smartctl, not
            # knowing the drive, calls the attribute Total_LBAs_Written.
            out.append(_row(row, raw=int(st.host_written // liteon_unit)))
        elif liteon and name == "Total_LBAs_Read":
            out.append(_row(row, raw=int(st.host_read // liteon_unit)))
        elif liteon and attr_id == 173:
            out.append(_row(row, value=max(1, life)))  # the wear indicator, unnamed
        else:
            out.append(_row(row))
    return out


@cache
def _skeleton(name: str) -> Dict[str, Any]:
    return json.loads(_read(name))


def _common_json(doc: Dict[str, Any], spec: DriveSpec, st: DriveState, argv: Sequence[str],
                 dev_type: str, protocol: str, info_name: str) -> None:
    cat = CATALOGUE[spec.catalogue]
    doc["smartctl"]["argv"] = ["smartctl"] + list(argv)
    doc["smartctl"]["exit_status"] = 0
    doc["smartctl"]["version"] = [7, 3]
    doc["device"] = {"name": f"/dev/{spec.device}", "info_name": info_name, "type": dev_type,
                     "protocol": protocol}
    doc["model_name"] = spec.model
    doc["serial_number"] = spec.serial
    doc["firmware_version"] = cat.firmware
    doc["local_time"] = {"time_t": int(st.t), "asctime": time.asctime(time.gmtime(st.t))}
    doc["power_on_time"] = {"hours": int(st.power_on_seconds // 3600)}
    doc["power_cycle_count"] = spec.power_cycles


def smartctl_ata_json(spec: DriveSpec, st: DriveState, argv: Sequence[str]) -> Dict[str, Any]:
    cat = CATALOGUE[spec.catalogue]
    doc = copy.deepcopy(_skeleton("ata-skeleton.json"))
    _common_json(doc, spec, st, argv, "sat", "ATA", f"/dev/{spec.device} [SAT]")
    if cat.family:
        doc["model_family"] = cat.family
        doc["in_smartctl_database"] = True
    else:
        doc.pop("model_family", None)
        doc["in_smartctl_database"] = False
    doc["user_capacity"] = {"blocks": spec.capacity_bytes // 512, "bytes": spec.capacity_bytes}
    doc["logical_block_size"] = 512
    doc["physical_block_size"] = 512
    serial_digits = re.sub(r"\D", "", spec.serial)[-9:] or "0"
    doc["wwn"] = {"naa": 5, "oui": 0x001517, "id": int(serial_digits) & 0xFFFFFFFFF}
    rows = ata_attributes(spec, st, cat.layout)
    healthy = all(r["thresh"] == 0 or r["value"] > r["thresh"] for r in rows)
    doc["smart_status"] = {"passed": healthy}
    table = []
    for r in rows:
        failed = r["thresh"] > 0 and r["value"] <= r["thresh"]
        table.append({
            "id": r["id"], "name": r["name"], "value": r["value"], "worst": r["worst"],
            "thresh": r["thresh"], "when_failed": "now" if failed else "",
            "flags": _flags_json(r["flags"]),
            "raw": {"value": r["raw_value"], "string": r["raw"]},
        })
    doc["ata_smart_attributes"] = {"revision": 1, "table": table}
    temp = next((r for r in rows if r["name"] in ("Temperature_Celsius", "Airflow_Temperature_Cel")), None)
    if temp is not None:
        doc["temperature"] = {"current": temp["raw_value"]}
    else:
        doc.pop("temperature", None)
    if not healthy:
        doc["smartctl"]["exit_status"] = 8  # bit 3: SMART status FAILING
    return doc


def smartctl_nvme_json(spec: DriveSpec, st: DriveState, argv: Sequence[str]) -> Dict[str, Any]:
    doc = copy.deepcopy(_skeleton("nvme-samsung-pm983.json"))
    _common_json(doc, spec, st, argv, "nvme", "NVMe", f"/dev/{spec.device}")
    used = min(255, int(math.ceil(st.life_used * 100.0 - 1e-9)))
    spare = int(math.floor(st.spare_left * 100))
    threshold = doc["nvme_smart_health_information_log"].get("available_spare_threshold", 10)
    warning = 0
    if spare < threshold:
        warning |= 0x01  # bit 0: available spare below threshold
    if used >= 100:
        warning |= 0x04  # bit 2: reliability degraded (the NVM subsystem is past its rating)
    celsius = int(round(st.celsius))
    log = doc["nvme_smart_health_information_log"]
    log.update({
        "critical_warning": warning,
        "temperature": celsius,
        "available_spare": spare,
        "percentage_used": used,
        "data_units_written": int(st.host_written // NVME_DATA_UNIT),
        "data_units_read": int(st.host_read // NVME_DATA_UNIT),
        "host_writes": int(st.host_written // spec.io_size_bytes),
        "host_reads": int(st.host_read // spec.io_size_bytes),
        "power_on_hours": int(st.power_on_seconds // 3600),
        "power_cycles": spec.power_cycles,
        "media_errors": int(st.grown_bad_ratio * 2000),  # late-life uncorrectables
        "temperature_sensors": [celsius, celsius + 3, celsius + 8],
    })
    doc["temperature"] = {"current": celsius}
    doc["smart_status"] = {"passed": warning == 0}
    doc["user_capacity"] = {"blocks": spec.capacity_bytes // 512, "bytes": spec.capacity_bytes}
    doc["nvme_total_capacity"] = spec.capacity_bytes
    if warning:
        doc["smartctl"]["exit_status"] = 8
    return doc


# --------------------------------------------------------------------------- smartctl text

_OLD_BANNER = (
    "smartctl 6.2 2017-02-27 r4394 [x86_64-linux-3.10.0-1160.el7.x86_64] (local build)\n"
    "Copyright (C) 2002-13, Bruce Allen, Christian Franke, www.smartmontools.org\n"
)


def _commas(n: int) -> str:
    return f"{n:,}"


def smartctl_ata_text(spec: DriveSpec, st: DriveState) -> str:
    """``smartctl -i -H -A`` as smartmontools 6.2 prints it, from the real capture's layout."""
    cat = CATALOGUE[spec.catalogue]
    info, _ = ata_layout(cat.layout)
    rows = ata_attributes(spec, st, cat.layout)
    healthy = all(r["thresh"] == 0 or r["value"] > r["thresh"] for r in rows)
    replace = {
        "Model Family": cat.family,
        "Device Model": spec.model,
        "Serial Number": spec.serial,
        "Firmware Version": cat.firmware,
        "User Capacity": f"{_commas(spec.capacity_bytes)} bytes [{spec.capacity_bytes / 1e9:.0f} GB]",
        "Write cache is": "Enabled" if st.write_cache else "Disabled",
        "Local Time is": time.asctime(time.gmtime(st.t)) + " UTC",
        "LU WWN Device Id": "5 001517 " + (re.sub(r"\D", "", spec.serial)[-9:] or "0"),
    }
    lines = [_OLD_BANNER, "=== START OF INFORMATION SECTION ==="]
    seen = set()
    for line in info:
        key = line.split(":", 1)[0].strip()
        seen.add(key)
        if key in replace:
            if replace[key] is None:
                continue  # a drive smartctl does not know has no Model Family line
            lines.append(f"{key + ':':<18}{replace[key]}")
        else:
            lines.append(line)
    if "Write cache is" not in seen:
        lines.append(f"{'Write cache is:':<18}{replace['Write cache is']}")
    lines += [
        "",
        "=== START OF READ SMART DATA SECTION ===",
        "SMART overall-health self-assessment test result: " + ("PASSED" if healthy else "FAILED!"),
        "",
        "SMART Attributes Data Structure revision number: 1",
        "Vendor Specific SMART Attributes with Thresholds:",
        "ID# ATTRIBUTE_NAME          FLAG     VALUE WORST THRESH TYPE      UPDATED  WHEN_FAILED RAW_VALUE",
    ]
    for r in rows:
        flags = _flags_json(r["flags"])
        kind = "Pre-fail" if flags["prefailure"] else "Old_age"
        updated = "Always" if flags["updated_online"] else "Offline"
        failed = "FAILING_NOW" if r["thresh"] > 0 and r["value"] <= r["thresh"] else "-"
        lines.append(
            f"{r['id']:>3} {r['name']:<24}0x{flags['value']:04x}   {r['value']:03d}   {r['worst']:03d}   "
            f"{r['thresh']:03d}    {kind:<9} {updated:<8} {failed:<11} {r['raw']}"
        )
    return "\n".join(lines) + "\n\n"


def smartctl_version_text(json_host: bool) -> str:
    if json_host:
        return _read("smartctl-version.txt")
    return _OLD_BANNER + "\nsmartctl comes with ABSOLUTELY NO WARRANTY. This is free\nsoftware.\n"


def smartctl_scan(specs: Sequence[DriveSpec], json_output: bool) -> str:
    devices = []
    for spec in specs:
        if spec.kind == "ata":
            devices.append({"name": f"/dev/{spec.device}", "info_name": f"/dev/{spec.device} [SAT]",
                            "type": "sat", "protocol": "ATA"})
        elif spec.kind == "nvme":
            devices.append({"name": f"/dev/{spec.device}", "info_name": f"/dev/{spec.device}",
                            "type": "nvme", "protocol": "NVMe"})
    if json_output:
        doc = {"json_format_version": [1, 0],
               "smartctl": {"version": [7, 3], "argv": ["smartctl", "--scan-open", "--json=c"], "exit_status": 0},
               "devices": devices}
        return json.dumps(doc, separators=(",", ":")) + "\n"
    return "".join(f"{d['name']} -d {d['type']} # {d['info_name']}, {d['protocol']} device\n" for d in devices)


def smartctl_wcache_json(spec: DriveSpec, st: DriveState) -> str:
    doc = {"smartctl": {"version": [7, 3], "exit_status": 0},
           "device": {"name": f"/dev/{spec.device}", "type": "sat", "protocol": "ATA"},
           "write_cache": {"enabled": bool(st.write_cache)}}
    return json.dumps(doc) + "\n"


# --------------------------------------------------------------------------- other tools

def hdparm_w(device: str, enabled: bool) -> str:
    bit, word = ("1", "on") if enabled else ("0", "off")
    return f"\n{device}:\n write-caching =  {bit} ({word})\n"


def nvme_get_feature_vwc(enabled: bool) -> str:
    return f"get-feature:0x06 (Volatile Write Cache), Current value:{1 if enabled else 0:#010x}\n"


# --------------------------------------------------------------------------- shannon-status

def _shannon_figures(spec: DriveSpec, st: DriveState) -> Dict[str, Any]:
    cat: CatalogueModel = CATALOGUE[spec.catalogue]
    load = st.load
    op = (cat.overprovision_percent or 27.0) * st.spare_left
    mode = {ACCESS_REDUCED_WRITE: "reduced-write", ACCESS_READONLY: "readonly"}.get(st.access_mode, "readwrite")
    block = "df" + spec.device[3:] if spec.device.startswith("sct") else "dfa"
    return {
        "serial": spec.serial,
        "device": spec.device,
        "block": block,
        "mode": mode,
        "ctrl": round(spec.idle_celsius + (spec.busy_celsius - spec.idle_celsius) * load),
        "ctrl_max": round(spec.busy_celsius + 3),
        "board": round(spec.idle_celsius - 14 + 10 * load),
        "board_max": round(spec.idle_celsius - 14 + 12),
        "flash": round(spec.idle_celsius - 14 + 12 * load),
        "flash_max": round(spec.idle_celsius - 14 + 16),
        "vint": round(1000 + 4 * load),
        "vaux": round(1787 + 6 * load),
        "bad": st.bad_block_ratio * 100.0,
        "op": op,
        "hours": int(st.power_on_seconds // 3600),
        "minutes": int(st.power_on_seconds % 3600 // 60),
        "cycles": spec.power_cycles,
        "host_w": st.host_written / 1e9,
        "host_r": st.host_read / 1e9,
        "total_w": st.nand_written / 1e9,
        "wa": st.nand_written / st.host_written if st.host_written > 0 else spec.write_amplification,
        "life": life_percent_left(st),
        "capacity": spec.capacity_bytes / 1e9,
    }


def _gib(gb: float) -> float:
    return gb * 1e9 / GIB


def shannon_a_card(spec: DriveSpec, st: DriveState) -> str:
    """One card's block of ``shannon-status -a``, from the Shannon test's report."""
    f = _shannon_figures(spec, st)
    subs = [
        (r"^Found Shannon PCIE SSD card /dev/\w+:", f"Found Shannon PCIE SSD card /dev/{f['device']}:"),
        (r"^Direct-IO drive \w+ at", f"Direct-IO drive {f['device']} at"),
        (r"SN: \S+", f"SN: {f['serial']}"),
        (r"attached as disk /dev/\w+, Access mode: \S+", f"attached as disk /dev/{f['block']}, Access mode: {f['mode']}"),
        (r"^User capacity: .*", f"User capacity: {f['capacity']:.2f} GB/{_gib(f['capacity']):.2f} GiB"),
        (r"^Overprovision: \d+%", f"Overprovision: {f['op']:.0f}%"),
        (r"^Controller internal temperature: .*", f"Controller internal temperature: {f['ctrl']} degC, max {f['ctrl_max']} degC"),
        (r"^Controller board temperature: .*", f"Controller board temperature: {f['board']} degC, max {f['board_max']} degC"),
        (r"^NAND Flash temperature: .*", f"NAND Flash temperature: {f['flash']} degC, max {f['flash_max']} degC"),
        (r"^Internal voltage: .*", f"Internal voltage: {f['vint']} mV, max 1028 mV"),
        (r"^Auxiliary voltage: .*", f"Auxiliary voltage: {f['vaux']} mV, max 1804 mV"),
        (r"^Media status: .*", f"Media status: {f['bad']:.4f}% bad block"),
        (r"^Power on hours: .*", f"Power on hours: {f['hours']} hours {f['minutes']} minutes, Power cycles: {f['cycles']}"),
        (r"^  Host write data    : .*", f"  Host write data    : {f['host_w']:.2f} GB / {_gib(f['host_w']):.2f} GiB"),
        (r"^  Host read data     : .*", f"  Host read data     : {f['host_r']:.2f} GB / {_gib(f['host_r']):.2f} GiB"),
        (r"^  Total write data   : .*", f"  Total write data   : {f['total_w']:.2f} GB / {_gib(f['total_w']):.2f} GiB"),
        (r"^  Write amplifier    : .*", f"  Write amplifier    : {f['wa']:.4f}"),
        (r"^  Estimated life left: .*", f"  Estimated life left: {f['life']}% left"),
    ]
    out = []
    for line in _read("shannon-status-a.txt").splitlines():
        if line.startswith("Totally found"):
            continue
        for pattern, replacement in subs:
            line = re.sub(pattern, replacement, line)
        out.append(line)
    while out and not out[-1].strip():
        out.pop()
    return "\n".join(out) + "\n"


def shannon_a(cards: Sequence[Tuple[DriveSpec, DriveState]]) -> str:
    blocks = [shannon_a_card(spec, st) for spec, st in cards]
    n = len(blocks)
    return "\n".join(blocks) + f"\nTotally found {n} Direct-IO PCIe SSD card{'s' if n != 1 else ''} on this system.\n"


def shannon_p(spec: DriveSpec, st: DriveState) -> str:
    """``shannon-status -p /dev/sctX`` (driver 2.6.x key=value), from the Shannon test's report."""
    f = _shannon_figures(spec, st)
    values = {
        "drive": f"/dev/{f['device']}",
        "serial_number": f["serial"],
        "device_state": f"attached as disk /dev/{f['block']}",
        "access_mode": f["mode"],
        "user_capacity": f"{f['capacity']:.2f} GB",
        "overprovision": f"{f['op']:.0f}%",
        "controller_temp": f"{f['ctrl']} degC",
        "controller_temp_max": f"{f['ctrl_max']} degC",
        "board_temp": f"{f['board']} degC",
        "board_temp_max": f"{f['board_max']} degC",
        "flash_temp": f"{f['flash']} degC",
        "flash_temp_max": f"{f['flash_max']} degC",
        "internal_voltage": f"{f['vint']} mV",
        "auxiliary_voltage": f"{f['vaux']} mV",
        "bad_block_percentage": f"{f['bad']:.4f}%",
        "power_on_hours": f"{f['hours']} hours {f['minutes']} minutes",
        "power_cycles": str(f["cycles"]),
        "host_write_data": f"{f['host_w']:.2f} GB",
        "host_read_data": f"{f['host_r']:.2f} GB",
        "total_write_data": f"{f['total_w']:.2f} GB",
        "write_amplifier": f"{f['wa']:.4f}",
        "estimated_life_left": f"{f['life']}%",
    }
    out = []
    for line in _read("shannon-status-p.txt").splitlines():
        key, sep, _ = line.partition("=")
        if sep and key in values:
            line = f"{key}={values[key]}"
        out.append(line)
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------- /proc/diskstats

def block_name(spec: DriveSpec) -> str:
    """The kernel's block device for a drive: sda, nvme0n1, dfa."""
    if spec.kind == "nvme":
        return spec.device + "n1"
    if spec.kind == "shannon":
        return "df" + spec.device[3:]
    return spec.device


def diskstats_line(index: int, spec: DriveSpec, st: DriveState, since: DriveState) -> str:
    """One whole-disk line (kernel 5.5+ layout, 17 counters); counters count from ``since``
    (the simulated boot)."""
    written = max(0.0, st.host_written - since.host_written)
    read = max(0.0, st.host_read - since.host_read)
    writes = int(written // spec.io_size_bytes)
    reads = int(read // spec.io_size_bytes)
    latency = spec.write_latency_cache_on if st.write_cache else spec.write_latency_cache_off
    write_ms = int(writes * latency * 1000)
    read_ms = int(reads * spec.read_latency * 1000)
    elapsed_ms = int(max(0.0, st.t - since.t) * 1000)
    busy_ms = min(elapsed_ms, read_ms + write_ms)
    major, minor = {"ata": (8, 16 * index), "nvme": (259, index), "shannon": (252, index)}[spec.kind]
    flushes = writes // 8
    return (f"{major:4d} {minor:7d} {block_name(spec)} {reads} 0 {int(read // 512)} {read_ms} "
            f"{writes} 0 {int(written // 512)} {write_ms} {1 if st.load > 0.5 else 0} {busy_ms} "
            f"{read_ms + write_ms} 0 0 0 0 {flushes} {int(flushes * latency * 1000)}\n")
