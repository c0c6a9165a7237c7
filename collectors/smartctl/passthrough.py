"""smartctl's ``-d TYPE`` values, in one table: which address a disk behind a controller or bridge
(so the ``/dev`` name is the controller's, not the disk's), and which forms are valid at all.

The table follows smartctl(8) (smartmontools 7.3/7.4, "-d TYPE"). The poller labels such disks by
path and type (two disks behind one controller share the path), the normaliser gives them no
block device (``/dev/sda``'s diskstats and write cache are not theirs), and the probe helper
accepts exactly these forms. One table, so the three can never disagree again.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Optional, Tuple

# (name, the arguments after "name," as a regex, what it is). A type with a disk number reaches
# one disk of several behind the node it is opened on.
_PLUS = r"(?:\+(?:ata|scsi|sat(?:,auto)?(?:,12|,16)?))?"  # "+TYPE": the protocol behind the bridge

PASS_THROUGH: Tuple[Tuple[str, str, str], ...] = (
    ("megaraid", r"\d{1,3}", "LSI/Broadcom MegaRAID: disk N"),
    ("aacraid", r"\d{1,2},\d{1,2},\d{1,3}", "Adaptec: host, LUN, id"),
    ("cciss", r"\d{1,3}", "HP Smart Array (cciss driver): disk N"),
    ("3ware", r"\d{1,3}", "3ware 9000/7000/9750: port N"),
    ("areca", r"\d{1,3}(?:/\d{1,2})?", "Areca: disk N, enclosure E"),
    ("hpt", r"\d{1,2}/\d{1,2}(?:/\d{1,2})?", "HighPoint RocketRAID: controller/channel[/pmport]"),
    ("jmb39x", r"\d{1,2}(?:,s\d{1,9})?(?:,force)?" + _PLUS, "JMicron JMB39x SATA RAID: disk N"),
    ("jmb39x-q", r"\d{1,2}(?:,s\d{1,9})?(?:,force)?" + _PLUS, "JMicron JMB39x, QNAP variant"),
    ("jmb39x-q2", r"\d{1,2}(?:,s\d{1,9})?(?:,force)?" + _PLUS, "JMicron JMB39x, second QNAP variant"),
    ("jms56x", r"\d{1,2}(?:,s\d{1,9})?(?:,force)?" + _PLUS, "JMicron JMS56x USB RAID: disk N"),
    ("sssraid", r"\d{1,3},\d{1,3}", "3SNIC RAID (smartctl 7.4+): enclosure, slot"),
    ("intelliprop", r"\d{1,2}" + _PLUS, "IntelliProp multi-drive ATA bridge: drive N"),
)

# Types that address the node they are opened on: the disk is the device itself.
_NSID = r"(?:0x[0-9a-fA-F]{1,8}|\d{1,10})"
PLAIN = (
    r"auto|ata|scsi|sat(?:,auto)?(?:,12|,16)?|nvme(?:," + _NSID + r")?|marvell"
    r"|usbcypress(?:,0x[0-9a-fA-F]{2})?|usbjmicron(?:,p)?(?:,x)?(?:,[01])?|usbprolific|usbsunplus"
    r"|usbasm1352r(?:,[01])?|sntasmedia|sntjmicron(?:," + _NSID + r")?|sntrealtek"
)

_PASS_THROUGH_RE = re.compile(
    r"(?:sat(?:,auto|,12|,16)?\+)?(?P<name>"
    + "|".join(re.escape(name) for name, _, _ in sorted(PASS_THROUGH, key=lambda t: -len(t[0])))
    + r"),(?P<args>.+)"
)
_ARGS = {name: re.compile(args) for name, args, _ in PASS_THROUGH}
_PLAIN_RE = re.compile(PLAIN)
MAX_TYPE_CHARS = 40


_FAMILIES = frozenset(name for name, _, _ in PASS_THROUGH)


def controller(dev_type: Optional[str]) -> Optional[str]:
    """The pass-through family of a ``-d`` value (``megaraid`` for ``sat+megaraid,3``), or None
    when the type addresses the device node itself. smartctl's JSON names some types without
    their disk number ("cciss"); the bare family name still says the node is a controller."""
    if not dev_type or len(dev_type) > MAX_TYPE_CHARS:
        return None
    bare = dev_type.split("+")[-1]
    if bare in _FAMILIES:
        return bare
    match = _PASS_THROUGH_RE.fullmatch(dev_type)
    if match is None or not _ARGS[match.group("name")].fullmatch(match.group("args")):
        return None
    return match.group("name")


def is_pass_through(dev_type: Optional[str]) -> bool:
    return controller(dev_type) is not None


def is_valid(dev_type: str) -> bool:
    """A ``-d`` value smartctl documents: a plain type, or a pass-through type with its
    arguments, matched whole (``megaraid,0 -x``, ``sat,12,foo`` or a bare ``megaraid`` are not)."""
    if not dev_type or len(dev_type) > MAX_TYPE_CHARS:
        return False
    if _PLAIN_RE.fullmatch(dev_type):
        return True
    match = _PASS_THROUGH_RE.fullmatch(dev_type)
    return match is not None and bool(_ARGS[match.group("name")].fullmatch(match.group("args")))


# --------------------------------------------------------------------------- scan results
# What a pass-through ``-d`` value from ``smartctl --scan-open`` says about the disk it reaches:
# which controller family, which numbers (smartctl(8), "-d TYPE"), and the protocol spoken
# behind the controller when the scan names one (``sat+megaraid,60``: an ATA disk behind a
# MegaRAID, reached with SCSI-to-ATA translation).

# The disk's index among the numbers, per family: the N of megaraid,N is the controller's device
# id (storcli's DID, MegaCli's "Device Id"), aacraid's is its last number (H,L,ID), sssraid's
# its slot (E,S); hpt's controller/channel[/pmport] names no single index.
_DISK_INDEX = {"megaraid": 0, "cciss": 0, "3ware": 0, "areca": 0, "jmb39x": 0, "jmb39x-q": 0,
               "jmb39x-q2": 0, "jms56x": 0, "intelliprop": 0, "aacraid": 2, "sssraid": 1}


@dataclass(frozen=True)
class Address:
    """A disk behind a controller, as a ``-d`` value names it."""

    family: str
    numbers: Tuple[int, ...]
    protocol: Optional[str] = None  # "sat" of sat+megaraid,N; "ata" of intelliprop,0+ata
    options: Tuple[str, ...] = ()  # jmb39x's ",s<sector>" and ",force"

    @property
    def disk(self) -> Optional[int]:
        index = _DISK_INDEX.get(self.family)
        return self.numbers[index] if index is not None and index < len(self.numbers) else None


def address(dev_type: Optional[str]) -> Optional[Address]:
    """The :class:`Address` of a valid pass-through ``-d`` value, None for a plain type, a bare
    family name or anything :func:`is_valid` refuses."""
    if not dev_type or len(dev_type) > MAX_TYPE_CHARS:
        return None
    match = _PASS_THROUGH_RE.fullmatch(dev_type)
    if match is None or not _ARGS[match.group("name")].fullmatch(match.group("args")):
        return None
    prefix = dev_type[: match.start("name")].rstrip("+")
    args, _, suffix = match.group("args").partition("+")
    numbers, options = [], []
    for part in re.split(r"[,/]", args):
        if part.isdigit():
            numbers.append(int(part))
        else:
            options.append(part)
    protocol = (prefix.split(",")[0] if prefix else None) or (suffix.split(",")[0] if suffix else None)
    return Address(family=match.group("name"), numbers=tuple(numbers), protocol=protocol, options=tuple(options))


def behind_controllers(entries: Iterable) -> Tuple[Tuple[str, str, Address], ...]:
    """``(node, -d type, address)`` for each scan entry (anything with ``name`` and ``type``, as
    :class:`~collectors.smartctl.json_report.ScanEntry`) that reaches a disk behind a
    controller, in scan order; plain devices are left out. Two disks behind one controller share
    the node (``/dev/bus/0``) and differ by address."""
    out = []
    for entry in entries:
        found = address(getattr(entry, "type", None))
        if found is not None:
            out.append((entry.name, entry.type, found))
    return tuple(out)
