"""End to end on a clustered store built from Thanos: simulated agents -> two Prometheus
servers (each with a ``thanos sidecar``) -> ``thanos query`` -> ``thanos rule`` ->
Alertmanager, and every dashboard query answered by thanos query's Prometheus API.

The same test as tests/test_victoriametrics_e2e.py (whose helpers it imports), on a store that
scales past one Prometheus by sharding the scrape:

* the same three simulated hosts and the fourth on real captures, each read by a real
  ``ssdfleet agent`` polling every second;
* two Debian ``prometheus`` servers, each scraping a different part of the fleet (shard ``a``:
  db0 and db1; shard ``b``: db2 and db3) with ``external_labels: {prometheus_shard: a|b}`` (a sidecar
  refuses a Prometheus without external labels), no rules, each with a ``thanos sidecar``
  serving its head block over the gRPC StoreAPI;
* ``thanos rule`` evaluating the SHIPPED recording rules and the SHIPPED Prometheus alert rules
  (deploy/prometheus/*.yml, read at run time; only durations shortened, as in
  tests/test_alerting_e2e.py) by querying ``thanos query``, storing recorded series and ALERTS
  in its own TSDB and sending alerts to a real Alertmanager with the SHIPPED routing;
* ``thanos query`` fanning out over three StoreAPIs: both sidecars and the ruler (without the
  ruler, no ``ssd:``/``job:`` series would be found). The ruler's own label
  (``rule_replica``) is a replica label of the query (``--query.replica-label``), so recorded
  series come back with the labels of the series they were computed from, and it is dropped
  from the alerts sent to Alertmanager (``--alert.label-drop``); ``prometheus_shard`` is kept,
  as a sharded deployment keeps it: it is on every raw series, on the page, and on every
  ``without (...)`` aggregate (one ``job:`` series per shard, not one per job).

The write cache of sda on db0 is switched off: the pager receiver must get exactly that page,
the ticket receiver nothing. Then every panel query of the three dashboards, with its
variables resolved from thanos query, must return data from thanos query.

Thanos is not a Debian package: build it with scripts/build_thanos.sh DIR (minutes) and point
SSDFLEET_THANOS at DIR/thanos, or put ``thanos`` on PATH. Without it the test is skipped, with
the reason, EVEN under SSDFLEET_REQUIRE_TOOLS=1: CI does not build Thanos, so its absence
there is expected, not a broken install. Other missing binaries follow SSDFLEET_REQUIRE_TOOLS.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence

import pytest

from tests.conftest import ROOT
from tests.promstack import (  # noqa: F401 (fixtures)
    _ManagedProcess,
    _PromQL,
    alertmanager_binary,
    alertmanager_factory,
    find_binary,
    free_port,
    prometheus_binary,
    prometheus_factory,
    skip_or_fail,
)
from tests.support.alerting import (  # noqa: F401 (webhook is a fixture)
    _alert_state,
    _alerts_text,
    _wait_for_healthy_alert_rules,
    alertmanager_config,
    shortened_rules,
    wait_for_page,
    webhook,
)
from tests.support.victoriametrics import (
    ALERT,
    ALERT_FOR,
    FLIPPED_DEVICE,
    PAGE_TIMEOUT,
    QUIET_SECONDS,
    _panel_queries,
    _wait,
    check_panels,
    start_fleet,
)

RECORDING_RULES = ROOT / "deploy" / "prometheus" / "ssdfleet-recording.yml"
ALERT_RULES = ROOT / "deploy" / "prometheus" / "ssdfleet-alerts.yml"

SHARD_LABEL = "prometheus_shard"
SHARDS = {"a": [0, 1], "b": [2, 3]}  # shard -> indexes of the agents its Prometheus scrapes
RULER_LABEL = "rule_replica"
PANELS_TIMEOUT = 60.0


def thanos_binary() -> Optional[str]:
    return find_binary(["thanos"], "SSDFLEET_THANOS")


class _Thanos(_ManagedProcess):
    """One thanos component on 127.0.0.1 with a free HTTP port (``port``) and a free gRPC port
    (``grpc_port``, where its StoreAPI answers)."""

    def __init__(self, binary: str, workdir: Path) -> None:
        self.binary = binary
        super().__init__(workdir)
        self.grpc_port = free_port()
        self.grpc_address = f"127.0.0.1:{self.grpc_port}"

    def component(self) -> List[str]:
        raise NotImplementedError

    def command(self) -> List[str]:
        return [self.binary, *self.component(), f"--http-address=127.0.0.1:{self.port}",
                f"--grpc-address={self.grpc_address}", "--log.level=warn"]


class ThanosSidecar(_Thanos):
    """``thanos sidecar`` next to a Prometheus: serves its TSDB head over the StoreAPI (remote
    read underneath). No object storage: nothing is uploaded."""

    name = "thanos-sidecar"

    def __init__(self, binary: str, workdir: Path, prometheus) -> None:
        super().__init__(binary, workdir)
        self.prometheus = prometheus

    def component(self) -> List[str]:
        return ["sidecar", f"--prometheus.url={self.prometheus.url}", f"--tsdb.path={self.prometheus.storage_path}"]


class ThanosQuery(_Thanos, _PromQL):
    """``thanos query``: the Prometheus HTTP API over the given StoreAPI endpoints."""

    name = "thanos-query"

    def __init__(self, binary: str, workdir: Path, endpoints: Sequence[str], replica_labels: Sequence[str]) -> None:
        super().__init__(binary, workdir)
        self.endpoints = list(endpoints)
        self.replica_labels = list(replica_labels)

    def component(self) -> List[str]:
        return ["query", *[f"--endpoint={e}" for e in self.endpoints],
                *[f"--query.replica-label={r}" for r in self.replica_labels]]

    def stores(self) -> Dict[str, list]:
        """GET /api/v1/stores: the endpoints it currently uses, by type."""
        return dict(self._get_json("/api/v1/stores").get("data") or {})


class ThanosRule(_Thanos):
    """``thanos rule``: evaluates ``rule_files`` by querying ``query_url``, keeps recorded
    series and ALERTS in its own TSDB (served over its StoreAPI), sends alerts to
    ``alertmanager_url``."""

    name = "thanos-rule"

    def __init__(self, binary: str, workdir: Path, rule_files: Sequence[Path], query_url: str,
                 alertmanager_url: str, label: str) -> None:
        super().__init__(binary, workdir)
        self.rule_files = list(rule_files)
        self.query_url = query_url
        self.alertmanager_url = alertmanager_url
        self.label = label

    def component(self) -> List[str]:
        return ["rule", f"--data-dir={self.workdir / 'data'}", *[f"--rule-file={r}" for r in self.rule_files],
                "--eval-interval=1s", f"--query={self.query_url}", f"--alertmanagers.url={self.alertmanager_url}",
                f'--label={self.label}="0"', f"--alert.label-drop={self.label}", "--resend-delay=1s"]

    def rules(self) -> List[dict]:
        return list((self._get_json("/api/v1/rules").get("data") or {}).get("groups") or [])

    def alerts(self) -> List[dict]:
        """Active alerts, pending and firing. Unlike Prometheus (and thanos query), the ruler
        names the list "Alerts" (pkg/api/rule/v1.go marshals an untagged Go struct field)."""
        data = self._get_json("/api/v1/alerts").get("data") or {}
        return list(data.get("alerts") or data.get("Alerts") or [])


def _require_binaries() -> str:
    for found, name in ((prometheus_binary(), "prometheus"), (alertmanager_binary(), "alertmanager")):
        if not found:
            skip_or_fail(f"{name} binary not found (apt-get install prometheus prometheus-alertmanager)")
    thanos = thanos_binary()
    if not thanos:
        # Not skip_or_fail: CI does not build Thanos (scripts/build_thanos.sh takes minutes).
        pytest.skip("thanos binary not found (build it with scripts/build_thanos.sh DIR, then set "
                    "SSDFLEET_THANOS=DIR/thanos or put thanos on PATH)")
    return thanos


def _started(request: pytest.FixtureRequest, process: _ManagedProcess, timeout: float = 60.0):
    request.addfinalizer(process.stop)
    process.start()
    process.wait_ready(timeout)
    return process


def _series_per_name(store: _PromQL, names: str) -> Dict[str, int]:
    answer = store.query(f'count by (__name__) ({{__name__=~"{names}"}})')
    return {r["metric"]["__name__"]: int(float(r["value"][1])) for r in answer["data"]["result"]}


def test_write_cache_off_pages_through_thanos_and_every_panel_has_data(
    tmp_path: Path,
    request: pytest.FixtureRequest,
    prometheus_factory,  # noqa: F811 (the fixture imported above)
    alertmanager_factory,  # noqa: F811
    webhook,  # noqa: F811
    capsys,
    record_property,
):
    thanos = _require_binaries()
    started = time.monotonic()
    # The hosts of the VictoriaMetrics test: db0 gets its cache switched off, db1's smartctl
    # fails, db2's simulated day passes every second.
    hosts, agents = start_fleet(tmp_path, request)
    targets = [f"127.0.0.1:{a.port}" for a in agents]

    # One Prometheus per shard, each with its sidecar. The sidecar starts once its Prometheus
    # has samples, so the time range it announces covers them from the first call.
    proms = {}
    sidecars = []
    for shard, indexes in SHARDS.items():
        prom = prometheus_factory(scrape_targets={"ssdfleet": [targets[i] for i in indexes]},
                                  external_labels={SHARD_LABEL: shard}, workdir=tmp_path / f"prometheus-{shard}")
        prom.wait_for_targets_up(timeout=30)
        proms[shard] = prom
        sidecars.append(_started(request, ThanosSidecar(thanos, tmp_path / f"sidecar-{shard}", prom)))

    alertmanager = alertmanager_factory(config=alertmanager_config(webhook.base))
    rules_dir = tmp_path / "rules"
    rules_dir.mkdir()
    rule_files = [
        shortened_rules(RECORDING_RULES, rules_dir / RECORDING_RULES.name, {}),
        shortened_rules(ALERT_RULES, rules_dir / ALERT_RULES.name, {ALERT: ALERT_FOR}),
    ]
    # The query knows the ruler's gRPC port before the ruler runs, and the ruler needs the
    # query's HTTP port: pick the ports, start the query, then the ruler.
    ruler = ThanosRule(thanos, tmp_path / "rule", rule_files, "", alertmanager.url, RULER_LABEL)
    store = ThanosQuery(thanos, tmp_path / "query", [s.grpc_address for s in sidecars] + [ruler.grpc_address],
                        [RULER_LABEL])
    _started(request, store)
    ruler.query_url = store.url
    _started(request, ruler)

    flipped_serial = hosts[0].sim.spec(FLIPPED_DEVICE).serial
    instance = targets[0]
    processes = [*proms.values(), *sidecars, store, ruler]
    try:
        # Before the flip: the query reaches all three StoreAPIs and sees every agent; every
        # rule has been evaluated by the ruler without an error; and for longer than the
        # alert's for: plus the group wait, nobody is paged.
        _wait(lambda: len([s for kind in store.stores().values() for s in kind
                           if not s.get("lastError")]) == 3, "thanos query to reach both sidecars and the ruler", 60)
        _wait(lambda: store.query('count(up{job="ssdfleet"} == 1) == 4')["data"]["result"], "four agents up", 30)
        _wait(lambda: store.query(f'ssd_write_cache_mismatch{{serial="{flipped_serial}"}} == 0')["data"]["result"],
              "the cache state in thanos query", 30)
        _wait_for_healthy_alert_rules(ruler)
        _wait(lambda: _series_per_name(store, "job:.*"), "recorded job: series through thanos query", 30)
        time.sleep(QUIET_SECONDS)
        assert webhook.notifications() == [], _alerts_text(webhook.notifications())
        assert _alert_state(ruler, ALERT) is None

        # Someone runs `hdparm -W0 /dev/sda` on the first host.
        flipped = time.monotonic()
        hosts[0].set_write_cache(FLIPPED_DEVICE, False)
        stored = f'ssd_write_cache_enabled{{serial="{flipped_serial}"}} == 0'
        milestones = wait_for_page(webhook, flipped, PAGE_TIMEOUT,
                                   ("stored", lambda: bool(store.query(stored)["data"]["result"])),
                                   lambda: _alert_state(ruler, ALERT), ruler.alerts, poll=0.1)
        (page,) = webhook.notifications("pager")
        took = page.received - flipped
        assert page.body["receiver"] == "pager" and page.body["status"] == "firing", page.body
        assert page.body["groupLabels"] == {"instance": instance, "job": "ssdfleet"}, page.body["groupLabels"]
        # the ruler held the alert pending for its for: before it fired
        assert "pending" in milestones and milestones.get("firing", took) - milestones["pending"] >= 2.0, milestones
        (alert,) = page.body["alerts"]
        # The shipped labels, plus the shard's external label (the ruler's own is dropped).
        assert alert["labels"] == {
            "alertname": ALERT, "severity": "page", "instance": instance, "job": "ssdfleet",
            "device": FLIPPED_DEVICE, "serial": flipped_serial, SHARD_LABEL: "a",
        }, alert["labels"]
        assert FLIPPED_DEVICE in alert["annotations"]["summary"] and flipped_serial in alert["annotations"]["summary"]
        assert alert["annotations"]["runbook_url"].endswith("#ssdwritecachedisabled")
        time.sleep(2.5)
        assert webhook.notifications("tickets") == [], _alerts_text(webhook.notifications("tickets"))
        assert len(webhook.notifications("pager")) == 1, _alerts_text(webhook.notifications("pager"))

        # Every panel query, as Grafana would send it, answered by thanos query.
        problems, runs, slowest = check_panels(store, PANELS_TIMEOUT)
        assert not problems, "\n".join(f"{k}: {v}" for k, v in sorted(problems.items()))

        # What sharding does to the shipped aggregates: `without (instance, ...)` keeps the
        # shard's external label, so a fleet-wide job: rule records one series per shard.
        # Their sum is still the fleet's.
        per_shard = store.query(f"count by ({SHARD_LABEL}) (job:ssd_drives:sum)")["data"]["result"]
        assert sorted(r["metric"].get(SHARD_LABEL, "") for r in per_shard) == sorted(SHARDS), per_shard
        fleet = store.query("sum(job:ssd_drives:sum) == sum(ssd_drives)")["data"]["result"]
        assert fleet, store.query("sum(job:ssd_drives:sum)")["data"]["result"]

        # Why the ruler's label must be a replica label of the query: the shipped alerts
        # compare raw and recorded series one to one (SSDDefectsGrowing: ssd_defects -
        # ssd:defects:min1d). With the ruler's label left on (dedup=false), nothing matches
        # and such an alert could never fire.
        defects = "ssd_defects - ssd:defects:min1d"
        assert store.query(defects)["data"]["result"], defects
        undeduplicated = store._get_json("/api/v1/query", {"query": defects, "dedup": "false"})
        assert undeduplicated["status"] == "success" and undeduplicated["data"]["result"] == [], undeduplicated
    except BaseException:
        for agent in agents:
            print(f"agent log (tail):\n{agent.log()[-1500:]}")
        for process in processes:
            print(f"{process.name} log (tail):\n{process.log_tail(2000)}")
        raise

    record_property("thanos_write_cache_flip_to_page_seconds", round(took, 2))
    record_property("thanos_panel_query_runs", runs)
    with capsys.disabled():
        print(
            f"\n[thanos] write cache off on {FLIPPED_DEVICE} -> page at the pager receiver after {took:.1f} s "
            f"(in thanos query at {milestones.get('stored', float('nan')):.1f} s, pending at "
            f"{milestones.get('pending', float('nan')):.1f} s, firing at {milestones.get('firing', float('nan')):.1f} s); "
            f"{len(_panel_queries())} panel queries all with data ({runs} runs, slowest {slowest[0] * 1000:.0f} ms: "
            f"{slowest[1]}); whole test {time.monotonic() - started:.0f} s"
        )
