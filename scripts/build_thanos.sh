#!/usr/bin/env bash
# Build the thanos binary from its Go module, for the opt-in end-to-end test on a clustered
# store (tests/test_thanos_e2e.py). CI does not run this: it takes minutes.
#
#   scripts/build_thanos.sh DIR      -> DIR/thanos   (then: SSDFLEET_THANOS=DIR/thanos pytest ...)
#
# The version is pinned (THANOS_VERSION). Thanos's go.mod has replace directives, so
# `go install module@version` refuses it: the script downloads the module with `go mod
# download`, copies it to a writable build directory (DIR/thanos-src-VERSION) and runs
# `go build ./cmd/thanos` inside it, so the replace directives and go.sum apply. Only the
# packages ./cmd/thanos imports are fetched.
#
# Why v0.36.1 and not v0.37.x: from v0.37 the receive component links capnproto, which
# needs zenhack.net/go/util, and the Go module proxy this was built with answers 403 for
# every zenhack.net module (no other version to replace it with). v0.36.1 has no such
# dependency and the same sidecar / query / rule components.
#
# Idempotent: when DIR/thanos already reports the pinned version, nothing is done.
# Needs Go (go.mod says 1.21 or later); built with Go 1.26 and GOFLAGS=-buildvcs=false.
set -euo pipefail

THANOS_VERSION=${THANOS_VERSION:-v0.36.1}
dest=${1:?usage: scripts/build_thanos.sh DIR}
mkdir -p "$dest"
dest=$(cd "$dest" && pwd)
bin="$dest/thanos"

if [ -x "$bin" ] && "$bin" --version 2>&1 | grep -q "version ${THANOS_VERSION#v}"; then
  echo "$bin is thanos $THANOS_VERSION already"
  exit 0
fi

command -v go >/dev/null || { echo "go not found" >&2; exit 1; }
export GOFLAGS="${GOFLAGS:--buildvcs=false}"

module="github.com/thanos-io/thanos@$THANOS_VERSION"
# `go mod download` needs a module to run in when the cache is cold: use a scratch one.
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
(cd "$scratch" && go mod init scratch >/dev/null 2>&1 && go mod download "$module")
moddir=$(cd "$scratch" && go mod download -json "$module" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[ -d "$moddir" ] || { echo "module $module not downloaded" >&2; exit 1; }

src="$dest/thanos-src-$THANOS_VERSION"
if [ ! -f "$src/go.mod" ]; then
  rm -rf "$src.tmp"
  cp -r "$moddir" "$src.tmp"
  chmod -R u+w "$src.tmp"  # the module cache is read-only
  mv "$src.tmp" "$src"
fi

started=$(date +%s)
# The version string `thanos --version` prints (the Makefile sets it the same way).
ldflags="-X github.com/prometheus/common/version.Version=${THANOS_VERSION#v}"
(cd "$src" && nice -n 19 go build -ldflags "$ldflags" -o "$bin.tmp" ./cmd/thanos)
mv "$bin.tmp" "$bin"
echo "built $bin ($("$bin" --version 2>&1 | head -1)) in $(( $(date +%s) - started )) s"
