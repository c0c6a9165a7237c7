"""RAID controllers as the agent shows them: metric families, the API value, ``ssdfleet status``
lines, the page section and, beside each drive read through a controller, its controller, slot
and volume (the :class:`~collectors.source.HostView` hooks the three controller sources share).

Pure functions of a :class:`~collectors.controller_source.ControllerResult` and the snapshot's
drives: no I/O. Every series is absent when the tool did not say (absent is not zero). Labels:
``controller`` is ``FAMILY/ID`` (``megaraid/0``, ``ssacli/0``, ``arcconf/1``), unique on a host
whatever mix of controllers it has; ``volume`` the controller's own volume number.

The families are the same for the three sources (one set of alert rules and dashboard rows for
all); agent/host_views.py joins families of one name from several sources into one.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

from collectors import controller_health as rules
from collectors.controller_model import BATTERY_STATES, VOLUME_STATES, PhysicalDrive, VirtualDisk
from collectors.controller_source import ControllerResult
from collectors.controller_spec import STATUS_HEADING
from collectors.families import GaugeMetricFamily
from collectors.smartctl import passthrough
from collectors.source import HostView

C = ["controller"]
V = ["controller", "volume"]
B = ["controller", "kind"]


def controller_label(result: ControllerResult, controller_id: str) -> str:
    return f"{result.family}/{controller_id}"


def _bool(value: Optional[bool]) -> Optional[float]:
    return None if value is None else float(value)


class _Families:
    """The families being filled, by name; a sample with a None value is left out."""

    def __init__(self) -> None:
        self.by_name: Dict[str, GaugeMetricFamily] = {}

    def add(self, name: str, doc: str, labels: List[str], values: List[str], value: Optional[float]) -> None:
        if value is None:
            return
        family = self.by_name.get(name)
        if family is None:
            family = self.by_name[name] = GaugeMetricFamily(name, doc, labels=labels)
        family.add_metric([str(v) for v in values], float(value))


# --------------------------------------------------------------------------- drives

def _norm(serial: Optional[str]) -> str:
    return "".join((serial or "").split()).upper()


def matched_drives(result: ControllerResult, drives: Iterable[Any]) -> Dict[Tuple[str, str], Any]:
    """(controller id, slot) -> the snapshot drive read through the controller (smartctl ``-d
    megaraid,N``...): by serial first; by the MegaRAID device id only when exactly one drive of
    this family's controllers has that id (two controllers may both have a drive 3: then the id
    alone names no drive, and none is attributed)."""
    physical = result.report.drives
    by_serial = {_norm(p.serial): p for p in physical if _norm(p.serial)}
    out: Dict[Tuple[str, str], Any] = {}
    for d in drives:
        found = by_serial.get(_norm(getattr(d.reading, "serial", None)))
        if found is None:
            found = _by_device_id(result, physical, getattr(d.reading, "device_type", None))
        if found is not None:
            out.setdefault((found.controller, found.slot), d)
    return out


def _by_device_id(result: ControllerResult, physical: Sequence[PhysicalDrive],
                  dev_type: Optional[str]) -> Optional[PhysicalDrive]:
    address = passthrough.address(dev_type)
    if address is None or address.family != result.family or address.disk is None:
        return None
    same = [p for p in physical if p.device_id == address.disk]
    return same[0] if len(same) == 1 else None


def _volume_of(result: ControllerResult, drive: PhysicalDrive) -> Optional[VirtualDisk]:
    return next((v for v in result.report.volumes if v.controller == drive.controller and drive.slot in v.members),
                None)


def _members_protected(result: ControllerResult, volume: VirtualDisk, matched: Dict[Tuple[str, str], Any]) -> Optional[bool]:
    """True when every member drive is known to have power-loss protection."""
    flags = [getattr(matched.get((volume.controller, slot)), "power_loss_protection", None) for slot in volume.members]
    if not flags or any(f is None for f in flags):
        return None
    return all(flags)


# --------------------------------------------------------------------------- metrics

def families(result: ControllerResult, drives: Sequence[Any]) -> List[GaugeMetricFamily]:
    out = _Families()
    _controller_families(out, result)
    matched = matched_drives(result, drives)
    for volume in result.report.volumes:
        _volume_families(out, result, volume, matched)
    for battery in result.report.batteries:
        _battery_families(out, result, battery)
    for drive in result.report.drives:
        _drive_families(out, result, drive, matched)
    return list(out.by_name.values())


def _controller_families(out: _Families, result: ControllerResult) -> None:
    report = result.report
    for c in report.controllers:
        ids = [controller_label(result, c.id)]
        out.add("ssd_controller_info", "RAID controller identity (the tool that read it, model, serial, firmware).",
                C + ["family", "tool", "model", "serial", "firmware"],
                ids + [result.family, result.tool, c.model or "", c.serial or "", c.firmware or ""], 1)
        out.add("ssd_controller_healthy", "1: the controller reports itself OK; 0: degraded or failed.", C, ids,
                {"ok": 1.0, "degraded": 0.0, "failed": 0.0}.get(c.status))
        out.add("ssd_controller_cache_bytes", "Size of the controller's cache memory in bytes.", C, ids, c.cache_bytes)
        out.add("ssd_controller_last_read_timestamp_seconds", "When the controller tool last answered in full.", C,
                ids, result.read_at)
        cause = rules.write_through_cause(b for b in report.batteries if b.controller == c.id)
        out.add("ssd_controller_write_through_cause",
                "1 with the battery condition that makes the controller run write-back volumes write-through.",
                C + ["cause"], ids + [cause or ""], 1 if cause else None)


def _volume_families(out: _Families, result: ControllerResult, v: VirtualDisk,
                     matched: Dict[Tuple[str, str], Any]) -> None:
    ids = [controller_label(result, v.controller), v.id]
    out.add("ssd_controller_volume_info", "A controller's volume (virtual disk, logical drive).",
            V + ["name", "raid_level", "os_device"], ids + [v.name or "", v.raid_level or "", v.os_device or ""], 1)
    if v.state != "unknown":
        for state in VOLUME_STATES[:-1]:
            out.add("ssd_controller_volume_state", "1 for the volume's state (optimal, degraded, rebuilding...), 0 for "
                    "the others.", V + ["state"], ids + [state], float(v.state == state))
    out.add("ssd_controller_volume_progress_ratio", "Progress of the volume's rebuild or initialisation, 0 to 1.", V,
            ids, v.progress)
    out.add("ssd_controller_volume_size_bytes", "Size of the volume in bytes.", V, ids, v.size_bytes)
    for policy, cache in (("current", v.current_cache), ("default", v.default_cache)):
        out.add("ssd_controller_volume_write_back", "1: the volume's write policy is write-back (either form), 0: "
                "write-through; policy=current (running now) or default (configured).", V + ["policy"],
                ids + [policy], _bool(cache.write_back) if cache is not None else None)
    out.add("ssd_controller_volume_write_back_lost", "1: configured write-back, running write-through now (every "
            "fsync waits for the drives).", V, ids, _bool(rules.write_back_lost(v)))
    current = v.current_cache
    out.add("ssd_controller_volume_cache_when_bad_battery", "1: the volume keeps write-back with a bad or missing "
            "battery (CachedBadBBU, always write-back).", V, ids,
            _bool(current.cache_when_bad_battery) if current is not None else None)
    out.add("ssd_controller_volume_disk_cache_enabled", "1: the drives' own volatile caches are on behind the volume, "
            "0: off (absent when the drives keep their own setting).", V, ids,
            {"enabled": 1.0, "disabled": 0.0}.get(v.disk_cache or ""))
    out.add("ssd_controller_volume_volatile_cache_unprotected", "1: the volume acknowledges writes from a cache a "
            "power cut can lose (CachedBadBBU, or drives' caches on without power-loss protection).", V, ids,
            _bool(rules.volatile_cache_unprotected(v, _members_protected(result, v, matched))))


def _battery_families(out: _Families, result: ControllerResult, b) -> None:
    ids = [controller_label(result, b.controller), b.kind]
    out.add("ssd_controller_battery_present", "1: the controller has a battery or flash module (BBU, CacheVault, "
            "FBWC, ZMM); 0: it reports none.", B, ids, float(b.present))
    if not b.present:
        return
    out.add("ssd_controller_battery_info", "The battery or flash module's model.", B + ["model"], ids + [b.model or ""],
            1)
    if b.state != "unknown":
        for state in BATTERY_STATES[:-1]:
            out.add("ssd_controller_battery_state", "1 for the battery's state (optimal, learning, charging, failed...),"
                    " 0 for the others.", B + ["state"], ids + [state], float(b.state == state))
    out.add("ssd_controller_battery_charge_ratio", "The battery's relative state of charge, 0 to 1.", B, ids,
            b.charge_ratio)
    out.add("ssd_controller_battery_temperature_celsius", "The battery's temperature.", B, ids, b.temperature_celsius)
    out.add("ssd_controller_battery_learn_active", "1: a learn cycle runs now (write-back volumes may run "
            "write-through meanwhile).", B, ids, _bool(b.learn_active))
    out.add("ssd_controller_battery_replacement_required", "1: the controller asks for the battery to be replaced.",
            B, ids, _bool(b.replacement_required))
    out.add("ssd_controller_battery_next_learn_timestamp_seconds", "When the next learn cycle is scheduled (the "
            "controller's clock read as megaraid.controller_clock says).", B, ids, result.learn_at(b.controller, b.kind))


def _drive_families(out: _Families, result: ControllerResult, p: PhysicalDrive,
                    matched: Dict[Tuple[str, str], Any]) -> None:
    ctrl = controller_label(result, p.controller)
    volume = _volume_of(result, p)
    drive = matched.get((p.controller, p.slot))
    # device and serial as the drive's own series label them, to join on (ssd_drive_info);
    # "" when no drive of the snapshot is this one.
    out.add("ssd_controller_drive_info", "A drive behind a controller: its slot, the device id smartctl reads it by "
            "(-d megaraid,N), its volume and, when the agent reads it, its device and serial labels.",
            ["controller", "slot", "device_id", "volume", "device", "serial", "model", "state"],
            [ctrl, p.slot, "" if p.device_id is None else p.device_id, volume.id if volume else "",
             drive.device if drive is not None else "", drive.serial if drive is not None else (p.serial or ""),
             p.model or "", p.state], 1)
    out.add("ssd_controller_drive_write_cache_enabled", "1: the drive's own volatile write cache is on, as the "
            "controller reports it.", ["controller", "slot"], [ctrl, p.slot], _bool(p.write_cache))


# --------------------------------------------------------------------------- API, status, page

def api(result: ControllerResult, drives: Sequence[Any]) -> Dict[str, Any]:
    """The result as JSON: controllers, volumes (with severity and write-through cause),
    batteries, drives (with the snapshot drive they are)."""
    report = result.report
    matched = matched_drives(result, drives)
    causes = {c.id: rules.write_through_cause(b for b in report.batteries if b.controller == c.id)
              for c in report.controllers}

    def policy(cache) -> Optional[Dict[str, Any]]:
        return None if cache is None else {"write": cache.write, "read": cache.read, "io": cache.io,
                                           "cache_when_bad_battery": cache.cache_when_bad_battery, "raw": cache.raw}

    return {
        "family": result.family, "tool": result.tool, "read_at": result.read_at,
        "controllers": [{"controller": controller_label(result, c.id), "model": c.model, "serial": c.serial,
                         "firmware": c.firmware, "status": c.status, "status_raw": c.status_raw,
                         "cache_bytes": c.cache_bytes} for c in report.controllers],
        "volumes": [{"controller": controller_label(result, v.controller), "volume": v.id, "name": v.name,
                     "raid_level": v.raid_level, "state": v.state, "state_raw": v.state_raw, "progress": v.progress,
                     "size_bytes": v.size_bytes, "os_device": v.os_device, "members": list(v.members),
                     "current": policy(v.current_cache), "default": policy(v.default_cache),
                     "disk_cache": v.disk_cache, "write_back_lost": v.write_back_lost,
                     "write_through_cause": causes.get(v.controller) if v.write_back_lost else None,
                     "severity": rules.volume_severity(v)} for v in report.volumes],
        "batteries": [{"controller": controller_label(result, b.controller), "kind": b.kind, "present": b.present,
                       "model": b.model, "state": b.state, "state_raw": b.state_raw, "charge_ratio": b.charge_ratio,
                       "temperature_celsius": b.temperature_celsius, "learn_active": b.learn_active,
                       "next_learn": b.next_learn, "next_learn_timestamp": result.learn_at(b.controller, b.kind),
                       "replacement_required": b.replacement_required} for b in report.batteries],
        "drives": [_drive_api(result, p, matched) for p in report.drives],
    }


def _drive_api(result: ControllerResult, p: PhysicalDrive, matched: Dict[Tuple[str, str], Any]) -> Dict[str, Any]:
    drive = matched.get((p.controller, p.slot))
    volume = _volume_of(result, p)
    return {"controller": controller_label(result, p.controller), "slot": p.slot, "device_id": p.device_id,
            "model": p.model, "serial": p.serial, "state": p.state, "media": p.media, "interface": p.interface,
            "write_cache": p.write_cache, "volume": volume.id if volume else None,
            "device": drive.device if drive is not None else None,
            "drive_serial": drive.serial if drive is not None else None}


def _policy_word(cache: Optional[Dict[str, Any]]) -> str:
    return (cache or {}).get("write") or "?"


def status_lines(value: Dict[str, Any]) -> List[str]:
    """``megaraid/0 PERC H730P (fw 25.5.9.0001): ok`` and a line per volume and battery."""
    lines = []
    for c in value.get("controllers", []):
        lines.append(f"{c['controller']} {c.get('model') or ''} (fw {c.get('firmware') or '?'}): {c.get('status')}")
    for v in value.get("volumes", []):
        line = (f"  volume {v['controller']}/v{v['volume']} {v.get('raid_level') or ''} {v.get('state')}"
                f"{' ' + format(v['progress'], '.0%') if v.get('progress') is not None else ''}: "
                f"write {_policy_word(v.get('current'))} (default {_policy_word(v.get('default'))})")
        if v.get("write_back_lost"):
            line += " WRITE-BACK LOST" + (f": {v['write_through_cause']}" if v.get("write_through_cause") else "")
        lines.append(line)
    for b in value.get("batteries", []):
        if not b.get("present"):
            lines.append(f"  battery {b['controller']}: none")
            continue
        extra = [f"charge {b['charge_ratio']:.0%}" if b.get("charge_ratio") is not None else "",
                 "learn cycle running" if b.get("learn_active") else "",
                 f"next learn {b['next_learn']}" if b.get("next_learn") else "",
                 "REPLACE" if b.get("replacement_required") else ""]
        lines.append(f"  {b['kind']} {b['controller']} {b.get('model') or ''}: {b.get('state')}"
                     + "".join(f", {e}" for e in extra if e))
    return lines


def page(result: ControllerResult, drives: Sequence[Any], esc: Callable[[str], str]) -> str:
    value = api(result, drives)
    rows = []
    for v in value["volumes"]:
        lost = v["write_back_lost"]
        cause = f" ({esc(v['write_through_cause'])})" if v.get("write_through_cause") else ""
        cls = ' class="bad"' if lost or v["severity"] == "critical" else (' class="warn"' if v["severity"] == "warning"
                                                                          else "")
        rows.append(f"<tr{cls}><td>{esc(v['controller'])}</td><td>{esc(v['volume'])}</td>"
                    f"<td>{esc(v.get('raid_level') or '-')}</td><td>{esc(v['state'])}</td>"
                    f"<td>{esc(_policy_word(v['current']))}{' — write-back lost' + cause if lost else ''}</td>"
                    f"<td>{esc(_policy_word(v['default']))}</td><td>{esc(v.get('disk_cache') or '-')}</td>"
                    f"<td>{esc(v.get('os_device') or '-')}</td></tr>")
    batteries = "".join(f"<li>{esc(line.strip())}</li>" for line in status_lines(value)
                        if line.strip().startswith(("bbu", "cachevault", "fbwc", "zmm", "unknown", "battery")))
    heads = "".join(f'<th scope="col">{h}</th>' for h in ("controller", "volume", "RAID", "state", "write cache now",
                                                          "configured", "drives' caches", "OS device"))
    controllers = "".join(f"<li>{esc(line)}</li>" for line in status_lines(value) if not line.startswith(" "))
    return (f'<section class="host controllers"><h2>RAID controller ({esc(result.tool)})</h2><ul>{controllers}</ul>'
            f'<div class="scroll"><table class="drives"><thead><tr>{heads}</tr></thead><tbody>{"".join(rows)}'
            f"</tbody></table></div><ul>{batteries}</ul></section>")


def per_drive(result: ControllerResult, drives: Sequence[Any]) -> Dict[str, Dict[str, Any]]:
    """Serial of a snapshot drive read through the controller -> its controller, slot, volume."""
    out: Dict[str, Dict[str, Any]] = {}
    for (controller, slot), drive in matched_drives(result, drives).items():
        physical = result.report.drive(controller, slot)
        volume = _volume_of(result, physical) if physical else None
        current = volume.current_cache if volume else None
        out[drive.serial] = {
            "controller": controller_label(result, controller), "slot": slot,
            "device_id": physical.device_id if physical else None,
            "volume": volume.id if volume else None, "state": physical.state if physical else None,
            # What the host writes to goes through the volume: its write cache and its I/O
            # counters (diskstats of os_device) are the volume's, not this drive's.
            "volume_os_device": volume.os_device if volume else None,
            "volume_write_cache": current.write if current is not None else None,
            "drive_write_cache": physical.write_cache if physical else None,
            "note": "write cache and I/O are the volume's (the controller's), not this drive's"}
    return out


VIEW = HostView(
    families=families,
    api=api,
    status_heading=STATUS_HEADING,
    status_lines=status_lines,
    page=page,
    per_drive=per_drive,
)
