"""Fleet overview: which drives wear out soon, which hosts misbehave, across all agents."""

from __future__ import annotations

from grafana_foundation_sdk.builders import bargauge
from grafana_foundation_sdk.builders import common as common_builders
from grafana_foundation_sdk.models import common as common_models
from grafana_foundation_sdk.models import dashboard as models

from dashboards.common import (
    BYTES,
    CELSIUS,
    COUNT,
    DATASOURCE,
    DRIVE_COLUMNS,
    DRIVE_KEY,
    LIFE_LEFT_THRESHOLDS,
    PROBLEM_THRESHOLDS,
    RATIO,
    SECONDS,
    STALE_DATA_SECONDS,
    TEMPERATURE_THRESHOLDS,
    TIMESTAMP_MS,
    UP_MAPPING,
    WRITE_CACHE_MAPPING,
    count_or_zero,
    datasource_variable,
    drive_link,
    job_variable,
    merge_and_organize,
    new_dashboard,
    number_panels,
    override,
    per_drive,
    query,
    row,
    site_variable,
    stat_panel,
    table_panel,
    thresholds,
    timeseries_panel,
    value_text,
)

UID = "ssdfleet-fleet"
# Every fleet query selects the site (a scraping Prometheus' `site` external label, present at
# a central store; "All" matches series without it, so one Prometheus answers too) and the job.
SEL = '{site=~"$site", job=~"$job"}'
DAY = 86400
MONTH_DAYS = 30  # the wear-out histogram uses 30-day buckets, not calendar months

# The bands of the recording rule job:ssd_life_left_ratio:count (the alert thresholds 3 % and
# 10 %, then quarters, lower edge included). Panels read the recorded counts (a few series)
# instead of counting every drive again; `or vector(0)` shows an empty band as 0.
LIFE_BANDS = [
    # legend, band label of the recorded series, colour
    ("75-100 %", "75-100%", "dark-green"),
    ("50-75 %", "50-75%", "green"),
    ("25-50 %", "25-50%", "yellow"),
    ("10-25 %", "10-25%", "orange"),
    ("3-10 %", "3-10%", "red"),
    ("0-3 %", "0-3%", "dark-red"),
]


def recorded_count(record: str, **matchers: str) -> str:
    """The fleet-wide total of a recorded count (one series per job and label value), or 0."""
    selector = ", ".join(['site=~"$site"', 'job=~"$job"', *(f'{k}{v}' if v[:1] in "=!" else f'{k}="{v}"' for k, v in matchers.items())])
    return f"sum({record}{{{selector}}}) or vector(0)"


# Fleet panels read only what the recording rules (deploy/prometheus/ssdfleet-recording.yml)
# record per job and per host: counts, rankings of ten per job with their columns, and per-host
# summaries. No fleet query selects a per-drive family, so the dashboard answers the same at a
# central store of 1,000,000 drives that holds only the sites' recorded series (issue 33;
# tests/test_fleet_limits.py prices every query there). The host and drive views read raw series,
# which stay cheap there.
# The ten drives with the least life left, from the recorded ranking (ten per job, ties broken
# by the data there): ranked again by the ranking's recorded key, so that the table shows ten
# whatever the number of jobs and sites, and the same ten on every store.
WORST = (f"job:ssd_life_left_ratio:bottom10{SEL} and on ({DRIVE_KEY}) "
         f"bottomk(10, job:ssd_life_left_ratio:bottom10_key{SEL})")
# Model and kind of the drives the fleet lists show (recorded for those drives only).
LISTED_INFO = f"job:ssd_drive_info:listed{SEL}"
# The ten hottest drives, from the recording rule's ranking (ten per job, and per shard where
# shards add a label: sharded Prometheus servers behind Thanos): the panels rank those few
# again (topk), so they show ten whatever the number of jobs or shards, without ranking the fleet.
HOTTEST_TEN = f"topk(10, job:ssd_temperature_celsius:top10{SEL})"


def _fixed_colour(colour: str) -> dict:
    return {"mode": "fixed", "fixedColor": colour}


def _life_bands_panel() -> bargauge.Panel:
    targets = [
        query(
            recorded_count("job:ssd_life_left_ratio:count", band=band),
            legend=legend,
            ref_id=chr(ord("A") + i),
            instant=True,
        )
        for i, (legend, band, _) in enumerate(LIFE_BANDS)
    ]
    panel = (
        bargauge.Panel()
        .title("Drives by life left")
        .description(
            "How many drives have how much estimated life left (ssd_life_left_ratio, counted by the "
            "recording rule job:ssd_life_left_ratio:count)."
        )
        .datasource(DATASOURCE)
        .targets(targets)
        .unit(COUNT)
        .min(0)
        .orientation(common_models.VizOrientation.HORIZONTAL)
        .display_mode(common_models.BarGaugeDisplayMode.GRADIENT)
        .reduce_options(common_builders.ReduceDataOptions().calcs(["lastNotNull"]).values(False))
        .span(8)
        .height(8)
    )
    for legend, _, colour in LIFE_BANDS:
        matcher, properties = override(legend, color=_fixed_colour(colour))
        panel = panel.with_override(matcher, properties)
    return panel


def _wearout_months_panel() -> bargauge.Panel:
    # One recorded count_values (job:ssd_projected_wearout:count_by_month) holds all twelve
    # windows; each bar reads its window's few series. The first window also takes drives
    # whose projected wear-out is already past.
    targets = [
        query(
            recorded_count("job:ssd_projected_wearout:count_by_month", month=str(month + 1)),
            legend=f"{month * MONTH_DAYS + 1}-{(month + 1) * MONTH_DAYS} d" if month else f"<= {MONTH_DAYS} d",
            ref_id=chr(ord("A") + month),
            instant=True,
        )
        for month in range(12)
    ]
    return (
        bargauge.Panel()
        .title("Wear-outs expected per month, next 12 months")
        .description(
            "Drives whose projected wear-out (ssd_projected_wearout_timestamp_seconds, the agent's best "
            "method) falls in each 30-day window from now: the replacement budget (recording rule "
            "job:ssd_projected_wearout:count_by_month)."
        )
        .datasource(DATASOURCE)
        .targets(targets)
        .unit(COUNT)
        .min(0)
        .orientation(common_models.VizOrientation.VERTICAL)
        .display_mode(common_models.BarGaugeDisplayMode.BASIC)
        .reduce_options(common_builders.ReduceDataOptions().calcs(["lastNotNull"]).values(False))
        .thresholds(thresholds((None, "green"), (1, "orange")))
        .span(16)
        .height(8)
    )


def _worst_drives_table():
    # Each column restricted to the ten worst drives so the merged table has ten rows.
    only_worst = f" and on ({DRIVE_KEY}) {WORST}"
    targets = [
        query(per_drive(WORST, SEL, info=LISTED_INFO), ref_id="A", as_table=True),
        query(per_drive(f"job:ssd_projected_wearout_timestamp_seconds:life_bottom10{SEL} * 1000{only_worst}", SEL,
                        info=LISTED_INFO), ref_id="B", as_table=True),
        query(per_drive(f"job:ssd_write_rate_bytes_per_second:life_bottom10{SEL} * {DAY}{only_worst}", SEL,
                        info=LISTED_INFO), ref_id="C", as_table=True),
    ]
    panel = table_panel(
        "Worst 10 drives by life left",
        targets,
        description="Lowest ssd_life_left_ratio among the selected sites and jobs, from the recording rule "
        "job:ssd_life_left_ratio:bottom10 (ten per job; at equal life left the drive that has written more "
        "comes first), with model and kind. Click a row for the drive view.",
        width=24,
        height=10,
        transformations=merge_and_organize(DRIVE_COLUMNS + ["Value #A", "Value #B", "Value #C"]),
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
        ],
        sort_by=("Life left", False),
    )
    return panel.data_links([drive_link()])


def _write_cache_off_table():
    return table_panel(
        "Write caches off",
        [
            query(per_drive(f"job:ssd_write_cache_enabled:bottom10{SEL} == 0", SEL, info=LISTED_INFO),
                  ref_id="A", as_table=True),
            query(
                per_drive(
                    f"job:ssd_write_cache_expected_enabled:bottom10{SEL} and on ({DRIVE_KEY}) "
                    f"job:ssd_write_cache_enabled:bottom10{SEL} == 0", SEL, info=LISTED_INFO,
                ),
                ref_id="B",
                as_table=True,
            ),
        ],
        description="Drives whose volatile write cache is disabled, and whether the agent was told to expect "
        "that: up to ten per job (recording rule job:ssd_write_cache_enabled:bottom10); the stat beside "
        "counts them all.",
        width=16,
        height=6,
        transformations=merge_and_organize(DRIVE_COLUMNS + ["Value #A", "Value #B"]),
        overrides=[
            override(
                "Value #A",
                displayName="Write cache",
                mappings=value_text(WRITE_CACHE_MAPPING),
                **{"custom__cellOptions": {"type": "color-text"}},
            ),
            override("Value #B", displayName="Expected", mappings=value_text(WRITE_CACHE_MAPPING)),
        ],
    ).data_links([drive_link()])


def _hottest_drives_panel() -> bargauge.Panel:
    return (
        bargauge.Panel()
        .title("Hottest drives")
        .description(
            "The ten highest current temperatures (any sensor) among the selected jobs (from the "
            "recording rule job:ssd_temperature_celsius:top10, ten per job)."
        )
        .datasource(DATASOURCE)
        .targets([query(f"sort_desc({HOTTEST_TEN})", legend="{{instance}} {{device}} {{serial}}", instant=True)])
        .unit(CELSIUS)
        .min(0)
        .max(90)
        .thresholds(thresholds(*TEMPERATURE_THRESHOLDS))
        .orientation(common_models.VizOrientation.HORIZONTAL)
        .display_mode(common_models.BarGaugeDisplayMode.GRADIENT)
        .reduce_options(common_builders.ReduceDataOptions().calcs(["lastNotNull"]).values(False))
        .span(12)
        .height(9)
    )


def _agents_table():
    targets = [
        query(f"max by (job, instance) (up{SEL})", ref_id="A", as_table=True),
        query(f"max by (job, instance) (instance:ssd_data_age_seconds:max{SEL})", ref_id="B", as_table=True),
        query(f"max by (job, instance) (ssd_drives{SEL})", ref_id="C", as_table=True),
        query(f"max by (job, instance) (instance:ssd_collectors_failing:count{SEL})", ref_id="D", as_table=True),
        query(f"max by (job, instance) (ssd_history_healthy{SEL})", ref_id="E", as_table=True),
    ]
    return table_panel(
        "Agents",
        targets,
        description=f"Every agent: scrape status, age of its oldest drive data (stale above {STALE_DATA_SECONDS} s), "
        "drives seen, failing collectors, and whether its SQLite history is on disk.",
        width=12,
        height=9,
        transformations=merge_and_organize(
            ["job", "instance", "Value #A", "Value #B", "Value #C", "Value #D", "Value #E"], hidden=("Time",)
        ),
        overrides=[
            override(
                "Value #A",
                displayName="Scrape",
                mappings=value_text(UP_MAPPING),
                **{"custom__cellOptions": {"type": "color-text"}},
            ),
            override(
                "Value #B",
                displayName="Data age",
                unit=SECONDS,
                thresholds=thresholds((None, "green"), (STALE_DATA_SECONDS, "red")).build(),
                **{"custom__cellOptions": {"type": "color-text"}},
            ),
            override("Value #C", displayName="Drives"),
            override(
                "Value #D",
                displayName="Collectors failing",
                thresholds=thresholds(*PROBLEM_THRESHOLDS).build(),
                **{"custom__cellOptions": {"type": "color-text"}},
            ),
            override(
                "Value #E",
                displayName="History on disk",
                mappings=value_text({"1": ("yes", "green"), "0": ("in memory", "orange")}),
            ),
        ],
        sort_by=("Data age", True),
    )


def _collectors_failing_table():
    return table_panel(
        "Collectors failing",
        [
            query(f"job:ssd_collector_success:bottom10{SEL} == 0", ref_id="A", as_table=True),
            query(
                f"increase(job:ssd_collector_errors:bottom10{SEL}[1h]) and on (job, instance, collector) "
                f"job:ssd_collector_success:bottom10{SEL} == 0",
                ref_id="B",
                as_table=True,
            ),
        ],
        description="Collectors whose last run failed for at least one drive (ssd_collector_success == 0), "
        "with their errors over the last hour: up to ten per job (recording rule "
        "job:ssd_collector_success:bottom10); the stat counts them all.",
        width=12,
        height=8,
        transformations=merge_and_organize(
            ["job", "instance", "collector", "Value #A", "Value #B"], hidden=("Time", "__name__")
        ),
        overrides=[
            override(
                "Value #A",
                displayName="Success",
                mappings=value_text({"0": ("FAILING", "red"), "1": ("ok", "green")}),
                **{"custom__cellOptions": {"type": "color-text"}},
            ),
            override("Value #B", displayName="Errors, last hour", decimals=0),
        ],
    )


def build() -> models.Dashboard:
    builder = (
        new_dashboard(
            UID,
            "ssdfleet / Fleet overview",
            "SSD wear, write caches, temperatures and agent health across every host running the ssdfleet agent.",
        )
        .with_variable(datasource_variable())
        .with_variable(site_variable())
        .with_variable(job_variable('{site=~"$site"}'))
        .with_row(row("Fleet"))
        .with_panel(
            stat_panel(
                "Drives",
                COUNT,
                [query(f"sum(job:ssd_drives:sum{SEL}) or vector(0)", instant=True)],
                description="Drives reported by all agents (recording rule job:ssd_drives:sum).",
                steps=((None, "blue"),),
            )
        )
        .with_panel(
            stat_panel(
                "Under 10 % life left",
                COUNT,
                [query(recorded_count("job:ssd_life_left_ratio:count", band='=~"0-3%|3-10%"'), instant=True)],
                description="Drives to replace now.",
                steps=PROBLEM_THRESHOLDS,
            )
        )
        .with_panel(
            stat_panel(
                "Wear-out within 90 days",
                COUNT,
                [query(recorded_count("job:ssd_projected_wearout:count", within_days="90"), instant=True)],
                description="Drives whose projected wear-out is less than 90 days away "
                "(recording rule job:ssd_projected_wearout:count).",
                steps=PROBLEM_THRESHOLDS,
            )
        )
        .with_panel(
            stat_panel(
                "Write caches off",
                COUNT,
                [query(recorded_count("job:ssd_write_cache_disabled:count"), instant=True)],
                description="Drives with the volatile write cache disabled: writes are much slower "
                "(recording rule job:ssd_write_cache_disabled:count).",
                steps=((None, "green"), (1, "orange")),
            )
        )
        .with_panel(
            stat_panel(
                "Stale agents",
                COUNT,
                [query(recorded_count("job:ssd_agents_stale:count"), instant=True)],
                description=f"Agents Prometheus cannot scrape (up == 0) or whose drive data is older "
                f"than {STALE_DATA_SECONDS} s (recording rule job:ssd_agents_stale:count).",
                steps=PROBLEM_THRESHOLDS,
            )
        )
        .with_panel(
            stat_panel(
                "Collectors failing",
                COUNT,
                [query(recorded_count("job:ssd_collectors_failing:count"), instant=True)],
                description="Collector runs that failed (ssd_collector_success == 0), all agents "
                "(recording rule job:ssd_collectors_failing:count).",
                steps=PROBLEM_THRESHOLDS,
            )
        )
        .with_row(row("Wear"))
        .with_panel(_life_bands_panel())
        .with_panel(_wearout_months_panel())
        .with_panel(_worst_drives_table())
        .with_panel(
            timeseries_panel(
                "Life left, 10 worst drives",
                RATIO,
                [
                    query(
                        f"bottomk(10, job:ssd_life_left_ratio:bottom10{SEL})",
                        legend="{{instance}} {{device}} {{serial}}",
                    )
                ],
                description="Life left of the ten drives with the least, from the recording rule "
                "job:ssd_life_left_ratio:bottom10 (ten per job, so a week-long graph reads ten series per step "
                "rather than ranking every drive of the fleet).",
                width=12,
                min_val=0,
                max_val=1,
            )
        )
        .with_panel(
            timeseries_panel(
                "Host writes per day, 10 busiest drives",
                BYTES,
                [
                    query(
                        f"topk(10, job:ssd_host_written_bytes:top10_rate1d{SEL} * {DAY})",
                        legend="{{instance}} {{device}} {{serial}}",
                    )
                ],
                description="Bytes written by the host over the last day, the write load that wears "
                "drives out (recording rule job:ssd_host_written_bytes:top10_rate1d, the ten busiest "
                "drives of each job ranked once per evaluation, so a week-long graph reads ten series "
                "per step rather than ranking every drive of the fleet).",
                width=12,
                min_val=0,
            )
        )
        .with_row(row("Write caches and temperatures"))
        .with_panel(_write_cache_off_table())
        .with_panel(
            stat_panel(
                "Write cache not as expected",
                COUNT,
                [query(recorded_count("job:ssd_write_cache_mismatch:sum"), instant=True)],
                description="Drives whose write cache state differs from the configured expectation "
                "(recording rule job:ssd_write_cache_mismatch:sum).",
                steps=PROBLEM_THRESHOLDS,
                width=8,
                height=6,
            )
        )
        .with_panel(_hottest_drives_panel())
        .with_panel(
            timeseries_panel(
                "Temperature, 10 hottest drives",
                CELSIUS,
                [query(HOTTEST_TEN, legend="{{instance}} {{device}} {{serial}}")],
                description="Hottest sensor of the ten hottest drives among the selected jobs (from the "
                "recording rule job:ssd_temperature_celsius:top10, ten per job, ranked once per evaluation).",
                width=12,
                height=9,
            )
        )
        .with_row(row("Agents"))
        .with_panel(_agents_table())
        .with_panel(_collectors_failing_table())
        .with_panel(
            timeseries_panel(
                "Collector run time, slowest agent",
                SECONDS,
                [query(f"max by (collector) (job:ssd_collector_duration_seconds:max{SEL})", legend="{{collector}}")],
                description="How long each collector's last run took on the slowest agent (recording rule "
                "job:ssd_collector_duration_seconds:max).",
                width=12,
                height=8,
                min_val=0,
            )
        )
        .with_panel(
            stat_panel(
                "Stuck probes",
                COUNT,
                [query(count_or_zero(f"ssd_probe_stuck{SEL} == 1"), instant=True)],
                description="Devices quarantined because a probe outlived SIGKILL (D state).",
                steps=PROBLEM_THRESHOLDS,
                width=12,
                height=8,
            )
        )
    )
    return number_panels(builder.build())
