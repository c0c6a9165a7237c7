"""Metric families and the Prometheus text format, as much of them as the agent writes.

The agent builds gauge, counter, info and summary families (the sources' views and
agent/metrics.py) and writes them in the text exposition format, version 0.0.4, the format
node_exporter serves and every Prometheus since 2.0 reads. That is all it needs of a client
library: prometheus_client, which did this until issue 32, also brings its HTTP servers, push
gateway, process and platform collectors and the modules they import (4.3 MiB of RSS and about
a tenth of the start on a machine where everything else is already imported;
docs/performance.md). The families here keep prometheus_client's shape (``name``,
``documentation``, ``type``, ``samples`` of ``Sample`` tuples with the same fields), so the
tests can hand them to prometheus_client's own writer and parser and compare the bytes
(tests/test_families.py).

Names are the legacy ones (``[a-zA-Z_:][a-zA-Z0-9_:]*`` for metrics, ``[a-zA-Z_][a-zA-Z0-9_]*``
for labels): every name the agent writes is a constant of its own, so a family with any other
name is a programming error and is refused when it is made, not quoted on the wire.
"""

from __future__ import annotations

import math
import re
from typing import Callable, Dict, Iterable, Iterator, List, NamedTuple, Optional, Sequence

# What /metrics answers with: the text format's long-standing media type (node_exporter's,
# and what prometheus_client sent before its 0.22 renamed the same format 1.0.0).
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

_METRIC_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*\Z")
_LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*\Z")
# The text format's TYPE word for each family type.
_TYPE_WORD = {"counter": "counter", "gauge": "gauge", "info": "gauge", "summary": "summary"}


class Sample(NamedTuple):
    """One series' value. The fields and their order are prometheus_client's, so its writer
    accepts these families in the tests; the agent sets only the first three."""

    name: str
    labels: Dict[str, str]
    value: float
    timestamp: Optional[float] = None
    exemplar: None = None
    native_histogram: None = None


def _check_labels(names: Sequence[str]) -> tuple:
    for label in names:
        if not _LABEL_NAME.match(label) or label.startswith("__"):
            raise ValueError(f"invalid label name {label!r}")
    return tuple(names)


class MetricFamily:
    """A family: its name (without the ``_total`` or ``_info`` the text format appends),
    help text, type and samples."""

    __slots__ = ("name", "documentation", "type", "samples", "_labelnames")

    def __init__(self, name: str, documentation: str, typ: str, labels: Optional[Sequence[str]]) -> None:
        if not _METRIC_NAME.match(name):
            raise ValueError(f"invalid metric name {name!r}")
        self.name = name
        self.documentation = documentation
        self.type = typ
        self.samples: List[Sample] = []
        self._labelnames = _check_labels(labels or ())

    def _labels(self, values: Sequence[str]) -> Dict[str, str]:
        return dict(zip(self._labelnames, values))

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, MetricFamily) and (self.name, self.documentation, self.type, self.samples)
                == (other.name, other.documentation, other.type, other.samples))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, {len(self.samples)} samples)"


def _one_of(value: object, labels: Optional[Sequence[str]]) -> None:
    if value is not None and labels is not None:
        raise ValueError("a family takes a value or label names, not both")


class GaugeMetricFamily(MetricFamily):
    __slots__ = ()

    def __init__(self, name: str, documentation: str, value: Optional[float] = None,
                 labels: Optional[Sequence[str]] = None) -> None:
        _one_of(value, labels)
        super().__init__(name, documentation, "gauge", labels)
        if value is not None:
            self.add_metric((), value)

    def add_metric(self, labels: Sequence[str], value: float) -> None:
        self.samples.append(Sample(self.name, self._labels(labels), value))


class CounterMetricFamily(MetricFamily):
    """A counter; a name given with ``_total`` loses it (the sample and the text put it back)."""

    __slots__ = ()

    def __init__(self, name: str, documentation: str, value: Optional[float] = None,
                 labels: Optional[Sequence[str]] = None) -> None:
        _one_of(value, labels)
        super().__init__(name[:-6] if name.endswith("_total") else name, documentation, "counter", labels)
        if value is not None:
            self.add_metric((), value)

    def add_metric(self, labels: Sequence[str], value: float) -> None:
        self.samples.append(Sample(self.name + "_total", self._labels(labels), value))


class InfoMetricFamily(MetricFamily):
    """An info family: one sample ``<name>_info`` of value 1 per set of labels."""

    __slots__ = ()

    def __init__(self, name: str, documentation: str, value: Optional[Dict[str, str]] = None,
                 labels: Optional[Sequence[str]] = None) -> None:
        _one_of(value, labels)
        super().__init__(name, documentation, "info", labels)
        if value is not None:
            self.add_metric((), value)

    def add_metric(self, labels: Sequence[str], value: Dict[str, str]) -> None:
        merged = self._labels(labels)
        _check_labels(list(value))
        merged.update(value)
        self.samples.append(Sample(self.name + "_info", merged, 1))


class SummaryMetricFamily(MetricFamily):
    """A summary: ``<name>_count`` and ``<name>_sum`` per set of labels, and, where the agent
    has them, ``<name>{quantile="..."}`` samples."""

    __slots__ = ()

    def __init__(self, name: str, documentation: str, count_value: Optional[float] = None,
                 sum_value: Optional[float] = None, labels: Optional[Sequence[str]] = None) -> None:
        if (count_value is None) != (sum_value is None):
            raise ValueError("count_value and sum_value go together")
        _one_of(count_value, labels)
        super().__init__(name, documentation, "summary", labels)
        if count_value is not None and sum_value is not None:
            self.add_metric((), count_value, sum_value)

    def add_metric(self, labels: Sequence[str], count_value: float, sum_value: float) -> None:
        these = self._labels(labels)
        self.samples.append(Sample(self.name + "_count", these, count_value))
        self.samples.append(Sample(self.name + "_sum", dict(these), sum_value))

    def add_quantile(self, labels: Sequence[str], quantile: str, value: float) -> None:
        """One quantile's value; ``quantile`` is the label's text ("0.99")."""
        these = self._labels(labels)
        these["quantile"] = quantile
        self.samples.append(Sample(self.name, these, value))


def value_text(value: float) -> str:
    """A sample value as Prometheus' Go exporters write it where the two can differ in meaning
    (Go's shortest ``%g``: a positive value of 1e6 and more in exponent form, the exponent two
    digits at least), otherwise Python's ``repr``, the shortest decimal that reads back as the
    same double: whole numbers keep their ``.0`` ("3.0"), as prometheus_client wrote them and as
    the golden files hold. +Inf, -Inf and NaN are spelt as Prometheus parses them."""
    value = float(value)
    if value != value:
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    shown = repr(value)
    if value > 0 and "e" not in shown:
        whole = shown.find(".")
        if whole > 6:
            # repr keeps positional digits up to 1e16; Go writes these in exponent form too.
            digits = (shown[:whole] + shown[whole + 1:]).rstrip("0")
            mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
            return f"{mantissa}e+{whole - 1:02d}"
    return shown


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def header_text(family: MetricFamily) -> str:
    """The family's ``# HELP`` and ``# TYPE`` lines."""
    name = family.name + ("_total" if family.type == "counter" else "_info" if family.type == "info" else "")
    doc = family.documentation.replace("\\", "\\\\").replace("\n", "\\n")
    return f"# HELP {name} {doc}\n# TYPE {name} {_TYPE_WORD[family.type]}\n"


def series_text(sample: Sample) -> str:
    """A sample's line up to its value: the name and the labels, sorted by name."""
    if not sample.labels:
        return sample.name
    pairs = ",".join(f'{key}="{_escape(value)}"' for key, value in sorted(sample.labels.items()))
    return f"{sample.name}{{{pairs}}}"


def sample_lines(family: MetricFamily) -> str:
    return "".join(f"{series_text(s)} {value_text(s.value)}\n" for s in family.samples)


def text(families: Iterable[MetricFamily]) -> bytes:
    """The families in the text format, UTF-8."""
    return "".join(header_text(f) + sample_lines(f) for f in families).encode("utf-8")


class Registry:
    """Collectors (anything with ``collect()`` returning families) asked in the order they were
    registered, for the tests (``agent.metrics.make_registry``); the agent's /metrics renders per
    drive and section (agent/exposition_render.py)."""

    def __init__(self) -> None:
        self._collectors: List[Callable[[], Iterable[MetricFamily]]] = []

    def register(self, collector) -> None:
        self._collectors.append(collector.collect)

    def collect(self) -> Iterator[MetricFamily]:
        for collect in self._collectors:
            yield from collect()

    def get_sample_value(self, name: str, labels: Optional[Dict[str, str]] = None) -> Optional[float]:
        """The value of the sample named ``name`` with exactly ``labels``, or None."""
        wanted = labels or {}
        for family in self.collect():
            for sample in family.samples:
                if sample.name == name and sample.labels == wanted:
                    return sample.value
        return None
