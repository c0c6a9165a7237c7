"""Volatile write cache state, from the kernel and from the drive.

Why it matters on a database host: with the cache on, an fsync can return once data is in the
drive's RAM; with it off every fsync waits for flash. The project's source documents measured
14,640 open_datasync/s with the cache on against 527/s with it off on the same consumer SSD
(seeds/001). A drive that silently changed state (firmware update, a vendor tool, a reset after
a power cut) changes the database's commit latency or its durability, and nothing else shows it.

Sources, in the order the reader consults them:

* ``/sys/block/<dev>/queue/write_cache`` (source ``sysfs_queue``, Linux 4.7+): the block
  layer's belief, ``write back`` or ``write through``. It decides whether the kernel sends
  flushes; an administrator can overwrite it without telling the drive, and for NVMe it only
  says a volatile cache is *present*, not that it is enabled.
* ``/sys/block/<dev>/device/scsi_disk/<H:C:T:L>/cache_type`` (the same file as
  ``/sys/class/scsi_disk/<H:C:T:L>/cache_type``; source ``scsi_cache_type``): the WCE bit of
  the drive's caching mode page as sd last read it. libata disks have it too.
* the drive itself: ``hdparm -W`` (ATA IDENTIFY), ``nvme get-feature -f 6`` (Volatile Write
  Cache feature), ``smartctl -g wcache --json``, or ``smartctl -g wcache`` in plain text where
  smartctl is older than 7.0 and has no ``--json``.

Parsers are pure; :class:`WriteCacheReader` does the I/O through an injected sysfs root and an
injected tool runner.
"""

from __future__ import annotations

import json
import logging
import os
import re
from dataclasses import dataclass
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from collectors import numbers
from collectors.diskstats import drive_device_for
from collectors.failures import FailureLog
from collectors.model import (
    CACHE_DISABLED,
    CACHE_ENABLED,
    CACHE_SOURCE_HDPARM,
    CACHE_SOURCE_NVME,
    CACHE_SOURCE_SCSI_CACHE_TYPE,
    CACHE_SOURCE_SMARTCTL,
    CACHE_SOURCE_SYSFS_QUEUE,
    CACHE_UNKNOWN,
    CACHE_UNSUPPORTED,
    KIND_ATA,
    KIND_NVME,
    KIND_SCSI,
    ParseError,
    WriteCacheState,
)
from collectors.runner import ToolResult, run_tool
from collectors.smartctl.spec import checked_type
from collectors.source import (
    ANNOTATE,
    NVME_CTRL,
    NVME_NS,
    SD,
    SG,
    Command,
    HelperChecks,
    Refused,
    Report,
    RunResult,
    Source,
    SourceContext,
    SourceSpec,
    built,
)

# The answers' names live with WriteCacheState (collectors/model.py).
SOURCE_SYSFS_QUEUE = CACHE_SOURCE_SYSFS_QUEUE
SOURCE_SCSI_CACHE_TYPE = CACHE_SOURCE_SCSI_CACHE_TYPE
SOURCE_HDPARM = CACHE_SOURCE_HDPARM
SOURCE_NVME = CACHE_SOURCE_NVME
SOURCE_SMARTCTL = CACHE_SOURCE_SMARTCTL

# --------------------------------------------------------------------------------------------
# hdparm -W
#
#   (blank line)
#   /dev/sda:
#    write-caching =  1 (on)
#
# "write-caching = not supported" when IDENTIFY word 82 bit 5 is clear. hdparm -W0/-W1 also
# print " setting drive write-caching to 0 (off)" before reading the state back. Errors are
# perror-style lines on stderr ("SG_IO: bad/missing sense data, sb[]: ...",
# "HDIO_DRIVE_CMD(flushcache) failed: Input/output error",
# "HDIO_GET_WCACHE failed: Inappropriate ioctl for device", "/dev/sdx: Permission denied").
# hdparm 9.65 on a device that answers no ATA IDENTIFY (loop, zram, virtio) prints the header
# alone and exits 0.
#
# Decision: an error line, or a header with nothing under it, gives CACHE_UNKNOWN with the
# tool's words in ``detail``, not ParseError. The tool worked and told us the drive could not
# be asked (a bridge that drops ATA pass-through, a non-ATA device): the operator should see
# that reason. ParseError is kept for text that is not hdparm -W output at all: empty input, a
# value other than 0/1, a value whose (on)/(off) contradicts it, a line of another shape.
# --------------------------------------------------------------------------------------------

_HDPARM_HEADER = re.compile(r"^(?P<device>\S+):$")
_HDPARM_STATE = re.compile(r"^write-caching\s*=\s*(?P<value>.*?)\s*$")
_HDPARM_VALUE = re.compile(r"^(?P<bit>\d+)\s*\((?P<word>on|off)\)$")
_HDPARM_SETTING = re.compile(r"^setting drive write-caching to\s+\d+\s*\((?:on|off)\)$")
# perror() and hdparm's own error messages: "<what>: <why>".
_TOOL_ERROR = re.compile(r"^\S.*?:\s+\S")


def _hdparm_block(lines: Sequence[Tuple[int, str]], label: str) -> WriteCacheState:
    """Read one device's lines (already stripped, non-empty, header removed)."""
    state: Optional[str] = None
    errors: List[str] = []
    for lineno, line in lines:
        match = _HDPARM_STATE.match(line)
        if match:
            value = match.group("value")
            if value == "not supported":
                state = CACHE_UNSUPPORTED
                continue
            parsed = _HDPARM_VALUE.match(value)
            if not parsed:
                raise ParseError(f"line {lineno}: unknown write-caching value: {line!r}")
            bit, word = int(parsed.group("bit")), parsed.group("word")
            if (bit, word) not in ((1, "on"), (0, "off")):
                raise ParseError(f"line {lineno}: value and word disagree: {line!r}")
            state = CACHE_ENABLED if bit == 1 else CACHE_DISABLED
        elif _HDPARM_SETTING.match(line):
            continue  # -W0/-W1 echo of the request; the read-back line follows
        elif _TOOL_ERROR.match(line):
            errors.append(line)
        else:
            raise ParseError(f"line {lineno}: not hdparm -W output: {line!r}")
    detail = "; ".join(errors) if errors else None
    if state is not None:
        return WriteCacheState(state, SOURCE_HDPARM, detail)
    if detail is None:
        detail = f"hdparm printed no write-caching line for {label} (no ATA IDENTIFY data)"
    return WriteCacheState(CACHE_UNKNOWN, SOURCE_HDPARM, detail)


def _hdparm_lines(text: str) -> List[Tuple[int, str]]:
    out = []
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if line:
            out.append((lineno, line))
    if not out:
        raise ParseError("empty hdparm output")
    return out


@numbers.guarded("hdparm -W")
def parse_hdparm_w(text: str) -> WriteCacheState:
    """Parse ``hdparm -W <one device>`` (stdout, optionally followed by stderr).

    Raises ParseError for empty text, for text naming more than one device (use
    parse_hdparm_w_multi) and for lines that are not hdparm -W output.
    """
    lines = _hdparm_lines(text)
    headers = [(n, line) for n, line in lines if _HDPARM_HEADER.match(line)]
    if len(headers) > 1:
        raise ParseError(f"line {headers[1][0]}: output for more than one device; use parse_hdparm_w_multi")
    label = headers[0][1][:-1] if headers else "the device"
    body = [(n, line) for n, line in lines if not _HDPARM_HEADER.match(line)]
    return _hdparm_block(body, label)


@numbers.guarded("hdparm -W")
def parse_hdparm_w_multi(text: str) -> Dict[str, WriteCacheState]:
    """Parse ``hdparm -W <dev> <dev> ...`` stdout into states keyed by the device as printed.

    Pass stdout alone: when both streams go to one pipe stdout is block-buffered and stderr is
    not, so error lines land before the headers and cannot be attributed. An error line of the
    form ``<device>: <why>`` outside any block (hdparm's perror when open() fails) is attributed
    to that device; any other line before the first header raises ParseError.
    """
    lines = _hdparm_lines(text)
    blocks: Dict[str, List[Tuple[int, str]]] = {}
    current: Optional[str] = None
    for lineno, line in lines:
        header = _HDPARM_HEADER.match(line)
        if header:
            current = header.group("device")
            if current in blocks:
                raise ParseError(f"line {lineno}: device {current} appears twice")
            blocks[current] = []
            continue
        if current is None:
            device, sep, why = line.partition(": ")
            if sep and device.startswith("/") and " " not in device and why.strip():
                blocks.setdefault(device, []).append((lineno, line))
                continue
            raise ParseError(f"line {lineno}: text before the first device header: {line!r}")
        blocks[current].append((lineno, line))
    return {device: _hdparm_block(body, device) for device, body in blocks.items()}


# --------------------------------------------------------------------------------------------
# sysfs
# --------------------------------------------------------------------------------------------

# block/blk-sysfs.c queue_wc_show(): exactly these two strings.
_QUEUE_STATES = {"write back": CACHE_ENABLED, "write through": CACHE_DISABLED}

# drivers/scsi/sd.c sd_cache_types[], indexed by RCD + 2*WCE. Only WCE matters here; RCD (read
# cache disabled) goes into detail. Writes may carry a "temporary " prefix; reads never do.
_SCSI_CACHE_TYPES = {
    "write through": (CACHE_DISABLED, None),
    "none": (CACHE_DISABLED, "read cache also disabled (RCD=1)"),
    "write back": (CACHE_ENABLED, None),
    "write back, no read (daft)": (CACHE_ENABLED, "read cache disabled (RCD=1)"),
}


def _single_value(text: str, what: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        raise ParseError(f"empty {what}")
    if len(lines) > 1:
        raise ParseError(f"{what} has {len(lines)} lines, expected one: {text!r}")
    return lines[0]


@numbers.guarded("queue/write_cache")
def parse_sysfs_write_cache(text: str) -> WriteCacheState:
    """Parse ``/sys/block/<dev>/queue/write_cache``: the kernel's view."""
    value = _single_value(text, "queue/write_cache")
    if value not in _QUEUE_STATES:
        raise ParseError(f"unknown queue/write_cache value: {value!r}")
    return WriteCacheState(_QUEUE_STATES[value], SOURCE_SYSFS_QUEUE)


@numbers.guarded("cache_type")
def parse_scsi_cache_type(text: str) -> WriteCacheState:
    """Parse ``/sys/class/scsi_disk/<H:C:T:L>/cache_type`` (sd's copy of the WCE/RCD bits)."""
    value = _single_value(text, "cache_type")
    if value not in _SCSI_CACHE_TYPES:
        raise ParseError(f"unknown cache_type value: {value!r}")
    state, detail = _SCSI_CACHE_TYPES[value]
    return WriteCacheState(state, SOURCE_SCSI_CACHE_TYPE, detail)


# --------------------------------------------------------------------------------------------
# nvme get-feature -f 6
#
#   nvme-cli 2.x: get-feature:0x06 (Volatile Write Cache), Current value:0x00000001
#   nvme-cli 1.x: get-feature:0x6 (Volatile Write Cache), Current value:0x000001
# nvme-cli prints the value with C's "%#0*x", which drops the "0x" for zero: a disabled cache
# reads "Current value:00000000". Bit 0 is WCE. A controller without a volatile write cache
# aborts the command with Invalid Field in Command, which nvme-cli prints as
# "NVMe status: INVALID_FIELD: ..." (1.x) or "NVMe status: Invalid Field in Command: ..." (2.x).
# --------------------------------------------------------------------------------------------

_NVME_FEATURE = re.compile(
    r"get-feature:\s*(?:0x)?0*(?P<fid>[0-9a-fA-F]+)\s*\((?P<name>[^)]*)\),\s*"
    r"(?P<sel>\w+)\s+value:\s*(?P<value>(?:0x)?[0-9a-fA-F]+)\s*$"
)
_NVME_INVALID_FIELD = re.compile(r"NVMe status:\s*(?:INVALID_FIELD|Invalid Field in Command)")
_NVME_VWC_FID = 6
_NVME_WCE_BIT = 0x1


@numbers.guarded("nvme get-feature")
def parse_nvme_feature_vwc(text: str) -> WriteCacheState:
    """Parse ``nvme get-feature -f 6 <dev>`` (stdout, optionally followed by stderr)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        raise ParseError("empty nvme get-feature output")
    for line in lines:
        match = _NVME_FEATURE.search(line)
        if match:
            fid = int(match.group("fid"), 16)
            if fid != _NVME_VWC_FID:
                raise ParseError(f"feature {fid:#x} is not Volatile Write Cache (0x6): {line!r}")
            if match.group("sel") != "Current":
                raise ParseError(f"not the current value: {line!r}")
            value = int(match.group("value"), 16)
            state = CACHE_ENABLED if value & _NVME_WCE_BIT else CACHE_DISABLED
            return WriteCacheState(state, SOURCE_NVME)
    for line in lines:
        if _NVME_INVALID_FIELD.search(line):
            return WriteCacheState(CACHE_UNSUPPORTED, SOURCE_NVME, line)
    errors = [line for line in lines if _TOOL_ERROR.match(line)]
    if errors:
        return WriteCacheState(CACHE_UNKNOWN, SOURCE_NVME, "; ".join(errors))
    raise ParseError(f"not nvme get-feature output: {lines[0]!r}")


# --------------------------------------------------------------------------------------------
# smartctl -g wcache --json
#
# ATA: "write_cache": {"enabled": true} next to the text "Write cache is:   Enabled" (seen in
# smartctl 7.0 -x -j output; the 7.3 binary carries the same key next to that format string).
# A drive without the feature gets the text "Write cache is:   Unavailable", for which we know
# of no JSON key, and SCSI devices get a text-only "Writeback Cache is:" line in 7.3. Both
# therefore read as unknown, never as "not supported". Exit status bits 0-1 mean smartctl got
# no usable data.
# --------------------------------------------------------------------------------------------

_SMARTCTL_NO_DATA_BITS = 0x3


@numbers.guarded("smartctl -g wcache")
def parse_smartctl_wcache_json(data: Union[str, bytes, Mapping]) -> WriteCacheState:
    """Parse ``smartctl -g wcache --json`` output (text, bytes or the decoded object)."""
    if isinstance(data, (str, bytes)):
        try:
            data = json.loads(data)
        except ValueError as exc:
            raise ParseError(f"smartctl output is not JSON: {exc}") from None
    if not isinstance(data, Mapping):
        raise ParseError(f"smartctl JSON is a {type(data).__name__}, expected an object")
    header = data.get("smartctl")
    if header is not None and not isinstance(header, Mapping):
        raise ParseError("smartctl JSON: 'smartctl' is not an object")
    header = header or {}
    messages = header.get("messages") or []
    if not isinstance(messages, list):
        raise ParseError("smartctl JSON: 'smartctl.messages' is not a list")
    said = "; ".join(str(m.get("string")) for m in messages if isinstance(m, Mapping) and m.get("string"))
    exit_status = header.get("exit_status")
    if exit_status is not None and (isinstance(exit_status, bool) or not isinstance(exit_status, int)):
        raise ParseError(f"smartctl JSON: exit_status {exit_status!r} is not an integer")

    cache = data.get("write_cache")
    if cache is not None:
        if not isinstance(cache, Mapping) or not isinstance(cache.get("enabled"), bool):
            raise ParseError(f"smartctl JSON: write_cache is {cache!r}, expected {{'enabled': bool}}")
        state = CACHE_ENABLED if cache["enabled"] else CACHE_DISABLED
        return WriteCacheState(state, SOURCE_SMARTCTL, said or None)
    if exit_status is not None and exit_status & _SMARTCTL_NO_DATA_BITS:
        reason = said or "no usable data"
        return WriteCacheState(CACHE_UNKNOWN, SOURCE_SMARTCTL, f"smartctl exit status {exit_status}: {reason}")
    return WriteCacheState(
        CACHE_UNKNOWN,
        SOURCE_SMARTCTL,
        said or "no write_cache in smartctl JSON (cache unavailable, or not an ATA device)",
    )


# --------------------------------------------------------------------------------------------
# smartctl -g wcache (plain text: smartctl 5.41 .. 6.x have -g but no --json)
#
#   smartctl 6.6 2016-05-31 r4324 [x86_64-linux-4.9.0-3-amd64] (local build)
#   Copyright (C) 2002-16, Bruce Allen, Christian Franke, www.smartmontools.org
#
#   Write cache is:   Enabled
#
# ataprint.cpp prints "Write cache is:   %s": Enabled or Disabled from IDENTIFY word 85 bit 5,
# "Unavailable" when word 82 bit 5 (the feature) is clear or word 83 is not valid; hdparm
# reads the same bit as "not supported". scsiprint.cpp prints "Writeback Cache is:   %s" from
# the caching mode page's WCE bit, "Unavailable" when the mode page could not be read: an
# error, so unknown. ``smartctl -x`` includes ``-g all``, so -x captures carry the same lines.
# Without such a line smartctl said why in its own words after the banner ("Device is in
# STANDBY mode, exit(2)", "Smartctl open device: /dev/vda [SAT] failed: ...").
# --------------------------------------------------------------------------------------------

_WCACHE_TEXT = re.compile(r"^(?P<what>Write cache|Writeback Cache) is:\s*(?P<value>.*?)\s*$")
_WCACHE_TEXT_STATES = {
    ("Write cache", "Enabled"): (CACHE_ENABLED, None),
    ("Write cache", "Disabled"): (CACHE_DISABLED, None),
    ("Write cache", "Unavailable"): (
        CACHE_UNSUPPORTED,
        "smartctl: Write cache is Unavailable (ATA IDENTIFY: no write cache feature)",
    ),
    ("Writeback Cache", "Enabled"): (CACHE_ENABLED, None),
    ("Writeback Cache", "Disabled"): (CACHE_DISABLED, None),
    ("Writeback Cache", "Unavailable"): (
        CACHE_UNKNOWN,
        "smartctl: Writeback Cache is Unavailable (the caching mode page could not be read)",
    ),
}
_SMARTCTL_BANNER = re.compile(r"^(?:smartctl \d+\.\d+\b|Copyright \(C\))")


@numbers.guarded("smartctl -g wcache")
def parse_smartctl_wcache_text(text: str, exit_status: Optional[int] = None) -> WriteCacheState:
    """Parse ``smartctl -g wcache`` plain-text output (or any smartctl text holding that line).

    ``exit_status`` is smartctl's, when known: it goes into the detail of an unknown answer.
    Raises ParseError for empty text, text that is neither a cache line nor smartctl's banner,
    a cache value smartctl does not print, and two lines that disagree.
    """
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        raise ParseError("empty smartctl output")
    found: Optional[Tuple[str, Optional[str]]] = None
    banner = False
    said: List[str] = []
    for line in lines:
        match = _WCACHE_TEXT.match(line)
        if match:
            key = (match.group("what"), match.group("value"))
            if key not in _WCACHE_TEXT_STATES:
                raise ParseError(f"unknown {key[0]!r} value {key[1]!r}: {line!r}")
            answer = _WCACHE_TEXT_STATES[key]
            if found is not None and found != answer:
                raise ParseError(f"two write cache lines disagree: {line!r}")
            found = answer
        elif _SMARTCTL_BANNER.match(line):
            banner = True
        else:
            said.append(line)
    if found is not None:
        return WriteCacheState(found[0], SOURCE_SMARTCTL, found[1])
    if not banner:
        raise ParseError(f"not smartctl output: {lines[0]!r}")
    reason = said[0] if said else "no write cache line"
    if exit_status is not None:
        reason = f"smartctl exit status {exit_status}: {reason}"
    return WriteCacheState(CACHE_UNKNOWN, SOURCE_SMARTCTL, reason)


# --------------------------------------------------------------------------------------------
# Reader
# --------------------------------------------------------------------------------------------

Runner = Callable[..., ToolResult]

# smartctl -d type per drive kind; always explicit so smartctl never guesses.
_SMARTCTL_TYPES = {KIND_ATA: "sat", KIND_SCSI: "scsi"}
# smartctl before 7.0 given --json: "=======> UNRECOGNIZED OPTION: json", exit status 1.
_NO_JSON_OPTION = re.compile(r"UNRECOGNIZED OPTION: json\b")


class WriteCacheReader:
    """Collects every write cache answer available for one block device.

    Order and cost: sysfs first (free). Then a tool only where sysfs cannot be trusted or does
    not tell:

    * ``ata``: always ``hdparm -W``, since sysfs holds the kernel's view and the drive's may
      differ (agent/health.py ranks the answers); if hdparm cannot be started, ``smartctl -g wcache``.
    * ``nvme``: always ``nvme get-feature -f 6`` on the controller (/dev/nvme0):
      queue/write_cache only says a volatile cache is present, never whether it is enabled.
      The controller node is used because nvme-cli puts the namespace id of a namespace
      device into the command, which some controllers reject for this controller-wide feature.
    * ``scsi``: ``smartctl -g wcache`` only when neither queue/write_cache nor cache_type exists.
    * anything else (``shannon``): sysfs only.

    A tool that runs but fails (non-zero exit with no answer, timeout, unreadable output) adds a
    CACHE_UNKNOWN state whose ``detail`` says why. A tool that cannot be started at all (not
    installed, not executable) adds nothing: a host without nvme-cli is "no data" for that
    source, not a failure on every poll; the reason is kept in ``unavailable`` for the agent to
    show once. read() itself never raises for the tools' faults.

    ``smartctl_json`` says whether smartctl has ``--json`` (7.0+): True asks in JSON, False in
    plain text (5.41 .. 6.x), None (not known yet) asks in JSON and, when smartctl answers
    that it does not know the option, sets it to False and asks again in text. The agent sets
    it once it has read ``smartctl --version``.

    Sleeping drives: ``read(..., standby=True)``, for a drive the caller knows is in standby,
    reads sysfs only and runs no tool, so the cache state never wakes it. Otherwise hdparm -W
    only reads IDENTIFY data, which a drive in standby normally answers without spinning up
    (and SSDs have nothing to spin), and smartctl gets ``-n standby`` so it never wakes a
    sleeping drive either.
    """

    def __init__(
        self,
        sysfs_root: str = "/sys",
        hdparm: str = "hdparm",
        nvme: str = "nvme",
        smartctl: str = "smartctl",
        runner: Runner = run_tool,
        dev_root: str = "/dev",
        smartctl_json: Optional[bool] = None,
    ) -> None:
        self.sysfs_root = sysfs_root
        self.hdparm = hdparm
        self.nvme = nvme
        self.smartctl = smartctl
        self.runner = runner  # bounded by its caller: the agent's runner applies the tool timeout
        self.dev_root = dev_root
        self.smartctl_json = smartctl_json
        # tool path -> why it could not be started, as last seen (e.g. "nvme: not found")
        self.unavailable: Dict[str, str] = {}

    # sysfs ------------------------------------------------------------------------------

    def _block_path(self, block_device: str, *parts: str) -> str:
        # cciss/c0d0 is cciss!c0d0 in sysfs
        return os.path.join(self.sysfs_root, "block", block_device.replace("/", "!"), *parts)

    def scsi_disk_for(self, block_device: str) -> Optional[str]:
        """The H:C:T:L name of the block device's scsi_disk, or None if it is not one."""
        folder = self._block_path(block_device, "device", "scsi_disk")
        try:
            names = sorted(os.listdir(folder))
        except (FileNotFoundError, NotADirectoryError):
            return None
        return names[0] if names else None

    @staticmethod
    def _read_sysfs(path: str, parser: Callable[[str], WriteCacheState], source: str) -> Optional[WriteCacheState]:
        try:
            with open(path, encoding="ascii", errors="replace") as handle:
                text = handle.read()
        except FileNotFoundError:
            return None  # kernel older than the file, or not that kind of device
        except OSError as exc:
            return WriteCacheState(CACHE_UNKNOWN, source, f"cannot read {path}: {exc.strerror}")
        try:
            return parser(text)
        except ParseError as exc:
            return WriteCacheState(CACHE_UNKNOWN, source, f"{path}: {exc}")

    def read_sysfs(self, block_device: str) -> List[WriteCacheState]:
        states: List[WriteCacheState] = []
        queue = self._read_sysfs(
            self._block_path(block_device, "queue", "write_cache"),
            parse_sysfs_write_cache,
            SOURCE_SYSFS_QUEUE,
        )
        if queue is not None:
            states.append(queue)
        hctl = self.scsi_disk_for(block_device)
        if hctl is not None:
            cache_type = self._read_sysfs(
                self._block_path(block_device, "device", "scsi_disk", hctl, "cache_type"),
                parse_scsi_cache_type,
                SOURCE_SCSI_CACHE_TYPE,
            )
            if cache_type is not None:
                states.append(cache_type)
        return states

    # tools ------------------------------------------------------------------------------

    def _start(self, argv: List[str]) -> Optional[ToolResult]:
        """Run one tool; None when it could not be started at all (see read())."""
        result = self.runner(argv)
        if result.error is not None:
            self.unavailable[argv[0]] = result.error
            return None
        self.unavailable.pop(argv[0], None)
        return result

    def _run(
        self,
        argv: List[str],
        source: str,
        parse: Callable[[str], WriteCacheState],
        with_stderr: bool,
    ) -> Optional[WriteCacheState]:
        """Run one tool and read its answer; None when it could not be started at all."""
        result = self._start(argv)
        return None if result is None else self._interpret(result, argv[0], source, parse, with_stderr)

    @staticmethod
    def _interpret(
        result: ToolResult,
        tool_path: str,
        source: str,
        parse: Callable[[str], WriteCacheState],
        with_stderr: bool,
    ) -> WriteCacheState:
        tool = os.path.basename(tool_path)
        if not result.ok_to_parse:
            return WriteCacheState(CACHE_UNKNOWN, source, f"{tool}: {result.describe()}")
        stdout = result.stdout.decode("utf-8", errors="replace")
        stderr = result.stderr.decode("utf-8", errors="replace")
        text = stdout + ("\n" + stderr if with_stderr and stderr else "")
        try:
            state = parse(text)
        except ParseError as exc:
            said = stderr.strip().splitlines()
            why = said[0] if said else f"unreadable output ({exc})"
            return WriteCacheState(CACHE_UNKNOWN, source, f"{tool} {result.describe()}: {why}")
        if result.exit_code != 0 and source != SOURCE_SMARTCTL:
            # smartctl's status is a bitmask its parser reads; for the others, say it.
            note = f"{tool} {result.describe()}"
            state = WriteCacheState(state.state, state.source, f"{state.detail}; {note}" if state.detail else note)
        return state

    def _hdparm(self, block_device: str) -> Optional[WriteCacheState]:
        device = os.path.join(self.dev_root, block_device)
        return self._run([self.hdparm, "-W", device], SOURCE_HDPARM, parse_hdparm_w, True)

    def _nvme(self, block_device: str) -> Optional[WriteCacheState]:
        controller = os.path.join(self.dev_root, drive_device_for(block_device))
        argv = [self.nvme, "get-feature", controller, "-f", str(_NVME_VWC_FID)]
        return self._run(argv, SOURCE_NVME, parse_nvme_feature_vwc, True)

    def _smartctl_argv(self, block_device: str, kind: str, json_output: bool) -> List[str]:
        argv = [self.smartctl, "-g", "wcache"] + (["--json"] if json_output else []) + ["-n", "standby"]
        if kind in _SMARTCTL_TYPES:
            argv += ["-d", _SMARTCTL_TYPES[kind]]
        argv.append(os.path.join(self.dev_root, block_device))
        return argv

    def _smartctl(self, block_device: str, kind: str) -> Optional[WriteCacheState]:
        if self.smartctl_json is not False:
            result = self._start(self._smartctl_argv(block_device, kind, json_output=True))
            if result is None:
                return None
            said = result.stdout.decode("utf-8", errors="replace")
            if not (self.smartctl_json is None and result.ok_to_parse and _NO_JSON_OPTION.search(said)):
                return self._interpret(result, self.smartctl, SOURCE_SMARTCTL, parse_smartctl_wcache_json, False)
            self.smartctl_json = False  # smartctl < 7.0: remember, and ask in text from now on
        result = self._start(self._smartctl_argv(block_device, kind, json_output=False))
        if result is None:
            return None
        status = result.exit_code
        return self._interpret(
            result, self.smartctl, SOURCE_SMARTCTL, lambda text: parse_smartctl_wcache_text(text, status), False
        )

    @staticmethod
    def wants_tool(kind: str, sysfs: Sequence[WriteCacheState]) -> bool:
        """Whether the drive's own tool has something to add to what sysfs said (see the
        class docstring: ATA and NVMe always, SCSI only without a sysfs answer)."""
        return kind in (KIND_ATA, KIND_NVME) or (kind == KIND_SCSI and not sysfs)

    def ask_drive(self, block_device: str, kind: str, sysfs: Sequence[WriteCacheState]) -> List[WriteCacheState]:
        """The drive's own answers (tools only; ``sysfs`` is what :meth:`read_sysfs` found)."""
        asked: List[Optional[WriteCacheState]] = []
        if kind == KIND_ATA:
            asked.append(self._hdparm(block_device))
            if asked[-1] is None:  # hdparm not installed: smartctl can read the same bit
                asked.append(self._smartctl(block_device, kind))
        elif kind == KIND_NVME:
            asked.append(self._nvme(block_device))
        elif kind == KIND_SCSI and not sysfs:
            asked.append(self._smartctl(block_device, kind))
        return [state for state in asked if state is not None]

    def read(self, block_device: str, kind: str, standby: bool = False) -> List[WriteCacheState]:
        """Every answer for ``block_device`` (kernel name: sda, nvme0n1, dfa), sysfs first.

        ``standby=True`` (the caller knows the drive sleeps): sysfs only, no tool is run.
        """
        states = self.read_sysfs(block_device)
        if standby:
            return states
        return states + self.ask_drive(block_device, kind, states)


# ------------------------------------------------------------------ the source

log = logging.getLogger("ssdfleet.write_cache")


@dataclass(frozen=True)
class DriveAnswer:
    """The drive's own answer (its tool's states), when it was asked and what sysfs said then:
    it stands until the SMART interval has passed or sysfs says something else."""

    states: Tuple[WriteCacheState, ...]
    asked_at: float
    kind: str
    sysfs: Tuple[Tuple[str, str], ...]


def _sysfs_key(states: Sequence[WriteCacheState]) -> Tuple[Tuple[str, str], ...]:
    # State and source only: a changed detail (an errno in the text) is not a new answer.
    return tuple((s.source, s.state) for s in states)


class WriteCacheSource(Source):
    """Reads the cache state of every drive of the scheduler's inventory that has a kernel
    block device of its own (``Target.queue_device``: the namespace nvme0n1 for the NVMe
    controller nvme0; none for a drive behind a RAID controller).

    Tool calls by need (issue 32): sysfs (queue/write_cache, the SCSI cache_type) is read on
    every pass, since it costs a file read. The drive's own tool (hdparm for ATA, nvme
    get-feature for NVMe, smartctl for SCSI without sysfs answers) is asked when the drive has
    no answer yet, when its kind changed, when sysfs says something other than it said at the
    last ask (libata revalidates a drive after a write-cache SET FEATURES, so ``hdparm -W0``
    shows in cache_type and queue/write_cache on a direct-attached disk), and otherwise once
    per SMART interval (``intervals.smartctl``, 5 minutes by default): 12 tool calls per
    drive-hour instead of 60. Between asks the drive's last answer stands under its own source
    name (``hdparm``, ``nvme_feature``, ``smartctl``), so the evidence still says who gave the
    value. A change made behind the kernel's back (a SAS HBA or USB bridge passing the command
    through) shows within one SMART interval, as it would in the SMART data.

    A drive its health source found asleep: sysfs only, no tool, and the last answer is not
    shown (it may predate the sleep); the next ask after it wakes is not forced.
    """

    def __init__(self, ctx: SourceContext) -> None:
        super().__init__(ctx)
        self._failures = FailureLog(log, "write cache: ")  # one line per distinct failure
        config = ctx.config
        self.reader = WriteCacheReader(
            sysfs_root=config.paths.sysfs,
            hdparm=ctx.tool_paths["hdparm"],
            nvme=ctx.tool_paths["nvme"],
            smartctl=ctx.tool_paths["smartctl"],
            runner=ctx.run,
            dev_root=config.paths.dev,
        )
        self._states: Dict[str, Tuple[Tuple[WriteCacheState, ...], float]] = {}
        self._answers: Dict[str, DriveAnswer] = {}
        self.drive_asks_total = 0  # times a drive's own tool was asked (bench/tool_calls_bench.py)

    def _tool_interval(self) -> float:
        intervals = getattr(self.ctx.config, "intervals", None)
        return float(getattr(intervals, "smartctl", 300.0))

    def _due(self, name: str, kind: str, sysfs: Sequence[WriteCacheState], now: float) -> bool:
        last = self._answers.get(name)
        return (last is None or last.kind != kind or last.sysfs != _sysfs_key(sysfs)
                or now - last.asked_at >= self._tool_interval())

    def _read(self, name: str, block: str, kind: str, asleep: bool, now: float):
        """(sysfs states, a new DriveAnswer or None): runs in the device's probe slot."""
        sysfs = tuple(self.reader.read_sysfs(block))
        if asleep or not self.reader.wants_tool(kind, sysfs) or not self._due(name, kind, sysfs, now):
            return sysfs, None
        asked = tuple(self.reader.ask_drive(block, kind, sysfs))
        return sysfs, DriveAnswer(asked, now, kind, _sysfs_key(sysfs))

    def run(self, budget: Optional[float] = None) -> RunResult:
        # A failure read in this pass counts (errors); the standing answer of an earlier ask
        # that failed keeps the run from being a success without counting again (unread).
        errors: List[str] = []
        standing: List[str] = []
        now = self.ctx.clock()
        states = dict(self._states)
        seen = set()
        for target in self.ctx.targets():
            block = target.queue_device
            if block is None:
                continue
            seen.add(target.name)
            asleep = target.power_state == "standby"
            got = self.ctx.probe(
                target.name,
                lambda n=target.name, b=block, k=target.kind, z=asleep: self._read(n, b, k, z, now),
            )
            if got is None:
                continue
            sysfs, answer = got
            if answer is not None:
                self._answers[target.name] = answer
                self.drive_asks_total += 1
            last = self._answers.get(target.name)
            drive = () if asleep or last is None or not self.reader.wants_tool(target.kind, sysfs) else last.states
            states[target.name] = (sysfs + drive, now)
            for s in sysfs + drive:
                if s.state == "unknown" and s.detail:
                    fresh = s in sysfs or answer is not None
                    (errors if fresh else standing).append(f"{target.name} {s.source}: {s.detail}")
        for gone in set(self._answers) - seen:
            del self._answers[gone]
        self._failures.run(errors + standing)
        self._states = states
        return RunResult(tuple(errors), tuple(standing))

    def report(self) -> Report:
        return Report(per_drive=dict(self._states))


# Device families each command may name (collectors.source: the helper's kernel-name patterns).
SMARTCTL_DEVICES = (SD, SG, NVME_CTRL, NVME_NS)
HDPARM_DEVICES = (SD,)
NVME_DEVICES = (NVME_CTRL,)


def _reader(checks: HelperChecks, prefix: str, runner, smartctl_json: Optional[bool] = None):
    return WriteCacheReader(
        sysfs_root=checks.sysfs, hdparm=checks.paths["hdparm"], nvme=checks.paths["nvme"],
        smartctl=checks.paths["smartctl"], runner=runner, dev_root=prefix.rstrip("/"),
        smartctl_json=smartctl_json)


def helper_rule(checks: HelperChecks, tool: str, args: List[str]) -> Optional[Command]:
    """The reader's own builders (one definition of each argv): smartctl -g wcache for ATA and
    SCSI drives (JSON or text), hdparm -W for ATA, nvme get-feature 6 for NVMe."""
    if tool == "smartctl":
        if "-g" not in args:
            return None
        dev_type = None
        if "-d" in args and args.index("-d") + 1 < len(args):
            dev_type = checked_type(args[args.index("-d") + 1])
        prefix, name = checks.device(args[-1], SMARTCTL_DEVICES, dev_type)
        candidates = [
            built(lambda r, k=kind, j=as_json: _reader(checks, prefix, r, j)._smartctl(name, k))
            for kind in (KIND_ATA, KIND_SCSI, "") for as_json in (True, False)
        ]
        return checks.match("smartctl", "wcache", args, candidates, name)
    if tool == "hdparm":
        if not args:
            raise Refused("hdparm needs a device")
        prefix, name = checks.device(args[-1], HDPARM_DEVICES)
        return checks.match("hdparm", "write-cache", args,
                            [built(lambda r: _reader(checks, prefix, r)._hdparm(name))], name)
    if tool == "nvme":
        if args[:1] != ["get-feature"]:
            return None  # another source's nvme command (vendor logs), or none: refused there
        if len(args) < 2:
            raise Refused("nvme needs a sub-command and a device")
        prefix, name = checks.device(args[1], NVME_DEVICES)
        return checks.match("nvme", "get-feature", args,
                            [built(lambda r: _reader(checks, prefix, r)._nvme(name))], name)
    return None


SPEC = SourceSpec(
    name="write_cache",
    help="write cache state: sysfs, hdparm -W, smartctl -g wcache, nvme get-feature",
    interval=60.0,
    build=WriteCacheSource,
    role=ANNOTATE,
    tools={"hdparm": ("hdparm", "hdparm"), "nvme": ("nvme", "nvme"), "smartctl": ("smartctl", "smartctl")},
    reads_targets=True,
    devices=SMARTCTL_DEVICES,
    helper=helper_rule,
    annotates="write_cache",
    priority=80,
)
