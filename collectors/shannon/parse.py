"""Shannon Direct-IO PCIe flash cards: ``shannon-status`` and the driver's sysfs report.

Shannon cards are not in smartmontools' drive database; their health comes from the
vendor tool ``shannon-status`` (and, with newer drivers, from files the driver puts under
``/sys/class/block/<dfX>/shannon/``). A card has two device nodes: the *control* node
``/dev/sctX`` that ``shannon-status`` takes, and the *block* node ``/dev/dfX`` that holds
the data.

Three text shapes are parsed here, all into :class:`~collectors.model.DriveReading`:

``shannon-status -p /dev/scta`` (key=value), generation 1 (driver 2.6.x), one card::

    drive=/dev/scta
    serial_number=006819246149b014
    device_state=attached as disk /dev/dfa
    access_mode=readwrite
    controller_temp=71 degC
    bad_block_percentage=1.0760%
    host_write_data=13801.32 GB
    write_amplifier=1.4493
    estimated_life_left=99%

``shannon-status -p -a`` (key=value), generation 2 (newer drivers), one blank-line
separated block per card, optionally with ``Found ...`` headers and a ``Totally found``
footer::

    Found Shannon PCIE Flash card /dev/scta:

    control_device_node=/dev/scta
    block_device_node=/dev/dfa
    access_mode=ReadWrite
    controller_temperature=58 degC
    dynamic_bad_blocks=12
    media_status=Healthy
    seu_flag=Normal
    estimated_life_left=97.35%

``shannon-status -a`` (human readable), one or several cards::

    Direct-IO drive scta at PCI Address:41:00:0:
    Model:sh-shannon-pcie-ssd, SN: 006819246149b014
    Overprovision: 27%, warn at 10%
    Controller internal temperature: 71 degC, max 77 degC
    Media status: 1.0760% bad block
    Power on hours: 9 hours 15 minutes, Power cycles: 3
      Host write data    : 13774.36 GB / 12828.37 GiB
      Estimated life left: 99% left

Units: shannon-status prints "GB" meaning 10^9 bytes (it prints GiB next to it in ``-a``),
temperatures in degC, voltages in mV, percentages with a ``%`` sign. Everything is
converted once here, into the model's base units.

The parsers are pure (text in, readings out) and raise only :class:`ParseError`.
:class:`ShannonProbe` does the I/O and never parses.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from decimal import Decimal, InvalidOperation

from collectors import evidence, numbers
from collectors.model import KIND_SHANNON, DriveReading, ParseError, Temperature, Voltage
from collectors.runner import ToolResult, run_tool

__all__ = [
    "SYSFS_FILES",
    "ShannonProbe",
    "parse_card_list",
    "parse_status_a",
    "parse_status_p",
    "parse_sysfs",
]

# Access modes, normalised. A card that leaves readwrite is wearing out or failing: in
# reduced-write mode the driver throttles writes to stretch what life is left; in readonly
# mode it refuses writes altogether.
ACCESS_READWRITE = "readwrite"
ACCESS_READONLY = "readonly"
ACCESS_REDUCED_WRITE = "reduced_write"

# Spellings seen or expected, compared after dropping everything but letters and
# lower-casing: gen 1 prints "readwrite", gen 2 "ReadWrite"; sysfs "mode=0, readwrite".
_ACCESS_WORDS = {
    "readwrite": ACCESS_READWRITE,
    "readonly": ACCESS_READONLY,
    "reducedwrite": ACCESS_REDUCED_WRITE,
    "writereduced": ACCESS_REDUCED_WRITE,
}

# Decimal units as shannon-status prints them; "GB" is 10^9 (it prints GiB alongside).
_SIZE_UNITS = {
    "B": 1,
    "KB": 10**3,
    "MB": 10**6,
    "GB": 10**9,
    "TB": 10**12,
    "PB": 10**15,
    "KIB": 2**10,
    "MIB": 2**20,
    "GIB": 2**30,
    "TIB": 2**40,
}

_DURATION_UNITS = {
    "day": 86400,
    "days": 86400,
    "hour": 3600,
    "hours": 3600,
    "minute": 60,
    "minutes": 60,
    "second": 1,
    "seconds": 1,
}

# The driver reports its host and NAND write counters in 512-byte sectors whatever the
# card's logical sector size.
SYSFS_SECTOR_BYTES = 512

_NUMBER = r"\d+(?:\.\d+)?"
_PERCENT_RE = re.compile(rf"^({_NUMBER})\s*%$")
_SIZE_RE = re.compile(rf"^({_NUMBER})\s*([A-Za-z]+)$")
_CELSIUS_RE = re.compile(rf"^(-?{_NUMBER})\s*degC$")
_MILLIVOLT_RE = re.compile(rf"^({_NUMBER})\s*mV$")
_INT_RE = re.compile(r"^\d+$")
_DECIMAL_RE = re.compile(rf"^{_NUMBER}$")
_DURATION_PART_RE = re.compile(r"(\d+)\s*([A-Za-z]+)")
_BLOCK_DEV_RE = re.compile(r"(?:^|\s)/dev/([A-Za-z0-9_]+)\s*$")

# "Found Shannon PCIE SSD card /dev/scta:" (2.6.x) / "Found Shannon PCIE Flash card /dev/sctb:"
_FOUND_RE = re.compile(r"^Found\s+Shannon\s+PCIE\s+.*?card\s+(/dev/\S+?):?$", re.IGNORECASE)
# "Totally found 1 Direct-IO PCIe SSD card on this system."
_TOTAL_RE = re.compile(r"^Totally\s+found\s+(\d+)\s+Direct-IO\s+PCIe\b", re.IGNORECASE)
# "Direct-IO drive scta at PCI Address:41:00:0:" starts a card in -a output.
_A_CARD_RE = re.compile(r"^Direct-IO\s+drive\s+(\S+)\s+at\s+PCI\s+Address:\s*(.*?):?$", re.IGNORECASE)
_CONTROL_NODE_RE = re.compile(r"^(?:drive|control_device_node)\s*=\s*(/dev/\S+)$")

# A comma-separated segment without a colon qualifies the previous key:
# "..., max 77 degC", "Overprovision: 27%, warn at 10%".
_A_QUALIFIER_RE = re.compile(r"^(max|warn at)\s+(.+)$", re.IGNORECASE)


# ---------------------------------------------------------------------------------------
# value parsers: each takes the raw value and a context string naming the line for errors


def _bad(context: str, value: str, what: str) -> ParseError:
    return ParseError(f"{context}: {numbers.quote(value)} is not {what}")


def _decimal(text: str, context: str, what: str) -> Decimal:
    try:
        return Decimal(text)
    except InvalidOperation:
        raise _bad(context, text, what) from None


def _percent_ratio(value: str, context: str, allow_bare: bool = False) -> float:
    """'1.0760%' -> 0.01076; a percentage must lie in 0..100."""
    match = _PERCENT_RE.match(value)
    if match:
        number = match.group(1)
    elif allow_bare and _DECIMAL_RE.match(value):
        number = value
    else:
        raise _bad(context, value, "a percentage")
    percent = _decimal(number, context, "a percentage")
    if percent > 100:
        raise _bad(context, value, "a percentage between 0 and 100")
    # Decimal keeps 1.0760 / 100 exact, so the float is the one a reader would write.
    return float(percent / 100)


def _size_bytes(value: str, context: str) -> int:
    """'13801.32 GB' -> 13801320000000 (GB is 10^9 bytes)."""
    match = _SIZE_RE.match(value)
    if not match or match.group(2).upper() not in _SIZE_UNITS:
        raise _bad(context, value, "a size with a unit (GB, GiB, ...)")
    amount = _decimal(match.group(1), context, "a size")
    return int(amount * _SIZE_UNITS[match.group(2).upper()])


def _celsius(value: str, context: str, allow_bare: bool = False) -> float:
    match = _CELSIUS_RE.match(value)
    if match:
        number = match.group(1)
    elif allow_bare and re.match(rf"^-?{_NUMBER}$", value):
        number = value
    else:
        raise _bad(context, value, "a temperature in degC")
    return float(_decimal(number, context, "a temperature"))


def _volts(value: str, context: str, allow_bare: bool = False) -> float:
    """'1004 mV' -> 1.004 V."""
    match = _MILLIVOLT_RE.match(value)
    if match:
        number = match.group(1)
    elif allow_bare and _DECIMAL_RE.match(value):
        number = value
    else:
        raise _bad(context, value, "a voltage in mV")
    return float(_decimal(number, context, "a voltage") / 1000)


def _integer(value: str, context: str) -> int:
    if not _INT_RE.match(value) or len(value) > numbers.MAX_DIGITS:
        raise _bad(context, value, "a whole number of at most 4,300 digits")
    return int(value)


def _plain_float(value: str, context: str) -> float:
    if not _DECIMAL_RE.match(value):
        raise _bad(context, value, "a number")
    return float(value)


def _duration_seconds(value: str, context: str) -> int:
    """'9 hours 15 minutes' -> 33300."""
    parts = _DURATION_PART_RE.findall(value)
    leftover = _DURATION_PART_RE.sub("", value).strip(" ,")
    if not parts or leftover:
        raise _bad(context, value, "a duration such as '9 hours 15 minutes'")
    total = 0
    for amount, unit in parts:
        seconds = _DURATION_UNITS.get(unit.lower())
        if seconds is None:
            raise _bad(context, value, "a duration in days/hours/minutes/seconds")
        total += int(amount) * seconds
    return total


def _access_mode(value: str) -> str | None:
    """Normalise an access mode; None for a spelling we do not know (kept raw in extra)."""
    # sysfs prints "mode=0, readwrite": the word after the comma is the mode.
    word = value.rsplit(",", 1)[-1]
    return _ACCESS_WORDS.get(re.sub(r"[^a-z]", "", word.lower()))


# ---------------------------------------------------------------------------------------
# one card being assembled


class _Card:
    """Collects one card's values; :meth:`build` checks identity and makes the reading."""

    def __init__(self, device: str | None, where: str) -> None:
        self.where = where  # "line 3" of the card's first line, for error messages
        self.fields: dict[str, object] = {"device": device}
        self.temps: dict[str, dict[str, float]] = {}
        self.volts: dict[str, dict[str, float]] = {}
        self.defects: dict[str, int] = {}
        self.sources: dict[str, str] = {}
        self.extra: dict[str, str] = {}
        self.verdicts: dict[str, str] = {}  # media_status / seu_flag: where each was read
        self.has_values = False  # sysfs: did any known file have a value

    def set(self, name: str, value: object, source: str | None = None) -> None:
        self.fields[name] = value
        if source:
            self.sources[name] = source

    def temperature(self, sensor: str, kind: str, celsius: float) -> None:
        self.temps.setdefault(sensor, {})[kind] = celsius

    def voltage(self, rail: str, kind: str, volts: float) -> None:
        self.volts.setdefault(rail, {})[kind] = volts

    def access(self, raw: str, source: str) -> None:
        mode = _access_mode(raw)
        self.extra["access_mode_raw"] = raw
        if mode is None:
            return
        self.set("access_mode", mode, source)
        # reduced_write still accepts writes; only readonly refuses them.
        self.fields["readonly"] = mode == ACCESS_READONLY

    def said(self, key: str, value: str, source: str) -> None:
        """A descriptive value, kept as reported; the card's own health words also decide
        ``smart_healthy`` (:meth:`verdict`)."""
        self.extra[key] = value
        if key in HEALTH_WORDS:
            self.verdicts[key] = source

    def verdict(self) -> None:
        """The card's own health verdict from the words generation 2 prints (``-p -a``, ``-a``,
        and ``seu_flag`` in sysfs): ``smart_healthy`` False when any says the card is failing,
        True when every one read says it is well, withheld (with the word) when one is a word
        not in :data:`HEALTH_WORDS`. Generation 1 prints no such word: no verdict."""
        read = {key: self.extra[key] for key in self.verdicts}
        if not read:
            return
        meaning = {key: HEALTH_WORDS[key].get(value.strip().lower()) for key, value in read.items()}
        failed = [f"{key}={read[key]}" for key, ok in meaning.items() if ok is False]
        unknown = [f"{key}={read[key]!r}" for key, ok in meaning.items() if ok is None]
        source = ", ".join(f"{self.verdicts[key]} {read[key]}" for key in read)
        if failed:
            self.set("smart_healthy", False, source)
            self.extra["health_failed"] = "card reports " + ", ".join(failed)
        elif unknown:
            self.extra["smart_healthy_withheld"] = f"{', '.join(unknown)}: not a state this parser knows"
        else:
            self.set("smart_healthy", True, source)

    def derive(self) -> None:
        """Figures the card implies but does not print on every path: the bad-block share from
        the static and grown (dynamic) counts and the card's geometry (channels x lunsets x
        luns x erase blocks per lun, printed by -a/-p); write amplification from the NAND and
        host byte counters (the sysfs files give both, the ratio is the tool's own definition:
        total writes / host writes). Nothing is derived from a part that is missing."""
        counts = [self.defects.get(k) for k in ("static_bad_block", "dynamic_bad_block")]
        geometry = [self.extra.get(k, "") for k in _GEOMETRY_KEYS]
        if self.fields.get("bad_block_ratio") is None and None not in counts and all(g.isdigit() for g in geometry):
            total = 1
            for g in geometry:
                total *= int(g)
            bad = sum(c for c in counts if c is not None)
            if total > 0 and bad <= total:
                self.set("bad_block_ratio", bad / total,
                         "shannon (static_bad_blocks + dynamic_bad_blocks) / (channels x lunsets x luns x eblocks)")
        nand, host = self.fields.get("nand_written_bytes"), self.fields.get("host_written_bytes")
        if self.fields.get("write_amplification") is None and isinstance(nand, int) and isinstance(host, int) and host > 0:
            ratio = numbers.as_float(nand) / numbers.as_float(host)  # either may be beyond float range
            low, high = WRITE_AMPLIFICATION_RANGE
            if low <= ratio <= high:
                # shannon-status prints it with 4 decimals; the same rounding here
                self.set("write_amplification", round(ratio, 4),
                         f"{self.sources.get('nand_written_bytes', 'nand')} / {self.sources.get('host_written_bytes', 'host')}")
            else:
                self.extra["write_amplification_withheld"] = (
                    f"NAND writes / host writes = {ratio:.3f}, outside {low:g}..{high:g}: a card without "
                    f"compression writes at least what the host wrote")

    def build(self, require_serial: bool = True) -> DriveReading:
        self.derive()
        self.verdict()
        if not self.fields.get("device"):
            raise ParseError(f"{self.where}: card has no control device node")
        if require_serial and not self.fields.get("serial"):
            raise ParseError(f"{self.where}: card {self.fields['device']} reports no serial number")
        temperatures = tuple(
            Temperature(sensor, t["current"], max_celsius=t.get("max"))
            for sensor, t in sorted(self.temps.items(), key=lambda kv: _SENSOR_ORDER.index(kv[0]))
            if "current" in t
        )
        voltages = tuple(
            Voltage(rail, v["current"], max_volts=v.get("max"))
            for rail, v in sorted(self.volts.items(), key=lambda kv: _RAIL_ORDER.index(kv[0]))
            if "current" in v
        )
        return evidence.contain(DriveReading(
            kind=KIND_SHANNON,
            is_ssd=True,
            temperatures=temperatures,
            voltages=voltages,
            defects=dict(self.defects),
            sources=dict(self.sources),
            extra=dict(self.extra),
            **self.fields,  # type: ignore[arg-type]
        ))


# The card's own health words (driver 3.x, generation 2) and what each says of the card: the
# flash (media_status) and the controller's single-event-upset state (seu_flag: an upset in its
# logic that it corrected, or one it could not). Public Shannon monitors page on media_status
# not Healthy (a falcon-agent hardware check reads "Media Status" from shannon-status); the
# driver exports seu_flag in sysfs beside its seu_crc_error/seu_ecc_error counters.
HEALTH_WORDS: dict[str, dict[str, bool]] = {
    "media_status": {"healthy": True, "unhealthy": False},
    "seu_flag": {"normal": True, "correctable": True, "uncorrectable": False},
}

# -a / -p geometry, kept in extra as printed: their product is the card's erase blocks.
_GEOMETRY_KEYS = ("channels", "lunsets_in_channel", "luns_in_lunset", "eblocks_in_lun")
# Shannon cards do not compress: NAND writes are at least the host's (and at most 50x).
WRITE_AMPLIFICATION_RANGE = (1.0, 50.0)

_SENSOR_ORDER = ("controller", "board", "flash")
_RAIL_ORDER = ("internal", "auxiliary")


# ---------------------------------------------------------------------------------------
# the key table shared by -p (both generations) and -a (whose labels map onto these keys)

_TEMPERATURE_KEYS = {
    "controller_temp": "controller",  # gen 1
    "controller_temperature": "controller",  # gen 2
    "board_temp": "board",
    "board_temperature": "board",
    "flash_temp": "flash",
    "flash_temperature": "flash",
}
_VOLTAGE_KEYS = {"internal_voltage": "internal", "auxiliary_voltage": "auxiliary"}
_SIZE_FIELDS = {
    "user_capacity": "capacity_bytes",
    "physical_capacity": "physical_capacity_bytes",
    "host_write_data": "host_written_bytes",
    "host_read_data": "host_read_bytes",
    # "Total write data" is what reached the flash: host writes plus garbage collection.
    "total_write_data": "nand_written_bytes",
}
_DEFECT_KEYS = {"dynamic_bad_blocks": "dynamic_bad_block", "static_bad_blocks": "static_bad_block"}


def _apply(card: _Card, key: str, value: str, source: str, context: str) -> None:
    """Store one reported value on ``card``; ``key`` is the -p spelling."""
    if key in ("drive", "control_device_node"):
        card.fields["device"] = value
    elif key == "block_device_node":
        card.set("block_device", value.rsplit("/", 1)[-1])
    elif key == "device_state":
        card.extra["device_state"] = value
        # "attached as disk /dev/dfa": the block device; a detached card names none.
        match = _BLOCK_DEV_RE.search(value)
        if match and card.fields.get("block_device") is None:
            card.set("block_device", match.group(1))
    elif key == "serial_number":
        card.set("serial", value)
    elif key in ("model", "firmware_version", "driver_version"):
        card.set({"firmware_version": "firmware"}.get(key, key), value)
    elif key == "access_mode":
        card.access(value, source)
    elif key == "logical_sector":
        card.set("logical_sector_bytes", _integer(value, context))
    elif key in _SIZE_FIELDS:
        card.set(_SIZE_FIELDS[key], _size_bytes(value, context), source)
    elif key == "overprovision":
        # Overprovision is the spare area left to replace bad blocks; it shrinks with wear.
        card.set("spare_left_ratio", _percent_ratio(value, context), source)
    elif key == "overprovision_warn":
        card.set("spare_threshold_ratio", _percent_ratio(value, context), source)
    elif key in _TEMPERATURE_KEYS:
        card.temperature(_TEMPERATURE_KEYS[key], "current", _celsius(value, context))
    elif key.endswith("_max") and key[:-4] in _TEMPERATURE_KEYS:
        card.temperature(_TEMPERATURE_KEYS[key[:-4]], "max", _celsius(value, context))
    elif key in _VOLTAGE_KEYS:
        card.voltage(_VOLTAGE_KEYS[key], "current", _volts(value, context))
    elif key.endswith("_max") and key[:-4] in _VOLTAGE_KEYS:
        card.voltage(_VOLTAGE_KEYS[key[:-4]], "max", _volts(value, context))
    elif key == "bad_block_percentage":
        card.set("bad_block_ratio", _percent_ratio(value, context), source)
    elif key in _DEFECT_KEYS:
        card.defects[_DEFECT_KEYS[key]] = _integer(value, context)
    elif key in ("power_on_hours", "power_on_time"):
        # Despite the name, gen 1 prints "9 hours 15 minutes", not a number of hours.
        card.set("power_on_seconds", _duration_seconds(value, context), source)
    elif key == "power_cycles":
        card.set("power_cycles", _integer(value, context), source)
    elif key == "write_amplifier":
        card.set("write_amplification", _plain_float(value, context), source)
    elif key == "estimated_life_left":
        card.set("life_left_ratio", _percent_ratio(value, context), source)
    else:
        # Descriptive values (pci_address, media_status, seu_flag, geometry ...) are kept
        # as reported, for the API; none of them is a number the metrics need.
        card.said(key, value, source)


def _reading_list(cards: list[_Card], announced: list[str], total: int | None, what: str) -> list[DriveReading]:
    """Check the cards against the tool's own header and footer counts, then build them."""
    readings = [card.build() for card in cards]
    devices = {r.device for r in readings}
    missing = [node for node in announced if node not in devices]
    if missing:
        raise ParseError(f"{what}: header announces {', '.join(missing)} but no values follow (truncated?)")
    if total is not None and total != len(readings):
        raise ParseError(f"{what}: footer says {total} card(s) but {len(readings)} were read (truncated?)")
    if not readings and total != 0:
        raise ParseError(f"{what}: no Shannon card in the output")
    return readings


# ---------------------------------------------------------------------------------------
# public parsers


class _Listing:
    """The frame around the cards of a listing: ``Found ... card /dev/sctX:`` headers and the
    ``Totally found N ...`` footer, kept to check what was read against them."""

    def __init__(self) -> None:
        self.announced: list[str] = []
        self.total: int | None = None

    def frame(self, line: str) -> bool:
        """Take ``line`` if it is a header or the footer (the card before it ends there)."""
        found = _FOUND_RE.match(line)
        if found:
            self.announced.append(found.group(1))
            return True
        footer = _TOTAL_RE.match(line)
        if footer:
            self.total = int(footer.group(1))
            return True
        return False


@numbers.guarded("shannon-status")
def parse_status_p(text: str) -> list[DriveReading]:
    """Parse ``shannon-status -p <dev>`` (gen 1) or ``shannon-status -p -a`` (gen 2).

    A card starts at ``drive=`` (gen 1) or ``control_device_node=`` (gen 2) and ends at a
    blank line or the next card. ``Found ... card /dev/sctX:`` headers and the
    ``Totally found N ...`` footer are checked against what was read, so truncated output
    is an error rather than a missing card. Output whose footer says 0 cards gives ``[]``.
    """
    cards: list[_Card] = []
    listing = _Listing()
    card: _Card | None = None
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        context = f"line {number}"
        if not line or listing.frame(line):
            card = None
            continue
        if "=" not in line:
            raise ParseError(f"{context}: {line[:60]!r} is not key=value")
        key, _, value = line.partition("=")
        key, value = key.strip(), value.strip()
        if not re.match(r"^[a-z][a-z0-9_]*$", key):
            raise ParseError(f"{context}: {key[:60]!r} is not a shannon-status key")
        if key in ("drive", "control_device_node"):
            card = _Card(value, context)
            cards.append(card)
        elif card is None:
            raise ParseError(f"{context}: {key}= before any drive=/control_device_node= line")
        _apply(card, key, value, f"shannon {key}", f"{context}: {key}")
    return _reading_list(cards, listing.announced, listing.total, "shannon-status -p")


# -a labels (lower case) -> the -p key that carries the same value.
_A_LABELS = {
    "model": "model",
    "sn": "serial_number",
    "device state": "device_state",
    "access mode": "access_mode",
    "firmware version": "firmware_version",
    "driver version": "driver_version",
    "vendor": "vendor_id",
    "device": "device_id",
    "sub vendor": "subsystem_vendor_id",
    "sub device": "subsystem_device_id",
    "flash manufacturer": "flash_manufacturer",
    "flash id": "flash_id",
    "logical sector": "logical_sector",
    "physical sector": "physical_sector",
    "user capacity": "user_capacity",
    "physical capacity": "physical_capacity",
    "overprovision": "overprovision",
    "overprovision warn at": "overprovision_warn",
    "error correction": "error_correction",
    "controller internal temperature": "controller_temp",
    "controller internal temperature max": "controller_temp_max",
    "controller board temperature": "board_temp",
    "controller board temperature max": "board_temp_max",
    "nand flash temperature": "flash_temp",
    "nand flash temperature max": "flash_temp_max",
    "internal voltage": "internal_voltage",
    "internal voltage max": "internal_voltage_max",
    "auxiliary voltage": "auxiliary_voltage",
    "auxiliary voltage max": "auxiliary_voltage_max",
    "power on hours": "power_on_hours",
    "power cycles": "power_cycles",
    "host write data": "host_write_data",
    "host read data": "host_read_data",
    "total write data": "total_write_data",
    "write amplifier": "write_amplifier",
    "estimated life left": "estimated_life_left",
}


def _a_segments(line: str, context: str) -> list[tuple[str, str]]:
    """Split an -a line into (label, value) pairs.

    "Controller internal temperature: 71 degC, max 77 degC" gives
    [("controller internal temperature", "71 degC"), ("controller internal temperature max", "77 degC")].
    """
    pairs: list[tuple[str, str]] = []
    for segment in line.split(", "):
        label, colon, value = segment.partition(":")
        qualifier = _A_QUALIFIER_RE.match(segment.strip())
        if colon and not qualifier:
            pairs.append((" ".join(label.lower().split()), value.strip()))
        elif qualifier and pairs:
            pairs.append((f"{pairs[-1][0]} {qualifier.group(1).lower()}", qualifier.group(2).strip()))
        elif pairs:
            # A comma inside a value: glue it back on; the value parser judges the result.
            label0, value0 = pairs[-1]
            pairs[-1] = (label0, f"{value0}, {segment.strip()}")
        else:
            raise ParseError(f"{context}: {line[:60]!r} is not 'Label: value'")
    return pairs


def _a_value(key: str, value: str) -> str:
    """Reduce an -a value to the -p form: '1200.00 GB/1117.59 GiB' -> '1200.00 GB'."""
    if key in _SIZE_FIELDS:
        # The decimal figure comes first and matches what -p prints.
        return value.split("/", 1)[0].strip()
    if key == "estimated_life_left" and value.endswith(" left"):
        return value[: -len(" left")].strip()
    return value


@numbers.guarded("shannon-status")
def parse_status_a(text: str) -> list[DriveReading]:
    """Parse ``shannon-status -a``: the human-readable report of one or several cards (driver
    2.6.x), or, on newer drivers whose ``-a`` prints the key=value layout of ``-p -a``
    (``control_device_node=/dev/scta`` ...), that layout (parsed by :func:`parse_status_p`)."""
    if _is_key_value(text):
        return parse_status_p(text)
    cards: list[_Card] = []
    listing = _Listing()
    card: _Card | None = None
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        context = f"line {number}"
        if not line:
            continue
        if listing.frame(line):
            card = None
            continue
        start = _A_CARD_RE.match(line)
        if start:
            name = start.group(1)
            card = _Card(name if name.startswith("/dev/") else f"/dev/{name}", context)
            if start.group(2):
                card.extra["pci_address"] = start.group(2)
            cards.append(card)
            continue
        if card is None:
            raise ParseError(f"{context}: {line[:60]!r} before any 'Direct-IO drive' line")
        for label, value in _a_segments(line, context):
            if not value:
                continue  # "Lifetime data volumes:" introduces the lines below it
            if label == "media status":
                # Gen 1 reports the bad-block share here: "1.0760% bad block".
                if value.endswith(" bad block"):
                    _apply(card, "bad_block_percentage", value[: -len(" bad block")].strip(),
                           "shannon -a Media status", f"{context}: Media status")
                else:
                    card.said("media_status", value, "shannon -a Media status")
                continue
            key = _A_LABELS.get(label, re.sub(r"[^a-z0-9]+", "_", label).strip("_"))
            _apply(card, key, _a_value(key, value), f"shannon -a {label.capitalize()}", f"{context}: {label}")
    return _reading_list(cards, listing.announced, listing.total, "shannon-status -a")


def _is_key_value(text: str) -> bool:
    """The first card line of the output is ``drive=`` or ``control_device_node=``."""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or _FOUND_RE.match(line) or _TOTAL_RE.match(line):
            continue
        return bool(_CONTROL_NODE_RE.match(line))
    return False


@numbers.guarded("shannon-status")
def parse_card_list(text: str) -> list[str]:
    """Control device nodes (``/dev/scta``) named in ``shannon-status -a`` output.

    Also accepts ``-p``/``-p -a`` output. Empty output, or output whose footer says 0
    cards, gives ``[]`` (no cards on this host). Non-empty output that names no card and
    has no footer, or a footer that disagrees with the cards named, is a ParseError.
    """
    nodes: list[str] = []
    total: int | None = None
    for raw in text.splitlines():
        line = raw.strip()
        footer = _TOTAL_RE.match(line)
        if footer:
            total = int(footer.group(1))
            continue
        node = None
        for pattern in (_FOUND_RE, _CONTROL_NODE_RE):
            match = pattern.match(line)
            if match:
                node = match.group(1)
        start = _A_CARD_RE.match(line)
        if start:
            name = start.group(1)
            node = name if name.startswith("/dev/") else f"/dev/{name}"
        if node and node not in nodes:
            nodes.append(node)
    if total is not None and total != len(nodes):
        raise ParseError(f"footer says {total} card(s) but the output names {len(nodes)}")
    if not nodes and total is None and text.strip():
        raise ParseError(f"no Shannon card and no 'Totally found' line in {text.strip()[:60]!r}")
    return nodes


# ---------------------------------------------------------------------------------------
# sysfs
#
# Files under /sys/class/block/<dfX>/shannon/ as this module reads them (one value per file,
# trailing newline ignored, a file that is missing or empty is "not reported"):
#
#   serial_number, model, firmware_version, driver_version   text
#   estimated_life_left      percent, bare ("97.35") or with "%"
#   overprovision            percent, bare ("27") or with "%"
#   dynamic_bad_blkcnt, static_bad_blkcnt, free_blkcnt        whole numbers (blocks)
#   seu_flag                 Normal | Correctable | Uncorrectable (single-event upsets)
#   seu_crc_error, seu_ecc_error and their _history           whole numbers
#   access_mode              "mode=0, readwrite" (the word after the comma), or a bare word
#   readonly_reason, reduced_write_reason                     text
#   host_write_sectors, host_read_sectors, total_write_sectors  512-byte sectors
#   temperature_int, temperature_board, temperature_flash (+_max)  degC, bare or "NN degC"
#   voltage_int, voltage_aux (+_max)                         mV, bare or "NN mV"
#   power_on_seconds, power_cycle_count                      whole numbers
#   pci_info/pci_address                                     text
#
# No public capture of these files exists; the formats follow the driver's attribute names
# and public scripts that read them, and are kept lenient (bare or with unit).

SYSFS_FILES: tuple[str, ...] = (
    "serial_number",
    "model",
    "firmware_version",
    "driver_version",
    "estimated_life_left",
    "overprovision",
    "dynamic_bad_blkcnt",
    "static_bad_blkcnt",
    "free_blkcnt",
    "seu_flag",
    "seu_crc_error",
    "seu_crc_error_history",
    "seu_ecc_error",
    "seu_ecc_error_history",
    "access_mode",
    "readonly_reason",
    "reduced_write_reason",
    "host_write_sectors",
    "host_read_sectors",
    "total_write_sectors",
    "temperature_int",
    "temperature_int_max",
    "temperature_board",
    "temperature_board_max",
    "temperature_flash",
    "temperature_flash_max",
    "voltage_int",
    "voltage_int_max",
    "voltage_aux",
    "voltage_aux_max",
    "power_on_seconds",
    "power_cycle_count",
    "pci_info/pci_address",
)

_SYSFS_TEXT = {
    "serial_number": "serial",
    "model": "model",
    "firmware_version": "firmware",
    "driver_version": "driver_version",
}
_SYSFS_SECTORS = {
    "host_write_sectors": "host_written_bytes",
    "host_read_sectors": "host_read_bytes",
    "total_write_sectors": "nand_written_bytes",
}
_SYSFS_TEMPERATURES = {"temperature_int": "controller", "temperature_board": "board", "temperature_flash": "flash"}
_SYSFS_VOLTAGES = {"voltage_int": "internal", "voltage_aux": "auxiliary"}
_SYSFS_DEFECTS = {"dynamic_bad_blkcnt": "dynamic_bad_block", "static_bad_blkcnt": "static_bad_block"}
_SYSFS_COUNTS_EXTRA = (
    "free_blkcnt",
    "seu_crc_error",
    "seu_crc_error_history",
    "seu_ecc_error",
    "seu_ecc_error_history",
)
_SYSFS_TEXT_EXTRA = {"seu_flag": "seu_flag", "readonly_reason": "readonly_reason",
                     "reduced_write_reason": "reduced_write_reason", "pci_info/pci_address": "pci_address"}


@numbers.guarded("shannon sysfs")
def parse_sysfs(files: Mapping[str, str], block_device: str) -> DriveReading:
    """Partial reading from the driver's sysfs files of one card.

    ``files`` maps a file name relative to ``/sys/class/block/<dfX>/shannon/`` (as in
    :data:`SYSFS_FILES`) to its content. ``device`` is ``/dev/<block_device>``: sysfs does
    not name the control node, so the poller merges this reading with the tool's by serial
    (or block device). Raises ParseError when no known file has a value, or a value is
    malformed (the message names the file).
    """
    if not re.match(r"^[A-Za-z0-9_]+$", block_device or ""):
        raise ParseError(f"{block_device!r} is not a block device name")
    card = _Card(f"/dev/{block_device}", f"sysfs {block_device}")
    card.set("block_device", block_device)
    values = {name: content.strip() for name, content in files.items() if content and content.strip()}
    for name, value in values.items():
        context = f"sysfs {block_device}/shannon/{name}"
        source = f"shannon sysfs {name}"
        base = name.removesuffix("_max")
        if name in _SYSFS_TEXT:
            card.set(_SYSFS_TEXT[name], value)
        elif name == "estimated_life_left":
            card.set("life_left_ratio", _percent_ratio(value, context, allow_bare=True), source)
        elif name == "overprovision":
            card.set("spare_left_ratio", _percent_ratio(value, context, allow_bare=True), source)
        elif name in _SYSFS_DEFECTS:
            card.defects[_SYSFS_DEFECTS[name]] = _integer(value, context)
        elif name in _SYSFS_COUNTS_EXTRA:
            card.extra[name] = str(_integer(value, context))
        elif name in _SYSFS_TEXT_EXTRA:
            card.said(_SYSFS_TEXT_EXTRA[name], value, source)
        elif name == "access_mode":
            card.access(value, source)
        elif name in _SYSFS_SECTORS:
            card.set(_SYSFS_SECTORS[name], _integer(value, context) * SYSFS_SECTOR_BYTES, source)
        elif base in _SYSFS_TEMPERATURES:
            kind = "max" if base != name else "current"
            card.temperature(_SYSFS_TEMPERATURES[base], kind, _celsius(value, context, allow_bare=True))
        elif base in _SYSFS_VOLTAGES:
            kind = "max" if base != name else "current"
            card.voltage(_SYSFS_VOLTAGES[base], kind, _volts(value, context, allow_bare=True))
        elif name == "power_on_seconds":
            card.set("power_on_seconds", _integer(value, context), source)
        elif name == "power_cycle_count":
            card.set("power_cycles", _integer(value, context), source)
        else:
            continue  # a file this module does not know: ignore, do not guess its unit
        card.has_values = True
    if not card.has_values:
        raise ParseError(f"sysfs {block_device}: no Shannon driver values among {sorted(files)[:8]}")
    # Identity is optional here: the tool's reading carries it.
    return card.build(require_serial=False)


# ---------------------------------------------------------------------------------------
# probe

Runner = Callable[..., ToolResult]

_CONTROL_DEVICE_RE = re.compile(r"^/dev/[A-Za-z0-9_]+$")
_BLOCK_NAME_RE = re.compile(r"^[A-Za-z0-9_]+$")
_SYSFS_READ_CAP = 4096  # every value file is one short line


class ShannonProbe:
    """Runs ``shannon-status`` and reads the driver's sysfs files; parses nothing.

    The tool path and the sysfs root come from configuration so tests (and users on a lab
    machine) can point them at a fake tool and a fixture tree.
    """

    def __init__(
        self,
        tool: str = "shannon-status",
        runner: Runner = run_tool,
        timeout: float | None = None,
        sysfs_root: str = "/sys",
    ) -> None:
        self.tool = tool
        self.runner = runner
        # None: the runner's bound (the agent's runner applies its one tool timeout to every
        # call); a number is for a probe used on its own, with run_tool.
        self.timeout = timeout
        self.sysfs_root = sysfs_root

    def _run(self, *args: str) -> ToolResult:
        if self.timeout is None:
            return self.runner([self.tool, *args])
        return self.runner([self.tool, *args], timeout=self.timeout)

    def list_cards(self) -> ToolResult:
        """``shannon-status -a``: every card with its human-readable report."""
        return self._run("-a")

    def read_card(self, control_device: str) -> ToolResult:
        """``shannon-status -p /dev/sctX``: one card, key=value."""
        # Only a plain /dev node: a value starting with "-" would be taken as an option.
        if not _CONTROL_DEVICE_RE.match(control_device):
            raise ValueError(f"{control_device!r} is not a Shannon control device such as /dev/scta")
        return self._run("-p", control_device)

    def read_all_p(self) -> ToolResult:
        """``shannon-status -p -a``: every card, key=value (newer drivers)."""
        return self._run("-p", "-a")

    def sysfs_dir(self, block_device: str) -> str:
        if not _BLOCK_NAME_RE.match(block_device):
            raise ValueError(f"{block_device!r} is not a block device name such as dfa")
        return os.path.join(self.sysfs_root, "class", "block", block_device, "shannon")

    def read_sysfs(self, block_device: str) -> dict[str, str] | None:
        """Contents of the :data:`SYSFS_FILES` present for ``block_device``.

        None when the driver exposes no ``shannon`` directory for it (older driver, or not
        a Shannon card). Missing or unreadable files are left out; the parser treats them
        as not reported.
        """
        base = self.sysfs_dir(block_device)
        if not os.path.isdir(base):
            return None
        contents: dict[str, str] = {}
        for name in SYSFS_FILES:
            try:
                with open(os.path.join(base, name), "rb") as handle:
                    data = handle.read(_SYSFS_READ_CAP)
            except OSError:
                # ENOENT on older drivers, EIO from a failing card, EISDIR, EACCES: skip it.
                continue
            contents[name] = data.decode("utf-8", "replace")
        return contents
