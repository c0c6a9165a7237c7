"""ATA/SATA figures from one smartctl document: every candidate for a quantity, checked, ranked.

For life left, host bytes written and power-on time a SATA drive often has two sources: ATA
Device Statistics (``--log=devstat``, a standard: ACS-3 General Statistics and Solid State
Device Statistics pages, fixed units) and vendor attributes (whose meaning, column and unit vary
by firmware). The rules here:

1. **Vocabulary.** An attribute's printed name only means something when smartmontools' drive
   database vouches for it on this model (:mod:`collectors.drivedb`). Names printed by an older
   database are replaced by the newer one's; a drive neither database describes has default names
   only, and a default name is not read as a life figure or a volume.
2. **Rank.** The standard wins over a vendor attribute when it passes its checks; a vendor
   attribute is the fallback.
3. **Checks.** Every figure passes :mod:`collectors.evidence`'s physical bounds; device
   statistics counters that are broken (all ones, below the command count, kept in 32 bits)
   are recognised against the attributes. An attribute whose unit is not established by the
   database can still settle the unit by agreeing with the devstat counter.
4. **Conflict.** Where two sources disagree beyond their rounding and nothing says which is
   right, no figure is given; the reason is kept.

Each choice is recorded: ``sources[field]`` names the source read, ``extra[field + "_withheld"]``
why no figure was given, ``extra[field + "_rejected"]`` a candidate set aside.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any, Dict, List, Optional, Tuple

from collectors import ata_attributes as attrs
from collectors import drivedb
from collectors import evidence

# Life left from two sources may differ by rounding and by the vendor's own curve (Kingston
# A400s read 9 to 15 points apart in the training reports); beyond this they contradict.
LIFE_CONFLICT_POINTS = 25

_DEVSTAT_ALL_ONES = (1 << 48) - 1
_DEVSTAT_WRAP = 1 << 32
_DEVSTAT_SLACK_SECTORS = 2048  # the two counters are read a moment apart

# Units an attribute with a default volume name may count in, as seen on drives the database
# does not describe: sectors, 32 MiB (Intel, SandForce heritage) and GiB (Phison, Silicon Motion).
_CANDIDATE_UNITS = (attrs.LBA, attrs.UNIT_32MIB, attrs.GIB)

_VOLUME_NAME = re.compile(r"Writ|Read|LBAs|Wts|Rds", re.IGNORECASE)

# Formats drivedb gives attribute 9 and the hours in one raw count of each.
_POWER_ON_DIVISOR = {"minutes": 60, "halfminutes": 120, "seconds": 3600}


@dataclass
class AtaFigures:
    fields: Dict[str, Any] = field(default_factory=dict)
    sources: Dict[str, str] = field(default_factory=dict)
    extra: Dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Vocabulary:
    attributes: Tuple[attrs.Attribute, ...]
    family: str  # the model family the rules match against (report's, else the database's)
    entry: Optional[drivedb.Entry]
    database: drivedb.DriveDatabase


def vocabulary(
    table: List[attrs.Attribute], doc: Dict[str, Any], db: Optional[drivedb.DriveDatabase] = None
) -> Vocabulary:
    """The attributes under the names the newest database available gives them, with trust."""
    db = db or drivedb.active()
    model = doc.get("model_name") if isinstance(doc.get("model_name"), str) else None
    firmware = doc.get("firmware_version") if isinstance(doc.get("firmware_version"), str) else None
    entry = db.lookup(model, firmware)
    ours = db.names_for(model, firmware) if model else {}
    report_knows = doc.get("in_smartctl_database") is True
    report_revision = doc.get("smartctl_database_revision")
    theirs_newer = isinstance(report_revision, int) and report_revision > db.revision
    out = []
    for attr in table:
        name, trust = _name_and_trust(attr, ours.get(attr.attr_id), db.default_name(attr.attr_id),
                                      entry is not None, report_knows, theirs_newer)
        out.append(replace(attr, name=name, trust=trust))
    family = doc.get("model_family") if isinstance(doc.get("model_family"), str) else ""
    if not family and entry is not None:
        family = entry.family
    return Vocabulary(tuple(out), family or "", entry, db)


def _name_and_trust(
    attr: attrs.Attribute,
    ours: Optional[drivedb.AttributeName],
    default: Optional[str],
    we_know_model: bool,
    report_knows: bool,
    theirs_newer: bool,
) -> Tuple[str, str]:
    printed = attr.name
    if ours is not None and ours.vouched:
        if printed == ours.name:
            return printed, ours.trust
        if theirs_newer and report_knows and printed != default:
            return printed, drivedb.NAMED  # a newer database renamed it
        return ours.name, ours.trust  # an older database's name, corrected
    if printed != default and not printed.startswith("Unknown"):
        # A name other than the default comes from a drive database (the report's smartctl).
        if we_know_model and not theirs_newer:
            return printed, drivedb.DEFAULT  # our newer entry no longer names this ID
        return printed, drivedb.NAMED
    if not we_know_model:
        return printed, drivedb.DEFAULT if report_knows else drivedb.UNKNOWN_DRIVE
    return printed, drivedb.DEFAULT


# --------------------------------------------------------------------------- device statistics


def device_statistics(doc: Dict[str, Any]) -> Dict[str, int]:
    """ATA device statistics by entry name (valid entries only)."""
    out: Dict[str, int] = {}
    pages = (doc.get("ata_device_statistics") or {}).get("pages") if isinstance(
        doc.get("ata_device_statistics"), dict) else None
    for page in pages if isinstance(pages, list) else []:
        rows = page.get("table") if isinstance(page, dict) else None
        for row in rows if isinstance(rows, list) else []:
            if not isinstance(row, dict):
                continue
            name, value, flags = row.get("name"), row.get("value"), row.get("flags")
            if isinstance(flags, dict) and flags.get("valid") is False:
                continue
            if isinstance(name, str) and isinstance(value, int) and not isinstance(value, bool):
                out[name] = value
    return out


# --------------------------------------------------------------------------- life left


def _wear_done(written: Optional[int], nand: Optional[float], capacity: Optional[int]) -> Optional[float]:
    """Full-capacity writes the flash has taken at least: NAND bytes / capacity, else host
    bytes / capacity (write amplification is at least 1 on a controller that does not compress)."""
    if not capacity:
        return None
    volume = nand if nand else written
    return None if not volume else volume / capacity


def _refuted(left: float, cycles: Optional[float]) -> bool:
    """A life-left figure that claims too little wear for the cycles already done, even at the
    highest rated endurance of any MLC/TLC drive."""
    if cycles is None:
        return False
    return cycles > (100.0 - left + 1.0) / 100.0 * evidence.MAX_RATED_CYCLES


def life_left(
    figures: AtaFigures, findings: attrs.AttributeFindings, devstat: Dict[str, int], is_ssd: Optional[bool],
    written: Optional[int] = None, capacity: Optional[int] = None,
) -> Optional[float]:
    """Percent of rated life left, or None (with the reason in ``extra``)."""
    if is_ssd is False:
        if "Percentage Used Endurance Indicator" in devstat or findings.get(attrs.LIFE_LEFT):
            figures.extra["life_left_ratio_withheld"] = "a rotating drive has no flash life (its firmware fills the SSD page)"
        return None
    vendor, vendor_source = _vendor_life(findings)
    used = devstat.get("Percentage Used Endurance Indicator")
    if used is not None and not 0 <= used <= 255:
        figures.extra["life_left_ratio_rejected"] = f"ata devstat Percentage Used Endurance Indicator is {used}"
        used = None
    if used is not None:
        standard = max(0.0, 100.0 - used)
        cycles = _wear_done(written, findings.value(attrs.NAND_WRITTEN), capacity)
        if vendor is not None and abs(vendor - standard) > LIFE_CONFLICT_POINTS and _refuted(vendor, cycles) \
                and not _refuted(standard, cycles):
            figures.extra["life_left_ratio_rejected"] = (
                f"{vendor_source} says {vendor:g}% left after {cycles:,.0f} full-capacity writes")
            vendor = None
        if vendor is not None and abs(vendor - standard) > LIFE_CONFLICT_POINTS and _refuted(standard, cycles) \
                and not _refuted(vendor, cycles):
            figures.extra["life_left_ratio_rejected"] = (
                f"ata devstat Percentage Used Endurance Indicator says {standard:g}% left after "
                f"{cycles:,.0f} full-capacity writes")
            figures.sources["life_left_ratio"] = vendor_source
            return vendor
        if vendor is not None and abs(vendor - standard) > LIFE_CONFLICT_POINTS:
            figures.extra["life_left_ratio_withheld"] = (
                f"sources disagree: ata devstat Percentage Used Endurance Indicator says {standard:g}% left, "
                f"{vendor_source} says {vendor:g}%")
            return None
        if vendor is not None:
            figures.extra["life_left_ratio_also"] = f"{vendor_source}: {vendor:g}%"
        figures.sources["life_left_ratio"] = "ata devstat Percentage Used Endurance Indicator"
        figures.extra["life_used_percent"] = str(used)
        return standard
    if vendor is not None:
        figures.sources["life_left_ratio"] = vendor_source
        return vendor
    unvouched = [findings.unvouched.get(m) for m in (attrs.LIFE_LEFT, attrs.WEAR_LEVELLING_LEFT)]
    found = next((a for a in unvouched if a is not None), None)
    if found is not None:
        figures.extra["life_left_ratio_withheld"] = (
            f"ata {found.attr_id} {found.name} is smartctl's default name on a drive its database does not "
            "describe: not known to be a life figure")
    elif is_ssd and "life_left_ratio_withheld" not in figures.extra:
        figures.extra["life_left_ratio_withheld"] = (
            "no life figure: no device statistics endurance indicator, and no attribute the drive database "
            "names as one on this model reads as a percentage")
    return None


def _vendor_life(findings: attrs.AttributeFindings) -> Tuple[Optional[float], str]:
    life = findings.get(attrs.LIFE_LEFT)
    if life is not None:
        return life.value, life.source
    used = findings.get(attrs.LIFE_USED)
    if used is not None:
        return max(0.0, 100.0 - used.value), used.source
    wear = findings.get(attrs.WEAR_LEVELLING_LEFT)
    if wear is not None:
        return wear.value, wear.source
    return None, ""


# --------------------------------------------------------------------------- host volumes


@dataclass(frozen=True)
class _Volume:
    bytes: int
    source: str


def _devstat_volume(
    devstat: Dict[str, int], counter: str, commands: str, sector: int,
    known: Optional[attrs.Finding], unvouched: Optional[attrs.Attribute], extra: Dict[str, str], field_name: str,
) -> Optional[_Volume]:
    """The devstat sector counter as bytes when it can be taken at face value, or the attribute
    whose unit it establishes when the counter turns out to be kept in 32 bits."""
    value = devstat.get(counter)
    if value is None:
        return None
    problem = None
    issued = devstat.get(commands)
    if value >= _DEVSTAT_ALL_ONES:
        problem = f"{counter} has all 48 bits set"
    elif issued is not None and value < issued:
        problem = f"{counter} ({value}) is below {commands} ({issued})"
    elif value == 0 and known is not None and known.value > 0:
        problem = f"{counter} is 0 while {known.source} is not"
    if problem is None and value < _DEVSTAT_WRAP:
        wrapped = _wrap_match(value, sector, known, unvouched)
        if wrapped is not None:
            extra[f"{field_name}_devstat_ignored"] = (
                f"{counter} ({value}) is {wrapped.source} modulo 2**32 sectors: a 32-bit counter")
            return wrapped
    if problem is not None:
        extra[f"{field_name}_devstat_ignored"] = problem
        return None
    return _Volume(value * sector, f"ata devstat {counter} x sector size")


def _wrap_match(
    value: int, sector: int, known: Optional[attrs.Finding], unvouched: Optional[attrs.Attribute]
) -> Optional[_Volume]:
    """The attribute reading (in bytes) that ``value`` equals modulo 2**32 sectors while the
    attribute counts more than 2**32 sectors: the devstat counter wrapped."""
    options: List[Tuple[int, int, str]] = []  # (attribute sectors, unit sectors, source)
    if known is not None:
        unit = max(1, (attrs.unit_bytes(known.rule.unit, sector) or sector) // sector)
        options.append((int(known.value) // sector, unit, known.source + "|"))
    elif unvouched is not None and unvouched.raw is not None:
        for unit_name in _CANDIDATE_UNITS:
            unit = max(1, (attrs.unit_bytes(unit_name, sector) or sector) // sector)
            options.append((unvouched.raw * unit, unit,
                            f"ata {unvouched.attr_id} {unvouched.name} raw x {_unit_label(unit_name)}"))
    for attr_sectors, unit, source in options:
        gap = (attr_sectors - value) % _DEVSTAT_WRAP
        gap = min(gap, _DEVSTAT_WRAP - gap)
        if attr_sectors >= _DEVSTAT_WRAP and gap <= unit + _DEVSTAT_SLACK_SECTORS:
            if source.endswith("|"):  # the unit was known already
                return _Volume(attr_sectors * sector, source[:-1])
            return _Volume(attr_sectors * sector, source + " (unit fixed by the devstat counter's low 32 bits)")
    return None


def _unit_label(unit: str) -> str:
    return "sector size" if unit == attrs.LBA else unit


def host_volume(
    figures: AtaFigures, findings: attrs.AttributeFindings, devstat: Dict[str, int], sector: int,
    field_name: str, meaning: str, counter: str, commands: str,
    capacity: Optional[int], power_on_seconds: Optional[int],
) -> Optional[int]:
    """Host bytes written or read, or None with the reason."""
    extra = figures.extra
    known = findings.get(meaning)
    unvouched = findings.unvouched.get(meaning)
    candidates: List[_Volume] = []
    standard = _devstat_volume(devstat, counter, commands, sector, known, unvouched, extra, field_name)
    if standard is not None:
        candidates.append(standard)
    if known is not None:
        candidates.append(_Volume(int(known.value), known.source))
    elif standard is None and devstat.get(counter) is None and unvouched is not None:
        only = _only_physical_unit(unvouched, sector, capacity, power_on_seconds)
        if only is not None:
            candidates.append(only)
    rejected: List[str] = []
    for candidate in candidates:
        what = "host bytes written" if meaning == attrs.HOST_WRITTEN else "host bytes read"
        problem = evidence.bytes_problem(candidate.bytes, capacity, power_on_seconds, "ata", what)
        if problem is None:
            if rejected:
                extra[f"{field_name}_rejected"] = "; ".join(rejected)
            figures.sources[field_name] = candidate.source
            return candidate.bytes
        rejected.append(f"{candidate.source}: {problem}")
    if rejected:
        extra[f"{field_name}_withheld"] = "; ".join(rejected)
    elif meaning in findings.withheld:
        extra[f"{field_name}_withheld"] = findings.withheld[meaning]
    elif unvouched is not None:
        extra[f"{field_name}_withheld"] = (
            f"ata {unvouched.attr_id} {unvouched.name}: unit not established (smartctl's default name on a "
            "drive its database does not describe, and no usable device statistics counter to compare)")
    elif f"{field_name}_devstat_ignored" in extra:
        extra[f"{field_name}_withheld"] = extra[f"{field_name}_devstat_ignored"] + ", and no attribute of known unit"
    elif any(_VOLUME_NAME.search(a.name) for a in findings.attributes):
        extra[f"{field_name}_withheld"] = "no volume counter of established unit on this model"
    return None


def _only_physical_unit(
    attr: attrs.Attribute, sector: int, capacity: Optional[int], power_on_seconds: Optional[int]
) -> Optional[_Volume]:
    """A default-named volume attribute read in the one candidate unit physics allows: with
    the capacity and the power-on time known, 32 MiB or GiB units often give more than the
    link could have moved, leaving sectors (or the reverse never: no lower bound exists)."""
    if attr.raw is None or not capacity or not power_on_seconds:
        return None
    fits = [unit for unit in _CANDIDATE_UNITS
            if evidence.bytes_problem(attr.raw * (attrs.unit_bytes(unit, sector) or sector),
                                      capacity, power_on_seconds, "ata") is None]
    if len(fits) != 1:
        return None
    unit = fits[0]
    return _Volume(attr.raw * (attrs.unit_bytes(unit, sector) or sector),
                   f"ata {attr.attr_id} {attr.name} raw x {_unit_label(unit)} (the only unit within physical bounds)")


# --------------------------------------------------------------------------- power-on time


def power_on_seconds(
    figures: AtaFigures, doc: Dict[str, Any], vocab: Vocabulary, devstat: Dict[str, int]
) -> Optional[int]:
    """Power-on time: device statistics first, then attribute 9 in the unit the database gives."""
    candidates: List[Tuple[int, str]] = []
    hours = devstat.get("Power-on Hours")
    if hours is not None:
        candidates.append((hours * 3600, "ata devstat Power-on Hours"))
    from_attribute = _attribute_power_on(doc, vocab)
    if from_attribute is not None:
        candidates.append(from_attribute)
    rejected = []
    for seconds, source in candidates:
        problem = evidence.power_on_problem(seconds)
        if problem is None:
            figures.sources["power_on_seconds"] = source
            if rejected:
                figures.extra["power_on_seconds_rejected"] = "; ".join(rejected)
            return seconds
        rejected.append(f"{source}: {problem}")
    if rejected:
        figures.extra["power_on_seconds_withheld"] = "; ".join(rejected)
    return None


def _attribute_power_on(doc: Dict[str, Any], vocab: Vocabulary) -> Optional[Tuple[int, str]]:
    power = doc.get("power_on_time")
    hours = power.get("hours") if isinstance(power, dict) else None
    attr9 = next((a for a in vocab.attributes if a.attr_id == 9), None)
    named = vocab.database.names_for(doc.get("model_name"), doc.get("firmware_version")).get(9) \
        if vocab.entry is not None else None
    printed_default = attr9 is not None and attr9.raw is not None and attr9.raw_string is not None \
        and attr9.raw_string.strip().isdigit()
    if named is not None and named.trust == drivedb.NAMED and printed_default and attr9 is not None:
        # The report's smartctl read the raw count as hours; the database knows its real unit.
        divisor = _POWER_ON_DIVISOR.get(named.fmt)
        if divisor:
            return attr9.raw * 3600 // divisor, f"ata 9 raw as {named.fmt} ({vocab.database.label})"
        if named.fmt == "msec24hour32":
            return (attr9.raw & 0xFFFFFFFF) * 3600, f"ata 9 raw low 32 bits as hours ({vocab.database.label})"
    if isinstance(hours, int) and not isinstance(hours, bool):
        minutes = power.get("minutes") if isinstance(power.get("minutes"), int) else 0
        return hours * 3600 + minutes * 60, "ata 9 Power_On_Hours"
    return None
