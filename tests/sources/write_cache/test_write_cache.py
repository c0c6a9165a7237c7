"""collectors.write_cache: parsers on tool outputs, the reader on a fake sysfs tree and fake
tool executables (shell scripts that replay fixtures by their arguments, run through the real
run_tool), and the rules of agent/health.py that pick the effective state from their answers."""

from __future__ import annotations

import json
import shlex
import stat
from pathlib import Path
from typing import Dict, Optional, Tuple

import pytest

from agent.health import effective_write_cache, write_cache_mismatch
from collectors.model import (
    CACHE_DISABLED,
    CACHE_ENABLED,
    CACHE_UNKNOWN,
    CACHE_UNSUPPORTED,
    KIND_ATA,
    KIND_NVME,
    KIND_SCSI,
    KIND_SHANNON,
    ParseError,
    WriteCacheState,
)
from collectors.runner import Bounds, bounded, run_tool
from collectors.write_cache import (
    WriteCacheReader,
    parse_hdparm_w,
    parse_hdparm_w_multi,
    parse_nvme_feature_vwc,
    parse_scsi_cache_type,
    parse_smartctl_wcache_json,
    parse_smartctl_wcache_text,
    parse_sysfs_write_cache,
)
from tests.conftest import FIXTURES, fixture_files, fixture_path, read_fixture

HD = "write-cache/hdparm/"
NV = "write-cache/nvme/"
SC = "write-cache/smartctl/"
SYSFS = "write-cache/sysfs"
TX = "smartctl-text/"


def tool_text(*relatives: str) -> str:
    """stdout then stderr, as the reader hands them to the parser."""
    return "\n".join(read_fixture(r).decode("utf-8") for r in relatives)


# hdparm -W ---------------------------------------------------------------------------------

HDPARM_CASES = [
    # (fixture files (stdout, stderr), state, text expected in detail)
    ((HD + "sda_on.out",), CACHE_ENABLED, None),
    ((HD + "sdb_off.out",), CACHE_DISABLED, None),
    ((HD + "sdf_not_supported.out",), CACHE_UNSUPPORTED, None),
    ((HD + "seed001_set_off.out",), CACHE_DISABLED, None),
    ((HD + "sdc_sg_io_sense.out", HD + "sdc_sg_io_sense.err"), CACHE_UNKNOWN, "SG_IO: bad/missing sense data"),
    (
        (HD + "sdd_flushcache_eio.out", HD + "sdd_flushcache_eio.err"),
        CACHE_UNKNOWN,
        "HDIO_DRIVE_CMD(flushcache) failed: Input/output error",
    ),
    (
        (HD + "sdg_get_wcache_enotty.out", HD + "sdg_get_wcache_enotty.err"),
        CACHE_UNKNOWN,
        "HDIO_GET_WCACHE failed: Inappropriate ioctl for device",
    ),
    ((HD + "loop0_no_identify.out",), CACHE_UNKNOWN, "no write-caching line for /dev/loop0"),
    ((HD + "vda_open_eperm.err",), CACHE_UNKNOWN, "/dev/vda: Operation not permitted"),
]


@pytest.mark.parametrize(
    "files,state,detail", HDPARM_CASES, ids=lambda v: v[0].split("/")[-1] if isinstance(v, tuple) else ""
)
def test_hdparm_real_shapes(files, state, detail):
    got = parse_hdparm_w(tool_text(*files))
    assert got.state == state
    assert got.source == "hdparm"
    if detail is None:
        assert got.detail is None
    else:
        assert detail in got.detail


def test_hdparm_state_wins_over_a_warning_and_keeps_it():
    got = parse_hdparm_w(tool_text(HD + "sda_on.out", HD + "sdc_sg_io_sense.err"))
    assert got.state == CACHE_ENABLED
    assert got.detail.startswith("SG_IO: bad/missing sense data")


def test_hdparm_multi_device():
    got = parse_hdparm_w_multi(tool_text(HD + "multi_sda_sdb_sdf.out"))
    assert got == {
        "/dev/sda": WriteCacheState(CACHE_ENABLED, "hdparm"),
        "/dev/sdb": WriteCacheState(CACHE_DISABLED, "hdparm"),
        "/dev/sdf": WriteCacheState(CACHE_UNSUPPORTED, "hdparm"),
    }


def test_hdparm_multi_attributes_an_open_error_to_its_device():
    got = parse_hdparm_w_multi(tool_text(HD + "vda_open_eperm.err", HD + "sda_on.out"))
    assert got["/dev/sda"].state == CACHE_ENABLED
    assert got["/dev/vda"] == WriteCacheState(CACHE_UNKNOWN, "hdparm", "/dev/vda: Operation not permitted")


def test_hdparm_single_refuses_several_devices():
    with pytest.raises(ParseError, match="more than one device"):
        parse_hdparm_w(tool_text(HD + "multi_sda_sdb_sdf.out"))


HDPARM_MALFORMED = {
    "empty": "",
    "blank": "\n \n",
    "value 2": "\n/dev/sda:\n write-caching =  2 (on)\n",
    "value and word disagree": "\n/dev/sda:\n write-caching =  1 (off)\n",
    "unknown word": "\n/dev/sda:\n write-caching = maybe\n",
    "another hdparm query": "\n/dev/sda:\n readonly      =  0 (off)\n",
    "free text": "\n/dev/sda:\nhello\n",
}


@pytest.mark.parametrize("raw", HDPARM_MALFORMED.values(), ids=HDPARM_MALFORMED.keys())
def test_hdparm_malformed(raw):
    with pytest.raises(ParseError):
        parse_hdparm_w(raw)
    with pytest.raises(ParseError):
        parse_hdparm_w_multi(raw)


@pytest.mark.parametrize(
    "raw",
    [
        "SG_IO: bad/missing sense data\n/dev/sda:\n write-caching =  1 (on)\n",  # unattributable
        "\n/dev/sda:\n write-caching =  1 (on)\n/dev/sda:\n write-caching =  1 (on)\n",  # twice
    ],
)
def test_hdparm_multi_malformed(raw):
    with pytest.raises(ParseError):
        parse_hdparm_w_multi(raw)


# sysfs ---------------------------------------------------------------------------------------

# Every file of the fake tree and what it says; the reader tests below rely on this layout.
SYSFS_TREE = {
    "block/sda/queue/write_cache": CACHE_ENABLED,
    "block/sda/device/scsi_disk/0:0:0:0/cache_type": CACHE_ENABLED,
    "block/sdb/queue/write_cache": CACHE_DISABLED,
    "block/sdb/device/scsi_disk/1:0:0:0/cache_type": CACHE_DISABLED,
    "block/sdc/queue/write_cache": CACHE_ENABLED,
    "block/sdc/device/scsi_disk/2:0:0:0/cache_type": CACHE_ENABLED,  # write back, no read (daft)
    "block/sdd/queue/write_cache": CACHE_DISABLED,
    "block/sdd/device/scsi_disk/3:0:0:0/cache_type": CACHE_DISABLED,  # none
    "block/sde/queue/write_cache": CACHE_DISABLED,
    "block/sde/device/scsi_disk/6:0:0:0/cache_type": CACHE_DISABLED,
    "block/nvme0n1/queue/write_cache": CACHE_ENABLED,
    "block/dfa/queue/rotational": None,  # Shannon card on a pre-4.7 kernel: no write_cache file
}


def test_fake_sysfs_tree_files_parse():
    seen = {}
    root = fixture_path(SYSFS)
    for path in fixture_files(SYSFS):
        relative = path.relative_to(root).as_posix()
        content = path.read_text()
        if path.name == "write_cache":
            seen[relative] = parse_sysfs_write_cache(content).state
        elif path.name == "cache_type":
            seen[relative] = parse_scsi_cache_type(content).state
        else:
            assert content == "0\n"
            seen[relative] = None
    assert seen == SYSFS_TREE


@pytest.mark.parametrize(
    "raw,state,detail",
    [
        ("write back\n", CACHE_ENABLED, None),
        ("write through\n", CACHE_DISABLED, None),
        ("none\n", CACHE_DISABLED, "read cache also disabled (RCD=1)"),
        ("write back, no read (daft)\n", CACHE_ENABLED, "read cache disabled (RCD=1)"),
    ],
)
def test_scsi_cache_type_values(raw, state, detail):
    # drivers/scsi/sd.c sd_cache_types[], the only four strings the kernel shows
    assert parse_scsi_cache_type(raw) == WriteCacheState(state, "scsi_cache_type", detail)


@pytest.mark.parametrize("raw", ["", "\n", "writeback\n", "write back\nwrite through\n", "[write back]\n", "none\n"])
def test_sysfs_queue_malformed(raw):
    with pytest.raises(ParseError):
        parse_sysfs_write_cache(raw)


@pytest.mark.parametrize(
    "raw", ["", "write back, no read (daxsync)\n", "DPO and FUA\n", "temporary write back\n", "write-back\n"]
)
def test_scsi_cache_type_malformed(raw):
    with pytest.raises(ParseError):
        parse_scsi_cache_type(raw)


# nvme get-feature -f 6 -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "relative,state",
    [
        (NV + "vwc_on_v2.out", CACHE_ENABLED),
        (NV + "vwc_off_v2.out", CACHE_DISABLED),
        (NV + "vwc_on_v1.out", CACHE_ENABLED),
        (NV + "vwc_off_v1.out", CACHE_DISABLED),
        (NV + "no_vwc_invalid_field.err", CACHE_UNSUPPORTED),
    ],
)
def test_nvme_vwc(relative, state):
    got = parse_nvme_feature_vwc(tool_text(relative))
    assert got.state == state and got.source == "nvme_feature"


def test_nvme_tool_error_is_unknown():
    got = parse_nvme_feature_vwc("get-feature: Inappropriate ioctl for device\n")
    assert got == WriteCacheState(CACHE_UNKNOWN, "nvme_feature", "get-feature: Inappropriate ioctl for device")


def test_nvme_wce_is_bit_zero_only():
    # a value with other bits set but WCE clear is still disabled
    got = parse_nvme_feature_vwc("get-feature:0x06 (Volatile Write Cache), Current value:0x00000002\n")
    assert got.state == CACHE_DISABLED


@pytest.mark.parametrize(
    "raw",
    [
        "",
        "\n",
        "get-feature:0x07 (Number of Queues), Current value:0x003f003f\n",
        "get-feature:0x06 (Volatile Write Cache), Default value:0x00000001\n",
        "Volatile Write Cache is great\n",
    ],
)
def test_nvme_malformed(raw):
    with pytest.raises(ParseError):
        parse_nvme_feature_vwc(raw)


# smartctl -g wcache --json --------------------------------------------------------------------


@pytest.mark.parametrize(
    "relative,state,detail",
    [
        (SC + "sda_wcache_enabled.json", CACHE_ENABLED, None),
        (SC + "sdb_wcache_disabled.json", CACHE_DISABLED, None),
        (
            SC + "vda_unable_to_detect.json",
            CACHE_UNKNOWN,
            "smartctl exit status 1: /dev/vda: Unable to detect device type",
        ),
        (SC + "loop0_sat_no_data.json", CACHE_UNKNOWN, "smartctl exit status 2: no usable data"),
    ],
)
def test_smartctl_wcache_json(relative, state, detail):
    raw = read_fixture(relative)
    for data in (raw, raw.decode("utf-8"), json.loads(raw)):
        assert parse_smartctl_wcache_json(data) == WriteCacheState(state, "smartctl", detail)


def test_smartctl_without_key_and_good_exit_is_unknown():
    got = parse_smartctl_wcache_json('{"smartctl": {"exit_status": 0}}')
    assert got.state == CACHE_UNKNOWN and "no write_cache" in got.detail


@pytest.mark.parametrize(
    "raw",
    [
        "",
        "not json",
        "[]",
        '{"write_cache": true}',
        '{"write_cache": {"enabled": "yes"}}',
        '{"write_cache": {"enabled": 1}}',
        '{"smartctl": {"exit_status": "4"}}',
        '{"smartctl": []}',
        '{"smartctl": {"messages": "oops"}}',
    ],
)
def test_smartctl_malformed(raw):
    with pytest.raises(ParseError):
        parse_smartctl_wcache_json(raw)


# smartctl -g wcache in plain text (smartctl before 7.0) -------------------------------------------

# Real captures. smartctl -x includes -g all, so -x files carry the very line -g wcache prints
# ("Write cache is:   %s" for ATA, "Writeback Cache is:   %s" for SCSI).
SMARTCTL_TEXT_CASES = [
    # (fixture, smartctl exit status, state, detail)
    (TX + "telegraf__mockHGST.txt", 0, CACHE_ENABLED, None),  # 6.6, SAS: "Writeback Cache is:   Enabled"
    (TX + "pySMART__unsupported_0_-d_scsi_--all_sda.txt", 4, CACHE_DISABLED, None),  # 7.3, SCSI: Disabled
    # 7.0, ATA SSD: "Write cache is:   Enabled"
    (TX + "linuxhw-EnterpriseDrive__SSD_Crucial_CT240BX200SSD1_911CAC863619.txt", 0, CACHE_ENABLED, None),
    # 7.1, ATA SSD: "Write cache is:   Disabled"
    (TX + "linuxhw-EnterpriseDrive__SSD_Intel_SSDSC2BF180A4_D012DB054DD6.txt", 0, CACHE_DISABLED, None),
    # 7.3 -g wcache -n standby, no cache line: smartctl's own words after the banner
    (SC + "loop0_sat_sleep.txt", 2, CACHE_UNKNOWN, "smartctl exit status 2: Device is in SLEEP mode, exit(2)"),
    (
        SC + "vda_sat_open_eperm.txt",
        2,
        CACHE_UNKNOWN,
        "smartctl exit status 2: Smartctl open device: /dev/vda [SAT] failed: Operation not permitted",
    ),
    (
        SC + "vda_unable_to_detect.txt",
        1,
        CACHE_UNKNOWN,
        "smartctl exit status 1: /dev/vda: Unable to detect device type",
    ),
]


@pytest.mark.parametrize("relative,status,state,detail", SMARTCTL_TEXT_CASES)
def test_smartctl_wcache_text(relative, status, state, detail):
    text = read_fixture(relative).decode("utf-8")
    assert parse_smartctl_wcache_text(text, status) == WriteCacheState(state, "smartctl", detail)


def test_smartctl_wcache_text_without_exit_status():
    text = read_fixture(SC + "loop0_sat_sleep.txt").decode("utf-8")
    assert parse_smartctl_wcache_text(text).detail == "Device is in SLEEP mode, exit(2)"


BANNER = "smartctl 6.6 2016-05-31 r4324 [x86_64-linux-4.9.0-3-amd64] (local build)\n"


@pytest.mark.parametrize(
    "raw,state",
    [
        # ataprint.cpp: IDENTIFY word 82 bit 5 clear, the bit hdparm prints as "not supported"
        (BANNER + "\nWrite cache is:   Unavailable\n", CACHE_UNSUPPORTED),
        # scsiprint.cpp: the caching mode page could not be read, an error and not an answer
        (BANNER + "\nWriteback Cache is:   Unavailable\n", CACHE_UNKNOWN),
        ("Write cache is:   Enabled\n", CACHE_ENABLED),  # the line alone (smartctl -q)
        (BANNER + "Write cache is:   Disabled\nWrite cache is:   Disabled\n", CACHE_DISABLED),
    ],
)
def test_smartctl_wcache_text_edges(raw, state):
    got = parse_smartctl_wcache_text(raw)
    assert got.state == state and got.source == "smartctl"
    assert (got.detail is not None) is (state in (CACHE_UNSUPPORTED, CACHE_UNKNOWN))


@pytest.mark.parametrize(
    "raw",
    [
        "",
        "\n  \n",
        "garbage",
        '{"write_cache": {"enabled": true}}',  # JSON is not the text answer
        BANNER + "Write cache is:   Maybe\n",
        BANNER + "Write cache is:\n",
        BANNER + "Writeback Cache is:   enabled\n",  # smartctl capitalises its words
        BANNER + "Write cache is:   Enabled\nWrite cache is:   Disabled\n",
    ],
)
def test_smartctl_wcache_text_malformed(raw):
    with pytest.raises(ParseError):
        parse_smartctl_wcache_text(raw)


# effective state and mismatch (agent/health.py) -----------------------------------------------


def S(state: str, source: str) -> WriteCacheState:
    return WriteCacheState(state, source)


@pytest.mark.parametrize(
    "states,effective",
    [
        ([], CACHE_UNKNOWN),
        ([S(CACHE_UNKNOWN, "hdparm")], CACHE_UNKNOWN),
        ([S(CACHE_ENABLED, "sysfs_queue")], CACHE_ENABLED),
        # USB bridge: the kernel assumed write through, the drive caches
        (
            [S(CACHE_DISABLED, "sysfs_queue"), S(CACHE_DISABLED, "scsi_cache_type"), S(CACHE_ENABLED, "hdparm")],
            CACHE_ENABLED,
        ),
        # NVMe: sysfs only says a cache is present; the feature says it is off
        ([S(CACHE_ENABLED, "sysfs_queue"), S(CACHE_DISABLED, "nvme_feature")], CACHE_DISABLED),
        # hdparm could not ask the drive: fall back to the kernel
        ([S(CACHE_ENABLED, "sysfs_queue"), S(CACHE_UNKNOWN, "hdparm")], CACHE_ENABLED),
        # queue/write_cache overwritten by hand; sd's copy of the mode page still says WCE=0
        ([S(CACHE_ENABLED, "sysfs_queue"), S(CACHE_DISABLED, "scsi_cache_type")], CACHE_DISABLED),
        ([S(CACHE_UNKNOWN, "hdparm"), S(CACHE_ENABLED, "smartctl"), S(CACHE_DISABLED, "sysfs_queue")], CACHE_ENABLED),
        ([S(CACHE_UNSUPPORTED, "nvme_feature"), S(CACHE_DISABLED, "sysfs_queue")], CACHE_UNSUPPORTED),
        ([S(CACHE_ENABLED, "some_future_source"), S(CACHE_DISABLED, "sysfs_queue")], CACHE_DISABLED),
        ([S(CACHE_ENABLED, "some_future_source")], CACHE_ENABLED),
    ],
)
def test_effective_state(states, effective):
    assert effective_write_cache(states) == effective


@pytest.mark.parametrize(
    "effective,expected,result",
    [
        (CACHE_ENABLED, None, None),
        (CACHE_ENABLED, CACHE_ENABLED, False),
        (CACHE_DISABLED, CACHE_ENABLED, True),
        (CACHE_ENABLED, CACHE_DISABLED, True),
        (CACHE_DISABLED, CACHE_DISABLED, False),
        (CACHE_UNKNOWN, CACHE_ENABLED, None),
        (CACHE_UNSUPPORTED, CACHE_DISABLED, False),
        (CACHE_UNSUPPORTED, CACHE_ENABLED, True),
    ],
)
def test_mismatch(effective, expected, result):
    assert write_cache_mismatch(effective, expected) is result


def test_mismatch_rejects_a_bad_expectation():
    with pytest.raises(ValueError):
        write_cache_mismatch(CACHE_ENABLED, "on")


# reader with fake tools ------------------------------------------------------------------------

Case = Tuple[Optional[str], Optional[str], int]  # stdout fixture, stderr fixture, exit status


def fake_tool(tmp_path: Path, name: str, cases: Dict[str, Case], body: str = "") -> str:
    """A /bin/sh script that replays fixtures chosen by its arguments ("$*")."""
    lines = ["#!/bin/sh", body, 'case "$*" in']
    for args, (out, err, status) in cases.items():
        action = []
        if out:
            action.append(f"cat {shlex.quote(str(fixture_path(out)))}")
        if err:
            action.append(f"cat {shlex.quote(str(fixture_path(err)))} >&2")
        action.append(f"exit {status}")
        lines.append(f"  {shlex.quote(args)}) {'; '.join(action)};;")
    lines.append(f'  *) echo "fake {name}: unexpected arguments: $*" >&2; exit 99;;')
    lines.append("esac")
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def reader(tmp_path: Path, **tools) -> WriteCacheReader:
    missing = str(tmp_path / "not-installed")
    kwargs = {"hdparm": missing, "nvme": missing, "smartctl": missing}
    kwargs.update(tools)
    kwargs.setdefault("runner", bounded(run_tool, lambda: Bounds(timeout=5.0)))
    return WriteCacheReader(sysfs_root=str(FIXTURES / SYSFS), **kwargs)


def test_scsi_disk_for():
    r = WriteCacheReader(sysfs_root=str(fixture_path(SYSFS)))
    assert r.scsi_disk_for("sda") == "0:0:0:0"
    assert r.scsi_disk_for("sde") == "6:0:0:0"
    assert r.scsi_disk_for("nvme0n1") is None
    assert r.scsi_disk_for("sdz") is None


def test_ata_drive_kernel_and_drive_agree(tmp_path):
    hdparm = fake_tool(tmp_path, "hdparm", {"-W /dev/sda": (HD + "sda_on.out", None, 0)})
    states = reader(tmp_path, hdparm=hdparm).read("sda", KIND_ATA)
    assert states == [
        WriteCacheState(CACHE_ENABLED, "sysfs_queue"),
        WriteCacheState(CACHE_ENABLED, "scsi_cache_type"),
        WriteCacheState(CACHE_ENABLED, "hdparm"),
    ]
    assert write_cache_mismatch(effective_write_cache(states), CACHE_ENABLED) is False


def test_ata_drive_with_cache_off(tmp_path):
    hdparm = fake_tool(tmp_path, "hdparm", {"-W /dev/sdb": (HD + "sdb_off.out", None, 0)})
    states = reader(tmp_path, hdparm=hdparm).read("sdb", KIND_ATA)
    assert [s.state for s in states] == [CACHE_DISABLED] * 3
    assert write_cache_mismatch(effective_write_cache(states), CACHE_ENABLED) is True


def test_ata_behind_usb_bridge_the_drive_wins(tmp_path):
    hdparm = fake_tool(tmp_path, "hdparm", {"-W /dev/sde": (HD + "sda_on.out", None, 0)})
    states = reader(tmp_path, hdparm=hdparm).read("sde", KIND_ATA)
    assert [(s.source, s.state) for s in states] == [
        ("sysfs_queue", CACHE_DISABLED),
        ("scsi_cache_type", CACHE_DISABLED),
        ("hdparm", CACHE_ENABLED),
    ]
    assert effective_write_cache(states) == CACHE_ENABLED


def test_hdparm_missing_falls_back_to_smartctl(tmp_path):
    smartctl = fake_tool(
        tmp_path,
        "smartctl",
        {"-g wcache --json -n standby -d sat /dev/sda": (SC + "sda_wcache_enabled.json", None, 0)},
    )
    r = reader(tmp_path, smartctl=smartctl)
    states = r.read("sda", KIND_ATA)
    # hdparm could not be started: no hdparm state, smartctl asked instead
    assert [s.source for s in states] == ["sysfs_queue", "scsi_cache_type", "smartctl"]
    assert states[2] == WriteCacheState(CACHE_ENABLED, "smartctl")
    assert r.unavailable == {str(tmp_path / "not-installed"): f"{tmp_path / 'not-installed'}: not found"}
    assert effective_write_cache(states) == CACHE_ENABLED


def test_hdparm_and_smartctl_both_missing(tmp_path):
    r = reader(tmp_path)
    states = r.read("sdb", KIND_ATA)
    assert [s.source for s in states] == ["sysfs_queue", "scsi_cache_type"]
    assert effective_write_cache(states) == CACHE_DISABLED  # the kernel's view is all there is
    assert list(r.unavailable) == [str(tmp_path / "not-installed")]


def test_a_tool_installed_later_clears_unavailable(tmp_path):
    r = reader(tmp_path)
    r.read("sda", KIND_ATA)
    assert r.unavailable
    r.hdparm = fake_tool(tmp_path, "hdparm", {"-W /dev/sda": (HD + "sda_on.out", None, 0)})
    assert r.read("sda", KIND_ATA)[-1] == WriteCacheState(CACHE_ENABLED, "hdparm")
    assert r.hdparm not in r.unavailable


def test_nvme_cli_not_installed_leaves_the_kernel_view(tmp_path):
    states = reader(tmp_path).read("nvme0n1", KIND_NVME)
    assert states == [WriteCacheState(CACHE_ENABLED, "sysfs_queue")]


def test_hdparm_exit_non_zero(tmp_path):
    # real: hdparm v9.65 -W /dev/vda without permission prints one line on stderr, exits 1
    hdparm = fake_tool(tmp_path, "hdparm", {"-W /dev/vda": (None, HD + "vda_open_eperm.err", 1)})
    states = reader(tmp_path, hdparm=hdparm).read("vda", KIND_ATA)
    assert len(states) == 1  # no sysfs entry for vda in the tree; hdparm ran, so no smartctl
    (state,) = states
    assert state.state == CACHE_UNKNOWN and state.source == "hdparm"
    assert state.detail == "/dev/vda: Operation not permitted; hdparm exit status 1"


def test_hdparm_error_line_exit_zero(tmp_path):
    hdparm = fake_tool(tmp_path, "hdparm", {"-W /dev/sdk": (HD + "sdc_sg_io_sense.out", HD + "sdc_sg_io_sense.err", 0)})
    (state,) = reader(tmp_path, hdparm=hdparm).read("sdk", KIND_ATA)
    assert state.state == CACHE_UNKNOWN
    assert state.detail.startswith("SG_IO: bad/missing sense data")


def test_hdparm_unexpected_output(tmp_path):
    hdparm = fake_tool(tmp_path, "hdparm", {}, body="echo 'write-caching = banana'; exit 0")
    (state,) = reader(tmp_path, hdparm=hdparm).read("sdk", KIND_ATA)
    assert state.state == CACHE_UNKNOWN
    assert "unreadable output" in state.detail


def test_hdparm_timeout(tmp_path):
    hdparm = fake_tool(tmp_path, "hdparm", {}, body="sleep 30")
    # The reader keeps no timeout: its runner is bounded (the agent's applies tool_timeout_seconds).
    r = reader(tmp_path, hdparm=hdparm, runner=bounded(run_tool, lambda: Bounds(timeout=0.5, grace=0.2)))
    (state,) = r.read("sdk", KIND_ATA)
    assert state.state == CACHE_UNKNOWN and "timed out" in state.detail


def test_nvme_asks_the_controller(tmp_path):
    nvme = fake_tool(tmp_path, "nvme", {"get-feature /dev/nvme0 -f 6": (NV + "vwc_off_v2.out", None, 0)})
    states = reader(tmp_path, nvme=nvme).read("nvme0n1", KIND_NVME)
    assert states == [WriteCacheState(CACHE_ENABLED, "sysfs_queue"), WriteCacheState(CACHE_DISABLED, "nvme_feature")]
    assert effective_write_cache(states) == CACHE_DISABLED


def test_nvme_without_volatile_cache(tmp_path):
    nvme = fake_tool(tmp_path, "nvme", {"get-feature /dev/nvme0 -f 6": (None, NV + "no_vwc_invalid_field.err", 2)})
    states = reader(tmp_path, nvme=nvme).read("nvme0n1", KIND_NVME)
    assert states[1].state == CACHE_UNSUPPORTED
    assert "Invalid Field in Command" in states[1].detail


def test_scsi_with_sysfs_runs_no_tool(tmp_path):
    # smartctl is a fake that would answer "disabled": it must not be asked
    smartctl = fake_tool(
        tmp_path,
        "smartctl",
        {"-g wcache --json -n standby -d scsi /dev/sdc": (SC + "sdb_wcache_disabled.json", None, 0)},
    )
    states = reader(tmp_path, smartctl=smartctl).read("sdc", KIND_SCSI)
    assert states == [
        WriteCacheState(CACHE_ENABLED, "sysfs_queue"),
        WriteCacheState(CACHE_ENABLED, "scsi_cache_type", "read cache disabled (RCD=1)"),
    ]


def test_scsi_without_sysfs_asks_smartctl(tmp_path):
    smartctl = fake_tool(
        tmp_path,
        "smartctl",
        {"-g wcache --json -n standby -d scsi /dev/sdz": (SC + "vda_unable_to_detect.json", None, 1)},
    )
    (state,) = reader(tmp_path, smartctl=smartctl).read("sdz", KIND_SCSI)
    assert state.source == "smartctl" and state.state == CACHE_UNKNOWN
    assert "Unable to detect device type" in state.detail


def test_shannon_on_old_kernel_has_no_answer(tmp_path):
    states = reader(tmp_path).read("dfa", KIND_SHANNON)
    assert states == []
    assert effective_write_cache(states) == CACHE_UNKNOWN
    assert write_cache_mismatch(effective_write_cache(states), CACHE_ENABLED) is None


def test_unreadable_sysfs_value_is_unknown_not_an_exception(tmp_path):
    queue = tmp_path / "block" / "sdq" / "queue"
    queue.mkdir(parents=True)
    (queue / "write_cache").write_text("write sometimes\n")
    states = WriteCacheReader(sysfs_root=str(tmp_path)).read("sdq", KIND_SHANNON)
    assert len(states) == 1 and states[0].state == CACHE_UNKNOWN
    assert "write sometimes" in states[0].detail


# smartctl without --json, and drives in standby ------------------------------------------------

OLD_SMARTCTL = (
    # smartctl 5.41 .. 6.x: -g exists, --json does not (smartctl.cpp prints this and exits 1)
    'printf \'%s\\n\' "$*" >> "$(dirname "$0")/calls.log"\n'
    'case "$*" in *--json*) echo "=======> UNRECOGNIZED OPTION: json"; exit 1;; esac'
)
CRUCIAL_ENABLED = TX + "linuxhw-EnterpriseDrive__SSD_Crucial_CT240BX200SSD1_911CAC863619.txt"
INTEL_DISABLED = TX + "linuxhw-EnterpriseDrive__SSD_Intel_SSDSC2BF180A4_D012DB054DD6.txt"


def calls(tmp_path: Path) -> list:
    log = tmp_path / "calls.log"
    return log.read_text().splitlines() if log.exists() else []


def test_old_smartctl_is_asked_in_text(tmp_path):
    smartctl = fake_tool(
        tmp_path, "smartctl", {"-g wcache -n standby -d sat /dev/sda": (CRUCIAL_ENABLED, None, 0)}, body=OLD_SMARTCTL
    )
    r = reader(tmp_path, smartctl=smartctl)
    r.smartctl_json = False
    states = r.read("sda", KIND_ATA)  # hdparm is not installed: smartctl reads the bit
    assert states[-1] == WriteCacheState(CACHE_ENABLED, "smartctl")
    assert calls(tmp_path) == ["-g wcache -n standby -d sat /dev/sda"]  # never with --json


def test_constructor_takes_the_smartctl_flavour(tmp_path):
    smartctl = fake_tool(
        tmp_path, "smartctl", {"-g wcache -n standby -d scsi /dev/sdz": (INTEL_DISABLED, None, 0)}, body=OLD_SMARTCTL
    )
    r = WriteCacheReader(
        sysfs_root=str(FIXTURES / SYSFS),
        hdparm=str(tmp_path / "none"),
        smartctl=smartctl,
        smartctl_json=False,
        runner=bounded(run_tool, lambda: Bounds(timeout=5.0)),
    )
    assert r.read("sdz", KIND_SCSI) == [WriteCacheState(CACHE_DISABLED, "smartctl")]


def test_unknown_flavour_falls_back_to_text_once_and_remembers(tmp_path):
    smartctl = fake_tool(
        tmp_path, "smartctl", {"-g wcache -n standby -d sat /dev/sda": (INTEL_DISABLED, None, 0)}, body=OLD_SMARTCTL
    )
    r = reader(tmp_path, smartctl=smartctl)
    assert r.smartctl_json is None
    assert r.read("sda", KIND_ATA)[-1] == WriteCacheState(CACHE_DISABLED, "smartctl")
    assert r.smartctl_json is False
    assert r.read("sda", KIND_ATA)[-1] == WriteCacheState(CACHE_DISABLED, "smartctl")
    assert calls(tmp_path) == [
        "-g wcache --json -n standby -d sat /dev/sda",
        "-g wcache -n standby -d sat /dev/sda",
        "-g wcache -n standby -d sat /dev/sda",  # the second read goes straight to text
    ]


def test_json_said_explicitly_is_not_second_guessed(tmp_path):
    smartctl = fake_tool(tmp_path, "smartctl", {}, body=OLD_SMARTCTL)
    r = reader(tmp_path, smartctl=smartctl)
    r.smartctl_json = True
    (state,) = r.read("sdz", KIND_SCSI)
    assert state.state == CACHE_UNKNOWN and "exit status 1" in state.detail
    assert r.smartctl_json is True
    assert calls(tmp_path) == ["-g wcache --json -n standby -d scsi /dev/sdz"]


def test_modern_smartctl_keeps_json_when_the_flavour_is_unknown(tmp_path):
    smartctl = fake_tool(
        tmp_path,
        "smartctl",
        {"-g wcache --json -n standby -d sat /dev/sda": (SC + "sdb_wcache_disabled.json", None, 0)},
    )
    r = reader(tmp_path, smartctl=smartctl)
    assert r.read("sda", KIND_ATA)[-1] == WriteCacheState(CACHE_DISABLED, "smartctl")
    assert r.smartctl_json is None  # nothing learnt: JSON simply worked


def test_old_smartctl_text_error_is_unknown_with_its_words(tmp_path):
    smartctl = fake_tool(
        tmp_path, "smartctl", {"-g wcache -n standby -d scsi /dev/vda": (SC + "vda_unable_to_detect.txt", None, 1)}
    )
    r = reader(tmp_path, smartctl=smartctl)
    r.smartctl_json = False
    (state,) = r.read("vda", KIND_SCSI)
    assert state == WriteCacheState(
        CACHE_UNKNOWN, "smartctl", "smartctl exit status 1: /dev/vda: Unable to detect device type"
    )


def test_old_smartctl_unreadable_text_is_unknown(tmp_path):
    smartctl = fake_tool(tmp_path, "smartctl", {}, body="echo 'Write cache is:   Perhaps'; exit 0")
    r = reader(tmp_path, smartctl=smartctl)
    r.smartctl_json = False
    (state,) = r.read("sdz", KIND_SCSI)
    assert state.state == CACHE_UNKNOWN and "unreadable output" in state.detail


STANDBY_TOOL = 'printf \'%s\\n\' "$*" >> "$(dirname "$0")/calls.log"'


@pytest.mark.parametrize(
    "block,kind,sysfs_states",
    [
        ("sda", KIND_ATA, [(CACHE_ENABLED, "sysfs_queue"), (CACHE_ENABLED, "scsi_cache_type")]),
        ("nvme0n1", KIND_NVME, [(CACHE_ENABLED, "sysfs_queue")]),
        ("sdz", KIND_SCSI, []),  # no sysfs answer: smartctl would be asked, but not in standby
    ],
)
def test_a_drive_in_standby_is_read_from_sysfs_only(tmp_path, block, kind, sysfs_states):
    # Every tool would answer; none may be run for a sleeping drive.
    tools = {
        "hdparm": fake_tool(tmp_path, "hdparm", {f"-W /dev/{block}": (HD + "sdb_off.out", None, 0)}, body=STANDBY_TOOL),
        "nvme": fake_tool(
            tmp_path, "nvme", {"get-feature /dev/nvme0 -f 6": (NV + "vwc_off_v2.out", None, 0)}, body=STANDBY_TOOL
        ),
        "smartctl": fake_tool(
            tmp_path,
            "smartctl",
            {f"-g wcache --json -n standby -d scsi /dev/{block}": (SC + "sdb_wcache_disabled.json", None, 0)},
            body=STANDBY_TOOL,
        ),
    }
    r = reader(tmp_path, **tools)
    assert [(s.state, s.source) for s in r.read(block, kind, standby=True)] == sysfs_states
    assert calls(tmp_path) == []
    # awake, the same reader asks the drive, which says "disabled"
    awake = r.read(block, kind)
    assert awake[-1].state == CACHE_DISABLED and awake[-1].source in ("hdparm", "nvme_feature", "smartctl")
    assert len(calls(tmp_path)) == 1
