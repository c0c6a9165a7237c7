"""The privileged probe helper: the real ``ssdfleet probe-helper`` process with fake tools.

The helper only names devices that exist as block or character devices under its dev root
(``paths.dev``). Tests cannot create real disk nodes without root, so the fake dev root holds
symlinks to /dev/null (a character device; the helper follows links, as /dev is root's). The
fake tools never open the device: they pick their canned output by the device's base name.
"""

from __future__ import annotations

import grp
import json
import os
import shutil
import socket
import stat
import tempfile
import threading
import time
from pathlib import Path
from typing import List

import pytest
import yaml

from agent.privhelper import MAX_REQUEST_BYTES, PROTOCOL_VERSION, HelperRunner
from collectors.runner import ToolResult
from collectors.smartctl import SmartctlProbe
from tests.conftest import fixture_path
from tests.fakehost import AgentProcess, build_default_host
from tests.support.e2e import (
    FAST,
    NVME1_SERIAL,
    SDA_SERIAL,
    SHANNON_SERIAL,
    all_drives_seen,
    scrape,
    value,
    wait_for,
)
from tests.support.probe_helper import HelperProcess


@pytest.fixture
def sockdir():
    # AF_UNIX paths are limited to 108 bytes; pytest's tmp_path can be longer than that.
    path = tempfile.mkdtemp(prefix="ssdf-", dir="/tmp")
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def shared():
    """One helper for the many refusal cases (starting one costs ~0.3 s)."""
    root = Path(tempfile.mkdtemp(prefix="ssdf-", dir="/tmp"))
    host = build_default_host(root)
    helper = HelperProcess(host, str(root / "h.sock"), ["--tool-timeout", "5"])
    try:
        yield host, helper, HelperRunner(helper.socket_path)
    finally:
        helper.stop()
        shutil.rmtree(root, ignore_errors=True)


def test_valid_smartctl_read_returns_the_fake_output(shared):
    host, helper, run = shared
    # The agent's own tool path does not matter (it need not even exist): argv[0] only
    # selects the tool, the helper runs its configured one.
    argv = SmartctlProbe(tool="/nonexistent/agent-side/smartctl").read_argv("/dev/sda", "sat")
    result = run(argv, timeout=10)
    assert result.error is None, result.error
    assert result.exit_code == 0
    assert result.stdout == fixture_path("fakehost/scrutiny__smart-ata-full.json").read_bytes()
    assert result.argv == tuple(argv) and not result.timed_out and not result.truncated
    # The fake saw exactly the arguments the probe built.
    assert ("smartctl " + " ".join(argv[1:])) in host.calls()


@pytest.mark.parametrize("argv", [
    ["smartctl", "--version"],
    ["smartctl", "--scan-open", "--json=c"],
    ["shannon-status", "-a"],
    ["shannon-status", "-p", "/dev/scta"],
    ["hdparm", "-W", "/dev/sda"],
])
def test_each_allowed_command_runs(shared, argv):
    host, helper, run = shared
    result = run(argv, timeout=10)
    assert result.error is None and result.exit_code == 0, result
    assert result.stdout.strip()


def test_nonzero_exit_and_stderr_come_back(shared):
    host, helper, run = shared
    # The fake nvme has no response for get-feature: it prints to stderr and exits 2.
    host.tool("nvme")
    result = run(["nvme", "get-feature", "/dev/nvme0", "-f", "6"], timeout=10)
    assert result.error is None
    assert result.exit_code == 2
    assert b"no response for: get-feature /dev/nvme0 -f 6" in result.stderr


READ = SmartctlProbe(tool="smartctl").read_argv("/dev/sda", "sat")


def _read(device: str = "/dev/sda", dev_type: str = "sat") -> List[str]:
    return SmartctlProbe(tool="smartctl").read_argv(device, dev_type)


REFUSED = {
    "semicolon": _read("/dev/sda;id"),
    "command substitution": _read("/dev/$(id)"),
    "backticks": _read("/dev/`id`"),
    "dotdot": _read("/dev/../etc/passwd"),
    "dotdot to a device": _read("/dev/../dev/sda"),
    "space": _read("/dev/sda /dev/sdb"),
    "newline": _read("/dev/sda\n"),
    "very long name": _read("/dev/sd" + "a" * 5000),
    "not under /dev": _read("/etc/passwd"),
    "relative": _read("sda"),
    "option as device": _read("--all"),
    "not a device node": _read("/dev/sdz"),  # the right shape, but absent from the dev root
    "type with extra comma": _read("/dev/sda", "sat,12,foo"),
    "type with space": _read("/dev/sda", "sat -x"),
    "type with option": _read("/dev/sda", "--all"),
    "unknown type": _read("/dev/sda", "test"),
    "megaraid needs its node": _read("/dev/bus/0", "megaraid,0"),
    "double dash": READ[:-1] + ["--", "/dev/sda"],
    "extra argument": READ[:-1] + ["-x", "/dev/sda"],
    "write command": ["smartctl", "-s", "off", "-d", "sat", "/dev/sda"],
    "self-test": ["smartctl", "-t", "long", "-d", "sat", "/dev/sda"],
    "two -d": READ[:-1] + ["-d", "scsi", "/dev/sda"],
    "unknown tool": ["sh", "-c", "id"],
    "unknown tool with allowed args": ["cat", "/dev/sda"],
    "version plus extra": ["smartctl", "--version", "--all"],
    "scan plus device": ["smartctl", "--scan-open", "/dev/sda"],
    "hdparm set": ["hdparm", "-W0", "/dev/sda"],
    "hdparm extra": ["hdparm", "-W", "-I", "/dev/sda"],
    "hdparm on nvme": ["hdparm", "-W", "/dev/nvme0"],
    "nvme set-feature": ["nvme", "set-feature", "/dev/nvme0", "-f", "6", "-v", "0"],
    "nvme other feature": ["nvme", "get-feature", "/dev/nvme0", "-f", "2"],
    "nvme format": ["nvme", "format", "/dev/nvme0"],
    "shannon on a disk": ["shannon-status", "-p", "/dev/sda"],
    "shannon extra": ["shannon-status", "-a", "-x"],
    "fio-status extra": ["fio-status", "-a", "-x"],
    "fio-status json (never built)": ["fio-status", "-fj"],
    "fio-status device": ["fio-status", "/dev/fct0"],
    "fio-format": ["fio-format", "/dev/fct0"],
    "a plug-in's argv": ["/usr/local/lib/ssdfleet/memblaze-plugin", "--all"],
    "wcache set": ["smartctl", "-s", "wcache,off", "-d", "sat", "/dev/sda"],
    "empty argv": [],
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refuses_what_is_not_allowed(shared, name):
    host, helper, run = shared
    argv = REFUSED[name]
    before = len(host.calls())
    result = run(argv, timeout=10)
    assert result.error is not None and "refused" in result.error, (name, result)
    assert result.exit_code is None and result.stdout == b""
    assert len(host.calls()) == before, "a refused request ran a tool"
    assert helper.proc.poll() is None
    # The helper says why in its log, and keeps serving.
    assert "refused request from uid" in helper.log()
    assert run(READ, timeout=10).exit_code == 0


def raw_request(path: str, payload: bytes) -> dict:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(10)
        s.connect(path)
        try:
            s.sendall(payload)
            s.shutdown(socket.SHUT_WR)
        except OSError:
            pass  # the helper may close first on an oversized request
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    return json.loads(data)


@pytest.mark.parametrize("payload", [
    b"not json",
    b"[1, 2]",
    b"\xff\xfe",
    b"[" * 50000,
    json.dumps({"version": 99, "argv": READ}).encode(),
    json.dumps({"argv": "smartctl --version"}).encode(),
    json.dumps({"argv": READ, "timeout": "soon"}).encode(),
    json.dumps({"argv": READ, "timeout": True}).encode(),
    json.dumps({"argv": READ, "pad": "x" * MAX_REQUEST_BYTES}).encode(),
])
def test_malformed_requests_get_an_error_response(shared, payload):
    host, helper, run = shared
    answer = raw_request(helper.socket_path, payload)
    assert answer["error"].startswith("probe helper refused:"), answer
    assert answer["exit_code"] is None
    assert helper.proc.poll() is None


def test_missing_helper_is_a_tool_error_not_an_exception(sockdir):
    run = HelperRunner(os.path.join(sockdir, "nobody.sock"))
    result = run(READ, timeout=1)
    assert result.error is not None and "not reachable" in result.error
    assert result.exit_code is None and not result.ok_to_parse


def test_a_listener_that_never_answers_is_bounded(sockdir):
    path = os.path.join(sockdir, "mute.sock")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as mute:
        mute.bind(path)
        mute.listen(1)
        run = HelperRunner(path, timeout_slack=0.2)
        started = time.monotonic()
        result = run(READ, timeout=0.3, grace=0.1)
        assert time.monotonic() - started < 3
    assert result.error is not None and "no answer in time" in result.error


def test_socket_permissions_group_and_sigterm(tmp_path, sockdir):
    host = build_default_host(tmp_path)
    path = os.path.join(sockdir, "p.sock")
    group = grp.getgrgid(os.getgid()).gr_name
    helper = HelperProcess(host, path, ["--socket-group", group])
    st = os.stat(path)
    assert stat.S_ISSOCK(st.st_mode)
    assert stat.S_IMODE(st.st_mode) == 0o660
    assert st.st_gid == os.getgid()
    assert helper.stop() == 0
    assert not os.path.exists(path), "the socket is removed on SIGTERM"
    assert "probe helper stopped" in helper.log()


def test_unknown_socket_group_is_a_clear_error(tmp_path, sockdir):
    host = build_default_host(tmp_path)
    helper = HelperProcess(host, os.path.join(sockdir, "g.sock"),
                           ["--socket-group", "no-such-group-ssdfleet"], wait=False)
    assert helper.proc.wait(timeout=15) == 64
    assert "socket group 'no-such-group-ssdfleet' does not exist" in helper.log()


def test_stale_socket_is_replaced_but_other_files_and_live_helpers_are_not(tmp_path, sockdir):
    host = build_default_host(tmp_path)
    path = os.path.join(sockdir, "s.sock")
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(path)
    stale.close()  # the file stays, nobody listens: what a killed helper leaves
    helper = HelperProcess(host, path)
    try:
        assert "removed stale socket" in helper.log()
        # A second helper on the same live socket refuses to start and leaves it alone.
        second = HelperProcess(host, path, wait=False)
        assert second.proc.wait(timeout=15) == 1
        assert "another helper is already listening" in second.log()
        assert HelperRunner(path)(READ, timeout=10).exit_code == 0
    finally:
        helper.stop()
    regular = os.path.join(sockdir, "file.sock")
    Path(regular).write_text("precious")
    third = HelperProcess(host, regular, wait=False)
    assert third.proc.wait(timeout=15) == 1
    assert "is not a socket; not removing it" in third.log()
    assert Path(regular).read_text() == "precious"


def test_helper_limits_win_and_one_probe_per_device(tmp_path, sockdir):
    host = build_default_host(tmp_path)
    host.set_response("smartctl", "nvme1", fixture_path("fakehost/scrutiny__smart-nvme-failed.json"), sleep=30)
    host.set_response("smartctl", "nvme0", fixture_path("fakehost/scrutiny__smart-nvme.json"), sleep=1)
    helper = HelperProcess(host, os.path.join(sockdir, "t.sock"), ["--tool-timeout", "2"],
                           config={"tool_kill_grace_seconds": 0.5})
    try:
        run = HelperRunner(helper.socket_path)
        # The agent asks for 60 s; the helper's own 2 s timeout applies.
        started = time.monotonic()
        slow = run(_read("/dev/nvme1", "nvme"), timeout=60)
        assert slow.timed_out and slow.exit_code is None and slow.error is None
        assert 1.9 < time.monotonic() - started < 6
        # Two requests at once for one device: the second is refused, not queued.
        results = {}

        def ask(key):
            results[key] = run(_read("/dev/nvme0", "nvme"), timeout=5)

        first = threading.Thread(target=ask, args=("first",))
        first.start()
        time.sleep(0.4)
        ask("second")
        first.join()
        assert results["first"].error is None and results["first"].exit_code == 0
        assert "already running on nvme0" in (results["second"].error or "")
    finally:
        helper.stop()


def test_agent_end_to_end_through_the_helper(tmp_path, sockdir):
    """The real agent, with device tool paths that do not exist on its side and
    ``probe_helper_socket`` in its config file, serves metrics for every fake drive."""
    host = build_default_host(tmp_path)
    sock = os.path.join(sockdir, "agent.sock")
    helper = HelperProcess(host, sock, ["--tool-timeout", "5"])
    cfg = tmp_path / "agent.yml"
    cfg.write_text(yaml.safe_dump({"probe_helper_socket": sock}))
    missing = ["--smartctl", "/nonexistent/smartctl", "--shannon-status", "/nonexistent/shannon-status",
               "--hdparm", "/nonexistent/hdparm", "--nvme", "/nonexistent/nvme"]
    agent = AgentProcess(host, ["--config", str(cfg)] + missing + FAST)
    try:
        agent.wait_ready()
        s = wait_for(lambda: all_drives_seen(agent))
        assert value(s, "ssd_life_left_ratio", serial=SHANNON_SERIAL) == pytest.approx(0.99)
        assert value(s, "ssd_media_errors_total", serial=NVME1_SERIAL) == 7
        assert value(s, "ssd_smart_healthy", serial=SDA_SERIAL) == 1
        # hdparm -W through the helper too.
        # Wait for hdparm's own answer: sysfs alone already gives an enabled cache.
        wait_for(lambda: value(scrape(agent), "ssd_write_cache_state", serial=SDA_SERIAL,
                               source="hdparm", state="enabled") == 1)
        for collector in ("smartctl", "shannon", "discovery"):
            assert value(scrape(agent), "ssd_collector_success", collector=collector) == 1, collector
        assert "refused" not in helper.log(), helper.log()
        calls = host.calls()
        assert any(c.startswith("hdparm -W /dev/sda") for c in calls)
        assert any(c.startswith("shannon-status -p /dev/scta") for c in calls)
    finally:
        agent.stop()
        helper.stop()


@pytest.mark.parametrize("answer, why", [
    (b"garbage", "unreadable answer"),
    (b'{"exit_code": "0", "stdout": "", "stderr": ""}', "exit_code is not an integer"),
    (b'{"exit_code": 0, "stdout": "***", "stderr": ""}', "unreadable answer"),
    (b"x" * (3 * 1024 * 1024), "answer larger than expected"),
])
def test_garbled_answers_become_tool_errors(sockdir, answer, why):
    """A process that is not the helper (or a broken one) on the socket cannot crash the agent."""
    path = os.path.join(sockdir, "liar.sock")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(1)

    def reply_once():
        conn, _ = server.accept()
        with conn:
            conn.settimeout(5)
            while conn.recv(65536):
                pass
            try:
                conn.sendall(answer)
            except OSError:
                pass  # the client stops reading once the answer is too large

    t = threading.Thread(target=reply_once, daemon=True)
    t.start()
    try:
        result = HelperRunner(path)(READ, timeout=5, max_output=1024 * 1024)
    finally:
        t.join(10)
        server.close()
    assert result.error is not None and why in result.error, result.error
    assert result.exit_code is None and result.stdout == b""


def test_a_quarantine_refusal_is_a_field_of_the_answer_not_its_wording():
    """The agent keeps a device reported stuck while the helper refuses it as quarantined; it
    reads that from the answer's ``quarantined`` field, whatever the message says."""
    def decode(body: dict):
        return HelperRunner._result(("smartctl",), json.dumps(body).encode(), 0.0,
                                    lambda why: ToolResult(("smartctl",), None, b"", b"", 0.0, error=why))

    base = {"version": PROTOCOL_VERSION, "exit_code": None, "stdout": "", "stderr": "", "duration": 0.0}
    held = decode(dict(base, error="probe helper refused: nvme1 is quarantined", quarantined=True))
    assert held.quarantined and held.error
    other = decode(dict(base, error="probe helper refused: quarantined-looking words", quarantined=False))
    assert not other.quarantined
    assert not decode(dict(base, error="probe helper refused: x", quarantined="yes")).quarantined
    assert not decode(base).quarantined  # an older helper without the field


def test_trickling_clients_cannot_hold_the_helper(tmp_path, sockdir):
    """Issue 13, item 8: the 5 s request deadline is for the whole request, not per read. One
    byte every second is cut off at 5 s; 12 such clients (the helper's connection limit for
    4 probes) do not make the agent's probes fail: a new connection at the limit closes the
    oldest one still sending its request."""
    import threading as _threading

    host = build_default_host(tmp_path)
    helper = HelperProcess(host, os.path.join(sockdir, "h.sock"), ["--tool-timeout", "5"])
    stop = _threading.Event()
    held: List[float] = []

    def trickle() -> None:
        while not stop.is_set():
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            started = time.monotonic()
            try:
                s.connect(helper.socket_path)
                while not stop.is_set():
                    s.sendall(b"{")
                    time.sleep(1.0)
            except OSError:
                held.append(time.monotonic() - started)
            finally:
                s.close()

    try:
        run = HelperRunner(helper.socket_path)
        assert run(READ, timeout=10).exit_code == 0
        clients = [_threading.Thread(target=trickle, daemon=True) for _ in range(12)]
        for c in clients:
            c.start()
        time.sleep(1.0)
        results = [run(READ, timeout=10) for _ in range(10)]
        failed = [r.error for r in results if r.exit_code != 0]
        time.sleep(5.0)
        stop.set()
        for c in clients:
            c.join(10)
        print(f"\n  agent probes failed: {len(failed)} of 10; trickling connections held at most "
              f"{max(held):.1f}s ({len(held)} cut off)")
        assert not failed, failed[:3]
        assert held and max(held) < 5.0 + 2.0
        assert helper.proc.poll() is None
    finally:
        stop.set()
        helper.stop()
