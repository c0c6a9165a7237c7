#!/bin/sh
# ssdfleet demo: simulated agents, Prometheus and Alertmanager on 127.0.0.1.
# Options are passed on (see run_demo.py --help): --agents N --drives N --speed S --minutes M
set -e
here=$(cd "$(dirname "$0")" && pwd)
exec "${PYTHON:-python3}" "$here/run_demo.py" "$@"
