"""Shared test helpers.

Fixture files are real tool output copied from ../shared/fixtures with their PROVENANCE rows.
Tests load them through :func:`fixture_path` / :func:`read_fixture`, which records every file
used so that ``test_fixtures_inventory.py`` can prove each committed fixture is loaded by a test.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

_USED = set()


def fixture_path(relative: str) -> Path:
    """Path of a fixture file (relative to tests/fixtures), recorded as used."""
    path = FIXTURES / relative
    if not path.exists():
        raise FileNotFoundError(f"fixture {relative} is not in tests/fixtures")
    _USED.add(path.relative_to(FIXTURES).as_posix())
    return path


def read_fixture(relative: str) -> bytes:
    return fixture_path(relative).read_bytes()


def fixture_files(folder: str, suffix: str = ""):
    """All fixture files under a folder (recorded as used), sorted."""
    base = FIXTURES / folder
    out = []
    for p in sorted(base.rglob("*")):
        if p.is_file() and p.name.endswith(suffix) and p.name != "PROVENANCE.tsv":
            out.append(fixture_path(p.relative_to(FIXTURES).as_posix()))
    return out


def used_fixtures():
    return set(_USED)


@pytest.fixture
def fixtures_dir() -> Path:
    return FIXTURES


# Fixtures more than one test module uses, defined in tests/support/ and registered here so a
# module takes them as arguments without importing them.
from tests.support.tls import pki  # noqa: E402, F401 (the test CA and certificates, session-wide)

# Tests that install, upgrade and remove packages as root (in scratch roots of their own, but
# with the machine's dpkg, apt or rpm and its /dev) run only when asked: SSDFLEET_HOST_TESTS=1
# (CI's package job sets it) or ``-m host_changing``. Everywhere else they are skipped and say
# how to run them.
HOST_TESTS_ENV = "SSDFLEET_HOST_TESTS"


def host_tests_wanted(config) -> bool:
    return os.environ.get(HOST_TESTS_ENV) == "1" or "host_changing" in (config.getoption("markexpr", "") or "")


def pytest_collection_modifyitems(config, items):
    if host_tests_wanted(config):
        return
    skip = pytest.mark.skip(reason=f"changes packages on this machine as root: set {HOST_TESTS_ENV}=1 "
                                   "(or -m host_changing) to run it")
    for item in items:
        if item.get_closest_marker("host_changing") is not None:
            item.add_marker(skip)


def pytest_configure(config):
    config.addinivalue_line("markers", "host_changing: installs or removes packages as root; runs only with "
                            f"{HOST_TESTS_ENV}=1 or -m host_changing (tests/conftest.py)")
    os.environ.setdefault("LC_ALL", "C")
    # pytest loads GNU readline, which puts COLUMNS and LINES (80x24) into the process
    # environment behind os.environ's back; child processes (ssdfleet status) would inherit
    # a terminal width that no terminal has. Tests that want a width set it themselves.
    for name in ("COLUMNS", "LINES"):
        os.environ.pop(name, None)
        os.unsetenv(name)


def all_fixture_files():
    """Every committed fixture file (relative to tests/fixtures), PROVENANCE tables excepted."""
    return sorted(
        p.relative_to(FIXTURES).as_posix()
        for p in FIXTURES.rglob("*")
        if p.is_file() and p.name != "PROVENANCE.tsv" and "__pycache__" not in p.parts
    )


def host_root() -> Path:
    """The machine's root; SSDFLEET_HOST_ROOT names a fake one (tests/test_package_hoststate.py)."""
    return Path(os.environ.get("SSDFLEET_HOST_ROOT") or "/")


def pytest_sessionstart(session):
    """What the suite must leave as it is on this machine (tests/hoststate.py), read first."""
    from tests import hoststate

    session.config._ssdfleet_host_before = hoststate.snapshot(host_root())


def check_host_unchanged(session) -> None:
    """Fails the run when the machine's ssdfleet record, user, group, /var/lib/ssdfleet or
    /etc/ssdfleet differ from the start of the session: tests use roots of their own."""
    from tests import hoststate

    before = getattr(session.config, "_ssdfleet_host_before", None)
    if before is None:
        return
    found = hoststate.changes(before, hoststate.snapshot(host_root()))
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if found:
        if reporter:
            reporter.write_line("the test session changed this machine:", red=True)
            for line in found:
                reporter.write_line(f"  {line}")
        session.exitstatus = 1
    elif reporter:
        reporter.write_line("host unchanged: " + "; ".join(f"{k}: {hoststate.summary(v)}" for k, v in before.items()))


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    """pytest-xdist, on the controller: a worker is done; add the fixtures its tests loaded."""
    _USED.update(getattr(node, "workeroutput", {}).get("ssdfleet_used_fixtures", ()))


def pytest_sessionfinish(session, exitstatus):
    """The host check (above); then, with SSDFLEET_CHECK_FIXTURES=1 (CI runs the whole suite
    so), fail the run when a committed fixture was not loaded by any test: a fixture nobody
    reads proves nothing."""
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        # A pytest-xdist worker ran part of the suite: the fixtures it loaded go to the
        # controller (pytest_testnodedown), which checks the host and the fixtures once.
        workeroutput["ssdfleet_used_fixtures"] = sorted(_USED)
        return
    check_host_unchanged(session)
    if os.environ.get("SSDFLEET_CHECK_FIXTURES") != "1" or exitstatus != 0:
        return
    unused = [f for f in all_fixture_files() if f not in _USED]
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if unused:
        if reporter:
            reporter.write_line(f"fixtures loaded by no test ({len(unused)}):", red=True)
            for f in unused[:50]:
                reporter.write_line(f"  {f}")
        session.exitstatus = 1
    elif reporter:
        reporter.write_line(f"fixtures: all {len(all_fixture_files())} committed files were loaded by a test")
