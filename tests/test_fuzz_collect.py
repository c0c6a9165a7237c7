"""Fuzz of the whole collect path: mutated real reports through the fake tools to
``ssdfleet collect --json`` and to a running agent's ``/metrics``.

A fake host (tests/fakehost.py) lists a dozen drives; each poll, every drive's smartctl report,
the Shannon card's ``shannon-status`` outputs and the Fusion-io ``fio-status -a`` are real
captures from tests/fixtures mutated the way broken tools and pipes mangle output (numbers
replaced by huge, negative, all-ones or non-numbers, bytes flipped, lines deleted, duplicated
or cut, JSON nested 100,000 deep). The real CLI and the real agent read them through the tool
paths a user configures. What must hold, whatever the input:

* the CLI exits 0 with one JSON document; the agent answers every scrape;
* no traceback in any log: every failure is one line;
* every value in the JSON and every sample on /metrics is within the bounds table
  (collectors/model.py, checked by tests/bounds.py apart from the code that applies it);
* every drive the host lists is still in the output (a report that cannot be read costs its
  own figures, not the other drives').

The mutations come from a fixed seed; ``SSDFLEET_FUZZ_SCALE=10`` runs ten times as many rounds
(a longer hunt than CI's), ``SSDFLEET_FUZZ_SEED`` another seed. The counts are printed.
"""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Dict, List, Tuple

import pytest

from collectors.model import DriveReading, Temperature, Voltage
from tests.bounds import metrics_violations, reading_violations
from tests.conftest import ROOT, fixture_files, fixture_path, read_fixture
from tests.fakehost import DISKSTATS, AgentProcess, FakeHost, promtool

SCALE = float(os.environ.get("SSDFLEET_FUZZ_SCALE", "1"))
SEED = int(os.environ.get("SSDFLEET_FUZZ_SEED", "26"))
COLLECT_RUNS = max(2, int(4 * SCALE))
AGENT_ROUNDS = max(1, int(10 * SCALE))
ATA_DRIVES = 8
NVME_DRIVES = 4

_NUMBER = re.compile(rb"-?\d+(?:\.\d+)?")
# Numbers a broken tool or firmware prints: all-ones of 16, 32, 48 and 64 bits, INT64_MAX,
# past 2**64, beyond float range (10**3239), past Python's 4,300-digit int() limit, negative,
# fractional, not a number; and the issue's own: a byte of 256 or 4096, a capacity of 1e178.
_INTEGERS = [b"0", b"-1", b"65535", b"4294967295", b"281474976710655", b"18446744073709551615",
             b"9223372036854775807", b"18446744073709551616", b"256", b"4096", b"1" + b"0" * 3239,
             b"-" + b"9" * 40, b"1" + b"0" * 178]
_REPLACEMENTS = _INTEGERS + [b"1.5", b"1e178", b"1e308", b"1e999", b"NaN", b"9" * 5000, b"0x1F", b"", b"\xff",
                             b"1,000"]


def mutate(rng: random.Random, data: bytes) -> bytes:
    """``data`` with one to four mutations. Two reports in three get integers replaced by
    integers only, which keeps a JSON document a well-typed document, so the values reach the
    normaliser and /metrics; the rest get any mix (most of those no longer parse: the refusal
    path)."""
    out = bytearray(data)
    numbers_only = rng.random() < 2 / 3
    for _ in range(rng.randint(1, 4)):
        kind = "number" if numbers_only else rng.choice(
            ["number"] * 2 + ["flip", "delete_line", "dup_line", "truncate", "insert", "nest"])
        if kind == "number":
            found = list(_NUMBER.finditer(bytes(out)))
            if numbers_only:
                found = [m for m in found if b"." not in m.group()]
            if found:
                m = rng.choice(found)
                out[m.start():m.end()] = rng.choice(_INTEGERS if numbers_only else _REPLACEMENTS)
        elif kind == "flip" and out:
            out[rng.randrange(len(out))] ^= 1 << rng.randrange(8)
        elif kind in ("delete_line", "dup_line"):
            lines = bytes(out).split(b"\n")
            i = rng.randrange(len(lines))
            if kind == "delete_line":
                del lines[i]
            else:
                lines.insert(i, lines[i])
            out = bytearray(b"\n".join(lines))
        elif kind == "truncate" and out:
            out = out[: rng.randrange(len(out))]
        elif kind == "insert":
            i = rng.randrange(len(out) + 1)
            out[i:i] = rng.choice([b"\n", b": ", b"=", b"\t", b"{", b"]", bytes(rng.randrange(256) for _ in range(8))])
        elif kind == "nest":
            depth = rng.choice([50, 5000, 100_000])
            out = bytearray(b"[" * depth + bytes(out) + b"]" * depth)
    return bytes(out)


# ----------------------------------------------------------------------------- the host


def _smartctl_json_seeds() -> List[bytes]:
    seeds = []
    for path in fixture_files("smartctl-json", ".json"):
        data = path.read_bytes()
        if b'"devices"' not in data[:2000] and b'"smartctl"' in data[:4000]:
            seeds.append(data)
    return seeds


SMARTCTL_JSON = _smartctl_json_seeds()
SMARTCTL_TEXT = [p.read_bytes() for p in fixture_files("smartctl-text", ".txt")]
SHANNON_A = [read_fixture("shannon/seed000__status-a_9h.txt"), read_fixture("shannon/constructed__status-a_two_cards.txt")]
SHANNON_P = [read_fixture("shannon/seed000__status-p_scta_9h.txt")]
SHANNON_P_ALL = [read_fixture("shannon/constructed__status-p-a_gen2_two_cards.txt")]
FIO_STATUS = [p.read_bytes() for p in fixture_files("fusionio", ".txt")]
HDPARM = [p.read_bytes() for p in fixture_files("write-cache/hdparm", ".out")]


def _devices() -> List[Tuple[str, str]]:
    """(name, -d type) of every drive the fake scan lists."""
    return [(f"sd{chr(ord('a') + i)}", "sat") for i in range(ATA_DRIVES)] + \
           [(f"nvme{i}", "nvme") for i in range(NVME_DRIVES)]


def build_host(root: Path, text: bool = False) -> FakeHost:
    """A host with ATA_DRIVES + NVME_DRIVES drives for smartctl, a Shannon card and a Fusion-io
    card. ``text``: smartctl 6.6 (no JSON), so the text parser reads the reports."""
    host = FakeHost(root)
    version = b"smartctl 6.6 2016-05-31 r4324 [x86_64-linux-4.15.0] (local build)\n" if text else \
        read_fixture("fakehost/smartctl-version.txt")
    host.set_response("smartctl", "version", version)
    devices = _devices()
    if text:
        scan = "".join(f"/dev/{n} -d {t} # /dev/{n}, {'NVMe' if t == 'nvme' else 'ATA'} device\n" for n, t in devices)
    else:
        scan = json.dumps({"json_format_version": [1, 0], "smartctl": {"version": [7, 3], "exit_status": 0},
                           "devices": [{"name": f"/dev/{n}", "info_name": f"/dev/{n}", "type": t,
                                        "protocol": "NVMe" if t == "nvme" else "ATA"} for n, t in devices]})
    host.set_response("smartctl", "scan", scan)
    for name, _ in devices:
        host.block_device(name + ("n1" if name.startswith("nvme") else ""), 976773168)
    host.block_device("dfa", 2343750000)
    host.block_device("fioa", 2353515625)
    host.diskstats(DISKSTATS)
    return host


_SERIAL_JSON = re.compile(rb'("serial_number"\s*:\s*)"[^"]*"')
_SERIAL_TEXT = re.compile(rb"^(Serial [Nn]umber:\s*).*$", re.MULTILINE)


def _own_serial(report: bytes, serial: str) -> bytes:
    """The report with its serial replaced by ``serial``: two drives of the fake host that drew
    the same capture (or two captures with masked serials) stay two drives."""
    report = _SERIAL_JSON.sub(rb'\1"' + serial.encode() + rb'"', report)
    return _SERIAL_TEXT.sub(rb"\g<1>" + serial.encode(), report)


def serve_mutations(host: FakeHost, rng: random.Random, text: bool = False) -> Dict[str, int]:
    """Give every tool a freshly mutated real report; returns {tool: reports served}."""
    served: Dict[str, int] = {}

    def serve(tool: str, key: str, seeds: List[bytes], serial: str = "") -> None:
        seed = rng.choice(seeds)
        if serial:
            seed = _own_serial(seed, serial)
        host.set_response(tool, key, mutate(rng, seed), exit_code=rng.choice([0, 0, 0, 4, 64]))
        served[tool] = served.get(tool, 0) + 1

    for name, _ in _devices():
        serve("smartctl", name, SMARTCTL_TEXT if text else SMARTCTL_JSON, serial=f"FUZZ{name.upper()}")
        if not name.startswith("nvme"):
            serve("hdparm", name, HDPARM)
    serve("shannon-status", "-a", SHANNON_P_ALL)  # "shannon-status -p -a": the last argument is the key
    serve("shannon-status", "all", SHANNON_A)
    serve("shannon-status", "scta", SHANNON_P)
    serve("fio-status", "all", FIO_STATUS)
    return served


def _tool_args(host: FakeHost) -> List[str]:
    return host.config_args() + ["--fio-status", str(host.bin / "fio-status")]


# ----------------------------------------------------------------------------- the checks


def view_violations(view: Dict) -> List[str]:
    """A drive of ``collect --json`` as a reading, checked against the bounds."""
    figures = {k: view.get(k) for k in ("capacity_bytes", "life_left_ratio", "spare_left_ratio",
                                        "spare_threshold_ratio", "bad_block_ratio", "media_errors",
                                        "critical_warning", "write_amplification", "host_written_bytes",
                                        "nand_written_bytes", "host_read_bytes", "power_on_seconds")}
    reading = DriveReading(kind=view["kind"], device=view["device"], defects=dict(view["defects"]),
                           temperatures=tuple(Temperature(**t) for t in view["temperatures"]),
                           voltages=tuple(Voltage(**v) for v in view["voltages"]), **figures)
    return [f"{view['device']} {v}" for v in reading_violations(reading)]


def _tracebacks(log: str) -> List[str]:
    return [block[:600] for block in log.split("Traceback (most recent call last)")[1:]]


# ----------------------------------------------------------------------------- collect


def _collect(host: FakeHost) -> Tuple[dict, str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-m", "agent", "collect", "--json"] + _tool_args(host),
                          capture_output=True, cwd=str(ROOT), env=env, timeout=300)
    stderr = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == 0, stderr[-3000:]
    return json.loads(proc.stdout), stderr


def test_collect_json_over_mutated_reports(tmp_path):
    rng = random.Random(SEED)
    served_total: Dict[str, int] = {}
    drives_seen = values_checked = withheld = 0
    failures = set()
    for run in range(COLLECT_RUNS):
        text = run % 2 == 1  # every other run through smartctl 6.6 and the text parser
        host = build_host(tmp_path / f"run{run}", text=text)
        for tool, count in serve_mutations(host, rng, text).items():
            served_total[tool] = served_total.get(tool, 0) + count
        out, stderr = _collect(host)
        assert not _tracebacks(stderr), _tracebacks(stderr)[0]
        devices = {d["device"] for d in out["drives"]}
        # every listed drive is in the output (read, or known from sysfs with its reason)
        assert {n for n, _ in _devices()} <= devices, devices
        for view in out["drives"]:
            assert view_violations(view) == [], view_violations(view)
            values_checked += sum(1 for v in view.values() if isinstance(v, (int, float))) + len(view["defects"])
            withheld += sum(1 for k in view["extra"] if k.endswith("_withheld"))
        drives_seen += len(out["drives"])
        failures |= {c["error"] for c in out["collectors"] if c["error"]}
    print(f"\ncollect --json: {COLLECT_RUNS} runs, mutated reports served {sum(served_total.values())} "
          f"{dict(sorted(served_total.items()))}; {drives_seen} drives and {values_checked} values checked, "
          f"0 tracebacks, 0 out of bounds; {withheld} figures withheld with a reason, {len(failures)} distinct "
          "collector errors")


# ----------------------------------------------------------------------------- the agent


FAST = ["--interval.smartctl", "1", "--interval.shannon", "1", "--interval.write_cache", "1",
        "--interval.diskstats", "1", "--interval.fusionio", "1", "--interval.nvme_vendor", "1",
        "--interval.discovery", "2", "--tool-timeout", "10"]


def _scrape(agent: AgentProcess) -> Tuple[str, float]:
    started = time.monotonic()
    with urllib.request.urlopen(agent.url + "/metrics", timeout=10) as r:
        assert r.status == 200
        body = r.read().decode()
    return body, time.monotonic() - started


def _wait_until_read(host: FakeHost, since: int, keys: List[Tuple[str, str]], timeout: float = 60.0) -> None:
    """Until every (tool, last argument) in ``keys`` was run after call number ``since``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        calls = host.calls()[since:]
        if all(any(c.startswith(tool + " ") and c.endswith(last) for c in calls) for tool, last in keys):
            return
        time.sleep(0.1)
    raise TimeoutError(f"not every drive was read again: {keys}")


def test_agent_metrics_over_mutated_reports(tmp_path):
    rng = random.Random(SEED + 1)
    host = build_host(tmp_path)
    serve_mutations(host, random.Random(SEED + 2))
    agent = AgentProcess(host, FAST + ["--fio-status", str(host.bin / "fio-status")])
    served_total: Dict[str, int] = {}
    samples = scrapes = 0
    slowest = 0.0
    try:
        agent.wait_ready()
        keys = [("smartctl", f"/dev/{n}") for n, _ in _devices()] + [("fio-status", "-a")]
        for _ in range(AGENT_ROUNDS):
            since = len(host.calls())
            for tool, count in serve_mutations(host, rng).items():
                served_total[tool] = served_total.get(tool, 0) + count
            _wait_until_read(host, since, keys)
            time.sleep(0.5)  # the last reads' results merged
            body, took = _scrape(agent)
            violations, checked = metrics_violations(body)
            assert violations == [], violations[:10]
            samples += checked
            scrapes += 1
            slowest = max(slowest, took)
        if promtool():
            check = subprocess.run([promtool(), "check", "metrics"], input=body.encode(), capture_output=True)
            assert check.returncode == 0, check.stderr.decode()[-2000:]
        assert agent.proc.poll() is None, "the agent died"
    finally:
        agent.stop()
    log = agent.log()
    assert not _tracebacks(log), _tracebacks(log)[0]
    print(f"\nagent /metrics: {AGENT_ROUNDS} rounds, mutated reports served {sum(served_total.values())} "
          f"{dict(sorted(served_total.items()))}; {scrapes} scrapes, {samples} samples checked, slowest scrape "
          f"{slowest * 1000:.0f} ms; 0 tracebacks, 0 out of bounds")


# ----------------------------------------------------------------------------- one line per failure


def test_a_repeated_failure_is_one_log_line_and_counted_every_poll(tmp_path):
    """The issue's cases served unchanged for many polls: fio-status with a 5,000-digit volume on
    one of its four cards, and a smartctl report nested 100,000 deep. Each failure is one
    WARNING line, the error counter keeps counting, the other cards and drives are served."""
    host = build_host(tmp_path)
    serve_mutations(host, random.Random(SEED))
    for name, _ in _devices():
        host.set_response("smartctl", name, fixture_path("fakehost/scrutiny__smart-ata-full.json"))
    host.set_response("smartctl", "sdb", b"[" * 100_000 + b"]" * 100_000)
    percona = read_fixture("fusionio/percona-toolkit__fio-003_original_output.txt")
    host.set_response("fio-status", "all", percona.replace(b"322.55 GBytes", b"9" * 5000 + b" GBytes", 1))
    for key, seeds in (("-a", SHANNON_P_ALL), ("all", SHANNON_A), ("scta", SHANNON_P)):
        host.set_response("shannon-status", key, seeds[0])
    agent = AgentProcess(host, FAST + ["--fio-status", str(host.bin / "fio-status")])
    try:
        agent.wait_ready()
        counts = []
        for _ in range(2):
            for _poll in range(2):  # two full polls of both between the scrapes
                _wait_until_read(host, len(host.calls()), [("smartctl", "/dev/sdb"), ("fio-status", "-a")])
            time.sleep(0.5)
            body, _ = _scrape(agent)
            counts.append({c: _sample(body, "ssd_collector_errors_total", collector=c) for c in ("smartctl", "fusionio")})
            assert metrics_violations(body)[0] == []
        # the readable modules are served: Percona's capture is two ioDrive Duos, each serial on
        # two modules (fct0/fct2 06665, fct1/fct3 06478). With fct0 unreadable, 06665 is fct2's
        # alone; fct1 and fct3 are two drives with one serial, kept apart by their device.
        serials = set(re.findall(r'ssd_drive_info\{[^}]*kind="fusionio"[^}]*serial="([^"]+)"', body))
        assert serials == {"06665", "06478@fiob", "06478@fiod"}, serials
        assert counts[1]["fusionio"] > counts[0]["fusionio"] and counts[1]["smartctl"] > counts[0]["smartctl"]
    finally:
        agent.stop()
    log = agent.log()
    assert not _tracebacks(log)
    digits = [line for line in log.splitlines() if "5,000 digits" in line]
    deep = [line for line in log.splitlines() if "nested too deeply" in line and "ssdfleet.smartctl" in line]
    assert len(digits) == 1 and "WARNING" in digits[0] and "/dev/fct0" in digits[0], digits
    assert len(deep) == 1 and "WARNING" in deep[0] and "/dev/sdb" in deep[0], deep
    assert max(len(line) for line in log.splitlines()) < 1000


def _sample(body: str, name: str, **labels: str) -> float:
    want = ",".join(f'{k}="{v}"' for k, v in labels.items())
    for line in body.splitlines():
        if line.startswith(f"{name}{{{want}}} "):
            return float(line.rsplit(" ", 1)[1])
    raise KeyError(f"{name}{{{want}}}")


@pytest.mark.parametrize("seed", [b"[" * 100_000, b"9" * 5000])
def test_mutations_reach_the_parsers(seed):
    """The mutator is no no-op: a real report comes out different, and the two extreme
    replacements the issue names are among its numbers."""
    rng = random.Random(SEED)
    report = SMARTCTL_JSON[0]
    assert any(mutate(rng, report) != report for _ in range(5))
    assert seed in b"".join(_REPLACEMENTS) or seed == b"[" * 100_000
    assert b"1" + b"0" * 3239 in _INTEGERS and b"1" + b"0" * 178 in _INTEGERS  # 10**3239, 1e178 as an int
