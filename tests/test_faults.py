"""Fault injection: the real agent process against fake tools that misbehave.

Each fake tool is the fake-host replay script behind a small dispatcher: for a device whose
response directory holds ``<key>.fault`` the dispatcher misbehaves in the named way instead
(sleeps, ignores SIGTERM, never exits, floods, leaves a grandchild holding its pipe, or is
held by a tracer after SIGKILL). Every test checks the same three things while the fault
lasts: the healthy drives stay fresh (``ssd_data_age_seconds``), the agent's child processes
stay bounded (counted with psutil on every sample), and the failure shows in the metrics.

A process that survives SIGKILL cannot be made on purpose; what the agent sees of one (SIGKILL
sent, ``waitpid`` still says "not yet") can. The ``ptrace-stuck`` tool asks a tracer to attach
to it with ptrace. When the agent's SIGTERM arrives the traced tool stops in
signal-delivery-stop (the tracer never resumes it), SIGKILL then kills it, and the kernel
reports a traced zombie only to its tracer: the agent cannot reap it until the tracer lets go
after ``<key>.hold`` seconds. That is the D-state case from the agent's side: SIGTERM, grace,
SIGKILL, still not reapable, handed to the reaper, then gone later. The tracer runs outside the
agent's process tree (a service this module starts, :data:`_TRACER_SERVICE`): the agent is a
child subreaper (issue 26), so a tracer the tool forked itself would become the agent's child
when the tool died and be killed as a leftover process, ending the hold early.
"""

from __future__ import annotations

import random
import shutil
import subprocess
import sys
import time
from typing import Dict, List, Optional

import psutil
import pytest

from tests.conftest import read_fixture
from tests.fakehost import DISKSTATS, AgentProcess, FakeHost, build_default_host
from tests.support.e2e import NVME0_SERIAL, SDA_SERIAL, SHANNON_SERIAL, scrape, value, wait_for
from tests.support.faults import ata_output, no_data_output, scan_json

SMART_INTERVAL = 0.3
TIMEOUT = 1.0
GRACE = 0.3
MAX_PROBES = 4
# The longest one SMART read can hold a probe slot: timeout, grace, then a second of waiting
# after SIGKILL before the runner gives up (collectors/runner.py). A healthy drive queued behind
# such reads is refreshed within one interval plus that, plus scheduling slack.
SLOT_HOLD = TIMEOUT + GRACE + 1.0
HEALTHY_AGE_BOUND = SMART_INTERVAL + SLOT_HOLD + 1.5

_DISPATCHER = """#!/bin/sh
# fault dispatcher for {name}: misbehave for devices with a .fault file, else replay
R="{responses}"
last=none
for a in "$@"; do last="$a"; done
key=$(basename "$last")
if [ -f "$R/$key.fault" ]; then
  printf '%s\\n' "{name} $*" >> "{log}"
  case "$(cat "$R/$key.fault")" in
    ignore-term) trap '' TERM; sleep 60 ;;
    never-exit) while :; do sleep 1; done ;;
    flood) head -c 100000000 /dev/zero ;;
    escape) setsid sleep 5 & cat "$R/$key.out"; exit 0 ;;
    ptrace-stuck) exec "{python}" "{stuck}" "$R/$key" ;;
  esac
  exit 0
fi
exec "{real}" "$@"
"""

# Runs as the tool. argv[1] is the response path prefix: appends to .events, asks the tracer
# service to attach by creating .req.PID, and reads its answer from .ack.PID.
_STUCK_TOOL = r'''
import ctypes, os, sys, time

base = sys.argv[1]
def event(what):
    with open(base + ".events", "a") as fh:
        fh.write("%s %d %.3f\n" % (what, os.getpid(), time.time()))

libc = ctypes.CDLL(None, use_errno=True)
# Yama (ptrace_scope 1) lets only ancestors trace; allow the tracer service explicitly.
libc.prctl(0x59616d61, ctypes.c_ulong(2**64 - 1), 0, 0, 0)
event("start")
req, ack = "%s.req.%d" % (base, os.getpid()), "%s.ack.%d" % (base, os.getpid())
open(req + ".tmp", "w").close()
os.rename(req + ".tmp", req)
deadline = time.time() + 10
while not os.path.exists(ack) and time.time() < deadline:
    time.sleep(0.01)
if not os.path.exists(ack) or open(ack).read() != "ok":
    event("noptrace")
print("smartctl is stuck talking to the drive", flush=True)
while True:
    time.sleep(1)
'''

# The tracer service, started by the test (outside the agent's process tree). argv[1]: the
# responses directory it watches for .req.PID files. One forked tracer per request attaches,
# answers, holds the tool for <key>.hold seconds, then exits (which lets the zombie go).
_TRACER_SERVICE = r'''
import ctypes, glob, os, sys, time

root = sys.argv[1]
libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.restype = ctypes.c_long
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]

def trace(base, pid):
    ok = libc.ptrace(16, pid, None, None) == 0  # PTRACE_ATTACH
    if ok:
        os.waitpid(pid, 0x40000000)  # __WALL: the attach stop
        libc.ptrace(7, pid, None, None)  # PTRACE_CONT
    ack = "%s.ack.%d" % (base, pid)
    with open(ack + ".tmp", "w") as fh:
        fh.write("ok" if ok else "no")
    os.rename(ack + ".tmp", ack)
    if ok:
        time.sleep(float(open(base + ".hold").read()))  # never wait for the tool's zombie
        with open(base + ".events", "a") as fh:
            fh.write("release %d %.3f\n" % (os.getpid(), time.time()))
    os._exit(0)

parent = os.getppid()
while os.getppid() == parent:  # ends with the test process that started it, at the latest
    for req in glob.glob(os.path.join(root, "*", "*.req.*")):
        base, _, pid = req.rpartition(".req.")
        if not pid.isdigit():
            continue
        try:
            os.rename(req, "%s.taken.%s" % (base, pid))
        except OSError:
            continue
        if os.fork() == 0:
            trace(base, int(pid))
    try:
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
    except ChildProcessError:
        pass
    time.sleep(0.02)
'''
_TRACERS: Dict[str, subprocess.Popen] = {}


def start_tracer(host: FakeHost) -> None:
    if str(host.root) not in _TRACERS:
        script = host.root / "tracer_service.py"
        script.write_text(_TRACER_SERVICE)
        _TRACERS[str(host.root)] = subprocess.Popen([sys.executable, str(script), str(host.root / "responses")])


def stop_tracer(host: FakeHost) -> None:
    proc = _TRACERS.pop(str(host.root), None)
    if proc is not None:
        proc.kill()
        proc.wait(10)
        for p in psutil.process_iter(["cmdline"]):  # its tracers still holding
            if str(host.root / "tracer_service.py") in " ".join(p.info.get("cmdline") or []):
                p.kill()


def make_faulty(host: FakeHost, name: str) -> None:
    """Put the fault dispatcher in front of the fake tool ``name``."""
    path = host.tool(name)
    real = host.bin / f".{name}.real"
    if not real.exists():
        shutil.move(str(path), str(real))
    stuck = host.root / "stuck_tool.py"
    stuck.write_text(_STUCK_TOOL)
    path.write_text(_DISPATCHER.format(
        name=name, responses=host.root / "responses" / name, log=host.calls_log,
        python=sys.executable, stuck=stuck, real=real,
    ))
    path.chmod(0o755)


def set_fault(host: FakeHost, tool: str, key: str, fault: Optional[str]) -> None:
    if fault == "ptrace-stuck":
        start_tracer(host)
    path = host.root / "responses" / tool / f"{key}.fault"
    if fault is None:
        path.unlink(missing_ok=True)
    else:
        path.write_text(fault)


def config_file(host: FakeHost, **extra) -> str:
    path = host.root / "faults.yml"
    settings = {"tool_kill_grace_seconds": GRACE, "max_concurrent_probes": MAX_PROBES}
    settings.update(extra)
    path.write_text("".join(f"{k}: {v}\n" for k, v in settings.items()))
    return str(path)


def start_agent(host: FakeHost, discovery: float = 60.0, **config) -> AgentProcess:
    args = ["--config", config_file(host, **config), "--tool-timeout", str(TIMEOUT),
            "--interval.smartctl", str(SMART_INTERVAL), "--interval.shannon", "0.5",
            "--interval.write_cache", "0.5", "--interval.diskstats", "0.3",
            "--interval.discovery", str(discovery), "--no-history"]
    agent = AgentProcess(host, args)
    agent.wait_ready()
    return agent


class Watch:
    """Samples the agent every ``step`` seconds: child processes and the metrics."""

    def __init__(self, agent: AgentProcess) -> None:
        self.agent = agent
        self.process = psutil.Process(agent.proc.pid)
        self.max_children = 0  # every descendant: tools, their children, unreaped zombies
        self.max_direct = 0  # tool processes the agent started that are still running
        self.samples: List[Dict] = []

    def children(self) -> None:
        try:
            kids = self.process.children(recursive=True)
            direct = [p for p in self.process.children() if _running(p)]
        except psutil.NoSuchProcess:
            return
        self.max_children = max(self.max_children, len(kids))
        self.max_direct = max(self.max_direct, len(direct))

    def run(self, seconds: float, step: float = 0.3) -> List[Dict]:
        end = time.monotonic() + seconds
        taken = []
        while time.monotonic() < end:
            self.children()
            taken.append(scrape(self.agent))
            time.sleep(step)
        self.samples += taken
        return taken

    def report(self, name: str) -> None:
        print(f"\n[{name}] {len(self.samples)} samples at 0.3 s: max descendants "
              f"{self.max_children}, max running tool processes {self.max_direct}")


def _running(p: psutil.Process) -> bool:
    try:
        return p.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def ages(samples: List[Dict], serial: str) -> List[float]:
    out = []
    for s in samples:
        age = value(s, "ssd_data_age_seconds", serial=serial)
        assert age is not None, f"drive {serial} missing from a scrape"
        out.append(age)
    return out


def counter(samples: Dict, collector: str) -> float:
    return value(samples, "ssd_collector_errors_total", collector=collector) or 0.0


@pytest.fixture
def host(tmp_path):
    host = build_default_host(tmp_path)
    make_faulty(host, "smartctl")
    make_faulty(host, "shannon-status")
    yield host
    stop_tracer(host)


def test_hanging_and_flooding_tools_do_not_hold_up_the_other_drives(host):
    # Each fault gets its own fake drive; sda, nvme0 and the Shannon card stay healthy.
    faults = {"sdb": "ignore-term", "sdc": "never-exit", "sdd": "flood", "sde": "escape"}
    host.set_response("smartctl", "scan", scan_json(list(faults) + ["sdf", "sdg"]))
    for dev, fault in faults.items():
        host.set_response("smartctl", dev, ata_output(dev, f"FAULT-{dev}"))
        set_fault(host, "smartctl", dev, fault)
    host.set_response("smartctl", "sdf", ata_output("sdf", "FAULT-sdf"), sleep=30)  # past the timeout
    rng = random.Random(6)
    host.set_response("smartctl", "sdg", bytes(rng.randrange(256) for _ in range(20000)))  # garbage
    # The Shannon card's -p call hangs too; its -a listing still answers.
    host.set_response("shannon-status", "scta", read_fixture("fakehost/seed000__status-p_scta_9h.txt"),
                      sleep=30)

    agent = start_agent(host)
    try:
        # Start watching once both healthy drives have data and the faults have begun.
        first = wait_for(lambda: (lambda s: s if value(s, "ssd_collector_errors_total", collector="smartctl")
                                  and value(s, "ssd_data_age_seconds", serial=SDA_SERIAL) is not None
                                  and value(s, "ssd_data_age_seconds", serial=NVME0_SERIAL) is not None
                                  else None)(scrape(agent)))
        watch = Watch(agent)
        samples = watch.run(8.0)
        watch.report("hangs")
        for serial in (SDA_SERIAL, NVME0_SERIAL):
            worst = max(ages(samples, serial))
            print(f"  {serial}: worst ssd_data_age_seconds {worst:.2f} (bound {HEALTHY_AGE_BOUND:.1f})")
            assert worst < HEALTHY_AGE_BOUND
        last = samples[-1]
        # Each faulty drive failed again and again: the counter kept growing, success is 0.
        assert counter(last, "smartctl") >= counter(first, "smartctl") + 2 * len(faults)
        assert value(last, "ssd_collector_success", collector="smartctl") == 0
        assert counter(last, "shannon") > counter(first, "shannon")
        assert value(last, "ssd_collector_success", collector="diskstats") == 1
        # None of the faulty drives produced a reading.
        info = {dict(ls).get("serial") for (n, ls) in last if n == "ssd_drive_info"}
        assert not {s for s in info if s and s.startswith("FAULT-")}
        # Bounded: never more tool processes running than probe slots plus the three
        # sources that call tools outside them (discovery, the Shannon listing, hdparm).
        assert watch.max_direct <= MAX_PROBES + 3
        assert watch.max_children <= 4 * (MAX_PROBES + 3)
        log = agent.log()
        assert "/dev/sdb:sat: timed out" in log and "/dev/sdc:sat: timed out" in log
        assert "/dev/sdd:sat: output exceeded the size cap" in log
        assert "/dev/sde:sat: timed out" in log  # a grandchild held the pipe open past the timeout
        assert "/dev/sdf:sat: timed out" in log
        assert "/dev/sdg:sat: unreadable output" in log
        assert "shannon-status -p /dev/scta: timed out" in log
        # The agent did not stop any drive for good: every faulty one was tried repeatedly.
        calls = host.calls()
        for dev in list(faults) + ["sdf", "sdg"]:
            assert sum(c.endswith(f"/dev/{dev}") for c in calls) >= 3, dev
    finally:
        agent.stop()
    assert agent.proc.returncode == 0 or agent.proc.returncode == -15


def _stuck_events(host: FakeHost, key: str) -> List[List[str]]:
    path = host.root / "responses" / "smartctl" / f"{key}.events"
    return [line.split() for line in path.read_text().splitlines()] if path.exists() else []


def test_probe_that_outlives_sigkill_quarantines_its_device(host):
    host.set_response("smartctl", "scan", scan_json(["sdh"]))
    host.set_response("smartctl", "sdh", ata_output("sdh", "FAULT-sdh"))
    (host.root / "responses" / "smartctl" / "sdh.hold").write_text("4.5")
    set_fault(host, "smartctl", "sdh", "ptrace-stuck")
    agent = start_agent(host)
    try:
        wait_for(lambda: value(scrape(agent), "ssd_data_age_seconds", serial=SDA_SERIAL) is not None)
        watch = Watch(agent)
        samples = watch.run(11.0)
        watch.report("stuck")
        events = _stuck_events(host, "sdh")
        if any(e[0] == "noptrace" for e in events):
            pytest.skip("ptrace is not permitted here: cannot hold a killed tool unreaped")
        stuck_flags = [value(s, "ssd_probe_stuck", device="sdh") for s in samples]
        print(f"  ssd_probe_stuck{{device=sdh}} set in {sum(1 for f in stuck_flags if f)} of "
              f"{len(samples)} samples; tool runs {sum(e[0] == 'start' for e in events)}")
        assert any(stuck_flags), "ssd_probe_stuck never reported the device"
        assert not all(stuck_flags), "the quarantine was never lifted after the process went away"
        # Quarantine: no new probe on sdh while the previous one is unreaped. The events file
        # alternates start/release; two starts in a row would be a second probe on a stuck drive.
        kinds = [e[0] for e in events]
        assert kinds.count("start") >= 2
        for a, b in zip(kinds, kinds[1:]):
            assert not (a == "start" and b == "start"), kinds
        healthy = max(ages(samples, SDA_SERIAL))
        print(f"  sda: worst ssd_data_age_seconds {healthy:.2f}")
        assert healthy < HEALTHY_AGE_BOUND
        # The zombie is the agent's child while it is held: at most one per stuck device.
        assert watch.max_children <= 4 * (MAX_PROBES + 3)
        log = agent.log()
        assert "survived SIGKILL" in log
        assert "sdh: " in log and "device quarantined until it exits" in log
        assert "sdh: the stuck probe" in log and "is gone; probing again" in log
    finally:
        agent.stop()


# smartctl exit status bits (smartctl(8) "RETURN VALUES"): 0 command line, 1 open/identify
# failed, 2 some SMART command failed, 3 SMART says failing, 4 prefail attribute at/below
# threshold, 5 an attribute was at/below threshold in the past, 6 error log has errors,
# 7 self-test log has errors. 216 = bits 3, 4, 6 and 7 (a dying drive).
FINDINGS = (4, 8, 16, 32, 64, 128, 216)


def test_every_smartctl_exit_status_bit(host):
    devices = [f"sd{chr(ord('i') + n)}" for n in range(len(FINDINGS) + 2)]
    findings = dict(zip(devices, FINDINGS))
    cmdline_dev, open_dev = devices[-2:]
    host.set_response("smartctl", "scan", scan_json(devices))
    for dev, code in findings.items():
        host.set_response("smartctl", dev, ata_output(dev, f"BITS-{code}", code), exit_code=code)
    host.set_response("smartctl", cmdline_dev,
                      no_data_output(1, "=======> UNRECOGNIZED OPTION: log=ssd"), exit_code=1)
    host.set_response("smartctl", open_dev,
                      no_data_output(2, f"Smartctl open device: /dev/{open_dev} failed: "
                                        "INQUIRY failed"), exit_code=2)
    agent = start_agent(host)
    try:
        s = wait_for(lambda: (lambda s: s if all(
            value(s, "ssd_drive_info", serial=f"BITS-{c}") for c in FINDINGS) else None)(scrape(agent)))
        watch = Watch(agent)
        samples = watch.run(3.0)
        watch.report("exit bits")
        last = samples[-1]
        # Bits 2-7 are findings that come with good output: every such drive is served fresh.
        for code in FINDINGS:
            assert max(ages(samples, f"BITS-{code}")) < HEALTHY_AGE_BOUND, code
        # Bit 3 (SMART failing) is a finding about the drive, not a parse problem: the health
        # verdict stays whatever the JSON says, here "passed".
        assert value(last, "ssd_smart_healthy", serial="BITS-8") == 1
        # Bits 0 and 1 carry no data: errors each cycle, visible in the counter and the log.
        assert value(last, "ssd_collector_success", collector="smartctl") == 0
        assert counter(last, "smartctl") > counter(s, "smartctl")
        log = agent.log()
        assert f"/dev/{cmdline_dev}:sat: no SMART data: smartctl exit status 1: =======> UNRECOGNIZED" in log
        assert f"/dev/{open_dev}:sat: no SMART data: smartctl exit status 2: Smartctl open device" in log
        assert watch.max_children <= 4 * (MAX_PROBES + 3)
    finally:
        agent.stop()


def test_vanished_drive_then_tool_not_executable_then_missing(host):
    host.set_response("smartctl", "scan", scan_json(["sdb"]))
    host.set_response("smartctl", "sdb", ata_output("sdb", "GOING-sdb"))
    host.block_device("sdb", 976773168, model="Samsung SSD 860 EVO 500GB")
    host.diskstats(DISKSTATS + "   8      16 sdb 10 0 80 1 20 0 160 2 0 3 3 0 0 0 0 0 0\n")
    agent = start_agent(host, discovery=60.0)  # only an early discovery can drop sdb in time
    watch = Watch(agent)
    try:
        wait_for(lambda: value(scrape(agent), "ssd_drive_info", serial="GOING-sdb"))
        before = scrape(agent)

        # 1. sdb is pulled: gone from the scan, sysfs and diskstats; smartctl cannot open it.
        host.set_response("smartctl", "scan", scan_json([]))
        shutil.rmtree(host.sys / "block" / "sdb")
        host.diskstats(DISKSTATS)
        host.set_response("smartctl", "sdb", no_data_output(
            2, "Smartctl open device: /dev/sdb failed: No such device"), exit_code=2)
        wait_for(lambda: value(scrape(agent), "ssd_drive_info", serial="GOING-sdb") is None, timeout=10)
        after = scrape(agent)
        assert counter(after, "smartctl") > counter(before, "smartctl")
        log = agent.log()
        assert "/dev/sdb:sat: device vanished (exit status 2: no such device)" in log
        assert "/dev/sdb:sat is no longer discovered; dropping it" in log
        samples = watch.run(1.5)

        # 2. smartctl loses its execute bit: every read fails "permission denied"; the other
        # sources keep serving and the smartctl drives keep their last values, ageing.
        tool = host.bin / "smartctl"
        tool.chmod(0o644)
        phase = watch.run(3.0)
        assert counter(phase[-1], "smartctl") > counter(phase[0], "smartctl")
        assert value(phase[-1], "ssd_collector_success", collector="smartctl") == 0
        sda = ages(phase, SDA_SERIAL)
        assert sda[-1] > sda[0] + 2.0  # last good values kept, their age growing
        assert max(ages(phase, SHANNON_SERIAL)) < HEALTHY_AGE_BOUND
        assert "smartctl: permission denied" in agent.log()

        # 3. smartctl is removed altogether.
        tool.unlink()
        phase = watch.run(2.0)
        assert counter(phase[-1], "smartctl") > counter(phase[0], "smartctl")
        assert max(ages(phase, SHANNON_SERIAL)) < HEALTHY_AGE_BOUND
        assert value(phase[-1], "ssd_drive_info", serial=SDA_SERIAL) == 1
        assert "smartctl: not found" in agent.log()
        samples += phase
        watch.report("vanish/perm/missing")
        assert watch.max_children <= 4 * (MAX_PROBES + 3)
    finally:
        agent.stop()


def test_probe_stuck_in_the_probe_helper_is_reported_then_lifted(host, tmp_path):
    """The same stuck tool, run by the privileged probe helper (the systemd deployment): the
    process belongs to the helper, which refuses probes on the device until it is gone. The
    agent must still export ssd_probe_stuck for the device, and drop it once the helper runs
    probes on it again."""
    import tempfile

    from tests.support.probe_helper import DEVICES, HelperProcess, fake_dev_root

    host.set_response("smartctl", "scan", scan_json(["sdh"]))
    host.set_response("smartctl", "sdh", ata_output("sdh", "FAULT-sdh"))
    (host.root / "responses" / "smartctl" / "sdh.hold").write_text("6")
    set_fault(host, "smartctl", "sdh", "ptrace-stuck")
    fake_dev_root(host, DEVICES + ("sdh",))
    sockdir = tempfile.mkdtemp(prefix="ssdf-", dir="/tmp")  # AF_UNIX paths are short
    sock = f"{sockdir}/helper.sock"
    helper = HelperProcess(host, sock, ["--tool-timeout", str(TIMEOUT)],
                           config={"tool_kill_grace_seconds": GRACE})
    agent = None
    try:
        agent = start_agent(host, probe_helper_socket=sock)
        wait_for(lambda: value(scrape(agent), "ssd_data_age_seconds", serial=SDA_SERIAL) is not None)
        watch = Watch(agent)
        watch.run(0.5)
        stuck = wait_for(lambda: value(scrape(agent), "ssd_probe_stuck", device="sdh") == 1, timeout=15)
        assert stuck, "ssd_probe_stuck never reported the device stuck in the helper"
        if any(e[0] == "noptrace" for e in _stuck_events(host, "sdh")):
            pytest.skip("ptrace is not permitted here: cannot hold a killed tool unreaped")
        # While the helper holds the stuck process it refuses probes on sdh; the agent keeps
        # reporting the device stuck, and the other drives stay fresh.
        set_fault(host, "smartctl", "sdh", None)
        held = watch.run(1.0)
        assert all(value(s, "ssd_probe_stuck", device="sdh") == 1 for s in held)
        # The tracer lets go 6 s after the tool started; the next probe the helper runs answers normally.
        lifted = wait_for(lambda: (lambda s: s if value(s, "ssd_probe_stuck", device="sdh") is None
                                   and value(s, "ssd_smart_healthy", serial="FAULT-sdh") == 1 else None)(scrape(agent)),
                          timeout=20)
        assert lifted, "the quarantine was never lifted after the helper let go"
        watch.run(0.5)
        watch.report("stuck in the helper")
        assert max(ages(watch.samples, SDA_SERIAL)) < HEALTHY_AGE_BOUND
        kinds = [e[0] for e in _stuck_events(host, "sdh")]
        assert kinds.count("start") == 1, kinds  # no second probe reached the stuck drive
        assert "quarantine lifted" in agent.log()
        assert "is quarantined" in helper.log()
    finally:
        if agent is not None:
            agent.stop()
        helper.stop()
        shutil.rmtree(sockdir, ignore_errors=True)
