"""Every alert's ``runbook_url`` resolves: followed from the alert a real Prometheus raises to
the section the running agent serves at ``/runbooks``, and to the same section under the base
an operator sets with the ``ssdfleet_runbook_url`` external label.

A rule file is made from the shipped alerts (deploy/prometheus/ssdfleet-alerts.yml): each alert
keeps its annotations as shipped and fires at once on the agent's ``up`` series, so Prometheus
itself expands every ``runbook_url`` template for that agent's ``instance``. The test then opens
each address and finds the heading the anchor names. Plus the renderer's pure parts: anchors
as GitHub makes them, code kept verbatim, nothing in the Markdown becoming markup or script.
"""

from __future__ import annotations

import re
import urllib.request
from pathlib import Path
from typing import Dict, List

import pytest
import yaml

from agent import runbooks
from tests.fakehost import ROOT, AgentProcess, build_default_host
from tests.promstack import Prometheus, prometheus_factory  # noqa: F401 (a fixture)
from tests.test_e2e_agent import FAST

ALERTS = ROOT / "deploy" / "prometheus" / "ssdfleet-alerts.yml"
VM_ALERTS = ROOT / "deploy" / "victoriametrics" / "ssdfleet-alerts.yml"


def shipped_alerts(path: Path = ALERTS) -> List[Dict]:
    doc = yaml.safe_load(path.read_text())
    return [r for g in doc["groups"] for r in g["rules"] if "alert" in r]


def firing_copy(tmp_path: Path) -> Path:
    """The shipped alerts, each firing now on the agent's up series, annotations untouched."""
    rules = [{"alert": r["alert"], "expr": 'up{job="ssdfleet"} == 1', "labels": r.get("labels", {}),
              "annotations": {"runbook_url": r["annotations"]["runbook_url"]}} for r in shipped_alerts()]
    path = tmp_path / "firing.yml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "every-alert-now", "rules": rules}]}, sort_keys=False))
    return path


def fired_urls(prom: Prometheus, count: int) -> Dict[str, str]:
    """{alert name: runbook_url as Prometheus expanded it}, once every alert fires."""
    import time

    deadline = time.monotonic() + 60
    urls: Dict[str, str] = {}
    while time.monotonic() < deadline:
        urls = {a["labels"]["alertname"]: a["annotations"]["runbook_url"] for a in prom.alerts()
                if a.get("state") == "firing"}
        if len(urls) == count:
            return urls
        time.sleep(0.3)
    raise AssertionError(f"{len(urls)} of {count} alerts firing after 60 s: {sorted(urls)}")


def section_ids(page: str) -> set:
    return set(re.findall(r'<h[1-6] id="([^"]+)"', page))


@pytest.fixture
def agent(tmp_path):
    a = AgentProcess(build_default_host(tmp_path / "host"), FAST)
    try:
        a.wait_ready()
        yield a
    finally:
        a.stop()


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as resp:  # noqa: S310 - the test's own agent
        assert resp.status == 200, url
        assert resp.headers.get_content_type() == "text/html"
        return resp.read().decode("utf-8")


@pytest.mark.parametrize("base", [None, "label"])
def test_every_runbook_url_resolves(agent, prometheus_factory, tmp_path, base):  # noqa: F811
    """Without the label each link goes to the agent that raised the alert; with it, to the
    operator's base (here the same agent's page under another query, so it must resolve too)."""
    alerts = shipped_alerts()
    target = agent.url.split("//", 1)[1]
    labels = {"ssdfleet_runbook_url": f"{agent.url}/runbooks?from=label"} if base else None
    prom = prometheus_factory(scrape_targets={"ssdfleet": [target]}, rule_files=[firing_copy(tmp_path)],
                              external_labels=labels)
    urls = fired_urls(prom, len(alerts))
    pages: Dict[str, str] = {}
    for rule in alerts:
        name = rule["alert"]
        url = urls[name]
        expected_base = f"{agent.url}/runbooks?from=label" if base else f"http://{target}/runbooks"
        assert url == f"{expected_base}#{name.lower()}", (name, url)
        page_url, anchor = url.split("#", 1)
        if page_url not in pages:
            pages[page_url] = _get(page_url)
        assert anchor in section_ids(pages[page_url]), f"{name}: {url} has no section #{anchor}"


def test_the_victoriametrics_file_links_the_same_way():
    """The vmalert copy is generated from the Prometheus file: the same template per alert."""
    prom = {r["alert"]: r["annotations"]["runbook_url"] for r in shipped_alerts()}
    vm = {r["alert"]: r["annotations"]["runbook_url"] for r in shipped_alerts(VM_ALERTS)}
    assert prom == vm


def test_the_page_links_the_runbook_and_the_runbook_links_back(agent):
    assert 'href="runbooks"' in _get(agent.url + "/")
    page = _get(agent.url + "/runbooks")
    assert 'href="./"' in page and "ssdfleet runbooks" in page
    # its table of contents names every alert
    for rule in shipped_alerts():
        assert f'href="#{rule["alert"].lower()}"' in page, rule["alert"]


# -- the renderer ---------------------------------------------------------------------------

def test_headings_get_the_anchors_a_git_forge_gives_them():
    assert runbooks.slug("SSDWriteCacheDisabled") == "ssdwritecachedisabled"
    assert runbooks.slug("The sync-write probe under systemd") == "the-sync-write-probe-under-systemd"
    assert runbooks.slug("What `for:` means, (really)?") == "what-for-means-really"


def test_markdown_blocks_and_inline_markup():
    body, headings = runbooks.to_html(
        "# Title\n\nSome *words* and **more**, `a <b>` code\nand [a link](#title).\n\n"
        "* one\n  continued\n* two `x`\n\n1. first\n2. second\n\n---\n\n```sh\nhdparm -W /dev/sdX  # <tag> & *\n```\n")
    assert headings == [(1, "Title", "title")]
    assert '<h1 id="title">Title' in body
    assert "<p>Some <em>words</em> and <strong>more</strong>, <code>a &lt;b&gt;</code> code and " \
           '<a href="#title">a link</a>.</p>' in body
    assert "<ul><li>one continued</li><li>two <code>x</code></li></ul>" in body
    assert "<ol><li>first</li><li>second</li></ol>" in body and "<hr>" in body
    assert "<pre><code>hdparm -W /dev/sdX  # &lt;tag&gt; &amp; *</code></pre>" in body


def test_nothing_in_the_text_becomes_markup_or_script():
    body, _ = runbooks.to_html('<script>alert(1)</script> [x](javascript:alert(1)) [y](" onmouseover=1)\n')
    assert "<script" not in body and "&lt;script&gt;" in body
    assert "href" not in body  # neither link is one: a scheme that is not a web address, a quote


def test_the_shipped_runbook_renders_with_a_section_per_alert():
    path = runbooks.find_runbook()
    assert path is not None and path.name.startswith("runbooks.md")
    status, page = runbooks.load_page()
    assert status == 200
    ids = section_ids(page.decode())
    assert {r["alert"].lower() for r in shipped_alerts()} <= ids
    assert "the-sync-write-probe-under-systemd" in ids


def test_a_missing_runbook_is_a_404_that_says_where_it_looked(tmp_path):
    status, page = runbooks.load_page([tmp_path / "nowhere.md"])
    assert status == 404 and str(tmp_path / "nowhere.md") in page.decode()
    assert "ssdfleet_runbook_url" in page.decode()
    # gzipped, as a distribution may ship it
    import gzip

    packed = tmp_path / "runbooks.md.gz"
    packed.write_bytes(gzip.compress(b"# Runbooks\n\n## SSDReadOnly\n\ntext\n"))
    status, page = runbooks.load_page([tmp_path / "nowhere.md", packed])
    assert status == 200 and 'id="ssdreadonly"' in page.decode()
