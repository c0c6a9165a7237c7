"""Host sources' results as /metrics, /api/v1/drives, the page and ``ssdfleet status`` show
them: each host source's own :class:`~collectors.source.HostView` hooks (they live in the
source's folder), called for every host source that has a result, found through the registry
by role. Nothing here names a source.

A hook that raises costs its own section only: the error is logged once per source, hook and
message (then at debug level), and the scrape, the page or the status output go on without
that section. No I/O besides that log line.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Dict, List, Mapping, Optional, Set, Tuple

from collectors import registry
from collectors.model import Snapshot

log = logging.getLogger("ssdfleet.host_views")

_logged: Set[Tuple[str, str, str]] = set()  # (source, hook, error) already logged with its traceback


def _call(name: str, hook: str, fn: Callable[[], Any], empty: Any) -> Any:
    try:
        return fn()
    except Exception as exc:  # one source's view must not break the others' or the scrape
        key = (name, hook, f"{type(exc).__name__}: {exc}")
        if key in _logged:
            log.debug("%s's %s view failed again (%s)", name, hook, key[2])
        else:
            _logged.add(key)
            log.exception("%s's %s view failed (%s); that section is left out", name, hook, key[2])
        return empty


def families(snap: Snapshot) -> List[Any]:
    """The metric families of every host source's result in ``snap``. Sources may share a
    family (the three RAID controller sources export the same ``ssd_controller_*``): samples of
    one name are joined into one family, as the exposition format wants each name once."""
    out: Dict[str, Any] = {}
    for name, view, result in registry.host_results(snap.host):
        for family in _call(name, "metrics", lambda v=view, r=result: list(v.families(r, snap.drives)), []):
            if family.name in out and out[family.name].type == family.type:
                out[family.name].samples.extend(family.samples)
            else:
                out.setdefault(family.name, family)
    return list(out.values())


def api(snap: Snapshot) -> Dict[str, Any]:
    """Source name -> the JSON-able value its view gives, for /api/v1/drives' ``host``."""
    out: Dict[str, Any] = {}
    for name, view, result in registry.host_results(snap.host):
        value = _call(name, "api", lambda v=view, r=result: v.api(r, snap.drives), None)
        if value is not None:
            out[name] = value
    return out


def legacy_api(host: Mapping[str, Any]) -> Dict[str, Any]:
    """The top-level keys /api/v1/drives carried before issue 27 (``syncwrite``), from the
    ``host`` values: kept for one release, for clients that read them."""
    return {view.legacy_api_key: host[name] for name, view in registry.HOST_VIEWS
            if view.legacy_api_key and name in host}


def per_drive(snap: Snapshot) -> Dict[str, Dict[str, Any]]:
    """Serial -> {source name: the value its view shows beside that drive}."""
    out: Dict[str, Dict[str, Any]] = {}
    for name, view, result in registry.host_results(snap.host):
        if view.per_drive is None:
            continue
        values = _call(name, "per_drive", lambda v=view, r=result: dict(v.per_drive(r, snap.drives)), {})
        for serial, value in values.items():
            out.setdefault(serial, {})[name] = value
    return out


def latency_burst(beside: Mapping[str, Any]) -> Optional[Dict[str, Any]]:
    """The drive's sync-write latency burst (collectors.source.LatencyBurst plus ``source``)
    from what host sources show beside it (a :func:`per_drive` value): the first source in
    registry order whose view times writes there; None when none did."""
    for name, view in registry.HOST_VIEWS:
        if view.latency is None or name not in beside:
            continue
        burst = _call(name, "latency", lambda v=view, x=beside[name]: v.latency(x), None)
        if burst is not None:
            return dict(burst, source=name)
    return None


def legacy_drive_keys(beside: Mapping[str, Any]) -> Dict[str, Any]:
    """The per-drive keys a drive's JSON carried before issue 27 (``syncwrite``: the probe's
    newest burst on the drive), from what host sources show beside it; kept for one release."""
    return {view.legacy_api_key: beside[name] for name, view in registry.HOST_VIEWS
            if view.legacy_api_key and view.per_drive is not None and name in beside}


def legacy_latency_burst(drive: Mapping[str, Any]) -> Optional[Dict[str, Any]]:
    """An older agent's drive JSON (no ``latency_burst``): the burst from its pre-issue-27
    per-drive keys, so ``ssdfleet status`` reads agents of the last release too."""
    beside = {name: drive[view.legacy_api_key] for name, view in registry.HOST_VIEWS
              if view.legacy_api_key and view.latency is not None and drive.get(view.legacy_api_key)}
    return latency_burst(beside) if beside else None


def page_sections(snap: Snapshot, esc: Callable[[str], str]) -> str:
    """Every host source's section of the status page, in registry order."""
    return "".join(_call(name, "page", lambda v=view, r=result: v.page(r, snap.drives, esc), "")
                   for name, view, result in registry.host_results(snap.host))


def status_blocks(data: Mapping[str, Any]) -> List[Tuple[str, List[str]]]:
    """(heading, lines) for ``ssdfleet status``, from /api/v1/drives' JSON (or a local poll's):
    its ``host`` values, or an older agent's top-level keys. Sources with nothing to say are
    left out."""
    host = data.get("host")
    host = dict(host) if isinstance(host, Mapping) else {}
    blocks: List[Tuple[str, List[str]]] = []
    for name, view in registry.HOST_VIEWS:
        value = host.get(name)
        if value is None and view.legacy_api_key:
            value = data.get(view.legacy_api_key)
        if not value:
            continue
        lines = _call(name, "status", lambda v=view, x=value: list(v.status_lines(x)), [])
        if lines:
            blocks.append((view.status_heading, lines))
    return blocks
