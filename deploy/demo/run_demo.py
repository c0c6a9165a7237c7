"""A whole ssdfleet stack on 127.0.0.1 from simulated hosts: agents, Prometheus, Alertmanager.

    python deploy/demo/run_demo.py [--agents 4] [--drives 8] [--speed 1] [--minutes 60]
                                   [--report-every 30]

Starts ``--agents`` real ``ssdfleet agent --simulate`` processes (each its own simulated host
with 90 days of history, simulator/demo.py), a Prometheus that scrapes them with the shipped
recording and alert rules (deploy/prometheus/ssdfleet-*.yml), and an Alertmanager with the
shipped example configuration (deploy/alertmanager/alertmanager.yml, whose webhooks point at
127.0.0.1:9095, where nothing listens: the alerts are visible in the Alertmanager UI). Prints
the URLs, then every ``--report-every`` seconds the agents up and the alerts pending or firing.

In real time (the default) each host is the demo's: most drives healthy, one to watch, one at
8% life left (SSDLifeLeftLow) and the LITEON with its write cache off (SSDWriteCacheDisabled).
``--speed 3600`` wears a year in under three hours: projected wear-out dates come days away and
the wear-out alerts fire for most drives, the physics honest, only faster.

Bounded: everything stops after ``--minutes`` or on Ctrl-C, whichever comes first, and the work
directory is removed unless ``--keep`` is given. Every process is started in its own session
and stopped by its own pid.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Dict, List, Optional

import yaml

ROOT = Path(__file__).resolve().parent.parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def which(*names: str) -> Optional[str]:
    for name in names:
        path = shutil.which(name)
        if path:
            return path
    return None


def wait_http(url: str, proc: subprocess.Popen, timeout: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return True
        except OSError:
            time.sleep(0.5)
    return False


def main() -> int:
    ap = argparse.ArgumentParser(description="ssdfleet demo stack on simulated hosts")
    ap.add_argument("--agents", type=int, default=4)
    ap.add_argument("--drives", type=int, default=8, help="drives per simulated host")
    ap.add_argument("--speed", type=float, default=1.0, help="simulated seconds per real second (1: real time)")
    ap.add_argument("--minutes", type=float, default=60.0, help="stop everything after this long")
    ap.add_argument("--workdir", help="where to put the hosts, the TSDB and the logs")
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    ap.add_argument("--scrape-interval", type=int, default=15, metavar="SECONDS",
                    help="Prometheus scrape interval, and the evaluation interval of every rule group")
    ap.add_argument("--report-every", type=float, default=30.0, metavar="SECONDS",
                    help="print the targets up and the alerts pending or firing this often")
    args = ap.parse_args()

    prometheus = which("prometheus")
    alertmanager = which("prometheus-alertmanager", "alertmanager")
    if prometheus is None:
        sys.exit("prometheus is not installed (Debian: apt-get install prometheus)")
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="ssdfleet-demo-"))
    workdir.mkdir(parents=True, exist_ok=True)
    procs: List[subprocess.Popen] = []
    logs = []
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())

    def start(name: str, argv: List[str], env: Optional[dict] = None) -> subprocess.Popen:
        log = open(workdir / f"{name}.log", "wb")
        logs.append(log)
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, cwd=str(ROOT), env=env,
                                start_new_session=True)
        procs.append(proc)
        return proc

    try:
        env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        targets = []
        for i in range(args.agents):
            port = free_port()
            targets.append(f"127.0.0.1:{port}")
            start(f"agent{i}", [sys.executable, "-m", "agent", "agent", "--simulate", str(args.drives),
                                "--simulate-speed", str(args.speed), "--simulate-dir", str(workdir / f"host{i}"),
                                "--listen-address", f"127.0.0.1:{port}",
                                # poll faster than the defaults: simulated drives change fast
                                "--interval.smartctl", "30", "--interval.shannon", "15",
                                "--interval.write_cache", "15", "--interval.diskstats", "5"], env)
        am_url = None
        if alertmanager is not None:
            am_port = free_port()
            am_url = f"http://127.0.0.1:{am_port}"
            start("alertmanager", [alertmanager, f"--config.file={ROOT / 'deploy/alertmanager/alertmanager.yml'}",
                                   f"--storage.path={workdir / 'alertmanager'}",
                                   f"--web.listen-address=127.0.0.1:{am_port}",
                                   f"--cluster.listen-address=127.0.0.1:{free_port()}"])
        rules = []
        for name in ("ssdfleet-recording.yml", "ssdfleet-alerts.yml"):
            src = ROOT / "deploy" / "prometheus" / name
            if src.exists():
                # The shipped groups evaluate every minute or three; the demo evaluates them at
                # its scrape interval so alerts show within seconds (their for: stays as shipped).
                doc = yaml.safe_load(src.read_text())
                for group in doc.get("groups", []):
                    group["interval"] = f"{args.scrape_interval}s"
                (workdir / name).write_text(yaml.safe_dump(doc, sort_keys=False))
                rules.append(name)
        config = {
            "global": {"scrape_interval": f"{args.scrape_interval}s",
                       "evaluation_interval": f"{args.scrape_interval}s"},
            "rule_files": rules,
            "scrape_configs": [{"job_name": "ssdfleet", "static_configs": [
                {"targets": targets, "labels": {"role": "postgresql"}}]}],
        }
        if am_url:
            config["alerting"] = {"alertmanagers": [{"static_configs": [{"targets": [am_url[7:]]}]}]}
        (workdir / "prometheus.yml").write_text(json.dumps(config, indent=1))
        prom_port = free_port()
        prom_url = f"http://127.0.0.1:{prom_port}"
        prom = start("prometheus", [prometheus, f"--config.file={workdir / 'prometheus.yml'}",
                                    f"--storage.tsdb.path={workdir / 'tsdb'}",
                                    f"--web.listen-address=127.0.0.1:{prom_port}"])
        if not wait_http(prom_url + "/-/ready", prom):
            sys.exit("prometheus did not start; see " + str(workdir / "prometheus.log"))
        print(f"ssdfleet demo (simulated hosts, speed x{args.speed:g})")
        for t in targets:
            print(f"  agent        http://{t}/  (/metrics, /api/v1/drives, /runbooks)")
        print(f"  prometheus   {prom_url}/alerts   {prom_url}/rules")
        if am_url:
            print(f"  alertmanager {am_url}/")
        print(f"  logs and data in {workdir}")
        print(f"Stops after {args.minutes:g} minutes or on Ctrl-C.", flush=True)
        started = time.monotonic()
        deadline = started + args.minutes * 60
        next_report = started + args.report_every
        while not stop.wait(1.0):
            now = time.monotonic()
            if now > deadline:
                break
            if now >= next_report:
                next_report = now + args.report_every
                print(report(prom_url, now - started), flush=True)
            dead = [p for p in procs if p.poll() is not None]
            if dead:
                print(f"a process exited ({dead[0].args[0]} ... status {dead[0].returncode}); stopping")
                break
    finally:
        for proc in reversed(procs):
            if proc.poll() is None:
                proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)
        for log in logs:
            log.close()
        if not args.keep and not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)
    return 0


def report(prom_url: str, elapsed: float) -> str:
    """One line: targets up, and each alert pending or firing with the drive it names."""
    def get(path: str):
        with urllib.request.urlopen(prom_url + path, timeout=5) as r:
            return json.load(r)["data"]

    try:
        up = get("/api/v1/query?query=up")["result"]
        alerts = get("/api/v1/alerts")["alerts"]
    except (OSError, ValueError, KeyError) as exc:
        return f"[{elapsed / 60:4.1f} min] prometheus not answering ({exc})"
    live = sum(1 for r in up if r["value"][1] == "1")
    by_state: Dict[str, Dict[str, List[str]]] = {"firing": {}, "pending": {}}
    for a in alerts:
        labels = a["labels"]
        by_state.setdefault(a["state"], {}).setdefault(labels.get("alertname", "?"), []).append(
            labels.get("device") or labels.get("instance") or "")
    parts = []
    for state in ("firing", "pending"):
        named = by_state.get(state) or {}
        text = ", ".join(
            f"{name} x{len(where)}" + (f" ({' '.join(sorted(set(where)))})" if len(set(where)) <= 3 else "")
            for name, where in sorted(named.items()))
        parts.append(f"{state}: {text or 'none'}")
    return f"[{elapsed / 60:4.1f} min] {live}/{len(up)} agents up; " + "; ".join(parts)


if __name__ == "__main__":
    sys.exit(main())
