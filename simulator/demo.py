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
import shutil
import tempfile
import time
from typing import Dict, List, Optional

from simulator.host import SimHost, make_spec
from simulator.wear import DAY, DriveSpec

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


def setup_simulated_host(drives: int = 6, speed: float = 3600.0, root: Optional[str] = None) -> Dict[str, str]:
    """Build a simulated host and return the agent's argparse overrides (tool paths, sysfs,
    procfs, state dir). With ``root`` None a temporary directory is used and removed at exit."""
    if drives < 1:
        raise ValueError("a simulated host needs at least one drive")
    if root is None:
        root = tempfile.mkdtemp(prefix="ssdfleet-sim-")
        atexit.register(shutil.rmtree, root, True)
    now = time.time()
    host = SimHost(root, demo_drives(drives, now), speed=speed, sim_start=now)
    host.start_refresher(1.0)
    _HOSTS.append(host)
    return host.overrides()
