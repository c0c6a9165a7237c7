"""The sync-write probe's results as the agent shows them: its metric families, its API
value, its ``ssdfleet status`` lines and its page section (the spec's
:class:`~collectors.source.HostView` hooks).

The probe itself (bounded bursts of 8 kB write + fdatasync) is :mod:`collectors.syncwrite.probe`,
run as a host source (:mod:`collectors.syncwrite.source`) on its own interval; the latest result
per directory is in the snapshot under ``host["syncwrite"]``. Everything here is a pure function
of those results and the snapshot's drives: no I/O.
"""

from __future__ import annotations

from typing import Dict, Iterable, List, Optional, Tuple

from pydantic import BaseModel

from collectors.diskstats import drive_device_for
from collectors.families import CounterMetricFamily, GaugeMetricFamily, SummaryMetricFamily
from collectors.source import LatencyBurst
from collectors.syncwrite.probe import SyncWriteResult, summarise

# device and serial: the drive the directory lives on, as the per-drive series name it, so
# that alerts and joins (ssd_drive_info) work as for every other drive series; "" when the
# directory is on no drive the agent knows (tmpfs, NFS, a device-mapper volume).
LABELS = ["path", "device", "serial", "method"]
QUANTILES = (0.5, 0.9, 0.99, 1.0)


def drive_labels(block_device: Optional[str], drives: Iterable) -> Tuple[str, str]:
    """(device, serial) of the drive holding ``block_device`` (sda, nvme0n1), as the drive's
    own series label them; ("", "") when no drive in the snapshot matches."""
    if not block_device:
        return "", ""
    by_device: Dict[str, str] = {d.device: d.serial for d in drives}
    for name in (block_device, drive_device_for(block_device)):
        if name in by_device:
            return name, by_device[name]
    return "", ""


class SyncWriteView(BaseModel):
    """One directory's latest burst, as /api/v1/drives and ``ssdfleet status`` show it."""

    directory: str
    device: str  # the drive under the directory, as its series label it ("" when unknown)
    serial: str
    method: str  # fdatasync or O_DSYNC
    started: float
    ops: int
    ops_per_second: Optional[float] = None
    latency_median_seconds: Optional[float] = None
    latency_p99_seconds: Optional[float] = None
    latency_max_seconds: Optional[float] = None
    skipped: Optional[str] = None
    detail: Optional[str] = None


def views(results: Iterable[SyncWriteResult], drives: Iterable = ()) -> List[SyncWriteView]:
    drives = list(drives)
    out = []
    for r in results:
        device, serial = drive_labels(r.device, drives)
        q = summarise(r, (0.5, 0.99, 1.0))
        out.append(SyncWriteView(
            directory=r.directory, device=device, serial=serial, method=r.method, started=r.started,
            ops=r.ops, ops_per_second=r.ops_per_second, latency_median_seconds=q.get(0.5),
            latency_p99_seconds=q.get(0.99), latency_max_seconds=q.get(1.0), skipped=r.skipped,
            detail=r.detail))
    return out


def api(results: Iterable[SyncWriteResult], drives: Iterable = ()) -> List[Dict]:
    """The API's value: every directory's latest burst, as :func:`views` gives it."""
    return [v.model_dump() for v in views(results, drives)]


def newest_by_serial(results: Iterable[SyncWriteResult], drives: Iterable = ()) -> Dict[str, Dict]:
    """The newest burst per drive, by serial (a drive may hold several probed directories:
    the newest is the one shown beside the drive)."""
    out: Dict[str, Dict] = {}
    for probe in views(results, drives):
        if probe.serial and (probe.serial not in out or probe.started > out[probe.serial]["started"]):
            out[probe.serial] = probe.model_dump()
    return out


def latency(value: Dict) -> Optional[LatencyBurst]:
    """The newest burst on a drive (a :func:`newest_by_serial` value, or the per-drive
    ``syncwrite`` key of an older agent's JSON) as the generic latency burst; None when the
    burst was skipped or timed nothing."""
    median = value.get("latency_median_seconds") if isinstance(value, dict) else None
    if median is None:
        return None
    return LatencyBurst(median_seconds=median, p99_seconds=value.get("latency_p99_seconds"),
                        how=f"{value['method']} of 8 kB in {value['directory']}")


def status_lines(items: Iterable[Dict]) -> List[str]:
    """``ssdfleet status``'s lines for the probe, from the API's ``syncwrite`` list:
    ``/var/lib/postgresql/pg_wal on sdb: 1,204 fdatasync/s, median 0.79 ms, p99 1.9 ms``."""
    lines = []
    for v in items:
        where = f"{v['directory']} on {v['device']}" if v.get("device") else v["directory"]
        if v.get("skipped"):
            lines.append(f"{where}: skipped ({v['skipped']}: {v.get('detail') or ''})")
            continue
        rate = v.get("ops_per_second")
        parts = [f"{rate:,.0f} {v['method']}/s" if rate is not None else f"{v['ops']} {v['method']} writes"]
        for key, name in (("latency_median_seconds", "median"), ("latency_p99_seconds", "p99")):
            if v.get(key) is not None:
                parts.append(f"{name} {v[key] * 1000:.2g} ms")
        lines.append(f"{where}: " + ", ".join(parts))
    return lines


def families(results: Iterable[SyncWriteResult], drives: Iterable = ()) -> List:
    results = list(results)
    if not results:
        return []
    drives = list(drives)
    ops = GaugeMetricFamily(
        "ssd_syncwrite_ops_per_second",
        "Synchronous 8 kB writes per second the last probe burst achieved (writes / time in them; pacing excluded).",
        labels=LABELS)
    latency = SummaryMetricFamily(
        "ssd_syncwrite_latency_seconds",
        "Time of one 8 kB write and its sync: quantiles of the last burst, count and sum since the agent started.",
        labels=LABELS)
    written = CounterMetricFamily(
        "ssd_syncwrite_written_bytes", "Bytes the sync-write probe wrote into its own file since the agent started.",
        labels=LABELS)
    skipped = GaugeMetricFamily(
        "ssd_syncwrite_skipped", "1 when the last probe run in the directory wrote nothing, with the reason.",
        labels=LABELS + ["reason"])
    last_run = GaugeMetricFamily(
        "ssd_syncwrite_last_run_timestamp_seconds", "When the last probe run in the directory started.", labels=LABELS)
    for r in results:
        ids = [r.directory, *drive_labels(r.device, drives), r.method]
        last_run.add_metric(ids, r.started)
        latency.add_metric(ids, count_value=r.ops_total, sum_value=r.latency_seconds_total)
        for q, value in summarise(r, QUANTILES).items():
            latency.add_quantile(ids, _quantile_label(q), value)
        written.add_metric(ids, r.written_bytes_total)
        if r.skipped is not None:
            skipped.add_metric(ids + [r.skipped], 1.0)
        elif r.ops_per_second is not None:
            ops.add_metric(ids, r.ops_per_second)
    return [ops, latency, written, skipped, last_run]


def _quantile_label(q: float) -> str:
    # The text format's convention: "0.5", "0.99", "1"; repr keeps 0.99 exact.
    return "1" if q == 1.0 else repr(q)


def page_section(results: Iterable[SyncWriteResult], drives: Iterable, esc) -> str:
    """The status page's table of the probe's latest bursts ("" when the probe is off)."""
    results = list(results)
    if not results:
        return ""
    drives = list(drives)
    rows = []
    for r in results:
        device, serial = drive_labels(r.device, drives)
        where = f"{device} ({serial})" if device else (r.device or "-")
        if r.skipped is not None:
            measured = f'<td colspan="3" class="muted">skipped: {esc(r.skipped)} ({esc(r.detail or "")})</td>'
        else:
            q = summarise(r, (0.5, 0.99))
            rate = r.ops_per_second
            measured = (f"<td>{rate:,.0f}/s</td>" if rate is not None else "<td>-</td>") + "".join(
                f"<td>{q[k] * 1e6:,.0f} µs</td>" if k in q else "<td>-</td>" for k in (0.5, 0.99))
        rows.append(f"<tr><td>{esc(r.directory)}</td><td>{esc(where)}</td><td>{esc(r.method)}</td>"
                    f"<td>{r.ops}</td>{measured}</tr>")
    return ('<section class="host syncwrite"><h2>Sync-write probe</h2><div class="scroll"><table class="drives">'
            '<thead><tr><th scope="col">directory</th><th scope="col">drive</th><th scope="col">sync</th>'
            '<th scope="col">writes</th><th scope="col">ops/s</th><th scope="col">median</th>'
            '<th scope="col">p99</th></tr></thead><tbody>' + "".join(rows) + "</tbody></table></div></section>")
