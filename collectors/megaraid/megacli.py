"""MegaCli text (the fallback where storcli is not installed) into a :class:`ControllerReport`.

MegaCli prints ``Key : Value`` lines, a block per adapter, volume, drive or battery:

* ``-AdpAllInfo -aALL``: ``Adapter #0``, ``Product Name``, ``Serial No``, ``FW Version``,
  ``Memory Size``, and under "Default Settings" ``Cache When BBU Bad``;
* ``-LDInfo -Lall -aALL``: ``Adapter 0 -- Virtual Drive Information:``, then per volume
  ``Virtual Drive: 0 (Target Id: 0)`` (``Virtual Disk:`` in older releases), ``RAID Level``,
  ``State``, ``Default Cache Policy``, ``Current Cache Policy``, ``Disk Cache Policy`` and, while
  something runs, ``Ongoing Progresses:`` with ``Rebuild : Completed 4%, Taken 4 min.``;
  ``-LdPdInfo`` adds each volume's drives (``PD: 0 Information``) in the same text;
* ``-PDList -aALL``: per drive ``Enclosure Device ID``, ``Slot Number``, ``Device Id`` (the N of
  ``smartctl -d megaraid,N``), ``Firmware state``, ``Inquiry Data``, ``Media Type``;
* ``-AdpBbuCmd -aALL``: ``BBU status for Adapter: 0``, ``BatteryType``, ``Battery State`` (empty
  in MegaCli 8.0x), ``Learn Cycle Active``, ``Battery Replacement required``, ``Relative State of
  Charge``. With no battery it answers ``Get BBU Status Failed`` and ``Exit Code: 0x22``.

Lines the parser does not know are skipped (a shell prompt pasted above the output is common);
an ``Exit Code`` other than 0x00 is an error, except the no-battery answer.
"""

from __future__ import annotations

import re
from typing import Dict, Iterator, List, Optional, Tuple, Union

from collectors.controller_model import (
    Battery,
    Controller,
    ControllerReport,
    ParseError,
    PhysicalDrive,
    VirtualDisk,
)
from collectors.controller_text import (
    battery_state,
    celsius,
    clean,
    decode,
    percent_ratio,
    size_bytes,
    small_int,
    yes_no,
)
from collectors.megaraid import vocabulary as vocab

FAMILY = "megaraid"
_ADAPTER = re.compile(r"^(?:Adapter\s*#\s*|Adapter\s+|BBU status for Adapter:\s*)(\d{1,3})\b")
_VOLUME = re.compile(r"^Virtual (?:Drive|Disk)\s*:\s*(\d{1,4})\s*\(Target Id:\s*(\d{1,4})\)")
_PD_BLOCK = re.compile(r"^PD:\s*\d+\s+Information")
_EXIT = re.compile(r"^Exit Code:\s*0x([0-9A-Fa-f]{1,8})\s*$")
_PROGRESS = re.compile(r"^(Rebuild|Reconstruction|Background Initialization|Initialization|Check Consistency)\s*"
                       r":\s*Completed\s+(\d{1,3})%")
MAX_DEVICE_ID = 999


def _text(data: Union[bytes, str], what: str) -> List[str]:
    return decode(data, f"MegaCli {what}").splitlines()


def _pairs(lines: List[str]) -> Iterator[Tuple[int, str, str, str]]:
    """(line number, stripped line, key, value) for every line; key and value empty when the
    line has no colon."""
    for number, raw in enumerate(lines, start=1):
        line = raw.strip()
        key, sep, value = line.partition(":")
        yield number, line, (key.strip() if sep else ""), (value.strip() if sep else "")


def _exit_code(lines: List[str]) -> Optional[int]:
    for line in lines:
        match = _EXIT.match(line.strip())
        if match:
            return int(match.group(1), 16)
    return None


def _check_exit(lines: List[str], what: str) -> None:
    code = _exit_code(lines)
    if code not in (None, 0):
        detail = next((ln.strip() for ln in lines if "Failed" in ln or "error" in ln.lower()), "")
        raise ParseError(f"MegaCli {what}: exit code 0x{code:02X} {detail[:80]}".rstrip())


# --------------------------------------------------------------------------- -AdpAllInfo


def parse_adapter_info(data: Union[bytes, str]) -> ControllerReport:
    lines = _text(data, "-AdpAllInfo")
    _check_exit(lines, "-AdpAllInfo")
    adapters: Dict[str, Dict[str, str]] = {}
    current: Optional[Dict[str, str]] = None
    for _, line, key, value in _pairs(lines):
        match = _ADAPTER.match(line)
        if match:
            current = adapters.setdefault(match.group(1), {})
        elif current is not None and key and key not in current:
            current[key] = value  # first wins: "Alarm" is both a hardware item and a setting
    if not adapters:
        raise ParseError("MegaCli -AdpAllInfo: no 'Adapter #N' block")
    controllers = tuple(Controller(
        family=FAMILY, id=number, model=clean(fields.get("Product Name")), serial=clean(fields.get("Serial No")),
        firmware=clean(fields.get("FW Version")) or clean(fields.get("FW Package Build")),
        cache_bytes=size_bytes(fields.get("Memory Size")),
        cache_when_bad_battery=yes_no(fields.get("Cache When BBU Bad")),
    ) for number, fields in adapters.items())
    return ControllerReport(controllers=controllers)


# --------------------------------------------------------------------------- -LDInfo / -LdPdInfo


def parse_ldinfo(data: Union[bytes, str]) -> ControllerReport:
    """``-LDInfo -Lall -aALL`` or ``-LdPdInfo -aALL`` (whose drives come out too)."""
    lines = _text(data, "-LDInfo")
    _check_exit(lines, "-LDInfo")
    adapter = "0"
    volumes: List[VirtualDisk] = []
    drives: List[PhysicalDrive] = []
    block: Optional[Dict[str, str]] = None
    drive_block: Optional[Dict[str, str]] = None
    for _, line, key, value in _pairs(lines):
        adapter_match, volume_match, drive_match = _ADAPTER.match(line), _VOLUME.match(line), _PD_BLOCK.match(line)
        if adapter_match or volume_match or drive_match:  # a new block closes the drive block open
            _flush_drive(adapter, drive_block, drives, block)
            drive_block = None
        if adapter_match or volume_match:  # ... and a new adapter or volume the volume open
            _flush_volume(adapter, block, volumes)
            block = None
        if adapter_match:
            adapter = adapter_match.group(1)
        elif volume_match:
            block = {"_target": volume_match.group(2)}
        elif drive_match:
            drive_block = {}
        elif drive_block is not None and key:
            drive_block.setdefault(key, value)
        elif block is not None:
            progress = _PROGRESS.match(line)
            if progress:
                block["_progress"] = f"{progress.group(1)}:{progress.group(2)}"
            elif key:
                block.setdefault(key, value)
    _flush_drive(adapter, drive_block, drives, block)
    _flush_volume(adapter, block, volumes)
    if not volumes:
        raise ParseError("MegaCli -LDInfo: no 'Virtual Drive: N (Target Id: N)' block")
    return ControllerReport(volumes=tuple(volumes), drives=tuple(drives))


def _flush_volume(adapter: str, block: Optional[Dict[str, str]], volumes: List[VirtualDisk]) -> None:
    if block is None:
        return
    state_raw = clean(block.get("State")) or ""
    state = vocab.state(vocab.VOLUME_STATES, state_raw)
    progress = None
    operation, _, percent = block.get("_progress", "").partition(":")
    if operation:
        progress = percent_ratio(percent)
        if operation in ("Rebuild", "Reconstruction") and state in ("degraded", "partially-degraded", "optimal"):
            state = "rebuilding" if operation == "Rebuild" else state
        elif operation in ("Background Initialization", "Initialization") and state == "optimal":
            state = "initializing"
    span = small_int(block.get("Span Depth"), 100)
    volumes.append(VirtualDisk(
        controller=adapter, id=block["_target"], name=clean(block.get("Name")),
        raid_level=vocab.spanned(vocab.raid_level(block.get("RAID Level")), span),
        state=state, state_raw=state_raw, progress=progress,
        size_bytes=size_bytes(block.get("Size")),
        current_cache=vocab.spelled_policy(block.get("Current Cache Policy")),
        default_cache=vocab.spelled_policy(block.get("Default Cache Policy")),
        disk_cache=vocab.disk_cache(block.get("Disk Cache Policy")),
        members=tuple(block.get("_members", "").split()),
    ))


def _flush_drive(adapter: str, fields: Optional[Dict[str, str]], drives: List[PhysicalDrive],
                 volume_block: Optional[Dict[str, str]]) -> None:
    """A ``PD: N Information`` block of -LdPdInfo: a drive, and a member of the volume above."""
    if not fields:
        return
    drive = _drive(adapter, fields)
    if drive is not None:
        drives.append(drive)
        if volume_block is not None:
            volume_block["_members"] = volume_block.get("_members", "") + drive.slot + " "


# --------------------------------------------------------------------------- -PDList


def parse_pdlist(data: Union[bytes, str]) -> ControllerReport:
    lines = _text(data, "-PDList")
    _check_exit(lines, "-PDList")
    adapter = "0"
    drives: List[PhysicalDrive] = []
    fields: Optional[Dict[str, str]] = None
    for _, line, key, value in _pairs(lines):
        match = _ADAPTER.match(line)
        if match or key == "Enclosure Device ID":
            if fields:
                drive = _drive(adapter, fields)
                drives.extend([drive] if drive else [])
            fields = None
        if match:
            adapter = match.group(1)
        elif key == "Enclosure Device ID":
            fields = {key: value}
        elif fields is not None and key:
            fields.setdefault(key, value)
    if fields:
        drive = _drive(adapter, fields)
        drives.extend([drive] if drive else [])
    if not drives:
        raise ParseError("MegaCli -PDList: no 'Enclosure Device ID' block")
    return ControllerReport(drives=tuple(drives))


def _drive(adapter: str, fields: Dict[str, str]) -> Optional[PhysicalDrive]:
    slot = small_int(fields.get("Slot Number"), 10000)
    if slot is None:
        return None
    enclosure = small_int(fields.get("Enclosure Device ID"), 10000)
    state_raw = clean(fields.get("Firmware state")) or ""
    pd_type = clean(fields.get("PD Type"))
    model, serial, firmware = _inquiry(fields.get("Inquiry Data", ""), pd_type)
    media = {"Hard Disk Device": "hdd", "Solid State Device": "ssd"}.get(clean(fields.get("Media Type")) or "")
    return PhysicalDrive(
        controller=adapter, slot=f"{enclosure}:{slot}" if enclosure is not None else str(slot),
        device_id=small_int(fields.get("Device Id"), MAX_DEVICE_ID + 1), model=model, serial=serial,
        firmware=clean(fields.get("Device Firmware Level")) or firmware, media=media, interface=pd_type,
        state=vocab.state(vocab.DRIVE_STATES, state_raw), state_raw=state_raw,
        size_bytes=size_bytes(fields.get("Raw Size")), write_cache=yes_no(fields.get("Drive's write cache")),
        temperature_celsius=celsius(fields.get("Drive Temperature")),
    )


def _inquiry(raw: str, pd_type: Optional[str]) -> Tuple[Optional[str], Optional[str], Optional[str]]:
    """Model, serial and firmware from ``Inquiry Data``. For a SAS drive, and for a SATA drive
    whose inquiry the controller translated (vendor ``ATA``), it is the SCSI standard INQUIRY
    layout (SPC: vendor 8 characters, product 16, revision 4) with the unit serial number after.
    Later MegaCli prints a SATA drive's ATA IDENTIFY strings instead (serial 20, model 40,
    firmware 8), often with the padding squeezed: not a layout one can cut safely, so withheld."""
    if len(raw) < 29 or not raw.isascii():
        return None, None, None
    vendor, product, revision, rest = raw[:8], raw[8:24], raw[24:28], raw[28:]
    if not (pd_type == "SAS" or vendor == "ATA     "):
        return None, None, None
    if not vendor.strip() or not product.strip():
        return None, None, None
    return clean(product), clean(rest), clean(revision)


# --------------------------------------------------------------------------- -AdpBbuCmd


def parse_bbu(data: Union[bytes, str]) -> ControllerReport:
    lines = _text(data, "-AdpBbuCmd")
    code = _exit_code(lines)
    absent = re.search(r"^Adapter\s*(\d{1,3}): Get BBU Status Failed", "\n".join(lines), re.MULTILINE)
    if absent and any("not present" in ln for ln in lines):
        return ControllerReport(batteries=(Battery(controller=absent.group(1), kind="unknown", present=False,
                                                   state="missing", state_raw="not present"),))
    if code not in (None, 0):
        raise ParseError(f"MegaCli -AdpBbuCmd: exit code 0x{code:02X}")
    batteries: List[Battery] = []
    adapter: Optional[str] = None
    fields: Dict[str, str] = {}
    for _, line, key, value in _pairs(lines):
        match = _ADAPTER.match(line)
        if match and line.startswith("BBU status"):
            if adapter is not None:
                batteries.append(_battery(adapter, fields))
            adapter, fields = match.group(1), {}
        elif adapter is not None and key:
            fields.setdefault(key.lower(), value)
    if adapter is None:
        raise ParseError("MegaCli -AdpBbuCmd: no 'BBU status for Adapter' block")
    batteries.append(_battery(adapter, fields))
    return ControllerReport(batteries=tuple(batteries))


def _battery(adapter: str, fields: Dict[str, str]) -> Battery:
    kind_raw = clean(fields.get("batterytype")) or ""
    kind = "cachevault" if re.match(r"^(CVPM|TMM|SuperCap)", kind_raw, re.IGNORECASE) else \
        ("bbu" if "BBU" in kind_raw.upper() else "unknown")
    state_raw = clean(fields.get("battery state")) or ""
    flags = {name: yes_no(fields.get(name)) for name in (
        "battery replacement required", "pack is about to fail & should be replaced", "battery pack missing",
        "learn cycle active", "issohgood")}
    charging = (clean(fields.get("charging status")) or "").lower()
    replacement = flags["battery replacement required"]
    if flags["pack is about to fail & should be replaced"]:
        replacement = True
    return Battery(
        controller=adapter, kind=kind, model=kind_raw or None,
        state=_bbu_state(state_raw, replacement, flags, charging), state_raw=state_raw,
        charge_ratio=percent_ratio(fields.get("relative state of charge")),
        temperature_celsius=celsius(fields.get("temperature")),
        learn_active=flags["learn cycle active"], replacement_required=replacement,
    )


def _bbu_state(raw: str, replacement: Optional[bool], flags: Dict[str, Optional[bool]], charging: str) -> str:
    """The printed state when there is one; MegaCli 8.0x prints ``Battery state:`` empty, and
    then its flags say it: replacement required (failed), pack missing, a learn cycle, charging,
    or a state of health that is not good (degraded)."""
    if raw.strip():
        return battery_state(raw)
    if replacement:
        return "failed"
    if flags["battery pack missing"]:
        return "missing"
    if flags["learn cycle active"]:
        return "learning"
    if charging == "charging":
        return "charging"
    if flags["issohgood"] is False:
        return "degraded"
    return "unknown"

