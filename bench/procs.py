"""Starting and stopping what a benchmark runs: one set of helpers for every script under bench/."""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Iterator, List, Optional


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(cmd: List[str], log: Path, ready: str, timeout: float = 120) -> subprocess.Popen:
    """``cmd`` in a session of its own, its output in ``log``, once ``ready`` (a URL) answers 200;
    raises with the log's tail if it exits first, or if ``timeout`` seconds pass (it is stopped)."""
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(log.read_text(errors="replace")[-2000:])
        try:
            with urllib.request.urlopen(ready, timeout=5) as resp:
                if resp.status == 200:
                    return proc
        except OSError:
            pass
        time.sleep(0.5)
    stop(proc)
    raise RuntimeError(f"not ready in {timeout:g} s: {cmd[0]}")


def stop(proc: Optional[subprocess.Popen], grace: float = 30.0) -> None:
    """SIGTERM, up to ``grace`` seconds for the process to exit, then SIGKILL; nothing when it has
    already exited (or was never started)."""
    if proc is None or proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


def need_tools(*tools: str) -> None:
    """Exit with a message naming the first of ``tools`` that is not on PATH."""
    for tool in tools:
        if shutil.which(tool) is None:
            sys.exit(f"{tool} is not installed")


@contextlib.contextmanager
def work_directory(path: Optional[str], prefix: str) -> Iterator[Path]:
    """``path`` (created if need be, and kept), or a new temporary directory named with
    ``prefix`` that is removed on the way out."""
    if path is not None:
        chosen = Path(path)
        chosen.mkdir(parents=True, exist_ok=True)
        yield chosen
        return
    made = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield made
    finally:
        shutil.rmtree(made, ignore_errors=True)
