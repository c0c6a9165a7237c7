"""What each drive holds (collectors/holders.py), on real captured layouts.

Captures (tests/fixtures/holders, provenance in PROVENANCE.tsv): /proc/mdstat, /proc/mounts and a
sysfs block tree with LVM, multipath and md maps from prometheus/node_exporter and
prometheus/procfs, and ``zpool status -P`` output from openmediavault-zfs's test data. Whole
sysfs trees with holders links are rarely published, so the trees here are the procfs capture
unpacked and, where a case needs more (partitions, holders of a partition, a dm-crypt map), the
missing files added by the test in the kernel's own layout, each named below.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Dict, Optional

import pytest

from collectors import holders
from collectors.holders import (
    BlockTree,
    HoldingsReader,
    Mount,
    ZfsVdev,
    build_holdings,
    dm_layer,
    lvm_name,
    parse_mdstat,
    parse_mounts,
    parse_zpool_status,
    read_block_tree,
    resolve_device,
    summary,
)
from collectors.model import Holding, ParseError
from collectors.runner import Bounds, bounded, run_tool
from tests.conftest import fixture_path
from tests.fakehost import FakeHost
from tests.support.holders import fake_zpool  # noqa: F401 (a fixture)

FX = "holders/"


def untar(ttar: str, dest: Path) -> None:
    """Unpack prometheus' ttar text format (Directory:/Path:/Lines:/SymlinkTo:/Mode:)."""
    lines = ttar.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("Directory: "):
            (dest / line[11:]).mkdir(parents=True, exist_ok=True)
        elif line.startswith("Path: "):
            path = dest / line[6:]
            path.parent.mkdir(parents=True, exist_ok=True)
            nxt = lines[i + 1]
            if nxt.startswith("SymlinkTo: "):
                os.symlink(nxt[11:], path)
                i += 1
            elif nxt.startswith("Lines: "):
                count = int(nxt[7:])
                body = lines[i + 2:i + 2 + count]
                text = "\n".join(body) + "\n" if body else ""
                if text.endswith("EOF\n"):  # ttar: no newline at the end of the file
                    text = text[:-4]
                path.write_text(text)
                i += 1 + count
        i += 1


def procfs_sysfs(root: Path) -> Path:
    """The procfs capture's /sys/block excerpt: dm-0 (LVM, on sda), dm-1 (multipath mpathA on
    sdb and sdc), md1 (raid1, members sdi and sdj in md/dev-*)."""
    sys_root = root / "sys"
    untar(fixture_path(FX + "procfs__sys_block_excerpt.ttar").read_text(), sys_root)
    return sys_root


def disk(sys_root: Path, name: str, partitions=(), serial: Optional[str] = None) -> None:
    """A whole disk with partitions, as the kernel lays them out: /sys/block/sdb/sdb1/partition."""
    d = sys_root / "block" / name
    d.mkdir(parents=True, exist_ok=True)
    (d / "holders").mkdir(exist_ok=True)
    for number, part in enumerate(partitions, 1):
        (d / part / "holders").mkdir(parents=True, exist_ok=True)
        (d / part / "partition").write_text(f"{number}\n")
    if serial:
        (d / "device").mkdir(exist_ok=True)
        (d / "device" / "serial").write_text(serial + "\n")


def dm(sys_root: Path, dev: str, name: str, uuid: str, slaves) -> None:
    """A device-mapper map and the holders links its slaves get (dm_get_device -> bd_link_disk_holder)."""
    d = sys_root / "block" / dev
    (d / "dm").mkdir(parents=True, exist_ok=True)
    (d / "dm" / "name").write_text(name + "\n")
    (d / "dm" / "uuid").write_text(uuid + "\n")
    (d / "slaves").mkdir(exist_ok=True)
    for slave in slaves:
        (d / "slaves" / slave).touch()
        holder_dir = _node_dir(sys_root, slave) / "holders"
        holder_dir.mkdir(parents=True, exist_ok=True)
        (holder_dir / dev).touch()


def md(sys_root: Path, dev: str, members) -> None:
    d = sys_root / "block" / dev
    (d / "md").mkdir(parents=True, exist_ok=True)
    (d / "slaves").mkdir(exist_ok=True)
    for member in members:
        (d / "slaves" / member).touch()
        (d / "md" / f"dev-{member}").mkdir(exist_ok=True)
        (_node_dir(sys_root, member) / "holders" / dev).touch()


def _node_dir(sys_root: Path, name: str) -> Path:
    direct = sys_root / "block" / name
    if direct.exists():
        return direct
    for parent in (sys_root / "block").iterdir():
        if (parent / name / "partition").exists():
            return parent / name
    raise FileNotFoundError(name)


def mdstat_arrays():
    return parse_mdstat(fixture_path(FX + "node_exporter__proc_mdstat.txt").read_text())


def zpool(name: str):
    return parse_zpool_status(fixture_path(FX + f"omvzfs__zpool_status_P_{name}.txt").read_text())


# ---------------------------------------------------------------------------- the parsers


def test_mdstat_capture_arrays_levels_and_partition_members():
    arrays = mdstat_arrays()
    assert len(arrays) == 12
    assert arrays["md3"].level == "raid6"
    assert arrays["md3"].members == ("sda1", "sdh1", "sdg1", "sdf1", "sde1", "sdd1", "sdc1", "sdb1")
    assert arrays["md0"].level == "raid1" and arrays["md0"].members == ("sdi1", "sdj1")
    assert arrays["md11"].level == "raid1"  # "active (auto-read-only) raid1"
    assert arrays["md4"].level == "raid1"  # inactive arrays still say their level
    # an inactive IMSM container: no level, whole disks as spare members
    assert arrays["md219"].level is None and arrays["md219"].members == ("sdb", "sdc", "sda")


def test_mdstat_invalid_capture_is_a_parse_error():
    with pytest.raises(ParseError, match="md3"):
        parse_mdstat(fixture_path(FX + "node_exporter__proc_mdstat_invalid.txt").read_text())


def test_mounts_capture_decodes_octal_escapes():
    mounts = parse_mounts(fixture_path(FX + "node_exporter__proc_1_mounts.txt").read_text())
    assert len(mounts) == 32
    assert Mount("/dev/sda3", "/boot", "ext2") in mounts
    assert Mount("/dev/dm-2", "/", "ext4") in mounts
    kube = [m.mountpoint for m in mounts if m.source == "/dev/sda"]
    assert kube[0].startswith("/var/lib/kubelet/") and "[vsanDatastore] bafb9e5a" in kube[0]  # \040
    assert "[vsanDatastore]\tbafb9e5a" in kube[1]  # \011


@pytest.mark.parametrize("name, pools, count, roles", [
    ("simplepool_sata_byid", {"simplepool_sata_byid"}, 2, {"data"}),
    ("simplepool_mixed_bydev", {"simplepool_mixed_bydev"}, 5, {"data"}),
    ("simplepool_devicemapper_bydev", {"simplepool_devicemapper_bydev"}, 2, {"data"}),
    ("complexpool_createdupfront", {"complexpool_createdupfront"}, 16, {"data", "log", "cache", "spare"}),
])
def test_zpool_status_captures(name, pools, count, roles):
    vdevs = zpool(name)
    assert {v.pool for v in vdevs} == pools
    assert len(vdevs) == count
    assert {v.role for v in vdevs} == roles
    assert all(v.path.startswith("/dev/") for v in vdevs)


def test_zpool_status_roles_follow_the_group_lines():
    vdevs = zpool("complexpool_createdupfront")
    by_role: Dict[str, list] = {}
    for v in vdevs:
        by_role.setdefault(v.role, []).append(v.path)
    assert len(by_role["data"]) == 8 and len(by_role["log"]) == 2 and len(by_role["cache"]) == 2
    assert len(by_role["spare"]) == 4
    assert by_role["spare"][-1] == "/dev/disk/by-id/ata-VBOX_HARDDISK_VBbcde4567-sdr-part1"


def test_procfs_sysfs_capture_tree(tmp_path):
    sys_root = procfs_sysfs(tmp_path)
    tree = read_block_tree(str(sys_root))
    assert "sdi" not in tree.disks  # the capture lists md1's members but has no /sys/block/sdi
    assert tree.dm["dm-0"] == ("vg0--lv_root", "LVM-3zSHSR5Nbf4j7g6auAAefWY2CMaX01theZYEvQyecVsm2WtX3iY5q51qq5dWWOq7")
    assert tree.dm["dm-1"] == ("mpathA", "mpath-360000000000001")
    assert tree.uppers["sda"] == {"dm-0"}
    assert tree.uppers["sdb"] == {"dm-1"} and tree.uppers["sdc"] == {"dm-1"}
    assert tree.uppers["sdi"] == {"md1"} and tree.uppers["sdj"] == {"md1"}  # from md/dev-sdi
    held = build_holdings(tree)
    # "vg0--lv_root" has no single hyphen: the VG cannot be told, the dm name is kept whole
    assert held["sda"] == (Holding("", "", "", ("lvm:vg0--lv_root",)),)
    assert held["sdb"] == held["sdc"] == (Holding("", "", "", ("mpath:mpathA",)),)
    assert "sdi" not in held
    disk(sys_root, "sdi")  # with the member's own entry, as a real host has it
    held = build_holdings(read_block_tree(str(sys_root)))
    assert summary("sdi", held["sdi"]) == "sdi: md1 (not mounted)"


@pytest.mark.parametrize("name, uuid, want", [
    ("vg0-pg", "LVM-abc", ("lvm", "lvm:vg0/pg")),
    ("ubuntu--vg-ubuntu--lv", "LVM-xyz", ("lvm", "lvm:ubuntu-vg/ubuntu-lv")),
    ("pgcrypt", "CRYPT-LUKS2-0c9f1c8d4c2a4f5b9a3e2d1c0b9a8f7e-pgcrypt", ("crypt", "crypt:pgcrypt")),
    ("old", "CRYPT-LUKS1-1234-old", ("crypt", "crypt:old")),
    ("mpatha", "mpath-3600508b400105e210000900000490000", ("mpath", "mpath:mpatha")),
    ("mpatha-part1", "part1-mpath-3600508b400105e210000900000490000", ("part", "mpatha-part1")),
    ("thing", "", ("dm", "dm:thing")),
])
def test_dm_layer_from_name_and_uuid(name, uuid, want):
    assert dm_layer(name, uuid) == want


# ------------------------------------------------------------------ the stacks, end to end


def postgres_host(tmp_path: Path) -> FakeHost:
    """A database host: the procfs capture plus

    * sdi, sdj with two partitions each; md0 = raid1 over sdi1 + sdj1 and md127 over sdi2 + sdj2
      (the arrays and members of the node_exporter /proc/mdstat capture);
    * LVM vg0/pg on md127; dm-crypt pgcrypt on sdk1 and LVM vgdata/wal inside it;
    * sda3 mounted at /boot (the node_exporter /proc/mounts capture's line);
    * ZFS pool simplepool_sata_byid on sdg1 and sdh1 (openmediavault-zfs capture), whose by-id
      names resolve through no /dev link (the test gives none) but through the sysfs serial.
    """
    host = FakeHost(tmp_path)
    sys_root = procfs_sysfs(tmp_path)
    assert sys_root == host.sys
    disk(host.sys, "sda", ["sda1", "sda2", "sda3"])
    for name in ("sdi", "sdj"):
        disk(host.sys, name, [name + "1", name + "2"])
    disk(host.sys, "sdk", ["sdk1"])
    disk(host.sys, "sdg", ["sdg1"], serial="VB84ca63f0-sdg")
    disk(host.sys, "sdh", ["sdh1"], serial="VB84ca63f0-sdh")
    # The capture's md1 is built from the whole sdi and sdj; this host partitions them instead.
    shutil.rmtree(host.sys / "block" / "md1")
    md(host.sys, "md0", ["sdi1", "sdj1"])
    md(host.sys, "md127", ["sdi2", "sdj2"])
    dm(host.sys, "dm-3", "vg0-pg", "LVM-Kq7gD0uLq4B2Vd5nTt1yW3fZ8xR6cP9sJ0hM2aE4bN7vC1iU5oY8kL3wQ6tG9dF", ["md127"])
    dm(host.sys, "dm-4", "pgcrypt", "CRYPT-LUKS2-3f5e2a9c7b1d4e6f8a0b2c4d6e8f0a1b-pgcrypt", ["sdk1"])
    dm(host.sys, "dm-5", "vgdata-wal", "LVM-p0Yx2W4v6U8t0S2r4Q6o8N0m2L4k6J8iH0gF2eD4cB6aZ8yX0wV2uT4sR6qP8o", ["dm-4"])
    # Of the mdstat capture, the two arrays this host has (the others name sda1..sdh1 as members).
    text = fixture_path(FX + "node_exporter__proc_mdstat.txt").read_text()
    blocks = text.split("\n\n")
    kept = [text.splitlines()[0]] + [b for b in blocks if b.startswith(("md127 ", "md0 ", "unused"))]
    assert len(kept) == 4
    (host.proc / "mdstat").write_text("\n".join(kept[:1]) + "\n" + "\n\n".join(kept[1:]))
    (host.proc / "mounts").write_text(
        fixture_path(FX + "node_exporter__proc_1_mounts.txt").read_text()
        + "/dev/md0 /var/lib/postgresql ext4 rw,relatime 0 0\n"
        + "/dev/mapper/vg0-pg /srv/pg\\040archive xfs rw,relatime 0 0\n"
        + "/dev/mapper/vgdata-wal /var/lib/postgresql/16/main/pg_wal ext4 rw,relatime 0 0\n"
        + "simplepool_sata_byid/backups /backups zfs rw,xattr,noacl 0 0\n"
    )
    fake_zpool(host, fixture_path(FX + "omvzfs__zpool_status_P_simplepool_sata_byid.txt"))
    return host


def reader(host: FakeHost, **kw) -> HoldingsReader:
    kw.setdefault("zpool", str(host.bin / "zpool"))
    return HoldingsReader(str(host.sys), str(host.proc), str(host.root / "dev"), **kw)


def test_every_stack_on_a_database_host(tmp_path):
    held, errors = reader(postgres_host(tmp_path)).read()
    assert errors == []
    # a partition
    assert Holding("/boot", "ext2", "sda3", ()) in held["sda"]
    # md RAID1 over partitions; the array over the other partitions holds an LVM volume
    assert held["sdi"] == (
        Holding("/srv/pg archive", "xfs", "sdi2", ("md127", "lvm:vg0/pg")),
        Holding("/var/lib/postgresql", "ext4", "sdi1", ("md0",)),
    )
    assert summary("sdi", held["sdi"][1:]) == "sdi: /var/lib/postgresql (md0, ext4)"
    assert [h.partition for h in held["sdj"]] == ["sdj2", "sdj1"]
    # dm-crypt with LVM inside
    assert held["sdk"] == (Holding("/var/lib/postgresql/16/main/pg_wal", "ext4", "sdk1",
                                   ("crypt:pgcrypt", "lvm:vgdata/wal")),)
    # ZFS: the by-id names resolved by the serial sysfs gives; the pool's dataset mount
    assert held["sdg"] == (Holding("/backups", "zfs", "sdg1", ("zfs:simplepool_sata_byid",)),)
    assert held["sdh"] == (Holding("/backups", "zfs", "sdh1", ("zfs:simplepool_sata_byid",)),)
    # the multipath paths from the capture, and the kubelet mounts of /dev/sda, are there too
    assert held["sdb"] == (Holding("", "", "", ("mpath:mpathA",)),)
    assert sum(1 for h in held["sda"] if h.mountpoint.startswith("/var/lib/kubelet/")) == 2


def test_by_id_links_resolve_through_the_dev_root(tmp_path):
    host = FakeHost(tmp_path)
    names = "bcdefghijklmnopr"
    for letter in names:
        disk(host.sys, "sd" + letter, ["sd" + letter + "1"])
    by_id = host.root / "dev" / "disk" / "by-id"
    by_id.mkdir(parents=True)
    vdevs = zpool("complexpool_createdupfront")
    for v in vdevs:
        kernel = v.path.rsplit("-", 2)[1] + "1"  # the capture's names say their disk: ...-sdb-part1
        os.symlink(f"../../{kernel}", by_id / os.path.basename(v.path))
    fake_zpool(host, fixture_path(FX + "omvzfs__zpool_status_P_complexpool_createdupfront.txt"))
    held, errors = reader(host).read()
    assert errors == []
    assert held["sdb"] == (Holding("", "", "sdb1", ("zfs:complexpool_createdupfront",)),)
    assert held["sdj"] == (Holding("", "", "sdj1", ("zfs:complexpool_createdupfront(log)",)),)
    assert held["sdl"] == (Holding("", "", "sdl1", ("zfs:complexpool_createdupfront(cache)",)),)
    assert held["sdr"] == (Holding("", "", "sdr1", ("zfs:complexpool_createdupfront(spare)",)),)
    assert summary("sdj", held["sdj"]) == "sdj: zfs:complexpool_createdupfront(log) (not mounted)"


def test_zfs_on_nvme_namespaces_and_on_lvm(tmp_path):
    host = FakeHost(tmp_path)
    procfs_sysfs(tmp_path)
    disk(host.sys, "sdg", ["sdg1"])
    disk(host.sys, "sdh", ["sdh1"])
    disk(host.sys, "nvme0n1", ["nvme0n1p1"])
    disk(host.sys, "nvme0n2", ["nvme0n2p1"])
    fake_zpool(host, fixture_path(FX + "omvzfs__zpool_status_P_simplepool_mixed_bydev.txt"))
    (host.proc / "mounts").write_text("simplepool_mixed_bydev /simplepool_mixed_bydev zfs rw,xattr 0 0\n")
    held, errors = reader(host).read()
    assert errors == []
    pool = "zfs:simplepool_mixed_bydev"
    # both namespaces' partitions belong to the drive nvme0, as the agent labels NVMe drives
    assert held["nvme0"] == (Holding("/simplepool_mixed_bydev", "zfs", "nvme0n1p1", (pool,)),
                             Holding("/simplepool_mixed_bydev", "zfs", "nvme0n2p1", (pool,)))
    assert "nvme0n1" not in held
    # /dev/dm-0 is the capture's LVM map on sda
    assert held["sda"] == (Holding("/simplepool_mixed_bydev", "zfs", "", ("lvm:vg0--lv_root", pool)),)


def test_zpool_on_device_mapper_capture(tmp_path):
    host = FakeHost(tmp_path)
    procfs_sysfs(tmp_path)
    fake_zpool(host, fixture_path(FX + "omvzfs__zpool_status_P_simplepool_devicemapper_bydev.txt"))
    held, errors = reader(host).read()
    assert errors == []
    assert held["sdc"] == (Holding("", "", "", ("mpath:mpathA", "zfs:simplepool_devicemapper_bydev")),)


def test_zfs_vdevs_that_are_files_belong_to_the_drive_under_them():
    """seeds/003: pool zptest on four files in /opt, its log a mirror of two files in /ssd4 (the
    OCZ drive sdb1), its cache sda1. The files' filesystems come from the seed's `df -h` (which
    does not print the type: ext4 here stands for any block filesystem). Each file vdev is held
    by the drive under its filesystem, so the log's writes are on sdb's account; the cache,
    printed as a bare name without -P, is not guessed."""
    vdevs = parse_zpool_status(fixture_path(FX + "seed003__zpool_status_zptest.txt").read_text())
    assert [(v.path, v.role) for v in vdevs] == [(f"/opt/zfs.disk{i}", "data") for i in range(1, 5)] + [
        ("/ssd4/zfs.log1", "log"), ("/ssd4/zfs.log2", "log")]
    tree = BlockTree(disks={"sda", "sdb", "sdc", "sdd"},
                     partitions={"sda1": "sda", "sdb1": "sdb", "sdc1": "sdc", "sdc2": "sdc", "sdc3": "sdc",
                                 "sdd1": "sdd"})
    mounts = [Mount("/dev/sdc1", "/", "ext4"), Mount("tmpfs", "/dev/shm", "tmpfs"), Mount("/dev/sdc3", "/opt", "ext4"),
              Mount("/dev/sdd1", "/ssd1", "ext4"), Mount("/dev/sdb1", "/ssd4", "ext4"), Mount("zptest", "/zptest", "zfs")]
    held = build_holdings(tree, mounts, vdevs=vdevs)
    log = [("file:/ssd4/zfs.log1", "zfs:zptest(log)"), ("file:/ssd4/zfs.log2", "zfs:zptest(log)")]
    assert held["sdb"] == (Holding("/ssd4", "ext4", "sdb1", ()),
                           *(Holding("/zptest", "zfs", "sdb1", stack) for stack in log))
    assert summary("sdb", held["sdb"][1:2]) == "sdb: /zptest (file:/ssd4/zfs.log1, zfs:zptest(log), zfs)"
    # the data files are on /opt, sdc3; / (sdc1), which also lies above them, is not the deepest
    assert [h for h in held["sdc"] if h.fstype == "zfs"] == [
        Holding("/zptest", "zfs", "sdc3", (f"file:/opt/zfs.disk{i}", "zfs:zptest")) for i in range(1, 5)]
    assert held["sdd"] == (Holding("/ssd1", "ext4", "sdd1", ()),)
    assert "sda" not in held


@pytest.mark.parametrize("path,mounts,device", [
    ("/ssd4/zfs.log1", [Mount("/dev/sdb1", "/ssd4", "ext4"), Mount("/dev/sdc1", "/ssd4", "xfs")], "sdc"),  # on top
    ("/ssd40/zfs.log1", [Mount("/dev/sdb1", "/ssd4", "ext4")], None),  # a name that only starts alike
    ("/tank/log", [Mount("/dev/sdb1", "/", "ext4"), Mount("tank", "/tank", "zfs")], None),  # inside ZFS
    ("/run/log", [Mount("/dev/sdb1", "/", "ext4"), Mount("tmpfs", "/run", "tmpfs")], None),  # no block device
    ("/var/log1", [Mount("/dev/sdb1", "/", "ext4")], "sdb"),  # only the root holds it
])
def test_file_vdev_mount_choice(path, mounts, device):
    tree = BlockTree(disks={"sdb", "sdc"}, partitions={"sdb1": "sdb", "sdc1": "sdc"})
    held = build_holdings(tree, mounts, vdevs=[ZfsVdev("p", path, "log")])
    zfs = {drive for drive, holds in held.items() if any("zfs:p(log)" in h.stack for h in holds)}
    assert zfs == ({device} if device else set())


def test_cap_per_drive_keeps_mounted_first(tmp_path):
    tree = BlockTree(disks={"sdb"})
    mounts = [Mount("/dev/sdb", f"/var/lib/docker/overlay/{i:03d}", "ext4") for i in range(40)]
    held = build_holdings(tree, mounts)
    assert len(held["sdb"]) == holders.MAX_HOLDINGS_PER_DRIVE
    assert held["sdb"][0].mountpoint == "/var/lib/docker/overlay/000"


# --------------------------------------------------------------------- zpool through the runner


def test_missing_zpool_is_no_zfs(tmp_path):
    host = postgres_host(tmp_path)
    held, errors = reader(host, zpool=str(tmp_path / "no-such-zpool")).read()
    assert errors == []
    assert "sdg" not in held and held["sdi"]  # the rest stands


def test_hung_zpool_is_an_error_and_no_zfs(tmp_path):
    host = postgres_host(tmp_path)
    fake_zpool(host, fixture_path(FX + "omvzfs__zpool_status_P_simplepool_sata_byid.txt"), sleep=30)
    held, errors = reader(host, runner=bounded(run_tool, lambda: Bounds(timeout=0.5, grace=0.2))).read()
    assert len(errors) == 1 and "zpool status -P: timed out" in errors[0], errors
    assert "sdg" not in held
    assert Holding("/var/lib/postgresql", "ext4", "sdi1", ("md0",)) in held["sdi"]


@pytest.mark.parametrize("output, rc, error", [
    ("no pools available\n", 0, None),
    ("The ZFS modules are not loaded.\nTry running '/sbin/modprobe zfs' as root to load them.\n", 1, None),
    ("internal error: out of memory\n", 1, "exit status 1"),
    ("\x00\x01garbage\xff\n", 0, "no 'pool:' line"),
])
def test_zpool_answers(tmp_path, output, rc, error):
    host = postgres_host(tmp_path)
    fake_zpool(host, output, exit_code=rc)
    held, errors = reader(host).read()
    if error is None:
        assert errors == []
    else:
        assert len(errors) == 1 and error in errors[0], errors
    assert "sdg" not in held and held["sdk"]
    assert (host.root / "zpool" / "calls.log").read_text() == "zpool status -P\n"


def test_unreadable_mdstat_costs_only_mdstat(tmp_path):
    host = postgres_host(tmp_path)
    (host.proc / "mdstat").write_text(fixture_path(FX + "node_exporter__proc_mdstat_invalid.txt").read_text())
    held, errors = reader(host).read()
    assert len(errors) == 1 and "mdstat" in errors[0]
    # sysfs still links md0's members: the stack is followed without mdstat
    assert Holding("/var/lib/postgresql", "ext4", "sdi1", ("md0",)) in held["sdi"]


def test_empty_host(tmp_path):
    host = FakeHost(tmp_path)
    held, errors = reader(host, zpool=str(tmp_path / "absent")).read()
    assert held == {} and errors == []


# ------------------------------------------------------------------------ malformed inputs


@pytest.mark.parametrize("text, raises", [
    ("", False),
    ("\n\n", False),
    ("garbage", True),
    ("\x00\xff\x13 binary", True),
    ("/dev/sdb1", True),  # truncated: no mount point, no type
    ("/dev/sdb1 /data", True),
    ("/dev/sdb1 relative ext4 rw 0 0", True),
    ("/dev/sdb1 /data ext4 rw 0 0\n/dev/sdc1", False),  # a truncated last line is skipped
    ("/dev/sdb1 /a\\777b ext4 rw 0 0", False),  # an escape past 0xff stays a character
    ("x" * 100000, True),
])
def test_parse_mounts_malformed(text, raises):
    if raises:
        with pytest.raises(ParseError):
            parse_mounts(text)
    else:
        assert isinstance(parse_mounts(text), list)


@pytest.mark.parametrize("text", [
    "md0 :",
    "md0 : garbage sda1[0]",
    "md0 : active raid1",
    "md0 : active raid1 sda1",
    "md0 : active raid1 sda1[x]",
    "md0 : active raid1 [0]",
    "md0 : active raid1 sda1[0] \x00[1]",
])
def test_parse_mdstat_malformed_raises(text):
    with pytest.raises(ParseError):
        parse_mdstat(text)


@pytest.mark.parametrize("text, count", [
    ("", 0),
    ("garbage\n", 0),
    ("Personalities : [raid1]\nunused devices: <none>\n", 0),
    ("md0 : active raid1 sda1[0] sdb1[1]\n", 1),
    ("md0 : active raid1 sda1[0] sdb1[1]", 1),  # truncated: no status line
    ("md0 : inactive\n", 1),  # an inactive array with no members yet
    ("md127 : active raid1 cciss!c0d0p1[0] sdb1[1]\n", 1),
])
def test_parse_mdstat_odd_but_readable(text, count):
    assert len(parse_mdstat(text)) == count


@pytest.mark.parametrize("text, raises", [
    ("", False),
    ("no pools available\n", False),
    ("garbage\n", True),
    ("\x00\xff", True),
    ("  pool:\n", True),
    ("  pool: tank\n state: ONLINE\n", False),  # truncated before config
    ("  pool: tank\nconfig:\n\ttank ONLINE 0 0 0\n\t  /dev/sdb", False),  # truncated inside config
    ("  pool: tank\nconfig:\n\ttank ONLINE 0 0 0\n\t  12655960456386485198 UNAVAIL 0 0 0 was /dev/sdb1\n", False),
])
def test_parse_zpool_status_malformed(text, raises):
    if raises:
        with pytest.raises(ParseError):
            parse_zpool_status(text)
    else:
        vdevs = parse_zpool_status(text)
        assert all(v.path.startswith("/") for v in vdevs)


def test_zpool_unavailable_member_is_left_out():
    text = "  pool: tank\nconfig:\n\ttank ONLINE 0 0 0\n\t  12655960456386485198 UNAVAIL 0 0 0 was /dev/sdb1\n"
    assert parse_zpool_status(text) == []


@pytest.mark.parametrize("dm_name, want", [
    ("", ""),
    ("-", "-"),
    ("vg-", "vg-"),
    ("-lv", "-lv"),
    ("a-b-c", "a-b-c"),
    ("a---b", "a---b"),
])
def test_lvm_name_odd(dm_name, want):
    assert lvm_name(dm_name) == want


@pytest.mark.parametrize("path", ["", "sdb", "/dev/", "/dev/nosuch", "/dev/mapper/", "/dev/disk/by-id/",
                                  "/dev/disk/by-id/ata-", "/dev/disk/by-id/wwn-0x-part1", "/tmp/file-vdev"])
def test_resolve_device_unknown(path):
    tree = BlockTree(disks={"sdb"}, partitions={"sdb1": "sdb"}, ids={"sdb": ("S3Z2NB0K", "")})
    assert resolve_device(path, tree, {}) is None


def test_resolve_device_by_serial_needs_one_match():
    tree = BlockTree(disks={"sdb", "sdc"}, partitions={"sdb1": "sdb"}, partition_numbers={"sdb1": 1},
                     ids={"sdb": ("S3Z2NB0K123456A", "naa.5002538e40a0b1c2"), "sdc": ("S3Z2NB0K999999B", "")})
    assert resolve_device("/dev/disk/by-id/ata-Samsung_SSD_860_EVO_500GB_S3Z2NB0K123456A-part1", tree, {}) == "sdb1"
    assert resolve_device("/dev/disk/by-id/wwn-0x5002538e40a0b1c2", tree, {}) == "sdb"
    assert resolve_device("/dev/disk/by-id/ata-Samsung_SSD_860_EVO_500GB_S3Z2NB0K123456A-part9", tree, {}) is None
    tree.ids["sdc"] = ("S3Z2NB0K123456A", "")  # two drives claim the serial: no answer
    assert resolve_device("/dev/disk/by-id/ata-Samsung_SSD_860_EVO_500GB_S3Z2NB0K123456A", tree, {}) is None


def test_a_loop_in_the_links_ends():
    tree = BlockTree(disks={"sdb", "dm-0", "dm-1"}, dm={"dm-0": ("a", ""), "dm-1": ("b", "")})
    tree.link("sdb", "dm-0")
    tree.link("dm-0", "dm-1")
    tree.link("dm-1", "dm-0")
    held = build_holdings(tree)
    assert held["sdb"] == (Holding("", "", "", ("dm:a", "dm:b")),)


def test_holding_describe():
    assert Holding("/var/lib/postgresql", "ext4", "sdb1", ("md0",)).describe() == "/var/lib/postgresql (md0, ext4)"
    assert Holding("/boot", "ext2", "sda3").describe() == "/boot (ext2)"
    assert Holding("", "", "sdb1", ("md0", "lvm:vg/lv")).describe() == "md0 > lvm:vg/lv (not mounted)"
    assert summary("sdb", ()) == "sdb: nothing mounted or assembled"


# ------------------------------------------------------------- exposition, status and page


def _snapshot_holding_sdi(tmp_path):
    from collectors.model import Drive, DriveReading, Snapshot

    held, _ = reader(postgres_host(tmp_path)).read()
    drives = tuple(
        Drive(reading=DriveReading(kind="ata", device=f"/dev/{name}", block_device=name, serial=f"S-{name}"),
              holds=held.get(name, ()))
        for name in ("sdi", "sdk", "sdx")  # sdx holds nothing
    )
    return Snapshot(drives=drives, created=1.0)


def test_holds_info_family_and_promtool(tmp_path):
    import subprocess

    from agent.metrics import make_registry, render
    from tests.fakehost import promtool

    snap = _snapshot_holding_sdi(tmp_path)
    registry = make_registry(lambda: snap)
    labels = {"device": "sdi", "serial": "S-sdi", "mountpoint": "/var/lib/postgresql", "fstype": "ext4", "stack": "sdi1>md0"}
    assert registry.get_sample_value("ssd_drive_holds_info", labels) == 1.0
    labels = {"device": "sdi", "serial": "S-sdi", "mountpoint": "/srv/pg archive", "fstype": "xfs",
              "stack": "sdi2>md127>lvm:vg0/pg"}
    assert registry.get_sample_value("ssd_drive_holds_info", labels) == 1.0
    assert registry.get_sample_value("ssd_drive_holds_info", {
        "device": "sdk", "serial": "S-sdk", "mountpoint": "/var/lib/postgresql/16/main/pg_wal", "fstype": "ext4",
        "stack": "sdk1>crypt:pgcrypt>lvm:vgdata/wal"}) == 1.0
    text = render(registry)
    assert text.count(b"ssd_drive_holds_info{") == 3 and b'device="sdx",fstype' not in text
    tool = promtool()
    if tool is None:
        pytest.fail("promtool is not installed")
    check = subprocess.run([tool, "check", "metrics"], input=text, capture_output=True, timeout=60)
    assert check.returncode == 0 and b"holds" not in check.stdout + check.stderr, check.stdout + check.stderr


def test_holds_in_status_and_on_the_page(tmp_path):
    import dataclasses

    from agent.page import render_page
    from agent.status import format_drive, format_holds
    from agent.views import snapshot_views

    snap = _snapshot_holding_sdi(tmp_path)
    views = [dataclasses.asdict(v) for v in snapshot_views(snap, 2.0)]
    text = format_holds(views)
    assert text.splitlines() == [
        "what the drives hold:",
        "  sdi  holds: /srv/pg archive (md127, lvm:vg0/pg, xfs); /var/lib/postgresql (md0, ext4)",
        "  sdk  holds: /var/lib/postgresql/16/main/pg_wal (crypt:pgcrypt, lvm:vgdata/wal, ext4)",
    ]
    assert all(len(line) <= 60 for line in format_holds(views, width=60).splitlines())
    assert format_holds([v for v in views if v["device"] == "sdx"]) == ""
    detail = format_drive(next(v for v in views if v["device"] == "sdk"), now=2.0)
    assert "holds        /var/lib/postgresql/16/main/pg_wal (crypt:pgcrypt, lvm:vgdata/wal, ext4)" in detail
    page = render_page(snap, 2.0)
    assert '<div class="holds">holds: /var/lib/postgresql/16/main/pg_wal (crypt:pgcrypt, lvm:vgdata/wal, ext4)</div>' in page
    assert page.count('<div class="holds">') == 2


# ------------------------------------------------------------------------ property tests

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_SEEDS = {
    "mounts": (parse_mounts, ["node_exporter__proc_1_mounts.txt"]),
    "mdstat": (parse_mdstat, ["node_exporter__proc_mdstat.txt", "node_exporter__proc_mdstat_invalid.txt"]),
    "zpool": (parse_zpool_status, ["omvzfs__zpool_status_P_complexpool_createdupfront.txt",
                                   "omvzfs__zpool_status_P_simplepool_mixed_bydev.txt"]),
}


@st.composite
def _mangled(draw, seeds):
    """A capture with lines deleted, duplicated, cut short or with characters replaced."""
    lines = draw(st.sampled_from(seeds)).splitlines(True)
    for _ in range(draw(st.integers(0, 6))):
        if not lines:
            break
        i = draw(st.integers(0, len(lines) - 1))
        op = draw(st.sampled_from(["delete", "duplicate", "truncate", "replace"]))
        if op == "delete":
            del lines[i]
        elif op == "duplicate":
            lines.insert(i, lines[i])
        elif op == "truncate":
            lines[i] = lines[i][:draw(st.integers(0, len(lines[i])))]
        else:
            j = draw(st.integers(0, max(0, len(lines[i]) - 1)))
            lines[i] = lines[i][:j] + draw(st.text(max_size=5)) + lines[i][j + 1:]
    return "".join(lines)


@pytest.mark.parametrize("name", sorted(_SEEDS))
def test_parsers_on_mangled_captures_and_arbitrary_text(name):
    parse, files = _SEEDS[name]
    seeds = [fixture_path(FX + f).read_text() for f in files]

    @settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
    @given(text=_mangled(seeds) | st.text(max_size=400))
    def run(text: str) -> None:
        try:
            parse(text)
        except ParseError:
            pass

    run()


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(edges=st.lists(st.tuples(st.sampled_from(["sdb", "sdb1", "dm-0", "dm-1", "md0", "md1"]),
                                st.sampled_from(["sdb", "sdb1", "dm-0", "dm-1", "md0", "md1"])), max_size=12),
       mounted=st.lists(st.sampled_from(["sdb", "sdb1", "dm-0", "dm-1", "md0", "md1"]), max_size=4))
def test_build_holdings_on_arbitrary_graphs(edges, mounted):
    """Any links, loops included: every drive's holdings are bounded and every stack ends."""
    tree = BlockTree(disks={"sdb", "dm-0", "dm-1", "md0", "md1"}, partitions={"sdb1": "sdb"},
                     dm={"dm-0": ("vg-lv", "LVM-x"), "dm-1": ("c", "CRYPT-LUKS2-x")})
    for lower, upper in edges:
        tree.link(lower, upper)
    mounts = [Mount(f"/dev/{dev}", f"/m{i}", "ext4") for i, dev in enumerate(mounted)]
    held = build_holdings(tree, mounts)
    assert set(held) <= {"sdb"}
    for h in held.get("sdb", ()):
        assert len(h.stack) <= 5 and len(set(h.stack)) == len(h.stack)
    assert len(held.get("sdb", ())) <= holders.MAX_HOLDINGS_PER_DRIVE


# ------------------------------------------------------------------------------ the poller


def test_poller_hung_zpool_is_a_logged_holders_error_not_a_crash(tmp_path, caplog):
    from agent.poller import Poller
    from tests.fakehost import build_default_host

    host = build_default_host(tmp_path / "db1")
    sda1 = host.sys / "block" / "sda" / "sda1"
    (sda1 / "holders").mkdir(parents=True)
    (sda1 / "partition").write_text("1\n")
    md(host.sys, "md0", ["sda1"])
    (host.proc / "mounts").write_text("/dev/md0 /var/lib/postgresql ext4 rw,relatime 0 0\n")
    zpool = fake_zpool(host, fixture_path(FX + "omvzfs__zpool_status_P_simplepool_sata_byid.txt"), sleep=30)
    tools = {"smartctl": str(host.bin / "smartctl"), "shannon_status": str(host.bin / "shannon-status"),
             "hdparm": str(host.bin / "hdparm"), "nvme": str(host.bin / "nvme"), "zpool": str(zpool)}
    poller = Poller(host.config(tools=tools, tool_timeout_seconds=0.5, tool_kill_grace_seconds=0.2))
    try:
        started = time.monotonic()
        snap = poller.poll_once()
        took = time.monotonic() - started
    finally:
        poller.stop()
    sda = next(d for d in snap.drives if d.device == "sda")
    assert sda.holds == (Holding("/var/lib/postgresql", "ext4", "sda1", ("md0",)),)
    holders = next(c for c in snap.collectors if c.name == "holders")
    assert not holders.success and "zpool status -P: timed out" in (holders.error or "")
    assert any("holders: zpool status -P: timed out" in r.getMessage() for r in caplog.records)
    assert next(c for c in snap.collectors if c.name == "discovery").success  # the others go on
    assert took < 20, took  # bounded by the tool timeout, not by the 30 s the fake sleeps
