"""Fusion-io / SanDisk ioMemory: ``fio-status`` captures from public sources parsed into
readings (values read off the files by hand), malformed input, and the source end to end
through a fake ``fio-status`` (``tools.fio_status``), directly and through the probe helper."""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest
import yaml

from collectors import evidence
from collectors.fusionio.parse import parse_status
from collectors.model import ParseError
from tests.conftest import fixture_files, fixture_path
from tests.fakehost import AgentProcess, build_default_host
from tests.support.e2e import FAST, check_metrics, scrape, value, wait_for

REMIX = "fusionio/remixvsl__iodrive2-1t2_vsl3.2.16.txt"
DUO = "fusionio/iomemory-vsl-readme__iodrive-duo_vsl3.2.16.txt"
HP = "fusionio/iomemory-vsl-readme__hp-iodrive-320_vsl3.2.10_no-a.txt"
PERCONA = "fusionio/percona-toolkit__fio-003_original_output.txt"


def read(name: str):
    return parse_status(fixture_path(name).read_text())


def test_iodrive2_every_value_with_its_evidence():
    (r,) = read(REMIX)
    assert (r.kind, r.device, r.block_device) == ("fusionio", "/dev/fct0", "fioa")
    assert r.serial == "1241D0259" and r.model == "Fusion-io ioDrive2 1.205TB"
    assert r.firmware == "7.1.15 rev 110356" and r.driver_version == "3.2.16 build 1731"
    assert r.capacity_bytes == 2353515625 * 512 == 1_205_000_000_000
    assert r.logical_sector_bytes == 512
    assert r.life_left_ratio == pytest.approx(0.9946)
    assert r.spare_left_ratio == 1.0 and r.spare_threshold_ratio == pytest.approx(0.10)
    assert r.smart_healthy is True
    assert r.nand_written_bytes == 92_553_058_889_120
    assert r.host_written_bytes is None and "host_written_bytes_withheld" in r.extra
    assert r.extra["physical_bytes_read"] == "82741942333288"
    assert r.extra["rated_pbw_bytes"] == str(17 * 10**15)
    assert [(t.sensor, t.celsius, t.max_celsius) for t in r.temperatures] == [("controller", 64.47, 64.97)]
    assert [(v.rail, v.volts, v.max_volts) for v in r.voltages] == [("internal", 1.02, 1.02), ("auxiliary", 2.49, 2.49)]
    assert r.extra["powerloss_protection"] == "protected"
    for field in ("life_left_ratio", "nand_written_bytes", "spare_left_ratio", "smart_healthy", "capacity_bytes"):
        assert field in r.sources, field
    assert "Rated PBW: 17.00 PB, 99.46% remaining" in r.sources["life_left_ratio"]


def test_rated_pbw_remaining_is_counted_against_physical_bytes_written():
    """The unit check behind nand_written_bytes: on both -a captures, 1 - physical written /
    rated PBW (PB = 10^15 bytes) is the printed % remaining, to the printed 0.01%."""
    for name in (REMIX, DUO):
        (r,) = read(name)
        rated = int(r.extra["rated_pbw_bytes"])
        assert 1 - r.nand_written_bytes / rated == pytest.approx(r.life_left_ratio, abs=0.00006), name


def test_duo_module_takes_the_adapter_product_name():
    (r,) = read(DUO)
    assert r.serial == "443248" and r.model == "Fusion-io ioDrive Duo 640GB"
    assert r.extra["module_model"] == "ioDIMM3 320G MLC" and r.extra["adapter_serial"] == "440178"
    assert r.capacity_bytes == 320_000_000_000 and r.life_left_ratio == pytest.approx(0.9941)
    assert r.nand_written_bytes == 29_684_767_106_744 and r.temperatures[0].celsius == 63.98


def test_plain_fio_status_without_a_has_no_volumes_or_life():
    (r,) = read(HP)
    assert r.serial == "459457" and r.model == "HP 320GB MLC PCIe ioDrive for ProLiant Servers"
    assert r.capacity_bytes == 320_000_000_000  # GBytes only, no Format line: 10^9 as the others show
    assert r.life_left_ratio is None and r.nand_written_bytes is None
    assert r.spare_left_ratio == 1.0 and r.smart_healthy is True and r.block_device == "fioa"


def test_vsl2_layout_media_status_board_temperature_and_attached_as():
    rs = read(PERCONA)
    assert [r.device for r in rs] == ["/dev/fct0", "/dev/fct1", "/dev/fct2", "/dev/fct3"]
    assert [r.block_device for r in rs] == ["fioa", "fiob", "fioc", "fiod"]
    assert [r.serial for r in rs] == ["06665", "06478", "06665", "06478"]  # edited upstream, see PROVENANCE
    r = rs[0]
    assert r.driver_version == "2.3.1 build 123" and r.firmware == "5.0.7 rev 101971"
    assert r.capacity_bytes == 78_748_288 * 4096 and r.physical_capacity_bytes == 396_000_000_000
    assert {t.sensor: t.celsius for t in r.temperatures} == {"controller": 47.7, "board": 42.0}
    assert r.nand_written_bytes == 275_933_273_649_736 and r.smart_healthy is True
    assert r.extra["adapter_serial"] == "40123" and rs[2].extra["adapter_serial"] == "40124"


def test_every_capture_parses_and_passes_the_physical_bounds():
    files = fixture_files("fusionio", ".txt")
    assert len(files) == 4
    for path in files:
        for r in parse_status(path.read_text()):
            assert evidence.contain(r) == r, path.name


def test_an_unknown_reserve_status_is_kept_and_the_health_flag_withheld():
    text = fixture_path(REMIX).read_text().replace("Reserve space status: Healthy;",
                                                   "Reserve space status: Worn;")
    (r,) = parse_status(text)
    assert r.smart_healthy is None and r.extra["reserve_status"] == "Worn"
    assert "Worn" in r.extra["smart_healthy_withheld"]
    assert r.spare_left_ratio == 1.0  # the percentage itself is still plain


def test_no_devices_is_an_empty_list():
    assert parse_status("Found 0 ioMemory devices in this system\n") == []


_GOOD = fixture_path(REMIX).read_text()


@pytest.mark.parametrize("text", [
    "",
    "garbage\n",
    "\x00\x01\x02",
    "Segmentation fault\n",
    _GOOD[: len(_GOOD) // 3],  # truncated before the module block: adapter only, no module
    _GOOD.replace("SN:1241D0259", "SN:"),  # no serial anywhere
    _GOOD.replace("64.47 degC", "6447 degC"),  # impossible temperature
    _GOOD.replace("Reserves: 100.00%", "Reserves: 1000.00%"),
    _GOOD.replace("99.46% remaining", "199.46% remaining"),
    _GOOD.replace("92,553,058,889,120", "92,55,3058,889,120"),  # badly grouped
    _GOOD.replace("sectors of 512 bytes", "sectors of 3 bytes"),
    _GOOD.replace("64.47", "nan"),
    "fct0\tAttached\n",  # a module with nothing in it
    _GOOD * 3,
    _GOOD.replace("\n", "\r\n"),
    _GOOD.replace("\t", ""),
])
def test_malformed_input_raises_parse_error_or_parses(text):
    try:
        readings = parse_status(text)
    except ParseError:
        return
    for r in readings:  # what does parse is within the physical bounds or withheld by them
        assert r.serial
        evidence.contain(r)


def test_a_volume_that_disagrees_with_the_rated_pbw_share_is_withheld():
    text = _GOOD.replace("92,553,058,889,120", "925,530,588,891,200")  # ten times: 5.4% used, not 0.54%
    (r,) = parse_status(text)
    assert r.nand_written_bytes is None and "nand_written_bytes" not in r.sources
    assert "99.46% remaining" in r.extra["nand_written_bytes_withheld"]
    assert r.life_left_ratio == pytest.approx(0.9946)  # the share the tool prints stands


def test_huge_volume_is_withheld_by_the_bounds():
    text = _GOOD.replace("92,553,058,889,120", "92,553,058,889,120,000,000").replace(
        "Rated PBW: 17.00 PB, 99.46% remaining\n", "")
    (r,) = parse_status(text)
    contained = evidence.contain(r)
    assert contained.nand_written_bytes is None
    assert "nand_written_bytes_withheld" in contained.extra


# -- end to end ---------------------------------------------------------------------------

def _host(tmp_path):
    host = build_default_host(tmp_path)
    host.set_response("fio-status", "all", fixture_path(REMIX))
    host.block_device("fioa", 2353515625)
    return host


def test_agent_serves_the_card_through_the_configured_fake_fio_status(tmp_path):
    host = _host(tmp_path)
    agent = AgentProcess(host, FAST + ["--fio-status", str(host.bin / "fio-status"),
                                       "--interval.fusionio", "1"])
    try:
        agent.wait_ready()
        # each source runs on its own schedule: wait until the card and a smartctl drive are both in
        s = wait_for(lambda: (lambda s: s if value(s, "ssd_drive_info", serial="1241D0259")
                              and value(s, "ssd_life_left_ratio", serial="006819246149b014") is not None
                              else None)(scrape(agent)))
        assert value(s, "ssd_drive_info", serial="1241D0259", kind="fusionio", device="fioa") == 1
        assert value(s, "ssd_life_left_ratio", serial="1241D0259") == pytest.approx(0.9946)
        assert value(s, "ssd_collector_success", collector="fusionio") == 1
        assert "fio-status -a" in host.calls()
        # the other drives are unchanged beside it
        assert value(s, "ssd_life_left_ratio", serial="006819246149b014") == pytest.approx(0.99)
        check_metrics(agent.get("/metrics"))
        # garbage from the tool: the failure is visible, the agent keeps serving, nothing lost
        host.set_response("fio-status", "all", "garbage\n")
        wait_for(lambda: value(scrape(agent), "ssd_collector_success", collector="fusionio") == 0)
        s = scrape(agent)
        assert value(s, "ssd_life_left_ratio", serial="1241D0259") == pytest.approx(0.9946)
        assert value(s, "ssd_collector_success", collector="smartctl") == 1
        assert "fio-status -a: not fio-status output" in agent.log()
    finally:
        agent.stop()


def test_agent_reads_fio_status_through_the_probe_helper(tmp_path):
    from tests.support.probe_helper import HelperProcess

    host = _host(tmp_path)
    sockdir = tempfile.mkdtemp(prefix="ssdf-", dir="/tmp")
    sock = os.path.join(sockdir, "agent.sock")
    helper = HelperProcess(host, sock, ["--tool-timeout", "5", "--fio-status", str(host.bin / "fio-status")])
    cfg = tmp_path / "agent.yml"
    cfg.write_text(yaml.safe_dump({"probe_helper_socket": sock}))
    agent = AgentProcess(host, ["--config", str(cfg), "--fio-status", "/nonexistent/fio-status",
                                "--interval.fusionio", "1"] + FAST)
    try:
        agent.wait_ready()
        s = wait_for(lambda: (lambda s: s if value(s, "ssd_life_left_ratio", serial="1241D0259") else None)(scrape(agent)))
        assert value(s, "ssd_life_left_ratio", serial="1241D0259") == pytest.approx(0.9946)
        assert "refused" not in helper.log(), helper.log()
    finally:
        agent.stop()
        helper.stop()
        shutil.rmtree(sockdir, ignore_errors=True)
