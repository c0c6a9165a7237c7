"""The evidence report over every real smartctl report in the repository.

For each report (smartctl JSON, plain text from 5.x to 7.5, the hw-probe training corpus): does
it parse (0 exceptions other than ParseError/NoSmartData allowed); where a drive carries two
independent sources of one figure, how often they agree; how many figures were withheld, and
why. The sources compared:

* life left: ATA device statistics' Percentage Used Endurance Indicator against the vendor life
  attribute the drive database names (within 10 points);
* host bytes written: device statistics' Logical Sectors Written against the write attribute of
  established unit (within 2%, or equal modulo 2**32 sectors: a 32-bit devstat counter);
* power-on time: device statistics' Power-on Hours against attribute 9 (within 1% or 2 hours).

Usage: ``python bench/corpus_report.py [FOLDER ...]`` (default: tests/fixtures/smartctl-json,
smartctl-text and smartctl-text-bsdhw). Prints the report; :func:`report` returns it.
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Iterable, List, Optional

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from collectors.model import DriveReading, ParseError  # noqa: E402
from collectors.smartctl import (  # noqa: E402
    NoSmartData,
    ata,  # noqa: E402
    normalise_smartctl,
)
from collectors.smartctl import attributes as attrs  # noqa: E402
from collectors.smartctl.text_report import parse_smartctl_text  # noqa: E402

FOLDERS = ("smartctl-json", "smartctl-text", "smartctl-text-bsdhw")
FIELDS = ("life_left_ratio", "host_written_bytes", "power_on_seconds")

# Reason classes: the first pattern that matches a withheld reason names it.
_REASON_CLASSES = (
    ("rotating drive (no flash life)", r"rotating drive"),
    ("default name on an unknown drive", r"default name|not vouch|unit not established"),
    ("beyond physical bounds", r"over 2\*\*63|times the capacity|faster than the link|beyond any drive|over 20 years"),
    ("against the drive's own wear", r"drive writes|average erase|erase counts|full-capacity writes|rated life"),
    ("sources disagree", r"disagree|which is right"),
    ("broken device statistics", r"all 48 bits|below Number of|copies vendor|is 0 while"),
    ("unit unknown on this model (table)", r"unit unknown on this model"),
    ("counter pair impossible (NVMe)", r"fewer than host_"),
    ("saturated counter", r"16-bit counter"),
    ("contradicted by the self-test log", r"the self-test log holds"),
    ("no source on the drive", r"no life figure|no volume counter"),
)


def reason_class(reason: str) -> str:
    for name, pattern in _REASON_CLASSES:
        if re.search(pattern, reason):
            return name
    return "other"


@dataclass
class Report:
    files: int = 0
    drives: int = 0
    no_data: int = 0
    parse_errors: int = 0
    exceptions: List[str] = field(default_factory=list)
    given: Counter = field(default_factory=Counter)
    withheld: Dict[str, Counter] = field(default_factory=dict)
    both: Counter = field(default_factory=Counter)  # drives with two sources of a figure
    agree: Counter = field(default_factory=Counter)
    disagreeing: Dict[str, List[str]] = field(default_factory=dict)

    def lines(self) -> List[str]:
        out = [f"{self.files} reports: {self.drives} drives, {self.no_data} without SMART data, "
               f"{self.parse_errors} refused as malformed, {len(self.exceptions)} exceptions"]
        for name in FIELDS:
            withheld = self.withheld.get(name, Counter())
            out.append(f"{name}: given {self.given[name]}, withheld {sum(withheld.values())}"
                       + "".join(f"\n    {n:>4}  {why}" for why, n in withheld.most_common()))
        for name in FIELDS:
            if self.both[name]:
                share = self.agree[name] / self.both[name]
                out.append(f"two independent sources of {name}: {self.both[name]} drives, agree on "
                           f"{self.agree[name]} ({share:.1%})")
        return out


def _devstat(doc: Dict) -> Dict[str, int]:
    return ata.device_statistics(doc)


def _compare(doc: Dict, reading: DriveReading, rep: Report, name: str) -> None:
    """Tally the two independent sources of each figure where an ATA drive has both."""
    if reading.kind != "ata" or not reading.is_ssd:
        return
    devstat = _devstat(doc)
    vocab = ata.vocabulary(_table(doc), doc)
    findings = attrs.interpret_attributes(vocab.attributes, vocab.family, reading.model,
                                          reading.logical_sector_bytes)
    sector = reading.logical_sector_bytes or 512
    used = devstat.get("Percentage Used Endurance Indicator")
    vendor, _ = ata._vendor_life(findings)
    if used is not None and used != 255 and vendor is not None:
        _tally(rep, "life_left_ratio", abs((100 - min(used, 100)) - vendor) <= 10, name)
    written = devstat.get("Logical Sectors Written")
    known = findings.get(attrs.HOST_WRITTEN)
    if written is not None and known is not None and written > 0:
        attr_sectors = known.value / sector
        same = abs(attr_sectors / written - 1) <= 0.02
        wrap = written < 2**32 <= attr_sectors and min((attr_sectors - written) % 2**32,
                                                       2**32 - (attr_sectors - written) % 2**32) <= 2**21 + 2048
        _tally(rep, "host_written_bytes", same or wrap, name)
    hours = devstat.get("Power-on Hours")
    power = doc.get("power_on_time")
    if hours is not None and isinstance(power, dict) and isinstance(power.get("hours"), int):
        _tally(rep, "power_on_seconds", abs(power["hours"] - hours) <= max(2, 0.01 * hours), name)


def _tally(rep: Report, figure: str, agrees: bool, name: str) -> None:
    rep.both[figure] += 1
    rep.agree[figure] += agrees
    if not agrees:
        rep.disagreeing.setdefault(figure, []).append(name)


def _table(doc: Dict) -> List[attrs.Attribute]:
    from collectors.smartctl.json_report import _attributes

    return _attributes(doc)


def _load(path: Path) -> Optional[Dict]:
    raw = path.read_bytes()
    if path.suffix == ".json":
        doc = json.loads(raw)
        return doc if isinstance(doc, dict) and "devices" not in doc else None
    if "--scan" in path.name:
        return None
    return parse_smartctl_text(raw.decode("utf-8", errors="replace"))


def report(paths: Iterable[Path]) -> Report:
    rep = Report()
    for path in paths:
        rep.files += 1
        try:
            doc = _load(path)
            if doc is None:
                continue
            reading = normalise_smartctl(doc, "/dev/sdx")
        except NoSmartData:
            rep.no_data += 1
            continue
        except ParseError:
            rep.parse_errors += 1
            continue
        except Exception as exc:  # noqa: BLE001 - the report counts what escapes
            rep.exceptions.append(f"{path.name}: {type(exc).__name__}: {exc}")
            continue
        rep.drives += 1
        for name in FIELDS:
            if getattr(reading, name) is not None:
                rep.given[name] += 1
            elif f"{name}_withheld" in reading.extra:
                rep.withheld.setdefault(name, Counter())[reason_class(reading.extra[f"{name}_withheld"])] += 1
        try:
            _compare(doc, reading, rep, path.name)
        except Exception as exc:  # noqa: BLE001
            rep.exceptions.append(f"{path.name} (comparison): {type(exc).__name__}: {exc}")
    return rep


def main(argv: List[str]) -> int:
    folders = [Path(a) for a in argv] or [ROOT / "tests" / "fixtures" / f for f in FOLDERS]
    paths = [p for folder in folders for p in sorted(folder.iterdir())
             if p.is_file() and p.suffix in (".json", ".txt")]
    rep = report(paths)
    print("\n".join(rep.lines()))
    for e in rep.exceptions:
        print("EXCEPTION", e)
    return 1 if rep.exceptions else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
