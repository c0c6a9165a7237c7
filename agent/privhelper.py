"""The privileged probe helper and its client.

The HTTP agent runs as an unprivileged user that cannot open a disk. The few device commands
that need CAP_SYS_RAWIO (ATA/SCSI pass-through) or CAP_SYS_ADMIN (NVMe admin commands, the
Shannon control device) run in this helper instead, reached only through a local UNIX socket
(mode 0660, group of the agent). See docs/security.md, "Least privilege".

Protocol: one request per connection. The client sends one JSON object and shuts down its
writing side; the helper answers with one JSON object and closes::

    -> {"version": 1, "argv": ["smartctl", "--json=c", ..., "-d", "sat", "/dev/sda"],
        "timeout": 30.0, "grace": 2.0, "max_output": 8388608}
    <- {"version": 1, "exit_code": 0, "stdout": "<base64>", "stderr": "<base64>",
        "duration": 0.21, "timed_out": false, "stuck": false, "truncated": false, "error": null}

The helper never executes what it is sent. It reads the request as (tool, operation, device,
device type), checks each part against an allow-list, builds the argv again with its *own*
tool paths through the same builders the probes use (``SmartctlProbe``, ``ShannonProbe``,
``WriteCacheReader``), and runs it only when the rebuilt argv equals the requested one apart
from the tool path. Anything else is refused with an error response and a log line. The
requested ``argv[0]`` only selects the tool (by its file name); it is never run.
"""

from __future__ import annotations

import base64
import binascii
import grp
import json
import logging
import math
import os
import signal
import socket
import stat
import struct
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from agent.config import Config
from collectors import registry
from collectors.runner import DEFAULT_GRACE, DEFAULT_MAX_OUTPUT, DEFAULT_TIMEOUT, REAPER, ToolResult, run_tool
from collectors.source import Command, DeviceFamily, HelperChecks, Refused, SourceSpec

log = logging.getLogger("ssdfleet.privhelper")

PROTOCOL_VERSION = 1
MAX_REQUEST_BYTES = 64 * 1024
# A client that has connected must send its request promptly: a slow or idle client must not
# hold one of the helper's connection slots.
REQUEST_READ_TIMEOUT = 5.0
MAX_ARGS = 32
MAX_ARG_CHARS = 256
MAX_DEVICE_CHARS = 64
SOCKET_MODE = 0o660

# Device nodes the helper will name to a tool, relative to /dev: the families the sources
# declare (SourceSpec.devices, their union in collectors.registry.DEVICE_FAMILIES), each a
# kernel-name pattern matched whole. A source's rule may name only its own spec's families
# (_SourceChecks). The -d values a rule accepts are its source's own check (smartctl's table).

# Tools the helper runs: those of the registered sources that have helper rules, by the name
# the helper knows them by (config key -> name).
_HELPER_TOOLS: Dict[str, str] = {
    key: name for spec in registry.SOURCES if spec.helper for key, (_default, name) in spec.tools.items()
}
TOOL_NAMES = tuple(dict.fromkeys(_HELPER_TOOLS.values()))


class Quarantined(Refused):
    """Refused because the device's last probe is stuck; the answer says so in a field of its
    own (``quarantined``), so the agent keeps reporting the device stuck."""


class Validator(HelperChecks):
    """Turns a requested argv into a :class:`Command` or raises :class:`Refused`: the name
    checks are here; which commands are allowed is each source's own rule (its spec's
    ``helper``), built from the same command builders the source runs."""

    def __init__(self, config: Config) -> None:
        self.dev_root = os.path.abspath(config.paths.dev)
        self.sysfs = config.paths.sysfs
        tools = config.tools.model_dump()
        # config key -> the helper's own path
        self.paths = {key: tools[key] for key in _HELPER_TOOLS}
        # argv[0] selects a tool by file name: the standard name, or the file name of the
        # helper's configured path (a host whose smartctl is /usr/local/sbin/smartctl7).
        self._by_name: Dict[str, str] = {}
        for tool in TOOL_NAMES:
            self._by_name.setdefault(tool, tool)
        for key, path in self.paths.items():
            self._by_name.setdefault(os.path.basename(path), _HELPER_TOOLS[key])
        self._rules = [(spec.helper, _SourceChecks(self, spec)) for spec in registry.SOURCES if spec.helper]

    # -- pieces ---------------------------------------------------------------------------

    def tool_for(self, argv0: str) -> str:
        name = os.path.basename(argv0)
        tool = self._by_name.get(name)
        if tool is None:
            raise Refused(f"unknown tool {name!r}; allowed: {', '.join(TOOL_NAMES)}")
        return tool

    def device(self, requested: str, families: Sequence[DeviceFamily],
               dev_type: Optional[str] = None) -> Tuple[str, str]:
        """Check a device argument; return (prefix, kernel name) where ``prefix + name`` is
        exactly what was requested. The node must exist under the configured dev root as a
        block or character device (symlinks are followed: /dev is root's, and a test points
        the dev root at links to /dev/null)."""
        if len(requested) > MAX_DEVICE_CHARS:
            raise Refused(f"device name longer than {MAX_DEVICE_CHARS} characters")
        prefix = None
        for candidate in ("/dev/", self.dev_root.rstrip("/") + "/"):
            if requested.startswith(candidate):
                prefix = candidate
                break
        if prefix is None:
            raise Refused(f"device {requested!r} is not under /dev")
        name = requested[len(prefix):]
        family = next((f for f in families if f.matches(name)), None)
        if family is None:
            raise Refused(f"device {requested!r} is not an allowed device name for this command")
        if registry.DEVICE_FAMILIES.get(family.name) != family:
            raise Refused(f"internal error: device family {family.name!r} is not one the sources declare")
        if family.with_type and (not dev_type or family.with_type not in dev_type):
            raise Refused(f"{requested} is only valid with -d {family.with_type},N")
        node = family.node or name
        path = os.path.join(self.dev_root, node)
        try:
            st = os.stat(path)
        except OSError as exc:
            raise Refused(f"device {requested!r} does not exist ({path}: {exc.strerror})") from None
        if not (stat.S_ISBLK(st.st_mode) or stat.S_ISCHR(st.st_mode)):
            raise Refused(f"{path} is not a block or character device")
        return prefix, name

    # -- whole requests -------------------------------------------------------------------

    def check(self, argv: Any) -> Command:
        if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
            raise Refused("argv must be a non-empty list of strings")
        if len(argv) > MAX_ARGS or any(len(a) > MAX_ARG_CHARS for a in argv):
            raise Refused("argv too long")
        tool = self.tool_for(argv[0])
        args = argv[1:]
        for rule, checks in self._rules:
            command = rule(checks, tool, args)
            if command is not None:
                return command
        raise Refused(f"no source runs {tool} {' '.join(args)!r}")


class _SourceChecks(HelperChecks):
    """The helper's checks as one source's rule sees them: device names only from the families
    its spec declares (a rule naming another is our bug, refused rather than run)."""

    def __init__(self, validator: Validator, spec: SourceSpec) -> None:
        self._validator = validator
        self._source = spec.name
        self._families = {family.name for family in spec.devices}
        self.paths = validator.paths
        self.sysfs = validator.sysfs

    def device(self, requested: str, families: Sequence[DeviceFamily],
               dev_type: Optional[str] = None) -> Tuple[str, str]:
        undeclared = [f.name for f in families if f.name not in self._families]
        if undeclared:
            raise Refused(f"internal error: source {self._source} names device families it does not declare: "
                          f"{', '.join(undeclared)}")
        return self._validator.device(requested, families, dev_type)


# --------------------------------------------------------------------------- wire format


def _number(request: Dict[str, Any], key: str, default: float) -> float:
    value = request.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise Refused(f"{key} must be a non-negative number")
    try:
        number = float(value)  # an int beyond float range (JSON allows any) overflows here
    except OverflowError:
        raise Refused(f"{key} must be a non-negative number") from None
    if not math.isfinite(number) or number < 0:
        raise Refused(f"{key} must be a non-negative number")
    return number


def _response(result: Optional[ToolResult] = None, error: Optional[str] = None,
              quarantined: bool = False) -> bytes:
    if result is None:
        body: Dict[str, Any] = {
            "version": PROTOCOL_VERSION, "exit_code": None, "stdout": "", "stderr": "",
            "duration": 0.0, "timed_out": False, "stuck": False, "truncated": False, "error": error,
            "quarantined": quarantined,
        }
    else:
        body = {
            "version": PROTOCOL_VERSION,
            "exit_code": result.exit_code,
            "stdout": base64.b64encode(result.stdout).decode("ascii"),
            "stderr": base64.b64encode(result.stderr).decode("ascii"),
            "duration": result.duration_seconds,
            "timed_out": result.timed_out,
            "stuck": result.stuck,
            "truncated": result.truncated,
            "error": result.error,
        }
    return json.dumps(body).encode("utf-8")


def _peer(conn: socket.socket) -> str:
    try:
        pid, uid, gid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
    except (OSError, struct.error, AttributeError):
        return "unknown peer"
    return f"uid {uid} pid {pid}"


# --------------------------------------------------------------------------- server


class ProbeHelper:
    """Checks and runs requests; one instance per helper process."""

    def __init__(self, config: Config, runner: Callable[..., ToolResult] = run_tool) -> None:
        self.config = config
        self.validator = Validator(config)
        self.runner = runner
        self._slots = threading.BoundedSemaphore(config.max_concurrent_probes)
        self._lock = threading.Lock()
        self._busy: Dict[str, float] = {}  # device -> start (one probe per device)
        self._stuck: Dict[str, int] = {}  # device -> pid of a probe that outlived SIGKILL

    def handle(self, raw: bytes, peer: str = "unknown peer") -> bytes:
        try:
            try:
                request = json.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, ValueError, RecursionError):
                raise Refused("request is not JSON") from None
            if not isinstance(request, dict):
                raise Refused("request must be a JSON object")
            if request.get("version", PROTOCOL_VERSION) != PROTOCOL_VERSION:
                raise Refused(f"protocol version {request.get('version')!r} not supported")
            command = self.validator.check(request.get("argv"))
            cfg = self.config
            # The helper's own limits win over what the client asks for.
            timeout = min(_number(request, "timeout", DEFAULT_TIMEOUT) or cfg.tool_timeout_seconds,
                          cfg.tool_timeout_seconds)
            grace = min(_number(request, "grace", DEFAULT_GRACE), cfg.tool_kill_grace_seconds)
            max_output = int(min(_number(request, "max_output", DEFAULT_MAX_OUTPUT) or 1,
                                 cfg.tool_max_output_bytes))
            result = self._run(command, timeout, grace, max(1, max_output))
        except Refused as exc:
            log.warning("refused request from %s: %s", peer, exc)
            return _response(error=f"probe helper refused: {exc}", quarantined=isinstance(exc, Quarantined))
        if result.stuck:
            log.error("%s: %s did not die after SIGKILL; refusing probes on it until it exits",
                      command.device or command.tool, command.argv[0])
        log.debug("ran %s for %s: %s", " ".join(command.argv), peer, result.describe())
        return _response(result)

    def _run(self, command: Command, timeout: float, grace: float, max_output: int) -> ToolResult:
        device = command.device
        if device is not None:
            with self._lock:
                pid = self._stuck.get(device)
                if pid is not None and pid in REAPER.pending():
                    raise Quarantined(f"{device} is quarantined: a probe on it (pid {pid}) is stuck")
                self._stuck.pop(device, None)
                if device in self._busy:
                    raise Refused(f"a probe is already running on {device}")
                self._busy[device] = time.monotonic()
        try:
            if not self._slots.acquire(timeout=timeout):
                raise Refused(f"busy: {self.config.max_concurrent_probes} probes already running")
            try:
                result = self.runner(list(command.argv), timeout=timeout, grace=grace, max_output=max_output)
            finally:
                self._slots.release()
        finally:
            if device is not None:
                with self._lock:
                    self._busy.pop(device, None)
        if result.stuck and device is not None:
            with self._lock:
                self._stuck[device] = result.pid or -1
        return result


def _read_request(conn: socket.socket, timeout: float = REQUEST_READ_TIMEOUT) -> bytes:
    """The whole request, which must arrive within ``timeout`` seconds in all: the deadline is
    for the request, not for each read (a byte every few seconds does not extend it)."""
    deadline = time.monotonic() + timeout
    chunks: List[bytes] = []
    size = 0
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise socket.timeout("request deadline passed")
        conn.settimeout(remaining)
        chunk = conn.recv(16384)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > MAX_REQUEST_BYTES:
            raise Refused(f"request larger than {MAX_REQUEST_BYTES} bytes")
        chunks.append(chunk)


def _group_id(group: str) -> int:
    if group.isdigit():
        return int(group)
    return grp.getgrnam(group).gr_gid


def _prepare_socket_path(socket_path: str) -> None:
    """Remove a stale socket left by a helper that died; refuse to touch anything else."""
    try:
        st = os.lstat(socket_path)
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(st.st_mode):
        raise OSError(f"{socket_path} exists and is not a socket; not removing it")
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(1.0)
    try:
        probe.connect(socket_path)
    except OSError:
        os.unlink(socket_path)  # nobody listening: stale
        log.info("removed stale socket %s", socket_path)
        return
    finally:
        probe.close()
    raise OSError(f"another helper is already listening on {socket_path}")


def serve(config: Config, socket_path: str, group: Optional[str] = None) -> int:
    """Listen on ``socket_path`` until SIGTERM/SIGINT; return the process exit code."""
    gid = None
    if group:
        try:
            gid = _group_id(group)
        except KeyError:
            log.error("socket group %r does not exist", group)
            return 64
    try:
        _prepare_socket_path(socket_path)
    except OSError as exc:
        log.error("cannot listen on %s: %s", socket_path, exc)
        return 1
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    # No window in which the socket is open to everyone: create it 0600, then widen to 0660.
    old_umask = os.umask(0o177)
    try:
        server.bind(socket_path)
    except OSError as exc:
        log.error("cannot bind %s: %s", socket_path, exc.strerror or exc)
        server.close()
        return 1
    finally:
        os.umask(old_umask)
    try:
        if gid is not None and os.stat(socket_path).st_gid != gid:
            os.chown(socket_path, -1, gid)
        os.chmod(socket_path, SOCKET_MODE)
    except OSError as exc:
        log.error("cannot set owner/permissions of %s: %s", socket_path, exc.strerror or exc)
        server.close()
        os.unlink(socket_path)
        return 1
    inode = os.stat(socket_path).st_ino
    server.listen(16)
    server.settimeout(0.5)

    stop = threading.Event()

    def _on_signal(signum: int, _frame: Any) -> None:
        log.info("signal %d: shutting down", signum)
        stop.set()

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _on_signal)
        signal.signal(signal.SIGINT, _on_signal)

    helper = ProbeHelper(config)
    # Connections beyond this are answered with an error at once, so a flood of clients
    # cannot make the helper start unbounded threads.
    connections = threading.BoundedSemaphore(config.max_concurrent_probes * 2 + 4)
    workers: List[threading.Thread] = []
    log.info("probe helper listening on %s (mode %o%s); dev root %s", socket_path, SOCKET_MODE,
             f", group {group}" if group else "", config.paths.dev)

    # Connections still sending their request, oldest first: at the cap a new connection
    # closes the oldest of these, so slow clients cannot hold every slot against the agent.
    reading: Dict[socket.socket, float] = {}
    reading_lock = threading.Lock()
    last_eviction_log = [0.0]

    def _serve_one(conn: socket.socket) -> None:
        peer = _peer(conn)
        try:
            try:
                with reading_lock:
                    reading[conn] = time.monotonic()
                try:
                    raw = _read_request(conn)
                finally:
                    with reading_lock:
                        reading.pop(conn, None)
                if not raw:
                    # Connect-and-close is how a supervisor or a test checks the helper is up.
                    log.debug("empty request from %s (a liveness check)", peer)
                    return
                reply = helper.handle(raw, peer)
            except Refused as exc:
                log.warning("refused request from %s: %s", peer, exc)
                reply = _response(error=f"probe helper refused: {exc}")
            except socket.timeout:
                log.warning("refused request from %s: not received within %.0fs", peer, REQUEST_READ_TIMEOUT)
                reply = _response(error="probe helper refused: request not received in time")
            conn.settimeout(10.0)
            conn.sendall(reply)
        except OSError as exc:
            log.info("connection from %s closed early: %s", peer, exc)
        except Exception:  # a bug here must cost one request, not the helper
            log.exception("internal error serving %s", peer)
        finally:
            conn.close()
            connections.release()

    try:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except socket.timeout:
                workers = [w for w in workers if w.is_alive()]
                continue
            except OSError as exc:
                log.error("accept failed: %s", exc)
                time.sleep(0.1)
                continue
            admitted = connections.acquire(blocking=False)
            if not admitted:
                with reading_lock:
                    victim = min(reading, key=reading.get) if reading else None
                if victim is not None:
                    now = time.monotonic()
                    if now - last_eviction_log[0] >= 60.0:
                        last_eviction_log[0] = now
                        log.warning("too many connections; closing the oldest one still sending its "
                                    "request (logged at most once a minute)")
                    try:
                        victim.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass
                admitted = connections.acquire(timeout=1.0)
            if not admitted:
                log.warning("too many connections; refusing one from %s", _peer(conn))
                try:
                    conn.settimeout(1.0)
                    conn.sendall(_response(error="probe helper refused: too many connections"))
                except OSError:
                    pass
                conn.close()
                continue
            worker = threading.Thread(target=_serve_one, args=(conn,), name="probe-request", daemon=True)
            worker.start()
            workers.append(worker)
    finally:
        server.close()
        try:
            if os.stat(socket_path).st_ino == inode:
                os.unlink(socket_path)
        except OSError:
            pass
        deadline = time.monotonic() + config.tool_kill_grace_seconds + 1.0
        for worker in workers:
            worker.join(max(0.0, deadline - time.monotonic()))
        log.info("probe helper stopped")
    return 0


# --------------------------------------------------------------------------- client


class HelperRunner:
    """Runs tools through the helper; called exactly like :func:`collectors.runner.run_tool`.

    Never raises for the helper's faults: a missing helper, a refusal or a garbled answer is a
    :class:`ToolResult` with ``error`` set, as a tool that cannot be started would be.
    """

    def __init__(self, socket_path: str, timeout_slack: float = 5.0) -> None:
        self.socket_path = socket_path
        self.timeout_slack = timeout_slack

    def __call__(
        self,
        argv: Sequence[str],
        timeout: float = DEFAULT_TIMEOUT,
        grace: float = DEFAULT_GRACE,
        max_output: int = DEFAULT_MAX_OUTPUT,
        env: Optional[Dict[str, str]] = None,  # accepted for run_tool's signature; the helper sets its own
    ) -> ToolResult:
        argv = tuple(str(a) for a in argv)
        start = time.monotonic()
        request = json.dumps({
            "version": PROTOCOL_VERSION, "argv": list(argv),
            "timeout": timeout, "grace": grace, "max_output": max_output,
        }).encode("utf-8")
        # The helper may wait up to `timeout` for a free slot, then run the tool for up to
        # `timeout`, then spend `grace` and a second on SIGTERM/SIGKILL.
        deadline = start + 2 * timeout + grace + 1.0 + self.timeout_slack
        # base64 grows output by 4/3; stderr is capped at 64 KiB by the runner.
        limit = (max_output + 65536) * 4 // 3 + 65536

        def failed(why: str) -> ToolResult:
            return ToolResult(argv, None, b"", b"", time.monotonic() - start, error=f"probe helper {self.socket_path}: {why}")

        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(max(0.1, deadline - time.monotonic()))
            try:
                sock.connect(self.socket_path)
                sock.sendall(request)
                sock.shutdown(socket.SHUT_WR)
                chunks: List[bytes] = []
                size = 0
                while True:
                    sock.settimeout(max(0.01, deadline - time.monotonic()))
                    chunk = sock.recv(65536)
                    if not chunk:
                        break
                    size += len(chunk)
                    if size > limit:
                        return failed("answer larger than expected")
                    chunks.append(chunk)
            except socket.timeout:
                return failed("no answer in time")
            except OSError as exc:
                return failed(f"not reachable ({exc.strerror or exc})")
        finally:
            sock.close()
        return self._result(argv, b"".join(chunks), start, failed)

    @staticmethod
    def _result(argv: Tuple[str, ...], raw: bytes, start: float, failed: Callable[[str], ToolResult]) -> ToolResult:
        try:
            body = json.loads(raw.decode("utf-8"))
            if not isinstance(body, dict):
                raise ValueError("not an object")
            exit_code = body.get("exit_code")
            if exit_code is not None and (isinstance(exit_code, bool) or not isinstance(exit_code, int)):
                raise ValueError("exit_code is not an integer")
            error = body.get("error")
            if error is not None and not isinstance(error, str):
                raise ValueError("error is not a string")
            for name in ("stdout", "stderr"):
                if not isinstance(body.get(name) or "", str):
                    raise ValueError(f"{name} is not a string")
            stdout = base64.b64decode(body.get("stdout") or "", validate=True)
            stderr = base64.b64decode(body.get("stderr") or "", validate=True)
            duration = body.get("duration", 0.0)
            if isinstance(duration, bool) or not isinstance(duration, (int, float)):
                raise ValueError("duration is not a number")
            if not (math.isfinite(duration) and duration >= 0):
                raise ValueError("duration is not a finite number of seconds")
        except (UnicodeDecodeError, ValueError, RecursionError, OverflowError, binascii.Error) as exc:
            return failed(f"unreadable answer ({exc})")
        return ToolResult(
            argv,
            exit_code,
            stdout,
            stderr,
            float(duration),
            timed_out=bool(body.get("timed_out")),
            stuck=bool(body.get("stuck")),
            truncated=bool(body.get("truncated")),
            error=error,
            pid=None,  # the process lives in the helper; the helper quarantines its device
            quarantined=body.get("quarantined") is True,
        )
