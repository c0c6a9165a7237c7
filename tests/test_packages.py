"""The .deb and .rpm (packaging/build.sh), built from a clean copy of the checkout, linted,
run and installed, none of it on this machine's own root.

- Built twice: this tree, and a "previous" build with the version lowered to ``X.Y.Z.dev0``
  (the second build reuses the libraries the first resolved: ``--deps-cache``).
- Read: contents, control files, sizes; ``lintian`` and ``rpmlint`` (their output is printed,
  their error counts must be 0); ``dpkg-parsechangelog`` on the changelog.
- The libraries: for each Python the packages are for, the payload's set meets every
  requirement that Python's environment markers select (3.9 and 3.10 get exceptiongroup); the
  resolver that works without the target interpreter gives 3.9 the same set.
- Run: for each of Python 3.9 to 3.13, ``ssdfleet agent`` from the extracted payload (the .rpm's
  for 3.9, the .deb's for the others) against the fake tools (tests/fakehost.py); /metrics
  passes ``promtool check metrics``; SIGTERM stops it with exit 0.
- The .deb installed, upgraded, removed and purged in a root of its own: an overlay of this
  machine's root (upper layer in tmp_path) in a private mount namespace, entered with nsenter
  and chroot. apt-get and dpkg run inside it, so the user, /etc/ssdfleet, /var/lib/ssdfleet and
  the dpkg record are made there; the real root never sees a write, and the mounts vanish with
  the namespace. A recording ``systemctl`` in the root and a /run/systemd/system there show the
  start, try-restart and stop that deb-systemd-invoke asks for, and that a policy-rc.d saying
  101 stops it.
- The .rpm is installed, upgraded and erased with ``rpm --root`` in the same kind of overlay,
  so its scriptlets run too; its commands run with a Python 3.9.

Root, dpkg, apt-get, nfpm (packaging/build.sh --install-tools), rpm, lintian, rpmlint, promtool,
unshare and nsenter are needed, and the five Pythons (pyenv or /usr/bin); without them the
tests skip, or fail under SSDFLEET_REQUIRE_TOOLS=1. tests/conftest.py checks at the end of the
session that this machine's ssdfleet record, user, /etc/ssdfleet and /var/lib/ssdfleet are as
they were.
"""

from __future__ import annotations

import glob
import gzip
import hashlib
import importlib.util
import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence

import pytest

from agent import __version__
from tests.fakehost import ROOT, build_default_host, free_port
from tests.promstack import skip_or_fail

# Serials in the fake host's fixtures (see tests/test_e2e_agent.py).
SERIALS = {"S3YZNB0KB00864E", "BTNH93710FS91P0B", "S466NX0M776250H", "006819246149b014"}
UNITS = ("ssdfleet-agent.service", "ssdfleet-probe-helper.service")
PREVIOUS = __version__ + ".dev0"
DEB_PREVIOUS = re.sub(r"\.dev0$", "~dev0", __version__ + ".dev0") + "-1"
DEB_CURRENT = __version__ + "-1"
# Which package carries each Python's libraries (packaging/build.sh DEB_PYTHONS, RPM_PYTHONS).
PAYLOAD_OF = {"3.9": "rpm", "3.10": "deb", "3.11": "deb", "3.12": "deb", "3.13": "deb"}
CONFFILES = ["/etc/default/ssdfleet", "/etc/ssdfleet/config.yml"]
# The .deb installed 58.8 MB when every Python had its own copy of every library.
DEB_INSTALLED_MAX_BYTES = 40e6
Runner = Callable[[List[str]], subprocess.CompletedProcess]


def run(argv: Sequence[str], check: bool = True, timeout: float = 600, **kw) -> subprocess.CompletedProcess:
    r = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL, **kw)
    if check:
        assert r.returncode == 0, f"{' '.join(map(str, argv))} exited {r.returncode}:\n{r.stdout}\n{r.stderr}"
    return r


def need(tool: str, package: str) -> str:
    path = shutil.which(tool)
    if path is None:
        skip_or_fail(f"{tool} not installed ({package})")
    return path


def need_root() -> None:
    if os.geteuid() != 0:
        skip_or_fail("installing packages in a scratch root needs root (mount namespaces, chroot)")


def find_nfpm() -> str:
    gopath = None
    if shutil.which("go"):
        r = subprocess.run(["go", "env", "GOBIN", "GOPATH"], capture_output=True, text=True, timeout=60)
        gobin, _, path = r.stdout.partition("\n")
        gopath = os.path.join(gobin.strip() or os.path.join(path.strip(), "bin"), "nfpm")
    for candidate in (os.environ.get("NFPM"), shutil.which("nfpm"), gopath):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    skip_or_fail("nfpm not installed (bash packaging/build.sh --install-tools)")
    raise AssertionError  # not reached


def find_python(version: str) -> Optional[str]:
    """A working CPython ``version`` (pyenv's builds, then /usr/bin and /usr/local/bin; pyenv's
    shims are left out: they may refuse to run)."""
    candidates = sorted(glob.glob(os.path.expanduser(f"~/.pyenv/versions/{version}.*/bin/python{version}")))
    candidates += [p for p in (f"/usr/bin/python{version}", f"/usr/local/bin/python{version}") if os.path.exists(p)]
    for candidate in candidates:
        r = subprocess.run([candidate, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                           capture_output=True, text=True, timeout=60)
        if r.returncode == 0 and r.stdout.strip() == version:
            return candidate
    return None


def load_pydeps():
    """packaging/pydeps.py as a module (the folder's name is the `packaging` library's)."""
    if "ssdfleet_pydeps" not in sys.modules:
        spec = importlib.util.spec_from_file_location("ssdfleet_pydeps", ROOT / "packaging" / "pydeps.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # dataclasses look their module up there
        spec.loader.exec_module(module)
    return sys.modules["ssdfleet_pydeps"]


def clean_copy(dest: Path) -> Path:
    """The files git tracks (what a fresh clone has; uncommitted edits included), else the tree
    without build output."""
    files = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True, timeout=60)
    if files.returncode == 0 and files.stdout:
        for rel in files.stdout.decode().split("\0"):
            if rel and (ROOT / rel).is_file():
                (dest / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(ROOT / rel, dest / rel)
    else:
        shutil.copytree(ROOT, dest, dirs_exist_ok=True, ignore=shutil.ignore_patterns(
            ".git", ".venv", "__pycache__", "*.egg-info", "build", "dist", ".*_cache"))
    return dest


@pytest.fixture(scope="module")
def packages(tmp_path_factory) -> Dict[str, Path]:
    """{"deb", "rpm", "deb-previous", "rpm-previous"}: built by packaging/build.sh from clean
    copies of the checkout, the previous ones with the version lowered."""
    nfpm = find_nfpm()
    need("dpkg-deb", "Debian package dpkg")
    base = tmp_path_factory.mktemp("packages")
    built: Dict[str, Path] = {}
    for kind, version in (("current", __version__), ("previous", PREVIOUS)):
        src = clean_copy(base / f"src-{kind}")
        if version != __version__:
            init = src / "agent" / "__init__.py"
            init.write_text(init.read_text().replace(f'"{__version__}"', f'"{version}"'))
            log = src / "CHANGELOG.md"
            log.write_text(log.read_text().replace(f"## {__version__} - ", f"## {version} - ", 1))
        out = base / f"dist-{kind}"
        start = time.monotonic()
        r = run(["bash", str(src / "packaging" / "build.sh"), "--out", str(out), "--deps-cache", str(base / "deps")],
                cwd=str(src), timeout=3000, env={**os.environ, "NFPM": nfpm})
        print(f"build {kind} ({version}): {time.monotonic() - start:.0f} s\n{r.stdout.strip()}")
        suffix = "" if kind == "current" else "-previous"
        (built["deb" + suffix],) = out.glob("ssdfleet_*.deb")
        (built["rpm" + suffix],) = out.glob("ssdfleet-*.rpm")
        # Nothing was written into the checkout the packages were built from.
        assert not [p for p in ("build", "dist", "ssdfleet.egg-info") if (src / p).exists()]
    return built


@pytest.fixture(scope="module")
def payloads(packages, tmp_path_factory) -> Dict[str, Path]:
    """{"deb", "rpm"}: the current packages' files, unpacked (dpkg-deb -x; rpm2archive and tar,
    which keeps nfpm's /-rooted names inside the directory)."""
    base = tmp_path_factory.mktemp("payloads")
    deb, rpm = base / "deb", base / "rpm"
    deb.mkdir()
    rpm.mkdir()
    run(["dpkg-deb", "-x", str(packages["deb"]), str(deb)])
    need("rpm2archive", "Debian package rpm2cpio")
    with open(packages["rpm"], "rb") as pkg:
        archive = subprocess.run(["rpm2archive", "-"], stdin=pkg, capture_output=True, timeout=300, check=True).stdout
    subprocess.run(["tar", "-xzf", "-", "-C", str(rpm)], input=archive, check=True, timeout=300)
    return {"deb": deb, "rpm": rpm}


# --------------------------------------------------------------------------- what is inside


def deb_paths(deb: Path) -> List[str]:
    out = run(["dpkg-deb", "-c", str(deb)]).stdout
    return [line.split(None, 5)[5].split(" -> ")[0].lstrip(".").rstrip("/") or "/" for line in out.splitlines()]


def base_control(deb: Path) -> Dict[str, str]:
    out: Dict[str, str] = {}
    for name in ("conffiles", "preinst", "postinst", "prerm", "postrm"):
        out[name] = run(["dpkg-deb", "--info", str(deb), name]).stdout
    return out


def test_deb_contents(packages, payloads):
    deb = packages["deb"]
    assert deb.name == f"ssdfleet_{DEB_CURRENT}_amd64.deb"
    info = run(["dpkg-deb", "-f", str(deb), "Version", "Depends", "Installed-Size"]).stdout
    print(info)
    assert f"Version: {DEB_CURRENT}" in info and "python3 (>= 3.10)" in info and "libc6 (>= 2." in info, info
    assert run(["dpkg-deb", "-f", str(packages["deb-previous"]), "Version"]).stdout.strip() == DEB_PREVIOUS
    installed = int(re.search(r"Installed-Size: (\d+)", info).group(1)) * 1024
    print(f"installed size: .deb {installed / 1e6:.1f} MB (58.8 MB when each Python had its own copy of everything)")
    assert installed < DEB_INSTALLED_MAX_BYTES
    paths = set(deb_paths(deb))
    for path in ("/usr/bin/ssdfleet", "/usr/lib/ssdfleet/app/agent/cli.py",
                 "/usr/lib/systemd/system/ssdfleet-agent.service",
                 "/usr/lib/systemd/system/ssdfleet-probe-helper.service", "/usr/lib/sysusers.d/ssdfleet.conf",
                 "/etc/ssdfleet/config.yml", "/etc/default/ssdfleet", "/var/lib/ssdfleet",
                 "/usr/share/ssdfleet/config.example.yml", "/usr/share/ssdfleet/prometheus/ssdfleet-alerts.yml",
                 "/usr/share/ssdfleet/prometheus/ssdfleet-recording.yml",
                 "/usr/share/ssdfleet/alertmanager/alertmanager.example.yml",
                 "/usr/share/ssdfleet/dashboards/ssdfleet-fleet.json", "/usr/share/man/man1/ssdfleet.1.gz",
                 "/usr/share/doc/ssdfleet/changelog.Debian.gz", "/usr/share/doc/ssdfleet/changelog.gz",
                 "/usr/share/doc/ssdfleet/copyright", "/usr/share/lintian/overrides/ssdfleet",
                 "/usr/lib/ssdfleet/deps/common/h11/__init__.py"):
        assert path in paths, path
    # The text format is the agent's own (collectors/families.py, issue 32): the library is not carried.
    assert not [p for p in paths if "/prometheus_client/" in p]
    for abi in ("cp310", "cp311", "cp312", "cp313"):
        assert f"/usr/lib/ssdfleet/deps/{abi}/pydantic_core" in paths, abi
    assert not [p for p in paths if "__pycache__" in p or p.endswith(".pyc")], "byte code is made on the host"
    with_control = base_control(deb)
    assert sorted(with_control["conffiles"].split()) == CONFFILES
    # The preinst creates the user from the same line as the sysusers file.
    sysusers = (ROOT / "deploy/systemd/ssdfleet.sysusers.conf").read_text().splitlines()[-1]
    assert f"echo '{sysusers}' | systemd-sysusers" in with_control["preinst"]
    assert "deb-systemd-helper" in with_control["postinst"] and "deb-systemd-invoke" in with_control["postinst"]
    unit = (payloads["deb"] / "usr/lib/systemd/system/ssdfleet-agent.service").read_text()
    assert "EnvironmentFile=-/etc/default/ssdfleet" in unit and " $SSDFLEET_AGENT_ARGS" in unit
    check_one_copy_of_each_library(payloads["deb"] / "usr/lib/ssdfleet/deps")


def check_one_copy_of_each_library(deps: Path) -> None:
    """Each version of a library is in the package once (the other Pythons reach it through
    deps/common or a symlink), unless it holds code compiled for one Python version."""
    real: Dict[str, List[Path]] = {}
    for info in deps.glob("*/*.dist-info"):
        if not info.is_symlink():
            real.setdefault(info.name, []).append(info.parent)
    for name, where in sorted(real.items()):
        print(f"{name}: {', '.join(sorted(p.name for p in where))}")
        if len(where) > 1:
            top = name.split("-")[0]
            assert all(glob.glob(str(d / top / "*.cpython-3*.so")) for d in where), f"{name} is in {where} alike"
    assert not list(deps.rglob("_yaml*.so")), "PyYAML's C accelerator (embedded libyaml) is left out"
    for obj in deps.rglob("*.so"):
        assert "not stripped" not in run(["file", "-b", str(obj)]).stdout, obj


def test_deb_lintian(packages, payloads, tmp_path):
    """lintian on the .deb: 0 errors (its output is printed); the changelog parses."""
    lintian = need("lintian", "Debian package lintian")
    r = run([lintian, "--tag-display-limit", "0", "--show-overrides", str(packages["deb"])], check=False,
            timeout=1200)
    lines = [line for line in r.stdout.splitlines() if re.match(r"^[EWIO]: ", line)]
    counts = {kind: sum(1 for line in lines if line.startswith(kind + ": ")) for kind in "EWIO"}
    print(r.stdout + r.stderr)
    print(f"lintian {run([lintian, '--version']).stdout.strip()}: {counts['E']} errors, {counts['W']} warnings, "
          f"{counts['I']} info, {counts['O']} overridden")
    assert r.returncode in (0, 1) and "internal error" not in r.stderr.lower(), r.stderr
    assert counts["E"] == 0, "\n".join(line for line in lines if line.startswith("E: "))
    changelog = tmp_path / "changelog.Debian"
    changelog.write_bytes(gzip.decompress((payloads["deb"] / "usr/share/doc/ssdfleet/changelog.Debian.gz").read_bytes()))
    parsed = run(["dpkg-parsechangelog", "-l", str(changelog)]).stdout
    assert f"Version: {DEB_CURRENT}" in parsed and "Distribution: unstable" in parsed, parsed


def cpio_inside(tmp_path: Path) -> Path:
    """A PATH entry whose cpio never writes outside its directory: nfpm names the .rpm's files
    /usr/..., and rpmlint unpacks with `rpm2cpio | cpio -id`, which would write them to /."""
    folder = tmp_path / "safe-cpio"
    folder.mkdir()
    (folder / "cpio").write_text(f"""#!/bin/sh
PATH=$(printf %s "$PATH" | tr ':' '\\n' | grep -vx '{folder}' | paste -sd: -)
exec cpio --no-absolute-filenames "$@"
""")
    (folder / "cpio").chmod(0o755)
    return folder


def test_rpmlint(packages, tmp_path):
    """rpmlint with packaging/rpmlint.toml (its filters say why): 0 errors, output printed."""
    rpmlint = os.environ.get("SSDFLEET_RPMLINT") or need("rpmlint", "Debian package rpmlint")
    env = {**os.environ, "PATH": f"{cpio_inside(tmp_path)}:{os.environ['PATH']}", "TMPDIR": str(tmp_path)}
    r = run([rpmlint, "-c", str(ROOT / "packaging/rpmlint.toml"), str(packages["rpm"])], check=False, env=env,
            cwd=str(tmp_path), timeout=1200)
    print(r.stdout + r.stderr)
    summary = re.search(r"(\d+) errors?, (\d+) warnings?", r.stdout)
    assert summary, r.stdout + r.stderr
    errors, warnings = int(summary.group(1)), int(summary.group(2))
    print(f"rpmlint: {errors} errors, {warnings} warnings")
    assert errors == 0, "\n".join(line for line in r.stdout.splitlines() if ": E: " in line)
    # rpmlint checked the files it unpacked (an ELF seen means they were where it looked).
    assert "no-binary" not in r.stdout
    assert not os.path.lexists("/usr/lib/ssdfleet") and not os.path.lexists("/etc/sysconfig/ssdfleet")


# --------------------------------------------------------------------------- the libraries


def requirements(payload: Path) -> List[str]:
    """ssdfleet's own Requires-Dist (no extras), from the packaged dist-info."""
    (meta,) = payload.glob("usr/lib/ssdfleet/app/ssdfleet-*.dist-info/METADATA")
    return [line.split(":", 1)[1].strip() for line in meta.read_text().splitlines()
            if line.startswith("Requires-Dist:") and "extra ==" not in line]


def seen_by(pydeps, payload: Path, version: str) -> Dict[str, object]:
    """The distributions the launcher puts on sys.path for one Python: its set, then common."""
    deps = payload / "usr/lib/ssdfleet/deps"
    dists = dict(pydeps.read_dists(deps / "common"))
    dists.update(pydeps.read_dists(deps / f"cp{version.replace('.', '')}"))
    return dists


@pytest.mark.parametrize("version", list(PAYLOAD_OF))
def test_payload_has_what_each_pythons_markers_need(payloads, version):
    """The packaged set for each Python meets every requirement its environment markers select,
    read from that interpreter (`pydeps.py environment`): the bug was anyio's
    `exceptiongroup; python_version < "3.11"` left out for 3.9 and 3.10."""
    python = find_python(version)
    if python is None:
        skip_or_fail(f"no Python {version} here (pyenv or /usr/bin/python{version})")
    pydeps = load_pydeps()
    env = json.loads(run([python, str(ROOT / "packaging/pydeps.py"), "environment"]).stdout)
    payload = payloads[PAYLOAD_OF[version]]
    dists = seen_by(pydeps, payload, version)
    top = requirements(payload)
    print(f"Python {env['python_full_version']}: {len(dists)} distributions: "
          + ", ".join(f"{d.name} {d.version}" for d in sorted(dists.values(), key=lambda d: d.name)))
    assert pydeps.problems(top, dists, env) == []
    assert set(pydeps.needed(top, dists, env)) == set(dists), "nothing this Python does not need"
    # anyio (through starlette, until issue 32 took FastAPI out) was the dependency with such a
    # marker; the check above covers any other.
    assert ("exceptiongroup" in dists) == ("anyio" in dists and version in ("3.9", "3.10"))


def test_resolver_without_the_target_python_gives_39_the_same_set(payloads, tmp_path):
    """A build machine without Python 3.9 resolves with its own pip and evaluates the markers
    for 3.9 (pydeps.py --resolver markers): the same distributions as the packaged ones, which
    3.9 itself resolved, exceptiongroup among them."""
    pydeps = load_pydeps()
    reqs = tmp_path / "requirements.txt"
    reqs.write_text("".join(line + "\n" for line in requirements(payloads["rpm"])))
    summary = tmp_path / "cp39.json"
    r = run([sys.executable, str(ROOT / "packaging/pydeps.py"), "resolve", "--python-version", "3.9",
             "--requirements", str(reqs), "--target", str(tmp_path / "cp39"), "--resolver", "markers",
             "--platform", "manylinux_2_28_x86_64", "--platform", "manylinux_2_17_x86_64",
             "--platform", "manylinux2014_x86_64", "--summary", str(summary)],
            env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}, timeout=1800)
    print(r.stdout)
    resolved = json.loads(summary.read_text())["distributions"]
    packaged = {name: d.version for name, d in seen_by(pydeps, payloads["rpm"], "3.9").items()}
    print("resolved by markers:", resolved, "\npackaged (3.9 itself):", packaged)
    if "anyio" in resolved:  # the marker pip alone leaves out (no such dependency since issue 32)
        assert "exceptiongroup" in resolved and "needs exceptiongroup" in r.stdout, "pip alone leaves it out"
    assert set(resolved) == set(packaged)


# --------------------------------------------------------------------------- the agent, per Python


def scrape_until_complete(url: str, proc: subprocess.Popen, log: Path, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    text = ""
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"the agent exited {proc.returncode}:\n{log.read_text(errors='replace')}"
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                text = r.read().decode()
            if all(f'serial="{s}"' in text for s in SERIALS):
                return text
        except OSError:
            pass
        time.sleep(0.5)
    raise AssertionError(f"no complete scrape in {timeout} s:\n{text[-2000:]}\n{log.read_text(errors='replace')}")


@pytest.mark.parametrize("version", list(PAYLOAD_OF))
def test_agent_from_the_package_payload(payloads, version, tmp_path):
    """`ssdfleet agent` from the built package's files, run by that Python as the distribution's
    python3 would run it (-I -S: the package's libraries only): /metrics is complete and passes
    promtool, and SIGTERM ends it with exit 0."""
    python = find_python(version)
    if python is None:
        skip_or_fail(f"no Python {version} here (pyenv or /usr/bin/python{version})")
    promtool = need("promtool", "Debian package prometheus")
    host = build_default_host(tmp_path / "host")
    port = free_port()
    payload = payloads[PAYLOAD_OF[version]]
    log = tmp_path / "agent.log"
    argv = [python, "-I", "-S", str(payload / "usr/bin/ssdfleet"), "agent", "--listen-address",
            f"127.0.0.1:{port}", *host.config_args()]
    start = time.monotonic()
    with open(log, "wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, cwd=str(tmp_path), start_new_session=True,
                                env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL": "C"})
    try:
        text = scrape_until_complete(f"http://127.0.0.1:{port}/metrics", proc, log, timeout=180)
        ready = time.monotonic() - start
        check = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True, timeout=120)
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    build = re.search(r'^ssd_exporter_build_info\{[^}]*python="([^"]+)"', text, re.M)
    series = sum(1 for line in text.splitlines() if line and not line.startswith("#"))
    print(f"Python {version} ({python}) from the .{PAYLOAD_OF[version]}: complete scrape after {ready:.1f} s, "
          f"{series} series, promtool check metrics exit {check.returncode} {check.stdout.strip()}"
          f"{check.stderr.strip()}, SIGTERM -> exit {code}")
    assert check.returncode == 0, check.stdout + check.stderr
    assert build and build.group(1).startswith(version + "."), build
    assert code == 0, log.read_text(errors="replace")
    assert "Traceback" not in log.read_text(errors="replace")


def test_python_version_without_dependencies_is_refused(payloads, tmp_path):
    """A Python the package has no set for gets a plain message, not a traceback."""
    extract = tmp_path / "x"
    shutil.copytree(payloads["deb"], extract, symlinks=True)
    shutil.rmtree(extract / f"usr/lib/ssdfleet/deps/cp{sys.version_info[0]}{sys.version_info[1]}")
    r = subprocess.run([sys.executable, str(extract / "usr/bin/ssdfleet"), "--version"], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 70 and "no dependencies for Python" in r.stderr and "cp310" in r.stderr, r.stderr
    assert "common" not in r.stderr.split("built for:")[1]


# --------------------------------------------------------------------------- installed, in a root of its own


class PrivateRoot:
    """A copy-on-write root of this machine: an overlay of / whose upper layer is in ``base``,
    mounted with /proc, /dev and an empty /tmp and /run in a private mount namespace that a
    sleeping process holds. Commands run in it through nsenter and chroot; its files are read
    through /proc/PID/root. The machine's own root never sees a write, and the mounts go when
    the holder ends (close(), or the holder's death)."""

    def __init__(self, base: Path, binds: Sequence[Path] = ()) -> None:
        self.upper, self.work, self.merged = base / "upper", base / "work", base / "merged"
        for d in (self.upper, self.work, self.merged):
            d.mkdir(parents=True)
        m = self.merged
        script = [f"mount -t overlay overlay -o lowerdir=/,upperdir={self.upper},workdir={self.work} {m}",
                  f"mount -t proc proc {m}/proc", f"mount --rbind /dev {m}/dev",
                  f"mount -t tmpfs -o mode=1777 tmpfs {m}/tmp", f"mount -t tmpfs -o mode=0755 tmpfs {m}/run"]
        script += [f"mkdir -p {m}{b} && mount --bind {b} {m}{b}" for b in binds]
        self.holder = subprocess.Popen(
            ["unshare", "--mount", "--propagation", "private", "sh", "-c",
             "set -e; " + "; ".join(script) + "; echo ready; exec sleep 86400"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
        line = self.holder.stdout.readline()
        if line.strip() != "ready":
            self.close()
            raise AssertionError(f"could not make the scratch root: {line}{self.holder.stderr.read()}")

    def argv(self, argv: Sequence[str]) -> List[str]:
        return ["nsenter", "-t", str(self.holder.pid), "-m", "chroot", str(self.merged), *argv]

    def run(self, argv: Sequence[str], check: bool = True, timeout: float = 600,
            env: Optional[Dict[str, str]] = None) -> subprocess.CompletedProcess:
        base = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL": "C",
                "DEBIAN_FRONTEND": "noninteractive"}
        return run(self.argv(argv), check=check, timeout=timeout, env={**base, **(env or {})})

    def path(self, inside: str) -> Path:
        return Path(f"/proc/{self.holder.pid}/root{self.merged}{inside}")

    def changed(self) -> List[str]:
        """What differs from this machine (the overlay's upper layer), as paths in the root."""
        return sorted("/" + p.relative_to(self.upper).as_posix() for p in self.upper.rglob("*"))

    def close(self) -> None:
        if self.holder.poll() is None:
            self.holder.terminate()
            self.holder.wait(timeout=60)


def traces(root: PrivateRoot) -> List[str]:
    """Everything in the root that is ssdfleet's: changed paths named *ssdfleet*, the user and
    group, the dpkg record."""
    found = [p for p in root.changed() if "ssdfleet" in p.rsplit("/", 1)[-1]]
    for db in ("/etc/passwd", "/etc/group", "/etc/shadow", "/etc/gshadow"):
        found += [f"{db}: {line.split(':')[0]}" for line in root.path(db).read_text().splitlines()
                  if line.startswith("ssdfleet:")]
    status = root.run(["dpkg-query", "-W", "-f", "${Status}", "ssdfleet"], check=False)
    if status.returncode == 0 and "not-installed" not in status.stdout:
        found.append(f"dpkg: ssdfleet {status.stdout.strip()}")
    return sorted(set(found))


def check_commands(run_ssdfleet: Runner, host, version: str, label: str) -> None:
    """--version, every command's --help, and one collect --json against the fake tools."""
    out = run_ssdfleet(["--version"]).stdout.strip()
    assert out == f"ssdfleet {version}", out
    for command in ("agent", "collect", "status", "probe-helper"):
        assert f"usage: ssdfleet {command}" in run_ssdfleet([command, "--help"]).stdout
    collected = json.loads(run_ssdfleet(["collect", "--json", *host.config_args()]).stdout)
    serials = {d["serial"] for d in collected["drives"]}
    assert SERIALS <= serials, serials
    print(f"collect --json ({label}): {len(collected['drives'])} drives, serials {sorted(serials)}")


FAKE_SYSTEMCTL = """#!/bin/sh
# Records what the maintainer scripts ask of systemd; enable/disable/is-enabled go on to the
# real systemctl, offline, which reads and writes the links in this root.
echo "systemctl $*" >> /var/log/systemctl-calls.log
case " $* " in
  *" enable "*|*" disable "*|*" preset "*|*" is-enabled "*) SYSTEMD_OFFLINE=1 exec {real} "$@" ;;
esac
exit 0
"""


def systemd_running(root: PrivateRoot, running: bool) -> None:
    """/run/systemd/system in the root says systemd runs (the maintainer scripts then ask it)."""
    marker = root.path("/run/systemd/system")
    if running:
        marker.mkdir(parents=True, exist_ok=True)
    elif marker.exists():
        marker.rmdir()


def systemctl_calls(root: PrivateRoot) -> List[str]:
    log = root.path("/var/log/systemctl-calls.log")
    calls = log.read_text().splitlines()
    log.write_text("")
    return calls


def make_history(root: PrivateRoot, host, tmp_path: Path) -> str:
    """The installed agent runs in the root against the fake tools until its history database
    holds a poll; returns the file's sha256 once the agent has stopped."""
    port = free_port()
    args = list(host.config_args())
    args[args.index("--state-dir") + 1] = "/var/lib/ssdfleet"
    log_path = tmp_path / "installed-agent.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(root.argv(["/usr/bin/ssdfleet", "agent", "--listen-address", f"127.0.0.1:{port}",
                                           *args]), stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL": "C"})
    history = root.path("/var/lib/ssdfleet/history.sqlite")
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            assert proc.poll() is None, log_path.read_text()
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/drives", timeout=5) as r:
                    drives = json.dumps(json.load(r))
                if history.exists() and all(s in drives for s in SERIALS):
                    break
            except OSError:
                pass
            time.sleep(0.5)
        else:
            raise AssertionError("the installed agent made no history:\n" + log_path.read_text())
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 0, log_path.read_text()
    # Read from a copy: opening the file in place could make SQLite write next to it.
    copy = tmp_path / "history-copy"
    copy.mkdir()
    for suffix in ("", "-wal"):
        if os.path.exists(f"{history}{suffix}"):
            shutil.copyfile(f"{history}{suffix}", copy / f"history.sqlite{suffix}")
    with sqlite3.connect(str(copy / "history.sqlite")) as db:
        tables = [r[0] for r in db.execute("select name from sqlite_master where type='table'")]
        rows = sum(db.execute(f'select count(*) from "{t}"').fetchone()[0] for t in tables)
    assert rows > 0, tables
    print(f"history: {history.stat().st_size} bytes, {rows} rows in {tables}")
    return hashlib.sha256(history.read_bytes()).hexdigest()


@pytest.fixture
def deb_root(packages, tmp_path):
    """A scratch root (PrivateRoot) with the packages and the fake host visible in it, no
    policy-rc.d (Debian's Docker images have one that says 101), and the recording systemctl."""
    need_root()
    for tool in ("unshare", "nsenter", "chroot"):
        need(tool, "Debian packages util-linux and coreutils")
    need("dpkg", "dpkg")
    host_dir = tmp_path / "host"
    host_dir.mkdir()
    root = PrivateRoot(tmp_path / "root", binds=[packages["deb"].parent.parent, host_dir])
    try:
        if traces(root):
            pytest.skip(f"this machine has ssdfleet installed already: {traces(root)}")
        root.run(["rm", "-f", "/usr/sbin/policy-rc.d"])
        real = root.run(["sh", "-c", "command -v systemctl"]).stdout.strip()
        fake = root.path("/usr/local/sbin/systemctl")
        fake.parent.mkdir(parents=True, exist_ok=True)
        fake.write_text(FAKE_SYSTEMCTL.format(real=real))
        fake.chmod(0o755)
        root.path("/var/log/systemctl-calls.log").write_text("")
        yield root
    finally:
        root.close()
    assert not os.path.lexists("/usr/lib/ssdfleet"), "the scratch root's files stayed in it"


def apt(*args: str) -> List[str]:
    # apt runs dpkg with a PATH of its own (DPkg::Path): the recording systemctl in
    # /usr/local/sbin must come first there too.
    return ["apt-get", "-y", "-q", "--no-install-recommends", "-o", "DPkg::Lock::Timeout=600",
            "-o", "DPkg::Path=/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin",
            "-o", "Dpkg::Options::=--force-confold", *args]


@pytest.mark.host_changing
def test_deb_install_upgrade_remove_purge(packages, deb_root, tmp_path):
    root = deb_root
    analyze = need("systemd-analyze", "Debian package systemd")
    host = build_default_host(tmp_path / "host")
    in_root: Runner = lambda args: root.run(["/usr/bin/ssdfleet", *args], timeout=300)  # noqa: E731
    config, history = "/etc/ssdfleet/config.yml", "/var/lib/ssdfleet/history.sqlite"
    wants = [f"/etc/systemd/system/multi-user.target.wants/{u}" for u in UNITS]

    # 1. The previous build, as configuration management installs from a file; systemd "runs".
    systemd_running(root, True)
    print(root.run(apt("install", str(packages["deb-previous"]))).stdout[-2000:])
    recorded = systemctl_calls(root)
    print("systemctl calls during the install:", recorded)
    assert "systemctl --quiet --system start ssdfleet-probe-helper.service ssdfleet-agent.service" in recorded
    systemd_running(root, False)
    check_commands(in_root, host, PREVIOUS, "installed previous build, python3")
    entry = root.run(["getent", "passwd", "ssdfleet"]).stdout.split(":")
    assert int(entry[2]) < 1000 and entry[5] == "/var/lib/ssdfleet" and entry[6].strip() == "/usr/sbin/nologin"
    assert run(["getent", "passwd", "ssdfleet"], check=False).returncode == 2, "the user exists in the root only"
    assert root.run(["stat", "-c", "%a %U %G", config]).stdout.split() == ["640", "root", "ssdfleet"]
    assert root.run(["stat", "-c", "%a %U %G", "/var/lib/ssdfleet"]).stdout.split() == ["750", "ssdfleet", "ssdfleet"]
    assert all(root.path(w).is_symlink() for w in wants), "installing enables the units (Debian's way)"
    units = [f"/usr/lib/systemd/system/{u}" for u in UNITS]
    r = root.run([analyze, "verify", "--man=no", *units], check=False)
    assert r.returncode == 0 and not (r.stdout + r.stderr).strip(), r.stdout + r.stderr
    assert all("ExecStart=/usr/bin/ssdfleet " in root.path(u).read_text() for u in units)
    # Byte code made by postinst for this python3, under the package's own tree only.
    assert glob.glob(str(root.path("/usr/lib/ssdfleet/app/agent/__pycache__")) + "/cli.cpython-3*.pyc")
    page = gzip.decompress(root.path("/usr/share/man/man1/ssdfleet.1.gz").read_bytes()).decode()
    assert ".SS ssdfleet collect" in page and f"ssdfleet {PREVIOUS}" in page

    # 2. The operator's changes: a config line, an option in /etc/default, the agent's history.
    edited = root.path(config).read_text().replace('listen_address: ":9877"', 'listen_address: ":9977"  # operator')
    assert edited != root.path(config).read_text()
    root.path(config).write_text(edited)
    options = root.path("/etc/default/ssdfleet").read_text().replace(
        'SSDFLEET_AGENT_ARGS=""', 'SSDFLEET_AGENT_ARGS="--log-level DEBUG"')
    root.path("/etc/default/ssdfleet").write_text(options)
    history_sum = make_history(root, host, tmp_path)

    # 3. Upgrade to this tree's build with dpkg -i, systemd "running".
    systemd_running(root, True)
    print(root.run(["dpkg", "--force-confold", "-i", str(packages["deb"])]).stdout)
    check_commands(in_root, host, __version__, "upgraded, python3")
    assert root.path(config).read_text() == edited, "the changed config was kept"
    assert root.path("/etc/default/ssdfleet").read_text() == options, "the changed options were kept"
    assert hashlib.sha256(root.path(history).read_bytes()).hexdigest() == history_sum, "the history was kept"
    recorded = systemctl_calls(root)
    print("systemctl calls during the upgrade:", recorded)
    assert "systemctl try-restart ssdfleet-probe-helper.service ssdfleet-agent.service" in recorded
    assert not [c for c in recorded if " enable " in c or c.endswith(" start") or " start " in c], \
        "an upgrade keeps the admin's choice"
    assert root.run(["dpkg-query", "-W", "-f", "${Version}", "ssdfleet"]).stdout == DEB_CURRENT

    # 4. Remove: the program goes, the config and the history stay.
    root.run(["dpkg", "--remove", "ssdfleet"])
    recorded = systemctl_calls(root)
    print("systemctl calls during remove:", recorded)
    assert "systemctl stop ssdfleet-agent.service ssdfleet-probe-helper.service" in recorded
    assert not root.path("/usr/bin/ssdfleet").exists() and not root.path("/usr/lib/ssdfleet").exists(), \
        "no byte code or other stray files keep /usr/lib/ssdfleet"
    assert root.path(config).read_text() == edited
    assert hashlib.sha256(root.path(history).read_bytes()).hexdigest() == history_sum
    assert "config-files" in root.run(["dpkg-query", "-W", "-f", "${Status}", "ssdfleet"]).stdout
    print("after remove:", traces(root))

    # 5. Purge: nothing of ssdfleet is left in the root.
    systemd_running(root, False)
    root.run(apt("purge", "ssdfleet"))
    left = traces(root)
    print("left after purge (paths named *ssdfleet*, users, dpkg):", left or "nothing")
    assert left == []
    for path in deb_paths(packages["deb"]):
        if "ssdfleet" in path:
            assert not os.path.lexists(root.path(path)), path
    assert not any(os.path.lexists(root.path(w)) for w in wants)
    print("what the root holds that this machine does not:", root.changed())

    # 6. policy-rc.d saying 101 (as in image builds): installed and enabled, not started.
    policy = root.path("/usr/sbin/policy-rc.d")
    policy.write_text("#!/bin/sh\nexit 101\n")
    policy.chmod(0o755)
    systemd_running(root, True)
    r = root.run(["dpkg", "-i", str(packages["deb"])])
    recorded = systemctl_calls(root)
    print("systemctl calls with policy-rc.d 101:", recorded, r.stderr.strip())
    assert not [c for c in recorded if " start " in c], recorded
    assert all(root.path(w).is_symlink() for w in wants)
    systemd_running(root, False)
    root.run(apt("purge", "ssdfleet"))
    assert traces(root) == []


# --------------------------------------------------------------------------- .rpm


def test_rpm_contents_and_scripts(packages):
    rpm = need("rpm", "Debian package rpm")
    pkg = str(packages["rpm"])
    assert packages["rpm"].name == f"ssdfleet-{__version__}-1.x86_64.rpm"
    files = run([rpm, "-qpl", pkg]).stdout.split()
    for path in ("/usr/bin/ssdfleet", "/usr/lib/ssdfleet/deps/cp39/pydantic_core",
                 "/usr/lib/ssdfleet/deps/common/h11",
                 "/usr/lib/systemd/system/ssdfleet-agent.service", "/usr/lib/sysusers.d/ssdfleet.conf",
                 "/etc/ssdfleet/config.yml", "/etc/sysconfig/ssdfleet", "/var/lib/ssdfleet",
                 "/usr/share/ssdfleet/dashboards/ssdfleet-host.json", "/usr/share/man/man1/ssdfleet.1.gz",
                 "/usr/share/licenses/ssdfleet/copyright"):
        assert path in files, path
    assert not [f for f in files if "/deps/cp3" in f and "/deps/cp39" not in f], "RHEL 9 has Python 3.9 only"
    size = int(run([rpm, "-qp", "--qf", "%{SIZE}", pkg]).stdout)
    print(f"installed size: .rpm {size / 1e6:.1f} MB")
    # The directories are the package's own, so that erase leaves none behind.
    dirs = run([rpm, "-qp", "--qf", "[%{FILEMODES:perms} %{FILENAMES}\n]", pkg]).stdout
    assert re.search(r"^d\S+ /usr/lib/ssdfleet$", dirs, re.M) and re.search(r"^d\S+ /etc/ssdfleet$", dirs, re.M)
    assert sorted(run([rpm, "-qpc", pkg]).stdout.split()) == ["/etc/ssdfleet/config.yml", "/etc/sysconfig/ssdfleet"]
    flags = run([rpm, "-qp", "--qf", "[%{FILEFLAGS:fflags} %{FILENAMES}\n]", pkg]).stdout
    assert "cn /etc/ssdfleet/config.yml" in flags and "cn /etc/sysconfig/ssdfleet" in flags, "config(noreplace)"
    assert re.search(r"^d /usr/share/doc/ssdfleet/README.md$", flags, re.M), "documentation is %doc"
    assert re.search(r"^l /usr/share/licenses/ssdfleet/copyright$", flags, re.M), "%license"
    requires = run([rpm, "-qp", "--requires", pkg]).stdout
    assert "python(abi) = 3.9" in requires and "glibc >= 2." in requires, requires
    assert run([rpm, "-qp", "--qf", "%{GROUP}", pkg]).stdout == "Applications/System"
    scripts = run([rpm, "-qp", "--scripts", pkg]).stdout
    print(scripts)
    for part in ("preinstall scriptlet", "postinstall scriptlet", "preuninstall scriptlet",
                 "postuninstall scriptlet", "systemd-sysusers", "try-restart", "preset", "disable --now"):
        assert part in scripts, part
    assert "deb-systemd" not in scripts, "the .rpm's scriptlets are its own"
    changelog = run([rpm, "-qp", "--changelog", pkg]).stdout
    assert f"{__version__}-1" in changelog, changelog
    prev = run([rpm, "-qp", "--qf", "%{VERSION}-%{RELEASE}", str(packages["rpm-previous"])]).stdout
    assert prev == f"{__version__}~dev0-1"
    assert run([rpm, "--eval", f"%{{lua: print(rpm.vercmp('{prev}', '{__version__}-1'))}}"]).stdout.strip() == "-1"


@pytest.mark.host_changing
def test_rpm_in_a_scratch_root(packages, tmp_path):
    """rpm --root into an overlay of this machine (upper layer in tmp_path, in a private mount
    namespace): install the previous build, change the config and the history, upgrade, verify
    the installed units, erase. The scriptlets run inside, with Debian's tools standing in for
    RHEL's; the installed commands then run with Python 3.9."""
    need_root()
    rpm = need("rpm", "Debian package rpm")
    need("unshare", "Debian package util-linux")
    host = build_default_host(tmp_path / "host")
    upper, work, merged = tmp_path / "upper", tmp_path / "work", tmp_path / "merged"
    for d in (upper, work, merged):
        d.mkdir()
    m = str(merged)
    steps = f"""
set -e
mount -t overlay overlay -o lowerdir=/,upperdir={upper},workdir={work} {m}
mount -t tmpfs tmpfs {m}/tmp
rpm() {{ {rpm} --root {m} --dbpath /var/lib/ssdfleet-test-rpmdb "$@"; }}
rpm --initdb
echo "== install previous"
rpm -i --nodeps {packages['rpm-previous']}
rpm -q ssdfleet
chroot {m} getent passwd ssdfleet
chroot {m} stat -c '%a %U %G %n' /etc/ssdfleet /etc/ssdfleet/config.yml /var/lib/ssdfleet
sed -i 's/^listen_address: .*/listen_address: ":9977"  # operator/' {m}/etc/ssdfleet/config.yml
echo "history" > {m}/var/lib/ssdfleet/history.sqlite
echo "== upgrade"
rpm -U --nodeps {packages['rpm']}
rpm -q ssdfleet
grep -c operator {m}/etc/ssdfleet/config.yml
cat {m}/var/lib/ssdfleet/history.sqlite
test -x {m}/usr/bin/ssdfleet
echo "== verify"
chroot {m} systemd-analyze verify --man=no /usr/lib/systemd/system/ssdfleet-agent.service \
    /usr/lib/systemd/system/ssdfleet-probe-helper.service 2>&1
echo "== verified"
mkdir -p {tmp_path}/installed/usr/bin {tmp_path}/installed/usr/lib
cp -a {m}/usr/bin/ssdfleet {tmp_path}/installed/usr/bin/
cp -a {m}/usr/lib/ssdfleet {tmp_path}/installed/usr/lib/
echo "== erase"
rpm -e ssdfleet
echo "== left in the root"
ls {m}/etc/ssdfleet {m}/var/lib/ssdfleet 2>&1 || true
test ! -e {m}/usr/lib/ssdfleet && test ! -e {m}/usr/bin/ssdfleet
"""
    r = run(["unshare", "--mount", "--propagation", "private", "sh", "-c", steps], check=False, timeout=600)
    print(r.stdout)
    print("scriptlets and rpm said on stderr:", r.stderr.strip() or "nothing")
    assert r.returncode == 0, r.stdout + r.stderr
    out = r.stdout
    assert f"ssdfleet-{__version__}~dev0-1" in out and f"ssdfleet-{__version__}-1.x86_64" in out
    assert "750 root ssdfleet" in out and "640 root ssdfleet" in out and "750 ssdfleet ssdfleet" in out
    assert "\n1\nhistory\n" in out, "the changed config and the history survived the upgrade"
    verify = out[out.index("== verify\n") + len("== verify\n"):out.index("== verified")]
    assert verify == "", f"systemd-analyze verify on the rpm's units: {verify}"
    # rpm has no purge: erase keeps the edited config (as config.yml.rpmsave) and the history.
    assert "config.yml.rpmsave" in out and "history.sqlite" in out
    # The real root saw none of it.
    assert not os.path.lexists("/usr/lib/ssdfleet") and not os.path.lexists("/var/lib/ssdfleet-test-rpmdb")
    # The installed program, run by RHEL 9's Python version.
    py39 = find_python("3.9")
    if py39 is None:
        skip_or_fail("no Python 3.9 here: the rpm's commands were not run")
    launcher = str(tmp_path / "installed/usr/bin/ssdfleet")
    check_commands(lambda args: run([py39, "-I", "-S", launcher, *args], cwd=str(tmp_path), timeout=300,
                                    env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL": "C"}),
                   host, __version__, f"the .rpm's files, {py39}")
