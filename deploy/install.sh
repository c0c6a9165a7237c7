#!/bin/sh
# Install (or remove) ssdfleet on this host: a virtualenv under /opt/ssdfleet, the config in
# /etc/ssdfleet, the systemd units and the ssdfleet system user. Running it again gives the
# same result; an existing /etc/ssdfleet/config.yml is never overwritten.
# On Debian, Ubuntu and RHEL 9 install the .deb or .rpm instead (make packages,
# docs/packaging.md); this script is for hosts that take no package.
#
#   deploy/install.sh                       install from this checkout (pip fetches the deps)
#   deploy/install.sh --wheel-dir DIR       ... taking the dependencies from DIR only (offline)
#   deploy/install.sh --uninstall           remove what install put there (config kept if edited);
#                                           /opt/ssdfleet/bin/ssdfleet-uninstall does the same
#                                           without a checkout
#   deploy/install.sh --uninstall --purge   ... and the config, state and system user too
#
# --root DIR stages everything under DIR instead of / (tests). The virtualenv inside refers to
# its staged path (virtualenvs cannot be moved), so a staged tree is for inspection and tests,
# not for copying onto another machine. Under --root no user is created and systemd is not
# touched. See docs/security.md, "Installing".
set -eu

PROG=$(basename "$0")
SRC=$(cd "$(dirname "$0")/.." && pwd)
ROOT=/
PREFIX=/opt/ssdfleet
PYTHON=${PYTHON:-python3}
WHEEL_DIR=
NO_DEPS=no
SYSTEM_SITE=no
NO_BUILD_ISOLATION=no
CREATE_USER=auto
ACTION=install
PURGE=no

UNITS="ssdfleet-agent.service ssdfleet-probe-helper.service"
USER_NAME=ssdfleet

usage() {
    cat <<EOF
usage: $PROG [options]
  --prefix DIR             virtualenv location (default /opt/ssdfleet)
  --root DIR               stage under DIR instead of / (no user, no systemctl)
  --python PATH            Python 3.9+ used to create the virtualenv (default python3)
  --wheel-dir DIR          install dependencies from DIR only, no package index
  --no-deps                do not install dependencies (with --system-site-packages)
  --system-site-packages   let the virtualenv see the system's packages
  --no-build-isolation     build ssdfleet with the virtualenv's setuptools (offline)
  --no-user                do not create the ssdfleet user (the default under --root)
  --create-user            create it even under --root (systemd-sysusers --root)
  --uninstall              remove the installation
  --purge                  with --uninstall: also the config, /var/lib/ssdfleet and the user
EOF
}

die() { echo "$PROG: $*" >&2; exit 1; }
say() { echo "$PROG: $*"; }

while [ $# -gt 0 ]; do
    case "$1" in
        --prefix) [ $# -ge 2 ] || die "--prefix needs a directory"; PREFIX=$2; shift 2 ;;
        --prefix=*) PREFIX=${1#*=}; shift ;;
        --root) [ $# -ge 2 ] || die "--root needs a directory"; ROOT=$2; shift 2 ;;
        --root=*) ROOT=${1#*=}; shift ;;
        --python) [ $# -ge 2 ] || die "--python needs a path"; PYTHON=$2; shift 2 ;;
        --wheel-dir) [ $# -ge 2 ] || die "--wheel-dir needs a directory"; WHEEL_DIR=$2; shift 2 ;;
        --no-deps) NO_DEPS=yes; shift ;;
        --system-site-packages) SYSTEM_SITE=yes; shift ;;
        --no-build-isolation) NO_BUILD_ISOLATION=yes; shift ;;
        --no-user) CREATE_USER=no; shift ;;
        --create-user) CREATE_USER=yes; shift ;;
        --uninstall) ACTION=uninstall; shift ;;
        --purge) PURGE=yes; shift ;;
        -h|--help) usage; exit 0 ;;
        *) usage >&2; die "unknown option: $1" ;;
    esac
done

# Paths go into unit files and rm -rf: plain absolute paths only.
case "$PREFIX" in
    /*) ;;
    *) die "--prefix must be an absolute path" ;;
esac
if ! printf '%s' "$PREFIX" | grep -Eq '^/[A-Za-z0-9._/-]*[A-Za-z0-9._-]$'; then
    die "--prefix may hold only letters, digits, '.', '_', '-' and '/'"
fi
[ "$PREFIX" != "/" ] || die "--prefix / is not allowed"
ROOT=$(cd "$ROOT" 2>/dev/null && pwd) || die "--root: no such directory"
if [ "$ROOT" = "/" ]; then
    R=
else
    R=$ROOT
fi
DEST=$R$PREFIX
ETC=$R/etc/ssdfleet
UNIT_DIR=$R/etc/systemd/system
SYSUSERS=$R/etc/sysusers.d/ssdfleet.conf
SHARE=$DEST/share/ssdfleet
[ "$CREATE_USER" != auto ] || { [ -z "$R" ] && CREATE_USER=yes || CREATE_USER=no; }

systemd_running() { [ -z "$R" ] && [ -d /run/systemd/system ]; }

is_our_venv() { [ -f "$1/pyvenv.cfg" ] && [ -f "$1/share/ssdfleet/config.example.yml" ]; }

# --------------------------------------------------------------------------- uninstall

if [ "$ACTION" = uninstall ]; then
    if systemd_running; then
        # shellcheck disable=SC2086
        systemctl disable --now $UNITS 2>/dev/null || true
    fi
    for unit in $UNITS; do
        rm -f "$UNIT_DIR/$unit"
    done
    rm -f "$SYSUSERS"
    if [ -f "$ETC/config.yml" ]; then
        if [ "$PURGE" = yes ] || { [ -f "$SHARE/config.example.yml" ] && cmp -s "$ETC/config.yml" "$SHARE/config.example.yml"; }; then
            rm -f "$ETC/config.yml"
        else
            say "keeping $ETC/config.yml (edited; --purge removes it)"
        fi
    fi
    rmdir "$ETC" 2>/dev/null || true
    if [ -d "$DEST" ]; then
        if is_our_venv "$DEST"; then
            rm -rf "$DEST"
        else
            say "not removing $DEST: it does not look like an ssdfleet virtualenv"
        fi
    fi
    if [ "$PURGE" = yes ]; then
        rm -rf "$R/var/lib/ssdfleet"
        if [ -z "$R" ] && getent passwd "$USER_NAME" >/dev/null 2>&1; then
            userdel "$USER_NAME" || say "could not remove user $USER_NAME"
        fi
    fi
    if [ -n "$R" ]; then
        # A staged tree: drop the folders install made, where nothing else is left in them.
        for dir in "$UNIT_DIR" "$(dirname "$SYSUSERS")" "$(dirname "$DEST")" "$(dirname "$ETC")" "$R/var/lib"; do
            while [ "$dir" != "$R" ] && rmdir "$dir" 2>/dev/null; do
                dir=$(dirname "$dir")
            done
        done
    fi
    if systemd_running; then
        systemctl daemon-reload || true
    fi
    say "removed ssdfleet from ${R:-/}"
    exit 0
fi

# --------------------------------------------------------------------------- install

[ -f "$SRC/pyproject.toml" ] || die "run me from an ssdfleet checkout ($SRC has no pyproject.toml)"
"$PYTHON" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 9) else 1)' 2>/dev/null \
    || die "$PYTHON is not Python 3.9 or later"

if [ -e "$DEST" ] && ! [ -f "$DEST/pyvenv.cfg" ] && [ -n "$(ls -A "$DEST" 2>/dev/null)" ]; then
    die "$DEST exists and is not a virtualenv; not touching it"
fi

TMP=$(mktemp -d "${TMPDIR:-/tmp}/ssdfleet-install.XXXXXX")
trap 'rm -rf "$TMP"' EXIT INT TERM

export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1

if ! [ -x "$DEST/bin/python" ]; then
    say "creating virtualenv $DEST"
    mkdir -p "$(dirname "$DEST")"
    if [ "$SYSTEM_SITE" = yes ]; then
        "$PYTHON" -m venv --system-site-packages "$DEST"
    else
        "$PYTHON" -m venv "$DEST"
    fi
fi
PIP="$DEST/bin/python -m pip --quiet"

# Build from a copy: a build in the checkout would leave build/ and *.egg-info behind.
# The top-level package folders (a sub-package such as collectors.smartctl comes with its parent).
PACKAGES=$(sed -n 's/^packages *= *\[\(.*\)\].*/\1/p' "$SRC/pyproject.toml" | tr -d '",' | tr ' ' '\n' | grep -v '\.' )
[ -n "$PACKAGES" ] || die "cannot read the package list from $SRC/pyproject.toml"
mkdir -p "$TMP/src" "$TMP/wheel"
for f in pyproject.toml README.md LICENSE; do
    [ ! -f "$SRC/$f" ] || cp "$SRC/$f" "$TMP/src/"
done
for pkg in $PACKAGES; do
    [ -d "$SRC/$pkg" ] || die "package $pkg listed in pyproject.toml is missing"
    cp -R "$SRC/$pkg" "$TMP/src/$pkg"
done
find "$TMP/src" -name __pycache__ -type d -prune -exec rm -rf {} +

INDEX_OPTS=
[ -z "$WHEEL_DIR" ] || INDEX_OPTS="--no-index --find-links $WHEEL_DIR"
BUILD_OPTS=$INDEX_OPTS
[ "$NO_BUILD_ISOLATION" = no ] || BUILD_OPTS="$BUILD_OPTS --no-build-isolation"

say "building ssdfleet"
# shellcheck disable=SC2086
$PIP wheel --no-deps $BUILD_OPTS --wheel-dir "$TMP/wheel" "$TMP/src"
WHEEL=$(ls "$TMP"/wheel/ssdfleet-*.whl)
VERSION=$(basename "$WHEEL" | cut -d- -f2)

if [ "$NO_DEPS" = no ]; then
    say "installing dependencies"
    # shellcheck disable=SC2086
    $PIP install $INDEX_OPTS "$WHEEL"
fi
# Installed by name from the local wheel (not by file path, which pip would record in
# direct_url.json with this run's temporary path), and always replaced, so a changed
# checkout with the same version number still lands.
say "installing ssdfleet $VERSION into $DEST"
$PIP install --no-index --find-links "$TMP/wheel" --no-deps --force-reinstall "ssdfleet==$VERSION"

mkdir -p "$SHARE"
install -m 0644 "$SRC/deploy/config.example.yml" "$SHARE/config.example.yml"
# An uninstaller that needs no checkout: this script, kept beside the virtualenv, run with
# --uninstall and the prefix and root of this install.
install -m 0755 "$SRC/deploy/install.sh" "$SHARE/install.sh"
cat > "$TMP/ssdfleet-uninstall" <<UNINSTALL
#!/bin/sh
# Removes ssdfleet as deploy/install.sh installed it here. --purge also removes the config,
# /var/lib/ssdfleet and the ssdfleet user.
exec /bin/sh "$SHARE/install.sh" --uninstall --prefix "$PREFIX" --root "$ROOT" "\$@"
UNINSTALL
install -m 0755 "$TMP/ssdfleet-uninstall" "$DEST/bin/ssdfleet-uninstall"

# The system user, declared for systemd-sysusers (useradd where there is none).
mkdir -p "$(dirname "$SYSUSERS")"
install -m 0644 "$SRC/deploy/systemd/ssdfleet.sysusers.conf" "$SYSUSERS"
if [ "$CREATE_USER" = yes ]; then
    if [ -z "$R" ] && getent passwd "$USER_NAME" >/dev/null 2>&1; then
        :  # already there
    elif command -v systemd-sysusers >/dev/null 2>&1; then
        if [ -z "$R" ]; then
            systemd-sysusers "$SYSUSERS"
        else
            systemd-sysusers --root="$R" "$SYSUSERS"
        fi
    elif [ -z "$R" ]; then
        useradd --system --user-group --home-dir /var/lib/ssdfleet --no-create-home \
            --shell /usr/sbin/nologin --comment "ssdfleet SSD health agent" "$USER_NAME"
    else
        die "systemd-sysusers is needed to create the user under --root"
    fi
fi

# Configuration: root-owned, readable by the agent's group, never overwritten.
mkdir -p "$ETC"
chmod 0750 "$ETC"
if [ ! -e "$ETC/config.yml" ]; then
    install -m 0640 "$SRC/deploy/config.example.yml" "$ETC/config.yml"
    say "wrote $ETC/config.yml"
else
    say "keeping existing $ETC/config.yml"
fi
if [ -z "$R" ] && getent group "$USER_NAME" >/dev/null 2>&1; then
    chgrp "$USER_NAME" "$ETC" "$ETC/config.yml"
fi

mkdir -p "$UNIT_DIR"
for unit in $UNITS; do
    sed "s#/opt/ssdfleet/#$PREFIX/#g" "$SRC/deploy/systemd/$unit" > "$TMP/$unit"
    install -m 0644 "$TMP/$unit" "$UNIT_DIR/$unit"
done

if systemd_running; then
    systemctl daemon-reload
    say "units installed; start them with: systemctl enable --now $UNITS"
else
    say "units installed in $UNIT_DIR"
fi
say "installed ssdfleet $VERSION into ${R:-/}"
