"""The scheduler's own probe-helper rule, on the real ``ssdfleet probe-helper`` process: exactly
``smartctl -t short|long --nocheck=standby,3 -d TYPE DEV`` and the status query run; anything
else (another test type, ``force``, captive mode, no ``--nocheck``, a bad name or type) is
refused and runs no tool. Then the real agent, with no smartctl of its own, starts its test
through the helper."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest
import yaml

from agent.privhelper import HelperRunner
from collectors.selftest.source import start_argv, status_argv
from tests.sources.selftest.common import ALWAYS, agent, sata_host
from tests.support.e2e import wait_for
from tests.support.probe_helper import HelperProcess, fake_dev_root

START = start_argv("smartctl", "/dev/sda", "sat", "short")
STATUS = status_argv("smartctl", "/dev/sda", "sat", True)


@pytest.fixture(scope="module")
def shared():
    root = Path(tempfile.mkdtemp(prefix="ssdf-", dir="/tmp"))
    host = sata_host(root)
    fake_dev_root(host, ("sda", "nvme0", "sdb"))
    helper = HelperProcess(host, str(root / "h.sock"), ["--tool-timeout", "5"])
    try:
        yield host, helper, HelperRunner(helper.socket_path)
    finally:
        helper.stop()
        shutil.rmtree(root, ignore_errors=True)


@pytest.mark.parametrize("argv,answer", [
    (START, "start-sda"),
    (start_argv("/agent/side/smartctl", "/dev/sda", "sat", "long"), "start-sda"),
    (start_argv("smartctl", "/dev/sda", "sat+megaraid,0", "short"), "start-sda"),
    (start_argv("smartctl", "/dev/nvme0", "nvme", "long"), None),
    (STATUS, "status-sda"),
    (status_argv("smartctl", "/dev/sda", "sat", False), "status-sda"),
])
def test_the_rules_commands_run(shared, argv, answer):
    host, helper, run = shared
    result = run(argv, timeout=10)
    assert result.error is None, result.error
    assert ("smartctl " + " ".join(argv[1:])) in host.calls()
    if answer is not None:
        assert result.exit_code == 0
        responses = host.root / "responses" / "smartctl"
        assert result.stdout == (responses / f"{answer}.out").read_bytes()


REFUSED = {
    "force": ["smartctl", "-t", "force"] + START[1:],
    "conveyance": start_argv("smartctl", "/dev/sda", "sat", "short")[:2] + ["conveyance"] + START[3:],
    "offline": START[:2] + ["offline"] + START[3:],
    "selective": START[:2] + ["select,0-100"] + START[3:],
    "vendor test": START[:2] + ["vendor,0x42"] + START[3:],
    "no --nocheck": ["smartctl", "-t", "short", "-d", "sat", "/dev/sda"],
    "--nocheck=never": ["smartctl", "-t", "short", "--nocheck=never", "-d", "sat", "/dev/sda"],
    "captive": ["smartctl", "-C"] + START[1:],
    "abort": ["smartctl", "-X", "--nocheck=standby,3", "-d", "sat", "/dev/sda"],
    "two tests": START[:3] + ["-t", "long"] + START[3:],
    "no -d": ["smartctl", "-t", "short", "--nocheck=standby,3", "/dev/sda"],
    "bad type": start_argv("smartctl", "/dev/sda", "sat -x", "short"),
    "unknown type": start_argv("smartctl", "/dev/sda", "bogus", "short"),
    "semicolon": start_argv("smartctl", "/dev/sda;id", "sat", "short"),
    "dotdot": start_argv("smartctl", "/dev/../etc/passwd", "sat", "short"),
    "absent node": start_argv("smartctl", "/dev/sdz", "sat", "short"),
    "not a disk": start_argv("smartctl", "/dev/tty0", "sat", "short"),
    "status plus -x": STATUS[:-1] + ["-x", "/dev/sda"],
    "status plus -s": STATUS[:-3] + ["-s", "on"] + STATUS[-3:],
    "status without --nocheck": [a for a in STATUS if not a.startswith("--nocheck")],
    "status of another log": STATUS[:5] + ["xerror"] + STATUS[6:],
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused_commands_never_run_a_tool(shared, name):
    host, helper, run = shared
    argv = REFUSED[name]
    before = len(host.calls())
    result = run(argv, timeout=10)
    assert result.error is not None and "refused" in result.error, (name, result)
    assert result.exit_code is None and result.stdout == b""
    assert len(host.calls()) == before, "a refused request ran a tool"
    assert helper.proc.poll() is None
    assert run(STATUS, timeout=10).exit_code == 0  # the helper keeps serving


def test_the_agent_starts_its_test_through_the_helper(tmp_path):
    sockdir = tempfile.mkdtemp(prefix="ssdf-", dir="/tmp")
    host = sata_host(tmp_path)
    fake_dev_root(host, ("sda",))
    host.running_polls(1000)  # the drive runs the test for the rest of the test
    sock = os.path.join(sockdir, "agent.sock")
    helper = HelperProcess(host, sock, ["--tool-timeout", "5"])
    # The agent's own smartctl does not exist: every command goes through the helper.
    process = agent(host, {"enabled": True, "short": ALWAYS, "long": None, "utilisation_sample_seconds": 0.2},
                    extra=["--smartctl", "/nonexistent/smartctl"], config={"probe_helper_socket": sock})
    try:
        process.wait_ready(timeout=60)
        wait_for(lambda: host.calls_matching("-t", "short"), timeout=60)
        assert host.calls_matching("-t") == ["smartctl " + " ".join(start_argv("x", "/dev/sda", "sat", "short")[1:])]
        assert "refused" not in helper.log(), helper.log()
    finally:
        process.stop()
        helper.stop()
        shutil.rmtree(sockdir, ignore_errors=True)
    assert yaml.safe_load((host.state / "selftest-schedule.json").read_text())["running"]["test"] == "short"
