"""``--simulate``: the simulator's options on ``ssdfleet agent``, ``status`` and ``collect``.

The agent's command line knows this module only as one of its command-line extensions
(agent/cli.py, ``EXTENSIONS``): it asks it to add its options to each command and, before the
configuration is read, to prepare the host. Everything about the demo host (the options, their
help, building the host, pointing the tool and host paths at it) lives here, with the
simulator; the demo itself is imported only when ``--simulate`` is given, so an agent that runs
on a real host never loads it.

The simulator does not import the agent (tests/test_import_graph.py): the agent hands in how
to open its history file (``open_history``) to seed the demo's past.
"""

from __future__ import annotations

import argparse
from typing import Any, Callable, Optional

# The commands that take --simulate and the verb their help uses.
COMMANDS = {"agent": "serve", "collect": "poll", "status": "show"}
# What `ssdfleet status` and `collect` say about where their figures came from.
SOURCE_NOTE = "one poll of the simulated host (--simulate), with its seeded history"


def add_arguments(parser: argparse.ArgumentParser, command: str) -> None:
    """--simulate, --simulate-speed and --simulate-dir for the commands that read a host."""
    verb = COMMANDS.get(command)
    if verb is None:
        return
    parser.add_argument("--simulate", type=int, nargs="?", const=8, metavar="DRIVES",
                        help=f"demo: {verb} a simulated database host with this many drives (default 8)")
    parser.add_argument("--simulate-speed", type=float, default=1.0,
                        help="simulated seconds per real second (default 1: real time)")
    parser.add_argument("--simulate-dir", help="where to build the simulated host (default: a temp dir)")


def prepare(args: argparse.Namespace, open_history: Callable[[str, float], Any]) -> Optional[str]:
    """With ``--simulate N``: build a simulated host (fake tools, sysfs, procfs, a seeded
    history) and point the command's tool and host paths at it, so the real probe-parse path
    runs on any machine; options the user gave keep their value. Returns what the figures are
    (a one-poll command keeps the seeded history and says so), or None without --simulate."""
    if not getattr(args, "simulate", None):
        return None
    from simulator.demo import setup_simulated_host

    overrides = setup_simulated_host(drives=args.simulate, speed=args.simulate_speed,
                                     root=args.simulate_dir, state_dir=getattr(args, "state_dir", None),
                                     open_history=open_history)
    for key, value in overrides.items():
        if getattr(args, key, None) is None:
            setattr(args, key, value)
    return SOURCE_NOTE
