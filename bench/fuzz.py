"""Fuzz every parser entry point with >= 100,000 examples each, outside CI.

CI keeps its quick hypothesis run (tests/test_fuzz_parsers.py, a few hundred examples per
parser). This script reuses that module's table of entry points, seeds (real captures from
tests/fixtures) and allowed exceptions, and drives each entry point with its own fast random
generator instead of hypothesis, so 100,000 examples per entry point take minutes, not hours:

* half the examples are real captures mutated the way broken tools and pipes mangle output
  (bit flips, deleted, duplicated and truncated lines, numbers replaced by huge, negative,
  fractional or non-numbers, inserted bytes), the same mutations as the CI run;
* half are arbitrary bytes and arbitrary text.

Beyond the parsers it fuzzes the agent's configuration loader and the history's storage of a
reading (any integer or float a parser could hand over must be stored and read back without
an exception, see agent/history.py).

An escape is any exception other than the entry point's documented one (``ParseError``,
``WebConfigError``, ``ConfigError``). Prints per entry point the examples run and escapes
found (with the first reproducer, hex), the total, and exits 1 on any escape.

    python bench/fuzz.py                         # 100,000 examples per entry point
    python bench/fuzz.py --examples 2000 --only smartctl
"""

from __future__ import annotations

import argparse
import os
import random
import re
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agent.config import ConfigError  # noqa: E402
from agent.history import History  # noqa: E402
from agent.privhelper import HelperRunner, Refused  # noqa: E402
from collectors.model import DriveReading  # noqa: E402
from collectors.runner import ToolResult  # noqa: E402
from tests import test_fuzz_parsers as table  # noqa: E402

_NUMBER = re.compile(rb"-?\d+(?:\.\d+)?")
_REPLACEMENTS = table._REPLACEMENTS
_INSERTS = [b"\n", b": ", b"=", b"\t", b"{", b"]", b"\x00", b"\xff\xfe", b"\"", b"\\"]


def mutate(rng: random.Random, seed: bytes) -> bytes:
    data = bytearray(seed)
    for _ in range(rng.randint(1, 4)):
        kind = rng.choice(("flip", "delete_line", "dup_line", "truncate", "number", "insert"))
        if kind == "flip" and data:
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        elif kind in ("delete_line", "dup_line"):
            lines = bytes(data).split(b"\n")
            i = rng.randrange(len(lines))
            if kind == "delete_line":
                del lines[i]
            else:
                lines.insert(i, lines[i])
            data = bytearray(b"\n".join(lines))
        elif kind == "truncate" and data:
            data = data[: rng.randint(0, len(data))]
        elif kind == "number":
            found = list(_NUMBER.finditer(bytes(data)))
            if found:
                m = rng.choice(found)
                new = rng.choice(_REPLACEMENTS) if rng.random() < 0.7 else os.urandom(rng.randint(0, 6))
                data[m.start():m.end()] = new
        elif kind == "insert":
            i = rng.randint(0, len(data))
            data[i:i] = rng.choice(_INSERTS) if rng.random() < 0.5 else os.urandom(rng.randint(1, 16))
    return bytes(data)


def arbitrary(rng: random.Random) -> bytes:
    if rng.random() < 0.5:
        return os.urandom(rng.randint(0, 2000))
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789 :=,.-_{}[]\"\n\t%/#" + "\u00e9\u2028\x1b\x00"
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 400))).encode("utf-8", "surrogatepass")


# ---------------------------------------------------------------- entry points beyond the table

_INTS = [0, 1, -1, 2**31, 2**53 + 1, 2**63 - 1, 2**63, 2**64 - 1, 2**64, -(2**63), -(2**63) - 1, 10**29, 10**300]
_FLOATS = [0.0, -0.0, 1e-300, 1e300, float("inf"), float("-inf"), float("nan"), 0.5, 1.5]


def _history_entry(tmp: Path) -> Callable[[bytes], Any]:
    """Store a reading whose counters are drawn from the bytes, then read it back: every value
    must round-trip (NaN reads back as absent) and nothing may raise."""
    history = History(str(tmp / "fuzz-history.sqlite"), min_interval_seconds=1.0, max_rows_per_drive=50)
    counter = [0]
    start = time.time() - 86400.0

    def pick(rng: random.Random) -> Any:
        r = rng.random()
        if r < 0.2:
            return None
        if r < 0.55:
            return rng.choice(_INTS) + rng.randint(-2, 2)
        if r < 0.75:
            return rng.choice(_FLOATS)
        return rng.randint(-(2**80), 2**80)

    def run(data: bytes) -> Any:
        rng = random.Random(data)
        counter[0] += 1
        reading = DriveReading(
            kind="ata", device="/dev/sda", serial=f"S{counter[0] % 7}",
            host_written_bytes=pick(rng), nand_written_bytes=pick(rng), power_on_seconds=pick(rng),
            media_errors=pick(rng), life_left_ratio=rng.choice(_FLOATS + [None]),
            defects={"reallocated": pick(rng)} if rng.random() < 0.5 else {},
        )
        ts = start + counter[0] * 2.0  # recent: retention must not delete it
        history.record(reading.serial, ts, reading)
        got = [s for s in history.samples(reading.serial) if s.ts == ts]
        if history.dropped_total:
            raise AssertionError(f"history dropped a sample: {history.dropped_total}")
        if not got:
            raise AssertionError("the sample was not stored")
        s = got[0]
        for name in ("host_written_bytes", "nand_written_bytes", "power_on_seconds", "media_errors"):
            want = getattr(reading, name)
            have = getattr(s, name)
            if isinstance(want, float) and want != want:
                want = None
            if want != have and not (isinstance(want, float) and isinstance(have, float) and want == have):
                raise AssertionError(f"{name}: stored {want!r}, read back {have!r}")
        return s

    return run


def entry_points(tmp: Path) -> Dict[str, Tuple[Callable[[bytes], Any], Sequence[bytes], type]]:
    points = dict(table.PARSERS)
    points["config.load_config"] = (table._config_from_file(tmp), table.CONFIG_YAML, ConfigError)
    points["history.record+samples"] = (_history_entry(tmp), [b"seed"], _Nothing)
    helper_dir = tmp / "helper"
    helper_dir.mkdir()
    points["privhelper.ProbeHelper.handle"] = (table._answered(table._helper(helper_dir)), table._requests("/dev"),
                                               Refused)
    points["privhelper.HelperRunner._result"] = (_answer_entry, table.ANSWERS, _Nothing)
    return points


class _Nothing(Exception):
    """No exception is allowed out of these entry points."""


def _answer_entry(data: bytes) -> Any:
    result = HelperRunner._result(("smartctl",), data, 0.0,
                                  lambda why: ToolResult(("smartctl",), None, b"", b"", 0.0, error=why))
    if not isinstance(result, ToolResult):
        raise AssertionError(f"not a ToolResult: {result!r}")
    return result


def fuzz(name: str, fn: Callable[[bytes], Any], seeds: Sequence[bytes], allowed: type, examples: int,
         rng: random.Random) -> Tuple[int, List[Tuple[str, bytes]]]:
    escapes: List[Tuple[str, bytes]] = []
    seeds = list(seeds) or [b""]
    for i in range(examples):
        data = mutate(rng, rng.choice(seeds)) if i % 2 == 0 else arbitrary(rng)
        try:
            fn(data)
        except allowed:
            pass
        except RecursionError as exc:
            escapes.append((f"RecursionError: {exc}", data))
        except Exception as exc:  # an escape: what the poller would have crashed on
            escapes.append((f"{type(exc).__name__}: {exc}"[:300] + "\n" + traceback.format_exc(limit=-2), data))
    return examples, escapes


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--examples", type=int, default=100_000, help="examples per entry point (default 100,000)")
    ap.add_argument("--only", help="entry points whose name contains this")
    ap.add_argument("--seed", type=int, default=13)
    args = ap.parse_args(argv)
    import logging

    logging.disable(logging.CRITICAL)  # refusals are logged by design; not the point here
    tmp = Path(tempfile.mkdtemp(prefix="ssdfleet-fuzz-"))
    points = entry_points(tmp)
    names = [n for n in sorted(points) if not args.only or args.only in n]
    total = 0
    escaped = 0
    started = time.monotonic()
    for name in names:
        fn, seeds, allowed = points[name]
        t0 = time.monotonic()
        count, escapes = fuzz(name, fn, seeds, allowed, args.examples, random.Random(f"{args.seed}:{name}"))
        total += count
        escaped += len(escapes)
        print(f"{name}: {count} examples, {len(escapes)} escapes ({time.monotonic() - t0:.0f} s)", flush=True)
        for message, data in escapes[:1]:
            print(f"  first escape: {message}\n  input (hex, first 200 bytes): {data[:200].hex()}", flush=True)
    print(f"fuzz: {len(names)} entry points, {total} examples in {time.monotonic() - started:.0f} s, "
          f"{escaped} escapes")
    import shutil

    shutil.rmtree(tmp, ignore_errors=True)
    return 1 if escaped else 0


if __name__ == "__main__":
    sys.exit(main())
