"""The packages import one way: collectors/ is the bottom layer (the reading model, the bounded
runner, the sources and their parsers), agent/ builds the service on it, simulator/ builds fake
hosts on collectors/ and is reached by agent/ only as a command-line extension named in
agent/cli.py (``EXTENSIONS``), never imported. Inside agent/, policy and exposition reach the
sources only through the reading model and the registry; no source reads the snapshot; no
function in collectors/ or agent/ is over 80 lines. Checked on the source, every import
counted, those inside functions too."""

from __future__ import annotations

import ast
import dataclasses
import importlib
from pathlib import Path
from typing import Dict, Iterator, List, Set, Tuple

from tests.conftest import ROOT

PACKAGES = ("agent", "collectors", "simulator")
OURS = PACKAGES + ("tests",)
ALLOWED = {"agent": {"collectors"}, "collectors": set(), "simulator": {"collectors"}}


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


def test_the_simulator_is_a_command_line_extension_not_an_import():
    """``--simulate`` lives with the simulator (simulator/cli.py); the CLI names it only in
    its list of extensions, each with the two hooks the CLI calls."""
    from agent import cli

    assert "simulator.cli" in cli.EXTENSIONS
    for name in cli.EXTENSIONS:
        module = importlib.import_module(name)
        assert callable(module.add_arguments) and callable(module.prepare), name


# ------------------------------------------------------------------ policy and exposition

# collectors/ modules every layer may share: the reading model, the protocol, the bounded
# runner, evidence checks and number helpers, the failure log, and the registry. Every other
# module under collectors/ belongs to one source (or one family of sources).
SHARED = {"collectors", "collectors.model", "collectors.source", "collectors.runner", "collectors.evidence",
          "collectors.numbers", "collectors.failures", "collectors.registry", "collectors.families"}
# What policy and exposition may import of collectors/: the reading model, the registry and the
# metric families with their text writer (which the sources' views fill too).
EXPOSITION_MAY_IMPORT = {"collectors", "collectors.model", "collectors.registry", "collectors.families"}
# agent/ modules that hold policy (health rules, flags, projections) or expose the snapshot
# (/metrics, the API, the page, ``ssdfleet status``'s table and drive sheet). They import
# each other and agent/__init__ only: not the scheduler, the configuration or the CLI. (With
# them, agent.memory: the process's memory and pauses, the standard library only; the render
# releases its old cache through it.)
EXPOSITION = {
    "agent.health", "agent.views", "agent.durability", "agent.projection", "agent.endurance",
    "agent.metrics", "agent.api", "agent.server", "agent.page", "agent.page_chart", "agent.host_views",
    "agent.status_table", "agent.status_drive", "agent.runbooks", "agent.text", "agent.exposition_render",
    "agent.memory",
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules(package: str) -> Iterator[Path]:
    yield from sorted((ROOT / package).rglob("*.py"))


def _imported_modules(path: Path) -> Set[str]:
    """Every module of ours ``path`` imports (``from agent import health`` is agent.health)."""
    out: Set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
            for alias in node.names:
                candidate = f"{node.module}.{alias.name}"
                as_path = ROOT.joinpath(*candidate.split("."))
                if as_path.with_suffix(".py").exists() or (as_path / "__init__.py").exists():
                    out.add(candidate)
    return {m for m in out if m.split(".")[0] in OURS}


def source_modules() -> List[Path]:
    return [p for p in _modules("collectors") if _module_name(p) not in SHARED]


def test_the_exposition_list_names_modules_that_exist():
    for name in EXPOSITION:
        assert ROOT.joinpath(*name.split(".")).with_suffix(".py").exists(), name


def test_policy_and_exposition_import_no_source_module():
    """Policy and exposition reach a source only through the registry (by role, never by
    name) and its readings only through collectors/model.py; nor do they reach a source
    through another agent module (the scheduler, the configuration)."""
    wrong = []
    for path in _modules("agent"):
        name = _module_name(path)
        if name not in EXPOSITION:
            continue
        for imported in sorted(_imported_modules(path)):
            top = imported.split(".")[0]
            if top == "collectors" and imported not in EXPOSITION_MAY_IMPORT:
                wrong.append(f"{name} imports {imported}")
            elif top == "agent" and imported not in EXPOSITION | {"agent"}:
                wrong.append(f"{name} imports {imported} (not policy or exposition)")
    assert not wrong, "\n".join(wrong)


def _code_strings(path: Path) -> Iterator[Tuple[int, str]]:
    """(line, text) of every string constant in ``path`` that is not a docstring."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    for n in ast.walk(tree):
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs:
            yield n.lineno, n.value


def test_policy_and_exposition_name_no_source():
    """Issue 27: policy and exposition treat a source by its role and its spec's hooks, never by
    its name: no string in their code is a registered source's name (``"syncwrite"``). A name
    that is also a field of the reading model (``write_cache``, the drive's cache state) is the
    field, not the source, and is allowed."""
    from collectors import registry
    from collectors.model import Drive

    fields = {f.name for f in dataclasses.fields(Drive)}
    names = {spec.name for spec in registry.SOURCES} - fields
    assert "syncwrite" in names and "megaraid" in names
    wrong = [f"{_module_name(path)}:{line} names the source {text!r}"
             for path in _modules("agent") if _module_name(path) in EXPOSITION
             for line, text in _code_strings(path) if text in names]
    assert not wrong, "\n".join(wrong)


def test_no_source_reads_the_snapshot():
    """A source acts on the scheduler's inventory of targets (SourceContext.targets), never
    on the merged snapshot: it names neither the Snapshot type nor a ``snapshot`` attribute
    or variable, nor the snapshot's drive list, and the context it is given has no snapshot."""
    from collectors.source import SourceContext

    assert not [f.name for f in dataclasses.fields(SourceContext) if "snapshot" in f.name.lower()]
    wrong = [f"{path.relative_to(ROOT)}:{where}" for path in source_modules()
             for where in snapshot_uses(path.read_text(encoding="utf-8"))]
    assert not wrong, "\n".join(wrong)


_SNAPSHOT_NAMES = {"Snapshot", "snapshot", "drive_list"}


def snapshot_uses(code: str) -> List[str]:
    """``line name`` for each use of the snapshot's type, a ``snapshot`` name or attribute,
    or the snapshot's drive list in ``code``."""
    out = []
    for node in ast.walk(ast.parse(code)):
        names = []
        if isinstance(node, ast.Name):
            names = [node.id]
        elif isinstance(node, ast.Attribute):
            names = [node.attr]
        elif isinstance(node, ast.ImportFrom):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.arg):
            names = [node.arg]
        out += [f"{node.lineno} {n}" for n in names if n in _SNAPSHOT_NAMES]
    return out


def test_the_snapshot_check_finds_a_source_that_reads_it():
    """The check above, on sources written the old way and on a clean one."""
    assert snapshot_uses("def run(self):\n    for d in self.ctx.snapshot().drives:\n        pass\n") == ["2 snapshot"]
    assert snapshot_uses("from collectors.model import Snapshot, drive_list\n") == ["1 Snapshot", "1 drive_list"]
    assert snapshot_uses("def run(self):\n    return [t.device for t in self.ctx.targets()]\n") == []


# ------------------------------------------------------------------ function length

MAX_LINES = 80
# Functions over MAX_LINES allowed for a while (the list may only shrink): none now; the last,
# fio-status's module block, became one line rule per pattern.
LONG_FUNCTIONS_ALLOWED: set = set()


def long_functions(root: Path = ROOT) -> List[str]:
    out = []
    for package in ("collectors", "agent"):
        for path in sorted((root / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    lines = node.end_lineno - node.lineno + 1
                    if lines > MAX_LINES:
                        out.append((f"{path.relative_to(root).as_posix()}:{node.name}", lines, node.lineno))
    return out


def test_no_function_in_collectors_or_agent_is_over_80_lines():
    """Sources and the agent are split per step (issue 14 for the SMART read, issue 27 for the
    rest); a function that grows past 80 lines is a sign a split is being undone."""
    found = long_functions()
    long = [f"{key} ({lines} lines, line {lineno})" for key, lines, lineno in found
            if key not in LONG_FUNCTIONS_ALLOWED]
    assert not long, "\n".join(long)
    # an allowed function that was split leaves the list
    stale = LONG_FUNCTIONS_ALLOWED - {key for key, _lines, _lineno in found}
    assert not stale, f"split already, remove from LONG_FUNCTIONS_ALLOWED: {sorted(stale)}"


def test_the_length_check_sees_a_long_function(tmp_path):
    (tmp_path / "agent").mkdir()
    (tmp_path / "collectors").mkdir()
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_LINES))
    (tmp_path / "agent" / "long.py").write_text(f"def long():\n{body}\n")
    assert [key for key, _lines, _ in long_functions(tmp_path)] == ["agent/long.py:long"]


# ------------------------------------------------------------------ tests

# Test modules that still import from another test module, with the piece of work that owns
# them right now (the list may only shrink).
TEST_IMPORTS_ALLOWED = {
    # issue 29 (the smartctl parsers): the corpus summary reads the corpus test's predicates
    ("tests/test_corpus_summary.py", "tests.sources.smartctl.test_smartctl_corpus"),
}


def test_test_modules_import_helpers_from_tests_support_only():
    """Shared helpers live in tests/support/ (issue 27), so a test module can move into a
    folder of its own, or go, without breaking the others."""
    wrong = []
    for path in sorted((ROOT / "tests").rglob("*.py")):
        where = path.relative_to(ROOT).as_posix()
        for imported in sorted(_imported_modules(path)):
            if imported.split(".")[-1].startswith("test_") and (where, imported) not in TEST_IMPORTS_ALLOWED:
                wrong.append(f"{where} imports {imported}")
    assert not wrong, "\n".join(wrong)
