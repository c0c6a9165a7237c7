"""Fake RAID controller tools for the tests: each replays a real capture chosen by its whole
argument list (storcli's three commands all end in ``J``, so the last argument cannot choose),
found through the configured tool path as a user would set it. A test may swap a response
between polls (``answer``) to switch a volume or a battery. Every call is logged."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import List, Union

from tests.conftest import fixture_path

_SCRIPT = """#!/bin/sh
# fake {name}: replays captured output chosen by its arguments
R="{responses}"
printf '%s\\n' "{name} $*" >> "{log}"
key=$(printf '%s' "$*" | tr -c 'A-Za-z0-9' '_')
if [ ! -f "$R/$key.out" ]; then echo "fake {name}: no response for: $*" >&2; exit 2; fi
cat "$R/$key.out"
exit "$(cat "$R/$key.rc" 2>/dev/null || echo 0)"
"""


def key(args: str) -> str:
    return re.sub(r"[^A-Za-z0-9]", "_", args)


class FakeControllerTool:
    def __init__(self, root: Path, name: str) -> None:
        self.root = Path(root)
        self.path = self.root / "bin" / name
        self.responses = self.root / "responses" / name
        self.log = self.root / "controller-calls.log"
        self.responses.mkdir(parents=True, exist_ok=True)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.log.touch()
        self.path.write_text(_SCRIPT.format(name=name, responses=self.responses, log=self.log))
        self.path.chmod(self.path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)

    def answer(self, args: str, output: Union[str, bytes, Path], exit_code: int = 0) -> None:
        """Answer ``args`` (as the agent passes them, space-separated) with ``output``: a
        fixture name under tests/fixtures, a Path, or the bytes themselves."""
        if isinstance(output, str) and "\n" not in output:
            data = fixture_path(output).read_bytes()
        elif isinstance(output, Path):
            data = output.read_bytes()
        else:
            data = output.encode() if isinstance(output, str) else output
        tmp = self.responses / ".tmp"
        tmp.write_bytes(data)
        os.replace(tmp, self.responses / f"{key(args)}.out")  # atomic: a running poll never sees half
        (self.responses / f"{key(args)}.rc").write_text(str(exit_code))

    def calls(self) -> List[str]:
        return self.log.read_text().splitlines()


_SMARTCTL = """#!/bin/sh
# fake smartctl for drives behind a controller: the response is chosen by the -d type
R="{responses}"
printf '%s\\n' "smartctl $*" >> "{log}"
key=""; prev=""
for a in "$@"; do
  case "$a" in --version) key=version ;; --scan|--scan-open) key=scan ;; esac
  if [ "$prev" = "-d" ]; then typ="$a"; fi
  prev="$a"; last="$a"
done
if [ -z "$key" ]; then key=$(printf '%s_%s' "$typ" "$(basename -- "$last")" | tr -c 'A-Za-z0-9' '_'); fi
if [ ! -f "$R/$key.out" ]; then echo "fake smartctl: no response for: $*" >&2; exit 2; fi
cat "$R/$key.out"
exit "$(cat "$R/$key.rc" 2>/dev/null || echo 0)"
"""


class FakeSmartctlBehindController(FakeControllerTool):
    """smartctl answering ``--version``, ``--scan-open`` and one read per ``-d`` type (every drive
    behind a MegaRAID is opened on the same node, /dev/bus/N: only the type tells them apart)."""

    def __init__(self, root: Path) -> None:
        super().__init__(root, "smartctl")
        self.path.write_text(_SMARTCTL.format(responses=self.responses, log=self.log))


# Fixture folders, and MegaCli answers from two real captures (tests that need a MegaRAID host).
MR, ARC, SSA = "megaraid/", "arcconf/", "ssacli/"
MEGACLI = {"-AdpAllInfo -aALL -NoLog": MR + "percona__MegaCli64_AdpAllInfo_aALL001.txt",
           "-PDList -aALL -NoLog": MR + "check_raid__pr74_pdlist.txt"}
