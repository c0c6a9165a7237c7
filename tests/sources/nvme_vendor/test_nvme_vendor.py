"""NVMe vendor logs through nvme-cli: NAND bytes written and write amplification, units
established or withheld; the source sends each drive only its own vendor's command.

The Intel capture pair (``nvme smart-log`` and ``nvme intel smart-log-add`` of one drive) is
real, from a public README (tests/fixtures/nvme-vendor/PROVENANCE.tsv); the smartctl JSON of
that drive is constructed from the real smart-log figures."""

from __future__ import annotations

import os
import re
import shutil
import tempfile

import pytest
import yaml

from collectors.model import ParseError
from collectors.nvme_vendor import vendor as vendors
from collectors.nvme_vendor.vendor import INTEL_COUNT_BYTES, DriveFacts, intel_figures, vendor_for
from tests.conftest import fixture_path, read_fixture
from tests.fakehost import AgentProcess, build_default_host
from tests.support.e2e import FAST, NVME0_SERIAL, NVME1_SERIAL, scrape, value, wait_for

ADD = "nvme-vendor/intel-collector-readme__intel_smart-log-add_nvme0n1.txt"
SMART_LOG = "nvme-vendor/intel-collector-readme__smart-log_nvme0n1.txt"
SMARTCTL = "nvme-vendor/constructed__smartctl-json_SSDPELKX020T8.json"
OLD_ZERO = "nvme-cli/telegraf__nvmeIntelInfoDataDeprecatedMetricsFormat.txt"
NEW_LAYOUT = "nvme-cli/telegraf__nvmeIntelInfoDataMetricsFormat.txt"
SERIAL = "PHLJ9371009E2P0J"

# Read off the captures by hand.
DATA_UNITS_WRITTEN = 2_868_426  # nvme smart-log: units of 512,000 bytes
NAND_COUNT, HOST_COUNT = 155_767, 43_768  # smart-log-add "sectors:"
HOST_BYTES = DATA_UNITS_WRITTEN * 512_000


def add_text() -> str:
    return read_fixture(ADD).decode()


def facts(host=HOST_BYTES, **kw) -> DriveFacts:
    return DriveFacts(host_written_bytes=host, **kw)


def test_the_smart_log_of_the_same_drive_says_what_we_compare_against():
    text = read_fixture(SMART_LOG).decode()
    assert re.search(r"^data_units_written\s*:\s*2,868,426$", text, re.MULTILINE)


def test_intel_nand_bytes_and_write_amplification_from_the_real_capture():
    f = intel_figures(add_text(), facts())
    assert f.nand_written_bytes == NAND_COUNT * INTEL_COUNT_BYTES
    assert f.write_amplification == round(NAND_COUNT / HOST_COUNT, 6) == pytest.approx(3.558924)
    assert "32 MiB" in f.sources["nand_written_bytes"]
    assert "host_bytes_written" in f.sources["write_amplification"]
    assert not f.withheld
    # The unit check itself: the two host counts of the one drive agree to 0.002%.
    assert abs(HOST_COUNT * INTEL_COUNT_BYTES / HOST_BYTES - 1) < 2e-5


@pytest.mark.parametrize("name, text, drive, why", [
    ("zero host count (telegraf capture)", lambda: read_fixture(OLD_ZERO), facts(), "is 0"),
    ("no byte rows (newer table layout)", lambda: read_fixture(NEW_LAYOUT), facts(), "has no nand_bytes_written"),
    ("no SMART/Health host bytes", add_text, facts(host=None), "unit not established"),
    ("host bytes disagree 10x", add_text, facts(host=HOST_BYTES * 10), "unit not established"),
    ("NAND below host", lambda: add_text().replace("155767", "40000"), facts(), "contradiction"),
    ("beyond the drive's bounds", add_text, facts(capacity_bytes=10**6), "times the capacity"),
])
def test_withheld_with_a_reason(name, text, drive, why):
    f = intel_figures(text(), drive)
    assert f.nand_written_bytes is None and f.write_amplification is None, name
    assert why in f.withheld["nand_written_bytes"] and why in f.withheld["write_amplification"], f.withheld


@pytest.mark.parametrize("text", [
    "", "garbage\n", b"\xff\xfe\x00",
    "Additional Smart Log for NVME device:nvme0 namespace-id:ffffffff\n",  # truncated after the header
    add_text().replace("sectors: 155767", "sectors: -5"),
    add_text().replace("sectors: 155767", "sectors: lots"),
    add_text().splitlines()[0] + "\nnand_bytes_written : 100% sectors",
])
def test_malformed_vendor_logs_raise_parse_errors_only(text):
    with pytest.raises(ParseError):
        intel_figures(text, facts())


def test_impossible_count_is_withheld_not_exported():
    f = intel_figures(add_text().replace("155767", str(2**60)), facts())
    assert f.nand_written_bytes is None and "nand_written_bytes" in f.withheld


def test_vendor_commands_only_for_their_own_vendor():
    assert vendor_for("INTEL SSDPELKX020T8").args == ("intel", "smart-log-add")
    assert vendor_for("INTEL SSDPEKNW010T8").name == "intel"
    for model in ("Samsung SSD 970 EVO 500GB", "WDC CL SN720 SDAQNTW-512G-1020", "", None, "INTELLIGENT X"):
        assert vendor_for(model) is None, model
    assert [v.name for v in vendors.VENDORS] == ["intel"]


# ---------------------------------------------------------------------------------------
# the real agent, with a fake nvme replaying the capture


def _intel_host(tmp_path):
    host = build_default_host(tmp_path)
    host.set_response("smartctl", "nvme0", fixture_path(SMARTCTL))
    host.set_response("nvme", "nvme0", fixture_path(ADD))
    host.set_response("nvme", "nvme1", "NVMe status: INVALID_LOG_PAGE\n", exit_code=1)  # never asked
    return host


ENABLE = ["--collector.nvme_vendor", "--interval.nvme_vendor", "1"]


def test_intel_nvme_gets_nand_bytes_and_write_amplification_on_metrics(tmp_path):
    host = _intel_host(tmp_path)
    agent = AgentProcess(host, FAST + ENABLE)
    try:
        agent.wait_ready()

        def nand():
            s = scrape(agent)
            return s if value(s, "ssd_nand_written_bytes_total", serial=SERIAL) is not None else None

        s = wait_for(nand, timeout=30)
        assert value(s, "ssd_nand_written_bytes_total", serial=SERIAL) == NAND_COUNT * INTEL_COUNT_BYTES
        assert value(s, "ssd_write_amplification", serial=SERIAL) == pytest.approx(NAND_COUNT / HOST_COUNT, abs=1e-6)
        assert value(s, "ssd_host_written_bytes_total", serial=SERIAL) == HOST_BYTES  # smartctl's, kept
        info = [dict(ls) for (n, ls) in s if n == "ssd_drive_info" and dict(ls).get("serial") == SERIAL]
        assert info and info[0]["nand_written_source"].startswith("nvme_vendor: nvme intel smart-log-add")
        assert value(s, "ssd_collector_success", collector="nvme_vendor") == 1
        calls = [c for c in host.calls() if c.startswith("nvme intel")]
        assert "nvme intel smart-log-add /dev/nvme0" in calls
        # nvme1 is a Samsung, sda is SATA: no vendor command reaches them.
        assert not [c for c in host.calls() if c.startswith("nvme") and "get-feature" not in c
                    and not c.endswith("/dev/nvme0")], host.calls()
        assert value(s, "ssd_nand_written_bytes_total", serial=NVME1_SERIAL) is None
    finally:
        agent.stop()


def test_a_log_whose_unit_does_not_check_out_adds_nothing(tmp_path):
    """The default host's nvme0 is another Intel drive (3.98 TB written): the capture's host
    count (1.47 TB) does not match it, so no NAND figure and no write amplification appear."""
    host = build_default_host(tmp_path)
    host.set_response("nvme", "nvme0", fixture_path(ADD))
    agent = AgentProcess(host, FAST + ENABLE)
    try:
        agent.wait_ready()
        wait_for(lambda: any(c.startswith("nvme intel smart-log-add /dev/nvme0") for c in host.calls()), timeout=30)
        s = wait_for(lambda: (lambda s: s if value(s, "ssd_collector_success", collector="nvme_vendor") == 1 else None)(scrape(agent)))
        assert value(s, "ssd_nand_written_bytes_total", serial=NVME0_SERIAL) is None
        assert value(s, "ssd_write_amplification", serial=NVME0_SERIAL) is None
        assert "unit not established" in agent.log()
        # The reason reaches the merged record: the figure is marked withheld, not just absent.
        assert value(s, "ssd_value_withheld", serial=NVME0_SERIAL, field="nand_written_bytes") == 1
        import json
        api = {d["serial"]: d for d in json.loads(agent.get("/api/v1/drives"))["drives"]}
        assert "unit not established" in json.dumps(api[NVME0_SERIAL])
    finally:
        agent.stop()


def test_the_helper_runs_exactly_the_vendor_command_the_source_builds(tmp_path):
    from agent.privhelper import HelperRunner
    from tests.support.probe_helper import HelperProcess

    host = _intel_host(tmp_path)
    sockdir = tempfile.mkdtemp(prefix="ssdf-", dir="/tmp")
    sock = os.path.join(sockdir, "v.sock")
    helper = HelperProcess(host, sock, ["--tool-timeout", "5"])
    try:
        run = HelperRunner(sock)
        ok = run(["nvme", "intel", "smart-log-add", "/dev/nvme0"], timeout=10)
        assert ok.error is None and ok.exit_code == 0 and ok.stdout == read_fixture(ADD)
        still = run(["nvme", "get-feature", "/dev/nvme0", "-f", "6"], timeout=10)
        assert still.error is None  # the write-cache source's command is still allowed
        for argv in (["nvme", "intel", "smart-log-add", "/dev/nvme0", "-b"],
                     ["nvme", "intel", "internal-log", "/dev/nvme0"],
                     ["nvme", "intel", "smart-log-add", "/dev/sda"],
                     ["nvme", "intel", "smart-log-add", "/dev/nvme0n1"],
                     ["nvme", "wdc", "vs-smart-add-log", "/dev/nvme0"]):
            before = len(host.calls())
            refused = run(argv, timeout=10)
            assert refused.error is not None and "refused" in refused.error, (argv, refused)
            assert refused.exit_code is None and refused.stdout == b"", argv
            assert len(host.calls()) == before, f"a refused request ran a tool: {argv}"
        # Through the helper, the agent's source gets the figures too.
        cfg = tmp_path / "agent.yml"
        cfg.write_text(yaml.safe_dump({"probe_helper_socket": sock}))
        agent = AgentProcess(host, ["--config", str(cfg), "--nvme", "/nonexistent/nvme"] + FAST + ENABLE)
        try:
            agent.wait_ready()
            wait_for(lambda: value(scrape(agent), "ssd_nand_written_bytes_total", serial=SERIAL)
                     == NAND_COUNT * INTEL_COUNT_BYTES, timeout=30)
        finally:
            agent.stop()
        assert any(c == "nvme intel smart-log-add /dev/nvme0" for c in host.calls())
    finally:
        helper.stop()
        shutil.rmtree(sockdir, ignore_errors=True)


def test_merge_fills_nand_into_the_smartctl_reading_and_keeps_reasons():
    from collectors.model import DriveReading, supplement
    from collectors.smartctl import parse_smartctl_json

    health = parse_smartctl_json(read_fixture(SMARTCTL))
    assert health.serial == SERIAL and health.nand_written_bytes is None
    f = intel_figures(add_text(), facts(host=health.host_written_bytes))
    vendor = DriveReading(kind="nvme", device=health.device, serial=SERIAL,
                          nand_written_bytes=f.nand_written_bytes, write_amplification=f.write_amplification,
                          sources=dict(f.sources))
    merged = supplement(health, vendor, "nvme_vendor")
    assert merged.nand_written_bytes == NAND_COUNT * INTEL_COUNT_BYTES
    assert merged.sources["nand_written_bytes"].startswith("nvme_vendor: nvme intel smart-log-add")
    assert merged.host_written_bytes == health.host_written_bytes == HOST_BYTES
    assert merged.sources["host_written_bytes"] == health.sources["host_written_bytes"]
    # A figure the vendor log withheld: the merged record says why.
    bad = intel_figures(add_text(), facts(host=HOST_BYTES * 10))
    withheld = DriveReading(kind="nvme", device=health.device, serial=SERIAL,
                            extra={f"{k}_withheld": v for k, v in bad.withheld.items()})
    merged = supplement(health, withheld, "nvme_vendor")
    assert merged.nand_written_bytes is None
    assert merged.extra["nand_written_bytes_withheld"].startswith("nvme_vendor: nvme intel smart-log-add: unit not established")
    # A field the first source withheld on purpose keeps the first source's reason.
    first = health.replace(extra=dict(health.extra, nand_written_bytes_withheld="smartctl: reason"))
    assert supplement(first, vendor, "nvme_vendor").nand_written_bytes is None
    assert supplement(first, withheld, "nvme_vendor").extra["nand_written_bytes_withheld"] == "smartctl: reason"


@pytest.mark.parametrize("case", ["no nvme-cli", "drive rejects the log page"])
def test_a_host_that_cannot_give_the_log_is_not_a_failure(tmp_path, case):
    """nvme-cli not installed, or a controller that answers the vendor log with NVMe status
    Invalid Log Page (nvme-cli prints "NVMe status: INVALID_LOG_PAGE: ..."): nothing to read,
    nothing failed, asked once."""
    from agent.poller import Poller

    host = build_default_host(tmp_path)
    if case == "no nvme-cli":
        assert not (host.bin / "nvme").exists()  # the default fake host has no nvme-cli
    else:
        host.set_response("nvme", "nvme0",
                          "NVMe status: INVALID_LOG_PAGE: The log page indicated is invalid(0x2109)\n", exit_code=1)
    poller = Poller(host.config())
    try:
        poller.poll_once()
        snap = poller.poll_once()
    finally:
        poller.stop()
    status = next(c for c in snap.collectors if c.name == "nvme_vendor")
    assert status.success and status.errors_total == 0, status
    asked = [c for c in host.calls() if c.startswith("nvme intel")]
    assert len(asked) <= 1, asked  # not asked again every cycle
