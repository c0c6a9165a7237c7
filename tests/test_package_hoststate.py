"""The check that the suite leaves the machine as it found it (tests/hoststate.py, run by
tests/conftest.py at the start and the end of every session) notices each kind of change, on
a fake root made here: the dpkg record, the user, the group, a new, changed or removed file
under /var/lib/ssdfleet or /etc/ssdfleet, a changed mode."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests import hoststate
from tests.fakehost import ROOT

STATUS = """Package: ssdfleet
Status: install ok installed
Priority: optional
Section: admin
Maintainer: ssdfleet maintainers <maintainers@ssdfleet.invalid>
Architecture: amd64
Version: 0.1.0-1
Description: SSD health agent
"""


def fake_root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    (root / "etc").mkdir(parents=True)
    (root / "var/lib/dpkg").mkdir(parents=True)
    (root / "var/lib/dpkg/status").write_text("")
    (root / "etc/passwd").write_text("root:x:0:0:root:/root:/bin/bash\n")
    (root / "etc/group").write_text("root:x:0:\n")
    return root


def test_an_untouched_root_has_no_changes(tmp_path):
    root = fake_root(tmp_path)
    before = hoststate.snapshot(root)
    assert before["/etc/ssdfleet"] is None and before["getent passwd ssdfleet"] is None
    assert hoststate.changes(before, hoststate.snapshot(root)) == []


def test_every_kind_of_change_is_reported(tmp_path):
    root = fake_root(tmp_path)
    before = hoststate.snapshot(root)
    (root / "var/lib/dpkg/status").write_text(STATUS)
    with open(root / "etc/passwd", "a") as f:
        f.write("ssdfleet:x:998:998:ssdfleet SSD health agent:/var/lib/ssdfleet:/usr/sbin/nologin\n")
    with open(root / "etc/group", "a") as f:
        f.write("ssdfleet:x:998:\n")
    (root / "etc/ssdfleet").mkdir()
    (root / "etc/ssdfleet/config.yml").write_text("listen_address: ':9877'\n")
    (root / "var/lib/ssdfleet").mkdir(parents=True)
    (root / "var/lib/ssdfleet/history.sqlite").write_bytes(b"SQLite format 3\0")
    found = hoststate.changes(before, hoststate.snapshot(root))
    print("\n".join(found))
    assert [line.split(":")[0] for line in found] == [
        "dpkg -l ssdfleet", "getent passwd ssdfleet", "getent group ssdfleet", "/var/lib/ssdfleet", "/etc/ssdfleet"]
    assert "install ok installed 0.1.0-1" in found[0]


def test_a_changed_file_or_mode_in_an_existing_tree_is_reported(tmp_path):
    root = fake_root(tmp_path)
    (root / "var/lib/ssdfleet").mkdir(parents=True)
    history = root / "var/lib/ssdfleet/history.sqlite"
    history.write_bytes(b"one")
    (root / "etc/ssdfleet").mkdir()
    config = root / "etc/ssdfleet/config.yml"
    config.write_text("a: 1\n")
    before = hoststate.snapshot(root)
    history.write_bytes(b"two")  # same size, other content
    found = hoststate.changes(before, hoststate.snapshot(root))
    assert len(found) == 1 and found[0].startswith("/var/lib/ssdfleet:") and "history.sqlite" in found[0]
    history.write_bytes(b"one")
    os.chmod(config, 0o600)
    found = hoststate.changes(before, hoststate.snapshot(root))
    assert len(found) == 1 and found[0].startswith("/etc/ssdfleet:") and "config.yml" in found[0]
    config.unlink()
    found = hoststate.changes(before, hoststate.snapshot(root))
    assert len(found) == 1 and "config.yml" in found[0]


def test_the_real_root_can_be_read():
    """The session check reads this machine as it is now, twice alike."""
    first = hoststate.snapshot()
    assert set(first) == {"dpkg -l ssdfleet", "getent passwd ssdfleet", "getent group ssdfleet",
                          "/var/lib/ssdfleet", "/etc/ssdfleet"}
    assert hoststate.changes(first, hoststate.snapshot()) == []


def test_a_session_that_changes_the_root_fails(tmp_path):
    """The hooks themselves: a pytest session (tests/conftest.py loaded as a plugin) whose only
    test passes but creates /etc/ssdfleet in the root given by SSDFLEET_HOST_ROOT exits 1 and
    says what changed; the same session leaving the root alone exits 0."""
    root = fake_root(tmp_path)
    tests = tmp_path / "session"
    tests.mkdir()
    (tests / "test_writes.py").write_text(
        "import os\n"
        "def test_passes():\n"
        "    if os.environ.get('WRITE') == '1':\n"
        f"        os.makedirs({str(root / 'etc/ssdfleet')!r})\n")
    argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "tests.conftest", "-q", str(tests)]
    env = {**os.environ, "SSDFLEET_HOST_ROOT": str(root)}
    env.pop("SSDFLEET_CHECK_FIXTURES", None)
    clean = subprocess.run(argv, cwd=str(ROOT), env=env, capture_output=True, text=True, timeout=300)
    assert clean.returncode == 0 and "host unchanged" in clean.stdout, clean.stdout + clean.stderr
    dirty = subprocess.run(argv, cwd=str(ROOT), env={**env, "WRITE": "1"}, capture_output=True, text=True, timeout=300)
    print(dirty.stdout)
    assert dirty.returncode == 1 and "1 passed" in dirty.stdout, dirty.stdout + dirty.stderr
    assert "the test session changed this machine" in dirty.stdout and "/etc/ssdfleet: was None" in dirty.stdout
