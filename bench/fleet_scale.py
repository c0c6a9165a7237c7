"""Fleet scale: 20,000 simulated drives on 2,500 hosts in a real Prometheus with the shipped rules.

The fleet (:class:`Fleet`) models a real database fleet, not the demo: hosts of one
generation each (NVMe, SATA, PCIe card, consumer SATA), ages spread over a five-year refresh
cycle, write loads spread around each model's typical figure, drives that wore out replaced,
and faults at the rates public field studies report (see :data:`FAULT_RATES`).
``--bad-day`` adds a firmware bug that switched off the write cache of every drive on 10 % of
the hosts. Rule group and panel times are printed with the load average at the moment.

Two sources of data, because a rule is evaluated at wall-clock *now* and backfilled blocks
cannot reach now (``promtool`` writes immutable blocks; the head must start after them):

1. **History, backfilled.** 30 days of hourly samples of the slow per-drive series (life left,
   host and NAND bytes written, projected wear-out) rendered as OpenMetrics from the wear
   model, one file per 2-hour block range, each turned into a TSDB block by
   ``promtool tsdb create-blocks-from openmetrics``. (promtool 2.42 re-reads its whole input
   once per 2-hour range, so one file per range keeps the work linear.)
   With ``--ranked-days`` (7 by default) the recorded lists that the dashboard's week-long
   panels read (the ten per job with the least life left, the busiest, the hottest, and the
   collector maxima) are backfilled too, as the rules would have recorded them from the model
   (bench/ranking_window.py), so those panels are timed over their whole week.
2. **Live.** HTTP endpoints on 127.0.0.1 (``--targets``, 25 by default, each for a run of
   consecutive hosts) serve the fleet's current exposition (every host's agent series with its
   own ``instance`` and ``job``, plus ``up``), scraped with ``honor_labels: true`` every 60 s:
   the way aggregating proxies look to Prometheus, whose scrapes of them spread over the
   minute as those of a real fleet's agents do. The per-drive series are those of docs/metrics.md, with the counts per kind
   that the real agent exports (bench/agent_bench.py measures them).

Prometheus then runs the shipped recording and alert rules, by default every group every minute
(``--group-interval 1m``, a stress: the 4-minute and hourly groups run 4 and 60 times as often
as shipped), or at the shipped intervals (``--group-interval ''``, with ``--hourly-interval 4m``
to time the hourly groups ten times in 40 minutes). After a few evaluation rounds the script
reads each group's ``evaluationTime`` from /api/v1/rules, once per evaluation, until each group
has ``--readings`` of them, and times
every query of the fleet dashboard (dashboards/json/ssdfleet-fleet.json) with ``$job``
substituted: as Grafana sends it (instant, or a range over the dashboard's 7 days) and
repeated to take a median.

``--rules-dir DIR`` loads the two rule files from DIR instead of deploy/prometheus (another
version's, to compare rule group times). With ``--before-dashboard OLD.json`` it also times the panels of another version of the fleet
dashboard (``git show REF:dashboards/json/ssdfleet-fleet.json > OLD.json``) against the same
Prometheus at the same moment, and prints both per panel: the before/after of a dashboard
change. ``--output FILE`` writes everything printed after the backfill to FILE as well.

Usage: ``python bench/fleet_scale.py [--hosts 2500] [--drives-per-host 8] [--days 30]
[--before-dashboard OLD.json] [--output FILE] [--workdir DIR] [--keep]``. Everything it starts
is stopped at the end (and on Ctrl-C).
"""

from __future__ import annotations

import argparse
import http.server
import json
import logging
import math
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.procs import free_port as _free_port  # noqa: E402
from bench.procs import need_tools  # noqa: E402
from bench.procs import start as _start  # noqa: E402
from bench.procs import stop as _stop  # noqa: E402
from simulator.wear import DAY, DriveSpec, state_at, wearout_time  # noqa: E402

JOB = "ssdfleet-fleet"
BLOCK = 2 * 3600
COLLECTORS = ("discovery", "history", "shannon", "smartctl", "write_cache", "diskstats")


# --------------------------------------------------------------------------- the fleet

# Host generations: (share of hosts, catalogue models its drives are drawn from). The models
# and their endurance, write amplification and typical writes per day are the simulator's
# (simulator/catalogue.py, from the seeds: the Shannon card of seeds/000 and 002, the Intel
# 320/335 of seeds/003, the LITEON of seeds/001, the Patriot of seeds/004, the OCZ card of
# seeds/000). The shares are an assumption: a database fleet mostly on enterprise NVMe, an
# older SATA generation, a few PCIe cards, and some consumer drives that crept in.
HOST_TYPES = (
    (0.70, ("samsung-pm983-1920",)),
    (0.15, ("intel-320-300", "intel-335-240")),
    (0.10, ("shannon-directio-1200",)),
    (0.05, ("liteon-lch-256v2s", "patriot-wildfire-120", "ocz-revodrive3-x2-960")),
)
SERVICE_YEARS = 5.0  # hosts are replaced after five years: ages are uniform over 0-5 years (assumption)
LOAD_SIGMA = 0.7  # a host writes its model's typical daily volume times lognormal(0, 0.7) (assumption)

# Faults, from public field statistics:
# * Backblaze Drive Stats (SSD reports 2022-2023): annualized failure rate of their boot SSDs
#   about 1 % (0.90 % lifetime AFR at the end of 2023). A failed drive stays in service for
#   about a month before it is swapped, so ~1 %/12 of the fleet shows a failed health check
#   at any moment: 0.1 %.
# * Schroeder, Lagisetty, Merchant, "Flash Reliability in Production: The Expected and the
#   Unexpected", FAST '16 (Google, 6 years, 10 drive models): 30-80 % of drives develop bad
#   blocks within 4 years (here: 55 % by age 4, in proportion to age); 20-63 % see at least
#   one uncorrectable error in 4 years, and 2-6 in 1,000 drive days have one (here: 0.4 % of
#   drives had a defect count grow today, 0.4 %/24 of NVMe drives a media error this hour).
FAULT_RATES = {
    "health_failed": 0.001,
    "bad_blocks_by_4_years": 0.55,
    "defect_grew_today": 0.004,
    "media_error_this_hour": 0.004 / 24,
}
BAD_DAY_HOSTS = 0.10  # --bad-day: a firmware update switched the write cache off on 10 % of hosts


def _device_names(kind: str, count: int) -> List[str]:
    from simulator.demo import _sata_name

    if kind == "nvme":
        return [f"nvme{i}" for i in range(count)]
    if kind == "shannon":
        return ["sct" + _sata_name(i)[2:] for i in range(count)]
    return [_sata_name(i) for i in range(count)]


class Fleet:
    """``hosts`` hosts of ``per_host`` drives each, deterministic for a given ``seed``."""

    def __init__(self, hosts: int, per_host: int, now: float, bad_day: bool = False, seed: int = 17,
                 agent: Optional[AgentSeries] = None, syncwrite_share: float = 0.0,
                 stratified: bool = False) -> None:
        """``agent``: serve the real agent's density (:class:`AgentSeries`), not only the wear
        model's families. ``syncwrite_share``: hosts whose agent runs the sync-write probe on
        the database directory (off by default in the agent). ``stratified``: host generations
        in exact proportion to their shares (a small fleet then has every generation), instead
        of drawn at random."""
        import random

        from simulator.catalogue import CATALOGUE
        from simulator.host import make_spec

        rng = random.Random(seed)
        self.now = now
        self.t0 = now - 60 * DAY  # the wear model's start: 60 days of history can be asked for
        self.hosts: List[Tuple[str, List[DriveSpec]]] = []
        self.faults: Dict[str, Dict[str, int]] = {}  # serial -> fault -> value
        self.cache_off_hosts: set = set()
        self.agent = agent
        self.syncwrite_hosts: set = set()
        index = 0
        cumulative = []
        total = 0.0
        for share, models in HOST_TYPES:
            total += share
            cumulative.append((total, models))
        for h in range(hosts):
            instance = f"db{h:05d}.example.internal:9877"
            pick = rng.random() * total
            if stratified:
                pick = (h + 0.5) / hosts * total
            models = next(m for edge, m in cumulative if pick <= edge)
            host_age = rng.uniform(0, SERVICE_YEARS) * 365 * DAY
            load = min(5.0, max(0.1, rng.lognormvariate(0.0, LOAD_SIGMA)))
            kind = CATALOGUE[models[0]].kind
            drives = []
            for device in _device_names(kind, per_host):
                key = rng.choice(models)
                m = CATALOGUE[key]
                wpd = m.writes_per_day * load
                budget = m.capacity_bytes * m.pe_cycles / m.write_amplification  # host bytes
                lifetime = budget / wpd * DAY if wpd > 0 else float("inf")
                # a drive that wore out was replaced: this one is as old as the time since
                age = host_age % lifetime if lifetime < host_age else host_age
                age_at_t0 = max(0.0, age - (now - self.t0))
                used_at_t0 = min(1.0, age_at_t0 / DAY * wpd / budget)
                spec = make_spec(key, device, index, self.t0, writes_per_day=wpd, start_life_used=used_at_t0,
                                 born=now - age)
                index += 1
                drives.append(spec)
                faults = {}
                if rng.random() < FAULT_RATES["health_failed"]:
                    faults["health_failed"] = 1
                if rng.random() < FAULT_RATES["bad_blocks_by_4_years"] * min(1.0, age / (4 * 365 * DAY)):
                    faults["defects"] = rng.randint(1, 10)
                    if rng.random() < FAULT_RATES["defect_grew_today"] / max(1e-9, FAULT_RATES["bad_blocks_by_4_years"]):
                        faults["defect_grew"] = 1
                if kind == "nvme" and rng.random() < FAULT_RATES["media_error_this_hour"]:
                    faults["media_error_grew"] = 1
                if faults:
                    self.faults[spec.serial] = faults
            self.hosts.append((instance, drives))
        if bad_day:
            chosen = rng.sample(range(hosts), max(1, round(hosts * BAD_DAY_HOSTS)))
            self.cache_off_hosts = {self.hosts[i][0] for i in chosen}
        if syncwrite_share > 0:
            # drawn apart, so that the fleet above is the same with or without the probe
            chosen = random.Random(seed + 1).sample(range(hosts), max(1, round(hosts * syncwrite_share)))
            self.syncwrite_hosts = {self.hosts[i][0] for i in chosen}
        self.drive_count = hosts * per_host

    def collectors(self, instance: Optional[str] = None) -> Tuple[str, ...]:
        """The collectors the agent of ``instance`` reports, or those of any agent (None)."""
        names = tuple(self.agent.collectors) if self.agent is not None else COLLECTORS
        probe = instance in self.syncwrite_hosts if instance is not None else bool(self.syncwrite_hosts)
        return names + ("syncwrite",) if probe else names

    def cache_on(self, instance: str, spec: DriveSpec) -> bool:
        return spec.write_cache and instance not in self.cache_off_hosts

    def describe(self) -> str:
        from collections import Counter

        kinds = Counter(spec.catalogue for _, drives in self.hosts for spec in drives)
        lefts = [state_at(spec, self.now).life_left for _, drives in self.hosts for spec in drives]
        under10 = sum(1 for v in lefts if v < 0.10)
        faults = Counter(f for fs in self.faults.values() for f in fs)
        return (f"models {dict(kinds)}; life left median {statistics.median(lefts):.2f}, under 10 %: {under10} "
                f"({under10 / len(lefts):.1%}); faults {dict(faults)}; write cache off on "
                f"{len(self.cache_off_hosts)} hosts")

    @staticmethod
    def block(spec: DriveSpec) -> str:
        if spec.kind == "nvme":
            return spec.device
        if spec.kind == "shannon":
            return "df" + spec.device[3:]
        return spec.device


# --------------------------------------------------------------------------- the agent's density

# Families the wear model below renders itself (any drive, any kind). Everything else the real
# agent serves is added from :class:`AgentSeries` with the agent's own values.
MODEL_FAMILIES = frozenset((
    "up", "ssd_drives", "ssd_history_healthy", "ssd_exporter_build_info", "ssd_collector_success",
    "ssd_collector_duration_seconds", "ssd_collector_errors_total", "ssd_collector_last_run_timestamp_seconds",
    "ssd_drive_info", "ssd_capacity_bytes", "ssd_life_left_ratio", "ssd_smart_healthy",
    "ssd_host_written_bytes_total", "ssd_host_read_bytes_total", "ssd_power_on_seconds_total",
    "ssd_power_cycles_total", "ssd_temperature_celsius", "ssd_temperature_limit_celsius",
    "ssd_write_cache_enabled", "ssd_write_cache_expected_enabled", "ssd_write_cache_mismatch",
    "ssd_write_cache_state", "ssd_data_age_seconds", "ssd_write_rate_bytes_per_second",
    "ssd_projected_wearout_timestamp_seconds", "ssd_endurance_remaining_bytes",
    "ssd_io_writes_completed_total", "ssd_io_reads_completed_total", "ssd_io_written_bytes_total",
    "ssd_io_read_bytes_total", "ssd_io_write_time_seconds_total", "ssd_io_read_time_seconds_total",
    "ssd_io_busy_seconds_total", "ssd_io_in_flight", "ssd_io_flushes_completed_total",
    "ssd_io_flush_time_seconds_total", "ssd_io_weighted_time_seconds_total", "ssd_drive_holds_info",
    "ssd_nand_written_bytes_total", "ssd_write_amplification", "ssd_defects", "ssd_bad_block_ratio",
    "ssd_spare_left_ratio", "ssd_spare_threshold_ratio", "ssd_readonly", "ssd_write_reduced",
    "ssd_voltage_volts", "ssd_media_errors_total", "ssd_nvme_critical_warning",
))
MODEL_SENSORS = ("drive", "controller", "board", "flash")
SAMPLE_LINE = re.compile(r'([A-Za-z_:][A-Za-z0-9_:]*)(?:\{(.*)\})? (\S+)$')
LABEL_PAIR = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"')


def _parse_sample(line: str) -> Tuple[str, Dict[str, str], str]:
    """(name, labels, value) of one exposition line."""
    m = SAMPLE_LINE.match(line)
    if m is None:
        raise ValueError(f"not an exposition sample: {line!r}")
    return m.group(1), dict(LABEL_PAIR.findall(m.group(2) or "")), m.group(3)


def _label_text(labels: Dict[str, str]) -> str:
    return "".join(f',{k}="{v}"' for k, v in sorted(labels.items()))


class AgentSeries:
    """What the real agent serves beyond the wear model, per catalogue model and per agent.

    Captured once from the real agent's own code: :class:`agent.poller.Poller` polls a simulated
    host (simulator/host.py, the same fake tools the tests use) with one drive of each model,
    twice a minute apart, and :class:`agent.metrics.Exposition` renders it. Each sample whose
    family the wear model does not render is kept with its labels (``device`` and ``serial``
    replaced per drive) and value, so that the bench serves the agent's density, not the
    model's. Three kinds of values follow the model instead of the capture: timestamps
    (``*_timestamp_seconds`` within a day of the capture) keep their distance to now, extra
    temperature sensors keep their distance to the drive's own sensor, and the write-cache
    state of a second source follows the drive's cache. Collectors that failed in the capture
    (a RAID controller tool the simulated host does not have) are left out, as an agent on a
    host without that controller reports them."""

    def __init__(self, per_model: Dict[str, List[Tuple[str, str, str, str]]],
                 per_agent: List[Tuple[str, str, str, str]], collectors: Tuple[str, ...],
                 agent_per_model: Dict[str, int], agent_per_host: int) -> None:
        self.per_model = per_model  # catalogue -> [(name, labels text, value, how)]
        self.per_agent = per_agent
        self.collectors = collectors
        self.agent_per_model = agent_per_model  # the agent's own series per drive, by model
        self.agent_per_host = agent_per_host  # the agent's series without a serial

    @classmethod
    def capture(cls, models: Sequence[str], now: float) -> AgentSeries:
        import tempfile

        from simulator.catalogue import CATALOGUE
        from simulator.host import SimHost, make_spec

        sys.path.insert(0, str(ROOT / "bench"))
        from agent_bench import PreRendered

        from agent.config import load_config
        from agent.history import History
        from agent.metrics import Exposition
        from agent.poller import Poller

        per_kind: Dict[str, int] = {}
        specs = []
        for i, key in enumerate(models):
            kind = CATALOGUE[key].kind
            n = per_kind.get(kind, 0)
            per_kind[kind] = n + 1
            specs.append(make_spec(key, _device_names(kind, n + 1)[n], i, now - 400 * DAY))
        with tempfile.TemporaryDirectory(prefix="ssdfleet-agent-series-") as tmp:
            host = SimHost(Path(tmp) / "host", specs, speed=0.0, sim_start=now)
            config = load_config(overrides=host.config_overrides())
            poller = Poller(config, runner=PreRendered(str(host.state_file)),
                            history=History(None, clock=host.clock), clock=host.clock)
            # the controller tools the simulated host lacks would log a line per call
            logging.disable(logging.WARNING)
            try:
                poller.poll_once()
                host.advance(60)
                poller.poll_once()
                snap = poller.snapshot()
                body = Exposition(lambda: snap).render()
            finally:
                poller.stop()
                logging.disable(logging.NOTSET)
            captured_at = host.clock()
        text = body.decode() if isinstance(body, bytes) else body
        return cls.from_exposition(text, {s.serial: s.catalogue for s in specs}, captured_at)

    @classmethod
    def from_exposition(cls, text: str, models: Dict[str, str], captured_at: float) -> AgentSeries:
        samples = [_parse_sample(line) for line in text.splitlines() if line and not line.startswith("#")]
        failed = {lb.get("collector") for name, lb, value in samples
                  if name == "ssd_collector_success" and float(value) == 0}
        per_model: Dict[str, List[Tuple[str, str, str, str]]] = {m: [] for m in models.values()}
        agent_per_model = {m: 0 for m in models.values()}
        per_agent: List[Tuple[str, str, str, str]] = []
        drive_temp: Dict[str, float] = {}
        for name, lb, value in samples:
            if name == "ssd_temperature_celsius" and lb.get("sensor") in MODEL_SENSORS:
                drive_temp[lb["serial"]] = max(drive_temp.get(lb["serial"], -1e9), float(value))
        collectors: List[str] = []
        per_host = 0
        for name, lb, value in samples:
            if lb.get("collector") in failed:
                continue
            serial = lb.pop("serial", None)
            how = "const"
            if name.endswith("_timestamp_seconds") and abs(float(value) - captured_at) < DAY:
                how, value = "now", f"{float(value) - captured_at:.0f}"
            if serial is None:
                per_host += 1
                if name == "ssd_collector_success":
                    collectors.append(lb["collector"])
                if name not in MODEL_FAMILIES:
                    per_agent.append((name, _label_text(lb), value, how))
                continue
            model = models[serial]
            agent_per_model[model] += 1
            lb.pop("device", None)
            if name == "ssd_temperature_celsius" and lb.get("sensor") not in MODEL_SENSORS:
                how, value = "temperature", f"{float(value) - drive_temp.get(serial, float(value)):.0f}"
            elif name == "ssd_write_cache_state" and lb.get("source") != "sysfs_queue":
                how = "cache"
                lb.pop("state", None)
            elif name in MODEL_FAMILIES:
                continue
            per_model[model].append((name, _label_text(lb), value, how))
        return cls(per_model, per_agent, tuple(collectors), agent_per_model, per_host)

    def drive_lines(self, spec: DriveSpec, lb: str, now: float, celsius: float, cache_on: bool):
        for name, extra, value, how in self.per_model.get(spec.catalogue, ()):
            if how == "temperature":
                value = f"{celsius + float(value):.0f}"
            elif how == "cache":
                extra += f',state="{"enabled" if cache_on else "disabled"}"'
            elif how == "now":
                value = f"{now + float(value):.0f}"
            yield name, f"{name}{{{lb}{extra}}} {value}"

    def host_lines(self, host_labels: str, now: float):
        for name, extra, value, how in self.per_agent:
            if how == "now":
                value = f"{now + float(value):.0f}"
            yield name, f"{name}{{{host_labels}{extra}}} {value}"


def _labels(instance: str, spec: DriveSpec) -> str:
    return f'instance="{instance}",job="{JOB}",device="{Fleet.block(spec)}",serial="{spec.serial}"'


# --------------------------------------------------------------------------- history

HISTORY_FAMILIES = (
    ("ssd_life_left_ratio", "gauge", ""),
    ("ssd_host_written_bytes", "counter", "_total"),
    ("ssd_nand_written_bytes", "counter", "_total"),
    ("ssd_projected_wearout_timestamp_seconds", "gauge", ""),
    ("ssd_defects", "gauge", ""),
    # What the hourly recording group (ssdfleet-recording-1h) would have recorded over the
    # last day: the day rules read 24 of these per drive, so a run without them would time
    # the day rules on empty ranges.
    ("ssd:host_written_bytes:rate1h", "gauge", ""),
    ("ssd:nand_written_bytes:rate1h", "gauge", ""),
    ("ssd:io_writes_completed:rate1h", "gauge", ""),
    ("ssd:io_write_time_seconds:rate1h", "gauge", ""),
    ("ssd:io_busy_seconds:rate1h", "gauge", ""),
    ("ssd:defects:min1h", "gauge", ""),
    ("ssd:io_flush_await_seconds:median1h", "gauge", ""),
    # What the hourly day groups (ssdfleet-recording-1h-day*) would have recorded in the last
    # hours: the 4-minute day rules read the latest of these, and fall back on the 5-minute
    # figures without them.
    ("ssd:host_written_bytes:avg1d_rate1h", "gauge", ""),
    ("ssd:nand_written_bytes:avg1d_rate1h", "gauge", ""),
    ("ssd:io_busy_seconds:avg1d_rate1h", "gauge", ""),
    ("ssd:io_write_time_seconds:sum1d_rate1h", "gauge", ""),
    ("ssd:io_writes_completed:sum1d_rate1h", "gauge", ""),
    ("ssd:io_flush_await_seconds:median1d_median1h", "gauge", ""),
    # With --raw-history, the last 25 hours of the counters (and the recorded 5-minute flush
    # mean) that rules before the hourly rewrite read over a raw day, at every history step:
    # to price those rules against the shipped ones on the same data.
    ("ssd_io_writes_completed", "counter", "_total"),
    ("ssd_io_write_time_seconds", "counter", "_total"),
    ("ssd_io_busy_seconds", "counter", "_total"),
    ("ssd:io_flush_await_seconds:mean5m", "gauge", ""),
)
RECORDED_HISTORY = 25 * 3600  # seconds of hourly recorded figures before now
RECORDED_DAYS = 3 * 3600  # seconds of hourly day figures before now


def _history_values(spec: DriveSpec, t: float) -> Tuple[float, float, float, Optional[float]]:
    st = state_at(spec, t)
    left = math.floor(st.life_left * 100) / 100
    used = 1 - left
    wear = None
    if used >= 0.05 and st.write_rate > 0:
        wear = t + st.host_written * left / used / (spec.writes_per_day / DAY)
    return left, st.host_written, st.nand_written, wear


def _io(spec: DriveSpec, host_written: float, host_read: float, cache_on: bool) -> Tuple[float, float, float, float]:
    """(writes completed, reads completed, write time s, busy s) for lifetime host bytes."""
    io_w = host_written / spec.io_size_bytes
    io_r = host_read / spec.io_size_bytes
    lat = spec.write_latency_cache_on if cache_on else spec.write_latency_cache_off
    return io_w, io_r, io_w * lat, io_w * lat + io_r * spec.read_latency


def _defects(fleet: Fleet, spec: DriveSpec, st, live: bool) -> int:
    faults = fleet.faults.get(spec.serial, {})
    return int(st.grown_bad_ratio * 1e5) + faults.get("defects", 0) + (faults.get("defect_grew", 0) if live else 0)


def write_history_file(fleet: Fleet, start: float, path: Path, step: float, raw: bool = False) -> int:
    """One 2-hour range of OpenMetrics (families grouped, as the format requires).

    The recorded hourly figures are written on the hour only, whatever the step, as the hourly
    groups record them; with ``raw`` the I/O counters are written at every step too."""
    times = [start + i * step for i in range(int(BLOCK // step)) if start + i * step < fleet.now - 3600]
    if not times:
        return 0
    rows: Dict[str, List[str]] = {name: [] for name, _, _ in HISTORY_FAMILIES}
    for instance, drives in fleet.hosts:
        for spec in drives:
            labels = _labels(instance, spec)
            nand_kind = spec.kind in ("shannon", "ata")
            for t in times:
                left, host, nand, wear = _history_values(spec, t)
                ts = f"{t:.0f}"
                rows["ssd_life_left_ratio"].append(f"ssd_life_left_ratio{{{labels}}} {left:.2f} {ts}")
                rows["ssd_host_written_bytes"].append(f"ssd_host_written_bytes_total{{{labels}}} {host:.0f} {ts}")
                if nand_kind:
                    rows["ssd_nand_written_bytes"].append(f"ssd_nand_written_bytes_total{{{labels}}} {nand:.0f} {ts}")
                if wear is not None:
                    rows["ssd_projected_wearout_timestamp_seconds"].append(
                        f'ssd_projected_wearout_timestamp_seconds{{{labels},method="observed"}} {wear:.0f} {ts}')
                st = state_at(spec, t)
                if nand_kind:
                    rows["ssd_defects"].append(
                        f'ssd_defects{{{labels},type="reallocated"}} {_defects(fleet, spec, st, False)} {ts}')
                if t < fleet.now - RECORDED_HISTORY:
                    continue
                cache = fleet.cache_on(instance, spec)
                flush_mean = spec.write_latency_cache_on / 2  # the live flush counters' mean, cache on
                w1, _, wt1, b1 = _io(spec, st.host_written, st.host_read, cache)
                if raw:
                    rows["ssd_io_writes_completed"].append(f"ssd_io_writes_completed_total{{{labels}}} {w1:.0f} {ts}")
                    rows["ssd_io_write_time_seconds"].append(
                        f"ssd_io_write_time_seconds_total{{{labels}}} {wt1:.3f} {ts}")
                    rows["ssd_io_busy_seconds"].append(f"ssd_io_busy_seconds_total{{{labels}}} {b1:.3f} {ts}")
                    if cache:
                        rows["ssd:io_flush_await_seconds:mean5m"].append(
                            f"ssd:io_flush_await_seconds:mean5m{{{labels}}} {flush_mean:.6g} {ts}")
                if t % 3600:
                    continue
                before = state_at(spec, t - 3600)
                w0, _, wt0, b0 = _io(spec, before.host_written, before.host_read, cache)
                rec = (("ssd:host_written_bytes:rate1h", (st.host_written - before.host_written) / 3600),
                       ("ssd:io_writes_completed:rate1h", (w1 - w0) / 3600),
                       ("ssd:io_write_time_seconds:rate1h", (wt1 - wt0) / 3600),
                       ("ssd:io_busy_seconds:rate1h", (b1 - b0) / 3600))
                for name, value in rec:
                    rows[name].append(f"{name}{{{labels}}} {value:.6g} {ts}")
                if cache:
                    rows["ssd:io_flush_await_seconds:median1h"].append(
                        f"ssd:io_flush_await_seconds:median1h{{{labels}}} {flush_mean:.6g} {ts}")
                if nand_kind:
                    rows["ssd:nand_written_bytes:rate1h"].append(
                        f"ssd:nand_written_bytes:rate1h{{{labels}}} {(st.nand_written - before.nand_written) / 3600:.6g} {ts}")
                    rows["ssd:defects:min1h"].append(
                        f'ssd:defects:min1h{{{labels},type="reallocated"}} {_defects(fleet, spec, before, False)} {ts}')
                if t < fleet.now - RECORDED_DAYS:
                    continue
                # The day as the hourly day groups see it: the mean (or sum) of the last 24
                # hourly rates is the growth over the day divided by a day (or by an hour).
                day = state_at(spec, t - DAY)
                w24, _, wt24, b24 = _io(spec, day.host_written, day.host_read, cache)
                rec = (("ssd:host_written_bytes:avg1d_rate1h", (st.host_written - day.host_written) / DAY),
                       ("ssd:io_busy_seconds:avg1d_rate1h", (b1 - b24) / DAY),
                       ("ssd:io_write_time_seconds:sum1d_rate1h", (wt1 - wt24) / 3600),
                       ("ssd:io_writes_completed:sum1d_rate1h", (w1 - w24) / 3600))
                for name, value in rec:
                    rows[name].append(f"{name}{{{labels}}} {value:.6g} {ts}")
                if cache:
                    rows["ssd:io_flush_await_seconds:median1d_median1h"].append(
                        f"ssd:io_flush_await_seconds:median1d_median1h{{{labels}}} "
                        f"{flush_mean:.6g} {ts}")
                if nand_kind:
                    rows["ssd:nand_written_bytes:avg1d_rate1h"].append(
                        f"ssd:nand_written_bytes:avg1d_rate1h{{{labels}}} {(st.nand_written - day.nand_written) / DAY:.6g} {ts}")
    n = 0
    with open(path, "w") as fh:
        for name, kind, _ in HISTORY_FAMILIES:
            if not rows[name]:
                continue
            fh.write(f"# TYPE {name} {kind}\n")
            fh.write("\n".join(rows[name]))
            fh.write("\n")
            n += len(rows[name])
        fh.write("# EOF\n")
    return n


def _to_block(path: Path, data: Path) -> float:
    """Seconds promtool took to turn an OpenMetrics file into TSDB blocks under ``data``; the
    file is removed after."""
    started = time.monotonic()
    subprocess.run(["promtool", "tsdb", "create-blocks-from", "openmetrics", "-q", str(path), str(data)],
                   check=True, stdout=subprocess.DEVNULL, timeout=3600)
    path.unlink()
    return time.monotonic() - started


def backfill(fleet: Fleet, days: float, step: float, workdir: Path, data: Path, raw: bool = False) -> Dict[str, float]:
    first = (int(fleet.now - days * DAY) // BLOCK) * BLOCK
    starts = list(range(first, int(fleet.now - 3600), BLOCK))
    data.mkdir(parents=True, exist_ok=True)
    files = workdir / "openmetrics"
    files.mkdir(exist_ok=True)
    samples = 0
    gen_time = 0.0
    tool_time = 0.0
    total_bytes = 0

    # generate in this process while promtool converts the previous range in another
    with ThreadPoolExecutor(max_workers=1) as pool:
        pending = None
        for i, start in enumerate(starts):
            path = files / f"{start}.om"
            t = time.monotonic()
            n = write_history_file(fleet, start, path, step, raw)
            gen_time += time.monotonic() - t
            if n == 0:
                path.unlink(missing_ok=True)
                continue
            samples += n
            total_bytes += path.stat().st_size
            if pending is not None:
                tool_time += pending.result()
            pending = pool.submit(_to_block, path, data)
            if i % 24 == 0:
                print(f"  backfill {i + 1}/{len(starts)} ranges, {samples / 1e6:.1f} M samples", flush=True)
        if pending is not None:
            tool_time += pending.result()
    return {"samples": samples, "bytes": total_bytes, "generate_seconds": gen_time,
            "promtool_seconds": tool_time, "blocks": len(starts)}


def backfill_live(fleet: Fleet, minutes: float, step: float, workdir: Path, data: Path,
                  end: Optional[float] = None) -> Dict[str, float]:
    """Every series the live targets serve, at every scrape ``step``, for the ``minutes`` before
    ``end`` (the fleet's now by default; the bench passes the moment this backfill starts, so
    that the window ends as close to the live run as it can): the raw window the rules read
    (``[1h]`` and ``offset 1h``) exists when the live run starts, as on a Prometheus that has
    scraped for hours. One OpenMetrics file per 2-hour block range, streamed render after
    render (promtool takes a family's samples apart from each other when no metadata line
    names the family)."""
    end = fleet.now if end is None else end
    times = [end - step * i for i in range(int(minutes * 60 // step), 0, -1)]
    files = workdir / "openmetrics-live"
    files.mkdir(parents=True, exist_ok=True)
    stats = {"samples": 0, "bytes": 0, "generate_seconds": 0.0, "promtool_seconds": 0.0}
    ranges: Dict[int, List[float]] = {}
    for t in times:
        ranges.setdefault(int(t // BLOCK) * BLOCK, []).append(t)

    with ThreadPoolExecutor(max_workers=1) as pool:
        pending = None
        for start, stamps in sorted(ranges.items()):
            path = files / f"{start}.om"
            started = time.monotonic()
            with open(path, "w") as fh:
                for t in stamps:
                    ts = f" {t:.0f}\n"
                    body = render_live(fleet, t).decode()
                    fh.write(body.replace("\n", ts))
                    stats["samples"] += body.count("\n")
                fh.write("# EOF\n")
            stats["generate_seconds"] += time.monotonic() - started
            stats["bytes"] += path.stat().st_size
            if pending is not None:
                stats["promtool_seconds"] += pending.result()
            pending = pool.submit(_to_block, path, data)
        if pending is not None:
            stats["promtool_seconds"] += pending.result()
    return stats


# --------------------------------------------------------------------------- live exposition

def render_live(fleet: Fleet, now: float, generation: int = 0, hosts=None) -> bytes:
    """Every host's agent series (or those of ``hosts``, a slice of ``fleet.hosts``), as the
    agents would serve them, with instance and job. ``generation`` counts renders: from the
    second on, drives with a media error this hour show it."""
    fam: Dict[str, List[str]] = {}

    def add(name: str, line: str) -> None:
        fam.setdefault(name, []).append(line)

    for instance, drives in (fleet.hosts if hosts is None else hosts):
        host_labels = f'instance="{instance}",job="{JOB}"'
        add("up", f"up{{{host_labels}}} 1")
        add("ssd_drives", f"ssd_drives{{{host_labels}}} {len(drives)}")
        add("ssd_history_healthy", f"ssd_history_healthy{{{host_labels}}} 1")
        add("ssd_exporter_build_info", f'ssd_exporter_build_info{{{host_labels},version="0.1.0",python="3.11.7"}} 1')
        collectors = fleet.collectors(instance)
        probe = instance in fleet.syncwrite_hosts
        if fleet.agent is not None:
            for name, line in fleet.agent.host_lines(host_labels, now):
                add(name, line)
        for c in collectors:
            add("ssd_collector_success", f'ssd_collector_success{{{host_labels},collector="{c}"}} 1')
            add("ssd_collector_duration_seconds", f'ssd_collector_duration_seconds{{{host_labels},collector="{c}"}} 0.2')
            add("ssd_collector_errors_total", f'ssd_collector_errors_total{{{host_labels},collector="{c}"}} 0')
            add("ssd_collector_last_run_timestamp_seconds",
                f'ssd_collector_last_run_timestamp_seconds{{{host_labels},collector="{c}"}} {now:.0f}')
        for spec in drives:
            st = state_at(spec, now)
            lb = _labels(instance, spec)
            left = math.floor(st.life_left * 100) / 100
            kind = spec.kind
            add("ssd_drive_info", f'ssd_drive_info{{{lb},kind="{kind}",model="{spec.model}",firmware="x"}} 1')
            add("ssd_capacity_bytes", f"ssd_capacity_bytes{{{lb}}} {spec.capacity_bytes}")
            add("ssd_life_left_ratio", f"ssd_life_left_ratio{{{lb}}} {left:.2f}")
            faults = fleet.faults.get(spec.serial, {})
            cache = fleet.cache_on(instance, spec)
            healthy = 0 if left <= 0 or faults.get("health_failed") else 1
            add("ssd_smart_healthy", f"ssd_smart_healthy{{{lb}}} {healthy}")
            add("ssd_host_written_bytes_total", f"ssd_host_written_bytes_total{{{lb}}} {st.host_written:.0f}")
            add("ssd_host_read_bytes_total", f"ssd_host_read_bytes_total{{{lb}}} {st.host_read:.0f}")
            add("ssd_power_on_seconds_total", f"ssd_power_on_seconds_total{{{lb}}} {st.power_on_seconds:.0f}")
            add("ssd_power_cycles_total", f"ssd_power_cycles_total{{{lb}}} {spec.power_cycles}")
            if kind != "shannon":
                add("ssd_temperature_celsius", f'ssd_temperature_celsius{{{lb},sensor="drive"}} {st.celsius:.0f}')
                add("ssd_temperature_limit_celsius", f'ssd_temperature_limit_celsius{{{lb},sensor="drive"}} 70')
            add("ssd_write_cache_enabled", f"ssd_write_cache_enabled{{{lb}}} {1 if cache else 0}")
            add("ssd_write_cache_expected_enabled", f"ssd_write_cache_expected_enabled{{{lb}}} 1")
            add("ssd_write_cache_mismatch", f"ssd_write_cache_mismatch{{{lb}}} {0 if cache else 1}")
            add("ssd_write_cache_state", f'ssd_write_cache_state{{{lb},source="sysfs_queue",state="{"enabled" if cache else "disabled"}"}} 1')
            add("ssd_data_age_seconds", f"ssd_data_age_seconds{{{lb}}} 120")
            rate = spec.writes_per_day / DAY
            add("ssd_write_rate_bytes_per_second", f"ssd_write_rate_bytes_per_second{{{lb}}} {rate:.0f}")
            if 1 - left >= 0.05 and left > 0:
                wear = now + st.host_written * left / (1 - left) / rate
                add("ssd_projected_wearout_timestamp_seconds",
                    f'ssd_projected_wearout_timestamp_seconds{{{lb},method="observed"}} {wear:.0f}')
                add("ssd_endurance_remaining_bytes", f"ssd_endurance_remaining_bytes{{{lb}}} {st.host_written * left / (1 - left):.0f}")
            io_w = st.host_written / spec.io_size_bytes
            io_r = st.host_read / spec.io_size_bytes
            lat = spec.write_latency_cache_on if cache else spec.write_latency_cache_off
            add("ssd_io_writes_completed_total", f"ssd_io_writes_completed_total{{{lb}}} {io_w:.0f}")
            add("ssd_io_reads_completed_total", f"ssd_io_reads_completed_total{{{lb}}} {io_r:.0f}")
            add("ssd_io_written_bytes_total", f"ssd_io_written_bytes_total{{{lb}}} {st.host_written:.0f}")
            add("ssd_io_read_bytes_total", f"ssd_io_read_bytes_total{{{lb}}} {st.host_read:.0f}")
            add("ssd_io_write_time_seconds_total", f"ssd_io_write_time_seconds_total{{{lb}}} {io_w * lat:.3f}")
            add("ssd_io_read_time_seconds_total", f"ssd_io_read_time_seconds_total{{{lb}}} {io_r * spec.read_latency:.3f}")
            add("ssd_io_busy_seconds_total", f"ssd_io_busy_seconds_total{{{lb}}} {io_w * lat + io_r * spec.read_latency:.3f}")
            add("ssd_io_in_flight", f"ssd_io_in_flight{{{lb}}} 0")
            # A database commits with fsync: one cache flush per eight writes, each taking half
            # a write's time while the cache is on; a drive with its cache off (the kernel then
            # sends no flush) stops flushing.
            flushes = io_w / 8 if cache else 0.0
            add("ssd_io_flushes_completed_total", f"ssd_io_flushes_completed_total{{{lb}}} {flushes:.0f}")
            add("ssd_io_flush_time_seconds_total",
                f"ssd_io_flush_time_seconds_total{{{lb}}} {flushes * spec.write_latency_cache_on / 2:.3f}")
            add("ssd_io_weighted_time_seconds_total",
                f"ssd_io_weighted_time_seconds_total{{{lb}}} {2 * (io_w * lat + io_r * spec.read_latency):.3f}")
            # What the drive holds (the paging alerts' summaries look it up): one filesystem on
            # an md array per drive, as on a database host.
            add("ssd_drive_holds_info", f'ssd_drive_holds_info{{{lb},mountpoint="/var/lib/postgresql",'
                f'stack="{Fleet.block(spec)}{"p1" if Fleet.block(spec)[-1].isdigit() else "1"}>md0",fstype="xfs"}} 1')
            if kind == "shannon":
                # As the agent reads a Shannon card (collectors/shannon): three sensors and no
                # limit of the card's own. The controller runs at the model's temperature (71 degC
                # under load in seeds/000), the board and the flash 18 degC cooler (53 degC there).
                for sensor, offset in (("controller", 0), ("board", -18), ("flash", -18)):
                    add("ssd_temperature_celsius",
                        f'ssd_temperature_celsius{{{lb},sensor="{sensor}"}} {st.celsius + offset:.0f}')
            if kind in ("shannon", "ata"):
                add("ssd_nand_written_bytes_total", f"ssd_nand_written_bytes_total{{{lb}}} {st.nand_written:.0f}")
                add("ssd_write_amplification", f"ssd_write_amplification{{{lb}}} {spec.write_amplification}")
                add("ssd_defects", f'ssd_defects{{{lb},type="reallocated"}} {_defects(fleet, spec, st, True)}')
            if kind == "shannon":
                add("ssd_bad_block_ratio", f"ssd_bad_block_ratio{{{lb}}} {st.bad_block_ratio:.6f}")
                add("ssd_spare_left_ratio", f"ssd_spare_left_ratio{{{lb}}} {0.27 * st.spare_left:.4f}")
                add("ssd_spare_threshold_ratio", f"ssd_spare_threshold_ratio{{{lb}}} 0.10")
                add("ssd_readonly", f"ssd_readonly{{{lb}}} {1 if st.access_mode == 'readonly' else 0}")
                add("ssd_write_reduced", f"ssd_write_reduced{{{lb}}} {1 if st.access_mode == 'reduced_write' else 0}")
                for rail, volts in (("internal", 1.0), ("auxiliary", 1.79)):
                    add("ssd_voltage_volts", f'ssd_voltage_volts{{{lb},rail="{rail}"}} {volts}')
            if kind == "nvme":
                add("ssd_spare_left_ratio", f"ssd_spare_left_ratio{{{lb}}} {st.spare_left:.2f}")
                add("ssd_spare_threshold_ratio", f"ssd_spare_threshold_ratio{{{lb}}} 0.10")
                media = int(st.grown_bad_ratio * 2000) + (1 if generation and faults.get("media_error_grew") else 0)
                add("ssd_media_errors_total", f"ssd_media_errors_total{{{lb}}} {media}")
                add("ssd_nvme_critical_warning", f"ssd_nvme_critical_warning{{{lb}}} 0")
            if fleet.agent is not None:
                for name, line in fleet.agent.drive_lines(spec, lb, now, st.celsius, cache):
                    add(name, line)
            if probe and spec is drives[0]:
                _syncwrite_lines(add, spec, lb, now, cache)
    out = []
    for lines in fam.values():
        out.append("\n".join(lines))
    return ("\n".join(out) + "\n").encode()


def _syncwrite_lines(add, spec: DriveSpec, lb: str, now: float, cache_on: bool) -> None:
    """The sync-write probe's series for the drive under the database directory, as the agent
    serves them at its defaults (64 writes of 8 kB every 300 s, fdatasync): one write plus
    its flush takes the drive's write latency with its cache in the state it is in."""
    lb = f'{lb},path="/var/lib/postgresql",method="fdatasync"'
    latency = spec.write_latency_cache_on if cache_on else spec.write_latency_cache_off
    bursts = math.floor((now - spec.t0) / 300)
    add("ssd_syncwrite_ops_per_second", f"ssd_syncwrite_ops_per_second{{{lb}}} {1 / latency:.6g}")
    for q, factor in (("0.5", 1.0), ("0.9", 1.5), ("0.99", 3.0), ("1", 4.0)):
        add("ssd_syncwrite_latency_seconds",
            f'ssd_syncwrite_latency_seconds{{{lb},quantile="{q}"}} {latency * factor:.6g}')
    add("ssd_syncwrite_latency_seconds_sum", f"ssd_syncwrite_latency_seconds_sum{{{lb}}} {bursts * 64 * latency:.6g}")
    add("ssd_syncwrite_latency_seconds_count", f"ssd_syncwrite_latency_seconds_count{{{lb}}} {bursts * 64}")
    add("ssd_syncwrite_written_bytes_total", f"ssd_syncwrite_written_bytes_total{{{lb}}} {bursts * 64 * 8192}")
    add("ssd_syncwrite_last_run_timestamp_seconds",
        f"ssd_syncwrite_last_run_timestamp_seconds{{{lb}}} {spec.t0 + bursts * 300:.0f}")


class LiveExposition:
    """Serves the fleet's current exposition, re-rendered in the background every 60 s, split
    into ``shards`` targets of consecutive hosts, each on its own port. Prometheus spreads its
    targets' scrapes over the interval, as it does a real fleet's thousands of agents; one
    target for the whole fleet would land every sample of the minute at one moment, and a rule
    group evaluated then would be timed with the ingestion of a whole fleet beside it."""

    def __init__(self, fleet: Fleet, shards: int = 25) -> None:
        self.fleet = fleet
        size = max(1, math.ceil(len(fleet.hosts) / max(1, shards)))
        self.slices = [fleet.hosts[i:i + size] for i in range(0, len(fleet.hosts), size)]
        now = time.time()
        self.bodies = [render_live(fleet, now, 0, part) for part in self.slices]
        self.render_seconds = 0.0
        self._stop = threading.Event()
        self.servers = [self._serve(i) for i in range(len(self.slices))]
        self.ports = [srv.server_address[1] for srv in self.servers]
        self._threads = [threading.Thread(target=srv.serve_forever, daemon=True) for srv in self.servers]
        self._threads.append(threading.Thread(target=self._refresh, daemon=True))
        for t in self._threads:
            t.start()

    @property
    def size(self) -> int:
        return sum(len(b) for b in self.bodies)

    @property
    def series(self) -> int:
        return sum(b.count(b"\n") for b in self.bodies)

    def _serve(self, index: int) -> http.server.ThreadingHTTPServer:
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
                body = outer.bodies[index]
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args) -> None:
                pass

        return http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)

    def _refresh(self) -> None:
        generation = 0
        while not self._stop.wait(60):
            t = time.monotonic()
            generation += 1
            now = time.time()
            self.bodies = [render_live(self.fleet, now, generation, part) for part in self.slices]
            self.render_seconds = time.monotonic() - t

    def stop(self) -> None:
        self._stop.set()
        for srv in self.servers:
            srv.shutdown()
            srv.server_close()


# --------------------------------------------------------------------------- Prometheus

# Recording rules whose output may be empty in a healthy fleet, each with the query that says
# when, and why. The check of every rule's output accepts such a rule's emptiness only when
# that query returns nothing.
ALLOWED_EMPTY = {
    "job:ssd_projected_wearout_timestamp_seconds:life_bottom10": (
        "job:ssd_life_left_ratio:bottom10 > 0",
        "the ten drives with the least life left are all worn out (0 %): a worn-out drive has no "
        "wear-out date ahead",
    ),
}


def recording_rules(path: Path) -> List[Tuple[str, str, Dict[str, str]]]:
    """(group, record, static labels) of every recording rule in a rule file, in order."""
    import yaml

    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    return [(group["name"], rule["record"], dict(rule.get("labels") or {}))
            for group in doc["groups"] for rule in group["rules"] if "record" in rule]


def rule_selector(record: str, labels: Dict[str, str]) -> str:
    """A selector for what one recording rule writes: its name and its static labels."""
    return "{" + ",".join([f'__name__="{record}"'] + [f'{k}="{v}"' for k, v in sorted(labels.items())]) + "}"


def api(base: str, path: str, params: Optional[Dict[str, str]] = None, timeout: float = 120) -> Dict:
    url = base + path + ("?" + urllib.parse.urlencode(params) if params else "")
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return json.load(r)


def dashboard_queries(path: Path) -> List[Tuple[str, str, bool]]:
    doc = json.loads(path.read_text())
    out = []

    def walk(panels):
        for p in panels:
            walk(p.get("panels", []))
            for t in p.get("targets", []) or []:
                if t.get("expr"):
                    out.append((p.get("title", "?"), t["expr"], bool(t.get("instant"))))

    walk(doc["panels"])
    return out


def substitute(expr: str, jobs: List[str]) -> str:
    # Grafana's "All" for a multi-value regex variable is the values joined as a regex group
    value = "(" + "|".join(jobs) + ")"
    # the site variable's "All" is its allValue, ".*" (one site's Prometheus has no site label)
    return (expr.replace("$site", ".*").replace("${site}", ".*").replace("$job", value).replace("${job}", value)
            .replace("$__rate_interval", "4m").replace("$__interval", "10m").replace("$__range", "7d"))


def time_query(base: str, expr: str, instant: bool, now: float, repeat: int) -> Tuple[float, int]:
    """(median seconds, series returned) of the query as Grafana sends it."""
    times = []
    n = 0
    for _ in range(repeat):
        t = time.perf_counter()
        if instant:
            r = api(base, "/api/v1/query", {"query": expr, "time": f"{now:.0f}"})
        else:
            # Grafana: 7 days over ~1,000 px gives a 10-minute step
            r = api(base, "/api/v1/query_range", {"query": expr, "start": f"{now - 7 * DAY:.0f}",
                                                  "end": f"{now:.0f}", "step": "600"})
        times.append(time.perf_counter() - t)
        if r.get("status") != "success":
            raise RuntimeError(f"{expr}: {r}")
        n = len(r["data"]["result"])
    return statistics.median(times), n


def time_dashboard(base: str, path: Path, jobs: List[str], now: float,
                   repeat: int = 3) -> List[Tuple[str, str, bool, float, int]]:
    """(panel, expr, instant, median seconds, series) for every query of a dashboard file."""
    out = []
    for title, expr, instant in dashboard_queries(path):
        seconds, n = time_query(base, substitute(expr, jobs), instant, now, repeat)
        out.append((title, expr, instant, seconds, n))
    return out


def per_panel(timings: List[Tuple[str, str, bool, float, int]]) -> Dict[str, Tuple[float, int]]:
    """panel title -> (summed median seconds of its queries, number of queries), in order."""
    panels: Dict[str, Tuple[float, int]] = {}
    for title, _, _, seconds, _ in timings:
        total, count = panels.get(title, (0.0, 0))
        panels[title] = (total + seconds, count + 1)
    return panels


class Tee:
    """print() to stdout and, from the moment it is opened, to a file too."""

    def __init__(self) -> None:
        self.file = None

    def open(self, path: str) -> None:
        self.file = open(path, "w", encoding="utf-8")

    def __call__(self, *args, **kwargs) -> None:
        print(*args, **kwargs)
        if self.file is not None:
            kwargs.pop("flush", None)
            print(*args, file=self.file, **kwargs)
            self.file.flush()


# --------------------------------------------------------------------------- storage cost

def _timestamped(body: bytes, t: float, ms: bool) -> Dict[str, List[str]]:
    """family -> sample lines of one render, each with its timestamp appended."""
    ts = f"{t * 1000:.0f}" if ms else f"{t:.0f}"
    out: Dict[str, List[str]] = {}
    for line in body.decode().splitlines():
        if not line or line.startswith("#"):
            continue
        name = line.split("{", 1)[0].split(" ", 1)[0]
        out.setdefault(name, []).append(f"{line} {ts}")
    return out


def storage_cost(args, out) -> None:
    """Bytes per sample and memory per series on Prometheus and VictoriaMetrics, measured:

    1. ``--storage-hosts`` hosts of the fleet rendered every 60 s over ``--storage-hours``
       (every series an agent serves, at the scrape interval docs/scaling.md recommends),
       written into a Prometheus TSDB by promtool and imported into VictoriaMetrics; the data
       directories' sizes over the sample count.
    2. One render of the whole fleet (``--hosts`` x ``--drives-per-host``) as current samples:
       scraped once by a fresh Prometheus (head series) and imported into a fresh
       VictoriaMetrics; resident memory over series, against the same binaries started empty.
    """
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="ssdfleet-storage-"))
    workdir.mkdir(parents=True, exist_ok=True)
    procs: List[subprocess.Popen] = []
    try:
        now = time.time()
        small = Fleet(args.storage_hosts, args.drives_per_host, now, seed=args.seed)
        end = (int(now) // BLOCK) * BLOCK - BLOCK
        start = end - args.storage_hours * 3600
        times = [start + 60 * i for i in range(int(args.storage_hours * 60))]
        om = workdir / "history.om"
        prom_lines = 0
        families: Dict[str, List[str]] = {}
        vm_import = workdir / "history.prom"
        with open(vm_import, "w") as vmfh:
            for t in times:
                body = render_live(small, t)
                for name, lines in _timestamped(body, t, ms=False).items():
                    families.setdefault(name, []).extend(lines)
                for lines in _timestamped(body, t, ms=True).values():
                    vmfh.write("\n".join(lines) + "\n")
        with open(om, "w") as fh:
            for lines in families.values():
                fh.write("\n".join(lines) + "\n")
                prom_lines += len(lines)
            fh.write("# EOF\n")
        families.clear()
        series_per_drive = len(render_live(small, now).splitlines()) / small.drive_count
        out(f"storage: {small.drive_count} drives on {args.storage_hosts} hosts, every series every 60 s for "
            f"{args.storage_hours:g} h: {prom_lines / 1e6:.2f} M samples ({series_per_drive:.1f} series per drive, "
            f"host-level series included)")
        pdata = workdir / "prom-data"
        subprocess.run(["promtool", "tsdb", "create-blocks-from", "openmetrics", "-q", str(om), str(pdata)],
                       check=True, stdout=subprocess.DEVNULL, timeout=1800)
        pbytes = _du(pdata)
        out(f"  Prometheus (promtool blocks): {pbytes / 1e6:.1f} MB, {pbytes / prom_lines:.2f} bytes per sample")
        vbin = shutil.which("victoria-metrics")
        if vbin:
            port = _free_port()
            vdata = workdir / "vm-data"
            vm = _start([vbin, f"-httpListenAddr=127.0.0.1:{port}", f"-storageDataPath={vdata}", "-retentionPeriod=10y",
                         "-loggerLevel=WARN"], workdir / "vm.log", f"http://127.0.0.1:{port}/health")
            procs.append(vm)
            with open(vm_import, "rb") as fh:
                req = urllib.request.Request(f"http://127.0.0.1:{port}/api/v1/import/prometheus", data=fh, method="POST")
                req.add_header("Content-Length", str(vm_import.stat().st_size))
                urllib.request.urlopen(req, timeout=600).read()
            urllib.request.urlopen(f"http://127.0.0.1:{port}/internal/force_flush", timeout=120).read()
            urllib.request.urlopen(f"http://127.0.0.1:{port}/internal/force_merge", timeout=600).read()
            time.sleep(10)  # force_merge returns before the merge ends
            vbytes = _du(vdata / "data")
            out(f"  VictoriaMetrics (after force_merge): {vbytes / 1e6:.1f} MB, {vbytes / prom_lines:.2f} bytes per sample")
            _stop(vm)
        om.unlink()
        vm_import.unlink()

        big = Fleet(args.hosts, args.drives_per_host, now, seed=args.seed)
        body = render_live(big, now)
        series = len(body.splitlines())
        out(f"memory: one render of {big.drive_count} drives, {series} series")
        # Prometheus: empty, then scraping the render once
        port = _free_port()
        live_port = _free_port()

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *a) -> None:
                pass

        server = http.server.ThreadingHTTPServer(("127.0.0.1", live_port), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        cfg = workdir / "prom.yml"
        cfg.write_text(json.dumps({"global": {"scrape_interval": "15s", "scrape_timeout": "14s"}, "scrape_configs": [
            {"job_name": "fleet", "honor_labels": True, "static_configs": [{"targets": [f"127.0.0.1:{live_port}"]}]}]}))
        prom = _start(["prometheus", f"--config.file={cfg}", f"--storage.tsdb.path={workdir / 'prom-mem'}",
                       f"--web.listen-address=127.0.0.1:{port}"], workdir / "prom-mem.log",
                      f"http://127.0.0.1:{port}/-/ready")
        procs.append(prom)
        time.sleep(2)
        empty = _rss_mib(prom.pid)
        deadline = time.monotonic() + 300
        head = 0
        while time.monotonic() < deadline:
            head = api(f"http://127.0.0.1:{port}", "/api/v1/status/tsdb")["data"]["headStats"]["numSeries"]
            if head >= series:
                break
            time.sleep(2)
        time.sleep(35)  # two more scrapes
        full = _rss_mib(prom.pid)
        out(f"  Prometheus: RSS {empty:.0f} MiB empty, {full:.0f} MiB with {head} head series: "
            f"{(full - empty) / head * 1e6 / 1024:.2f} GiB per million series (marginal)")
        _stop(prom)
        server.shutdown()
        if vbin:
            port = _free_port()
            vm = _start([vbin, f"-httpListenAddr=127.0.0.1:{port}", f"-storageDataPath={workdir / 'vm-mem'}",
                         "-loggerLevel=WARN"], workdir / "vm-mem.log", f"http://127.0.0.1:{port}/health")
            procs.append(vm)
            time.sleep(2)
            empty = _rss_mib(vm.pid)
            for k in range(3):  # three scrapes' worth, 15 s apart
                payload = b"\n".join(line + f" {(now + 15 * k) * 1000:.0f}".encode() for line in body.splitlines()) + b"\n"
                req = urllib.request.Request(f"http://127.0.0.1:{port}/api/v1/import/prometheus", data=payload, method="POST")
                urllib.request.urlopen(req, timeout=600).read()
            urllib.request.urlopen(f"http://127.0.0.1:{port}/internal/force_flush", timeout=120).read()
            # (a count() over every series would pass -search.maxUniqueTimeseries, 300k by default)
            n = int(api(f"http://127.0.0.1:{port}", "/api/v1/series/count")["data"][0])
            time.sleep(5)
            full = _rss_mib(vm.pid)
            out(f"  VictoriaMetrics: RSS {empty:.0f} MiB empty, {full:.0f} MiB with {n} series: "
                f"{(full - empty) / max(1, n) * 1e6 / 1024:.2f} GiB per million series (marginal)")
            _stop(vm)
        out(f"  load average (1 min) at the end: {os.getloadavg()[0]:.2f}")
    finally:
        for proc in procs:
            _stop(proc)
        if not args.keep and not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hosts", type=int, default=2500)
    ap.add_argument("--drives-per-host", type=int, default=8)
    ap.add_argument("--days", type=float, default=30)
    ap.add_argument("--step", type=_history_step, default=3600,
                    help="seconds between history samples (a whole divisor of 3600, so that the hourly "
                    "figures fall on a step)")
    ap.add_argument("--settle", type=float, default=420, help="seconds of live scraping before measuring")
    ap.add_argument("--targets", type=int, default=25,
                    help="scrape targets the live fleet is split over (consecutive hosts each)")
    ap.add_argument("--raw-history", action="store_true",
                    help="backfill the I/O counters too, at every --step over the last 25 hours (with e.g. "
                    "--step 60 and --rules-dir of an older version, to price rules that read raw day windows)")
    ap.add_argument("--workdir")
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    ap.add_argument("--before-dashboard", help="another fleet dashboard JSON to time alongside")
    ap.add_argument("--output", help="also write the results to this file")
    ap.add_argument("--rules-dir", help="load ssdfleet-recording.yml and ssdfleet-alerts.yml from here "
                    "(default deploy/prometheus), e.g. another version's, to time its rule groups")
    ap.add_argument("--bad-day", action="store_true",
                    help=f"a firmware bug switched the write cache off on {BAD_DAY_HOSTS:.0%}% of the hosts")  # %% for argparse
    ap.add_argument("--seed", type=int, default=17, help="random seed of the fleet model")
    ap.add_argument("--group-interval", default="1m",
                    help="evaluate every rule group at this interval during the run (default 1m: the hourly "
                    "groups are timed too, and every group competes with all the others every minute, 4 times "
                    "the shipped work of the 4-minute groups and 60 times that of the hourly ones, a harsher "
                    "setting than the shipped one); '' keeps the shipped intervals")
    ap.add_argument("--hourly-interval", default="",
                    help="with the shipped intervals, evaluate the hourly groups at this interval instead (e.g. 4m, "
                    "so that a run of 40 minutes times each of them ten times; they then run 15 times as often "
                    "as shipped)")
    ap.add_argument("--readings", type=int, default=4,
                    help="evaluations of each rule group to read (its median and maximum are printed)")
    ap.add_argument("--max-interval", default="4m",
                    help="with the shipped intervals, wait for --readings evaluations of the groups evaluated at "
                    "most this often (the hourly ones are printed with the evaluations seen)")
    ap.add_argument("--repeat", type=int, default=10, help="runs of each panel query (median)")
    ap.add_argument("--raw-minutes", type=float, default=70,
                    help="backfill every live series every 60 s for these minutes before now: the longest raw "
                         "window a shipped rule reads is an hour, plus its offset 1h (0: none, the bench before "
                         "issue 33)")
    ap.add_argument("--ranked-days", type=_days, default=7,
                    help="backfill these days of the recorded lists the fleet dashboard's week-long panels read "
                         "(the ten per job with the least life left, the busiest and the hottest, and the collector "
                         "maxima; bench/ranking_window.py, the model's churn), so those panels are timed over "
                         "their whole window (0: none, the bench before)")
    ap.add_argument("--density", choices=("agent", "model"), default="agent",
                    help="agent: every series the real agent serves (captured from it at the start); model: only "
                         "the wear model's families (the bench before issue 33)")
    ap.add_argument("--syncwrite-share", type=float, default=0.1,
                    help="share of hosts whose agent runs the sync-write probe (opt in; an assumption)")
    ap.add_argument("--storage-cost", action="store_true",
                    help="measure bytes per sample and memory per series on Prometheus and VictoriaMetrics instead")
    ap.add_argument("--storage-hosts", type=int, default=10, help="hosts rendered every 60 s for --storage-cost")
    ap.add_argument("--storage-hours", type=float, default=6, help="hours of 60 s samples for --storage-cost")
    args = ap.parse_args()
    out = Tee()
    if args.storage_cost:
        if args.output:
            out.open(args.output)
        storage_cost(args, out)
        return 0
    need_tools("prometheus", "promtool")
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="ssdfleet-fleet-"))
    workdir.mkdir(parents=True, exist_ok=True)
    data = workdir / "data"
    prom = None
    live = None
    stopping = threading.Event()
    status = 0
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    try:
        now = time.time()
        agent = None
        if args.density == "agent":
            agent = AgentSeries.capture(sorted({m for _, models in HOST_TYPES for m in models}), now)
        fleet = Fleet(args.hosts, args.drives_per_host, now, bad_day=args.bad_day, seed=args.seed, agent=agent,
                      syncwrite_share=args.syncwrite_share)
        print(f"density: {args.density}" + (
            f" (the agent's own series per drive, by model: {agent.agent_per_model}; per agent "
            f"{agent.agent_per_host}, {len(agent.collectors)} collectors)" if agent else ""), flush=True)
        print(f"fleet: {fleet.drive_count} drives on {args.hosts} hosts; history {args.days:g} days "
              f"at {args.step:g} s; {'BAD DAY' if args.bad_day else 'a normal day'}", flush=True)
        print(f"fleet model: {fleet.describe()}", flush=True)
        if args.ranked_days > 0:
            # First: it takes minutes at 20,000 drives, and the raw window below must end as close
            # to the live run's start as it can (the hourly rules' offset 1h reads its last minutes).
            from bench import ranking_window

            t = time.monotonic()
            end = int(fleet.now) - 60  # the rules record the lists live from the head on
            week = ranking_window.rank_week(fleet, end, args.ranked_days, ranking_window.rule_intervals(), "model",
                                            seed=args.seed)
            ranked = ranking_window.write_blocks(week, workdir, data)
            print(f"recorded lists: {args.ranked_days:g} days of " + ", ".join(
                f"{name} ({len(series)} series)" for name, series in week.items())
                + f"; {ranked} samples, wall {time.monotonic() - t:.0f} s", flush=True)

        t = time.monotonic()
        stats = backfill(fleet, args.days, args.step, workdir, data, args.raw_history)
        stats["wall_seconds"] = time.monotonic() - t
        print(f"backfill: {stats['samples'] / 1e6:.1f} M samples, {stats['bytes'] / 1e9:.2f} GB OpenMetrics, "
              f"{stats['blocks']} blocks, generate {stats['generate_seconds']:.0f} s, promtool "
              f"{stats['promtool_seconds']:.0f} s, wall {stats['wall_seconds']:.0f} s", flush=True)

        if args.raw_minutes > 0:
            t = time.monotonic()
            raw = backfill_live(fleet, args.raw_minutes, 60, workdir, data, end=time.time())
            print(f"raw window: every live series every 60 s for the {args.raw_minutes:g} minutes before now, "
                  f"{raw['samples'] / 1e6:.1f} M samples, {raw['bytes'] / 1e9:.2f} GB OpenMetrics, generate "
                  f"{raw['generate_seconds']:.0f} s, promtool {raw['promtool_seconds']:.0f} s, wall "
                  f"{time.monotonic() - t:.0f} s", flush=True)

        t = time.monotonic()
        live = LiveExposition(fleet, args.targets)
        print(f"live exposition: {live.series} series on {len(live.ports)} targets, {live.size / 1e6:.1f} MB, rendered in "
              f"{time.monotonic() - t:.1f} s", flush=True)

        import yaml

        for name in ("ssdfleet-recording.yml", "ssdfleet-alerts.yml"):
            src = Path(args.rules_dir or ROOT / "deploy" / "prometheus") / name
            if src.exists():
                doc = yaml.safe_load(src.read_text(encoding="utf-8"))
                for group in doc["groups"]:
                    if args.group_interval:
                        group["interval"] = args.group_interval
                    elif args.hourly_interval and group.get("interval") == "1h":
                        group["interval"] = args.hourly_interval
                (workdir / name).write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
        rules = [n for n in ("ssdfleet-recording.yml", "ssdfleet-alerts.yml") if (workdir / n).exists()]
        config = {
            "global": {"scrape_interval": "60s", "scrape_timeout": "55s", "evaluation_interval": "1m"},
            "rule_files": rules,
            "scrape_configs": [{"job_name": "fleet-sim", "honor_labels": True,
                                "static_configs": [{"targets": [f"127.0.0.1:{p}" for p in live.ports]}]}],
        }
        (workdir / "prometheus.yml").write_text(json.dumps(config, indent=1))
        port = _free_port()
        base = f"http://127.0.0.1:{port}"
        log = open(workdir / "prometheus.log", "wb")
        prom = subprocess.Popen(
            ["prometheus", f"--config.file={workdir / 'prometheus.yml'}", f"--storage.tsdb.path={data}",
             f"--web.listen-address=127.0.0.1:{port}", "--storage.tsdb.retention.time=60d"],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline and not stopping.is_set():
            if prom.poll() is not None:
                raise RuntimeError((workdir / "prometheus.log").read_text()[-3000:])
            try:
                if urllib.request.urlopen(base + "/-/ready", timeout=5).status == 200:
                    break
            except OSError:
                pass
            time.sleep(2)
        print(f"prometheus ready on {base}; scraping and evaluating for {args.settle:.0f} s", flush=True)
        if args.output:
            out.open(args.output)
            out(f"fleet: {fleet.drive_count} drives on {args.hosts} hosts; history {args.days:g} days at "
                f"{args.step:g} s{' (I/O counters too, last 25 h)' if args.raw_history else ''}; every live series every 60 s for the "
                f"{args.raw_minutes:g} min before the live run; density {args.density}; live scrape every 60 s for {args.settle:.0f} s before measuring; rules from "
                f"{args.rules_dir or 'deploy/prometheus'}; {'BAD DAY' if args.bad_day else 'a normal day'}\n")
            out(f"fleet model: {fleet.describe()}\n")
        stopping.wait(args.settle)

        head = api(base, "/api/v1/status/tsdb")["data"]["headStats"]
        out(f"head: {head['numSeries']} series", flush=True)
        # One reading per evaluation: a group's evaluationTime is kept once per lastEvaluation,
        # so that a group evaluated every 4 minutes and read every 20 s counts each of its
        # evaluations once. Readings go on until every group evaluated at most every
        # --max-interval has --readings evaluations (or the time that takes has passed).
        groups: Dict[str, Dict[str, float]] = {}
        rule_times: Dict[Tuple[str, int, str], Dict[str, float]] = {}  # (group, position, name)
        intervals: Dict[str, float] = {}
        errors = set()
        loads = []
        firing: Dict[str, Tuple[int, int]] = {}
        started = time.monotonic()
        while not stopping.is_set():
            loads.append(os.getloadavg()[0])
            for g in api(base, "/api/v1/rules")["data"]["groups"]:
                intervals[g["name"]] = float(g.get("interval", 60))
                if not g.get("lastEvaluation", "").startswith("0001"):
                    groups.setdefault(g["name"], {})[g["lastEvaluation"]] = g["evaluationTime"]
                for position, r in enumerate(g["rules"]):
                    if not r.get("lastEvaluation", "").startswith("0001"):
                        rule_times.setdefault((g["name"], position, r.get("name", "?")), {})[
                            r.get("lastEvaluation", "")] = r.get("evaluationTime", 0)
                    if r.get("lastError"):
                        errors.add(f"{r.get('name')}: {r['lastError']}")
                    if r.get("type") == "alerting":
                        states = [a.get("state") for a in r.get("alerts", [])]
                        firing[r["name"]] = (states.count("firing"), states.count("pending"))
            timed = [n for n, every in intervals.items() if every <= _seconds(args.max_interval)]
            longest = max([intervals[n] for n in timed] or [60.0])
            if all(len(groups.get(n, {})) >= args.readings for n in timed):
                break
            if time.monotonic() - started > longest * (args.readings + 1):
                break
            if stopping.wait(20):
                break
        how = ("every " + args.group_interval if args.group_interval else "at their shipped intervals"
               + (f", the hourly ones every {args.hourly_interval}" if args.hourly_interval else ""))
        out(f"\nrule groups evaluated {how}; readings over "
            f"{(time.monotonic() - started) / 60:.0f} min")
        out(f"\nload average (1 min) during the readings: {', '.join(f'{v:.2f}' for v in loads)}")
        out("\n| rule group | interval | evaluations | evaluation time (median) | max |")
        out("|---|---:|---:|---:|---:|")
        for name, by_time in sorted(groups.items()):
            values = list(by_time.values())
            out(f"| {name} | {intervals.get(name, 0):.0f} s | {len(values)} | {statistics.median(values) * 1e3:.0f} ms | "
                f"{max(values) * 1e3:.0f} ms |")
        slow = sorted(((k, list(v.values())) for k, v in rule_times.items() if v),
                      key=lambda kv: -statistics.median(kv[1]))[:8]
        out("\nslowest rules: " + "; ".join(f"{k[2]} {statistics.median(v) * 1e3:.0f} ms" for k, v in slow))
        if errors:
            out("rule errors: " + "; ".join(sorted(errors)))
        empty: List[str] = []
        excused: List[str] = []
        for group_name, record, labels in recording_rules(Path(args.rules_dir or ROOT / "deploy" / "prometheus")
                                                          / "ssdfleet-recording.yml"):
            result = api(base, "/api/v1/query", {"query": f"count({rule_selector(record, labels)})"})["data"]["result"]
            if not result:
                allowed = ALLOWED_EMPTY.get(record)
                if allowed and not api(base, "/api/v1/query", {"query": allowed[0]})["data"]["result"]:
                    excused.append(f"{rule_selector(record, labels)} ({allowed[1]})")
                else:
                    empty.append(f"{group_name}: {rule_selector(record, labels)}")
        out(f"recording rules that returned nothing: {len(empty)}" + (": " + "; ".join(empty) if empty else ""))
        if excused:
            out("empty as this fleet's data allows: " + "; ".join(excused))
        status = 1 if empty else 0
        out("alert instances (firing/pending; a for: longer than the run keeps them pending): "
            + (", ".join(f"{k} {f}/{p}" for k, (f, p) in sorted(firing.items()) if f or p) or "none"))

        jobs = [v for v in api(base, "/api/v1/label/job/values")["data"] if v.startswith("ssdfleet")]
        qnow = time.time()
        out(f"\npanel queries of the fleet dashboard, median of {args.repeat} runs each; load average (1 min) "
            f"before: {os.getloadavg()[0]:.2f}")
        out("\n| panel | query | as sent | median | series |")
        out("|---|---|---|---:|---:|")
        totals = []
        after = time_dashboard(base, ROOT / "dashboards" / "json" / "ssdfleet-fleet.json", jobs, qnow, args.repeat)
        for title, expr, instant, seconds, n in after:
            totals.append(seconds)
            short = expr if len(expr) <= 70 else expr[:67] + "..."
            out(f"| {title} | `{short}` | {'instant' if instant else 'range 7d/10m'} | "
                f"{seconds * 1e3:.0f} ms | {n} |", flush=True)
        out(f"\ndashboard total (sequential): {sum(totals):.2f} s over {len(totals)} queries; load average (1 min) "
            f"after: {os.getloadavg()[0]:.2f}")
        out("\n| panel | sum of its queries' medians |\n|---|---:|")
        for title, (seconds, count) in per_panel(after).items():
            out(f"| {title} ({count} queries) | {seconds * 1e3:.0f} ms |")
        if args.before_dashboard:
            # Interleaved, query for query (before, after, before, after, ...), so that load
            # from anything else on the machine falls on both sides alike.
            old_queries = dashboard_queries(Path(args.before_dashboard))
            new_queries = dashboard_queries(ROOT / "dashboards" / "json" / "ssdfleet-fleet.json")
            samples: Dict[Tuple[str, int], List[float]] = {}
            for _ in range(5):
                for side, queries in (("before", old_queries), ("after", new_queries)):
                    for index, (_title, expr, instant) in enumerate(queries):
                        seconds, _ = time_query(base, substitute(expr, jobs), instant, qnow, 1)
                        samples.setdefault((side, index), []).append(seconds)
            before = [(title, expr, instant, statistics.median(samples[("before", i)]), 0)
                      for i, (title, expr, instant) in enumerate(old_queries)]
            after = [(title, expr, instant, statistics.median(samples[("after", i)]), 0)
                     for i, (title, expr, instant) in enumerate(new_queries)]
            old_panels, new_panels = per_panel(before), per_panel(after)
            out(f"\npanel query time, {args.before_dashboard} (before) against the current dashboard "
                "(after), same Prometheus, timed in turns (sum over a panel's queries of the median of 5):\n")
            out("| panel | before | queries | after | queries |")
            out("|---|---:|---:|---:|---:|")
            for title in dict.fromkeys([*old_panels, *new_panels]):
                b, nb = old_panels.get(title, (float("nan"), 0))
                a, na = new_panels.get(title, (float("nan"), 0))
                out(f"| {title} | {b * 1e3:.1f} ms | {nb} | {a * 1e3:.1f} ms | {na} |")
            out(f"| **whole dashboard** | {sum(s for *_, s, _ in before):.2f} s | {len(before)} | "
                f"{sum(s for *_, s, _ in after):.2f} s | {len(after)} |")
        out("\nevery rule, in its group's order (a rule's time is its part of the group's evaluation):\n")
        out("| rule group | # | rule | evaluations | median | max |")
        out("|---|---:|---|---:|---:|---:|")
        for (group_name, position, rule_name), by_time in sorted(rule_times.items()):
            values = list(by_time.values())
            out(f"| {group_name} | {position + 1} | {rule_name} | {len(values)} | "
                f"{statistics.median(values) * 1e3:.1f} ms | {max(values) * 1e3:.1f} ms |")
        rss = _rss_mib(prom.pid)
        out(f"prometheus RSS {rss:.0f} MiB with {head['numSeries']} head series "
            f"({rss / max(1, head['numSeries']) * 1e6 / 1024:.1f} GiB per million series); data dir "
            f"{_du(data) / 1e9:.3f} GB for {stats['samples'] / 1e6:.2f} M backfilled samples "
            f"({_du(data) / max(1, stats['samples']):.2f} bytes per sample, samples {args.step:g} s apart); live exposition "
            f"{live.series} series ({live.series / fleet.drive_count:.1f} per drive), "
            f"{live.size / fleet.drive_count:.0f} bytes per drive per scrape; live render {live.render_seconds:.1f} s")
        sample = fleet.hosts[0][1][0]
        out(f"(model check: {sample.serial} wears out at {wearout_time(sample)})")
    finally:
        _stop(prom)
        if live is not None:
            live.stop()
        if not args.keep and not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)
    return status


def _history_step(text: str) -> int:
    """--step: whole seconds dividing an hour (the hourly figures are written on the hour)."""
    try:
        step = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of seconds") from None
    if step <= 0 or 3600 % step:
        raise argparse.ArgumentTypeError(f"{step} s does not divide an hour (e.g. 15, 60, 300, 3600)")
    return step


def _days(text: str) -> float:
    """A finite number of days, 0 or more (an infinite one would rank forever)."""
    value = float(text)
    if not (value >= 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"must be a number of days, 0 or more, not {text}")
    return value


def _seconds(duration: str) -> float:
    units = {"s": 1, "m": 60, "h": 3600}
    return float(duration[:-1]) * units[duration[-1]]


def _rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return -1.0


def _du(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


if __name__ == "__main__":
    sys.exit(main())
