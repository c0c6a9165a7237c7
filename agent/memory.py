"""Keeping the agent's resident memory small on glibc, and its garbage collection short.

Every thread that allocates gets a malloc arena of its own, and memory freed after a poll
(smartctl's JSON for every drive, parsed and dropped) stays in those arenas. Two arenas are
plenty for an agent whose threads mostly wait, and trimming after a poll hands the freed pages
back to the kernel. Both are glibc calls made through ctypes; elsewhere they do nothing.
"""

from __future__ import annotations

import ctypes
import gc
import logging
import sys
import time
from typing import Any, Callable, Optional

log = logging.getLogger("ssdfleet.memory")

_M_ARENA_MAX = -8  # mallopt parameter (malloc.h)
_libc: Optional[ctypes.CDLL] = None
_looked = False


def _glibc() -> Optional[ctypes.CDLL]:
    global _libc, _looked
    if not _looked:
        _looked = True
        try:
            # The process's own symbols, which hold the C library's: no lookup by name, which
            # is ctypes.util.find_library running ``ldconfig -p`` in a child process at start.
            libc = ctypes.CDLL(None)
            # only glibc has both
            _libc = libc if hasattr(libc, "mallopt") and hasattr(libc, "malloc_trim") else None
        except OSError:
            _libc = None
    return _libc


def limit_arenas(arenas: int = 2) -> bool:
    """Cap glibc's malloc arenas; call before the threads start. True when it took."""
    libc = _glibc()
    if libc is None:
        return False
    return bool(libc.mallopt(_M_ARENA_MAX, arenas))


def trim() -> bool:
    """Give freed heap pages back to the kernel. True when some memory was released."""
    libc = _glibc()
    if libc is None:
        return False
    return bool(libc.malloc_trim(0))


# -- pauses ---------------------------------------------------------------------------------
#
# The scrape runs on the event loop thread; everything else (polls, parsing, the render) runs
# in threads of the same interpreter, one at a time under the GIL. Two things made a scrape at
# 1,024 drives wait (issue 32: p99 93 ms, max 483 ms against the floor's 7.6 and 22):
#
# * A full collection of Python's cyclic garbage collector walks every tracked object: 216,000
#   at 1,024 drives, 175-185 ms on a quiet machine (70-78 ms at 256), holding the GIL. Nearly all
#   of them are the snapshot and the render caches, which live until the next snapshot replaces
#   them and are freed then by reference counting (a poll and a render leave no cyclic garbage:
#   gc.collect() after each found 0 objects, 256 simulated drives, 4 polls). So after each
#   snapshot is published, what is alive is moved to the collector's permanent generation
#   (``gc.freeze``): collections then walk only what was made since. Once an hour everything is
#   walked again (``gc.unfreeze``, one full collection), so garbage cycles that were frozen are
#   freed within the hour; that collection is the one pause left, and it is timed in the log
#   at debug level.
# * The GIL is handed between threads every 5 ms by default: a scrape asks for it back after
#   each system call (reading the request, writing the answer, waiting for the next event), so
#   during a render it waited up to 5 ms each time. And the wait is per contender: while
#   smartctl's reads are parsed in four probe threads, the merge and the render run too, and
#   the GIL may go to any of them first, so the event loop waited several intervals in a row.
#   At 1,024 drives (scraped every 100 ms, every source at its interval, 120 s) the scrape's
#   p99 was 15.9 ms at a 1 ms interval, 12.8 at 0.25 ms and 8.8 at 0.1 ms (max 27.7 -> 12.2).
#   A switch costs microseconds and happens only while threads contend, so the agent uses
#   0.1 ms.

# * Between two snapshots the objects made since the last freeze (a merge's new snapshot, its
#   render) are not frozen yet, and an automatic collection of the oldest generation walks all
#   of them: at 1,024 drives the longest pauses left, 20-22 ms, were such collections, started
#   by an allocation in the render (a watchdog thread that saw the GIL late, with the other
#   threads' stacks). The oldest generation is therefore never collected automatically
#   (:func:`calm_collector`): the young generations still are, and what outlives them is frozen
#   at the next snapshot and walked by the hourly collection.
SWITCH_INTERVAL = 0.0001
FULL_COLLECTION_EVERY = 3600.0
# gen2's threshold: collections of generation 1 between two of generation 2. Python's default is
# 10 (and a full collection also waits until a quarter of the long-lived objects are new); this
# many is never reached between two hourly collections.
NO_AUTOMATIC_FULL = 1 << 30


def release(container: Any) -> None:
    """Empty a dict or list that held the last references to many objects one item at a time.
    Dropping it whole frees everything in one C call that keeps the GIL throughout (an old
    render cache at 1,024 drives: 15-20 ms, a scrape waiting on it); item by item the
    interpreter can hand the GIL over between items, at the same total cost."""
    if isinstance(container, dict):
        while container:
            container.popitem()
    elif isinstance(container, list):
        while container:
            container.pop()


def calm_collector() -> None:
    """Leave the collector's young generations as they are and its oldest to the hourly
    collection (:class:`Settler`)."""
    young, middle, _old = gc.get_threshold()
    gc.set_threshold(young, middle, NO_AUTOMATIC_FULL)


def quick_handover(interval: float = SWITCH_INTERVAL) -> None:
    """Make a thread that waits for the GIL (the event loop after a system call) wait less."""
    sys.setswitchinterval(interval)


class Settler:
    """A poller listener: after each snapshot, freeze what is alive; once every ``every``
    seconds, unfreeze and collect everything first."""

    def __init__(self, every: float = FULL_COLLECTION_EVERY, clock: Callable[[], float] = time.monotonic) -> None:
        self.every = every
        self.clock = clock
        self.last_full = clock()
        self.full_collections = 0

    def __call__(self, _snapshot: Any = None) -> None:
        now = self.clock()
        if now - self.last_full >= self.every:
            self.last_full = now
            started = time.perf_counter()
            gc.unfreeze()
            found = gc.collect()
            self.full_collections += 1
            log.debug("full garbage collection: %d unreachable objects in %.0f ms", found,
                      (time.perf_counter() - started) * 1e3)
        gc.freeze()
