"""smartctl's "Unable to detect device type" is the cue to read once as SAT (issue 29, class 6).

seeds/000: smartctl says "/dev/dfa: Unable to detect device type / Please specify device type
with the -d option" for a PCIe card, and the OCZ RevoDrive of the same post showed no health
data until the user configured ``-d sat``. The smartctl source now tries ``-d sat`` once for a
device it was not told the type of, when smartctl says exactly that: one extra run, within the
tool timeout, remembered (SAT from then on if it read, never again if it did not) until the
device is forgotten. The fake smartctl below replays real output: smartctl 7.3's JSON for an
undetected device, and a SATA drive's report when asked with ``-d sat``."""

from __future__ import annotations

import stat

from agent.poller import Poller
from collectors.runner import ToolResult
from collectors.smartctl.source import SmartTarget, _undetected, interpret
from tests.conftest import fixture_path
from tests.fakehost import build_default_host

UNDETECTED_JSON = "write-cache/smartctl/vda_unable_to_detect.json"  # smartctl 7.3 --json, exit 1
SEED_TEXT = "fakehost/seed000__smartctl-A_dfa_unable_to_detect.txt"  # smartctl 6.2, seeds/000
SAT_REPORT = "smartctl-json/scrutiny__smart-ata.json"  # a SATA drive, serial 9RK1XXXX


def test_the_seeds_text_is_the_cue():
    text = fixture_path(SEED_TEXT).read_bytes()
    result = ToolResult(("smartctl", "-A", "/dev/dfa"), 2, text, b"", 0.1)
    assert _undetected(result)
    outcome, why = interpret(result, SmartTarget("/dev/dfa", None), use_json=False)
    assert outcome != "ok"
    assert not _undetected(ToolResult(("smartctl",), 2, b"/dev/sdz: No such device", b"", 0.1))


def _host(tmp_path, sat_works: bool):
    host = build_default_host(tmp_path / "db1")
    fake = host.tool("smartctl")
    real = fake.with_name("smartctl.replay")
    fake.rename(real)
    sat = fixture_path(SAT_REPORT) if sat_works else fixture_path(UNDETECTED_JSON)
    fake.write_text(
        "#!/bin/sh\n"
        'for a in "$@"; do last="$a"; done\n'
        'if [ "$last" != "/dev/sdq" ]; then exec "' + str(real) + '" "$@"; fi\n'
        f'printf "%s\\n" "smartctl $*" >> "{host.calls_log}"\n'
        'case " $* " in\n'
        f'  *" -d sat "*) cat "{sat}"; exit {0 if sat_works else 1} ;;\n'
        f'  *) cat "{fixture_path(UNDETECTED_JSON)}"; exit 1 ;;\n'
        "esac\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    return host


def _sdq_calls(host):
    return [c for c in host.calls() if c.endswith("/dev/sdq")]


def _poll(host, times: int):
    poller = Poller(host.config(smartctl={"devices": ["/dev/sdq"]}))
    try:
        for _ in range(times):
            poller.poll_once()
        return poller.snapshot()
    finally:
        poller.stop()


def test_undetected_device_is_read_as_sat_once_and_then_always(tmp_path):
    host = _host(tmp_path, sat_works=True)
    snapshot = _poll(host, 2)
    drive = next(d for d in snapshot.drives if d.reading.serial == "9RK1XXXX")
    assert drive.reading.device_type == "sat"
    assert "read as SAT" in drive.reading.extra["device_type_fallback"]
    calls = _sdq_calls(host)
    # first poll: auto, then sat; second poll: sat straight away
    assert ["-d sat" in c for c in calls] == [False, True, True], calls


def test_sat_that_fails_is_tried_once_only(tmp_path, caplog):
    host = _host(tmp_path, sat_works=False)
    snapshot = _poll(host, 3)
    assert not any(d.reading.serial == "9RK1XXXX" for d in snapshot.drives)
    calls = _sdq_calls(host)
    assert ["-d sat" in c for c in calls] == [False, True, False, False], calls
    said = [r.getMessage() for r in caplog.records if "/dev/sdq" in r.getMessage()]
    assert any("-d sat also failed" in m for m in said), said
