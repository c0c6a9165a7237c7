"""A simulated fleet behind a clustered store: starting it and checking the dashboards' panels
against it.

Moved out of test_victoriametrics_e2e.py, issue 27: test modules import helpers from
tests/support/ only).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Dict, List, Tuple

import pytest

from tests.fakehost import AgentProcess
from tests.livefleet import CONTROLLER_INTERVALS, FAST_INTERVALS, SimulatedHost
from tests.promstack import (  # noqa: F401 (fixtures)
    VMAgent,
    VMAlert,
    alertmanager_binary,
    alertmanager_factory,
    skip_or_fail,
    victoriametrics_binary,
    victoriametrics_factory,
    vmagent_binary,
    vmalert_binary,
)
from tests.support.alerting import _alerts_text, _wait_for, alertmanager_config, shortened_rules, wait_for_page, webhook  # noqa: F401
from tests.support.controller_host import (
    answer_scanned_direct_disks,
    arcconf_rebuilding,
    controller_tool_args,
    megacli_after_battery_failed,
    megaraid_drives_host,
)
from tests.support.dashboards import (
    DASHBOARD_FILES,
    _has_data,
    _run,
    _substitute,
    _variable_combinations,
    load,
    query_panels,
)

ALERT = "SSDWriteCacheDisabled"
ALERT_FOR = "3s"  # shipped: 5m
DRIVES_PER_HOST = 3  # the demo mix's first three: Shannon card (dfa), Intel 320 (sda), PM983 (nvme0)
FLIPPED_DEVICE = "sda"
QUIET_SECONDS = 6.0
PAGE_TIMEOUT = 45.0
# The agent's configured limit for the Samsung PM983 (MZQLB...), which reports none itself: its
# datasheet's maximum operating temperature, 70 degC. The drive view's "Temperatures vs limit"
# draws it.
TEMPERATURE_LIMITS = """\
temperature_limits:
  - model: "MZQLB"
    celsius: 70
"""


def _wait(fn, what: str, timeout: float):
    return _wait_for(fn, what, timeout, step=0.2)


def _panel_queries() -> List[Tuple[str, dict, dict]]:
    return [(name, panel, target) for name in DASHBOARD_FILES
            for panel in query_panels(load(name)) for target in panel["targets"]]


def check_panels(store, timeout: float) -> Tuple[Dict[Tuple[str, int, str], str], int, Tuple[float, str]]:
    """Run every panel query (as written) with every combination of its dashboard's variables
    until each has data for at least one combination or ``timeout`` passes. Returns the
    problems ({(dashboard, panel id, refId): what}), the number of queries run and the slowest."""
    combos = {name: _variable_combinations(store, load(name)) for name in DASHBOARD_FILES}
    pending = {(name, panel["id"], target["refId"]): (panel, target) for name, panel, target in _panel_queries()}
    problems: Dict[Tuple[str, int, str], str] = {}
    runs = 0
    slowest = (0.0, "")
    deadline = time.monotonic() + timeout
    slowest_pass = 0.0
    while pending:
        pass_started = time.monotonic()
        now = time.time()
        problems = {}
        for key, (panel, target) in list(pending.items()):
            errors = []
            for combo in combos[key[0]]:
                expr = _substitute(target["expr"], combo)
                assert "$" not in expr, f"{key}: unresolved variable in {expr}"
                answer, took = _run(store, target, expr, now)
                runs += 1
                if took > slowest[0]:
                    slowest = (took, f"{key[0]} / {panel['title']} / {key[2]}")
                if answer.get("status") != "success":
                    errors.append(f"{answer.get('error')} in {expr}")
                elif _has_data(answer):
                    del pending[key]
                    break
            else:
                problems[key] = f"{panel['title']}: " + ("; ".join(errors[:2]) if errors else f"no data: {target['expr']}")
        slowest_pass = max(slowest_pass, time.monotonic() - pass_started)
        if not pending or time.monotonic() > deadline + 2 * slowest_pass:
            break
        time.sleep(1.0)
    return problems, runs, slowest


def _controllers(root: Path) -> List[str]:
    """Agent flags for a MegaRAID whose battery failed and an Adaptec rebuilding (fakes under ``root``)."""
    tools = {"megacli": megacli_after_battery_failed(root), "arcconf": arcconf_rebuilding(root)}
    return controller_tool_args(root, tools) + CONTROLLER_INTERVALS


def start_fleet(tmp_path: Path, request: pytest.FixtureRequest) -> Tuple[List[SimulatedHost], List[AgentProcess]]:
    """The three simulated hosts of the end-to-end tests on other stores, each read by a real
    agent process (stopped by the test's finalizers). db0: the host whose cache is switched
    off. db1: its smartctl fails on every run (the fleet's "Collectors failing" views need
    one), and it has RAID controllers (fake MegaCli and arcconf replaying real captures,
    tests/support/controller_host.py: a failed battery, a volume that lost write-back, a RAID 10
    rebuilding) for the host view's controller rows. db2: a simulated day passes every second,
    so its drives' life left falls while the test watches (the drive view's projection from the
    trend of life left needs that). db3 (a fourth agent, not simulated): real captures of
    drives behind a MegaRAID and beside it (tests/support/controller_host.py), for the drive
    view's rows the simulator's drives have no data for: self-test and error logs, SAS
    uncorrected errors, the SCT temperature history."""
    hosts = [
        SimulatedHost(tmp_path / "db0", drives=DRIVES_PER_HOST, seed_offset=0, syncwrite_on="sda"),
        SimulatedHost(tmp_path / "db1", drives=DRIVES_PER_HOST, seed_offset=1),
        SimulatedHost(tmp_path / "db2", drives=DRIVES_PER_HOST, seed_offset=2, history_seconds=60, speed=86400),
    ]
    failing_tool = tmp_path / "smartctl-fails"
    failing_tool.write_text("#!/bin/sh\necho 'smartctl: cannot open device' >&2\nexit 2\n")
    failing_tool.chmod(0o755)
    agents: List[AgentProcess] = []
    for index, host in enumerate(hosts):
        request.addfinalizer(host.stop)
        config = tmp_path / f"ssdfleet-{index}.yml"
        config.write_text(TEMPERATURE_LIMITS + "\n" + host.config_text)
        extra = ["--config", str(config)] + (["--smartctl", str(failing_tool)] + _controllers(tmp_path / "db1-raid")
                                             if index == 1 else [])
        agent = AgentProcess(host, FAST_INTERVALS + extra)
        request.addfinalizer(agent.stop)
        agents.append(agent)
    captured, smartctl = megaraid_drives_host(tmp_path / "db3", with_volume=False)
    answer_scanned_direct_disks(captured, smartctl)
    agent = AgentProcess(captured, FAST_INTERVALS)
    request.addfinalizer(agent.stop)
    agents.append(agent)
    for agent in agents:
        agent.wait_ready(30)
    return hosts, agents
