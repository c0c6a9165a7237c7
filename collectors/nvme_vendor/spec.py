"""The nvme_vendor source as the registry lists it; its implementation
(collectors/nvme_vendor/source.py) and parsers are imported when it is built (issue 32: the
registry is read before the agent listens)."""

from __future__ import annotations

from collectors.source import NVME_CTRL, SUPPLEMENT, SourceSpec, lazy

NVME_DEVICES = (NVME_CTRL,)  # the helper's device family for /dev/nvmeN


SPEC = SourceSpec(
    name="nvme_vendor",
    help="NVMe vendor logs through nvme-cli (Intel smart-log-add: NAND bytes written, write amplification)",
    interval=300.0,
    build=lazy("collectors.nvme_vendor.source", "NvmeVendorSource"),
    role=SUPPLEMENT,
    tools={"nvme": ("nvme", "nvme")},
    devices=NVME_DEVICES,
    helper=lazy("collectors.nvme_vendor.source", "helper_rule"),
    reads_targets=True,
    priority=30,
)
