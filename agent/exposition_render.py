"""The per-drive part of /metrics, rendered per drive and per section, and redone only where
the section's inputs changed (issue 32).

A snapshot is rebuilt whenever any source finishes: a diskstats pass every 15 s moves every
drive's I/O counters and nothing else, yet a full render formats every sample of every drive
(0.7 s of CPU at 1,024 drives). Here each drive section (``agent.metrics.DRIVE_SECTIONS``) of
each drive keeps its rendered sample lines with the inputs it was rendered from; a new snapshot
re-renders only the sections whose inputs differ (compared with ``==``, which for records the
merge carried over unchanged stops at their identity).

The body is byte-identical to rendering every family at once (collectors/families.py): the
lines of each section are that writer's output for the section's families, and the families
are assembled in the order a single pass would have created them (``ssd_drive_info``,
then the gauges, then the counters, each in the order a drive first gave it a value) with each
family's samples in drive order.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from agent.memory import release
from collectors.families import header_text, sample_lines, value_text
from collectors.model import Drive

Section = Callable[[Any, Drive, List[str]], None]
# A section's inputs, from the drive: sections not in the table depend on the whole record.
InputsOf = Callable[[Drive], Tuple[Any, ...]]


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
            # The same series with new values (counters moving): each line is the one written
            # before up to its value, then the new value.
            lines = {name: "".join(f"{prefix} {value_text(s.value)}\n"
                                   for prefix, s in zip(kept.prefixes[name], family.samples))
                     for name, family in chosen}
            return SectionText(inputs, lines, kept.headers, gauges, counters, shapes, kept.prefixes)
        headers = {name: header_text(family) for name, family in chosen}
        lines = {name: sample_lines(family) for name, family in chosen}
        # A value never holds a space (value_text), so a line's last space ends its series.
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
