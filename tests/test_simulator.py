"""The drive simulator against the real agent.

1. Accelerated weeks: the real poller (in-process, on the simulated clock) probes a simulated
   host through its fake executables, parses, records history and projects wear-out. The
   agent's figures are compared with the simulator's own ground truth.
2. ``ssdfleet agent --simulate`` as a real process serves every simulated drive.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from agent.config import load_config
from agent.history import History
from agent.poller import Poller
from simulator import render, tool
from simulator.demo import demo_drives
from simulator.host import SimHost, make_spec
from simulator.wear import DAY, average_write_rate, state_at, wearout_time
from tests.fakehost import ROOT, free_port, stop_process

T0 = 1_700_006_400.0  # midnight UTC, so whole simulated days hold whole daily cycles
WEEKS = 3
STEP = 8 * 3600.0


@pytest.fixture
def sim(tmp_path):
    drives = [
        # An Intel 320 (the ZIL post of simulator/catalogue.py) worked harder than its author's ZIL, 40% used.
        make_spec("intel-320-300", "sda", 1, T0, start_life_used=0.40, writes_per_day=3e12),
        make_spec("samsung-pm983-1920", "nvme0", 2, T0, start_life_used=0.30, writes_per_day=8e12),
        # The Shannon test's card at its author's "abusive" load, 60% used.
        make_spec("shannon-directio-1200", "scta", 3, T0, start_life_used=0.60, writes_per_day=40e12),
    ]
    host = SimHost(tmp_path / "host", drives, speed=0.0, sim_start=T0)
    yield host
    host.stop_refresher()


def _poller(host: SimHost, tmp_path) -> Poller:
    config = load_config(overrides=dict(host.config_overrides(), tool_timeout_seconds=20.0))
    history = History(str(tmp_path / "history.sqlite"), clock=host.clock, min_interval_seconds=600)
    return Poller(config, clock=host.clock, history=history)


def test_accelerated_weeks_match_the_ground_truth(sim, tmp_path):
    poller = _poller(sim, tmp_path)
    try:
        poller.run_discovery()
        poller.run("write_cache")
        first = None
        t = T0
        end = T0 + WEEKS * 7 * DAY
        while t <= end:  # bounded: WEEKS * 21 steps
            sim.set_time(t)
            poller.run("smartctl")
            poller.run("shannon")
            poller.run("diskstats")
            if first is None:
                first = poller.snapshot().by_serial()
            t += STEP
        now = sim.clock()
        last = poller.snapshot().by_serial()
        agent_rates = {d.serial: poller.history.write_rate(d.serial, now) for d in sim.drives}
    finally:
        poller.stop()

    assert len(last) == 3, sorted(last)
    for spec in sim.drives:
        drive = last[spec.serial]
        # life left falls, and the agent reads what the drive printed (whole percent)
        assert drive.reading.life_left_ratio < first[spec.serial].reading.life_left_ratio
        truth = state_at(spec, now)
        assert drive.reading.life_left_ratio == pytest.approx(int(truth.life_left * 100) / 100, abs=1e-9)

        # the agent's write rate (7-day window of its own history) against the model's
        agent_rate = agent_rates[spec.serial]
        model_rate = average_write_rate(spec, now - 7 * DAY, now)
        assert agent_rate == pytest.approx(model_rate, rel=0.05), spec.device

    # Wear-out date against the model's own: drives that write on to the end.
    for device in ("sda", "nvme0"):
        spec = sim.spec(device)
        best = last[spec.serial].best_projection
        assert best is not None and best.method == "observed"
        truth = wearout_time(spec)
        assert abs(best.wearout_timestamp - truth) / (truth - now) < 0.10, (device, best, truth)

    # The Shannon card throttles itself at 3% left, so the straight-line projection must land
    # between the switch to reduced-write and the true read-only date: early, never late.
    spec = sim.spec("scta")
    best = last[spec.serial].best_projection
    truth = wearout_time(spec)
    reduced_at = next(t for t in range(int(now), int(truth), 3600)
                      if state_at(spec, t).access_mode != "readwrite")
    assert reduced_at * 0.999 <= best.wearout_timestamp < truth


def test_shannon_card_reduces_writes_then_goes_read_only(tmp_path):
    spec = make_spec("shannon-directio-1200", "scta", 7, T0, start_life_used=0.965, writes_per_day=40e12)
    host = SimHost(tmp_path / "host", [spec], speed=0.0, sim_start=T0)
    poller = _poller(host, tmp_path)
    seen = []
    try:
        poller.run_discovery()
        for days in (0, 2, 40):
            host.set_time(T0 + days * DAY)
            poller.run("shannon")
            drive = poller.snapshot().by_serial()[spec.serial]
            seen.append((drive.reading.access_mode, drive.reading.life_left_ratio))
    finally:
        poller.stop()
    assert [mode for mode, _ in seen] == ["readwrite", "reduced_write", "readonly"], seen
    assert seen[-1][1] == 0.0
    # bad blocks appear late: more than the factory figure once past 75% used
    assert state_at(spec, T0).bad_block_ratio > spec.factory_bad_ratio
    assert state_at(make_spec("shannon-directio-1200", "scta", 7, T0, start_life_used=0.5), T0).bad_block_ratio \
        == spec.factory_bad_ratio


def test_write_cache_switch_reaches_every_source(sim, tmp_path):
    poller = _poller(sim, tmp_path)
    try:
        poller.run_discovery()
        poller.run("smartctl")
        poller.run("write_cache")
        before = {s.source: s.state for s in poller.snapshot().by_serial()[sim.spec("sda").serial].write_cache}
        sim.set_write_cache("sda", False)
        poller.run("write_cache")
        after = {s.source: s.state for s in poller.snapshot().by_serial()[sim.spec("sda").serial].write_cache}
    finally:
        poller.stop()
    assert before == {"sysfs_queue": "enabled", "hdparm": "enabled"}
    assert after == {"sysfs_queue": "disabled", "hdparm": "disabled"}
    # the fake tools were really called, with the argv the agent builds
    assert any(c.startswith("hdparm -W /dev/sda") for c in sim.calls())


def test_old_smartctl_host_is_read_through_the_text_parser(tmp_path):
    spec = make_spec("patriot-wildfire-120", "sda", 4, T0, start_life_used=0.79)
    host = SimHost(tmp_path / "host", [spec], speed=0.0, sim_start=T0, smartctl_json=False)
    poller = _poller(host, tmp_path)
    try:
        poller.poll_once()
        drive = poller.snapshot().by_serial()[spec.serial]
    finally:
        poller.stop()
    assert not any("--json" in c for c in host.calls() if "--scan" not in c and "--version" not in c)
    # the 270 TB test: 270 TB written leaves 21% of a 120 GB SandForce drive's life
    assert drive.reading.life_left_ratio == pytest.approx(0.21)
    assert drive.reading.host_written_bytes / 1e12 == pytest.approx(270, rel=0.01)


def test_unknown_arguments_are_refused_like_the_real_tools(sim):
    out, err, code = tool.run(str(sim.state_file), "smartctl", ["--json=c", "-d", "sat", "/dev/sdz"])
    assert code == 2 and '"exit_status": 2' in out
    assert tool.run(str(sim.state_file), "hdparm", ["-W1", "/dev/sda"])[2] == 1
    assert tool.run(str(sim.state_file), "shannon-status", ["-p", "/dev/sctz"])[2] == 1
    assert render.block_name(sim.spec("nvme0")) == "nvme0n1"


def _scrape(url: str) -> dict:
    with urllib.request.urlopen(url + "/metrics", timeout=5) as r:
        text = r.read().decode()
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out.setdefault(s.name, []).append((s.labels, s.value))
    return out


def test_ssdfleet_agent_simulate_serves_every_drive(tmp_path):
    count = 8
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    log = open(tmp_path / "agent.log", "wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "agent", "agent", "--simulate", str(count), "--simulate-speed", "3600",
         "--simulate-dir", str(tmp_path / "sim"), "--listen-address", f"127.0.0.1:{port}",
         "--interval.smartctl", "2", "--interval.shannon", "2", "--interval.write_cache", "2",
         "--interval.diskstats", "1"],
        stdout=log, stderr=subprocess.STDOUT, env=env, cwd=str(ROOT), start_new_session=True)
    try:
        serials = {d.serial for d in demo_drives(count, time.time())}
        deadline = time.monotonic() + 60
        samples: dict = {}
        while time.monotonic() < deadline:
            assert proc.poll() is None, (tmp_path / "agent.log").read_text()
            try:
                samples = _scrape(url)
            except OSError:
                samples = {}
            health = {ls["serial"] for ls, _ in samples.get("ssd_life_left_ratio", [])}
            info = {ls["serial"] for ls, _ in samples.get("ssd_drive_info", [])}
            cache = {ls["serial"] for ls, _ in samples.get("ssd_write_cache_enabled", [])}
            # every drive but the LITEON has life left; every non-Shannon drive a cache state
            if serials <= info and len(health) >= count - 1 and len(cache) >= count - 1 \
                    and samples.get("ssd_io_written_bytes_total"):
                break
            time.sleep(0.5)
        info = {ls["serial"]: ls for ls, _ in samples.get("ssd_drive_info", [])}
        assert serials <= set(info), (sorted(serials - set(info)), (tmp_path / "agent.log").read_text()[-2000:])
        kinds = {ls["kind"] for ls in info.values()}
        assert kinds == {"shannon", "ata", "nvme"}
        # every drive but the LITEON (no life figure smartctl can name) reports life left
        health = {ls["serial"] for ls, _ in samples["ssd_life_left_ratio"]}
        liteon = {s for s, ls in info.items() if ls["model"] == "LITEON LCH-256V2S"}
        assert health == serials - liteon
        cache_off = {ls["serial"] for ls, v in samples.get("ssd_write_cache_enabled", []) if v == 0}
        assert cache_off == liteon
        # The demo starts with two hours of history (seeded through the agent's own parsers),
        # so wear-out dates and write rates are there from the first scrapes: a write rate for
        # every drive that counts host writes, and the simulated load (times the 3600 speed-up)
        # is what the agent measures.
        rates = {ls["serial"]: v for ls, v in samples.get("ssd_write_rate_bytes_per_second", [])}
        wearout = {ls["serial"]: v for ls, v in samples.get("ssd_projected_wearout_timestamp_seconds", [])}
        written = {ls["serial"] for ls, _ in samples.get("ssd_host_written_bytes_total", [])}
        assert written and written <= set(rates), sorted(written - set(rates))
        assert len(wearout) >= count - 2, sorted(serials - set(wearout))
        assert all(v > time.time() - 86400 for v in wearout.values())
        specs = {d.serial: d for d in demo_drives(count, time.time())}
        for serial in written:
            spec = specs[serial]
            if spec.kind == "shannon":
                continue  # a card near its end throttles its own writes
            expected = spec.writes_per_day / 86400 * 3600
            assert rates[serial] == pytest.approx(expected, rel=0.10), (spec.device, spec.catalogue)
    finally:
        stop_process(proc)
        log.close()


def test_demo_plan_gives_each_drive_its_stage_of_life():
    """The demo's drives as planned (simulator/demo.py, DEMO_PLAN): the life each has used at
    the start, its load, and a power-on time its wear could have taken at that load."""
    from simulator.demo import DEMO_PLAN, backfill_times, demo_plan

    t0 = T0
    specs = demo_drives(8, t0)
    assert [s.device for s in specs] == ["scta", "sda", "nvme0", "sdb", "sdc", "sdd", "sde", "nvme1"]
    for spec, plan in zip(specs, DEMO_PLAN):
        st = state_at(spec, t0)
        assert st.life_used == pytest.approx(plan.life_used)
        assert spec.writes_per_day == plan.writes_per_day and st.write_cache == plan.write_cache
        # powered on long enough to have written that much at its load (a month at least)
        assert t0 - spec.born >= max(30 * DAY, plan.life_used * spec.host_budget_bytes / plan.writes_per_day * DAY) - 1
    # the warning drive wears out about three months after the start at its own load
    sdd = specs[5]
    assert (wearout_time(sdd) - t0) / DAY == pytest.approx(0.085 * sdd.host_budget_bytes / sdd.writes_per_day, rel=0.01)
    assert 80 < (wearout_time(sdd) - t0) / DAY < 100
    # beyond the plan: more healthy drives, none past 60% used, none with its cache off
    extra = demo_plan(20)[8:]
    assert all(0.05 <= d.life_used <= 0.61 and d.write_cache for d in extra)
    # the seeded history: sparse far back, daily in the last week, ending an hour before now
    now = T0 + 90 * DAY
    times = backfill_times(now - 90 * DAY, now)
    assert times == sorted(times) and times[0] == now - 90 * DAY and times[-1] == now - 3600
    assert 20 <= len(times) <= 40
    assert sum(1 for t in times if t > now - 7 * DAY) >= 7
    short = backfill_times(now - 7200, now)  # a speeded-up demo's two hours
    assert len(short) == 12 and all(b - a == 600 for a, b in zip(short, short[1:]))


def test_replaying_tools_answer_as_their_first_rendering_did(tmp_path):
    """A host built with a replay directory (the benches' ``--replay``): the first call of each
    argv is rendered and recorded, later ones are the recorded answer, stdout, stderr and exit
    status alike, and every call is in the call log; a second host built alike shares them."""
    now = time.time()
    drives = demo_drives(4, now)
    replay = tmp_path / "replay"
    host = SimHost(tmp_path / "a", drives, speed=0.0, sim_start=now, replay=replay)
    calls = [[host.tool_path("smartctl"), "--json=c", "-x", "/dev/sda"], [host.tool_path("hdparm"), "-W", "/dev/nope"]]
    first = [subprocess.run(argv, capture_output=True, timeout=60) for argv in calls]
    recorded = sorted(p.name.rsplit(".", 1)[1] for p in replay.iterdir())
    assert recorded == ["err", "err", "out", "out", "rc", "rc"]  # no temporary file left
    host.advance(30 * DAY)  # a rendering would differ now: a replay does not
    again = [subprocess.run(argv, capture_output=True, timeout=60) for argv in calls]
    for before, after in zip(first, again):
        assert (after.stdout, after.stderr, after.returncode) == (before.stdout, before.stderr, before.returncode)
    assert first[0].returncode == 0 and b'"serial_number"' in first[0].stdout
    assert first[1].returncode == 2 and b"No such file" in first[1].stderr
    rendered_now, _, _ = tool.run(str(host.state_file), "smartctl", ["--json=c", "-x", "/dev/sda"])
    assert rendered_now.encode() != first[0].stdout, "the clock step changed nothing: the test shows nothing"
    assert host.calls() == ["smartctl --json=c -x /dev/sda", "hdparm -W /dev/nope"] * 2
    other = SimHost(tmp_path / "b", drives, speed=0.0, sim_start=now, replay=replay)
    shared = subprocess.run([other.tool_path("smartctl"), "--json=c", "-x", "/dev/sda"], capture_output=True, timeout=60)
    assert shared.stdout == first[0].stdout and len(list(replay.iterdir())) == 6
