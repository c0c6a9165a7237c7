"""ssdfleet(1), written from the command-line parser so that the manual page and ``--help``
cannot disagree. The .deb and .rpm carry its output (packaging/build.sh runs
``python -m agent.manpage``).
"""

from __future__ import annotations

import argparse
import sys
from typing import Iterator, List, Optional, Sequence

from agent import __version__
from agent.cli import build_parser

FILES = [
    ("/etc/ssdfleet/config.yml", "the configuration both services read; every key is optional"),
    ("/var/lib/ssdfleet/history.sqlite", "the agent's history (life left, bad blocks, writes over time)"),
    ("/run/ssdfleet-probe-helper/probe.sock", "the probe helper's socket, open to the ssdfleet group"),
    ("/etc/systemd/system/ssdfleet-agent.service.d/syncwrite.conf", "written by ssdfleet syncwrite-dropin: "
     "the sync-write probe's directories, writable to the agent's sandbox"),
    ("/usr/share/ssdfleet/", "the example configuration, Prometheus rules, Alertmanager example and "
                             "Grafana dashboards"),
]


def roff(text: str) -> str:
    """Text made safe for roff: backslashes, hyphens, and a control character at line start."""
    out = text.replace("\\", "\\e").replace("-", "\\-")
    return "\\&" + out if out.startswith((".", "'")) else out


def _subcommands(parser: argparse.ArgumentParser) -> List[argparse._SubParsersAction]:
    # argparse keeps its subcommands in a private action class; there is no public accessor.
    return [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]


def _options(parser: argparse.ArgumentParser) -> Iterator[str]:
    for action in parser._actions:
        if not action.option_strings or action.help == argparse.SUPPRESS:
            continue
        names = ", ".join(f"\\fB{roff(o)}\\fR" for o in action.option_strings)
        if action.nargs != 0:
            metavar = action.metavar or action.dest.upper()
            names += f" [\\fI{roff(metavar)}\\fR]" if action.nargs == "?" else f" \\fI{roff(metavar)}\\fR"
        yield ".TP"
        yield names
        yield roff(action.help or "")


def render(parser: Optional[argparse.ArgumentParser] = None) -> str:
    parser = parser or build_parser()
    lines = [
        f'.TH SSDFLEET 1 "" "ssdfleet {__version__}" "User Commands"',
        ".SH NAME",
        f"ssdfleet \\- {roff(parser.description or '')}",
        ".SH SYNOPSIS",
        "\\fBssdfleet\\fR [\\fB\\-\\-version\\fR] \\fICOMMAND\\fR [\\fIOPTIONS\\fR]",
        ".SH DESCRIPTION",
        "One agent per host reads every flash drive it can find (Shannon PCIe cards, SATA, SAS and "
        "NVMe drives through smartctl, the write cache, the kernel's I/O counters) and serves the "
        "result to Prometheus. Each command below also prints its options with \\fB\\-\\-help\\fR.",
        ".SH COMMANDS",
    ]
    for sub in _subcommands(parser):
        helps = {a.dest: a.help for a in sub._choices_actions}
        for name, child in sub.choices.items():
            lines += [f".SS ssdfleet {roff(name)}", roff(helps.get(name) or "")]
            lines += list(_options(child))
    lines += [".SH FILES"]
    for path, what in FILES:
        lines += [".TP", f"\\fI{roff(path)}\\fR", roff(what)]
    lines += [
        ".SH EXIT STATUS",
        "\\fBssdfleet status\\fR exits as a Nagios plugin does: 0 ok, 1 warning, 2 critical, 3 unknown. "
        "The other commands exit 0 on success and non\\-zero on an error.",
        ".SH SEE ALSO",
        "\\fBsmartctl\\fR(8), \\fBsystemd.exec\\fR(5), \\fBsysusers.d\\fR(5); "
        "the systemd units ssdfleet\\-agent.service and ssdfleet\\-probe\\-helper.service.",
    ]
    return "\n".join(lines) + "\n"


def main(argv: Optional[Sequence[str]] = None) -> int:
    sys.stdout.write(render())
    return 0


if __name__ == "__main__":
    sys.exit(main())
