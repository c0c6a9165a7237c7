"""Run a device tool with hard bounds on time and output.

A monitoring agent on a database host must never hang behind a stuck ``smartctl``. Every
tool runs in its own process group with ``LC_ALL=C`` and no stdin; its output is read with a
deadline and a size cap. On timeout the group gets SIGTERM, then after a grace period SIGKILL,
and then we *stop waiting*: a process in uninterruptible sleep (D state) cannot be reaped on
time, so it is handed to a background reaper and reported as stuck. ``subprocess.run(timeout=)``
is not used on purpose: after its timeout it kills and then waits without bound.

No process a tool started outlives it (issue 26). A tool's child left in the tool's process
group when the tool exits (``smartctl`` wrappers, vendor scripts that start a helper and
forget it) is killed with the group: the runner waits for the tool's exit *without reaping
it* (``waitid(WNOWAIT)``), so the group id cannot be reused while it sends SIGKILL to the
group, and only then reaps the tool. A descendant that left the group (``setsid``, a
daemonising vendor tool) cannot be reached that way: :func:`enable_subreaper` makes the agent a
child subreaper (Linux ``PR_SET_CHILD_SUBREAPER``), so such a process is reparented to the
agent when its parent exits, and :data:`ORPHANS` kills and reaps every child of the agent that
is not a tool the runner started. Both are counted (``ssd_tool_leftover_processes_killed_total``)
and logged once per tool an hour.

Arguments are always a list; nothing here goes through a shell.
"""

from __future__ import annotations

import ctypes
import errno
import logging
import os
import selectors
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Set, Tuple

log = logging.getLogger("ssdfleet.runner")

# The one bound of a tool call (issue 27): the configuration's ``tool_timeout_seconds`` defaults
# to it, and the agent applies the configured value to every call a source makes through
# :func:`bounded`. No probe or source keeps a timeout of its own.
DEFAULT_TIMEOUT = 30.0
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
        while time.monotonic() < deadline and not all(_exited(p) for p in procs):
            time.sleep(0.05)
        for proc in procs:
            # Even when the tool itself has exited: what is left of its group goes too. The
            # tool is not reaped here (run_tool's thread does that), so its group id is still
            # its own.
            _killpg(proc.pid, signal.SIGKILL)
        return len(procs)


LIVE = _Live()


@dataclass(frozen=True)
class Bounds:
    """How long a tool may run, how long it has to die after SIGTERM, how much it may print."""

    timeout: float = DEFAULT_TIMEOUT
    grace: float = DEFAULT_GRACE
    max_output: int = DEFAULT_MAX_OUTPUT


def bounded(runner: Callable[..., ToolResult], bounds: Callable[[], Bounds]) -> Callable[..., ToolResult]:
    """``runner`` (:func:`run_tool`, the probe helper's client, a test's runner) with the
    agent's bounds on every call. ``bounds`` is read at each call, so a reloaded configuration
    applies to the next call. A bound the caller passes is replaced, not honoured: the
    configuration is the one place a tool's time limit is set."""

    def run(argv: Sequence[str], **kwargs: Any) -> ToolResult:
        limits = bounds()
        kwargs.update(timeout=limits.timeout, grace=limits.grace, max_output=limits.max_output)
        return runner(argv, **kwargs)

    return run


def _killpg(pgid: int, sig: int) -> bool:
    """Signal a process group; False when no process of it was there to signal."""
    try:
        os.killpg(pgid, sig)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def _exited(proc: subprocess.Popen) -> bool:
    """Whether the tool has exited, without reaping it: while it is an unreaped zombie its pid,
    and so its process group id, cannot be given to another process."""
    if proc.returncode is not None:
        return True
    if not hasattr(os, "waitid"):  # pragma: no cover - not on Linux
        return proc.poll() is not None
    try:
        return os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:  # reaped already (Popen.poll elsewhere)
        return True


def _wait_exited(proc: subprocess.Popen, timeout: float) -> bool:
    """Wait up to ``timeout`` for the tool to exit, without reaping it (see :func:`_exited`)."""
    deadline = time.monotonic() + timeout
    pause = 0.001
    while not _exited(proc):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        time.sleep(min(pause, remaining))
        pause = min(pause * 2, 0.05)
    return True


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
    # Output closed: the tool normally exits right away; still bound the wait.
    if not (timed_out or truncated) and not _wait_exited(proc, max(0.1, deadline - time.monotonic())):
        timed_out = True
    if timed_out or truncated:
        exit_code, stuck = _stop(proc, grace)
    else:
        exit_code = _reap(proc)
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


def _stop(proc: subprocess.Popen, grace: float) -> Tuple[Optional[int], bool]:
    """SIGTERM the group, wait ``grace``, SIGKILL the group (the tool if it ignored SIGTERM,
    and whatever it left), wait a moment, then give up waiting."""
    _killpg(proc.pid, signal.SIGTERM)
    if _wait_exited(proc, grace):
        return _reap(proc, count=False), False
    _killpg(proc.pid, signal.SIGKILL)
    if _wait_exited(proc, 1.0):
        return _reap(proc, count=False), False
    log.warning("process %s (%s) survived SIGKILL; leaving it to the reaper", proc.pid, proc.args[0])
    REAPER.adopt(proc)
    return None, True


def _reap(proc: subprocess.Popen, count: bool = True) -> Optional[int]:
    """The tool has exited: kill what is left of its process group, then reap it.

    SIGKILL goes to the group before the tool is reaped, while its zombie still holds the
    group id. With ``count`` (the tool exited by itself, not by our signal), the live members
    are counted and logged first: as the agent is a subreaper, the children the tool left
    were reparented to it when it exited, so they are among its own children (their own
    children die with the group but are not counted: the count is a lower bound)."""
    left = ORPHANS.group_members(proc.pid) if count and ORPHANS.enabled else []
    _killpg(proc.pid, signal.SIGKILL)
    code = proc.wait()
    if left:
        LEFTOVERS.note_group(str(proc.args[0]), proc.pid, left)
    return code


class _Leftovers:
    """Processes a tool left behind and the runner killed, for
    ``ssd_tool_leftover_processes_killed_total{how}`` and one log line per tool an hour."""

    LOG_EVERY = 3600.0

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.killed: Dict[str, int] = {"group": 0, "adopted": 0}
        self._logged: Dict[str, float] = {}

    def counts(self) -> Tuple[Tuple[str, int], ...]:
        with self._lock:
            return tuple(sorted(self.killed.items()))

    def _count(self, how: str, n: int, key: str) -> bool:
        """Add ``n``; True when ``key`` was not logged within the hour."""
        now = time.monotonic()
        with self._lock:
            self.killed[how] += n
            if now - self._logged.get(key, -self.LOG_EVERY) < self.LOG_EVERY:
                return False
            self._logged[key] = now
            return True

    def note_group(self, tool: str, pgid: int, members: Sequence[Tuple[int, str]]) -> None:
        if self._count("group", len(members), tool):
            log.warning("%s (pid %d) exited and left %s of its process group running (%s); killed "
                        "(logged once an hour per tool)", tool, pgid, _plural(len(members)),
                        ", ".join(f"{name} {pid}" for pid, name in members))

    def note_adopted(self, killed: Sequence[Tuple[int, str]]) -> None:
        if killed and self._count("adopted", len(killed), "adopted"):
            log.warning("killed %s that a device tool left outside its process group (the agent "
                        "adopted them as subreaper): %s (logged once an hour)", _plural(len(killed)),
                        ", ".join(f"{name} {pid}" for pid, name in killed))


def _plural(n: int) -> str:
    return f"{n} process{'es' if n != 1 else ''}"


LEFTOVERS = _Leftovers()

PR_SET_CHILD_SUBREAPER = 36  # linux/prctl.h


def enable_subreaper() -> bool:
    """Make this process a child subreaper (Linux 3.4+): a descendant whose parent exits is
    reparented to us instead of to init, so a daemon a tool started with ``setsid`` is ours to
    kill and reap (:data:`ORPHANS`). Returns False, and changes nothing, elsewhere."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0:
            ORPHANS.enabled = True
            return True
        log.warning("cannot become a child subreaper (%s); daemons that tools start may outlive them",
                    os.strerror(ctypes.get_errno()))
    except (OSError, AttributeError) as exc:
        log.warning("cannot become a child subreaper (%s)", exc)
    return False


def _proc_stat(pid: int) -> Optional[Tuple[str, str, int, int]]:
    """(name, state, process group, start time) from /proc/PID/stat, None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    head, _, rest = data.rpartition(b")")
    fields = rest.split()
    try:
        name = head.partition(b"(")[2].decode("utf-8", "replace")
        return name, fields[0].decode(), int(fields[2]), int(fields[19])
    except (IndexError, ValueError):
        return None


class _Orphans:
    """Kills and reaps the children of the agent that are not tools the runner started.

    With the agent a subreaper (:func:`enable_subreaper`), those are processes a tool left
    outside its process group, reparented to the agent when their parent exited. A child the
    runner does not know is killed only when it was already unknown at the previous sweep, a
    second or more earlier: a tool is registered right after its fork, so one that is being
    started now is never mistaken for an orphan. :meth:`sweep` with ``final`` (the agent's
    stop) kills every unknown child at once and waits for them."""

    def __init__(self, period: float = 1.0) -> None:
        self.period = period
        self.enabled = False  # set by enable_subreaper: only then are orphans our children
        self._suspects: Set[Tuple[int, int]] = set()  # (pid, start time) unknown at the last sweep
        self._lock = threading.Lock()
        self._thread: Optional[threading.Thread] = None
        self._stop = threading.Event()

    @staticmethod
    def children() -> Set[int]:
        """This process's children: /proc/self/task/*/children (each thread's own), or a scan
        of /proc where the kernel lacks those files."""
        pids: Set[int] = set()
        try:
            tasks = os.listdir("/proc/self/task")
        except OSError:
            return pids
        for tid in tasks:
            try:
                with open(f"/proc/self/task/{tid}/children", "rb") as fh:
                    pids.update(int(p) for p in fh.read().split())
            except FileNotFoundError:
                if not os.path.exists(f"/proc/self/task/{tid}"):
                    continue  # the thread ended
                return _children_by_scan()
            except (OSError, ValueError):
                continue
        return pids

    def group_members(self, pgid: int) -> List[Tuple[int, str]]:
        """(pid, name) of this process's live children in process group ``pgid``."""
        out = []
        for pid in sorted(self.children() - set(LIVE.pids())):
            stat = _proc_stat(pid)
            if stat is not None and stat[2] == pgid and stat[1] not in ("Z", "X"):
                out.append((pid, stat[0]))
        return out

    def sweep(self, final: bool = False) -> int:
        """Kill unknown children seen at two sweeps (all of them when ``final``) and reap the
        dead ones. Returns how many were killed."""
        with self._lock:
            known = set(LIVE.pids()) | set(REAPER.pending())
            suspects: Set[Tuple[int, int]] = set()
            killed: List[Tuple[int, str]] = []
            for pid in sorted(self.children() - known):
                stat = _proc_stat(pid)
                if stat is None:
                    continue
                name, state, pgid, started = stat
                if not final and (pid, started) not in self._suspects:
                    suspects.add((pid, started))
                    continue
                if state not in ("Z", "X"):
                    _kill(pid, signal.SIGKILL)
                    if pgid == pid:
                        _killpg(pid, signal.SIGKILL)  # its own group, while it still holds the id
                    killed.append((pid, name))
                _reap_pid(pid)
            self._suspects = suspects
        LEFTOVERS.note_adopted(killed)
        return len(killed)

    def sweep_all(self, timeout: float = 2.0) -> int:
        """At the agent's stop: kill every unknown child, and their children as they are
        reparented, until none is left or ``timeout`` runs out."""
        deadline = time.monotonic() + timeout
        killed = self.sweep(final=True)
        while time.monotonic() < deadline:
            if not (self.children() - set(REAPER.pending())):
                break
            time.sleep(0.05)
            killed += self.sweep(final=True)
        return killed

    def start(self) -> None:
        """Sweep every :attr:`period` seconds in a daemon thread (once per process)."""
        if self._thread is not None:
            return
        self._thread = threading.Thread(target=self._loop, name="orphan-sweeper", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def _loop(self) -> None:
        while not self._stop.wait(self.period):
            try:
                self.sweep()
            except Exception:  # never let the sweeper die silently; it runs again
                log.exception("orphan sweep failed")


def _children_by_scan() -> Set[int]:
    me = os.getpid()
    out: Set[int] = set()
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                fields = fh.read().rpartition(b")")[2].split()
            if int(fields[1]) == me:
                out.add(int(name))
        except (OSError, IndexError, ValueError):
            continue
    return out


def _kill(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _reap_pid(pid: int) -> None:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


ORPHANS = _Orphans()
