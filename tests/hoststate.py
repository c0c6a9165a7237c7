"""What the test suite must leave on the machine it runs on as it found it (tests/conftest.py).

The package tests install, upgrade and purge ssdfleet in roots of their own; a test that
slipped onto the real machine would show here: the dpkg record of ssdfleet (``dpkg -l
ssdfleet``), the ssdfleet user and group (``getent passwd/group ssdfleet``), and everything
under /var/lib/ssdfleet and /etc/ssdfleet (path, type, mode, owner, size, content). The root
is a parameter, so that a test can prove on a fake one that a change is caught.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import subprocess
from pathlib import Path
from typing import Dict, List, Optional, Tuple

TREES = ("var/lib/ssdfleet", "etc/ssdfleet")
Snapshot = Dict[str, object]


def dpkg_record(root: Path) -> str:
    """``dpkg-query`` on the root's dpkg database: the status and version, or why there is none."""
    if shutil.which("dpkg-query") is None:
        return "no dpkg-query"
    admindir = root / "var/lib/dpkg"
    if not (admindir / "status").exists():
        return "no dpkg database"
    r = subprocess.run(["dpkg-query", f"--admindir={admindir}", "-W", "-f", "${Status} ${Version}", "ssdfleet"],
                       capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    return r.stdout.strip() if r.returncode == 0 else "not known to dpkg"


def account(root: Path, database: str) -> Optional[str]:
    """The ssdfleet entry of passwd or group: getent on the real root (users may come from any
    NSS source), the root's own file elsewhere."""
    if root == Path("/") and shutil.which("getent"):
        r = subprocess.run(["getent", database, "ssdfleet"], capture_output=True, text=True, timeout=60,
                           stdin=subprocess.DEVNULL)
        return r.stdout.strip() or None
    path = root / "etc" / database
    if not path.exists():
        return None
    lines = [line for line in path.read_text(errors="replace").splitlines() if line.startswith("ssdfleet:")]
    return "\n".join(lines) or None


def tree(top: Path) -> Optional[List[Tuple]]:
    """Every entry under top with its type, mode, owner, size and content digest (None: absent)."""
    if not os.path.lexists(top):
        return None
    out = [entry(top, top)]
    for folder, dirs, files in os.walk(top, onerror=raise_it):
        out += [entry(top, Path(folder) / name) for name in dirs + files]
    return sorted(out)


def raise_it(err: OSError) -> None:
    raise err


def entry(top: Path, path: Path) -> Tuple:
    st = os.lstat(path)
    rel = path.relative_to(top).as_posix()
    if stat.S_ISLNK(st.st_mode):
        what = "-> " + os.readlink(path)
    elif stat.S_ISREG(st.st_mode):
        try:
            what = hashlib.sha256(path.read_bytes()).hexdigest()
        except OSError as err:
            what = f"unreadable: {err.strerror}"
    else:
        what = ""
    return (rel, stat.filemode(st.st_mode), st.st_uid, st.st_gid, st.st_size if stat.S_ISREG(st.st_mode) else 0, what)


def snapshot(root: Path = Path("/")) -> Snapshot:
    state: Snapshot = {
        "dpkg -l ssdfleet": dpkg_record(root),
        "getent passwd ssdfleet": account(root, "passwd"),
        "getent group ssdfleet": account(root, "group"),
    }
    for rel in TREES:
        try:
            state["/" + rel] = tree(root / rel)
        except OSError as err:  # not root: /etc/ssdfleet is 0750
            state["/" + rel] = f"unreadable: {err.strerror}"
    return state


def changes(before: Snapshot, after: Snapshot) -> List[str]:
    """One line per thing that differs, saying what it was and what it is."""
    out = []
    for key in before:
        was, now = before[key], after.get(key)
        if was == now:
            continue
        if isinstance(was, list) and isinstance(now, list):
            gone = sorted(set(was) - set(now))
            new = sorted(set(now) - set(was))
            out.append(f"{key}: {len(gone)} entries gone or changed {gone[:5]}, {len(new)} new or changed {new[:5]}")
        else:
            out.append(f"{key}: was {was!r}, now {now!r}")
    return out


def summary(value: object) -> str:
    if value is None:
        return "absent"
    if isinstance(value, list):
        return f"{len(value)} entries as before"
    return str(value)
