"""Every ATA attribute, opt in (issue 30, ``smartctl.all_attributes``): off by default, named
by smartmontools' drive database, bounded (30 rows x 5 families at most), failing-now flags."""

from __future__ import annotations

import json

import pytest

from agent.metrics import make_registry
from collectors.model import Drive, ParseError, Snapshot
from collectors.runner import ToolResult
from collectors.smartctl import logs
from collectors.smartctl.source import SmartctlSettings, SmartTarget, interpret
from tests.conftest import read_fixture
from tests.fakehost import AgentProcess, build_default_host
from tests.support.e2e import SDA_SERIAL, scrape, value, wait_for

# smartctl 5.37 text: "190 Temperature_Celsius 0x0022 019 014 045 Old_age Always FAILING_NOW 81"
FAILING = "smartctl-text/gsmartcontrol__mine_wdcse_250G_iset-a.37.failing_attr.txt"
SDA = "smartctl-json/scrutiny__smart-ata-full.json"  # the fake host's sda (Samsung 860 EVO)


def _interpret(name: str, on: bool):
    data = read_fixture(name)
    use_json = name.endswith(".json")
    result = ToolResult(("smartctl",), 0, data, b"", 0.1)
    outcome, reading = interpret(result, SmartTarget("/dev/sda", "sat"), use_json, all_attributes=on)
    assert outcome == "ok", reading
    return reading


def test_off_by_default_and_in_the_settings() -> None:
    assert SmartctlSettings().all_attributes is False
    assert SmartctlSettings.model_validate({"all_attributes": True}).all_attributes is True
    assert _interpret(FAILING, on=False).ata_attributes == ()


def test_every_row_with_the_failing_one_flagged() -> None:
    reading = _interpret(FAILING, on=True)
    rows = {r.attr_id: r for r in reading.ata_attributes}
    # the 16 rows of the capture's table, read by eye
    assert sorted(rows) == [1, 3, 4, 5, 7, 9, 10, 11, 12, 190, 194, 196, 197, 198, 199, 200]
    hot = rows[190]
    assert (hot.value, hot.worst, hot.threshold, hot.raw, hot.failing_now) == (19, 14, 45, 81, True)
    assert [r.attr_id for r in rows.values() if r.failing_now] == [190]
    assert (rows[9].value, rows[9].raw, rows[5].threshold) == (85, 11505, 140)
    registry = make_registry(lambda: Snapshot(drives=(Drive(reading=reading, last_poll={"smartctl": 1.0}),)))
    labels = {"device": "sda", "serial": reading.identity, "id": "190", "name": hot.name}
    assert registry.get_sample_value("ssd_ata_attribute_failing_now", labels) == 1
    assert registry.get_sample_value("ssd_ata_attribute_threshold", labels) == 45
    # attributes with threshold 0 can never fail: no flag for them
    assert registry.get_sample_value("ssd_ata_attribute_failing_now",
                                     dict(labels, id="9", name=rows[9].name)) is None


def test_names_come_from_the_drive_database() -> None:
    """The Samsung 860 EVO's drive database entry names 177 Wear_Leveling_Count and 241
    Total_LBAs_Written (drivedb.h "Samsung based SSDs")."""
    rows = {r.attr_id: r.name for r in _interpret(SDA, on=True).ata_attributes}
    assert rows[177] == "Wear_Leveling_Count" and rows[241] == "Total_LBAs_Written"


def _table(*rows) -> dict:
    return {"ata_smart_attributes": {"table": list(rows)}}


MALFORMED = [
    ("a repeated id keeps the first row", _table({"id": 5, "value": 100}, {"id": 5, "value": 1}), 1, "id 5 again"),
    ("id 0", _table({"id": 0}), 0, "outside 1..255"),
    ("a value over one byte", _table({"id": 5, "value": 300, "thresh": 10}), 1, "not one byte"),
    ("a raw beyond 64 bits", _table({"id": 9, "raw": {"value": 2**64}}), 1, "64-bit"),
    ("a 31st row", _table(*({"id": i} for i in range(1, 32))), 30, "past the table's 30 rows"),
]


@pytest.mark.parametrize("what,doc,kept,words", MALFORMED, ids=[m[0] for m in MALFORMED])
def test_rows_that_cannot_be_true_are_left_out_with_why(what, doc, kept, words) -> None:
    rows, left_out = logs.attribute_rows(doc, {})
    assert len(rows) == kept
    assert any(words in w for w in left_out), left_out


@pytest.mark.parametrize("doc,words", [
    ({"ata_smart_attributes": {"table": {}}}, "table is dict"),
    (_table({"id": "5"}), "id is str"),
    (_table({"id": 5, "raw": 7}), "raw is int"),
])
def test_wrong_json_types_name_the_field(doc, words) -> None:
    with pytest.raises(ParseError, match=words):
        logs.attribute_rows(doc, {})


def _start(host, settings):
    path = host.root / "agent.yml"
    path.write_text("".join(f"{k}: {json.dumps(v)}\n" for k, v in settings.items()))
    agent = AgentProcess(host, ["--config", str(path), "--interval.smartctl", "1"])
    agent.wait_ready()
    return agent


@pytest.mark.parametrize("on", [False, True])
def test_end_to_end_through_the_configuration(tmp_path, on: bool) -> None:
    """The agent on the fake host, with ``smartctl: {all_attributes: ...}`` in its config file."""
    host = build_default_host(tmp_path)
    agent = _start(host, {"smartctl": {"all_attributes": on}})
    try:
        wait_for(lambda: value(scrape(agent), "ssd_selftest_last_failed", serial=SDA_SERIAL) is not None, timeout=60)
        samples = scrape(agent)
        rows = [k for k in samples if k[0] == "ssd_ata_attribute_value" and dict(k[1])["serial"] == SDA_SERIAL]
        if on:
            assert 10 <= len(rows) <= 30
            raw = {dict(k[1])["name"]: v for k, v in samples.items() if k[0] == "ssd_ata_attribute_raw"
                   and dict(k[1])["serial"] == SDA_SERIAL and dict(k[1])["id"] == "9"}
            assert list(raw) == ["Power_On_Hours"] and raw["Power_On_Hours"] > 0
        else:
            assert not [k for k in samples if k[0].startswith("ssd_ata_attribute_")]
    finally:
        agent.stop()
