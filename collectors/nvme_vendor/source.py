"""The NVMe vendor-log source, a supplement: for each NVMe drive of the scheduler's inventory
(the drives the health sources read: smartctl), the one nvme-cli vendor command of that drive's
vendor (``nvme intel smart-log-add /dev/nvmeN`` for Intel), never a vendor command to a drive
of another vendor. Its readings carry only the drive's identity and what the vendor log adds
(NAND bytes written, write amplification), so the merge fills them into the health source's
reading of the same drive (:func:`collectors.model.supplement`). Being a supplement, its
answers never make the drive's health data fresh: while smartctl fails, the data age grows."""

from __future__ import annotations

import logging
import re
from typing import Dict, List, Optional, Tuple

from collectors import evidence
from collectors.failures import FailureLog
from collectors.model import KIND_NVME, DriveReading, ParseError
from collectors.nvme_vendor import vendor as vendors
from collectors.nvme_vendor.spec import (  # noqa: F401 (re-exported: their old home)
    NVME_DEVICES,
    SPEC,
)
from collectors.runner import ToolResult
from collectors.source import (
    Command,
    HelperChecks,
    Refused,
    Report,
    RunResult,
    Source,
    SourceContext,
    Target,
    built,
    newest,
)

log = logging.getLogger("ssdfleet.nvme_vendor")

_CONTROLLER = re.compile(r"^/dev/(nvme\d+)(?:n\d+)?$")


class NvmeVendorProbe:
    """Builds and runs the vendor commands; parses nothing. The runner is bounded by its caller
    (the agent's applies the one tool timeout)."""

    def __init__(self, tool: str, runner, dev_root: str = "/dev") -> None:
        self.tool, self.runner, self.dev_root = tool, runner, dev_root

    def vendor_log(self, vendor: vendors.VendorLog, controller: str) -> ToolResult:
        if not re.fullmatch(r"nvme\d+", controller):
            raise ValueError(f"{controller!r} is not an NVMe controller such as nvme0")
        return self.runner([self.tool, *vendor.args, f"{self.dev_root}/{controller}"])


def controller_of(target) -> Optional[str]:
    """The NVMe controller (nvme0) a target or reading was read through, or None."""
    match = _CONTROLLER.match(target.device or "")
    return match.group(1) if match else None


# What nvme-cli prints when it has no such plug-in or sub-command, and what a controller
# answers to a log page it does not implement (NVMe status Invalid Log Page / Invalid Field).
_NOT_SUPPORTED = re.compile(
    r"unknown (?:command|plugin)|invalid (?:sub-?)?command|not a valid|INVALID_LOG_PAGE|Invalid Log Page|"
    r"INVALID_FIELD|Invalid Field in Command|not supported", re.IGNORECASE)


class NvmeVendorSource(Source):
    def __init__(self, ctx: SourceContext) -> None:
        super().__init__(ctx)
        self._failures = FailureLog(log, "nvme_vendor: ")  # one line per distinct failure
        self.probe = NvmeVendorProbe(ctx.tool_paths["nvme"], ctx.run)
        self._readings: Dict[str, Tuple[DriveReading, float]] = {}
        self._skip: Dict[str, str] = {}  # controller -> why its vendor log cannot be read

    @staticmethod
    def _unsupported(result) -> Optional[str]:
        """Why the vendor log cannot be read on this host at all, or None (a real failure, or
        success): the tool is not installed, nvme-cli has no such plug-in or sub-command, or
        the drive rejects the log page."""
        if result.error is not None and not result.timed_out and not result.stuck:
            return f"nvme-cli not usable ({result.error})"
        if result.exit_code not in (None, 0):
            said = (result.stdout[-2048:] + result.stderr[-2048:]).decode("utf-8", "replace")
            if _NOT_SUPPORTED.search(said):
                return f"not supported here (exit status {result.exit_code}: {said.strip()[:120]})"
        return None

    def _targets(self) -> List[Tuple[Target, str, vendors.VendorLog]]:
        out = []
        for target in self.ctx.targets():
            controller = controller_of(target)
            vendor = vendors.vendor_for(target.model)
            if target.kind == KIND_NVME and controller and vendor and target.serial:
                out.append((target, controller, vendor))
        return out

    def run(self, budget: Optional[float] = None) -> RunResult:
        errors: List[str] = []
        unread: List[str] = []
        now = self.ctx.clock()
        known: Dict[str, Tuple[DriveReading, float]] = {}
        for health, controller, vendor in self._targets():
            if controller in self._skip:
                continue
            result = self.ctx.probe(controller, lambda c=controller, v=vendor: self.probe.vendor_log(v, c))
            if result is None:
                unread.append(controller)
                key = self._reading(health, vendors.VendorFigures()).identity  # its last reading's key
                if key in self._readings:
                    known[key] = self._readings[key]
                continue
            what = f"nvme {' '.join(vendor.args)} /dev/{controller}"
            missing = self._unsupported(result)
            if missing:
                # No nvme-cli, or one without this vendor's plug-in, or a drive without the
                # log page: nothing to read here, and nothing failed. Said once, not retried.
                self._skip[controller] = missing
                log.info("nvme_vendor: %s: %s; not asked again until the agent restarts", what, missing)
                continue
            if not result.ok_to_parse or result.exit_code != 0:
                errors.append(f"{what}: {result.describe()}")
                continue
            facts = vendors.DriveFacts(health.host_written_bytes, health.capacity_bytes, health.power_on_seconds)
            try:
                figures = vendor.figures(result.stdout, facts)
            except ParseError as exc:
                errors.append(f"{what}: {exc}")
                continue
            reading = self._reading(health, figures)
            # Not recorded in history: a reading of the NAND figures alone (smartctl's is).
            known.update(newest(self._readings, {reading.identity: reading}, now))
            for name, why in figures.withheld.items():
                log.info("%s: %s withheld: %s", controller, name, why)
        self._failures.run(errors)
        self._readings = known
        return RunResult(tuple(errors), tuple(unread))

    @staticmethod
    def _reading(health: Target, figures: vendors.VendorFigures) -> DriveReading:
        extra = {f"{name}_withheld": why for name, why in figures.withheld.items()}
        return evidence.contain(DriveReading(
            kind=KIND_NVME, device=health.device, serial=health.serial, wwn=health.wwn,
            block_device=health.block_device, device_type=health.device_type,
            nand_written_bytes=figures.nand_written_bytes,
            write_amplification=figures.write_amplification,
            sources=dict(figures.sources), extra=extra,
        ))

    def report(self) -> Report:
        return Report(readings=dict(self._readings))


def helper_rule(checks: HelperChecks, tool: str, args: List[str]) -> Optional[Command]:
    """``nvme VENDOR-ARGS /dev/nvmeN`` for each vendor log, rebuilt by the source's builder."""
    if tool != "nvme":
        return None
    vendor = next((v for v in vendors.VENDORS if list(v.args) == args[:len(v.args)]), None)
    if vendor is None:
        return None
    if len(args) != len(vendor.args) + 1:
        raise Refused(f"nvme {' '.join(vendor.args)} takes exactly one device")
    prefix, name = checks.device(args[-1], NVME_DEVICES)
    dev_root = prefix.rstrip("/") or "/dev"

    def build(runner):
        return NvmeVendorProbe(checks.paths["nvme"], runner, dev_root=dev_root).vendor_log(vendor, name)

    return checks.match("nvme", f"vendor-log {vendor.name}", args, [built(build)], name)
