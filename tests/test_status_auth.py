"""``ssdfleet status`` against an agent behind TLS and basic auth (its --web-config), as an
operator runs it on the host: the real agent and the real command, a test CA made here.

The credentials never go on the command line in the recommended forms (--basic-auth-file,
--client-config with a password_file, $SSDFLEET_BASIC_AUTH); ``--url https://user:pass@...``
works too. Every way of being refused (no or wrong credentials, a certificate status cannot
verify, plain HTTP to a TLS agent, credentials given twice, an unreadable file) is exit 3
(UNKNOWN) with one clear line, and never a local poll that would hide the agent's answer.
The fake host's drives give exit 1 (nvme1's media errors) when the agent answers.
"""

from __future__ import annotations

import json
import os
import shutil
import ssl
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Dict, Optional

import pytest

from tests.conftest import fixture_path
from tests.fakehost import ROOT, AgentProcess, build_default_host
from tests.test_e2e_agent import FAST
from tests.test_webconfig import pki  # noqa: F401 (a session fixture: the test CA and certificates)

USER, PASSWORD = "prometheus", "scrape-secret"  # tests/fixtures/webconfig/tls.good.yml


def start_tls_agent(tmp_path: Path, pki_dir: Path, web_fixture: str) -> AgentProcess:
    conf = tmp_path / "conf"
    conf.mkdir()
    for item in pki_dir.iterdir():
        shutil.copy(item, conf / item.name)
    web = conf / "web-config.yml"
    shutil.copy(fixture_path(f"webconfig/{web_fixture}"), web)
    agent = AgentProcess(build_default_host(tmp_path / "host"), FAST + ["--web-config", str(web)])
    agent.url = f"https://127.0.0.1:{agent.port}"
    context = ssl.create_default_context(cafile=str(conf / "ca.crt"))
    if web_fixture == "tls_client_auth.good.yml":
        context.load_cert_chain(str(conf / "client.crt"), str(conf / "client.key"))
    deadline = time.monotonic() + 60
    while True:  # /healthz answers without credentials, over TLS
        try:
            with urllib.request.urlopen(agent.url + "/healthz", timeout=2, context=context) as r:
                if r.status == 200:
                    break
        except OSError:
            if agent.proc.poll() is not None or time.monotonic() > deadline:
                agent.stop()
                raise AssertionError(f"TLS agent not ready:\n{agent.log()}") from None
            time.sleep(0.2)
    agent.conf = conf  # type: ignore[attr-defined]
    return agent


@pytest.fixture
def tls_agent(tmp_path, pki):  # noqa: F811
    agent = start_tls_agent(tmp_path, pki, "tls.good.yml")
    try:
        yield agent
    finally:
        agent.stop()


def status(agent: AgentProcess, *args: str, url: Optional[str] = None,
           env: Optional[Dict[str, str]] = None) -> subprocess.CompletedProcess:
    full_env = {k: v for k, v in os.environ.items() if k != "SSDFLEET_BASIC_AUTH"}
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "agent", "status", "--url", url or agent.url, *args],
                          capture_output=True, text=True, timeout=90, cwd=str(ROOT), env=full_env)


def secret_file(directory: Path, name: str, text: str) -> Path:
    path = directory / name
    path.write_text(text)
    path.chmod(0o600)
    return path


def read_through_the_agent(r: subprocess.CompletedProcess, agent: AgentProcess) -> dict:
    """The JSON of a run that read the agent: exit 1 (nvme1), the agent named as the source."""
    assert r.returncode == 1, r.stdout + r.stderr
    data = json.loads(r.stdout)
    assert data["source"] == f"agent at {agent.url}" and data["exit_code"] == 1
    assert {d["device"] for d in data["drives"]} == {"sda", "nvme0", "nvme1", "dfa"}
    return data


def test_basic_auth_file_and_ca_file(tls_agent):
    creds = secret_file(tls_agent.conf, "status.auth", f"{USER}:{PASSWORD}\n")
    ca = str(tls_agent.conf / "ca.crt")
    read_through_the_agent(status(tls_agent, "--ca-file", ca, "--basic-auth-file", str(creds), "--json"), tls_agent)
    # the table says where the numbers came from, and nothing shows the password
    r = status(tls_agent, "--ca-file", ca, "--basic-auth-file", str(creds), "--color", "never")
    assert r.returncode == 1 and f"source: agent at {tls_agent.url}" in r.stdout
    assert PASSWORD not in r.stdout + r.stderr


def test_client_config_as_in_a_scrape_config(tls_agent):
    secret_file(tls_agent.conf, "password", PASSWORD + "\n")
    config = tls_agent.conf / "status-client.yml"
    config.write_text(f"basic_auth:\n  username: {USER}\n  password_file: password\n"
                      "tls_config:\n  ca_file: ca.crt\n  server_name: localhost\n")
    read_through_the_agent(status(tls_agent, "--client-config", str(config), "--json"), tls_agent)
    # server_name is what the certificate is checked against: a name it lacks is refused
    config.write_text(f"basic_auth:\n  username: {USER}\n  password_file: password\n"
                      "tls_config:\n  ca_file: ca.crt\n  server_name: db9.example.net\n")
    r = status(tls_agent, "--client-config", str(config))
    assert r.returncode == 3 and "db9.example.net" in r.stderr, r.stderr


def test_credentials_in_the_url_or_the_environment(tls_agent):
    ca = str(tls_agent.conf / "ca.crt")
    url = tls_agent.url.replace("https://", f"https://{USER}:{PASSWORD}@")
    data = read_through_the_agent(status(tls_agent, "--ca-file", ca, "--json", url=url), tls_agent)
    assert PASSWORD not in json.dumps(data)  # the source names the URL without them
    read_through_the_agent(status(tls_agent, "--ca-file", ca, "--json",
                                  env={"SSDFLEET_BASIC_AUTH": f"{USER}:{PASSWORD}"}), tls_agent)


@pytest.mark.parametrize("case,args,url,message", [
    ("no credentials", ["--ca-file", "{conf}/ca.crt"], None, "HTTP 401 (it wants a user and password: --basic-auth-file"),
    ("wrong password", ["--ca-file", "{conf}/ca.crt", "--basic-auth-file", "{conf}/wrong.auth"], None,
     "HTTP 401 (wrong user or password)"),
    ("no CA", ["--basic-auth-file", "{conf}/good.auth"], None, "--ca-file FILE names the CA"),
    ("plain http to TLS", ["--basic-auth-file", "{conf}/good.auth"], "http://127.0.0.1:{port}", "does it serve https?"),
    ("credentials twice", ["--ca-file", "{conf}/ca.crt", "--basic-auth-file", "{conf}/good.auth"],
     "https://a:b@127.0.0.1:{port}", "credentials given twice (--url and --basic-auth-file)"),
    ("unreadable file", ["--basic-auth-file", "{conf}/missing.auth"], None, "--basic-auth-file {conf}/missing.auth"),
    ("not user:password", ["--basic-auth-file", "{conf}/bare.auth"], None, "expected USER:PASSWORD"),
])
def test_every_refusal_is_unknown_with_one_clear_line(tls_agent, case, args, url, message):
    conf = tls_agent.conf
    secret_file(conf, "good.auth", f"{USER}:{PASSWORD}\n")
    secret_file(conf, "wrong.auth", f"{USER}:guess\n")
    secret_file(conf, "bare.auth", "just-a-password\n")
    fill = {"conf": str(conf), "port": str(tls_agent.port)}
    r = status(tls_agent, *[a.format(**fill) for a in args], url=url.format(**fill) if url else None)
    assert r.returncode == 3, (case, r.stdout, r.stderr)
    assert message.format(**fill) in r.stderr, (case, r.stderr)
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr, r.stderr
    assert r.stdout == ""  # no table from a local poll behind the agent's back


def test_client_certificate_for_an_agent_that_requires_one(tmp_path, pki):  # noqa: F811
    agent = start_tls_agent(tmp_path, pki, "tls_client_auth.good.yml")
    try:
        config = agent.conf / "status-client.yml"
        config.write_text("tls_config:\n  ca_file: ca.crt\n  cert_file: client.crt\n  key_file: client.key\n")
        read_through_the_agent(status(agent, "--client-config", str(config), "--json"), agent)
        r = status(agent, "--ca-file", str(agent.conf / "ca.crt"))
        assert r.returncode == 3 and "cannot read the agent" in r.stderr, r.stderr
    finally:
        agent.stop()


@pytest.mark.parametrize("text,message", [
    ("basic_auth: [user]\n", "basic_auth must be a mapping"),
    ("tls_config:\n  ca: x\n", "unknown key tls_config.ca"),
    ("basic-auth:\n  username: x\n", "unknown key basic-auth"),
    ("basic_auth:\n  username: x\n  password: y\n  password_file: z\n", "both password and password_file"),
    ("tls_config:\n  ca_file: nowhere.crt\n", "TLS settings"),
])
def test_a_client_config_that_cannot_be_used(tmp_path, text, message):
    """Refused before anything is asked of anyone (the URL is https, so the TLS settings load)."""
    config = tmp_path / "client.yml"
    config.write_text(text)
    r = subprocess.run([sys.executable, "-m", "agent", "status", "--url", "https://127.0.0.1:9",
                        "--client-config", str(config)],
                       capture_output=True, text=True, timeout=60, cwd=str(ROOT))
    assert r.returncode == 3 and message in r.stderr, r.stderr
