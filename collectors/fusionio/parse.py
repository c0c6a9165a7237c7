"""``fio-status -a`` (Fusion-io / SanDisk ioMemory VSL utilities) into drive readings.

The tool prints one block per adapter, one per ioMemory module (``fct0``: the control device
whose health this is) and one per block device (``fioa``), separated by blank lines::

    Adapter: Single Controller Adapter
    \tFusion-io ioDrive2 1.205TB, Product Number:F00-001-1T20-CS-0001, SN:1241D0259, ...
    \tConnected ioMemory modules:
    \t  fct0:\tProduct Number:F00-001-1T20-CS-0001, SN:1241D0259

    fct0\tAttached
    \tioDrive2 Adapter Controller, Product Number:F00-001-1T20-CS-0001, SN:1241D0259
    \tFirmware v7.1.15, rev 110356 Public
    \t1205.00 GBytes device size
    \tFormat: v500, 2353515625 sectors of 512 bytes
    \tInternal temperature: 64.47 degC, max 64.97 degC
    \tReserve space status: Healthy; Reserves: 100.00%, warn at 10.00%
    \tRated PBW: 17.00 PB, 99.46% remaining
    \tLifetime data volumes:
    \t   Physical bytes written: 92,553,058,889,120
    \t   Physical bytes read   : 82,741,942,333,288
    \tContained VSUs:
    \t  fioa:\tID:0, UUID:...

The older VSL 2.x layout says ``fct0 Attached as 'fioa' (block device)``, ``Media status:``
where 3.x says ``Reserve space status:``, and adds ``Board temperature``; plain
``fio-status`` (without ``-a``) leaves out the volumes and the rated PBW.

Units, each established from the captures in tests/fixtures/fusionio/:

* ``GBytes`` are 10^9 bytes: ``1205.00 GBytes`` beside ``2353515625 sectors of 512 bytes``
  (1,205,000,000,000), ``322.55 GBytes`` beside ``78,748,288 sectors, 4096 bytes``; the
  sector count wins when it is printed;
* ``PB`` in ``Rated PBW`` is 10^15 bytes and the ``% remaining`` is counted against the
  *physical* bytes written: 92,553,058,889,120 / 17.00e15 = 0.54% used, 99.46% remaining;
  29,684,767,106,744 / 5.00e15 = 0.59%, 99.41%. So the volumes are media-side (physical)
  bytes, the domain the rating is in: they become ``nand_written_bytes``; the tool prints no
  host-side (logical) volume, so host bytes are left to /proc/diskstats and withheld here;
  a volume that does not give the printed share (off by more than 1%) is withheld;
* temperatures in ``degC``, voltages in ``V``, percentages with ``%``.

Only ``Healthy`` is a reserve status a public capture shows; any other word is kept verbatim
(``extra["reserve_status"]``) and the health flag withheld with the reason, never guessed.
The parser is pure and raises only :class:`~collectors.model.ParseError`.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Tuple

from collectors import numbers
from collectors.model import DriveReading, ParseError, Temperature, Voltage

KIND = "fusionio"
TOOL = "fio-status"

_MODULE_HEAD = re.compile(r"^(fct\d+)\s+(Attached|Detached|Unattached|Busy|Offline|Online|Minimal|Failed)\b(.*)$",
                          re.IGNORECASE)
_ADAPTER_HEAD = re.compile(r"^Adapter:\s*(.*)$")
_DRIVER = re.compile(r"^(?:Fusion-io driver version|Driver version):\s*(.+?)\s*$")
_SN = re.compile(r"\bSN:\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
_PN = re.compile(r"Product Number:\s*([A-Za-z0-9._-]+)")
_FIRMWARE = re.compile(r"^Firmware\s+v?([0-9][0-9.]*)(?:,\s*rev\s+([0-9]+))?")
_SIZE = re.compile(r"^([0-9][0-9,]*(?:\.[0-9]+)?)\s+GBytes\s+(?:block\s+)?device size"
                   r"(?:,\s*([0-9][0-9,]*(?:\.[0-9]+)?)\s+GBytes physical device size)?")
_FORMAT = re.compile(r"^Format:.*?([0-9][0-9,]*)\s+sectors(?:\s+of|,)\s+([0-9]+)\s+bytes")
_TEMP = re.compile(r"^(Internal|Board) temperature:\s*(-?[0-9]+(?:\.[0-9]+)?)\s*degC"
                   r"(?:,\s*max\s+(-?[0-9]+(?:\.[0-9]+)?)\s*degC)?")
_VOLT = re.compile(r"^(Internal|Aux) voltage:\s*avg\s+([0-9]+(?:\.[0-9]+)?)V(?:,?\s*max\s+([0-9]+(?:\.[0-9]+)?)V)?")
_RESERVE = re.compile(r"^(?:Reserve space status|Media status):\s*([^;]+?)\s*;\s*Reserves:\s*([0-9]+(?:\.[0-9]+)?)%"
                      r"(?:,\s*warn at\s+([0-9]+(?:\.[0-9]+)?)%)?")
_PBW = re.compile(r"^Rated PBW:\s*([0-9]+(?:\.[0-9]+)?)\s*PB,\s*([0-9]+(?:\.[0-9]+)?)%\s*remaining")
_VOLUME = re.compile(r"^Physical bytes (written|read)\s*:\s*([0-9][0-9,]*)\s*$")
_ATTACHED_AS = re.compile(r"Attached as '([a-z]+)'")
_VSU = re.compile(r"^(fio[a-z]+):")
_PLP = re.compile(r"^Powerloss protection:\s*(\S+)")

# A rating beyond 2**57 bytes of capacity written 100,000 times is no rating (evidence.py).
_MAX_RATED_BYTES = 2**57 * 100_000


def _number(text: str, line: str) -> float:
    """A decimal the regular expressions matched; beyond float range it is infinite, which the
    bounds withhold (``line`` names it when it is not a number at all)."""
    try:
        return float(text.replace(",", ""))
    except ValueError:
        raise ParseError(f"not a number in {numbers.quote(line)}") from None


def _gigabytes(text: str) -> float:
    """``1205.00`` GBytes in bytes; a figure beyond float range is infinite, and withheld."""
    value = float(text.replace(",", "")) * 1e9
    return int(round(value)) if math.isfinite(value) else value


def _integer(text: str, line: str) -> int:
    if not re.fullmatch(r"[0-9]{1,3}(?:,[0-9]{3})*|[0-9]+", text):
        raise ParseError(f"badly grouped number {numbers.quote(text)} in {numbers.quote(line)}")
    digits = text.replace(",", "")
    if len(digits) > numbers.MAX_DIGITS:  # grouped digits slip past the guard's scan
        raise ParseError(f"a number of {len(digits):,} digits in {numbers.quote(line)}")
    return int(digits)


def _blocks(text: str) -> List[List[str]]:
    blocks: List[List[str]] = []
    current: List[str] = []
    for raw in text.splitlines():
        if not raw.strip():
            if current:
                blocks.append(current)
                current = []
            continue
        current.append(raw.rstrip())
    if current:
        blocks.append(current)
    return blocks


@dataclass(frozen=True)
class StatusReport:
    """What one ``fio-status`` call says: a reading per module it could read, and for each
    module block it could not, its control device and why (``("fct1", "no serial number ...")``)."""

    readings: Tuple[DriveReading, ...]
    unreadable: Tuple[Tuple[str, str], ...] = ()


@numbers.guarded("fio-status")
def parse_status(text: str) -> List[DriveReading]:
    """Every ioMemory module ``fio-status [-a]`` lists, as readings (control device order).

    Raises :class:`ParseError` for text that is not fio-status output at all, or that holds
    a module block that cannot be read; returns ``[]`` for a host with no devices
    (``Found 0 ioMemory devices``). :func:`read_status` keeps the modules it can read."""
    report = read_status(text)
    if report.unreadable:
        raise ParseError(": ".join(report.unreadable[0]))
    return list(report.readings)


@numbers.guarded("fio-status", scan=False)  # each module block is scanned on its own
def read_status(text: str) -> StatusReport:
    """Like :func:`parse_status`, but one module block that cannot be read costs that module
    only: the host's other cards are still read (one call lists them all)."""
    if "\x00" in text:
        raise ParseError("binary data in fio-status output")
    blocks = _blocks(text)
    driver: Optional[str] = None
    adapters: Dict[str, Tuple[str, Optional[str], Optional[str]]] = {}  # fctN -> (product, PN, SN)
    modules: List[Tuple[str, str, List[str]]] = []
    vsus: Dict[str, Tuple[str, ...]] = {}  # fioX block -> its lines
    recognised = False
    for block in blocks:
        head = block[0].strip()
        for line in block:
            m = _DRIVER.match(line.strip())
            if m:
                driver = m.group(1)
                recognised = True
        if re.match(r"^Found \d+ (ioMemory device|ioDrive)", head):
            recognised = True
            continue
        m = _ADAPTER_HEAD.match(head)
        if m:
            recognised = True
            body = [b.strip() for b in block[1:]]
            product = body[0] if body else ""
            name = product.split(",")[0].strip() or None
            pn = _PN.search(product)
            sn = _SN.search(product)
            for line in body:
                c = re.match(r"^(fct\d+):", line)
                if c:
                    adapters[c.group(1)] = (name or "", pn.group(1) if pn else None, sn.group(1) if sn else None)
            continue
        m = _MODULE_HEAD.match(head)
        if m:
            recognised = True
            modules.append((m.group(1), m.group(2) + m.group(3), [b.strip() for b in block[1:]]))
            continue
        if re.match(r"^fio[a-z]+\s", head):
            recognised = True
            vsus[head.split()[0]] = tuple(b.strip() for b in block)
    if not recognised:
        first = next((b[0] for b in blocks), "")
        raise ParseError(f"not fio-status output: {first[:80]!r}")
    readings: List[DriveReading] = []
    unreadable: List[Tuple[str, str]] = []
    for fct, state, lines in modules:
        try:
            readings.append(_module(fct, state, lines, adapters.get(fct), driver))
        except ParseError as exc:
            unreadable.append((fct, str(exc).removeprefix(f"{fct}: ")))
    return StatusReport(tuple(readings), tuple(unreadable))



@dataclass
class _Module:
    """What one module block says so far, line by line (:func:`_module`)."""

    fct: str
    sources: Dict[str, str] = field(default_factory=dict)
    extra: Dict[str, str] = field(default_factory=dict)
    serial: Optional[str] = None
    model: Optional[str] = None
    firmware: Optional[str] = None
    block: Optional[str] = None
    capacity: Optional[float] = None
    physical_capacity: Optional[float] = None
    sector_bytes: Optional[int] = None
    temps: List[Temperature] = field(default_factory=list)
    volts: List[Voltage] = field(default_factory=list)
    spare: Optional[float] = None
    spare_warn: Optional[float] = None
    life: Optional[float] = None
    healthy: Optional[bool] = None
    plp: Optional[bool] = None
    nand_written: Optional[int] = None


def _on_identity(d: _Module, line: str) -> bool:
    """The first ``SN:`` line (not the adapter's ``Located in``) names the module."""
    s = _SN.search(line)
    if s is None:
        return False
    d.serial = s.group(1)
    d.model = line.split(",")[0].strip() or None
    pn = _PN.search(line)
    if pn:
        d.extra["product_number"] = pn.group(1)
    return True


def _on_firmware(d: _Module, m: re.Match, line: str) -> None:
    d.firmware = m.group(1) + (f" rev {m.group(2)}" if m.group(2) else "")


def _on_size(d: _Module, m: re.Match, line: str) -> None:
    d.capacity = _gigabytes(m.group(1))
    d.sources["capacity_bytes"] = f"{TOOL} '{numbers.quote(m.group(1))[1:-1]} GBytes device size' (GBytes = 10^9 bytes)"
    if m.group(2):
        d.physical_capacity = _gigabytes(m.group(2))


def _on_format(d: _Module, m: re.Match, line: str) -> None:
    sectors, d.sector_bytes = _integer(m.group(1), line), int(m.group(2))
    if d.sector_bytes not in (512, 4096, 520, 4160):
        raise ParseError(f"{d.fct}: sector size {numbers.show(d.sector_bytes)} in {numbers.quote(line)}")
    d.capacity = sectors * d.sector_bytes
    d.sources["capacity_bytes"] = f"{TOOL} 'Format: {m.group(1)} sectors of {d.sector_bytes} bytes'"


def _on_temperature(d: _Module, m: re.Match, line: str) -> None:
    # an impossible figure is withheld by evidence.contain, with its reason
    celsius = _number(m.group(2), line)
    high = _number(m.group(3), line) if m.group(3) else None
    sensor = "controller" if m.group(1) == "Internal" else "board"
    d.temps.append(Temperature(sensor, celsius, max_celsius=high))
    d.sources[f"temperature_{sensor}"] = f"{TOOL} '{m.group(1)} temperature' degC"


def _on_voltage(d: _Module, m: re.Match, line: str) -> None:
    rail = "internal" if m.group(1) == "Internal" else "auxiliary"
    d.volts.append(Voltage(rail, _number(m.group(2), line), _number(m.group(3), line) if m.group(3) else None))


def _on_reserve(d: _Module, m: re.Match, line: str) -> None:
    status = m.group(1).strip()
    d.spare = round(_number(m.group(2), line) / 100, 6)  # out of 0..1: withheld by contain
    d.spare_warn = _number(m.group(3), line) / 100 if m.group(3) else None
    label = line.split(":")[0]
    d.sources["spare_left_ratio"] = f"{TOOL} '{label}: Reserves: {m.group(2)}%'"
    d.extra["reserve_status"] = status
    if status.lower() == "healthy":
        d.healthy = True
        d.sources["smart_healthy"] = f"{TOOL} '{label}: {status}'"
    else:
        d.extra["smart_healthy_withheld"] = f"{TOOL} '{label}: {status}': no public capture shows what this status means"


def _on_rating(d: _Module, m: re.Match, line: str) -> None:
    rated = _number(m.group(1), line) * 1e15
    d.life = round(_number(m.group(2), line) / 100, 6)  # out of 0..1: withheld by contain
    d.sources["life_left_ratio"] = f"{TOOL} 'Rated PBW: {m.group(1)[:20]} PB, {m.group(2)[:20]}% remaining'"
    if math.isfinite(rated) and 0 < rated <= _MAX_RATED_BYTES:
        d.extra["rated_pbw_bytes"] = str(int(round(rated)))


def _on_volume(d: _Module, m: re.Match, line: str) -> None:
    value = _integer(m.group(2), line)
    if m.group(1) == "written":
        d.nand_written = value
        d.sources["nand_written_bytes"] = (
            f"{TOOL} 'Physical bytes written' (bytes; media-side: the rated PBW's % remaining is counted against it)")
    else:
        d.extra["physical_bytes_read"] = str(value)


def _on_power_loss(d: _Module, m: re.Match, line: str) -> None:
    d.extra["powerloss_protection"] = m.group(1)
    # A module's own line says "protected" while its capacitors hold (the adapter's
    # "available" says only that the card has them): the one word taken as protection.
    if m.group(1).lower() == "protected":
        d.plp = True
        d.sources["power_loss_protection"] = f"{TOOL} 'Powerloss protection: {m.group(1)}'"


# A module block's lines, each taken by the first pattern that matches it.
_LINES: Tuple[Tuple[re.Pattern, Callable[[_Module, re.Match, str], None]], ...] = (
    (_FIRMWARE, _on_firmware), (_SIZE, _on_size), (_FORMAT, _on_format), (_TEMP, _on_temperature),
    (_VOLT, _on_voltage), (_RESERVE, _on_reserve), (_PBW, _on_rating), (_VOLUME, _on_volume),
    (_PLP, _on_power_loss),
)


@numbers.guarded("its block")  # what Python refuses in one block costs that module only
def _module(fct: str, state: str, lines: List[str], adapter, driver: Optional[str]) -> DriveReading:
    d = _Module(fct, extra={"fio_state": state.strip()})
    attached = _ATTACHED_AS.search(state)
    d.block = attached.group(1) if attached else None
    in_vsus = False
    for line in lines:
        if line.startswith("Contained VSUs"):
            in_vsus = True
            continue
        if in_vsus:
            v = _VSU.match(line)
            if v and d.block is None:
                d.block = v.group(1)
            continue
        if d.serial is None and not line.startswith("Located in") and _on_identity(d, line):
            continue
        for pattern, take in _LINES:
            m = pattern.match(line)
            if m:
                take(d, m, line)
                break
    if d.serial is None:
        raise ParseError(f"{fct}: no serial number (SN:) in its block")
    rated_bytes = _checked_volume(d)
    if adapter:
        name, _pn, asn = adapter
        if name:
            d.extra["module_model"] = d.model or ""
            d.model = name
        if asn and asn != d.serial:
            d.extra["adapter_serial"] = asn
    if d.nand_written is not None:
        d.extra["host_written_bytes_withheld"] = (
            f"{TOOL} prints physical (media-side) volumes only; host writes come from /proc/diskstats")
    return DriveReading(
        kind=KIND, device=f"/dev/{fct}", serial=d.serial, model=d.model, vendor="Fusion-io", firmware=d.firmware,
        driver_version=driver, block_device=d.block, is_ssd=True, capacity_bytes=d.capacity,
        physical_capacity_bytes=d.physical_capacity, logical_sector_bytes=d.sector_bytes,
        smart_healthy=d.healthy, life_left_ratio=d.life, spare_left_ratio=d.spare, spare_threshold_ratio=d.spare_warn,
        nand_written_bytes=d.nand_written, rated_nand_written_bytes=rated_bytes, power_loss_protection=d.plp,
        temperatures=tuple(d.temps), voltages=tuple(d.volts), sources=d.sources, extra=d.extra,
    )


def _checked_volume(d: _Module) -> Optional[int]:
    """The rated bytes, and the physical volume withheld when it does not give the printed share."""
    rated_bytes = int(d.extra["rated_pbw_bytes"]) if "rated_pbw_bytes" in d.extra else None
    if rated_bytes:
        # the tool's "% remaining" counts physical (media-side) bytes against this rating
        d.sources["rated_nand_written_bytes"] = f"{TOOL} 'Rated PBW' (media-side bytes)"
    if d.nand_written is not None and d.life is not None and rated_bytes:
        # The tool counts "% remaining" against these very bytes (see the module doc): a
        # volume that does not give the printed share is in some other unit or domain.
        implied = 1 - numbers.as_float(d.nand_written) / rated_bytes  # the volume may be beyond float range
        if abs(implied - d.life) > 0.01:
            d.extra["nand_written_bytes_withheld"] = (
                f"{TOOL} 'Physical bytes written' {numbers.show(d.nand_written)} is {1 - implied:.2%} of the "
                f"rated PBW, but the tool prints {d.life:.2%} remaining: not the volume the rating counts")
            d.sources.pop("nand_written_bytes", None)
            d.nand_written = None
    return rated_bytes
