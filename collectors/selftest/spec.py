"""The selftest source as the registry lists it: its settings (collectors/selftest/schedule.py),
the device names its commands may name, and its spec. The scheduler, the status parser and the
view are imported when it is built or shown (issue 32: the registry is read before the agent
listens)."""

from __future__ import annotations

from collectors.selftest import schedule as sched
from collectors.smartctl.spec import BUS, CCISS, THREEWARE
from collectors.source import HOST, NVME_CTRL, NVME_NS, SD, SG, HostView, SourceSpec, lazy

DEVICES = (SD, SG, NVME_CTRL, NVME_NS, BUS, CCISS, THREEWARE)


SPEC = SourceSpec(
    name="selftest",
    help="opt-in self-test scheduler: short tests daily, long weekly, one drive at a time, never on a busy "
         "or sleeping drive (off until selftest.enabled)",
    interval=60.0,
    build=lazy("collectors.selftest.source", "SelfTestSource"),
    role=HOST,
    tools={"smartctl": ("smartctl", "smartctl")},
    settings=sched.SelfTestSettings,
    devices=DEVICES,
    helper=lazy("collectors.selftest.source", "helper_rule"),
    reads_targets=True,
    active=lambda settings: bool(settings is not None and settings.enabled),
    host_view=HostView(
        families=lazy("collectors.selftest.view", "families"),
        api=lazy("collectors.selftest.view", "api"),
        status_heading="self-test scheduler:",
        status_lines=lazy("collectors.selftest.view", "status_lines"),
        page=lazy("collectors.selftest.view", "page_section"),
    ),
    priority=96,
)
