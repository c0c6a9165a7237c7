#!/usr/bin/env bash
# Run the ssdfleet test suite from a plain clone.
# Installs the Debian packages the end-to-end tests use (when run as root and they are
# missing), makes a virtualenv in .venv, installs ssdfleet with its test extras, runs pytest.
set -euo pipefail
cd "$(dirname "$0")/.."

debs=(prometheus prometheus-alertmanager victoria-metrics smartmontools hdparm nvme-cli openssl chromium systemd rpm
      lintian rpmlint faketime)
missing=()
for pkg in "${debs[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    export DEBIAN_FRONTEND=noninteractive
    # Wait for another apt or dpkg rather than fail; `apt-get update` ignores Lock::Timeout on
    # older apt, so it is tried again.
    wait_lock=(-o DPkg::Lock::Timeout=600 -o Acquire::Retries=3)
    for try in 1 2 3 4 5 6 7 8 9 10; do
      apt-get "${wait_lock[@]}" update -qq && break
      [ "$try" = 10 ] && { echo "apt-get update failed 10 times" >&2; exit 1; }
      echo "apt-get update failed (try $try; another apt running?), again in 30 s" >&2
      sleep 30
    done
    apt-get "${wait_lock[@]}" install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "note: missing Debian packages ${missing[*]}; tests that need them will be skipped" >&2
  fi
fi

# nfpm for the package tests (tests/test_packages.py), built with Go at the pinned version.
if command -v go >/dev/null; then
  bash packaging/build.sh --install-tools >/dev/null || echo "note: could not install nfpm; the package tests will be skipped" >&2
else
  echo "note: no Go to install nfpm with; the package tests will be skipped" >&2
fi

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
.venv/bin/python -m pip install -q -e '.[test]'
# Two test processes (pytest-xdist), whole files to each: most tests wait on an agent, a
# Prometheus or a browser they started, so two share a 2-core machine well (the CI machine's
# suite time: see docs/testing.md). SSDFLEET_TEST_WORKERS=0 runs in one process.
workers=${SSDFLEET_TEST_WORKERS:-2}
if [ "$workers" = 0 ]; then
  exec .venv/bin/python -m pytest "$@"
fi
exec .venv/bin/python -m pytest -n "$workers" --dist loadfile "$@"
