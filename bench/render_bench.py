"""Render CPU per snapshot: a full render, and the render after a diskstats pass.

For each size a simulated host (simulator/) is polled once by the real Poller, with tool
output rendered in-process beforehand (bench/agent_bench.py's PreRendered: no tool runs in
the timed part). Then, with :class:`agent.metrics.Exposition` from ``--tree`` (this checkout,
or another to compare):

* **first**: ``prepare(snapshot)`` on a fresh Exposition (nothing cached);
* **diskstats**: ``prepare`` of the next snapshot as a diskstats pass makes it: every drive's
  I/O counters moved (``dataclasses.replace`` of ``Drive.io``), nothing else;
* **same drives**: ``prepare`` of a new snapshot object holding the same drive records (a
  source ran and found nothing new);
* **gzip share**: of the diskstats figure, the part spent compressing the text (level 6, one
  ``zlib`` pass over the body, timed alone);
* **scrape tail**: what every gzip scrape computes itself, ``gzip_parts()`` (the ages of the
  drives' data formatted and compressed, the trailer), microseconds per call (1,000 calls
  timed together, median of ``--repeat``), and the bytes it adds.

CPU time (``time.process_time``) of the calling thread's process, median of ``--repeat``.
Usage: ``python bench/render_bench.py [--sizes 256,1024] [--repeat 7] [--tree PATH]``.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import shutil
import statistics
import sys
import tempfile
import time
import zlib
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="256,1024")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--tree", default=str(HERE.parent))
    args = ap.parse_args()
    sys.path.insert(0, str(Path(args.tree).resolve()))
    sys.path.insert(1, str(HERE))
    from agent_bench import PreRendered  # noqa: E402

    from agent.config import load_config  # noqa: E402
    from agent.history import History  # noqa: E402
    from agent.metrics import Exposition  # noqa: E402
    from agent.poller import Poller  # noqa: E402
    from simulator.demo import demo_drives  # noqa: E402
    from simulator.host import SimHost  # noqa: E402

    print(f"tree {args.tree}; median CPU ms of {args.repeat}")
    print("| drives | first render | after a diskstats pass | same drives, new snapshot | gzip of the body | body bytes "
          "| scrape tail us | tail bytes | load average |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for size in [int(s) for s in args.sizes.split(",")]:
        load = os.getloadavg()[0]
        workdir = Path(tempfile.mkdtemp(prefix=f"ssdfleet-render-{size}-"))
        try:
            now = time.time()
            host = SimHost(workdir / "host", demo_drives(size, now), speed=0.0, sim_start=now)
            poller = Poller(load_config(overrides=host.config_overrides()), runner=PreRendered(str(host.state_file)),
                            history=History(None, clock=host.clock), clock=host.clock)
            try:
                snap = poller.poll_once()
            finally:
                poller.stop()
            first, disk, same, packing, tails = [], [], [], [], []
            for k in range(args.repeat):
                exposition = Exposition(lambda s=snap: s)
                t = time.process_time()
                exposition.feed(snap)
                first.append(time.process_time() - t)
                moved = tuple(d if d.io is None else dataclasses.replace(
                    d, io=dataclasses.replace(d.io, reads_completed=d.io.reads_completed + k + 1)) for d in snap.drives)
                nxt = dataclasses.replace(snap, drives=moved)
                t = time.process_time()
                exposition.feed(nxt)
                disk.append(time.process_time() - t)
                again = dataclasses.replace(nxt, created=nxt.created + 1)
                t = time.process_time()
                exposition.feed(again)
                same.append(time.process_time() - t)
                body = exposition.render_parts()[0]
                t = time.process_time()
                z = zlib.compressobj(6, zlib.DEFLATED, 31)
                z.compress(body)
                z.flush(zlib.Z_SYNC_FLUSH)
                packing.append(time.process_time() - t)
                t = time.perf_counter()
                for _ in range(1000):
                    _head, tail = exposition.gzip_parts()
                tails.append((time.perf_counter() - t) / 1000)
            ms = [statistics.median(x) * 1e3 for x in (first, disk, same, packing)]
            print(f"| {size} | {ms[0]:.1f} | {ms[1]:.1f} | {ms[2]:.1f} | {ms[3]:.1f} | {len(body):,} | "
                  f"{statistics.median(tails) * 1e6:.0f} | {len(tail):,} | {load:.2f} -> {os.getloadavg()[0]:.2f} |",
                  flush=True)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
