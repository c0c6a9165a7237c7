"""Stopping what a benchmark started: one helper for every script under bench/."""

from __future__ import annotations

import subprocess
from typing import Optional


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
