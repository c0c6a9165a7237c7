"""deploy/install.sh into a temporary root (``--root``): twice gives the same tree, an edited
config survives, uninstall removes what install put there. It installs from a copy of the
checkout, so edits in the work tree during the run cannot change the result.

The install builds ssdfleet's wheel with pip's build isolation, so pip fetches setuptools from
the package index (the only network use); ``--no-deps`` keeps the dependencies out, so the
staged virtualenv holds ssdfleet alone. A staged tree is never started: its virtualenv refers to
its staged path.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import Dict, Tuple

import pytest
import yaml
from pydantic import BaseModel

from agent.config import Config, EnduranceRule, WriteCacheRule, load_config
from tests.fakehost import ROOT

INSTALL = ROOT / "deploy" / "install.sh"
PREFIX = "/srv/ssdfleet"  # not the default, to check the units follow --prefix


@pytest.fixture
def checkout(tmp_path) -> Path:
    """A copy of the checkout to install from, so a file edited in the work tree while the test
    runs cannot make the two installs differ."""
    copy = tmp_path / "checkout"
    skip = shutil.ignore_patterns(".git", ".venv", "tests", "__pycache__", "*.egg-info", "build", "dist",
                                  ".ruff_cache", ".pytest_cache")
    shutil.copytree(ROOT, copy, ignore=skip)
    return copy


def run_install(root: Path, *extra: str, check: bool = True, source: Path = ROOT) -> subprocess.CompletedProcess:
    argv = ["sh", str(source / "deploy" / "install.sh"), "--root", str(root), "--prefix", PREFIX,
            "--python", sys.executable, "--no-deps", *extra]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    if check:
        assert r.returncode == 0, r.stdout + r.stderr
    return r


def tree(root: Path) -> Dict[str, Tuple]:
    """Every path under ``root`` with its type, permission bits and content hash (or link
    target). Byte code is left out: .pyc files embed source timestamps."""
    out: Dict[str, Tuple] = {}
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for name in dirs + files:
            if name.endswith(".pyc"):
                continue
            path = os.path.join(folder, name)
            rel = os.path.relpath(path, root)
            st = os.lstat(path)
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("link", os.readlink(path))
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = ("dir", stat.S_IMODE(st.st_mode))
            else:
                digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()
                out[rel] = ("file", stat.S_IMODE(st.st_mode), digest)
    return out


def test_install_twice_then_uninstall(tmp_path, checkout):
    root = tmp_path / "root"
    root.mkdir()
    checkout_before = tree(checkout)

    def install(*args: str, check: bool = True) -> subprocess.CompletedProcess:
        return run_install(root, *args, check=check, source=checkout)

    first = install()
    tree1 = tree(root)
    dest = root / PREFIX.lstrip("/")
    # The console script runs the virtualenv's Python, and the code is this checkout's.
    script = dest / "bin" / "ssdfleet"
    assert os.access(script, os.X_OK)
    assert script.read_text().splitlines()[0] == f"#!{dest}/bin/python"
    site = next((dest / "lib").glob("python3.*/site-packages"))
    for module in ("agent/privhelper.py", "agent/cli.py", "collectors/smartctl/json_report.py",
                   "collectors/smartctl/data/drivedb.h"):
        assert (site / module).read_bytes() == (checkout / module).read_bytes(), module
    assert not list(site.glob("ssdfleet-*.dist-info/direct_url.json")), "temporary paths recorded"
    # Data files ship too: the simulator's real tool layouts (ssdfleet agent --simulate).
    layouts = sorted(p.name for p in (checkout / "simulator/layouts").iterdir())
    assert sorted(p.name for p in (site / "simulator/layouts").iterdir()) == layouts
    version = subprocess.run([str(dest / "bin" / "python"), "-c", "import agent; print(agent.__version__)"],
                             capture_output=True, text=True, timeout=60, cwd=str(tmp_path))
    assert version.stdout.strip() == "0.1.0", version.stderr
    # Units point at the prefix; config from the example, private to root and the group.
    for unit in ("ssdfleet-agent.service", "ssdfleet-probe-helper.service"):
        text = (root / "etc/systemd/system" / unit).read_text()
        assert f"ExecStart={PREFIX}/bin/ssdfleet " in text and "/opt/ssdfleet/bin" not in text
        assert tree1[f"etc/systemd/system/{unit}"][1] == 0o644
    config = root / "etc/ssdfleet/config.yml"
    assert config.read_bytes() == (checkout / "deploy/config.example.yml").read_bytes()
    assert tree1["etc/ssdfleet/config.yml"][1] == 0o640 and tree1["etc/ssdfleet"][1] == 0o750
    assert load_config(str(config)).probe_helper_socket
    assert (root / "etc/sysusers.d/ssdfleet.conf").exists()
    assert not (root / "etc/passwd").exists(), "no user is created under --root"
    assert "wrote" in first.stdout
    # The build happened in a copy: nothing new in the checkout.
    assert tree(checkout) == checkout_before

    # Second run: the same tree, byte for byte (apart from byte code).
    second = install()
    assert "keeping existing" in second.stdout
    tree2 = tree(root)
    assert tree2 == tree1, sorted(k for k in set(tree1) | set(tree2) if tree1.get(k) != tree2.get(k))

    # An edited config survives a reinstall and an uninstall.
    config.write_text(config.read_text() + "# edited by the operator\n")
    install()
    assert config.read_text().endswith("# edited by the operator\n")
    after_edit = tree(root)
    assert {k for k in after_edit if after_edit[k] != tree1.get(k)} == {"etc/ssdfleet/config.yml"}

    # The installed uninstaller needs no checkout (run from elsewhere, the checkout hidden).
    uninstaller = dest / "bin" / "ssdfleet-uninstall"
    assert os.access(uninstaller, os.X_OK)
    removed = subprocess.run([str(uninstaller)], capture_output=True, text=True, timeout=120,
                             cwd=str(tmp_path), env={"PATH": "/usr/bin:/bin"})
    assert removed.returncode == 0, removed.stdout + removed.stderr
    assert "keeping" in removed.stdout and "edited" in removed.stdout
    assert set(tree(root)) == {"etc", "etc/ssdfleet", "etc/ssdfleet/config.yml"}

    install("--uninstall", "--purge")
    assert tree(root) == {}


@pytest.mark.parametrize("prefix, message", [
    ("relative/dir", "absolute path"),
    ("/opt/ss dfleet", "may hold only"),
    ("/opt/x;rm -rf", "may hold only"),
    ("/", "may hold only"),
])
def test_bad_prefix_is_refused(tmp_path, prefix, message):
    r = subprocess.run(["sh", str(INSTALL), "--root", str(tmp_path), "--prefix", prefix],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and message in r.stderr, r.stderr
    assert list(tmp_path.iterdir()) == []


def test_unknown_option_is_refused(tmp_path):
    r = subprocess.run(["sh", str(INSTALL), "--root", str(tmp_path), "--frobnicate"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "unknown option: --frobnicate" in r.stderr


def test_foreign_directories_are_left_alone(tmp_path):
    """Neither install nor uninstall touches a prefix that is not an ssdfleet virtualenv."""
    foreign = tmp_path / PREFIX.lstrip("/")
    foreign.mkdir(parents=True)
    (foreign / "precious.txt").write_text("keep me")
    r = run_install(tmp_path, check=False)
    assert r.returncode != 0 and "is not a virtualenv; not touching it" in r.stderr
    r = run_install(tmp_path, "--uninstall")
    assert "does not look like an ssdfleet virtualenv" in r.stdout
    assert (foreign / "precious.txt").read_text() == "keep me"


def test_example_config_covers_every_key():
    """deploy/config.example.yml loads, names every Config key (nested ones too), and holds
    the defaults except for the two keys the systemd units rely on."""
    path = ROOT / "deploy" / "config.example.yml"
    text = path.read_text()
    loaded = load_config(str(path))
    data = yaml.safe_load(text)
    for name, field in Config.model_fields.items():
        assert name in data, f"{name} missing from the example"
        sub = field.annotation
        if isinstance(sub, type) and issubclass(sub, BaseModel):
            assert set(data[name]) == set(sub.model_fields), name
    # List entries (write_cache_rules, endurance) are shown in comments: every field named there.
    for model in (WriteCacheRule, EnduranceRule):
        for name in model.model_fields:
            assert re.search(rf"^#\s+(- )?{name}:", text, re.M), f"{model.__name__}.{name} not shown"
    differs = {k for k in Config.model_fields if getattr(loaded, k) != getattr(Config(), k)}
    assert differs == {"state_dir", "probe_helper_socket"}
