"""``ssdfleet status`` on terminals of different widths, as the DBA paged at night reads it.

The real command on the fake host (sda's write cache off: critical; nvme1's media errors:
warning; dfa and nvme0 healthy), piped with $COLUMNS, piped without it, and on a real pty of
a given size. Every line must fit, and the columns that say which drive, how bad and since
when must survive at 80 columns.
"""

from __future__ import annotations

import fcntl
import io
import json
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from typing import Dict, List, Optional

import pytest

from agent.status import COLUMNS, KEPT, clip, ellipsis_for, table_width
from agent.views import input_rows
from tests.conftest import fixture_path
from tests.fakehost import ROOT, FakeHost, build_default_host, free_port
from tests.test_e2e_agent import NVME0_SERIAL, NVME1_SERIAL, SDA_SERIAL, SHANNON_SERIAL
from tests.test_status import on_a_terminal as status_on_a_terminal
from tests.test_status import projection_blocks, table_rows

ANSI = re.compile(r"\x1b\[[0-9;]*m")
ALL_HEADERS = [c.header for c in COLUMNS]
SERIALS = {"sda": SDA_SERIAL, "nvme1": NVME1_SERIAL, "dfa": SHANNON_SERIAL, "nvme0": NVME0_SERIAL}
CRITICAL_REASON = "write cache disabled, expected enabled"


@pytest.fixture
def host(tmp_path) -> FakeHost:
    h = build_default_host(tmp_path)
    h.set_response("hdparm", "sda", fixture_path("fakehost/hdparm-W-sda-off.txt"))
    return h


def status_env(columns: Optional[str], **extra: str) -> Dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "SSDFLEET_BASIC_AUTH")}
    if columns is not None:
        env["COLUMNS"] = columns
    env.update(extra)
    return env


def piped(host: FakeHost, columns: Optional[str], *args: str, **extra: str) -> subprocess.CompletedProcess:
    """The command with stdout on a pipe, pointed at a port nobody listens on (one local poll)."""
    url = f"http://127.0.0.1:{free_port()}"
    return subprocess.run([sys.executable, "-m", "agent", "status", "--url", url, *args] + host.config_args(),
                          capture_output=True, text=True, timeout=90, cwd=str(ROOT),
                          env=status_env(columns, **extra))


def on_a_terminal(host: FakeHost, cols: int, rows: int = 40) -> tuple:
    """The command on a real pty of ``cols`` x ``rows``, $COLUMNS unset: it must ask the
    terminal. Returns (exit code, output without colour codes, raw output)."""
    return status_on_a_terminal(host, cols, rows, env=status_env(None))


def headers(out: str) -> List[str]:
    return out.splitlines()[0].split()


def check_fits(out: str, width: int) -> Dict[str, Dict[str, str]]:
    """The checks every width must pass: each line fits; every drive is there by device and
    full serial, flagged first; the critical drive's reason is in the table and, in full,
    under "why flagged"; the kept columns are all there."""
    for line in out.splitlines():
        assert len(line) <= width, f"{len(line)} > {width}: {line!r}"
    rows = table_rows(out)
    assert list(rows) == ["sda", "nvme1", "dfa", "nvme0"]
    assert all(set(KEPT) <= set(r) for r in rows.values()), headers(out)
    assert {d: r["SERIAL"] for d, r in rows.items()} == SERIALS
    assert rows["sda"]["LIFE"] == "81%" and rows["nvme1"]["LIFE"] == "97%" and rows["nvme0"]["LIFE"] == "100%"
    assert rows["sda"]["HEALTH"].startswith("CRITICAL: write cache disabled"), rows["sda"]
    assert rows["nvme1"]["HEALTH"] == "WARNING: 7 media errors"
    assert rows["dfa"]["HEALTH"] == "OK" and rows["nvme0"]["HEALTH"] == "OK"
    why = out.split("why flagged:\n", 1)[1].splitlines()
    assert why[0].split() == ["CRITICAL", "sda:"] + CRITICAL_REASON.split()
    assert why[1].split() == ["WARNING", "nvme1:", "7", "media", "errors"]
    assert out.rstrip().endswith("CRITICAL: 1 critical, 1 warning, 2 ok")
    return rows


def test_80_columns_keeps_which_drive_how_bad(host):
    r = piped(host, "80", "--color", "never")
    assert r.returncode == 2, r.stdout + r.stderr
    rows = check_fits(r.stdout, 80)
    # only what answers "which drive, how bad, since when" is left at 80
    assert headers(r.stdout) == list(KEPT)
    assert rows["sda"]["HEALTH"].endswith("\u2026")  # cut, and marked as cut
    # the footer's long "no agent answered" line is folded, not lost
    assert "no agent answered at" in r.stdout and "Connection refused" in r.stdout


def test_120_columns_adds_cache_temperature_and_bad_blocks(host):
    r = piped(host, "120", "--color", "never")
    assert r.returncode == 2, r.stdout + r.stderr
    rows = check_fits(r.stdout, 120)
    cols = headers(r.stdout)
    assert set(KEPT) < set(cols) and {"CACHE", "TEMP", "ERRORS"} <= set(cols), cols
    # compact forms: the cache mismatch and the hottest sensor
    assert rows["sda"]["CACHE"] == "DISABLED!" and rows["nvme1"]["CACHE"] == "enabled"
    assert rows["dfa"]["TEMP"] == "71C"  # the controller, the hottest of three Shannon sensors
    assert rows["nvme1"]["ERRORS"] == "7 media err"
    # no agent, so no rate: WRITES/DAY is "-" on every drive and gives its room to others
    assert "WRITES/DAY" not in cols
    # the lower-priority ones go first
    assert "KIND" not in cols and "AGE" not in cols


@pytest.mark.parametrize("columns", [None, "400"])
def test_wide_or_unlimited_shows_every_column(host, columns):
    """Piped with no $COLUMNS means no limit (a log or a cron mail keeps everything)."""
    r = piped(host, columns, "--color", "never")
    assert r.returncode == 2, r.stdout + r.stderr
    rows = check_fits(r.stdout, 400)
    assert headers(r.stdout) == ALL_HEADERS
    assert rows["sda"]["HEALTH"] == "CRITICAL: " + CRITICAL_REASON
    assert rows["sda"]["MODEL"] == "Samsung SSD 860 EVO 500GB" and rows["sda"]["KIND"] == "ata"
    assert rows["sda"]["TEMP"] == "36 C (limit 70)" and rows["sda"]["CACHE"] == "DISABLED, want enabled"
    assert rows["dfa"]["WRITTEN"] == "13.8 TB" and rows["sda"]["WRITES/DAY"] == "-"
    assert max(len(line) for line in r.stdout.splitlines()) > 160  # so nothing was narrowed


@pytest.mark.parametrize("cols", [80, 120])
def test_on_a_terminal_it_fits_the_terminal(host, cols):
    code, out, raw = on_a_terminal(host, cols)
    assert code == 2, out
    check_fits(out, cols)
    assert "\x1b[1;31mCRITICAL: write cache disabled" in raw  # a terminal: coloured
    assert ("CACHE" in headers(out)) == (cols == 120)


def test_without_unicode_the_cut_is_three_dots(host):
    """A C locale or an old cron: the ellipsis must not crash the command."""
    r = piped(host, "80", "--color", "never", PYTHONIOENCODING="ascii")
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    rows = check_fits(r.stdout, 80)
    assert rows["sda"]["HEALTH"].endswith("...") and "\u2026" not in r.stdout


def test_drive_details_fit_80_columns_with_all_three_methods(host):
    r = piped(host, "80", "--drive", SHANNON_SERIAL, "--color", "never")
    assert r.returncode == 0, r.stdout + r.stderr
    for line in r.stdout.splitlines():
        assert len(line) <= 80, line
    data = piped(host, None, "--drive", SHANNON_SERIAL, "--json")
    (drive,) = json.loads(data.stdout)["drives"]
    blocks = projection_blocks(r.stdout, drive["projections"])
    assert list(blocks) == ["observed", "rated", "trend"]
    # one poll and no agent: no rate, so no method has a date and none is marked; each
    # says why, in full, folded over lines
    for p in drive["projections"]:
        mark, verdict, inputs = blocks[p["method"]]
        assert mark == " " and verdict == "no date: " + " ".join(p["note"].split()), verdict
        assert list(inputs) == [label for label, _ in input_rows(p)]
    assert blocks["rated"][2]["rated P/E cycles"] == "10000 P/E cycles"
    assert re.search(r"^wear-out\s+no date: no method could project one yet", r.stdout, re.M)


def test_a_reader_that_goes_away_gets_no_traceback(host):
    """`ssdfleet status | head -1`: the pipe closes under the command; the exit code still
    says how the drives are."""
    read_end, write_end = os.pipe()
    url = f"http://127.0.0.1:{free_port()}"
    os.close(read_end)  # nobody will read
    proc = subprocess.run([sys.executable, "-m", "agent", "status", "--url", url] + host.config_args(),
                          stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=90, cwd=str(ROOT),
                          env=status_env(None))
    os.close(write_end)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and "BrokenPipe" not in proc.stderr, proc.stderr


# -- the width and the cut themselves, on real file objects --------------------------------

def test_table_width_from_the_terminal_the_environment_or_no_limit():
    primary, secondary = pty.openpty()
    try:
        fcntl.ioctl(secondary, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 97, 0, 0))
        with open(secondary, "w", closefd=False) as tty:
            assert table_width(tty, environ={}) == 97
            assert table_width(tty, environ={"COLUMNS": "132"}) == 132  # $COLUMNS wins, as usual
            assert table_width(tty, environ={"COLUMNS": "wide"}) == 97  # nonsense is ignored
            assert table_width(tty, environ={"COLUMNS": "\u00b2"}) == 97  # a digit, but not ASCII
    finally:
        os.close(primary)
        os.close(secondary)
    r, w = os.pipe()
    try:
        with open(w, "w", closefd=False) as pipe:
            assert table_width(pipe, environ={}) is None
            assert table_width(pipe, environ={"COLUMNS": "100"}) == 100
    finally:
        os.close(r)
        os.close(w)


def test_clip_and_ellipsis():
    assert clip("Samsung SSD 860 EVO 500GB", 16) == "Samsung SSD 860\u2026"
    assert clip("Samsung SSD 860 EVO 500GB", 16, "...") == "Samsung SSD 8..."
    assert clip("short", 16) == "short"
    assert ellipsis_for(io.TextIOWrapper(io.BytesIO(), encoding="ascii")) == "..."
    assert ellipsis_for(io.TextIOWrapper(io.BytesIO(), encoding="utf-8")) == "\u2026"
