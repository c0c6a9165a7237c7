"""smartctl: probe (runs the tool) and pure parsers for its JSON output.

``smartctl --json`` (smartmontools 7.0 and later) prints one object per call, for example::

    {"smartctl": {"version": [7, 3], "exit_status": 0},
     "device": {"name": "/dev/nvme1", "type": "nvme", "protocol": "NVMe"},
     "model_name": "Micron_7450_MTFDKCC3T2TFS", "serial_number": "...",
     "smart_status": {"passed": true}, "temperature": {"current": 33},
     "nvme_smart_health_information_log": {"percentage_used": 0, "available_spare": 100,
         "data_units_written": 1248078, "media_errors": 0, ...}}

:func:`normalise_smartctl` turns such a dict into a :class:`DriveReading`; the text parser for
smartmontools 5.x/6.x builds dicts in the same shape and calls it too, so every lookup here
is defensive. ATA attribute meanings come from the table in :mod:`collectors.smartctl.attributes`.

The exit status is a bitmask: bit 0 (command line) and bit 1 (device open / identify failed)
mean there is no data; bits 2-7 are findings (checksum error, SMART failing, attributes at or
below threshold now or in the past, error log and self-test log entries) that arrive with good
output and must still be parsed.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

from collectors import evidence, numbers
from collectors.model import KIND_ATA, KIND_NVME, KIND_SCSI, DriveReading, ParseError, Temperature
from collectors.runner import ToolResult, run_tool
from collectors.smart_logs import LIMIT_FLOOR_CELSIUS
from collectors.smartctl import ata, passthrough
from collectors.smartctl import attributes as attrs
from collectors.smartctl import logs as smart_logs

# Exit status asked for with "-n standby,3" when smartctl skips a sleeping drive. Status 3
# cannot happen otherwise: bit 0 (bad command line) makes smartctl stop before it opens the
# device, so bit 1 is never set together with it. smartctl's man page suggests this value.
STANDBY_EXIT_STATUS = 3

# Bits 0-1 of the exit status: command line did not parse, device open/identify failed.
NO_DATA_BITS = 0x03

# NVMe "data units" are thousands of 512-byte blocks (NVMe base spec, SMART/Health log).
NVME_DATA_UNIT_BYTES = 512 * 1000

# SCSI error counter log reports volume as decimal gigabytes, in a string.
SCSI_GIGABYTE = 1000**3

# NVMe SMART/Health log fields kept in DriveReading.extra: (smartctl JSON key, extra key,
# multiplier to the unit the key names). The three times are minutes in the log.
_NVME_LOG_EXTRAS: Tuple[Tuple[str, str, int], ...] = (
    ("controller_busy_time", "controller_busy_seconds", 60),
    ("warning_temp_time", "warning_temperature_seconds", 60),
    ("critical_comp_time", "critical_temperature_seconds", 60),
    ("host_reads", "host_read_commands", 1),
    ("host_writes", "host_write_commands", 1),
    ("unsafe_shutdowns", "unsafe_shutdowns", 1),
    ("num_err_log_entries", "error_log_entries", 1),
)


class NoSmartData(ParseError):
    """smartctl produced no usable SMART data: the device could not be opened or identified,
    the drive was asleep and skipped, or the output was empty."""


@dataclass(frozen=True)
class ScanEntry:
    """One device from ``smartctl --scan`` / ``--scan-open``. A disk behind a RAID controller
    or a USB bridge is its own entry, told apart by ``type`` (``sat+megaraid,3``)."""

    name: str
    type: str
    protocol: Optional[str] = None  # ATA, SCSI, NVMe when smartctl says


# --------------------------------------------------------------------------- typed lookups

_KIND_CHECKS: Dict[str, Tuple[type, ...]] = {
    "int": (int,),
    "number": (int, float),
    "str": (str,),
    "bool": (bool,),
    "dict": (dict,),
    "list": (list,),
}


def _lookup(doc: Any, path: str, kind: str) -> Any:
    """Value at dotted ``path`` or None when absent; ParseError naming the field when it
    has the wrong JSON type (a bool is not a number here, a number is not a string)."""
    node = doc
    parts = path.split(".")
    for depth, part in enumerate(parts):
        if node is None:
            return None
        if not isinstance(node, dict):
            where = ".".join(parts[:depth]) or "document"
            raise ParseError(f"smartctl JSON: {where} is {type(node).__name__}, expected an object")
        node = node.get(part)
    if node is None:
        return None
    wanted = _KIND_CHECKS[kind]
    if isinstance(node, bool) and kind != "bool":
        raise ParseError(f"smartctl JSON: {path} is a boolean, expected {kind}")
    if not isinstance(node, wanted):
        raise ParseError(f"smartctl JSON: {path} is {type(node).__name__}, expected {kind}")
    return node


_MAX_128_BIT_DIGITS = len(str(2**128 - 1))  # 39


def _big_counter(log: Dict[str, Any], key: str, path: str) -> Optional[int]:
    """A counter that may exceed 64 bits (NVMe log fields are 128-bit). smartctl adds
    ``KEY_s`` (decimal string) when the value leaves the JSON-safe 53-bit range and
    ``KEY_le`` (little-endian byte array) beyond 64 bits; prefer those exact forms."""
    text = log.get(key + "_s")
    if text is not None:
        if not isinstance(text, str) or not (text.strip().isascii() and text.strip().isdigit()):
            raise ParseError(f"smartctl JSON: {path}.{key}_s is not a decimal string: {numbers.quote(str(text))}")
        if len(text.strip()) > _MAX_128_BIT_DIGITS:
            raise ParseError(f"smartctl JSON: {path}.{key}_s has {len(text.strip()):,} digits, more than a 128-bit field")
        return int(text)
    little = log.get(key + "_le")
    if little is not None:
        if not isinstance(little, list) or len(little) > 16 or not all(
            isinstance(b, int) and not isinstance(b, bool) and 0 <= b <= 255 for b in little
        ):
            raise ParseError(f"smartctl JSON: {path}.{key}_le is not a byte array of a 128-bit field")
        return int.from_bytes(bytes(little), "little")
    return _lookup(log, key, "int")


def _no_data_reason(doc: Dict[str, Any]) -> str:
    """smartctl's own messages, joined: its reason when it printed no data. A ``messages`` that
    is not a list (null in a damaged report) says nothing."""
    tool = doc.get("smartctl")
    listed = tool.get("messages") if isinstance(tool, dict) else None
    if not isinstance(listed, list):
        return ""
    return "; ".join(m["string"] for m in listed if isinstance(m, dict) and isinstance(m.get("string"), str))


def _is_standby_message(doc: Dict[str, Any]) -> bool:
    reason = _no_data_reason(doc)
    return "STANDBY mode" in reason or "SLEEP mode" in reason


_CONTENT_KEYS = (
    "serial_number",
    "model_name",
    "scsi_model_name",
    "product",
    "smart_status",
    "ata_smart_attributes",
    "nvme_smart_health_information_log",
    "scsi_error_counter_log",
    "power_on_time",
)


def _has_content(doc: Dict[str, Any]) -> bool:
    return any(doc.get(key) not in (None, "", {}, []) for key in _CONTENT_KEYS)


# --------------------------------------------------------------------------- normalise


def _kind(doc: Dict[str, Any]) -> str:
    protocol = (_lookup(doc, "device.protocol", "str") or "").lower()
    if protocol == "nvme":
        return KIND_NVME
    if protocol == "ata":
        return KIND_ATA
    if protocol == "scsi":
        return KIND_SCSI
    # Dicts without a protocol (older output, the text parser): infer from what is there.
    if "nvme_smart_health_information_log" in doc:
        return KIND_NVME
    if "ata_smart_attributes" in doc or "ata_version" in doc:
        return KIND_ATA
    dev_type = (_lookup(doc, "device.type", "str") or "").lower()
    if dev_type.startswith("nvme") or dev_type.startswith("snt"):
        return KIND_NVME
    if dev_type.startswith(("sat", "ata", "usb")):
        return KIND_ATA
    return KIND_SCSI


def _wwn(doc: Dict[str, Any]) -> Optional[str]:
    wwn = _lookup(doc, "wwn", "dict")
    if wwn is not None:
        naa = _lookup(doc, "wwn.naa", "int")
        oui = _lookup(doc, "wwn.oui", "int")
        ident = _lookup(doc, "wwn.id", "int")
        if naa is not None and oui is not None and ident is not None:
            # NAA 5 layout: 4-bit NAA, 24-bit IEEE OUI, 36-bit vendor id: 16 hex digits,
            # the same digits smartctl prints as "LU WWN Device Id: 5 0014ee 2b6b0e7e1".
            return f"{naa:x}{oui:06x}{ident:09x}"
    lu_id = _lookup(doc, "logical_unit_id", "str")
    if lu_id and re.fullmatch(r"(0x)?[0-9a-fA-F]+", lu_id):
        return lu_id.lower().removeprefix("0x")
    return None


_BLOCK_DEVICE = re.compile(r"/dev/((?:sd|hd|vd|xvd)[a-z]+|nvme\d+(?:n\d+)?)$")


# smartctl names a cciss or 3ware disk's device type without its disk number ("cciss", where
# megaraid says "megaraid,3"): the number is only in the info name, "/dev/sda [cciss_disk_03]"
# (smartmontools os_linux.cpp, linux_cciss_device and linux_escalade_device). Two disks on one
# controller would otherwise share device path and type.
_INFO_NAME_DISK = re.compile(r"\[(?P<controller>cciss|3ware)_disk_(?P<disk>\d+)\]")


def _pass_through_type(dev_type: Optional[str], info_name: Optional[str]) -> Optional[str]:
    """The ``-d`` type with the disk number restored for cciss and 3ware disks."""
    match = _INFO_NAME_DISK.search(info_name or "")
    if match is None or (dev_type is not None and dev_type != match.group("controller")):
        return dev_type
    return f"{match.group('controller')},{int(match.group('disk'))}"


def _block_device(name: str, dev_type: Optional[str]) -> Optional[str]:
    if passthrough.is_pass_through(dev_type):
        return None  # the /dev name is the controller, not this disk
    match = _BLOCK_DEVICE.search(name)
    return match.group(1) if match else None


def _attributes(doc: Dict[str, Any]) -> List[attrs.Attribute]:
    table = _lookup(doc, "ata_smart_attributes.table", "list")
    out: List[attrs.Attribute] = []
    for index, row in enumerate(table or []):
        where = f"ata_smart_attributes.table[{index}]"
        if not isinstance(row, dict):
            raise ParseError(f"smartctl JSON: {where} is {type(row).__name__}, expected an object")
        try:
            attr_id = _lookup(row, "id", "int")
            if attr_id is None:
                raise ParseError("smartctl JSON: id is missing")
            name = _lookup(row, "name", "str") or ""
            out.append(
                attrs.Attribute(
                    attr_id=attr_id,
                    name=name,
                    normalized=_lookup(row, "value", "int"),
                    threshold=_lookup(row, "thresh", "int"),
                    raw=_lookup(row, "raw.value", "int"),
                    raw_string=_lookup(row, "raw.string", "str"),
                )
            )
        except ParseError as exc:
            raise ParseError(str(exc).replace("smartctl JSON: ", f"smartctl JSON: {where}.")) from None
    return out


def _device_statistics(doc: Dict[str, Any]) -> Dict[str, int]:
    """ATA device statistics (``--log=devstat`` / ``--log=ssd``) by entry name."""
    pages = _lookup(doc, "ata_device_statistics.pages", "list")
    out: Dict[str, int] = {}
    for p_index, page in enumerate(pages or []):
        if not isinstance(page, dict):
            raise ParseError(f"smartctl JSON: ata_device_statistics.pages[{p_index}] is not an object")
        rows = _lookup(page, "table", "list") or []
        for r_index, row in enumerate(rows):
            where = f"ata_device_statistics.pages[{p_index}].table[{r_index}]"
            if not isinstance(row, dict):
                raise ParseError(f"smartctl JSON: {where} is not an object")
            name = row.get("name")
            value = row.get("value")
            flags = row.get("flags")
            if isinstance(flags, dict) and flags.get("valid") is False:
                continue
            if isinstance(name, str) and isinstance(value, int) and not isinstance(value, bool):
                out[name] = value
    return out


# ATA Device Statistics counters that are not what they say, each seen in the vendored corpus
# (tests/sources/smartctl/test_host_writes.py): all 48 value bits set (SSSTC ER2-GD480); fewer sectors than
# commands, when every command moves at least one sector (Crucial MX500, SanDisk CloudSpeed and
# SD8SN8U); and counters the firmware keeps in 32 bits (Crucial BX500/MX500/BX200, Kingston
# A400, Transcend SSD370S, Supermicro SSDs and SATA DOMs, several small vendors), recognised by
# equalling the attribute's sector count modulo 2**32 to within one attribute unit.
_DEVSTAT_ALL_ONES = (1 << 48) - 1
_DEVSTAT_WRAP = 1 << 32
_DEVSTAT_SLACK_SECTORS = 2048  # the two counters are read a moment apart


def _devstat_sectors(
    devstat: Dict[str, int],
    counter: str,
    commands: str,
    finding: Optional[attrs.Finding],
    sector: int,
) -> Tuple[Optional[int], Optional[str]]:
    """The devstat sector ``counter`` when it can be taken at face value, else None and why."""
    value = devstat.get(counter)
    if value is None:
        return None, None
    if value >= _DEVSTAT_ALL_ONES:
        return None, f"{counter} has all 48 bits set"
    issued = devstat.get(commands)
    if issued is not None and value < issued:
        return None, f"{counter} ({value}) is below {commands} ({issued})"
    if value == 0 and finding is not None and finding.value > 0:
        return None, f"{counter} is 0 while {finding.source} is not"
    if finding is not None and value < _DEVSTAT_WRAP:
        attr_sectors = int(finding.value) // sector
        unit_sectors = max(1, (attrs.unit_bytes(finding.rule.unit, sector) or sector) // sector)
        gap = (attr_sectors - value) % _DEVSTAT_WRAP
        gap = min(gap, _DEVSTAT_WRAP - gap)
        if attr_sectors >= _DEVSTAT_WRAP and gap <= unit_sectors + _DEVSTAT_SLACK_SECTORS:
            return None, f"{counter} ({value}) is {finding.source} modulo 2**32 sectors: a 32-bit counter"
    return value, None


# Every ratio the normaliser produces is rounded to this many decimals: a percentage turned into
# a ratio must read 0.2, not 1 - 80/100 = 0.19999999999999996, and no source is more precise.
RATIO_DECIMALS = 6


def _ratio(percent: float) -> float:
    """A percentage (of life left, spare left ...) as a ratio in 0..1."""
    return round(min(100.0, max(0.0, percent)) / 100.0, RATIO_DECIMALS)


def _ratio_left(percent_used: float) -> float:
    """Life left from a percentage used: (100 - used) / 100, so 80 gives 0.2 exactly. Used may
    pass 100 (NVMe counts up to 255) once the rated life is spent; life left stops at 0."""
    return round(max(0.0, 100.0 - percent_used) / 100.0, RATIO_DECIMALS)


# Write amplification outside this range means one of the two counters is not what the table
# thinks it is: a NAND counter that counts only part of the NAND writes (WD Blue 3D's 233
# NAND_GB_Written_TLC leaves out the SLC cache, which 234 counts; Kingston A400's 233 is below
# its 241), or a host counter in an unknown unit (tiny next to the NAND volume). Compressing
# controllers (SandForce, and Seagate's Nytro drives built on it: "DuraWrite") truly write less
# than the host sends when the data compress, which database pages often do; for the families
# smartctl names as such, a figure down to 0.14 is taken. Elsewhere the counters alone cannot
# tell compression from a partial counter, so a figure below 1 is not reported.
WRITE_AMPLIFICATION_RANGE = (1.0, 50.0)
# 0.14: the best case SandForce itself claims for the SF-2281's compression; below it, the NAND
# counter leaves writes out.
COMPRESSING_WRITE_AMPLIFICATION_RANGE = (0.14, 50.0)
# Intel's 520, 330/335 and 53x/Pro 1500 series are SandForce SF-2281 drives under Intel's name
# (their drive database entries keep SandForce's attribute layout: 225 host writes in 32 MiB,
# 233 wear; drivedb.h marks "Intel 53x and Pro 1500/2500 Series SSDs" "SandForce SF-2281").
# Their NAND writes are 249 NAND_Writes_1GiB, as the drive database names it for each of them;
# the other SF-2281 drives ("SandForce Driven SSDs": Kingston HyperX, OCZ Vertex 3, Corsair
# Force 3 ...) have 233 named SandForce_Internal there, a counter nothing documents, so it is
# not read as NAND writes (tests/sources/smartctl/test_sandforce.py).
_COMPRESSING_FAMILY = re.compile(r"SandForce|Seagate Nytro|Intel 520|Intel 330/335|Intel 53x and Pro 1500",
                                 re.IGNORECASE)

# A temperature of 0 C is what a drive without a sensor reports (RAID volumes, Crucial m4,
# SCT status on cheap firmware); below -40 C or above 150 C no drive is working: garbage.
TEMPERATURE_RANGE = (-40.0, 150.0)


def _celsius_problem(value: Any) -> Optional[str]:
    """Why a temperature reading cannot be taken (None when it can)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"{numbers.quote(repr(value))} is not a number"
    if not numbers.is_finite(value):
        return f"{value!r} is not a finite number"
    if value == 0:
        return "0 C: the drive has no sensor there"
    low, high = TEMPERATURE_RANGE
    if not low <= value <= high:
        return f"{numbers.show(value)} C outside {low:g}..{high:g}"
    return None


def _write_amplification(
    nand: float, host: float, how: str, sources: Dict[str, str], extra: Dict[str, str], source: str,
    model_family: Optional[str] = None,
) -> Optional[float]:
    """``nand / host`` rounded, or None with the reason in ``extra`` when it is implausible."""
    amplification = numbers.as_float(nand) / numbers.as_float(host)
    compressing = bool(model_family and _COMPRESSING_FAMILY.search(model_family))
    low, high = COMPRESSING_WRITE_AMPLIFICATION_RANGE if compressing else WRITE_AMPLIFICATION_RANGE
    if not (math.isfinite(amplification) and low <= amplification <= high):
        extra["write_amplification_rejected"] = f"{how} = {amplification:.1f} outside {low:g}..{high:g} ({source})"
        return None
    sources["write_amplification"] = source
    return round(amplification, RATIO_DECIMALS)


@dataclass
class _Draft:
    """What the normaliser has gathered so far for one drive; the protocol readers fill it."""

    kind: str
    model: Optional[str]
    vendor: Optional[str]
    model_family: Optional[str]
    sector: Optional[int]
    capacity: Optional[int]
    is_ssd: Optional[bool]
    power_on_seconds: Optional[int]
    power_cycles: Optional[int]
    temp_current: Optional[float]
    temp_max: Optional[float]
    temp_limit: Optional[float]
    fields: Dict[str, Any] = field(default_factory=dict)
    sources: Dict[str, str] = field(default_factory=dict)
    extra: Dict[str, str] = field(default_factory=dict)
    defects: Dict[str, int] = field(default_factory=dict)
    sensors: List[Temperature] = field(default_factory=list)
    stamp_hours: Optional[int] = None  # the newest self-test's power-on stamp (logs.newest_stamp)


def _draft(doc: Dict[str, Any], kind: str) -> _Draft:
    """The fields every protocol shares: identity, capacity, power-on, temperatures."""
    model = _lookup(doc, "model_name", "str") or _lookup(doc, "scsi_model_name", "str")
    vendor = _lookup(doc, "scsi_vendor", "str") or _lookup(doc, "vendor", "str")
    product = _lookup(doc, "scsi_product", "str") or _lookup(doc, "product", "str")
    if model is None and product:
        model = f"{vendor} {product}" if vendor else product
    capacity = _lookup(doc, "user_capacity.bytes", "int")
    if capacity is None:
        capacity = _lookup(doc, "nvme_total_capacity", "int")
    rotation = _lookup(doc, "rotation_rate", "int")
    is_ssd: Optional[bool] = None
    if kind == KIND_NVME or rotation == 0:
        is_ssd = True  # smartctl prints rotation 0 as "Solid State Device"
    elif rotation is not None and rotation > 0:
        is_ssd = False
    power_on_seconds = None
    hours = _lookup(doc, "power_on_time.hours", "int")
    if hours is not None:
        power_on_seconds = hours * 3600 + (_lookup(doc, "power_on_time.minutes", "int") or 0) * 60
    temp_limit = _lookup(doc, "temperature.op_limit_max", "number")
    if temp_limit is None:
        temp_limit = _lookup(doc, "temperature.drive_trip", "number")
    if temp_limit in (0, 127, -127, -128):
        # RAID volumes and drives without a temperature log page: trip 0; SCT limits of 0 or
        # the signed byte's extremes are how drives without a limit fill the field
        temp_limit = None
    # Figures the others are checked and computed against are bounded first (an impossible
    # capacity must neither refute nor pass anything, nor overflow a float on the way). The
    # power-on time is bounded where each protocol reads it (ATA re-reads attribute 9 in the
    # unit the drive database gives) and by evidence.contain.
    extra: Dict[str, str] = {}
    sector = evidence.admit("logical_sector_bytes", _lookup(doc, "logical_block_size", "int"), extra,
                            "smartctl logical_block_size")
    capacity = evidence.admit("capacity_bytes", capacity, extra, "smartctl user capacity")
    draft = _Draft(
        kind=kind, model=model, vendor=vendor, model_family=_lookup(doc, "model_family", "str"),
        sector=sector, capacity=capacity, is_ssd=is_ssd, extra=extra,
        power_on_seconds=power_on_seconds, power_cycles=_lookup(doc, "power_cycle_count", "int"),
        temp_current=_lookup(doc, "temperature.current", "number"),
        temp_max=_lookup(doc, "temperature.lifetime_max", "number"), temp_limit=temp_limit,
    )
    version = _lookup(doc, "smartctl.version", "list")
    if version and all(isinstance(v, int) for v in version):
        draft.extra["smartctl_version"] = ".".join(str(v) for v in version)
    return draft


def _nvme(doc: Dict[str, Any], d: _Draft) -> None:
    """The NVMe SMART/Health log."""
    log = _lookup(doc, "nvme_smart_health_information_log", "dict") or {}
    path = "nvme_smart_health_information_log"
    fields, sources, extra = d.fields, d.sources, d.extra
    used = log.get("percentage_used")
    if isinstance(used, float) and not math.isfinite(used):
        extra["life_left_ratio_rejected"] = f"nvme percentage_used is {used!r}, not a number"
        used = None
    used = _lookup(log, "percentage_used", "int") if used is not None else None
    if used is not None and not 0 <= used <= 255:
        # The field is an unsigned byte: outside 0..255 is a broken tool or log, not wear.
        extra["life_left_ratio_withheld"] = extra["life_left_ratio_rejected"] = (
            f"nvme percentage_used is {used}, not a byte (0..255)")
    elif used is not None:
        # percentage_used may exceed 100 (up to 255) once the rated life is passed.
        fields["life_left_ratio"] = _ratio_left(used)
        sources["life_left_ratio"] = "nvme percentage_used"
    spare = _lookup(log, "available_spare", "int")
    if spare is not None:
        fields["spare_left_ratio"] = _ratio(spare)
        sources["spare_left_ratio"] = "nvme available_spare"
    threshold = _lookup(log, "available_spare_threshold", "int")
    if threshold is not None:
        fields["spare_threshold_ratio"] = _ratio(threshold)
    # A byte outside 0..255 is no warning byte: neither it nor the read-only bit is taken.
    warning = evidence.admit("critical_warning", _lookup(log, "critical_warning", "int"), extra,
                             "nvme critical_warning")
    fields["critical_warning"] = warning
    if warning is not None:
        fields["readonly"] = bool(warning & 0x08)  # bit 3: the media is read-only
    fields["media_errors"] = _big_counter(log, "media_errors", path)
    for key, commands_key, field_name in (("data_units_written", "host_writes", "host_written_bytes"),
                                          ("data_units_read", "host_reads", "host_read_bytes")):
        units = _big_counter(log, key, path)
        commands = _big_counter(log, commands_key, path)
        if units is None:
            continue
        # A data unit is 1,000 sectors; every command moves at least one sector, so fewer
        # sectors than commands means one of the two counters is broken (Intel DC P3700
        # OEM firmware: 13.7 bytes per write command). No figure rather than a wrong one.
        if commands is not None and units * 1000 < commands:
            extra[f"{field_name}_withheld"] = (
                f"nvme {key} {units} is {units * 1000} sectors, fewer than {commands_key} {commands}")
            continue
        fields[field_name] = units * NVME_DATA_UNIT_BYTES
        sources[field_name] = f"nvme {key} x 512000"
    if d.power_on_seconds is None:
        log_hours = _big_counter(log, "power_on_hours", path)
        d.power_on_seconds = None if log_hours is None else log_hours * 3600
    if d.power_cycles is None:
        d.power_cycles = _big_counter(log, "power_cycles", path)
    if d.temp_current is None:
        d.temp_current = _lookup(log, "temperature", "number")
    # The rest of the health log, as decimal strings in base units. The three times are
    # minutes in the NVMe SMART/Health log: Controller Busy Time, and the time the composite
    # temperature spent at or above the warning (WCTEMP) and critical (CCTEMP) thresholds.
    for key, extra_key, multiplier in _NVME_LOG_EXTRAS:
        value = _big_counter(log, key, path)
        if value is not None:
            extra[extra_key] = str(value * multiplier)
    for index, celsius in enumerate(_lookup(log, "temperature_sensors", "list") or [], start=1):
        # Unused sensor slots are skipped by smartctl; guard against nulls anyway.
        if isinstance(celsius, (int, float)) and not isinstance(celsius, bool):
            d.sensors.append(Temperature(sensor=f"sensor_{index}", celsius=numbers.as_float(celsius)))


def _ata(doc: Dict[str, Any], d: _Draft) -> None:
    """ATA attributes named by the drive database, and device statistics: the evidence rules
    live in :mod:`collectors.smartctl.ata`."""
    vocab = ata.vocabulary(_attributes(doc), doc)
    # Every row under the database's names, for smartctl.all_attributes (the source drops them
    # when that is off: collectors/smartctl/source.py interpret).
    rows, left_out = smart_logs.attribute_rows(doc, {a.attr_id: a.name for a in vocab.attributes})
    d.fields["ata_attributes"] = rows
    if left_out:
        d.extra["ata_attributes_withheld"] = "; ".join(left_out)
    findings = attrs.interpret_attributes(vocab.attributes, vocab.family, d.model, d.sector,
                                          require_vouched=d.is_ssd is not False)
    devstat = _device_statistics(doc)
    figures = ata.AtaFigures(fields=d.fields, sources=d.sources, extra=d.extra)
    if vocab.entry is not None:
        d.extra["drivedb_family"] = vocab.entry.family
    d.extra["drivedb"] = vocab.database.label
    d.power_on_seconds = ata.power_on_seconds(figures, doc, vocab, devstat, d.sector or 512, d.stamp_hours)
    # Host bytes: the ATA Device Statistics counters are in logical sectors by the standard,
    # so they win over vendor attributes, whose units vary; the attribute is the fallback.
    for field_name, meaning, counter, commands in (
        ("host_written_bytes", attrs.HOST_WRITTEN, "Logical Sectors Written", "Number of Write Commands"),
        ("host_read_bytes", attrs.HOST_READ, "Logical Sectors Read", "Number of Read Commands"),
    ):
        d.fields[field_name] = ata.host_volume(figures, findings, devstat, d.sector or 512, field_name, meaning,
                                               counter, commands, d.capacity, d.power_on_seconds)
    # Only a volume the device statistics establish may refute a life figure: a vendor counter
    # in a wrong unit must not overrule the standard's indicator.
    written = d.fields.get("host_written_bytes")
    standard_written = written if "devstat" in d.sources.get("host_written_bytes", "") else None
    left = ata.life_left(figures, findings, devstat, d.is_ssd, standard_written, d.capacity)
    if left is not None:
        d.fields["life_left_ratio"] = _ratio(left)
    _ata_nand(findings, d)
    spare = findings.get(attrs.SPARE_LEFT)
    if spare is not None:
        d.sources["spare_left_ratio"] = spare.source
        d.fields["spare_left_ratio"] = _ratio(spare.value)
        if spare.column == attrs.NORMALIZED and spare.attribute.threshold:
            # The threshold is on the same 0..100 normalized scale as the value.
            d.fields["spare_threshold_ratio"] = _ratio(spare.attribute.threshold)
    for meaning in attrs.DEFECT_MEANINGS:
        value = findings.value(meaning)
        if value is not None:
            d.defects[meaning] = int(value)
    # smartctl's own choice first, then the attribute table, then device statistics: the
    # first one that is a plausible reading (a Crucial m4 reports 0 in all three).
    for candidate in (findings.value(attrs.TEMPERATURE), devstat.get("Current Temperature")):
        if candidate is not None and (d.temp_current is None or _celsius_problem(d.temp_current)):
            d.temp_current = candidate
    if d.temp_max is None or _celsius_problem(d.temp_max):
        d.temp_max = devstat.get("Highest Temperature", d.temp_max)
    # The drive's specified maximum (ACS device statistics) before the SCT status's
    # "recommended" one (the top-level limit with --log=scttemp): the two agree on most drives,
    # and where they differ the device statistic is the specification.
    specified = devstat.get("Specified Maximum Operating Temperature")
    if specified is not None and _celsius_problem(specified) is None and specified >= LIMIT_FLOOR_CELSIUS:
        d.temp_limit = specified


def _ata_nand(findings: attrs.AttributeFindings, d: _Draft) -> None:
    """NAND bytes and write amplification: NAND counter / host bytes, or Micron's page counters."""
    nand = findings.get(attrs.NAND_WRITTEN)
    host_bytes = d.fields.get("host_written_bytes")
    if nand is not None:
        d.sources["nand_written_bytes"] = nand.source
        d.fields["nand_written_bytes"] = int(nand.value)
        if host_bytes:
            d.fields["write_amplification"] = _write_amplification(
                nand.value, host_bytes, "nand/host", d.sources, d.extra,
                f"{nand.source} / {d.sources['host_written_bytes']}", d.model_family,
            )
        return
    host_pages = findings.get(attrs.HOST_PROGRAM_PAGES)
    background = findings.get(attrs.BACKGROUND_PROGRAM_PAGES)
    if host_pages is None or background is None or host_pages.value <= 0:
        return
    # Micron's own definition: (host pages + FTL/background pages) / host pages.
    amplification = _write_amplification(
        host_pages.value + background.value, host_pages.value, "(host + background pages)/host pages",
        d.sources, d.extra, f"({host_pages.source} + {background.source}) / host pages",
    )
    d.fields["write_amplification"] = amplification
    if host_bytes and amplification is not None:
        # Page size is not reported: NAND bytes are estimated from host bytes, with the
        # unrounded page ratio.
        pages = host_pages.value + background.value
        d.fields["nand_written_bytes"] = int(host_bytes * (pages / host_pages.value))
        d.sources["nand_written_bytes"] = "estimated: host_written_bytes x write_amplification"


def _scsi(doc: Dict[str, Any], d: _Draft) -> None:
    """SCSI / SAS: the endurance indicator, grown defects and the error counter log."""
    used = _lookup(doc, "scsi_percentage_used_endurance_indicator", "int")
    if used is not None and used < 0:
        d.extra["life_left_ratio_rejected"] = f"scsi percentage used endurance indicator is {used}, below 0"
    elif used is not None:
        d.fields["life_left_ratio"] = _ratio_left(used)
        d.sources["life_left_ratio"] = "scsi percentage used endurance indicator"
    grown = _lookup(doc, "scsi_grown_defect_list", "int")
    if grown is not None:
        d.defects["grown_defect"] = grown
    uncorrected: Optional[int] = None
    for direction in ("read", "write", "verify"):
        count = _lookup(doc, f"scsi_error_counter_log.{direction}.total_uncorrected_errors", "int")
        if count is not None:
            uncorrected = (uncorrected or 0) + count
    d.fields["media_errors"] = uncorrected
    for direction, field_name in (("write", "host_written_bytes"), ("read", "host_read_bytes")):
        path = f"scsi_error_counter_log.{direction}.gigabytes_processed"
        text = _lookup(doc, path, "str")
        if text is None:
            continue
        try:
            gigabytes = float(text)
        except ValueError:
            raise ParseError(f"smartctl JSON: {path} is not a number: {text!r}") from None
        if not math.isfinite(gigabytes * SCSI_GIGABYTE) or gigabytes < 0:
            d.extra[f"{field_name}_rejected"] = f"{path} is {numbers.quote(text)}"
            continue
        d.fields[field_name] = int(round(gigabytes * SCSI_GIGABYTE))
        d.sources[field_name] = f"scsi error counter log {direction} gigabytes processed x 10^9"


def _temperatures(d: _Draft) -> Tuple[Temperature, ...]:
    """The drive's sensors that hold a plausible reading; the others named in ``extra``."""
    temperatures: List[Temperature] = []
    rejected: List[str] = []

    def plausible(name: str, value: Any) -> Optional[float]:
        if value is None:
            return None
        problem = _celsius_problem(value)
        if problem is not None:
            rejected.append(f"{name} {problem}")
            return None
        return float(value)

    celsius = plausible("drive", d.temp_current)
    if celsius is not None:
        limit = plausible("drive limit", d.temp_limit)
        if limit is not None and limit < LIMIT_FLOOR_CELSIUS:
            rejected.append(f"drive limit {limit:g} C is below {LIMIT_FLOOR_CELSIUS} C, lower than any drive's stated maximum")
            limit = None
        temperatures.append(Temperature(sensor="drive", celsius=celsius,
                                        max_celsius=plausible("drive max", d.temp_max), limit_celsius=limit))
    for sensor in d.sensors:
        if plausible(sensor.sensor, sensor.celsius) is not None:
            temperatures.append(sensor)
    if rejected:
        d.extra["temperature_rejected"] = "; ".join(rejected)
    return tuple(temperatures)


_READERS = {KIND_NVME: _nvme, KIND_ATA: _ata, KIND_SCSI: _scsi}


def _logs(doc: Dict[str, Any], d: _Draft, logs):
    """The self-test and error logs (collectors/smartctl/logs.py), their words in ``extra``; a
    self-test stamped past the power-on figure withholds that figure (the drive's second clock)."""
    if logs is None:
        return None
    d.extra.update(smart_logs.summary(logs))
    why = smart_logs.power_on_contradiction(logs, d.power_on_seconds)
    if why is not None:
        d.power_on_seconds = None
        d.extra["power_on_seconds_withheld"] = f"{d.sources.pop('power_on_seconds', 'power-on time')}: {why}"
    return logs


@numbers.guarded("smartctl JSON")
def normalise_smartctl(doc: Dict[str, Any], device: Optional[str] = None) -> DriveReading:
    """One smartctl JSON document (or a dict in the same shape) as a :class:`DriveReading`.

    ``device`` overrides the path smartctl reports (the poller knows what it asked for)."""
    if not isinstance(doc, dict):
        raise ParseError(f"smartctl JSON: document is {type(doc).__name__}, expected an object")
    exit_status = _lookup(doc, "smartctl.exit_status", "int")
    if not _has_content(doc):
        reason = _no_data_reason(doc) or "no identity or SMART data in the output"
        raise NoSmartData(f"smartctl exit status {exit_status}: {reason}")
    kind = _kind(doc)
    dev_name = device or _lookup(doc, "device.name", "str") or "unknown"
    dev_type = _pass_through_type(_lookup(doc, "device.type", "str"), _lookup(doc, "device.info_name", "str"))
    d = _draft(doc, kind)
    # read first: a self-test's power-on stamp decides between two power-on counters (ata.py)
    logs = smart_logs.read_logs(doc, d.kind, d.capacity, d.sector)
    d.stamp_hours = smart_logs.newest_stamp(logs)
    _READERS[kind](doc, d)
    logs = _logs(doc, d, logs)
    temperatures = _temperatures(d)
    reading = DriveReading(
        kind=kind,
        device=dev_name,
        serial=_lookup(doc, "serial_number", "str"),
        wwn=_wwn(doc),
        model=d.model,
        model_family=d.model_family,
        vendor=d.vendor,
        firmware=_lookup(doc, "firmware_version", "str")
        or _lookup(doc, "scsi_revision", "str")
        or _lookup(doc, "revision", "str"),
        block_device=_block_device(dev_name, dev_type),
        device_type=dev_type,
        is_ssd=d.is_ssd,
        capacity_bytes=d.capacity,
        logical_sector_bytes=d.sector,
        smart_healthy=_lookup(doc, "smart_status.passed", "bool"),
        defects=d.defects,
        temperatures=temperatures,
        power_on_seconds=d.power_on_seconds,
        power_cycles=d.power_cycles,
        smart_logs=logs,
        tool_exit_status=exit_status,
        sources=d.sources,
        extra=d.extra,
        **{k: v for k, v in d.fields.items() if v is not None},
    )
    if _is_standby_message(doc):
        reading = reading.replace(power_state="standby")
    return evidence.contain(reading)


@numbers.guarded("smartctl JSON")
def parse_smartctl_json(data: Union[bytes, str], device: Optional[str] = None) -> DriveReading:
    """Parse the output of ``smartctl --json ... DEVICE``."""
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ParseError(f"smartctl JSON: not UTF-8 at byte {exc.start}") from None
    if not data.strip():
        raise NoSmartData("smartctl printed nothing")
    doc = numbers.load_json(data, "smartctl JSON")
    if not isinstance(doc, dict):
        raise ParseError(f"smartctl JSON: document is {type(doc).__name__}, expected an object")
    exit_status = _lookup(doc, "smartctl.exit_status", "int")
    if exit_status is not None and exit_status & NO_DATA_BITS and not _has_content(doc):
        reason = _no_data_reason(doc) or "device open or identify failed"
        raise NoSmartData(f"smartctl exit status {exit_status}: {reason}")
    return normalise_smartctl(doc, device)


# --------------------------------------------------------------------------- scan


@numbers.guarded("smartctl scan JSON")
def parse_scan_json(data: Union[bytes, str]) -> List[ScanEntry]:
    """Parse ``smartctl --scan[-open] --json``."""
    if isinstance(data, bytes):
        data = data.decode("utf-8", errors="replace")
    if not data.strip():
        raise ParseError("smartctl scan JSON: empty output")
    doc = numbers.load_json(data, "smartctl scan JSON")
    if not isinstance(doc, dict):
        raise ParseError(f"smartctl scan JSON: document is {type(doc).__name__}, expected an object")
    devices = doc.get("devices", [])
    if not isinstance(devices, list):
        raise ParseError(f"smartctl scan JSON: devices is {type(devices).__name__}, expected a list")
    out: List[ScanEntry] = []
    for index, entry in enumerate(devices):
        if not isinstance(entry, dict):
            raise ParseError(f"smartctl scan JSON: devices[{index}] is not an object")
        name, dev_type, protocol = entry.get("name"), entry.get("type"), entry.get("protocol")
        if not isinstance(name, str) or not name:
            raise ParseError(f"smartctl scan JSON: devices[{index}].name is missing or not a string")
        if not isinstance(dev_type, str) or not dev_type:
            raise ParseError(f"smartctl scan JSON: devices[{index}].type is missing or not a string")
        if protocol is not None and not isinstance(protocol, str):
            raise ParseError(f"smartctl scan JSON: devices[{index}].protocol is not a string")
        if entry.get("open_error") is not None:
            continue  # --scan-open could not open it (the text form comments such lines out)
        out.append(ScanEntry(name=name, type=dev_type, protocol=protocol))
    return out


_SCAN_LINE = re.compile(r"^(?P<name>\S+)\s+-d\s+(?P<type>\S+)(?:\s+#\s*(?P<comment>.*))?$")
_SCAN_PROTOCOL = re.compile(r",\s*(ATA|SCSI|NVMe)\s+device\s*$")


@numbers.guarded("smartctl scan")
def parse_scan_text(text: Union[bytes, str]) -> List[ScanEntry]:
    """Parse plain ``smartctl --scan`` / ``--scan-open``, one device a line::

        /dev/bus/0 -d sat+megaraid,60 # /dev/bus/0 [megaraid_disk_60] [SAT], ATA device

    ``--scan-open`` comments out devices it could not open (``# /dev/sdb -d scsi # ...``);
    those are skipped."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    out: List[ScanEntry] = []
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        match = _SCAN_LINE.match(line)
        if match is None:
            raise ParseError(f"smartctl scan: line {number} is not 'DEVICE -d TYPE # ...': {line[:80]!r}")
        protocol_match = _SCAN_PROTOCOL.search(match.group("comment") or "")
        out.append(
            ScanEntry(
                name=match.group("name"),
                type=match.group("type"),
                protocol=protocol_match.group(1) if protocol_match else None,
            )
        )
    return out


# --------------------------------------------------------------------------- version


def smartctl_version(version_text: Union[bytes, str]) -> Optional[Tuple[int, int]]:
    """(major, minor) from ``smartctl --version`` (first line ``smartctl 7.3 2022-02-28 ...``)."""
    if isinstance(version_text, bytes):
        version_text = version_text.decode("utf-8", errors="replace")
    match = re.search(r"^smartctl\s+(\d{1,6})\.(\d{1,6})\b", version_text, re.MULTILINE)
    return (int(match.group(1)), int(match.group(2))) if match else None


def supports_json(version_text: Union[bytes, str]) -> bool:
    """smartctl gained ``--json`` in 7.0; older versions need the text parser."""
    version = smartctl_version(version_text)
    return version is not None and version >= (7, 0)


# --------------------------------------------------------------------------- probe

Runner = Callable[..., ToolResult]


def protocol_for_type(dev_type: str) -> Optional[str]:
    """The protocol a ``-d TYPE`` speaks, when the type says so."""
    lowered = dev_type.lower()
    if lowered.startswith("nvme") or lowered.startswith("snt"):
        return "NVMe"
    if lowered.startswith(("sat", "ata", "usb")) or "+sat" in lowered:
        return "ATA"
    if lowered.startswith(("scsi", "megaraid", "cciss", "aacraid")):
        return "SCSI"
    return None


def is_standby(result: ToolResult) -> bool:
    """True when smartctl skipped a sleeping drive because of ``-n standby``."""
    if result.exit_code == STANDBY_EXIT_STATUS:
        return True
    return b"STANDBY mode" in result.stdout or b"SLEEP mode" in result.stdout


# Log pages smartctl before 6.0 does not know: asking for them fails the whole call, so the
# text path for old hosts leaves them out.
OLD_SMARTCTL_DROPS = ("--log=ssd", "--log=devstat")


class SmartctlProbe:
    """Runs smartctl with bounded time; parsing is left to the pure functions above."""

    def __init__(self, tool: str = "smartctl", runner: Runner = run_tool, timeout: float = 30.0) -> None:
        self.tool = tool
        self.runner = runner
        self.timeout = timeout

    def _run(self, argv: Sequence[str]) -> ToolResult:
        return self.runner(list(argv), timeout=self.timeout)

    def version(self) -> ToolResult:
        return self._run([self.tool, "--version"])

    def scan(self, json_output: bool = True, open_devices: bool = True) -> ToolResult:
        """``--scan-open --json``; ``json_output=False`` for smartctl before 7.0, and
        ``open_devices=False`` for plain ``--scan``, which does not open each device."""
        argv = [self.tool, "--scan-open" if open_devices else "--scan"]
        if json_output:
            argv.append("--json=c")
        return self._run(argv)

    def read_argv(self, device: str, dev_type: str, protocol: Optional[str] = None) -> List[str]:
        """The argv for one drive: the cheapest sections that carry the health figures."""
        protocol = protocol or protocol_for_type(dev_type)
        argv = [self.tool, "--json=c", "--info", "--health", "--attributes"]
        if protocol == "ATA":
            # device statistics: page 1 has Logical Sectors Written/Read (the standard's own
            # host-write counters, preferred over vendor attributes), page 7 the Percentage
            # Used Endurance Indicator. One GP log read. Then the SMART self-test log and the
            # summary error log (issue 30): one 512-byte SMART READ LOG each (logs 06h, 01h), as
            # smartd reads them every cycle to see a new failed test or error. Then the SCT
            # status and temperature history (issue 30, -l scttemp): one SMART READ LOG E0h,
            # and an SCT Data Table command (a SMART WRITE LOG E0h, a READ LOG E1h): the drive's
            # own operating limits and its per-interval temperatures since the last poll, which
            # catch a hot spell between two polls. smartctl 5.38 and later know it; a drive
            # without SCT prints "SCT Commands not supported" and the rest of the read stands.
            argv += ["--log=devstat", "--log=selftest", "--log=error", "--log=scttemp"]
        elif protocol == "SCSI":
            # error counter log (bytes processed, uncorrected errors), SSD media page, and the
            # self-test results page 10h (issue 30: one LOG SENSE, 20 entries)
            argv += ["--log=error", "--log=ssd", "--log=selftest"]
        elif protocol == "NVMe":
            # The SMART/Health log comes with --attributes; the self-test log (page 06h, read
            # by smartctl 7.3 and later; older ones ignore it) and the newest entries of the
            # error information log (page 01h, 16 x 64 bytes) beside it (issue 30).
            argv += ["--log=selftest", "--log=error"]
        argv += [f"--nocheck=standby,{STANDBY_EXIT_STATUS}", "-d", dev_type, device]
        return argv

    def read(self, device: str, dev_type: str, protocol: Optional[str] = None) -> ToolResult:
        return self._run(self.read_argv(device, dev_type, protocol))

    def is_standby(self, result: ToolResult) -> bool:
        """See the module-level :func:`is_standby`; here for callers holding a probe."""
        return is_standby(result)
