"""agent/memory.py: the collector's pauses (issue 32) and glibc's arenas, in a fresh interpreter
each, so that freezing the collector's generations never touches the test process."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import ROOT

_CHILD = r"""
import gc, json, sys, time
from agent import memory

clock = [0.0]
settle = memory.Settler(every=3600.0, clock=lambda: clock[0])

class Node:
    pass

def cycles(n):
    out = []
    for _ in range(n):
        a, b = Node(), Node()
        a.other, b.other = b, a
        out.append(a)
    return out

live = [[Node() for _ in range(50)] for _ in range(2000)]  # 102,000 tracked objects that stay
gc.collect()
def full_ms():
    t = time.perf_counter(); gc.collect(); return (time.perf_counter() - t) * 1e3
before = full_ms()
settle()                                   # a snapshot published: what is alive is frozen
frozen = gc.get_freeze_count()
after = full_ms()
garbage = cycles(1000)
settle()                                   # the cycles are alive now: frozen with the rest
with_cycles = gc.get_freeze_count()
del garbage
kept = gc.collect()                        # frozen cycles are not collected ...
clock[0] = 3600.0
settle()                                   # ... until the hourly full collection
print(json.dumps({"frozen": frozen, "with_cycles": with_cycles, "before_ms": before, "after_ms": after, "kept": kept,
                  "full": settle.full_collections, "switch": (memory.quick_handover(), sys.getswitchinterval())[1],
                  "frozen_after_hour": gc.get_freeze_count()}))
"""


def test_settling_freezes_the_live_objects_and_the_hourly_collection_frees_frozen_cycles():
    out = subprocess.run([sys.executable, "-c", _CHILD], cwd=str(ROOT), capture_output=True, text=True,
                         timeout=120, check=True)
    result = json.loads(out.stdout)
    print(" ", result)
    assert result["frozen"] >= 100_000
    # a full collection no longer walks the frozen objects
    assert result["after_ms"] < result["before_ms"] / 5
    assert result["kept"] == 0 and result["full"] == 1
    # the hourly collection freed the 2,000 objects of the dropped cycles, then froze the rest
    assert result["with_cycles"] >= result["frozen"] + 2000
    assert result["frozen_after_hour"] <= result["frozen"] + 100
    assert result["switch"] == 0.001
