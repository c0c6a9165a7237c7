"""Plain-text ``smartctl`` output (smartmontools 5.x and 6.x hosts, which have no ``--json``).

The text parser does not build a :class:`~collectors.model.DriveReading` itself. It rebuilds the
dict that ``smartctl --json`` would have printed for the same drive (same key names, same
nesting, same types), so that one normaliser, :func:`collectors.smartctl.normalise_smartctl`,
owns every unit conversion and vendor rule for both formats. A text host and a JSON host with
the same drive therefore export the same numbers.

Sample (``smartctl -a /dev/sda`` from smartmontools 5.43)::

    smartctl 5.43 2012-06-30 r3573 [x86_64-linux-2.6.32-358.el6.x86_64] (local build)
    === START OF INFORMATION SECTION ===
    Device Model:     INTEL SSDSA2CW120G3
    Serial Number:    CVPR1234567890ABCDE
    User Capacity:    120,034,123,776 bytes [120 GB]
    === START OF READ SMART DATA SECTION ===
    SMART overall-health self-assessment test result: PASSED
    ID# ATTRIBUTE_NAME          FLAG     VALUE WORST THRESH TYPE      UPDATED  WHEN_FAILED RAW_VALUE
    233 Media_Wearout_Indicator 0x0032   098   098   000    Old_age   Always       -       0

What is covered: banners from 5.0 (2002) to 7.5; ``-a``/``-x``/``-i``/``-A``/``-H`` output;
the three ATA attribute layouts (5.0-5.3x without UPDATED, the TYPE/UPDATED layout, the brief
``FLAGS ... FAIL`` layout of ``-x``); ATA Device Statistics (GP log 0x04) and SCT status;
NVMe health log text; SCSI/SAS health, error counter log, grown defects and endurance.

Where text and JSON cannot agree, the text wins and the difference is documented: ATA
``raw.value`` is the number smartctl printed (the leading integer, or the whole value when it
was printed in hex), not the 48-bit register that JSON carries, because the text never shows
the register for composite formats such as ``36 (Min/Max 20/45)``.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Tuple

from collectors import numbers
from collectors.model import DriveReading, ParseError
from collectors.smartctl import logs as smart_logs
from collectors.smartctl.json_report import NoSmartData, normalise_smartctl

__all__ = [
    "parse_smartctl_text",
    "parse_smartctl_text_reading",
    "smartctl_version",
]


# --------------------------------------------------------------------------- errors


def _no_smart_data(reason: str) -> ParseError:
    """The error for output that is valid smartctl but carries no SMART data.

    ``NoSmartData`` is the JSON side's too, so the source handles one type.
    """
    return NoSmartData(reason)


# --------------------------------------------------------------------------- banner

# "smartctl 7.3 2022-02-28 r5338 [x86_64-linux-5.4.0] (local build)"
# "smartctl version 5.37 [i686-suse-linux-gnu] Copyright (C) 2002-6 Bruce Allen"
# "smartctl version 5.1-11 Copyright (C) 2002-3 Bruce Allen"   (5.0/5.1 "major.minor-release")
# "smartctl pre-7.4 2023-03-21 r5470 [x86_64-w64-mingw32-w10-22H2] (CircleCI)"
_BANNER = re.compile(
    r"^smartctl\s+(?:version\s+)?(?P<pre>pre-)?(?P<major>\d{1,6})\.(?P<minor>\d{1,6})(?:-(?P<release>\d{1,6}))?"
    r"(?P<rest>.*)$"
)
_BANNER_REVISION = re.compile(r"\br(\d+)\b")
_BANNER_PLATFORM = re.compile(r"\[([^\]]+)\]")
_BANNER_BUILD = re.compile(r"\(([^)]*build[^)]*|CircleCI|sf-[^)]*)\)")


def smartctl_version(text: str) -> Optional[Tuple[int, ...]]:
    """The smartctl version from the banner: ``(7, 3)``, ``(5, 43)``, ``(5, 1, 11)``.

    The 5.0 and 5.1 series were numbered ``5.1-11`` (release 11 of 5.1); the release becomes a
    third element so tuples still sort in release order. ``pre-7.4`` (a snapshot build) is
    reported as ``(7, 4)``. ``None`` when no banner is found in the first lines.
    """
    for line in _lines(text)[:20]:
        m = _BANNER.match(line.strip())
        if m:
            return _banner_tuple(m)
    return None


def _banner_tuple(m: re.Match[str]) -> Tuple[int, ...]:
    version: Tuple[int, ...] = (int(m.group("major")), int(m.group("minor")))
    if m.group("release") is not None:
        version += (int(m.group("release")),)
    return version


# --------------------------------------------------------------------------- small helpers


def _lines(text: str) -> List[str]:
    # Captures from Windows smartctl and from mail archives carry CRLF.
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def _anonymised(value: str) -> bool:
    """hw-probe (linuxhw) reports replace identifiers with ``--`` or end them in ``...``."""
    v = value.strip()
    return v in ("", "--", "-", "...") or v.endswith("...") or v.startswith("[No Information")


# Grouping marks seen in real captures: "," (C/English), " " and NBSP (ru, fr), "." (de),
# "\u2019" (de_CH), and U+FFFD where a Windows code-page NBSP (byte 0xA0) was decoded as UTF-8.
_INT_SEPARATORS = re.compile(r"[,.'\u2019\u00a0\u202f\ufffd ]")


def _int(text: str, line_no: int, line: str) -> int:
    """An integer that smartctl may print with locale digit grouping.

    smartctl groups digits with the C library's locale: ``1,234,567`` under LC_ALL=C-like
    English locales, ``1 234 567`` or ``1.234.567`` elsewhere (see the Russian-locale SAS
    capture). A value that is an integer never has a decimal part, so all separators go.
    """
    cleaned = _INT_SEPARATORS.sub("", text.strip())
    if not re.fullmatch(r"-?\d+", cleaned):
        raise ParseError(f"line {line_no}: expected an integer, got {numbers.quote(text.strip())}: "
                         f"{numbers.quote(line.strip())}")
    if len(cleaned) > numbers.MAX_DIGITS:  # grouped digits slip past the guard's scan
        raise ParseError(f"line {line_no}: a number of {len(cleaned):,} digits")
    return int(cleaned)


def _first_int(text: str) -> Optional[int]:
    m = re.match(r"\s*(-?\d+)", text)
    return int(m.group(1)) if m else None


def _bool_enabled(value: str) -> Optional[bool]:
    v = value.strip().lower()
    if v.startswith("enabled"):
        return True
    if v.startswith("disabled"):
        return False
    return None


class _Line:
    """One input line with its 1-based number, for error messages that name the bad line."""

    __slots__ = ("no", "text")

    def __init__(self, no: int, text: str) -> None:
        self.no = no
        self.text = text

    def fail(self, why: str) -> ParseError:
        return ParseError(f"line {self.no}: {why}: {self.text.strip()!r}")


# --------------------------------------------------------------------------- no-data messages

# Messages after which smartctl has nothing to report about the drive (exit bits 0-1 set, or
# a mandatory command failed). They become NoSmartData: "no device here", not a parser bug.
_NO_DATA_PATTERNS: Tuple[Tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"Smartctl open device: .* failed"), "device could not be opened"),
    (re.compile(r"Unknown USB bridge"), "unknown USB bridge, smartctl needs -d TYPE"),
    (re.compile(r"Please specify device type with the -d option"), "smartctl needs -d TYPE"),
    (re.compile(r"Device is in (STANDBY|SLEEP|IDLE\S*) mode"), "drive is in a low-power mode"),
    (re.compile(r"Read Device Identity failed"), "IDENTIFY DEVICE failed"),
    (re.compile(r"A mandatory SMART command failed"), "a mandatory SMART command failed"),
    (re.compile(r"Device does not support SMART\s*$"), "device does not support SMART"),
    (re.compile(r"SMART support is:\s+Unavailable"), "device lacks SMART capability"),
    (re.compile(r"Terminate command early due to bad response"), "bad response to IEC mode page"),
    (re.compile(r"=======> (INVALID ARGUMENT|UNRECOGNIZED OPTION)"), "smartctl command line error"),
)


# --------------------------------------------------------------------------- ATA attributes

# Flag bits of an ATA attribute, in the order the brief layout prints them ("PO--CK").
_FLAG_LETTERS = (
    ("P", 0x01, "prefailure"),
    ("O", 0x02, "updated_online"),
    ("S", 0x04, "performance"),
    ("R", 0x08, "error_rate"),
    ("C", 0x10, "event_count"),
    ("K", 0x20, "auto_keep"),  # printed "M" (self-preserving) by 5.37-5.38
)

_ATTR_ROW = re.compile(
    # Names are one token except in a few old or vendor-patched builds ("Head flying hours",
# "Unknown Attribute"), so the name runs lazily up to the flags column.
    r"^\s*(?P<id>\d{1,3})\s+(?P<name>\S.*?)\s+(?P<flags>0x[0-9a-fA-F]{4}|[-POSRCKM+]{6,7})\s+"
    r"(?P<value>\d{1,3}|---)\s+(?P<worst>\d{1,3}|---)\s+(?P<thresh>\d{1,3}|---)\s+(?P<rest>.*)$"
)

_WHEN_FAILED = {
    "-": "",
    "FAILING_NOW": "now",
    "NOW": "now",
    "In_the_past": "past",
    "Past": "past",
}


def _flags(token: str) -> Dict[str, Any]:
    if token.lower().startswith("0x"):
        value = int(token, 16)
    else:
        value = 0
        letters = token.replace("M", "K")
        for pos, (letter, bit, _name) in enumerate(_FLAG_LETTERS):
            if pos < len(letters) and letters[pos] == letter:
                value |= bit
    string = "".join(letter if value & bit else "-" for letter, bit, _n in _FLAG_LETTERS)
    # smartctl's JSON pads the string with a seventh column for the "+" of unknown bits.
    string += "+" if value & ~0x3F else " "
    flags: Dict[str, Any] = {"value": value, "string": string}
    for _letter, bit, name in _FLAG_LETTERS:
        flags[name] = bool(value & bit)
    return flags


_HEX_RAW = re.compile(r"^0x[0-9a-fA-F]+$")
# "701 h + 42 m" (5.x) and "12h+34m+56.789s" (6.x, 7.x)
_DURATION_RAW = re.compile(r"^(\d+)\s*h\s*(?:\+\s*(\d+)\s*m)?(?:\s*\+\s*(\d+(?:\.\d+)?)\s*s)?")


def _raw(raw_string: str) -> Dict[str, Any]:
    raw: Dict[str, Any] = {"string": raw_string}
    if _HEX_RAW.match(raw_string):
        raw["value"] = int(raw_string, 16)
    else:
        leading = _first_int(raw_string)
        if leading is not None:
            raw["value"] = leading
    return raw


def _parse_attribute(line: _Line, layout: str) -> Dict[str, Any]:
    m = _ATTR_ROW.match(line.text)
    if not m:
        raise line.fail("malformed ATA attribute row")
    rest = m.group("rest").split()
    if layout == "brief":  # FAIL RAW_VALUE
        need = 2
        when_failed_token = rest[0] if rest else ""
        raw_tokens = rest[1:]
    elif layout == "updated":  # TYPE UPDATED WHEN_FAILED RAW_VALUE
        need = 4
        when_failed_token = rest[2] if len(rest) > 2 else ""
        raw_tokens = rest[3:]
    else:  # "type": 5.0-5.3x, TYPE WHEN_FAILED RAW_VALUE
        need = 3
        when_failed_token = rest[1] if len(rest) > 1 else ""
        raw_tokens = rest[2:]
    if len(rest) < need or when_failed_token not in _WHEN_FAILED:
        raise line.fail(f"ATA attribute row does not fit the {layout} layout")
    attr: Dict[str, Any] = {"id": int(m.group("id")), "name": m.group("name")}
    for key in ("value", "worst", "thresh"):
        # "---" means the drive gave no valid normalised value; JSON omits the key then.
        if m.group(key) != "---":
            attr[key] = int(m.group(key))
    attr["when_failed"] = _WHEN_FAILED[when_failed_token]
    attr["flags"] = _flags(m.group("flags"))
    attr["raw"] = _raw(" ".join(raw_tokens))
    return attr


def _attribute_layout(header: _Line) -> str:
    cols = header.text.split()
    if "FAIL" in cols:
        return "brief"
    if "TYPE" in cols and "UPDATED" in cols:
        return "updated"
    if "TYPE" in cols:
        return "type"
    raise header.fail("unknown ATA attribute table header")


# --------------------------------------------------------------------------- key: value tables

# "Key:   value" lines of the information section, by protocol. Value handlers get
# (doc, value, line).
_KEY_VALUE = re.compile(r"^(?P<key>[A-Za-z][A-Za-z0-9 /.()#,'_-]*?):\s*(?P<value>.*)$")


def _set_capacity(doc: Dict[str, Any], value: str, line: _Line) -> None:
    # "240,057,409,536 bytes [240 GB]", "7 681 501 126 656 bytes [7,68 TB]", "2,111,864,832 bytes"
    m = re.match(r"^(\d[\d,.'\u2019\u00a0\u202f\ufffd ]*?)\s*bytes", value)
    if not m:
        if _anonymised(value):
            return
        # A damaged capacity line (telegraf's capture says "300,$00,000,000 bytes") costs the
        # capacity only: the health, temperature and defect lines after it are still good.
        # The skip is kept as a smartctl-style warning message in the document.
        messages = doc.setdefault("smartctl", {}).setdefault("messages", [])
        messages.append({"string": f"line {line.no}: user capacity without a byte count, skipped: "
                                   f"{line.text.strip()!r}", "severity": "warning"})
        return
    doc["user_capacity"] = {"bytes": _int(m.group(1), line.no, line.text)}


def _set_sector_sizes(doc: Dict[str, Any], value: str, line: _Line) -> None:
    # "512 bytes logical/physical", "512 bytes logical, 4096 bytes physical"
    m = re.match(r"^(\d+) bytes logical/physical", value)
    if m:
        doc["logical_block_size"] = doc["physical_block_size"] = int(m.group(1))
        return
    m = re.match(r"^(\d+) bytes logical, (\d+) bytes physical", value)
    if m:
        doc["logical_block_size"] = int(m.group(1))
        doc["physical_block_size"] = int(m.group(2))


def _set_rotation(doc: Dict[str, Any], value: str, line: _Line) -> None:
    # smartctl's JSON says rotation_rate 0 for "Solid State Device" (ATA word 217 == 1).
    if value.startswith("Solid State"):
        doc["rotation_rate"] = 0
        return
    m = re.match(r"^(\d+) rpm", value)
    if m:
        doc["rotation_rate"] = int(m.group(1))


def _set_wwn(doc: Dict[str, Any], value: str, line: _Line) -> None:
    # "5 000cca 2a5c4f1e6" (NAA, OUI, ID, all hex); linuxhw blanks the ID to "...".
    m = re.match(r"^([0-9a-fA-F])\s+([0-9a-fA-F]{6})\s+([0-9a-fA-F]+)$", value.strip())
    if m:
        doc["wwn"] = {"naa": int(m.group(1), 16), "oui": int(m.group(2), 16), "id": int(m.group(3), 16)}


def _set_str(key: str):
    def setter(doc: Dict[str, Any], value: str, line: _Line) -> None:
        value = value.strip()
        if not _anonymised(value):
            doc[key] = value

    return setter


def _set_smart_support(doc: Dict[str, Any], value: str, line: _Line) -> None:
    support = doc.setdefault("smart_support", {})
    if value.startswith("Available"):
        support["available"] = True
    elif value.startswith("Unavailable"):
        support["available"] = False
    elif value.startswith("Enabled"):
        support["enabled"] = True
    elif value.startswith("Disabled"):
        support["enabled"] = False


def _set_enabled(key: str):
    def setter(doc: Dict[str, Any], value: str, line: _Line) -> None:
        enabled = _bool_enabled(value)
        if enabled is not None:
            doc[key] = {"enabled": enabled}

    return setter


def _set_in_database(doc: Dict[str, Any], value: str, line: _Line) -> None:
    if value.startswith("In smartctl database"):
        doc["in_smartctl_database"] = True
    elif value.startswith("Not in smartctl database"):
        doc["in_smartctl_database"] = False
    # smartctl 7.2+ names the database it searched: "Not in smartctl database 7.3/5528"
    # (branch/SVN revision), so a reader can tell whose names are newer.
    revision = re.search(r"database \d+\.\d+/(\d+)", value)
    if revision:
        doc["smartctl_database_revision"] = int(revision.group(1))


def _set_trim(doc: Dict[str, Any], value: str, line: _Line) -> None:
    doc["trim"] = {"supported": value.startswith("Available")}


def _set_nested_str(key: str, sub: str):
    def setter(doc: Dict[str, Any], value: str, line: _Line) -> None:
        if not _anonymised(value):
            doc[key] = {sub: value.strip()}

    return setter


_ATA_INFO = {
    "Model Family": _set_str("model_family"),
    "Device Model": _set_str("model_name"),
    "Serial Number": _set_str("serial_number"),
    "LU WWN Device Id": _set_wwn,
    "Firmware Version": _set_str("firmware_version"),
    "User Capacity": _set_capacity,
    "Sector Size": _set_sector_sizes,
    "Sector Sizes": _set_sector_sizes,
    "Rotation Rate": _set_rotation,
    "Form Factor": _set_nested_str("form_factor", "name"),
    "Device is": _set_in_database,
    "ATA Version is": _set_nested_str("ata_version", "string"),
    "SATA Version is": _set_nested_str("sata_version", "string"),
    "Local Time is": _set_nested_str("local_time", "asctime"),
    "SMART support is": _set_smart_support,
    "Write cache is": _set_enabled("write_cache"),
    "Rd look-ahead is": _set_enabled("read_lookahead"),
    "TRIM Command": _set_trim,
    "ATA Security is": _set_nested_str("ata_security", "string"),
}


def _nvme_int(key: str):
    def setter(doc: Dict[str, Any], value: str, line: _Line) -> None:
        # "268,638,668 [137 TB]": the bracket is smartctl's human rendering, drop it.
        number = value.split("[", 1)[0].strip()
        if _anonymised(number):
            return
        doc[key] = _int(number, line.no, line.text)

    return setter


def _nvme_hex(key: str):
    def setter(doc: Dict[str, Any], value: str, line: _Line) -> None:
        m = re.match(r"^0x([0-9a-fA-F]+)", value.strip())
        if not m:
            raise line.fail("expected a hex value")
        doc[key] = int(m.group(1), 16)

    return setter


def _set_nvme_pci_vendor(sub: str):
    def setter(doc: Dict[str, Any], value: str, line: _Line) -> None:
        # "PCI Vendor/Subsystem ID: 0x144d" prints one number when both are equal.
        m = re.match(r"^0x([0-9a-fA-F]+)", value.strip())
        if not m:
            return
        vendor = doc.setdefault("nvme_pci_vendor", {})
        vendor[sub] = int(m.group(1), 16)
        if sub == "id" and line.text.lstrip().startswith("PCI Vendor/Subsystem ID"):
            vendor["subsystem_id"] = vendor["id"]

    return setter


def _set_nvme_total_capacity(doc: Dict[str, Any], value: str, line: _Line) -> None:
    _nvme_int("nvme_total_capacity")(doc, value, line)


def _set_nvme_version(doc: Dict[str, Any], value: str, line: _Line) -> None:
    doc["nvme_version"] = {"string": value.strip()}


_NVME_INFO = {
    "Model Number": _set_str("model_name"),
    "Serial Number": _set_str("serial_number"),
    "Firmware Version": _set_str("firmware_version"),
    "PCI Vendor/Subsystem ID": _set_nvme_pci_vendor("id"),
    "PCI Vendor ID": _set_nvme_pci_vendor("id"),
    "PCI Vendor Subsystem ID": _set_nvme_pci_vendor("subsystem_id"),
    "IEEE OUI Identifier": _nvme_hex("nvme_ieee_oui_identifier"),
    "Total NVM Capacity": _set_nvme_total_capacity,
    "Unallocated NVM Capacity": _nvme_int("nvme_unallocated_capacity"),
    "Controller ID": _nvme_int("nvme_controller_id"),
    "NVMe Version": _set_nvme_version,
    "Number of Namespaces": _nvme_int("nvme_number_of_namespaces"),
    "Local Time is": _set_nested_str("local_time", "asctime"),
}

# NVMe SMART/Health Information (log page 0x02), printed label -> JSON key.
_NVME_HEALTH = {
    "Critical Warning": "critical_warning",
    "Temperature": "temperature",
    "Available Spare": "available_spare",
    "Available Spare Threshold": "available_spare_threshold",
    "Percentage Used": "percentage_used",
    "Data Units Read": "data_units_read",
    "Data Units Written": "data_units_written",
    "Host Read Commands": "host_reads",
    "Host Write Commands": "host_writes",
    "Controller Busy Time": "controller_busy_time",
    "Power Cycles": "power_cycles",
    "Power On Hours": "power_on_hours",
    "Unsafe Shutdowns": "unsafe_shutdowns",
    "Media and Data Integrity Errors": "media_errors",
    "Error Information Log Entries": "num_err_log_entries",
    "Warning  Comp. Temperature Time": "warning_temp_time",
    "Critical Comp. Temperature Time": "critical_comp_time",
    "Thermal Temp. 1 Transition Count": "thermal_temp1_transition_count",
    "Thermal Temp. 2 Transition Count": "thermal_temp2_transition_count",
    "Thermal Temp. 1 Total Time": "thermal_temp1_total_time",
    "Thermal Temp. 2 Total Time": "thermal_temp2_total_time",
}


def _set_scsi_vendor(doc: Dict[str, Any], value: str, line: _Line) -> None:
    # smartctl 7.0-7.2 JSON says vendor/product/revision, 7.3+ says scsi_vendor/...; fill both
    # so the normaliser finds what it knows from either era.
    doc["vendor"] = doc["scsi_vendor"] = value.strip()


def _set_scsi_product(doc: Dict[str, Any], value: str, line: _Line) -> None:
    doc["product"] = doc["scsi_product"] = value.strip()


def _set_scsi_revision(doc: Dict[str, Any], value: str, line: _Line) -> None:
    doc["revision"] = doc["scsi_revision"] = value.strip()


def _set_scsi_old_device(doc: Dict[str, Any], value: str, line: _Line) -> None:
    # smartctl 5.x: "Device: SEAGATE  ST373207LC       Version: 0005" (INQUIRY vendor,
    # product and revision on one line).
    m = re.match(r"^(?P<ident>.*?)\s+Version:\s*(?P<rev>\S*)\s*$", value)
    ident = m.group("ident") if m else value
    parts = ident.split()
    if len(parts) >= 2:
        _set_scsi_vendor(doc, parts[0], line)
        _set_scsi_product(doc, " ".join(parts[1:]), line)
    elif parts:
        _set_scsi_product(doc, parts[0], line)
    if m and m.group("rev"):
        _set_scsi_revision(doc, m.group("rev"), line)


def _set_scsi_block_size(key: str):
    def setter(doc: Dict[str, Any], value: str, line: _Line) -> None:
        n = _first_int(value)
        if n is not None:
            doc[key] = n

    return setter


def _set_scsi_temperature(key: str):
    def setter(doc: Dict[str, Any], value: str, line: _Line) -> None:
        # "28 C"; "<not available>" when the drive has no sensor.
        n = _first_int(value)
        if n is not None:
            doc.setdefault("temperature", {})[key] = n

    return setter


def _set_scsi_health(doc: Dict[str, Any], value: str, line: _Line) -> None:
    # "OK", or the SCSI informational exception text, e.g.
    # "FAILURE PREDICTION THRESHOLD EXCEEDED: ascq=0x5 [asc=5d, ascq=5]".
    doc["smart_status"] = {"passed": value.strip().upper().startswith("OK")}


def _set_scsi_endurance(doc: Dict[str, Any], value: str, line: _Line) -> None:
    n = _first_int(value)
    if n is None:
        raise line.fail("endurance indicator without a percentage")
    doc["scsi_percentage_used_endurance_indicator"] = n


def _set_grown_defects(doc: Dict[str, Any], value: str, line: _Line) -> None:
    doc["scsi_grown_defect_list"] = _int(value, line.no, line.text)


def _set_start_stop(key: str):
    def setter(doc: Dict[str, Any], value: str, line: _Line) -> None:
        n = _first_int(value)
        if n is not None:
            doc.setdefault("scsi_start_stop_cycle_counter", {})[key] = n

    return setter


def _set_scsi_transport(doc: Dict[str, Any], value: str, line: _Line) -> None:
    doc["scsi_transport_protocol"] = {"name": value.strip()}


def _set_scsi_device_type(doc: Dict[str, Any], value: str, line: _Line) -> None:
    doc["device_type"] = {"name": value.strip()}


_SCSI_INFO = {
    "Vendor": _set_scsi_vendor,
    "Product": _set_scsi_product,
    "Revision": _set_scsi_revision,
    "Device": _set_scsi_old_device,
    "Compliance": _set_str("scsi_version"),
    "User Capacity": _set_capacity,
    "Logical block size": _set_scsi_block_size("logical_block_size"),
    "Physical block size": _set_scsi_block_size("physical_block_size"),
    "Rotation Rate": _set_rotation,
    "Form Factor": _set_nested_str("form_factor", "name"),
    "Logical Unit id": _set_str("logical_unit_id"),
    "Serial number": _set_str("serial_number"),
    "Device type": _set_scsi_device_type,
    "Transport protocol": _set_scsi_transport,
    "Local Time is": _set_nested_str("local_time", "asctime"),
    "SMART support is": _set_smart_support,
    "Writeback Cache is": _set_enabled("write_cache"),
    "Read Cache is": _set_enabled("read_cache"),
    "SMART Health Status": _set_scsi_health,
    "Percentage used endurance indicator": _set_scsi_endurance,
    "Current Drive Temperature": _set_scsi_temperature("current"),
    "Drive Trip Temperature": _set_scsi_temperature("drive_trip"),
    "Elements in grown defect list": _set_grown_defects,
    "Specified cycle count over device lifetime": _set_start_stop(
        "specified_cycle_count_over_device_lifetime"
    ),
    "Accumulated start-stop cycles": _set_start_stop("accumulated_start_stop_cycles"),
    "Specified load-unload count over device lifetime": _set_start_stop(
        "specified_load_unload_count_over_device_lifetime"
    ),
    "Accumulated load-unload cycles": _set_start_stop("accumulated_load_unload_cycles"),
}

# SCSI error counter log rows: "read:  0 0 0 0 0  10311,154  0" (7 columns; the gigabytes
# column uses the locale's decimal mark, and JSON carries it as a string with a dot).
_SCSI_ERROR_ROW = re.compile(
    r"^(?P<op>read|write|verify):\s+(?P<fast>\d+)\s+(?P<delayed>\d+)\s+(?P<rereads>\d+)\s+"
    r"(?P<corrected>\d+)\s+(?P<invocations>\d+)\s+(?P<gb>\d+(?:[.,]\d+)?)\s+(?P<uncorrected>\d+)\s*$"
)

# SCSI environmental reporting page (smartctl 7.3+ with -x): "Current temperature = 25".
_SCSI_ENV = {
    "Current temperature": "current",
    "Lifetime maximum temperature": "lifetime_max",
    "Lifetime minimum temperature": "lifetime_min",
    "Maximum temperature since power on": "power_cycle_max",
    "Minimum temperature since power on": "power_cycle_min",
}

# ATA SCT status temperatures (-x, or -l scttemp).
_SCT_LINE = re.compile(
    r"^(?P<key>Current Temperature|Power Cycle Min/Max Temperature|Lifetime\s+Min/Max Temperature|"
    r"Specified Max Operating Temperature|Min/Max Temperature Limit|"
    r"Min/Max recommended Temperature):\s+(?P<value>.*?)\s*Celsius\s*$"
)

# ATA Device Statistics (GP log 0x04), smartctl 6.x/7.x -x:
# "0x01  0x018  6   1339512008232  ---  Logical Sectors Written"
_DEVSTAT_ROW = re.compile(
    r"^0x(?P<page>[0-9a-fA-F]{2})\s+0x(?P<offset>[0-9a-fA-F]{3})\s+(?P<size>\d+)\s+"
    r"(?P<value>-?\d+|-)\s+(?P<flags>[-NDC]{3})\s+(?P<name>.+?)\s*$"
)
# The device line smartctl prints when it changed or reports the -d type it opened with:
# "/dev/sda [cciss_disk_03] [SCSI]: Device open changed type from 'sat,auto' to 'cciss'",
# "/dev/sg2 [SAT]: Device of type 'sat' [ATA] opened".
_DEVICE_OPENED = re.compile(
    r"^(?P<info>/\S+(?: \[[^\]]+\])+): Device (?:open changed type from '[^']*' to '(?P<to>[^']+)'"
    r"|of type '(?P<of>[^']+)' \[[^\]]+\] opened)"
)
_DEVSTAT_PAGE = re.compile(
    r"^0x(?P<page>[0-9a-fA-F]{2})\s+=====\s+=\s+=\s+===\s+== (?P<name>.+?)(?: \(rev (?P<rev>\d+)\))? ==\s*$"
)


# --------------------------------------------------------------------------- the parser


@numbers.guarded("smartctl text")
def parse_smartctl_text(text: str, device: Optional[str] = None) -> Dict[str, Any]:
    """Parse one device's plain-text smartctl output into smartctl's JSON shape.

    ``device`` is the path smartctl was called with; it becomes ``device.name``.
    Raises ``collectors.smartctl.NoSmartData`` (a :class:`ParseError`) when the output is
    valid but has nothing about a drive (empty output, open failed, unknown USB bridge,
    standby, SMART unavailable, a self-test log only) and :class:`ParseError` naming the
    line for anything it cannot read.
    """
    if not isinstance(text, str):
        raise ParseError(f"expected text, got {type(text).__name__}")
    if not text.strip():
        raise _no_smart_data("empty smartctl output")
    parser = _TextParser(_lines(text))
    doc = parser.run()
    doc.update(smart_logs.text_sections(_lines(text)))  # self-test and error logs (issue 30)
    if device:
        doc["device"]["name"] = device
        doc["device"].setdefault("info_name", device)
    return doc


@numbers.guarded("smartctl text")
def parse_smartctl_text_reading(text: str, device: Optional[str] = None) -> DriveReading:
    """Text output straight to the normalised record (via the JSON-side normaliser)."""
    return normalise_smartctl(parse_smartctl_text(text, device), device)


class _TextParser:
    """One pass over the lines; tables are consumed by their own small loops."""

    def __init__(self, lines: List[str]) -> None:
        self.lines = [_Line(i + 1, t.rstrip()) for i, t in enumerate(lines)]
        self.doc: Dict[str, Any] = {}
        self.protocol: Optional[str] = None
        self.banner_seen = False
        self.sections_seen = False
        self.has_drive_data = False
        self.no_data_reason: Optional[str] = None
        self.nvme_log: Dict[str, Any] = {}
        self.nvme_sensors: List[int] = []
        self.nvme_namespaces: Dict[int, Dict[str, Any]] = {}
        self.attributes: List[Dict[str, Any]] = []
        self.attributes_revision: Optional[int] = None
        self.devstat_pages: List[Dict[str, Any]] = []
        self.sct: Dict[str, int] = {}
        self.scsi_errors: Dict[str, Dict[str, Any]] = {}
        self.device_info: Dict[str, str] = {}

    # -- driver

    def run(self) -> Dict[str, Any]:
        self.protocol = self._detect_protocol()
        i = 0
        n = len(self.lines)
        while i < n:
            line = self.lines[i]
            i = self._dispatch(i, line)
        return self._finish()

    def _detect_protocol(self) -> Optional[str]:
        # The information section tells the protocol before any value is read: NVMe prints
        # "Model Number:", SCSI prints "Vendor:"/"Product:" (or the 5.x "Device:" line),
        # ATA prints "Device Model:".
        for line in self.lines:
            t = line.text
            if t.startswith("Model Number:") or t.startswith("SMART/Health Information (NVMe"):
                return "NVMe"
            if t.startswith("Device Model:") or t.startswith("ID# ATTRIBUTE_NAME"):
                return "ATA"
            if (
                t.startswith("Vendor:")
                or t.startswith("Product:")
                or t.startswith("SMART Health Status:")
                or t.startswith("SMART Sense:")
                or re.match(r"^Device:\s+.*Version:", t)
            ):
                return "SCSI"
        return None

    def _dispatch(self, i: int, line: _Line) -> int:
        t = line.text
        s = t.strip()
        if not s:
            return i + 1

        m = _BANNER.match(s)
        if m and not self.banner_seen:
            self._banner(m)
            return i + 1
        if s.startswith("=== START OF"):
            self.sections_seen = True
            return i + 1

        for pattern, reason in _NO_DATA_PATTERNS:
            if pattern.search(t):
                self.no_data_reason = self.no_data_reason or reason
                return i + 1

        if t.startswith("ID#") and "ATTRIBUTE_NAME" in t:
            return self._attribute_table(i)
        if t.startswith("Device Statistics (GP"):
            return self._device_statistics(i)
        if t.startswith("Error counter log:"):
            return self._scsi_error_counter_log(i)

        m2 = _DEVICE_OPENED.match(s)
        if m2:
            # smartctl's JSON calls these device.info_name and device.type; the normaliser
            # restores a cciss disk's number from the info name.
            self.device_info = {"info_name": m2.group("info"), "type": m2.group("to") or m2.group("of")}
            return i + 1

        if self._one_line(t, s):
            return i + 1

        if line.text.startswith(" "):
            return i + 1  # continuation lines, table bodies we do not keep, legends

        m2 = _KEY_VALUE.match(t)
        if m2:
            self._key_value(line, m2.group("key"), m2.group("value"))
        return i + 1

    def _one_line(self, t: str, s: str) -> bool:
        """The facts a single line carries (health verdict, SCT, SCSI clocks and environment,
        the ATA error count); True when the line was one of them."""
        m2 = re.match(r"^SMART Attributes Data Structure revision number:\s*(\d+)", t)
        if m2:
            self.attributes_revision = int(m2.group(1))
            return True

        m2 = re.match(r"^SMART overall-health self-assessment test result:\s*(\S+)", t)
        if m2:
            verdict = m2.group(1)
            if verdict.startswith("PASSED"):
                self.doc["smart_status"] = {"passed": True}
            elif verdict.startswith("FAILED"):
                self.doc["smart_status"] = {"passed": False}
            self.has_drive_data = True
            return True
        m2 = re.match(r"^SMART Sense:\s*(.*)$", t)  # smartctl 5.0/5.1 SCSI health
        if m2:
            self.doc["smart_status"] = {"passed": m2.group(1).strip().lower().startswith("ok")}
            self.has_drive_data = True
            return True

        m2 = _SCT_LINE.match(s)
        if m2 and self.protocol == "ATA":
            self._sct(m2.group("key"), m2.group("value"))
            return True

        m2 = re.match(r"^Accumulated power on time, hours:minutes (\d+):(\d+)", s)
        if m2:  # SCSI background scan log: the SCSI drive's only power-on clock
            self.doc["power_on_time"] = {"hours": int(m2.group(1)), "minutes": int(m2.group(2))}
            return True

        m2 = re.match(r"^Manufactured in week (\d+) of year (\d+)", s)
        if m2:
            counter = self.doc.setdefault("scsi_start_stop_cycle_counter", {})
            counter["year_of_manufacture"] = m2.group(2)
            counter["week_of_manufacture"] = m2.group(1)
            return True

        m2 = re.match(r"^([A-Za-z ]+?)\s+=\s+(-?\d+)\s*$", s)
        if m2 and m2.group(1) in _SCSI_ENV:
            self.doc.setdefault("temperature", {})[_SCSI_ENV[m2.group(1)]] = int(m2.group(2))
            self.has_drive_data = True
            return True

        m2 = re.match(r"^ATA Error Count:\s*(\d+)", t)
        if m2:
            self.doc.setdefault("ata_smart_error_log", {}).setdefault("summary", {})["count"] = int(
                m2.group(1)
            )
            return True
        return False

    # -- banner

    def _banner(self, m: re.Match[str]) -> None:
        self.banner_seen = True
        info: Dict[str, Any] = {"version": list(_banner_tuple(m))[:2]}
        if m.group("pre"):
            info["pre_release"] = True
        rest = m.group("rest")
        rev = _BANNER_REVISION.search(rest)
        if rev:
            info["svn_revision"] = rev.group(1)
        platform = _BANNER_PLATFORM.search(rest)
        if platform:
            # Windows builds say "x86_64-w64-mingw32-w10-22H2", macOS "i386-apple-darwin8.11.1".
            info["platform_info"] = platform.group(1)
        build = _BANNER_BUILD.search(rest)
        if build:
            info["build_info"] = f"({build.group(1)})"
        if m.group("release") is not None:
            info["release"] = int(m.group("release"))
        # update, not replace: a warning about an earlier line may already be there
        self.doc["smartctl"] = {**info, **self.doc.get("smartctl", {})}

    # -- information section and health lines

    def _key_value(self, line: _Line, key: str, value: str) -> None:
        key = key.rstrip()
        tables = {"NVMe": (_NVME_INFO,), "SCSI": (_SCSI_INFO,), "ATA": (_ATA_INFO,)}.get(
            self.protocol or "", (_ATA_INFO, _SCSI_INFO)
        )
        if self.protocol == "NVMe":
            if key in _NVME_HEALTH:
                self._nvme_health(line, key, value)
                return
            m = re.match(r"^Temperature Sensor (\d+)$", key)
            if m:
                n = _first_int(value)
                if n is not None:
                    self.nvme_sensors.append(n)
                return
            m = re.match(r"^Namespace (\d+) (Size/Capacity|Utilization|Formatted LBA Size)$", key)
            if m:
                self._nvme_namespace(line, int(m.group(1)), m.group(2), value)
                return
        for table in tables:
            setter = table.get(key)
            if setter is not None:
                setter(self.doc, value, line)
                if key in ("Device Model", "Model Number", "Product", "Serial Number", "Serial number",
                           "Device", "Vendor"):
                    self.has_drive_data = True
                return

    def _nvme_health(self, line: _Line, key: str, value: str) -> None:
        json_key = _NVME_HEALTH[key]
        number = value.split("[", 1)[0].strip()
        if json_key == "critical_warning":
            m = re.match(r"^0x([0-9a-fA-F]+)$", number)
            if not m:
                raise line.fail("NVMe critical warning is not hex")
            self.nvme_log[json_key] = int(m.group(1), 16)
        elif json_key == "temperature":
            n = _first_int(number)
            if n is None:
                return  # "-" : the controller reports no composite temperature
            self.nvme_log[json_key] = n
        else:
            number = number.rstrip("%").strip()
            if _anonymised(number):
                return
            self.nvme_log[json_key] = _int(number, line.no, line.text)
        self.has_drive_data = True

    def _nvme_namespace(self, line: _Line, nsid: int, what: str, value: str) -> None:
        ns = self.nvme_namespaces.setdefault(nsid, {"id": nsid})
        if what == "Formatted LBA Size":
            n = _first_int(value)
            if n is not None:
                ns["formatted_lba_size"] = n
            return
        number = value.split("[", 1)[0].strip()
        if _anonymised(number):
            return
        size = _int(number, line.no, line.text)
        if what == "Size/Capacity":
            ns["size"] = {"bytes": size}
            ns["capacity"] = {"bytes": size}
        else:
            ns["utilization"] = {"bytes": size}

    def _sct(self, key: str, value: str) -> None:
        nums = [int(x) for x in re.findall(r"-?\d+", value)]
        key = " ".join(key.split())
        if key == "Current Temperature" and len(nums) == 1:
            self.sct["current"] = nums[0]
        elif key == "Power Cycle Min/Max Temperature" and len(nums) == 2:
            self.sct["power_cycle_min"], self.sct["power_cycle_max"] = nums
        elif key == "Lifetime Min/Max Temperature" and len(nums) == 2:
            self.sct["lifetime_min"], self.sct["lifetime_max"] = nums
        elif key == "Specified Max Operating Temperature" and len(nums) == 1:
            self.sct["op_limit_max"] = nums[0]
        elif key == "Min/Max Temperature Limit" and len(nums) == 2:
            self.sct["limit_min"], self.sct["limit_max"] = nums

    # -- tables

    def _attribute_table(self, i: int) -> int:
        header = self.lines[i]
        layout = _attribute_layout(header)
        i += 1
        while i < len(self.lines):
            line = self.lines[i]
            s = line.text.strip()
            if not s or s.startswith("|"):
                break
            self.attributes.append(_parse_attribute(line, layout))
            i += 1
        if not self.attributes:
            raise header.fail("ATA attribute table has no rows")
        self.has_drive_data = True
        return i

    def _device_statistics(self, i: int) -> int:
        i += 1
        page: Optional[Dict[str, Any]] = None
        while i < len(self.lines):
            line = self.lines[i]
            s = line.text.strip()
            if not s:
                # Some builds print a blank line between pages (linuxhw Lite-On L8H capture):
                # the table goes on when the next non-blank line is another devstat line.
                ahead = i + 1
                while ahead < len(self.lines) and not self.lines[ahead].text.strip():
                    ahead += 1
                following = self.lines[ahead].text.strip() if ahead < len(self.lines) else ""
                if _DEVSTAT_PAGE.match(following) or _DEVSTAT_ROW.match(following):
                    i = ahead
                    continue
                break
            if s.startswith("Page") or s.startswith("|"):
                i += 1
                continue
            m = _DEVSTAT_PAGE.match(s)
            if m:
                page = {"number": int(m.group("page"), 16), "name": m.group("name"), "table": []}
                if m.group("rev"):
                    page["revision"] = int(m.group("rev"))
                self.devstat_pages.append(page)
                i += 1
                continue
            m = _DEVSTAT_ROW.match(s)
            if m:
                number = int(m.group("page"), 16)
                if page is None or page["number"] != number:
                    page = {"number": number, "table": []}
                    self.devstat_pages.append(page)
                flags = m.group("flags")
                entry: Dict[str, Any] = {
                    "offset": int(m.group("offset"), 16),
                    "name": m.group("name"),
                    "size": int(m.group("size")),
                    "flags": {
                        "valid": m.group("value") != "-",
                        "normalized": flags[0] == "N",
                        "supports_dsn": flags[1] == "D",
                        "monitored_condition_met": flags[2] == "C",
                    },
                }
                if m.group("value") != "-":  # "-": the drive marked the statistic invalid
                    entry["value"] = int(m.group("value"))
                page["table"].append(entry)
                i += 1
                continue
            if re.match(r"^0x[0-9a-fA-F]{2}\s", s):
                raise line.fail("malformed Device Statistics row")
            break  # some other text: the table is over
        self.has_drive_data = True
        return i

    def _scsi_error_counter_log(self, i: int) -> int:
        i += 1
        while i < len(self.lines):
            line = self.lines[i]
            s = line.text.strip()
            if not s:
                if self.scsi_errors:
                    break
                i += 1
                continue
            m = _SCSI_ERROR_ROW.match(s)
            if m:
                self.scsi_errors[m.group("op")] = {
                    "errors_corrected_by_eccfast": int(m.group("fast")),
                    "errors_corrected_by_eccdelayed": int(m.group("delayed")),
                    "errors_corrected_by_rereads_rewrites": int(m.group("rereads")),
                    "total_errors_corrected": int(m.group("corrected")),
                    "correction_algorithm_invocations": int(m.group("invocations")),
                    "gigabytes_processed": m.group("gb").replace(",", "."),
                    "total_uncorrected_errors": int(m.group("uncorrected")),
                }
            elif re.match(r"^(read|write|verify):", s):
                raise line.fail("malformed SCSI error counter row")
            i += 1
        self.has_drive_data = True
        return i

    # -- assembling the document

    def _finish(self) -> Dict[str, Any]:
        doc = self.doc
        if not self.banner_seen and not self.sections_seen and not self.has_drive_data:
            first = next((ln for ln in self.lines if ln.text.strip()), self.lines[0])
            if self.no_data_reason:
                raise _no_smart_data(f"{self.no_data_reason} (line {first.no})")
            raise first.fail("not smartctl output (no banner, no section header)")
        if not self.has_drive_data or (self.no_data_reason and not self._has_health()):
            reason = self.no_data_reason or "no drive identity or SMART values in the output"
            raise _no_smart_data(reason)

        protocol = self.protocol or "ATA"
        # device.type is the -d type smartctl opened the drive with. Text output names it only
        # in the "Device open changed type" line; otherwise it stays out, so the caller's own
        # -d type (megaraid,44, cciss,0, sat) is not overwritten by a guess from the protocol.
        doc["device"] = {**self.device_info, "protocol": protocol}
        if protocol == "SCSI" and "model_name" not in doc:
            # smartctl's JSON joins vendor and product into model_name for SCSI devices.
            model = " ".join(x for x in (doc.get("vendor"), doc.get("product")) if x)
            if model:
                doc["model_name"] = doc["scsi_model_name"] = model

        if self.attributes:
            table = {"table": self.attributes}
            if self.attributes_revision is not None:
                table = {"revision": self.attributes_revision, **table}
            doc["ata_smart_attributes"] = table
            self._ata_summary()
        if self.sct:
            doc["ata_sct_status"] = {"temperature": dict(self.sct)}
        if self.devstat_pages:
            doc["ata_device_statistics"] = {"pages": self.devstat_pages}
        if protocol == "ATA":
            self._ata_temperature()

        if self.nvme_log:
            if self.nvme_sensors:
                self.nvme_log["temperature_sensors"] = list(self.nvme_sensors)
            doc["nvme_smart_health_information_log"] = self.nvme_log
            if "temperature" in self.nvme_log:
                doc.setdefault("temperature", {})["current"] = self.nvme_log["temperature"]
            if "power_cycles" in self.nvme_log:
                doc["power_cycle_count"] = self.nvme_log["power_cycles"]
            if "power_on_hours" in self.nvme_log:
                doc["power_on_time"] = {"hours": self.nvme_log["power_on_hours"]}
            if "critical_warning" in self.nvme_log and "smart_status" in doc:
                doc["smart_status"]["nvme"] = {"value": self.nvme_log["critical_warning"]}
        if self.nvme_namespaces:
            doc["nvme_namespaces"] = [self.nvme_namespaces[k] for k in sorted(self.nvme_namespaces)]
            first = doc["nvme_namespaces"][0]
            # JSON's user_capacity for NVMe is namespace 1's size, its block size the LBA size.
            if "size" in first and "user_capacity" not in doc:
                doc["user_capacity"] = dict(first["size"])
            if "formatted_lba_size" in first:
                doc.setdefault("logical_block_size", first["formatted_lba_size"])

        if self.scsi_errors:
            doc["scsi_error_counter_log"] = self.scsi_errors

        capacity = doc.get("user_capacity")
        if capacity and doc.get("logical_block_size"):
            capacity["blocks"] = capacity["bytes"] // doc["logical_block_size"]
        return doc

    def _has_health(self) -> bool:
        # A temperature alone does not count: RAID virtual disks report "0 C".
        return any(k in self.doc for k in ("smart_status", "scsi_grown_defect_list")) or bool(
            self.attributes or self.nvme_log or self.scsi_errors or self.devstat_pages
        )

    def _attribute(self, *ids: int) -> Optional[Dict[str, Any]]:
        for wanted in ids:
            for attr in self.attributes:
                if attr["id"] == wanted:
                    return attr
        return None

    def _ata_summary(self) -> None:
        """Top-level power_on_time / power_cycle_count, as smartctl derives them for JSON."""
        poh = self._attribute(9)
        if poh is not None:
            hours_minutes = self._power_on(poh)
            if hours_minutes is not None:
                hours, minutes = hours_minutes
                self.doc["power_on_time"] = {"hours": hours}
                if minutes:
                    self.doc["power_on_time"]["minutes"] = minutes
        cycles = self._attribute(12)
        if cycles is not None and "value" in cycles["raw"] and "Cycle" in cycles["name"]:
            self.doc["power_cycle_count"] = cycles["raw"]["value"]

    @staticmethod
    def _power_on(attr: Dict[str, Any]) -> Optional[Tuple[int, int]]:
        raw = attr["raw"]["string"]
        m = _DURATION_RAW.match(raw)
        if m:
            return int(m.group(1)), int(m.group(2) or 0)
        value = attr["raw"].get("value")
        if value is None or _HEX_RAW.match(raw):
            return None
        name = attr["name"]
        # Attribute 9 counts minutes, half-minutes or seconds on some old drives; smartctl
        # names it accordingly (Power_On_Minutes, Power_On_Half_Minutes, Power_On_Seconds).
        if name == "Power_On_Minutes":
            return divmod(value, 60)
        if name == "Power_On_Half_Minutes":
            return divmod(value // 2, 60)
        if name == "Power_On_Seconds":
            return value // 3600, (value % 3600) // 60
        if name.startswith("Power_On_Hours"):
            return value, 0
        return None

    def _ata_temperature(self) -> None:
        """temperature.current for ATA: the temperature attribute (194, then 190, as smartctl's
        ata_return_temperature_value picks it), else SCT status, else Device Statistics.

        The attribute comes first because cheap SATA firmware (BIWIN, GS Nanotech in the
        corpus) answers SCT status with 0 Celsius while attribute 194 carries the reading.
        SCT still supplies the lifetime maximum and the operating limit."""
        temperature = self.doc.setdefault("temperature", {})
        for attr_id in (194, 190):
            attr = self._attribute(attr_id)
            if attr is None or "Temp" not in attr["name"]:
                continue
            value = attr["raw"].get("value")
            if value is not None and not _HEX_RAW.match(attr["raw"]["string"]) and 0 < value < 128:
                temperature["current"] = value
                break
        for key, value in self.sct.items():
            if key == "current" and ("current" in temperature or value <= 0):
                continue
            temperature.setdefault(key, value)
        if "current" not in temperature:
            for page in self.devstat_pages:
                for entry in page["table"]:
                    if entry["name"] == "Current Temperature" and entry.get("value", 0) > 0:
                        temperature["current"] = entry["value"]
        if not temperature:
            del self.doc["temperature"]
