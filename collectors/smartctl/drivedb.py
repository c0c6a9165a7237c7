"""smartmontools' drive database (``drivedb.h``) as the vocabulary of ATA attribute names.

smartctl prints an attribute's name from its drive database: a model's entry gives names of its
own (``-v 241,raw48,Host_Writes_GiB``), and every ID the entry does not name gets a default name
(``241 Total_LBAs_Written``, ``233 Media_Wearout_Indicator``, ``177 Wear_Leveling_Count``). On a
drive the database does not know, every name is a default and says nothing about what the
counter means or counts in. The database's maintainers also mark the defaults they have checked
on a model by listing them in a comment (``//"-v 241,raw48,Total_LBAs_Written "``).

:func:`parse` reads ``drivedb.h`` (a C array of string literals) into entries, and
:meth:`DriveDatabase.names_for` tells, for one model and firmware, which name each ID has and
whether the database vouches for it. ssdfleet ships a copy of the database (``data/drivedb.h``,
GPL-2.0-or-later, from the smartmontools package); :func:`best_available` prefers the host's
own copy when its revision is newer (``update-smart-drivedb`` keeps one in /var/lib).

Parsing is pure (text in, entries out); only :func:`load` and :func:`best_available` read files.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Iterable, Iterator, List, Optional, Pattern, Tuple

BUNDLED = Path(__file__).with_name("data") / "drivedb.h"

# Where smartmontools keeps its database on Linux hosts: update-smart-drivedb's download first
# (Debian/Ubuntu, RHEL), then the packaged file, then a source install.
HOST_PATHS = (
    "/var/lib/smartmontools/drivedb/drivedb.h",
    "/var/lib/smartmontools/drivedb.h",
    "/usr/share/smartmontools/drivedb.h",
    "/usr/local/share/smartmontools/drivedb.h",
)

# How far the database vouches for a name on one model.
NAMED = "named"  # the model's entry names the ID itself
CONFIRMED = "confirmed"  # the entry lists the default name as checked on this model
DEFAULT = "default"  # the entry is silent about the ID: smartctl prints its default name
UNKNOWN_DRIVE = "unknown_drive"  # no entry matches the model: every name is a default
# A default name is vouched for only where the model's entry lists it: an entry that neither names
# nor lists an ID leaves its meaning on that model unchecked.
VOUCHED = (NAMED, CONFIRMED)


@dataclass(frozen=True)
class Preset:
    """One ``-v ID,FORMAT[,NAME[,HDD|SSD]]`` option."""

    attr_id: int
    fmt: str
    name: Optional[str]
    only: Optional[str] = None  # HDD or SSD: the default applies to that kind only
    note: str = ""  # a listed default's comment ("PM851, SM841N", "FW SVN423b")


@dataclass(frozen=True)
class Entry:
    family: str
    model: str  # POSIX extended regex over the whole model string
    firmware: str  # the same over the firmware version; "" = any
    presets: Dict[int, Preset] = field(default_factory=dict)
    confirmed: Dict[int, Preset] = field(default_factory=dict)  # defaults listed in comments

    @functools.cached_property
    def _model_re(self) -> Optional[Pattern[str]]:
        return _compile(self.model)

    @functools.cached_property
    def _model_prefixes(self) -> Tuple[str, ...]:
        return literal_prefixes(self.model)

    @functools.cached_property
    def _firmware_re(self) -> Optional[Pattern[str]]:
        return _compile(self.firmware) if self.firmware else None

    def matches(self, model: str, firmware: Optional[str]) -> bool:
        # A model that does not start with the pattern's literal prefix cannot match it whole:
        # most entries are ruled out without compiling their regex (a first lookup compiled up
        # to every one, 20-30 ms of the first reading, issue 32).
        prefixes = self._model_prefixes
        if prefixes and not model.startswith(prefixes):
            return False
        if self._model_re is None or not self._model_re.fullmatch(model):
            return False
        if not self.firmware:
            return True
        return self._firmware_re is not None and bool(self._firmware_re.fullmatch(firmware or ""))


@dataclass(frozen=True)
class AttributeName:
    """The name smartctl (with this database) prints for one ID on one model, and how far the
    database vouches for it."""

    name: str
    trust: str  # NAMED, CONFIRMED, DEFAULT or UNKNOWN_DRIVE
    fmt: str = "raw48"

    @property
    def vouched(self) -> bool:
        return self.trust in VOUCHED


_METACHARACTERS = frozenset(".^$*+?{}[]\\|()")


def _structure(pattern: str) -> Iterator[Tuple[int, str, int]]:
    """(index, character, group depth before it) for each character of ``pattern`` outside
    bracket expressions and escapes: the characters that shape a POSIX ERE."""
    depth, in_class, i = 0, False, 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            i += 2
            continue
        if in_class:
            in_class = ch != "]"
        elif ch == "[":
            in_class = True
            if pattern.startswith("]", i + 1) or pattern.startswith("^]", i + 1):
                i += 1 + pattern.startswith("^]", i + 1)  # a ] first in a class is literal
        else:
            yield i, ch, depth
            depth += (ch == "(") - (ch == ")")
        i += 1


def _branches(pattern: str) -> List[str]:
    """``pattern`` split at its top-level ``|`` (outside groups and classes)."""
    cuts = [i for i, ch, depth in _structure(pattern) if ch == "|" and depth == 0]
    return [pattern[a + 1:b] for a, b in zip([-1] + cuts, cuts + [len(pattern)])]


def literal_prefix(branch: str) -> str:
    """The text every whole match of one alternative starts with: its characters up to the
    first regex metacharacter, less the last one where a quantifier that allows zero follows."""
    end = next((i for i, ch in enumerate(branch) if ch in _METACHARACTERS), len(branch))
    if end < len(branch) and branch[end] in "?*{":
        end -= 1
    return branch[:max(end, 0)]


def _group_end(pattern: str) -> int:
    """The index of the ``)`` closing the group that ``pattern`` opens at 0, or -1."""
    return next((i for i, ch, depth in _structure(pattern) if ch == ")" and depth == 1), -1)


def _branch_starts(branch: str, depth: int = 0) -> Tuple[str, ...]:
    """The literal starts of one alternative: its own prefix, or where it opens with a group
    (``(Hitachi |HITACHI )?HDS...``), the group's alternatives' starts (and, for an optional
    group, those of what follows it). () when one cannot be told."""
    if not branch.startswith("("):
        prefix = literal_prefix(branch)
        return (prefix,) if prefix else ()
    close = _group_end(branch)
    if close < 0 or depth > 4:
        return ()
    inner = literal_prefixes(branch[1:close], depth + 1)
    rest = branch[close + 1:]
    quantifier = rest[:1]
    if not inner or quantifier == "{":
        return ()
    if quantifier in ("?", "*"):
        after = _branch_starts(rest[1:], depth + 1)
        return inner + after if after else ()
    return inner


def literal_prefixes(pattern: str, depth: int = 0) -> Tuple[str, ...]:
    """The starts a whole match of ``pattern`` may have (every match starts with one of them);
    () when some alternative's start cannot be told without the regex, so nothing can be ruled
    out by them."""
    out: List[str] = []
    for branch in _branches(pattern):
        starts = _branch_starts(branch, depth)
        if not starts:
            return ()
        out.extend(starts)
    return tuple(dict.fromkeys(out))


def _compile(pattern: str) -> Optional[Pattern[str]]:
    # The database's regexes are POSIX ERE; the subset it uses reads the same in Python.
    try:
        return re.compile(pattern)
    except re.error:
        return None


_PRESET = re.compile(r"-v\s+(\d{1,3}),([^,\s\"]+)(?:,([^,\s\"]+))?(?:,(HDD|SSD))?")
# The revision line in both forms: the Subversion era's keyword ("VERSION: 7.3 $Id: drivedb.h 5319
# 2022-02-19 ...") and the git era's ("VERSION: 7.3/6204 2026-07-20 17:31:50 +0000 98360bf7d5d9").
# The git-era number carries the Subversion count on (5319 in 2022, 6204 in 2026), so the two
# compare: it is the number smartctl prints as "In smartctl database 7.3/6204" and the one
# update-smart-drivedb compares.
_REVISION = re.compile(r"\$Id: drivedb\.h (\d+) (\d{4}-\d\d-\d\d)|VERSION: \d+\.\d+/(\d+) (\d{4}-\d\d-\d\d)")


def _presets(text: str) -> Dict[int, Preset]:
    out: Dict[int, Preset] = {}
    for match in _PRESET.finditer(text):
        attr_id = int(match.group(1))
        if 1 <= attr_id <= 255:
            out[attr_id] = Preset(attr_id, match.group(2), match.group(3), match.group(4))
    return out


# Notes the maintainers put after a listed default that take the check back: a question mark
# ("raw value always 0?", "raw24(raw8)??") or "only in spec" (read in a document, not on a drive).
_RESERVATION = re.compile(r"\?|only in spec", re.IGNORECASE)
# A note naming the one firmware the default was checked on ("// FW SVN423b").
_FIRMWARE_NOTE = re.compile(r"\bFW\s+([A-Za-z0-9._-]+)")


def _confirmed(comments: str) -> Dict[int, Preset]:
    """The defaults an entry lists in comments as checked on its models, each with the note that
    follows it on its line. A default listed with a reservation is not taken as checked."""
    out: Dict[int, Preset] = {}
    for line in comments.splitlines():
        if "-v" not in line:  # most comment lines list no preset
            continue
        closing = line.rfind('"')
        note = line[closing + 1:].partition("//")[2].strip() if closing > 0 else ""
        if _RESERVATION.search(note):
            continue
        for attr_id, preset in _presets(line).items():
            out[attr_id] = Preset(preset.attr_id, preset.fmt, preset.name, preset.only, note)
    return out


def checked_on(preset: Preset, firmware: Optional[str]) -> bool:
    """Whether a listed default vouches for its name on a drive with ``firmware``: always, unless
    its note names the one firmware it was checked on (``// FW SVN423b`` on the JMicron entry,
    whose other models count something else in 241)."""
    named = _FIRMWARE_NOTE.search(preset.note)
    return named is None or (firmware or "").strip() == named.group(1)


# The lexer's tokens: a string literal (an unterminated one runs to the end), a // or /* */
# comment (an unterminated one likewise), or a brace or comma. Everything else (whitespace, the
# C around the array) is skipped. One regex pass is ~5x faster than walking the 300 kB text
# character by character in Python (issue 32: the database is parsed at every start).
_TOKEN = re.compile(r'"([^"\\]*(?:\\.[^"\\]*)*)(?:"|\\?\Z)|//([^\n]*)|/\*(.*?)(?:\*/|\Z)|([{},])', re.S)
_ESCAPE = re.compile(r"\\(.)", re.S)


def _unescape(chunk: str) -> str:
    if "\\" not in chunk:
        return chunk
    return _ESCAPE.sub(lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), chunk)


def _entries(text: str) -> Iterable[Tuple[List[str], str]]:
    """Each ``{ "...", "...", ... }`` of the array: its string fields (adjacent literals joined)
    and the text of the comments inside it. A small C lexer: strings, // and /* */ comments,
    braces."""
    depth = 0
    fields: List[str] = []
    current: Optional[str] = None
    comments: List[str] = []
    for match in _TOKEN.finditer(text):
        string, line_comment, block_comment, punct = match.groups()
        if punct is None:
            if not depth:
                continue
            if string is not None:
                current = (current or "") + _unescape(string)
            else:
                comments.append(line_comment if line_comment is not None else block_comment)
            continue
        if punct == "{":
            depth += 1
            if depth == 1:
                fields, current, comments = [], None, []
        elif punct == "}" and depth:
            depth -= 1
            if depth == 0:
                if current is not None:
                    fields.append(current)
                yield fields, "\n".join(comments)
                current = None
        elif punct == "," and depth == 1:
            fields.append(current or "")
            current = None


# Lookups remembered per database: a host has a handful of (model, firmware) pairs, and a first
# lookup scans (and compiles) up to every entry's regex, 10-30 ms (issue 32). The bound keeps a
# database fed odd strings from growing without end.
LOOKUP_MEMO_MAX = 4096


@dataclass(frozen=True)
class DriveDatabase:
    entries: Tuple[Entry, ...]
    defaults: Dict[int, Preset]
    revision: int = 0
    date: str = ""
    origin: str = ""
    _memo: Dict[Tuple[str, Optional[str]], Optional[Entry]] = field(
        default_factory=dict, compare=False, repr=False, hash=False)

    def lookup(self, model: Optional[str], firmware: Optional[str] = None) -> Optional[Entry]:
        """The first entry whose model (and firmware, where the entry has one) regex matches the
        whole string, as smartctl searches."""
        if not model:
            return None
        key = (model.strip(), firmware.strip() if firmware else firmware)
        try:
            return self._memo[key]
        except KeyError:
            pass
        found = next((entry for entry in self.entries if entry.matches(*key)), None)
        if len(self._memo) >= LOOKUP_MEMO_MAX:
            self._memo.clear()
        self._memo[key] = found
        return found

    def default_name(self, attr_id: int) -> Optional[str]:
        preset = self.defaults.get(attr_id)
        return preset.name if preset else None

    def names_for(self, model: Optional[str], firmware: Optional[str] = None) -> Dict[int, AttributeName]:
        """Every ID's name on this model as this database prints it, with its trust. IDs with
        neither a default nor an entry preset are left out (smartctl prints Unknown_Attribute)."""
        return self.names_of(self.lookup(model, firmware), firmware)

    def names_of(self, entry: Optional[Entry], firmware: Optional[str] = None) -> Dict[int, AttributeName]:
        """:meth:`names_for` once the entry (or None: an unknown drive) has been looked up."""
        out: Dict[int, AttributeName] = {}
        for attr_id, preset in self.defaults.items():
            if preset.name:
                trust = UNKNOWN_DRIVE if entry is None else DEFAULT
                out[attr_id] = AttributeName(preset.name, trust, preset.fmt)
        if entry is not None:
            for attr_id, preset in entry.confirmed.items():
                name = preset.name or self.default_name(attr_id)
                if name and checked_on(preset, firmware):
                    out[attr_id] = AttributeName(name, CONFIRMED, preset.fmt)
            for attr_id, preset in entry.presets.items():
                name = preset.name or self.default_name(attr_id) or "Unknown_Attribute"
                out[attr_id] = AttributeName(name, NAMED, preset.fmt)
        return out

    @property
    def label(self) -> str:
        return f"drivedb.h r{self.revision} ({self.date})" if self.revision else "drivedb.h"


def parse(text: str, origin: str = "") -> DriveDatabase:
    """Entries of a ``drivedb.h`` text. USB bridge entries and ``$``-disabled ones are skipped."""
    entries: List[Entry] = []
    defaults: Dict[int, Preset] = {}
    revision, date = 0, ""
    for fields, comments in _entries(text):
        if len(fields) < 5:
            continue
        family, model, firmware, _warning, presets = fields[:5]
        if family.startswith("VERSION:") or "$Id" in family:
            found = _REVISION.search(family)
            if found:
                revision = int(found.group(1) or found.group(3))
                date = found.group(2) or found.group(4)
            if family.startswith("VERSION:"):
                continue
        if family == "DEFAULT":
            defaults = _presets(presets)
            continue
        if "$Id" in family:  # 6.x databases: the defaults sit in the dummy entry's comment
            defaults = defaults or _presets(comments)
            continue
        if family.startswith(("USB:", "$")) or not model or model == "-":
            continue
        entries.append(Entry(family, model, firmware, _presets(presets), _confirmed(comments)))
    return DriveDatabase(tuple(entries), defaults, revision, date, origin)


def load(path: str | Path) -> DriveDatabase:
    path = Path(path)
    return parse(path.read_text(encoding="utf-8", errors="replace"), str(path))


@functools.cache
def bundled() -> DriveDatabase:
    """The copy shipped with ssdfleet."""
    return load(BUNDLED)


def stated_revision(text: str) -> int:
    """The revision a ``drivedb.h`` text states in its header (the first revision line), without
    parsing its entries; 0 if it states none."""
    found = _REVISION.search(text)
    return int(found.group(1) or found.group(3)) if found else 0


def best_available(paths: Iterable[str] = HOST_PATHS) -> DriveDatabase:
    """The newest database among the host's copies and the bundled one (by SVN revision).

    Only a copy whose header states a newer revision than the best so far is parsed (a parse is
    70 ms of pure Python; the host's copy, where smartmontools is installed, is usually older than
    the bundled one); it is taken only if its entries parse and its parsed revision is newer."""
    best = bundled()
    for path in paths:
        try:
            text = Path(path).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if stated_revision(text) <= best.revision:
            continue
        candidate = parse(text, str(path))
        if candidate.entries and candidate.defaults and candidate.revision > best.revision:
            best = candidate
    return best


# The database a parse in progress names attributes by. Not a setting of this module: the
# smartctl source holds the one its configuration chose and hands it to each parse with
# :func:`using`, which sets it for that call only (a context variable: another thread, or a
# test parsing with another database, is not affected). Outside such a call: the bundled copy.
_active: contextvars.ContextVar[Optional[DriveDatabase]] = contextvars.ContextVar("drivedb", default=None)


def active() -> DriveDatabase:
    """The database of the parse in progress (:func:`using`), else the bundled copy."""
    database = _active.get()
    return database if database is not None else bundled()


@contextlib.contextmanager
def using(database: Optional[DriveDatabase]) -> Iterator[None]:
    """Parse with ``database`` within the block (None: the bundled copy)."""
    token = _active.set(database)
    try:
        yield
    finally:
        _active.reset(token)
