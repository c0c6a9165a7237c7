"""sysfs block devices (collectors/blockdev.py) and the configuration loader."""

from __future__ import annotations

import pytest

from agent.config import ConfigError, load_config
from collectors.blockdev import is_candidate, parse_block_device, read_block_devices
from collectors.model import ParseError

# -- blockdev -------------------------------------------------------------------------------


def test_parse_block_device_real_shapes():
    # Values in the shape the kernel prints them (size in 512-byte units, trailing newline).
    b = parse_block_device("nvme0n1", {"size": "2000409264\n", "queue/rotational": "0\n",
                                       "device/model": "INTEL SSDPE2KX020T8                     \n",
                                       "device/serial": "PHLJ9123004X2P0BGN  \n",
                                       "device/firmware_rev": "VDV10131\n"})
    assert b.size_bytes == 2000409264 * 512
    assert b.rotational is False
    assert b.model == "INTEL SSDPE2KX020T8" and b.serial == "PHLJ9123004X2P0BGN"
    assert b.firmware == "VDV10131" and b.transport == "nvme" and b.drive_name == "nvme0"
    assert parse_block_device("dfa", {"size": "1\n"}).transport == "shannon"
    assert parse_block_device("vda", {"size": "8\n", "queue/rotational": "1\n"}).rotational is True


@pytest.mark.parametrize("files, why", [
    ({"size": ""}, None),  # empty file: size not reported
    ({"size": "abc"}, "not a number"),
    ({"size": "-5"}, "not a number"),
    ({"size": "\u00b2"}, "not a number"),  # a digit to str.isdigit(), not to int()
    ({"size": "12 34"}, "not a number"),
    ({"size": "8", "queue/rotational": "2"}, "expected 0 or 1"),
    ({"size": "8", "queue/rotational": "yes"}, "expected 0 or 1"),
])
def test_parse_block_device_malformed(files, why):
    if why is None:
        assert parse_block_device("sdx", files).size_bytes is None
        return
    with pytest.raises(ParseError, match=why):
        parse_block_device("sdx", files)


def test_candidates_leave_out_virtual_devices():
    for name in ("loop0", "ram1", "zram0", "dm-3", "md127", "sr0", "nbd2"):
        assert not is_candidate(name), name
    for name in ("sda", "nvme0n1", "dfa", "vda", "mmcblk0"):
        assert is_candidate(name), name


def test_read_block_devices_on_a_tree(tmp_path):
    for name, size in (("sda", "976773168"), ("loop0", "0"), ("dfb", "2343750000")):
        d = tmp_path / "block" / name / "queue"
        d.mkdir(parents=True)
        (d.parent / "size").write_text(size + "\n")
        (d / "rotational").write_text("0\n")
    (tmp_path / "block" / "sdz").mkdir()  # vanished half way: no size file
    (tmp_path / "block" / "sdy").mkdir()
    (tmp_path / "block" / "sdy" / "size").write_text("garbage\n")  # unreadable value: skipped
    found = {b.name: b for b in read_block_devices(str(tmp_path))}
    assert set(found) == {"sda", "dfb"}
    assert found["dfb"].size_bytes == 2343750000 * 512
    assert read_block_devices(str(tmp_path / "missing")) == []


# -- config -----------------------------------------------------------------------------------


def test_config_defaults_and_overrides(tmp_path):
    path = tmp_path / "c.yml"
    path.write_text("listen_address: 127.0.0.1:9999\nintervals: {smartctl: 120}\n"
                    "write_cache_rules:\n  - {model: '^INTEL', expected: disabled}\n")
    cfg = load_config(str(path), {"intervals": {"diskstats": 5}})
    assert cfg.listen_host_port() == ("127.0.0.1", 9999)
    assert cfg.intervals.smartctl == 120 and cfg.intervals.diskstats == 5
    assert cfg.intervals.shannon == 60  # default kept under a partial override
    assert cfg.expected_write_cache("X", "INTEL SSDSC2BB480G7") == "disabled"
    assert cfg.expected_write_cache("X", "Samsung SSD 860") == "enabled"
    assert load_config(None).listen_host_port() == ("0.0.0.0", 9877)


@pytest.mark.parametrize("text, why", [
    ("listen_adress: ':1'\n", "listen_adress"),  # a typo is an error, not silently ignored
    ("intervals: {smartctl: 0}\n", "intervals.smartctl"),
    ("intervals: {smartctl: soon}\n", "intervals.smartctl"),
    ("collectors: [smartctl, nosuch]\n", "unknown collector"),
    ("write_cache_expected: maybe\n", "write_cache_expected"),
    ("write_cache_rules: [{model: '('}]\n", "write_cache_rules"),
    ("- a\n- b\n", "mapping"),
    ("key: [unclosed\n", "not valid YAML"),
    ("max_concurrent_probes: 0\n", "max_concurrent_probes"),
])
def test_config_errors_name_the_key(tmp_path, text, why):
    path = tmp_path / "c.yml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=why):
        load_config(str(path))


def test_config_missing_file_and_bad_port(tmp_path):
    with pytest.raises(ConfigError, match="cannot read config"):
        load_config(str(tmp_path / "none.yml"))
    with pytest.raises(ConfigError, match="needs a port"):
        load_config(None, {"listen_address": "localhost:\u00b2"}).listen_host_port()
    assert load_config(str(_empty(tmp_path))).intervals.smartctl == 300


def _empty(tmp_path):
    p = tmp_path / "empty.yml"
    p.write_text("")
    return p
