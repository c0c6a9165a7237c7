"""Vendor logs as drive-record fields: NAND bytes written, hence write amplification on NVMe.

The NVMe SMART / Health log counts what the host wrote (data units of 512,000 bytes) but not
what reached the flash. Some vendors' own log pages do. Each vendor here is one
:class:`VendorLog`: which drives it applies to (the model name smartctl read), the nvme-cli
sub-command, and a pure function from the command's output (plus what the drive's SMART log
already said) to fields.

Intel (``nvme intel smart-log-add``): ``nand_bytes_written`` and ``host_bytes_written`` are raw
counts that nvme-cli labels "sectors" whatever they are. Intel's data-centre SMART attribute
table (F4h/F5h) gives them in units of 32 MiB, and other public NAND-write readers use the same
factor; we do not take that on trust per drive: the unit holds only when ``host_bytes_written``
x 32 MiB agrees with the drive's own SMART/Health ``data_units_written`` x 512,000 (within 1%),
otherwise both figures are withheld with the reason. The real capture in
tests/fixtures/nvme-vendor agrees to 0.002%.

Evidence rules (as collectors.evidence, for every vendor): NAND bytes within the drive's
physical bounds; NAND bytes below host bytes on a drive that does not compress is a
contradiction (withheld, with both numbers in the reason); write amplification within 1..50.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Dict, Optional, Tuple, Union

from collectors import evidence
from collectors.model import ParseError
from collectors.nvme_vendor.nvme_cli import parse_intel_smart_log_add

INTEL_COUNT_BYTES = 32 * 2**20  # F4h / F5h: one count is 32 MiB
UNIT_AGREEMENT = 0.01  # host count x unit vs the SMART/Health log's host bytes
WRITE_AMPLIFICATION_RANGE = (1.0, 50.0)
RATIO_DECIMALS = 6


@dataclass(frozen=True)
class VendorFigures:
    """What one vendor log says about one drive: values with their evidence, or reasons."""

    nand_written_bytes: Optional[int] = None
    write_amplification: Optional[float] = None
    sources: Dict[str, str] = field(default_factory=dict)
    withheld: Dict[str, str] = field(default_factory=dict)  # field -> why


@dataclass(frozen=True)
class DriveFacts:
    """What the drive's SMART/Health log (smartctl) already established about it."""

    host_written_bytes: Optional[int]
    capacity_bytes: Optional[int] = None
    power_on_seconds: Optional[int] = None
    compressing: bool = False


_SECTORS = re.compile(r"^(?:sectors:\s*)?(\d+)$")


def _count(entries, key: str) -> Optional[int]:
    entry = entries.get(key)
    if entry is None:
        return None
    match = _SECTORS.match(entry.raw.strip())
    if match is None:
        raise ParseError(f"nvme intel smart-log-add: {key} raw is not a count: {entry.raw!r}")
    return int(match.group(1))


def _withhold_both(why: str) -> VendorFigures:
    return VendorFigures(withheld={"nand_written_bytes": why, "write_amplification": why})


def intel_figures(text: Union[bytes, str], facts: DriveFacts) -> VendorFigures:
    """NAND bytes and write amplification from ``nvme intel smart-log-add`` (either layout)."""
    entries = parse_intel_smart_log_add(text)
    what = "nvme intel smart-log-add"
    nand, host = _count(entries, "nand_bytes_written"), _count(entries, "host_bytes_written")
    if nand is None or host is None:
        return _withhold_both(f"{what}: the log has no nand_bytes_written/host_bytes_written row")
    if host == 0:
        return _withhold_both(f"{what}: host_bytes_written is 0, so its unit cannot be checked")
    if not facts.host_written_bytes:
        return _withhold_both(f"{what}: unit not established (no host bytes from the SMART/Health log to check it against)")
    host_bytes = host * INTEL_COUNT_BYTES
    if abs(host_bytes - facts.host_written_bytes) > UNIT_AGREEMENT * facts.host_written_bytes + INTEL_COUNT_BYTES:
        return _withhold_both(
            f"{what}: unit not established: host_bytes_written {host} x 32 MiB = {host_bytes:.4g} bytes, "
            f"but the SMART/Health log says {facts.host_written_bytes:.4g}")
    nand_bytes = nand * INTEL_COUNT_BYTES
    problem = evidence.bytes_problem(nand_bytes, facts.capacity_bytes, facts.power_on_seconds, "nvme",
                                     "NAND bytes written")
    if problem:
        return _withhold_both(f"{what}: {problem}")
    if nand < host and not facts.compressing:
        return _withhold_both(
            f"{what}: contradiction: NAND bytes written ({nand_bytes:.4g}) below host bytes written "
            f"({host_bytes:.4g}) on a drive that does not compress")
    source = f"{what} nand_bytes_written x 32 MiB (unit checked against data_units_written)"
    ratio = nand / host
    low, high = WRITE_AMPLIFICATION_RANGE
    if not low <= ratio <= high and not facts.compressing:
        return VendorFigures(nand_written_bytes=nand_bytes, sources={"nand_written_bytes": source},
                             withheld={"write_amplification": f"{what}: nand/host = {ratio:.2f} outside {low:g}..{high:g}"})
    return VendorFigures(
        nand_written_bytes=nand_bytes,
        write_amplification=round(ratio, RATIO_DECIMALS),
        sources={"nand_written_bytes": source,
                 "write_amplification": f"{what} nand_bytes_written / host_bytes_written"},
    )


@dataclass(frozen=True)
class VendorLog:
    """One vendor's log: ``matches(model)``, the nvme-cli arguments before the device, the parser."""

    name: str
    matches: Callable[[str], bool]
    args: Tuple[str, ...]
    figures: Callable[[Union[bytes, str], DriveFacts], VendorFigures]


_INTEL_MODEL = re.compile(r"^INTEL\s", re.IGNORECASE)

VENDORS: Tuple[VendorLog, ...] = (
    VendorLog("intel", lambda model: bool(_INTEL_MODEL.match(model or "")), ("intel", "smart-log-add"),
              intel_figures),
)


def vendor_for(model: Optional[str]) -> Optional[VendorLog]:
    """The vendor log that applies to a drive of this model, or None (no command is sent)."""
    for vendor in VENDORS:
        if vendor.matches(model or ""):
            return vendor
    return None
