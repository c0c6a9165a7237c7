"""storcli / perccli JSON (the ``J`` suffix) into a :class:`ControllerReport`.

Every storcli JSON answer has one shape: ``{"Controllers": [{"Command Status": {...},
"Response Data": {...}}, ...]}``, one element per controller the command addressed. What the
response data holds depends on the command, so one parser reads them all and keeps what it finds:

* ``/call show all J``: ``Basics``/``Version``/``Status``/``HwCfg``/``Defaults``/``Scheduled
  Tasks`` (controller), ``TOPOLOGY`` (which drive is in which drive group, the disk cache policy
  per group), ``VD LIST`` (state and *current* cache policy per volume), ``PD LIST``, and
  ``BBU_Info`` or ``Cachevault_Info`` (battery or flash module summary). Older storcli (2014)
  flattens the controller fields into the response data (``Product Name``, ``FW Version``).
* ``/cX/vall show all J``: ``/c0/v0`` (the VD LIST row), ``PDs for VD 0``, ``VD0 Properties``
  with ``Write Cache(initial setting)``: the volume's *default* write policy, the other half of
  the write-back-lost comparison, and ``OS Drive Name``.
* ``/cX/eall/sall show all J``: ``Drive /c0/e252/s0`` rows and their ``Detailed Information``
  (serial, firmware, the drive's own write cache, temperature).

``Command Status`` ``Status`` other than ``Success`` is an error naming the controller and
storcli's description. perccli (Dell PERC) prints the same JSON.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Any, Dict, List, Optional, Tuple, Union

from collectors.controller_model import (
    Battery,
    CachePolicy,
    Controller,
    ControllerReport,
    ParseError,
    PhysicalDrive,
    VirtualDisk,
)
from collectors.controller_text import battery_state, celsius, clean, decode, size_bytes, small_int, yes_no
from collectors.megaraid import vocabulary as vocab

FAMILY = "megaraid"
_VD_KEY = re.compile(r"^/c(\d{1,3})/v(\d{1,4})$")
_DRIVE_KEY = re.compile(r"^Drive /c(\d{1,3})(?:/e(\d{1,4}))?/s(\d{1,4})$")
_SLOT = re.compile(r"^(?:(\d{1,4}|\s*):)?(\d{1,4})$")
# A MegaRAID device id is the N of ``-d megaraid,N``: smartctl takes up to three digits.
MAX_DEVICE_ID = 999


def parse_storcli_json(data: Union[bytes, str]) -> ControllerReport:
    """Parse any storcli/perccli ``... show [all] J`` answer. Raises :class:`ParseError` for
    output that is not storcli JSON or reports a failed command."""
    report = ControllerReport()
    for index, (controller, response) in enumerate(_controllers(data)):
        try:
            report = report.merged(_response(controller, response))
        except (TypeError, AttributeError, KeyError, ValueError) as exc:
            # A section of an unexpected shape: name it rather than let it escape.
            raise ParseError(f"storcli JSON: Controllers[{index}]: unexpected layout ({exc})") from None
    return report


def _controllers(data: Union[bytes, str]) -> List[Tuple[str, Dict[str, Any]]]:
    try:
        doc = json.loads(decode(data, "storcli JSON"))
    except (ValueError, RecursionError) as exc:
        raise ParseError(f"storcli JSON: not JSON ({str(exc)[:80]})") from None
    controllers = doc.get("Controllers") if isinstance(doc, dict) else None
    if not isinstance(controllers, list) or not controllers:
        raise ParseError("storcli JSON: no 'Controllers' list")
    out = []
    for index, item in enumerate(controllers):
        status = item.get("Command Status") if isinstance(item, dict) else None
        if not isinstance(status, dict):
            raise ParseError(f"storcli JSON: Controllers[{index}] has no 'Command Status'")
        controller = small_int(status.get("Controller"), 1000)
        name = str(controller) if controller is not None else str(index)
        if status.get("Status") != "Success":
            why = clean(status.get("Description")) or clean(status.get("ErrMsg")) or "no description"
            raise ParseError(f"storcli: controller {name}: command status {status.get('Status')!r}: {why}")
        response = item.get("Response Data", {})
        if not isinstance(response, dict):
            raise ParseError(f"storcli JSON: controller {name}: 'Response Data' is not an object")
        out.append((name, response))
    return out


def _response(controller: str, response: Dict[str, Any]) -> ControllerReport:
    report = ControllerReport()
    if "Basics" in response or "Product Name" in response:
        report = report.merged(_show_all(controller, response))
    if any(_VD_KEY.match(k) for k in response):
        report = report.merged(_volumes_show_all(controller, response))
    if any(_DRIVE_KEY.match(k) for k in response):
        report = report.merged(_drives_show_all(controller, response))
    if not (report.controllers or report.volumes or report.drives):
        return report.merged(ControllerReport(notes=(f"storcli: controller {controller}: nothing this parser reads "
                                                     f"in the response ({', '.join(list(response)[:5])})",)))
    return report


# --------------------------------------------------------------------------- /call show all


def _show_all(controller: str, response: Dict[str, Any]) -> ControllerReport:
    topology = _list(response.get("TOPOLOGY"))
    pd_list = [_summary_drive(controller, row) for row in _list(response.get("PD LIST"))]
    drives = tuple(d for d in pd_list if d is not None)
    volumes = tuple(v for v in (_summary_volume(controller, row, topology, drives)
                                for row in _list(response.get("VD LIST"))) if v is not None)
    return ControllerReport(controllers=(_controller(controller, response),), volumes=volumes, drives=drives,
                            batteries=_batteries(controller, response))


def _controller(controller: str, response: Dict[str, Any]) -> Controller:
    basics, version = _dict(response.get("Basics")), _dict(response.get("Version"))
    hw, defaults = _dict(response.get("HwCfg")), _dict(response.get("Defaults"))
    status_raw = clean(_dict(response.get("Status")).get("Controller Status")) or ""
    return Controller(
        family=FAMILY, id=controller,
        model=clean(basics.get("Model")) or clean(response.get("Product Name")),
        serial=clean(basics.get("Serial Number")) or clean(response.get("Serial Number")),
        firmware=clean(version.get("Firmware Version")) or clean(response.get("FW Version")),
        status={"optimal": "ok", "needs attention": "degraded", "failed": "failed"}.get(status_raw.lower(), "unknown"),
        status_raw=status_raw,
        cache_bytes=size_bytes(hw.get("On Board Memory Size")),
        cache_when_bad_battery=yes_no(defaults.get("Cache When BBU Bad")),
    )


def _summary_volume(controller: str, row: Dict[str, Any], topology: List[Dict[str, Any]],
                    drives: Tuple[PhysicalDrive, ...]) -> Optional[VirtualDisk]:
    group, _, target = str(row.get("DG/VD", "")).partition("/")
    if small_int(target, 10000) is None:
        return None
    members = tuple(d.slot for d in drives if d.drive_group == group)
    group_row = next((t for t in topology if str(t.get("DG")) == group and t.get("Arr") == "-"), {})
    state_raw = clean(row.get("State")) or ""
    state = vocab.state(vocab.VOLUME_STATES, state_raw)
    if state in ("degraded", "partially-degraded") and any(d.state == "rebuilding" for d in drives
                                                          if d.drive_group == group):
        state = "rebuilding"
    return VirtualDisk(controller=controller, id=target, name=clean(row.get("Name")),
                       raid_level=vocab.raid_level(row.get("TYPE")), state=state, state_raw=state_raw,
                       size_bytes=size_bytes(row.get("Size")), current_cache=vocab.abbreviated_policy(row.get("Cache")),
                       disk_cache=vocab.disk_cache(group_row.get("PDC")), members=members, drive_group=group)


def _summary_drive(controller: str, row: Dict[str, Any]) -> Optional[PhysicalDrive]:
    slot = _slot(row.get("EID:Slt"))
    if slot is None:
        return None
    state_raw = clean(row.get("State")) or ""
    media = clean(row.get("Med"))
    return PhysicalDrive(controller=controller, slot=slot, device_id=small_int(row.get("DID"), MAX_DEVICE_ID + 1),
                         model=clean(row.get("Model")), media=media.lower() if media in ("SSD", "HDD") else None,
                         interface=clean(row.get("Intf")), state=vocab.state(vocab.DRIVE_STATES, state_raw),
                         state_raw=state_raw, size_bytes=size_bytes(row.get("Size")),
                         drive_group=str(row["DG"]) if small_int(row.get("DG")) is not None else None)


def _batteries(controller: str, response: Dict[str, Any]) -> Tuple[Battery, ...]:
    """``BBU_Info`` (a lithium BBU) or ``Cachevault_Info`` (supercapacitor + flash) summary rows;
    with neither, ``HwCfg`` ``BBU: Absent`` says there is none."""
    out = []
    next_learn = _storcli_time(_dict(response.get("Scheduled Tasks")).get("Next Battery Learn"))
    for key, kind in (("BBU_Info", "bbu"), ("Cachevault_Info", "cachevault")):
        for row in _list(response.get(key)):
            state_raw = clean(row.get("State")) or ""
            out.append(Battery(controller=controller, kind=kind, model=clean(row.get("Model")),
                               state=battery_state(state_raw), state_raw=state_raw,
                               temperature_celsius=celsius(row.get("Temp")),
                               next_learn=_storcli_time(row.get("Next Learn")) or next_learn))
    if not out and clean(_dict(response.get("HwCfg")).get("BBU")) == "Absent":
        out.append(Battery(controller=controller, kind="unknown", present=False, state="missing", state_raw="Absent"))
    return tuple(out)


def _storcli_time(raw) -> Optional[str]:
    """``06/03/2023, 10:00:00`` (Scheduled Tasks) or ``2024/04/18  18:32:56`` (BBU_Info) as
    ISO 8601 in the controller's own time; None for ``NA`` or anything else."""
    text = " ".join(str(raw).split()) if isinstance(raw, str) else ""
    match = re.fullmatch(r"(\d{2})/(\d{2})/(\d{4}),? (\d{2}):(\d{2}):(\d{2})", text)
    if match:
        month, day, year = match.group(1, 2, 3)
    else:
        match = re.fullmatch(r"(\d{4})/(\d{2})/(\d{2}),? (\d{2}):(\d{2}):(\d{2})", text)
        if not match:
            return None
        year, month, day = match.group(1, 2, 3)
    hour, minute, second = match.group(4, 5, 6)
    if not (1 <= int(month) <= 12 and 1 <= int(day) <= 31 and int(hour) < 24 and int(minute) < 60 and int(second) < 61):
        return None
    return f"{year}-{month}-{day}T{hour}:{minute}:{second}"


# --------------------------------------------------------------------------- /cX/vall show all


def _volumes_show_all(controller: str, response: Dict[str, Any]) -> ControllerReport:
    volumes, drives = [], []
    for key, rows in response.items():
        match = _VD_KEY.match(key)
        if not match or not _list(rows):
            continue
        target = match.group(2)
        members = [d for d in (_summary_drive(controller, r) for r in _list(response.get(f"PDs for VD {target}")))
                   if d is not None]
        drives.extend(members)
        summary = _summary_volume(controller, _list(rows)[0], [], tuple(members))
        if summary is None:
            continue
        props = _dict(response.get(f"VD{target} Properties"))
        default = vocab.spelled_policy(props.get("Write Cache(initial setting)"))
        volumes.append(replace(summary, default_cache=_default(default, summary.current_cache),
                               disk_cache=vocab.disk_cache(props.get("Disk Cache Policy")),
                               os_device=clean(props.get("OS Drive Name"))))
    return ControllerReport(volumes=tuple(volumes), drives=tuple(drives))


def _default(default: Optional[CachePolicy], current: Optional[CachePolicy]) -> Optional[CachePolicy]:
    """The initial setting names only the write policy. ``WriteBack`` there is plain WB, whose
    bad-battery behaviour the controller's current ``AWB``/``WB`` tells."""
    if default is None or current is None or default.write != current.write:
        return default
    return CachePolicy(write=default.write, read=None, io=None,
                       cache_when_bad_battery=current.cache_when_bad_battery, raw=default.raw)


# --------------------------------------------------------------------------- /cX/eall/sall show all


def _drives_show_all(controller: str, response: Dict[str, Any]) -> ControllerReport:
    drives = []
    for key, rows in response.items():
        match = _DRIVE_KEY.match(key)
        if not match or not _list(rows):
            continue
        summary = _summary_drive(controller, _list(rows)[0])
        if summary is None:
            continue
        detail = _dict(response.get(f"{key} - Detailed Information"))
        state = _dict(detail.get(f"{key} State"))
        attributes = _dict(detail.get(f"{key} Device attributes"))
        drives.append(replace(summary, model=clean(attributes.get("Model Number")) or summary.model,
                              serial=clean(attributes.get("SN")), firmware=clean(attributes.get("Firmware Revision")),
                              write_cache=yes_no(attributes.get("Write Cache")),
                              temperature_celsius=celsius(state.get("Drive Temperature"))))
    return ControllerReport(drives=tuple(drives))


# --------------------------------------------------------------------------- small readers


def _slot(raw) -> Optional[str]:
    """``"252:0"`` as is; ``" :3"`` (a drive with no enclosure) as ``"3"``."""
    match = _SLOT.match(str(raw)) if isinstance(raw, str) else None
    if match is None:
        return None
    enclosure = (match.group(1) or "").strip()
    return f"{enclosure}:{match.group(2)}" if enclosure else match.group(2)


def _list(value) -> List[Dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _dict(value) -> Dict[str, Any]:
    return value if isinstance(value, dict) else {}
