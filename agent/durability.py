"""Flush integrity and power-loss protection: whether an acknowledged commit survives a power cut.

Two questions, both pure functions of what the poller already has:

* **Does the kernel still send FLUSH?** The block layer sends a cache flush (and FUA writes) to
  a drive only while ``/sys/block/<dev>/queue/write_cache`` reads ``write back``. Writing
  ``write through`` there (a tuning tip for drives with power-loss protection, a udev rule
  copied from one, a USB/SAS bridge without a caching mode page) makes fsync return without a
  flush, while the drive's own cache, as hdparm -W, the NVMe Volatile Write Cache feature,
  smartctl or the SCSI caching mode page report it, stays on. :func:`flush_ignored` says so.
* **Does the drive need the flush?** A drive with power-loss protection (capacitors that hold
  the drive up long enough to write its cache to flash) keeps what it acknowledged without
  one; a drive without loses its cache on a power cut. :func:`power_loss_protection` looks the
  drive up in the configuration (``power_loss_protection``), then in :data:`PLP_MODELS`, and
  :func:`expected_write_cache` turns the answer into the write cache state to expect.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional, Sequence, Tuple

from collectors.model import (
    CACHE_DISABLED,
    CACHE_ENABLED,
    CACHE_SOURCE_SYSFS_QUEUE,
    CACHE_SOURCES_DRIVE,
    CACHE_UNKNOWN,
    WriteCacheState,
)

# The kernel's view, and the answers that report the drive's own cache setting.
_KERNEL_SOURCE = CACHE_SOURCE_SYSFS_QUEUE
_DRIVE_SOURCES = CACHE_SOURCES_DRIVE


@dataclass(frozen=True)
class PlpModel:
    """One row of the model table: drives whose model matches ``model`` (a regular expression,
    searched in the model string the drive reports) have power-loss protection or not, as the
    cited vendor document says."""

    model: str
    protected: bool
    product: str
    document: str  # the vendor document that says so, precise enough to find it again


# Only rows a vendor document backs. A model not listed is "unknown", never "unprotected": the
# write cache expectation then stays the configured default (write_cache_expected).
PLP_MODELS: Tuple[PlpModel, ...] = (
    PlpModel(
        model=r"^INTEL SSDSA[12]C[WT]\d{3}G3",
        protected=True,
        product="Intel SSD 320 Series",
        document="Intel Solid-State Drive 320 Series Product Specification, order number "
                 "325152-001US (March 2011), feature list: 'Enhanced power-loss data protection'",
    ),
    PlpModel(
        model=r"^INTEL SSDSC2BA\d{3}G[34]",
        protected=True,
        product="Intel SSD DC S3700 / S3710 Series",
        document="Intel Solid-State Drive DC S3700 Series Product Specification, feature list: "
                 "'Enhanced power-loss data protection'",
    ),
    PlpModel(
        model=r"^KINGSTON SE100S3",
        protected=True,
        product="Kingston SSDNow E100",
        document="Kingston Technical Brief 'E100: Tantalum Capacitors' "
                 "(kingston.com/en/ssd/enterprise/technical_brief/tantalum_capacitors): the E100's "
                 "tantalum capacitors hold it up to save buffered data and mapping tables on power failure",
    ),
)


def _matches(rule, serial: Optional[str], model: Optional[str]) -> bool:
    """A configuration rule with ``serial`` (exact) and/or ``model`` (regex) fields; a field
    that is not set matches every drive, as in Config.expected_write_cache."""
    if rule.serial is not None and rule.serial != serial:
        return False
    if rule.model is not None and not re.search(rule.model, model or ""):
        return False
    return True


def power_loss_protection(config, serial: Optional[str], model: Optional[str],
                          stated: Optional[bool] = None) -> Tuple[Optional[bool], str]:
    """Whether the drive has power-loss protection, and where that comes from.

    The first matching ``power_loss_protection`` rule of the configuration wins (the operator
    knows the hardware); then what the drive's own tool states (``stated``: fio-status
    "Powerloss protection: protected", a plug-in's ``power_loss_protection``); then the model
    table. ``(None, "unknown")`` when none says.
    """
    for rule in getattr(config, "power_loss_protection", ()):
        if _matches(rule, serial, model):
            return rule.protected, "config"
    if stated is not None:
        return stated, "the drive's tool"
    for row in PLP_MODELS:
        if model and re.search(row.model, model):
            return row.protected, f"model table: {row.document}"
    return None, "unknown"


def expected_write_cache(config, serial: Optional[str], model: Optional[str],
                         stated_protection: Optional[bool] = None) -> Optional[str]:
    """The write cache state to expect: an explicit ``write_cache_rules`` entry first; else
    ``enabled`` for a drive with power-loss protection (its cache is safe and makes fsync
    fast), ``disabled`` for one known to have none (its cache loses acknowledged writes on a
    power cut unless every flush is honoured); else ``write_cache_expected``. None: any."""
    for rule in config.write_cache_rules:
        if _matches(rule, serial, model):
            return None if rule.expected == "any" else rule.expected
    protected, _ = power_loss_protection(config, serial, model, stated_protection)
    if protected is True:
        return CACHE_ENABLED
    if protected is False:
        return CACHE_DISABLED
    return config.expected_write_cache(serial, model)


def flush_ignored(states: Sequence[WriteCacheState]) -> Optional[bool]:
    """True when the kernel treats the drive as ``write through`` (so it sends no FLUSH) while
    the drive itself reports its volatile cache enabled; False when both are known and that is
    not so; None when either side is unknown (no sysfs file, or no tool could ask the drive)."""
    kernel = [s.state for s in states if s.source == _KERNEL_SOURCE and s.state != CACHE_UNKNOWN]
    drive = [s.state for s in states if s.source in _DRIVE_SOURCES and s.state != CACHE_UNKNOWN]
    if not kernel or not drive:
        return None
    return kernel[0] == CACHE_DISABLED and CACHE_ENABLED in drive
