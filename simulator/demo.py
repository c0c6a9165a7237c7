"""``ssdfleet agent --simulate``: a lively simulated host in one command.

:func:`setup_simulated_host` builds a host with a mix of drives from the catalogue (Shannon
cards, SATA drives of the source documents, Samsung NVMe), one of them with its write cache
switched off (the LITEON of seeds/001) and one near the end of its life, starts the simulated
clock at ``speed`` simulated seconds per real second and returns the argparse overrides that
point the agent's tools and host paths at it.

The agent itself keeps real time: its history, rates and projections are in real seconds, so
with ``speed`` 3600 the drives wear an hour's worth per second and the projected wear-out
dates come out 3600 times nearer. That is what a demo wants (things move); the accelerated
test in tests/test_simulator.py runs the poller on the simulated clock instead.
"""

from __future__ import annotations

import atexit
import dataclasses
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

from simulator import tool
from simulator.host import SimHost, make_spec
from simulator.wear import DAY, DriveSpec, state_at

# The order drives are added in; the first seven cover every catalogue model.
_MIX = (
    "shannon-directio-1200",
    "intel-320-300",
    "samsung-pm983-1920",
    "liteon-lch-256v2s",
    "patriot-wildfire-120",
    "intel-335-240",
    "ocz-revodrive3-x2-960",
    "samsung-pm983-1920",
)

_HOSTS: List[SimHost] = []  # kept alive for the refresher threads


def _sata_name(n: int) -> str:
    """sda .. sdz, sdaa .. (the kernel's naming)."""
    letters = ""
    n += 1
    while n:
        n, r = divmod(n - 1, 26)
        letters = chr(ord("a") + r) + letters
    return "sd" + letters


def demo_drives(count: int, t0: float, seed_offset: int = 0) -> List[DriveSpec]:
    """``count`` drives in the demo mix. Life used is spread over the fleet; drive 4 (the
    Patriot Wildfire) is at 92% used, drive 3 (the LITEON) has its write cache off."""
    specs: List[DriveSpec] = []
    counters = {"ata": 0, "nvme": 0, "shannon": 0}
    for i in range(count):
        key = _MIX[i % len(_MIX)]
        kind = {"shannon-directio-1200": "shannon", "samsung-pm983-1920": "nvme"}.get(key, "ata")
        n = counters[kind]
        counters[kind] += 1
        if kind == "shannon":
            device = "sct" + _sata_name(n)[2:]
        elif kind == "nvme":
            device = f"nvme{n}"
        else:
            device = _sata_name(n)
        # spread life used between 5% and 80% (deterministic, so the demo looks the same)
        used = 0.05 + ((i * 37 + seed_offset * 11) % 76) / 100.0
        extra: Dict = {}
        if i == 4:
            used = 0.92  # near the end of its life
        if i == 3:
            extra["write_cache"] = False
        specs.append(make_spec(key, device, i + seed_offset * 1000, t0, start_life_used=used,
                               born=t0 - (200 + i * 13) * DAY, **extra))
    return specs


# Real seconds of history the demo starts with: the agent wants an hour of its own samples
# before it trusts a write rate, and a demo should show wear-out dates from the first page.
BACKFILL_SECONDS = 2 * 3600.0


def setup_simulated_host(drives: int = 6, speed: float = 3600.0, root: Optional[str] = None,
                         backfill_seconds: float = BACKFILL_SECONDS,
                         state_dir: Optional[str] = None,
                         open_history: Optional[Callable[[str, float], Any]] = None) -> Dict[str, str]:
    """Build a simulated host and return the agent's argparse overrides (tool paths, sysfs,
    procfs, state dir). With ``root`` None a temporary directory is used and removed at exit.
    ``state_dir`` (``--state-dir``) puts the history there instead of under ``root``.

    The drives have been running for ``backfill_seconds`` of real time already (that many
    seconds times ``speed`` of simulated time), and the history file in the state directory
    holds what the agent would have recorded over that time (see :func:`seed_history`), written
    through ``open_history(path, step)``: the agent's own history class, which the caller hands
    in (the simulator does not import the agent; the agent imports the simulator)."""
    if drives < 1:
        raise ValueError("a simulated host needs at least one drive")
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
        seed_history(host, now - backfill_seconds, now, open_history=open_history)
    host.start_refresher(1.0)
    _HOSTS.append(host)
    return host.overrides()


def _used_by(spec: DriveSpec, t: float) -> DriveSpec:
    """The spec started earlier, with its starting wear lowered so that at ``t`` it has used
    what :func:`demo_drives` gave it (the demo's spread of life left stays the same)."""
    accrued = state_at(spec, t).life_used - spec.start_life_used
    return dataclasses.replace(spec, start_life_used=max(0.0, spec.start_life_used - accrued))


def seed_history(host: SimHost, start: float, end: float, step: float = 600.0,
                 open_history: Optional[Callable[[str, float], Any]] = None) -> int:
    """Write the agent's history for real times ``start`` .. ``end`` into the host's state
    directory, as the agent would have: each drive's tool output rendered at that moment and
    read by the agent's own parsers, one sample every ``step`` seconds. Returns the samples
    written. ``open_history(path, step)`` opens the history to write (the agent's class)."""
    from collectors import shannon, smartctl

    if open_history is None:
        return 0
    probe = smartctl.SmartctlProbe(tool="smartctl")
    history = open_history(str(host.state_dir / "history.sqlite"), step)
    written = 0
    try:
        t = start
        while t < end:
            for spec in host.drives:
                device = f"/dev/{spec.device}"
                if spec.kind == "shannon":
                    out, _, code = tool.run(str(host.state_file), "shannon-status", ["-p", device], real_now=t)
                    readings = shannon.parse_status_p(out) if code == 0 else []
                    reading = readings[0] if readings else None
                else:
                    argv = probe.read_argv(device, "nvme" if spec.kind == "nvme" else "sat")
                    out, _, code = tool.run(str(host.state_file), "smartctl", argv[1:], real_now=t)
                    reading = smartctl.parse_smartctl_json(out, device=device) if code & 0x03 == 0 else None
                if reading is not None:
                    history.record(reading.identity, t, reading)
                    written += 1
            t += step
    finally:
        history.close()
    return written
