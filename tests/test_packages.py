"""The .deb and .rpm (packaging/build.sh), built from a clean copy of the checkout and installed.

The .deb goes onto this machine for real: ``apt-get install ./...`` of a previous build (this
tree with its version lowered to ``X.Y.Z.dev0``), a changed config and a history file, an
upgrade with ``dpkg -i`` to this tree's build, then remove and purge; at the end nothing of
ssdfleet may be left, and what the machine has that mentions ssdfleet is printed. The commands
run from the installed files against fake tools (tests/fakehost.py).

systemd is not PID 1 on CI, so the maintainer scripts skip what needs a running systemd. For the
upgrade and the remove, dpkg runs in a private mount namespace where /run/systemd/system exists
and ``systemctl`` on PATH records what it is asked (enable/disable it passes on to the real
systemctl, offline), which shows the restart an upgrade asks for.

The .rpm is inspected with rpm -qpl / --scripts / --requires and installed, upgraded and erased
with ``rpm --root`` in an overlay of this machine's own file system (a private mount namespace:
nothing reaches the real root), so its scriptlets run too. Its dependencies are built for RHEL
9's Python 3.9; the commands run with a Python 3.9 when this machine has one (pyenv on CI).

Root, dpkg, apt-get, nfpm (packaging/build.sh --install-tools), rpm and unshare are needed; without
them the tests skip, or fail under SSDFLEET_REQUIRE_TOOLS=1.
"""

from __future__ import annotations

import glob
import gzip
import hashlib
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
from typing import Dict, List, Optional, Sequence

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
# Where ssdfleet may leave traces; the leftovers check walks these (and reads passwd/group).
WATCHED = ("/etc", "/usr", "/var/lib", "/opt", "/run/systemd")
SKIP_IN_WALK = {"/var/lib/dpkg", "/var/lib/apt", "/usr/share/locale", "/usr/lib/python3", "/usr/local/go"}


def run(argv: Sequence[str], check: bool = True, timeout: float = 600, **kw) -> subprocess.CompletedProcess:
    r = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL, **kw)
    if check:
        assert r.returncode == 0, f"{' '.join(argv)} exited {r.returncode}:\n{r.stdout}\n{r.stderr}"
    return r


def need(tool: str, package: str) -> str:
    path = shutil.which(tool)
    if path is None:
        skip_or_fail(f"{tool} not installed ({package})")
    return path


def need_root() -> None:
    if os.geteuid() != 0:
        skip_or_fail("installing packages needs root")


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
    for kind, version in (("previous", PREVIOUS), ("current", __version__)):
        src = clean_copy(base / f"src-{kind}")
        if version != __version__:
            init = src / "agent" / "__init__.py"
            init.write_text(init.read_text().replace(f'"{__version__}"', f'"{version}"'))
            log = src / "CHANGELOG.md"
            log.write_text(log.read_text().replace(f"## {__version__} - ", f"## {version} - ", 1))
        out = base / f"dist-{kind}"
        start = time.monotonic()
        r = run(["bash", str(src / "packaging" / "build.sh"), "--out", str(out)], cwd=str(src), timeout=1200,
                env={**os.environ, "NFPM": nfpm})
        print(f"build {kind} ({version}): {time.monotonic() - start:.0f} s\n{r.stdout.strip()}")
        suffix = "" if kind == "current" else "-previous"
        (built["deb" + suffix],) = out.glob("ssdfleet_*.deb")
        (built["rpm" + suffix],) = out.glob("ssdfleet-*.rpm")
        # Nothing was written into the checkout the packages were built from.
        assert not [p for p in ("build", "dist", "ssdfleet.egg-info") if (src / p).exists()]
    return built


# --------------------------------------------------------------------------- .deb


def deb_paths(deb: Path) -> List[str]:
    out = run(["dpkg-deb", "-c", str(deb)]).stdout
    return [line.split(None, 5)[5].lstrip(".").rstrip("/") or "/" for line in out.splitlines()]


def test_deb_contents(packages):
    deb = packages["deb"]
    assert deb.name == f"ssdfleet_{DEB_CURRENT}_amd64.deb"
    info = run(["dpkg-deb", "-f", str(deb), "Version", "Depends"]).stdout
    assert f"Version: {DEB_CURRENT}" in info and "python3 (>= 3.10)" in info, info
    assert run(["dpkg-deb", "-f", str(packages["deb-previous"]), "Version"]).stdout.strip() == DEB_PREVIOUS
    paths = set(deb_paths(deb))
    for path in ("/usr/bin/ssdfleet", "/usr/lib/ssdfleet/app/agent/cli.py",
                 "/usr/lib/systemd/system/ssdfleet-agent.service",
                 "/usr/lib/systemd/system/ssdfleet-probe-helper.service", "/usr/lib/sysusers.d/ssdfleet.conf",
                 "/etc/ssdfleet/config.yml", "/var/lib/ssdfleet", "/usr/share/ssdfleet/config.example.yml",
                 "/usr/share/ssdfleet/prometheus/ssdfleet-alerts.yml",
                 "/usr/share/ssdfleet/prometheus/ssdfleet-recording.yml",
                 "/usr/share/ssdfleet/alertmanager/alertmanager.example.yml",
                 "/usr/share/ssdfleet/dashboards/ssdfleet-fleet.json", "/usr/share/man/man1/ssdfleet.1.gz",
                 "/usr/share/doc/ssdfleet/changelog.Debian.gz"):
        assert path in paths, path
    for abi in ("cp310", "cp311", "cp312", "cp313"):
        assert f"/usr/lib/ssdfleet/deps/{abi}/pydantic_core" in paths, abi
    assert not [p for p in paths if "__pycache__" in p or p.endswith(".pyc")], "byte code is made on the host"
    with_control = base_control(deb)
    assert with_control["conffiles"].split() == ["/etc/ssdfleet/config.yml"]
    # The preinst creates the user from the same line as the sysusers file.
    sysusers = (ROOT / "deploy/systemd/ssdfleet.sysusers.conf").read_text().splitlines()[-1]
    assert f"echo '{sysusers}' | systemd-sysusers" in with_control["preinst"]


def base_control(deb: Path) -> Dict[str, str]:
    out: Dict[str, str] = {}
    for name in ("conffiles", "preinst", "postinst", "prerm", "postrm"):
        out[name] = run(["dpkg-deb", "--info", str(deb), name]).stdout
    return out


def traces() -> List[str]:
    """Everything on the machine that is ssdfleet's: paths named *ssdfleet* under WATCHED, the
    user and group, the dpkg record."""
    found = []
    for top in WATCHED:
        for folder, dirs, files in os.walk(top):
            dirs[:] = [d for d in dirs if os.path.join(folder, d) not in SKIP_IN_WALK]
            found += [os.path.join(folder, n) for n in dirs + files if "ssdfleet" in n]
    for db in ("/etc/passwd", "/etc/group", "/etc/shadow", "/etc/gshadow"):
        if os.path.exists(db):
            found += [f"{db}: {line.split(':')[0]}" for line in Path(db).read_text().splitlines()
                      if line.startswith("ssdfleet:")]
    status = run(["dpkg-query", "-W", "-f", "${Status}", "ssdfleet"], check=False)
    if status.returncode == 0 and "not-installed" not in status.stdout:
        found.append(f"dpkg: ssdfleet {status.stdout.strip()}")
    return sorted(set(found))


def ssdfleet(*args: str, cwd: Path, python: Optional[str] = None, root: str = "") -> subprocess.CompletedProcess:
    # A Python named here runs the launcher with the flags of its #! line.
    argv = ([python, "-I", "-S"] if python else []) + [f"{root}/usr/bin/ssdfleet", *args]
    return run(argv, cwd=str(cwd), env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL": "C"}, timeout=120)


def check_commands(host, tmp_path: Path, version: str, python: Optional[str] = None, root: str = "") -> None:
    """--version, every command's --help, and one collect --json against the fake tools."""
    out = ssdfleet("--version", cwd=tmp_path, python=python, root=root).stdout.strip()
    assert out == f"ssdfleet {version}", out
    for command in ("agent", "collect", "status", "probe-helper"):
        assert f"usage: ssdfleet {command}" in ssdfleet(command, "--help", cwd=tmp_path, python=python,
                                                        root=root).stdout
    collected = json.loads(ssdfleet("collect", "--json", *host.config_args(), cwd=tmp_path, python=python,
                                    root=root).stdout)
    serials = {d["serial"] for d in collected["drives"]}
    assert SERIALS <= serials, serials
    print(f"collect --json ({python or 'python3'}): {len(collected['drives'])} drives, serials {sorted(serials)}")


def fake_systemd(tmp_path: Path) -> tuple:
    """A PATH entry with a recording systemctl, and the file it records to."""
    fake = tmp_path / "fake-systemd"
    fake.mkdir(exist_ok=True)
    log = tmp_path / "systemctl.log"
    log.touch()
    real = shutil.which("systemctl") or "/bin/false"
    script = fake / "systemctl"
    script.write_text(f"""#!/bin/sh
echo "systemctl $*" >> {log}
case " $* " in
  *" enable "*|*" disable "*|*" preset "*|*" is-enabled "*) SYSTEMD_OFFLINE=1 exec {real} "$@" ;;
esac
exit 0
""")
    script.chmod(0o755)
    return fake, log


def with_systemd_running(argv: Sequence[str], fake: Path) -> List[str]:
    """argv run in a private mount namespace where /run/systemd/system exists (a tmpfs over
    /run/systemd there only) and the recording systemctl comes first on PATH."""
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c",
            "mount -t tmpfs -o mode=0755 ssdfleet-test /run/systemd && mkdir /run/systemd/system "
            f"&& PATH={fake}:$PATH exec \"$@\"", "sh", *argv]


def apt(*args: str) -> List[str]:
    return ["apt-get", "-y", "-q", "--no-install-recommends", "-o", "DPkg::Lock::Timeout=300",
            "-o", "Dpkg::Options::=--force-confold", *args]


def dpkg_i(deb: Path) -> List[str]:
    return ["dpkg", "--force-confold", "-i", str(deb)]


def run_dpkg(argv: Sequence[str]) -> subprocess.CompletedProcess:
    """dpkg gives up at once when another apt or dpkg holds its lock: wait and try again."""
    for _ in range(60):
        r = run(argv, check=False, env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})
        if r.returncode == 0 or "lock" not in (r.stderr + r.stdout).lower():
            break
        time.sleep(5)
    assert r.returncode == 0, f"{' '.join(argv)}:\n{r.stdout}\n{r.stderr}"
    return r


def make_history(host, tmp_path: Path) -> str:
    """The installed agent runs against the fake tools until its history database holds a poll;
    returns the file's sha256 once the agent has stopped."""
    port = free_port()
    args = [a for a in host.config_args()]
    i = args.index("--state-dir")
    args[i + 1] = "/var/lib/ssdfleet"
    log = open(tmp_path / "installed-agent.log", "wb")
    proc = subprocess.Popen(["/usr/bin/ssdfleet", "agent", "--listen-address", f"127.0.0.1:{port}", *args],
                            stdout=log, stderr=subprocess.STDOUT, cwd=str(tmp_path), start_new_session=True,
                            env={"PATH": "/usr/bin:/bin", "LC_ALL": "C"})
    history = Path("/var/lib/ssdfleet/history.sqlite")
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            assert proc.poll() is None, (tmp_path / "installed-agent.log").read_text()
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/drives", timeout=2) as r:
                    drives = json.load(r)
                if history.exists() and len(json.dumps(drives)) > 100 and all(s in json.dumps(drives)
                                                                               for s in SERIALS):
                    break
            except OSError:
                pass
            time.sleep(0.5)
        else:
            raise AssertionError("the installed agent made no history:\n" + (tmp_path / "installed-agent.log")
                                 .read_text())
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()
    with sqlite3.connect(str(history)) as db:
        tables = [r[0] for r in db.execute("select name from sqlite_master where type='table'")]
        rows = sum(db.execute(f'select count(*) from "{t}"').fetchone()[0] for t in tables)
    assert rows > 0, tables
    print(f"history: {history} {history.stat().st_size} bytes, {rows} rows in {tables}")
    return hashlib.sha256(history.read_bytes()).hexdigest()


@pytest.fixture
def clean_machine():
    """Refuses a machine that has ssdfleet already; purges whatever a failed test left."""
    need_root()
    need("dpkg", "dpkg")
    need("apt-get", "apt")
    before = traces()
    if before:
        pytest.skip(f"this machine has ssdfleet already, not ours to remove: {before}")
    yield before
    if traces():
        subprocess.run(apt("purge", "ssdfleet"), capture_output=True, timeout=600, stdin=subprocess.DEVNULL)


def test_deb_install_upgrade_remove_purge(packages, clean_machine, tmp_path):
    analyze = need("systemd-analyze", "Debian package systemd")
    need("unshare", "Debian package util-linux")
    host = build_default_host(tmp_path / "host")
    config = Path("/etc/ssdfleet/config.yml")
    history = Path("/var/lib/ssdfleet/history.sqlite")
    wants = [Path("/etc/systemd/system/multi-user.target.wants") / u for u in UNITS]

    # 1. The previous build, as configuration management installs from a file.
    run_dpkg(apt("install", str(packages["deb-previous"])))
    check_commands(host, tmp_path, PREVIOUS)
    entry = run(["getent", "passwd", "ssdfleet"]).stdout.split(":")
    assert int(entry[2]) < 1000 and entry[5] == "/var/lib/ssdfleet" and entry[6].strip() == "/usr/sbin/nologin"
    st = config.stat()
    assert oct(st.st_mode & 0o777) == "0o640" and st.st_uid == 0 and \
        run(["stat", "-c", "%G", str(config)]).stdout.strip() == "ssdfleet"
    assert run(["stat", "-c", "%a %U %G", "/var/lib/ssdfleet"]).stdout.split() == ["750", "ssdfleet", "ssdfleet"]
    assert all(w.is_symlink() for w in wants), "installing enables the units (Debian's way)"
    # The installed units, as shipped: verify is clean (ExecStart= names the installed program).
    units = [f"/usr/lib/systemd/system/{u}" for u in UNITS]
    r = run([analyze, "verify", "--man=no", *units], check=False)
    assert r.returncode == 0 and not (r.stdout + r.stderr).strip(), r.stdout + r.stderr
    assert all("ExecStart=/usr/bin/ssdfleet " in Path(u).read_text() for u in units)
    # Byte code made by postinst for this python3, under the package's own tree only.
    assert glob.glob("/usr/lib/ssdfleet/app/agent/__pycache__/cli.cpython-3*.pyc")
    page = gzip.decompress(Path("/usr/share/man/man1/ssdfleet.1.gz").read_bytes()).decode()
    assert ".SS ssdfleet collect" in page and f"ssdfleet {PREVIOUS}" in page

    # 2. The operator's changes: a config line and the agent's history.
    edited = config.read_text().replace('listen_address: ":9877"', 'listen_address: ":9977"  # operator')
    assert edited != config.read_text()
    config.write_text(edited)
    history_sum = make_history(host, tmp_path)

    # 3. Upgrade to this tree's build with dpkg -i, systemd "running".
    fake, calls = fake_systemd(tmp_path)
    r = run_dpkg(with_systemd_running(dpkg_i(packages["deb"]), fake))
    print(r.stdout.strip())
    check_commands(host, tmp_path, __version__)
    assert config.read_text() == edited, "the changed config was kept"
    assert hashlib.sha256(history.read_bytes()).hexdigest() == history_sum, "the history was kept"
    recorded = calls.read_text().splitlines()
    print("systemctl calls during the upgrade:", recorded)
    assert "systemctl try-restart ssdfleet-probe-helper.service ssdfleet-agent.service" in recorded
    assert not [c for c in recorded if " enable " in c or c.endswith(" start")], "an upgrade keeps the admin's choice"
    assert run(["dpkg-query", "-W", "-f", "${Version}", "ssdfleet"]).stdout == DEB_CURRENT

    # 4. Remove: the program goes, the config and the history stay.
    calls.write_text("")
    # dpkg itself: apt-get would run it with its own PATH (DPkg::Path), without the recorder.
    run_dpkg(with_systemd_running(["dpkg", "--remove", "ssdfleet"], fake))
    recorded = calls.read_text().splitlines()
    print("systemctl calls during remove:", recorded)
    assert "systemctl stop ssdfleet-agent.service ssdfleet-probe-helper.service" in recorded
    assert not Path("/usr/bin/ssdfleet").exists() and not Path("/usr/lib/ssdfleet").exists(), \
        "no byte code or other stray files keep /usr/lib/ssdfleet"
    assert config.read_text() == edited
    assert hashlib.sha256(history.read_bytes()).hexdigest() == history_sum
    assert "config-files" in run(["dpkg-query", "-W", "-f", "${Status}", "ssdfleet"]).stdout
    left_after_remove = traces()
    print("after remove:", left_after_remove)

    # 5. Purge: nothing of ssdfleet is left.
    run_dpkg(apt("purge", "ssdfleet"))
    left = traces()
    print("left after purge (paths named *ssdfleet*, users, dpkg):", left or "nothing")
    assert left == clean_machine
    for path in deb_paths(packages["deb"]):
        if "ssdfleet" in path:
            assert not os.path.lexists(path), path
    assert not any(os.path.lexists(w) for w in wants)
    logs = [p for p in ("/var/log/dpkg.log", "/var/log/apt/history.log", "/var/log/apt/term.log")
            if os.path.exists(p) and "ssdfleet" in Path(p).read_text(errors="replace")]
    print("mentioned in package manager logs (as any package is):", logs)


# --------------------------------------------------------------------------- .rpm


def test_rpm_contents_and_scripts(packages):
    rpm = need("rpm", "Debian package rpm")
    pkg = str(packages["rpm"])
    assert packages["rpm"].name == f"ssdfleet-{__version__}-1.x86_64.rpm"
    files = run([rpm, "-qpl", pkg]).stdout.split()
    for path in ("/usr/bin/ssdfleet", "/usr/lib/ssdfleet/deps/cp39/pydantic_core",
                 "/usr/lib/systemd/system/ssdfleet-agent.service", "/usr/lib/sysusers.d/ssdfleet.conf",
                 "/etc/ssdfleet/config.yml", "/var/lib/ssdfleet", "/usr/share/ssdfleet/dashboards/ssdfleet-host.json",
                 "/usr/share/man/man1/ssdfleet.1.gz"):
        assert path in files, path
    assert not [f for f in files if "/deps/cp3" in f and "/deps/cp39" not in f], "RHEL 9 has Python 3.9 only"
    # The directories are the package's own, so that erase leaves none behind.
    dirs = run([rpm, "-qp", "--qf", "[%{FILEMODES:perms} %{FILENAMES}\n]", pkg]).stdout
    assert re.search(r"^d\S+ /usr/lib/ssdfleet$", dirs, re.M) and re.search(r"^d\S+ /etc/ssdfleet$", dirs, re.M)
    assert run([rpm, "-qpc", pkg]).stdout.split() == ["/etc/ssdfleet/config.yml"]
    flags = run([rpm, "-qp", "--qf", "[%{FILEFLAGS:fflags} %{FILENAMES}\n]", pkg]).stdout
    assert "cn /etc/ssdfleet/config.yml" in flags, "config(noreplace)"
    requires = run([rpm, "-qp", "--requires", pkg]).stdout
    assert "python(abi) = 3.9" in requires, requires
    scripts = run([rpm, "-qp", "--scripts", pkg]).stdout
    print(scripts)
    for part in ("preinstall scriptlet", "postinstall scriptlet", "preuninstall scriptlet",
                 "postuninstall scriptlet", "systemd-sysusers", "try-restart"):
        assert part in scripts, part
    changelog = run([rpm, "-qp", "--changelog", pkg]).stdout
    assert f"{__version__}-1" in changelog, changelog
    prev = run([rpm, "-qp", "--qf", "%{VERSION}-%{RELEASE}", str(packages["rpm-previous"])]).stdout
    assert prev == f"{__version__}~dev0-1"
    assert run([rpm, "--eval", f"%{{lua: print(rpm.vercmp('{prev}', '{__version__}-1'))}}"]).stdout.strip() == "-1"


def python39() -> Optional[str]:
    """A working Python 3.9 (pyenv's shims are left out: they may refuse to run)."""
    candidates = sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.9*/bin/python3.9")))
    candidates += [p for p in ("/usr/bin/python3.9", "/usr/local/bin/python3.9") if os.path.exists(p)]
    for candidate in candidates:
        r = subprocess.run([candidate, "-c", "import sys; print(sys.version_info[:2])"], capture_output=True,
                           text=True, timeout=30)
        if r.returncode == 0 and r.stdout.strip() == "(3, 9)":
            return candidate
    return None


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
    py39 = python39()
    if py39 is None:
        print("no Python 3.9 here: the rpm's commands were not run")
        return
    check_commands(host, tmp_path, __version__, python=py39, root=str(tmp_path / "installed"))


def test_python_version_without_dependencies_is_refused(packages, tmp_path):
    """The .rpm carries cp39 only; another Python gets a plain message, not a traceback."""
    extract = tmp_path / "x"
    extract.mkdir()
    run(["dpkg-deb", "-x", str(packages["deb"]), str(extract)])
    shutil.rmtree(extract / f"usr/lib/ssdfleet/deps/cp{sys.version_info[0]}{sys.version_info[1]}")
    r = subprocess.run([sys.executable, str(extract / "usr/bin/ssdfleet"), "--version"], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 70 and "no dependencies for Python" in r.stderr and "cp310" in r.stderr, r.stderr
