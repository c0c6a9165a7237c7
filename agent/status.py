"""``ssdfleet status``: this host's drives in the terminal, for the person logged in on the host.

It asks the running agent's ``/api/v1/drives`` when one answers, so it shows the same data
Prometheus and the ``/`` page see (with history-based projections and the drive's history);
otherwise it polls once by itself and says so. ``--simulate`` (simulator/cli.py, one of the
command line's extensions) shows the demo host with its seeded history. The table is
agent/status_table.py, one drive in detail agent/status_drive.py; this module is the command:
where the data come from, the credentials, the exit code.

Exit codes, the Nagios plugin convention (README.md, "Commands"), so it can run from cron or an
existing monitoring system:

* 0 OK: every drive was read and none is flagged (a drive to "watch" is OK: nothing alerts yet);
* 1 WARNING: a drive has a warning, a drive could not be read while others could (its
  health is unknown, so the host is not "OK"), or a collector's last run failed;
* 2 CRITICAL: a drive has a critical flag;
* 3 UNKNOWN: the health of no drive could be established (no drives found, or none could be
  read), the agent answered but not with the drives (401, a TLS failure, an error), ``--drive``
  named no drive, or the command could not run as asked (an unreadable credentials file).

Credentials for an agent behind basic auth and TLS (its ``--web-config``) never go on the
command line, where ``ps`` shows them: ``--basic-auth-file`` (one line, ``user:password``),
``--client-config`` (the fields of a Prometheus scrape config: ``basic_auth`` and
``tls_config``), ``--ca-file`` for an agent with a self-signed certificate, or the
environment (``SSDFLEET_BASIC_AUTH=user:password``). ``--url https://user:password@host:port``
works too, for a quick look.

Everything here works on the JSON form of :class:`agent.views.DriveView` (a dict), whether
it came over HTTP or from a local poll, so both paths print the same thing.

Width: on a terminal the table fits the terminal's width (``$COLUMNS`` wins when set), dropping
or shortening the less urgent columns first (see NARROWING) and keeping device, serial, life
left, wear-out date and the flag reason. Piped, it uses ``$COLUMNS`` when set and otherwise
no limit: a log, a cron mail or ``grep`` gets every column (``COLUMNS=80 ssdfleet status |
...`` to narrow it). Colours only on a terminal (``--color`` overrides).
"""

from __future__ import annotations

import argparse
import base64
import dataclasses
import http.client
import json
import os
import socket
import ssl
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Dict, List, Optional, Sequence, Tuple

import yaml

from agent import health, host_views
from agent.config import DEFAULT_PORT
from agent.health import CRITICAL, OK, WARNING
from agent.status_drive import format_drive, projection_lines  # noqa: F401 (ssdfleet status's API)
from agent.status_table import (  # noqa: F401 (the names tests and `collect` use from here)
    COLUMNS,
    EXIT_CODES,
    KEPT,
    UNKNOWN,
    UNKNOWN_EXIT,
    clip,
    ellipsis_for,
    format_behind,
    format_holds,
    format_host,
    format_reasons,
    format_table,
    has_health_data,
    paint,
    table_width,
    wrap_text,
)
from agent.text import defang
from agent.views import WATCH, utc_time

# "user:password" for an agent behind basic auth (web config); the environment or a file
# (--basic-auth-file, --client-config) rather than a flag, so the password does not show in `ps`.
AUTH_ENV = "SSDFLEET_BASIC_AUTH"


# -- getting the data ----------------------------------------------------------------

class AgentRefused(Exception):
    """An agent answers at the URL but not with the drives (401, a TLS failure, an error):
    polling locally instead would hide that, so status says so and exits UNKNOWN."""


class ClientConfigError(ValueError):
    """The credentials or TLS settings given to ``status`` cannot be used (exit UNKNOWN)."""


@dataclasses.dataclass
class Client:
    """How ``status`` talks to the agent: basic auth and the TLS settings of a Prometheus
    scrape config (``tls_config``), which are what the agent's web config asks of a client."""

    username: Optional[str] = None
    password: Optional[str] = None
    ca_file: Optional[str] = None
    cert_file: Optional[str] = None
    key_file: Optional[str] = None
    server_name: Optional[str] = None
    insecure_skip_verify: bool = False

    def authorization(self) -> Optional[str]:
        if self.username is None:
            return None
        pair = f"{self.username}:{self.password or ''}"
        return "Basic " + base64.b64encode(pair.encode("utf-8")).decode("ascii")

    def ssl_context(self) -> ssl.SSLContext:
        try:
            context = ssl.create_default_context(cafile=self.ca_file)
        except (OSError, ssl.SSLError) as exc:
            raise ClientConfigError(f"TLS settings: CA file {self.ca_file}: {getattr(exc, 'strerror', None) or exc}") from None
        if self.cert_file:
            try:
                context.load_cert_chain(self.cert_file, self.key_file)
            except (OSError, ssl.SSLError) as exc:
                raise ClientConfigError(f"TLS settings: client certificate {self.cert_file}: "
                                        f"{getattr(exc, 'strerror', None) or exc}") from None
        if self.insecure_skip_verify:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        return context


def add_client_arguments(p: argparse.ArgumentParser) -> None:
    """The options that reach an agent behind basic auth and TLS (its --web-config)."""
    p.add_argument("--basic-auth-file", metavar="FILE",
                   help="read USER:PASSWORD for the agent's basic auth from FILE (first line)")
    p.add_argument("--client-config", metavar="FILE",
                   help="YAML with basic_auth (username, password or password_file) and tls_config "
                        "(ca_file, cert_file, key_file, server_name, insecure_skip_verify), as in a "
                        "Prometheus scrape config")
    p.add_argument("--ca-file", metavar="FILE", help="CA certificate(s) to verify an https agent with")


def _read_secret(path: str, what: str) -> str:
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.readline()
    except (OSError, UnicodeDecodeError) as exc:
        raise ClientConfigError(f"{what} {path}: {exc}") from None
    return text.rstrip("\r\n")


def _user_password(pair: str, where: str) -> Tuple[str, str]:
    if ":" not in pair:
        raise ClientConfigError(f"{where}: expected USER:PASSWORD")
    user, password = pair.split(":", 1)
    return user, password


def _load_client_config(path: str) -> Client:
    """A YAML file with the client half of a Prometheus scrape config: ``basic_auth``
    (``username`` and ``password`` or ``password_file``) and ``tls_config`` (``ca_file``,
    ``cert_file``, ``key_file``, ``server_name``, ``insecure_skip_verify``); relative paths are
    read from the file's directory. Any other key is refused, so a typo is not ignored."""
    try:
        with open(path, encoding="utf-8") as fh:
            doc = yaml.safe_load(fh) or {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ClientConfigError(f"--client-config {path}: {exc}") from None
    if not isinstance(doc, dict):
        raise ClientConfigError(f"--client-config {path}: expected a mapping")
    base = os.path.dirname(os.path.abspath(path))

    def section(name: str, keys: Tuple[str, ...]) -> Dict[str, Any]:
        value = doc.get(name) or {}
        if not isinstance(value, dict):
            raise ClientConfigError(f"--client-config {path}: {name} must be a mapping")
        unknown = sorted(set(value) - set(keys))
        if unknown:
            raise ClientConfigError(f"--client-config {path}: unknown key {name}.{unknown[0]}")
        return value

    unknown = sorted(set(doc) - {"basic_auth", "tls_config"})
    if unknown:
        raise ClientConfigError(f"--client-config {path}: unknown key {unknown[0]}")
    auth = section("basic_auth", ("username", "password", "password_file"))
    tls = section("tls_config", ("ca_file", "cert_file", "key_file", "server_name", "insecure_skip_verify"))

    def where(key: str) -> Optional[str]:
        value = tls.get(key)
        return None if value is None else os.path.join(base, str(value))

    client = Client(ca_file=where("ca_file"), cert_file=where("cert_file"), key_file=where("key_file"),
                    server_name=tls.get("server_name"), insecure_skip_verify=bool(tls.get("insecure_skip_verify")))
    if auth:
        if "password" in auth and "password_file" in auth:
            raise ClientConfigError(f"--client-config {path}: basic_auth has both password and password_file")
        client.username = str(auth.get("username") or "")
        if "password_file" in auth:
            client.password = _read_secret(os.path.join(base, str(auth["password_file"])), "password_file")
        else:
            client.password = str(auth.get("password") or "")
    return client


def client_from_args(args: Any, url: str, environ: Optional[Dict[str, str]] = None) -> Tuple[Client, str]:
    """The client settings and the URL to ask (without any user:password it carried). The
    credentials come from one place, checked in this order: the URL, --basic-auth-file,
    --client-config, $SSDFLEET_BASIC_AUTH; two explicit ones are refused as ambiguous."""
    environ = os.environ if environ is None else environ
    client = _load_client_config(args.client_config) if getattr(args, "client_config", None) else Client()
    given = ["--client-config"] if client.username is not None else []
    parts = urllib.parse.urlsplit(url)
    if parts.username is not None:
        client.username = urllib.parse.unquote(parts.username)
        client.password = urllib.parse.unquote(parts.password or "")
        given.append("--url")
        host = parts.hostname or ""
        netloc = (f"[{host}]" if ":" in host else host) + (f":{parts.port}" if parts.port else "")
        url = urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
    if getattr(args, "basic_auth_file", None):
        client.username, client.password = _user_password(
            _read_secret(args.basic_auth_file, "--basic-auth-file"), f"--basic-auth-file {args.basic_auth_file}")
        given.append("--basic-auth-file")
    if len(given) > 1:
        raise ClientConfigError(f"credentials given twice ({' and '.join(given)}): give one")
    if not given and environ.get(AUTH_ENV):
        client.username, client.password = _user_password(environ[AUTH_ENV], f"${AUTH_ENV}")
    if getattr(args, "ca_file", None):
        client.ca_file = args.ca_file
    return client, url


class _HTTPSConnection(http.client.HTTPSConnection):
    """An HTTPS connection that checks the certificate against ``server_name`` rather than the
    host in the URL (tls_config.server_name: an agent reached by address, its certificate
    issued to its name)."""

    server_name: Optional[str] = None

    def connect(self) -> None:
        sock = socket.create_connection((self.host, self.port), self.timeout, self.source_address)
        self.sock = self._context.wrap_socket(sock, server_hostname=self.server_name or self.host)


class _HTTPSHandler(urllib.request.HTTPSHandler):
    def __init__(self, context: ssl.SSLContext, server_name: Optional[str]) -> None:
        super().__init__(context=context)
        self._tls_context = context
        self._server_name = server_name

    def https_open(self, req: urllib.request.Request):  # noqa: ANN201 - urllib's own signature
        def connection(host: str, **kwargs: Any) -> _HTTPSConnection:
            conn = _HTTPSConnection(host, context=self._tls_context, timeout=kwargs.get("timeout"))
            conn.server_name = self._server_name
            return conn

        return self.do_open(connection, req)


def fetch(url: str, timeout: float = 2.0, client: Optional[Client] = None) -> Tuple[Optional[Dict[str, Any]], str]:
    """The running agent's /api/v1/drives, or None and why not when no agent listens there.
    Raises :class:`AgentRefused` when something answers but not with the drives."""
    client = client or Client()
    req = urllib.request.Request(url.rstrip("/") + "/api/v1/drives")
    auth = client.authorization()
    if auth:
        req.add_header("Authorization", auth)
    handlers = []
    if url.lower().startswith("https:"):
        handlers.append(_HTTPSHandler(client.ssl_context(), client.server_name))
    opener = urllib.request.build_opener(*handlers)
    try:
        with opener.open(req, timeout=timeout) as resp:  # noqa: S310 - the agent's URL
            return json.loads(resp.read().decode("utf-8")), ""
    except urllib.error.HTTPError as exc:
        hint = ""
        if exc.code == 401:
            hint = (" (wrong user or password)" if auth else
                    " (it wants a user and password: --basic-auth-file FILE or --client-config FILE)")
        raise AgentRefused(f"the agent at {url} answered HTTP {exc.code}{hint}") from None
    except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
        reason = getattr(exc, "reason", exc)
        if isinstance(reason, (ConnectionRefusedError, FileNotFoundError)):
            return None, str(reason)  # nobody listens: poll here
        hint = ""
        if isinstance(reason, ssl.SSLCertVerificationError):
            hint = " (--ca-file FILE names the CA that signed the agent's certificate)"
        elif isinstance(reason, (ssl.SSLError, http.client.BadStatusLine, ConnectionResetError)) \
                and url.lower().startswith("http:"):
            hint = " (does it serve https?)"
        raise AgentRefused(f"cannot read the agent at {url}: {reason}{hint}") from None
    except ValueError as exc:
        raise AgentRefused(f"the agent at {url} did not answer JSON: {exc}") from None


def local_poll(config, keep_history: bool = False) -> Dict[str, Any]:
    """Poll once here. Without ``keep_history`` the agent's history file is not touched (and
    no drive has a rate or a date); with it (a simulated host, whose history was seeded) the
    poll reads and adds to the history, and the views carry it as the agent's API would."""
    from agent.poller import Poller
    from agent.views import ViewState, snapshot_views, worst

    config = config.model_copy(update={"history": keep_history})
    poller = Poller(config)
    try:
        snap = poller.poll_once()
        state = None
        if keep_history:
            state = ViewState(poller.history)
            state.update(snap)
        views = snapshot_views(snap, time.time(), state=state)
    finally:
        poller.stop()
    return {
        "severity": worst(views),
        "drives": [dataclasses.asdict(v) for v in views],
        "collectors": [dataclasses.asdict(c) for c in snap.collectors],
        "problems": list(snap.problems),
        "host": host_views.api(snap),
    }


def overall(drives: List[Dict[str, Any]], collectors: Sequence[Dict[str, Any]] = ()) -> str:
    """Worst severity of all drives (a drive without health data is a warning); unknown when
    no drive could be read at all. A collector whose last run failed makes an OK host a
    warning: what it reads (I/O, the write cache, a card) may be missing or old, so the host is
    not known to be OK, and a Nagios check must not say it is."""
    if not any(has_health_data(d) for d in drives):
        return UNKNOWN
    worst = health.worst_severity(d.get("severity") or OK for d in drives)
    if failing_collectors(collectors):
        worst = health.worst_severity((worst, WARNING))
    return worst


def failing_collectors(collectors: Sequence[Dict[str, Any]]) -> List[str]:
    """Names of the collectors whose last run failed, as the API lists them."""
    return [str(c.get("name")) for c in collectors or () if c.get("success") is False]


def _agent_url(args, config) -> str:
    if args.url:
        return args.url
    host, port = config.listen_host_port() if config.listen_address else ("127.0.0.1", DEFAULT_PORT)
    if host in ("0.0.0.0", "::", ""):
        host = "127.0.0.1"
    if ":" in host:
        host = f"[{host}]"
    return f"{'https' if _serves_tls(config) else 'http'}://{host}:{port}"


def _serves_tls(config) -> bool:
    """Whether the agent's configuration gives it a web config with a certificate (then it
    serves https only). Read leniently: the agent validates the file, status only looks."""
    path = getattr(config, "web_config_file", None)
    if not path:
        return False
    try:
        with open(path, encoding="utf-8") as fh:
            doc = yaml.safe_load(fh) or {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return False
    tls = doc.get("tls_server_config") if isinstance(doc, dict) else None
    return isinstance(tls, dict) and bool(tls.get("cert_file") or tls.get("cert"))


def _matches(d: Dict[str, Any], wanted: str) -> bool:
    name = wanted[5:] if wanted.startswith("/dev/") else wanted
    return wanted in (d.get("serial"), d.get("device")) or name == d.get("device")


def _footer(data: Dict[str, Any], drives: List[Dict[str, Any]], severity: str, color: bool,
            width: Optional[int] = None) -> str:
    notes = [f"source: {data['source']}"]
    for c in data.get("collectors") or []:
        if not c.get("success"):
            notes.append(f"collector {c['name']} failing: {c.get('error') or 'see the agent log'}")
    notes += [f"problem: {p}" for p in data.get("problems") or []]
    lines = [folded for note in notes for folded in wrap_text(note, width, 4)]
    read = [d for d in drives if has_health_data(d)]
    counts = {CRITICAL: sum(1 for d in read if d.get("severity") == CRITICAL),
              WARNING: sum(1 for d in read if d.get("severity") == WARNING),
              WATCH: sum(1 for d in read if (d.get("severity") or OK) == OK and d.get("watch")),
              OK: sum(1 for d in read if (d.get("severity") or OK) == OK and not d.get("watch"))}
    unread = len(drives) - len(read)
    parts = [f"{n} to watch" if s == WATCH else f"{n} {s}" for s, n in counts.items() if n]
    if unread:
        parts.append(f"{unread} without health data")
    failing = failing_collectors(data.get("collectors") or ())
    if failing and parts:
        parts.append(f"collector{'s' if len(failing) > 1 else ''} failing: {', '.join(failing)}")
    text = f"{severity.upper()}: " + (", ".join(parts) if parts else "no drives could be read")
    lines.append(paint(text, severity, color))
    return "\n".join(lines) + "\n"


def main(args, make_config) -> int:
    config = make_config(args)
    # a host an extension prepared (the demo host of --simulate) is read here, once
    prepared = getattr(args, "prepared_host", None)
    local = args.local or prepared is not None
    try:
        client, url = client_from_args(args, _agent_url(args, config))
    except ClientConfigError as exc:
        sys.stderr.write(f"ssdfleet status: {exc}\n")
        return UNKNOWN_EXIT
    color = args.color == "always" or (args.color == "auto" and sys.stdout.isatty())
    first = True
    while True:
        try:
            data, why = (None, "--local") if local else fetch(url, client=client)
        except ClientConfigError as exc:
            sys.stderr.write(f"ssdfleet status: {exc}\n")
            return UNKNOWN_EXIT
        except AgentRefused as exc:
            sys.stderr.write(f"ssdfleet status: {exc}; not polling locally behind a running agent "
                             "(--local does)\n")
            return UNKNOWN_EXIT
        if data is not None:
            data["source"] = f"agent at {url}"
        else:
            data = local_poll(config, keep_history=prepared is not None)
            if prepared is not None:
                data["source"] = prepared
            elif args.local:
                data["source"] = "one poll by this command (--local)"
            else:
                data["source"] = f"one poll by this command (no agent answered at {url}: {why})"
        if not args.json:
            data = defang(data)  # JSON escapes control characters itself
        drives = data.get("drives") or []
        if args.drive:
            drives = [d for d in drives if _matches(d, args.drive)]
            if not drives:
                sys.stderr.write(f"ssdfleet: no drive {args.drive!r} on this host\n")
                return UNKNOWN_EXIT
        severity = overall(drives, data.get("collectors") or ())
        code = EXIT_CODES[severity]
        try:
            if args.json:
                json.dump({**data, "drives": drives, "severity": severity, "exit_code": code},
                          sys.stdout, indent=2, default=str)
                sys.stdout.write("\n")
            else:
                if args.watch:
                    # a terminal is redrawn in place; a pipe or log gets one block per round
                    sys.stdout.write("\033[H\033[2J" if sys.stdout.isatty() else ("" if first else "\n"))
                    sys.stdout.write(f"{utc_time(time.time())}, every {args.watch:g} s (Ctrl-C stops)\n")
                width = table_width(sys.stdout)  # each round: a terminal may have been resized
                if args.drive:
                    sys.stdout.write("\n".join(format_drive(d, color=color, width=width) for d in drives))
                else:
                    sys.stdout.write(format_table(drives, color=color, width=width, ellipsis=ellipsis_for(sys.stdout)))
                    sys.stdout.write(format_reasons(drives, color=color, width=width))
                    sys.stdout.write(format_holds(drives, width=width))
                    sys.stdout.write(format_behind(drives, width=width))
                    sys.stdout.write(format_host(data, width=width))
                sys.stdout.write(_footer(data, drives, severity, color, width))
            sys.stdout.flush()
        except BrokenPipeError:
            # `ssdfleet status | head`: the reader has gone. No traceback, and the exit code
            # still says how the drives are; the dup2 keeps the final flush at exit quiet.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return code
        first = False
        if not args.watch:
            return code
        time.sleep(max(0.2, args.watch))
