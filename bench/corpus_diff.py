"""Which normalised figures of the real reports change between two versions of the code.

Every real report in tests/fixtures (smartctl JSON, smartctl text of every version, the hw-probe
training reports, shannon-status and fio-status output) is normalised twice: by the code of a
git revision (``--base``, default ``main``, unpacked with ``git archive`` into a temporary
directory, so neither checkout is touched) and by the working tree. Each figure that differs is
listed with both values, the source each version read it from, and the reason a version gives
for withholding it; a summary counts the changes by field and by kind (given -> withheld,
withheld -> given, value changed).

Usage: ``python bench/corpus_diff.py [--base REV] [--json OUT]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any, Dict, List, Tuple

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"

# The figures compared: every scalar of the reading a user sees.
FIELDS = (
    "life_left_ratio", "spare_left_ratio", "spare_threshold_ratio", "bad_block_ratio", "write_amplification",
    "host_written_bytes", "host_read_bytes", "nand_written_bytes", "power_on_seconds", "power_cycles",
    "capacity_bytes", "media_errors", "critical_warning", "readonly", "smart_healthy",
    "life_left_spread_ratio", "rated_host_written_bytes", "rated_nand_written_bytes", "power_loss_protection",
)

# Run inside a child interpreter whose sys.path starts at one version's code: prints one JSON
# object per report, {"file": ..., "figures": {field: value}, "sources": {...}, "withheld": {...}}.
_CHILD = r"""
import json, sys
from pathlib import Path
root, fixtures, fields = sys.argv[1], Path(sys.argv[2]), json.loads(sys.argv[3])
sys.path.insert(0, root)
from collectors.model import ParseError
from collectors.smartctl import parse_smartctl_json
from collectors.smartctl.text_report import parse_smartctl_text_reading
from collectors.shannon import parse as shannon
from collectors.fusionio import parse as fusionio

def readings(path):
    text = path.read_text(encoding="utf-8", errors="replace")
    folder = path.parent.name
    if folder == "smartctl-json":
        doc = json.loads(text)
        if not isinstance(doc, dict) or "devices" in doc:
            return []
        return [parse_smartctl_json(text, "/dev/sdx")]
    if folder in ("smartctl-text", "smartctl-text-bsdhw"):
        if "--scan" in path.name:
            return []
        return [parse_smartctl_text_reading(text, "/dev/sdx")]
    if folder == "shannon":
        return shannon.parse_status_p(text) if "status-p" in path.name else shannon.parse_status_a(text)
    if folder == "fusionio":
        return fusionio.parse_status(text)
    return []

for folder in ("smartctl-json", "smartctl-text", "smartctl-text-bsdhw", "shannon", "fusionio"):
    for path in sorted((fixtures / folder).iterdir()):
        if not path.is_file() or path.suffix not in (".json", ".txt"):
            continue
        try:
            got = readings(path)
        except ParseError as exc:
            print(json.dumps({"file": f"{folder}/{path.name}", "error": f"{type(exc).__name__}: {exc}"[:300]}))
            continue
        except Exception as exc:
            print(json.dumps({"file": f"{folder}/{path.name}", "exception": f"{type(exc).__name__}: {exc}"[:300]}))
            continue
        for index, r in enumerate(got):
            name = f"{folder}/{path.name}" + (f"#{index}" if len(got) > 1 else "")
            figures = {f: getattr(r, f, None) for f in fields}
            withheld = {f: r.extra.get(f + "_withheld") for f in fields if r.extra.get(f + "_withheld")}
            print(json.dumps({"file": name, "figures": figures,
                              "sources": {f: r.sources.get(f) for f in fields if r.sources.get(f)},
                              "withheld": withheld}, default=str))
"""


def _unpack(revision: str, into: Path) -> None:
    """The code of ``revision`` (collectors/ and agent/) under ``into``, via git archive."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", revision, "collectors", "agent"],
                             check=True, capture_output=True).stdout
    tar_path = into / "code.tar"
    tar_path.write_bytes(archive)
    with tarfile.open(tar_path) as tar:
        tar.extractall(into)  # our own repository's tree
    tar_path.unlink()


def _run(code_root: Path) -> Dict[str, Dict[str, Any]]:
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    out = subprocess.run([sys.executable, "-B", "-c", _CHILD, str(code_root), str(FIXTURES), json.dumps(FIELDS)],
                         check=True, capture_output=True, text=True, env=env, cwd=str(code_root)).stdout
    rows = [json.loads(line) for line in out.splitlines() if line.strip()]
    return {row["file"]: row for row in rows}


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))
    return a == b


def changes(base: Dict[str, Dict[str, Any]], ours: Dict[str, Dict[str, Any]]) -> List[Tuple[str, str, str, Any, Any, str, str]]:
    """(file, field, kind, old, new, old evidence, new evidence) for every figure that differs."""
    out = []
    for name in sorted(set(base) | set(ours)):
        before, after = base.get(name, {}), ours.get(name, {})
        for key in ("error", "exception"):
            if before.get(key) != after.get(key):
                out.append((name, key, "parse", before.get(key), after.get(key), "", ""))
        for field in FIELDS:
            old = (before.get("figures") or {}).get(field)
            new = (after.get("figures") or {}).get(field)
            if _same(old, new):
                continue
            kind = "withheld" if new is None else "given" if old is None else "changed"
            why_old = (before.get("sources") or {}).get(field) or (before.get("withheld") or {}).get(field) or ""
            why_new = (after.get("sources") or {}).get(field) or (after.get("withheld") or {}).get(field) or ""
            out.append((name, field, kind, old, new, why_old, why_new))
    return out


def _show(value: Any) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and value > 10**9:
        return f"{value / 1e12:.4g} TB" if value > 10**11 else f"{value:,}"
    return repr(value)


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base", default="main")
    parser.add_argument("--json", help="write the changes as JSON here")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="corpus-diff-") as tmp:
        _unpack(args.base, Path(tmp))
        base = _run(Path(tmp))
    ours = _run(ROOT)
    found = changes(base, ours)
    exceptions = [n for n, row in ours.items() if "exception" in row]
    readings = [n for n, row in ours.items() if "figures" in row]
    print(f"{len(readings)} readings from {len({n.split('#')[0] for n in ours})} reports; "
          f"{len(exceptions)} exceptions; {len(found)} figures differ from {args.base}")
    print("by field and kind: " + ", ".join(f"{f} {k}: {n}" for (f, k), n in
                                            sorted(Counter((c[1], c[2]) for c in found).items())))
    if args.json:
        Path(args.json).write_text(json.dumps(found, indent=1, default=str))
    for name, field, kind, old, new, why_old, why_new in found:
        print(f"\n{name}\n  {field} {kind}: {_show(old)} -> {_show(new)}\n    was: {why_old}\n    now: {why_new}")
    return 1 if exceptions else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
