"""One log line per distinct failure, not one per poll.

A tool that prints garbage keeps printing it: logged every cycle, the same failure would bury
everything else (and a traceback a poll would fill a disk). Each failure is logged once, at
WARNING, when it first happens or when its message changes; repeats go to DEBUG; the first
success afterwards is one INFO line. The metric (``ssd_collector_errors_total``) still counts
every failed run. Two messages that differ only in their numbers (a byte count, a line number,
a duration) are one failure.

A bug of ours (an exception a parser should never let out) is logged with its traceback once
per distinct error and key, then like any other failure.
"""

from __future__ import annotations

import logging
import re
from typing import Dict, Sequence, Set, Tuple

_NUMBERS = re.compile(r"\d+(?:[.,]\d+)*")
_QUOTED_CHARS = 300  # a message logged once still stays one line's worth
_RUN = "\x00run"  # the key of FailureLog.run's state


def _fold(message: str) -> str:
    return _NUMBERS.sub("#", message)


class FailureLog:
    """Per-key failure state of one source, for its log lines."""

    def __init__(self, logger: logging.Logger, prefix: str) -> None:
        self._log = logger
        self._prefix = prefix
        self._said: Dict[str, str] = {}  # key -> folded message last logged
        self._tracebacks: Set[Tuple[str, str, str]] = set()

    def failed(self, key: str, message: str) -> bool:
        """Log that ``key`` failed with ``message``; True when it was logged at WARNING."""
        folded = _fold(message)
        text = message if len(message) <= _QUOTED_CHARS else message[:_QUOTED_CHARS] + "..."
        if self._said.get(key) == folded:
            self._log.debug("%s%s (again)", self._prefix, text)
            return False
        self._said[key] = folded
        self._log.warning("%s%s", self._prefix, text)
        return True

    def unexpected(self, key: str, exc: BaseException) -> str:
        """Log an exception that should not have happened (a bug): its traceback the first time
        this error happens for ``key``, then as a plain failure. Returns the message."""
        message = f"internal error: {type(exc).__name__}: {str(exc)[:_QUOTED_CHARS]}"
        signature = (key, type(exc).__name__, _fold(str(exc)[:_QUOTED_CHARS]))
        if signature in self._tracebacks:
            self.failed(key, message)
        else:
            self._tracebacks.add(signature)
            self._said[key] = _fold(message)
            self._log.error("%s%s", self._prefix, message, exc_info=exc)
        return message

    def ok(self, key: str) -> None:
        """``key`` works (again): the next failure is news."""
        if self._said.pop(key, None) is not None:
            self._log.info("%s%s: works again", self._prefix, key)

    def failing(self) -> Tuple[str, ...]:
        return tuple(self._said)

    def run(self, errors: Sequence[str]) -> None:
        """Log the errors of one run of a source: each once while it repeats from run to run
        (WARNING when new, DEBUG after), and one INFO line when a failing source has none."""
        now = {_fold(e): e for e in errors}
        before = self._said.get(_RUN, "")
        seen = set(before.split("\x00")) if before else set()
        for folded, message in now.items():
            if folded in seen:
                self._log.debug("%s%s (again)", self._prefix, message[:_QUOTED_CHARS])
            else:
                self._log.warning("%s%s", self._prefix,
                                  message if len(message) <= _QUOTED_CHARS else message[:_QUOTED_CHARS] + "...")
        if now:
            self._said[_RUN] = "\x00".join(now)
        elif self._said.pop(_RUN, None) is not None:
            self._log.info("%sruns without errors again", self._prefix)
