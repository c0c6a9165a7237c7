"""The source protocol: what every source of drive data is to the agent.

A *source* is one tool or kernel interface (smartctl, shannon-status, /proc/diskstats, ...).
It is described by a :class:`SourceSpec` in its own module or folder and listed once, in
``collectors/registry.py``. From that one entry the agent derives everything else: the name in
the ``collectors:`` config list, the ``--collector.NAME`` / ``--no-collector.NAME`` /
``--interval.NAME`` flags, the default interval, the tool paths under ``tools:``, the settings
section under the source's own name, the probe helper's allow-list for its commands and the
device names it may put on them, and the ``ssd_collector_*{collector="NAME"}`` series.

A spec says what the source *is* (its :data:`role <ROLES>`) and what it *needs* (tools,
settings, device-name families, the inventory of targets), not only how to run it; the agent
treats each source by its role and never by its name:

* ``health``: it reads drives' health (smartctl, shannon-status, fio-status, plug-ins). Its
  readings make the drives of the snapshot, and the time of its newest reading of a drive is
  the drive's data age (``ssd_data_age_seconds``, SSDFleetDataStale).
* ``supplement``: it adds figures to drives a health source read (nvme-cli's vendor log: NAND
  bytes written). Its readings fill fields of the same drive and never make its data fresh.
* ``annotate``: per-drive values by kernel name that fill one field of the drive record
  (``annotates``: write cache, I/O counters, what the drive holds).
* ``host``: host-wide results (the sync-write probe, a RAID controller's volumes and
  battery), kept on the snapshot under the source's name and shown by the spec's
  :class:`HostView` hooks, which live in the source's folder.

The agent's scheduler (agent/poller.py) builds each enabled source once with a
:class:`SourceContext` (all I/O the source may do is reached through it), calls
:meth:`Source.run` every interval and, whenever it merges a snapshot, asks every source for its
:class:`Report`: what it knows now, as immutable values. The merge is a pure function of the
reports. A source never sees another source's state, nor the agent's: a source that acts on
drives others found reads the scheduler's inventory of :class:`Target` records
(:attr:`SourceContext.targets`), never the snapshot.

A spec is read at start by the configuration and the command line, before the agent listens;
the parts that run or show the source (``build``, the helper rule, the host view's hooks, a
command's functions) may be named with :func:`lazy` so that reading the registry does not
import the source's parsers (issue 32: listen first, import after).

See docs/adding-a-source.md for a worked example.
"""

from __future__ import annotations

import importlib
import re
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Type, TypedDict

from collectors import evidence
from collectors.model import Drive, DriveReading
from collectors.runner import Bounds, ToolResult

Runner = Callable[..., ToolResult]

# What a source is to the agent (see the module docstring).
HEALTH = "health"
SUPPLEMENT = "supplement"
ANNOTATE = "annotate"
HOST = "host"
ROLES = (HEALTH, SUPPLEMENT, ANNOTATE, HOST)
# Roles whose readings are merged into drive records (in ``priority`` order).
READING_ROLES = (HEALTH, SUPPLEMENT)

# Where an annotating source's per-drive values go on the merged drive record (collectors.model.Drive).
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
    """What a source knows at one moment, for the merge. Which parts the merge reads follows
    the source's role.

    ``readings`` (health, supplement): drives this source reads, key -> (reading, unix time
    read). ``per_drive`` (annotate): values for drives other sources found, kernel name
    (``sda``, ``nvme0``) -> (value, unix time); the spec's ``annotates`` says which field of the
    drive record they fill. ``notes``: key -> why there is no reading (standby, no SMART data),
    shown as problems. ``host`` (host): what the source measured host-wide, an immutable value
    its :class:`HostView` knows how to show; the snapshot keeps it under the source's name.
    """

    readings: Mapping[str, Tuple[DriveReading, float]] = field(default_factory=dict)
    per_drive: Mapping[str, Tuple[Any, float]] = field(default_factory=dict)
    notes: Mapping[str, str] = field(default_factory=dict)
    host: Any = None


EMPTY_REPORT = Report()


@dataclass(frozen=True)
class Target:
    """One drive of the scheduler's inventory, for sources that act on drives others found
    (a supplement, the write cache). Built by the scheduler from the health sources' reports
    and the kernel's block devices (agent/poller.py, ``inventory``); never from another
    annotating or supplementing source's values.

    ``name``: the kernel name per-drive values are keyed by (``sda``, ``nvme0``; for a drive read
    through a controller, its tool path). ``device``: the path its health source read it
    through (``/dev/nvme0``, ``/dev/bus/0``). ``block_device``: the kernel name the health
    source gave (``nvme0`` for an NVMe controller), None for a drive behind a controller.
    ``queue_devices``: the kernel's block devices that belong to the drive, as discovery listed
    them (``nvme0n1``, ``nvme0n2`` for ``nvme0``; ``sda`` for ``sda``): where its queue files are.
    ``device_type``: the ``-d`` type it was read with; ``pass_through`` is that type when the
    drive was read through a RAID or HBA pass-through (no kernel device of its own).
    ``serial`` is the drive's own (a reading that supplements it carries the same), ``identity``
    the snapshot's (``SERIAL@WHERE`` when two drives share a serial). The last three figures are
    the health source's, for a supplement to check its own against (plausibility)."""

    identity: str
    kind: str
    name: str
    device: str
    block_device: Optional[str] = None
    queue_devices: Tuple[str, ...] = ()
    device_type: Optional[str] = None
    serial: Optional[str] = None
    wwn: Optional[str] = None
    model: Optional[str] = None
    power_state: Optional[str] = None
    host_written_bytes: Optional[int] = None
    capacity_bytes: Optional[int] = None
    power_on_seconds: Optional[int] = None

    @property
    def pass_through(self) -> Optional[str]:
        return self.device_type if self.device_type and self.block_device is None else None

    @property
    def queue_device(self) -> Optional[str]:
        """The block device whose queue files describe the drive's cache, or None."""
        return self.queue_devices[0] if self.queue_devices else None


@dataclass
class SourceContext:
    """Everything a source may touch, handed in by the scheduler.

    ``run`` runs a command with the agent's bounds (:attr:`bounds`: the one tool timeout, the
    kill grace, the output cap, all from the configuration) and notices stuck processes;
    through the probe helper when one is configured. ``probe(device, fn)`` runs ``fn`` as the
    only probe of ``device`` in flight (None when the device is quarantined or the wait ran
    out). ``record`` puts a reading into history. ``changed`` asks for a new snapshot (a late
    result). ``gone`` asks discovery to run early (a drive vanished). ``targets`` is the
    scheduler's inventory of drives (:class:`Target`); ``block_devices`` the kernel's drives as
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
    targets: Callable[[], Tuple[Target, ...]]
    block_devices: Callable[[], Mapping[str, Any]]
    quarantined: Callable[[str], bool]
    bounds: Callable[[], Bounds] = Bounds


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


class Lazy:
    """A function or class of a source's implementation, named by module and attribute and
    imported on its first call (:func:`lazy`). Calling it calls the target."""

    __slots__ = ("module", "attribute", "_target")

    def __init__(self, module: str, attribute: str) -> None:
        self.module = module
        self.attribute = attribute
        self._target: Any = None

    def resolve(self) -> Any:
        target = self._target
        if target is None:
            target = getattr(importlib.import_module(self.module), self.attribute)
            if not callable(target):
                raise TypeError(f"{self!r} is not callable")
            self._target = target
        return target

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.resolve()(*args, **kwargs)

    def __repr__(self) -> str:
        return f"lazy({self.module}:{self.attribute})"


def lazy(module: str, attribute: str) -> Any:
    """``module.attribute``, imported when first called: for a spec's ``build``, ``helper``, a
    host view's hooks and a command's functions, which the registry names at start but only a
    running source (or a page, or the probe helper) calls."""
    return Lazy(module, attribute)


def built(build: Callable[[Runner], Any]) -> List[str]:
    """The argv ``build`` would run, asked of the source's own builder with a recording runner."""
    recorder = _ArgvRecorder()
    build(recorder)
    if recorder.argv is None:  # a builder that ran nothing: our bug, not the client's
        raise Refused("internal error: no command was built")
    return recorder.argv


def recording_runner() -> Runner:
    return _ArgvRecorder()


@dataclass(frozen=True)
class DeviceFamily:
    """Kernel names under /dev that the probe helper may put on a source's command line:
    ``pattern`` must match the name relative to /dev whole (letters, digits and at most one
    slash: nothing a shell or an option parser could read as anything else). ``node``: the
    node that must exist instead of the name itself (smartctl's ``/dev/bus/N`` names a
    MegaRAID controller, reached through its ioctl node); ``with_type``: the name is valid only
    with a ``-d`` type containing this word. A spec lists the families its helper rule uses;
    the helper takes the union over the registry (two specs may share a family, not redefine
    it)."""

    name: str
    pattern: str
    help: str = ""
    node: Optional[str] = None
    with_type: Optional[str] = None

    def __post_init__(self) -> None:
        re.compile(self.pattern)  # a bad pattern fails at import, not at the first request

    def matches(self, name: str) -> bool:
        return re.fullmatch(self.pattern, name) is not None


# Families more than one source names (collectors/registry.py checks that a name means one
# pattern). A source's own families live in its module (shannon's sct/df, smartctl's bus).
SD = DeviceFamily("sd", r"sd[a-z]{1,4}", "SATA/SAS disks, and SATA behind USB bridges")
SG = DeviceFamily("sg", r"sg\d{1,5}", "SCSI generic")
NVME_CTRL = DeviceFamily("nvme_ctrl", r"nvme\d{1,4}", "NVMe controller (character device)")
NVME_NS = DeviceFamily("nvme_ns", r"nvme\d{1,4}n\d{1,4}", "NVMe namespace (block device)")


class HelperChecks:
    """What the probe helper offers a source's rules: its own tool paths and roots, the device
    name check (``device``) and ``match`` (the requested arguments must equal one of the argvs
    the source's builder produces). The helper implements it, once per source: ``device``
    accepts only the families that source's spec declares."""

    paths: Mapping[str, str]
    sysfs: str

    def device(self, requested: str, families: Sequence[DeviceFamily],
               dev_type: Optional[str] = None) -> Tuple[str, str]:
        raise NotImplementedError

    def match(self, tool: str, operation: str, args: List[str], candidates: List[List[str]],
              device: Optional[str] = None) -> Command:
        for candidate in candidates:
            if candidate[1:] == args:
                return Command(tool, operation, tuple(candidate), device)
        raise Refused(f"arguments are not the allowed form of {tool} {operation}: {' '.join(args)!r}")


# helper(checks, tool, args) -> Command, or None when the request is not this source's.
HelperRule = Callable[[HelperChecks, str, List[str]], Optional[Command]]


class LatencyBurst(TypedDict):
    """A burst of synchronous writes timed on one drive, as any host source that measures one
    gives it: the median and 99th percentile of one write (seconds; p99 None with too few
    writes) and ``how`` in words (``fdatasync of 8 kB in /var/lib/postgresql``). The agent adds
    ``source``, the name of the source that measured it."""

    median_seconds: float
    p99_seconds: Optional[float]
    how: str


@dataclass(frozen=True)
class HostView:
    """How a host source's results are shown, defined in the source's folder. Each hook is a
    pure function (no I/O) of ``result`` (what the source's report put under ``host``) and the
    snapshot's drives; the agent calls them for every host source that has a result, and a
    hook that raises costs only its own section (logged once), never a scrape or a page.

    ``families(result, drives)``: metric families for /metrics (collectors/families.py).
    ``api(result, drives)``: a JSON-able value, served in /api/v1/drives under
    ``host.NAME``. ``status_heading`` and ``status_lines(api_value)``: ``ssdfleet status``'s
    block, from the API's value (status reads the agent over HTTP). ``page(result, drives,
    esc)``: the HTML section of the status page (``esc`` escapes text). ``legacy_api_key``: a
    top-level key of /api/v1/drives that carried the same value before issue 27, kept for one
    release; a source with ``per_drive`` also keeps it in each drive's JSON, with that drive's
    value. ``per_drive(result, drives)``: serial -> a JSON-able value shown beside that drive
    (the sync-write probe's newest burst on the drive), or None. ``latency(value)``: for a
    source that times synchronous writes on a drive, its per-drive value as the generic
    :data:`LatencyBurst` the page and ``status`` show as the drive's sync-write latency (None:
    nothing measured there); the first such source in registry order wins."""

    families: Callable[[Any, Sequence[Drive]], List[Any]]
    api: Callable[[Any, Sequence[Drive]], Any]
    status_heading: str
    status_lines: Callable[[Any], List[str]]
    page: Callable[[Any, Sequence[Drive], Callable[[str], str]], str]
    legacy_api_key: Optional[str] = None
    per_drive: Optional[Callable[[Any, Sequence[Drive]], Dict[str, Any]]] = None
    latency: Optional[Callable[[Any], Optional[LatencyBurst]]] = None


@dataclass(frozen=True)
class SourceCommand:
    """A command of the source's own on the ``ssdfleet`` command line (``ssdfleet NAME``).
    ``arguments(parser)`` adds its options (``--config`` is added for it); ``run(args,
    settings)`` does the work with the source's settings as the configuration file gives them
    (its defaults without one) and returns the exit status. Output and messages are the
    command's own (stdout, stderr)."""

    name: str
    help: str
    arguments: Callable[[Any], None]
    run: Callable[[Any, Any], int]


@dataclass(frozen=True)
class SourceSpec:
    """One source, as the registry lists it.

    ``role``: what the source is (:data:`ROLES`, see the module docstring). ``tools``: config
    key under ``tools:`` -> (default executable, the name the probe helper knows it by).
    ``settings``: a pydantic model for the source's own config section (the key is the
    source's name), or None. ``devices``: the device-name families its helper rule may name.
    ``helper``: the rules the probe helper applies to this source's commands; a source whose
    tools need no privilege has none. ``annotates`` (annotate): the drive record field its
    ``per_drive`` values fill (one of :data:`ANNOTATES`). ``reads_targets``: the source acts
    on the scheduler's inventory (:attr:`SourceContext.targets`); its first run waits, bounded,
    for the first pass of every health source, when the inventory is complete (the write cache
    needs to know which drives are ATA or NVMe). ``virtual_devices(settings)``: kernel-name
    prefixes of virtual block devices (``dm-``, ``loop``) the source wants discovery to list as
    drives. ``host_view`` (host): how its results are shown. ``optional``/``active``: off
    unless its settings make it active (the sync-write probe writes files; it runs only when
    its settings give it directories). ``priority``: lower merges first, its reading of a
    drive wins over later ones. ``moved_keys``: top-level configuration keys of an earlier
    release -> the key in this source's section they moved to (accepted with a warning).
    ``commands``: the source's own commands on the command line (:class:`SourceCommand`).
    """

    name: str
    help: str
    interval: float
    build: Callable[[SourceContext], Source]
    role: str
    tools: Mapping[str, Tuple[str, str]] = field(default_factory=dict)
    settings: Optional[Type[Any]] = None
    enabled: bool = True
    devices: Tuple[DeviceFamily, ...] = ()
    helper: Optional[HelperRule] = None
    annotates: Optional[str] = None
    reads_targets: bool = False
    virtual_devices: Callable[[Any], Tuple[str, ...]] = lambda settings: ()
    host_view: Optional[HostView] = None
    active: Callable[[Any], bool] = lambda settings: True
    priority: int = 100
    moved_keys: Mapping[str, str] = field(default_factory=dict)
    commands: Tuple[SourceCommand, ...] = ()

    def __post_init__(self) -> None:
        if not self.name.isidentifier() or self.name != self.name.lower():
            raise ValueError(f"source name {self.name!r} must be a lower-case identifier")
        if self.role not in ROLES:
            raise ValueError(f"source {self.name}: role {self.role!r} is not one of {ROLES}")
        if (self.role == ANNOTATE) != (self.annotates is not None):
            raise ValueError(f"source {self.name}: an annotate source, and only one, names what it annotates")
        if self.annotates is not None and self.annotates not in ANNOTATES:
            raise ValueError(f"source {self.name}: annotates {self.annotates!r} is not one of {ANNOTATES}")
        if self.host_view is not None and self.role != HOST:
            raise ValueError(f"source {self.name}: only a host source has a host view")
        if self.helper is not None and not self.tools:
            raise ValueError(f"source {self.name}: helper rules for a source that runs no tool")


def tool_defaults(specs: Sequence[SourceSpec]) -> Dict[str, str]:
    """Config key -> default executable, over every source (one tool may serve several)."""
    out: Dict[str, str] = {}
    for spec in specs:
        for key, (default, _name) in spec.tools.items():
            out.setdefault(key, default)
    return out
