"""The whole /metrics of the default fake host, against a committed copy.

Written before the source registry refactor (issue 14) so the move can be shown to keep the
exposition: every family, label set and value the agent derives from the fake host's captured
tool output. Values that depend on the clock or the machine (poll times, durations, ages, the
build's Python and platform) are replaced by a placeholder. Regenerate after a deliberate change
with ``SSDFLEET_REGENERATE_GOLDEN=1 pytest tests/test_metrics_golden.py`` and review the diff.
"""

from __future__ import annotations

import os
import re

from agent.metrics import make_registry, render
from agent.poller import Poller
from tests.conftest import ROOT
from tests.fakehost import build_default_host

GOLDEN = ROOT / "tests" / "golden" / "metrics_default_host.txt"
# Families whose values are times, durations or ages, or describe the build machine.
_VOLATILE = re.compile(
    r"^(ssd_collector_duration_seconds|ssd_collector_last_run_timestamp_seconds|ssd_last_poll_timestamp_seconds"
    r"|ssd_data_age_seconds|ssd_snapshot_timestamp_seconds|ssd_exporter_build_info|ssd_process_\w+"
    r"|ssd_flag_since_timestamp_seconds|ssd_\w*_age_seconds|ssd_\w*timestamp\w*|python_\w+|process_\w+"
    # held while the machine has been up for less than history_clock_settle_seconds
    r"|ssd_history_retention_held)\b"
)


def _normalised(text: str) -> str:
    out = []
    for line in text.splitlines():
        if line.startswith("#"):
            out.append(line)
            continue
        if _VOLATILE.match(line):
            line = re.sub(r" [^ ]+$", " <volatile>", line)
            line = re.sub(r'(python|python_version|platform|version|revision)="[^"]*"', r'\1="<volatile>"', line)
        out.append(line)
    return "\n".join(sorted(set(out), key=out.index)) + "\n"


def test_default_host_metrics_match_the_golden_copy(tmp_path) -> None:
    host = build_default_host(tmp_path)
    poller = Poller(host.config())
    try:
        poller.poll_once()
        text = render(make_registry(poller.snapshot)).decode()
    finally:
        poller.stop()
    got = _normalised(text)
    if os.environ.get("SSDFLEET_REGENERATE_GOLDEN") == "1":
        GOLDEN.write_text(got)
    want = GOLDEN.read_text()
    missing = sorted(set(want.splitlines()) - set(got.splitlines()))
    extra = sorted(set(got.splitlines()) - set(want.splitlines()))
    assert not missing and not extra, "\n".join(["missing:"] + missing[:40] + ["new:"] + extra[:40])
