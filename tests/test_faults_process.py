"""Issue 26, the process faults: signals, tools that leave processes behind, two drives with one
serial, control characters from a device. Each case runs the real agent process against the
fake host and checks what the issue asks of every fault: /metrics answers within 1 s throughout
(:class:`tests.test_fault_matrix.Scraper`), no process outlives the agent (psutil), and the fault
shows as one log line and a metric.

The shared serial and the escape sequence are made at test time from the real captured smartctl
reports of the default fake host, with only ``serial_number`` changed, and replayed by the fake
smartctl; no derived fixture file is kept.
"""

from __future__ import annotations

import json
import os
import re
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional

import psutil
import pytest

from tests.conftest import ROOT, read_fixture
from tests.fakehost import AgentProcess, FakeHost, build_default_host, history_rows
from tests.support.e2e import NVME0_SERIAL, SDA_SERIAL, SHANNON_SERIAL, scrape, value, wait_for
from tests.support.processes import Scraper, descendants, left_behind

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the agent's process handling is Linux's")

HEALTHY = (SDA_SERIAL, NVME0_SERIAL, SHANNON_SERIAL)
FAST = {"intervals": {"smartctl": 0.5, "shannon": 0.5, "write_cache": 1, "diskstats": 0.5},
        "tool_timeout_seconds": 3}


@pytest.fixture
def host(tmp_path) -> FakeHost:
    return build_default_host(tmp_path)


def write_config(host: FakeHost, settings: Dict) -> Path:
    path = host.root / "agent.yml"
    path.write_text("".join(f"{k}: {json.dumps(v)}\n" for k, v in settings.items()))
    return path


def start(host: FakeHost, settings: Optional[Dict] = None, *extra: str) -> AgentProcess:
    path = write_config(host, dict(FAST, **(settings or {})))
    agent = AgentProcess(host, ["--config", str(path)] + list(extra))
    agent.wait_ready()
    return agent


def fresh(agent: AgentProcess, serials=HEALTHY, timeout: float = 20.0) -> None:
    wait_for(lambda: all(value(scrape(agent), "ssd_data_age_seconds", serial=s) is not None for s in serials),
             timeout=timeout)


def ages(agent: AgentProcess) -> Dict[str, float]:
    return {dict(k[1])["serial"]: v for k, v in scrape(agent).items() if k[0] == "ssd_data_age_seconds"}


def stop_and_check(agent: AgentProcess, host: FakeHost) -> str:
    """SIGTERM; the agent exits 0 and leaves no process behind. Returns its log."""
    tools = descendants(agent.proc.pid)
    agent.proc.send_signal(signal.SIGTERM)
    code = agent.proc.wait(timeout=30)
    agent.stop()
    time.sleep(0.3)
    alive = [p for p in tools if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    assert code == 0, agent.log()[-3000:]
    assert not alive, alive
    assert not left_behind(host), left_behind(host)
    return agent.log()


# -- item 3: signals -----------------------------------------------------------------------


def test_sighup_reloads_the_configuration_live(host):
    """A good configuration: applied without a restart (a threshold, an interval, the tool
    timeout, which every run reads from the configuration, and a source's own settings, which
    build that source again: it keeps its drives on /metrics meanwhile), one INFO line,
    ``ssd_config_last_reload_successful`` 1 with a newer timestamp. A key that needs a restart
    keeps its running value and says so."""
    agent = start(host)
    try:
        fresh(agent)
        # the expectation is shown once the write-cache source has run, which can be after the
        # first SMART reading (its interval is 1 s against 0.5 s); wait for it rather than race it
        before = wait_for(lambda: (lambda got: got if value(got, "ssd_write_cache_expected_enabled",
                                                              serial=SDA_SERIAL) is not None else None)(scrape(agent)),
                          timeout=15)
        assert value(before, "ssd_config_last_reload_successful") == 1
        loaded_at = value(before, "ssd_config_last_reload_success_timestamp_seconds")
        assert value(before, "ssd_write_cache_expected_enabled", serial=SDA_SERIAL) == 1
        with Scraper(agent) as scraper:
            write_config(host, dict(FAST, write_cache_expected="disabled", tool_timeout_seconds=4,
                                    intervals=dict(FAST["intervals"], smartctl=0.7), http_max_connections=64,
                                    smartctl={"standby_max_skips": 6}))
            agent.proc.send_signal(signal.SIGHUP)
            wait_for(lambda: value(scrape(agent), "ssd_write_cache_expected_enabled", serial=SDA_SERIAL) == 0,
                     timeout=15)
            drives = []
            for _ in range(15):  # every drive stays on /metrics while the sources are rebuilt
                drives.append(value(scrape(agent), "ssd_drives"))
                time.sleep(0.2)
        scraper.check()
        after = scrape(agent)
        assert value(after, "ssd_config_last_reload_successful") == 1
        assert value(after, "ssd_config_last_reload_success_timestamp_seconds") > loaded_at
        assert value(after, "ssd_signals_received_total", signal="SIGHUP") == 1
        assert set(drives) == {4.0}, drives
        assert max(ages(agent).values()) < 5, ages(agent)  # still polled after the rebuild
        log = agent.log()
        assert log.count("configuration reloaded in") == 1
        # issue 27: the one tool timeout needs no source built again; smartctl's settings do
        assert re.search(r"configuration reloaded in [0-9.]+s: changed intervals, tool_timeout_seconds, "
                         r"write_cache_expected, smartctl \(rebuilt smartctl\)", log), log[-2000:]
        assert log.count("http_max_connections changed but needs a restart") == 1
    finally:
        log = stop_and_check(agent, host)
    assert "Traceback" not in log


def test_a_bad_configuration_on_sighup_changes_nothing(host):
    """A file that does not validate (then one that is not YAML, then a web config that does
    not parse): the running configuration stays, one ERROR line each, the reload metric 0 with
    the time of the last good load; the next good file brings it back to 1."""
    agent = start(host)
    try:
        fresh(agent)
        loaded_at = value(scrape(agent), "ssd_config_last_reload_success_timestamp_seconds")
        broken_web = host.root / "web.yml"
        broken_web.write_text("basic_auth_users:\n  prometheus: not-a-bcrypt-hash\n")

        def refused_shown(got):
            return got if value(got, "ssd_config_last_reload_successful") == 0 else None

        with Scraper(agent) as scraper:
            bad_files = ('intervals: {"smartctl": -1}\n', "intervals: [unclosed\n",
                         f"web_config_file: {json.dumps(str(broken_web))}\n")
            for count, bad in enumerate(bad_files, start=1):
                (host.root / "agent.yml").write_text(bad)
                agent.proc.send_signal(signal.SIGHUP)
                wait_for(lambda n=count: agent.log().count("configuration reload failed") == n, timeout=10)
                # The status reaches /metrics with the next render, in the poller's listener
                # thread, a moment after the log line: wait for it rather than race it.
                s = wait_for(lambda: refused_shown(scrape(agent)), timeout=10)
                assert value(s, "ssd_config_last_reload_success_timestamp_seconds") == loaded_at
            time.sleep(1.5)
            assert max(ages(agent).values()) < 4  # polled on with the running configuration
            write_config(host, FAST)
            agent.proc.send_signal(signal.SIGHUP)
            wait_for(lambda: value(scrape(agent), "ssd_config_last_reload_successful") == 1, timeout=10)
        scraper.check()
        log = agent.log()
        failed = [line for line in log.splitlines() if "configuration reload failed" in line]
        print("\n".join("  " + line[24:] for line in failed))
        assert len(failed) == 3
        assert "intervals.smartctl" in failed[0] and "not valid YAML" in failed[1] and "web.yml" in failed[2]
        assert value(scrape(agent), "ssd_signals_received_total", signal="SIGHUP") == 4
    finally:
        log = stop_and_check(agent, host)
    assert "Traceback" not in log


def test_usr1_usr2_alrm_are_ignored_with_a_line_and_a_count(host):
    agent = start(host)
    try:
        fresh(agent)
        with Scraper(agent) as scraper:
            for _ in range(3):
                for sig in (signal.SIGUSR1, signal.SIGUSR2, signal.SIGALRM):
                    agent.proc.send_signal(sig)
                    time.sleep(0.1)
            wait_for(lambda: value(scrape(agent), "ssd_signals_received_total", signal="SIGALRM") == 3)
            time.sleep(1.0)
            assert agent.proc.poll() is None
        scraper.check()
        s = scrape(agent)
        for name in ("SIGUSR1", "SIGUSR2", "SIGALRM"):
            assert value(s, "ssd_signals_received_total", signal=name) == 3
            assert agent.log().count(f"{name} received and ignored") == 1  # at most once a minute
        assert max(ages(agent).values()) < 4
    finally:
        stop_and_check(agent, host)


def test_sigquit_dumps_the_stacks_then_stops_cleanly_with_131(host):
    """A tool in flight and samples recorded: SIGQUIT writes every thread's stack, ends the
    tool, flushes history and exits 131, which a unit's Restart=on-failure restarts."""
    host.set_response("smartctl", "nvme1", read_fixture("fakehost/scrutiny__smart-nvme-failed.json"), sleep=60)
    agent = start(host)
    try:
        fresh(agent)
        # every healthy drive's first sample recorded (on a loaded machine the readings may be
        # published a moment before the history takes them)
        wait_for(lambda: (value(scrape(agent), "ssd_history_samples_recorded_total") or 0) >= len(HEALTHY),
                 timeout=20)
        wait_for(lambda: any("/dev/nvme1" in c for c in host.calls()), timeout=10)
        time.sleep(0.5)
        tools = descendants(agent.proc.pid)
        assert tools, "no tool in flight"
        started = time.monotonic()
        agent.proc.send_signal(signal.SIGQUIT)
        code = agent.proc.wait(timeout=30)
        took = time.monotonic() - started
    finally:
        agent.stop()
    print(f"  exit {code} after {took:.2f}s")
    assert code == 131 and took < 10
    time.sleep(0.3)
    assert not [p for p in tools if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    assert not left_behind(host)
    log = agent.log()
    assert "most recent call first" in log and "agent/signals.py" in log
    assert "stopped (SIGQUIT)" in log and "history flushed" in log
    assert set(HEALTHY) <= set(history_rows(host.state / "history.sqlite"))


# -- item 7: processes a tool leaves behind ---------------------------------------------------


def leaky_smartctl(host: FakeHost) -> Path:
    """A smartctl that, reading nvme1, starts two sleepers before it answers: one stays in its
    process group, one leaves it with setsid. Both are a copy of ``sleep`` under the fake
    host's root, so psutil finds them by path."""
    sleeper = host.bin / "leaked-sleep"
    sleeper.write_bytes(Path("/bin/sleep").read_bytes())
    sleeper.chmod(0o755)
    spawned = host.root / "spawned.log"
    wrapper = host.bin / "smartctl-leaky"
    wrapper.write_text(f"""#!/bin/sh
for a in "$@"; do last="$a"; done
if [ "$last" = /dev/nvme1 ]; then
  "{sleeper}" 300 </dev/null >/dev/null 2>&1 &
  setsid "{sleeper}" 301 </dev/null >/dev/null 2>&1 &
  echo x >> "{spawned}"
fi
exec "{host.bin / 'smartctl'}" "$@"
""")
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    return wrapper


def sleepers(host: FakeHost) -> List[psutil.Process]:
    out = []
    for p in psutil.process_iter(["cmdline"]):
        cmd = p.info.get("cmdline") or []
        if cmd and cmd[0] == str(host.bin / "leaked-sleep"):
            try:
                if p.status() != psutil.STATUS_ZOMBIE:
                    out.append(p)
            except psutil.NoSuchProcess:
                pass
    return out


def test_processes_a_tool_leaves_behind_are_killed_and_none_outlives_the_agent(host):
    """Every read of nvme1 leaves two sleepers (one in the tool's group, one in a session of its
    own). Over 10 s of polling every 0.5 s, the in-group ones die when the tool exits and the
    setsid ones, reparented to the agent (a subreaper), within two sweeps (about 2 s); the
    counter and one log line each say so; after a clean stop none is left."""
    wrapper = leaky_smartctl(host)
    agent = start(host, None, "--smartctl", str(wrapper))  # the last flag wins
    peak = 0
    try:
        fresh(agent)
        with Scraper(agent) as scraper:
            t0 = time.monotonic()
            while time.monotonic() - t0 < 10:
                peak = max(peak, len(sleepers(host)))
                time.sleep(0.2)
        scraper.check()
        spawned = len((host.root / "spawned.log").read_text().splitlines())

        def caught_up(got):
            # the sleepers of the reads started so far, the last read's aside; a sweep runs every
            # second, and on a loaded machine the last few lag: waited for, not raced
            done = (value(got, "ssd_tool_leftover_processes_killed_total", how="adopted") or 0) >= spawned - 1
            return got if done else None

        s = wait_for(lambda: caught_up(scrape(agent)), timeout=20)
        group = value(s, "ssd_tool_leftover_processes_killed_total", how="group")
        adopted = value(s, "ssd_tool_leftover_processes_killed_total", how="adopted")
        alive = len(sleepers(host))
        print(f"  {spawned} leaky reads started {2 * spawned} sleepers in 10 s; alive at most {peak} at once, "
              f"{alive} at the end; killed: {group:.0f} with the group, {adopted:.0f} adopted")
        assert spawned >= 8
        assert group >= spawned - 1  # the last read's may not be counted yet
        assert adopted >= spawned - 1
        # The agent's own reads every 0.5 s, each setsid sleeper living about two sweeps of 1 s:
        # never more than a handful at once (without the fix: all of them, 2 per read).
        assert peak <= 10, peak
        assert max(ages(agent).values()) < 4
        log = agent.log()
        assert log.count("of its process group running") == 1
        assert log.count("left outside its process group") == 1
    finally:
        log = stop_and_check(agent, host)
    assert not sleepers(host)
    assert "Traceback" not in log


# -- item 4: two drives with one serial -------------------------------------------------------


def test_two_drives_with_one_serial_are_kept_apart_and_said_so(host):
    """nvme0's real report replayed with sda's serial: both drives keep their own health (no
    NVMe drive with ATA defects, no drive with "no health data"), each is labelled SERIAL@DEVICE,
    ``ssd_drive_serial_shared`` is 1 for both, the problems say which drives, one log line; and
    history keeps them apart on disk."""
    doc = json.loads(read_fixture("fakehost/scrutiny__smart-nvme.json"))
    doc["serial_number"] = SDA_SERIAL
    host.set_response("smartctl", "nvme0", json.dumps(doc))
    # SMART every 2 s: its first pass waits that long for its reads, so both drives are read
    # before the first history write (a read that outlasts its first pass would be a drive
    # plugged in later, whose partner's first sample is already written).
    agent = start(host, {"intervals": dict(FAST["intervals"], smartctl=2)})
    sda, nvme0 = f"{SDA_SERIAL}@sda", f"{SDA_SERIAL}@nvme0"
    try:
        with Scraper(agent) as scraper:
            fresh(agent, (sda, nvme0, SHANNON_SERIAL))
            time.sleep(2)
        scraper.check()
        s = scrape(agent)
        for serial, device, kind in ((sda, "sda", "ata"), (nvme0, "nvme0", "nvme")):
            assert value(s, "ssd_drive_info", serial=serial, device=device, kind=kind) == 1
            assert value(s, "ssd_health_data_missing", serial=serial) == 0
            assert value(s, "ssd_drive_serial_shared", serial=serial) == 1
        assert value(s, "ssd_drive_serial_shared", serial=SHANNON_SERIAL) is None
        assert value(s, "ssd_drives") == 4
        # No mixture: the ATA defect counters are sda's alone, the NVMe media errors nvme0's.
        assert value(s, "ssd_defects", serial=nvme0, type="reallocated") is None
        assert value(s, "ssd_defects", serial=sda, type="reallocated") is not None
        assert value(s, "ssd_media_errors_total", serial=nvme0) is not None
        assert value(s, "ssd_media_errors_total", serial=sda) is None
        problems = json.loads(agent.get("/api/v1/drives")).get("problems") or []
        shared = [p for p in problems if "reports serial" in p]
        print("  " + "\n  ".join(shared))
        assert len(shared) == 2 and any(p.startswith(sda) and "/dev/nvme0" in p for p in shared)
        page = agent.get("/").decode()
        assert "as does /dev/nvme0" in page
        assert agent.log().count(f"2 drives report serial {SDA_SERIAL}") == 1
    finally:
        log = stop_and_check(agent, host)
    rows = history_rows(host.state / "history.sqlite")
    print(f"  history: {rows}")
    assert rows.get(sda) and rows.get(nvme0) and SDA_SERIAL not in rows
    assert "Traceback" not in log


# -- rough edge: control characters from a device ---------------------------------------------


def test_an_escape_sequence_in_a_serial_reaches_no_page_label_or_terminal(host):
    evil = "EVIL\x1b[2J\x1b]0;owned\x07\u202eX"
    doc = json.loads(read_fixture("fakehost/scrutiny__smart-ata-full.json"))
    doc["serial_number"] = evil
    doc["model_name"] = "Model\x1b[31mRed"
    host.set_response("smartctl", "sda", json.dumps(doc))
    agent = start(host)
    try:
        wait_for(lambda: b"EVIL" in agent.get("/metrics"), timeout=20)
        for path in ("/", "/metrics"):
            body = agent.get(path)
            assert b"\x1b" not in body and b"\x07" not in body and "\u202e".encode() not in body, path
            assert b"EVIL\\x1b[2J\\x1b]0;owned\\x07\\u202eX" in body or \
                b"EVIL\\\\x1b[2J\\\\x1b]0;owned\\\\x07\\\\u202eX" in body, path
        # The JSON keeps the value exact (JSON escapes it); a terminal gets it made visible.
        api = json.loads(agent.get("/api/v1/drives"))
        assert evil in [d["serial"] for d in api["drives"]]
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        out = subprocess.run([sys.executable, "-m", "agent", "collect"] + host.config_args(), env=env,
                             capture_output=True, text=True, timeout=120, cwd=str(ROOT))
        assert "EVIL" in out.stdout, out.stdout + out.stderr
        assert "\x1b" not in out.stdout and "\x07" not in out.stdout and "\u202e" not in out.stdout
    finally:
        stop_and_check(agent, host)
