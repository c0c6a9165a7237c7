"""Text from devices, made safe to show.

Serials, models, firmware strings and tool messages are whatever a drive's firmware or a tool
prints. A control character in them (an ESC starting a terminal escape sequence, a carriage
return that overwrites a line, a bidirectional override that reorders what a reader sees)
must not reach a terminal, a page or a Prometheus label as itself. :func:`printable` is the one
function every such output uses (agent/page.py, agent/status.py, the /metrics label values and
the agent's own log lines about a drive): it writes each such character as a visible escape
(``\\x1b``, ``\\u202e``), so nothing is lost and nothing is interpreted. HTML and label syntax
(``<``, ``"``, ``\\``) remain the job of each format's own escaping, applied after this.
"""

from __future__ import annotations

import re
from typing import Any, Optional

# C0 and C1 controls, DEL, and the Unicode direction marks, embeddings, overrides and isolates
# (the "Trojan Source" characters). Tabs and newlines are controls here too: a serial has none.
# And lone surrogates, which a byte that is not UTF-8 becomes when read with surrogateescape:
# no text format can encode them, so one in a label would fail the whole /metrics render.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def _escape(match: re.Match[str]) -> str:
    return match.group().encode("unicode_escape").decode("ascii")


def printable(value: Any) -> str:
    """``value`` as text with every control character written as an escape (``\\x1b``)."""
    text = "" if value is None else str(value)
    return _UNSAFE.sub(_escape, text) if _UNSAFE.search(text) else text


def defang(value: Any) -> Any:
    """:func:`printable` applied to every string in ``value`` (dicts, keys too; lists and
    tuples become lists), recursively; other values as they are."""
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, dict):
        return {defang(k): defang(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [defang(v) for v in value]
    return value


def percent(ratio: Optional[float], digits: int = 1) -> str:
    """``0.99`` -> ``99%``, ``0.8125`` -> ``81.2%``, ``0.025`` -> ``2.5%``: whole percent only when
    that is exact, so a flag never rounds a drive's life left up or down a step."""
    if ratio is None:
        return "-"
    text = f"{ratio * 100:.{digits}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text + "%"
