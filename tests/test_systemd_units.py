"""The systemd units: ``systemd-analyze verify`` is clean, the exposure scores stay low, and the
two units agree with each other and with deploy/config.example.yml.

systemd need not run as PID 1 for these: ``verify`` and ``security --offline=yes`` read unit
files. ``verify`` checks that ExecStart= names an executable, and /opt/ssdfleet does not exist on
a build machine, so the test verifies a copy whose ExecStart points at a stand-in script in a
temporary directory (the arguments stay as shipped). Debian: ``apt-get install systemd``.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Dict, List

import pytest
import yaml

from agent.config import Config
from tests.fakehost import ROOT
from tests.promstack import skip_or_fail

UNIT_DIR = ROOT / "deploy" / "systemd"
AGENT = "ssdfleet-agent.service"
HELPER = "ssdfleet-probe-helper.service"
SHIPPED_BINARY = "/opt/ssdfleet/bin/ssdfleet"

# Exposure as `systemd-analyze security` scores it (0 best, 10 worst); systemd 252 gives the
# agent 1.1 and the helper 1.5. The helper keeps root with CAP_SYS_RAWIO/CAP_SYS_ADMIN and
# device access, which is what costs it the difference.
MAX_EXPOSURE = {AGENT: 2.0, HELPER: 3.0}


def systemd_analyze() -> str:
    tool = shutil.which("systemd-analyze")
    if tool is None:
        skip_or_fail("systemd-analyze not installed (Debian package systemd)")
    return tool


def unit_settings(path: Path) -> Dict[str, List[str]]:
    """Key -> every value it is given, in order (systemd allows repeats)."""
    settings: Dict[str, List[str]] = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith(("#", ";", "[")):
            continue
        key, _, value = line.partition("=")
        settings.setdefault(key.strip(), []).append(value.strip())
    return settings


@pytest.fixture
def staged_units(tmp_path: Path) -> Path:
    stand_in = tmp_path / "bin" / "ssdfleet"
    stand_in.parent.mkdir()
    stand_in.write_text("#!/bin/sh\nexit 0\n")
    stand_in.chmod(0o755)
    units = tmp_path / "units"
    units.mkdir()
    for name in (AGENT, HELPER):
        text = (UNIT_DIR / name).read_text()
        assert SHIPPED_BINARY in text
        (units / name).write_text(text.replace(SHIPPED_BINARY, str(stand_in)))
    return units


def test_verify_is_clean(staged_units: Path):
    tool = systemd_analyze()
    r = subprocess.run([tool, "verify", "--man=no", str(staged_units / AGENT), str(staged_units / HELPER)],
                       capture_output=True, text=True, timeout=60)
    # Any complaint at all (unknown key, bad value, missing executable) is printed here.
    assert r.returncode == 0 and not r.stdout.strip() and not r.stderr.strip(), r.stdout + r.stderr


def test_verify_catches_a_broken_unit(staged_units: Path):
    """The check above can fail: a bad value and a misspelt key are both reported."""
    tool = systemd_analyze()
    broken = staged_units / AGENT
    text = broken.read_text().replace("ProtectSystem=strict", "ProtectSystem=strictest")
    broken.write_text(text.replace("ProtectHome=yes", "ProtectHomes=yes"))
    r = subprocess.run([tool, "verify", "--man=no", str(broken)], capture_output=True, text=True, timeout=60)
    said = r.stdout + r.stderr
    assert "strictest" in said and "ProtectHomes" in said, said


@pytest.mark.parametrize("unit", [AGENT, HELPER])
def test_exposure_score(staged_units: Path, unit: str):
    tool = systemd_analyze()
    r = subprocess.run([tool, "security", "--offline=yes", "--no-pager", str(staged_units / unit)],
                       capture_output=True, text=True, timeout=60)
    match = re.search(r"Overall exposure level for \S+: (\d+(?:\.\d+)?)", r.stdout)
    assert match, r.stdout + r.stderr
    score = float(match.group(1))
    print(f"{unit}: exposure {score}")
    assert score < MAX_EXPOSURE[unit], r.stdout


def _exposure(tool: str, unit: Path) -> float:
    r = subprocess.run([tool, "security", "--offline=yes", "--no-pager", str(unit)],
                       capture_output=True, text=True, timeout=60)
    match = re.search(r"Overall exposure level for \S+: (\d+(?:\.\d+)?)", r.stdout)
    assert match, r.stdout + r.stderr
    return float(match.group(1))


def test_syncwrite_dropin_keeps_the_exposure(staged_units: Path):
    """The drop-in `ssdfleet syncwrite-dropin` writes passes `verify` and leaves the agent's
    exposure where it was; a control drop-in that weakens the unit shows the tool reads
    drop-ins beside the unit file, so the comparison is not vacuous."""
    from collectors.syncwrite.dropin import dropin_text

    tool = systemd_analyze()
    unit = staged_units / AGENT
    before = _exposure(tool, unit)
    dropins = staged_units / (AGENT + ".d")
    dropins.mkdir()
    (dropins / "syncwrite.conf").write_text(dropin_text(
        ["/srv/postgresql/ssdfleet-probe", "/var/lib/mysql-probe"], "ssdfleet", "/etc/ssdfleet/config.yml"))
    r = subprocess.run([tool, "verify", "--man=no", str(unit)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and not r.stdout.strip() and not r.stderr.strip(), r.stdout + r.stderr
    after = _exposure(tool, unit)
    print(f"{AGENT}: exposure {before} without the sync-write drop-in, {after} with it")
    assert after <= before
    (dropins / "zz-control.conf").write_text("[Service]\nProtectSystem=no\n")
    assert _exposure(tool, unit) > before


def test_agent_has_no_privileges():
    s = unit_settings(UNIT_DIR / AGENT)
    assert s["User"] == ["ssdfleet"] and s["Group"] == ["ssdfleet"]
    assert s["CapabilityBoundingSet"] == [""] and s["AmbientCapabilities"] == [""]
    assert s["NoNewPrivileges"] == ["yes"] and s["PrivateDevices"] == ["yes"]
    assert s["ProtectSystem"] == ["strict"] and s["StateDirectory"] == ["ssdfleet"]
    assert s["RestrictAddressFamilies"] == ["AF_UNIX AF_INET AF_INET6"]
    assert "@system-service" in s["SystemCallFilter"]
    assert "--state-dir /var/lib/ssdfleet" in s["ExecStart"][0]


def test_helper_is_confined_to_devices_and_a_unix_socket():
    s = unit_settings(UNIT_DIR / HELPER)
    assert "User" not in s  # root, limited by the bounding set below
    assert s["CapabilityBoundingSet"] == ["CAP_SYS_RAWIO CAP_SYS_ADMIN"]
    assert "AmbientCapabilities" not in s
    assert s["PrivateNetwork"] == ["yes"] and s["RestrictAddressFamilies"] == ["AF_UNIX"]
    assert s["DevicePolicy"] == ["closed"]
    assert all(v.endswith(" r") for v in s["DeviceAllow"]), "device access is read-only"
    assert s["NoNewPrivileges"] == ["yes"] and s["ProtectSystem"] == ["strict"]


def test_units_and_example_config_agree():
    """The helper listens where the agent's config says, for the agent's group."""
    agent = unit_settings(UNIT_DIR / AGENT)
    helper = unit_settings(UNIT_DIR / HELPER)
    argv = helper["ExecStart"][0].split()
    socket_path = argv[argv.index("--socket") + 1]
    assert argv[argv.index("--socket-group") + 1] == agent["Group"][0] == helper["Group"][0]
    runtime_dir = "/run/" + helper["RuntimeDirectory"][0]
    assert socket_path.startswith(runtime_dir + "/")
    example = yaml.safe_load((ROOT / "deploy" / "config.example.yml").read_text())
    assert Config.model_validate(example).probe_helper_socket == socket_path
    assert example["state_dir"] == "/var/lib/" + agent["StateDirectory"][0]
    for name in (AGENT, HELPER):
        assert unit_settings(UNIT_DIR / name)["ExecStart"][0].startswith(SHIPPED_BINARY + " ")
        assert "--config /etc/ssdfleet/config.yml" in unit_settings(UNIT_DIR / name)["ExecStart"][0]


def test_sysusers_creates_the_system_user(tmp_path: Path):
    tool = shutil.which("systemd-sysusers")
    if tool is None:
        skip_or_fail("systemd-sysusers not installed (Debian package systemd)")
    (tmp_path / "etc").mkdir()
    r = subprocess.run([tool, f"--root={tmp_path}", str(UNIT_DIR / "ssdfleet.sysusers.conf")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    users = {line.split(":")[0]: line.split(":") for line in (tmp_path / "etc/passwd").read_text().splitlines()}
    entry = users["ssdfleet"]
    assert int(entry[2]) < 1000, "a system uid"
    assert entry[5] == "/var/lib/ssdfleet" and entry[6] == "/usr/sbin/nologin"
    assert "ssdfleet:" in (tmp_path / "etc/group").read_text()
