"""A live fake fleet: real ``ssdfleet agent`` processes on fake hosts, with history and load.

The dashboard and alerting tests need what a real fleet gives Prometheus, not a hand-written
exposition: agents that poll (fake) tools, counters that move while Prometheus scrapes, and a
wear-out projection, which needs the agent's own history to span more than an hour.

* :func:`read_drives` asks the real agent (``ssdfleet collect --json``, one poll, no history)
  what the fake host's drives say now.
* :func:`seed_history` writes the state file earlier runs of the agent would have left: samples
  over the past days through :class:`agent.history.History`, host bytes written rising into the
  current value and life left falling into it (life used in proportion to bytes written, the
  same assumption the observed projection makes). The agent started afterwards reads it.
* :class:`Workload` plays the database: it advances /proc/diskstats and the Shannon card's
  lifetime counters a little every tick (so rate() and await have something to divide), and
  steps a card's life left down by one percent when asked (so deriv() over life left turns
  negative while Prometheus watches).
* :func:`worn_card_status` derives a nearly worn-out card's ``shannon-status -p`` output from
  the real capture by rewriting only the serial, the volumes written and the life left.
* :class:`SimulatedHost`: a host of the simulator (simulator/, what ``ssdfleet agent --simulate``
  serves) built in the test process, so that the test can switch a drive's write cache while
  a real agent process reads it; :class:`AgentProcess` runs the agent on it.
* :data:`CARD_RACK` and :func:`build_card_rack_host`: a host with a dozen more Shannon cards
  (the same capture, rewritten per card) whose life left and seeded write rates put one card
  in every band of life left the fleet dashboard draws and one in every 30-day wear-out
  bucket of the next year, so every fleet panel query has real data without its
  ``or vector(0)`` fallback.

Everything started here is stopped by :meth:`LiveHost.stop`, with bounded waits.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from agent.history import History
from collectors.model import DriveReading
from tests.conftest import fixture_path
from tests.fakehost import DISKSTATS, ROOT, AgentProcess, FakeHost
from tests.support.controller_host import (
    answer_scanned_direct_disks,
    arcconf_rebuilding,
    controller_tool_args,
    megacli_after_battery_failed,
    megaraid_drives_host,
)

HOUR = 3600.0
DAY = 86400.0
GB = 10**9  # shannon-status prints decimal GB

# The agent polls every second instead of every minute or five.
FAST_INTERVALS = [
    "--interval.smartctl", "1", "--interval.shannon", "1", "--interval.write_cache", "1",
    "--interval.diskstats", "1", "--tool-timeout", "5",
]

SHANNON_STATUS_P = "fakehost/seed000__status-p_scta_9h.txt"
SHANNON_STATUS_A = "fakehost/seed000__status-a_9h.txt"
SHANNON_SERIAL = "006819246149b014"


# ------------------------------------------------------------------ what the drives say now


def read_drives(host: FakeHost, timeout: float = 60.0) -> List[dict]:
    """The drives as one real poll of the agent sees them (``ssdfleet collect --json``)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    result = subprocess.run(
        [sys.executable, "-m", "agent", "collect", "--json", *host.config_args()],
        capture_output=True, text=True, timeout=timeout, cwd=str(ROOT), env=env,
    )
    if result.returncode != 0:
        raise RuntimeError(f"ssdfleet collect failed ({result.returncode}): {result.stderr[-2000:]}")
    return list(json.loads(result.stdout)["drives"])


# ------------------------------------------------------------------ history from earlier runs


@dataclass(frozen=True)
class SeededDrive:
    serial: str
    host_write_rate: float  # bytes per second over the seeded days
    samples: int
    oldest_ts: float
    newest_ts: float


def default_write_rate(drive: dict, span_seconds: float) -> float:
    """A believable past write rate: the lifetime average (bytes written / power-on time),
    but never so high that the oldest sample would go below half of today's counter."""
    written = float(drive["host_written_bytes"])
    power_on = drive.get("power_on_seconds") or 0
    lifetime = written / power_on if power_on > 0 else written / span_seconds
    return min(lifetime, written / (2.0 * span_seconds))


def seed_history(
    host: FakeHost,
    drives: Sequence[dict],
    now: Optional[float] = None,
    days: float = 14.0,
    step_seconds: float = 6 * HOUR,
    newest_age_seconds: float = HOUR,
    write_rates: Optional[Dict[str, float]] = None,
) -> Dict[str, SeededDrive]:
    """Write ``<state>/history.sqlite`` with one sample every ``step_seconds`` from ``days``
    ago until ``newest_age_seconds`` ago, for every drive that reports bytes written.

    The newest sample is older than the agent's sampling interval (10 minutes), so the agent
    adds today's reading as the newest point when it starts.
    """
    now = time.time() if now is None else now
    span = days * DAY
    seeded: Dict[str, SeededDrive] = {}
    with History(str(host.state / "history.sqlite")) as history:
        for drive in drives:
            written_now = drive.get("host_written_bytes")
            if not written_now:
                continue
            serial = drive["serial"]
            rate = (write_rates or {}).get(serial) or default_write_rate(drive, span)
            life_now = drive.get("life_left_ratio")
            nand_now = drive.get("nand_written_bytes")
            count = 0
            ts = oldest = newest = now - span
            while ts <= now - newest_age_seconds:
                age = now - ts
                written = written_now - rate * age
                fraction = written / written_now  # of today's bytes written, so of today's wear
                reading = DriveReading(
                    kind=drive["kind"],
                    device=drive["device"],
                    serial=serial,
                    life_left_ratio=None if life_now is None else 1.0 - (1.0 - life_now) * fraction,
                    host_written_bytes=int(written),
                    nand_written_bytes=None if nand_now is None else int(nand_now * fraction),
                    bad_block_ratio=drive.get("bad_block_ratio"),
                    power_on_seconds=None,
                )
                history.record(serial, ts, reading)
                count += 1
                newest = ts
                ts += step_seconds
            seeded[serial] = SeededDrive(serial, rate, count, oldest, newest)
    return seeded


# ------------------------------------------------------------------ tool output for special drives


def _put(pattern: str, value: str, src: str) -> str:
    """Replace the one line ``pattern`` matches; anything else means the capture changed."""
    out, n = re.subn(pattern, value, src, flags=re.M)
    if n != 1:
        raise ValueError(f"{pattern!r} matched {n} lines of the shannon-status capture")
    return out


def shannon_status_p(
    text: str,
    serial: Optional[str] = None,
    host_written_bytes: Optional[float] = None,
    nand_written_bytes: Optional[float] = None,
    life_left_percent: Optional[int] = None,
    card: Optional[str] = None,
) -> str:
    """``shannon-status -p`` text with some values replaced (the rest of the capture kept).
    ``card`` renames the card: ``"b"`` makes it /dev/sctb, attached as /dev/dfb."""
    put = _put
    if card is not None:
        text = put(r"^drive=/dev/sct\w+$", f"drive=/dev/sct{card}", text)
        text = put(r"^device_state=attached as disk /dev/df\w+$", f"device_state=attached as disk /dev/df{card}", text)
    if serial is not None:
        text = put(r"^serial_number=.*$", f"serial_number={serial}", text)
    if host_written_bytes is not None:
        text = put(r"^host_write_data=.*$", f"host_write_data={host_written_bytes / GB:.2f} GB", text)
    if nand_written_bytes is not None:
        text = put(r"^total_write_data=.*$", f"total_write_data={nand_written_bytes / GB:.2f} GB", text)
    if life_left_percent is not None:
        text = put(r"^estimated_life_left=.*$", f"estimated_life_left={life_left_percent}%", text)
    if host_written_bytes is not None:
        # A card that has written this much has been powered long enough to: the capture's
        # 9 hours at PCIe speed hold 260 TB, and the agent withholds a volume its link could not
        # have carried. Four years, or more at an average of 1 GB/s.
        hours = max(4 * 8766, int(host_written_bytes / 1e9 / 3600) + 1)
        text = put(r"^power_on_hours=.*$", f"power_on_hours={hours} hours 0 minutes", text)
    return text


def shannon_values(text: str) -> Tuple[float, float, float, int]:
    """(host bytes written, NAND bytes written, write amplifier, life left %) from ``-p`` text."""
    def get(key: str) -> str:
        match = re.search(rf"^{key}=(.*)$", text, re.M)
        if not match:
            raise ValueError(f"no {key} in the shannon-status capture")
        return match.group(1).strip()

    return (
        float(get("host_write_data").split()[0]) * GB,
        float(get("total_write_data").split()[0]) * GB,
        float(get("write_amplifier")),
        int(get("estimated_life_left").rstrip("%")),
    )


# A card with 5% of its life left: 95% of the rated 8.28 PB (what the agent's endurance table
# gives this 1.2 TB card) written, at the write amplification the capture shows.
WORN_SERIAL = "006819246149w0rn"
WORN_LIFE_LEFT_PERCENT = 5
WORN_HOST_WRITTEN = 7_860_000 * GB


def worn_card_status(serial: str = WORN_SERIAL) -> Tuple[str, str]:
    """(``shannon-status -a``, ``shannon-status -p scta``) for a nearly worn-out card."""
    capture = fixture_path(SHANNON_STATUS_P).read_text()
    _, _, amplifier, _ = shannon_values(capture)
    status_p = shannon_status_p(
        capture,
        serial=serial,
        host_written_bytes=WORN_HOST_WRITTEN,
        nand_written_bytes=WORN_HOST_WRITTEN * amplifier,
        life_left_percent=WORN_LIFE_LEFT_PERCENT,
    )
    status_a = fixture_path(SHANNON_STATUS_A).read_text().replace(SHANNON_SERIAL, serial)
    status_a, n = re.subn(r"Estimated life left: \d+% left", f"Estimated life left: {WORN_LIFE_LEFT_PERCENT}% left", status_a)
    if n != 1:
        raise ValueError("no life left line in the shannon-status -a capture")
    return status_a, status_p


# ------------------------------------------------------------------ a rack of cards

# What the agent's endurance table rates this 1.2 TB card at (capacity x 10,000 P/E cycles,
# counted in host bytes through the card's write amplification): host bytes written are set
# to the share of it that matches the life used, as a real card would show.
CARD_RATED_HOST_BYTES = 8.28e15


@dataclass(frozen=True)
class CardSpec:
    """One card of :data:`CARD_RACK`: its life left and where its wear-out projection falls.

    The agent's preferred (observed) projection is bytes still to write at the rate of life
    used so far, ``host x life_left / (1 - life_left)``, over the write rate from its
    history; :attr:`write_rate` is the rate that puts the projection ``wearout_days`` ahead.
    """

    letter: str  # the card is /dev/sct<letter>, attached as /dev/df<letter>
    life_left_percent: int
    wearout_days: float

    @property
    def serial(self) -> str:
        return f"006819246149r0{self.letter}0"[:16]

    @property
    def host_written(self) -> float:
        return (100 - self.life_left_percent) / 100.0 * CARD_RATED_HOST_BYTES

    @property
    def remaining_bytes(self) -> float:
        life = self.life_left_percent / 100.0
        return self.host_written * life / (1.0 - life)

    @property
    def write_rate(self) -> float:
        return self.remaining_bytes / (self.wearout_days * DAY)


# One card in the middle of each 30-day wear-out bucket of the fleet dashboard (0-30 days,
# 31-60, ... 331-360), and between them every band of life left it draws (0-3 %, 3-10 %,
# 10-25 %, 25-50 %, 50-75 %; the default hosts fill 75-100 %). 10 % exactly sits on the
# edge of the "under 10 %" stat, on the side that does not count.
CARD_RACK = (
    CardSpec("b", 2, 15),
    CardSpec("c", 8, 45),
    CardSpec("d", 15, 75),
    CardSpec("e", 22, 105),
    CardSpec("f", 30, 135),
    CardSpec("g", 45, 165),
    CardSpec("h", 55, 195),
    CardSpec("i", 70, 225),
    CardSpec("j", 60, 255),
    CardSpec("k", 40, 285),
    CardSpec("l", 20, 315),
    CardSpec("m", 10, 345),
)


def _status_a_block(capture: str, letter: str, serial: str, host: float, nand: float, life_percent: int) -> str:
    """One card's block of ``shannon-status -a`` output, from the captured card's block."""
    gib = 2**30
    block = capture
    block = _put(r"^Found Shannon PCIE SSD card /dev/scta:$", f"Found Shannon PCIE SSD card /dev/sct{letter}:", block)
    block = _put(r"^Direct-IO drive scta at PCI Address:41:00:0:$",
                 f"Direct-IO drive sct{letter} at PCI Address:{0x41 + ord(letter) - ord('a'):02x}:00:0:", block)
    block = _put(rf"^(Model:.*SN: ){SHANNON_SERIAL}$", rf"\g<1>{serial}", block)
    block = _put(r"^Device state: attached as disk /dev/dfa,", f"Device state: attached as disk /dev/df{letter},", block)
    block = _put(r"^  Host write data    : .*$", f"  Host write data    : {host / GB:.2f} GB / {host / gib:.2f} GiB", block)
    block = _put(r"^  Total write data   : .*$", f"  Total write data   : {nand / GB:.2f} GB / {nand / gib:.2f} GiB", block)
    block = _put(r"^  Estimated life left: \d+% left$", f"  Estimated life left: {life_percent}% left", block)
    return block


def build_card_rack_host(host: FakeHost, cards: Sequence[CardSpec] = CARD_RACK) -> Dict[str, float]:
    """Add ``cards`` to a default fake host (which keeps its own card, /dev/scta): their
    ``shannon-status -p`` answers, one ``-a`` listing naming every card, and their block
    devices. Returns {serial: write rate} for :func:`seed_history`."""
    capture_p = fixture_path(SHANNON_STATUS_P).read_text()
    capture_a = fixture_path(SHANNON_STATUS_A).read_text()
    _, _, amplifier, _ = shannon_values(capture_p)
    head, sep, _footer = capture_a.partition("Totally found")
    if not sep or not head.startswith("Found Shannon PCIE SSD card /dev/scta:"):
        raise ValueError("unexpected shape of the shannon-status -a capture")
    blocks = [head.rstrip("\n") + "\n"]
    for card in cards:
        nand = card.host_written * amplifier
        host.set_response("shannon-status", f"sct{card.letter}", shannon_status_p(
            capture_p, serial=card.serial, host_written_bytes=card.host_written,
            nand_written_bytes=nand, life_left_percent=card.life_left_percent, card=card.letter,
        ))
        blocks.append(_status_a_block(head, card.letter, card.serial, card.host_written, nand,
                                      card.life_left_percent).rstrip("\n") + "\n")
        host.block_device(f"df{card.letter}", 2343750000)
    listing = "\n".join(blocks) + f"\nTotally found {len(blocks)} Direct-IO PCIe SSD card on this system.\n"
    host.set_response("shannon-status", "all", listing)
    return {card.serial: card.write_rate for card in cards}


# ------------------------------------------------------------------ the database's load


# Per second, per whole disk: a busy but healthy database host.
# (reads, sectors read, ms reading, writes, sectors written, ms writing, ms busy)
DISK_LOAD = {
    "sda": (150, 1200, 30, 250, 4000, 25, 300, 20, 10),
    "nvme0n1": (2000, 16000, 200, 1500, 24000, 75, 350, 100, 30),
    "nvme1n1": (50, 400, 5, 20, 320, 2, 20, 2, 1),
    "dfa": (800, 6400, 80, 3000, 96000, 150, 450, 0, 0),
}
# diskstats columns after the name: 0 reads, 2 sectors read, 3 ms reading, 4 writes,
# 6 sectors written, 7 ms writing, 9 ms doing I/O, 15 flushes, 16 ms flushing
_LOAD_COLUMNS = (0, 2, 3, 4, 6, 7, 9, 15, 16)


class Workload:
    """Moves a fake host's counters while the agent polls it.

    Every ``tick`` seconds: /proc/diskstats of every whole disk in :data:`DISK_LOAD` advances by
    the elapsed time (replaced atomically, as the kernel's file never shows half a line), and
    the Shannon card's host and NAND bytes written advance by ``card_write_rate``. After
    :meth:`wear_one_percent`, the next tick takes one percent off the card's life left.
    """

    def __init__(
        self,
        host: FakeHost,
        status_p: str,
        card_write_rate: float = 0.5 * GB,
        tick: float = 0.5,
    ) -> None:
        self.host = host
        self.status_p = status_p
        self.card_write_rate = card_write_rate
        self.tick = tick
        self.host_written, self.nand_written, self.amplifier, self.life_left = shannon_values(status_p)
        self._wear_requested = threading.Event()
        self.worn_at: Optional[float] = None  # time.time() of the tick that wrote the lower life left
        self._lines = [line.split() for line in DISKSTATS.splitlines()]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"workload-{host.root.name}", daemon=True)
        self.ticks = 0

    def start(self) -> Workload:
        self._thread.start()
        return self

    def wear_one_percent(self) -> None:
        self._wear_requested.set()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.ident is not None:  # started
            self._thread.join(timeout=5.0)

    def _run(self) -> None:
        last = time.monotonic()
        while not self._stop.wait(self.tick):
            now = time.monotonic()
            self.step(now - last)
            last = now

    def step(self, seconds: float) -> None:
        out = []
        for fields in self._lines:
            load = DISK_LOAD.get(fields[2])
            if load:
                for column, per_second in zip(_LOAD_COLUMNS, load):
                    index = 3 + column
                    fields[index] = str(int(fields[index]) + int(per_second * seconds))
            out.append(" ".join(fields))
        tmp = self.host.proc / ".diskstats.tmp"
        tmp.write_text("\n".join(out) + "\n")
        os.replace(tmp, self.host.proc / "diskstats")

        written = self.card_write_rate * seconds
        self.host_written += written
        self.nand_written += written * self.amplifier
        wear = self._wear_requested.is_set() and self.worn_at is None
        if wear:
            self.life_left -= 1
        self.host.set_response("shannon-status", "scta", shannon_status_p(
            self.status_p,
            host_written_bytes=self.host_written,
            nand_written_bytes=self.nand_written,
            life_left_percent=self.life_left,
        ))
        if wear:
            self.worn_at = time.time()
        self.ticks += 1


# ------------------------------------------------------------------ one host of the fleet


@dataclass
class LiveHost:
    """A fake host with its seeded history, its workload and its running agent."""

    name: str
    host: FakeHost
    drives: List[dict]
    seeded: Dict[str, SeededDrive]
    workload: Optional[Workload] = None
    agent: Optional[AgentProcess] = None
    config_file: Optional[Path] = None  # an agent config beyond the flags (the sync-write probe)
    agent_args: List[str] = field(default_factory=list)  # more flags (a controller host's tools)

    def start(self, extra_args: Sequence[str] = FAST_INTERVALS) -> LiveHost:
        if self.workload is not None:
            self.workload.start()
        config = ["--config", str(self.config_file)] if self.config_file else []
        self.agent = AgentProcess(self.host, config + list(extra_args) + self.agent_args)
        return self

    def wait_ready(self, timeout: float = 30.0) -> None:
        assert self.agent is not None
        self.agent.wait_ready(timeout)

    @property
    def target(self) -> str:
        assert self.agent is not None
        return f"127.0.0.1:{self.agent.port}"

    def stop(self) -> None:
        if self.agent is not None:
            self.agent.stop()
        if self.workload is not None:
            self.workload.stop()


def syncwrite_config(root: Path, sysfs: Path, drive: str = "sda") -> Path:
    """An agent config turning the sync-write probe on in a directory under ``root`` (on this
    machine's real disk), with the fake ``sysfs`` saying ``drive`` holds it, so the probe's
    series carry that drive's device and serial as on a real host."""
    wal = root / "pg_wal"
    wal.mkdir(exist_ok=True)
    dev = os.stat(wal).st_dev
    node = sysfs / "dev" / "block" / f"{os.major(dev)}:{os.minor(dev)}"
    node.parent.mkdir(parents=True, exist_ok=True)
    if not node.exists():
        node.symlink_to(sysfs / "block" / drive)
    config = root / "syncwrite.yml"
    config.write_text(
        "syncwrite:\n"
        f"  directories: [{str(wal)!r}]\n"
        "  interval_seconds: 1\n  writes: 16\n  min_free_bytes: 0\n  min_free_ratio: 0\n")
    return config


def with_syncwrite_probe(live: LiveHost, drive: str = "sda") -> LiveHost:
    live.config_file = syncwrite_config(live.host.root, live.host.sys, drive)
    return live


def prepare_host(
    name: str,
    host: FakeHost,
    write_rates: Optional[Dict[str, float]] = None,
    now: Optional[float] = None,
) -> LiveHost:
    """Read the drives, seed their history and set up the workload; start nothing yet."""
    drives = read_drives(host)
    seeded = seed_history(host, drives, now=now, write_rates=write_rates)
    status_p = (host.root / "responses" / "shannon-status" / "scta.out").read_text()
    workload = Workload(host, status_p)
    return LiveHost(name, host, drives, seeded, workload)


# ------------------------------------------------------------------ a host behind RAID controllers

# The controller sources read every few seconds here (every 5 minutes by default).
CONTROLLER_INTERVALS = ["--interval.megaraid", "3", "--interval.arcconf", "3"]


def prepare_controller_host(name: str, root: Path, now: Optional[float] = None) -> LiveHost:
    """A database host whose drives sit behind RAID controllers (tests/support/controller_host.py):
    seven drives behind a MegaRAID that smartctl reads through it (and three on their own that
    the same scan lists), the MegaRAID's battery failed
    and its volume configured write-back running write-through, and an Adaptec whose RAID 10
    rebuilds. Its drives' history is seeded as on the other hosts; it has no workload (the
    drives behind the controller have no kernel device of their own, so no I/O counters)."""
    host, smartctl = megaraid_drives_host(root, with_volume=False)
    answer_scanned_direct_disks(host, smartctl)
    tools = {"megacli": megacli_after_battery_failed(root), "arcconf": arcconf_rebuilding(root)}
    drives = read_drives(host)
    seeded = seed_history(host, drives, now=now)
    return LiveHost(name, host, drives, seeded, agent_args=controller_tool_args(root, tools) + CONTROLLER_INTERVALS)


# ------------------------------------------------------------------ a simulated host


class SimulatedHost:
    """A simulated host (simulator.host.SimHost, the demo's drive mix) on the real clock, with
    the history the agent would have written over ``history_seconds`` (through the agent's own
    parsers and History class, as ``ssdfleet agent --simulate`` seeds it), and the interface
    :class:`tests.fakehost.AgentProcess` takes (``root``, ``config_args()``).

    Unlike ``--simulate``, which builds the host inside the agent process, the host lives in
    the test process: :meth:`set_write_cache` is someone running ``hdparm -W0`` on it while
    the agent polls. The first ``drives`` of the demo mix are used (0: Shannon card, 1: Intel
    320 on sda, 2: Samsung PM983 on nvme0, 3: the LITEON whose cache the demo switches off).
    """

    def __init__(self, root: Path, drives: int = 3, seed_offset: int = 0, history_seconds: float = 2 * HOUR,
                 speed: float = 1.0, syncwrite_on: Optional[str] = None) -> None:
        from simulator.demo import demo_drives, seed_history
        from simulator.host import SimHost

        now = time.time()
        self.root = Path(root)
        # As simulator.demo.setup_simulated_host: simulated time is real time at the start and
        # runs ``speed`` times faster; the drives have run for history_seconds of real time.
        specs = demo_drives(drives, now - history_seconds * speed, seed_offset=seed_offset)
        self.sim = SimHost(self.root, specs, speed=speed, sim_start=now)
        seed_history(self.sim, now - history_seconds, now,
                     open_history=lambda path, step: History(path, min_interval_seconds=step))
        self.sim.start_refresher(1.0)
        # The sync-write probe in a directory the simulated sysfs puts on ``syncwrite_on``: the
        # settings to put in the agent's config file (config_text).
        self.config_text = (syncwrite_config(self.root, Path(self.sim.overrides()["path_sysfs"]), syncwrite_on)
                            .read_text() if syncwrite_on else "")

    def config_args(self) -> List[str]:
        o = self.sim.overrides()
        return [
            "--smartctl", o["tool_smartctl"], "--shannon-status", o["tool_shannon_status"],
            "--hdparm", o["tool_hdparm"], "--nvme", o["tool_nvme"],
            "--path.sysfs", o["path_sysfs"], "--path.procfs", o["path_procfs"], "--state-dir", o["state_dir"],
        ]

    def set_write_cache(self, device: str, enabled: bool) -> None:
        self.sim.set_write_cache(device, enabled)

    def stop(self) -> None:
        self.sim.stop_refresher()
