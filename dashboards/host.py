"""Host view: every drive of one host (variable ``instance``), its wear, load and write cache."""

from __future__ import annotations

from grafana_foundation_sdk.models import dashboard as models

from dashboards.common import (
    BYTES,
    BYTES_PER_SECOND,
    CELSIUS,
    DRIVE_COLUMNS,
    IOPS,
    LIFE_LEFT_THRESHOLDS,
    RATIO,
    SECONDS,
    TEMPERATURE_THRESHOLDS,
    TIMESTAMP_MS,
    WRITE_CACHE_MAPPING,
    datasource_variable,
    drive_link,
    instance_variable,
    job_variable,
    merge_and_organize,
    new_dashboard,
    number_panels,
    override,
    per_drive,
    query,
    row,
    state_panel,
    table_panel,
    thresholds,
    timeseries_panel,
    value_text,
)

UID = "ssdfleet-host"
SEL = '{job=~"$job", instance="$instance"}'
DAY = 86400
RATE = "$__rate_interval"
LEGEND = "{{device}} {{serial}}"


def _drives_table():
    columns = ["Value #A", "Value #B", "Value #C", "Value #D", "Value #E", "Value #F", "Value #G"]
    targets = [
        query(per_drive(f"ssd_life_left_ratio{SEL}", SEL), ref_id="A", as_table=True),
        query(per_drive(f"ssd_projected_wearout_timestamp_seconds{SEL} * 1000", SEL), ref_id="B", as_table=True),
        query(per_drive(f"ssd_write_rate_bytes_per_second{SEL} * {DAY}", SEL), ref_id="C", as_table=True),
        query(per_drive(f"ssd_temperature_celsius{SEL}", SEL), ref_id="D", as_table=True),
        query(per_drive(f"ssd_write_cache_enabled{SEL}", SEL), ref_id="E", as_table=True),
        query(per_drive(f"rate(ssd_io_busy_seconds_total{SEL}[5m])", SEL), ref_id="F", as_table=True),
        query(per_drive(f"ssd_data_age_seconds{SEL}", SEL), ref_id="G", as_table=True),
    ]
    return table_panel(
        "Drives on $instance",
        targets,
        description="One row per drive: life left, projected wear-out (agent's best method), host writes per "
        "day (smoothed by the agent over days), hottest sensor, write cache, %util over 5 minutes and the "
        "age of the health data. Click a row for the drive view.",
        width=24,
        height=8,
        transformations=merge_and_organize(DRIVE_COLUMNS + columns, hidden=("Time", "instance", "job", "__name__")),
        overrides=[
            override(
                "Value #A",
                displayName="Life left",
                unit=RATIO,
                decimals=1,
                thresholds=thresholds(*LIFE_LEFT_THRESHOLDS).build(),
                **{"custom__cellOptions": {"type": "color-background", "mode": "gradient"}},
            ),
            override("Value #B", displayName="Projected wear-out", unit=TIMESTAMP_MS),
            override("Value #C", displayName="Writes per day", unit=BYTES),
            override(
                "Value #D",
                displayName="Hottest sensor",
                unit=CELSIUS,
                thresholds=thresholds(*TEMPERATURE_THRESHOLDS).build(),
                **{"custom__cellOptions": {"type": "color-text"}},
            ),
            override(
                "Value #E",
                displayName="Write cache",
                mappings=value_text(WRITE_CACHE_MAPPING),
                **{"custom__cellOptions": {"type": "color-text"}},
            ),
            override("Value #F", displayName="Utilisation", unit=RATIO, decimals=1),
            override("Value #G", displayName="Data age", unit=SECONDS),
        ],
        sort_by=("Life left", False),
    ).data_links([drive_link(instance="${instance}")])


def build() -> models.Dashboard:
    builder = (
        new_dashboard(
            UID,
            "ssdfleet / Host",
            "Every SSD of one host: wear, projected wear-out, write load, "
            "temperatures, write cache and iostat-style utilisation and latency.",
        )
        .with_variable(datasource_variable())
        .with_variable(job_variable())
        .with_variable(instance_variable())
        .with_row(row("Drives"))
        .with_panel(_drives_table())
        .with_row(row("Wear"))
        .with_panel(
            timeseries_panel(
                "Life left",
                RATIO,
                [query(f"ssd_life_left_ratio{SEL}", legend=LEGEND)],
                description="ssd_life_left_ratio: 1 = new, 0 = worn out.",
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
                        f"ssd_projected_wearout_timestamp_seconds{SEL} * 1000",
                        legend="{{device}} {{serial}} ({{method}})",
                    )
                ],
                description="When each drive's life left reaches 0, by the agent's best method "
                "(observed, rated or trend). A line that moves closer means writes sped up.",
            )
        )
        .with_panel(
            timeseries_panel(
                "Host writes per day",
                BYTES,
                [
                    query(f"ssd:host_written_bytes:rate1d{SEL} * {DAY}", legend=LEGEND, ref_id="A"),
                    query(
                        f"ssd_write_rate_bytes_per_second{SEL} * {DAY}",
                        legend="{{device}} (agent, smoothed)",
                        ref_id="B",
                    ),
                ],
                description="Bytes written by the host per day: Prometheus's rate over one day, and "
                "the agent's own multi-day smoothing used for the projection.",
                min_val=0,
            )
        )
        .with_panel(
            timeseries_panel(
                "Temperatures",
                CELSIUS,
                [query(f"ssd_temperature_celsius{SEL}", legend="{{device}} {{sensor}}")],
                description="Every sensor of every drive (ssd_temperature_celsius).",
            )
        )
        .with_row(row("Write cache"))
        .with_panel(
            state_panel(
                "Write cache",
                [query(f"ssd_write_cache_enabled{SEL}", legend=LEGEND)],
                WRITE_CACHE_MAPPING,
                description="Effective volatile write cache state per drive (ssd_write_cache_enabled); "
                "absent when no source could tell.",
                width=24,
                height=5,
            )
        )
        .with_row(row("I/O (iostat)"))
        .with_panel(
            timeseries_panel(
                "Utilisation (%util)",
                RATIO,
                [query(f"rate(ssd_io_busy_seconds_total{SEL}[{RATE}])", legend=LEGEND)],
                description="Share of time with I/O in flight. Near 100 % on SSDs means queued, not "
                "necessarily saturated.",
                min_val=0,
                max_val=1,
            )
        )
        .with_panel(
            timeseries_panel(
                "Await (r_await, w_await)",
                SECONDS,
                [
                    query(
                        f"rate(ssd_io_read_time_seconds_total{SEL}[{RATE}]) / rate(ssd_io_reads_completed_total{SEL}[{RATE}])",
                        legend="{{device}} r_await",
                        ref_id="A",
                    ),
                    query(
                        f"rate(ssd_io_write_time_seconds_total{SEL}[{RATE}]) / rate(ssd_io_writes_completed_total{SEL}[{RATE}])",
                        legend="{{device}} w_await",
                        ref_id="B",
                    ),
                ],
                description="Average time per completed read / write, as iostat computes it from the time and completion "
                "counters.",
                min_val=0,
            )
        )
        .with_panel(
            timeseries_panel(
                "IOPS",
                IOPS,
                [
                    query(f"rate(ssd_io_reads_completed_total{SEL}[{RATE}])", legend="{{device}} r/s", ref_id="A"),
                    query(f"rate(ssd_io_writes_completed_total{SEL}[{RATE}])", legend="{{device}} w/s", ref_id="B"),
                ],
                min_val=0,
            )
        )
        .with_panel(
            timeseries_panel(
                "Throughput",
                BYTES_PER_SECOND,
                [
                    query(f"rate(ssd_io_read_bytes_total{SEL}[{RATE}])", legend="{{device}} read", ref_id="A"),
                    query(f"rate(ssd_io_written_bytes_total{SEL}[{RATE}])", legend="{{device}} written", ref_id="B"),
                ],
                min_val=0,
            )
        )
    )
    return number_panels(builder.build())
