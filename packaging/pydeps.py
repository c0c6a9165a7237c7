#!/usr/bin/env python3
"""The Python libraries inside the ssdfleet .deb and .rpm (run by packaging/build.sh).

    pydeps.py environment
        This interpreter's PEP 508 marker environment as JSON. Standard library only, so that
        any target Python can run it.
    pydeps.py resolve --python-version 3.9 --requirements FILE --target DIR --platform TAG...
        The dependencies for one target Python, checked, pruned and trimmed (see resolve()).
    pydeps.py share --common DIR DIR...
        Moves the distributions that are byte for byte the same for every Python into one set.
        With --copyright-out, also the DEP-5 copyright file: the head, then one paragraph per
        bundled distribution.
    pydeps.py glibc SUMMARY...
        The newest glibc that the compiled wheels need (from the resolve summaries).

Why the target interpreter: pip evaluates environment markers against the Python it runs
under, whatever --python-version says (that option only picks wheel tags). From Python 3.11,
pip leaves out ``exceptiongroup; python_version < "3.11"`` when it installs anyio for 3.9. So
each target Python is resolved by that Python's own pip when the build machine has it; when
it does not, pip runs here with --python-version and the result is completed and pruned by
evaluating every Requires-Dist marker for the target version with ``packaging.markers``
(:func:`needed`), repeated until nothing is missing. Either way the result is checked the same
way before it goes into a package (:func:`problems`).

Everything but ``environment`` needs the ``packaging`` library (build.sh installs it).
"""

from __future__ import annotations

import argparse
import csv
import email.parser
import glob
import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Iterable, List, Mapping, Optional, Sequence, Set, Tuple

# Install bookkeeping that pip writes and the packages do not need: the package manager owns
# these files, and without RECORD pip refuses to uninstall them from under it.
BOOKKEEPING = ("RECORD", "INSTALLER", "REQUESTED", "direct_url.json", "WHEEL")
# Optional C accelerators left out, with why: PyYAML's _yaml links libyaml in statically
# (lintian: embedded-library; 2.6 MB per Python version). yaml falls back to its pure-Python
# loader by itself (yaml.__with_libyaml__ is then False); ssdfleet reads YAML only for its
# configuration files, where the speed makes no difference.
LEFT_OUT = {"pyyaml": ("yaml/_yaml.*.so", "_yaml/*")}
# An extension module built for one CPython version (PEP 3149 tag); abi3 ones load in any
# version from the one they were built for, so they can be shared.
VERSION_SPECIFIC_EXT = re.compile(r"\.cpython-3\d+[^/]*\.so$")


# --------------------------------------------------------------------------- environment


def marker_environment() -> Dict[str, str]:
    """PEP 508's marker variables for the running interpreter (as packaging computes them)."""
    impl = sys.implementation
    info = impl.version
    impl_version = f"{info.major}.{info.minor}.{info.micro}"
    if info.releaselevel != "final":
        impl_version += info.releaselevel[0] + str(info.serial)
    return {
        "implementation_name": impl.name,
        "implementation_version": impl_version,
        "os_name": os.name,
        "platform_machine": platform.machine(),
        "platform_release": platform.release(),
        "platform_system": platform.system(),
        "platform_version": platform.version(),
        "python_full_version": platform.python_version(),
        "platform_python_implementation": platform.python_implementation(),
        "python_version": ".".join(platform.python_version_tuple()[:2]),
        "sys_platform": sys.platform,
    }


def target_environment(python_version: str, machine: str) -> Dict[str, str]:
    """The marker environment of a CPython ``python_version`` on Linux ``machine``, without that
    interpreter: this one's, with the version and machine replaced. The patch level is not
    known, so it is taken as .0 (pip's --python-version does the same for Requires-Python)."""
    env = marker_environment()
    env.update(python_version=python_version, python_full_version=python_version + ".0",
               implementation_name="cpython", implementation_version=python_version + ".0",
               platform_python_implementation="CPython", platform_machine=machine,
               platform_system="Linux", sys_platform="linux", os_name="posix")
    return env


# --------------------------------------------------------------------------- installed distributions


@dataclass
class Dist:
    """One installed distribution (a *.dist-info directory and the files its RECORD names)."""

    name: str  # canonical (PEP 503)
    version: str
    info_dir: str  # relative to the target directory
    requires: List[str] = field(default_factory=list)
    requires_python: Optional[str] = None
    files: List[str] = field(default_factory=list)  # relative paths, existing ones only
    metadata: Dict[str, List[str]] = field(default_factory=dict)


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def read_dists(target: Path) -> Dict[str, Dist]:
    dists = {}
    for info in sorted(target.glob("*.dist-info")):
        meta = email.parser.HeaderParser().parsestr((info / "METADATA").read_text(encoding="utf-8"))
        files = [info.relative_to(target).as_posix() + "/" + p.relative_to(info).as_posix()
                 for p in sorted(info.rglob("*")) if p.is_file()]
        record = info / "RECORD"
        if record.exists():
            with record.open(newline="", encoding="utf-8") as f:
                listed = [row[0] for row in csv.reader(f) if row]
            files += [p for p in listed if not p.startswith(info.name + "/") and (target / p).is_file()
                      and not p.startswith("..")]
        dist = Dist(name=canonical(meta["Name"]), version=meta["Version"], info_dir=info.name,
                    requires=meta.get_all("Requires-Dist") or [], requires_python=meta.get("Requires-Python"),
                    files=sorted(set(files)),
                    metadata={k: meta.get_all(k) or [] for k in ("License-Expression", "License", "Classifier")})
        dists[dist.name] = dist
    return dists


# --------------------------------------------------------------------------- what is needed


def applies(requirement, env: Mapping[str, str], extra: str) -> bool:
    return requirement.marker is None or requirement.marker.evaluate({**env, "extra": extra})


def needed(top: Sequence[str], dists: Mapping[str, Dist], env: Mapping[str, str]) -> Dict[str, list]:
    """Every distribution the ``top`` requirements need in ``env``, following the installed
    distributions' Requires-Dist (with the extras asked for): name -> the requirements on it."""
    from packaging.requirements import Requirement

    need: Dict[str, list] = {}
    done: Dict[str, Set[str]] = {}
    stack = [r for r in map(Requirement, top) if applies(r, env, "")]
    while stack:
        req = stack.pop()
        name = canonical(req.name)
        need.setdefault(name, []).append(req)
        todo = ({""} | set(req.extras)) - done.get(name, set())
        if name not in dists or not todo:
            continue
        done.setdefault(name, set()).update(todo)
        for dep in map(Requirement, dists[name].requires):
            if any(applies(dep, env, extra) for extra in todo):
                stack.append(dep)
    return need


def problems(top: Sequence[str], dists: Mapping[str, Dist], env: Mapping[str, str]) -> List[str]:
    """What makes an installed set wrong for ``env``: a needed distribution missing, a version
    outside a requirement's range, a distribution whose Requires-Python excludes the target."""
    from packaging.specifiers import SpecifierSet

    out = []
    for name, reqs in sorted(needed(top, dists, env).items()):
        dist = dists.get(name)
        if dist is None:
            out.append(f"{name} is missing (needed as {', '.join(sorted(set(map(str, reqs))))})")
            continue
        for req in reqs:
            if req.specifier and not req.specifier.contains(dist.version, prereleases=True):
                out.append(f"{name} {dist.version} does not satisfy {req}")
        if dist.requires_python and not SpecifierSet(dist.requires_python).contains(
                env["python_full_version"], prereleases=True):
            out.append(f"{name} {dist.version} requires Python {dist.requires_python}")
    return out


# --------------------------------------------------------------------------- resolution


def find_interpreter(version: str) -> Optional[str]:
    """A CPython ``version`` with pip on this machine: $SSDFLEET_PYTHON_3_9 (for 3.9), then
    python3.9 in /usr/bin, /usr/local/bin, pyenv's installs (newest patch release first), PATH."""
    candidates = [os.environ.get("SSDFLEET_PYTHON_" + version.replace(".", "_")),
                  f"/usr/bin/python{version}", f"/usr/local/bin/python{version}"]
    candidates += sorted(glob.glob(os.path.expanduser(f"~/.pyenv/versions/{version}.*/bin/python{version}")),
                         key=lambda p: [int(x) for x in re.findall(r"\d+", p.split("/versions/")[1].split("/")[0])],
                         reverse=True)
    candidates.append(shutil.which(f"python{version}"))  # last: it may be a version manager's shim
    probe = "import sys, pip; print('%d.%d' % sys.version_info[:2])"
    for path in filter(None, candidates):
        try:
            r = subprocess.run([path, "-c", probe], capture_output=True, text=True, timeout=60)
        except OSError:
            continue
        if r.returncode == 0 and r.stdout.strip() == version:
            return path
    return None


def pip_install(python: str, target: Path, requirements: Path, platforms: Sequence[str],
                python_version: Optional[str]) -> None:
    argv = [python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-input",
            "--no-compile", "--no-warn-conflicts", "--only-binary=:all:", "--implementation", "cp", "--target", str(target)]
    for tag in platforms:
        argv += ["--platform", tag]
    if python_version:  # only for wheel tags and Requires-Python; markers stay this Python's
        argv += ["--python-version", python_version]
    argv += ["-r", str(requirements)]
    subprocess.run(argv, check=True, stdin=subprocess.DEVNULL)


def resolve_by_markers(top: Sequence[str], version: str, target: Path, platforms: Sequence[str],
                       env: Mapping[str, str], attempts: int = 8) -> Dict[str, Dist]:
    """pip here with --python-version, then whatever the target's markers need and pip left out
    is added as a plain requirement, and pip runs again, until nothing is missing."""
    from packaging.requirements import Requirement

    wanted = list(top)
    for _ in range(attempts):
        shutil.rmtree(target, ignore_errors=True)
        reqs = target.with_name(target.name + ".requirements.txt")
        reqs.write_text("".join(line + "\n" for line in wanted))
        pip_install(sys.executable, target, reqs, platforms, version)
        dists = read_dists(target)
        missing = {name: on for name, on in needed(top, dists, env).items() if name not in dists}
        if not missing:
            return dists
        for on in missing.values():
            for req in on:
                plain = Requirement(str(req))
                plain.marker = None
                print(f"pydeps: Python {version} needs {plain} (its marker is true there), pip left it out")
                wanted.append(str(plain))
    raise SystemExit(f"pydeps: Python {version}: still missing after {attempts} rounds: {sorted(missing)}")


def remove_dist(target: Path, dist: Dist) -> None:
    for rel in dist.files:
        (target / rel).unlink(missing_ok=True)
    shutil.rmtree(target / dist.info_dir, ignore_errors=True)
    remove_empty_dirs(target)


def remove_empty_dirs(top: Path) -> None:
    for folder, _dirs, _files in sorted(os.walk(top), key=lambda x: -len(x[0])):
        if Path(folder) != top and not os.listdir(folder):
            os.rmdir(folder)


def trim(target: Path, dists: Mapping[str, Dist], strip: str) -> List[str]:
    """No scripts, no byte code, no left-out accelerators, no #! line in a module; shared
    objects stripped as dh_strip does. Returns the wheel tags of the distributions that hold
    compiled code."""
    shutil.rmtree(target / "bin", ignore_errors=True)
    for cache in list(target.rglob("__pycache__")):
        shutil.rmtree(cache)
    for name, patterns in LEFT_OUT.items():
        if name in dists:
            for pattern in patterns:
                for path in target.glob(pattern):
                    path.unlink()
    remove_empty_dirs(target)
    for path in target.rglob("*.py"):
        drop_shebang(path)
    tags = []
    for dist in dists.values():
        objects = [target / p for p in dist.files if (target / p).is_file() and is_elf(target / p)]
        for obj in objects:
            subprocess.run([strip, "--remove-section=.comment", "--remove-section=.note", "--strip-unneeded",
                            str(obj)], check=True)
        if objects:
            wheel = (target / dist.info_dir / "WHEEL").read_text()
            tags.append(" ".join(re.findall(r"^Tag: (\S+)", wheel, re.M)))
    return tags


def drop_shebang(path: Path) -> None:
    """A module's #! line goes when the file is not executable (prometheus_client, carried until
    issue 32, shipped four):
    nothing runs it as a script, and lintian and rpmlint rightly call it an error, as Debian
    and Fedora packagers do when they remove it."""
    if path.stat().st_mode & 0o111:
        return
    with path.open("rb") as f:
        first = f.readline()
        if not first.startswith(b"#!"):
            return
        rest = f.read()
    path.write_bytes(rest)


def is_elf(path: Path) -> bool:
    with path.open("rb") as f:
        return f.read(4) == b"\x7fELF"


def glibc_floor(tag_lines: Iterable[str]) -> Tuple[int, int]:
    """The newest glibc any compiled wheel was built for: a wheel's own floor is the oldest of its
    platform tags (manylinux_2_17, or the legacy manylinux2014 = 2.17, 2010 = 2.12, 1 = 2.5)."""
    legacy = {"manylinux1": (2, 5), "manylinux2010": (2, 12), "manylinux2014": (2, 17)}
    floor = (2, 0)
    for line in tag_lines:
        versions = []
        for tag in line.split():
            plat = tag.split("-")[-1]
            for part in plat.split("."):
                m = re.match(r"manylinux_(\d+)_(\d+)_", part)
                if m:
                    versions.append((int(m.group(1)), int(m.group(2))))
                elif part.split("_")[0] in legacy:
                    versions.append(legacy[part.split("_")[0]])
        if versions:
            floor = max(floor, min(versions))
    return floor


def resolve(args: argparse.Namespace) -> None:
    """One target Python's dependencies in args.target, ready to package."""
    target, version = Path(args.target), args.python_version
    top = [line.strip() for line in Path(args.requirements).read_text().splitlines()
           if line.strip() and not line.startswith("#")]
    interpreter = None if args.resolver == "markers" else find_interpreter(version)
    if interpreter is None and args.resolver == "interpreter":
        raise SystemExit(f"pydeps: no Python {version} with pip found (SSDFLEET_PYTHON_{version.replace('.', '_')})")
    if interpreter:
        env = json.loads(subprocess.run([interpreter, os.path.abspath(__file__), "environment"], check=True,
                                        capture_output=True, text=True).stdout)
        env["platform_machine"] = args.machine  # the target's, should this build be for another
        shutil.rmtree(target, ignore_errors=True)
        pip_install(interpreter, target, Path(args.requirements), args.platform, None)
        dists = read_dists(target)
        how = f"by {interpreter} (Python {env['python_full_version']}) itself"
    else:
        env = target_environment(version, args.machine)
        dists = resolve_by_markers(top, version, target, args.platform, env)
        how = f"by this machine's pip for Python {version}, completed by marker evaluation"
    found = problems(top, dists, env)
    if found:
        raise SystemExit(f"pydeps: Python {version}: the resolved set is wrong:\n  " + "\n  ".join(found))
    for name in sorted(set(dists) - set(needed(top, dists, env))):
        print(f"pydeps: Python {version}: {name} is not needed there (its marker is false), left out")
        remove_dist(target, dists.pop(name))
    tags = trim(target, dists, args.strip)
    summary = {"python": version, "resolved": how, "environment": env,
               "distributions": {d.name: d.version for d in dists.values()}, "compiled_tags": tags}
    Path(args.summary).write_text(json.dumps(summary, indent=1))
    print(f"pydeps: Python {version}: {len(dists)} distributions resolved {how}")


# --------------------------------------------------------------------------- sharing


def fingerprint(target: Path, dist: Dist) -> Tuple[Tuple[str, str], ...]:
    out = []
    for rel in dist.files:
        if rel.startswith(dist.info_dir + "/") and rel.split("/")[-1] in BOOKKEEPING:
            continue
        path = target / rel
        if path.is_file():
            out.append((rel, hashlib.sha256(path.read_bytes()).hexdigest()))
    return tuple(out)


def shareable(sets: Mapping[Path, Mapping[str, Dist]]) -> Set[str]:
    """Distributions that every set has, byte for byte the same (bookkeeping aside), without
    an extension module built for one Python version, and owning their top-level names alone
    among the shared (a namespace package split between two sets would not import)."""
    first, *rest = sets
    same = set()
    for name, dist in sets[first].items():
        if any(VERSION_SPECIFIC_EXT.search(f) for f in dist.files):
            continue
        mark = fingerprint(first, dist)
        if all(name in sets[d] and fingerprint(d, sets[d][name]) == mark for d in rest):
            same.add(name)
    while True:
        owners: Dict[str, Set[str]] = {}
        for dists in sets.values():
            for dist in dists.values():
                for rel in dist.files:
                    owners.setdefault(rel.split("/")[0], set()).add(dist.name)
        mixed = {n for top, names in owners.items() if names & same and names - same for n in names & same}
        if not mixed:
            return same
        same -= mixed


def share(args: argparse.Namespace) -> None:
    """Moves the distributions every set holds alike to args.common and links the ones some
    sets hold alike; writes the copyright file when asked (now that every file's place is
    known); drops pip's bookkeeping; writes cpXY.versions.txt beside each set (what that Python
    sees and where it is)."""
    common = Path(args.common)
    dirs = [Path(d) for d in args.dirs]
    before = sum(du(d) for d in dirs)
    sets = {d: read_dists(d) for d in dirs}
    same = shareable(sets)
    common.mkdir(parents=True, exist_ok=True)
    for name in sorted(same):
        for rel in sets[dirs[0]][name].files:
            (common / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.move(str(dirs[0] / rel), str(common / rel))
        for d in dirs[1:]:
            remove_dist(d, sets[d][name])
    for d in dirs:
        remove_empty_dirs(d)
        d.mkdir(exist_ok=True)  # the launcher looks for it: it says which Pythons are built for
    linked = link_alike(dirs, sets, same)
    placed = [(common, sets[dirs[0]][n]) for n in sorted(same)]
    placed += [(d, dist) for d in dirs for n, dist in sorted(sets[d].items()) if n not in same and (d, n) not in linked]
    if args.copyright_out:
        head = Path(args.copyright_head).read_text().rstrip("\n")
        text = head + "\n\n" + "\n\n".join(copyright_paragraphs(placed, args.installed_at)) + "\n"
        Path(args.copyright_out).write_text(text)
    for d in [common, *dirs]:
        for info in d.glob("*.dist-info"):
            for name in BOOKKEEPING:
                (info / name).unlink(missing_ok=True)
    for d in dirs:
        seen = [(dist, common if n in same else linked.get((d, n), d)) for n, dist in sets[d].items()]
        lines = sorted(f"{dist.info_dir[:-len('.dist-info')]} {where.name}" for dist, where in seen)
        (d.parent / f"{d.name}.versions.txt").write_text("".join(f"{line}\n" for line in lines))
    after = du(common) + sum(du(d) for d in dirs)
    print(f"pydeps: {', '.join(d.name for d in dirs)}: {before / 1e6:.1f} MB resolved and trimmed, "
          f"{after / 1e6:.1f} MB with {len(same)} of {len(sets[dirs[0]])} distributions in {common.name}/ "
          f"and {len(linked)} linked to another version's alike copy")


def top_owners(dists: Mapping[str, Dist]) -> Dict[str, Set[str]]:
    owners: Dict[str, Set[str]] = {}
    for dist in dists.values():
        for rel in dist.files:
            owners.setdefault(rel.split("/")[0], set()).add(dist.name)
    return owners


def link_alike(dirs: Sequence[Path], sets: Mapping[Path, Mapping[str, Dist]],
               skip: Set[str]) -> Dict[Tuple[Path, str], Path]:
    """A distribution that some sets hold byte for byte the same (not all: those are in common)
    stays in the first and is reached from the others by relative symlinks of its top-level
    names, so each version of a pure-Python library is in the package once. Returns
    {(set, name): the set holding the files}."""
    owners = {d: top_owners(sets[d]) for d in dirs}
    linked: Dict[Tuple[Path, str], Path] = {}
    for i, home in enumerate(dirs):
        for name, dist in sets[home].items():
            tops = sorted({rel.split("/")[0] for rel in dist.files})
            if name in skip or (home, name) in linked or any(VERSION_SPECIFIC_EXT.search(f) for f in dist.files) \
                    or any(owners[home][t] != {name} for t in tops):
                continue
            mark = fingerprint(home, dist)
            for other in dirs[i + 1:]:
                twin = sets[other].get(name)
                if twin is None or (other, name) in linked or fingerprint(other, twin) != mark \
                        or any(owners[other].get(t) != {name} for t in tops):
                    continue
                for top in tops:
                    path = other / top
                    if path.is_dir() and not path.is_symlink():
                        shutil.rmtree(path)
                    else:
                        path.unlink()
                    path.symlink_to(os.path.relpath(home / top, other))
                linked[(other, name)] = home
    return linked


def du(top: Path) -> int:
    """Bytes in the regular files under top (symlinks not followed)."""
    return sum(os.lstat(os.path.join(folder, f)).st_size for folder, _dirs, files in os.walk(top) for f in files
               if not os.path.islink(os.path.join(folder, f)))


# --------------------------------------------------------------------------- copyright


def licence_of(dist: Dist, texts: Sequence[str] = ()) -> str:
    """The distribution's licence as an SPDX expression, from its metadata; a BSD classifier
    alone is told apart by the licence text (the third clause: "Neither the name ...")."""
    classifiers = {"MIT License": "MIT", "Apache Software License": "Apache-2.0",
                   "Python Software Foundation License": "PSF-2.0", "ISC License (ISCL)": "ISC"}
    for value in dist.metadata["License-Expression"]:
        return value.strip()
    for value in dist.metadata["License"]:
        if re.fullmatch(r"[A-Za-z0-9.+-]+( (AND|OR) [A-Za-z0-9.+-]+)*", value.strip()):
            return value.strip()
    found = sorted({classifiers[c.split(" :: ")[-1]] for c in dist.metadata["Classifier"]
                    if c.startswith("License ::") and c.split(" :: ")[-1] in classifiers})
    if len(found) == 1:
        return found[0]
    if any(c.endswith(":: BSD License") for c in dist.metadata["Classifier"]) and texts:
        return "BSD-3-Clause" if any("neither the name" in t.lower() for t in texts) else "BSD-2-Clause"
    raise SystemExit(f"pydeps: cannot tell the licence of {dist.name} {dist.version} from its metadata")


def paragraph(text: str) -> str:
    """Text as a DEP-5 field continuation: each line indented, empty lines as ' .'."""
    return "\n".join(" " + line.rstrip() if line.strip() else " ." for line in text.strip("\n").splitlines())


APACHE_POINTER = ("Apache License 2.0: on Debian systems the full text is in\n"
                  "/usr/share/common-licenses/Apache-2.0; the library's own copy is in\n{path}/.")


def is_apache_text(text: str) -> bool:
    flat = " ".join(text.split())
    return "Apache License" in flat and "Version 2.0, January 2004" in flat and "TERMS AND CONDITIONS" in flat


def licence_files(info: Path) -> List[Path]:
    """The licence texts a wheel ships: under licenses/ (PEP 639), or beside METADATA."""
    named = re.compile(r"^(LICEN[CS]E|COPYING|NOTICE)", re.I)
    return sorted(p for p in info.rglob("*") if p.is_file() and
                  (p.parent.name == "licenses" or (p.parent == info and named.match(p.name))))


def copyright_paragraphs(placed: Sequence[Tuple[Path, Dist]], installed_at: str) -> List[str]:
    """One DEP-5 Files paragraph per bundled distribution: where it is installed, the copyright
    lines and the licence text its wheel ships (Apache-2.0 points to common-licenses)."""
    out = []
    for folder, dist in placed:
        where = f"{installed_at.strip('/')}/{folder.name}"
        files = sorted({f"{where}/{f.split('/')[0]}" + ("/*" if "/" in f else "") for f in dist.files})
        texts = [p.read_text(encoding="utf-8", errors="replace") for p in licence_files(folder / dist.info_dir)]
        # Debian has the Apache License 2.0 in common-licenses: point there, as policy asks.
        texts = [APACHE_POINTER.format(path=f"/{where}/{dist.info_dir}") if is_apache_text(t) else t for t in texts]
        holders = sorted({line.strip() for t in texts for line in t.splitlines()
                          if re.match(r"\s*(Copyright\b|\(c\))", line, re.I)})
        expression = licence_of(dist, texts)
        body = "\n\n".join(texts) or f"No licence text in the wheel; see {dist.name}'s project."
        left_out = "; its optional C accelerator is left out" if dist.name in LEFT_OUT else ""
        out.append(f"Files: {' '.join(files)}\n"
                   f"Copyright: {paragraph(chr(10).join(holders) or 'the authors of ' + dist.name).lstrip()}\n"
                   f"Comment: {dist.name} {dist.version}, a Python library ssdfleet needs, from its released "
                   f"wheel{left_out}.\n"
                   f"License: {expression}\n{paragraph(body)}")
    return out


# --------------------------------------------------------------------------- command line


def main(argv: Optional[Sequence[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("environment")
    r = sub.add_parser("resolve")
    r.add_argument("--python-version", required=True)
    r.add_argument("--requirements", required=True)
    r.add_argument("--target", required=True)
    r.add_argument("--platform", action="append", required=True)
    r.add_argument("--machine", default="x86_64")
    r.add_argument("--resolver", choices=("auto", "interpreter", "markers"), default="auto")
    r.add_argument("--strip", default="strip")
    r.add_argument("--summary", required=True)
    s = sub.add_parser("share")
    s.add_argument("--common", required=True)
    s.add_argument("--copyright-head", help="the copyright file's first paragraphs")
    s.add_argument("--copyright-out", help="write the copyright file here")
    s.add_argument("--installed-at", default="/usr/lib/ssdfleet/deps")
    s.add_argument("dirs", nargs="+")
    g = sub.add_parser("glibc")
    g.add_argument("summaries", nargs="+")
    args = parser.parse_args(argv)
    if args.command == "environment":
        print(json.dumps(marker_environment()))
    elif args.command == "resolve":
        resolve(args)
    elif args.command == "share":
        share(args)
    else:
        tags = [t for s in args.summaries for t in json.loads(Path(s).read_text())["compiled_tags"]]
        major, minor = glibc_floor(tags)
        print(f"{major}.{minor}")


if __name__ == "__main__":
    main()
