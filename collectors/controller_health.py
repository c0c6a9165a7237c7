"""The health rules of a RAID controller, its volumes and its battery, once: the page, ``ssdfleet
status``, the metrics and the shipped alert rules (deploy/prometheus/ssdfleet-controller-alerts.yml,
checked against these constants by tests/sources/controllers/test_controller_rules.py) say the same.

Why they matter on a database host (docs/controllers.md): a volume configured write-back that runs
write-through makes every fsync wait for the drives (the cliff); a degraded volume is one failure
from data loss; volatile caches acknowledged with no power-loss protection lose commits on a power
cut. Pure functions of parsed records: no I/O.
"""

from __future__ import annotations

from typing import Iterable, Optional

from collectors.controller_model import ALWAYS_WRITE_BACK, WRITE_THROUGH, Battery, VirtualDisk

OK, WARNING, CRITICAL = "ok", "warning", "critical"  # agent.health's words (a page, a ticket)

# A volume in one of these states has lost redundancy or data: a page.
VOLUME_PAGE_STATES = ("degraded", "partially-degraded", "offline", "failed")
# Rebuilding: redundancy is coming back, the volume is slow and fragile meanwhile: a ticket.
VOLUME_TICKET_STATES = ("rebuilding",)

# A ticket this long before a scheduled battery learn cycle: during the cycle a NoCachedBadBBU
# volume runs write-through for hours (Broadcom's guide: the learn cycle discharges and recharges
# the battery). Two days leave a working day to move it to a quiet hour.
LEARN_NOTICE_SECONDS = 2 * 86400.0

# The battery conditions that make a controller drop write-back volumes to write-through, in the
# words an alert's summary uses. Order: the first that applies is the cause.
_CAUSES = (
    ("missing", "battery missing"),
    ("failed", "battery failed"),
    ("non-operational", "battery non-operational"),
    ("learning", "battery learn cycle"),
    ("charging", "battery charging"),
    ("degraded", "battery degraded"),
)


def volume_severity(volume: VirtualDisk) -> str:
    if volume.state in VOLUME_PAGE_STATES:
        return CRITICAL
    if volume.state in VOLUME_TICKET_STATES:
        return WARNING
    return OK


def write_through_cause(batteries: Iterable[Battery]) -> Optional[str]:
    """Why a controller's write-back volumes run write-through, when its battery says so; None
    when no battery reports a condition that explains it (the cause is then unknown, not
    guessed: a volume can also be set write-through by hand)."""
    states = []
    for b in batteries:
        state = b.state
        if b.replacement_required and state not in ("missing",):
            state = "failed"
        elif b.learn_active and state in ("optimal", "unknown", "non-operational"):
            state = "learning"
        states.append(state)
    return next((cause for state, cause in _CAUSES if state in states), None)


def write_back_lost(volume: VirtualDisk) -> Optional[bool]:
    """Configured write-back, running write-through: the cliff (:attr:`VirtualDisk.write_back_lost`)."""
    return volume.write_back_lost


def volatile_cache_unprotected(volume: VirtualDisk, drives_protected: Optional[bool]) -> Optional[bool]:
    """True when the volume acknowledges writes from a cache a power cut can lose: it runs
    write-back and either keeps write-back with a bad battery (``CachedBadBBU``/always
    write-back) or has its drives' own volatile caches on (disk cache policy enabled), while its
    drives are not known to be power-loss protected (``drives_protected``: True only when every
    member drive is). None when the current policy is not known."""
    current = volume.current_cache
    if current is None or current.write is None:
        return None
    if current.write == WRITE_THROUGH:
        return False
    always = current.write == ALWAYS_WRITE_BACK or bool(current.cache_when_bad_battery)
    disk_cache_on = volume.disk_cache == "enabled"
    # The controller's own cache with no working battery is lost whatever the drives are; the
    # drives' caches are safe only behind drives that protect them (capacitors).
    return always or (disk_cache_on and drives_protected is not True)


def learn_soon(next_learn: Optional[float], now: float) -> bool:
    """A learn cycle is scheduled within :data:`LEARN_NOTICE_SECONDS` (and not in the past)."""
    return next_learn is not None and 0 <= next_learn - now < LEARN_NOTICE_SECONDS

