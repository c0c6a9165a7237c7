"""What ``smartctl.all_attributes`` costs: series and bytes of /metrics per ATA drive.

Every ATA report in the corpus (tests/fixtures/smartctl-json, smartctl-text, smartctl-text-bsdhw)
is read as the agent reads it, once without and once with every attribute, and the drive's share
of the /metrics text is rendered by the agent's own exposition (agent/metrics.py). Printed: the
drives measured, and per drive the extra series and bytes (median, 95th percentile, most), plus
the same for the exposition as a whole at the largest table.

Usage: ``python bench/attribute_series.py [FOLDER ...]``. Returns 0; prints the figures.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path
from typing import List, Tuple

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from agent.metrics import drive_families  # noqa: E402
from collectors.families import text as text_format  # noqa: E402
from collectors.model import Drive, ParseError  # noqa: E402
from collectors.smartctl import parse_smartctl_json, parse_smartctl_text_reading  # noqa: E402

FOLDERS = ("smartctl-json", "smartctl-text", "smartctl-text-bsdhw")


def _render(drive: Drive) -> Tuple[int, int]:
    """(samples, bytes) of one drive's per-drive families."""
    text = text_format(drive_families([drive]))
    samples = sum(1 for line in text.splitlines() if line and not line.startswith(b"#"))
    return samples, len(text)


def _reading(path: Path):
    data = path.read_bytes()
    if path.suffix == ".json":
        return parse_smartctl_json(data, device="/dev/sda")
    return parse_smartctl_text_reading(data.decode("utf-8", "replace"), device="/dev/sda")


def measure(folders=FOLDERS) -> List[Tuple[str, int, int, int]]:
    """(file, attribute rows, extra samples, extra bytes) for each ATA report that parses."""
    out = []
    for folder in folders:
        for path in sorted((ROOT / "tests" / "fixtures" / folder).iterdir()):
            if path.suffix not in (".json", ".txt"):
                continue
            try:
                reading = _reading(path)
            except ParseError:
                continue
            if reading.kind != "ata" or not reading.ata_attributes:
                continue
            with_rows = Drive(reading=reading, last_poll={"smartctl": 1.0})
            without = Drive(reading=reading.replace(ata_attributes=()), last_poll={"smartctl": 1.0})
            (n_on, b_on), (n_off, b_off) = _render(with_rows), _render(without)
            out.append((path.name, len(reading.ata_attributes), n_on - n_off, b_on - b_off))
    return out


def _p95(values: List[int]) -> int:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]


def main(argv: List[str]) -> int:
    rows = measure(tuple(argv) or FOLDERS)
    series = [r[2] for r in rows]
    sizes = [r[3] for r in rows]
    widest = max(rows, key=lambda r: r[2])
    print(f"ATA drives measured: {len(rows)}")
    print(f"extra series per drive with smartctl.all_attributes on: median {statistics.median(series):.0f}, "
          f"p95 {_p95(series)}, most {max(series)} ({widest[0]}, {widest[1]} attributes)")
    print(f"extra /metrics bytes per drive (uncompressed): median {statistics.median(sizes):,.0f}, "
          f"p95 {_p95(sizes):,}, most {max(sizes):,}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
