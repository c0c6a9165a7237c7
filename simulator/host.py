"""A simulated database host on disk: fake tools, a sysfs tree, a procfs, and a clock.

Layout under ``root``::

    bin/smartctl, bin/shannon-status, bin/hdparm, bin/nvme   fake tools (shell scripts)
    sys/block/<dev>/size, queue/rotational, queue/write_cache, device/model
    proc/diskstats
    sim/host.json     drive specs, write-cache switches and the clock (read by every tool call)
    sim/calls.log     one line per tool call
    state/            the agent's state directory (history.sqlite)

The tools compute their answer from ``sim/host.json`` at the moment they run. The two files
the agent reads directly (``/proc/diskstats`` and ``queue/write_cache``) are rewritten by
:meth:`SimHost.refresh_files`: the test calls it after each clock step, the demo runs
:meth:`SimHost.start_refresher` (a daemon thread, one write a second).

The clock: ``simulated = sim_origin + speed x (real - real_origin)``. ``speed=0`` with
:meth:`SimHost.set_time` gives a stepped clock for tests.
"""

from __future__ import annotations

import json
import os
import shlex
import stat
import sys
import threading
import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from simulator import render
from simulator.catalogue import CATALOGUE
from simulator.wear import DAY, DriveSpec, DriveState, state_at, wearout_time

REPO_ROOT = Path(__file__).resolve().parent.parent
TOOL_NAMES = ("smartctl", "shannon-status", "hdparm", "nvme")

# -S: no site-packages, no .pth processing: the fake tool needs only the standard library and
# starts in a fraction of the time (it runs once per probe).
_SCRIPT = """#!/bin/sh
# simulated {tool}: renders the simulated host's drives at the current simulated time
PYTHONPATH={repo} exec {python} -S -m simulator.tool --state {state} {tool} "$@"
"""

# With a replay directory: an answer the simulator rendered for these exact arguments before is
# written again as it was (cksum, cat and the shell: about 3 ms, where rendering in Python costs
# about 0.1 s of CPU); the first call of each is rendered and recorded. The figures then stand
# still at their first rendering: for benches that time the agent, not the drives' wear.
_REPLAY_SCRIPT = """#!/bin/sh
# simulated {tool}, replaying: the answer recorded for the same arguments, else rendered and recorded
r={replay}/{tool}-$(printf '%s\\n' "$@" | cksum | tr ' ' -)
if [ -f "$r.rc" ]; then
  printf '%s\\n' "{tool} $*" >> {calls}
  cat "$r.out"
  cat "$r.err" >&2
  read -r rc < "$r.rc"
  exit "$rc"
fi
PYTHONPATH={repo} exec {python} -S -m simulator.tool --state {state} --record "$r" {tool} "$@"
"""


def make_spec(catalogue: str, device: str, index: int, t0: float, **overrides) -> DriveSpec:
    """A :class:`DriveSpec` for a catalogue model; ``overrides`` set any spec field."""
    m = CATALOGUE[catalogue]
    fields = dict(
        device=device,
        catalogue=catalogue,
        serial=m.serial_format.format(n=index),
        kind=m.kind,
        model=m.model,
        capacity_bytes=m.capacity_bytes,
        pe_cycles=m.pe_cycles,
        write_amplification=m.write_amplification,
        writes_per_day=m.writes_per_day,
        t0=t0,
        born=t0 - 400 * DAY,
        idle_celsius=m.idle_celsius,
        busy_celsius=m.busy_celsius,
        factory_bad_ratio=m.factory_bad_ratio,
        spare_pool_ratio=m.spare_pool_ratio,
        late_bad_ratio=m.late_bad_ratio,
    )
    fields.update(overrides)
    return DriveSpec(**fields)


class SimHost:
    def __init__(
        self,
        root: os.PathLike,
        drives: Sequence[DriveSpec],
        speed: float = 1.0,
        sim_start: Optional[float] = None,
        smartctl_json: bool = True,
        python: str = sys.executable,
        replay: Optional[os.PathLike] = None,
    ) -> None:
        """``replay``: a directory the fake tools record their answers in and replay them from
        (see ``_REPLAY_SCRIPT``); hosts built alike may share one."""
        self.root = Path(root)
        self.bin = self.root / "bin"
        self.sys = self.root / "sys"
        self.proc = self.root / "proc"
        self.sim = self.root / "sim"
        self.state_dir = self.root / "state"
        self.state_file = self.sim / "host.json"
        self.drives: List[DriveSpec] = list(drives)
        self.smartctl_json = smartctl_json
        self.write_cache: Dict[str, bool] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        start = min((d.t0 for d in self.drives), default=time.time()) if sim_start is None else sim_start
        self.boot_time = start  # diskstats count from here
        self._sim_origin = float(start)
        self._real_origin = time.time()
        self._speed = float(speed)
        for d in (self.bin, self.sys / "block", self.proc, self.sim, self.state_dir):
            d.mkdir(parents=True, exist_ok=True)
        if replay is not None:
            Path(replay).mkdir(parents=True, exist_ok=True)
        for tool in TOOL_NAMES:
            path = self.bin / tool
            path.write_text((_SCRIPT if replay is None else _REPLAY_SCRIPT).format(
                tool=tool, repo=shlex.quote(str(REPO_ROOT)), python=shlex.quote(python),
                state=shlex.quote(str(self.state_file)), replay=shlex.quote(str(replay)),
                calls=shlex.quote(str(self.sim / "calls.log"))))
            path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        self._write_sysfs()
        self._save()
        self.refresh_files()

    # ------------------------------------------------------------------ clock

    def clock(self) -> float:
        """Simulated now. Pass this as the agent's clock (Poller and History)."""
        return self._sim_origin + self._speed * (time.time() - self._real_origin)

    def set_time(self, t: float) -> None:
        """Stop the clock at ``t`` (speed 0) and rewrite the files the agent reads."""
        self._sim_origin, self._real_origin, self._speed = float(t), time.time(), 0.0
        self._save()
        self.refresh_files()

    def advance(self, seconds: float) -> float:
        self.set_time(self.clock() + seconds)
        return self.clock()

    # ------------------------------------------------------------------ switches

    def set_write_cache(self, device: str, enabled: bool) -> None:
        """Switch a drive's volatile write cache (hdparm -W0/-W1 on a real host)."""
        self.write_cache[device] = bool(enabled)
        self._save()
        self.refresh_files()

    # ------------------------------------------------------------------ ground truth

    def spec(self, device: str) -> DriveSpec:
        for d in self.drives:
            if d.device == device:
                return d
        raise KeyError(device)

    def state(self, device: str, t: Optional[float] = None) -> DriveState:
        spec = self.spec(device)
        return state_at(spec, self.clock() if t is None else t, self.write_cache.get(device))

    def wearout_time(self, device: str) -> Optional[float]:
        return wearout_time(self.spec(device))

    # ------------------------------------------------------------------ files

    def _save(self) -> None:
        data = {
            "version": 1,
            "clock": {"sim_origin": self._sim_origin, "real_origin": self._real_origin, "speed": self._speed},
            "smartctl_json": self.smartctl_json,
            "write_cache": self.write_cache,
            "drives": [d.to_dict() for d in self.drives],
        }
        tmp = self.state_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=1))
        os.replace(tmp, self.state_file)  # a tool running now reads the old or the new, never half

    def _write_sysfs(self) -> None:
        for spec in self.drives:
            name = render.block_name(spec)
            d = self.sys / "block" / name
            (d / "queue").mkdir(parents=True, exist_ok=True)
            (d / "device").mkdir(exist_ok=True)
            (d / "size").write_text(f"{spec.capacity_bytes // 512}\n")  # 512-byte units, always
            (d / "queue" / "rotational").write_text("0\n")
            if spec.kind != "shannon":
                (d / "device" / "model").write_text(spec.model + "\n")
            if spec.kind == "nvme":
                (d / "device" / "serial").write_text(spec.serial + "\n")

    def refresh_files(self) -> None:
        """Rewrite /proc/diskstats and queue/write_cache for the current simulated time."""
        with self._lock:
            now = self.clock()
            lines = []
            for index, spec in enumerate(self.drives):
                cache = self.write_cache.get(spec.device)
                st = state_at(spec, now, cache)
                boot = state_at(spec, self.boot_time, cache)
                lines.append(render.diskstats_line(index, spec, st, boot))
                queue = self.sys / "block" / render.block_name(spec) / "queue" / "write_cache"
                text = ("write back" if st.write_cache else "write through") + "\n"
                if not queue.exists() or queue.read_text() != text:
                    queue.write_text(text)
            tmp = self.proc / ".diskstats.tmp"
            tmp.write_text("".join(lines))
            os.replace(tmp, self.proc / "diskstats")

    # ------------------------------------------------------------------ demo support

    def start_refresher(self, interval: float = 1.0) -> None:
        """Keep the directly-read files current while the clock runs (daemon thread; it dies
        with the process, and :meth:`stop_refresher` ends it sooner)."""
        if self._thread is not None:
            return

        def loop() -> None:
            while not self._stop.wait(interval):
                try:
                    self.refresh_files()
                except OSError:
                    return  # the directory was removed under us: nothing left to refresh

        self._thread = threading.Thread(target=loop, name="sim-refresher", daemon=True)
        self._thread.start()

    def stop_refresher(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
            self._thread = None

    # ------------------------------------------------------------------ agent wiring

    def tool_path(self, tool: str) -> str:
        return str(self.bin / tool)

    def overrides(self) -> Dict[str, str]:
        """argparse destinations for ``ssdfleet agent`` (what cli._simulated applies)."""
        return {
            "tool_smartctl": self.tool_path("smartctl"),
            "tool_shannon_status": self.tool_path("shannon-status"),
            "tool_hdparm": self.tool_path("hdparm"),
            "tool_nvme": self.tool_path("nvme"),
            "path_sysfs": str(self.sys),
            "path_procfs": str(self.proc),
            "state_dir": str(self.state_dir),
        }

    def config_overrides(self) -> Dict:
        """The same as nested config overrides for :func:`agent.config.load_config`."""
        return {
            "tools": {"smartctl": self.tool_path("smartctl"), "shannon_status": self.tool_path("shannon-status"),
                      "hdparm": self.tool_path("hdparm"), "nvme": self.tool_path("nvme")},
            "paths": {"sysfs": str(self.sys), "procfs": str(self.proc)},
            "state_dir": str(self.state_dir),
        }

    def calls(self) -> List[str]:
        try:
            return (self.sim / "calls.log").read_text().splitlines()
        except OSError:
            return []
