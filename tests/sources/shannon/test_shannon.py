"""Tests for collectors.shannon: shannon-status -p / -a parsers, the sysfs parser, the probe.

Expected values are read off the fixture files by hand. Real captures come from the seed
document (driver 2.6.9); files named constructed__* and the sysfs tree are written by us
(see tests/fixtures/shannon/PROVENANCE.tsv).
"""

from __future__ import annotations

import os
import shutil
import stat

import pytest

from collectors.model import ParseError, Temperature, Voltage
from collectors.runner import run_tool
from collectors.shannon import (
    SYSFS_FILES,
    ShannonProbe,
    parse_card_list,
    parse_status_a,
    parse_status_p,
    parse_sysfs,
)
from tests.conftest import fixture_files, fixture_path, read_fixture

P_9H = "shannon/seed000__status-p_scta_9h.txt"
A_9H = "shannon/seed000__status-a_9h.txt"
A_21H = "shannon/seed000__status-a_21h_body.txt"
P_GEN2 = "shannon/constructed__status-p-a_gen2_two_cards.txt"
A_TWO = "shannon/constructed__status-a_two_cards.txt"
SYSFS = "shannon/sysfs"


def text(relative: str) -> str:
    return read_fixture(relative).decode("utf-8")


# ---------------------------------------------------------------------------------------
# real captures: one table, every value read off the file by hand

# Identity and geometry are the same card in all three real files.
SEED_CARD = {
    "kind": "shannon",
    "device": "/dev/scta",
    "block_device": "dfa",
    "serial": "006819246149b014",
    "model": "sh-shannon-pcie-ssd",
    "firmware": "0c321351",
    "driver_version": "2.6.9",
    "is_ssd": True,
    "capacity_bytes": 1_200_000_000_000,  # 1200.00 GB
    "physical_capacity_bytes": 1_632_370_000_000,  # 1632.37 GB
    "logical_sector_bytes": 512,
    "life_left_ratio": 0.99,  # 99%
    "bad_block_ratio": 0.010760,  # 1.0760%
    "spare_left_ratio": 0.27,  # overprovision 27%
    "access_mode": "readwrite",
    "readonly": False,
    "power_cycles": 3,
    "host_read_bytes": 5_172_110_000_000,  # 5172.11 GB in all three
    "defects": {},
}

REAL_CASES = [
    (
        P_9H,
        parse_status_p,
        {
            **SEED_CARD,
            "spare_threshold_ratio": None,  # -p does not print "warn at"
            "write_amplification": 1.4493,
            "host_written_bytes": 13_801_320_000_000,  # 13801.32 GB
            "nand_written_bytes": 20_001_570_000_000,  # total_write_data=20001.57 GB
            "power_on_seconds": 9 * 3600 + 15 * 60,
        },
        (
            Temperature("controller", 71.0, max_celsius=77.0),
            Temperature("board", 53.0, max_celsius=59.0),
            Temperature("flash", 53.0, max_celsius=63.0),
        ),
        (Voltage("internal", 1.004, max_volts=1.028), Voltage("auxiliary", 1.790, max_volts=1.804)),
    ),
    (
        A_9H,
        parse_status_a,
        {
            **SEED_CARD,
            "spare_threshold_ratio": 0.10,  # "Overprovision: 27%, warn at 10%"
            "write_amplification": 1.4501,
            "host_written_bytes": 13_774_360_000_000,  # 13774.36 GB, not the GiB figure
            "nand_written_bytes": 19_974_610_000_000,
            "power_on_seconds": 9 * 3600 + 15 * 60,
        },
        (
            Temperature("controller", 71.0, max_celsius=77.0),
            Temperature("board", 53.0, max_celsius=59.0),
            Temperature("flash", 53.0, max_celsius=63.0),
        ),
        (Voltage("internal", 1.001, max_volts=1.028), Voltage("auxiliary", 1.795, max_volts=1.804)),
    ),
    (
        A_21H,
        parse_status_a,
        {
            **SEED_CARD,
            "spare_threshold_ratio": 0.10,
            "write_amplification": 1.1618,
            "host_written_bytes": 41_516_250_000_000,  # 41516.25 GB
            "nand_written_bytes": 48_235_250_000_000,
            "power_on_seconds": 21 * 3600 + 9 * 60,  # "21 hours 9 minutes"
        },
        (
            Temperature("controller", 70.0, max_celsius=77.0),
            Temperature("board", 52.0, max_celsius=59.0),
            Temperature("flash", 52.0, max_celsius=63.0),
        ),
        (Voltage("internal", 0.999, max_volts=1.028), Voltage("auxiliary", 1.787, max_volts=1.807)),
    ),
]


@pytest.mark.parametrize("relative, parse, expected, temperatures, voltages", REAL_CASES,
                         ids=[c[0].split("/")[-1] for c in REAL_CASES])
def test_real_captures(relative, parse, expected, temperatures, voltages):
    readings = parse(text(relative))
    assert len(readings) == 1
    reading = readings[0]
    for name, value in expected.items():
        assert getattr(reading, name) == value, name
    assert reading.temperatures == temperatures
    assert reading.voltages == voltages
    assert reading.extra["pci_address"] == "41:00:0"
    assert reading.extra["error_correction"] == "35 bits per 880 bytes codeword"


@pytest.mark.parametrize("relative, parse", [(c[0], c[1]) for c in REAL_CASES])
def test_real_write_amplification_matches_volumes(relative, parse):
    # The card's own write amplifier is NAND bytes / host bytes: if both volumes were
    # converted with the same unit, their ratio reproduces the printed figure.
    reading = parse(text(relative))[0]
    ratio = reading.nand_written_bytes / reading.host_written_bytes
    assert abs(ratio - reading.write_amplification) < 0.00015


def test_p_sources_name_the_key():
    reading = parse_status_p(text(P_9H))[0]
    assert reading.sources["life_left_ratio"] == "shannon estimated_life_left"
    assert reading.sources["bad_block_ratio"] == "shannon bad_block_percentage"
    assert reading.sources["host_written_bytes"] == "shannon host_write_data"
    assert reading.sources["nand_written_bytes"] == "shannon total_write_data"
    assert reading.extra["device_state"] == "attached as disk /dev/dfa"


def test_a_sources_name_the_label():
    reading = parse_status_a(text(A_21H))[0]
    assert reading.sources["life_left_ratio"] == "shannon -a Estimated life left"
    assert reading.sources["bad_block_ratio"] == "shannon -a Media status"
    assert reading.extra["vendor_id"] == "1cb0"
    assert reading.extra["physical_sector"] == "4096"


# ---------------------------------------------------------------------------------------
# constructed: generation 2 -p -a, two cards


def test_gen2_two_cards():
    healthy, worn = parse_status_p(text(P_GEN2))

    assert healthy.device == "/dev/scta"
    assert healthy.block_device == "dfa"
    assert healthy.serial == "00681c2a4e01f3b1"
    assert healthy.driver_version == "3.4.5.0"
    assert healthy.access_mode == "readwrite"  # printed "ReadWrite"
    assert healthy.readonly is False
    assert healthy.life_left_ratio == 0.9682  # 96.82%
    assert healthy.spare_left_ratio == 0.27
    assert healthy.bad_block_ratio is None  # gen 2 gives a count, not a percentage
    assert healthy.defects == {"dynamic_bad_block": 37}
    assert healthy.capacity_bytes == 3_200_000_000_000
    assert healthy.host_written_bytes == 2_846_512_370_000_000
    assert healthy.host_read_bytes == 3_951_207_880_000_000
    assert healthy.nand_written_bytes == 3_458_512_530_000_000
    assert healthy.write_amplification == 1.2150
    assert healthy.power_on_seconds == 19731 * 3600 + 26 * 60
    assert healthy.power_cycles == 14
    assert healthy.temperatures == (
        Temperature("controller", 61.0),
        Temperature("board", 47.0),
        Temperature("flash", 49.0),
    )
    assert healthy.voltages == (Voltage("internal", 1.002), Voltage("auxiliary", 1.796))
    assert healthy.extra["media_status"] == "Healthy"
    assert healthy.extra["seu_flag"] == "Normal"
    assert healthy.extra["pci_address"] == "04:00:0"
    assert healthy.sources["life_left_ratio"] == "shannon estimated_life_left"
    assert healthy.sources["power_on_seconds"] == "shannon power_on_time"

    assert worn.device == "/dev/sctb"
    assert worn.block_device == "dfb"
    assert worn.serial == "00681c2a4e01f7d4"
    assert worn.access_mode == "reduced_write"  # printed "ReducedWrite"
    assert worn.readonly is False  # throttled, still accepting writes
    assert worn.extra["access_mode_raw"] == "ReducedWrite"
    assert worn.life_left_ratio == 0.0347
    assert worn.spare_left_ratio == 0.09
    assert worn.defects == {"dynamic_bad_block": 2231}
    assert worn.extra["seu_flag"] == "Correctable"
    assert worn.power_on_seconds == 41206 * 3600 + 3 * 60
    assert worn.write_amplification == 1.4930
    assert worn.host_written_bytes == 9_730_455_100_000_000


def test_constructed_a_two_cards():
    healthy, failed = parse_status_a(text(A_TWO))
    assert (healthy.device, healthy.block_device, healthy.serial) == ("/dev/scta", "dfa", "0068192461a3c502")
    assert healthy.life_left_ratio == 0.92
    assert healthy.readonly is False
    assert healthy.bad_block_ratio == 0.011402
    assert healthy.power_on_seconds == 8760 * 3600 + 12 * 60
    assert healthy.host_written_bytes == 903_115_420_000_000

    assert (failed.device, failed.block_device, failed.serial) == ("/dev/sctb", "dfb", "0068192461a3c9e7")
    assert failed.access_mode == "readonly"
    assert failed.readonly is True
    assert failed.life_left_ratio == 0.01
    assert failed.bad_block_ratio == 0.063127
    assert failed.spare_left_ratio == 0.07
    assert failed.spare_threshold_ratio == 0.10  # spare below its own warning level
    assert failed.write_amplification == 1.5020
    assert failed.nand_written_bytes == 17_733_024_370_000_000
    assert failed.temperatures[0] == Temperature("controller", 73.0, max_celsius=84.0)
    assert failed.extra["pci_address"] == "42:00:0"


# ---------------------------------------------------------------------------------------
# card discovery


@pytest.mark.parametrize(
    "relative, nodes",
    [
        (A_9H, ["/dev/scta"]),
        (A_21H, ["/dev/scta"]),
        (A_TWO, ["/dev/scta", "/dev/sctb"]),
        (P_9H, ["/dev/scta"]),
        (P_GEN2, ["/dev/scta", "/dev/sctb"]),
    ],
)
def test_card_list(relative, nodes):
    assert parse_card_list(text(relative)) == nodes


@pytest.mark.parametrize(
    "output",
    ["", "\n\n", "Totally found 0 Direct-IO PCIe SSD card on this system.\n"],
    ids=["empty", "blank", "footer-zero"],
)
def test_card_list_no_cards(output):
    assert parse_card_list(output) == []


@pytest.mark.parametrize(
    "output",
    [
        "\x7fELF\x02\x01\x01\x00\x00\x00\xff\xfe\n\x00\x13",
        "Segmentation fault\n",
        # footer says two, only one card named: output cut short
        "Found Shannon PCIE SSD card /dev/scta:\n\nTotally found 2 Direct-IO PCIe SSD card on this system.\n",
    ],
    ids=["binary", "unrelated-text", "footer-mismatch"],
)
def test_card_list_malformed(output):
    with pytest.raises(ParseError):
        parse_card_list(output)


def test_zero_cards_parse_to_empty_list():
    footer = "Totally found 0 Direct-IO PCIe Flash card on this system.\n"
    assert parse_status_p(footer) == []
    assert parse_status_a(footer) == []


# ---------------------------------------------------------------------------------------
# malformed input: only ParseError, never another exception, never a half reading



def _p_cut_mid_line() -> str:
    full = text(P_9H)
    return full[: full.index("host_write_data=") + len("host_write_data=1380")]


def _p_cut_mid_key() -> str:
    full = text(P_9H)
    return full[: full.index("estimated_life_left=") + len("estimated_li")]


def _p_without_serial() -> str:
    return "\n".join(line for line in text(P_9H).splitlines() if not line.startswith("serial_number="))


def _p_replace(old: str, new: str) -> str:
    full = text(P_9H)
    assert old in full
    return full.replace(old, new)


def _gen2_first_card_only() -> str:
    # Cut after the first card: the second header and the footer announce a card that
    # never arrives.
    full = text(P_GEN2)
    return full[: full.index("control_device_node=/dev/sctb")]


def _drop_second_card(relative: str, header: str) -> str:
    # Remove the second card with its header: only the footer's count ("Totally found 2")
    # still says a card is missing.
    full = text(relative)
    start = full.index(header)
    end = full.index("Totally found")
    return full[:start] + full[end:]


MALFORMED_P = [
    ("empty", lambda: ""),
    ("only-header", lambda: "Found Shannon PCIE Flash card /dev/sctb:\n"),
    ("only-footer-mismatch", lambda: "Totally found 2 Direct-IO PCIe Flash card on this system.\n"),
    ("life-abc", lambda: "drive=/dev/scta\nserial_number=X1\nestimated_life_left=abc%\n"),
    ("life-over-100", lambda: _p_replace("estimated_life_left=99%", "estimated_life_left=140%")),
    ("life-no-percent-sign", lambda: _p_replace("estimated_life_left=99%", "estimated_life_left=99")),
    ("truncated-mid-value", _p_cut_mid_line),
    ("truncated-mid-key", _p_cut_mid_key),
    ("binary-garbage", lambda: "\x00\x01\x02\xff\xfe\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"),
    ("no-serial", _p_without_serial),
    ("temp-fahrenheit", lambda: _p_replace("controller_temp=71 degC", "controller_temp=160 degF")),
    ("size-no-unit", lambda: _p_replace("host_write_data=13801.32 GB", "host_write_data=13801.32")),
    ("size-unknown-unit", lambda: _p_replace("host_write_data=13801.32 GB", "host_write_data=13801.32 GX")),
    ("voltage-in-volts", lambda: _p_replace("internal_voltage=1004 mV", "internal_voltage=1.004 V")),
    ("power-on-garbage", lambda: _p_replace("power_on_hours=9 hours 15 minutes", "power_on_hours=9 fortnights")),
    ("cycles-negative", lambda: _p_replace("power_cycles=3", "power_cycles=-3")),
    ("key-before-drive", lambda: "serial_number=X1\ndrive=/dev/scta\n"),
    ("human-readable-a", lambda: text(A_9H)),
    ("gen2-truncated-after-first-card", _gen2_first_card_only),
    ("gen2-footer-count-mismatch", lambda: _drop_second_card(P_GEN2, "Found Shannon PCIE Flash card /dev/sctb:")),
]


@pytest.mark.parametrize("make", [m for _, m in MALFORMED_P], ids=[n for n, _ in MALFORMED_P])
def test_status_p_malformed(make):
    with pytest.raises(ParseError):
        parse_status_p(make())


def _a_replace(old: str, new: str) -> str:
    full = text(A_21H)
    assert old in full
    return full.replace(old, new)


def _a_cut_mid_line() -> str:
    full = text(A_9H)
    return full[: full.index("max 77 degC") + len("ma")]


def _a_two_cut_after_second_header() -> str:
    full = text(A_TWO)
    return full[: full.index("Direct-IO drive sctb")]


MALFORMED_A = [
    ("empty", lambda: ""),
    ("only-header", lambda: "Found Shannon PCIE SSD card /dev/scta:\n\n"),
    ("life-abc", lambda: _a_replace("Estimated life left: 99% left", "Estimated life left: abc% left")),
    ("truncated-mid-line", _a_cut_mid_line),
    ("truncated-after-header", _a_two_cut_after_second_header),
    ("footer-count-mismatch", lambda: _drop_second_card(A_TWO, "Found Shannon PCIE SSD card /dev/sctb:")),
    ("binary-garbage", lambda: "\x00\x01\x02\xff\xfe\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"),
    ("no-serial", lambda: _a_replace("Model:sh-shannon-pcie-ssd, SN: 006819246149b014", "Model:sh-shannon-pcie-ssd")),
    ("temp-kelvin", lambda: _a_replace("70 degC, max 77 degC", "343 K, max 350 K")),
    ("bad-block-over-100", lambda: _a_replace("1.0760% bad block", "107.60% bad block")),
    ("key-value-garbage-after-node", lambda: "control_device_node=/dev/scta\nnot a pair\n"),
    ("text-before-card", lambda: "Segmentation fault\n" + text(A_21H)),
]


@pytest.mark.parametrize("make", [m for _, m in MALFORMED_A], ids=[n for n, _ in MALFORMED_A])
def test_status_a_malformed(make):
    with pytest.raises(ParseError):
        parse_status_a(make())


def test_error_names_the_line():
    with pytest.raises(ParseError, match=r"line 3: estimated_life_left: 'abc%'"):
        parse_status_p("drive=/dev/scta\nserial_number=X1\nestimated_life_left=abc%\n")


# ---------------------------------------------------------------------------------------
# sysfs


def sysfs_probe(root) -> ShannonProbe:
    return ShannonProbe(tool="/nonexistent/shannon-status", sysfs_root=str(root))


def test_sysfs_tree_inventory():
    # Every file of the constructed tree is one the probe reads, or one it must skip.
    names = {p.name for p in fixture_files(SYSFS)}
    ignored = {"host_write_bandwidth", "debug_level"}
    assert names - ignored <= {n.rsplit("/", 1)[-1] for n in SYSFS_FILES}


def test_sysfs_healthy_card():
    files = sysfs_probe(fixture_path(SYSFS)).read_sysfs("dfa")
    assert files is not None
    assert files["estimated_life_left"] == "96.82\n"  # raw, unparsed
    assert "host_write_bandwidth" not in files and "debug_level" not in files
    reading = parse_sysfs(files, "dfa")
    assert reading.kind == "shannon"
    assert reading.device == "/dev/dfa"
    assert reading.block_device == "dfa"
    assert reading.serial == "00681c2a4e01f3b1"
    assert reading.firmware == "0e0d1b42"
    assert reading.life_left_ratio == 0.9682
    assert reading.spare_left_ratio == 0.27
    assert reading.defects == {"dynamic_bad_block": 37, "static_bad_block": 412}
    assert reading.access_mode == "readwrite"  # "mode=0, readwrite"
    assert reading.readonly is False
    # 512-byte sectors
    assert reading.host_written_bytes == 5_559_594_472_656 * 512
    assert reading.host_read_bytes == 7_717_202_890_625 * 512
    assert reading.nand_written_bytes == 6_754_907_285_156 * 512
    assert reading.temperatures == (
        Temperature("controller", 61.0, max_celsius=78.0),
        Temperature("board", 47.0, max_celsius=60.0),
        Temperature("flash", 49.0, max_celsius=66.0),
    )
    assert reading.voltages == (Voltage("internal", 1.002, max_volts=1.031), Voltage("auxiliary", 1.796, max_volts=1.810))
    assert reading.power_on_seconds == 71_033_160
    assert reading.power_cycles == 14
    assert reading.extra["seu_flag"] == "Normal"
    assert reading.extra["free_blkcnt"] == "4180"
    assert reading.extra["seu_ecc_error_history"] == "2"
    assert reading.extra["pci_address"] == "04:00:0"
    assert reading.sources["life_left_ratio"] == "shannon sysfs estimated_life_left"
    assert reading.sources["host_written_bytes"] == "shannon sysfs host_write_sectors"


def test_sysfs_reduced_write_card():
    reading = parse_sysfs(sysfs_probe(fixture_path(SYSFS)).read_sysfs("dfb"), "dfb")
    assert reading.access_mode == "reduced_write"  # "mode=1, reduced write"
    assert reading.readonly is False
    assert reading.life_left_ratio == 0.0347
    assert reading.spare_left_ratio == 0.09
    assert reading.defects["dynamic_bad_block"] == 2231
    assert reading.extra["seu_flag"] == "Correctable"
    assert reading.extra["reduced_write_reason"] == "estimated life left below 5%"


def test_sysfs_partial_driver():
    files = sysfs_probe(fixture_path(SYSFS)).read_sysfs("dfc")
    assert files == {"estimated_life_left": "100\n", "access_mode": "readwrite\n"}
    reading = parse_sysfs(files, "dfc")
    assert reading.life_left_ratio == 1.0
    assert reading.access_mode == "readwrite"
    assert reading.serial is None  # not reported: the tool's reading carries identity
    assert reading.host_written_bytes is None  # absent, not zero
    assert reading.temperatures == ()


def test_sysfs_missing_directory(tmp_path):
    assert sysfs_probe(fixture_path(SYSFS)).read_sysfs("sda") is None
    assert sysfs_probe(tmp_path).read_sysfs("dfa") is None


def test_sysfs_unreadable_file_is_skipped(tmp_path):
    root = tmp_path / "sys"
    shutil.copytree(fixture_path(SYSFS), root)
    base = root / "class" / "block" / "dfa" / "shannon"
    # A directory where a file should be makes open() fail with EISDIR, as a failing
    # card's attribute fails with EIO: the other files must still be read.
    (base / "seu_flag").unlink()
    (base / "seu_flag").mkdir()
    (base / "estimated_life_left").unlink()
    files = sysfs_probe(root).read_sysfs("dfa")
    assert "seu_flag" not in files and "estimated_life_left" not in files
    reading = parse_sysfs(files, "dfa")
    assert reading.life_left_ratio is None
    assert "seu_flag" not in reading.extra
    assert reading.defects["dynamic_bad_block"] == 37


@pytest.mark.parametrize("name", ["../dfa", "dfa/..", "", "df a", "-x"])
def test_sysfs_rejects_path_names(name):
    with pytest.raises(ValueError):
        sysfs_probe(fixture_path(SYSFS)).read_sysfs(name)


MALFORMED_SYSFS = [
    ("empty", {}),
    ("only-blank-values", {"estimated_life_left": "\n", "access_mode": ""}),
    ("only-unknown-files", {"debug_level": "0\n", "host_write_bandwidth": "12\n"}),
    ("life-abc", {"estimated_life_left": "abc\n"}),
    ("life-over-100", {"estimated_life_left": "140\n"}),
    ("sectors-fraction", {"host_write_sectors": "12.5\n"}),
    ("temperature-fahrenheit", {"temperature_int": "140 degF\n"}),
    ("voltage-volts", {"voltage_int": "1.0 V\n"}),
    ("bad-blocks-garbage", {"dynamic_bad_blkcnt": "\x00\xff\n"}),
]


@pytest.mark.parametrize("files", [f for _, f in MALFORMED_SYSFS], ids=[n for n, _ in MALFORMED_SYSFS])
def test_sysfs_malformed(files):
    with pytest.raises(ParseError):
        parse_sysfs(files, "dfa")


def test_sysfs_parse_rejects_bad_block_device_name():
    with pytest.raises(ParseError):
        parse_sysfs({"estimated_life_left": "99"}, "../../etc")


@pytest.mark.parametrize(
    "files, life, temperature, volts",
    [
        ({"estimated_life_left": "97%", "temperature_int": "61 degC", "voltage_int": "1002 mV"}, 0.97, 61.0, 1.002),
        ({"estimated_life_left": "97", "temperature_int": "61", "voltage_int": "1002"}, 0.97, 61.0, 1.002),
    ],
    ids=["with-units", "bare"],
)
def test_sysfs_values_with_or_without_units(files, life, temperature, volts):
    reading = parse_sysfs(files, "dfa")
    assert reading.life_left_ratio == life
    assert reading.temperatures == (Temperature("controller", temperature),)
    assert reading.voltages == (Voltage("internal", volts),)


def test_sysfs_unknown_access_mode_is_kept_raw():
    reading = parse_sysfs({"access_mode": "mode=7, frozen"}, "dfa")
    assert reading.access_mode is None
    assert reading.readonly is None
    assert reading.extra["access_mode_raw"] == "mode=7, frozen"


# ---------------------------------------------------------------------------------------
# probe: a fake shannon-status executable, run through the real run_tool


@pytest.fixture
def fake_tool(tmp_path):
    script = tmp_path / "shannon-status"
    script.write_text(
        "#!/bin/sh\n"
        "# Replays captured output chosen by the arguments, like the real tool on a lab box.\n"
        'case "$*" in\n'
        f'  "-a") cat "{fixture_path(A_9H)}" ;;\n'
        f'  "-p /dev/scta") cat "{fixture_path(P_9H)}" ;;\n'
        f'  "-p -a") cat "{fixture_path(P_GEN2)}" ;;\n'
        '  *) echo "shannon-status: bad arguments: $*" >&2; exit 1 ;;\n'
        "esac\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return str(script)


def test_probe_list_cards(fake_tool):
    result = ShannonProbe(tool=fake_tool).list_cards()
    assert result.argv == (fake_tool, "-a")
    assert result.exit_code == 0 and result.ok_to_parse
    assert result.stdout == read_fixture(A_9H)
    assert parse_card_list(result.stdout.decode()) == ["/dev/scta"]
    assert parse_status_a(result.stdout.decode())[0].write_amplification == 1.4501


def test_probe_read_card(fake_tool):
    result = ShannonProbe(tool=fake_tool, runner=run_tool, timeout=5.0).read_card("/dev/scta")
    assert result.argv == (fake_tool, "-p", "/dev/scta")
    assert result.exit_code == 0
    (reading,) = parse_status_p(result.stdout.decode())
    assert reading.host_written_bytes == 13_801_320_000_000


def test_probe_read_all_p(fake_tool):
    result = ShannonProbe(tool=fake_tool).read_all_p()
    assert result.argv == (fake_tool, "-p", "-a")
    assert [r.device for r in parse_status_p(result.stdout.decode())] == ["/dev/scta", "/dev/sctb"]


def test_probe_unknown_card_reports_tool_failure(fake_tool):
    result = ShannonProbe(tool=fake_tool).read_card("/dev/sctz")
    assert result.exit_code == 1
    assert result.stdout == b""
    assert b"bad arguments: -p /dev/sctz" in result.stderr


@pytest.mark.parametrize("device", ["-a", "/dev/scta; reboot", "scta", "/dev/../etc/passwd"])
def test_probe_rejects_odd_control_devices(fake_tool, device):
    with pytest.raises(ValueError):
        ShannonProbe(tool=fake_tool).read_card(device)


def test_probe_missing_tool(tmp_path):
    result = ShannonProbe(tool=str(tmp_path / "shannon-status")).list_cards()
    assert result.exit_code is None
    assert result.error is not None and "not found" in result.error
    assert not result.ok_to_parse


def test_probe_timeout_is_passed_to_runner(tmp_path):
    script = tmp_path / "shannon-status"
    script.write_text("#!/bin/sh\nexec sleep 30\n")
    script.chmod(0o755)
    result = ShannonProbe(tool=str(script), timeout=0.5).list_cards()
    assert result.timed_out
    assert not result.ok_to_parse
    assert result.duration_seconds < 10


def test_probe_uses_configured_sysfs_root(tmp_path):
    # The path is built from the configured root, never from /sys.
    probe = ShannonProbe(sysfs_root=str(tmp_path))
    assert probe.sysfs_dir("dfa") == os.path.join(str(tmp_path), "class", "block", "dfa", "shannon")
