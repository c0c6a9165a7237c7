"""The probe helper as a child process on a UNIX socket, with a fake /dev.

Moved out of test_privhelper.py, issue 27: test modules import helpers from tests/support/
only).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import List, Optional

import yaml

from tests.fakehost import ROOT, FakeHost

DEVICES = ("sda", "nvme0", "nvme1", "scta")


def fake_dev_root(host: FakeHost, names=DEVICES) -> Path:
    dev = host.root / "dev"
    dev.mkdir(exist_ok=True)
    for name in names:
        link = dev / name
        if not link.exists():
            link.symlink_to("/dev/null")
    return dev


class HelperProcess:
    """``ssdfleet probe-helper`` as a child process listening on ``socket_path``."""

    def __init__(self, host: FakeHost, socket_path: str, extra: Optional[List[str]] = None,
                 config: Optional[dict] = None, wait: bool = True) -> None:
        self.socket_path = socket_path
        self.log_path = host.root / f"helper-{os.getpid()}-{time.monotonic_ns()}.log"
        cfg = {"paths": {"dev": str(fake_dev_root(host))}}
        cfg.update(config or {})
        cfg_path = host.root / f"helper-{time.monotonic_ns()}.yml"
        cfg_path.write_text(yaml.safe_dump(cfg))
        args = [sys.executable, "-m", "agent", "probe-helper", "--config", str(cfg_path),
                "--socket", socket_path, "--log-level", "DEBUG"] + host.config_args() + (extra or [])
        env = dict(os.environ)
        env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(args, stdout=self._log, stderr=subprocess.STDOUT, env=env,
                                     cwd=str(ROOT), start_new_session=True)
        if wait:
            self.wait_ready()

    def wait_ready(self, timeout: float = 15.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"helper exited with {self.proc.returncode}:\n{self.log()}")
            try:
                with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                    s.connect(self.socket_path)
                return
            except OSError:
                time.sleep(0.05)
        raise TimeoutError(f"helper not listening after {timeout}s:\n{self.log()}")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        self._log.close()
        return self.proc.returncode
