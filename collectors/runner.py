"""Run a device tool with hard bounds on time and output.

A monitoring agent on a database host must never hang behind a stuck ``smartctl``. Every
tool runs in its own process group with ``LC_ALL=C`` and no stdin; its output is read with a
deadline and a size cap. On timeout the group gets SIGTERM, then after a grace period SIGKILL,
and then we *stop waiting*: a process in uninterruptible sleep (D state) cannot be reaped on
time, so it is handed to a background reaper and reported as stuck. ``subprocess.run(timeout=)``
is not used on purpose: after its timeout it kills and then waits without bound.

Arguments are always a list; nothing here goes through a shell.
"""

from __future__ import annotations

import errno
import logging
import os
import selectors
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence

log = logging.getLogger("ssdfleet.runner")

DEFAULT_TIMEOUT = 20.0
DEFAULT_GRACE = 2.0
DEFAULT_MAX_OUTPUT = 8 * 1024 * 1024


@dataclass(frozen=True)
class ToolResult:
    argv: tuple
    exit_code: Optional[int]  # None when the tool did not finish (timeout, stuck, not started)
    stdout: bytes
    stderr: bytes
    duration_seconds: float
    timed_out: bool = False
    stuck: bool = False  # did not die after SIGKILL; left to the reaper
    truncated: bool = False  # output exceeded the cap; the tool was stopped
    error: Optional[str] = None  # could not start: missing, not executable, no permission
    pid: Optional[int] = None  # process group id, to follow a stuck child in the reaper
    # The probe helper did not run the command: the device's last probe there is stuck.
    quarantined: bool = False

    @property
    def ok_to_parse(self) -> bool:
        return self.error is None and not self.timed_out and not self.truncated

    def describe(self) -> str:
        if self.error:
            return self.error
        if self.stuck:
            return f"timed out after {self.duration_seconds:.1f}s and did not die (stuck)"
        if self.timed_out:
            return f"timed out after {self.duration_seconds:.1f}s"
        if self.truncated:
            return "output exceeded the size cap"
        return f"exit status {self.exit_code}"


class _Reaper:
    """Waits in the background for children that outlived SIGKILL."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: Dict[int, subprocess.Popen] = {}

    def adopt(self, proc: subprocess.Popen) -> None:
        with self._lock:
            self._pending[proc.pid] = proc
        t = threading.Thread(target=self._wait, args=(proc,), name=f"reap-{proc.pid}", daemon=True)
        t.start()

    def _wait(self, proc: subprocess.Popen) -> None:
        while True:
            try:
                proc.wait(timeout=5)
                break
            except subprocess.TimeoutExpired:
                _killpg(proc.pid, signal.SIGKILL)
        with self._lock:
            self._pending.pop(proc.pid, None)

    def pending(self) -> List[int]:
        with self._lock:
            return list(self._pending)


REAPER = _Reaper()


class _Live:
    """Process groups of tools running now, so a stopping agent can end them all (SIGTERM to
    the agent must not orphan a smartctl in flight), and a gate that refuses new ones once
    the agent is stopping."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._groups: Dict[int, subprocess.Popen] = {}
        self.stopping = threading.Event()

    def add(self, proc: subprocess.Popen) -> None:
        with self._lock:
            self._groups[proc.pid] = proc

    def discard(self, proc: subprocess.Popen) -> None:
        with self._lock:
            self._groups.pop(proc.pid, None)

    def pids(self) -> List[int]:
        with self._lock:
            return list(self._groups)

    def terminate_all(self, grace: float) -> int:
        """SIGTERM every live group, SIGKILL what is left after ``grace``. Returns how many
        groups were signalled. Never waits for a process that will not die: the run_tool call
        that owns it reaps it or hands it to the reaper. Setting :attr:`stopping` first (the
        agent's shutdown does) makes run_tool refuse to start new tools."""
        with self._lock:
            procs = list(self._groups.values())
        for proc in procs:
            _killpg(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and any(p.poll() is None for p in procs):
            time.sleep(0.05)
        for proc in procs:
            if proc.poll() is None:
                _killpg(proc.pid, signal.SIGKILL)
        return len(procs)


LIVE = _Live()


def _killpg(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def tool_env(extra: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin"),
        "LC_ALL": "C",
        "LANG": "C",
    }
    if extra:
        env.update(extra)
    return env


def run_tool(
    argv: Sequence[str],
    timeout: float = DEFAULT_TIMEOUT,
    grace: float = DEFAULT_GRACE,
    max_output: int = DEFAULT_MAX_OUTPUT,
    env: Optional[Dict[str, str]] = None,
) -> ToolResult:
    """Run ``argv`` and return what it printed, never raising for the tool's faults."""
    argv = tuple(str(a) for a in argv)
    start = time.monotonic()
    if LIVE.stopping.is_set():
        return ToolResult(argv, None, b"", b"", 0.0, error=f"{argv[0]}: not started, the agent is stopping")
    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,  # own process group, so the whole tree can be signalled
            close_fds=True,
            env=env if env is not None else tool_env(),
        )
    except FileNotFoundError:
        return ToolResult(argv, None, b"", b"", 0.0, error=f"{argv[0]}: not found")
    except PermissionError:
        return ToolResult(argv, None, b"", b"", 0.0, error=f"{argv[0]}: permission denied")
    except OSError as exc:
        reason = errno.errorcode.get(exc.errno or 0, str(exc))
        return ToolResult(argv, None, b"", b"", 0.0, error=f"{argv[0]}: cannot run ({reason})")
    LIVE.add(proc)
    try:
        return _collect(proc, argv, start, timeout, grace, max_output)
    finally:
        LIVE.discard(proc)


def _collect(proc: subprocess.Popen, argv: tuple, start: float, timeout: float, grace: float,
             max_output: int) -> ToolResult:
    out = bytearray()
    err = bytearray()
    truncated = False
    timed_out = False
    deadline = start + timeout
    sel = selectors.DefaultSelector()
    assert proc.stdout is not None and proc.stderr is not None
    sel.register(proc.stdout, selectors.EVENT_READ, out)
    sel.register(proc.stderr, selectors.EVENT_READ, err)
    open_streams = 2
    try:
        while open_streams:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                timed_out = True
                break
            for key, _ in sel.select(timeout=min(remaining, 0.5)):
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    sel.unregister(key.fileobj)
                    open_streams -= 1
                    continue
                buf = key.data
                buf.extend(chunk)
                if len(out) + len(err) > max_output:
                    truncated = True
                    break
            if truncated:
                break
    finally:
        sel.close()

    exit_code: Optional[int] = None
    stuck = False
    if timed_out or truncated:
        exit_code, stuck = _stop(proc, grace)
    else:
        # Output closed: the tool normally exits right away; still bound the wait.
        try:
            exit_code = proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            timed_out = True
            exit_code, stuck = _stop(proc, grace)
    for stream in (proc.stdout, proc.stderr):
        try:
            stream.close()
        except OSError:
            pass
    duration = time.monotonic() - start
    if timed_out or truncated:
        exit_code = None
    if len(out) > max_output:
        del out[max_output:]
    return ToolResult(
        argv,
        exit_code,
        bytes(out),
        bytes(err[:65536]),
        duration,
        timed_out=timed_out,
        stuck=stuck,
        truncated=truncated,
        pid=proc.pid,
    )


def _stop(proc: subprocess.Popen, grace: float):
    """SIGTERM the group, wait ``grace``, SIGKILL, wait a moment, then give up waiting."""
    _killpg(proc.pid, signal.SIGTERM)
    try:
        return proc.wait(timeout=grace), False
    except subprocess.TimeoutExpired:
        pass
    _killpg(proc.pid, signal.SIGKILL)
    try:
        return proc.wait(timeout=1.0), False
    except subprocess.TimeoutExpired:
        log.warning("process %s (%s) survived SIGKILL; leaving it to the reaper", proc.pid, proc.args[0])
        REAPER.adopt(proc)
        return None, True
