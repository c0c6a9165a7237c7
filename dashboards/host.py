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
    per_battery,
    per_controller,
    per_drive,
    per_volume,
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


# RAID controllers (issue 28): the volumes' write policy now and as configured, since a volume
# configured write-back that runs write-through (the battery failed, is missing, charging or
# learning) makes every fsync of the database wait for the drives.
HEALTHY_MAPPING = {"1": ("ok", "green"), "0": ("DEGRADED", "red")}
WRITE_POLICY_MAPPING = {"1": ("write-back", "green"), "0": ("write-through", "blue")}
WRITE_BACK_LOST_MAPPING = {"1": ("WRITE-BACK LOST", "red"), "0": ("as configured", "green")}
UNPROTECTED_MAPPING = {"1": ("UNPROTECTED", "orange"), "0": ("protected", "green")}
YES_BAD_MAPPING = {"1": ("YES", "red"), "0": ("no", "green")}
LEARN_MAPPING = {"1": ("running", "orange"), "0": ("no", "green")}
PRESENT_MAPPING = {"1": ("fitted", "green"), "0": ("NONE", "red")}
CONTROLLER_HIDDEN = ("Time", "job", "__name__")


def _mapped(name: str, title: str, mapping, background: bool = False):
    cell = {"type": "color-background", "mode": "basic"} if background else {"type": "color-text"}
    return override(name, displayName=title, mappings=value_text(mapping), **{"custom__cellOptions": cell})


def _controllers_table():
    columns = ["instance", "controller", "family", "tool", "model", "firmware", "cause", "Value #A", "Value #B",
               "Value #C", "Value #D"]
    targets = [
        query(per_controller(f"ssd_controller_healthy{SEL}", SEL), ref_id="A", as_table=True),
        query(per_controller(f"ssd_controller_cache_bytes{SEL}", SEL), ref_id="B", as_table=True),
        query(per_controller(f"ssd_controller_last_read_timestamp_seconds{SEL} * 1000", SEL), ref_id="C",
              as_table=True),
        query(per_controller(f"ssd_controller_write_through_cause{SEL}", SEL, by="cause"), ref_id="D",
              as_table=True),
    ]
    return table_panel(
        "RAID controllers on $instance",
        targets,
        description="One row per controller (MegaRAID/PERC, HPE Smart Array, Adaptec): the tool that read it, "
        "model, firmware, status, cache size and when the tool last answered. \"Write-through cause\" names the "
        "battery condition (failed, missing, learn cycle, charging) that makes the controller drop write-back "
        "volumes to write-through.",
        width=24,
        height=5,
        transformations=merge_and_organize(columns, hidden=CONTROLLER_HIDDEN + ("Value #D",)),
        overrides=[
            override("controller", displayName="Controller"),
            override("cause", displayName="Write-through cause",
                     **{"custom__cellOptions": {"type": "color-text"}, "color": {"mode": "fixed", "fixedColor": "red"}}),
            _mapped("Value #A", "Status", HEALTHY_MAPPING, background=True),
            override("Value #B", displayName="Cache", unit=BYTES),
            override("Value #C", displayName="Last read", unit=TIMESTAMP_MS),
        ],
    )


def _volumes_table():
    columns = ["instance", "controller", "volume", "name", "raid_level", "os_device", "state", "Value #A",
               "Value #B", "Value #C", "Value #D", "Value #E", "Value #F"]
    wb = "ssd_controller_volume_write_back"
    targets = [
        query(per_volume(f"{wb}{{job=~\"$job\", instance=\"$instance\", policy=\"current\"}}", SEL), ref_id="A",
              as_table=True),
        query(per_volume(f"{wb}{{job=~\"$job\", instance=\"$instance\", policy=\"default\"}}", SEL), ref_id="B",
              as_table=True),
        query(per_volume(f"ssd_controller_volume_write_back_lost{SEL}", SEL), ref_id="C", as_table=True),
        query(per_volume(f"ssd_controller_volume_state{SEL} == 1", SEL, by="state"), ref_id="D", as_table=True),
        query(per_volume(f"ssd_controller_volume_progress_ratio{SEL}", SEL), ref_id="E", as_table=True),
        query(per_volume(f"ssd_controller_volume_volatile_cache_unprotected{SEL}", SEL), ref_id="F", as_table=True),
    ]
    return table_panel(
        "Volumes: write cache now and as configured",
        targets,
        description="One row per volume (virtual disk, logical drive). \"Write cache now\" is the policy the "
        "controller runs, \"configured\" its default: a volume configured write-back that runs write-through is "
        "WRITE-BACK LOST, and every fsync of a database on it waits for the drives (SSDControllerWriteBackLost "
        "pages). Progress is a rebuild's or initialisation's. UNPROTECTED: acknowledged writes sit in a cache a "
        "power cut loses (write-back with CachedBadBBU, or drives' own caches on without power-loss protection).",
        width=24,
        height=6,
        transformations=merge_and_organize(columns, hidden=CONTROLLER_HIDDEN + ("Value #D",)),
        overrides=[
            override("controller", displayName="Controller"),
            override("volume", displayName="Volume"),
            override("raid_level", displayName="RAID"),
            override("os_device", displayName="OS device"),
            override("state", displayName="State"),
            _mapped("Value #A", "Write cache now", WRITE_POLICY_MAPPING),
            _mapped("Value #B", "Configured", WRITE_POLICY_MAPPING),
            _mapped("Value #C", "Write-back lost", WRITE_BACK_LOST_MAPPING, background=True),
            override("Value #E", displayName="Progress", unit=RATIO, decimals=0),
            _mapped("Value #F", "Volatile cache", UNPROTECTED_MAPPING),
        ],
        sort_by=("Write-back lost", True),
    )


def _batteries_table():
    columns = ["instance", "controller", "kind", "model", "state", "Value #A", "Value #B", "Value #C", "Value #D",
               "Value #E", "Value #F"]
    targets = [
        query(per_battery(f"ssd_controller_battery_present{SEL}", SEL), ref_id="A", as_table=True),
        query(per_battery(f"ssd_controller_battery_state{SEL} == 1", SEL, by="state"), ref_id="B", as_table=True),
        query(per_battery(f"ssd_controller_battery_charge_ratio{SEL}", SEL), ref_id="C", as_table=True),
        query(per_battery(f"ssd_controller_battery_temperature_celsius{SEL}", SEL), ref_id="D", as_table=True),
        query(per_battery(f"ssd_controller_battery_learn_active{SEL}", SEL), ref_id="E", as_table=True),
        query(per_battery(f"ssd_controller_battery_replacement_required{SEL}", SEL), ref_id="F", as_table=True),
    ]
    return table_panel(
        "Batteries and flash modules (BBU, CacheVault, FBWC, ZMM)",
        targets,
        description="What keeps the controller's write-back cache safe across a power cut. A battery that is "
        "missing, failed, charging or running a learn cycle makes a controller configured the usual way "
        "(NoCachedBadBBU) run its volumes write-through. The next scheduled learn cycle, where the controller "
        "reports one, is ssd_controller_battery_next_learn_timestamp_seconds (SSDControllerLearnCycleSoon).",
        width=24,
        height=5,
        transformations=merge_and_organize(columns, hidden=CONTROLLER_HIDDEN + ("Value #B",)),
        overrides=[
            override("controller", displayName="Controller"),
            override("kind", displayName="Kind"),
            override("model", displayName="Model"),
            override("state", displayName="State"),
            _mapped("Value #A", "Fitted", PRESENT_MAPPING, background=True),
            override("Value #C", displayName="Charge", unit=RATIO, decimals=0),
            override("Value #D", displayName="Temperature", unit=CELSIUS),
            _mapped("Value #E", "Learn cycle", LEARN_MAPPING),
            _mapped("Value #F", "Replace", YES_BAD_MAPPING, background=True),
        ],
    )


def _controller_drives_table():
    labels = "controller, slot, device_id, volume, device, serial, model, state"
    return table_panel(
        "Drives behind the controllers",
        [query(f"max by (instance, {labels}) (ssd_controller_drive_info{SEL})", ref_id="A", as_table=True)],
        description="Each drive the controller reports: its slot, the device id smartctl reads it by "
        "(-d megaraid,N), its volume and its state. Device and serial are filled when the agent reads the drive "
        "itself (through the controller): the drive view of that serial has its wear and health.",
        width=24,
        height=6,
        transformations=merge_and_organize(
            ["instance", "controller", "slot", "device_id", "volume", "device", "serial", "model", "state"],
            hidden=CONTROLLER_HIDDEN + ("Value",)),
        overrides=[override("device_id", displayName="Device id (-d megaraid,N)")],
    ).data_links([drive_link(instance="${instance}")])


def _controller_panels() -> list:
    """The "RAID controllers" row: tables of controllers, volumes, batteries and drives, the
    write-back-lost history and rebuild progress, battery charge and temperature."""
    volume_legend = "{{controller}} volume {{volume}}"
    battery_legend = "{{controller}} {{kind}}"
    return [
        _controllers_table(),
        _volumes_table(),
        state_panel(
            "Write-back lost (configured write-back, running write-through)",
            [query(f"ssd_controller_volume_write_back_lost{SEL}", legend=volume_legend)],
            WRITE_BACK_LOST_MAPPING,
            description="ssd_controller_volume_write_back_lost per volume over time: when the controller "
            "dropped to write-through and when it came back (a learn cycle ends, a battery is replaced).",
            width=12,
            height=6,
        ),
        timeseries_panel(
            "Rebuild and initialisation progress",
            RATIO,
            [query(f"ssd_controller_volume_progress_ratio{SEL}", legend=volume_legend)],
            description="ssd_controller_volume_progress_ratio: a rebuilding or initialising volume's progress. "
            "A degraded volume pages (SSDControllerVolumeDegraded); a rebuild is a ticket.",
            width=12,
            height=6,
            min_val=0,
            max_val=1,
        ),
        _batteries_table(),
        timeseries_panel(
            "Battery charge",
            RATIO,
            [query(f"ssd_controller_battery_charge_ratio{SEL}", legend=battery_legend)],
            description="Relative state of charge of each battery (ssd_controller_battery_charge_ratio).",
            width=12,
            height=6,
            min_val=0,
            max_val=1,
        ),
        timeseries_panel(
            "Battery temperature",
            CELSIUS,
            [query(f"ssd_controller_battery_temperature_celsius{SEL}", legend=battery_legend)],
            description="ssd_controller_battery_temperature_celsius: a hot battery ages fast and may stop charging.",
            width=12,
            height=6,
        ),
        _controller_drives_table(),
    ]


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
    )
    builder = builder.with_row(row("RAID controllers"))
    for panel in _controller_panels():
        builder = builder.with_panel(panel)
    builder = (
        builder.with_row(row("I/O (iostat)"))
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
