"""HPE Smart Array: ``ssacli ctrl all show config detail`` (and the same from hpssacli and
hpacucli, its earlier names) into a :class:`ControllerReport`.

The tool prints one block per controller, opened by a line at column 0
(``Smart Array P410i in Slot 0 (Embedded)``), then indented ``Key: Value`` lines: the
controller's own (3 spaces), each ``Array: A`` (its logical drives ``Logical Drive: 1`` and its
``physicaldrive 1I:1:1`` blocks, 6 spaces, their fields 9). The shorter ``ctrl all show config``
prints one line per item instead (``logicaldrive 1 (136.7 GB, RAID 1, OK)``,
``physicaldrive 1I:1:1 (port 1I:box 1:bay 1, SAS, 146 GB, OK)``) and ``ctrl all show status``
only the controller's ``Controller Status``, ``Cache Status`` and ``Battery/Capacitor Status``.
All three are read here.

The write cache, as the Smart Array guides describe it: a logical drive uses the controller's
cache when its ``Array Accelerator`` (``Caching`` on later controllers) is enabled and the
controller gives writes a share of the cache (``Accelerator Ratio: 25% Read / 75% Write``). That
is the volume's configured (default) policy. The cache works only while ``Cache Status`` is
``OK``: with the battery or capacitor failed, missing or charging the controller reports
``Temporarily Disabled`` (or ``Permanently Disabled``) and every volume runs write-through (the
current policy), unless ``No-Battery Write Cache: Enabled`` keeps write-back with no protection.
``Drive Write Cache`` is the drives' own volatile caches, for every drive on the controller.

Logical drive sizes are binary (``136.7 GB`` for a mirror of two 146.8e9-byte drives), physical
drive sizes nominal decimal. ``Interim Recovery Mode`` is a degraded volume, ``Recovering, 26%
complete`` a rebuild.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Dict, List, Optional, Tuple, Union

from collectors.controller_model import (
    ALWAYS_WRITE_BACK,
    DISK_CACHE_DISABLED,
    DISK_CACHE_ENABLED,
    NO_READ_CACHE,
    READ_CACHE,
    WRITE_BACK,
    WRITE_THROUGH,
    Battery,
    CachePolicy,
    Controller,
    ControllerReport,
    ParseError,
    PhysicalDrive,
    VirtualDisk,
)
from collectors.controller_text import (
    battery_state,
    by_needle,
    celsius,
    clean,
    controller_status,
    decode,
    known_raid_level,
    percent_ratio,
    size_bytes,
    small_int,
    yes_no,
)

FAMILY = "ssacli"
_CONTROLLER = re.compile(r"^(?P<model>\S.*?) in Slot (?P<slot>[0-9A-Za-z]{1,8})\b(?P<rest>.*)$")
_SERIAL_IN_HEADER = re.compile(r"\(sn:\s*([^)]*?)\s*\)")
_ARRAY = re.compile(r"^\s+(?:Array:\s*|array\s+)([A-Z]{1,3})\b")
_LD_DETAIL = re.compile(r"^\s+Logical Drive:\s*(\d{1,4})\s*$")
_LD_SHORT = re.compile(r"^\s+logicaldrive\s+(\d{1,4})\s+\((.*)\)\s*$")
_PD_DETAIL = re.compile(r"^\s+physicaldrive\s+(\S+)\s*$")
_PD_SHORT = re.compile(r"^\s+physicaldrive\s+(\S+)\s+\((.*)\)\s*$")
_KEY_VALUE = re.compile(r"^\s+([A-Za-z][^:]{0,60}?):\s*(.*?)\s*$")
_RATIO = re.compile(r"(\d{1,3})%\s*Read\s*/\s*(\d{1,3})%\s*Write", re.IGNORECASE)


@dataclass
class _Block:
    kind: str  # controller, array, ld, pd
    key: str
    array: Optional[str] = None
    fields: Dict[str, str] = field(default_factory=dict)
    short: Optional[str] = None  # the parenthesised summary of a one-line item


@dataclass
class _ControllerText:
    model: str
    slot: str
    serial: Optional[str]
    blocks: List[_Block] = field(default_factory=list)


def parse_ssacli(data: Union[bytes, str]) -> ControllerReport:
    """Parse ``ctrl all show config detail``, ``show config`` or ``show status``."""
    data = decode(data, "ssacli")
    error = re.search(r"^Error:\s*(.*)$", data, re.MULTILINE)
    if error and "No controllers detected" in error.group(1):
        return ControllerReport(notes=("ssacli: no controllers detected",))
    if error:
        raise ParseError(f"ssacli: {error.group(1)[:100]}")
    controllers = _split(data.splitlines())
    if not controllers:
        raise ParseError("ssacli: no '... in Slot N' controller line")
    report = ControllerReport()
    for text in controllers:
        report = report.merged(_controller_report(text))
    return report


def _split(lines: List[str]) -> List[_ControllerText]:
    out: List[_ControllerText] = []
    current: Optional[_ControllerText] = None
    array: Optional[str] = None
    for line in lines:
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        header = _CONTROLLER.match(line)
        if header:
            serial = _SERIAL_IN_HEADER.search(header.group("rest"))
            current = _ControllerText(model=header.group("model").strip(), slot=header.group("slot"),
                                      serial=clean(serial.group(1)) if serial else None)
            current.blocks.append(_Block("controller", header.group("slot")))
            out.append(current)
            array = None
            continue
        if current is None or not line.startswith(" "):
            continue  # a banner before the first controller (FIRMWARE UPGRADE REQUIRED...)
        array = _line(current, line, array)
    return out


def _line(current: _ControllerText, line: str, array: Optional[str]) -> Optional[str]:
    """File one indented line into the controller's blocks; returns the array now open."""
    match = _ARRAY.match(line)
    if match:
        current.blocks.append(_Block("array", match.group(1), array=match.group(1)))
        return match.group(1)
    if line.strip() in ("Unassigned", "unassigned", "HBA Drives"):
        current.blocks.append(_Block("array", line.strip(), array=None))
        return None
    for pattern, kind in ((_LD_SHORT, "ld"), (_PD_SHORT, "pd")):
        match = pattern.match(line)
        if match:
            if kind == "pd" and current.blocks[-1].kind == "ld" and current.blocks[-1].short is None:
                return array  # a mirror group's member line inside a logical drive's detail
            current.blocks.append(_Block(kind, match.group(1), array=array, short=match.group(2)))
            return array
    for pattern, kind in ((_LD_DETAIL, "ld"), (_PD_DETAIL, "pd")):
        match = pattern.match(line)
        if match:
            current.blocks.append(_Block(kind, match.group(1), array=array))
            return array
    match = _KEY_VALUE.match(line)
    if match:
        current.blocks[-1].fields.setdefault(match.group(1).strip(), match.group(2))
    return array


# --------------------------------------------------------------------------- records


def _controller_report(text: _ControllerText) -> ControllerReport:
    fields = text.blocks[0].fields
    controller = Controller(
        family=FAMILY, id=text.slot, model=text.model,
        serial=clean(fields.get("Serial Number")) or text.serial, firmware=clean(fields.get("Firmware Version")),
        status=controller_status(fields.get("Controller Status"), ("ok",)), status_raw=clean(fields.get("Controller Status")) or "",
        cache_bytes=size_bytes(fields.get("Total Cache Size")),
        cache_when_bad_battery=yes_no(fields.get("No-Battery Write Cache")),
        disk_cache={True: DISK_CACHE_ENABLED, False: DISK_CACHE_DISABLED}.get(yes_no(fields.get("Drive Write Cache"))),
    )
    drives = tuple(d for d in (_drive(text.slot, b) for b in text.blocks if b.kind == "pd") if d is not None)
    volumes = tuple(v for v in (_volume(controller, fields, b, drives) for b in text.blocks if b.kind == "ld")
                    if v is not None)
    batteries = tuple(b for b in (_battery(text.slot, fields),) if b is not None)
    return ControllerReport(controllers=(controller,), volumes=volumes, drives=drives, batteries=batteries)


def _volume(controller: Controller, ctrl: Dict[str, str], block: _Block,
            drives: Tuple[PhysicalDrive, ...]) -> Optional[VirtualDisk]:
    fields = block.fields
    size_raw, level_raw, status_raw = fields.get("Size"), fields.get("Fault Tolerance"), clean(fields.get("Status"))
    if block.short is not None:
        parts = [p.strip() for p in block.short.split(",")]
        if len(parts) < 3:
            return None
        size_raw, level_raw, status_raw = parts[0], parts[1], ", ".join(parts[2:])
    state, progress = _volume_state(status_raw or "")
    default = _configured_policy(ctrl, fields)
    return VirtualDisk(
        controller=controller.id, id=block.key, name=clean(fields.get("Logical Drive Label")),
        raid_level=_raid_level(level_raw), state=state, state_raw=status_raw or "", progress=progress,
        size_bytes=size_bytes(size_raw), default_cache=default, current_cache=_current_policy(ctrl, default),
        disk_cache=controller.disk_cache, os_device=clean(fields.get("Disk Name")),
        members=tuple(d.slot for d in drives if d.drive_group == block.array and block.array is not None),
        drive_group=block.array,
    )


def _volume_state(raw: str) -> Tuple[str, Optional[float]]:
    word = raw.lower()
    progress = re.search(r"(\d{1,3})%\s*complete", word)
    ratio = percent_ratio(progress.group(1)) if progress else None
    if word == "ok":
        return "optimal", None
    if word.startswith("recovering"):
        return "rebuilding", ratio
    if word.startswith(("interim recovery", "ready for rebuild")):
        return "degraded", None
    if word.startswith("failed"):
        return "failed", None
    if "initializ" in word:
        return "initializing", ratio
    return "unknown", ratio


def _raid_level(raw) -> Optional[str]:
    match = re.match(r"^RAID\s*(\d{1,2})(\+0)?(\s*\(ADM\))?(?!\d)", (raw or "").strip())
    if match is None:
        return None
    return known_raid_level(f"RAID{match.group(1)}{'0' if match.group(2) else ''}{'-ADM' if match.group(3) else ''}")


def _configured_policy(ctrl: Dict[str, str], fields: Dict[str, str]) -> Optional[CachePolicy]:
    accelerator = fields.get("Array Accelerator", fields.get("Caching"))
    enabled = yes_no(accelerator)
    if enabled is None:
        return None
    ratio = _RATIO.search(ctrl.get("Accelerator Ratio", ctrl.get("Cache Ratio", "")))
    read_share, write_share = (int(ratio.group(1)), int(ratio.group(2))) if ratio else (None, None)
    writes = enabled and write_share != 0
    no_battery = yes_no(ctrl.get("No-Battery Write Cache"))
    write = WRITE_THROUGH if not writes else (ALWAYS_WRITE_BACK if no_battery else WRITE_BACK)
    return CachePolicy(write=write, read=READ_CACHE if enabled and read_share != 0 else NO_READ_CACHE,
                       cache_when_bad_battery=None if write == WRITE_THROUGH else bool(no_battery),
                       raw=f"Array Accelerator: {accelerator}")


def _current_policy(ctrl: Dict[str, str], default: Optional[CachePolicy]) -> Optional[CachePolicy]:
    """The configured policy while the cache works; write-through while ``Cache Status`` says
    the cache is disabled (No-Battery Write Cache keeps write-back on)."""
    status = (clean(ctrl.get("Cache Status")) or "").lower()
    if default is None or not status:
        return None
    if status == "ok":
        return replace(default, raw=f"{default.raw}; Cache Status: OK")
    if "disabled" in status or status == "not configured":
        if default.write == ALWAYS_WRITE_BACK:
            return replace(default, raw=f"{default.raw}; Cache Status: {ctrl.get('Cache Status')}")
        return CachePolicy(write=WRITE_THROUGH, read=None, raw=f"Cache Status: {clean(ctrl.get('Cache Status'))}")
    return None


def _drive(controller: str, block: _Block) -> Optional[PhysicalDrive]:
    fields = block.fields
    interface, size_raw, status = fields.get("Interface Type"), fields.get("Size"), clean(fields.get("Status"))
    if block.short is not None:
        parts = [p.strip() for p in block.short.split(",")]
        if len(parts) < 4:
            return None
        interface, size_raw, status = parts[1], parts[2], ", ".join(parts[3:])
    interface = clean(interface) or ""
    media = "ssd" if "solid state" in interface.lower() else ("hdd" if small_int(fields.get("Rotational Speed")) else None)
    state = _drive_state(status or "", clean(fields.get("Drive Type")) or "")
    return PhysicalDrive(
        controller=controller, slot=block.key, model=clean(fields.get("Model")), serial=clean(fields.get("Serial Number")),
        firmware=clean(fields.get("Firmware Revision")), media=media,
        interface=re.sub(r"(?i)^solid state\s+", "", interface) or None, state=state, state_raw=status or "",
        size_bytes=size_bytes(size_raw, decimal=True),
        temperature_celsius=celsius(fields.get("Current Temperature (C)")), drive_group=block.array,
    )


def _drive_state(status: str, drive_type: str) -> str:
    word = status.lower()
    if word == "ok":
        return {"spare drive": "hotspare", "unassigned drive": "unconfigured-good"}.get(drive_type.lower(), "online")
    return by_needle(word, (("rebuilding", "rebuilding"), ("predictive failure", "predictive-failure"),
                            ("failed", "failed"), ("spare", "hotspare")))


def _battery(controller: str, fields: Dict[str, str]) -> Optional[Battery]:
    status = clean(fields.get("Battery/Capacitor Status"))
    count = small_int(fields.get("Battery/Capacitor Count"), 100)
    source = (clean(fields.get("Cache Backup Power Source")) or "").lower()
    kind = {"batteries": "bbu", "capacitors": "fbwc"}.get(source, "unknown")
    if count == 0:
        return Battery(controller=controller, kind=kind, present=False, state="missing", state_raw="count 0")
    if status is None:
        return None
    word = status.lower()
    return Battery(controller=controller, kind=kind, state=battery_state(status), state_raw=status,
                   replacement_required=True if "replace" in word else (False if word == "ok" else None))
