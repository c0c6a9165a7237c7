"""Issue 25: the sync-write probe under the shipped unit's sandbox.

The unit's ``ProtectSystem=strict`` leaves every configured probe directory read-only to the
agent; ``ssdfleet syncwrite-dropin`` writes the drop-in whose ``ReadWritePaths=`` opens each one
again, and the agent says, for a directory still left read-only, that the sandbox is why and
what fixes it. The end-to-end test emulates the sandbox as systemd builds it, with the real
agent inside an ``unshare --mount`` namespace: the database's directory is bind-mounted
read-only (``ProtectSystem=strict``) and each directory of the generated drop-in bound again
read-write (``ReadWritePaths=``). Nothing outside the namespace is mounted; the probe's writes
land in this test's temporary directory.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Dict, List, Tuple

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from collectors.model import ParseError
from collectors.syncwrite import (
    PROBE_FILE_NAME,
    SKIP_READ_ONLY,
    SKIP_SANDBOX,
    mount_of,
    parse_mountinfo,
    read_only_reason,
)
from collectors.syncwrite.dropin import (
    STATE_DIRECTORY,
    checked_directories,
    directory_problem,
    dropin_text,
    spelling_problem,
    user_id,
)
from tests.conftest import ROOT, fixture_path
from tests.fakehost import build_default_host, free_port, promtool, stop_process

MOUNTINFO = "mountinfo/ssdfleet__sandbox-emulated.txt"


# ------------------------------------------------------------------ mountinfo (pure)


def test_mountinfo_of_an_emulated_sandbox():
    mounts = parse_mountinfo(fixture_path(MOUNTINFO).read_text())
    assert len(mounts) == 13
    srv = mount_of(mounts, "/srv/postgresql")
    assert (srv.mount_point, srv.fstype, srv.source) == ("/srv", "ext4", "/dev/vda")
    assert srv.mount_read_only and not srv.fs_read_only  # the sandbox's read-only bind
    probe = mount_of(mounts, "/srv/probe")
    assert probe.mount_point == "/srv/probe" and not probe.mount_read_only
    assert mount_of(mounts, "/srv/probe/deeper").mount_point == "/srv/probe"
    assert mount_of(mounts, "/srv/probe2").mount_point == "/srv"  # a prefix is not a parent
    assert mount_of(mounts, "/srv/wal dir").mount_point == "/srv/wal dir"  # \040 decoded
    other = mount_of(mounts, "/srv/other")
    assert other.fstype == "tmpfs" and other.mount_read_only and other.fs_read_only
    assert mount_of(mounts, "/var/lib/x").mount_point == "/"
    # two mounts stacked on /dev/shm: the later one is on top
    shm = [m for m in mounts if m.mount_point == "/dev/shm"]
    assert len(shm) == 2 and mount_of(mounts, "/dev/shm/x") is shm[1]


@pytest.mark.parametrize("text,match", [
    ("36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 ext3 /dev/root rw", "no ' - '"),
    ("36 35 98:0 /mnt1 /mnt2 rw,noatime - ext3 /dev/root", "too few fields"),
    ("36 35 98:0 /mnt1 relative rw - ext3 /dev/root rw", "no mount point"),
    ("garbage", "no ' - '"),
    ("1 2 3 4 5 6 -", "too few fields"),
], ids=["no separator", "no super options", "relative mount point", "garbage", "truncated"])
def test_malformed_mountinfo(text, match):
    with pytest.raises(ParseError, match=match):
        parse_mountinfo("43 42 254:0 / / rw,relatime - ext4 /dev/vda rw\n" + text + "\n")


def test_empty_mountinfo_has_no_mounts():
    assert parse_mountinfo("") == [] and parse_mountinfo("\n\n") == []
    assert mount_of([], "/srv") is None


def test_read_only_reason_tells_the_sandbox_from_a_read_only_filesystem(tmp_path):
    info = str(fixture_path(MOUNTINFO))
    reason, detail = read_only_reason("/srv/postgresql/ssdfleet-probe", info)
    assert reason == SKIP_SANDBOX
    assert "ProtectSystem=strict" in detail and "ssdfleet syncwrite-dropin" in detail and "runbooks" in detail
    assert read_only_reason("/srv/other", info) == (SKIP_READ_ONLY, "/srv/other is on a read-only filesystem")
    # an unreadable mount table: still read-only, and says why it cannot tell more
    reason, detail = read_only_reason("/srv/x", str(tmp_path / "missing"))
    assert reason == SKIP_READ_ONLY and "unreadable" in detail


# ------------------------------------------------------------------ the drop-in's checks


@pytest.mark.parametrize("path,problem", [
    ("relative/dir", "not an absolute path"),
    ("/srv/pg/", "normal form"),
    ("/srv//pg", "normal form"),
    ("//srv/pg", "normal form"),
    ("/srv/pg/../x", "normal form"),
    ("/srv/a b", "blank"),
    ("/srv/a\tb", "blank"),
    ('/srv/"a"', "quote"),
    ("/srv/a\\b", "backslash"),
    ("/srv/a\x01", "control"),
    ("/", "root directory"),
    ("/etc/ssdfleet", "system directory /etc"),
    ("/usr/local/pg", "system directory /usr"),
    ("/run/postgresql", "system directory /run"),
    ("/opt/ssdfleet/x", "system directory /opt/ssdfleet"),
    ("/home/pg/data", "ProtectHome"),
    ("/root/pg", "ProtectHome"),
    ("/run/user/0/x", "ProtectHome"),
    ("/tmp/pg", "PrivateTmp"),
    ("/var/tmp/pg", "PrivateTmp"),
])
def test_paths_a_drop_in_refuses(path, problem):
    assert problem in (spelling_problem(path) or ""), spelling_problem(path)


@pytest.mark.parametrize("path", ["/srv/postgresql/ssdfleet-probe", "/var/lib/postgresql/ssdfleet-probe",
                                  "/data/pg_probe", "/srv/100%"])
def test_paths_a_drop_in_takes(path):
    assert spelling_problem(path) is None


def test_a_directory_of_its_own_owned_by_the_agent(tmp_path):
    uid = os.geteuid()
    probe = tmp_path / "probe"
    probe.mkdir()
    assert directory_problem(str(probe), uid, "me") is None
    (probe / PROBE_FILE_NAME).write_bytes(b"\0" * 8192)  # its own file from an earlier run
    assert directory_problem(str(probe), uid, "me") is None
    (probe / "000000010000000000000001").write_bytes(b"wal")
    assert "holds other files (000000010000000000000001)" in directory_problem(str(probe), uid, "me")
    link = tmp_path / "link"
    link.symlink_to(probe)
    assert "symbolic link" in directory_problem(str(link), uid, "me")
    assert "not a directory" in directory_problem(str(probe / PROBE_FILE_NAME), uid, "me")
    assert "cannot be read" in directory_problem(str(tmp_path / "missing"), uid, "me")
    other = uid + 1
    problem = directory_problem(str(tmp_path), other, "pg")
    assert f"not by pg (uid {other}): chown pg: {tmp_path}" in problem


@pytest.mark.skipif(os.geteuid() != 0, reason="making a directory owned by another user needs root")
def test_a_directory_the_agent_cannot_reach_is_refused():
    """As under /var/lib/mysql (0750 mysql:mysql): owned by the agent's user, but behind a
    parent it may not search. nobody (65534) stands for the agent's user."""
    import tempfile

    base = tempfile.mkdtemp(prefix="ssdfleet-reach-")
    try:
        os.chmod(base, 0o711)
        for name, mode in (("mysql", 0o750), ("postgresql", 0o755)):
            os.mkdir(os.path.join(base, name))
            os.chmod(os.path.join(base, name), mode)
            os.mkdir(os.path.join(base, name, "ssdfleet-probe"))
            os.chown(os.path.join(base, name, "ssdfleet-probe"), 65534, 65534)
        problem = directory_problem(os.path.join(base, "mysql", "ssdfleet-probe"), 65534, "nobody")
        assert f"nobody cannot reach it: {base}/mysql (mode 0750, uid 0, gid 0)" in problem, problem
        assert directory_problem(os.path.join(base, "postgresql", "ssdfleet-probe"), 65534, "nobody") is None
    finally:
        shutil.rmtree(base)


def test_the_drop_in_lists_each_directory_once_and_escapes_specifiers(tmp_path):
    text = dropin_text(["/srv/pg/probe", "/srv/100%"], "ssdfleet", "/etc/ssdfleet/config.yml")
    lines = text.splitlines()
    assert lines[-3:] == ["[Service]", "ReadWritePaths=-/srv/pg/probe", "ReadWritePaths=-/srv/100%%"]
    assert all(line.startswith("#") for line in lines[:-3])
    # the state directory needs no drop-in; an empty list is a problem, not an empty drop-in
    paths, problems = checked_directories([STATE_DIRECTORY], os.geteuid(), "me")
    assert paths == [] and "nothing to allow" in problems[0]
    paths, problems = checked_directories(["/tmp/x", "relative"], os.geteuid(), "me")
    assert paths == [] and len(problems) == 2


def test_user_names_and_numbers():
    assert user_id("0") == (0, "root") and user_id("root") == (0, "root")
    assert user_id("3999999999") == (3999999999, "3999999999")  # a uid with no passwd entry
    with pytest.raises(ValueError, match="no user 'ssdfleet-no-such-user'"):
        user_id("ssdfleet-no-such-user")


def test_the_command_refuses_and_writes_nothing(tmp_path):
    config = tmp_path / "config.yml"
    config.write_text(yaml.safe_dump({"syncwrite": {"directories": [str(tmp_path), "/etc"]}}))
    out = tmp_path / "dropin" / "syncwrite.conf"
    r = subprocess.run([sys.executable, "-m", "agent", "syncwrite-dropin", "--config", str(config), "--user", "0",
                        "--output", str(out)], capture_output=True, text=True, timeout=60, cwd=str(ROOT))
    assert r.returncode == 1, r.stderr
    assert "PrivateTmp" in r.stderr and "/etc: is under the system directory /etc" in r.stderr
    assert "nothing written" in r.stderr and not out.parent.exists()


# ------------------------------------------------------------------ the real agent in the sandbox


def _sandbox_base() -> str:
    """An existing top-level directory to stand for the database's filesystem inside the
    namespace (the drop-in refuses /tmp, which the unit makes private)."""
    for candidate in ("/srv", "/mnt", "/media"):
        if os.path.isdir(candidate) and not os.path.islink(candidate):
            return candidate
    pytest.skip("no /srv, /mnt or /media to mount over inside the namespace")


def _needs_namespaces() -> None:
    if os.geteuid() != 0:
        pytest.skip("bind mounts in a mount namespace need root")
    if shutil.which("unshare") is None:
        pytest.skip("unshare (util-linux) is not installed")
    probe = subprocess.run(["unshare", "--mount", "--propagation", "private", "true"], capture_output=True,
                           timeout=30)
    if probe.returncode != 0:
        pytest.skip(f"unshare --mount: {probe.stderr.decode().strip()}")


def _samples(text: str) -> Dict[Tuple[str, Tuple[Tuple[str, str], ...]], float]:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def _value(samples, name: str, **labels) -> float:
    key = (name, tuple(sorted(labels.items())))
    return samples.get(key)


def _namespace(script: str) -> List[str]:
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", script]


def test_probe_under_the_emulated_unit_sandbox(tmp_path, capsys):
    _needs_namespaces()
    base = _sandbox_base()
    before = sorted(os.listdir(base))
    disk = tmp_path / "db"  # the database's filesystem: this machine's disk, through a bind
    for name in ("ssdfleet-probe", "added-later"):
        (disk / name).mkdir(parents=True)
    probe_dir, later_dir = f"{base}/ssdfleet-probe", f"{base}/added-later"
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    bind_db = f"mount --bind {shlex.quote(str(disk))} {base}"

    # 1. The operator configures one directory and generates the drop-in (inside the namespace,
    # where the database's filesystem is at /srv).
    first = tmp_path / "first.yml"
    first.write_text(yaml.safe_dump({"syncwrite": {"directories": [probe_dir]}}))
    dropin = tmp_path / "ssdfleet-agent.service.d" / "syncwrite.conf"
    gen = subprocess.run(_namespace(
        f"{bind_db} && exec {shlex.quote(sys.executable)} -m agent syncwrite-dropin --config {shlex.quote(str(first))} "
        f"--user {os.geteuid()} --output {shlex.quote(str(dropin))}"), capture_output=True, text=True, timeout=60,
        cwd=str(ROOT), env=env)
    assert gen.returncode == 0, gen.stderr
    allowed = [line.split("=", 1)[1].lstrip("-") for line in dropin.read_text().splitlines()
               if line.startswith("ReadWritePaths=")]
    assert allowed == [probe_dir], dropin.read_text()

    # 2. Later a second directory is configured without generating the drop-in again. The unit's
    # sandbox: the filesystem read-only (ProtectSystem=strict), each ReadWritePaths= entry bound
    # again read-write; the real agent runs inside it.
    config = tmp_path / "config.yml"
    config.write_text(yaml.safe_dump({"syncwrite": {
        "directories": [probe_dir, later_dir], "interval_seconds": 1, "writes": 32, "max_seconds": 1.0,
        "min_free_bytes": 0, "min_free_ratio": 0.0}}))
    host = build_default_host(tmp_path / "host")
    port = free_port()
    sandbox = [bind_db, f"mount -o remount,bind,ro {base}"]
    for path in allowed:
        sandbox += [f"mount --bind {shlex.quote(path)} {shlex.quote(path)}",
                    f"mount -o remount,bind,rw {shlex.quote(path)}"]
    agent_argv = [sys.executable, "-m", "agent", "agent", "--listen-address", f"127.0.0.1:{port}",
                  "--config", str(config), "--interval.smartctl", "3600"] + host.config_args()
    script = " && ".join(sandbox) + " && exec " + " ".join(shlex.quote(a) for a in agent_argv)
    log_path = tmp_path / "agent.log"
    with open(log_path, "wb") as log:
        agent = subprocess.Popen(_namespace(script), stdout=log, stderr=subprocess.STDOUT, env=env, cwd=str(ROOT),
                                 start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        text = _wait_for_bursts(agent, url, probe_dir, later_dir, log_path)
        samples = _samples(text)
        ids = {"path": probe_dir, "device": "", "serial": "", "method": "fdatasync"}
        ops = _value(samples, "ssd_syncwrite_ops_per_second", **ids)
        assert ops is not None and ops > 0, text
        assert _value(samples, "ssd_syncwrite_skipped", **ids, reason=SKIP_SANDBOX) is None
        later = {"path": later_dir, "device": "", "serial": "", "method": "fdatasync"}
        assert _value(samples, "ssd_syncwrite_skipped", **later, reason=SKIP_SANDBOX) == 1.0, text
        assert _value(samples, "ssd_syncwrite_ops_per_second", **later) is None
        assert _value(samples, "ssd_collector_success", collector="syncwrite") == 0.0  # the operator's to fix
        if promtool() is not None:
            check = subprocess.run([promtool(), "check", "metrics"], input=text.encode(), capture_output=True,
                                   timeout=60)
            assert check.returncode == 0, check.stdout + check.stderr
        status = subprocess.run([sys.executable, "-m", "agent", "status", "--url", url], capture_output=True,
                                text=True, timeout=90, cwd=str(ROOT), env=dict(env, COLUMNS="400"))
        said = [line for line in status.stdout.splitlines() if later_dir in line]
        assert said and f"skipped ({SKIP_SANDBOX}: " in said[0] and "ssdfleet syncwrite-dropin" in said[0], status.stdout
    finally:
        stop_process(agent)
    log_text = log_path.read_text(errors="replace")
    assert agent.returncode == 0, log_text
    warned = [line for line in log_text.splitlines() if f"syncwrite {later_dir}: {SKIP_SANDBOX}" in line]
    assert len(warned) == 1 and "WARNING" in warned[0] and "ssdfleet syncwrite-dropin" in warned[0], log_text
    # the writes reached the real disk through the bind; nothing in the read-only directory,
    # nothing mounted or written outside the namespace
    assert os.listdir(disk / "ssdfleet-probe") == [PROBE_FILE_NAME]
    assert os.listdir(disk / "added-later") == []
    assert sorted(os.listdir(base)) == before
    with capsys.disabled():
        print(f"\n[syncwrite sandbox] {probe_dir} (ReadWritePaths=, ext4 through a bind): {ops:,.0f} fdatasync/s; "
              f"{later_dir} (not in the drop-in): {SKIP_SANDBOX}: {warned[0].split(': ', 3)[-1][:100]}...")


def _wait_for_bursts(agent: subprocess.Popen, url: str, probe_dir: str, later_dir: str, log_path: Path) -> str:
    """/metrics once the probe has measured the first directory and run three times in the
    second (one second apart)."""
    deadline = time.monotonic() + 90  # about 5 s on a quiet machine
    text = ""
    runs = set()
    while time.monotonic() < deadline:
        if agent.poll() is not None:
            pytest.fail(f"the agent exited with {agent.returncode}:\n{log_path.read_text(errors='replace')}")
        try:
            with urllib.request.urlopen(url + "/metrics", timeout=5) as r:
                text = r.read().decode()
        except OSError:
            time.sleep(0.2)
            continue
        samples = _samples(text)
        ops = _value(samples, "ssd_syncwrite_ops_per_second", path=probe_dir, device="", serial="", method="fdatasync")
        runs.add(_value(samples, "ssd_syncwrite_last_run_timestamp_seconds", path=later_dir, device="", serial="",
                        method="fdatasync"))
        if ops is not None and len(runs - {None}) >= 3:
            return text
        time.sleep(0.3)
    pytest.fail(f"no three bursts within 90 s; last scrape:\n{text[-2000:]}\nlog:\n{log_path.read_text()[-2000:]}")


_NO_PERMISSION_CHILD = r"""
import json, os, sys
from collectors.syncwrite import SyncWriteSettings, run_burst  # before the switch: nobody may not read our Python
if os.geteuid() == 0:
    os.setgroups([]); os.setgid(65534); os.setuid(65534)
out = []
for directory in sys.argv[1:]:
    r = run_burst(directory, SyncWriteSettings(min_free_bytes=0, min_free_ratio=0.0))
    out.append({"euid": os.geteuid(), "skipped": r.skipped, "detail": r.detail, "ops": r.ops})
print(json.dumps(out))
"""


def test_a_directory_the_agent_may_not_write_names_the_fix():
    """Writable filesystem, directory owned by someone else, or one behind a parent it may not
    search: ``no_permission``, naming the fix (as root the probe runs in a child that drops to
    nobody, like the agent's own user)."""
    import json
    import tempfile

    base = tempfile.mkdtemp(prefix="ssdfleet-perm-")
    try:
        os.chmod(base, 0o711)
        directory = os.path.join(base, "pg_wal")
        os.mkdir(directory)
        os.chmod(directory, 0o555)
        hidden = os.path.join(base, "mysql", "probe")  # behind a parent nobody may not search
        os.makedirs(hidden)
        os.chmod(os.path.dirname(hidden), 0o700)
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        r = subprocess.run([sys.executable, "-c", _NO_PERMISSION_CHILD, directory, hidden], capture_output=True,
                           text=True, timeout=60, cwd="/", env=env)
        assert r.returncode == 0, r.stderr
        result, behind = json.loads(r.stdout.strip().splitlines()[-1])
        assert result["euid"] != 0 and result["ops"] == 0, result
        assert result["skipped"] == "no_permission", result
        assert "owned by the agent's user" in result["detail"] and "runbooks" in result["detail"], result
        assert os.listdir(directory) == []
        assert behind["skipped"] == "no_permission" and "not searchable" in behind["detail"], behind
    finally:
        shutil.rmtree(base)
