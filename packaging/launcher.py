#!/usr/bin/python3 -IS
"""ssdfleet, as the .deb and .rpm install it (/usr/bin/ssdfleet).

The distribution's python3 runs the code in /usr/lib/ssdfleet/app with the libraries resolved
for that Python version: what is particular to it (compiled code) in /usr/lib/ssdfleet/deps/cpXY,
then what every supported version shares in /usr/lib/ssdfleet/deps/common (packaging/pydeps.py).
-I ignores PYTHON* variables and the user's site directory, -S keeps the system's own
site-packages out, so the agent sees exactly the libraries it was packaged with, whatever else
is installed with pip or the package manager.
"""

import os
import sys

LIB = os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(__file__))), "lib", "ssdfleet")
ABI = f"cp{sys.version_info[0]}{sys.version_info[1]}"
DEPS = os.path.join(LIB, "deps", ABI)

if not os.path.isdir(DEPS):
    listed = os.listdir(os.path.join(LIB, "deps")) if os.path.isdir(os.path.join(LIB, "deps")) else []
    built = sorted(name for name in listed if name.startswith("cp") and "." not in name)
    sys.stderr.write(f"ssdfleet: this package has no dependencies for Python {sys.version.split()[0]} ({ABI}); "
                     f"it was built for: {', '.join(built) or 'none'}\n")
    sys.exit(70)  # EX_SOFTWARE

sys.path[:0] = [os.path.join(LIB, "app"), DEPS, os.path.join(LIB, "deps", "common")]
# The maintainer scripts compile the byte code at install time and remove it at removal; the
# program itself never writes into /usr/lib, so nothing is left that the package does not know.
sys.dont_write_bytecode = True

from agent.cli import main  # noqa: E402

sys.exit(main())
