"""The bounded tool runner, against real child processes that misbehave."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from collectors.runner import run_tool
from tests.conftest import ROOT


def script(tmp_path: Path, body: str, name: str = "tool") -> str:
    path = tmp_path / name
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def test_plain_output_and_exit_code(tmp_path):
    tool = script(tmp_path, 'echo "hello $1"; echo oops >&2; exit 4')
    r = run_tool([tool, "world"], timeout=5)
    assert r.stdout == b"hello world\n"
    assert r.stderr == b"oops\n"
    assert r.exit_code == 4
    assert r.ok_to_parse and not r.timed_out and r.error is None


def test_environment_is_c_locale(tmp_path):
    tool = script(tmp_path, 'echo "$LC_ALL $LANG"')
    assert run_tool([tool], timeout=5).stdout == b"C C\n"


def test_arguments_are_not_interpreted_by_a_shell(tmp_path):
    tool = script(tmp_path, 'printf "%s|" "$@"')
    r = run_tool([tool, "; rm -rf /", "$(id)", "a b"], timeout=5)
    assert r.stdout == b"; rm -rf /|$(id)|a b|"


def test_missing_tool(tmp_path):
    r = run_tool([str(tmp_path / "nope")], timeout=5)
    assert r.exit_code is None and "not found" in r.error
    assert not r.ok_to_parse


def test_not_executable(tmp_path):
    path = tmp_path / "tool"
    path.write_text("#!/bin/sh\necho hi\n")
    path.chmod(0o644)
    r = run_tool([str(path)], timeout=5)
    assert r.exit_code is None and "permission denied" in r.error


def test_timeout_kills_the_whole_group(tmp_path):
    marker = tmp_path / "child.pid"
    tool = script(tmp_path, f'sleep 30 & echo $! > {marker}; wait')
    start = time.monotonic()
    r = run_tool([tool], timeout=0.5, grace=0.5)
    assert r.timed_out and r.exit_code is None and not r.ok_to_parse
    assert time.monotonic() - start < 5
    child = int(marker.read_text())
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        pytest.fail("the background child of the tool survived the timeout")


def test_tool_ignoring_sigterm_gets_sigkill(tmp_path):
    tool = script(tmp_path, 'trap "" TERM; while :; do sleep 0.1; done')
    start = time.monotonic()
    r = run_tool([tool], timeout=0.3, grace=0.3)
    elapsed = time.monotonic() - start
    assert r.timed_out and not r.stuck
    assert elapsed < 4, elapsed


def test_tool_that_closes_stdout_but_keeps_running(tmp_path):
    tool = script(tmp_path, 'echo done; exec >&- 2>&-; sleep 30')
    start = time.monotonic()
    r = run_tool([tool], timeout=0.5, grace=0.2)
    assert r.timed_out
    assert r.stdout == b"done\n"
    assert time.monotonic() - start < 5


def test_output_cap(tmp_path):
    tool = script(tmp_path, "head -c 50000000 /dev/zero")
    r = run_tool([tool], timeout=10, max_output=1_000_000)
    assert r.truncated and not r.ok_to_parse
    assert len(r.stdout) <= 1_000_000


def test_binary_output_is_returned_as_bytes(tmp_path):
    tool = script(tmp_path, r"printf '\000\377\376garbage\200'")
    r = run_tool([tool], timeout=5)
    assert r.stdout == b"\x00\xff\xfegarbage\x80"
    assert r.exit_code == 0


def _gone(pid: int, within: float = 3.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat", "rb") as fh:
                if fh.read().rpartition(b")")[2].split()[0] in (b"Z", b"X"):
                    return True  # dead, waiting for its parent to reap it
        except FileNotFoundError:
            return True
        time.sleep(0.05)
    return False


def test_a_child_left_in_the_group_is_killed_when_the_tool_exits(tmp_path):
    # Issue 26: the tool backgrounds a child that stays in its process group, closes its own
    # output and exits 0; the runner returns at once and the child does not outlive the tool.
    marker = tmp_path / "child.pid"
    tool = script(tmp_path, f'sleep 300 >/dev/null 2>&1 </dev/null & echo $! > {marker}; echo ok')
    start = time.monotonic()
    r = run_tool([tool], timeout=10)
    assert r.exit_code == 0 and r.stdout == b"ok\n" and not r.timed_out
    assert time.monotonic() - start < 5
    assert _gone(int(marker.read_text())), "the tool's child outlived it"


def test_a_child_ignoring_sigterm_is_killed_after_a_timeout(tmp_path):
    # The tool dies on SIGTERM, its child ignores it: the group still gets SIGKILL.
    marker = tmp_path / "child.pid"
    tool = script(tmp_path, f'(trap "" TERM; exec sleep 300) & echo $! > {marker}; sleep 30')
    r = run_tool([tool], timeout=0.5, grace=0.5)
    assert r.timed_out and not r.stuck
    assert _gone(int(marker.read_text())), "the child that ignored SIGTERM survived"


_SUBREAPER_SCRIPT = r'''
import json, sys, time
from collectors import runner
tool, marker = sys.argv[1], sys.argv[2]
subreaper = runner.enable_subreaper()
r = runner.run_tool([tool], timeout=10)
daemon = int(open(marker).read())
time.sleep(0.3)  # the daemon's parent (the tool's subshell) has exited: it is ours now
adopted = daemon in runner.ORPHANS.children()
first = runner.ORPHANS.sweep()   # seen once: a suspect, not killed yet
time.sleep(0.2)
second = runner.ORPHANS.sweep()  # seen twice: killed
time.sleep(0.2)
runner.ORPHANS.sweep_all()
print(json.dumps({"subreaper": subreaper, "exit": r.exit_code, "adopted": adopted, "first": first,
                  "second": second, "daemon": daemon, "children": sorted(runner.ORPHANS.children()),
                  "leftovers": dict(runner.LEFTOVERS.counts())}))
'''


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_CHILD_SUBREAPER is Linux only")
def test_subreaper_adopts_and_kills_a_daemon_that_left_the_group(tmp_path):
    """A tool starts a ``setsid`` daemon (its own session: the group kill cannot reach it) and
    exits. In a process that is a subreaper (run apart, so pytest itself stays as it is) the
    daemon is reparented to it, and the sweeper kills it at its second sighting and reaps it;
    an in-group child of the same tool counts as killed with the group."""
    marker = tmp_path / "daemon.pid"
    # The daemon writes its own pid once setsid() has run, and the tool waits for that: with
    # ``$!`` the tool could exit (and its group be killed) before the child had left the group,
    # which under load killed the would-be daemon with the group (failed CI once).
    tool = script(tmp_path, f"(setsid sh -c 'echo $$ > {marker}.tmp; mv {marker}.tmp {marker}; "
                            "exec sleep 300' >/dev/null 2>&1 </dev/null &) ; "
                            f"while [ ! -s {marker} ]; do sleep 0.01; done; "
                            "sleep 300 >/dev/null 2>&1 </dev/null & echo ok")
    out = subprocess.run([sys.executable, "-c", _SUBREAPER_SCRIPT, tool, str(marker)], cwd=str(ROOT),
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    print(" ", result)
    assert result["subreaper"] and result["exit"] == 0
    assert result["adopted"], "the setsid daemon was not reparented to the subreaper"
    assert result["first"] == 0 and result["second"] == 1
    assert result["children"] == []
    assert result["leftovers"] == {"adopted": 1, "group": 1}
    assert _gone(result["daemon"], 0.5)
    assert "left outside its process group" in out.stderr and "of its process group running" in out.stderr
