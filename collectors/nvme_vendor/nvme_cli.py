"""nvme-cli: pure parsers for ``nvme smart-log``, ``nvme list``, ``nvme id-ctrl`` and the Intel
plugin's ``nvme intel smart-log-add``.

The SMART/Health log is not normalised here. :func:`smart_log_doc` rebuilds the dict that
``smartctl --json`` prints for the same log (``nvme_smart_health_information_log`` with
smartctl's key names, temperatures in Celsius) and :func:`parse_smart_log_json` hands it to
:func:`collectors.smartctl.normalise_smartctl`, so an NVMe drive read through nvme-cli and one
read through smartctl come out with the same units, the same life-left rule and the same
sources.

What differs between nvme-cli releases (all seen in tests/fixtures/nvme-cli):

* ``critical_warning`` is an integer, or (2.11, verbose) an object holding ``value`` and one
  0/1 field per bit (``available_spare``, ``temp_threshold``, ``reliability_degraded``, ``ro``,
  ``vmbu_failed``, ``pmr_ro``). The two must agree.
* Temperatures (``temperature`` and ``temperature_sensor_1`` .. ``_8``) are printed in kelvin,
  as the log holds them; unused sensor slots are left out. smartctl prints kelvin - 273.
* 128-bit counters (``data_units_written``, ``power_on_hours`` ...) are integers in 2.x, doubles
  in 1.x builds (``json_object_add_value_float``), and decimal strings in some packagings.
  Integers and decimal strings are exact; a float is accepted only when it is integral.
* ``nvme list -o json`` prints one flat entry per namespace (``DevicePath /dev/nvme0n1``,
  1.x to 2.x) or, verbose/2.11, a tree ``Devices[].Subsystems[].Controllers[].Namespaces[]``.
  Either way :func:`parse_list_json` folds namespaces into their controller: one drive each.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple, Union

from collectors import evidence, numbers
from collectors.model import DriveReading, ParseError

__all__ = [
    "CRITICAL_WARNING_BITS",
    "KELVIN_OFFSET",
    "IntelSmartEntry",
    "NvmeController",
    "NvmeNamespace",
    "decode_critical_warning",
    "intel_smart_fields",
    "parse_id_ctrl_text",
    "parse_intel_smart_log_add",
    "parse_list_json",
    "parse_smart_log_json",
    "smart_log_doc",
]

# smartctl and nvme-cli's own text output both subtract 273 (not 273.15) from the log's kelvin.
KELVIN_OFFSET = 273

# Critical warning bits (NVMe base spec, SMART / Health Information log byte 0), named as
# nvme-cli 2.11 names them in its verbose JSON object.
CRITICAL_WARNING_BITS: Tuple[Tuple[int, str], ...] = (
    (0, "available_spare"),  # spare below threshold
    (1, "temp_threshold"),  # a temperature beyond its threshold
    (2, "reliability_degraded"),  # media or internal errors
    (3, "ro"),  # media placed in read-only mode
    (4, "vmbu_failed"),  # volatile memory backup (power-loss capacitors) failed
    (5, "pmr_ro"),  # persistent memory region read-only
)

_COUNTERS = (
    "data_units_read",
    "data_units_written",
    "host_read_commands",
    "host_write_commands",
    "controller_busy_time",
    "power_cycles",
    "power_on_hours",
    "unsafe_shutdowns",
    "media_errors",
    "num_err_log_entries",
)
# nvme-cli key -> smartctl JSON key, where they differ.
_RENAMED = {
    "avail_spare": "available_spare",
    "spare_thresh": "available_spare_threshold",
    "percent_used": "percentage_used",
    "host_read_commands": "host_reads",
    "host_write_commands": "host_writes",
}
_SMALL_INTS = ("warning_temp_time", "critical_comp_time")


def _decode(data: Union[bytes, str], what: str) -> Any:
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ParseError(f"{what}: not UTF-8 at byte {exc.start}") from None
    if not isinstance(data, str):
        raise ParseError(f"{what}: expected text, got {type(data).__name__}")
    if not data.strip():
        raise ParseError(f"{what}: empty output")
    return numbers.load_json(data, what)  # long digit runs and deep nesting refused


def _count(value: Any, key: str, what: str) -> int:
    """A non-negative integer from an int, an integral float or a decimal string."""
    if isinstance(value, bool):
        raise ParseError(f"{what}: {key} is a boolean, expected a number")
    if isinstance(value, int):
        number = value
    elif isinstance(value, float):
        if not value.is_integer():
            raise ParseError(f"{what}: {key} is not a whole number: {value!r}")
        number = int(value)
    elif isinstance(value, str) and value.strip().isascii() and value.strip().isdigit() \
            and len(value.strip()) <= numbers.MAX_DIGITS:
        number = int(value.strip())
    else:
        raise ParseError(f"{what}: {key} is not a number: {numbers.quote(repr(value))}")
    if number < 0:
        raise ParseError(f"{what}: {key} is negative: {number}")
    return number


# --------------------------------------------------------------------------- critical warning


def decode_critical_warning(value: int) -> Dict[str, bool]:
    """Each critical-warning bit by name: ``{"available_spare": False, "temp_threshold": ...}``."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 0xFF:
        raise ParseError(f"NVMe critical warning is not a byte: {value!r}")
    return {name: bool((value >> bit) & 1) for bit, name in CRITICAL_WARNING_BITS}


def _critical_warning(raw: Any, what: str) -> int:
    if not isinstance(raw, dict):
        value = _count(raw, "critical_warning", what)
        decode_critical_warning(value)  # range check
        return value
    if "value" not in raw:
        raise ParseError(f"{what}: critical_warning object has no value")
    value = _count(raw["value"], "critical_warning.value", what)
    for name, is_set in decode_critical_warning(value).items():
        if name in raw and _count(raw[name], f"critical_warning.{name}", what) != int(is_set):
            raise ParseError(
                f"{what}: critical_warning.{name} is {raw[name]!r} but value {value:#04x} says {int(is_set)}"
            )
    return value


# --------------------------------------------------------------------------- smart-log


def _celsius(kelvin: Any, key: str, what: str) -> Optional[int]:
    value = _count(kelvin, key, what)
    if value == 0:
        return None  # not reported (the spec's "unused sensor")
    return value - KELVIN_OFFSET


@numbers.guarded("nvme smart-log")
def smart_log_doc(log: Dict[str, Any], device: str, controller: Optional[NvmeController] = None) -> Dict[str, Any]:
    """``nvme smart-log -o json`` as the dict ``smartctl --json`` prints for the same drive."""
    what = "nvme smart-log JSON"
    if not isinstance(log, dict):
        raise ParseError(f"{what}: document is {type(log).__name__}, expected an object")
    if "critical_warning" not in log and "percent_used" not in log and "data_units_written" not in log:
        raise ParseError(f"{what}: no SMART/Health log fields (critical_warning, percent_used, data_units_written)")

    health: Dict[str, Any] = {}
    if "critical_warning" in log:
        health["critical_warning"] = _critical_warning(log["critical_warning"], what)
    for key in ("avail_spare", "spare_thresh", "percent_used"):
        if key in log:
            health[_RENAMED[key]] = _count(log[key], key, what)
    for key in _COUNTERS + _SMALL_INTS:
        if key in log:
            health[_RENAMED.get(key, key)] = _count(log[key], key, what)

    doc: Dict[str, Any] = {"device": {"name": device, "type": "nvme", "protocol": "NVMe"}}
    if "temperature" in log:
        celsius = _celsius(log["temperature"], "temperature", what)
        if celsius is not None:
            health["temperature"] = celsius
            doc["temperature"] = {"current": celsius}
    # smartctl's temperature_sensors is positional: slot N-1 holds sensor N, gaps are null.
    sensors: List[Optional[int]] = []
    for index in range(1, 9):
        key = f"temperature_sensor_{index}"
        if key in log:
            celsius = _celsius(log[key], key, what)
            if celsius is not None:
                sensors += [None] * (index - 1 - len(sensors)) + [celsius]
    if sensors:
        health["temperature_sensors"] = sensors

    doc["nvme_smart_health_information_log"] = health
    if "critical_warning" in health:
        # smartctl's overall-health verdict for NVMe: FAILED when any critical warning bit is set.
        doc["smart_status"] = {"passed": health["critical_warning"] == 0, "nvme": {"value": health["critical_warning"]}}
    if "power_on_hours" in health:
        doc["power_on_time"] = {"hours": health["power_on_hours"]}
    if "power_cycles" in health:
        doc["power_cycle_count"] = health["power_cycles"]
    if controller is not None:
        for key, value in (
            ("model_name", controller.model),
            ("serial_number", controller.serial),
            ("firmware_version", controller.firmware),
        ):
            if value:
                doc[key] = value
        if controller.namespaces:
            first = controller.namespaces[0]
            if first.size_bytes is not None:
                doc["user_capacity"] = {"bytes": first.size_bytes}
            if first.sector_bytes is not None:
                doc["logical_block_size"] = first.sector_bytes
    return doc


@numbers.guarded("nvme smart-log")
def parse_smart_log_json(
    data: Union[bytes, str], device: str, controller: Optional[NvmeController] = None
) -> DriveReading:
    """Parse ``nvme smart-log DEVICE -o json``; ``controller`` (from ``nvme list``) adds the
    identity that the health log does not carry."""
    from collectors.smartctl import normalise_smartctl  # the one place units are converted

    doc = smart_log_doc(_decode(data, "nvme smart-log JSON"), device, controller)
    reading = normalise_smartctl(doc, device)
    readonly = None
    if reading.critical_warning is not None:
        readonly = decode_critical_warning(reading.critical_warning)["ro"]
    return evidence.contain(reading.replace(readonly=readonly, extra={**reading.extra, "source_tool": "nvme-cli"}))


# --------------------------------------------------------------------------- nvme list


@dataclass(frozen=True)
class NvmeNamespace:
    name: str  # kernel block device: nvme0n1
    nsid: Optional[int]
    size_bytes: Optional[int]  # PhysicalSize: the namespace's capacity
    used_bytes: Optional[int]
    sector_bytes: Optional[int]


@dataclass(frozen=True)
class NvmeController:
    """One NVMe controller with its namespaces: the unit the agent calls a drive."""

    name: str  # nvme0
    serial: Optional[str]
    model: Optional[str]
    firmware: Optional[str]
    address: Optional[str] = None  # PCI address, 2.11 tree layout only
    namespaces: Tuple[NvmeNamespace, ...] = ()

    @property
    def capacity_bytes(self) -> Optional[int]:
        sizes = [ns.size_bytes for ns in self.namespaces if ns.size_bytes is not None]
        return sum(sizes) if sizes else None


_NS_PATH = re.compile(r"^(?:/dev/)?(nvme\d+)(?:c\d+)?n(\d+)$")


def _opt_str(entry: Dict[str, Any], key: str, where: str) -> Optional[str]:
    value = entry.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ParseError(f"nvme list JSON: {where}.{key} is {type(value).__name__}, expected a string")
    return value.strip() or None


def _opt_int(entry: Dict[str, Any], key: str, where: str) -> Optional[int]:
    if entry.get(key) is None:
        return None
    return _count(entry[key], f"{where}.{key}", "nvme list JSON")


def _namespace(entry: Any, where: str, name_key: str) -> NvmeNamespace:
    if not isinstance(entry, dict):
        raise ParseError(f"nvme list JSON: {where} is {type(entry).__name__}, expected an object")
    name = _opt_str(entry, name_key, where)
    match = _NS_PATH.match(name or "")
    if match is None:
        raise ParseError(f"nvme list JSON: {where}.{name_key} is not an NVMe namespace: {name!r}")
    nsid = _opt_int(entry, "NSID", where)
    if nsid is None and isinstance(entry.get("NameSpace"), int):
        nsid = _opt_int(entry, "NameSpace", where)
    return NvmeNamespace(
        name=f"{match.group(1)}n{match.group(2)}",
        nsid=nsid,
        size_bytes=_opt_int(entry, "PhysicalSize", where),
        used_bytes=_opt_int(entry, "UsedBytes", where),
        sector_bytes=_opt_int(entry, "SectorSize", where),
    )


def _flat_layout(devices: List[Any]) -> List[NvmeController]:
    """nvme-cli 1.x-2.x: one entry per namespace, grouped here by the controller in its path."""
    grouped: Dict[str, Dict[str, Any]] = {}
    for index, entry in enumerate(devices):
        where = f"Devices[{index}]"
        namespace = _namespace(entry, where, "DevicePath")
        controller = _NS_PATH.match(namespace.name).group(1)  # type: ignore[union-attr]
        identity = (
            _opt_str(entry, "SerialNumber", where),
            _opt_str(entry, "ModelNumber", where),
            _opt_str(entry, "Firmware", where),
        )
        slot = grouped.setdefault(controller, {"identity": identity, "namespaces": []})
        if slot["identity"] != identity:
            raise ParseError(
                f"nvme list JSON: {where} ({namespace.name}) disagrees with earlier namespaces of "
                f"{controller} on serial/model/firmware"
            )
        slot["namespaces"].append(namespace)
    return [
        NvmeController(name, *slot["identity"], namespaces=tuple(sorted(slot["namespaces"], key=_ns_order)))
        for name, slot in sorted(grouped.items(), key=lambda item: _ctrl_order(item[0]))
    ]


def _tree_layout(devices: List[Any]) -> List[NvmeController]:
    """nvme-cli verbose / 2.11: hosts -> subsystems -> controllers -> namespaces. Namespaces
    listed on the subsystem (shared, multipath) belong to every controller of that subsystem."""
    out: List[NvmeController] = []
    for h_index, host in enumerate(devices):
        if not isinstance(host, dict):
            raise ParseError(f"nvme list JSON: Devices[{h_index}] is not an object")
        subsystems = host.get("Subsystems", [])
        if not isinstance(subsystems, list):
            raise ParseError(f"nvme list JSON: Devices[{h_index}].Subsystems is not a list")
        for s_index, subsystem in enumerate(subsystems):
            s_where = f"Devices[{h_index}].Subsystems[{s_index}]"
            if not isinstance(subsystem, dict):
                raise ParseError(f"nvme list JSON: {s_where} is not an object")
            shared_raw = subsystem.get("Namespaces", [])
            controllers = subsystem.get("Controllers", [])
            if not isinstance(shared_raw, list) or not isinstance(controllers, list):
                raise ParseError(f"nvme list JSON: {s_where} Namespaces/Controllers is not a list")
            shared = [_namespace(ns, f"{s_where}.Namespaces[{i}]", "NameSpace") for i, ns in enumerate(shared_raw)]
            for c_index, ctrl in enumerate(controllers):
                c_where = f"{s_where}.Controllers[{c_index}]"
                if not isinstance(ctrl, dict):
                    raise ParseError(f"nvme list JSON: {c_where} is not an object")
                name = _opt_str(ctrl, "Controller", c_where)
                if name is None or not re.fullmatch(r"nvme\d+", name):
                    raise ParseError(f"nvme list JSON: {c_where}.Controller is not an NVMe controller: {name!r}")
                own_raw = ctrl.get("Namespaces", [])
                if not isinstance(own_raw, list):
                    raise ParseError(f"nvme list JSON: {c_where}.Namespaces is not a list")
                own = [_namespace(ns, f"{c_where}.Namespaces[{i}]", "NameSpace") for i, ns in enumerate(own_raw)]
                out.append(
                    NvmeController(
                        name=name,
                        serial=_opt_str(ctrl, "SerialNumber", c_where),
                        model=_opt_str(ctrl, "ModelNumber", c_where),
                        firmware=_opt_str(ctrl, "Firmware", c_where),
                        address=_opt_str(ctrl, "Address", c_where),
                        namespaces=tuple(sorted(own + shared, key=_ns_order)),
                    )
                )
    return sorted(out, key=lambda c: _ctrl_order(c.name))


def _ctrl_order(name: str) -> Tuple[int, str]:
    digits = re.sub(r"\D", "", name)
    return (int(digits) if digits else -1, name)


def _ns_order(ns: NvmeNamespace) -> Tuple[int, str]:
    return (ns.nsid if ns.nsid is not None else 1 << 32, ns.name)


@numbers.guarded("nvme list")
def parse_list_json(data: Union[bytes, str]) -> List[NvmeController]:
    """Parse ``nvme list -o json`` (either layout) into controllers, namespaces folded in.
    ``{"Devices": []}`` (no NVMe devices) is an empty list, not an error."""
    doc = _decode(data, "nvme list JSON")
    if not isinstance(doc, dict):
        raise ParseError(f"nvme list JSON: document is {type(doc).__name__}, expected an object")
    devices = doc.get("Devices")
    if not isinstance(devices, list):
        raise ParseError("nvme list JSON: Devices is missing or not a list")
    if any(isinstance(d, dict) and "Subsystems" in d for d in devices):
        return _tree_layout(devices)
    return _flat_layout(devices)


# --------------------------------------------------------------------------- id-ctrl (text)

_ID_CTRL_LINE = re.compile(r"^(?P<key>[a-z][a-z0-9]*(?:\s+\d+)?)\s*:\s?(?P<value>.*)$")


@numbers.guarded("nvme id-ctrl")
def parse_id_ctrl_text(text: Union[bytes, str]) -> Dict[str, str]:
    """``nvme id-ctrl DEVICE`` (plain text) as ``{field: value}``, values stripped.

    Lines that are not ``field : value`` (the power-state continuation lines, and in the
    telegraf capture a stray merge-conflict marker) are skipped; the header and the identity
    fields ``sn`` and ``mn`` must be there."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    if not isinstance(text, str):
        raise ParseError(f"nvme id-ctrl: expected text, got {type(text).__name__}")
    lines = text.replace("\r\n", "\n").split("\n")
    start = next((i for i, line in enumerate(lines) if line.strip()), None)
    if start is None:
        raise ParseError("nvme id-ctrl: empty output")
    if not lines[start].strip().startswith("NVME Identify Controller"):
        raise ParseError(f"nvme id-ctrl: line {start + 1} is not the 'NVME Identify Controller:' header")
    fields: Dict[str, str] = {}
    for line in lines[start + 1:]:
        match = _ID_CTRL_LINE.match(line.strip())
        if match is not None:
            fields.setdefault(re.sub(r"\s+", " ", match.group("key")), match.group("value").strip())
    for key in ("sn", "mn"):
        if not fields.get(key):
            raise ParseError(f"nvme id-ctrl: no '{key}' field")
    return fields


@numbers.guarded("nvme id-ctrl")
def id_ctrl_identity(fields: Dict[str, str]) -> Dict[str, Any]:
    """Identity and temperature thresholds from :func:`parse_id_ctrl_text`. ``wctemp`` /
    ``cctemp`` are kelvin; 0 means the controller does not report one."""

    def kelvin(key: str) -> Optional[int]:
        raw = fields.get(key, "0").strip()
        if not (raw.isascii() and raw.isdigit()):
            raise ParseError(f"nvme id-ctrl: {key} is not a number: {raw!r}")
        return int(raw) - KELVIN_OFFSET if int(raw) else None

    return {
        "serial": fields["sn"],
        "model": fields["mn"],
        "firmware": fields.get("fr") or None,
        "pci_vendor_id": fields.get("vid") or None,
        "warning_celsius": kelvin("wctemp"),
        "critical_celsius": kelvin("cctemp"),
    }


# --------------------------------------------------------------------------- intel smart-log-add


@dataclass(frozen=True)
class IntelSmartEntry:
    """One row of ``nvme intel smart-log-add``: normalized percent and the raw text."""

    key: str
    normalized: int
    raw: str
    attr_id: Optional[int] = None  # only the newer table layout prints the ID (0xab ...)

    @property
    def raw_int(self) -> Optional[int]:
        return int(self.raw) if self.raw.isascii() and self.raw.isdigit() else None


# older nvme-cli: "program_fail_count              : 100%       0"
_INTEL_OLD = re.compile(r"^(?P<key>[a-z0-9_]+)\s*:\s*(?P<norm>\d{1,3})%\s+(?P<raw>.*?)\s*$")
# newer nvme-cli: "0xab    program_fail_count      100         0"
_INTEL_NEW = re.compile(r"^(?P<id>0x[0-9a-fA-F]{2})\s+(?P<key>[a-z0-9_]+)\s+(?P<norm>\d{1,3})\s+(?P<raw>\S.*?)\s*$")
_WEAR = re.compile(r"min:\s*(\d+),\s*max:\s*(\d+),\s*avg:\s*(\d+)")


@numbers.guarded("nvme intel smart-log-add")
def parse_intel_smart_log_add(text: Union[bytes, str]) -> Dict[str, IntelSmartEntry]:
    """Both layouts of the Intel plugin's additional SMART log, keyed by the printed name."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    if not isinstance(text, str):
        raise ParseError(f"nvme intel smart-log-add: expected text, got {type(text).__name__}")
    lines = text.replace("\r\n", "\n").split("\n")
    numbered = [(i + 1, line.strip()) for i, line in enumerate(lines) if line.strip()]
    if not numbered:
        raise ParseError("nvme intel smart-log-add: empty output")
    if not numbered[0][1].startswith("Additional Smart Log for NVME device"):
        raise ParseError(f"nvme intel smart-log-add: line {numbered[0][0]} is not the 'Additional Smart Log' header")
    out: Dict[str, IntelSmartEntry] = {}
    for number, line in numbered[1:]:
        if re.match(r"^(key\s+normalized|ID\s+KEY)", line, re.IGNORECASE):
            continue
        match = _INTEL_NEW.match(line) or _INTEL_OLD.match(line)
        if match is None:
            raise ParseError(f"nvme intel smart-log-add: line {number} is not a 'key normalized raw' row: {line!r}")
        groups = match.groupdict()
        out[groups["key"]] = IntelSmartEntry(
            key=groups["key"],
            normalized=int(groups["norm"]),
            raw=groups["raw"],
            attr_id=int(groups["id"], 16) if groups.get("id") else None,
        )
    if not out:
        raise ParseError("nvme intel smart-log-add: no rows")
    return out


@numbers.guarded("nvme intel smart-log-add")
def intel_smart_fields(entries: Dict[str, IntelSmartEntry]) -> Dict[str, Any]:
    """DriveReading-shaped values from the Intel log: defect counts and wear-levelling spread.

    The byte counters (``nand_bytes_written``, ``host_bytes_written``, printed as "sectors")
    are left out: their unit is not established by anything in our sources."""
    defects: Dict[str, int] = {}
    for key, meaning in (("program_fail_count", "program_fail"), ("erase_fail_count", "erase_fail")):
        entry = entries.get(key)
        if entry is not None and entry.raw_int is not None:
            defects[meaning] = entry.raw_int
    out: Dict[str, Any] = {"defects": defects}
    wear = entries.get("wear_leveling")
    if wear is not None:
        match = _WEAR.search(wear.raw)
        if match is None:
            raise ParseError(f"nvme intel smart-log-add: wear_leveling raw is not 'min: N, max: N, avg: N': {wear.raw!r}")
        out["wear_leveling"] = {"min": int(match.group(1)), "max": int(match.group(2)), "avg": int(match.group(3))}
    crc = entries.get("crc_error_count")
    if crc is not None and crc.raw_int is not None:
        out["crc_errors"] = crc.raw_int
    return out
