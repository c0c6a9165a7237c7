"""The Shannon source: ``shannon-status -p -a`` where the driver has it, else ``-a`` to list the
cards and ``-p /dev/sctX`` to read each one exactly (the ``-a`` reading fills what ``-p`` lacks);
the driver's sysfs files for any card the tool does not give (absent, hung, unparsable)."""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Dict, List, Optional, Tuple

from collectors.failures import FailureLog
from collectors.model import DriveReading, ParseError
from collectors.shannon import parse as shannon
from collectors.shannon.spec import (  # noqa: F401 (re-exported: their old home)
    CONTROL,
    CONTROL_DEVICES,
    SPEC,
)
from collectors.source import (
    Command,
    HelperChecks,
    Refused,
    Report,
    RunResult,
    Source,
    SourceContext,
    built,
    newest,
)

log = logging.getLogger("ssdfleet.shannon")

LIST_PROBE = "shannon-status -a"  # the host-wide call is quarantined under this name


def fill(primary: DriveReading, fallback: DriveReading) -> DriveReading:
    """Take every field ``primary`` lacks from ``fallback``."""
    changes = {}
    for name in primary.__dataclass_fields__:
        value = getattr(primary, name)
        if value is None or value == () or value == {}:
            other = getattr(fallback, name)
            if other is not None and other != () and other != {}:
                changes[name] = other
    return replace(primary, **changes) if changes else primary


class ShannonSource(Source):
    """Three paths to the same record, tried in order each run:

    1. ``shannon-status -p -a``: every card, key=value (newer drivers). Skipped from then on
       once the driver answers it with an error or output we cannot parse (driver 2.6.x).
    2. ``shannon-status -a`` to list the cards (either layout), then ``-p /dev/sctX`` per card,
       the ``-a`` reading filling what ``-p`` lacks.
    3. The driver's sysfs files (``/sys/class/block/dfX/shannon/``) for every Shannon block
       device no tool reading covers: the tool is absent, hangs, or prints nothing usable.
    """

    def __init__(self, ctx: SourceContext) -> None:
        super().__init__(ctx)
        self._failures = FailureLog(log, "shannon: ")  # one line per distinct failure
        self.tool = shannon.ShannonProbe(
            tool=ctx.tool_paths["shannon_status"], runner=ctx.run, sysfs_root=ctx.config.paths.sysfs)
        self._readings: Dict[str, Tuple[DriveReading, float]] = {}  # identity -> reading
        self._p_all: Optional[bool] = None  # does this driver answer -p -a? None: not tried yet

    def _read_p_all(self, errors: List[str]) -> Tuple[Optional[Dict[str, DriveReading]], bool]:
        """(cards, stuck): cards None when -p -a gave nothing usable."""
        if self._p_all is False:
            return None, False
        result = self.ctx.probe(LIST_PROBE, self.tool.read_all_p)
        if result is None or result.timed_out:
            return None, True
        if result.error:  # the tool is missing or not executable: the -a path says so
            return None, False
        try:
            parsed = shannon.parse_status_p(result.stdout.decode("utf-8", "replace")) if result.ok_to_parse else None
        except ParseError as exc:
            parsed = None
            log.debug("shannon-status -p -a not usable (%s); using -a and -p DEV", exc)
        if not parsed:
            if self._p_all is None:
                log.info("shannon-status -p -a: %s; reading cards with -a and -p DEV", result.describe())
            self._p_all = False
            return None, False
        self._p_all = True
        return {reading.device: reading for reading in parsed}, False

    def _read_a_and_p(self, errors: List[str], has_cards: bool) -> Tuple[Dict[str, DriveReading], bool, bool]:
        """(cards, stuck, missing) through -a and -p DEV."""
        cards: Dict[str, DriveReading] = {}
        listing = self.ctx.probe(LIST_PROBE, self.tool.list_cards)
        if listing is None or listing.timed_out:
            errors.append("shannon-status -a: " + ("skipped, an earlier call is stuck" if listing is None
                                                   else listing.describe()))
            return cards, True, False
        if listing.error:
            if has_cards:
                return cards, False, True
            log.debug("shannon-status not usable and no dfX devices: no Shannon cards here")
            return cards, False, False
        if not listing.ok_to_parse:
            errors.append(f"shannon-status -a: {listing.describe()}")
            return cards, False, False
        text = listing.stdout.decode("utf-8", "replace")
        try:
            for reading in shannon.parse_status_a(text):
                cards[reading.device] = reading
        except ParseError as exc:
            if has_cards or text.strip():
                errors.append(f"shannon-status -a: {exc}")
        for device, fallback in list(cards.items()):
            result = self.ctx.probe(device, lambda d=device: self.tool.read_card(d))
            if result is None:
                continue
            if not result.ok_to_parse:
                errors.append(f"shannon-status -p {device}: {result.describe()}")
                continue
            try:
                parsed = shannon.parse_status_p(result.stdout.decode("utf-8", "replace"))
            except ParseError as exc:
                errors.append(f"shannon-status -p {device}: {exc}")
                continue
            if parsed:
                cards[device] = fill(parsed[0], fallback)
        return cards, False, False

    def _read_sysfs(self, names: List[str], errors: List[str]) -> Dict[str, DriveReading]:
        cards: Dict[str, DriveReading] = {}
        for name in names:
            files = self.tool.read_sysfs(name)
            if files is None:
                continue
            try:
                reading = shannon.parse_sysfs(files, name)
            except ParseError as exc:
                errors.append(f"shannon sysfs: {exc}")
                continue
            cards[reading.device] = reading
        return cards

    def run(self, budget: Optional[float] = None) -> RunResult:
        errors: List[str] = []
        now = self.ctx.clock()
        block_cards = sorted(name for name, b in self.ctx.block_devices().items() if b.transport == "shannon")
        cards, stuck = self._read_p_all(errors)
        missing = False
        if cards is None and not stuck:
            cards, stuck, missing = self._read_a_and_p(errors, bool(block_cards))
        elif cards is None:
            cards = {}
            errors.append("shannon-status -p -a: timed out or stuck")
        covered = {r.block_device for r in cards.values() if r.block_device}
        uncovered = [name for name in block_cards if name not in covered]
        from_sysfs = self._read_sysfs(uncovered, errors) if uncovered else {}
        cards.update(from_sysfs)
        if missing:
            # The tool is not there. The driver's sysfs stands in when it has every card.
            unread = [n for n in uncovered if f"/dev/{n}" not in from_sysfs]
            if unread:
                errors.append(f"shannon-status: not usable ({self.tool.tool}) and no driver sysfs for {', '.join(unread)}")
            else:
                log.debug("shannon-status missing; read %s from the driver's sysfs", ", ".join(uncovered))
        self._failures.run(errors)
        # Keyed by the card's identity, not the path it was read through: a card read by the
        # tool one run and from sysfs the next stays one record, its counters compared across.
        by_identity = {reading.identity: reading for reading in cards.values()}
        known = dict(self._readings)
        if not errors:
            for identity in list(known):
                if identity not in by_identity:
                    known.pop(identity, None)
        known.update(newest(known, by_identity, now, self.ctx.record))
        self._readings = known
        return RunResult(tuple(errors))

    def report(self) -> Report:
        return Report(readings=dict(self._readings))


def helper_rule(checks: HelperChecks, tool: str, args: List[str]) -> Optional[Command]:
    if tool != "shannon-status":
        return None
    path = checks.paths["shannon_status"]

    def probe(runner) -> shannon.ShannonProbe:
        return shannon.ShannonProbe(tool=path, runner=runner, sysfs_root=checks.sysfs)

    if args == ["-a"]:
        return checks.match(tool, "cards", args, [built(lambda r: probe(r).list_cards())])
    if args == ["-p", "-a"]:
        return checks.match(tool, "cards-p", args, [built(lambda r: probe(r).read_all_p())])
    if len(args) == 2 and args[0] == "-p":
        prefix, name = checks.device(args[1], CONTROL_DEVICES)
        return checks.match(tool, "card", args, [built(lambda r: probe(r).read_card(prefix + name))], name)
    raise Refused(f"arguments are not an allowed shannon-status command: {' '.join(args)!r}")
