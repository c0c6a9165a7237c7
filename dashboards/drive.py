"""Drive view: one drive (variables ``instance`` and ``serial``) in full detail."""

from __future__ import annotations

from grafana_foundation_sdk.models import common as common_models
from grafana_foundation_sdk.models import dashboard as models

from dashboards.common import (
    BYTES,
    BYTES_PER_SECOND,
    CELSIUS,
    COUNT,
    IOPS,
    LIFE_LEFT_THRESHOLDS,
    PROBLEM_THRESHOLDS,
    RATIO,
    SECONDS,
    TIMESTAMP_MS,
    WRITE_CACHE_MAPPING,
    datasource_variable,
    instance_variable,
    job_variable,
    merge_and_organize,
    new_dashboard,
    number_panels,
    override,
    query,
    row,
    serial_variable,
    stat_panel,
    state_panel,
    table_panel,
    timeseries_panel,
)

UID = "ssdfleet-drive"
SEL = '{job=~"$job", instance="$instance", serial="$serial"}'
DRIVE_SENSOR = '{job=~"$job", instance="$instance", serial="$serial", sensor="drive"}'
# The age of the last self-test turns orange when a weekly long test was missed, red past a month.
SELFTEST_AGE_ORANGE = 8 * 86400
SELFTEST_AGE_RED = 31 * 86400
DAY = 86400
RATE = "$__rate_interval"
# How far ahead predict_linear looks, and over how much history it fits the slope.
PREDICT_AHEAD_DAYS = 90
PREDICT_WINDOW = "7d"


def _identity_table():
    return table_panel(
        "Drive",
        [
            query(f"ssd_drive_info{SEL}", ref_id="A", as_table=True),
            query(f"ssd_capacity_bytes{SEL}", ref_id="B", as_table=True),
        ],
        description="ssd_drive_info: what the drive is and where the agent reads its headline figures.",
        width=24,
        height=4,
        transformations=merge_and_organize(
            [
                "device",
                "serial",
                "kind",
                "model",
                "model_family",
                "vendor",
                "firmware",
                "driver_version",
                "device_type",
                "Value #B",
                "life_left_source",
                "host_written_source",
                "nand_written_source",
            ],
            hidden=("Time", "job", "instance", "__name__", "Value #A", "is_ssd"),
        ),
        overrides=[override("Value #B", displayName="Capacity", unit=BYTES)],
    )


def build() -> models.Dashboard:
    life_left = f"ssd_life_left_ratio{SEL}"
    wearout = f"min(ssd_projected_wearout_timestamp_seconds{SEL})"
    builder = (
        new_dashboard(
            UID,
            "ssdfleet / Drive",
            "One SSD in full: life left and its projection, write load and write "
            "amplification, temperatures, bad blocks and errors, iostat latency and the write cache.",
        )
        .with_variable(datasource_variable())
        .with_variable(job_variable())
        .with_variable(instance_variable())
        .with_variable(serial_variable())
        .with_row(row("Drive $serial on $instance"))
        .with_panel(_identity_table())
        .with_panel(stat_panel("Life left", RATIO, [query(life_left, instant=True)], steps=LIFE_LEFT_THRESHOLDS))
        .with_panel(
            stat_panel(
                "Projected wear-out",
                TIMESTAMP_MS,
                [query(f"ssd_projected_wearout_timestamp_seconds{SEL} * 1000", legend="{{method}}", instant=True)],
                description="When life left reaches 0, by the agent's best method (shown as the name).",
                steps=((None, "text"),),
                color_mode=common_models.BigValueColorMode.VALUE,
                width=6,
            )
        )
        .with_panel(
            stat_panel(
                "Days left",
                "d",
                [query(f"({wearout} - time()) / {DAY}", instant=True)],
                description="Days until the projected wear-out.",
                steps=((None, "red"), (90, "orange"), (365, "green")),
            )
        )
        .with_panel(
            stat_panel(
                "SMART health",
                COUNT,
                [query(f"ssd_smart_healthy{SEL}", instant=True)],
                description="SMART overall-health self-assessment (not reported by Shannon cards).",
                steps=((None, "red"), (1, "green")),
                width=3,
            )
        )
        .with_panel(
            stat_panel(
                "Read-only",
                COUNT,
                [
                    query(f"max(ssd_readonly{SEL})", instant=True)
                ],
                description="The drive has put itself in read-only mode (Shannon access mode or the NVMe "
                "critical-warning bit): it is failing.",
                steps=PROBLEM_THRESHOLDS,
                width=3,
            )
        )
        .with_panel(
            stat_panel(
                "Data age",
                SECONDS,
                [query(f"ssd_data_age_seconds{SEL}", instant=True)],
                description="Age of the health data the agent serves (SMART or shannon-status).",
                steps=((None, "green"), (3600, "red")),
                width=4,
            )
        )
        .with_row(row("Wear"))
        .with_panel(
            timeseries_panel(
                "Life left and its trend",
                RATIO,
                [
                    query(life_left, legend="life left", ref_id="A"),
                    query(
                        f"clamp_min(predict_linear({life_left}[{PREDICT_WINDOW}], {PREDICT_AHEAD_DAYS} * {DAY}), 0)",
                        legend=f"in {PREDICT_AHEAD_DAYS} d at the {PREDICT_WINDOW} trend",
                        ref_id="B",
                    ),
                ],
                description=f"ssd_life_left_ratio, and where a straight line through the last {PREDICT_WINDOW} puts it "
                f"{PREDICT_AHEAD_DAYS} days later (predict_linear). Drives report life left in whole percent, so the trend "
                "needs days of history to mean anything.",
                min_val=0,
                max_val=1,
            )
        )
        .with_panel(
            timeseries_panel(
                "Projected wear-out",
                TIMESTAMP_MS,
                [
                    query(
                        f"ssd_projected_wearout_timestamp_seconds{SEL} * 1000", legend="agent ({{method}})", ref_id="A"
                    ),
                    query(
                        f"time() * 1000 + {life_left} / -deriv({life_left}[{PREDICT_WINDOW}]) * 1000 "
                        f"and deriv({life_left}[{PREDICT_WINDOW}]) < 0",
                        legend=f"Prometheus, {PREDICT_WINDOW} trend",
                        ref_id="B",
                    ),
                ],
                description="The agent's projection (from its own history) next to the one Prometheus derives from the "
                f"slope of life left over {PREDICT_WINDOW} (absent while life left has not moved).",
            )
        )
        .with_panel(
            timeseries_panel(
                "Write rate",
                BYTES_PER_SECOND,
                [
                    query(f"ssd:host_written_bytes:rate1d{SEL}", legend="host, 1 d rate", ref_id="A"),
                    query(f"ssd_write_rate_bytes_per_second{SEL}", legend="host, agent smoothed", ref_id="B"),
                    query(f"ssd:nand_written_bytes:rate1d{SEL}", legend="NAND, 1 d rate", ref_id="C"),
                ],
                description="Host bytes written per second averaged over a day (recording rule "
                "ssd:host_written_bytes:rate1d: right from a new drive's first minutes, where rate() over a day "
                "reads near 0), the agent's multi-day smoothing used for the projection, and bytes written to flash.",
                min_val=0,
            )
        )
        .with_panel(
            timeseries_panel(
                "Write amplification",
                "none",
                [
                    query(f"ssd_write_amplification{SEL}", legend="lifetime", ref_id="A"),
                    query(
                        f"ssd:nand_written_bytes:rate1d{SEL} / ssd:host_written_bytes:rate1d{SEL}",
                        legend="last day",
                        ref_id="B",
                    ),
                ],
                description="NAND bytes written per host byte written: over the drive's life, and over the last day.",
            )
        )
        .with_panel(
            timeseries_panel(
                "Endurance",
                BYTES,
                [
                    query(f"ssd_host_written_bytes_total{SEL}", legend="host written", ref_id="A"),
                    query(f"ssd_endurance_remaining_bytes{SEL}", legend="remaining (projection)", ref_id="B"),
                    query(f"ssd_endurance_rated_bytes{SEL}", legend="rated", ref_id="C"),
                ],
                description="Host bytes written so far against the rated endurance and what the projection says is left.",
            )
        )
        .with_panel(
            timeseries_panel(
                "Spare and bad blocks",
                RATIO,
                [
                    query(f"ssd_spare_left_ratio{SEL}", legend="spare left", ref_id="A"),
                    query(f"ssd_spare_threshold_ratio{SEL}", legend="spare warning threshold", ref_id="B"),
                    query(f"ssd_bad_block_ratio{SEL}", legend="bad blocks", ref_id="C"),
                ],
                description="Spare / overprovision left against the drive's own threshold; bad-block ratio (Shannon).",
                min_val=0,
            )
        )
        .with_row(row("Health"))
        .with_panel(
            timeseries_panel(
                "Temperatures vs limit",
                CELSIUS,
                [
                    query(f"ssd_temperature_celsius{SEL}", legend="{{sensor}}", ref_id="A"),
                    query(f"ssd_temperature_limit_celsius{SEL}", legend="{{sensor}} limit", ref_id="B"),
                ],
                description="Current temperature per sensor and the drive's own warning limit (the highest it "
                "remembers is on the agent's status page).",
            )
        )
        .with_panel(
            timeseries_panel(
                "Bad blocks and defects",
                COUNT,
                [
                    query(f"ssd_defects{SEL}", legend="{{type}}", ref_id="A"),
                ],
                description="Defect counts as the drive reports them: reallocated, pending, grown defects, Shannon "
                "dynamic/static bad blocks ...",
                min_val=0,
            )
        )
        .with_panel(
            timeseries_panel(
                "Media errors",
                COUNT,
                [
                    query(f"ssd_media_errors_total{SEL}", legend="total", ref_id="A"),
                    query(f"ssd_media_errors_total{SEL} - min_over_time(ssd_media_errors_total{SEL}[1h])", legend="last hour", ref_id="B"),
                ],
                description="NVMe media and data integrity errors; SCSI uncorrected errors. \"Last hour\" counts "
                "errors above the hour's lowest count, as SSDMediaErrorsGrowing does (errors a drive had when it "
                "appeared are not new).",
                min_val=0,
            )
        )
        .with_panel(
            state_panel(
                "NVMe critical warnings",
                [query(f"ssd_nvme_critical_warning{SEL}", legend="critical warning")],
                {
                    "0": ("ok", "green"),
                    "1": ("spare", "red"),
                    "2": ("temperature", "red"),
                    "4": ("reliability", "red"),
                    "8": ("readonly", "red"),
                    "16": ("volatile_backup", "red"),
                    "32": ("pmr_readonly", "red"),
                },
                description="The NVMe critical-warning byte: 0 is fine; a single bit is named; several bits "
                "show the byte (1 spare, 2 temperature, 4 reliability, 8 readonly, 16 volatile backup, "
                "32 PMR read-only).",
                width=12,
                height=8,
            )
        )
        .with_row(row("Self-tests and the drive's logs"))
        .with_panel(
            stat_panel(
                "Last self-test",
                COUNT,
                [query(f"ssd_selftest_last_failed{SEL}", instant=True)],
                description="The newest finished self-test in the drive's own log (ATA, NVMe, SCSI): passed or "
                "found a fault (SSDSelfTestFailed pages on it). Its type and words are in the table beside.",
                steps=PROBLEM_THRESHOLDS,
                mapping={"0": ("passed", "green"), "1": ("FAILED", "red")},
            )
        )
        .with_panel(
            stat_panel(
                "Age of the last self-test",
                SECONDS,
                [query(f"ssd_selftest_last_age_seconds{SEL}", instant=True)],
                description="Power-on time since the newest finished self-test, on the drive's own clock (whole "
                "hours). Orange past 8 days (a weekly long test missed), red past 31.",
                steps=((None, "green"), (SELFTEST_AGE_ORANGE, "orange"), (SELFTEST_AGE_RED, "red")),
            )
        )
        .with_panel(
            stat_panel(
                "Self-test running",
                COUNT,
                [query(f"ssd_selftest_running{SEL}", instant=True)],
                description="A self-test is running on the drive now (its latency may rise while it does).",
                steps=((None, "green"), (1, "blue")),
                mapping={"0": ("no", "green"), "1": ("running", "blue")},
            )
        )
        .with_panel(
            stat_panel(
                "Failed entries in the self-test log",
                COUNT,
                [query(f"ssd_selftest_failed_entries{SEL}", instant=True)],
                description="Entries of the drive's self-test log (its newest 20 or 21) that found a fault; not a "
                "lifetime count.",
                steps=PROBLEM_THRESHOLDS,
            )
        )
        .with_panel(
            table_panel(
                "Last self-test: type and result",
                [query(f"ssd_selftest_last_result{SEL}", as_table=True)],
                description="ssd_selftest_last_result: the newest finished test's type (short, extended, ...) and "
                "result (passed, failed, aborted, interrupted). The failing LBA is in /api/v1/drives.",
                width=8,
                height=4,
                transformations=merge_and_organize(
                    ["type", "result"], hidden=("Time", "job", "instance", "device", "serial", "__name__", "Value")
                ),
            )
        )
        .with_panel(
            timeseries_panel(
                "Error-log entries",
                COUNT,
                [
                    query(f"ssd_error_log_entries_total{SEL}", legend="lifetime", ref_id="A"),
                    query(
                        f"ssd_error_log_entries_total{SEL} - min_over_time(ssd_error_log_entries_total{SEL}[1d])",
                        legend="last day",
                        ref_id="B",
                    ),
                ],
                description="Errors the drive logged in its life (ATA SMART error log count, NVMe error-information "
                "entries); \"last day\" counts those above the day's lowest count, as SSDErrorLogGrowing does.",
                min_val=0,
            )
        )
        .with_panel(
            timeseries_panel(
                "SCSI uncorrected errors",
                COUNT,
                [query(f"ssd_scsi_uncorrected_errors_total{SEL}", legend="{{direction}}", ref_id="A")],
                description="SAS/SCSI error counter log: total uncorrected errors by direction (read, write, "
                "verify). Empty for ATA and NVMe drives.",
                min_val=0,
            )
        )
        .with_row(row("Temperature history (the drive's own)"))
        .with_panel(
            timeseries_panel(
                "Drive temperature and its own limits",
                CELSIUS,
                [
                    query(f"ssd_temperature_celsius{DRIVE_SENSOR}", legend="now (each poll)", ref_id="A"),
                    query(f"ssd_temperature_history_max_celsius{DRIVE_SENSOR}", legend="highest in its history",
                          ref_id="B"),
                    query(f"ssd_temperature_limit_celsius{DRIVE_SENSOR}", legend="limit (recommended maximum)",
                          ref_id="C"),
                    query(f"ssd_temperature_critical_limit_celsius{DRIVE_SENSOR}", legend="absolute limit",
                          ref_id="D"),
                ],
                description="The drive sensor at each poll, the highest temperature in the drive's own SCT history "
                "(one sample per logging interval, between polls too), and the limits the drive states. ATA drives "
                "with an SCT temperature history only.",
            )
        )
        .with_panel(
            timeseries_panel(
                "Time above its own limit",
                SECONDS,
                [
                    query(f"ssd_temperature_history_above_limit_seconds{DRIVE_SENSOR}", legend="above the limit",
                          ref_id="A"),
                    query(f"ssd_temperature_history_window_seconds{DRIVE_SENSOR}", legend="history covers",
                          ref_id="B"),
                ],
                description="Of the time the drive's own temperature history covers, how long it logged above its "
                "recommended maximum (SSDTemperatureAboveOwnLimit files a ticket when that is not 0).",
                min_val=0,
            )
        )
        .with_row(row("I/O (iostat)"))
        .with_panel(
            timeseries_panel(
                "Latency (r_await, w_await)",
                SECONDS,
                [
                    query(
                        f"rate(ssd_io_read_time_seconds_total{SEL}[{RATE}]) / rate(ssd_io_reads_completed_total{SEL}[{RATE}])",
                        legend="r_await",
                        ref_id="A",
                    ),
                    query(
                        f"rate(ssd_io_write_time_seconds_total{SEL}[{RATE}]) / rate(ssd_io_writes_completed_total{SEL}[{RATE}])",
                        legend="w_await",
                        ref_id="B",
                    ),
                ],
                description="Time spent per completed read / write (delta time over delta completions, as iostat).",
                width=8,
                min_val=0,
            )
        )
        .with_panel(
            timeseries_panel(
                "Utilisation",
                RATIO,
                [
                    query(f"rate(ssd_io_busy_seconds_total{SEL}[{RATE}])", legend="%util", ref_id="A"),
                ],
                width=8,
                min_val=0,
                max_val=1,
            )
        )
        .with_panel(
            timeseries_panel(
                "IOPS and queue",
                IOPS,
                [
                    query(f"rate(ssd_io_reads_completed_total{SEL}[{RATE}])", legend="r/s", ref_id="A"),
                    query(f"rate(ssd_io_writes_completed_total{SEL}[{RATE}])", legend="w/s", ref_id="B"),
                    query(f"ssd_io_in_flight{SEL}", legend="in flight", ref_id="C"),
                ],
                width=8,
                min_val=0,
            )
        )
        .with_panel(
            timeseries_panel(
                "Flush latency",
                SECONDS,
                [
                    query(f"ssd:io_flush_await_seconds:mean5m{SEL}", legend="per flush, 5m", ref_id="A"),
                    query(f"ssd:io_flush_await_seconds:median1d{SEL}", legend="its own normal (1d median)", ref_id="B"),
                ],
                description="Time per cache flush the kernel sent (diskstats fields 18-19) against the drive's own "
                "day median; SSDFlushLatencyHigh fires when the first stays far above the second. No series: the "
                "kernel sent no flush (write-through queue, or nothing written).",
                width=8,
                min_val=0,
            )
        )
        .with_panel(
            timeseries_panel(
                "Queue depth (aqu-sz)",
                COUNT,
                [query(f"ssd:io_queue_depth:mean5m{SEL}", legend="average requests in flight", ref_id="A")],
                description="Weighted I/O time per second: the average number of requests queued or in service.",
                width=8,
                min_val=0,
            )
        )
        .with_panel(
            timeseries_panel(
                "Sync-write latency (probe)",
                SECONDS,
                [
                    query('ssd_syncwrite_latency_seconds{job=~"$job", instance="$instance", serial="$serial", '
                          'quantile="0.5"}', legend="{{path}} median", ref_id="A"),
                    query('ssd_syncwrite_latency_seconds{job=~"$job", instance="$instance", serial="$serial", '
                          'quantile="0.99"}', legend="{{path}} p99", ref_id="B"),
                    query(f"ssd:syncwrite_latency_seconds:median1d{SEL}", legend="{{path}} its own normal", ref_id="C"),
                ],
                description="The opt-in sync-write probe: one 8 kB write and its sync, per burst, in each "
                "configured directory on this drive. A jump against its own normal is a cache flip "
                "(SSDSyncWriteLatencyJump). Empty while the probe is off.",
                width=8,
                min_val=0,
            )
        )
        .with_row(row("Write cache"))
        .with_panel(
            state_panel(
                "Write cache history",
                [
                    query(f"ssd_write_cache_enabled{SEL}", legend="effective", ref_id="A"),
                    query(f"ssd_write_cache_expected_enabled{SEL}", legend="expected", ref_id="B"),
                ],
                WRITE_CACHE_MAPPING,
                description="Effective write cache state against the configured expectation.",
                width=16,
                height=6,
            )
        )
        .with_panel(
            table_panel(
                "Write cache by source",
                [query(f"ssd_write_cache_state{SEL}", as_table=True)],
                description="What each source (sysfs, hdparm, SCSI cache type, NVMe feature) says.",
                width=8,
                height=6,
                transformations=merge_and_organize(
                    ["source", "state"], hidden=("Time", "job", "instance", "device", "serial", "__name__", "Value")
                ),
            )
        )
    )
    return number_panels(builder.build())
