"""Rated write endurance of common data-centre SSDs, as data.

Vendors state endurance one of three ways, and the table keeps whichever the spec sheet uses:

* TBW/PBW: host bytes the warranty covers, per model and capacity;
* DWPD over the warranty years: TBW = DWPD x capacity x 365 x years (how Intel and Samsung
  data-centre specifications derive their TBW, rounded);
* P/E cycles of the NAND: capacity x cycles is *NAND* bytes; the projection divides it by the
  write amplification to get host bytes.

Model strings are matched the way smartctl and nvme-cli print them: the part number
(``INTEL SSDSC2BA400G3``, ``INTEL SSDPE2MD400G4``, ``SAMSUNG MZQLB960HAJR-00007``)
more often than the marketing name, so each entry matches both where they differ.

Every row cites its source (``cite``): a vendor product specification, with its order number
or revision where it has one, the phrase that states the rating and the address it was read
at; or, where no specification states it, the published post that does, with its author,
date, the phrase and its address. A row no such document supports is
not in the table: an unsupported rating must not drive a wear-out date, so a drive without a
cited row gets no rated projection (the trend and the drive's own life figure still apply)
until the user adds its rating with ``overrides``. Models whose rating depends on a variant we
cannot tell from the model string (Micron 5100/5200/5300 ECO/PRO/MAX share part-number
prefixes) are left out on purpose: a wrong rating is worse than none.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Iterable, List, Mapping, Optional, Set, Tuple, Union

log = logging.getLogger("ssdfleet.endurance")

TB = 10**12  # vendors rate endurance in decimal terabytes
DAYS_PER_YEAR = 365


@dataclass(frozen=True)
class RatedEndurance:
    """What the vendor promises. ``tbw_bytes`` is host bytes; ``pe_cycles`` multiplies the
    capacity to give NAND bytes. At least one is set."""

    tbw_bytes: Optional[float]
    pe_cycles: Optional[int]
    source: str
    # a rating the drive's own tool states in media-side bytes (Fusion-io's Rated PBW): the
    # NAND total itself, where pe_cycles would be multiplied by the capacity
    nand_bytes: Optional[float] = None


def stated_endurance(reading) -> Optional[RatedEndurance]:
    """The rating the drive's own tool states (``rated_host_written_bytes`` or
    ``rated_nand_written_bytes`` of the reading: fio-status, a plug-in), or None."""
    said = reading.sources
    if reading.rated_host_written_bytes:
        return RatedEndurance(float(reading.rated_host_written_bytes), None,
                              f"drive's tool: {said.get('rated_host_written_bytes', 'rated host writes')}")
    if reading.rated_nand_written_bytes:
        return RatedEndurance(None, None, f"drive's tool: {said.get('rated_nand_written_bytes', 'rated media writes')}",
                              nand_bytes=float(reading.rated_nand_written_bytes))
    return None


@dataclass(frozen=True)
class _Rating:
    name: str
    pattern: str
    dwpd: Optional[float] = None
    years: float = 5.0
    pe_cycles: Optional[int] = None
    tbw_bytes: Optional[float] = None
    note: str = ""
    cite: str = ""


# Rows removed for want of a vendor document (issue 16): Intel DC S3500, S3510, S3520, D3-S4510,
# D3-S4610, DC P4510, P4610; Samsung PM863, SM863, PM883, PM1725, PM9A3; Micron 7300, 7400,
# 9300. Their figures were remembered, not read: no product specification stating them was
# found in the sources searched (tests/test_endurance_citations.py keeps every row cited).
# Put one back only with its document, or rate such a drive with ``overrides``.

# Order matters: the first matching pattern wins, so specific entries come before generic.
_TABLE: Tuple[_Rating, ...] = (
    # Intel DC SATA. SSDSC2BA..G3 = S3700, SSDSC2BX = S3610.
    _Rating("Intel DC S3610", r"S3610|SSDSC2BX", dwpd=3.0,
            cite="Intel SSD DC S3610 Series Product Specification, order 331342-005US: 'Endurance: 3 drive "
                 "writes per day ... for 5 years' (https://manualmachine.com/intel/ssdsc2bx800g401/8105768-user-manual)"),
    _Rating("Intel DC S3700", r"S3700|SSDSC2BA\d{3}G3", dwpd=10.0,
            cite="Intel SSD DC S3700 Series Product Specification: 'Endurance: 10 drive writes per day for 5 years' "
                 "(https://docslib.org/doc/12283368/intel%C2%AE-solid-state-drive-dc-s3700-series)"),
    # The DC S4500 and S4600 rows are gone: their product specification (Intel SSD DC
    # S4500/S4600 Series Product Specification, https://manualzz.com/doc/48879893) rates them
    # "up to 7.64 PBW" and "up to 10.84 PBW" (JESD219) for the largest capacities, about 0.55
    # and 1.5 drive writes a day over 5 years, not the 1 and 3 the table had; the per-capacity
    # figures were not at hand, and a rating too high is worse than none.
    # Intel DC NVMe. SSDPE2ME/SSDPEDME = P3600, SSDPE2MD/SSDPEDMD = P3700.
    _Rating("Intel DC P3600", r"P3600|SSDPE(?:2|D)ME", dwpd=3.0,
            cite="Intel SSD DC P3600 Series Product Specification, order 330569-002US: 'Up to 10.95 PBW ... "
                 "3 Drive Writes/day (JESD219 workload)' (2 TB x 3 x 365 x 5 y = 10.95 PB) "
                 "(https://vdocument.in/intel-solid-state-drive-dc-p3600-series-intel-solid-state-drive-dc-p3600-series.html)"),
    _Rating("Intel DC P3700", r"P3700|SSDPE(?:2|D)MD", dwpd=10.0,
            cite="Intel SSD DC P3700 Series Product Specification, order 330566-005US: 'Up to 36.5 PBW ... "
                 "10 Drive Writes/day (JESD219 workload)' (2 TB x 10 x 365 x 5 y = 36.5 PB); later revisions "
                 "rate some capacities up to 17 (https://vdocuments.mx/intel-solid-state-drive-dc-p3700-series-"
                 "product-specification-reliability-specifications.html)"),
    # Intel client drives: the P/E ratings Aaron Toponce works with in "ZFS Administration, Part
    # III" (25 nm MLC at ~5,000 P/E, 20 nm MLC at ~3,000 P/E), which a PostgreSQL ZFS/pgbench
    # post by digoal quotes (https://github.com/digoal/blog/blob/master/201405/20140516_01.md).
    # Part numbers as smartctl prints them: the 320 is SSDSA2CW/SSDSA2BW ..G3; the 335 is
    # SSDSC2CT..A4, the 330 its SSDSC2CT..A3 sibling (smartmontools drivedb.h, entry "Intel
    # 330/335 Series SSDs": "INTEL SSDSC2CT(060|120|180|240)A[34]", "A4 = 335 Series").
    _Rating("Intel 320", r"Intel(?: SSD)? 320\b|SSDSA2[CB]W\d{3}G3", pe_cycles=5000,
            cite="Aaron Toponce, 'ZFS Administration, Part III - The ZFS Intent Log' (post, 2012-12-06), "
                 "SLOG Life Expectancy: 'the Intel 320 is a 25 nanometer MLC 300 GB SSD, and is rated at roughly "
                 "5000 P/E cycles' (https://pthree.org/2012/12/06/zfs-administration-part-iii-the-zfs-intent-log/)"),
    _Rating("Intel 335", r"Intel(?: SSD)? 335\b|SSDSC2CT\d{3}A4\b", pe_cycles=3000,
            cite="Aaron Toponce, 'ZFS Administration, Part III - The ZFS Intent Log' (post, 2012-12-06), "
                 "SLOG Life Expectancy: 'the Intel 335 is a 20 nanometer MLC 240 GB SSD, and is rated at roughly "
                 "3000 P/E cycles' (https://pthree.org/2012/12/06/zfs-administration-part-iii-the-zfs-intent-log/)"),
    # Samsung data-centre NVMe: MZQLB/MZ1LB = PM983.
    _Rating("Samsung PM983", r"PM983|MZQLB|MZ1LB", dwpd=1.3, years=3,
            cite="Samsung PM983 2.5\" NVMe PCIe SSD Specification (datasheet) Rev. 1.0, Jan. 2018: 'Component "
                 "Design Life 3 years', 'Endurance 3.84/1.92TB/960GB 1.3 DWPD' "
                 "(https://manualmachine.com/samsung/mzqlb3t8hals00007/8108877-user-manual)"),
    # Shannon Direct-IO PCIe cards: the vendor rates them at capacity x 10,000, as a user of a
    # 1.2 TB card who had the figure from the manufacturer published it.
    _Rating(
        "Shannon Direct-IO",
        r"shannon|Direct-IO",
        pe_cycles=10000,
        note="the vendor's figure, capacity x 10,000, as published by a user of the card",
        cite="digoal, 'shannon PCI-E SSD VS OCZ RevoDrive3 X2 PCI-E SSD on CentOS 6.5' (post, 2014-06-19): the "
             "manufacturer's life figure '容量*10000' (capacity x 10000) (https://developer.aliyun.com/article/17226)",
    ),
)

RATINGS = _TABLE  # read-only view for tests and documentation

_COMPILED = tuple((re.compile(r.pattern, re.IGNORECASE), r) for r in _TABLE)

def _dwpd_tbw(dwpd: float, years: float, capacity_bytes: int) -> float:
    return dwpd * capacity_bytes * DAYS_PER_YEAR * years


OverrideValue = Union[RatedEndurance, float, int, Mapping[str, Any]]
Overrides = Union[Mapping[str, OverrideValue], Iterable[Any]]
_NO_OVERRIDES: Mapping[str, OverrideValue] = MappingProxyType({})


def _from_override(
    pattern: str, value: OverrideValue, capacity_bytes: Optional[int]
) -> Optional[RatedEndurance]:
    source = f"override {pattern!r}"
    if isinstance(value, RatedEndurance):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return RatedEndurance(tbw_bytes=float(value), pe_cycles=None, source=source)
    if isinstance(value, Mapping):
        if value.get("tbw_bytes") is not None:
            return RatedEndurance(float(value["tbw_bytes"]), None, source)
        if value.get("tbw_tb") is not None:
            return RatedEndurance(float(value["tbw_tb"]) * TB, None, source)
        if value.get("pe_cycles") is not None:
            return RatedEndurance(None, int(round(float(value["pe_cycles"]))), source)
        if value.get("dwpd") is not None:
            if not capacity_bytes:
                return None
            years = float(value.get("years", 5))
            tbw = _dwpd_tbw(float(value["dwpd"]), years, capacity_bytes)
            return RatedEndurance(tbw, None, f"{source} ({value['dwpd']} DWPD x {years:g} y)")
    raise ValueError(
        f"endurance override {pattern!r}: expected bytes, RatedEndurance or a mapping with "
        f"tbw_bytes, tbw_tb, pe_cycles or dwpd; got {value!r}"
    )


_RULE_FIELDS = ("model", "tbw_bytes", "tbw_tb", "pe_cycles", "dwpd", "years")
_warned: Set[str] = set()


def _warn_once(message: str) -> None:
    if message not in _warned:
        _warned.add(message)
        log.warning("%s", message)


def _override_items(overrides: Overrides) -> List[Tuple[str, OverrideValue]]:
    """(pattern, value) pairs from either form of overrides, in the order given."""
    if isinstance(overrides, Mapping):
        return list(overrides.items())
    items: List[Tuple[str, OverrideValue]] = []
    for rule in overrides:
        # a config rule: {"model": regex, "tbw_bytes": .., "pe_cycles": ..} or an object
        # with those attributes (the pydantic EnduranceRule)
        if not isinstance(rule, Mapping):
            rule = {k: getattr(rule, k, None) for k in _RULE_FIELDS}
        pattern = rule.get("model")
        if not pattern:
            _warn_once(f"endurance override without a model pattern ignored: {rule!r}")
            continue
        value = {k: v for k, v in rule.items() if k != "model" and v is not None}
        items.append((str(pattern), value))
    return items


_SEVERAL_SERIES = re.compile(r"/| and ", re.IGNORECASE)


def _names_several_series(model_family: str) -> bool:
    """smartctl's family names several series with "/" or " and " ("Intel 330/335 Series
    SSDs", "Intel 730 and DC S35x0/3610/3700 Series SSDs")."""
    return bool(_SEVERAL_SERIES.search(model_family))


def rated_endurance(
    model: Optional[str],
    capacity_bytes: Optional[int],
    overrides: Overrides = _NO_OVERRIDES,
    model_family: Optional[str] = None,
    stated: Optional[RatedEndurance] = None,
) -> Optional[RatedEndurance]:
    """Rated endurance of a drive model, or ``None`` when unknown.

    ``overrides`` are the user's own figures and win over the table. Either a mapping from a
    regular expression on the model string to a value, or a sequence of rules
    ``{"model": regex, ...}`` as the config file has them. A value is a number (TBW in
    bytes), a :class:`RatedEndurance`, or a mapping with one of ``tbw_bytes``, ``tbw_tb``,
    ``pe_cycles``, ``dwpd`` (+ ``years``, default 5). A rating per day (DWPD) needs the
    capacity; without it the answer is ``None``.
    """
    if not model:
        return None
    for pattern, value in _override_items(overrides):
        # a bad user rule must not cost the drive its table rating, nor the poller its loop
        try:
            if not re.search(pattern, model, re.IGNORECASE):
                continue
            return _from_override(pattern, value, capacity_bytes)
        except (re.error, ValueError, TypeError) as exc:
            _warn_once(f"endurance override {pattern!r} ignored: {exc}")
    if stated is not None:
        return stated  # the drive's own tool (stated_endurance): after the user, before the table
    # The model string first; smartctl's model family names the series where the part number
    # does not, but only a family that names one series, and only when that matches one row.
    # "Intel S4510/S4610/S4500/S4600 Series SSDs" or "Intel 730 and DC S3500/S3700 Series
    # SSDs" (smartctl 6) cover series with different ratings, some not in the table: matching
    # the one the table has would give an S3500 the S3700's ten drive writes a day.
    family_row = None
    if model_family and not _names_several_series(model_family):
        by_family = [r for regex, r in _COMPILED if regex.search(model_family)]
        family_row = by_family[0] if len(by_family) == 1 else None
    for regex, rating in _COMPILED:
        if not regex.search(model) and rating is not family_row:
            continue
        suffix = f" ({rating.note})" if rating.note else ""
        if rating.tbw_bytes is not None:
            return RatedEndurance(rating.tbw_bytes, None, f"table: {rating.name}{suffix}")
        if rating.pe_cycles is not None:
            return RatedEndurance(
                None, rating.pe_cycles, f"table: {rating.name}, {rating.pe_cycles} P/E{suffix}"
            )
        if not capacity_bytes:
            return None
        dwpd = rating.dwpd
        if dwpd is None:  # a row without any figure rates nothing
            return None
        tbw = _dwpd_tbw(dwpd, rating.years, capacity_bytes)
        return RatedEndurance(
            tbw, None, f"table: {rating.name}, {dwpd:g} DWPD x {rating.years:g} y{suffix}"
        )
    return None
