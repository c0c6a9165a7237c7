"""Generate the Grafana dashboard JSON that users import, from the code in this package.

    python -m dashboards.build            # (re)write dashboards/json/*.json
    python -m dashboards.build --check    # exit 1 if a committed file differs from the code

The JSON is rendered deterministically (sorted keys, two-space indent, trailing newline) so
that a review diff shows exactly what changed and ``--check`` can compare text.

Needs grafana-foundation-sdk (pinned in dashboards/requirements.txt), which itself needs
Python 3.11 or newer; the agent does not import this package.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence

JSON_DIR = Path(__file__).resolve().parent / "json"


def dashboards() -> Dict[str, Callable[[], object]]:
    """File name -> builder, imported lazily so ``--help`` works without the SDK."""
    from dashboards import drive, fleet, host

    return {
        "ssdfleet-fleet.json": fleet.build,
        "ssdfleet-host.json": host.build,
        "ssdfleet-drive.json": drive.build,
    }


def render(model: object) -> str:
    from grafana_foundation_sdk.cog.encoder import JSONEncoder

    return json.dumps(model, cls=JSONEncoder, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def rendered() -> Dict[str, str]:
    """File name -> the JSON text the code produces now."""
    return {name: render(build()) for name, build in dashboards().items()}


def stale_files(out_dir: Path = JSON_DIR) -> List[str]:
    """Names of generated files that are missing or differ from the code, plus stray files."""
    expected = rendered()
    stale = []
    for name, text in expected.items():
        path = out_dir / name
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            stale.append(name)
    if out_dir.exists():
        stale.extend(sorted(p.name for p in out_dir.glob("*.json") if p.name not in expected))
    return stale


def write(out_dir: Path = JSON_DIR) -> List[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in rendered().items():
        path = out_dir / name
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            written.append(path)
    return written


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dashboards.build", description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="fail if the committed JSON is stale; write nothing")
    parser.add_argument("--out", type=Path, default=JSON_DIR, help=f"output directory (default {JSON_DIR})")
    args = parser.parse_args(argv)
    if args.check:
        stale = stale_files(args.out)
        if stale:
            print(
                f"stale dashboard JSON in {args.out}: {', '.join(stale)}; run: python -m dashboards.build",
                file=sys.stderr,
            )
            return 1
        print(f"dashboard JSON in {args.out} is up to date")
        return 0
    written = write(args.out)
    for path in written:
        print(f"wrote {path}")
    if not written:
        print(f"dashboard JSON in {args.out} already up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
