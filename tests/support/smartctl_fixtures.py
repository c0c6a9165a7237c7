"""Reading a smartctl capture from tests/fixtures/ the way the smartctl source reads one: JSON
by the JSON parser, text (smartctl 5.x/6.x) by the text parser, both as /dev/sda."""

from __future__ import annotations

from collectors.model import DriveReading
from collectors.smartctl import parse_smartctl_json, parse_smartctl_text_reading
from tests.conftest import read_fixture

T = "smartctl-text/"
B = "smartctl-text-bsdhw/bsdhw__"
J = "smartctl-json/"


def reading_of(name: str) -> DriveReading:
    data = read_fixture(name)
    if name.endswith(".json"):
        return parse_smartctl_json(data, device="/dev/sda")
    return parse_smartctl_text_reading(data.decode("utf-8", "replace"), device="/dev/sda")
