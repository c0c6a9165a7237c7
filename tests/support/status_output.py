"""``ssdfleet status`` output parsed: its table rows and wear-out blocks, and a run on a pseudo-
terminal.

Moved out of test_status.py (issue 27: test modules import helpers from tests/support/ only).
"""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import time
from typing import Any, Dict, List, Optional, Tuple

from tests.fakehost import ROOT, FakeHost, free_port

ANSI = re.compile(r"\x1b\[[0-9;]*m")


def table_rows(out: str) -> Dict[str, Dict[str, str]]:
    """Table lines by device, each a dict of header -> cell. Cells are cut at the columns
    where the headers start (headers have no blanks; cells are left-aligned and padded)."""
    lines = out.splitlines()
    assert lines[0].startswith("DEVICE  "), lines[0]
    starts = [(m.start(), m.group()) for m in re.finditer(r"\S+", lines[0])]
    rows = {}
    for line in lines[1:]:
        if not line or not line[0].isalnum() or re.match(r"\S+:", line) or line.startswith("why flagged"):
            break  # the table ends at the "why flagged:" block or the footer ("source: ...")
        cells = {}
        for i, (start, header) in enumerate(starts):
            end = starts[i + 1][0] if i + 1 < len(starts) else len(line)
            assert start == 0 or line[start - 2:start] == "  ", (header, line)  # columns line up
            cells[header] = line[start:end].strip()
        rows[cells["DEVICE"]] = cells
    return rows


def projection_blocks(out: str, projections: List[Dict[str, Any]]) -> Dict[str, Tuple[str, str, Dict[str, str]]]:
    """The wear-out methods in `status --drive` output, in order, keyed by the API's method
    name (the output names them in words, the API's ``label``): method -> (mark, verdict,
    {input in words: value})."""
    by_label = {p["label"]: p["method"] for p in projections}
    blocks: Dict[str, Tuple[str, str, Dict[str, str]]] = {}
    current = None
    for line in out.split("\nwear-out", 1)[1].splitlines()[1:]:
        m = re.match(r"^  ([* ]) (from [^:]+): (.*)$", line)
        if m and m.group(2) in by_label:
            current = by_label[m.group(2)]
            blocks[current] = (m.group(1), m.group(3), {})
        elif current and line.startswith(" " * 16) and line.strip() != "(no inputs)":
            name, value = line.strip().split(":", 1)
            blocks[current][2][name] = value.strip()
        elif current and line.startswith(" " * 14):
            mark, verdict, inputs = blocks[current]
            blocks[current] = (mark, verdict + " " + line.strip(), inputs)  # a folded note
        elif not line.startswith(" "):
            break
    return blocks


def on_a_terminal(host: FakeHost, cols: Optional[int] = None, rows: int = 40,
                  env: Optional[Dict[str, str]] = None) -> Tuple[int, str, str]:
    """``ssdfleet status`` on a real pty (as ssh gives), of ``cols`` x ``rows`` when given,
    pointed at a port nobody listens on (one local poll). Returns (exit code, output without
    colour codes, raw output)."""
    primary, secondary = pty.openpty()
    if cols is not None:
        fcntl.ioctl(secondary, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    url = f"http://127.0.0.1:{free_port()}"
    proc = subprocess.Popen([sys.executable, "-m", "agent", "status", "--url", url] + host.config_args(),
                            stdout=secondary, stderr=subprocess.PIPE, cwd=str(ROOT), start_new_session=True,
                            env=env)
    os.close(secondary)
    out = b""
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            ready, _, _ = select.select([primary], [], [], 1.0)
            if ready:
                try:
                    chunk = os.read(primary, 65536)
                except OSError:  # the child closed the terminal
                    break
                if not chunk:
                    break
                out += chunk
            elif proc.poll() is not None:
                break
        code = proc.wait(timeout=30)
    finally:
        os.close(primary)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    raw = out.decode().replace("\r\n", "\n")  # the pty turns \n into \r\n
    return code, ANSI.sub("", raw), raw
