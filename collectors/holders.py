"""What each drive holds: mounted filesystems, md arrays, LVM volumes, dm-crypt and multipath
maps, ZFS pools.

An alert that names ``sdb`` and a serial makes the on-call look up what lives there; one that
says ``sdb: /var/lib/postgresql (md0, ext4)`` does not. The stack is followed upwards from each
drive: partition -> md -> dm-crypt -> LVM -> mount, or a partition -> ZFS pool -> its datasets.

Sources, all optional (a host without md, LVM or ZFS simply has none)::

    /sys/block/sdb/holders/md0             who sits on the whole disk
    /sys/block/sdb/sdb1/holders/md0        ... on a partition (sdb1/partition marks one)
    /sys/block/md0/slaves/sdb1             the same relation seen from above
    /sys/block/md0/md/dev-sdb1/            md's own member list
    /sys/block/dm-3/dm/name                "vg0-pg" (LVM doubles a hyphen inside a name)
    /sys/block/dm-3/dm/uuid                "LVM-..." LVM, "CRYPT-LUKS2-..." dm-crypt,
                                           "mpath-..." multipath, "part1-mpath-..." kpartx
    /proc/mdstat                           md0 : active raid1 sdc1[1] sdb1[0]
    /proc/mounts                           /dev/md0 /var/lib/postgresql ext4 rw,relatime 0 0
    zpool status -P                        vdev paths: /dev/sdb1, /dev/disk/by-id/ata-...-part1

ZFS claims its devices without a sysfs holder link, so pools come from ``zpool status -P``,
run through the bounded runner: a host without ``zpool`` has no ZFS (no error), a ``zpool``
that hangs is stopped at its timeout and reported, and the rest of the answer stands.

The parsers are pure; :class:`HoldingsReader` does the I/O through injected roots and runner.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import re
from dataclasses import dataclass, field
from typing import Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Set, Tuple

from collectors.blockdev import is_candidate
from collectors.model import Holding, ParseError, holds_text  # noqa: F401 (holds_text: its old home)
from collectors.runner import ToolResult, run_tool
from collectors.source import (
    ANNOTATE,
    Command,
    HelperChecks,
    Report,
    RunResult,
    Source,
    SourceContext,
    SourceSpec,
    built,
)

log = logging.getLogger("ssdfleet.holders")

Runner = Callable[..., ToolResult]

# At most this many holdings per drive: each becomes one ssd_drive_holds_info series, and a
# container host can bind-mount one filesystem hundreds of times. Mounted ones come first.
MAX_HOLDINGS_PER_DRIVE = 8

# Layers deeper than this are a loop in a broken sysfs tree, not a real stack.
_MAX_DEPTH = 16

# ------------------------------------------------------------------------------------ mounts


@dataclass(frozen=True)
class Mount:
    source: str  # /dev/md0, tank/pgdata, tmpfs
    mountpoint: str
    fstype: str


_OCTAL = re.compile(r"\\([0-7]{3})")


def _unescape(field_text: str) -> str:
    # The kernel writes space, tab, newline and backslash in mount fields as \040 \011 \012 \134.
    return _OCTAL.sub(lambda m: chr(int(m.group(1), 8)), field_text)


def parse_mounts(text: str) -> List[Mount]:
    """``/proc/mounts`` (or ``/proc/self/mounts``): source, mount point, type per line. A line
    with fewer than three fields is skipped; a text of which no line can be read raises."""
    mounts: List[Mount] = []
    lines = [line for line in text.splitlines() if line.strip()]
    for line in lines:
        fields = line.split()
        if len(fields) < 3 or not fields[1].startswith("/"):
            continue
        mounts.append(Mount(_unescape(fields[0]), _unescape(fields[1]), _unescape(fields[2])))
    if lines and not mounts:
        raise ParseError(f"mounts: no line has a source, an absolute mount point and a type: {lines[0][:80]!r}")
    return mounts


# ------------------------------------------------------------------------------------ mdstat


@dataclass(frozen=True)
class MdArray:
    name: str  # md0, md127
    level: Optional[str]  # raid1, raid6; None for an inactive array that does not say
    members: Tuple[str, ...]  # kernel names: sdb1, sdc1, nvme0n1p2


_MD_LINE = re.compile(r"^(md[\w]*)\s*:\s*(.*)$")
_MD_MEMBER = re.compile(r"^([A-Za-z][\w!.-]*)\[\d+\](?:\([A-Za-z]\))*$")


def parse_mdstat(text: str) -> Dict[str, MdArray]:
    """``/proc/mdstat``: each array with its level and member devices (spares and failed
    members included: they are still on the drive). Raises ParseError naming an array line
    that has no state or no readable member."""
    arrays: Dict[str, MdArray] = {}
    for line in text.splitlines():
        m = _MD_LINE.match(line)
        if not m:
            continue
        name, rest = m.group(1), m.group(2).split()
        if not rest or rest[0] not in ("active", "inactive"):
            raise ParseError(f"mdstat: {name}: no state (active/inactive) in {line.strip()[:80]!r}")
        rest = rest[1:]
        while rest and rest[0].startswith("(") and rest[0].endswith(")"):  # (auto-read-only)
            rest = rest[1:]
        level = None
        if rest and "[" not in rest[0]:
            level = rest[0]
            rest = rest[1:]
        members = []
        for token in rest:
            mm = _MD_MEMBER.match(token)
            if not mm:
                raise ParseError(f"mdstat: {name}: member {token!r} is not name[role]")
            members.append(mm.group(1).replace("!", "/"))  # cciss!c0d0 is /dev/cciss/c0d0
        if not members and level is not None:
            raise ParseError(f"mdstat: {name}: no members in {line.strip()[:80]!r}")
        arrays[name] = MdArray(name, level, tuple(members))
    return arrays


# ------------------------------------------------------------------------------ zpool status


@dataclass(frozen=True)
class ZfsVdev:
    pool: str
    path: str  # as zpool status -P prints it: /dev/sdb1, /dev/disk/by-id/ata-...-part1, /ssd4/zfs.log1
    role: str  # data, log, cache, spare, special, dedup
    in_file: bool = False  # a file on a mounted filesystem, attributed to that filesystem's device


_ZFS_GROUPS = {"logs": "log", "cache": "cache", "spares": "spare", "special": "special", "dedup": "dedup"}
_NO_POOLS = ("no pools available", "modules are not loaded", "no such pool")


def parse_zpool_status(text: str) -> List[ZfsVdev]:
    """The leaf devices of every pool in ``zpool status -P`` output, with their role. Only
    absolute paths are leaves with ``-P``; a vdev ZFS cannot open shows as a number ("was
    /dev/...") and is left out. A file vdev (``/ssd4/zfs.log1``) is kept: build_holdings
    gives it to the drive under the filesystem that holds the file."""
    vdevs: List[ZfsVdev] = []
    pool: Optional[str] = None
    in_config = False
    role = "data"
    saw_pool = False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("pool:"):
            pool = stripped[5:].strip() or None
            if pool is None:
                raise ParseError("zpool status: a 'pool:' line without a name")
            saw_pool, in_config, role = True, False, "data"
            continue
        if pool is None:
            continue
        if stripped.startswith("config:"):
            in_config = True
            continue
        if stripped.startswith("errors:"):
            in_config = False
            continue
        if not in_config or not stripped:
            continue
        fields = stripped.split()
        if fields[0] == "NAME" and "STATE" in fields:
            continue
        if fields[0] == pool:
            role = "data"
        elif fields[0] in _ZFS_GROUPS:
            role = _ZFS_GROUPS[fields[0]]
        elif fields[0].startswith("/"):
            vdevs.append(ZfsVdev(pool, fields[0], role))
    if not saw_pool and text.strip() and not any(s in text for s in _NO_POOLS):
        raise ParseError(f"zpool status: no 'pool:' line in {text.strip().splitlines()[0][:80]!r}")
    return vdevs


def _file_vdev(vdev: ZfsVdev, mounts: Sequence[Mount], tree: BlockTree,
               links: Mapping[str, str]) -> Tuple[Optional[str], ZfsVdev]:
    """The device under a vdev that is a file (``zpool create ... log /ssd4/zfs.log1``): the
    filesystem mounted deepest above the file's path, by its source device. ZFS writes the file
    through that filesystem, so its drive takes the log's or the pool's writes. A file on a ZFS
    dataset or on a filesystem without a block device (tmpfs) has no drive here. The path is
    taken as zpool prints it, which is how it was given at ``zpool create``; a symlink in it is
    not followed (this is pure: nothing is read)."""
    best: Optional[Mount] = None
    for mount in mounts:
        point = mount.mountpoint.rstrip("/") or "/"
        inside = vdev.path.startswith(point + "/") if point != "/" else vdev.path.startswith("/")
        # the deepest mount point holds the file; of two on one point, the later (on top) does
        if inside and (best is None or len(point) >= len(best.mountpoint.rstrip("/") or "/")):
            best = mount
    if best is None or best.fstype == "zfs":
        return None, vdev
    dev = resolve_device(best.source, tree, links)
    return dev, dataclasses.replace(vdev, in_file=True)


# ----------------------------------------------------------------------------- device-mapper


def dm_layer(name: str, uuid: str) -> Tuple[str, str]:
    """(kind, label) of a device-mapper map from its dm/name and dm/uuid. kind is ``lvm``,
    ``crypt``, ``mpath``, ``part`` (a kpartx partition of another map) or ``dm``."""
    if uuid.startswith("LVM-"):
        return "lvm", "lvm:" + lvm_name(name)
    if uuid.startswith("CRYPT-"):  # CRYPT-LUKS1-, CRYPT-LUKS2-, CRYPT-PLAIN-, CRYPT-BITLK-
        return "crypt", "crypt:" + name
    if uuid.startswith("mpath-"):
        return "mpath", "mpath:" + name
    if re.match(r"^part\d+-", uuid):
        return "part", name
    return "dm", "dm:" + name


def lvm_name(dm_name: str) -> str:
    """``vg0-pg`` -> ``vg0/pg``; ``ubuntu--vg-ubuntu--lv`` -> ``ubuntu-vg/ubuntu-lv`` (LVM
    doubles every hyphen inside a name and joins VG and LV with a single one). A name with no
    single hyphen is returned as it is: which part is the VG cannot be told."""
    parts = re.split(r"(?<!-)-(?!-)", dm_name)
    if len(parts) != 2 or not all(parts):
        return dm_name
    return "/".join(p.replace("--", "-") for p in parts)


# ------------------------------------------------------------------------------- the graph


@dataclass
class BlockTree:
    """The block devices of one host as sysfs shows them (what :func:`read_block_tree` read)."""

    disks: Set[str] = field(default_factory=set)  # every /sys/block entry
    partitions: Dict[str, str] = field(default_factory=dict)  # sdb1 -> sdb
    partition_numbers: Dict[str, int] = field(default_factory=dict)  # sdb1 -> 1
    uppers: Dict[str, Set[str]] = field(default_factory=dict)  # sdb1 -> {md0}
    dm: Dict[str, Tuple[str, str]] = field(default_factory=dict)  # dm-3 -> (name, uuid)
    ids: Dict[str, Tuple[str, ...]] = field(default_factory=dict)  # sdb -> (serial, wwid)

    def link(self, lower: str, upper: str) -> None:
        if lower and upper and lower != upper:
            self.uppers.setdefault(lower, set()).add(upper)

    def known(self, name: str) -> bool:
        return name in self.disks or name in self.partitions


def drive_name(name: str) -> str:
    """The drive a whole-disk kernel name belongs to: nvme0n1 -> nvme0, as the rest of the
    agent labels NVMe drives by their controller."""
    m = re.match(r"^(nvme\d+)n\d+$", name)
    return m.group(1) if m else name


def resolve_device(path: str, tree: BlockTree, links: Mapping[str, str]) -> Optional[str]:
    """The kernel name of a device path from /proc/mounts or zpool: ``/dev/sdb1`` and
    ``/dev/dm-3`` directly, ``/dev/mapper/NAME`` by dm name, anything else by the symlink
    ``links`` resolved (through the configured /dev root), and a ``/dev/disk/by-id`` name that
    no link resolves by the serial or WWN sysfs gives for a drive. None when nothing fits."""
    if not path.startswith("/dev/"):
        return None
    if path in links and tree.known(links[path]):
        return links[path]
    rest = path[5:]
    if tree.known(rest):
        return rest
    if rest.startswith("mapper/"):
        wanted = rest[7:]
        for dev, (name, _uuid) in tree.dm.items():
            if name == wanted:
                return dev
        return None
    if rest.startswith("disk/by-id/"):
        return _by_id(rest[11:], tree)
    return None


def _by_id(ident: str, tree: BlockTree) -> Optional[str]:
    part_number = None
    m = re.match(r"^(.*)-part(\d+)$", ident)
    if m:
        ident, part_number = m.group(1), int(m.group(2))
    bus, _, rest = ident.partition("-")
    if not rest:
        return None
    matches = []
    for disk, ids in tree.ids.items():
        for value in ids:
            if not value or len(value) < 4:
                continue
            # ata-<model>_<serial>, nvme-<model>_<serial>, scsi-<vendor>_<model>_<serial>;
            # wwn-0x<naa> against wwid naa.<hex>; nvme-eui.<x> against wwid eui.<x>.
            bare = value.split(".", 1)[1] if re.match(r"^(naa|eui|t10)\.", value) else value
            if (rest.endswith("_" + value) or rest == value or (bus == "wwn" and rest.lower() == "0x" + bare.lower())
                    or rest.lower() == value.lower()):
                matches.append(disk)
                break
    if len(set(matches)) != 1:
        return None
    disk = matches[0]
    if part_number is None:
        return disk
    for part, parent in tree.partitions.items():
        if parent == disk and tree.partition_numbers.get(part) == part_number:
            return part
    return None


def _layer(name: str, tree: BlockTree) -> Tuple[str, str]:
    if name in tree.dm:
        return dm_layer(*tree.dm[name])
    if name in tree.partitions:
        return "part", name
    if name.startswith("md"):
        return "md", name
    return "other", name


def build_holdings(
    tree: BlockTree,
    mounts: Sequence[Mount] = (),
    md_arrays: Mapping[str, MdArray] = (),  # type: ignore[assignment]
    vdevs: Sequence[ZfsVdev] = (),
    links: Mapping[str, str] = (),  # type: ignore[assignment]
) -> Dict[str, Tuple[Holding, ...]]:
    """What each physical drive holds, keyed by drive name (sdb, nvme0, dfa). Pure: every
    input was read before. /proc/mdstat members add to the sysfs links (an array whose
    members sysfs does not list is still followed)."""
    md_arrays = dict(md_arrays or {})
    links = dict(links or {})
    tree = dataclasses.replace(tree, uppers={k: set(v) for k, v in tree.uppers.items()})  # the caller's stays as read
    for array in md_arrays.values():
        for member in array.members:
            tree.link(member, array.name)
    by_device: Dict[str, List[Mount]] = {}
    zfs_mounts: Dict[str, List[Mount]] = {}
    for mount in mounts:
        if mount.fstype == "zfs":
            zfs_mounts.setdefault(mount.source.split("/", 1)[0], []).append(mount)
            continue
        dev = resolve_device(mount.source, tree, links)
        if dev is not None:
            by_device.setdefault(dev, []).append(mount)
    pools_on: Dict[str, List[ZfsVdev]] = {}
    for vdev in vdevs:
        dev = resolve_device(vdev.path, tree, links)
        if dev is None and not vdev.path.startswith("/dev/"):
            dev, vdev = _file_vdev(vdev, mounts, tree, links)
        if dev is not None:
            pools_on.setdefault(dev, []).append(vdev)

    out: Dict[str, Tuple[Holding, ...]] = {}
    for disk in sorted(tree.disks):
        if not is_candidate(disk) or disk in tree.partitions:
            continue
        found: List[Holding] = []
        starts = [(disk, "")] + sorted((p, p) for p, parent in tree.partitions.items() if parent == disk)
        for start, partition in starts:
            _walk(start, partition, (), tree, by_device, pools_on, zfs_mounts, found, {start})
        if found:
            unique = list(dict.fromkeys(found))
            unique.sort(key=lambda h: (h.mountpoint == "", h.mountpoint, h.stack))
            key = drive_name(disk)
            out[key] = tuple(list(out.get(key, ())) + unique)[:MAX_HOLDINGS_PER_DRIVE]
    return out


def _walk(node: str, partition: str, stack: Tuple[str, ...], tree: BlockTree,
          by_device: Mapping[str, List[Mount]],
          pools_on: Mapping[str, List[ZfsVdev]], zfs_mounts: Mapping[str, List[Mount]],
          found: List[Holding], seen: Set[str]) -> None:
    for mount in by_device.get(node, ()):
        found.append(Holding(mount.mountpoint, mount.fstype, partition, stack))
    for vdev in pools_on.get(node, ()):
        layer = f"zfs:{vdev.pool}" + ("" if vdev.role == "data" else f"({vdev.role})")
        # a vdev that is a file sits on the filesystem this layer mounts: that filesystem's
        # drive wears for it (seeds/003: a pool's log on files in /ssd4)
        below = stack + ((f"file:{vdev.path}",) if vdev.in_file else ()) + (layer,)
        datasets = zfs_mounts.get(vdev.pool, ())
        for mount in datasets:
            found.append(Holding(mount.mountpoint, mount.fstype, partition, below))
        if not datasets:
            found.append(Holding("", "", partition, below))
    uppers = sorted(u for u in tree.uppers.get(node, ()) if u not in seen)
    if not uppers and stack and node not in by_device and node not in pools_on:
        found.append(Holding("", "", partition, stack))  # an array or volume nobody mounted
    if len(stack) >= _MAX_DEPTH:
        return
    for upper in uppers:
        kind, label = _layer(upper, tree)
        _walk(upper, partition, stack if kind == "part" and not stack else stack + (label,), tree,
              by_device, pools_on, zfs_mounts, found, seen | {upper})


def summary(device: str, holds: Iterable[Holding]) -> str:
    """``sdb: /var/lib/postgresql (md0, ext4)``; several holdings joined by ``; ``."""
    parts = [h.describe() for h in holds]
    return f"{device}: {'; '.join(parts)}" if parts else f"{device}: nothing mounted or assembled"


# ------------------------------------------------------------------------------- the reader


def _read(path: str, limit: int = 4096) -> Optional[str]:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read(limit)
    except OSError:
        return None


def _listdir(path: str) -> List[str]:
    try:
        return sorted(os.listdir(path))
    except OSError:
        return []


def read_block_tree(sysfs_root: str) -> BlockTree:
    """Everything :func:`build_holdings` needs from ``<sysfs_root>/block``; unreadable parts
    are left out."""
    tree = BlockTree()
    base = os.path.join(sysfs_root, "block")
    for disk in _listdir(base):
        d = os.path.join(base, disk)
        tree.disks.add(disk)
        for upper in _listdir(os.path.join(d, "holders")):
            tree.link(disk, upper)
        for lower in _listdir(os.path.join(d, "slaves")):
            tree.link(lower, disk)
        for entry in _listdir(os.path.join(d, "md")):
            if entry.startswith("dev-"):
                tree.link(entry[4:], disk)
        name = _read(os.path.join(d, "dm", "name"))
        if name is not None:
            tree.dm[disk] = (name.strip(), (_read(os.path.join(d, "dm", "uuid")) or "").strip())
        ids = tuple(v.replace("\x00", "").strip() for v in (
            _read(os.path.join(d, "device", "serial")) or _read(os.path.join(d, "serial")) or "",
            _read(os.path.join(d, "device", "wwid")) or _read(os.path.join(d, "wwid")) or "",
        ))
        if any(ids):
            tree.ids[disk] = ids
        for part in _listdir(d):
            number = _read(os.path.join(d, part, "partition"))
            if number is None:
                continue
            tree.partitions[part] = disk
            if number.strip().isdigit():
                tree.partition_numbers[part] = int(number.strip())
            for upper in _listdir(os.path.join(d, part, "holders")):
                tree.link(part, upper)
    return tree


class HoldingsReader:
    """Reads sysfs, /proc/mounts, /proc/mdstat and ``zpool status -P`` and builds what each
    drive holds. ``read()`` never raises for the host's faults: it returns the holdings it
    could build and a list of errors (a hung zpool, an unreadable mdstat)."""

    def __init__(self, sysfs_root: str = "/sys", procfs_root: str = "/proc", dev_root: str = "/dev",
                 zpool: str = "zpool", runner: Runner = run_tool) -> None:
        self.sysfs_root = sysfs_root
        self.procfs_root = procfs_root
        self.dev_root = dev_root
        self.zpool = zpool
        self.runner = runner  # bounded by its caller: the agent's runner applies the tool timeout
        self.stuck: Optional[ToolResult] = None  # the last zpool run when it outlived SIGKILL

    def read(self) -> Tuple[Dict[str, Tuple[Holding, ...]], List[str]]:
        errors: List[str] = []
        tree = read_block_tree(self.sysfs_root)
        mounts: List[Mount] = []
        text = _read(os.path.join(self.procfs_root, "mounts"), 4 * 1024 * 1024)
        if text is not None:
            try:
                mounts = parse_mounts(text)
            except ParseError as exc:
                errors.append(str(exc))
        md: Dict[str, MdArray] = {}
        text = _read(os.path.join(self.procfs_root, "mdstat"), 1024 * 1024)
        if text is not None:
            try:
                md = parse_mdstat(text)
            except ParseError as exc:
                errors.append(str(exc))
        vdevs, zfs_error = self.read_zpool()
        if zfs_error:
            errors.append(zfs_error)
        paths = [m.source for m in mounts] + [v.path for v in vdevs]
        return build_holdings(tree, mounts, md, vdevs, self.resolve_links(paths)), errors

    def read_zpool(self) -> Tuple[List[ZfsVdev], Optional[str]]:
        """The pools' leaf devices, and an error text when zpool ran and failed. A zpool that
        is not installed, or whose kernel module is not loaded, means no ZFS: no error."""
        result = self.runner([self.zpool, "status", "-P"])
        self.stuck = result if result.stuck else None
        if result.error is not None:
            return [], None  # not installed / not executable: this host has no ZFS
        if not result.ok_to_parse:
            return [], f"zpool status -P: {result.describe()}; no ZFS pool membership this time"
        text = result.stdout.decode("utf-8", "replace")
        said = text + result.stderr.decode("utf-8", "replace")
        if any(s in said for s in _NO_POOLS):
            return [], None
        if result.exit_code != 0:
            return [], f"zpool status -P: exit status {result.exit_code}: {said.strip()[:200]}"
        try:
            return parse_zpool_status(text), None
        except ParseError as exc:
            return [], str(exc)

    def resolve_links(self, paths: Iterable[str]) -> Dict[str, str]:
        """``/dev/...`` path -> kernel name, for every path that is a symlink under the
        configured /dev root (``/dev/disk/by-id/...``, ``/dev/md/name``, ``/dev/vg/lv``)."""
        out: Dict[str, str] = {}
        for path in paths:
            if not path.startswith("/dev/") or path in out:
                continue
            local = os.path.join(self.dev_root, path[5:])
            try:
                if not os.path.islink(local):
                    continue
                target = os.path.realpath(local)
            except OSError:
                continue
            out[path] = os.path.basename(target)
        return out


# ------------------------------------------------------------------ the source

HOLDERS_PROBE = "zpool status -P"  # the host-wide call is quarantined under this name


class HoldersSource(Source):
    """Reads what each drive holds as often as discovery runs: a stack changes when an
    operator builds one, not from one second to the next."""

    def __init__(self, ctx: SourceContext) -> None:
        super().__init__(ctx)
        config = ctx.config
        self.reader = HoldingsReader(config.paths.sysfs, config.paths.procfs, config.paths.dev,
                                     zpool=ctx.tool_paths["zpool"], runner=ctx.run)
        self._holds: Dict[str, Tuple[Tuple[Holding, ...], float]] = {}

    def run(self, budget: Optional[float] = None) -> RunResult:
        got = self.ctx.probe(HOLDERS_PROBE, self.reader.read)
        if got is None:
            return RunResult(unread=("zpool status -P: skipped, an earlier call is stuck",))
        holds, errors = got
        for e in errors:
            log.warning("holders: %s", e)
        now = self.ctx.clock()
        self._holds = {name: (tuple(found), now) for name, found in holds.items()}
        return RunResult(tuple(errors))

    def report(self) -> Report:
        return Report(per_drive=dict(self._holds))


def helper_rule(checks: HelperChecks, tool: str, args: List[str]) -> Optional[Command]:
    """``zpool status -P`` and nothing else: it reads the pools' configuration."""
    if tool != "zpool":
        return None
    return checks.match("zpool", "status", args, [
        built(lambda runner: HoldingsReader(zpool=checks.paths["zpool"], runner=runner).read_zpool())])


SPEC = SourceSpec(
    name="holders",
    help="what each drive holds: partitions, md arrays, LVM, dm-crypt, ZFS pools and mount points",
    interval=600.0,
    build=HoldersSource,
    role=ANNOTATE,
    tools={"zpool": ("zpool", "zpool")},
    helper=helper_rule,
    annotates="holds",
    priority=85,
)
