"""The packages import one way: collectors/ is the bottom layer (the reading model, the bounded
runner, the sources and their parsers), agent/ builds the service on it, simulator/ builds fake
hosts on collectors/ and is started by agent/. Checked on the source, every import counted,
those inside functions too."""

from __future__ import annotations

import ast
from typing import Dict, Set

from tests.conftest import ROOT

PACKAGES = ("agent", "collectors", "simulator")
ALLOWED = {"agent": {"collectors", "simulator"}, "collectors": set(), "simulator": {"collectors"}}


def _imports(package: str) -> Dict[str, Set[str]]:
    """{module file: the other packages of ours it imports}."""
    out: Dict[str, Set[str]] = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        names: Set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module.split(".")[0])
        out[str(path.relative_to(ROOT))] = {n for n in names if n in PACKAGES and n != package}
    return out


def test_each_package_imports_only_the_layers_below_it():
    wrong = [f"{module} imports {sorted(found - ALLOWED[package])}"
             for package in PACKAGES for module, found in _imports(package).items()
             if found - ALLOWED[package]]
    assert not wrong, "\n".join(wrong)


def test_no_cycle_between_packages():
    edges = {p: set().union(*_imports(p).values()) for p in PACKAGES}

    def reaches(start: str, goal: str, seen: Set[str]) -> bool:
        return any(n == goal or (n not in seen and reaches(n, goal, seen | {n})) for n in edges[start])

    assert not [p for p in PACKAGES if reaches(p, p, {p})]


def test_no_function_in_the_smartctl_normaliser_is_over_80_lines():
    """The SMART read is split per protocol and per step (issue 14); a function that grows past
    80 lines is a sign the split is being undone."""
    long = []
    for path in sorted((ROOT / "collectors" / "smartctl").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > 80:
                    long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({lines} lines)")
    assert not long, "\n".join(long)
