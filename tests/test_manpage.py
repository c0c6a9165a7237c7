"""ssdfleet(1) (agent/manpage.py): every command and every option of the parser is in the page,
and the roff is well formed enough for man to render it without a warning."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from agent import __version__
from agent.cli import build_parser
from agent.manpage import _subcommands, render, roff


def test_every_command_and_option_is_documented():
    page = render()
    assert f'"ssdfleet {__version__}"' in page.splitlines()[0]
    parser = build_parser()
    for sub in _subcommands(parser):
        for name, child in sub.choices.items():
            assert f".SS ssdfleet {roff(name)}" in page, name
            for action in child._actions:
                for option in action.option_strings:
                    assert f"\\fB{roff(option)}\\fR" in page, f"{name} {option}"


def test_roff_escapes():
    assert roff("--config") == "\\-\\-config"
    assert roff(".hidden") == "\\&.hidden"
    assert roff("a\\b") == "a\\eb"


def test_man_renders_it_cleanly(tmp_path):
    man = shutil.which("man")
    if man is None:
        pytest.skip("man not installed (Debian package man-db); tests/test_packages.py reads the installed page")
    path = tmp_path / "ssdfleet.1"
    path.write_text(render())
    r = subprocess.run([man, "--warnings", "-l", str(path)], capture_output=True, text=True, timeout=60,
                       env={"MANWIDTH": "100", "PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8"})
    assert r.returncode == 0 and "ssdfleet collect" in r.stdout, r.stderr
    assert not r.stderr.strip(), r.stderr
