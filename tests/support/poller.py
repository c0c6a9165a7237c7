"""The Poller in-process on a fake host, with a clock the test moves.

Moved out of test_poller.py (issue 27: test modules import helpers from tests/support/ only).
"""

from __future__ import annotations

import time

from agent.config import Config, Paths, Tools
from agent.poller import Poller
from tests.fakehost import FakeHost


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


def make_poller(host: FakeHost, clock=time.time, **extra) -> Poller:
    settings = dict(
        history=False, collectors=["smartctl"], tool_timeout_seconds=5.0, tool_kill_grace_seconds=0.2,
        tools=Tools(smartctl=str(host.bin / "smartctl"), shannon_status=str(host.bin / "shannon-status"),
                    hdparm=str(host.bin / "hdparm"), nvme=str(host.bin / "nvme")),
        paths=Paths(sysfs=str(host.sys), procfs=str(host.proc)),
    )
    settings.update(extra)
    config = Config(**settings)
    return Poller(config, clock=clock)
