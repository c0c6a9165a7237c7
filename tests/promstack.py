"""A real Prometheus (and Alertmanager, VictoriaMetrics, vmagent, vmalert) for tests, plus a
static scrape target.

Tests that check PromQL, recording rules, alerts or dashboards run the same binaries a user
runs, on 127.0.0.1 with free ports and a temporary storage directory, instead of mocking the
query engine. Everything started here is stopped at teardown: SIGTERM, a bounded wait, SIGKILL,
a second bounded wait, then we stop waiting (a test must never hang on a stuck child).

Use the pytest fixtures (``prometheus_factory``, ``alertmanager_factory``,
``static_exporter_factory``) so finalizers do the cleanup; import them into a test module or a
conftest::

    from tests.promstack import prometheus_factory, static_exporter_factory  # noqa: F401

The classes work without pytest as well (``with Prometheus(...) as prom:``).

Binaries are looked up on PATH (``prometheus``, ``prometheus-alertmanager`` then
``alertmanager``, ``victoria-metrics``, ``vmagent`` and ``vmalert``) unless ``PROMETHEUS_BIN`` /
``ALERTMANAGER_BIN`` / ``VICTORIAMETRICS_BIN`` / ``VMAGENT_BIN`` / ``VMALERT_BIN`` name them.
:class:`VMAgent` and :class:`VMAlert` are started by the test that needs them (with
``request.addfinalizer(x.stop)``), as tests/test_victoriametrics_e2e.py does. A fixture skips
the test, with the reason, only when the binary is missing; any other failure is an error.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Union

import pytest
import requests
import yaml

EXPOSITION_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

# Children still running, so that an interpreter exit (even after a failed fixture setup)
# does not leave a Prometheus listening on the machine.
_LIVE: set[_ManagedProcess] = set()
_LIVE_LOCK = threading.Lock()


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago (the kernel picked it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def required_binary(given: Optional[str], finder: Callable[[], Optional[str]], name: str, env_var: str) -> str:
    """``given``, else what ``finder`` finds; FileNotFoundError naming ``env_var`` when neither."""
    found = given or finder()
    if not found:
        raise FileNotFoundError(f"{name} binary not found (set {env_var} or put it on PATH)")
    return found


def find_binary(names: Sequence[str], env_var: Optional[str] = None) -> Optional[str]:
    """Absolute path of the first of ``names`` found (``env_var`` overrides), or None."""
    if env_var and os.environ.get(env_var):
        candidate = os.environ[env_var]
        found = shutil.which(candidate)
        return found or (candidate if os.path.isfile(candidate) else None)
    for name in names:
        found = shutil.which(name)
        if found:
            return found
    return None


def prometheus_binary() -> Optional[str]:
    return find_binary(["prometheus"], "PROMETHEUS_BIN")


def skip_or_fail(reason: str) -> None:
    """Skip the test because a binary is missing, or fail it when SSDFLEET_REQUIRE_TOOLS=1
    (CI installs the tools, so a missing one there is a broken install, not a reason to skip)."""
    if os.environ.get("SSDFLEET_REQUIRE_TOOLS") == "1":
        pytest.fail(f"{reason}; SSDFLEET_REQUIRE_TOOLS=1 forbids skipping")
    pytest.skip(reason)


def victoriametrics_binary() -> Optional[str]:
    # Debian's victoria-metrics package ships the single-node server as victoria-metrics.
    return find_binary(["victoria-metrics", "victoria-metrics-prod"], "VICTORIAMETRICS_BIN")


def vmalert_binary() -> Optional[str]:
    return find_binary(["vmalert", "vmalert-prod"], "VMALERT_BIN")


def vmagent_binary() -> Optional[str]:
    return find_binary(["vmagent", "vmagent-prod"], "VMAGENT_BIN")


def alertmanager_binary() -> Optional[str]:
    # Debian ships Alertmanager as prometheus-alertmanager; upstream tarballs as alertmanager.
    return find_binary(["prometheus-alertmanager", "alertmanager"], "ALERTMANAGER_BIN")


class StackError(RuntimeError):
    """A process of the test stack failed to start, or did not answer in time."""


class _ManagedProcess:
    """One child process with a log file, a readiness probe and a bounded stop."""

    name = "process"
    ready_path = "/-/ready"

    def __init__(self, workdir: Optional[Union[str, Path]] = None) -> None:
        self._own_workdir = workdir is None
        self.workdir = Path(workdir) if workdir is not None else Path(tempfile.mkdtemp(prefix=f"ssdfleet-{self.name}-"))
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = self.workdir / f"{self.name}.log"
        self.proc: Optional[subprocess.Popen] = None
        self._log_file = None
        self._session = requests.Session()

    # subclasses give the command line
    def command(self) -> List[str]:
        raise NotImplementedError

    def start(self) -> _ManagedProcess:
        if self.proc is not None:
            raise StackError(f"{self.name} already started")
        self._log_file = open(self.log_path, "wb")
        # Own session (process group): a signal aimed at the test runner's group does not
        # reach it, and stop() can signal exactly this child.
        self.proc = subprocess.Popen(
            self.command(),
            stdin=subprocess.DEVNULL,
            stdout=self._log_file,
            stderr=subprocess.STDOUT,
            cwd=str(self.workdir),
            start_new_session=True,
        )
        with _LIVE_LOCK:
            _LIVE.add(self)
        return self

    def log_tail(self, max_bytes: int = 4000) -> str:
        try:
            data = self.log_path.read_bytes()
        except OSError:
            return ""
        return data[-max_bytes:].decode("utf-8", "replace")

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def wait_ready(self, timeout: float = 30.0) -> _ManagedProcess:
        """Poll the readiness path (``/-/ready``) until it answers 200; raise StackError with the log tail if the
        process exits or the deadline passes."""
        if self.proc is None:
            raise StackError(f"{self.name} was not started")
        deadline = time.monotonic() + timeout
        last_error = ""
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise StackError(
                    f"{self.name} exited with {self.proc.returncode} before it was ready:\n{self.log_tail()}"
                )
            try:
                response = self._session.get(f"{self.url}{self.ready_path}", timeout=1.0)
                if response.status_code == 200:
                    return self
                last_error = f"HTTP {response.status_code}"
            except requests.RequestException as exc:
                last_error = str(exc)
            time.sleep(0.1)
        raise StackError(f"{self.name} not ready after {timeout}s ({last_error}):\n{self.log_tail()}")

    def stop(self, term_timeout: float = 10.0, kill_timeout: float = 5.0) -> None:
        """SIGTERM, wait up to term_timeout, SIGKILL, wait up to kill_timeout, then give up
        waiting (a child stuck in the kernel cannot be reaped; the test must go on)."""
        proc = self.proc
        if proc is not None and proc.poll() is None:
            try:
                proc.send_signal(signal.SIGTERM)
                proc.wait(timeout=term_timeout)
            except subprocess.TimeoutExpired:
                try:
                    proc.kill()
                    proc.wait(timeout=kill_timeout)
                except (subprocess.TimeoutExpired, OSError):
                    pass
            except OSError:
                pass
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None
        self._session.close()
        with _LIVE_LOCK:
            _LIVE.discard(self)
        if self._own_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> _ManagedProcess:
        if self.proc is None:
            self.start()
        return self.wait_ready()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # HTTP helpers shared by Prometheus and Alertmanager
    def _get_json(self, path: str, params: Optional[Mapping[str, Any]] = None, timeout: float = 10.0) -> Dict[str, Any]:
        response = self._session.get(f"{self.url}{path}", params=params, timeout=timeout)
        return _json_or_raise(response)

    def _post(self, path: str, timeout: float = 10.0, **kwargs: Any) -> requests.Response:
        return self._session.post(f"{self.url}{path}", timeout=timeout, **kwargs)


def _json_or_raise(response: requests.Response) -> Dict[str, Any]:
    # The Prometheus API answers a bad query with 400/422 and a JSON body naming the error:
    # hand that body to the caller, who asserts on "status"; anything else is a stack failure.
    if response.status_code in (200, 400, 422, 503):
        try:
            return response.json()
        except ValueError:
            pass
    raise StackError(f"{response.request.method} {response.url} -> HTTP {response.status_code}: {response.text[:500]}")


class _PromQL(_ManagedProcess):
    """A store that answers Prometheus's query API (Prometheus itself, VictoriaMetrics)."""

    def query(self, expr: str, time: Optional[float] = None, timeout: float = 10.0) -> Dict[str, Any]:
        """GET /api/v1/query; the whole JSON answer (``status``, ``data``, maybe ``error``)."""
        params: Dict[str, Any] = {"query": expr}
        if time is not None:
            params["time"] = time
        return self._get_json("/api/v1/query", params, timeout)

    def query_range(
        self, expr: str, start: float, end: float, step: Union[float, str], timeout: float = 30.0
    ) -> Dict[str, Any]:
        """GET /api/v1/query_range; the whole JSON answer."""
        params = {"query": expr, "start": start, "end": end, "step": step}
        return self._get_json("/api/v1/query_range", params, timeout)

    def series(self, match: Union[str, Sequence[str]]) -> List[Dict[str, str]]:
        matches = [match] if isinstance(match, str) else list(match)
        answer = self._get_json("/api/v1/series", {"match[]": matches})
        return list(answer.get("data") or [])

    def label_values(self, label: str, match: Optional[Union[str, Sequence[str]]] = None) -> List[str]:
        params: Dict[str, Any] = {}
        if match:
            params["match[]"] = [match] if isinstance(match, str) else list(match)
        answer = self._get_json(f"/api/v1/label/{label}/values", params)
        return list(answer.get("data") or [])


class Prometheus(_PromQL):
    """A real Prometheus on 127.0.0.1:<free port> with a generated config.

    ``scrape_targets`` maps a job name to its targets (``host:port``); ``scrape_configs`` adds
    raw scrape_config dicts. Rule files are copied into the workdir so the config can name them
    relatively and a test can edit its copy.
    """

    name = "prometheus"

    def __init__(
        self,
        workdir: Optional[Union[str, Path]] = None,
        scrape_targets: Optional[Mapping[str, Iterable[str]]] = None,
        scrape_configs: Optional[Sequence[Mapping[str, Any]]] = None,
        rule_files: Sequence[Union[str, Path]] = (),
        scrape_interval: str = "1s",
        evaluation_interval: str = "1s",
        alertmanager_url: Optional[str] = None,
        external_labels: Optional[Mapping[str, str]] = None,
        extra_args: Sequence[str] = (),
        binary: Optional[str] = None,
    ) -> None:
        self.binary = required_binary(binary, prometheus_binary, "prometheus", "PROMETHEUS_BIN")
        super().__init__(workdir)
        self.scrape_interval = scrape_interval
        self.evaluation_interval = evaluation_interval
        self.alertmanager_url = alertmanager_url
        self.extra_args = list(extra_args)
        self.storage_path = self.workdir / "data"
        self.config_path = self.workdir / "prometheus.yml"
        self.rule_paths: List[Path] = []
        for index, rule_file in enumerate(rule_files):
            source = Path(rule_file)
            copy = self.workdir / f"rules-{index}-{source.name}"
            shutil.copyfile(source, copy)
            self.rule_paths.append(copy)
        configs: List[Dict[str, Any]] = []
        for job, targets in (scrape_targets or {}).items():
            configs.append({"job_name": job, "static_configs": [{"targets": list(targets)}]})
        configs.extend(dict(c) for c in (scrape_configs or ()))
        self.config: Dict[str, Any] = {
            "global": {
                "scrape_interval": scrape_interval,
                "scrape_timeout": scrape_interval,
                "evaluation_interval": evaluation_interval,
            },
            "scrape_configs": configs,
        }
        if external_labels:
            self.config["global"]["external_labels"] = dict(external_labels)
        if self.rule_paths:
            self.config["rule_files"] = [p.name for p in self.rule_paths]
        if alertmanager_url:
            scheme, _, host = alertmanager_url.partition("://")
            self.config["alerting"] = {
                "alertmanagers": [{"scheme": scheme or "http", "static_configs": [{"targets": [host.rstrip("/")]}]}]
            }
        self.write_config()

    def write_config(self) -> None:
        self.config_path.write_text(yaml.safe_dump(self.config, sort_keys=False))

    def command(self) -> List[str]:
        return [
            self.binary,
            f"--config.file={self.config_path}",
            f"--storage.tsdb.path={self.storage_path}",
            f"--web.listen-address=127.0.0.1:{self.port}",
            "--web.enable-lifecycle",
            "--log.level=warn",
            *self.extra_args,
        ]

    def reload(self) -> None:
        """Re-read config and rule files (POST /-/reload, enabled by --web.enable-lifecycle)."""
        response = self._post("/-/reload")
        if response.status_code != 200:
            raise StackError(f"reload failed: HTTP {response.status_code}: {response.text[:500]}")

    def targets(self) -> List[Dict[str, Any]]:
        """The active targets (GET /api/v1/targets)."""
        answer = self._get_json("/api/v1/targets", {"state": "active"})
        return list((answer.get("data") or {}).get("activeTargets") or [])

    def rules(self) -> List[Dict[str, Any]]:
        """Rule groups as loaded (GET /api/v1/rules)."""
        answer = self._get_json("/api/v1/rules")
        return list((answer.get("data") or {}).get("groups") or [])

    def alerts(self) -> List[Dict[str, Any]]:
        answer = self._get_json("/api/v1/alerts")
        return list((answer.get("data") or {}).get("alerts") or [])

    def wait_for_targets_up(self, timeout: float = 30.0) -> List[Dict[str, Any]]:
        """Wait until every configured target has been scraped successfully once."""
        deadline = time.monotonic() + timeout
        targets: List[Dict[str, Any]] = []
        while time.monotonic() < deadline:
            targets = self.targets()
            if targets and all(t.get("health") == "up" for t in targets):
                return targets
            time.sleep(0.2)
        raise StackError(f"targets not up after {timeout}s: {json.dumps(targets, indent=1)[:2000]}")

    def wait_for_query(
        self, expr: str, timeout: float = 30.0, predicate: Optional[Callable[[Dict[str, Any]], bool]] = None
    ) -> Dict[str, Any]:
        """Re-run ``expr`` until it succeeds with a non-empty result (or ``predicate`` holds)."""
        ok = predicate or (lambda answer: answer.get("status") == "success" and bool(answer["data"]["result"]))
        deadline = time.monotonic() + timeout
        answer: Dict[str, Any] = {}
        while time.monotonic() < deadline:
            answer = self.query(expr)
            if ok(answer):
                return answer
            time.sleep(0.2)
        raise StackError(f"{expr!r} gave no data after {timeout}s: {json.dumps(answer)[:1000]}")


class Alertmanager(_ManagedProcess):
    """A real Alertmanager with clustering off, on 127.0.0.1:<free port>."""

    name = "alertmanager"

    def __init__(
        self,
        config: Union[str, Path, Mapping[str, Any], None] = None,
        workdir: Optional[Union[str, Path]] = None,
        extra_args: Sequence[str] = (),
        binary: Optional[str] = None,
    ) -> None:
        self.binary = required_binary(binary, alertmanager_binary, "alertmanager", "ALERTMANAGER_BIN")
        super().__init__(workdir)
        self.extra_args = list(extra_args)
        self.storage_path = self.workdir / "data"
        self.config_path = self.workdir / "alertmanager.yml"
        if config is None:
            config = {"route": {"receiver": "null"}, "receivers": [{"name": "null"}]}
        if isinstance(config, Mapping):
            self.config_path.write_text(yaml.safe_dump(dict(config), sort_keys=False))
        elif isinstance(config, Path) or (isinstance(config, str) and "\n" not in config and os.path.isfile(config)):
            shutil.copyfile(config, self.config_path)
        else:
            self.config_path.write_text(str(config))

    def command(self) -> List[str]:
        return [
            self.binary,
            f"--config.file={self.config_path}",
            f"--storage.path={self.storage_path}",
            f"--web.listen-address=127.0.0.1:{self.port}",
            # empty: no gossip cluster, so no second port and no peers to wait for
            "--cluster.listen-address=",
            "--log.level=warn",
            *self.extra_args,
        ]

    def alerts(self) -> List[Dict[str, Any]]:
        """Alerts Alertmanager holds (GET /api/v2/alerts)."""
        response = self._session.get(f"{self.url}/api/v2/alerts", timeout=10.0)
        if response.status_code != 200:
            raise StackError(f"GET /api/v2/alerts -> HTTP {response.status_code}: {response.text[:500]}")
        return list(response.json())

    def post_alerts(self, alerts: Sequence[Mapping[str, Any]]) -> None:
        response = self._post("/api/v2/alerts", json=list(alerts))
        if response.status_code != 200:
            raise StackError(f"POST /api/v2/alerts -> HTTP {response.status_code}: {response.text[:500]}")


class VictoriaMetrics(_PromQL):
    """A real single-node VictoriaMetrics on 127.0.0.1:<free port>, with its response cache
    off (tests write history into the past and read it back at once), plus ``vmalert`` run in
    replay mode against it (:meth:`replay_rules`): the way to evaluate rule files over data
    with given timestamps, as promtool does for Prometheus."""

    name = "victoriametrics"
    ready_path = "/health"

    def __init__(
        self,
        workdir: Optional[Union[str, Path]] = None,
        retention: str = "1y",
        extra_args: Sequence[str] = (),
        binary: Optional[str] = None,
        vmalert: Optional[str] = None,
    ) -> None:
        self.binary = required_binary(binary, victoriametrics_binary, "victoria-metrics", "VICTORIAMETRICS_BIN")
        self.vmalert = vmalert or vmalert_binary()
        super().__init__(workdir)
        self.retention = retention
        self.extra_args = list(extra_args)
        self.storage_path = self.workdir / "data"

    def command(self) -> List[str]:
        return [
            self.binary,
            f"-httpListenAddr=127.0.0.1:{self.port}",
            f"-storageDataPath={self.storage_path}",
            f"-retentionPeriod={self.retention}",
            "-search.disableCache",
            "-loggerLevel=WARN",
            *self.extra_args,
        ]

    def import_series(self, series: Iterable[Mapping[str, Any]]) -> None:
        """POST /api/v1/import: JSON lines of ``{"metric": {...}, "values": [...],
        "timestamps": [ms, ...]}``; then flush, so the samples are searchable."""
        body = "\n".join(json.dumps(dict(s)) for s in series) + "\n"
        response = self._post("/api/v1/import", data=body.encode("utf-8"), timeout=60.0)
        if response.status_code not in (200, 204):
            raise StackError(f"import failed: HTTP {response.status_code}: {response.text[:500]}")
        self.force_flush()

    def force_flush(self) -> None:
        response = self._session.get(f"{self.url}/internal/force_flush", timeout=30.0)
        if response.status_code != 200:
            raise StackError(f"force_flush failed: HTTP {response.status_code}: {response.text[:500]}")

    def export(self, match: str, start: float, end: float) -> List[Dict[str, Any]]:
        """Raw samples (GET /api/v1/export): one dict per series with metric, values and
        timestamps (ms), exactly as stored, with no lookback or rollup."""
        response = self._session.get(
            f"{self.url}/api/v1/export", params={"match[]": match, "start": start, "end": end}, timeout=30.0
        )
        if response.status_code != 200:
            raise StackError(f"export failed: HTTP {response.status_code}: {response.text[:500]}")
        return [json.loads(line) for line in response.text.splitlines() if line.strip()]

    def replay_rules(
        self,
        rule_file: Union[str, Path],
        start: float,
        end: float,
        step: str,
        rules_delay: str = "1s",
        timeout: float = 300.0,
    ) -> subprocess.CompletedProcess:
        """Evaluate ``rule_file`` from ``start`` to ``end`` (unix seconds) with ``vmalert
        -replay.*``, writing recorded series and ALERTS back into this store; then flush.
        ``step`` is the group's interval: vmalert 1.79's replay queries at
        -datasource.queryStep (5m unless given), not at the group interval. vmalert runs a
        group's rules in order, ``rules_delay`` apart, so that a rule can read what the one
        before it recorded. Raises StackError when vmalert fails."""
        if not self.vmalert:
            raise FileNotFoundError("vmalert binary not found (set VMALERT_BIN or put it on PATH)")

        def rfc3339(seconds: float) -> str:
            return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))

        result = subprocess.run(
            [
                self.vmalert,
                f"-rule={rule_file}",
                f"-datasource.url={self.url}",
                f"-remoteWrite.url={self.url}",
                f"-datasource.queryStep={step}",
                "-remoteWrite.flushInterval=100ms",
                f"-replay.timeFrom={rfc3339(start)}",
                f"-replay.timeTo={rfc3339(end)}",
                f"-replay.rulesDelay={rules_delay}",
                "-replay.disableProgressBar",
                # ALERTS keep exactly the labels Prometheus gives them
                "-disableAlertgroupLabel",
                "-loggerLevel=WARN",
            ],
            cwd=str(self.workdir),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            start_new_session=True,
        )
        if result.returncode != 0:
            raise StackError(f"vmalert replay of {rule_file} failed ({result.returncode}):\n{result.stdout[-3000:]}{result.stderr[-3000:]}")
        self.force_flush()
        return result


class VMAgent(_ManagedProcess):
    """A real vmagent on 127.0.0.1:<free port>: scrapes ``scrape_targets`` (job -> targets)
    every ``scrape_interval`` and remote-writes to ``remote_write_url`` (a VictoriaMetrics'
    ``/api/v1/write``)."""

    name = "vmagent"
    ready_path = "/health"

    def __init__(
        self,
        remote_write_url: str,
        scrape_targets: Mapping[str, Iterable[str]],
        scrape_interval: str = "1s",
        workdir: Optional[Union[str, Path]] = None,
        extra_args: Sequence[str] = (),
        binary: Optional[str] = None,
    ) -> None:
        self.binary = required_binary(binary, vmagent_binary, "vmagent", "VMAGENT_BIN")
        super().__init__(workdir)
        self.remote_write_url = remote_write_url
        self.extra_args = list(extra_args)
        self.config_path = self.workdir / "scrape.yml"
        config = {
            "global": {"scrape_interval": scrape_interval, "scrape_timeout": scrape_interval},
            "scrape_configs": [
                {"job_name": job, "static_configs": [{"targets": list(targets)}]}
                for job, targets in scrape_targets.items()
            ],
        }
        self.config_path.write_text(yaml.safe_dump(config, sort_keys=False))

    def command(self) -> List[str]:
        return [
            self.binary,
            f"-httpListenAddr=127.0.0.1:{self.port}",
            f"-promscrape.config={self.config_path}",
            f"-remoteWrite.url={self.remote_write_url}",
            f"-remoteWrite.tmpDataPath={self.workdir / 'remotewrite-data'}",
            "-remoteWrite.flushInterval=200ms",
            "-loggerLevel=WARN",
            *self.extra_args,
        ]


class VMAlert(_ManagedProcess):
    """A real vmalert on 127.0.0.1:<free port> evaluating ``rule_files`` against a
    VictoriaMetrics (``datasource_url``), writing recorded series and ALERTS back to it and
    sending alerts to ``notifier_url`` (an Alertmanager). Alert labels are as Prometheus gives
    them (``-disableAlertgroupLabel``)."""

    name = "vmalert"
    ready_path = "/health"

    def __init__(
        self,
        datasource_url: str,
        rule_files: Sequence[Union[str, Path]],
        notifier_url: Optional[str] = None,
        evaluation_interval: str = "1s",
        workdir: Optional[Union[str, Path]] = None,
        extra_args: Sequence[str] = (),
        binary: Optional[str] = None,
    ) -> None:
        self.binary = required_binary(binary, vmalert_binary, "vmalert", "VMALERT_BIN")
        super().__init__(workdir)
        self.datasource_url = datasource_url
        self.rule_files = [Path(r) for r in rule_files]
        self.notifier_url = notifier_url
        self.evaluation_interval = evaluation_interval
        self.extra_args = list(extra_args)

    def command(self) -> List[str]:
        notifier = [f"-notifier.url={self.notifier_url}"] if self.notifier_url else ["-notifier.blackhole"]
        return [
            self.binary,
            f"-httpListenAddr=127.0.0.1:{self.port}",
            *[f"-rule={r}" for r in self.rule_files],
            f"-datasource.url={self.datasource_url}",
            f"-remoteWrite.url={self.datasource_url}",
            "-remoteWrite.flushInterval=200ms",
            *notifier,
            f"-evaluationInterval={self.evaluation_interval}",
            "-disableAlertgroupLabel",
            "-loggerLevel=WARN",
            *self.extra_args,
        ]

    def rules(self) -> List[Dict[str, Any]]:
        """Rule groups with their rules' last evaluation (GET /api/v1/rules)."""
        answer = self._get_json("/api/v1/rules")
        return list((answer.get("data") or {}).get("groups") or [])

    def alerts(self) -> List[Dict[str, Any]]:
        """Active alerts, pending and firing (GET /api/v1/alerts)."""
        answer = self._get_json("/api/v1/alerts")
        return list((answer.get("data") or {}).get("alerts") or [])



Body = Union[str, bytes, Callable[[], Union[str, bytes]]]


class StaticExporter:
    """A tiny threaded HTTP server on 127.0.0.1 serving exposition text at /metrics.

    ``body`` is the text, or a callable called on every scrape (to move counters between
    scrapes so rate() has something to work on). Other paths answer 404.
    """

    def __init__(self, body: Body, port: int = 0) -> None:
        self._body = body
        self._lock = threading.Lock()
        self.scrapes = 0
        exporter = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                if self.path.split("?", 1)[0] != "/metrics":
                    self.send_error(404)
                    return
                try:
                    payload = exporter.render()
                except Exception as exc:  # a broken callable must show up as a failed scrape
                    self.send_error(500, explain=str(exc))
                    return
                self.send_response(200)
                self.send_header("Content-Type", EXPOSITION_CONTENT_TYPE)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: Any) -> None:
                pass  # keep test output clean

        self._server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self._server.daemon_threads = True
        self.port = int(self._server.server_address[1])
        self.target = f"127.0.0.1:{self.port}"
        self.url = f"http://{self.target}/metrics"
        self._thread = threading.Thread(
            target=self._server.serve_forever, name=f"static-exporter-{self.port}", daemon=True
        )
        self._thread.start()

    def render(self) -> bytes:
        with self._lock:
            self.scrapes += 1
            body = self._body
        value = body() if callable(body) else body
        return value.encode("utf-8") if isinstance(value, str) else bytes(value)

    def set_body(self, body: Body) -> None:
        with self._lock:
            self._body = body

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5.0)

    def __enter__(self) -> StaticExporter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


@atexit.register
def _kill_leftovers() -> None:
    with _LIVE_LOCK:
        leftovers = list(_LIVE)
    for process in leftovers:
        process.stop(term_timeout=3.0, kill_timeout=2.0)


# pytest fixtures: factories, so one test can start several of each; finalizers stop them all
# (in reverse order) whether the test passed, failed or errored.


@pytest.fixture
def static_exporter_factory(request: pytest.FixtureRequest) -> Callable[..., StaticExporter]:
    def make(body: Body) -> StaticExporter:
        exporter = StaticExporter(body)
        request.addfinalizer(exporter.stop)
        return exporter

    return make


def _started(request: pytest.FixtureRequest, process: Any, ready_timeout: float) -> Any:
    """Start ``process``, stopped when the test ends, and wait until it answers."""
    request.addfinalizer(process.stop)
    process.start()
    process.wait_ready(ready_timeout)
    return process


@pytest.fixture
def prometheus_factory(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Callable[..., Prometheus]:
    """``make(scrape_targets=..., rule_files=..., ready_timeout=30, **kwargs)`` starts a
    Prometheus and waits for it to be ready. Skips the test when the binary is missing."""

    def make(ready_timeout: float = 30.0, **kwargs: Any) -> Prometheus:
        if not (kwargs.get("binary") or prometheus_binary()):
            skip_or_fail("prometheus binary not found (apt-get install prometheus, or set PROMETHEUS_BIN)")
        kwargs.setdefault("workdir", tmp_path_factory.mktemp("prometheus"))
        prometheus = Prometheus(**kwargs)
        return _started(request, prometheus, ready_timeout)

    return make


@pytest.fixture
def alertmanager_factory(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Callable[..., Alertmanager]:
    """``make(config=None, ready_timeout=30, **kwargs)`` starts an Alertmanager and waits for
    it to be ready. Skips the test when the binary is missing."""

    def make(
        config: Union[str, Path, Mapping[str, Any], None] = None, ready_timeout: float = 30.0, **kwargs: Any
    ) -> Alertmanager:
        if not (kwargs.get("binary") or alertmanager_binary()):
            skip_or_fail(
                "alertmanager binary not found (apt-get install prometheus-alertmanager, or set ALERTMANAGER_BIN)"
            )
        kwargs.setdefault("workdir", tmp_path_factory.mktemp("alertmanager"))
        alertmanager = Alertmanager(config, **kwargs)
        return _started(request, alertmanager, ready_timeout)

    return make


@pytest.fixture
def victoriametrics_factory(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Callable[..., VictoriaMetrics]:
    """``make(ready_timeout=30, **kwargs)`` starts a VictoriaMetrics and waits for it to be
    ready. Skips the test (fails it under SSDFLEET_REQUIRE_TOOLS=1) when victoria-metrics or
    vmalert is missing: both come in Debian's victoria-metrics package."""

    def make(ready_timeout: float = 30.0, **kwargs: Any) -> VictoriaMetrics:
        if not (kwargs.get("binary") or victoriametrics_binary()):
            skip_or_fail("victoria-metrics binary not found (apt-get install victoria-metrics, or set VICTORIAMETRICS_BIN)")
        if not (kwargs.get("vmalert") or vmalert_binary()):
            skip_or_fail("vmalert binary not found (apt-get install victoria-metrics, or set VMALERT_BIN)")
        kwargs.setdefault("workdir", tmp_path_factory.mktemp("victoriametrics"))
        store = VictoriaMetrics(**kwargs)
        return _started(request, store, ready_timeout)

    return make
