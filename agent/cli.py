"""The ``ssdfleet`` command: ``agent`` (serve), ``status`` (table), ``collect`` (one poll),
``probe-helper``, and the sources' own commands (``syncwrite-dropin``: the systemd drop-in for
the sync-write probe; collectors/source.py SourceCommand)."""

from __future__ import annotations

import argparse
import dataclasses
import functools
import importlib
import json
import logging
import os
import signal as signal_mod
import sys
import threading
import time
from typing import Any, Dict, List, Optional, Sequence

# pydantic reads every installed distribution's entry points for plugins when the first model
# is built: 30-50 ms of the agent's start (issue 32), more on a host with many packages. The
# agent uses no plugin, and one installed on the host for something else has no place in it.
os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")

from agent import __version__  # noqa: E402 - after the line above, before pydantic is used
from agent.config import COLLECTOR_NAMES, DEFAULT_PORT, Config, ConfigError, Intervals, load_config  # noqa: E402
from collectors import registry  # noqa: E402
from collectors.source import tool_defaults  # noqa: E402

# Flags that come from the registry: a path flag per tool, an interval flag per source,
# --collector.NAME / --no-collector.NAME per source.
_TOOL_KEYS = tuple(tool_defaults(registry.SOURCES))
_INTERVAL_NAMES = tuple(Intervals.model_fields)

log = logging.getLogger("ssdfleet")


# Command-line extensions: modules that add options to the commands that read a host and
# prepare that host before the configuration is read. Each has ``add_arguments(parser,
# command)`` and ``prepare(args, open_history) -> note or None``; the note (where the figures
# come from) makes a one-poll command keep history and say so. Imported when the parser is
# built, not with this module; the demo host (simulator/cli.py: --simulate) is the one there is.
EXTENSIONS = ("simulator.cli",)


def _extensions() -> List[Any]:
    return [importlib.import_module(name) for name in EXTENSIONS]


def _add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", help="YAML configuration file")
    for key in _TOOL_KEYS:
        p.add_argument("--" + key.replace("_", "-"), dest=f"tool_{key}", help=f"path of {key.replace('_', '-')}")
    p.add_argument("--path.sysfs", dest="path_sysfs", help="sysfs mount point (default /sys)")
    p.add_argument("--path.procfs", dest="path_procfs", help="procfs mount point (default /proc)")
    p.add_argument("--path.dev", dest="path_dev", help="device directory (default /dev)")
    p.add_argument("--state-dir", help="where the history database lives")
    p.add_argument("--no-history", action="store_true", help="keep history in memory only")
    p.add_argument("--tool-timeout", type=float, help="seconds before a device tool is stopped")
    for spec in registry.SOURCES:
        p.add_argument(f"--collector.{spec.name}", dest=f"yes_{spec.name}", action="store_true",
                       help=f"enable the {spec.name} collector: {spec.help}")
        p.add_argument(f"--no-collector.{spec.name}", dest=f"no_{spec.name}", action="store_true",
                       help=f"disable the {spec.name} collector")
    p.add_argument("--log-level", help="DEBUG, INFO, WARNING, ERROR")


def _overrides(args: argparse.Namespace) -> Dict[str, Any]:
    o: Dict[str, Any] = {}
    tools = {k: getattr(args, f"tool_{k}", None) for k in _TOOL_KEYS}
    tools = {k: v for k, v in tools.items() if v}
    if tools:
        o["tools"] = tools
    paths = {k: getattr(args, f"path_{k}", None) for k in ("sysfs", "procfs", "dev")}
    paths = {k: v for k, v in paths.items() if v}
    if paths:
        o["paths"] = paths
    if getattr(args, "state_dir", None):
        o["state_dir"] = args.state_dir
    if getattr(args, "no_history", False):
        o["history"] = False
    if getattr(args, "tool_timeout", None) is not None:  # 0 is an error, not "unset"
        o["tool_timeout_seconds"] = args.tool_timeout
    if getattr(args, "log_level", None):
        o["log_level"] = args.log_level
    if getattr(args, "listen_address", None):
        o["listen_address"] = args.listen_address
    if getattr(args, "web_config", None):
        o["web_config_file"] = args.web_config
    if getattr(args, "probe_helper_socket", None):
        o["probe_helper_socket"] = args.probe_helper_socket
    intervals = {}
    for name in _INTERVAL_NAMES:
        value = getattr(args, f"interval_{name}", None)
        if value is not None:
            intervals[name] = value
    if intervals:
        o["intervals"] = intervals
    disabled = [n for n in COLLECTOR_NAMES if getattr(args, f"no_{n}", False)]
    if disabled:
        o["_disabled"] = disabled
    enabled = [n for n in COLLECTOR_NAMES if getattr(args, f"yes_{n}", False)]
    if enabled:
        o["_enabled"] = enabled
    return o


def _config(args: argparse.Namespace) -> Config:
    overrides = _overrides(args)
    disabled = overrides.pop("_disabled", [])
    enabled = overrides.pop("_enabled", [])
    config = load_config(args.config, overrides)
    if disabled or enabled:
        wanted = [c for c in config.collectors if c not in disabled]
        wanted += [c for c in enabled if c not in wanted and c not in disabled]
        config = config.model_copy(update={"collectors": wanted})
    return config


def _setup_logging(level: str) -> None:
    logging.basicConfig(
        level=getattr(logging, level.upper(), logging.INFO),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )


def _prepared(args: argparse.Namespace) -> Optional[str]:
    """Let each extension prepare the host (``--simulate`` builds the demo host and points the
    tool and host paths at it); the first note, or None when no extension was asked to."""
    from agent.history import History

    def open_history(path: str, step: float) -> History:
        return History(path, min_interval_seconds=step)

    notes = [ext.prepare(args, open_history) for ext in _extensions()]
    note = next((n for n in notes if n), None)
    args.prepared_host = note
    return note


def cmd_agent(args: argparse.Namespace) -> int:
    _prepared(args)
    config = _config(args)
    _setup_logging(config.log_level)

    from agent import memory
    from agent.api import create_app
    from agent.poller import Poller
    from agent.views import ViewState

    memory.limit_arenas()
    memory.quick_handover()
    memory.calm_collector()
    web = None
    if config.web_config_file:  # imported only when used: bcrypt and its checks (issue 32)
        from agent import webconfig

        web = webconfig.load_web_config(config.web_config_file)
    host, port = config.listen_host_port()
    chosen = _fill_state_dir(config)
    # Takes the state directory's lock (a refusal stays one line); the sources are built by
    # poller.start(), after the listener opens (issue 32).
    poller = Poller(chosen, build_sources=False)
    _say_state_dir(config, chosen)
    config = chosen
    state = ViewState(poller.history)

    def page(snap, now):
        from agent.page import render_page  # on the first page view: a scrape never needs it

        return render_page(snap, now, state=state)

    from agent import server as http_server
    from agent.reload import Reloader
    from agent.signals import QUIT_EXIT_STATUS, SignalHandling
    from collectors.runner import LIVE, ORPHANS, enable_subreaper

    http_stats = http_server.HTTPStats()
    app = create_app(poller.snapshot, page=page, state=state, http_stats=http_stats)
    poller.add_listener(app.state.exposition.feed)
    poller.add_listener(state.update)
    poller.add_listener(memory.Settler())  # before the trim: what it frees is trimmed too
    poller.add_listener(lambda _snapshot: memory.trim())
    if web is not None:
        app = webconfig.secure_app(app, web, stats=http_stats)
        ssl_context = webconfig.ssl_context(web)
    else:
        ssl_context = None
    http_server.quiet_repeats()
    nofile = http_server.raise_nofile_limit()
    cap = http_server.connection_cap(config.http_max_connections, nofile)
    # Listen first, discover after (issue 32): the poller starts once the socket listens, so a
    # scrape during discovery (3-4 s at 1,024 drives) is answered with the agent's own series
    # and no drives yet, as for any snapshot before a source has run.
    starter = threading.Thread(target=poller.start, name="poll-start", daemon=True)
    server = http_server.AgentServer(app, host, port, stats=http_stats, ssl_context=ssl_context,
                                     request_timeout=config.http_request_timeout_seconds, max_connections=cap,
                                     on_listening=starter.start)
    log.info("ssdfleet %s starting: collectors %s; open files limit %s",
             __version__, ",".join(config.collectors), nofile)
    # Daemons that tools start outside their process group are reparented to the agent and
    # killed (collectors/runner.py); SIGHUP reloads, the other signals are decided (agent/signals.py).
    if enable_subreaper():
        ORPHANS.start()
    SignalHandling(reload=Reloader(lambda: _fill_state_dir(_config(args)), poller, web),
                   stop=server.stop, note=poller.note_signal).install()
    try:
        server.run()
    finally:
        if starter.is_alive():  # stopped during discovery: its tool calls are bounded
            starter.join(2 * (config.tool_timeout_seconds + config.tool_kill_grace_seconds) + 1.0)
        _stop_agent(poller, server.stop_signal, LIVE, ORPHANS)
    if not server.started:
        return 1  # the bind failed; the server logged why
    return QUIT_EXIT_STATUS if server.stop_signal == signal_mod.SIGQUIT else 0


# Where the agent kept its history as root before 0.1.0 chose the user's state directory.
_OLD_ROOT_STATE_DIR = "/var/lib/ssdfleet"


def _fill_state_dir(config: Config) -> Config:
    """The configuration with the default state directory filled in where none is set (a
    reload compares against the running configuration, which has it filled in)."""
    from agent.history import default_state_dir

    if not config.history or config.state_dir:
        return config
    return config.model_copy(update={"state_dir": default_state_dir()})


def _say_state_dir(configured: Config, chosen: Config) -> None:
    """Say at start where history goes and why, so a trial run never writes somewhere
    unannounced (README.md, the first command)."""
    if not chosen.history:
        log.info("history kept in memory only (--no-history)")
        return
    if configured.state_dir:
        log.info("state directory %s (from --state-dir or state_dir)", chosen.state_dir)
        return
    state_dir = chosen.state_dir
    origin = "systemd's $STATE_DIRECTORY" if os.environ.get("STATE_DIRECTORY") else "the user's state directory"
    log.info("state directory %s (%s; --state-dir to choose another)", state_dir, origin)
    old = os.path.join(_OLD_ROOT_STATE_DIR, "history.sqlite")
    if os.path.abspath(state_dir) != _OLD_ROOT_STATE_DIR and os.path.exists(old):
        log.warning("%s exists but is not used: pass --state-dir %s to keep that history",
                    old, _OLD_ROOT_STATE_DIR)


def _stop_agent(poller: Any, stop_signal: Optional[int], live: Any, orphans: Any) -> None:
    """The agent's clean stop, within ``shutdown_timeout_seconds``: refuse new tool runs, end
    the tool process groups in flight (SIGTERM, the kill grace, SIGKILL), stop the poller's
    threads, flush and close history, and kill whatever tools left behind (no process the
    agent started outlives it). The configuration is the poller's, as last reloaded."""
    config = poller.config
    started = time.monotonic()
    why = signal_mod.Signals(stop_signal).name if stop_signal else "server stopped"
    live.stopping.set()
    grace = min(config.tool_kill_grace_seconds, config.shutdown_timeout_seconds / 4)
    ended = live.terminate_all(grace)
    poller.stop(timeout=max(0.5, config.shutdown_timeout_seconds - (time.monotonic() - started) - 1.0))
    ended += live.terminate_all(0.2)  # any tool started while the first pass ran
    orphans.stop()
    adopted = orphans.sweep_all() if orphans.enabled else 0
    history = poller.history
    log.info("stopped (%s) in %.1fs: %d tool process group(s) ended%s, history %s",
             why, time.monotonic() - started, ended,
             f", {adopted} leftover process(es) killed" if adopted else "",
             "flushed" if not history.pending_count else f"{history.pending_count} sample(s) not written")


def cmd_collect(args: argparse.Namespace) -> int:
    prepared = _prepared(args)
    config = _config(args)
    _setup_logging(config.log_level if args.log_level else "WARNING")
    from agent import host_views
    from agent.poller import Poller
    from agent.views import snapshot_views
    from collectors.runner import ORPHANS, enable_subreaper

    # one poll keeps no history, except on a prepared host (the demo's), whose seeded history
    # gives dates
    config = config.model_copy(update={"history": prepared is not None})
    subreaper = enable_subreaper()
    poller = Poller(config)
    snap = poller.poll_once()
    poller.stop()
    if subreaper:
        ORPHANS.sweep_all()  # what the tools left outside their process groups
    if args.json:
        out = {
            "drives": [dataclasses.asdict(v) for v in snapshot_views(snap, time.time())],
            "collectors": [dataclasses.asdict(c) for c in snap.collectors],
            "problems": list(snap.problems),
            # what the host sources measured (the sync-write probe, the controllers), by source,
            # as the agent's /api/drives gives it
            "host": host_views.api(snap),
        }
        json.dump(out, sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
    else:
        from agent.status import format_table
        from agent.text import defang

        views = [defang(dataclasses.asdict(v)) for v in snapshot_views(snap, time.time())]
        sys.stdout.write(format_table(views, color=False))
    return 0


def cmd_probe_helper(args: argparse.Namespace) -> int:
    config = _config(args)
    _setup_logging(config.log_level)
    from agent import privhelper
    from collectors.runner import ORPHANS, enable_subreaper

    if enable_subreaper():  # the helper runs the tools: what they leave behind is its to end
        ORPHANS.start()
    return privhelper.serve(config, args.socket, group=args.socket_group)


def _source_command(spec, command):
    """The function that runs a source's own command (SourceSpec.commands) with the source's
    settings from --config (its defaults without one)."""
    def run(args: argparse.Namespace) -> int:
        config = load_config(args.config, {})
        return command.run(args, getattr(config, spec.name, None))
    return run


def cmd_status(args: argparse.Namespace) -> int:
    from agent import status

    _prepared(args)
    return status.main(args, _config)


def _extend(p: argparse.ArgumentParser) -> None:
    for ext in _extensions():
        ext.add_arguments(p, p.prog.split()[-1])


def build_parser(command: Optional[str] = None) -> argparse.ArgumentParser:
    """The command line. With ``command``, only that sub-command gets its options (the others
    are listed with their help): building ``status``'s imports the status client and a source
    command's imports its module, 80 ms that ``ssdfleet agent`` need not pay before it listens
    (issue 32). Without, every sub-command is built (the manual page, ``--help``)."""
    parser = argparse.ArgumentParser(prog="ssdfleet", description="SSD fleet health agent and Prometheus exporter")
    parser.add_argument("--version", action="version", version=f"ssdfleet {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    commands = [
        ("agent", "run the agent: poll the drives and serve /metrics", _build_agent),
        ("probe-helper", "run the privileged probe helper on a UNIX socket", _build_probe_helper),
        ("collect", "poll once and print the result", _build_collect),
    ] + [(c.name, c.help, functools.partial(_build_source_command, spec, c))  # syncwrite-dropin
         for spec in registry.SOURCES for c in spec.commands] + [
        ("status", "this host's drives as a table (from the running agent, or one poll)", _build_status),
    ]
    for name, help_text, build in commands:
        p = sub.add_parser(name, help=help_text)
        if command is None or command == name:
            build(p)
    return parser


def _build_agent(p: argparse.ArgumentParser) -> None:
    _add_common(p)
    p.add_argument("--listen-address", help=f"host:port to listen on (default :{DEFAULT_PORT})")
    p.add_argument("--web-config", help="web config file (TLS, basic auth), Prometheus exporter format")
    p.add_argument("--probe-helper-socket", help="run device tools through the probe helper on this UNIX socket")
    _extend(p)
    for name in _INTERVAL_NAMES:
        p.add_argument(f"--interval.{name}", dest=f"interval_{name}", type=float,
                       help=f"seconds between {name} polls")
    p.set_defaults(func=cmd_agent)


def _build_probe_helper(p: argparse.ArgumentParser) -> None:
    _add_common(p)
    p.add_argument("--socket", required=True, help="UNIX socket path to listen on")
    p.add_argument("--socket-group", help="group allowed to connect (the agent's group)")
    p.set_defaults(func=cmd_probe_helper)


def _build_collect(p: argparse.ArgumentParser) -> None:
    _add_common(p)
    _extend(p)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_collect)


def _build_source_command(spec: Any, command: Any, p: argparse.ArgumentParser) -> None:
    """A source's own command (syncwrite-dropin)."""
    p.add_argument("--config", help="YAML configuration file (the unit's: /etc/ssdfleet/config.yml)")
    command.arguments(p)
    p.set_defaults(func=_source_command(spec, command))


def _build_status(p: argparse.ArgumentParser) -> None:
    _add_common(p)
    p.add_argument("--url", help=f"agent URL (default http://127.0.0.1:{DEFAULT_PORT})")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--local", action="store_true", help="do not ask a running agent; poll once here")
    p.add_argument("--drive", help="show one drive (serial or device) in detail")
    p.add_argument("--watch", type=float, nargs="?", const=5.0, help="redraw every N seconds")
    p.add_argument("--color", choices=("auto", "always", "never"), default="auto")
    from agent.status import add_client_arguments

    add_client_arguments(p)
    _extend(p)
    p.set_defaults(func=cmd_status)


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(argv[0] if argv and not argv[0].startswith("-") else None)
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except ConfigError as exc:
        sys.stderr.write(f"ssdfleet: {exc}\n")
        return 64
    except ValueError as exc:  # WebConfigError and other start-up refusals
        sys.stderr.write(f"ssdfleet: {exc}\n")
        return 64
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (``ssdfleet collect --json | head``): not an error of ours.
        # Point stdout at /dev/null so the interpreter's final flush does not complain again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # what a shell reports for SIGPIPE
    except Exception as exc:  # never exit with a bare status and nothing said
        if str(getattr(args, "log_level", "") or "").upper() == "DEBUG":
            import traceback

            traceback.print_exc()
        sys.stderr.write(f"ssdfleet {args.command}: internal error: {type(exc).__name__}: {exc} "
                         "(--log-level DEBUG prints the traceback)\n")
        return 70  # EX_SOFTWARE


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
