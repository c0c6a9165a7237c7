"""What each import of the agent's start costs in resident memory and time.

A fresh interpreter (``--python``, this one by default) imports the modules below one after
another, in the order ``ssdfleet agent`` first needs them, from ``--tree`` (this checkout by
default, or another to compare), and reports after each the growth of VmRSS and the time
taken; ``--rounds`` fresh interpreters, medians printed. A module another one already pulled
in costs nothing at its own step, so the first library charged for a module they share (``ssl``,
``http.client``) looks dearer than it is. The second table answers what dropping one library
would save: each library (``LIBRARIES``: those the agent loads by default, and prometheus_client,
which it wrote /metrics with until issue 32) is imported last, in fresh interpreters of its own,
after the others and after every standard-library module the agent's start imports (the
standard library a library shares with the agent is not saved by dropping the library); its
growth is what it alone adds.
Then ``python -X importtime`` of the whole agent start's imports, its ten costliest cumulative
entries.

Usage: ``python bench/import_cost.py [--tree PATH] [--rounds 3]``. Asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Sequence

ROOT = Path(__file__).resolve().parent.parent

# What cmd_agent imports, in order, with the third-party libraries first on their own.
STEPS = ["pydantic", "yaml", "bcrypt", "h11", "asyncio", "sqlite3",
         "collectors.registry", "agent.config", "agent.cli", "agent.poller", "agent.views", "agent.server",
         "agent.webconfig", "agent.api", "agent.page"]

# The third-party and standard libraries ``ssdfleet agent`` imports with no configuration file
# (yaml and bcrypt only with one), each measured last for the second table.
# "a+b": imported together (asyncio imports ssl, so ssl alone never costs anything).
LIBRARIES = ["pydantic", "h11", "asyncio+ssl", "asyncio", "sqlite3", "prometheus_client"]
_NAMES = {name for library in LIBRARIES for name in library.split("+")}
# Measured as an addition only: never among the others (it imports ssl through http.client).
NOT_LOADED = {"prometheus_client"}
AGENT_START = "import agent.cli, agent.poller, agent.views, agent.server, agent.api"

# The standard-library modules the agent's start imports (top-level names, LIBRARIES excluded).
_STDLIB = r"""
import sys, sysconfig
AGENT_START
stdlib = sysconfig.get_paths()["stdlib"]
names = set()
for name, module in list(sys.modules.items()):
    top = name.split(".")[0]
    where = getattr(module, "__file__", None) or ""
    if top in sys.builtin_module_names or where.startswith(stdlib) and "site-packages" not in where:
        names.add(top)
print(" ".join(sorted(names)))
"""

_CHILD = r"""
import importlib, json, sys, time
def rss():
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
out = [("python", rss(), 0.0)]
for name in sys.argv[1:]:
    started = time.perf_counter()
    importlib.import_module(name)
    out.append((name, rss(), time.perf_counter() - started))
print(json.dumps(out))
"""


def one_round(python: str, tree: Path) -> List:
    env = dict(os.environ, PYTHONPATH=str(tree))
    out = subprocess.run([python, "-c", _CHILD] + STEPS, capture_output=True, text=True, env=env,
                         cwd=str(tree), check=True, timeout=300)
    return json.loads(out.stdout)


def agent_stdlib(python: str, tree: Path) -> List[str]:
    env = dict(os.environ, PYTHONPATH=str(tree))
    out = subprocess.run([python, "-c", _STDLIB.replace("AGENT_START", AGENT_START)], capture_output=True, text=True,
                         env=env, cwd=str(tree), check=True, timeout=300)
    # A library's C half (_ssl, _asyncio, _sqlite3) goes with it.
    return [name for name in out.stdout.split() if name.lstrip("_") not in _NAMES and not name.startswith("__")]


def last_growth(python: str, tree: Path, library: str, stdlib: Sequence[str] = ()) -> float:
    """KiB of RSS that ``library`` adds when ``stdlib`` and every other one of LIBRARIES are
    already imported."""
    mine = library.split("+")
    others = list(stdlib) + sorted(_NAMES - NOT_LOADED - set(mine))
    env = dict(os.environ, PYTHONPATH=str(tree))
    out = subprocess.run([python, "-c", _CHILD] + others + mine, capture_output=True, text=True, env=env,
                         cwd=str(tree), check=True, timeout=300)
    steps = json.loads(out.stdout)
    return float(steps[-1][1] - steps[-1 - len(mine)][1])


def importtime(python: str, tree: Path, top: int = 10) -> List[str]:
    env = dict(os.environ, PYTHONPATH=str(tree))
    code = "import agent.cli, agent.poller, agent.views, agent.server, agent.webconfig, agent.api"
    err = subprocess.run([python, "-X", "importtime", "-c", code], capture_output=True, text=True, env=env,
                         cwd=str(tree), timeout=300).stderr
    rows = []
    for line in err.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[1].strip().isdigit():
            rows.append((int(parts[1]), parts[2].rstrip()))
    return [f"{us / 1000:8.1f} ms  {name}" for us, name in sorted(rows, reverse=True)[:top]]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", default=str(ROOT))
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    tree = Path(args.tree)
    load = os.getloadavg()[0]
    rounds = [one_round(args.python, tree) for _ in range(args.rounds)]
    print(f"tree {tree}, {args.rounds} fresh interpreters, load average {load:.2f} -> {os.getloadavg()[0]:.2f}")
    print("| import | RSS growth MiB | time ms | RSS after MiB |")
    print("|---|---:|---:|---:|")
    growth: Dict[str, float] = {}
    for i, (name, _, _) in enumerate(rounds[0]):
        after = statistics.median(r[i][1] for r in rounds) / 1024
        before = statistics.median(r[i - 1][1] for r in rounds) / 1024 if i else 0.0
        took = statistics.median(r[i][2] for r in rounds) * 1000
        growth[name] = after - before
        print(f"| {name} | {after - before:.1f} | {took:.0f} | {after:.1f} |")
    print()
    stdlib = agent_stdlib(args.python, tree)
    print(f"Each library imported last, after the others and the {len(stdlib)} standard-library packages the "
          "agent's start imports (what dropping it alone would save):")
    print("| library | RSS growth MiB |")
    print("|---|---:|")
    for library in LIBRARIES:
        kib = statistics.median(last_growth(args.python, tree, library, stdlib) for _ in range(args.rounds))
        print(f"| {library} | {kib / 1024:.1f} |")
    print()
    print("python -X importtime, costliest cumulative entries:")
    for line in importtime(args.python, tree):
        print("   ", line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
