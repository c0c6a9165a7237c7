"""End to end: the real ``ssdfleet agent`` process against fake tools, scraped over HTTP."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import urllib.request
from typing import Optional, Tuple

import pytest
from prometheus_client.parser import text_string_to_metric_families

from collectors import blockdev
from tests.fakehost import ROOT, AgentProcess, build_default_host, free_port, stop_process
from tests.promstack import skip_or_fail
from tests.support.e2e import (  # noqa: F401
    FAST,
    NVME0_SERIAL,
    NVME1_SERIAL,
    SDA_SERIAL,
    SHANNON_SERIAL,
    all_drives_seen,
    check_metrics,
    scrape,
    value,
    wait_for,
)


@pytest.fixture
def host(tmp_path):
    return build_default_host(tmp_path)


@pytest.fixture
def agent(host):
    proc = AgentProcess(host, FAST)
    try:
        proc.wait_ready()
        yield proc
    finally:
        proc.stop()


def test_metrics_for_every_fake_drive(agent, host):
    s = wait_for(lambda: all_drives_seen(agent))
    # Shannon card: values printed by shannon-status -p in the seed document.
    assert value(s, "ssd_life_left_ratio", serial=SHANNON_SERIAL) == pytest.approx(0.99)
    assert value(s, "ssd_bad_block_ratio", serial=SHANNON_SERIAL) == pytest.approx(0.010760)
    assert value(s, "ssd_write_amplification", serial=SHANNON_SERIAL) == pytest.approx(1.4493)
    assert value(s, "ssd_host_written_bytes_total", serial=SHANNON_SERIAL) == pytest.approx(13801.32e9)
    assert value(s, "ssd_temperature_celsius", serial=SHANNON_SERIAL, sensor="controller") == 71
    # The lifetime maxima the card prints are in the API and on the page, not in /metrics.
    assert value(s, "ssd_temperature_max_celsius", serial=SHANNON_SERIAL, sensor="flash") is None
    api = {d["serial"]: d for d in json.loads(agent.get("/api/v1/drives"))["drives"]}
    flash = [t for t in api[SHANNON_SERIAL]["temperatures"] if t["sensor"] == "flash"]
    assert flash[0]["celsius"] == value(s, "ssd_temperature_celsius", serial=SHANNON_SERIAL, sensor="flash")
    assert flash[0]["max_celsius"] == 63
    assert value(s, "ssd_readonly", serial=SHANNON_SERIAL) == 0
    assert value(s, "ssd_drive_info", serial=SHANNON_SERIAL, device="dfa", kind="shannon") == 1
    # NVMe (scrutiny__smart-nvme.json): percentage_used 0? read from the file below.
    nvme = json.loads((host.root / "responses/smartctl/nvme0.out").read_text())
    log = nvme["nvme_smart_health_information_log"]
    assert value(s, "ssd_life_left_ratio", serial=NVME0_SERIAL) == pytest.approx(1 - log["percentage_used"] / 100)
    assert value(s, "ssd_host_written_bytes_total", serial=NVME0_SERIAL) == log["data_units_written"] * 512000
    assert value(s, "ssd_spare_left_ratio", serial=NVME0_SERIAL) == pytest.approx(log["available_spare"] / 100)
    assert value(s, "ssd_drive_info", serial=NVME0_SERIAL, device="nvme0", kind="nvme") == 1
    # The failing NVMe: 7 media errors, 3% used, 65602088 data units written.
    assert value(s, "ssd_media_errors_total", serial=NVME1_SERIAL) == 7
    assert value(s, "ssd_life_left_ratio", serial=NVME1_SERIAL) == pytest.approx(0.97)
    assert value(s, "ssd_host_written_bytes_total", serial=NVME1_SERIAL) == 65602088 * 512000
    # SATA Samsung 860 EVO: SMART passed, temperature present.
    assert value(s, "ssd_smart_healthy", serial=SDA_SERIAL) == 1
    assert value(s, "ssd_drive_info", serial=SDA_SERIAL, device="sda", kind="ata") == 1
    # Write cache from the fake hdparm / sysfs, and diskstats folded onto the drive.
    wait_for(lambda: value(scrape(agent), "ssd_write_cache_enabled", serial=SDA_SERIAL) == 1)
    s = scrape(agent)
    assert value(s, "ssd_io_written_bytes_total", serial=SHANNON_SERIAL) == 14400000 * 512
    assert value(s, "ssd_io_reads_completed_total", serial=NVME0_SERIAL) == 5000
    # Collectors all well.
    for c in ("smartctl", "shannon", "write_cache", "diskstats", "discovery"):
        assert value(s, "ssd_collector_success", collector=c) == 1, c
    # smartctl was called with explicit -d TYPE and -n standby, never woke a drive.
    calls = [c for c in host.calls() if c.startswith("smartctl") and "/dev/sda" in c]
    assert calls and all("-d sat" in c and "--nocheck=standby" in c for c in calls)


def test_promtool_check_metrics_is_clean(agent):
    wait_for(lambda: all_drives_seen(agent))
    check_metrics(agent.get("/metrics"))


def ssdfleet_command() -> str:
    """The ``ssdfleet`` console script installed next to this Python (pip install -e .)."""
    path = os.path.join(os.path.dirname(sys.executable), "ssdfleet")
    if not os.access(path, os.X_OK):
        skip_or_fail(f"the ssdfleet command is not installed next to {sys.executable}")
    return path


def run_ssdfleet_agent(tmp_path, args, env) -> Tuple[subprocess.Popen, str]:
    port = free_port()
    log = open(tmp_path / "ssdfleet.log", "wb")
    proc = subprocess.Popen([ssdfleet_command(), "agent", "--listen-address", f"127.0.0.1:{port}"] + args,
                            stdout=log, stderr=subprocess.STDOUT, env=env, cwd=str(tmp_path),
                            start_new_session=True)
    log.close()
    return proc, f"http://127.0.0.1:{port}"


def get_metrics(url: str) -> Optional[bytes]:
    try:
        with urllib.request.urlopen(url + "/metrics", timeout=5) as r:
            return r.read()
    except OSError:
        return None


def parse(text: bytes) -> dict:
    out = {}
    for family in text_string_to_metric_families(text.decode()):
        for sample in family.samples:
            out[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return out


def test_ssdfleet_command_finds_the_fake_tools_on_its_path(host, tmp_path):
    """The installed ``ssdfleet`` command with no tool flags at all: it runs smartctl,
    shannon-status and hdparm by name, and a temporary PATH holding the fake executables is
    what it finds, as on a host where they sit in /usr/sbin."""
    env = dict(os.environ, PATH=f"{host.bin}{os.pathsep}{os.environ.get('PATH', '')}")
    proc, url = run_ssdfleet_agent(tmp_path, [
        "--path.sysfs", str(host.sys), "--path.procfs", str(host.proc), "--state-dir", str(host.state),
    ] + FAST, env)
    try:
        def seen():
            assert proc.poll() is None, (tmp_path / "ssdfleet.log").read_text()
            text = get_metrics(url)
            if text is None:
                return None
            s = parse(text)
            return (s, text) if value(s, "ssd_life_left_ratio", serial=SHANNON_SERIAL) is not None \
                and value(s, "ssd_media_errors_total", serial=NVME1_SERIAL) is not None else None

        s, text = wait_for(seen, timeout=30)
        assert value(s, "ssd_life_left_ratio", serial=SHANNON_SERIAL) == pytest.approx(0.99)
        assert value(s, "ssd_host_written_bytes_total", serial=NVME1_SERIAL) == 65602088 * 512000
        assert value(s, "ssd_smart_healthy", serial=SDA_SERIAL) == 1
        check_metrics(text)
    finally:
        stop_process(proc)
    calls = host.calls()
    assert any(c.startswith("smartctl --scan-open") for c in calls)
    assert any(c.startswith("shannon-status -p /dev/scta") for c in calls)


def test_on_this_machine_without_fakes(tmp_path):
    """``ssdfleet agent`` as a user starts it here: the real tools (if installed), the real
    /sys and /proc. Whatever the machine has (a virtual disk without SMART, as a rule), the
    agent serves /metrics, promtool finds nothing wrong, no collector fails, and every whole
    disk the kernel lists is a drive."""
    proc, url = run_ssdfleet_agent(tmp_path, ["--state-dir", str(tmp_path / "state")], dict(os.environ))
    try:
        def ready():
            assert proc.poll() is None, (tmp_path / "ssdfleet.log").read_text()
            text = get_metrics(url)
            if text is None:
                return None
            s = parse(text)
            ran = {dict(ls)["collector"] for (n, ls) in s if n == "ssd_collector_success"}
            return (s, text) if ran >= {"discovery", "smartctl", "shannon", "write_cache", "diskstats"} else None

        s, text = wait_for(ready, timeout=60)
        check_metrics(text)
        for (name, labels), v in s.items():
            if name == "ssd_collector_success":
                assert v == 1, (dict(labels), (tmp_path / "ssdfleet.log").read_text())
        disks = [n for n in os.listdir("/sys/block") if blockdev.is_candidate(n)
                 and _size(f"/sys/block/{n}/size") > 0]
        devices = {dict(ls)["device"] for (n, ls) in s if n == "ssd_drive_info"}
        for disk in disks:
            # an NVMe namespace (nvme0n1) is folded into its controller (nvme0)
            assert re.sub(r"^(nvme\d+)n\d+$", r"\1", disk) in devices, (disk, devices)
        assert value(s, "ssd_drives") == len(devices)
    finally:
        stop_process(proc)
    log = (tmp_path / "ssdfleet.log").read_text()
    assert "Traceback" not in log, log


def _size(path: str) -> int:
    try:
        with open(path) as fh:
            return int(fh.read().strip() or 0)
    except (OSError, ValueError):
        return 0


def test_api_drives_json(agent):
    wait_for(lambda: all_drives_seen(agent))
    data = json.loads(agent.get("/api/v1/drives"))
    by_serial = {d["serial"]: d for d in data["drives"]}
    card = by_serial[SHANNON_SERIAL]
    assert card["device"] == "dfa" and card["kind"] == "shannon"
    assert card["life_left_ratio"] == pytest.approx(0.99)
    assert by_serial[NVME1_SERIAL]["media_errors"] == 7
    assert any(f["reason"].startswith("7 media errors") for f in by_serial[NVME1_SERIAL]["flags"])

    # Since when: the agent's flag tracker has seen the flag, a moment ago (not in the future).
    def media_flag():
        drives = {d["serial"]: d for d in json.loads(agent.get("/api/v1/drives"))["drives"]}
        flag = next(f for f in drives[NVME1_SERIAL]["flags"] if f["key"] == "media_errors")
        return flag if flag["since"] is not None else None

    flag = wait_for(media_flag)
    assert data["generated"] - 60 < flag["since"] <= time.time()
    assert {c["name"] for c in data["collectors"]} >= {"smartctl", "shannon", "diskstats"}


def test_bad_tools_do_not_stop_the_agent(host):
    """One tool prints garbage, one exits 2, one is missing: the rest keep serving."""
    agent = AgentProcess(host, FAST)
    try:
        agent.wait_ready()
        s = wait_for(lambda: all_drives_seen(agent))
        assert value(s, "ssd_collector_success", collector="smartctl") == 1
        # nvme0 now prints garbage, nvme1 exits 2 with nothing (smartctl: device open failed).
        host.set_response("smartctl", "nvme0", b"\x00\xffnot json at all{{{")
        host.set_response("smartctl", "nvme1", "", exit_code=2)
        # shannon-status disappears although a dfX device exists.
        host.remove_tool("shannon-status")

        def failures_visible():
            s = scrape(agent)
            ok = (value(s, "ssd_collector_success", collector="smartctl") == 0
                  and value(s, "ssd_collector_success", collector="shannon") == 0)
            return s if ok else None

        s = wait_for(failures_visible)
        assert value(s, "ssd_collector_errors_total", collector="smartctl") >= 1
        # Last good values stay, marked by their age; the healthy drive keeps updating.
        assert value(s, "ssd_life_left_ratio", serial=SHANNON_SERIAL) == pytest.approx(0.99)
        assert value(s, "ssd_media_errors_total", serial=NVME1_SERIAL) == 7
        assert value(s, "ssd_smart_healthy", serial=SDA_SERIAL) == 1
        time.sleep(1.5)
        s2 = scrape(agent)
        assert value(s2, "ssd_data_age_seconds", serial=SHANNON_SERIAL) > value(s, "ssd_data_age_seconds", serial=SHANNON_SERIAL)
        assert value(s2, "ssd_data_age_seconds", serial=SDA_SERIAL) < 3
        assert agent.proc.poll() is None
        assert "nvme0" in agent.log() and "shannon" in agent.log()
    finally:
        agent.stop()


def test_status_command_prints_the_table(host):
    env_args = host.config_args()
    r = subprocess.run(
        [sys.executable, "-m", "agent", "status", "--local", "--color", "never"] + env_args,
        capture_output=True, text=True, timeout=60, cwd=str(ROOT),
    )
    out = r.stdout
    lines = out.splitlines()
    assert lines[0].split()[:4] == ["DEVICE", "KIND", "MODEL", "SERIAL"]
    rows = {line.split()[0]: line for line in lines[1:] if line and not line.startswith("source")}
    assert SHANNON_SERIAL in rows["dfa"] and "99%" in rows["dfa"]
    assert NVME1_SERIAL in rows["nvme1"] and "97%" in rows["nvme1"]
    assert "Samsung SSD 860 EVO" in rows["sda"]
    # nvme1 has media errors: a warning, so the Nagios exit code is 1.
    assert "WARNING" in rows["nvme1"]
    assert r.returncode == 1, r.stderr


def test_collect_into_a_closed_pipe_is_quiet(host):
    """``ssdfleet collect --json | head -1``: the reader goes away; no traceback."""
    proc = subprocess.Popen([sys.executable, "-m", "agent", "collect", "--json"] + host.config_args(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=str(ROOT))
    proc.stdout.close()  # before the command writes a byte
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 141, err.decode()
    assert b"Traceback" not in err and b"BrokenPipe" not in err, err.decode()
