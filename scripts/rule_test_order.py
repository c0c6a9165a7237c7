"""Write ``group_eval_order`` into every promtool test file under tests/rules/.

promtool evaluates the rule groups of a test in a random order unless the test file lists them
(``group_eval_order``), and the shipped rules chain across groups: the 5-minute rates feed the
hourly figures, which feed the day figures once an hour, which feed the 4-minute day rules and
the alerts. Without an order, a value recorded by a later group could be read a minute late in
some runs and not in others. This script lists every group of the rule files a test loads, in
the order they appear there (the shipped files are written so that a group only reads groups
above it), and replaces the test file's ``group_eval_order`` block, or adds one after
``evaluation_interval``. ``tests/test_rules.py`` checks that the files are up to date.

Usage: ``python scripts/rule_test_order.py`` (``--check`` only reports the stale files).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import List

import yaml

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests" / "rules"


def group_order(test_file: Path) -> List[str]:
    """The groups of the rule files ``test_file`` loads, in file order."""
    doc = yaml.safe_load(test_file.read_text(encoding="utf-8"))
    names: List[str] = []
    for rule_file in doc.get("rule_files", []):
        rules = yaml.safe_load((test_file.parent / rule_file).read_text(encoding="utf-8"))
        names.extend(group["name"] for group in rules.get("groups", []))
    return names


def with_order(text: str, names: List[str]) -> str:
    """``text`` with its group_eval_order block set to ``names`` (comments elsewhere kept)."""
    block = "group_eval_order:\n" + "".join(f"  - {name}\n" for name in names)
    lines = text.splitlines(keepends=True)
    has_block = any(line.startswith("group_eval_order:") for line in lines)
    out: List[str] = []
    index = 0
    placed = False
    while index < len(lines):
        line = lines[index]
        if has_block and line.startswith("group_eval_order:"):
            index += 1
            while index < len(lines) and lines[index].startswith("  - "):
                index += 1
            out.append(block)
            placed = True
            continue
        out.append(line)
        if not has_block and line.startswith("evaluation_interval:"):
            out.append("\n" + block)
            placed = True
        index += 1
    if not placed:
        raise ValueError("no evaluation_interval line to put group_eval_order after")
    return "".join(out)

def main(argv: List[str]) -> int:
    check = "--check" in argv
    stale = []
    for path in sorted(TESTS.glob("*.yml")):
        text = path.read_text(encoding="utf-8")
        wanted = with_order(text, group_order(path))
        if wanted != text:
            stale.append(path.name)
            if not check:
                path.write_text(wanted, encoding="utf-8")
    for name in stale:
        print(f"{'stale' if check else 'updated'}: tests/rules/{name}")
    return 1 if check and stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
