"""ATA/SATA figures from one smartctl document: every candidate for a quantity, checked, ranked.

For life left, host bytes written and power-on time a SATA drive often has two sources: ATA
Device Statistics (``--log=devstat``, a standard: ACS-3 General Statistics and Solid State
Device Statistics pages, fixed units) and vendor attributes (whose meaning, column and unit vary
by firmware). The rules here:

1. **Vocabulary.** An attribute's printed name only means something when smartmontools' drive
   database vouches for it on this model (:mod:`collectors.smartctl.drivedb`). Names printed by an older
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

from collectors import evidence
from collectors.model import LIFE_LEFT_SPREAD_MARGIN
from collectors.smartctl import attributes as attrs
from collectors.smartctl import drivedb, logs

_DEVSTAT_ALL_ONES = (1 << 48) - 1
_DEVSTAT_WRAP = 1 << 32
_DEVSTAT_SLACK_SECTORS = 2048  # the two counters are read a moment apart

# Units an attribute with a default volume name may count in, as seen on drives the database
# does not describe: sectors, MiB (BIWIN, Apple), 32 MiB (Intel, SandForce and Silicon Motion
# heritage) and GiB (Phison).
_CANDIDATE_UNITS = (attrs.LBA, attrs.MIB, attrs.UNIT_32MIB, attrs.GIB)

_VOLUME_NAME = re.compile(r"Written|Writes|Reads_|Reads$|LBAs_Read|Wts_|Rds_|Sector_Write")  # not *_Error_Rate

# Hour counts at which a 15- or 16-bit power-on counter stops: old firmware (SanDisk U100 from
# 2012, reported in 2021 at 32766 = 0x7FFE) leaves it there for good.
_SATURATED_HOURS = frozenset({0x7FFE, 0x7FFF, 0xFFFE, 0xFFFF})

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
    names: Dict[int, drivedb.AttributeName] = field(default_factory=dict)  # the database's, per ID


def vocabulary(
    table: List[attrs.Attribute], doc: Dict[str, Any], db: Optional[drivedb.DriveDatabase] = None
) -> Vocabulary:
    """The attributes under the names the newest database available gives them, with trust."""
    db = db or drivedb.active()
    model = doc.get("model_name") if isinstance(doc.get("model_name"), str) else None
    firmware = doc.get("firmware_version") if isinstance(doc.get("firmware_version"), str) else None
    entry = db.lookup(model, firmware)
    ours = db.names_of(entry, firmware) if model else {}
    report_knows = doc.get("in_smartctl_database") is True
    report_revision = doc.get("smartctl_database_revision")
    if not isinstance(report_revision, int):
        # JSON does not name the database; the smartctl build's own SVN revision is an upper
        # bound of the one it shipped with. Where the two databases print the same names the
        # comparison changes nothing; where they differ, the report's is the newer one.
        svn = (doc.get("smartctl") or {}).get("svn_revision") if isinstance(doc.get("smartctl"), dict) else None
        report_revision = int(svn) if isinstance(svn, str) and svn.isdigit() and len(svn) <= 9 else None
    theirs_newer = isinstance(report_revision, int) and report_revision > db.revision
    out = []
    for attr in table:
        name, trust = _name_and_trust(attr, ours.get(attr.attr_id), db.default_name(attr.attr_id),
                                      entry is not None, report_knows, theirs_newer)
        out.append(replace(attr, name=name, trust=trust))
    family = doc.get("model_family") if isinstance(doc.get("model_family"), str) else ""
    if not family and entry is not None:
        family = entry.family
    return Vocabulary(tuple(out), family or "", entry, db, ours)


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


# No flash is rated for fewer program/erase cycles than QLC's ~100: a drive that has done fewer
# full-capacity writes than this cannot be saturated past its rated life.
MIN_RATED_CYCLES = 100


def _wear_done(
    written: Optional[int], nand: Optional[float], capacity: Optional[int], average_erase: Optional[float] = None
) -> Optional[float]:
    """Program/erase cycles the flash has done at least: the drive's own average erase count, or
    NAND bytes / capacity, else host bytes / capacity (write amplification is at least 1 on a
    controller that does not compress)."""
    volume = nand if nand else written
    by_volume = volume / capacity if capacity and volume else None
    known = [c for c in (by_volume, average_erase) if c]
    return max(known) if known else None


def _own_rating(vendor_left: Optional[float], average_erase: Optional[float]) -> Optional[float]:
    """The rated cycles a vendor life figure implies next to the drive's average erase count
    (Micron's 202 and Silicon Motion's 169 are that ratio): erase / share used. Only from 5% used,
    where rounding no longer dominates."""
    if vendor_left is None or average_erase is None or average_erase < 10:
        return None
    used = (100.0 - vendor_left) / 100.0
    return average_erase / used if used >= 0.05 else None


def _set_aside(
    left: float, source: str, vendor_source: Optional[str], rating: Optional[float], erase: Optional[float],
    cycles: Optional[float], findings: attrs.AttributeFindings,
) -> Optional[str]:
    """Why a life-left candidate claims less wear than the drive has done, or None."""
    if rating is not None and erase is not None and source != vendor_source \
            and erase > (100.0 - left + 1.0) / 100.0 * rating * 3:
        return (f"{source} says {left:g}% left after {erase:,.0f} average erase cycles, against "
                f"the {rating:,.0f} rated cycles the drive's own {vendor_source} implies")
    if _refuted(left, cycles):
        return f"{source} says {left:g}% left after {cycles:,.0f} full-capacity writes"
    # Counts that contradict each other give no average, but still the least wear they admit.
    floor = findings.get(attrs.ERASE_FLOOR)
    if erase is None and floor is not None and _refuted(left, floor.value):
        attr = floor.attribute
        return (f"{source} says {left:g}% left, but the erase counts (ata {attr.attr_id} {attr.name} "
                f"{(attr.raw_string or '').strip()}) admit no fewer than {floor.value:,.0f} cycles")
    return None


def _refuted(left: float, cycles: Optional[float]) -> bool:
    """A life-left figure that claims too little wear for the cycles already done, even at the
    highest rated endurance of any MLC/TLC drive."""
    if cycles is None:
        return False
    return cycles > (100.0 - left + 1.0) / 100.0 * evidence.MAX_RATED_CYCLES


DEVSTAT_USED = "Percentage Used Endurance Indicator"
DEVSTAT_USED_SOURCE = "ata devstat Percentage Used Endurance Indicator"
# All eight bits set: firmware that does not keep the indicator answers 255 (Intel 330/520 do on
# new drives, next to a Media_Wearout_Indicator of 100). Taken as "not kept", never as worn out.
_DEVSTAT_USED_INVALID = 255


def life_left(
    figures: AtaFigures, findings: attrs.AttributeFindings, devstat: Dict[str, int], is_ssd: Optional[bool],
    written: Optional[int] = None, capacity: Optional[int] = None,
) -> Optional[float]:
    """Percent of rated life left, or None (with the reason in ``extra``).

    Candidates in rank order: the device statistics indicator (a standard), then the vendor
    attribute the drive database names as a life figure. A candidate that claims less wear than
    the drive has already done (:func:`_refuted`) is set aside; the first one left is given."""
    extra = figures.extra
    if is_ssd is False:
        if DEVSTAT_USED in devstat or findings.get(attrs.LIFE_LEFT):
            extra["life_left_ratio_withheld"] = "a rotating drive has no flash life (its firmware fills the SSD page)"
        return None
    candidates: List[Tuple[float, str]] = []
    nand = findings.value(attrs.NAND_WRITTEN)
    if nand is not None and evidence.bytes_problem(nand, capacity, None, "ata"):
        nand = None  # a NAND counter that cannot be true says nothing of the wear either
    erase = findings.value(attrs.AVERAGE_ERASE)
    if erase is not None and erase > evidence.MAX_DRIVE_WRITES:
        erase = None
    cycles = _wear_done(written, nand, capacity, erase)
    used = None if _mirrored(devstat) else devstat.get(DEVSTAT_USED)
    vendor, vendor_source = _vendor_life(findings, extra)
    if used == _DEVSTAT_USED_INVALID and (vendor is not None or (cycles or 0) < MIN_RATED_CYCLES):
        # All bits set: saturated past the rated life, or a field the firmware does not keep
        # (every Intel 330/520 report in the training set reads 255, new or not). Taken as worn
        # out only when nothing else speaks and the drive has done the cycles to be.
        extra["life_left_ratio_rejected"] = (
            f"{DEVSTAT_USED_SOURCE} is 255 (all bits set): "
            + (f"{vendor_source} gives a reading" if vendor is not None
               else f"only {cycles or 0:,.0f} full-capacity writes done") + "; not taken as worn out")
    elif used is not None and not 0 <= used <= 255:
        extra["life_left_ratio_rejected"] = f"{DEVSTAT_USED_SOURCE} is {used}: not a byte"
    elif used is not None:
        candidates.append((max(0.0, 100.0 - used), DEVSTAT_USED_SOURCE))
        extra["life_used_percent"] = str(used)
    if vendor is not None:
        candidates.append((vendor, vendor_source))
    standard = [c for c in candidates if c[1] == DEVSTAT_USED_SOURCE]
    _spread(figures, standard, findings)
    rating = _own_rating(vendor, erase)
    set_aside: List[str] = []
    for left, source in candidates:
        why = _set_aside(left, source, vendor_source, rating, erase, cycles, findings)
        if why:
            set_aside.append(why)
            continue
        others = [f"{s}: {v:g}%" for v, s in candidates if s != source]
        if others:
            extra["life_left_ratio_also"] = "; ".join(others)
        if set_aside:
            extra["life_left_ratio_rejected"] = "; ".join(set_aside)
        figures.sources["life_left_ratio"] = source
        return left
    if set_aside:
        extra["life_left_ratio_withheld"] = "; ".join(set_aside)
        return None
    if "life_left_ratio_vendor_conflict" in extra:
        extra["life_left_ratio_withheld"] = "vendor life figures disagree: " + extra.pop("life_left_ratio_vendor_conflict")
        return None
    unvouched = [findings.unvouched.get(m) for m in (attrs.LIFE_LEFT, attrs.WEAR_LEVELLING_LEFT)]
    found = next((a for a in unvouched if a is not None), None)
    if found is not None:
        extra["life_left_ratio_withheld"] = (
            f"ata {found.attr_id} {found.name} is smartctl's default name on a drive its database does not "
            "describe: not known to be a life figure")
    elif is_ssd and "life_left_ratio_withheld" not in extra:
        extra["life_left_ratio_withheld"] = (
            "no life figure: no device statistics endurance indicator, and no attribute the drive database "
            "names as one on this model reads as a percentage")
    return None


# Two vendor life figures of one drive further apart than this contradict each other.
VENDOR_LIFE_SPREAD_POINTS = 10


def _life_figures(findings: attrs.AttributeFindings) -> List[Tuple[float, str]]:
    """Every vendor life figure of the drive as percent left, with its source: the explicit life
    attributes, then the wear-levelling counter's VALUE where the table reads it as life."""
    explicit = [f for f in [findings.get(attrs.LIFE_LEFT), findings.get(attrs.LIFE_USED)] + findings.also
                if f is not None and f.meaning != attrs.WEAR_LEVELLING_LEFT and not _rating_missing(f, findings)]
    wear = findings.get(attrs.WEAR_LEVELLING_LEFT)
    found = explicit + ([wear] if wear is not None else [])
    return [(_as_left(f), f.source) for f in found]


def _spread(figures: AtaFigures, standard: List[Tuple[float, str]], findings: attrs.AttributeFindings) -> None:
    """How far apart the drive's independent life figures are (the device statistics indicator
    and the vendor attributes): ``life_left_spread_ratio`` where there are two or more, and
    ``extra["life_left_disagreement"]`` past the margin (an ADATA SP900 with 0% used in device
    statistics and 87% left in 231 SSD_Life_Left: 0.13)."""
    every = standard + _life_figures(findings)
    if len(every) < 2:
        return
    values = [v for v, _ in every]
    spread = round((max(values) - min(values)) / 100.0, 6)
    figures.fields["life_left_spread_ratio"] = spread
    figures.sources["life_left_spread_ratio"] = "; ".join(f"{s}: {v:g}%" for v, s in every)
    if spread > LIFE_LEFT_SPREAD_MARGIN:
        high, low = max(every), min(every)
        figures.extra["life_left_disagreement"] = (
            f"{high[1]} says {high[0]:g}% left, {low[1]} {low[0]:g}%: {spread * 100:g} points apart "
            f"(more than {LIFE_LEFT_SPREAD_MARGIN * 100:g})")


def _as_left(found: attrs.Finding) -> float:
    return max(0.0, 100.0 - found.value) if found.meaning == attrs.LIFE_USED else found.value


def _rating_missing(found: attrs.Finding, findings: attrs.AttributeFindings) -> bool:
    """Silicon Motion firmware computes 169 Remaining_Lifetime_Perc from the average erase count
    and the rated cycles it reports in 168 Max_Erase_Count_of_Spec; with 168 at 0 there is no
    rating, and the 100 it shows was never computed."""
    if found.attribute.attr_id != 169:
        return False
    rating = next((a for a in findings.attributes if a.attr_id == 168 and "Spec" in a.name), None)
    return rating is not None and rating.raw == 0


def _vendor_life(findings: attrs.AttributeFindings, extra: Optional[Dict[str, str]] = None) -> Tuple[Optional[float], str]:
    """The vendor's life figure: the explicit life attributes first, the wear-levelling fallback
    last. Two explicit ones that disagree leave no figure."""
    explicit = [f for f in [findings.get(attrs.LIFE_LEFT), findings.get(attrs.LIFE_USED)] + findings.also
                if f is not None and f.meaning != attrs.WEAR_LEVELLING_LEFT and not _rating_missing(f, findings)]
    wear = findings.get(attrs.WEAR_LEVELLING_LEFT)
    if explicit:
        compared = explicit + ([wear] if wear is not None else [])
        values = [_as_left(f) for f in compared]
        if max(values) - min(values) > VENDOR_LIFE_SPREAD_POINTS:
            if extra is not None:
                extra["life_left_ratio_vendor_conflict"] = "; ".join(
                    f"{f.source}: {v:g}%" for f, v in zip(compared, values))
            return None, ""
        return values[0], explicit[0].source
    if wear is not None and not findings.invalid_life:
        # the fallback, only where no explicit life attribute exists (a present but invalid
        # one, VALUE 253 on SK hynix, says the firmware keeps no life figure)
        return wear.value, wear.source
    return None, ""


# --------------------------------------------------------------------------- host volumes


@dataclass(frozen=True)
class _Volume:
    bytes: int
    source: str


@dataclass(frozen=True)
class _Reading:
    """One attribute and the units it may count in, the first the most likely."""

    attr: attrs.Attribute
    units: Tuple[str, ...]
    source: str  # "ata 241 Total_LBAs_Written raw"
    established: bool  # the unit is the database's or the table's, not a candidate

    def in_unit(self, unit: str, sector: int) -> int:
        return (self.attr.raw or 0) * (attrs.unit_bytes(unit, sector) or sector)


def _attribute_reading(
    known: Optional[attrs.Finding], unvouched: Optional[attrs.Attribute], sector: int,
    capacity: Optional[int], power_on_seconds: Optional[int], used: Optional[int] = None,
    average_erase: Optional[float] = None,
) -> Optional[_Reading]:
    """The volume attribute and its units. A unit from the drive database that physics refutes
    (a drive the database files under the wrong controller) falls back to the candidates."""
    if known is not None:
        unit = known.rule.unit
        source = f"ata {known.attribute.attr_id} {known.attribute.name} raw"
        own_row = known.rule.family is not None
        if own_row and _unit_label(unit) not in known.attribute.name:
            source += f" x {_unit_label(unit)}"  # the table's unit for this model, not the name's
        sound = _volume_problem(known.value, capacity, power_on_seconds, used, average_erase,
                                known.meaning) is None
        if sound and not own_row:
            return _Reading(known.attribute, (unit,), source, True)
        units = (unit,) + tuple(u for u in _CANDIDATE_UNITS if u != unit)
        return _Reading(known.attribute, units, source, sound)
    if unvouched is not None and unvouched.raw is not None:
        return _Reading(unvouched, _CANDIDATE_UNITS, f"ata {unvouched.attr_id} {unvouched.name} raw", False)
    return None


def _agrees(value: int, sector: int, reading: _Reading, unit: str) -> bool:
    """The attribute in ``unit`` and the devstat sector counter ``value`` say the same volume, to
    within 2% or one count of the unit (the two are read a moment apart)."""
    unit_sectors = max(1, (attrs.unit_bytes(unit, sector) or sector) // sector)
    attr_sectors = (reading.attr.raw or 0) * unit_sectors
    return abs(attr_sectors - value) <= max(0.02 * value, unit_sectors + _DEVSTAT_SLACK_SECTORS)


def _wrap_units(value: int, sector: int, reading: _Reading) -> Tuple[str, ...]:
    """The units to try the wrap match in: the reading's own first. A unit the drive database
    names is weighed first; when the attribute in that unit disagrees with the devstat counter
    (Lite-On LCH firmware counts GiB under the database's Host_Writes_32MiB: 6939 x 32 MiB is
    0.23 TB against a devstat counter of 0.85 TB), the other units an attribute counts in are tried
    too, and only the one whose count leaves exactly the devstat value in the low 32 bits fits."""
    if _agrees(value, sector, reading, reading.units[0]):
        return reading.units[:1]
    return reading.units + tuple(u for u in _CANDIDATE_UNITS if u not in reading.units)


def _wrap_match(value: int, sector: int, reading: Optional[_Reading]) -> Optional[_Volume]:
    """The attribute reading that the devstat counter ``value`` equals modulo 2**32 sectors while
    the attribute counts more than 2**32 sectors: the devstat counter is kept in 32 bits (it
    wrapped), and the match fixes the attribute's unit. Such a match is weighed above the devstat
    counter whatever unit the database names: a random attribute lands within one unit of the
    counter's low 32 bits about once in 2,000 drives for GiB, once in 65,000 for 32 MiB."""
    if reading is None:
        return None
    for unit in _wrap_units(value, sector, reading):
        unit_sectors = max(1, (attrs.unit_bytes(unit, sector) or sector) // sector)
        attr_sectors = (reading.attr.raw or 0) * unit_sectors
        gap = (attr_sectors - value) % _DEVSTAT_WRAP
        gap = min(gap, _DEVSTAT_WRAP - gap)
        if attr_sectors >= _DEVSTAT_WRAP and gap <= unit_sectors + _DEVSTAT_SLACK_SECTORS:
            if reading.established and unit == reading.units[0]:
                note = ""
            elif unit in reading.units:
                note = f" x {_unit_label(unit)} (unit fixed by the devstat counter's low 32 bits)"
            else:
                note = (f" x {_unit_label(unit)} (not the {_unit_label(reading.units[0])} its name says: the "
                        "devstat counter is this count's low 32 bits)")
            return _Volume(attr_sectors * sector, reading.source + note)
    return None


def _sector_twin(value: int, sector: int, table: Tuple[attrs.Attribute, ...]) -> Optional[_Volume]:
    """An attribute whose raw count, above 2**32, has the devstat counter as its low 32 bits to
    within the two counters' read-apart slack: the drive keeps the same sector count in 48 bits
    there (ATP: "235 Unknown_Attribute 8514994079" = 2**32 + devstat 4220026783)."""
    for attr in table:
        raw = attr.raw
        if raw is None or raw < _DEVSTAT_WRAP or raw >= _DEVSTAT_ALL_ONES:
            continue
        gap = (raw - value) % _DEVSTAT_WRAP
        if min(gap, _DEVSTAT_WRAP - gap) <= _DEVSTAT_SLACK_SECTORS:
            return _Volume(raw * sector, f"ata {attr.attr_id} {attr.name} raw x sector size "
                                         "(its low 32 bits are the devstat counter)")
    return None


def _unit_label(unit: str) -> str:
    return "sector size" if unit == attrs.LBA else unit


def _mirrored(devstat: Dict[str, int]) -> bool:
    """Some firmware fills the device statistics page with copies of its vendor counters: the
    "sector" count equals the write command count exactly (SSSTC CV8/CVB, whose "percentage
    used" then holds the life left). Such a page is not device statistics."""
    sectors, commands = devstat.get("Logical Sectors Written"), devstat.get("Number of Write Commands")
    return sectors is not None and sectors == commands and sectors > 1000


def _used_percent(devstat: Dict[str, int]) -> Optional[int]:
    if _mirrored(devstat):
        return None
    used = devstat.get(DEVSTAT_USED)
    return used if used is not None and 0 <= used < _DEVSTAT_USED_INVALID else None


def host_volume(
    figures: AtaFigures, findings: attrs.AttributeFindings, devstat: Dict[str, int], sector: int,
    field_name: str, meaning: str, counter: str, commands: str,
    capacity: Optional[int], power_on_seconds: Optional[int],
) -> Optional[int]:
    """Host bytes written or read, or None with the reason.

    Candidates in rank order: the devstat sector counter (a standard) unless it is broken, or the
    attribute it turns out to be the low 32 bits of; then the attribute in its established unit;
    then, with no devstat counter at all, the one candidate unit physics allows."""
    extra = figures.extra
    known = findings.get(meaning)
    unvouched = findings.unvouched.get(meaning)
    reading = _attribute_reading(known, unvouched, sector, capacity, power_on_seconds, _used_percent(devstat),
                                 findings.value(attrs.ERASE_CEILING) or findings.value(attrs.AVERAGE_ERASE))
    candidates: List[_Volume] = []
    value = devstat.get(counter)
    if value is not None:
        issued = devstat.get(commands)
        problem = None
        if _mirrored(devstat):
            problem = f"{counter} equals Number of Write Commands: the page copies vendor counters"
        elif value >= _DEVSTAT_ALL_ONES:
            problem = f"{counter} has all 48 bits set"
        elif value == 0 and reading is not None and (reading.attr.raw or 0) > 0:
            problem = f"{counter} is 0 while {reading.source} is not"
        wrapped = None
        if problem is None and value < _DEVSTAT_WRAP:
            wrapped = _wrap_match(value, sector, reading) or _sector_twin(value, sector, findings.attributes)
        if wrapped is not None:
            extra[f"{field_name}_devstat_ignored"] = (
                f"{counter} ({value}) is {wrapped.source} modulo 2**32 sectors: a 32-bit counter")
            candidates.append(wrapped)
        elif problem is None and issued is not None and value < issued:
            problem = f"{counter} ({value}) is below {commands} ({issued})"
        if problem is not None:
            extra[f"{field_name}_devstat_ignored"] = problem
        elif wrapped is None:
            candidates.append(_Volume(value * sector, f"ata devstat {counter} x sector size"))
    if reading is not None and reading.established:
        candidates.append(_Volume(reading.in_unit(reading.units[0], sector), reading.source))
    return _first_sound(figures, candidates, field_name, meaning, findings, unvouched, capacity,
                        power_on_seconds, _used_percent(devstat))


# Erase cycles a drive may do without the host: 10 from the factory, and one full refresh a month
# while powered. JESD218 rates enterprise SSD retention at 3 months (40 C, power off), client at a
# year: a powered drive rewrites a block at most about that often to keep its data; a month is a
# threefold margin on the shorter one.
FACTORY_ERASE_CYCLES = 10
REFRESH_INTERVAL_SECONDS = 730 * 3600


def _idle_erase_allowance(power_on_seconds: Optional[int]) -> float:
    return FACTORY_ERASE_CYCLES + (power_on_seconds or 0) / REFRESH_INTERVAL_SECONDS


def _volume_problem(
    value: float, capacity: Optional[int], power_on_seconds: Optional[int], used: Optional[int],
    average_erase: Optional[float], meaning: str = attrs.HOST_WRITTEN, what: str = "host bytes written",
) -> Optional[str]:
    """Why a host volume cannot be true for this drive: physics (evidence.bytes_problem), and for
    writes the drive's own wear: its life used, and its average erase count (NAND writes are about
    erase count x capacity, and host writes lie between NAND / 100 and 3 x NAND even on a
    compressing controller with overprovisioned flash)."""
    problem = evidence.bytes_problem(value, capacity, power_on_seconds, "ata", what)
    if problem or meaning != attrs.HOST_WRITTEN:
        return problem
    problem = evidence.written_against_life_problem(value, capacity, used)
    if problem or not capacity or average_erase is None:
        return problem
    drive_writes = value / capacity
    # 30 x: hybrid drives erase their TLC less often than the host writes, the SLC cache taking
    # rewrites (SanDisk nCache: 360 drive writes over a TLC average of 26).
    if average_erase >= 10 and drive_writes > 30 * (average_erase + 1):
        return (f"{drive_writes:,.0f} drive writes from the host, more than the flash's average erase count "
                f"({average_erase:,.0f}) allows")
    # The low side only past what a drive erases with no host writes at all: factory cycles, and
    # refreshing its data while it sits powered (an HPE MK000480GWCEV spare: 16 cycles, 8.5 MB
    # from the host in 30,614 hours of smartd's self-tests; drivedb names its 173 since r6204).
    if average_erase > _idle_erase_allowance(power_on_seconds) and drive_writes < average_erase / 100:
        return (f"{drive_writes:,.1f} drive writes from the host against an average erase count of "
                f"{average_erase:,.0f}: a write amplification over 100")
    return None


def _first_sound(
    figures: AtaFigures, candidates: List[_Volume], field_name: str, meaning: str,
    findings: attrs.AttributeFindings, unvouched: Optional[attrs.Attribute],
    capacity: Optional[int], power_on_seconds: Optional[int], used: Optional[int],
) -> Optional[int]:
    extra = figures.extra
    what = "host bytes written" if meaning == attrs.HOST_WRITTEN else "host bytes read"
    rejected: List[str] = []
    erase = findings.value(attrs.ERASE_CEILING) or findings.value(attrs.AVERAGE_ERASE)
    for candidate in candidates:
        problem = _volume_problem(candidate.bytes, capacity, power_on_seconds, used, erase, meaning, what)
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
    elif unvouched is not None or findings.get(meaning) is not None:
        attr = unvouched or findings.get(meaning).attribute  # type: ignore[union-attr]
        extra[f"{field_name}_withheld"] = (
            f"ata {attr.attr_id} {attr.name}: unit not established (the drive database does not vouch for it "
            "on this model, or its unit is refuted, and no device statistics counter fixes it)")
    elif f"{field_name}_devstat_ignored" in extra:
        extra[f"{field_name}_withheld"] = extra[f"{field_name}_devstat_ignored"] + ", and no attribute of known unit"
    elif any(_VOLUME_NAME.search(a.name) for a in findings.attributes):
        extra[f"{field_name}_withheld"] = "no volume counter of established unit on this model"
    return None


# --------------------------------------------------------------------------- power-on time


# Two power-on counters of one drive agree within this (devstat is kept in whole hours, and some
# firmware updates one counter less often than the other); past it one of them is wrong.
POWER_ON_AGREE_SECONDS = 48 * 3600
POWER_ON_AGREE_SHARE = 0.05
DEVSTAT_POWER_ON_SOURCE = "ata devstat Power-on Hours"


def power_on_seconds(
    figures: AtaFigures, doc: Dict[str, Any], vocab: Vocabulary, devstat: Dict[str, int], sector: int = 512,
    stamp_hours: Optional[int] = None,
) -> Optional[int]:
    """Power-on time: device statistics first, then attribute 9 in the unit the database gives.

    Each must be a possible time (:func:`evidence.power_on_problem`). When both are and they
    disagree (WD/SanDisk firmware keeps devstat at 0, or 8-50 times below attribute 9), the
    drive's own record decides: a counter below the least time the drive must have been on
    (:func:`_least_power_on`), or below the newest self-test's power-on stamp (``stamp_hours``,
    with the slack collectors/smartctl/logs.py allows), is refuted; if both still stand, the
    time is withheld."""
    candidates: List[Tuple[int, str]] = []
    hours = devstat.get("Power-on Hours")
    if hours is not None:
        candidates.append((hours * 3600, DEVSTAT_POWER_ON_SOURCE))
    from_attribute = _attribute_power_on(doc, vocab)
    if from_attribute is not None:
        candidates.append(from_attribute)
    rejected = []
    sound: List[Tuple[int, str]] = []
    for seconds, source in candidates:
        problem = evidence.power_on_problem(seconds)
        if problem is None and source.startswith("ata 9") and seconds // 3600 in _SATURATED_HOURS and not seconds % 3600:
            problem = f"{seconds // 3600} hours is where a 16-bit counter stops (0x{seconds // 3600:X}), not a reading"
        if problem is None:
            sound.append((seconds, source))
        else:
            rejected.append(f"{source}: {problem}")
    if len(sound) == 2 and not _agree(sound[0][0], sound[1][0]):
        least, why = _least_power_on(devstat, sector)
        refuted = {src: _below(s, least, why, stamp_hours) for s, src in sound}
        kept = [(s, src) for s, src in sound if refuted[src] is None]
        rejected += [f"{src}: {s / 3600:,.0f} hours, {refuted[src]}" for s, src in sound if refuted[src]]
        if len(kept) != 1:
            said = " and ".join(f"{src} says {s / 3600:,.0f} hours" for s, src in sound)
            figures.extra["power_on_seconds_withheld"] = f"{said}; nothing on the drive tells which is right" if kept \
                else "; ".join(rejected)
            return None
        sound = kept
    if sound:
        seconds, source = sound[0]
        figures.sources["power_on_seconds"] = source
        if rejected:
            figures.extra["power_on_seconds_rejected"] = "; ".join(rejected)
        return seconds
    if rejected:
        figures.extra["power_on_seconds_withheld"] = "; ".join(rejected)
    return None


def _below(seconds: int, least: int, why: str, stamp_hours: Optional[int]) -> Optional[str]:
    """Why a power-on figure is less than the drive's own record proves, or None."""
    if seconds < least:
        return f"less than {why}"
    hours = seconds // 3600
    if stamp_hours is not None and stamp_hours > hours + max(logs.CONTRADICTION_HOURS, hours * logs.CONTRADICTION_SHARE):
        return f"below the self-test log's stamp at power-on hour {stamp_hours:,}"
    return None


def _agree(a: int, b: int) -> bool:
    return abs(a - b) <= max(POWER_ON_AGREE_SECONDS, POWER_ON_AGREE_SHARE * max(a, b))


def _least_power_on(devstat: Dict[str, int], sector: int) -> Tuple[int, str]:
    """The least power-on time the drive's own record proves, and how: the logical sectors it
    says it wrote (device statistics: a standard counter in logical sectors) at the most a SATA
    link can carry (evidence.LINK_BYTES_PER_SECOND). A counter that wrapped only lowers this."""
    written = devstat.get("Logical Sectors Written")
    if not written or written < 0:
        return 0, "nothing"
    volume = written * sector
    if evidence.bytes_problem(volume, None, None, "ata"):
        return 0, "nothing"
    least = int(volume / evidence.LINK_BYTES_PER_SECOND["ata"])
    return least, (f"the {least / 3600:,.1f} hours writing {volume / 1e12:,.2f} TB "
                   f"(devstat Logical Sectors Written) takes at SATA's 600 MB/s")


def _attribute_power_on(doc: Dict[str, Any], vocab: Vocabulary) -> Optional[Tuple[int, str]]:
    power = doc.get("power_on_time")
    hours = power.get("hours") if isinstance(power, dict) else None
    attr9 = next((a for a in vocab.attributes if a.attr_id == 9), None)
    named = vocab.names.get(9) if vocab.entry is not None else None
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
