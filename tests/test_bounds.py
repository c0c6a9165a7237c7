"""The bounds table (collectors/model.py FIGURE_BOUNDS, DEFECT_BOUNDS) and evidence.contain.

* every numeric field of every dataclass of the reading model has a declared bound (or a
  reason it is not a figure): a new figure cannot skip the table;
* every defect type a parser produces has its own bound, every bound names its source;
* five unmodified real reports exported defect counters no drive can have (an all-ones 48-bit
  value, 16-bit sentinels, counts above the drive's sector count): they are now withheld, each
  with its reason, and every other figure of those reports stands;
* a table of impossible values (capacity negative, 0, 1e178, 10**3239; critical warning above
  255; media errors of 2**63 - 1; sentinels of every width; sensors out of range) is withheld;
* every real report in tests/fixtures comes out of its parser within the table.
"""

from __future__ import annotations

import dataclasses
import json
import typing
from typing import Any, Dict, List, Tuple

import pytest

from collectors import controller_model, evidence
from collectors import model as model_module
from collectors.fusionio.parse import parse_status, read_status
from collectors.model import (
    DEFAULT_DEFECT_BOUND,
    DEFECT_BOUNDS,
    FIGURE_BOUNDS,
    NOT_FIGURES,
    DriveReading,
    Temperature,
    Voltage,
)
from collectors.shannon import parse as shannon_parse
from collectors.smartctl import attributes as attrs
from collectors.smartctl import parse_smartctl_json
from collectors.smartctl.text_report import parse_smartctl_text_reading
from tests.bounds import FLAGS, METRIC_BOUNDS, OTHER_DRIVE_FAMILIES, metrics_violations, reading_violations
from tests.conftest import ROOT, fixture_files, read_fixture

_NUMBERS = (int, float)


# ----------------------------------------------------------------------------- the table


def _model_classes() -> List[type]:
    # The reading model and the RAID controller records (issue 28) share one bounds table.
    return [obj for module in (model_module, controller_model) for obj in vars(module).values()
            if isinstance(obj, type) and dataclasses.is_dataclass(obj) and obj.__module__ == module.__name__
            and obj is not model_module.Bound]


def _leaves(hint: Any) -> List[Any]:
    """The leaf types of a type hint: Optional[int] -> [int, NoneType]; Dict[str, int] -> [str, int]."""
    args = typing.get_args(hint)
    if not args:
        return [hint]
    out: List[Any] = []
    for arg in args:
        if arg is not Ellipsis:
            out += _leaves(arg)
    return out


def test_every_numeric_field_of_the_model_has_a_bound():
    missing, walked = [], 0
    for cls in _model_classes():
        hints = typing.get_type_hints(cls)
        for f in dataclasses.fields(cls):
            walked += 1
            key = f"{cls.__name__}.{f.name}"
            leaves = _leaves(hints[f.name])
            numeric = any(leaf in _NUMBERS for leaf in leaves)
            opaque = any(leaf in (tuple, dict, list, typing.Any) for leaf in leaves)
            if (numeric or opaque) and key not in FIGURE_BOUNDS and key not in NOT_FIGURES:
                missing.append(key)
    assert walked > 60
    assert not missing, f"fields with no bound in collectors.model.FIGURE_BOUNDS: {missing}"


def test_the_table_names_real_fields_and_sources():
    fields = {f"{cls.__name__}.{f.name}" for cls in _model_classes() for f in dataclasses.fields(cls)}
    for key, bound in list(FIGURE_BOUNDS.items()) + [(f"defect {k}", b) for k, b in DEFECT_BOUNDS.items()]:
        assert key.startswith("defect ") or key in fields, key
        assert bound.low <= bound.high and len(bound.spec) > 20, key
        assert bound.relative in (None, "volume", "sectors", "events"), key
        assert all(bits in (16, 32, 48, 64) for bits in bound.sentinel_bits), key


def test_every_defect_type_a_parser_produces_has_its_own_bound():
    produced = set(attrs.DEFECT_MEANINGS) | set(shannon_parse._DEFECT_KEYS.values()) | {"grown_defect"}
    assert produced <= set(DEFECT_BOUNDS), produced - set(DEFECT_BOUNDS)
    assert DEFAULT_DEFECT_BOUND.relative == "events"  # the loosest, for a type added later


def test_every_per_drive_metric_is_bounded_or_a_flag():
    """The golden /metrics of the default fake host: every per-drive family is in the table."""
    text = (ROOT / "tests" / "golden" / "metrics_default_host.txt").read_text()
    families = {line.split()[2] for line in text.splitlines() if line.startswith("# TYPE ssd_")}
    per_drive = {line.split("{")[0] for line in text.splitlines()
                 if line.startswith("ssd_") and 'device="' in line and 'serial="' in line}
    known = set(METRIC_BOUNDS) | set(FLAGS) | set(OTHER_DRIVE_FAMILIES) | {"ssd_defects"}
    assert per_drive and per_drive <= known, per_drive - known
    documented = (ROOT / "docs" / "metrics.md").read_text()
    for name in METRIC_BOUNDS:
        assert f"`{name}`" in documented or name.removesuffix("_total") in families, name


# ----------------------------------------------------------------------------- five real reports

BSD = "smartctl-text-bsdhw/bsdhw__"
# (report, defect type, the raw value the report prints, words the reason must hold)
FIVE_REPORTS: List[Tuple[str, str, int, str]] = [
    # "182 Erase_Fail_Count_Total ------ 255 255 000 - 281474976710655": all 48 raw bits set
    (BSD + "SSD_Kingston_RBUSNS8180DS3128GH_BAB684ED8783.txt", "erase_fail", 2**48 - 1, "all 48 bits set"),
    # "175 Program_Fail_Count_Chip PO--CK 100 100 010 - 1619702645379" on a 400 GB drive whose
    # report also prints 4294967295 raws (attributes 1 and 180): more fails than sectors
    (BSD + "SSD_HPE_MK0400GCTZA_66028AFDF89C.txt", "program_fail", 1619702645379, "more sectors than the drive has"),
    # "175 Program_Fail_Count_Chip PO--CK 100 100 010 - 915167838856" on a 240 GB drive (its
    # 1, 180 and 227 raws print 4294967295)
    ("smartctl-text/linuxhw-EnterpriseDrive__SSD_HP_VK0240GDJXU_8CDBCBC08FC2.txt", "program_fail", 915167838856,
     "more sectors than the drive has"),
    # "187 Reported_Uncorrect 0x0032 001 001 000 Old_age Always - 65535": the 16-bit counter's all-ones
    ("smartctl-text/gsmartcontrol__smartmon-site_ST910021AS.txt.health_failed.txt", "reported_uncorrectable",
     65535, "all 16 bits set"),
    # "196 Reallocated_Event_Count -O--CK 000 000 --- - 65535"
    (BSD + "HDD_Seagate_ST3000NM0033-9ZM178_70A0521268E6.txt", "reallocation_events", 65535, "all 16 bits set"),
]


@pytest.mark.parametrize("name,defect,raw,why", FIVE_REPORTS, ids=[r[1] + ":" + r[0].split("__")[-1][:30]
                                                                   for r in FIVE_REPORTS])
def test_five_real_reports_lose_only_their_impossible_counter(name, defect, raw, why):
    text = read_fixture(name).decode("utf-8", "replace")
    assert f" {raw}\n" in text  # the report prints it, unmodified
    reading = parse_smartctl_text_reading(text, "/dev/sda")
    assert defect not in reading.defects
    assert why in reading.extra[f"defect_{defect}_withheld"]
    assert reading_violations(reading) == []
    # what the report says of its other defects and figures stands: only the impossible one went
    assert reading.defects and reading.power_on_seconds and reading.capacity_bytes
    unbounded = dataclasses.replace(reading, defects=dict(reading.defects, **{defect: raw}), extra={})
    assert evidence.contain(unbounded).defects == reading.defects


def test_the_five_reports_exported_those_counters_before():
    """The same values through the exposition of a snapshot: before containment they reach
    ``ssd_defects`` (what the hostile trial saw), after it they do not and nothing else does."""
    from prometheus_client import generate_latest

    from agent.metrics import drive_families
    from collectors.model import Drive

    class _Families:
        def __init__(self, families):
            self.families = families

        def collect(self):
            return iter(self.families)

    before, after = [], []
    for name, defect, raw, _ in FIVE_REPORTS:
        reading = parse_smartctl_text_reading(read_fixture(name).decode("utf-8", "replace"), f"/dev/{defect}")
        before.append(Drive(dataclasses.replace(reading, defects=dict(reading.defects, **{defect: raw}))))
        after.append(Drive(reading))
    bad, _ = metrics_violations(generate_latest(_Families(drive_families(before))).decode())
    good, checked = metrics_violations(generate_latest(_Families(drive_families(after))).decode())
    assert len([v for v in bad if "ssd_defects" in v]) == 5, bad
    assert good == [] and checked > 50


# ----------------------------------------------------------------------------- impossible values

ATA = "fakehost/scrutiny__smart-ata-full.json"  # Samsung SSD 860 EVO 500GB
NVME = "fakehost/scrutiny__smart-nvme.json"  # INTEL SSDPEKNW010T8


def _nvme(**log: Any) -> Dict[str, Any]:
    doc = json.loads(read_fixture(NVME))
    doc["nvme_smart_health_information_log"].update(log)
    return doc


@pytest.mark.parametrize("field,value,why", [
    ("capacity_bytes", -5, "negative"),
    ("capacity_bytes", 0, "not a reading"),
    ("capacity_bytes", 10**178, "over 2**57"),
    ("capacity_bytes", 10**3239, "3,240-digit number"),
    ("capacity_bytes", 1e178, "whole number"),
    ("critical_warning", 256, "over 255"),
    ("critical_warning", 4096, "over 255"),
    ("critical_warning", -1, "negative"),
    ("media_errors", 2**63 - 1, "over"),
    ("media_errors", 2**64 - 1, "all 64 bits set"),
    ("media_errors", 2**32 - 1, "all 32 bits set"),
    ("power_cycles", 2**48 - 1, "all 48 bits set"),
    ("power_cycles", 65535, "all 16 bits set"),
    ("power_cycles", 10**10, "over"),
    ("life_left_ratio", 1.5, "over 1"),
    ("spare_left_ratio", -0.1, "negative"),
    ("write_amplification", 0.01, "not a reading"),
    ("write_amplification", float("inf"), "not finite"),
    ("logical_sector_bytes", 3, "not a reading"),
    ("tool_exit_status", 256, "over 255"),
    ("host_written_bytes", -1, "-1"),
    ("nand_written_bytes", 10**3239, "beyond any drive's lifetime"),
])
def test_impossible_values_are_withheld_with_a_reason(field, value, why):
    reading = dataclasses.replace(parse_smartctl_json(read_fixture(NVME), "/dev/nvme0"), **{field: value})
    contained = evidence.contain(reading)
    assert getattr(contained, field) is None
    assert why in contained.extra[f"{field}_withheld"], contained.extra[f"{field}_withheld"]
    assert reading_violations(contained) == []


@pytest.mark.parametrize("bits", [16, 32, 48, 64])
def test_all_ones_defect_counters_of_every_width_are_not_reported(bits):
    reading = dataclasses.replace(parse_smartctl_json(read_fixture(ATA), "/dev/sda"),
                                  defects={"reallocated": 2**bits - 1, "pending": 3})
    contained = evidence.contain(reading)
    assert contained.defects == {"pending": 3}
    assert contained.extra["defect_reallocated_withheld"].startswith("not reported")


def test_defects_within_the_drive_and_errors_within_its_power_on_time():
    reading = parse_smartctl_json(read_fixture(ATA), "/dev/sda")  # 500 GB, power-on known
    sectors = 2 * reading.capacity_bytes // 512
    rate = evidence.events_per_second("ata")  # a SATA link: 1.17 million sectors a second
    events = int((reading.power_on_seconds + 3600) * rate)
    contained = evidence.contain(dataclasses.replace(reading, defects={
        "reallocated": sectors, "pending": sectors + 1, "udma_crc_errors": events, "command_timeout": events + 1}))
    assert contained.defects == {"reallocated": sectors, "udma_crc_errors": events}
    assert "more sectors than the drive has" in contained.extra["defect_pending_withheld"]
    assert "more than the link can carry" in contained.extra["defect_command_timeout_withheld"]
    assert rate == pytest.approx(600e6 / 512)


def test_sensors_out_of_range_are_left_out_with_a_reason():
    reading = dataclasses.replace(
        parse_smartctl_json(read_fixture(NVME), "/dev/nvme0"),
        temperatures=(Temperature("drive", 40.0, max_celsius=1e9, limit_celsius=70.0),
                      Temperature("sensor_1", float("nan")), Temperature("sensor_2", 10**400)),
        voltages=(Voltage("internal", 1.0, max_volts=-1.0), Voltage("auxiliary", 0.0)))
    contained = evidence.contain(reading)
    assert contained.temperatures == (Temperature("drive", 40.0, max_celsius=None, limit_celsius=70.0),)
    assert contained.voltages == (Voltage("internal", 1.0, max_volts=None),)
    assert "sensor_2" in contained.extra["temperatures_withheld"] and "auxiliary" in contained.extra["voltages_withheld"]


def test_a_byte_that_is_not_one_gives_no_read_only_flag():
    """critical_warning 4096 has bit 3 clear and bit 12 set: neither it nor a read-only flag
    derived from it is taken."""
    reading = parse_smartctl_json(json.dumps(_nvme(critical_warning=4096 + 8)), "/dev/nvme0")
    assert reading.critical_warning is None and reading.readonly is None
    assert "over 255" in reading.extra["critical_warning_withheld"]


def test_huge_capacity_in_smartctl_json_is_withheld_and_the_rest_read():
    doc = json.loads(read_fixture(NVME))
    doc["user_capacity"] = {"bytes": 10**3239, "blocks": 1}
    reading = parse_smartctl_json(json.dumps(doc), "/dev/nvme0")
    assert reading.capacity_bytes is None and "3,240-digit" in reading.extra["capacity_bytes_withheld"]
    assert reading.host_written_bytes and reading.life_left_ratio is not None


def test_fusionio_impossible_figures_are_withheld_and_other_cards_read():
    """Four modules in one fio-status call (Percona's capture): an impossible figure costs that
    figure; a block Python could not even read (a 5,000-digit number) or one without a serial
    costs that module; the others are read as usual."""
    text = read_fixture("fusionio/percona-toolkit__fio-003_original_output.txt").decode()
    cards = parse_status(text)
    assert [r.device for r in cards] == ["/dev/fct0", "/dev/fct1", "/dev/fct2", "/dev/fct3"]
    blocks = text.split("\nfct")
    assert len(blocks) == 5
    blocks[1] = blocks[1].replace("Reserves: 100.00%", "Reserves: 1" + "0" * 400 + "%")  # fct0
    blocks[2] = blocks[2].replace("322.55 GBytes", "9" * 5000 + " GBytes")  # fct1
    blocks[3] = blocks[3].replace("SN:", "S/N ")  # fct2: no serial
    report = read_status("\nfct".join(blocks))
    readings = [evidence.contain(r) for r in report.readings]
    assert [r.device for r in readings] == ["/dev/fct0", "/dev/fct3"]
    assert readings[0].spare_left_ratio is None and "spare_left_ratio_withheld" in readings[0].extra
    assert readings[1] == evidence.contain(cards[3])
    assert [fct for fct, _ in report.unreadable] == ["fct1", "fct2"]
    assert "5,000 digits" in report.unreadable[0][1] and "serial" in report.unreadable[1][1]
    assert all(reading_violations(r) == [] for r in readings)


# ----------------------------------------------------------------------------- the real corpus


def _corpus() -> List[Tuple[str, DriveReading]]:
    out = []
    for folder in ("smartctl-json", "smartctl-text", "smartctl-text-bsdhw", "fakehost"):
        for path in fixture_files(folder):
            data = path.read_bytes()
            try:
                if path.suffix == ".json" and b'"smartctl"' in data[:4000] and b'"devices"' not in data[:2000]:
                    out.append((path.name, parse_smartctl_json(data)))
                elif folder.startswith("smartctl-text") and path.suffix == ".txt":
                    out.append((path.name, parse_smartctl_text_reading(data.decode("utf-8", "replace"))))
            except ValueError:  # ParseError / NoSmartData: not a drive's report
                continue
    for path in fixture_files("fusionio", ".txt"):
        out += [(path.name, evidence.contain(r)) for r in parse_status(path.read_text())]
    return out


def test_every_real_report_comes_out_within_the_bounds():
    readings = _corpus()
    assert len(readings) > 1900
    bad = {name: reading_violations(r) for name, r in readings if reading_violations(r)}
    assert not bad, dict(list(bad.items())[:5])
    withheld = sum(1 for _, r in readings for k in r.extra if k.startswith("defect_") and k.endswith("_withheld"))
    print(f"\n{len(readings)} real reports within bounds; {withheld} defect counters withheld")
