"""Fake hosts with drives behind a RAID controller, for the dashboard fleet (tests/livefleet.py)
and the drive-view tests (tests/sources/controllers/test_controller_views.py).

Every tool replays real captures (tests/fixtures/*/PROVENANCE.tsv), found through the tool
paths a user configures; the hosts compose captures of several public hosts, said where:

* :func:`megaraid_drives_host`: the fake smartctl of tests/sources/controllers/test_e2e_controller_drives.py, which
  answers ``--scan-open`` with a real scan listing seven disks behind ``/dev/bus/6``
  (``megaraid,8`` ... ``megaraid,14``, influxdata/telegraf's test case) and each ``-d
  megaraid,N`` read with the captured report of a different drive;
* :func:`megacli_after_battery_failed`: MegaCli answering as on check_raid issue 39's host after
  its battery wanted replacing (volume configured write-back, running write-through; battery
  failed, 97 % charge, 30 C), with a PERC 6/i's -AdpAllInfo and another host's -PDList
  (tests/controller_fakes.MEGACLI), as tests/sources/controllers/test_e2e_controller_alerts.py runs it;
* :func:`arcconf_rebuilding`: an Adaptec whose RAID 10 rebuilds (1 %), no flash module;
* :func:`storcli_volumes_only`: storcli answering ``/call/vall show all J`` only, with
  yunionio/cloudpods' capture of a controller whose drives have the device ids 9 ... 17, the
  numbers of six of the scanned disks above (and of ``megaraid,15``): a drive is matched to its
  slot by that id, as the controller source does when serials are not known. The other two
  storcli calls get no answer (one error a run; the volumes read stands).
"""

from __future__ import annotations

from pathlib import Path
from typing import Dict, List, Tuple

from tests.controller_fakes import ARC, MEGACLI, MR, FakeControllerTool, FakeSmartctlBehindController
from tests.fakehost import FakeHost

SJ = "smartctl-json/"
# -d type (all on /dev/bus/6) -> (capture, the serial it prints)
BEHIND: Dict[str, Tuple[str, str]] = {
    "megaraid,8": (SJ + "scrutiny__smart-ata-failed-scrutiny.json", "S14LNEACC02756X"),
    "megaraid,9": (SJ + "scrutiny__smart-ata-full.json", "S3YZNB0KB00864E"),
    "megaraid,10": (SJ + "scrutiny__smart-ata2.json", "S24ZN902000L"),
    "megaraid,11": (SJ + "scrutiny__smart-scsi2.json", "Z4028VRY0000C810BZXB"),
    "megaraid,12": (SJ + "telegraf__testcases_device_megaraid.json", "ZAD2C11G"),
    "megaraid,13": (SJ + "telegraf__testcases_device_scsi_extended.json", "XYZZZZ"),
    "megaraid,14": (SJ + "telegraf__testcases_device_usb.json", "06c9f4c44"),
}
# An eighth disk named the way users configure one on the controller's volume.
CONFIGURED = ("megaraid,15", SJ + "scrutiny__smart-fail2.json", "MSK423Y20S3HBC")
# A drive on its own (not behind the controller), configured by name: an NVMe drive.
DIRECT = ("/dev/nvme0", "nvme", "fakehost/scrutiny__smart-nvme.json")

CONTROLLER_TOOLS = ("storcli", "perccli", "megacli", "ssacli", "arcconf")


def megaraid_drives_host(root: Path, with_volume: bool = True) -> Tuple[FakeHost, FakeSmartctlBehindController]:
    """Seven drives behind a MegaRAID found by ``--scan-open``; with ``with_volume``, also the
    controller's volume sda as the kernel sees it (its own write cache and I/O counters) and
    the eighth disk and the direct NVMe drive answered (the agent's config names them:
    :func:`configured_devices`)."""
    host = FakeHost(root)
    smartctl = FakeSmartctlBehindController(root)
    smartctl.answer("version", "fakehost/smartctl-version.txt")
    smartctl.answer("scan", SJ + "telegraf__testcases_scan_megaraid.json")
    for dev_type, (fixture, _serial) in BEHIND.items():
        smartctl.answer(f"{dev_type}_6", fixture)
    if with_volume:
        smartctl.answer(f"{CONFIGURED[0]}_sda", CONFIGURED[1])
        smartctl.answer(f"{DIRECT[1]}_{Path(DIRECT[0]).name}", DIRECT[2])
        host.block_device("sda", 1875385008, write_cache="write back", model="PERC H730P Mini")
        host.diskstats("   8       0 sda 120 10 9000 50 400 20 64000 300 0 280 350 0 0 0 0 4 2\n")
    else:
        host.diskstats("")
    return host, smartctl


# The scan above also lists three disks on their own (/dev/sda and /dev/sdb as SCSI, /dev/sdc
# through SAT): -d type and node -> a capture of such a drive.
SCANNED_DIRECT = {"scsi_sda": SJ + "netdata__type-scsi_device-sda.json",
                  "scsi_sdb": SJ + "scrutiny__smart-scsi.json",
                  "sat_sdc": SJ + "netdata__type-sat_device-ssd-sdc.json"}
SCANNED_DIRECT_DISKSTATS = (
    "   8       0 sda 120 10 9000 50 400 20 64000 300 0 280 350 0 0 0 0 4 2\n"
    "   8      16 sdb 80 0 6400 30 200 0 16000 90 0 100 120 0 0 0 0 2 1\n"
    "   8      32 sdc 300 0 24000 60 900 0 72000 400 0 380 460 0 0 0 0 6 3\n"
)


def answer_scanned_direct_disks(host: FakeHost, smartctl: FakeSmartctlBehindController) -> None:
    """Answer the scan's three disks of their own (they are read as any direct drive) and give
    the host a /proc/diskstats with them."""
    for key, fixture in SCANNED_DIRECT.items():
        smartctl.answer(key, fixture)
    host.diskstats(SCANNED_DIRECT_DISKSTATS)


def configured_devices() -> List[str]:
    """The ``smartctl.devices`` entries for :func:`megaraid_drives_host` ``with_volume``."""
    return [f"/dev/sda:{CONFIGURED[0]}", f"{DIRECT[0]}:{DIRECT[1]}"]


def megacli_after_battery_failed(root: Path) -> FakeControllerTool:
    megacli = FakeControllerTool(root, "MegaCli64")
    for args, fixture in MEGACLI.items():
        megacli.answer(args, fixture)
    megacli.answer("-LDInfo -Lall -aALL -NoLog", MR + "check_raid__issue39_batteries.ldinfo.txt")
    megacli.answer("-AdpBbuCmd -aALL -NoLog", MR + "check_raid__issue39_batteries.bbustatus.txt")
    return megacli


def arcconf_rebuilding(root: Path) -> FakeControllerTool:
    arcconf = FakeControllerTool(root, "arcconf")
    arcconf.answer("GETCONFIG 1 AL", ARC + "check_raid__issue47_getconfig2.txt")
    arcconf.answer("GETSTATUS 1", ARC + "check_raid__issue47_getstatus2.txt")
    return arcconf


def storcli_volumes_only(root: Path) -> FakeControllerTool:
    storcli = FakeControllerTool(root, "storcli64")
    storcli.answer("/call/vall show all J", MR + "cloudpods__storcli_c0_vall_show_all.json")
    return storcli


def controller_tool_args(root: Path, tools: Dict[str, FakeControllerTool]) -> List[str]:
    """Agent flags naming the given fakes (key: storcli, perccli, megacli, ssacli, arcconf) and
    a path that does not exist for every other controller tool, so that a tool installed on
    the machine running the tests is never read."""
    absent = Path(root) / "absent"
    args: List[str] = []
    for key in CONTROLLER_TOOLS:
        args += [f"--{key}", str(tools[key].path) if key in tools else str(absent / key)]
    return args
