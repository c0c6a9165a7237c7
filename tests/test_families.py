"""The agent's metric families and text writer (collectors/families.py, issue 32), held to
prometheus_client, which wrote /metrics before and stays the tests' reference: the same bytes
for every family shape, value and escape the agent can make, the same value spelling for any
float, and what it refuses."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.utils import floatToGoString

from collectors.families import (
    CONTENT_TYPE,
    CounterMetricFamily,
    GaugeMetricFamily,
    InfoMetricFamily,
    Registry,
    SummaryMetricFamily,
    text,
    value_text,
)


class _Given:
    def __init__(self, families):
        self._families = families

    def collect(self):
        return iter(self._families)


def _tricky():
    g = GaugeMetricFamily("ssd_t_gauge", 'help with \\ a backslash,\na newline and "quotes"', labels=["device", "model"])
    g.add_metric(["sda", 'Quote " back \\ slash\nnewline'], 1.5)
    g.add_metric(["sdb", ""], float("nan"))
    g.add_metric(["sdc", "ünïcode ✓"], float("-inf"))
    g.add_metric(["sdd", "x"], 1e21)
    g.add_metric(["sde", "y"], 12345678.0)
    g.add_metric(["sdf", "z"], -12345678.0)
    g.add_metric(["sdg", "w"], 3)  # an int, as some views pass
    g.add_metric(["sdh", "v"], 1.5e-7)
    counter = CounterMetricFamily("ssd_t_bytes_total", "a counter named with its _total", labels=["device"])
    counter.add_metric(["sda"], 12345678901234.0)
    info = InfoMetricFamily("ssd_t", "an info family", labels=["device"])
    info.add_metric(["sda"], {"firmware": "1.0", "model": "M"})
    summary = SummaryMetricFamily("ssd_t_latency_seconds", "a summary", labels=["device"])
    summary.add_metric(["sda"], count_value=4, sum_value=0.5)
    unlabelled_summary = SummaryMetricFamily("ssd_t_other_seconds", "a summary with a value", count_value=2, sum_value=0.25)
    empty = GaugeMetricFamily("ssd_t_empty", "no samples")
    plain = GaugeMetricFamily("ssd_t_plain", "no labels", value=7)
    zero_counter = CounterMetricFamily("ssd_t_events", "a counter with a value", value=0)
    # Labels given in an order that is not sorted: the line sorts them.
    unsorted = GaugeMetricFamily("ssd_t_unsorted", "labels out of order", labels=["zone", "alpha"])
    unsorted.add_metric(["z1", "a1"], 0.0)
    return [g, counter, info, summary, unlabelled_summary, empty, plain, zero_counter, unsorted]


def test_the_writer_gives_prometheus_clients_bytes():
    families = _tricky()
    assert text(families) == generate_latest(_Given(families))


def test_the_text_parses_back_to_the_values():
    families = _tricky()
    parsed = {(s.name, tuple(sorted(s.labels.items()))): s.value
              for f in text_string_to_metric_families(text(families).decode()) for s in f.samples}
    for family in families:
        for sample in family.samples:
            got = parsed[(sample.name, tuple(sorted(sample.labels.items())))]
            assert (math.isnan(got) and math.isnan(sample.value)) or got == float(sample.value)
    assert len(parsed) == sum(len(f.samples) for f in families)


@pytest.mark.parametrize("value", [
    0.0, -0.0, 1.0, 0.1, 1e-4, 1e-5, 123456.0, 999999.0, 1e6, 1234567.5, 1e15, 1e16, 1.5e16, 1e21, 1e22,
    -1e6, -1e22, 5e-324, 1.7976931348623157e308, float("inf"), float("-inf"), float("nan"), 3, True, 2**63,
])
def test_value_spelling_matches_the_reference(value):
    assert value_text(value) == floatToGoString(value)


@given(st.floats(allow_nan=True, allow_infinity=True))
def test_value_spelling_matches_the_reference_for_any_double(value):
    assert value_text(value) == floatToGoString(value)


@pytest.mark.parametrize("make, why", [
    (lambda: GaugeMetricFamily("", "empty name"), "invalid metric name"),
    (lambda: GaugeMetricFamily("9lives", "starts with a digit"), "invalid metric name"),
    (lambda: GaugeMetricFamily("ssd.dotted", "a dot"), "invalid metric name"),
    (lambda: GaugeMetricFamily("ssd_ünicode", "not the legacy set"), "invalid metric name"),
    (lambda: GaugeMetricFamily("ssd_x\n", "a newline"), "invalid metric name"),
    (lambda: GaugeMetricFamily("ssd_x", "bad label", labels=["dev.ice"]), "invalid label name"),
    (lambda: GaugeMetricFamily("ssd_x", "reserved label", labels=["__name__"]), "invalid label name"),
    (lambda: CounterMetricFamily("ssd_x", "label", labels=["1st"]), "invalid label name"),
    (lambda: GaugeMetricFamily("ssd_x", "both", value=1, labels=["device"]), "not both"),
    (lambda: CounterMetricFamily("ssd_x", "both", value=1, labels=["device"]), "not both"),
    (lambda: InfoMetricFamily("ssd_x", "both", value={"a": "b"}, labels=["device"]), "not both"),
    (lambda: SummaryMetricFamily("ssd_x", "half", count_value=1), "go together"),
    (lambda: InfoMetricFamily("ssd_x", "bad info label").add_metric([], {"bad-label": "v"}), "invalid label name"),
])
def test_malformed_families_are_refused(make, why):
    with pytest.raises(ValueError, match=why):
        make()


@pytest.mark.parametrize("value, error", [("garbage", ValueError), ("", ValueError), (None, TypeError),
                                          (object(), TypeError), ("1e999x", ValueError)])
def test_a_value_that_is_not_a_number_is_refused_not_written(value, error):
    """A view that hands over something that is not a number fails loudly (the poller's listener
    logs it and keeps the previous render), as prometheus_client's writer did; nothing half
    written reaches the body."""
    with pytest.raises(error):
        value_text(value)
    family = GaugeMetricFamily("ssd_t_bad", "a bad value", labels=["device"])
    family.add_metric(["sda"], value)
    with pytest.raises(error):
        text([family])


def test_registry_reads_values_and_writes_in_order():
    registry = Registry()
    first = GaugeMetricFamily("ssd_a", "first", labels=["device"])
    first.add_metric(["sda"], 2.0)
    second = CounterMetricFamily("ssd_b", "second", value=5)
    registry.register(_Given([first]))
    registry.register(_Given([second]))
    assert registry.get_sample_value("ssd_a", {"device": "sda"}) == 2.0
    assert registry.get_sample_value("ssd_b_total") == 5
    assert registry.get_sample_value("ssd_a", {"device": "sdb"}) is None
    assert registry.get_sample_value("ssd_b") is None  # a counter's sample carries _total
    assert text(registry.collect()).index(b"ssd_a") < text(registry.collect()).index(b"ssd_b_total")


def test_content_type_is_the_text_format_prometheus_reads():
    assert CONTENT_TYPE == "text/plain; version=0.0.4; charset=utf-8"


def test_summary_quantiles_come_out_as_the_reference_writes_them():
    summary = SummaryMetricFamily("ssd_t_seconds", "a summary with quantiles", labels=["device"])
    summary.add_metric(["sda"], count_value=10, sum_value=0.031)
    summary.add_quantile(["sda"], "0.5", 0.002)
    summary.add_quantile(["sda"], "0.99", 0.0071)
    assert text([summary]) == generate_latest(_Given([summary]))
    assert b'ssd_t_seconds{device="sda",quantile="0.99"} 0.0071\n' in text([summary])
