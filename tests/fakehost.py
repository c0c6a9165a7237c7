"""A fake database host for end-to-end tests: fake tool executables, a sysfs tree and a procfs.

The tools are small shell scripts that replay captured output chosen by their arguments, found
through the same configurable tool paths a user would set. Each response lives in a file the
test may rewrite between polls (``set_response``), so a write cache can be switched off or a
tool can start printing garbage while the agent runs. Every invocation is logged to
``calls.log`` so tests can check the arguments the agent built.
"""

from __future__ import annotations

import os
import shutil
import socket
import stat
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Dict, List, Optional, Union

from tests.conftest import fixture_path

ROOT = Path(__file__).resolve().parent.parent

# The response key is chosen from the arguments: --version, --scan*, "-a" alone, or the
# last argument's basename (the device).
_SCRIPT = """#!/bin/sh
# fake {name}: replays captured output from {responses}
R="{responses}"
printf '%s\\n' "{name} $*" >> "{log}"
key=""
for a in "$@"; do
  case "$a" in
    --version|-V) key=version ;;
    --scan|--scan-open) key=scan ;;
  esac
done
if [ -z "$key" ]; then
  if [ "$*" = "-a" ]; then key=all; else
    for a in "$@"; do last="$a"; done
    key=$(basename -- "$last")
  fi
fi
if [ -f "$R/$key.sleep" ]; then sleep "$(cat "$R/$key.sleep")"; fi
if [ ! -f "$R/$key.out" ]; then echo "fake {name}: no response for: $*" >&2; exit 2; fi
cat "$R/$key.out"
if [ -f "$R/$key.rc" ]; then exit "$(cat "$R/$key.rc")"; fi
exit 0
"""


class FakeHost:
    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.bin = self.root / "bin"
        self.sys = self.root / "sys"
        self.proc = self.root / "proc"
        self.state = self.root / "state"
        self.calls_log = self.root / "calls.log"
        for d in (self.bin, self.sys / "block", self.proc, self.state):
            d.mkdir(parents=True, exist_ok=True)
        self.calls_log.touch()

    # -- tools -------------------------------------------------------------------------
    def tool(self, name: str) -> Path:
        """Create (once) the fake executable ``name`` and return its path."""
        path = self.bin / name
        responses = self.root / "responses" / name
        responses.mkdir(parents=True, exist_ok=True)
        if not path.exists():
            path.write_text(_SCRIPT.format(name=name, responses=responses, log=self.calls_log))
            path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        return path

    def set_response(
        self,
        tool: str,
        key: str,
        output: Union[str, bytes, Path],
        exit_code: int = 0,
        sleep: Optional[float] = None,
    ) -> None:
        self.tool(tool)
        responses = self.root / "responses" / tool
        data = output.read_bytes() if isinstance(output, Path) else output
        if isinstance(data, str):
            data = data.encode()
        tmp = responses / f".{key}.tmp"
        tmp.write_bytes(data)
        os.replace(tmp, responses / f"{key}.out")  # atomic: a running poll never sees half
        (responses / f"{key}.rc").write_text(str(exit_code))
        sleep_file = responses / f"{key}.sleep"
        if sleep is None:
            sleep_file.unlink(missing_ok=True)
        else:
            sleep_file.write_text(str(sleep))

    def remove_tool(self, name: str) -> None:
        (self.bin / name).unlink(missing_ok=True)

    def calls(self) -> List[str]:
        return self.calls_log.read_text().splitlines()

    # -- sysfs / procfs ----------------------------------------------------------------
    def block_device(self, name: str, size_sectors: int, rotational: int = 0,
                     write_cache: Optional[str] = "write back", model: Optional[str] = None,
                     serial: Optional[str] = None) -> None:
        d = self.sys / "block" / name
        (d / "queue").mkdir(parents=True, exist_ok=True)
        (d / "device").mkdir(exist_ok=True)
        (d / "size").write_text(f"{size_sectors}\n")
        (d / "queue" / "rotational").write_text(f"{rotational}\n")
        if write_cache is not None:
            (d / "queue" / "write_cache").write_text(write_cache + "\n")
        if model:
            (d / "device" / "model").write_text(model + "\n")
        if serial:
            (d / "device" / "serial").write_text(serial + "\n")

    def set_write_cache(self, name: str, value: str) -> None:
        (self.sys / "block" / name / "queue" / "write_cache").write_text(value + "\n")

    def diskstats(self, text: str) -> None:
        (self.proc / "diskstats").write_text(text)

    def config(self, **extra):
        """An agent Config pointed at this host's tools and trees (no history unless asked)."""
        from agent.config import load_config

        overrides = {"tools": {"smartctl": str(self.bin / "smartctl"),
                               "shannon_status": str(self.bin / "shannon-status"),
                               "hdparm": str(self.bin / "hdparm"), "nvme": str(self.bin / "nvme")},
                     "paths": {"sysfs": str(self.sys), "procfs": str(self.proc)}, "history": False}
        overrides.update(extra)
        return load_config(None, overrides)

    def config_args(self) -> List[str]:
        return [
            "--smartctl", str(self.bin / "smartctl"),
            "--shannon-status", str(self.bin / "shannon-status"),
            "--hdparm", str(self.bin / "hdparm"),
            "--nvme", str(self.bin / "nvme"),
            "--path.sysfs", str(self.sys),
            "--path.procfs", str(self.proc),
            "--state-dir", str(self.state),
        ]


# The default fake host: a Samsung 860 EVO on sda, two NVMe drives (one with media errors)
# and a Shannon Direct-IO card, as `smartctl --scan-open` and `shannon-status -a` list them.
DISKSTATS = (
    "   8       0 sda 120 10 9000 50 400 20 64000 300 0 280 350 0 0 0 0 4 2\n"
    "   8       1 sda1 100 10 8000 40 390 20 63000 290 0 270 330 0 0 0 0 0 0\n"
    " 259       0 nvme0n1 5000 0 400000 900 8000 0 1280000 1500 1 2100 2400 0 0 0 0 0 0\n"
    " 259       1 nvme1n1 10 0 80 1 20 0 160 2 0 3 3 0 0 0 0 0 0\n"
    " 252       0 dfa 700 0 56000 70 90000 0 14400000 4000 2 3900 4070 0 0 0 0 0 0\n"
    "   7       0 loop0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
)


def build_default_host(root: Path) -> FakeHost:
    host = FakeHost(root)
    fx = "fakehost/"
    host.set_response("smartctl", "version", fixture_path(fx + "smartctl-version.txt"))
    host.set_response("smartctl", "scan", fixture_path(fx + "telegraf__testcases_scan_all.json"))
    host.set_response("smartctl", "sda", fixture_path(fx + "scrutiny__smart-ata-full.json"))
    host.set_response("smartctl", "nvme0", fixture_path(fx + "scrutiny__smart-nvme.json"))
    host.set_response("smartctl", "nvme1", fixture_path(fx + "scrutiny__smart-nvme-failed.json"))
    host.set_response("shannon-status", "all", fixture_path(fx + "seed000__status-a_9h.txt"))
    host.set_response("shannon-status", "scta", fixture_path(fx + "seed000__status-p_scta_9h.txt"))
    host.set_response("hdparm", "sda", fixture_path(fx + "hdparm-W-sda-on.txt"))
    host.block_device("sda", 976773168, model="Samsung SSD 860 EVO 500GB")
    host.block_device("nvme0n1", 2000409264)
    host.block_device("nvme1n1", 976773168)
    host.block_device("dfa", 2343750000)
    host.block_device("loop0", 0)
    host.diskstats(DISKSTATS)
    return host


# -- running the real agent ------------------------------------------------------------

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class AgentProcess:
    """``ssdfleet agent`` as a real child process on 127.0.0.1."""

    def __init__(self, host: FakeHost, extra_args: Optional[List[str]] = None,
                 env: Optional[Dict[str, str]] = None) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = host.root / "agent.log"
        args = [sys.executable, "-m", "agent", "agent", "--listen-address", f"127.0.0.1:{self.port}"]
        args += host.config_args() + (extra_args or [])
        full_env = dict(os.environ)
        full_env["PYTHONPATH"] = str(ROOT) + os.pathsep + full_env.get("PYTHONPATH", "")
        full_env.update(env or {})
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(args, stdout=self._log, stderr=subprocess.STDOUT, env=full_env,
                                     cwd=str(ROOT), start_new_session=True)

    def wait_ready(self, timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"agent exited with {self.proc.returncode}:\n{self.log()}")
            try:
                with urllib.request.urlopen(self.url + "/healthz", timeout=1) as r:
                    if r.status == 200:
                        return
            except OSError:
                time.sleep(0.1)
        raise TimeoutError(f"agent not ready after {timeout}s:\n{self.log()}")

    def get(self, path: str, timeout: float = 5.0) -> bytes:
        with urllib.request.urlopen(self.url + path, timeout=timeout) as r:
            return r.read()

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def stop(self) -> None:
        stop_process(self.proc)
        self._log.close()


def stop_process(proc: subprocess.Popen) -> None:
    """SIGTERM, ten seconds for a clean exit, then SIGKILL."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


def history_rows(path: Path) -> Dict[str, int]:
    """{serial: samples} in an agent's history file, read as it is on disk."""
    import sqlite3

    conn = sqlite3.connect(str(path))
    try:
        return dict(conn.execute("SELECT serial, COUNT(*) FROM samples GROUP BY serial").fetchall())
    finally:
        conn.close()


def promtool() -> Optional[str]:
    return shutil.which("promtool")
