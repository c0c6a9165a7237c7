#!/usr/bin/env bash
# Build the ssdfleet .deb and .rpm from this checkout (docs/packaging.md).
#
#   packaging/build.sh                  both packages into dist/
#   packaging/build.sh --deb --out DIR  only the .deb, into DIR
#   packaging/build.sh --install-tools  only install nfpm (pinned below) with `go install`
#   packaging/build.sh --deps-cache DIR reuse the libraries resolved, and the build tools' venv
#                                       made, by an earlier build that kept them in DIR (tests)
#
# Needs python3 (3.9+) with pip and venv, binutils' strip, and nfpm; with Go on PATH a missing
# nfpm is installed from the Go module proxy at the version pinned here. Each target Python
# (DEB_PYTHONS, RPM_PYTHONS) resolves its own libraries where this machine has it (python3.X on
# PATH, in /usr/bin, /usr/local/bin or pyenv, or $SSDFLEET_PYTHON_3_X); otherwise this python3's
# pip does, completed by evaluating the markers for that version (packaging/pydeps.py;
# SSDFLEET_RESOLVER=markers forces that way, =interpreter refuses it). Network: PyPI
# (setuptools and packaging for the build, the libraries' wheels) and the Go module proxy.
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
RESOLVER=${SSDFLEET_RESOLVER:-auto}
STRIP=${STRIP:-strip}
MAINTAINER=${SSDFLEET_MAINTAINER:-ssdfleet maintainers <maintainers@ssdfleet.invalid>}
FORMATS=()
INSTALL_TOOLS_ONLY=no
KEEP_STAGE=
DEPS_CACHE=

die() { echo "$PROG: $*" >&2; exit 1; }
T0=$(date +%s)
say() { echo "$PROG: [$(( $(date +%s) - T0 )) s] $*"; }

while [ $# -gt 0 ]; do
    case "$1" in
        --deb) FORMATS+=(deb); shift ;;
        --rpm) FORMATS+=(rpm); shift ;;
        --out) [ $# -ge 2 ] || die "--out needs a directory"; OUT=$2; shift 2 ;;
        --keep-stage) [ $# -ge 2 ] || die "--keep-stage needs a directory"; KEEP_STAGE=$2; shift 2 ;;
        --deps-cache) [ $# -ge 2 ] || die "--deps-cache needs a directory"; DEPS_CACHE=$2; shift 2 ;;
        --install-tools) INSTALL_TOOLS_ONLY=yes; shift ;;
        -h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
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
command -v "$STRIP" >/dev/null 2>&1 || die "no $STRIP (binutils): the libraries' shared objects are stripped"

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

export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1 PIP_NO_WARN_SCRIPT_LOCATION=1 PIP_ROOT_USER_ACTION=ignore
# pip runs in a virtualenv of its own: it then judges --target installs by themselves, not
# against whatever this host has installed, and the manual page below runs in it.
# The build tools in it: setuptools (and wheel, for setuptools < 70.1) build the wheel below (no
# isolated build environment to make), packaging evaluates markers (packaging/pydeps.py). With
# --deps-cache the venv is kept there and reused: creating it (ensurepip compiles pip) is the
# slowest step of a build whose libraries are cached.
VENV=$WORK/venv
[ -z "$DEPS_CACHE" ] || VENV=$DEPS_CACHE/venv-$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
if [ -n "$DEPS_CACHE" ] && "$VENV/bin/python" -c 'import setuptools, wheel, packaging' 2>/dev/null; then
    say "the build tools from $VENV (made by an earlier build)"
else
    rm -rf "$VENV"
    "$PYTHON" -m venv "$VENV"
    "$VENV/bin/python" -m pip --quiet install "setuptools>=61" wheel packaging
fi
PIP=("$VENV/bin/python" -m pip --quiet)
PYDEPS=("$VENV/bin/python" "$SRC/packaging/pydeps.py")

# --------------------------------------------------------------------------- the wheel
# From a copy of the files it is made of, so the checkout gains no build/ or *.egg-info.
# The top-level package folders (a sub-package such as collectors.smartctl comes with its parent).
PACKAGES=$(sed -n 's/^packages *= *\[\(.*\)\].*/\1/p' "$SRC/pyproject.toml" | tr -d '",' | tr ' ' '\n' | grep -v '\.')
[ -n "$PACKAGES" ] || die "cannot read the package list from pyproject.toml"
cp "$SRC/pyproject.toml" "$SRC/README.md" "$WORK/src/"
for pkg in $PACKAGES; do cp -R "$SRC/$pkg" "$WORK/src/$pkg"; done
find "$WORK/src" -name __pycache__ -type d -prune -exec rm -rf {} +
say "building the ssdfleet wheel"
"${PIP[@]}" wheel --no-deps --no-build-isolation --wheel-dir "$WORK/wheel" "$WORK/src"
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
# ssdfleet's code once; its libraries resolved for each target Python (see the header and
# packaging/pydeps.py), from released wheels only: --only-binary means no compiler runs here,
# and --platform picks manylinux wheels that load on every distribution named above.
"${PIP[@]}" install --no-deps --no-compile --target "$WORK/app" "$WHEEL"
rm -rf "$WORK/app/bin"
for f in RECORD INSTALLER REQUESTED direct_url.json WHEEL; do rm -f "$WORK"/app/*.dist-info/"$f"; done
# Requires-Dist lines of the wheel, extras left out.
"$PYTHON" - "$WHEEL" > "$WORK/requirements.txt" <<'EOF'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as whl:
    meta = next(n for n in whl.namelist() if n.endswith(".dist-info/METADATA"))
    for line in whl.read(meta).decode().splitlines():
        if line.startswith("Requires-Dist:") and "extra ==" not in line:
            print(line.split(":", 1)[1].strip())
EOF

abi() { echo "cp${1/./}"; }

resolve_all() {  # resolve_all PYTHON_VERSIONS...: $WORK/deps/cpXY for each, side by side
    local py pid failed=no pids=()
    mkdir -p "$WORK/deps"
    for py in "$@"; do
        "${PYDEPS[@]}" resolve --python-version "$py" --requirements "$WORK/requirements.txt" \
            --target "$WORK/deps/$(abi "$py")" --summary "$WORK/deps/$(abi "$py").json" \
            --resolver "$RESOLVER" --machine "$WHEEL_ARCH" --strip "$STRIP" \
            --platform "manylinux_2_28_$WHEEL_ARCH" --platform "manylinux_2_17_$WHEEL_ARCH" \
            --platform "manylinux2014_$WHEEL_ARCH" > "$WORK/deps/$(abi "$py").log" 2>&1 &
        pids+=($!)
    done
    for pid in "${pids[@]}"; do wait "$pid" || failed=yes; done
    for py in "$@"; do sed 's/^/    /' "$WORK/deps/$(abi "$py").log"; done
    [ "$failed" = no ] || die "resolving the libraries failed (above)"
}

stage_lib() {  # stage_lib PYTHON_VERSIONS...: $STAGE/lib, $STAGE/copyright and GLIBC for one format
    local lib=$STAGE/lib py dirs=() summaries=()
    rm -rf "$lib"
    mkdir -p "$lib/deps"
    cp -R "$WORK/app" "$lib/app"
    for py in "$@"; do
        cp -R "$WORK/deps/$(abi "$py")" "$lib/deps/"
        dirs+=("$lib/deps/$(abi "$py")")
        summaries+=("$WORK/deps/$(abi "$py").json")
    done
    "${PYDEPS[@]}" share --common "$lib/deps/common" --copyright-head "$SRC/packaging/debian/copyright" \
        --copyright-out "$STAGE/copyright" "${dirs[@]}"
    GLIBC=$("${PYDEPS[@]}" glibc "${summaries[@]}")
}

# shellcheck disable=SC2086
ALL_PYTHONS=$(printf '%s\n' $DEB_PYTHONS $RPM_PYTHONS | sort -u -V | tr '\n' ' ')
# What the cache must match: the requirements, the Pythons, the resolver, the architecture.
CACHE_KEY=$(cat "$WORK/requirements.txt"; echo "$ALL_PYTHONS $RESOLVER $WHEEL_ARCH")
if [ -n "$DEPS_CACHE" ] && [ -d "$DEPS_CACHE/deps" ] && [ "$(cat "$DEPS_CACHE/key" 2>/dev/null)" = "$CACHE_KEY" ]; then
    say "the libraries for Python ${ALL_PYTHONS}from $DEPS_CACHE (resolved by an earlier build)"
    cp -R "$DEPS_CACHE/deps" "$WORK/deps"
else
    say "resolving the libraries for Python ${ALL_PYTHONS}(resolver: $RESOLVER)"
    # shellcheck disable=SC2086
    resolve_all $ALL_PYTHONS
    if [ -n "$DEPS_CACHE" ]; then
        rm -rf "$DEPS_CACHE/deps"; mkdir -p "$DEPS_CACHE"
        cp -R "$WORK/deps" "$DEPS_CACHE/deps"; printf '%s\n' "$CACHE_KEY" > "$DEPS_CACHE/key"
    fi
fi

# --------------------------------------------------------------------------- everything else
install -m 0755 "$SRC/packaging/launcher.py" "$STAGE/launcher.py"
mkdir -p "$STAGE/scripts/deb" "$STAGE/scripts/rpm" "$STAGE/share/prometheus" "$STAGE/share/alertmanager" \
         "$STAGE/share/dashboards" "$STAGE/doc"
cp "$SRC/deploy/systemd/ssdfleet.sysusers.conf" "$STAGE/ssdfleet.sysusers.conf"
cp "$SRC/deploy/config.example.yml" "$STAGE/config.example.yml"
cp "$SRC/deploy/config.example.yml" "$STAGE/share/"
cp "$SRC"/deploy/prometheus/ssdfleet-*.yml "$STAGE/share/prometheus/"
cp "$SRC/deploy/prometheus/prometheus.yml" "$STAGE/share/prometheus/prometheus.example.yml"
cp -R "$SRC/deploy/prometheus/targets" "$STAGE/share/prometheus/targets"
cp "$SRC/deploy/alertmanager/alertmanager.yml" "$STAGE/share/alertmanager/alertmanager.example.yml"
cp "$SRC"/dashboards/json/*.json "$STAGE/share/dashboards/"
# The .deb's upstream changelog is changelog.gz (Debian policy 12.7); the .rpm's CHANGELOG.md.
cp "$SRC/README.md" "$SRC"/docs/*.md "$STAGE/doc/"
cp "$SRC/CHANGELOG.md" "$STAGE/CHANGELOG.md"
gzip -9 -n -c "$SRC/CHANGELOG.md" > "$STAGE/changelog.gz"
cp "$SRC/packaging/debian/lintian-overrides" "$STAGE/lintian-overrides"

stage_units() {  # stage_units OPTIONS_FILE: the units with the installed program and its options
    local unit var
    mkdir -p "$STAGE/units"
    for unit in ssdfleet-agent.service ssdfleet-probe-helper.service; do
        grep -q '^ExecStart=/opt/ssdfleet/bin/ssdfleet ' "$SRC/deploy/systemd/$unit" || die "$unit: unexpected ExecStart="
        grep -q '^\[Service\]$' "$SRC/deploy/systemd/$unit" || die "$unit: no [Service] section"
        case $unit in *agent*) var=SSDFLEET_AGENT_ARGS ;; *) var=SSDFLEET_PROBE_HELPER_ARGS ;; esac
        # $VAR unbraced: systemd splits it into words, and an empty one gives no argument.
        sed -e "s#^ExecStart=/opt/ssdfleet/bin/ssdfleet \(.*\)\$#ExecStart=/usr/bin/ssdfleet \1 \$$var#" \
            -e "s#^\[Service\]\$#[Service]\n\# Extra options for the command below: $var in this file.\nEnvironmentFile=-$1#" \
            "$SRC/deploy/systemd/$unit" > "$STAGE/units/$unit"
    done
    sed "s#@ENVFILE@#$1#" "$SRC/packaging/ssdfleet.default" > "$STAGE/ssdfleet.default"
}

# The maintainer scripts, with the shared functions and the sysusers line put in (the preinst
# creates the user before /usr/lib/sysusers.d/ssdfleet.conf is unpacked).
SYSUSERS_LINE=$(grep -v '^#' "$SRC/deploy/systemd/ssdfleet.sysusers.conf" | grep .)
[ "$(printf '%s\n' "$SYSUSERS_LINE" | wc -l)" = 1 ] || die "ssdfleet.sysusers.conf should hold one line"
case "$SYSUSERS_LINE" in *"'"*|*'|'*|*'&'*|*'\'*) die "ssdfleet.sysusers.conf: the line may not hold ' | & or \\" ;; esac
for script in "$SRC"/packaging/scripts/deb/* "$SRC"/packaging/scripts/rpm/*; do
    dest=$STAGE/scripts/$(basename "$(dirname "$script")")/$(basename "$script")
    sed -e "/^# @COMMON@\$/{r $SRC/packaging/scripts/common.sh" -e 'd;}' "$script" \
        | sed "s|@SYSUSERS_LINE@|$SYSUSERS_LINE|" > "$dest"
    chmod 0755 "$dest"
done

# The changelogs: the .rpm's through nfpm, the .deb's changelog.Debian.gz written here.
"$PYTHON" "$SRC/packaging/changelogs.py" "$SRC/CHANGELOG.md" "$MAINTAINER" \
    --rpm "$STAGE/changelog.yml" --deb "$WORK/changelog.Debian"
gzip -9 -n -c "$WORK/changelog.Debian" > "$STAGE/changelog.Debian.gz"

# The manual page, from the parser of the code being packaged, run with the libraries resolved
# for this Python when it is one of the targets (else pip installs them here).
say "writing the manual page"
HOST_ABI=$("$VENV/bin/python" -c 'import sys; print("cp%d%d" % sys.version_info[:2])')
if [ -d "$WORK/deps/$HOST_ABI" ]; then
    MAN_PATH=$WORK/app:$WORK/deps/$HOST_ABI
else
    "${PIP[@]}" install --no-compile -r "$WORK/requirements.txt"
    MAN_PATH=$WORK/app
fi
PYTHONPATH=$MAN_PATH "$VENV/bin/python" -m agent.manpage > "$WORK/ssdfleet.1"
gzip -9 -n -c "$WORK/ssdfleet.1" > "$STAGE/ssdfleet.1.gz"

nfpm_config() {  # nfpm_config FORMAT: $STAGE/nfpm.yaml for that format (see packaging/nfpm.yaml)
    local licence
    if [ "$1" = deb ]; then
        sed -e '/^license:/d' -e '/^changelog:/d' "$SRC/packaging/nfpm.yaml" > "$STAGE/nfpm.yaml"
        return
    fi
    # Every licence inside, as one SPDX expression (the copyright file says which file has which).
    licence=$(sed -n 's/^License: \(.*\)$/\1/p' "$STAGE/copyright" | sed 's/^GPL-2+$/GPL-2.0-or-later/' \
        | tr ' ' '\n' | grep -v -x -e AND -e OR | sort -u | paste -sd ' ' - | sed 's/ / AND /g')
    sed "s|^license: .*|license: $licence|" "$SRC/packaging/nfpm.yaml" > "$STAGE/nfpm.yaml"
    {
        for f in "$STAGE"/doc/* "$STAGE/CHANGELOG.md"; do
            printf '  - src: %s\n    dst: /usr/share/doc/ssdfleet/%s\n    type: doc\n    packager: rpm\n' \
                "${f#"$STAGE"/}" "$(basename "$f")"
        done
    } >> "$STAGE/nfpm.yaml"
}

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
        stage_units /etc/default/ssdfleet
        # shellcheck disable=SC2086
        set -- $DEB_PYTHONS
        first=$1; last=${*: -1}
        export SSDFLEET_DEB_PYTHON_MIN=$first SSDFLEET_DEB_PYTHON_MAX="3.$(( $(py_minor "$last") + 1 ))"
    else
        # shellcheck disable=SC2086
        stage_lib $RPM_PYTHONS
        stage_units /etc/sysconfig/ssdfleet
        # shellcheck disable=SC2086
        [ "$(echo $RPM_PYTHONS | wc -w)" = 1 ] || die "the .rpm names one python(abi); give RPM_PYTHONS one version"
        export SSDFLEET_RPM_PYTHON=$RPM_PYTHONS
    fi
    nfpm_config "$format"
    find "$STAGE" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
    say "packaging the .$format"
    (cd "$STAGE" && SSDFLEET_FORMAT=$format SSDFLEET_VERSION=$RELEASE_PART SSDFLEET_PRERELEASE=$PRERELEASE \
        SSDFLEET_ARCH=$GOARCH SSDFLEET_MAINTAINER=$MAINTAINER SSDFLEET_GLIBC=$GLIBC \
        "$NFPM_BIN" package --config nfpm.yaml --packager "$format" --target "$OUT/")
    if [ -n "$KEEP_STAGE" ]; then rm -rf "$KEEP_STAGE/$format"; mkdir -p "$KEEP_STAGE"; cp -R "$STAGE" "$KEEP_STAGE/$format"; fi
done

# What was made: the files, and what each installs (dpkg counts KiB; rpm bytes).
for pkg in "$OUT"/ssdfleet[_-]"$RELEASE_PART"*; do
    case $pkg in
        *.deb) size=$(( $(dpkg-deb -f "$pkg" Installed-Size 2>/dev/null || echo 0) * 1024 )) ;;
        *.rpm) size=$(rpm -qp --qf '%{SIZE}' "$pkg" 2>/dev/null || echo 0) ;;
        *) continue ;;
    esac
    say "$(basename "$pkg"): $(( $(wc -c < "$pkg") / 1000 )) kB, installed size $(awk -v b="$size" 'BEGIN { printf "%.1f MB", b / 1e6 }')"
done
say "ssdfleet $VERSION built"
