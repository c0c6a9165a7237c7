"""``ssdfleet agent --simulate``: a believable database host in one command.

:func:`setup_simulated_host` builds a host with a mix of drives from the catalogue (Shannon
cards, the SATA drives of the source documents, Samsung NVMe), each at its own stage of life
and under a database host's daily write load (:data:`DEMO_PLAN`): most are healthy, one is
worth watching (17% life left), one is a warning (8% life left, worn out in about three
months at its load) and one is critical (the LITEON whose write cache is off). The clock runs
in real time by default (``speed`` 1): rates are per real day, and the wear-out dates are the
dates those drives would wear out on. ``--simulate-speed`` makes time pass faster for demos
of alerts firing.

The history the agent would have kept is seeded from the start (:data:`BACKFILL_SECONDS`,
90 days, through the agent's own parsers and history class), so the life-left charts, the write
rates and the wear-out dates are there on the first page.
"""

from __future__ import annotations

import atexit
import dataclasses
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence

from simulator import tool
from simulator.host import SimHost, make_spec
from simulator.wear import DAY, DriveSpec, state_at

GB = 10**9
TB = 10**12


@dataclasses.dataclass(frozen=True)
class DemoDrive:
    """One drive of the demo host as it is when the demo starts."""

    catalogue: str  # key in simulator.catalogue.CATALOGUE
    life_used: float  # of the rated life, when the demo starts
    writes_per_day: float  # host bytes a day, on average over the daily cycle
    write_cache: bool = True
    # What the agent should make of it: healthy, watch, warning or critical. Documentation of
    # the intent; tests/test_demo.py checks the agent's own verdicts against it.
    expect: str = "healthy"


# The first eight drives, in the order the demo adds them (livefleet and the demo script rely
# on the first four: the Shannon card, the Intel 320 on sda, a PM983 on nvme0, the LITEON on
# sdb). Write loads are a database host's: WAL, checkpoints and vacuum on an OLTP database.
DEMO_PLAN: Sequence[DemoDrive] = (
    # 1.2 TB card, 3 TB a day (2.5 drive writes): about 5.7 years of its rating left
    DemoDrive("shannon-directio-1200", 0.24, 3 * TB),
    # the ZFS log device of the Intel 320 source: 3 MB/s around the clock
    DemoDrive("intel-320-300", 0.38, 3e6 * DAY),
    DemoDrive("samsung-pm983-1920", 0.15, 1.5 * TB),
    # the LITEON of the write-cache measurement, its cache switched off: every fsync waits
    DemoDrive("liteon-lch-256v2s", 0.30, 100 * GB, write_cache=False, expect="critical"),
    # 17% life left at 150 GB a day: more than a year to go, but in its last fifth
    DemoDrive("patriot-wildfire-120", 0.83, 150 * GB, expect="watch"),
    # 8% life left at 640 GB a day: worn out in about three months
    DemoDrive("intel-335-240", 0.915, 640 * GB, expect="warning"),
    DemoDrive("ocz-revodrive3-x2-960", 0.30, 500 * GB),
    DemoDrive("samsung-pm983-1920", 0.05, 1.5 * TB),
)
DEFAULT_DRIVES = len(DEMO_PLAN)

_HOSTS: List[SimHost] = []  # kept alive for the refresher threads


def _sata_name(n: int) -> str:
    """sda .. sdz, sdaa .. (the kernel's naming)."""
    letters = ""
    n += 1
    while n:
        n, r = divmod(n - 1, 26)
        letters = chr(ord("a") + r) + letters
    return "sd" + letters


def demo_plan(count: int, seed_offset: int = 0) -> List[DemoDrive]:
    """The plan of ``count`` drives: :data:`DEMO_PLAN` first, then healthy drives of the same
    models with life used spread between 5% and 60% (deterministic, so a large simulated host
    looks the same every time)."""
    plan: List[DemoDrive] = []
    for i in range(count):
        base = DEMO_PLAN[i % len(DEMO_PLAN)]
        if i < len(DEMO_PLAN) and seed_offset == 0:
            plan.append(base)
            continue
        used = 0.05 + ((i * 37 + seed_offset * 11) % 56) / 100.0
        plan.append(DemoDrive(base.catalogue, used, base.writes_per_day))
    return plan


def _device_names(plan: Sequence[DemoDrive]) -> List[str]:
    counters = {"ata": 0, "nvme": 0, "shannon": 0}
    names = []
    for d in plan:
        kind = {"shannon-directio-1200": "shannon", "samsung-pm983-1920": "nvme"}.get(d.catalogue, "ata")
        n = counters[kind]
        counters[kind] += 1
        names.append("sct" + _sata_name(n)[2:] if kind == "shannon" else f"nvme{n}" if kind == "nvme"
                     else _sata_name(n))
    return names


def demo_drives(count: int, t0: float, seed_offset: int = 0) -> List[DriveSpec]:
    """``count`` drives of the demo plan as simulator specs starting at ``t0``, each having
    used its planned life at ``t0`` and powered on as long ago as its load took to use it."""
    plan = demo_plan(count, seed_offset)
    specs: List[DriveSpec] = []
    for i, (d, device) in enumerate(zip(plan, _device_names(plan))):
        spec = make_spec(d.catalogue, device, i + seed_offset * 1000, t0, start_life_used=d.life_used,
                         writes_per_day=d.writes_per_day, write_cache=d.write_cache)
        # power-on time consistent with the wear: the drive has written at this load since new
        age = d.life_used * spec.host_budget_bytes / d.writes_per_day * DAY
        specs.append(dataclasses.replace(spec, born=t0 - max(30 * DAY, age)))
    return specs


# Real seconds of history the demo starts with: long enough for a life-left chart with a
# slope, a week of writes for the rate, and the trend method's 30-day window.
BACKFILL_SECONDS = 90 * DAY


def backfill_seconds_for(speed: float) -> float:
    """Real seconds of seeded history at ``speed``: 90 days in real time; at a speed-up, two
    real hours (which are ``2 h x speed`` of simulated wear) or 90 simulated days, the longer."""
    if speed <= 0:
        return 0.0
    return max(2 * 3600.0, BACKFILL_SECONDS / speed)


def backfill_times(start: float, end: float) -> List[float]:
    """When the seeded samples are taken. Over a long span: every 4 days up to a week before
    ``end``, then daily, the last one an hour before ``end`` (the agent takes the next itself).
    Sparse on purpose: each sample is rendered and read by the real parsers (about 20 ms on a
    busy 2-core machine, so 8 drives start in a few seconds), and a chart, a 7-day write rate
    and a 30-day slope need no more; the agent samples every 10 minutes from then on. A span
    under 8 days gets 24 evenly spaced samples (at least 10 minutes apart, the agent's own
    interval)."""
    span = end - start
    if span <= 0:
        return []
    if span < 8 * DAY:
        step = max(600.0, span / 24)
        return [start + i * step for i in range(int(span // step))]
    times: List[float] = []
    t = start
    recent = end - 7 * DAY
    while t < recent:
        times.append(t)
        t += 4 * DAY
    t = max(t, recent)
    while t < end - 3600:
        times.append(t)
        t += DAY
    times.append(end - 3600)
    return times


def setup_simulated_host(drives: int = DEFAULT_DRIVES, speed: float = 1.0, root: Optional[str] = None,
                         backfill_seconds: Optional[float] = None,
                         state_dir: Optional[str] = None,
                         open_history: Optional[Callable[[str, float], Any]] = None) -> Dict[str, str]:
    """Build a simulated host and return the agent's argparse overrides (tool paths, sysfs,
    procfs, state dir). With ``root`` None a temporary directory is used and removed at exit.
    ``state_dir`` (``--state-dir``) puts the history there instead of under ``root``.

    The drives have been running for ``backfill_seconds`` of real time already (default
    :func:`backfill_seconds_for` ``speed``; that many seconds times ``speed`` of simulated
    time), and the history file in the state directory holds what the agent would have
    recorded over that time (see :func:`seed_history`), written through
    ``open_history(path, step)``: the agent's own history class, which the caller hands in (the
    simulator does not import the agent; the agent imports the simulator)."""
    if drives < 1:
        raise ValueError("a simulated host needs at least one drive")
    if speed < 0:
        raise ValueError("the simulated clock cannot run backwards")
    if backfill_seconds is None:
        backfill_seconds = backfill_seconds_for(speed)
    if root is None:
        root = tempfile.mkdtemp(prefix="ssdfleet-sim-")
        atexit.register(shutil.rmtree, root, True)
    now = time.time()
    specs = demo_drives(drives, now - backfill_seconds * speed)
    host = SimHost(root, [_used_by(s, now) for s in specs], speed=speed, sim_start=now)
    if state_dir is not None:
        # the user's --state-dir: the seeded history goes where the agent will read it
        host.state_dir = Path(state_dir)
        host.state_dir.mkdir(parents=True, exist_ok=True)
    if backfill_seconds > 0 and speed > 0 and open_history is not None:
        seed_history(host, now - backfill_seconds, now, open_history=open_history,
                     times=backfill_times(now - backfill_seconds, now))
    host.start_refresher(1.0)
    _HOSTS.append(host)
    return host.overrides()


def _used_by(spec: DriveSpec, t: float) -> DriveSpec:
    """The spec started earlier, with its starting wear lowered so that at ``t`` it has used
    what :func:`demo_drives` gave it (the demo's spread of life left stays the same)."""
    accrued = state_at(spec, t).life_used - spec.start_life_used
    return dataclasses.replace(spec, start_life_used=max(0.0, spec.start_life_used - accrued))


def seed_history(host: SimHost, start: float, end: float, step: float = 600.0,
                 open_history: Optional[Callable[[str, float], Any]] = None,
                 times: Optional[Sequence[float]] = None) -> int:
    """Write the agent's history for real times ``start`` .. ``end`` into the host's state
    directory, as the agent would have: each drive's tool output rendered at that moment and
    read by the agent's own parsers, one sample every ``step`` seconds (or at ``times``).
    Returns the samples written. ``open_history(path, step)`` opens the history to write (the
    agent's class)."""
    from collectors import shannon, smartctl

    if open_history is None:
        return 0
    probe = smartctl.SmartctlProbe(tool="smartctl")
    history = open_history(str(host.state_dir / "history.sqlite"), step)
    if times is None:
        times = [start + i * step for i in range(int((end - start) // step) + 1) if start + i * step < end]
    state = tool.HostState.load(str(host.state_file))
    written = 0
    try:
        for t in times:
            for spec in host.drives:
                device = f"/dev/{spec.device}"
                if spec.kind == "shannon":
                    out, _, code = tool.run_on(state, "shannon-status", ["-p", device], real_now=t)
                    readings = shannon.parse_status_p(out) if code == 0 else []
                    reading = readings[0] if readings else None
                else:
                    argv = probe.read_argv(device, "nvme" if spec.kind == "nvme" else "sat")
                    out, _, code = tool.run_on(state, "smartctl", argv[1:], real_now=t)
                    reading = smartctl.parse_smartctl_json(out, device=device) if code & 0x03 == 0 else None
                if reading is not None:
                    history.record(reading.identity, t, reading)
                    written += 1
    finally:
        history.close()
    return written
