#!/usr/bin/env bash
# Build the ssdfleet .deb and .rpm from this checkout (docs/packaging.md).
#
#   packaging/build.sh                  both packages into dist/
#   packaging/build.sh --deb --out DIR  only the .deb, into DIR
#   packaging/build.sh --install-tools  only install nfpm (pinned below) with `go install`
#
# Needs python3 (3.9+) with pip, and nfpm; with Go on PATH a missing nfpm is installed from the
# Go module proxy at the version pinned here. Network: PyPI (setuptools for the wheel build,
# the dependencies' wheels) and the Go module proxy, nothing else.
#
# The version is agent/__init__.py's __version__, read from the wheel that is built from it.
set -euo pipefail

NFPM_MODULE=github.com/goreleaser/nfpm/v2/cmd/nfpm
NFPM_VERSION=v2.45.0
# The python3 of each distribution the packages are for (docs/packaging.md): Ubuntu 22.04 has
# 3.10, Debian 12 3.11, Ubuntu 24.04 3.12, Debian 13 3.13; RHEL/Rocky/Alma 9 has 3.9.
DEB_PYTHONS="3.10 3.11 3.12 3.13"
RPM_PYTHONS="3.9"

PROG=$(basename "$0")
SRC=$(cd "$(dirname "$0")/.." && pwd)
OUT=$SRC/dist
PYTHON=${PYTHON:-python3}
MAINTAINER=${SSDFLEET_MAINTAINER:-ssdfleet maintainers <maintainers@ssdfleet.invalid>}
FORMATS=()
INSTALL_TOOLS_ONLY=no
KEEP_STAGE=

die() { echo "$PROG: $*" >&2; exit 1; }
say() { echo "$PROG: $*"; }

while [ $# -gt 0 ]; do
    case "$1" in
        --deb) FORMATS+=(deb); shift ;;
        --rpm) FORMATS+=(rpm); shift ;;
        --out) [ $# -ge 2 ] || die "--out needs a directory"; OUT=$2; shift 2 ;;
        --keep-stage) [ $# -ge 2 ] || die "--keep-stage needs a directory"; KEEP_STAGE=$2; shift 2 ;;
        --install-tools) INSTALL_TOOLS_ONLY=yes; shift ;;
        -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) die "unknown option: $1" ;;
    esac
done
[ ${#FORMATS[@]} -gt 0 ] || FORMATS=(deb rpm)

find_nfpm() {
    if [ -n "${NFPM:-}" ]; then echo "$NFPM"; return; fi
    if command -v nfpm >/dev/null 2>&1; then command -v nfpm; return; fi
    if command -v go >/dev/null 2>&1; then
        local gobin
        gobin=$(go env GOBIN); [ -n "$gobin" ] || gobin=$(go env GOPATH)/bin
        if [ -x "$gobin/nfpm" ]; then echo "$gobin/nfpm"; return; fi
    fi
    return 1
}

install_nfpm() {
    command -v go >/dev/null 2>&1 || die "nfpm is not installed and there is no Go to build it (apt-get install golang-go)"
    say "installing nfpm $NFPM_VERSION with go install"
    # CGO off: a static binary, and no C toolchain needed.
    CGO_ENABLED=0 go install "$NFPM_MODULE@$NFPM_VERSION"
}

NFPM_BIN=$(find_nfpm) || { install_nfpm; NFPM_BIN=$(find_nfpm) || die "nfpm not found after go install"; }
[ "$INSTALL_TOOLS_ONLY" = no ] || { say "nfpm: $NFPM_BIN"; exit 0; }

"$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 9))' || die "$PYTHON is older than Python 3.9"

case "${ARCH:-$(uname -m)}" in
    x86_64|amd64) GOARCH=amd64; WHEEL_ARCH=x86_64 ;;
    aarch64|arm64) GOARCH=arm64; WHEEL_ARCH=aarch64 ;;
    *) die "no build for architecture ${ARCH:-$(uname -m)}" ;;
esac

WORK=$(mktemp -d "${TMPDIR:-/tmp}/ssdfleet-pkg.XXXXXX")
cleanup() { rm -rf "$WORK"; }
trap cleanup EXIT INT TERM
STAGE=$WORK/stage
mkdir -p "$STAGE" "$WORK/src" "$WORK/wheel"

export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1 PIP_NO_WARN_SCRIPT_LOCATION=1
# pip runs in a virtualenv of its own: it then judges --target installs by themselves, not
# against whatever this host has installed, and the manual page below runs in it.
"$PYTHON" -m venv "$WORK/venv"
PIP=("$WORK/venv/bin/python" -m pip --quiet)

# --------------------------------------------------------------------------- the wheel
# From a copy of the files it is made of, so the checkout gains no build/ or *.egg-info.
# The top-level package folders (a sub-package such as collectors.smartctl comes with its parent).
PACKAGES=$(sed -n 's/^packages *= *\[\(.*\)\].*/\1/p' "$SRC/pyproject.toml" | tr -d '",' | tr ' ' '\n' | grep -v '\.')
[ -n "$PACKAGES" ] || die "cannot read the package list from pyproject.toml"
cp "$SRC/pyproject.toml" "$SRC/README.md" "$WORK/src/"
for pkg in $PACKAGES; do cp -R "$SRC/$pkg" "$WORK/src/$pkg"; done
find "$WORK/src" -name __pycache__ -type d -prune -exec rm -rf {} +
say "building the ssdfleet wheel"
"${PIP[@]}" wheel --no-deps --wheel-dir "$WORK/wheel" "$WORK/src"
WHEEL=$(ls "$WORK"/wheel/ssdfleet-*.whl)
VERSION=$(basename "$WHEEL" | cut -d- -f2)

# The newest changelog entry must be this version.
CHANGELOG_VERSION=$(sed -n 's/^## \([^ ]*\) - .*/\1/p' "$SRC/CHANGELOG.md" | head -n 1)
[ "$CHANGELOG_VERSION" = "$VERSION" ] || die "CHANGELOG.md's newest entry is $CHANGELOG_VERSION, the code says $VERSION"

# PEP 440 to nfpm: 1.2.3 stays, 1.2.3rc1 / 1.2.3.dev0 become version 1.2.3 with a prerelease,
# which nfpm writes as 1.2.3~rc1 so that it sorts before 1.2.3 in dpkg and rpm alike.
RELEASE_PART=$(printf '%s' "$VERSION" | sed -E 's/^([0-9]+(\.[0-9]+)*).*/\1/')
PRERELEASE=$(printf '%s' "${VERSION#"$RELEASE_PART"}" | sed -E 's/^[.-]//')

# --------------------------------------------------------------------------- the program
# ssdfleet's code once, its dependencies once per supported Python (compiled ones such as
# pydantic-core and PyYAML differ by version), all as wheels from PyPI: --only-binary means no
# compiler runs here, and --python-version/--platform pick the target's wheels, not this host's.
"${PIP[@]}" install --no-deps --no-compile --target "$WORK/app" "$WHEEL"
rm -rf "$WORK/app/bin"
# Requires-Dist lines of the wheel, extras left out.
"$PYTHON" - "$WHEEL" > "$WORK/requirements.txt" <<'EOF'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as whl:
    meta = next(n for n in whl.namelist() if n.endswith(".dist-info/METADATA"))
    for line in whl.read(meta).decode().splitlines():
        if line.startswith("Requires-Dist:") and "extra ==" not in line:
            print(line.split(":", 1)[1].strip())
EOF

deps_for() {  # deps_for PYTHON_VERSION DIR
    local py=$1 dir=$2
    "${PIP[@]}" install --no-compile --only-binary=:all: --implementation cp --python-version "$py" \
        --platform "manylinux_2_28_$WHEEL_ARCH" --platform "manylinux_2_17_$WHEEL_ARCH" \
        --platform "manylinux2014_$WHEEL_ARCH" --target "$dir" -r "$WORK/requirements.txt"
    rm -rf "$dir/bin"
}

stage_lib() {  # stage_lib PYTHON_VERSIONS...: $STAGE/lib for one format
    local lib=$STAGE/lib py
    rm -rf "$lib"
    mkdir -p "$lib/deps"
    cp -R "$WORK/app" "$lib/app"
    for py in "$@"; do
        say "dependencies for Python $py"
        deps_for "$py" "$lib/deps/cp${py/./}"
    done
    # Which versions went in, for anyone reading the installed tree.
    for d in "$lib"/deps/cp*; do
        (cd "$d" && ls -d ./*.dist-info | sed 's#^\./##; s#\.dist-info$##' | sort) > "$d.versions.txt"
    done
}

# --------------------------------------------------------------------------- everything else
install -m 0755 "$SRC/packaging/launcher.py" "$STAGE/launcher.py"
mkdir -p "$STAGE/units" "$STAGE/scripts" "$STAGE/share/prometheus" "$STAGE/share/alertmanager" \
         "$STAGE/share/dashboards" "$STAGE/doc"
for unit in ssdfleet-agent.service ssdfleet-probe-helper.service; do
    grep -q 'ExecStart=/opt/ssdfleet/bin/ssdfleet ' "$SRC/deploy/systemd/$unit" || die "$unit: unexpected ExecStart="
    sed 's#/opt/ssdfleet/bin/ssdfleet #/usr/bin/ssdfleet #' "$SRC/deploy/systemd/$unit" > "$STAGE/units/$unit"
done
cp "$SRC/deploy/systemd/ssdfleet.sysusers.conf" "$STAGE/ssdfleet.sysusers.conf"
cp "$SRC/deploy/config.example.yml" "$STAGE/config.example.yml"
cp "$SRC/deploy/config.example.yml" "$STAGE/share/"
cp "$SRC"/deploy/prometheus/ssdfleet-*.yml "$STAGE/share/prometheus/"
cp "$SRC/deploy/prometheus/prometheus.yml" "$STAGE/share/prometheus/prometheus.example.yml"
cp -R "$SRC/deploy/prometheus/targets" "$STAGE/share/prometheus/targets"
cp "$SRC/deploy/alertmanager/alertmanager.yml" "$STAGE/share/alertmanager/alertmanager.example.yml"
cp "$SRC"/dashboards/json/*.json "$STAGE/share/dashboards/"
cp "$SRC/README.md" "$SRC/CHANGELOG.md" "$STAGE/doc/"
cp "$SRC"/docs/*.md "$STAGE/doc/"

# The maintainer scripts; preinstall gets the sysusers line, since the file is not unpacked yet.
cp "$SRC"/packaging/scripts/*.sh "$STAGE/scripts/"
SYSUSERS_LINE=$(grep -v '^#' "$SRC/deploy/systemd/ssdfleet.sysusers.conf" | grep .)
[ "$(printf '%s\n' "$SYSUSERS_LINE" | wc -l)" = 1 ] || die "ssdfleet.sysusers.conf should hold one line"
case "$SYSUSERS_LINE" in *"'"*|*'|'*|*'&'*|*'\'*) die "ssdfleet.sysusers.conf: the line may not hold ' | & or \\" ;; esac
sed -i "s|@SYSUSERS_LINE@|$SYSUSERS_LINE|" "$STAGE/scripts/preinstall.sh"

# nfpm's changelog (chglog YAML) from CHANGELOG.md: "## VERSION - DATE" and "- " items.
"$PYTHON" - "$SRC/CHANGELOG.md" "$MAINTAINER" > "$STAGE/changelog.yml" <<'EOF'
import json, re, sys
text, packager = open(sys.argv[1], encoding="utf-8").read(), sys.argv[2]
entries = []
for head, body in re.findall(r"^## (\S+ - \S+)\n(.*?)(?=^## |\Z)", text, re.M | re.S):
    version, date = head.split(" - ")
    # As the packages spell it: 0.1.0rc1 -> 0.1.0~rc1-1 (see PRERELEASE above).
    release, pre = re.match(r"(\d+(?:\.\d+)*)[.-]?(.*)", version).groups()
    version = release + ("~" + pre if pre else "") + "-1"
    items = [" ".join(i.split()) for i in re.split(r"^- ", body, flags=re.M)[1:]]
    entries.append({"semver": version, "date": date + "T00:00:00Z", "packager": packager,
                    "changes": [{"note": i} for i in items]})
if not entries:
    sys.exit("CHANGELOG.md: no '## VERSION - DATE' entries")
print(json.dumps(entries, indent=1))  # JSON is YAML
EOF

# The manual page, from the parser of the code being packaged.
say "writing the manual page"
"${PIP[@]}" install --no-compile -r "$WORK/requirements.txt"
PYTHONPATH="$WORK/app" "$WORK/venv/bin/python" -m agent.manpage > "$WORK/ssdfleet.1"
gzip -9 -n -c "$WORK/ssdfleet.1" > "$STAGE/ssdfleet.1.gz"
cp "$SRC/packaging/nfpm.yaml" "$STAGE/nfpm.yaml"

# Pin file times, so that two builds of one tree differ only where their contents do.
SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git -C "$SRC" log -1 --format=%ct 2>/dev/null || date +%s)}
export SOURCE_DATE_EPOCH

# --------------------------------------------------------------------------- the packages
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
py_minor() { echo "${1#*.}"; }
for format in "${FORMATS[@]}"; do
    if [ "$format" = deb ]; then
        # shellcheck disable=SC2086
        stage_lib $DEB_PYTHONS
        set -- $DEB_PYTHONS
        first=$1; last=${*: -1}
        export SSDFLEET_DEB_PYTHON_MIN=$first SSDFLEET_DEB_PYTHON_MAX="3.$(( $(py_minor "$last") + 1 ))"
    else
        # shellcheck disable=SC2086
        stage_lib $RPM_PYTHONS
        [ "$(echo $RPM_PYTHONS | wc -w)" = 1 ] || die "the .rpm names one python(abi); give RPM_PYTHONS one version"
        export SSDFLEET_RPM_PYTHON=$RPM_PYTHONS
    fi
    find "$STAGE" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
    say "packaging the .$format"
    (cd "$STAGE" && SSDFLEET_FORMAT=$format SSDFLEET_VERSION=$RELEASE_PART SSDFLEET_PRERELEASE=$PRERELEASE \
        SSDFLEET_ARCH=$GOARCH SSDFLEET_MAINTAINER=$MAINTAINER \
        "$NFPM_BIN" package --config nfpm.yaml --packager "$format" --target "$OUT/")
done
if [ -n "$KEEP_STAGE" ]; then rm -rf "$KEEP_STAGE"; cp -R "$STAGE" "$KEEP_STAGE"; fi
say "ssdfleet $VERSION: $(cd "$OUT" && ls ssdfleet[_-]"$RELEASE_PART"* | tr '\n' ' ')"
