"""The plug-in contract, version 1 (docs/plugins.md): what a plug-in command prints, validated
strictly, and turned into :class:`~collectors.model.DriveReading` objects.

A plug-in prints ONE JSON document on stdout::

    {"ssdfleet_plugin": 1,
     "drives": [{"serial": "S123", "model": "...", "life_left_ratio": 0.97,
                 "sources": {"life_left_ratio": "memmonitor 'life left: 97%'"}}]}

Every figure is in the drive record's base units (ratios 0..1, bytes, seconds, degrees
Celsius), carries its evidence in ``sources`` (a figure without evidence rejects the
document), and may be withheld with a reason in ``withheld``. Unknown keys, wrong types and
values outside the physical ranges reject the whole document: a plug-in that prints life 97
instead of 0.97 reports nothing rather than something wrong. :func:`parse_document` is pure
and raises only :class:`~collectors.model.ParseError`.
"""

from __future__ import annotations

import json
from typing import Dict, List, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from collectors.model import DriveReading, ParseError, Temperature

CONTRACT_VERSION = 1
KIND = "plugin"

_MAX_COUNTER = 2**63 - 1
_TEXT = dict(min_length=1, max_length=200)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False, strict=True)


class PluginTemperature(_Strict):
    sensor: str = Field(pattern=r"^[a-z][a-z0-9_]{0,31}$")
    celsius: float = Field(ge=-40, le=150)
    max_celsius: Optional[float] = Field(None, ge=-40, le=150)
    limit_celsius: Optional[float] = Field(None, ge=-40, le=150)


# The figures a plug-in may give, each needing an entry in ``sources``.
VALUE_FIELDS = (
    "capacity_bytes", "smart_healthy", "life_left_ratio", "spare_left_ratio", "spare_threshold_ratio",
    "bad_block_ratio", "media_errors", "readonly", "access_mode", "write_amplification",
    "host_written_bytes", "host_read_bytes", "nand_written_bytes", "power_on_seconds", "power_cycles",
    "rated_host_written_bytes", "rated_nand_written_bytes", "power_loss_protection",
    "temperatures", "defects",
)
_IDENTITY = ("serial", "wwn", "model", "vendor", "firmware", "device", "block_device")


class PluginDrive(_Strict):
    serial: Optional[str] = Field(None, pattern=r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$")
    wwn: Optional[str] = Field(None, pattern=r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$")
    model: Optional[str] = Field(None, **_TEXT)
    vendor: Optional[str] = Field(None, **_TEXT)
    firmware: Optional[str] = Field(None, **_TEXT)
    device: Optional[str] = Field(None, pattern=r"^/dev/[A-Za-z0-9._/-]{1,64}$")
    block_device: Optional[str] = Field(None, pattern=r"^[a-z][a-z0-9]{0,31}$")

    capacity_bytes: Optional[int] = Field(None, ge=1, le=_MAX_COUNTER)
    smart_healthy: Optional[bool] = None
    life_left_ratio: Optional[float] = Field(None, ge=0, le=1)
    spare_left_ratio: Optional[float] = Field(None, ge=0, le=1)
    spare_threshold_ratio: Optional[float] = Field(None, ge=0, le=1)
    bad_block_ratio: Optional[float] = Field(None, ge=0, le=1)
    media_errors: Optional[int] = Field(None, ge=0, le=_MAX_COUNTER)
    readonly: Optional[bool] = None
    access_mode: Optional[Literal["readwrite", "readonly", "reduced_write"]] = None
    write_amplification: Optional[float] = Field(None, ge=0.1, le=50)
    host_written_bytes: Optional[int] = Field(None, ge=0, le=_MAX_COUNTER)
    host_read_bytes: Optional[int] = Field(None, ge=0, le=_MAX_COUNTER)
    nand_written_bytes: Optional[int] = Field(None, ge=0, le=_MAX_COUNTER)
    power_on_seconds: Optional[int] = Field(None, ge=0, le=20 * 366 * 86400)
    power_cycles: Optional[int] = Field(None, ge=0, le=_MAX_COUNTER)
    # what the vendor's tool states: a TBW (host bytes) or a rating of media writes, and
    # power-loss protection (used for the projection and the write cache to expect)
    rated_host_written_bytes: Optional[int] = Field(None, ge=1, le=_MAX_COUNTER)
    rated_nand_written_bytes: Optional[int] = Field(None, ge=1, le=_MAX_COUNTER)
    power_loss_protection: Optional[bool] = None
    temperatures: List[PluginTemperature] = Field(default_factory=list, max_length=32)
    defects: Dict[str, int] = Field(default_factory=dict, max_length=32)

    sources: Dict[str, str] = Field(default_factory=dict, max_length=64)
    withheld: Dict[str, str] = Field(default_factory=dict, max_length=64)

    @model_validator(mode="after")
    def _evidence(self) -> PluginDrive:
        if not self.serial and not self.wwn:
            raise ValueError("a drive needs a serial or a wwn (its identity)")
        for name, value in self.defects.items():
            if not name.isidentifier() or not 0 <= value <= _MAX_COUNTER:
                raise ValueError(f"defects.{name}: a lower-case name and a count 0..2**63")
        given = {f for f in VALUE_FIELDS if getattr(self, f) not in (None, [], {})}
        for key, text in list(self.sources.items()) + list(self.withheld.items()):
            if key not in VALUE_FIELDS:
                raise ValueError(f"sources/withheld key {key!r} is not a figure of the contract")
            if not text.strip() or len(text) > 500:
                raise ValueError(f"{key}: evidence or reason must be 1..500 characters")
        missing = sorted(given - set(self.sources))
        if missing:
            raise ValueError(f"figures without evidence in 'sources': {', '.join(missing)}")
        both = sorted(given & set(self.withheld))
        if both:
            raise ValueError(f"figures both given and withheld: {', '.join(both)}")
        return self


class PluginDocument(_Strict):
    ssdfleet_plugin: Literal[1]
    drives: List[PluginDrive] = Field(max_length=4096)


def _message(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:3]:
        where = ".".join(str(p) for p in err.get("loc", ()))
        parts.append(f"{where}: {err.get('msg')}" if where else str(err.get("msg")))
    more = f" (+{exc.error_count() - 3} more)" if exc.error_count() > 3 else ""
    return "; ".join(parts) + more


def parse_document(data: bytes, plugin: str) -> List[DriveReading]:
    """The drives of one plug-in document, as readings of kind ``plugin`` with the plug-in's
    name in their evidence. Raises :class:`ParseError` naming what is wrong."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ParseError(f"output is not UTF-8 (byte {exc.start})") from None
    if not text.strip():
        raise ParseError("no output")
    try:
        raw = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise ParseError(f"output is not one JSON document: {str(exc)[:120]}") from None
    if isinstance(raw, dict) and "ssdfleet_plugin" in raw and raw["ssdfleet_plugin"] != CONTRACT_VERSION:
        raise ParseError(f"contract version {raw['ssdfleet_plugin']!r}: this agent reads version {CONTRACT_VERSION}")
    try:
        doc = PluginDocument.model_validate(raw)
    except ValidationError as exc:
        raise ParseError(f"contract violation: {_message(exc)}") from None
    identities = [d.serial or d.wwn for d in doc.drives]
    if len(set(identities)) != len(identities):
        raise ParseError("two drives share a serial/wwn")
    return [_reading(d, plugin) for d in doc.drives]


def _reading(d: PluginDrive, plugin: str) -> DriveReading:
    ident = d.serial or d.wwn
    values = {f: getattr(d, f) for f in VALUE_FIELDS if f not in ("temperatures", "defects")}
    sources = {k: f"plugin {plugin}: {v}" for k, v in d.sources.items()}
    extra = {"plugin": plugin}
    extra.update({f"{k}_withheld": f"plugin {plugin}: {v}" for k, v in d.withheld.items()})
    return DriveReading(
        kind=KIND,
        device=d.device or f"plugin:{plugin}/{ident}",
        serial=d.serial,
        wwn=d.wwn,
        model=d.model,
        vendor=d.vendor,
        firmware=d.firmware,
        block_device=d.block_device,
        temperatures=tuple(Temperature(t.sensor, t.celsius, t.max_celsius, t.limit_celsius) for t in d.temperatures),
        defects=dict(d.defects),
        sources=sources,
        extra=extra,
        **values,
    )
