"""Adaptec / Microsemi / Microchip ``arcconf GETCONFIG <n> AL`` (or its ``AD``, ``LD``, ``PD``
parts) and ``arcconf GETSTATUS <n>`` into a :class:`ControllerReport`.

GETCONFIG prints sections under dashed rules (``Controller information``, ``Logical device
information``, ``Physical Device information``), sub-sections under shorter indented rules
(``Controller Battery Information``, ``Controller ZMM Information``), and ``Key : Value`` lines.
Series 7/8 controllers print a ``Controller Cache Backup Unit Information`` block (supercap,
learn status) instead; no public capture of a size that could be copied here was found, so that
block is not read yet and such a controller reports no battery record (absent, not "missing"). Releases differ in wording: ``Logical drive
number 1`` / ``Logical device number 0`` / ``Logical Device number 0``, ``Status of logical
device`` / ``Status of Logical Device``, ``Okay`` / ``Optimal``. The output ends with ``Command
completed successfully.``; without it the output is taken as truncated.

The write cache of a logical device, in the ARCCONF guide's terms (``SETCACHE ... LOGICALDRIVE
<n> wt | wb | wbb``): the ``Write-cache setting`` is the configured policy, ``wbb`` printed as
``Enabled (write-back) when protected by battery`` (``On when protected by battery/ZMM``):
write-back while the battery or ZMM flash module is good, write-through otherwise; ``wb``
printed as ``Enabled (write-back)`` (or ``Enabled``): write-back whatever protects it. The
``Write-cache mode`` (``Write-cache status: On/Off`` in later releases) is what runs now. The
drives' own caches are each drive's ``Write Cache`` line.

Sizes are binary megabytes (``140014 MB`` for a 146.8e9-byte drive). GETSTATUS reports running
tasks (``Current operation : Rebuild``, ``Percentage complete : 1``); :func:`with_tasks` puts
them on the volumes.
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
    celsius,
    clean,
    controller_status,
    decode,
    first,
    known_raid_level,
    on_off,
    percent_ratio,
    size_bytes,
    small_int,
    yes_no,
)

FAMILY = "arcconf"
_RULE = re.compile(r"^\s*-{20,}\s*$")
_KEY_VALUE = re.compile(r"^(\s*)(\S.*?)\s*:(?:\s+(.*?))?\s*$")
_LOGICAL = re.compile(r"^Logical (?:device|Device|drive) number\s+(\d{1,4})\s*$")
_DEVICE = re.compile(r"^\s+Device #(\d{1,4})\s*$")
_DONE = "Command completed successfully."

_VOLUME_STATES = {"optimal": "optimal", "okay": "optimal", "degraded": "degraded", "critical": "degraded",
                  "suboptimal": "partially-degraded", "rebuilding": "rebuilding", "impacted": "initializing",
                  "failed": "failed", "offline": "offline"}
_DRIVE_STATES = {"online": "online", "rebuilding": "rebuilding", "failed": "failed", "ready": "unconfigured-good",
                 "hot spare": "hotspare", "dedicated hot-spare": "hotspare", "global hot-spare": "hotspare",
                 "raw": "jbod", "jbod": "jbod", "missing": "missing", "predictive failure": "predictive-failure"}


@dataclass
class _Block:
    kind: str  # controller, logical, device
    key: str
    section: str = ""
    fields: Dict[str, str] = field(default_factory=dict)
    segments: List[str] = field(default_factory=list)


@dataclass(frozen=True)
class Task:
    """A background task GETSTATUS reports on a logical device."""

    volume: str
    operation: str  # Rebuild, Build/Verify, Verify, Clear...
    status: str
    progress: Optional[float]


def _lines(data: Union[bytes, str], what: str) -> Tuple[List[str], Tuple[str, ...]]:
    """The lines, and a note when the closing line is missing: arcconf ends every answer with
    it, so its absence means the output was cut (one public capture was pasted without it). What
    came before is kept: each record in it is whole."""
    lines = decode(data, f"arcconf {what}").splitlines()
    failure = next((ln.strip() for ln in lines if re.search(r"command aborted|invalid controller", ln, re.I)), None)
    if failure:
        raise ParseError(f"arcconf {what}: {failure[:100]}")
    if any(line.strip() == _DONE for line in lines):
        return lines, ()
    return lines, (f"arcconf {what}: no {_DONE!r} at the end: the output may be truncated",)


def controllers_found(data: Union[bytes, str]) -> Optional[int]:
    """The ``Controllers found: N`` line every arcconf answer starts with; None without it."""
    text = data.decode("utf-8", errors="replace") if isinstance(data, bytes) else data
    match = re.search(r"^Controllers found:\s*(\d{1,3})\s*$", text, re.MULTILINE)
    return int(match.group(1)) if match else None


def parse_getconfig(data: Union[bytes, str], controller: str = "1") -> ControllerReport:
    """``arcconf GETCONFIG <controller> [AL|AD|LD|PD]``; ``controller`` is the number the
    command was given (the output does not repeat it)."""
    lines, notes = _lines(data, "GETCONFIG")
    found = next((small_int(ln.split(":", 1)[1]) for ln in lines if ln.startswith("Controllers found:")), None)
    if found == 0:
        return ControllerReport(notes=("arcconf: no controllers found",) + notes)
    blocks = _blocks(lines)
    if not blocks:
        raise ParseError("arcconf GETCONFIG: no controller, logical device or physical device section")
    drives = tuple(d for d in (_drive(controller, b) for b in blocks if b.kind == "device") if d is not None)
    volumes = tuple(v for v in (_volume(controller, b, drives) for b in blocks if b.kind == "logical") if v)
    ctrl = next((b for b in blocks if b.kind == "controller"), None)
    if ctrl is None:
        return ControllerReport(volumes=volumes, drives=drives, notes=notes)
    return ControllerReport(controllers=(_controller(controller, ctrl),), volumes=volumes, drives=drives,
                            batteries=_batteries(controller, ctrl), notes=notes)


def _blocks(lines: List[str]) -> List[_Block]:
    blocks: List[_Block] = []
    section, subsection = "", ""
    for index, line in enumerate(lines):
        if not line.strip() or _RULE.match(line):
            continue
        # A title sits between two rules and is no "Key : Value" (a one-line sub-section is).
        ruled = (index > 0 and _RULE.match(lines[index - 1]) and index + 1 < len(lines)
                 and _RULE.match(lines[index + 1]) and ":" not in line)
        logical, device = _LOGICAL.match(line), _DEVICE.match(line)
        if ruled and not line.startswith(" "):
            section, subsection = line.strip(), ""
            if section == "Controller information":
                blocks.append(_Block("controller", "", section))
        elif ruled:
            subsection = line.strip()
        elif logical:
            blocks.append(_Block("logical", logical.group(1), section))
        elif device:
            blocks.append(_Block("device", device.group(1), section))
        elif blocks:
            _field(blocks[-1], subsection, line)
    return blocks


def _field(block: _Block, subsection: str, line: str) -> None:
    match = _KEY_VALUE.match(line)
    if match is None:
        if block.kind == "device" and line.strip().startswith("Device is "):
            block.fields.setdefault("_is", line.strip()[len("Device is "):])
        return
    key, value = match.group(2).strip(), (match.group(3) or "").strip()
    if block.kind == "logical" and re.match(r"^(Group \d+, )?Segment \d+$", key):
        block.segments.append(value)
        return
    if block.kind == "logical" and key == "Drive(s) (Channel,Device)":
        block.segments.extend(f"({pair})" for pair in value.split())  # older releases list them so
        return
    name = f"{subsection}/{key}" if block.kind == "controller" and subsection else key
    block.fields.setdefault(name, value)


# --------------------------------------------------------------------------- records


def _controller(controller: str, block: _Block) -> Controller:
    fields = block.fields
    status_raw = clean(fields.get("Controller Status")) or ""
    return Controller(
        family=FAMILY, id=controller, model=clean(fields.get("Controller Model")),
        serial=clean(fields.get("Controller Serial Number")),
        firmware=clean(fields.get("Controller Version Information/Firmware")),
        status=controller_status(status_raw, ("optimal", "okay")),
        status_raw=status_raw,
        cache_bytes=size_bytes(fields.get("Installed memory") or fields.get("Cache Properties/Cache memory")),
    )


def _batteries(controller: str, block: _Block) -> Tuple[Battery, ...]:
    fields, out = block.fields, []
    battery = clean(fields.get("Controller Battery Information/Status"))
    if battery is not None:
        word = battery.lower()
        missing = "not installed" in word or "not present" in word
        out.append(Battery(controller=controller, kind="bbu", present=not missing, state_raw=battery,
                           state="missing" if missing else battery_state(word),
                           charge_ratio=percent_ratio(fields.get("Controller Battery Information/Capacity remaining"))))
    zmm = clean(fields.get("Controller ZMM Information/Status"))
    if zmm is not None:
        missing = "not installed" in zmm.lower()
        out.append(Battery(controller=controller, kind="zmm", present=not missing, state_raw=zmm,
                           state="missing" if missing else battery_state(zmm)))
    return tuple(out)


def _volume(controller: str, block: _Block, drives: Tuple[PhysicalDrive, ...]) -> Optional[VirtualDisk]:
    fields = block.fields
    status_raw = clean(first(fields, "Status of logical device", "Status of Logical Device", "Status of logical drive"))
    word = (status_raw or "").lower()
    state = next((s for needle, s in _VOLUME_STATES.items() if word.startswith(needle)), "unknown")
    progress = re.search(r"(\d{1,3})\s*%", word)
    members = tuple(m for m in (_member(s, drives) for s in block.segments) if m is not None)
    if state in ("degraded", "partially-degraded") and any(d.state == "rebuilding" for d in drives if d.slot in members):
        state = "rebuilding"
    default = _setting(fields.get("Write-cache setting"))
    # The drives' own caches, from the members whose cache is known (a missing drive has none).
    member_caches = {d.write_cache for d in drives if d.slot in members and d.write_cache is not None}
    return VirtualDisk(
        controller=controller, id=block.key,
        name=clean(first(fields, "Logical device name", "Logical Device name", "Logical drive name")),
        raid_level=_raid_level(fields.get("RAID level")), state=state, state_raw=status_raw or "",
        progress=percent_ratio(progress.group(1)) if progress and state == "initializing" else None,
        size_bytes=size_bytes(fields.get("Size")), default_cache=default,
        current_cache=_running(first(fields, "Write-cache mode", "Write-cache status"), default,
                               first(fields, "Read-cache mode", "Read-cache status")),
        disk_cache={frozenset({True}): DISK_CACHE_ENABLED, frozenset({False}): DISK_CACHE_DISABLED}.get(
            frozenset(member_caches)),
        os_device=clean(fields.get("Disk Name")), members=members,
    )


def _raid_level(raw) -> Optional[str]:
    match = re.match(r"^(\d{1,2})(E|EE)?(?![\dA-Za-z])", (raw or "").strip())
    return known_raid_level(f"RAID{match.group(1)}{match.group(2) or ''}") if match else None


def _setting(raw) -> Optional[CachePolicy]:
    text = (clean(raw) or "").lower()
    if not text or "not supported" in text:
        return None
    if text.startswith(("disabled", "off")):
        return CachePolicy(write=WRITE_THROUGH, raw=clean(raw) or "")
    if text.startswith(("enabled", "on")):
        protected = "when protected" in text
        return CachePolicy(write=WRITE_BACK if protected else ALWAYS_WRITE_BACK,
                           cache_when_bad_battery=not protected, raw=clean(raw) or "")
    return None


def _running(mode, default: Optional[CachePolicy], read_mode) -> Optional[CachePolicy]:
    on = on_off(mode)
    if on is None:
        return None
    read = {True: READ_CACHE, False: NO_READ_CACHE}.get(on_off(read_mode))
    if not on:
        return CachePolicy(write=WRITE_THROUGH, read=read, raw=clean(mode) or "")
    write = default.write if default is not None and default.write != WRITE_THROUGH else WRITE_BACK
    return CachePolicy(write=write, read=read, cache_when_bad_battery=default.cache_when_bad_battery if default else None,
                       raw=clean(mode) or "")


def _member(segment: str, drives: Tuple[PhysicalDrive, ...]) -> Optional[str]:
    """A segment line names its drive as ``(0,3)`` (channel,device), ``(Controller:1,
    Enclosure:0,Slot:3)`` or ``(..., Enclosure:1, Slot:0)``, then its serial number."""
    match = re.search(r"\((\d{1,3}),(\d{1,4})\)", segment)
    if match:
        return f"{match.group(1)},{match.group(2)}"
    match = re.search(r"Enclosure:\s*(\d{1,4}),\s*Slot:\s*(\d{1,4})", segment)
    if match:
        location = f"Enclosure {match.group(1)}, Slot {match.group(2)}"
        found = next((d for d in drives if (d.location or "").startswith(location)), None)
        return found.slot if found else None
    return None


def _drive(controller: str, block: _Block) -> Optional[PhysicalDrive]:
    fields = block.fields
    if not fields.get("_is", "").startswith("a Hard drive"):
        return None  # enclosure services devices and the like
    channel = re.match(r"^(\d{1,3}),(\d{1,4})", fields.get("Reported Channel,Device(T:L)",
                                                             fields.get("Reported Channel,Device", "")))
    if channel is None:
        return None
    state_raw = clean(fields.get("State")) or ""
    word = state_raw.lower()
    vendor, model = clean(fields.get("Vendor")), clean(fields.get("Model"))
    if vendor and vendor.startswith("*"):
        vendor = None  # "*MISSING*": the drive is gone, there is no vendor
    speed = clean(fields.get("Transfer Speed")) or ""
    return PhysicalDrive(
        controller=controller, slot=f"{channel.group(1)},{channel.group(2)}",
        model=" ".join(p for p in (vendor if vendor != "ATA" else None, model) if p) or None,
        serial=clean(fields.get("Serial number")), firmware=clean(fields.get("Firmware")),
        media={True: "ssd", False: "hdd"}.get(yes_no(fields.get("SSD"))),
        interface=speed.split()[0] if speed.split() and speed.split()[0] in ("SAS", "SATA") else None,
        state=next((s for needle, s in _DRIVE_STATES.items() if word.startswith(needle)), "unknown"),
        state_raw=state_raw, size_bytes=size_bytes(fields.get("Size") or fields.get("Total Size")),
        write_cache=on_off(fields.get("Write Cache")), temperature_celsius=celsius(fields.get("Temperature")),
        # The printed location (Enclosure 0, Slot 3) lets segment lines that use it find the drive.
        location=clean(fields.get("Reported Location")),
    )


# --------------------------------------------------------------------------- GETSTATUS


def parse_getstatus(data: Union[bytes, str]) -> Tuple[Task, ...]:
    """``arcconf GETSTATUS <n>``: the logical device tasks under way (none is an empty tuple)."""
    lines, _ = _lines(data, "GETSTATUS")
    tasks, fields = [], None
    for line in lines + ["Logical device Task:"]:
        if line.strip().rstrip(":").lower() == "logical device task":
            if fields and small_int(fields.get("Logical device", fields.get("Logical Device"))) is not None:
                tasks.append(Task(volume=str(small_int(fields.get("Logical device", fields.get("Logical Device")))),
                                  operation=clean(fields.get("Current operation")) or "",
                                  status=clean(fields.get("Status")) or "",
                                  progress=percent_ratio(fields.get("Percentage complete"))))
            fields = {}
            continue
        match = _KEY_VALUE.match(line)
        if fields is not None and match:
            fields.setdefault(match.group(2).strip(), (match.group(3) or "").strip())
    return tuple(tasks)


def with_tasks(report: ControllerReport, tasks: Tuple[Task, ...], controller: str = "1") -> ControllerReport:
    """Volumes with their running rebuild (state ``rebuilding`` and its progress) or
    initialisation; a task on a volume the report does not have is left in the notes."""
    volumes, notes = list(report.volumes), []
    for task in tasks:
        index = next((i for i, v in enumerate(volumes) if v.controller == controller and v.id == task.volume), None)
        if index is None:
            notes.append(f"arcconf: task {task.operation} on logical device {task.volume} not in the configuration")
            continue
        volume = volumes[index]
        if task.operation.lower().startswith("rebuild") and task.status.lower() == "in progress":
            volumes[index] = replace(volume, state="rebuilding", progress=task.progress)
        elif volume.state in ("optimal", "initializing") and task.status.lower() == "in progress":
            volumes[index] = replace(volume, state="initializing", progress=task.progress)
    return replace(report, volumes=tuple(volumes), notes=report.notes + tuple(notes))
