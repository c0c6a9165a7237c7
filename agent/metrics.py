"""Prometheus exposition of the current snapshot.

:func:`drive_families` and :func:`agent_families` build metric families from the immutable
snapshot; they do no I/O, so a drive that left the snapshot simply stops appearing.
:class:`Exposition` renders them once per snapshot for /metrics; :class:`SnapshotCollector`
wraps them in a registry for tests. The values are cached by design (SMART is polled every
few minutes): ``ssd_data_age_seconds`` says how old they are.
"""

from __future__ import annotations

import platform
import struct
import threading
import time
import zlib
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple

from agent import __version__, durability, health, host_views
from agent.exposition_render import DriveText
from agent.text import printable
from collectors.families import CounterMetricFamily, GaugeMetricFamily, Registry, header_text
from collectors.families import text as text_format
from collectors.model import CACHE_DISABLED, CACHE_ENABLED, AgentStatus, Drive, Snapshot

DRIVE_LABELS = ["device", "serial"]



def _g(name: str, doc: str, extra: Iterable[str] = ()) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, doc, labels=DRIVE_LABELS + list(extra))


def _c(name: str, doc: str, extra: Iterable[str] = ()) -> CounterMetricFamily:
    return CounterMetricFamily(name, doc, labels=DRIVE_LABELS + list(extra))


def _bool(v: Optional[bool]) -> Optional[float]:
    return None if v is None else (1.0 if v else 0.0)


class SnapshotCollector:
    def __init__(self, get_snapshot: Callable[[], Snapshot], clock: Callable[[], float] = time.time):
        self._get = get_snapshot
        self._clock = clock

    def collect(self):
        snap = self._get()
        yield from drive_families(snap.drives)
        yield data_age_family(snap.drives, self._clock())
        yield from agent_families(snap)


class Exposition:
    """The /metrics body, rendered once per snapshot, never while a scrape waits.

    Formatting a few thousand samples costs tens of milliseconds, and the
    snapshot changes only when a source finishes (every 15 s at the fastest). So everything
    but ``ssd_data_age_seconds`` is rendered once per snapshot, ahead of the scrape, by the
    poller's listener thread (:meth:`feed`), plain and gzipped; a scrape adds only the ages,
    which depend on the time of the scrape (issue 32).

    The render runs outside the lock a scrape takes: the lock covers only the swap of the
    finished bytes, so a scrape during a render is answered at once from the previous
    snapshot's render. Without a listener (a test, a bench, the first scrape before any
    snapshot was fed) a scrape renders what it finds.
    """

    def __init__(self, get_snapshot: Callable[[], Snapshot], clock: Callable[[], float] = time.time):
        self._get = get_snapshot
        self._clock = clock
        self._lock = threading.Lock()  # the published render: held for a swap or a read only
        self._render_lock = threading.Lock()  # one render at a time
        self._fed = False  # a listener hands every snapshot to feed(): scrapes never render
        self._snapshot: Optional[Snapshot] = None
        self._static = b""
        self._gz_head = _GZIP_HEADER  # the static text as the start of a gzip stream (sync-flushed)
        self._gz_state: Any = (0, 0)  # the text's CRC-32 and length, for each scrape's trailer
        self._ages: Tuple[str, List[float]] = ("", [])  # the ages' text as a template, the times it takes
        self.renders_total = 0  # full renders: one per snapshot that was prepared or scraped
        # The drive families, kept per drive and section between snapshots (issue 32).
        self.drive_text = DriveText(lambda: DRIVE_SECTIONS, _DriveFamilies, _label_ids, SECTION_INPUTS)

    def feed(self, snap: Snapshot) -> None:
        """The poller's listener: render ``snap`` now, in the poller's thread."""
        self._fed = True
        self.prepare(snap)

    def prepare(self, snap: Snapshot) -> None:
        with self._render_lock:
            with self._lock:
                if self._snapshot is snap:
                    return
            # One full render's bytes: the drive families (only changed sections redone), then
            # the agent's own.
            drives = self.drive_text.render(snap.drives, _info_header()).encode("utf-8")
            static = drives + text_format(agent_families(snap))
            # Level 6, once per snapshot, off the event loop (2.79 MB at 1,024 drives is about
            # 217 KB): a gzip header and raw deflate blocks, sync-flushed (ended on a byte
            # boundary, no final block), so that each scrape appends its own blocks and trailer.
            deflate = zlib.compressobj(6, zlib.DEFLATED, -15)
            gz_head = _GZIP_HEADER + deflate.compress(static) + deflate.flush(zlib.Z_SYNC_FLUSH)
            gz_state = (zlib.crc32(static), len(static))
            # The ages as one %-template and the times it takes, in order: a scrape fills it in
            # one formatting call (a third less than a line each).
            timed = _health_times(snap.drives)
            template = (_AGE_HEADER if timed else "") + "".join(
                f'ssd_data_age_seconds{{device="{_escape(d.device)}",serial="{_escape(d.serial)}"}} '
                .replace("%", "%%") + "%.3f\n" for d, _t in timed)
            ages = (template, [t for _d, t in timed])
            with self._lock:
                self._static, self._ages, self._snapshot = static, ages, snap
                self._gz_head, self._gz_state = gz_head, gz_state
                self.renders_total += 1

    def render(self) -> bytes:
        static, ages = self.render_parts()
        return static + ages

    def _current(self) -> Tuple[bytes, bytes, Any, Tuple[str, List[float]]]:
        with self._lock:
            rendered = self._snapshot
        if rendered is None or (not self._fed and rendered is not self._get()):
            self.prepare(self._get())
        with self._lock:
            return self._static, self._gz_head, self._gz_state, self._ages

    def _ages_text(self, ages: Tuple[str, List[float]]) -> bytes:
        template, times = ages
        now = self._clock()
        # Milliseconds are all an age needs ("%.3f" is a third of repr's cost).
        return (template % tuple([now - t if now > t else 0.0 for t in times])).encode()

    def render_parts(self) -> Tuple[bytes, bytes]:
        """The cached text (one object shared by every scrape of a snapshot, so a response
        may send it without a copy of its own) and the data ages of this scrape."""
        static, _head, _state, ages = self._current()
        return static, self._ages_text(ages)

    def gzip_parts(self, extra: bytes = b"") -> Tuple[bytes, bytes]:
        """The same as one gzip stream in two parts: the cached compressed text, and the end of
        the stream: this scrape's ages and ``extra`` as deflate blocks of their own (a fresh
        compressor: they need no back-reference into the text), the last one final, then the
        trailer with the CRC-32 and length of the whole text. One gzip member, as a client that
        reads only the first member needs; 0.02 ms at 64 drives where finishing a copy of the
        text's compressor state cost 0.17 ms (issue 32)."""
        _static, head, state, ages = self._current()
        crc, size = state
        tail = self._ages_text(ages) + extra
        deflate = zlib.compressobj(1, zlib.DEFLATED, -15)
        blocks = deflate.compress(tail) + deflate.flush()
        trailer = struct.pack("<II", zlib.crc32(tail, crc), (size + len(tail)) & 0xFFFFFFFF)
        return head, blocks + trailer


# gzip's member header (RFC 1952): deflate, no flags, no time, no extra flags, OS Unix.
_GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03"

_AGE_HELP = "Age of the drive's health data at scrape time (values are cached)."
_AGE_HEADER = f"# HELP ssd_data_age_seconds {_AGE_HELP}\n# TYPE ssd_data_age_seconds gauge\n"


def _escape(value: str) -> str:
    # Label values in the text format: backslash, double quote and newline are escaped, after
    # control characters from the device are made visible (the same as drive_families does).
    return printable(value).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _health_times(drives: Iterable[Drive]) -> List[Tuple[Drive, float]]:
    """Each drive with the time of its newest health reading: a source whose role is health
    (smartctl, shannon-status, fio-status, a plug-in), never a supplement (the NVMe vendor log)."""
    out = []
    for d in drives:
        t = health.health_data_time(d.last_poll)
        if t is not None:
            out.append((d, t))
    return out


def data_age_family(drives: Iterable[Drive], now: float) -> GaugeMetricFamily:
    age = _g("ssd_data_age_seconds", _AGE_HELP)
    for d, t in _health_times(drives):
        age.add_metric([printable(d.device), printable(d.serial)], max(0.0, now - t))
    return age


class _DriveFamilies:
    """The per-drive families as they fill: ``ssd_drive_info``, then every gauge and every
    counter in the order a drive first gives them a value. A family with no value on any
    drive is not exported (absent is not zero)."""

    def __init__(self) -> None:
        self.info = _g(
            "ssd_drive_info",
            "Drive identity; join on device and serial for model, firmware and kind.",
            ["kind", "model", "model_family", "firmware", "vendor", "driver_version", "device_type",
             "is_ssd", "life_left_source", "host_written_source", "nand_written_source"],
        )
        self.gauges: Dict[str, GaugeMetricFamily] = {}
        self.counters: Dict[str, CounterMetricFamily] = {}

    def gauge(self, name: str, doc: str, labels, value, extra=()) -> None:
        if value is None:
            return
        fam = self.gauges.get(name)
        if fam is None:
            fam = self.gauges[name] = _g(name, doc, extra)
        fam.add_metric(list(labels[:2]) + [printable(v) for v in labels[2:]], float(value))  # ids: printable already

    def counter(self, name: str, doc: str, labels, value, extra=()) -> None:
        if value is None:
            return
        fam = self.counters.get(name)
        if fam is None:
            fam = self.counters[name] = _c(name, doc, extra)
        fam.add_metric(list(labels[:2]) + [printable(v) for v in labels[2:]], float(value))  # ids: printable already

    def families(self) -> List:
        return [self.info] + list(self.gauges.values()) + list(self.counters.values())


def _identity(f: _DriveFamilies, d: Drive, ids: List[str]) -> None:
    """Who the drive is, whether a health tool ever read it, which figures were withheld."""
    r = d.reading
    src = r.sources
    f.info.add_metric(
        ids + [printable(v) for v in [
            r.kind, r.model or "", r.model_family or "", r.firmware or "", r.vendor or "",
            r.driver_version or "", r.device_type or "",
            "" if r.is_ssd is None else str(r.is_ssd).lower(),
            src.get("life_left_ratio", ""), src.get("host_written_bytes", ""),
            src.get("nand_written_bytes", ""),
        ]],
        1.0,
    )
    # 1: no health source (smartctl, shannon-status, ...) has answered for this drive: its health
    # is unknown, which the status page and `ssdfleet status` show as a warning.
    f.gauge("ssd_health_data_missing", "No health tool has ever read this drive (1): its health is unknown.", ids,
            0.0 if health.health_data_time(d.last_poll) is not None else 1.0)
    f.gauge("ssd_capacity_bytes", "User capacity of the drive in bytes.", ids, r.capacity_bytes)
    # Issue 26: absent unless another drive reports the same serial (then the serial label
    # is SERIAL@WWN or SERIAL@DEVICE for both, and the problems list says which drives).
    f.gauge("ssd_drive_serial_shared", "1: another drive on this host reports the same serial; the agent keeps "
            "them apart by WWN or device (serial label SERIAL@WHERE).", ids, 1 if "serial_shared" in r.extra else None)
    # Every withheld figure, not only the evidence fields: a capacity or a defect counter
    # outside physics is withheld too, and the fault must show in a metric (issue 26).
    for name in sorted(k[: -len("_withheld")] for k in r.extra if k.endswith("_withheld")):
        f.gauge("ssd_value_withheld",
                "1 for each figure the drive's sources could not establish (the reason is in /api/v1/drives).",
                ids + [name], 1, ["field"])


def _health(f: _DriveFamilies, d: Drive, ids: List[str]) -> None:
    """Life, spare, defects, errors, modes, writes, temperatures, voltages, power."""
    r = d.reading
    f.gauge("ssd_life_left_ratio", "Estimated life left, 0 to 1 (1 = new); see life_left_source on ssd_drive_info.", ids, r.life_left_ratio)
    # Issue 29: where a drive gives two or more independent life figures, how far apart they
    # are (0..1); past collectors.model.LIFE_LEFT_SPREAD_MARGIN the page says they disagree.
    f.gauge("ssd_life_left_spread_ratio", "Spread between the drive's independent life-left figures, 0 to 1 "
            "(absent with fewer than two).", ids, r.life_left_spread_ratio)
    f.gauge("ssd_spare_left_ratio", "Spare blocks or overprovision left, 0 to 1.", ids, r.spare_left_ratio)
    f.gauge("ssd_spare_threshold_ratio", "The drive's own warning threshold for spare, 0 to 1.", ids, r.spare_threshold_ratio)
    f.gauge("ssd_bad_block_ratio", "Bad blocks as a fraction of all blocks.", ids, r.bad_block_ratio)
    for kind, count in sorted(r.defects.items()):
        f.gauge("ssd_defects", "Defect counts as the drive reports them, by type.", ids + [kind], count, ["type"])
    f.counter("ssd_media_errors", "Media and data integrity errors (NVMe) or uncorrected errors (SCSI).", ids, r.media_errors)
    # One series with the byte as the drive reports it (0: no warning); the bits are
    # decoded in /api/v1/drives, the status page and the runbook (health.NVME_WARNING_BITS).
    f.gauge("ssd_nvme_critical_warning", "NVMe critical warning byte (SMART / Health log byte 0; 0 = none).",
            ids, r.critical_warning)
    f.gauge("ssd_smart_healthy", "The drive's own overall health verdict passed (1) or failed (0): SMART self-assessment, or the vendor tool's (Shannon media_status/seu_flag, Fusion-io reserves).", ids, _bool(r.smart_healthy))
    f.gauge("ssd_readonly", "The drive has put itself in read-only mode.", ids, _bool(health.is_readonly(r)))
    # only drives with a reduced-write mode (Shannon) report one
    f.gauge("ssd_write_reduced", "The drive throttles writes to protect itself.", ids, _bool(health.is_write_reduced(r)))
    f.gauge("ssd_write_amplification", "NAND bytes written per host byte written, lifetime.", ids, r.write_amplification)
    f.counter("ssd_host_written_bytes", "Bytes written by the host.", ids, r.host_written_bytes)
    f.counter("ssd_host_read_bytes", "Bytes read by the host.", ids, r.host_read_bytes)
    f.counter("ssd_nand_written_bytes", "Bytes written to flash, host writes plus garbage collection.", ids, r.nand_written_bytes)
    for t in r.temperatures:
        f.gauge("ssd_temperature_celsius", "Current temperature by sensor.", ids + [t.sensor], t.celsius, ["sensor"])
        f.gauge("ssd_temperature_limit_celsius", "The drive's own warning or trip temperature.", ids + [t.sensor], t.limit_celsius, ["sensor"])
    for v in r.voltages:
        f.gauge("ssd_voltage_volts", "Supply voltage by rail.", ids + [v.rail], v.volts, ["rail"])
    f.counter("ssd_power_on_seconds", "Power-on time.", ids, r.power_on_seconds)
    f.counter("ssd_power_cycles", "Power cycles.", ids, r.power_cycles)
    if r.power_state is not None:
        f.gauge("ssd_standby", "The drive was asleep at the last poll and was not woken.", ids, _bool(r.power_state == "standby"))


def _write_cache(f: _DriveFamilies, d: Drive, ids: List[str]) -> None:
    """What each source says of the write cache, the effective state and the expectation;
    flush integrity and power-loss protection (issue 15, agent/durability.py)."""
    for s in d.write_cache:
        if s.state in (CACHE_ENABLED, CACHE_DISABLED, "not_supported"):
            f.gauge("ssd_write_cache_state", "Write cache state as each source reports it.",
                    ids + [s.source, s.state], 1, ["source", "state"])
    effective = health.known_write_cache(d.write_cache)
    if effective is not None:
        f.gauge("ssd_write_cache_enabled", "Effective volatile write cache state (1 enabled).", ids,
                1 if effective == CACHE_ENABLED else 0)
        if d.write_cache_expected is not None:
            f.gauge("ssd_write_cache_expected_enabled", "Expected write cache state from the configuration.", ids,
                    1 if d.write_cache_expected == CACHE_ENABLED else 0)
            wrong = health.write_cache_mismatch(effective, d.write_cache_expected)
            f.gauge("ssd_write_cache_mismatch", "1 when the write cache state differs from the expected one.", ids,
                    None if wrong is None else int(wrong))
    ignored = durability.flush_ignored(d.write_cache)
    f.gauge("ssd_write_cache_flush_ignored",
            "1 when the kernel treats the drive as write through (sends no FLUSH) while the drive reports its volatile cache on.",
            ids, None if ignored is None else int(ignored))
    f.gauge("ssd_power_loss_protection",
            "1: the drive has power-loss protection, 0: it has none (configuration or cited model table); absent when unknown.",
            ids, _bool(d.power_loss_protection))


def _holds(f: _DriveFamilies, d: Drive, ids: List[str]) -> None:
    """What the drive holds (issue 15, the holders source): one series per mount or pool, at
    most collectors.holders.MAX_HOLDINGS_PER_DRIVE; alert summaries name the mount from it."""
    for labels in dict.fromkeys((h.mountpoint, h.fstype, ">".join(((h.partition,) if h.partition else ()) + h.stack))
                                for h in d.holds):
        f.gauge("ssd_drive_holds_info", "What the drive holds: a mount point (empty when not mounted), its filesystem "
                "type and the stack from the drive up (partition>md0>crypt:name>lvm:vg/lv>zfs:pool).",
                ids + list(labels), 1, ["mountpoint", "fstype", "stack"])


def _endurance(f: _DriveFamilies, d: Drive, ids: List[str]) -> None:
    """The rating, and the best projection's remaining bytes, write rate and date."""
    f.gauge("ssd_endurance_rated_bytes", "Rated endurance in host bytes (model table or configuration).", ids, d.rated_endurance_bytes)
    best = d.best_projection
    if best is not None:
        f.gauge("ssd_endurance_remaining_bytes", "Host bytes the drive can still take, by the best projection.", ids, best.endurance_remaining_bytes)
        f.gauge("ssd_write_rate_bytes_per_second", "Host write rate smoothed over days from the agent's history.", ids, best.write_rate_bytes_per_second)
        f.gauge("ssd_projected_wearout_timestamp_seconds", "When life left is projected to reach 0, by the best available method.",
                ids + [best.method], best.wearout_timestamp, ["method"])
        return
    for p in d.projections:
        if p.write_rate_bytes_per_second is not None:
            f.gauge("ssd_write_rate_bytes_per_second", "Host write rate smoothed over days from the agent's history.", ids, p.write_rate_bytes_per_second)
            break


def _io(f: _DriveFamilies, d: Drive, ids: List[str]) -> None:
    """iostat-style counters (diskstats)."""
    io = d.io
    if io is None:
        return
    f.counter("ssd_io_reads_completed", "Reads completed.", ids, io.reads_completed)
    f.counter("ssd_io_writes_completed", "Writes completed.", ids, io.writes_completed)
    f.counter("ssd_io_read_bytes", "Bytes read (diskstats).", ids, io.read_bytes)
    f.counter("ssd_io_written_bytes", "Bytes written (diskstats).", ids, io.written_bytes)
    f.counter("ssd_io_read_time_seconds", "Time spent on reads.", ids, io.read_time_seconds)
    f.counter("ssd_io_write_time_seconds", "Time spent on writes.", ids, io.write_time_seconds)
    f.counter("ssd_io_busy_seconds", "Time with I/O in flight (utilisation).", ids, io.io_time_seconds)
    f.gauge("ssd_io_in_flight", "Requests in flight.", ids, io.in_flight)
    # Merges, queue time, discards and flushes (issue 15). Flush counters exist from
    # Linux 5.5 and discard counters from 4.18: on older kernels they are absent. Six
    # series, not nine: discarded bytes and discard time are parsed but not exported,
    # since no rule reads them and every series is multiplied by the fleet.
    f.counter("ssd_io_reads_merged", "Adjacent reads merged into one request.", ids, io.reads_merged)
    f.counter("ssd_io_writes_merged", "Adjacent writes merged into one request.", ids, io.writes_merged)
    f.counter("ssd_io_weighted_time_seconds", "Request time weighted by requests in flight; its rate is the average queue depth.",
              ids, io.weighted_io_time_seconds)
    f.counter("ssd_io_discards_completed", "Discard (TRIM) requests completed.", ids, io.discards_completed)
    f.counter("ssd_io_flushes_completed", "Cache flush requests completed (what fsync sends the drive).", ids, io.flushes_completed)
    f.counter("ssd_io_flush_time_seconds", "Time spent on cache flush requests.", ids, io.flush_time_seconds)


def _poll_times(f: _DriveFamilies, d: Drive, ids: List[str]) -> None:
    """When the health data were read; the write-cache and diskstats times are those of
    their collector's run (ssd_collector_last_run_timestamp_seconds), not repeated here."""
    for collector in health.HEALTH_SOURCES:
        if collector in d.last_poll:
            f.gauge("ssd_last_poll_timestamp_seconds", "When this drive's health data were read, by collector.",
                    ids + [collector], d.last_poll[collector], ["collector"])


def _smart_logs(f: _DriveFamilies, d: Drive, ids: List[str]) -> None:
    """The drive's self-test and error logs (issue 30, collectors/smart_logs.py). The age of the
    last test is in the drive's power-on time (its own clock), not wall time; ATA stamps are
    16-bit and are counted back modulo 65,536 hours (smart_logs.hours_since)."""
    logs = d.reading.smart_logs
    if logs is None:
        return
    last = logs.last_test
    if last is not None:
        f.gauge("ssd_selftest_last_result", "The newest finished self-test in the drive's log, by type and result "
                "(passed, failed, aborted, interrupted, unknown): one series, value 1.",
                ids + [last.kind, last.result], 1, ["type", "result"])
        f.gauge("ssd_selftest_last_failed", "1: the newest finished self-test found a fault; 0: it did not.",
                ids, _bool(health.selftest_failed(logs)))
        power_on = d.reading.power_on_seconds
        since = None if power_on is None else last.hours_before(int(power_on) // 3600)
        f.gauge("ssd_selftest_last_age_seconds", "Power-on time since the newest finished self-test (the "
                "drive's clock, whole hours), absent when the power-on time is withheld.", ids,
                None if since is None else since * 3600)
    if logs.self_tests:
        f.gauge("ssd_selftest_failed_entries", "Self-tests in the drive's log (its newest 20-21) that found a fault.",
                ids, logs.failed_tests)
        f.gauge("ssd_selftest_running", "1: a self-test is running on the drive now.", ids,
                _bool(logs.self_test_running is not None))
    f.counter("ssd_error_log_entries", "Errors the drive has logged in its lifetime (ATA SMART error log count, "
              "NVMe Number of Error Information Log Entries).", ids, logs.error_count)
    for direction, count in logs.uncorrected:
        f.counter("ssd_scsi_uncorrected_errors", "SCSI error counter log: total uncorrected errors, by direction.",
                  ids + [direction], count, ["direction"])
    _temperature_history(f, logs.temperature_history, ids + ["drive"])


def _temperature_history(f: _DriveFamilies, history, labels: List[str]) -> None:
    """The drive's SCT temperature history (issue 30, collectors/smartctl/scttemp.py), on the
    ``drive`` sensor like ssd_temperature_celsius: how long it covers, how much of it was above
    the drive's recommended maximum, its highest sample, and the drive's absolute limit."""
    if history is None:
        return
    f.gauge("ssd_temperature_history_window_seconds", "Time the drive's own temperature history covers "
            "(ATA SCT: logged samples x logging interval).", labels, history.window_seconds, ["sensor"])
    f.gauge("ssd_temperature_history_above_limit_seconds", "Time within that history the drive logged above "
            "its own recommended maximum operating temperature.", labels, history.above_limit_seconds, ["sensor"])
    f.gauge("ssd_temperature_history_max_celsius", "Highest temperature in the drive's own temperature history.",
            labels, history.max_celsius, ["sensor"])
    f.gauge("ssd_temperature_critical_limit_celsius", "The drive's absolute temperature limit, at or above its "
            "recommended operating maximum (ATA SCT Max Temperature Limit).", labels,
            history.absolute_limit_celsius, ["sensor"])


def _ata_attributes(f: _DriveFamilies, d: Drive, ids: List[str]) -> None:
    """Every ATA attribute, opt in (``smartctl.all_attributes``, issue 30): at most 30 rows
    (the SMART data table's size) x 4 families, and the failing-now flag of each row with a
    threshold (a threshold of 0 never fails): at most 150 series a drive."""
    for row in d.reading.ata_attributes:
        labels = ids + [str(row.attr_id), row.name]
        f.gauge("ssd_ata_attribute_value", "ATA SMART attribute normalised value (1..253, higher is better).",
                labels, row.value, ["id", "name"])
        f.gauge("ssd_ata_attribute_worst", "ATA SMART attribute worst normalised value the drive remembers.",
                labels, row.worst, ["id", "name"])
        f.gauge("ssd_ata_attribute_threshold", "ATA SMART attribute threshold: at or below it the attribute fails.",
                labels, row.threshold, ["id", "name"])
        f.gauge("ssd_ata_attribute_raw", "ATA SMART attribute raw value as smartctl decodes it (units vary by "
                "attribute and vendor: see the name).", labels, row.raw, ["id", "name"])
        if row.threshold:
            f.gauge("ssd_ata_attribute_failing_now", "1: the attribute's value is at or below its threshold now "
                    "(smartctl FAILING_NOW).", labels, _bool(row.failing_now), ["id", "name"])


# The per-drive families, one function per part of the drive record, in the order they are
# exported. A new family goes into the function of its part (or a new function listed here).
DRIVE_SECTIONS: Tuple[Callable[[_DriveFamilies, Drive, List[str]], None], ...] = (
    _identity, _health, _smart_logs, _ata_attributes, _write_cache, _holds, _endurance, _io, _poll_times,
)


# What each section reads of a drive: agent/exposition_render.py renders a section again only
# when these changed. A section not listed is rendered again whenever anything of the drive did.
SECTION_INPUTS: Dict[Callable, Callable[[Drive], Tuple]] = {
    _identity: lambda d: (d.reading, health.health_data_time(d.last_poll)),
    _health: lambda d: (d.reading,),
    _smart_logs: lambda d: (d.reading.smart_logs, d.reading.power_on_seconds),
    _ata_attributes: lambda d: (d.reading.ata_attributes,),
    _write_cache: lambda d: (d.write_cache, d.write_cache_expected, d.power_loss_protection),
    _holds: lambda d: (d.holds,),
    _endurance: lambda d: (d.rated_endurance_bytes, d.projections),
    _io: lambda d: (d.io,),
    _poll_times: lambda d: tuple((c, d.last_poll[c]) for c in health.HEALTH_SOURCES if c in d.last_poll),
}


def _label_ids(d: Drive) -> List[str]:
    return [printable(d.device), printable(d.serial)]


def _info_header() -> str:
    """``ssd_drive_info``'s HELP and TYPE lines, as a full render prints them."""
    return header_text(_DriveFamilies().info)


def drive_families(drives: Iterable[Drive]) -> List:
    families = _DriveFamilies()
    for d in drives:
        ids = _label_ids(d)
        for section in DRIVE_SECTIONS:
            section(families, d, ids)
    return families.families()


# ssd_history_samples_dropped_total{reason}: every reason agent.history_schema.drop_reason gives,
# exported at 0 from the start so a rate() sees the first drop.
HISTORY_DROP_REASONS = ("constraint", "invalid_value", "out_of_range", "unsupported_type")
# ssd_history_clock_anomalies_total{kind} (agent.history_clock) and
# ssd_history_file_lost_total{reason} (agent.history_file), exported at 0 from the start too.
HISTORY_CLOCK_KINDS = ("step_forward", "step_back", "future_samples")
HISTORY_LOST_REASONS = ("deleted", "replaced", "wal_deleted")


def _labelled_counter(name: str, help_text: str, label: str, known, counts) -> CounterMetricFamily:
    family = CounterMetricFamily(name, help_text, labels=[label])
    counts = dict(counts)
    for key in known:
        family.add_metric([key], float(counts.pop(key, 0)))
    for key, count in sorted(counts.items()):
        family.add_metric([key], float(count))
    return family


def agent_families(snap: Snapshot) -> List:
    success = GaugeMetricFamily("ssd_collector_success", "Whether the collector's last run succeeded for every drive.", labels=["collector"])
    duration = GaugeMetricFamily("ssd_collector_duration_seconds", "Duration of the collector's last run.", labels=["collector"])
    errors = CounterMetricFamily("ssd_collector_errors", "Failed probes and parses since the agent started.", labels=["collector"])
    last_run = GaugeMetricFamily("ssd_collector_last_run_timestamp_seconds", "When the collector last ran.", labels=["collector"])
    for c in snap.collectors:
        success.add_metric([c.name], 1.0 if c.success else 0.0)
        duration.add_metric([c.name], c.duration_seconds)
        errors.add_metric([c.name], float(c.errors_total))
        last_run.add_metric([c.name], c.last_run)
    stuck = GaugeMetricFamily("ssd_probe_stuck", "A probe on this device outlived SIGKILL; the device is quarantined.", labels=["device"])
    for device in snap.stuck:
        stuck.add_metric([device], 1.0)
    drives = GaugeMetricFamily("ssd_drives", "Drives in the snapshot.", value=len(snap.drives))
    history = None
    for c in snap.collectors:
        if c.name == "history":
            history = GaugeMetricFamily("ssd_history_healthy", "The last history write put every sample on disk (0: kept in memory, or a sample dropped).",
                                        value=1.0 if c.success else 0.0)
    build = GaugeMetricFamily("ssd_exporter_build_info", "ssdfleet version.", labels=["version", "python"])
    build.add_metric([__version__, platform.python_version()], 1.0)
    out = [success, duration, errors, last_run, stuck, drives, build]
    out.extend(host_views.families(snap))  # host sources' own families (the sync-write probe, controllers)
    if snap.agent is not None:
        out.extend(process_families(snap.agent))
    if history is not None:
        out.append(history)
        dropped = CounterMetricFamily(
            "ssd_history_samples_dropped",
            "History samples SQLite refused to store, by reason; every other sample was written.",
            labels=["reason"])
        counts = dict(snap.history_dropped)
        for reason in HISTORY_DROP_REASONS:
            dropped.add_metric([reason], float(counts.pop(reason, 0)))
        for reason, count in sorted(counts.items()):
            dropped.add_metric([reason], float(count))
        out.append(dropped)
        out.append(CounterMetricFamily(
            "ssd_history_samples_recorded", "History samples accepted since the agent started (one per drive "
            "per history_min_interval_seconds).", value=float(snap.history_recorded)))
        out.append(GaugeMetricFamily(
            "ssd_history_samples_pending", "History samples kept in memory because the last write failed.",
            value=float(snap.history_pending)))
        out.append(CounterMetricFamily(
            "ssd_history_samples_written", "History samples committed to the history file and synced to disk "
            "since the agent started.", value=float(snap.history_written)))
        out.append(_labelled_counter(
            "ssd_history_clock_anomalies", "Wall-clock steps the history found against the boot clock (its "
            "samples of this boot were moved with the step), and earlier boots' samples found in the future.",
            "kind", HISTORY_CLOCK_KINDS, snap.history_clock_anomalies))
        out.append(GaugeMetricFamily(
            "ssd_history_retention_held", "1 while history retention deletes nothing, waiting for the wall "
            "clock to agree with the boot clock for history_clock_settle_seconds.",
            value=1.0 if snap.history_retention_held else 0.0))
        out.append(_labelled_counter(
            "ssd_history_file_lost", "Times the history file was found deleted or replaced under the running "
            "agent; each time a new file was started and everything re-written into it.",
            "reason", HISTORY_LOST_REASONS, snap.history_file_lost))
    return out


# Signals the agent handles without stopping (agent/signals.py), exported at 0 from the start.
HANDLED_SIGNALS = ("SIGALRM", "SIGHUP", "SIGUSR1", "SIGUSR2")


def process_families(agent: AgentStatus) -> List:
    """The agent process's own state: configuration reloads (as Prometheus and Alertmanager
    name theirs), signals, and processes device tools left behind."""
    reload_ok = GaugeMetricFamily("ssd_config_last_reload_successful",
                                  "Whether the last configuration reload (SIGHUP) succeeded; 1 at start.",
                                  value=1.0 if agent.config_reload_successful else 0.0)
    reload_at = GaugeMetricFamily("ssd_config_last_reload_success_timestamp_seconds",
                                  "When the configuration was last loaded successfully (start or SIGHUP).",
                                  value=agent.config_reload_success_timestamp)
    signals = CounterMetricFamily("ssd_signals_received", "Signals the agent handled without stopping: SIGHUP "
                                  "reloads the configuration, the others are ignored.", labels=["signal"])
    counts = dict(agent.signals)
    for name in sorted(set(HANDLED_SIGNALS) | set(counts)):
        signals.add_metric([name], float(counts.get(name, 0)))
    leftovers = CounterMetricFamily(
        "ssd_tool_leftover_processes_killed",
        "Processes a device tool left running after it exited, killed by the agent: with the tool's process group "
        "(group, at least this many) or adopted as subreaper after leaving the group (adopted).", labels=["how"])
    for how, count in agent.leftover_processes_killed or (("adopted", 0), ("group", 0)):
        leftovers.add_metric([how], float(count))
    return [reload_ok, reload_at, signals, leftovers]


def make_registry(get_snapshot: Callable[[], Snapshot]) -> Registry:
    """A registry over the snapshot, for reading values in tests (``get_sample_value``)."""
    registry = Registry()
    registry.register(SnapshotCollector(get_snapshot))
    return registry


def render(registry: Registry) -> bytes:
    return text_format(registry.collect())
