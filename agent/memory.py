"""Keeping the agent's resident memory small on glibc.

Every thread that allocates gets a malloc arena of its own, and memory freed after a poll
(smartctl's JSON for every drive, parsed and dropped) stays in those arenas. Two arenas are
plenty for an agent whose threads mostly wait, and trimming after a poll hands the freed pages
back to the kernel. Both are glibc calls made through ctypes; elsewhere they do nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
from typing import Optional

log = logging.getLogger("ssdfleet.memory")

_M_ARENA_MAX = -8  # mallopt parameter (malloc.h)
_libc: Optional[ctypes.CDLL] = None
_looked = False


def _glibc() -> Optional[ctypes.CDLL]:
    global _libc, _looked
    if not _looked:
        _looked = True
        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
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
