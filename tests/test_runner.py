"""The bounded tool runner, against real child processes that misbehave."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import pytest

from collectors.runner import run_tool


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
