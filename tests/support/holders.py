"""A fake zpool executable for the holders tests.

Moved out of test_holders.py (issue 27: test modules import helpers from tests/support/ only).
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from tests.fakehost import FakeHost

_FAKE_ZPOOL = """#!/bin/sh
# fake zpool: replays a captured `zpool status -P` ({root})
printf '%s\\n' "zpool $*" >> "{root}/calls.log"
[ "$*" = "status -P" ] || {{ echo "fake zpool: unexpected arguments: $*" >&2; exit 2; }}
[ -f "{root}/zpool.sleep" ] && sleep "$(cat "{root}/zpool.sleep")"
cat "{root}/zpool.out"
exit "$(cat "{root}/zpool.rc")"
"""


def fake_zpool(host: FakeHost, output, exit_code: int = 0, sleep: Optional[float] = None) -> Path:
    """A fake ``zpool`` that answers ``status -P`` with ``output`` (a fixture path or text).
    (tests/fakehost.py keys its responses by the last argument, which for ``-P`` is an option.)"""
    root = host.root / "zpool"
    root.mkdir(exist_ok=True)
    data = output.read_bytes() if isinstance(output, Path) else output.encode()
    (root / "zpool.out").write_bytes(data)
    (root / "zpool.rc").write_text(str(exit_code))
    if sleep is None:
        (root / "zpool.sleep").unlink(missing_ok=True)
    else:
        (root / "zpool.sleep").write_text(str(sleep))
    tool = host.bin / "zpool"
    tool.write_text(_FAKE_ZPOOL.format(root=root))
    tool.chmod(0o755)
    return tool
