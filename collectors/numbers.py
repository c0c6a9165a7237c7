"""Numbers as tools print them, read without letting Python itself fail.

A parser may only raise :class:`~collectors.model.ParseError`; anything else is a crash in the
poller's thread, a traceback in the log every poll and, for a host-wide tool such as
``fio-status``, every drive of the source lost at once. Three inputs make the interpreter
raise something else, whatever the parser's own checks:

* a decimal integer of more than 4,300 digits: ``int()`` refuses it on Python 3.11 and later
  (``ValueError``, ``sys.set_int_max_str_digits``) and takes quadratic time on 3.9 and 3.10.
  No field of any drive protocol needs more than 39 digits (a 128-bit NVMe counter), so a
  longer run of digits is garbage; it is refused here, the same on every Python version,
  before anything converts it;
* an integer beyond float range (about 1.8e308) where a float is needed (``OverflowError``):
  :func:`is_finite` and :func:`show` never convert one, and a parser compares it as an int;
* JSON nested deeper than the interpreter's recursion limit (``RecursionError`` from
  ``json.loads``): :func:`load_json` classifies it as a refusal; no report any tool prints is
  more than a few levels deep.

:func:`guarded` wraps a parser's public entry point: it refuses over-long digit runs in the
text before parsing and turns what still escapes (``OverflowError``, ``RecursionError``, a
plain ``ValueError``) into a ``ParseError`` that says what kind of input it was, so the log
gets one clear line, never a traceback.
"""

from __future__ import annotations

import functools
import json
import math
import re
from typing import Any, Callable, Optional, Sequence, TypeVar, Union, cast

from collectors.model import ParseError

# Python 3.11's default limit for int() on decimal text; 39 digits hold 2**128.
MAX_DIGITS = 4300
_LONG_DIGITS = re.compile(rf"\d{{{MAX_DIGITS + 1},}}")
_LONG_DIGITS_BYTES = re.compile(rf"\d{{{MAX_DIGITS + 1},}}".encode())
# Longest quote of the input an error message carries: a log line stays a line.
QUOTE_CHARS = 80

F = TypeVar("F", bound=Callable[..., Any])


def quote(text: str) -> str:
    """``text`` as a message quotes it: repr'd and cut to :data:`QUOTE_CHARS`."""
    if len(text) <= QUOTE_CHARS:
        return repr(text)
    return repr(text[:QUOTE_CHARS]) + f"... ({len(text):,} characters)"


def show(value: object) -> str:
    """A number for a message. An int of more than 20 digits is named by its length: it may
    be beyond float range, and its digits would swamp the log line."""
    if isinstance(value, int) and not isinstance(value, bool):
        if abs(value) < 10**20:
            return str(value)
        # str() of an int over 4,300 digits raises on Python 3.11+: count digits by its bits.
        digits = int(abs(value).bit_length() * math.log10(2)) + 1
        return f"{'a negative' if value < 0 else 'a'} {digits:,}-digit number"
    return repr(value)


def is_finite(value: Union[int, float]) -> bool:
    """``math.isfinite`` that never converts an int (always finite, maybe beyond float range)."""
    return isinstance(value, int) or math.isfinite(value)


def long_digits(text: Union[str, bytes]) -> Optional[str]:
    """Why ``text`` cannot be read (a run of more than :data:`MAX_DIGITS` digits, with its line
    number), or None."""
    if isinstance(text, bytes):
        found = _LONG_DIGITS_BYTES.search(text)
        newline: Union[str, bytes] = b"\n"
    else:
        found = _LONG_DIGITS.search(text)
        newline = "\n"
    if found is None:
        return None
    line = text.count(newline, 0, found.start()) + 1  # type: ignore[arg-type]
    return (f"line {line}: a number of {found.end() - found.start():,} digits "
            f"(no drive figure has more than 39; read at most {MAX_DIGITS:,})")


def _bounded_int(text: str) -> int:
    if len(text) > MAX_DIGITS + 1:  # +1: a minus sign
        raise ParseError(f"a number of {len(text):,} digits (read at most {MAX_DIGITS:,})")
    return int(text)


def load_json(data: Union[str, bytes], what: str) -> Any:
    """``json.loads`` with integers of at most :data:`MAX_DIGITS` digits and deep nesting
    refused as :class:`ParseError` (``what`` names the document in the message)."""
    try:
        return json.loads(data, parse_int=_bounded_int)
    except ParseError as exc:
        raise ParseError(f"{what}: {exc}") from None
    except RecursionError:
        raise ParseError(f"{what}: nested too deeply to read (no tool report is more than a few levels deep)") from None
    except ValueError as exc:  # json.JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise ParseError(f"{what}: {str(exc)[:200]}") from None


def _classify(exc: BaseException) -> str:
    if isinstance(exc, RecursionError):
        return "nested too deeply to read"
    if isinstance(exc, OverflowError):
        return f"a number beyond float range ({exc})"
    return f"unreadable value ({str(exc)[:200]})"


def _scan(args: Sequence[Any]) -> Optional[str]:
    for arg in args:
        if isinstance(arg, (str, bytes)):
            why = long_digits(arg)
        elif isinstance(arg, (list, tuple)) and all(isinstance(a, str) for a in arg):
            why = long_digits("\n".join(arg))
        else:
            continue
        if why:
            return why
    return None


def guarded(what: str, scan: bool = True) -> Callable[[F], F]:
    """Decorator for a parser's public entry point: text arguments (and lists of lines) with a
    run of more than :data:`MAX_DIGITS` digits are refused before parsing (``scan``: a parser
    that isolates the parts of its input, such as one module block of several, scans each part
    itself), and an ``OverflowError``, ``RecursionError`` or ``ValueError`` the parser lets out
    becomes a :class:`ParseError` prefixed with ``what`` (a ``ParseError`` passes unchanged)."""

    def wrap(fn: F) -> F:
        @functools.wraps(fn)
        def parse(*args: Any, **kwargs: Any) -> Any:
            why = _scan(args) if scan else None
            if why:
                raise ParseError(f"{what}: {why}")
            try:
                return fn(*args, **kwargs)
            except ParseError:
                raise
            except (OverflowError, RecursionError, ValueError) as exc:
                raise ParseError(f"{what}: {_classify(exc)}") from None

        return cast(F, parse)

    return wrap


def as_float(value: Union[int, float]) -> float:
    """``float(value)``, with an int beyond float range as +-inf (which every bound refuses)
    instead of an ``OverflowError``."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf
