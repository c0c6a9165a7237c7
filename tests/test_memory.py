"""agent/memory.py: the collector's pauses (issue 32) and glibc's arenas, in a fresh interpreter
each, so that freezing the collector's generations never touches the test process."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from agent import memory
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
    assert result["switch"] == pytest.approx(memory.SWITCH_INTERVAL) and memory.SWITCH_INTERVAL == 0.0001


_FULL_COLLECTIONS = r"""
import gc, json, sys
from agent import memory

if sys.argv[1] == "calm":
    memory.calm_collector()
full = []
gc.callbacks.append(lambda phase, info: full.append(1) if phase == "start" and info["generation"] == 2 else None)
kept = []
for _ in range(400):  # 400,000 tracked objects made and kept, as a merge and a render do
    kept.append([[i] for i in range(1000)])
print(json.dumps({"full": len(full), "young": gc.get_count(), "threshold": gc.get_threshold()}))
"""


def test_the_calm_collector_leaves_the_oldest_generation_to_the_hourly_collection():
    """With Python's thresholds, keeping 400,000 new objects starts full collections (each walks
    every unfrozen object, holding the GIL); with calm_collector's, none starts, and the young
    generations are still collected."""
    def run(mode):
        out = subprocess.run([sys.executable, "-c", _FULL_COLLECTIONS, mode], cwd=str(ROOT), capture_output=True,
                             text=True, timeout=120, check=True)
        return json.loads(out.stdout)

    default, calm = run("default"), run("calm")
    print(" ", default, calm)
    assert default["full"] >= 1
    assert calm["full"] == 0
    assert calm["threshold"][0] == default["threshold"][0] and calm["young"][0] < calm["threshold"][0]


_RELEASE = r"""
import json, sys, threading, time
from agent import memory

memory.quick_handover()

def build():
    return {i: [[j] for j in range(300)] for i in range(1500)}  # 450,000 objects

def longest_gap(drop):
    gaps, stop = [0.0], threading.Event()
    def tick():
        last = time.perf_counter()
        while not stop.is_set():
            now = time.perf_counter()
            gaps[0] = max(gaps[0], now - last)
            last = now
    box = [build()]
    t = threading.Thread(target=tick)
    t.start()
    time.sleep(0.02)
    drop(box)
    time.sleep(0.02)
    stop.set()
    t.join()
    return gaps[0] * 1e3

def at_once(box):
    box[0] = None

def piecewise(box):
    memory.release(box[0])
    assert not box[0]

print(json.dumps({"at_once": min(longest_gap(at_once) for _ in range(3)),
                  "piecewise": min(longest_gap(piecewise) for _ in range(3))}))
"""


def test_releasing_a_big_cache_piecewise_lets_other_threads_run():
    """Dropping a dict that holds the last references to 450,000 objects frees them in one C
    call, the GIL held throughout; memory.release empties it item by item, and another thread
    (the event loop, in the agent) runs between items."""
    out = subprocess.run([sys.executable, "-c", _RELEASE], cwd=str(ROOT), capture_output=True, text=True,
                         timeout=120, check=True)
    result = json.loads(out.stdout)
    print(" ", result)
    assert result["piecewise"] < result["at_once"] / 2
    lst = [1, 2, 3]
    memory.release(lst)
    assert lst == []


_LIBC_CHILD = r"""
import json, signal
children = []
signal.signal(signal.SIGCHLD, lambda *_: children.append(1))
from agent import memory
print(json.dumps({"arenas": memory.limit_arenas(), "trim": memory.trim(), "children": len(children)}))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc")
def test_the_c_library_is_reached_without_starting_a_process():
    """The arena cap and the trim reach glibc through the process's own symbols: no child
    process at start (ctypes.util.find_library runs ``ldconfig -p`` for a name, about 7 ms of
    a starting agent)."""
    out = subprocess.run([sys.executable, "-c", _LIBC_CHILD], cwd=str(ROOT), capture_output=True, text=True,
                         timeout=60, check=True)
    got = json.loads(out.stdout)
    assert got["children"] == 0, got
    assert got["arenas"] is True and got["trim"] in (True, False), got
