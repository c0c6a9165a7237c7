"""The source protocol: what every source of drive data is to the agent.

A *source* is one tool or kernel interface (smartctl, shannon-status, /proc/diskstats, ...).
It is described by a :class:`SourceSpec` in its own module and listed once, in
``collectors/registry.py``. From that one entry the agent derives everything else: the name in
the ``collectors:`` config list, the ``--collector.NAME`` / ``--no-collector.NAME`` /
``--interval.NAME`` flags, the default interval, the tool paths under ``tools:``, the settings
section under the source's own name, the probe helper's allow-list for its commands and the
``ssd_collector_*{collector="NAME"}`` series.

The agent's scheduler (agent/poller.py) builds each enabled source once with a
:class:`SourceContext` (all I/O the source may do is reached through it), calls
:meth:`Source.run` every interval and, whenever it merges a snapshot, asks every source for its
:class:`Report`: what it knows now, as immutable values. The merge is a pure function of the
reports. A source never sees another source's state, nor the agent's.

See docs/adding-a-source.md for a worked example.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Type

from collectors import evidence
from collectors.model import DriveReading, Snapshot
from collectors.runner import ToolResult

Runner = Callable[..., ToolResult]

# Where a source's per-drive values go on the merged drive record (collectors.model.Drive).
ANNOTATES = ("write_cache", "io", "holds")


@dataclass(frozen=True)
class RunResult:
    """How one run went. ``errors`` are failed probes and parses (each counted in
    ``ssd_collector_errors_total``); ``unread`` are drives not read for a reason that is not a
    new failure (quarantined, still reading): the run is not a success, the counter stays."""

    errors: Tuple[str, ...] = ()
    unread: Tuple[str, ...] = ()


@dataclass(frozen=True)
class Report:
    """What a source knows at one moment, for the merge.

    ``readings``: drives this source reads health from, key -> (reading, unix time read).
    ``per_drive``: values for drives other sources found, kernel name (``sda``, ``nvme0``) ->
    (value, unix time); the spec's ``annotates`` says which field of the drive record they fill.
    ``notes``: key -> why there is no reading (standby, no SMART data), shown as problems.
    ``host``: anything host-wide the source measured (the sync-write probe's results).
    """

    readings: Mapping[str, Tuple[DriveReading, float]] = field(default_factory=dict)
    per_drive: Mapping[str, Tuple[Any, float]] = field(default_factory=dict)
    notes: Mapping[str, str] = field(default_factory=dict)
    host: Any = None


EMPTY_REPORT = Report()


@dataclass
class SourceContext:
    """Everything a source may touch, handed in by the scheduler.

    ``run`` runs a command with the agent's bounds (timeout, kill grace, output cap) and
    notices stuck processes; through the probe helper when one is configured. ``probe(device,
    fn)`` runs ``fn`` as the only probe of ``device`` in flight (None when the device is
    quarantined or the wait ran out). ``record`` puts a reading into history. ``changed`` asks
    for a new snapshot (a late result). ``gone`` asks discovery to run early (a drive vanished).
    ``snapshot`` is the latest merged snapshot; ``block_devices`` the kernel's drives as
    discovery last read them.
    """

    config: Any
    settings: Any
    tool_paths: Mapping[str, str]
    run: Runner
    probe: Callable[[str, Callable[[], Any]], Any]
    submit: Callable[..., Any]
    stopping: threading.Event
    clock: Callable[[], float]
    record: Callable[[str, float, DriveReading], None]
    changed: Callable[[], None]
    gone: Callable[[], None]
    snapshot: Callable[[], Snapshot]
    block_devices: Callable[[], Mapping[str, Any]]
    quarantined: Callable[[str], bool]


class Source:
    """Base class of a source's running part. Subclasses override :meth:`run` and
    :meth:`report`; :meth:`discover` is for sources that find their own drives."""

    def __init__(self, ctx: SourceContext) -> None:
        self.ctx = ctx

    def discover(self) -> Sequence[str]:
        """Find the drives this source reads; return error messages. Runs in discovery."""
        return ()

    def run(self, budget: Optional[float] = None) -> RunResult:  # pragma: no cover - abstract
        raise NotImplementedError

    def report(self) -> Report:
        return EMPTY_REPORT

    def close(self) -> None:
        """Release what the source holds (called once, when the agent stops)."""


def newest(
    before: Mapping[str, Tuple[DriveReading, float]],
    found: Mapping[str, DriveReading],
    now: float,
    record: Optional[Callable[[str, float, DriveReading], None]] = None,
) -> Dict[str, Tuple[DriveReading, float]]:
    """What a pass found, key -> (reading, ``now``), each reading's counters kept monotone
    against the last reading of its key (:func:`collectors.evidence.monotone`) and, given
    ``record`` (the context's), put into history."""
    out: Dict[str, Tuple[DriveReading, float]] = {}
    for key, reading in found.items():
        last = before.get(key)
        reading = evidence.monotone(last[0] if last else None, reading)
        out[key] = (reading, now)
        if record is not None:
            record(reading.identity, now, reading)
    return out


@dataclass(frozen=True)
class Command:
    """A probe-helper request that a source's rules accepted: the argv to run (rebuilt by the
    source's own command builder with the helper's tool path) and the device it is about."""

    tool: str
    operation: str
    argv: Tuple[str, ...]
    device: Optional[str] = None


class Refused(Exception):
    """A probe-helper request that no source's rules accept; the message says why."""


class _ArgvRecorder:
    """A runner that records the argv a builder produces and runs nothing."""

    def __init__(self) -> None:
        self.argv: Optional[List[str]] = None

    def __call__(self, argv: Sequence[str], **_: Any) -> ToolResult:
        self.argv = [str(a) for a in argv]
        return ToolResult(tuple(self.argv), None, b"", b"", 0.0, error="recorded, not run")


def built(build: Callable[[Runner], Any]) -> List[str]:
    """The argv ``build`` would run, asked of the source's own builder with a recording runner."""
    recorder = _ArgvRecorder()
    build(recorder)
    if recorder.argv is None:  # a builder that ran nothing: our bug, not the client's
        raise Refused("internal error: no command was built")
    return recorder.argv


def recording_runner() -> Runner:
    return _ArgvRecorder()


class HelperChecks:
    """What the probe helper offers a source's rules: its own tool paths and roots, device
    name checks (``device``, ``dev_type``) and ``match`` (the requested arguments must equal
    one of the argvs the source's builder produces). The helper implements it."""

    paths: Mapping[str, str]
    sysfs: str

    def device(self, requested: str, families: Sequence[str], dev_type: Optional[str] = None) -> Tuple[str, str]:
        raise NotImplementedError

    def dev_type(self, requested: str) -> str:
        raise NotImplementedError

    def match(self, tool: str, operation: str, args: List[str], candidates: List[List[str]],
              device: Optional[str] = None) -> Command:
        for candidate in candidates:
            if candidate[1:] == args:
                return Command(tool, operation, tuple(candidate), device)
        raise Refused(f"arguments are not the allowed form of {tool} {operation}: {' '.join(args)!r}")


# helper(checks, tool, args) -> Command, or None when the request is not this source's.
HelperRule = Callable[[HelperChecks, str, List[str]], Optional[Command]]


@dataclass(frozen=True)
class SourceSpec:
    """One source, as the registry lists it.

    ``tools``: config key under ``tools:`` -> (default executable, the name the probe helper
    knows it by). ``settings``: a pydantic model for the source's own config section (the key is
    the source's name), or None. ``waits_for``: sources whose first pass this one waits for
    before its own first run (the write cache needs to know which drives are ATA or NVMe).
    ``helper``: the rules the probe helper applies to this source's commands; a source whose
    tools need no privilege has none. ``annotates``: the drive record field its ``per_drive``
    values fill (one of :data:`ANNOTATES`), or None. ``optional``: off unless configured
    (the sync-write probe writes files; it runs only when its settings give it directories).
    """

    name: str
    help: str
    interval: float
    build: Callable[[SourceContext], Source]
    tools: Mapping[str, Tuple[str, str]] = field(default_factory=dict)
    settings: Optional[Type[Any]] = None
    enabled: bool = True
    waits_for: Tuple[str, ...] = ()
    helper: Optional[HelperRule] = None
    annotates: Optional[str] = None
    active: Callable[[Any], bool] = lambda settings: True
    priority: int = 100  # lower merges first: its reading of a drive wins over later ones

    def __post_init__(self) -> None:
        if not self.name.isidentifier() or self.name != self.name.lower():
            raise ValueError(f"source name {self.name!r} must be a lower-case identifier")
        if self.annotates is not None and self.annotates not in ANNOTATES:
            raise ValueError(f"source {self.name}: annotates {self.annotates!r} is not one of {ANNOTATES}")


def tool_defaults(specs: Sequence[SourceSpec]) -> Dict[str, str]:
    """Config key -> default executable, over every source (one tool may serve several)."""
    out: Dict[str, str] = {}
    for spec in specs:
        for key, (default, _name) in spec.tools.items():
            out.setdefault(key, default)
    return out
