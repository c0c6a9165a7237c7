"""Where the agent keeps its history when nobody says: never /var/lib/ssdfleet by euid alone.

The README's first command (``.venv/bin/ssdfleet agent`` from a checkout) may be run as root;
it must not write into the directory the package owns. The choice is systemd's
``$STATE_DIRECTORY`` (the unit's ``StateDirectory=``), else ``$XDG_STATE_HOME/ssdfleet``, else
``~/.local/state/ssdfleet``; ``--state-dir`` or ``state_dir`` override it, and the agent logs
the directory it chose at start.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Dict, List, Optional

import pytest

from agent.history import default_state_dir
from tests.fakehost import ROOT, build_default_host, free_port, stop_process

SYSTEM_DIR = "/var/lib/ssdfleet"


def test_systemd_state_directory_first():
    env = {"STATE_DIRECTORY": "/var/lib/ssdfleet", "XDG_STATE_HOME": "/xdg"}
    assert default_state_dir(environ=env, home="/home/x") == "/var/lib/ssdfleet"
    # StateDirectory= with several names gives a colon-separated list: the first is ours
    assert default_state_dir(environ={"STATE_DIRECTORY": "/var/lib/a:/var/lib/b"}, home="/h") == "/var/lib/a"
    # a relative value is not systemd's and is ignored, like a relative XDG_STATE_HOME
    assert default_state_dir(environ={"STATE_DIRECTORY": "rel"}, home="/home/x") == "/home/x/.local/state/ssdfleet"


def test_xdg_then_home():
    assert default_state_dir(environ={"XDG_STATE_HOME": "/xdg"}, home="/home/x") == "/xdg/ssdfleet"
    assert default_state_dir(environ={"XDG_STATE_HOME": "relative"}, home="/home/x") == "/home/x/.local/state/ssdfleet"
    assert default_state_dir(environ={}, home="/root") == "/root/.local/state/ssdfleet"


def test_no_home_is_a_clear_refusal():
    with pytest.raises(ValueError, match="--state-dir"):
        default_state_dir(environ={}, home="~")


def test_running_user_default_is_never_the_package_directory(tmp_path):
    """As whoever runs the tests (root in CI), with no systemd and no XDG variable."""
    chosen = default_state_dir(environ={"HOME": str(tmp_path)}, home=str(tmp_path))
    assert chosen == str(tmp_path / ".local" / "state" / "ssdfleet")
    assert not chosen.startswith(SYSTEM_DIR)


# ------------------------------------------------------------------ the real agent


def _tree(path: str) -> Optional[List[str]]:
    """What a directory holds, recursively, with sizes and mtimes; None when absent."""
    if not os.path.exists(path):
        return None
    out = []
    for top, dirs, files in os.walk(path):
        for name in sorted(dirs + files):
            st = os.lstat(os.path.join(top, name))
            out.append(f"{os.path.join(top, name)} {st.st_size} {st.st_mtime_ns}")
    return sorted(out)


def _run_agent(host, env: Dict[str, str], extra: List[str]) -> str:
    """Start ``ssdfleet agent`` (no --state-dir unless in ``extra``), wait for its first
    poll, stop it with SIGTERM and return its log."""
    port = free_port()
    args = [sys.executable, "-m", "agent", "agent", "--listen-address", f"127.0.0.1:{port}",
            "--interval.smartctl", "3600"]
    args += [a for a in host.config_args() if a != "--state-dir" and a != str(host.state)] + extra
    full_env = {k: v for k, v in os.environ.items() if k not in ("STATE_DIRECTORY", "XDG_STATE_HOME", "HOME")}
    full_env["PYTHONPATH"] = str(ROOT) + os.pathsep + full_env.get("PYTHONPATH", "")
    full_env.update(env)
    log_path = host.root / "agent.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=full_env, cwd=str(ROOT),
                                start_new_session=True)
        try:
            deadline = time.monotonic() + 60  # it starts in ~2 s on a loaded 2-core machine
            while time.monotonic() < deadline and proc.poll() is None:
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1):
                        break
                except OSError:
                    time.sleep(0.1)
        finally:
            stop_process(proc)
    text = log_path.read_text(errors="replace")
    assert proc.returncode == 0, text
    return text


def test_agent_as_this_user_writes_under_home_and_logs_it(tmp_path):
    host = build_default_host(tmp_path / "host")
    home = tmp_path / "home"
    home.mkdir()
    before = _tree(SYSTEM_DIR)
    text = _run_agent(host, {"HOME": str(home)}, [])
    expected = home / ".local" / "state" / "ssdfleet"
    print(f"euid {os.geteuid()}: {[line for line in text.splitlines() if 'state directory' in line]}")
    assert f"state directory {expected} (the user's state directory" in text, text
    assert (expected / "history.sqlite").is_file()
    assert _tree(SYSTEM_DIR) == before, f"{SYSTEM_DIR} changed"


def test_agent_under_systemd_uses_state_directory(tmp_path):
    host = build_default_host(tmp_path / "host")
    state = tmp_path / "systemd-state"
    state.mkdir()
    home = tmp_path / "home"
    text = _run_agent(host, {"STATE_DIRECTORY": str(state), "HOME": str(home)}, [])
    assert f"state directory {state} (systemd's $STATE_DIRECTORY" in text, text
    assert (state / "history.sqlite").is_file() and not home.exists()


def test_agent_given_state_dir_uses_it(tmp_path):
    host = build_default_host(tmp_path / "host")
    given = tmp_path / "given"
    text = _run_agent(host, {"STATE_DIRECTORY": str(tmp_path / "other"), "HOME": str(tmp_path / "home")},
                      ["--state-dir", str(given)])
    assert f"state directory {given} (from --state-dir or state_dir)" in text, text
    assert (given / "history.sqlite").is_file()
    assert not (tmp_path / "other").exists() and not (tmp_path / "home").exists()


def test_agent_with_no_history_says_so(tmp_path):
    host = build_default_host(tmp_path / "host")
    home = tmp_path / "home"
    text = _run_agent(host, {"HOME": str(home)}, ["--no-history"])
    assert "history kept in memory only" in text, text
    assert not home.exists()


def test_readme_first_command_names_no_system_directory():
    """The README's first command, as root, writes under root's home: the README says so."""
    readme = (ROOT / "README.md").read_text()
    first = readme.split("```sh", 1)[1].split("```", 1)[0]
    assert "ssdfleet agent" in first and SYSTEM_DIR not in first
    assert "~/.local/state/ssdfleet" in readme.split("---", 1)[0]
    assert Path(SYSTEM_DIR).as_posix() in (ROOT / "deploy" / "systemd" / "ssdfleet-agent.service").read_text()
