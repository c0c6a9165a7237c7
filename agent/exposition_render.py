"""The per-drive part of /metrics, rendered per drive and per section, and redone only where
the section's inputs changed (issue 32).

A snapshot is rebuilt whenever any source finishes: a diskstats pass every 15 s moves every
drive's I/O counters and nothing else, yet a full render formats every sample of every drive
(0.7 s of CPU at 1,024 drives). Here each drive section (``agent.metrics.DRIVE_SECTIONS``) of
each drive keeps its rendered sample lines with the inputs it was rendered from; a new snapshot
re-renders only the sections whose inputs differ (compared with ``==``, which for records the
merge carried over unchanged stops at their identity).

The body is byte-identical to rendering every family at once with prometheus_client: the lines
of each section are prometheus_client's own output for that section's families, and the
families are assembled in the order a single pass would have created them (``ssd_drive_info``,
then the gauges, then the counters, each in the order a drive first gave it a value) with each
family's samples in drive order.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from prometheus_client import generate_latest
from prometheus_client.utils import floatToGoString

from agent.memory import release
from collectors.model import Drive

Section = Callable[[Any, Drive, List[str]], None]
# A section's inputs, from the drive: sections not in the table depend on the whole record.
InputsOf = Callable[[Drive], Tuple[Any, ...]]


class _Families:
    """What ``generate_latest`` needs of a registry: something with ``collect()``."""

    def __init__(self, families: List) -> None:
        self._families = families

    def collect(self):
        return iter(self._families)


class SectionText:
    """One section of one drive, rendered: each family's header and its sample lines, and the
    gauge and counter names in the order the section created them."""

    __slots__ = ("inputs", "lines", "headers", "gauges", "counters", "shapes", "prefixes")

    def __init__(self, inputs: Tuple[Any, ...], lines: Dict[str, str], headers: Dict[str, str],
                 gauges: Tuple[str, ...], counters: Tuple[str, ...], shapes: Dict[str, List[Tuple[str, Dict[str, str]]]],
                 prefixes: Dict[str, List[str]]) -> None:
        self.inputs = inputs
        self.lines = lines
        self.headers = headers
        self.gauges = gauges
        self.counters = counters
        self.shapes = shapes  # each family's samples' names and labels
        self.prefixes = prefixes  # each family's sample lines up to the value


# The legacy name character sets: a name outside them makes prometheus_client quote or escape
# it, which :func:`_family_text` leaves to prometheus_client itself.
_METRIC_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*\Z")
_LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*\Z")
_PLAIN: Dict[str, bool] = {}  # label and metric names seen, checked once each
_TYPES = {"counter": "counter", "gauge": "gauge", "info": "gauge", "summary": "summary",
          "histogram": "histogram", "unknown": "untyped"}


def _plain(name: str, pattern: re.Pattern[str]) -> bool:
    known = _PLAIN.get(name)
    if known is None:
        known = _PLAIN[name] = bool(pattern.match(name))
    return known


def _escape(value: str) -> str:
    """A label value as the text format writes it: backslash, newline and quote escaped."""
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _family_text(family: Any) -> Optional[Tuple[str, str]]:
    """(header, sample lines) of one family, written as prometheus_client's ``generate_latest``
    writes the text format (name munging, help escaping, labels sorted, label values escaped,
    values by ``floatToGoString``), without its per-name checks: the cold render at 1,024
    drives formats ~41,000 samples and those checks were half its time. None when the family
    holds anything this writer does not do the same way (a name outside the legacy character
    set, a timestamp, an OpenMetrics-only sample, a type it does not map), so the caller asks
    prometheus_client; tests compare the two on every family the agent makes."""
    mtype = _TYPES.get(family.type)
    if mtype is None:
        return None
    name = family.name + ("_total" if family.type == "counter" else "_info" if family.type == "info" else "")
    if not _plain(name, _METRIC_NAME):
        return None
    lines = []
    for sample in family.samples:
        if sample.timestamp is not None or sample.exemplar is not None or not _plain(sample.name, _METRIC_NAME) \
                or sample.name[len(family.name):] in ("_created", "_gsum", "_gcount"):
            return None
        if sample.labels:
            pairs = []
            for key, value in sorted(sample.labels.items()):
                if not _plain(key, _LABEL_NAME):
                    return None
                pairs.append(f'{key}="{_escape(value)}"')
            lines.append(f"{sample.name}{{{','.join(pairs)}}} {floatToGoString(sample.value)}\n")
        else:
            lines.append(f"{sample.name} {floatToGoString(sample.value)}\n")
    doc = family.documentation.replace("\\", "\\\\").replace("\n", "\\n")
    return f"# HELP {name} {doc}\n# TYPE {name} {mtype}\n", "".join(lines)


def family_blocks(families: Sequence[Any]) -> List[Tuple[str, str]]:
    """[(header, sample lines)] of each family in order, as prometheus_client writes them."""
    out = []
    for family in families:
        block = _family_text(family)
        if block is None:
            # prometheus_client's own text; a family it writes as two (a counter's _created
            # samples become a gauge of their own) stays one block, headers and all.
            (header, lines), *more = _blocks(generate_latest(_Families([family])).decode("utf-8"))
            block = header, lines + "".join(h + x for h, x in more)
        out.append(block)
    return out


def _blocks(text: str) -> List[Tuple[str, str]]:
    """prometheus_client's text for some families -> [(header, sample lines)], one per family
    in the order given. A line starting with ``#`` is always a header line: a newline inside a
    label value or a help text is escaped."""
    out: List[Tuple[str, List[str]]] = []
    lines = text.splitlines(keepends=True)
    i = 0
    while i < len(lines):
        if lines[i].startswith("# HELP "):
            out.append((lines[i] + lines[i + 1], []))
            i += 2
            continue
        out[-1][1].append(lines[i])
        i += 1
    return [(header, "".join(samples)) for header, samples in out]


class DriveText:
    """The drive part of the body, kept between snapshots.

    ``new_families`` makes the per-drive family collector the sections fill (with ``info``,
    ``gauges`` and ``counters`` as ``agent.metrics._DriveFamilies`` has them); ``inputs``
    says what each section reads of a drive."""

    def __init__(self, sections: Callable[[], Sequence[Section]], new_families: Callable[[], Any],
                 label_ids: Callable[[Drive], List[str]], inputs: Mapping[Section, InputsOf]) -> None:
        self._sections = sections
        self._new = new_families
        self._ids = label_ids
        self._inputs = inputs
        self._kept: Dict[Tuple[str, str], List[Optional[SectionText]]] = {}
        self.sections_rendered = 0  # for tests and the bench: how much work a render did

    def _render(self, section: Section, drive: Drive, ids: List[str], inputs: Tuple[Any, ...],
                kept: Optional[SectionText]) -> SectionText:
        families = self._new()
        section(families, drive, ids)
        self.sections_rendered += 1
        chosen = ([("ssd_drive_info", families.info)] if families.info.samples else []) \
            + list(families.gauges.items()) + list(families.counters.items())
        shapes = {name: [(s.name, s.labels) for s in family.samples] for name, family in chosen}
        gauges, counters = tuple(families.gauges), tuple(families.counters)
        if kept is not None and kept.shapes == shapes and (kept.gauges, kept.counters) == (gauges, counters) \
                and all(len(kept.prefixes[name]) == len(family.samples) for name, family in chosen):
            # The same series with new values (counters moving): each line is the one
            # prometheus_client wrote before up to its value, then the value as it writes it.
            lines = {name: "".join(f"{prefix} {floatToGoString(s.value)}\n"
                                   for prefix, s in zip(kept.prefixes[name], family.samples))
                     for name, family in chosen}
            return SectionText(inputs, lines, kept.headers, gauges, counters, shapes, kept.prefixes)
        blocks = family_blocks([family for _, family in chosen])
        headers = {name: header for (name, _), (header, _) in zip(chosen, blocks)}
        lines = {name: samples for (name, _), (_, samples) in zip(chosen, blocks)}
        # A value never holds a space (floatToGoString), so a line's last space ends its series.
        prefixes = {name: [line.rsplit(" ", 1)[0] for line in samples.splitlines()] for name, samples in lines.items()}
        return SectionText(inputs, lines, headers, gauges, counters, shapes, prefixes)

    def _drive(self, drive: Drive, before: Optional[List[Optional[SectionText]]]) -> List[Optional[SectionText]]:
        ids = self._ids(drive)
        out: List[Optional[SectionText]] = []
        for i, section in enumerate(self._sections()):
            inputs_of = self._inputs.get(section)
            inputs = (tuple(ids), drive) if inputs_of is None else (tuple(ids),) + inputs_of(drive)
            kept = before[i] if before is not None and i < len(before) else None
            out.append(kept if kept is not None and kept.inputs == inputs else
                       self._render(section, drive, ids, inputs, kept))
        return out

    def render(self, drives: Sequence[Drive], info_header: str) -> str:
        """The text of every per-drive family for ``drives``, in the order of one full render.
        ``info_header`` is ``ssd_drive_info``'s (printed even with no drive)."""
        kept: Dict[Tuple[str, str], List[Optional[SectionText]]] = {}
        parts: List[List[Optional[SectionText]]] = []
        for drive in drives:
            key = tuple(self._ids(drive))
            texts = self._drive(drive, self._kept.get(key)) if key not in kept else self._drive(drive, None)
            kept.setdefault(key, texts)
            parts.append(texts)
        old, self._kept = self._kept, kept
        release(old)  # the sections not carried over, and the drives they held: piece by piece
        return _assemble([t for texts in parts for t in texts if t is not None], info_header)


def _assemble(texts: Sequence[SectionText], info_header: str) -> str:
    gauges: Dict[str, None] = {}
    counters: Dict[str, None] = {}
    headers: Dict[str, str] = {}
    samples: Dict[str, List[str]] = {"ssd_drive_info": []}
    for text in texts:
        gauges.update(dict.fromkeys(text.gauges))
        counters.update(dict.fromkeys(text.counters))
        headers.update(text.headers)
        for name, lines in text.lines.items():
            bucket = samples.get(name)
            if bucket is None:
                bucket = samples[name] = []
            bucket.append(lines)
    out = [info_header] + samples["ssd_drive_info"]
    for name in list(gauges) + list(counters):
        out.append(headers[name])
        out.extend(samples[name])
    return "".join(out)
