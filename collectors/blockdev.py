"""Block devices as the kernel sees them in sysfs.

No tool and no privilege is needed: ``/sys/block/<dev>/`` tells the name, size, whether the
device rotates, and often the model and serial. The agent uses it to find drives that no tool
can read (a virtual disk, a drive behind a controller smartctl cannot pass through) and to map
NVMe namespaces and Shannon ``dfX`` devices to their drive.

Layout read (all optional except ``size``)::

    /sys/block/sda/size                  512-byte sectors, always, whatever the sector size
    /sys/block/sda/queue/rotational      1 spinning, 0 flash
    /sys/block/sda/device/model          "INTEL SSDSC2BB480G7"
    /sys/block/sda/device/serial         (NVMe, virtio) or device/vpd_pg80 (SCSI)
    /sys/block/sda/device/wwid           "naa.55cd2e414e2d1a4b" or "t10.ATA ..."
    /sys/block/sda/device/firmware_rev   (NVMe) or device/rev (SCSI/ATA)
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Dict, List, Mapping, Optional, Sequence

from collectors.model import (
    KIND_ATA,
    KIND_BLOCK,
    KIND_NVME,
    KIND_SCSI,
    KIND_SHANNON,
    MAX_CAPACITY_BYTES,
    DriveReading,
    ParseError,
)

# Devices that are not drives: partitions are handled by their parent; these are virtual.
_NOT_A_DRIVE = re.compile(r"^(loop|ram|zram|dm-|md|sr|fd|nbd|rbd|drbd)\d*")
_NVME_NAMESPACE = re.compile(r"^(nvme\d+)n\d+$")

SECTOR_BYTES = 512  # sysfs "size" counts 512-byte units regardless of the logical block size


@dataclass(frozen=True)
class BlockDevice:
    name: str  # sda, nvme0n1, dfa, vda
    size_bytes: Optional[int]
    rotational: Optional[bool]
    model: Optional[str] = None
    serial: Optional[str] = None
    wwid: Optional[str] = None
    firmware: Optional[str] = None
    transport: Optional[str] = None  # nvme, shannon, virtio, scsi

    @property
    def drive_name(self) -> str:
        """The drive this device belongs to: nvme0n1 -> nvme0 (the controller holds SMART)."""
        m = _NVME_NAMESPACE.match(self.name)
        return m.group(1) if m else self.name


def is_candidate(name: str, include: Sequence[str] = ()) -> bool:
    """Whether ``name`` may be a drive. ``include`` lists name prefixes (``dm-``, ``loop``)
    that a configuration asks for although they are virtual."""
    return bool(include and name.startswith(tuple(include))) or not _NOT_A_DRIVE.match(name)


def _clean(value: Optional[str]) -> Optional[str]:
    if value is None:
        return None
    value = value.replace("\x00", "").strip()
    return value or None


def parse_block_device(name: str, files: Mapping[str, str]) -> BlockDevice:
    """Build a :class:`BlockDevice` from the sysfs files read for ``name`` (relative paths as
    keys: ``size``, ``queue/rotational``, ``device/model`` ...)."""
    size_text = _clean(files.get("size"))
    size: Optional[int] = None
    if size_text is not None:
        if not re.fullmatch(r"[0-9]{1,20}", size_text):  # str.isdigit() also accepts "²"; a u64 has 20 digits
            raise ParseError(f"{name}/size: not a number of sectors: {size_text[:40]!r}")
        size = int(size_text) * SECTOR_BYTES
        if size > MAX_CAPACITY_BYTES:  # beyond any drive (collectors.model.FIGURE_BOUNDS): not a size
            size = None
    rot_text = _clean(files.get("queue/rotational"))
    rotational: Optional[bool] = None
    if rot_text is not None:
        if rot_text not in ("0", "1"):
            raise ParseError(f"{name}/queue/rotational: expected 0 or 1, got {rot_text!r}")
        rotational = rot_text == "1"
    serial = _clean(files.get("device/serial")) or _clean(files.get("serial"))
    wwid = _clean(files.get("device/wwid")) or _clean(files.get("wwid"))
    firmware = _clean(files.get("device/firmware_rev")) or _clean(files.get("device/rev"))
    if name.startswith("nvme"):
        transport = "nvme"
    elif re.match(r"^df[a-z]+$", name):
        transport = "shannon"
    elif name.startswith("vd"):
        transport = "virtio"
    else:
        transport = "scsi" if name.startswith("sd") else None
    return BlockDevice(
        name=name,
        size_bytes=size,
        rotational=rotational,
        model=_clean(files.get("device/model")),
        serial=serial,
        wwid=wwid,
        firmware=firmware,
        transport=transport,
    )


_FILES = (
    "size",
    "queue/rotational",
    "serial",
    "wwid",
    "device/model",
    "device/serial",
    "device/wwid",
    "device/firmware_rev",
    "device/rev",
)


def read_block_devices(sysfs_root: str = "/sys", include: Sequence[str] = ()) -> List[BlockDevice]:
    """List whole-disk block devices under ``<sysfs_root>/block``; unreadable files are skipped,
    a device that vanishes while being read is left out. ``include``: see :func:`is_candidate`
    (an included virtual device of size 0, an unused loop device, is still left out)."""
    base = os.path.join(sysfs_root, "block")
    try:
        names = sorted(os.listdir(base))
    except OSError:
        return []
    out: List[BlockDevice] = []
    for name in names:
        if not is_candidate(name, include):
            continue
        files: Dict[str, str] = {}
        for rel in _FILES:
            try:
                with open(os.path.join(base, name, rel), encoding="utf-8", errors="replace") as fh:
                    files[rel] = fh.read(4096)
            except OSError:
                continue
        if "size" not in files:
            continue
        try:
            device = parse_block_device(name, files)
        except ParseError:
            continue
        if _NOT_A_DRIVE.match(name) and not device.size_bytes:
            continue
        out.append(device)
    return out


def reading_of(b: BlockDevice) -> DriveReading:
    """What the kernel alone says of a drive no tool read: its identity from sysfs, no health.
    The kind follows the transport; a SCSI disk without a model is taken as ATA (libata)."""
    kind = {"nvme": KIND_NVME, "shannon": KIND_SHANNON, "scsi": KIND_SCSI}.get(b.transport or "", KIND_BLOCK)
    if kind == KIND_SCSI and b.model is None:
        kind = KIND_ATA
    return DriveReading(
        kind=kind,
        device=f"/dev/{b.drive_name}",
        block_device=b.drive_name,
        serial=b.serial,
        wwn=b.wwid,
        model=b.model,
        firmware=b.firmware,
        capacity_bytes=b.size_bytes,
        is_ssd=None if b.rotational is None else not b.rotational,
        sources={"identity": "sysfs"},
    )
