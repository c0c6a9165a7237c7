"""``ssdfleet syncwrite-dropin``: the systemd drop-in that lets the sandboxed agent write its
sync-write probe file, and nothing else new.

The shipped unit has ``ProtectSystem=strict``: every path is read-only to the agent except its
state directory, so a configured ``syncwrite.directories`` entry is skipped with the reason
``read_only_sandbox``. This command turns the configured directories into a drop-in
(``/etc/systemd/system/ssdfleet-agent.service.d/syncwrite.conf``) with one ``ReadWritePaths=``
per directory, after checking each directory is one the probe may have to itself:

* absolute, without symbolic links (systemd would follow them to wherever they point), and
  spelt so systemd reads it back unchanged (no blanks, quotes, backslashes or control
  characters; ``%`` is doubled, as unit files need);
* an existing directory, owned by the agent's user and holding nothing but the probe file:
  the owner of a directory may delete or rename anything in it, so a database directory
  (``pg_wal``) is refused; the runbook has the operator make a subdirectory on the same
  filesystem instead;
* not ``/``, not under a system directory, and not where the unit's other settings would hide
  it anyway (``ProtectHome=`` for /home, /root and /run/user, ``PrivateTmp=`` for /tmp and
  /var/tmp).

The alternative, running the probe in the root probe helper, was not taken: the helper would
need ``ReadWritePaths=`` just the same, and as root it would write where DAC permissions stop
the agent's user; the drop-in keeps the writes with the unprivileged user, in a directory that
user owns. ``ReadWritePaths=`` is not part of ``systemd-analyze security``'s score: the agent
stays at its exposure (tests/sources/syncwrite/test_syncwrite_sandbox.py measures it with the drop-in).
"""

from __future__ import annotations

import os
import pwd
import stat
import sys
import tempfile
from typing import List, Optional, Sequence, Set, Tuple

from collectors.syncwrite.probe import PROBE_FILE_NAME

DROPIN_PATH = "/etc/systemd/system/ssdfleet-agent.service.d/syncwrite.conf"
STATE_DIRECTORY = "/var/lib/ssdfleet"  # the unit's StateDirectory=: writable without a drop-in

# Under these the agent must never write; a database directory is never one of them.
SYSTEM_DIRS = ("/bin", "/boot", "/dev", "/efi", "/etc", "/lib", "/lib32", "/lib64", "/libx32", "/opt/ssdfleet",
               "/proc", "/run", "/sbin", "/sys", "/usr")
# Where the unit's other settings leave the agent no view of the real directory.
HIDDEN_DIRS = {"/home": "ProtectHome=yes hides it", "/root": "ProtectHome=yes hides it",
               "/run/user": "ProtectHome=yes hides it", "/tmp": "PrivateTmp=yes gives the agent a /tmp of its own",
               "/var/tmp": "PrivateTmp=yes gives the agent a /var/tmp of its own"}


def _under(path: str, top: str) -> bool:
    return path == top or path.startswith(top + "/")


def spelling_problem(path: str) -> Optional[str]:
    """Why ``path`` cannot go into ``ReadWritePaths=`` as it is; None when it can."""
    if not os.path.isabs(path):
        return "not an absolute path"
    if path != os.path.normpath(path) or path.startswith("//"):
        return f"not in normal form (write {os.path.normpath(path)})"
    if any(c.isspace() or ord(c) < 32 or ord(c) == 127 or c in "\"'\\;" for c in path):
        return "has a blank, quote, backslash, semicolon or control character, which unit files would read otherwise"
    if path == "/":
        return "is the root directory"
    for top, why in HIDDEN_DIRS.items():
        if _under(path, top):
            return f"is under {top}, where the agent cannot see it: {why}"
    for top in SYSTEM_DIRS:
        if _under(path, top):
            return f"is under the system directory {top}"
    return None


def _groups_of(uid: int) -> Set[int]:
    try:
        entry = pwd.getpwuid(uid)
    except KeyError:
        return set()
    return set(os.getgrouplist(entry.pw_name, entry.pw_gid))


def unreachable_parent(path: str, uid: int, groups: Set[int]) -> Optional[Tuple[str, os.stat_result]]:
    """The first parent of ``path`` the user may not search (no x bit for it by owner, group or
    others; ACLs are not read), with its status; None when every parent is searchable."""
    parent = os.path.dirname(path)
    parents = []
    while parent not in parents:
        parents.append(parent)
        parent = os.path.dirname(parent)
    for directory in reversed(parents):
        st = os.stat(directory)
        if uid == 0:
            continue
        if st.st_uid == uid:
            bit = stat.S_IXUSR
        elif st.st_gid in groups:
            bit = stat.S_IXGRP
        else:
            bit = stat.S_IXOTH
        if not st.st_mode & bit:
            return directory, st
    return None


def directory_problem(path: str, uid: int, user: str) -> Optional[str]:
    """Why the probe may not have ``path`` to itself; None when it may. Reads the directory."""
    real = os.path.realpath(path)
    if real != path:
        return f"holds a symbolic link (its real path is {real}: configure that)"
    try:
        st = os.lstat(path)
    except OSError as exc:
        return f"cannot be read ({exc.strerror})"
    if not stat.S_ISDIR(st.st_mode):
        return "is not a directory"
    if st.st_uid != uid:
        return f"is owned by uid {st.st_uid}, not by {user} (uid {uid}): chown {user}: {path}"
    blocked = unreachable_parent(path, uid, _groups_of(uid))
    if blocked is not None:
        parent, pst = blocked
        return (f"{user} cannot reach it: {parent} (mode {stat.S_IMODE(pst.st_mode):04o}, uid {pst.st_uid}, "
                f"gid {pst.st_gid}) is not searchable by it; make the directory where it can (beside {parent})")
    try:
        others = sorted(set(os.listdir(path)) - {PROBE_FILE_NAME})
    except OSError as exc:
        return f"cannot be listed ({exc.strerror})"
    if others:
        shown = ", ".join(others[:3]) + (" ..." if len(others) > 3 else "")
        return f"holds other files ({shown}): the probe needs a directory of its own"
    return None


def user_id(user: str) -> Tuple[int, str]:
    """(uid, name) of a user name or number; ValueError naming it when unknown."""
    try:
        entry = pwd.getpwuid(int(user)) if user.isdigit() else pwd.getpwnam(user)
    except (KeyError, OverflowError):
        if user.isdigit():
            return int(user), user
        raise ValueError(f"no user {user!r} on this host: install the package first (it creates ssdfleet) "
                         "or pass --user") from None
    return entry.pw_uid, entry.pw_name


def checked_directories(directories: Sequence[str], uid: int, user: str) -> Tuple[List[str], List[str]]:
    """(the directories to allow, problems): a drop-in is to be written only with no problem.
    The state directory is writable without one and is left out; duplicates count once."""
    problems: List[str] = []
    paths: List[str] = []
    for path in directories:
        why = spelling_problem(path)
        if why is None and path != STATE_DIRECTORY:
            why = directory_problem(path, uid, user)
        if why is not None:
            problems.append(f"{path}: {why}")
        elif path != STATE_DIRECTORY and path not in paths:
            paths.append(path)
    if not paths and not problems:
        problems.append("syncwrite.directories names no directory outside the state directory: nothing to allow")
    return paths, problems


def dropin_text(paths: Sequence[str], user: str, source: str) -> str:
    """The drop-in for checked ``paths`` (pure)."""
    lines = [
        f"# Written by `ssdfleet syncwrite-dropin` from {source}: the agent may create its",
        f"# sync-write probe file ({PROBE_FILE_NAME}) in these directories, each owned by {user}",
        "# and holding nothing else. Generate it again after changing syncwrite.directories, then",
        "# systemctl daemon-reload and restart ssdfleet-agent (docs/runbooks.md).",
        "[Service]",
    ]
    # "-": a directory removed later leaves the agent starting (the probe reports no_directory)
    # rather than failing the whole unit with status 226/NAMESPACE. "%" starts a specifier.
    lines += [f"ReadWritePaths=-{p.replace('%', '%%')}" for p in paths]
    return "\n".join(lines) + "\n"


def write_atomically(path: str, text: str) -> None:
    """Replace ``path`` with ``text`` (0644), creating its directory (0755) if needed."""
    directory = os.path.dirname(path) or "."
    os.makedirs(directory, mode=0o755, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".syncwrite.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


# ------------------------------------------------------------------------------ the command


def add_arguments(p) -> None:
    p.add_argument("--user", default="ssdfleet", help="the agent's user, who must own each directory (default ssdfleet)")
    p.add_argument("--output", help="write the drop-in here instead of printing it "
                   "(/etc/systemd/system/ssdfleet-agent.service.d/syncwrite.conf)")


def run(args, settings) -> int:
    """Print (or write with --output) the drop-in for ``settings.directories``; exit 1 with
    every problem when a directory is unfit."""
    uid, user = user_id(args.user)
    paths, problems = checked_directories(settings.directories, uid, user)
    if problems:
        for problem in problems:
            sys.stderr.write(f"ssdfleet syncwrite-dropin: {problem}\n")
        sys.stderr.write("ssdfleet syncwrite-dropin: nothing written (docs/runbooks.md, "
                         "\"The sync-write probe under systemd\")\n")
        return 1
    text = dropin_text(paths, user, args.config or "the default configuration")
    if args.output:
        write_atomically(args.output, text)
        sys.stderr.write(f"wrote {args.output}; now: systemctl daemon-reload && systemctl restart ssdfleet-agent\n")
    else:
        sys.stdout.write(text)
    return 0
