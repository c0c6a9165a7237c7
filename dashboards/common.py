"""Building blocks shared by the ssdfleet dashboards.

Everything here wraps the Grafana Foundation SDK builders so the three dashboard modules read
as a list of panels and their PromQL. Conventions, kept in one place:

* every panel and every query uses the templated data source ``${datasource}``;
* ``$job`` is a multi-value variable over the jobs that have an ssdfleet agent; Grafana
  expands "All" to the alternation of those jobs, so ``up{job=~"$job"}`` never counts
  unrelated exporters;
* per-drive tables join descriptive labels from ``ssd_drive_info`` (docs/metrics.md keeps
  them off every other series), through :func:`per_drive`, so all frames of a table carry the
  same label columns and Grafana's "merge" transformation lines them up by drive;
* timestamps are exported in seconds but Grafana's ``dateTimeAsIso`` unit takes milliseconds,
  hence ``* 1000`` wherever that unit is used.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple

from grafana_foundation_sdk.builders import common as common_builders
from grafana_foundation_sdk.builders import dashboard as dashboard_builders
from grafana_foundation_sdk.builders import prometheus, stat, statetimeline, table, timeseries
from grafana_foundation_sdk.cog import builder as cogbuilder
from grafana_foundation_sdk.models import common as common_models
from grafana_foundation_sdk.models import dashboard as models
from grafana_foundation_sdk.models.prometheus import PromQueryFormat

DATASOURCE = models.DataSourceRef(type_val="prometheus", uid="${datasource}")
TAGS = ["ssdfleet", "ssd", "storage"]

# Units, as Grafana names them.
RATIO = "percentunit"  # 0..1 shown as percent
BYTES = "bytes"  # IEC
BYTES_PER_SECOND = "Bps"
CELSIUS = "celsius"
SECONDS = "s"
TIMESTAMP_MS = "dateTimeAsIso"
IOPS = "iops"
COUNT = "short"

# Agents whose drive data is older than this count as stale on the fleet view. SMART is polled
# every few minutes; an hour means several polls in a row failed or the poller is wedged.
STALE_DATA_SECONDS = 3600

# Drive identity labels of every per-drive series (docs/metrics.md).
DRIVE_KEY = "instance, device, serial"
INFO_LABELS = "model, kind"

# Descriptive labels of ssd_drive_info, each also a table column.
DRIVE_COLUMNS = ["instance", "device", "serial", "model", "kind"]


def query(
    expr: str, legend: str = "", ref_id: str = "A", instant: bool = False, as_table: bool = False
) -> prometheus.Dataquery:
    """One Prometheus target. Tables are instant queries in table format."""
    target = prometheus.Dataquery().expr(expr).ref_id(ref_id).datasource(DATASOURCE)
    if legend:
        target = target.legend_format(legend)
    if as_table:
        target = target.format(PromQueryFormat.TABLE).instant()
    elif instant:
        target = target.instant()
    else:
        target = target.range()
    return target


def per_drive(expr: str, info_selector: str, info: str = "") -> str:
    """``expr`` reduced to one value per drive and joined with its model and kind, so that
    several such queries merge into one table row per drive. ``info``: the series to take
    model and kind from (a recorded subset of ssd_drive_info), instead of
    ``ssd_drive_info{info_selector}``."""
    return (
        f"max by ({DRIVE_KEY}) ({expr})"
        f" * on ({DRIVE_KEY}) group_left ({INFO_LABELS})"
        f" max by ({DRIVE_KEY}, {INFO_LABELS}) ({info or 'ssd_drive_info' + info_selector})"
    )


def _joined(expr: str, key: str, by: str, labels: str, info: str) -> str:
    extra = f", {by}" if by else ""
    return (f"max by ({key}{extra}) ({expr})"
            f" * on ({key}) group_left ({labels})"
            f" max by ({key}, {labels}) ({info})")


# RAID controllers (collectors/controller_view.py): a controller is (instance, controller), a
# volume adds its number, a battery its kind. Like per_drive, each helper joins the descriptive
# labels of the info family so that every frame of a table carries the same columns; ``by``
# keeps one more label of ``expr`` (a state, a cause) as a column.
CONTROLLER_KEY = "instance, controller"


def per_controller(expr: str, info_selector: str, by: str = "") -> str:
    return _joined(expr, CONTROLLER_KEY, by, "family, tool, model, firmware", f"ssd_controller_info{info_selector}")


def per_volume(expr: str, info_selector: str, by: str = "") -> str:
    return _joined(expr, f"{CONTROLLER_KEY}, volume", by, "name, raid_level, os_device",
                   f"ssd_controller_volume_info{info_selector}")


def per_battery(expr: str, info_selector: str, by: str = "") -> str:
    """A battery's model comes from ssd_controller_battery_info, which only a fitted battery
    has; one the controller reports missing gets model "-" so that its row stays."""
    missing = f'label_replace((ssd_controller_battery_present{info_selector} == 0) + 1, "model", "-", "", "")'
    return _joined(expr, f"{CONTROLLER_KEY}, kind", by, "model",
                   f"ssd_controller_battery_info{info_selector} or {missing}")


def count_or_zero(expr: str) -> str:
    """count(), but 0 instead of no data when nothing matches (a stat must say 0, not N/A)."""
    return f"count({expr}) or vector(0)"


def thresholds(*steps: Tuple[Optional[float], str]) -> dashboard_builders.ThresholdsConfig:
    return (
        dashboard_builders.ThresholdsConfig()
        .mode(models.ThresholdsMode.ABSOLUTE)
        .steps([models.Threshold(value=value, color=color) for value, color in steps])
    )


# Life left: red under 10 % (the SSDLifeLeftLow alert), orange under 25 %, yellow under 50 %.
LIFE_LEFT_THRESHOLDS = ((None, "red"), (0.1, "orange"), (0.25, "yellow"), (0.5, "green"))
# A count of problems: anything above zero is red.
PROBLEM_THRESHOLDS = ((None, "green"), (1, "red"))
TEMPERATURE_THRESHOLDS = ((None, "green"), (60, "orange"), (70, "red"))


def value_text(mapping: Dict[str, Tuple[str, str]]) -> List[models.ValueMapping]:
    """Value mappings: {"1": ("on", "green")} shows 1 as a green "on"."""
    return [
        models.ValueMap(
            options={
                value: models.ValueMappingResult(text=text, color=color, index=index)
                for index, (value, (text, color)) in enumerate(mapping.items())
            }
        )
    ]


WRITE_CACHE_MAPPING = {"1": ("on", "green"), "0": ("OFF", "red")}
UP_MAPPING = {"1": ("up", "green"), "0": ("DOWN", "red")}


def override(name: str, **properties: object) -> Tuple[models.MatcherConfig, List[models.DynamicConfigValue]]:
    """Field override matched by field name, e.g. ``override("Value #A", unit=RATIO)``.
    Property keys use Grafana's field-config ids (``displayName``, ``unit``, ``custom.width``)."""
    return (
        models.MatcherConfig(id_val="byName", options=name),
        [models.DynamicConfigValue(id_val=key.replace("__", "."), value=value) for key, value in properties.items()],
    )


def transformation(id_val: str, options: object) -> models.DataTransformerConfig:
    return models.DataTransformerConfig(id_val=id_val, options=options)


def merge_and_organize(
    columns: Sequence[str], hidden: Sequence[str] = ("Time", "job", "__name__")
) -> List[models.DataTransformerConfig]:
    """Merge instant table frames into one row per drive and order the columns."""
    return [
        transformation("merge", {}),
        transformation(
            "organize",
            {
                "excludeByName": {name: True for name in hidden},
                "indexByName": {name: index for index, name in enumerate(columns)},
                "renameByName": {},
            },
        ),
    ]


def stat_panel(
    title: str,
    unit: str,
    targets: Sequence[prometheus.Dataquery],
    description: str = "",
    steps: Sequence[Tuple[Optional[float], str]] = ((None, "green"),),
    width: int = 4,
    height: int = 4,
    color_mode: common_models.BigValueColorMode = common_models.BigValueColorMode.BACKGROUND,
    mapping: Optional[Dict[str, Tuple[str, str]]] = None,
) -> stat.Panel:
    """A single value; ``mapping`` shows values as words in colours (value -> (text, colour)),
    for flags such as a self-test that failed."""
    panel = (
        stat.Panel()
        .title(title)
        .datasource(DATASOURCE)
        .targets(list(targets))
        .unit(unit)
        .thresholds(thresholds(*steps))
        .color_mode(color_mode)
        .graph_mode(common_models.BigValueGraphMode.NONE)
        .reduce_options(common_builders.ReduceDataOptions().calcs(["lastNotNull"]).values(False))
        .span(width)
        .height(height)
    )
    if mapping:
        panel = panel.mappings(value_text(mapping))
    if description:
        panel = panel.description(description)
    return panel


def timeseries_panel(
    title: str,
    unit: str,
    targets: Sequence[prometheus.Dataquery],
    description: str = "",
    width: int = 12,
    height: int = 8,
    min_val: Optional[float] = None,
    max_val: Optional[float] = None,
) -> timeseries.Panel:
    panel = (
        timeseries.Panel()
        .title(title)
        .datasource(DATASOURCE)
        .targets(list(targets))
        .unit(unit)
        .line_width(1)
        .fill_opacity(5)
        .legend(
            common_builders.VizLegendOptions()
            .display_mode(common_models.LegendDisplayMode.TABLE)
            .placement(common_models.LegendPlacement.BOTTOM)
            .show_legend(True)
            .calcs(["lastNotNull", "max"])
        )
        .tooltip(
            common_builders.VizTooltipOptions()
            .mode(common_models.TooltipDisplayMode.MULTI)
            .sort(common_models.SortOrder.DESCENDING)
        )
        .span(width)
        .height(height)
    )
    if min_val is not None:
        panel = panel.min(min_val)
    if max_val is not None:
        panel = panel.max(max_val)
    if description:
        panel = panel.description(description)
    return panel


def state_panel(
    title: str,
    targets: Sequence[prometheus.Dataquery],
    mapping: Dict[str, Tuple[str, str]],
    description: str = "",
    width: int = 12,
    height: int = 6,
) -> statetimeline.Panel:
    panel = (
        statetimeline.Panel()
        .title(title)
        .datasource(DATASOURCE)
        .targets(list(targets))
        .mappings(value_text(mapping))
        .thresholds(thresholds((None, "text")))
        .show_value(common_models.VisibilityMode.AUTO)
        .merge_values(True)
        .fill_opacity(70)
        .line_width(0)
        .span(width)
        .height(height)
    )
    if description:
        panel = panel.description(description)
    return panel


def table_panel(
    title: str,
    targets: Sequence[prometheus.Dataquery],
    description: str = "",
    width: int = 24,
    height: int = 8,
    transformations: Sequence[models.DataTransformerConfig] = (),
    overrides: Sequence[Tuple[models.MatcherConfig, List[models.DynamicConfigValue]]] = (),
    sort_by: Optional[Tuple[str, bool]] = None,
    unit: Optional[str] = None,
) -> table.Panel:
    panel = (
        table.Panel()
        .title(title)
        .datasource(DATASOURCE)
        .targets(list(targets))
        .transformations(list(transformations))
        .filterable(True)
        .span(width)
        .height(height)
    )
    if unit:
        panel = panel.unit(unit)
    for matcher, properties in overrides:
        panel = panel.with_override(matcher, properties)
    if sort_by is not None:
        name, descending = sort_by
        panel = panel.sort_by([common_builders.TableSortByFieldState().display_name(name).desc(descending)])
    if description:
        panel = panel.description(description)
    return panel


def row(title: str) -> dashboard_builders.Row:
    # An expanded row is a header: its panels follow it at the top level of the dashboard.
    # Panels nested inside a row are only shown by Grafana when the row is collapsed.
    return dashboard_builders.Row(title)


def datasource_variable() -> dashboard_builders.DatasourceVariable:
    return dashboard_builders.DatasourceVariable("datasource").label("Data source").type("prometheus")


def site_variable() -> dashboard_builders.QueryVariable:
    """The sites a central store holds (each scraping Prometheus' ``site`` external label,
    read from the recorded fleet size). "All" is ``.*``, which also matches series without
    the label, so the same dashboard answers on one site's own Prometheus, where the
    variable has no values."""
    return _all_variable("site", "Site", "label_values(job:ssd_drives:sum, site)").all_value(".*")


def job_variable(selector: str = "") -> dashboard_builders.QueryVariable:
    return _all_variable("job", "Job", f"label_values(ssd_exporter_build_info{selector}, job)")


def _all_variable(name: str, label: str, query_text: str) -> dashboard_builders.QueryVariable:
    """A multi-value query variable that starts at "All"."""
    return (
        dashboard_builders.QueryVariable(name)
        .label(label)
        .datasource(DATASOURCE)
        .query(query_text)
        .refresh(models.VariableRefresh.ON_TIME_RANGE_CHANGED)
        .sort(models.VariableSort.ALPHABETICAL_ASC)
        .multi(True)
        .include_all(True)
        .current(models.VariableOption(selected=True, text="All", value="$__all"))
    )


def instance_variable() -> dashboard_builders.QueryVariable:
    return (
        dashboard_builders.QueryVariable("instance")
        .label("Host")
        .datasource(DATASOURCE)
        .query('label_values(ssd_exporter_build_info{job=~"$job"}, instance)')
        .refresh(models.VariableRefresh.ON_TIME_RANGE_CHANGED)
        .sort(models.VariableSort.ALPHABETICAL_ASC)
    )


def serial_variable() -> dashboard_builders.QueryVariable:
    return (
        dashboard_builders.QueryVariable("serial")
        .label("Drive (serial)")
        .description("The drive's serial number: its identity, stable when /dev names move.")
        .datasource(DATASOURCE)
        .query('label_values(ssd_drive_info{job=~"$job", instance="$instance"}, serial)')
        .refresh(models.VariableRefresh.ON_TIME_RANGE_CHANGED)
        .sort(models.VariableSort.ALPHABETICAL_ASC)
    )


def dashboard_links() -> List[cogbuilder.Builder[models.DashboardLink]]:
    return [
        dashboard_builders.DashboardLink("ssdfleet")
        .type(models.DashboardLinkType.DASHBOARDS)
        .tags(["ssdfleet"])
        .as_dropdown(True)
        .include_vars(True)
        .keep_time(True)
    ]


def new_dashboard(uid: str, title: str, description: str) -> dashboard_builders.Dashboard:
    return (
        dashboard_builders.Dashboard(title)
        .uid(uid)
        .description(description)
        .tags(TAGS)
        .editable()
        .tooltip(models.DashboardCursorSync.CROSSHAIR)
        .time("now-7d", "now")
        .timezone("browser")
        .refresh("5m")
        .links(dashboard_links())
    )


def number_panels(built: models.Dashboard) -> models.Dashboard:
    """Give every panel and row a stable id, in layout order (Grafana needs unique ids)."""
    for index, panel in enumerate(built.panels or [], start=1):
        panel.id_val = index
    return built


def drive_link(instance: str = "${__data.fields.instance}") -> cogbuilder.Builder[models.DashboardLink]:
    """Data link from a table row to the drive view of its serial. ``instance`` is the row's
    instance column by default; a table that hides that column passes ``${instance}``."""
    return (
        dashboard_builders.DashboardLink("Drive view")
        .type(models.DashboardLinkType.LINK)
        .url(
            "/d/ssdfleet-drive/ssdfleet-drive?${datasource:queryparam}&${job:queryparam}"
            f"&var-instance={instance}&var-serial=${{__data.fields.serial}}"
        )
    )
