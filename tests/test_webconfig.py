"""web-config.yml parsing, TLS and basic auth (agent/webconfig.py).

Config cases are files in tests/fixtures/webconfig (``*.good.yml`` load, ``*.bad.yml`` fail).
Certificates are generated per session with the ``cryptography`` package into a temporary
directory; each config under test is copied next to them, which also exercises the rule that
relative paths resolve against the config file's directory.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import datetime
import ipaddress
import shutil
import socket
import ssl
import threading
import time
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Tuple

import bcrypt
import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from fastapi import FastAPI
from fastapi.responses import PlainTextResponse
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent import webconfig
from agent.webconfig import (
    BasicAuthMiddleware,
    WebConfig,
    WebConfigError,
    apply_headers,
    load_web_config,
    parse_basic_authorization,
    parse_web_config,
    secure_app,
    ssl_context,
)
from tests.conftest import fixture_files, fixture_path

PASSWORDS = {"prometheus": "scrape-secret", "grafana": "grafana-secret"}


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


# --- test PKI -------------------------------------------------------------------------------


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey) -> None:
    path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )


def _issue(
    directory: Path,
    stem: str,
    common_name: str,
    sans: List[x509.GeneralName],
    usage: x509.ObjectIdentifier,
    issuer: Optional[Tuple[x509.Certificate, ec.EllipticCurvePrivateKey]],
) -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.timezone.utc)
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name))
        .issuer_name(issuer[0].subject if issuer else _name(common_name))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        # Python 3.13's default client context verifies strictly (VERIFY_X509_STRICT), which
        # wants the issuer's key identifier in every certificate it signed.
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(
            (issuer[1] if issuer else key).public_key()), critical=False)
    )
    cert = builder.sign(issuer[1] if issuer else key, hashes.SHA256())
    (directory / f"{stem}.crt").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    _write_key(directory / f"{stem}.key", key)


@pytest.fixture(scope="session")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """ca.crt; server (127.0.0.1, localhost); client (SAN prometheus.example.net) and intruder
    (SAN intruder.example.net) signed by the CA; rogue (self-signed); stray.key (no cert)."""
    directory = tmp_path_factory.mktemp("pki")
    ca_key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(_name("ssdfleet test CA"))
        .issuer_name(_name("ssdfleet test CA"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    (directory / "ca.crt").write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    ca = (ca_cert, ca_key)
    _issue(
        directory,
        "server",
        "localhost",
        [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))],
        ExtendedKeyUsageOID.SERVER_AUTH,
        ca,
    )
    _issue(
        directory, "client", "prometheus", [x509.DNSName("prometheus.example.net")], ExtendedKeyUsageOID.CLIENT_AUTH, ca
    )
    _issue(
        directory, "intruder", "intruder", [x509.DNSName("intruder.example.net")], ExtendedKeyUsageOID.CLIENT_AUTH, ca
    )
    _issue(
        directory,
        "rogue",
        "prometheus",
        [x509.DNSName("prometheus.example.net")],
        ExtendedKeyUsageOID.CLIENT_AUTH,
        None,
    )
    _write_key(directory / "stray.key", ec.generate_private_key(ec.SECP256R1()))
    return directory


@pytest.fixture
def confdir(tmp_path: Path, pki: Path) -> Path:
    """A fresh directory holding the test certificates, for configs to be copied into."""
    for item in pki.iterdir():
        shutil.copy(item, tmp_path / item.name)
    return tmp_path


def place(fixture: str, directory: Path) -> Path:
    target = directory / "web-config.yml"
    shutil.copy(fixture_path(f"webconfig/{fixture}"), target)
    return target


# --- parsing --------------------------------------------------------------------------------

BAD_CASES: Dict[str, str] = {
    "unknown_top_key.bad.yml": "unknown key 'tls_config'",
    "unknown_nested_key.bad.yml": "tls_server_config: unknown key 'certfile'",
    "unknown_http_key.bad.yml": "http_server_config: unknown key 'http3'",
    "bad_bcrypt.bad.yml": "basic_auth_users.prometheus: not a bcrypt hash",
    "sha_crypt.bad.yml": "basic_auth_users.prometheus: not a bcrypt hash",
    "cert_without_key.bad.yml": "missing key_file",
    "key_without_cert.bad.yml": "missing cert_file",
    "missing_file.bad.yml": "does-not-exist.crt: cannot read",
    "wrong_type.bad.yml": "http_server_config.http2 must be true or false, got a string",
    "users_as_list.bad.yml": "basic_auth_users must be a mapping, got a list",
    "top_level_list.bad.yml": "the top level must be a mapping",
    "bad_min_version.bad.yml": "min_version: unknown TLS version 'TLS14'",
    "max_below_min.bad.yml": "max_version TLS12 is below min_version TLS13",
    "client_ca_without_auth.bad.yml": "client_ca_file is set but client_auth_type is NoClientCert",
    "client_auth_without_ca.bad.yml": "needs client_ca_file",
    "request_client_cert.bad.yml": "'RequireAnyClientCert' is not supported",
    "bad_client_auth.bad.yml": "client_auth_type: invalid value 'Always'",
    "sans_without_verify.bad.yml": "client_allowed_sans needs client_auth_type RequireAndVerifyClientCert",
    "unknown_cipher.bad.yml": "unknown or unsupported cipher 'TLS_RSA_WITH_RC4_128_SHA'",
    "two_curves.bad.yml": "one curve only",
    "header_not_allowed.bad.yml": "HTTP header 'Server' can not be configured",
    "header_bad_value.bad.yml": "X-Frame-Options: invalid value",
    "duplicate_key.bad.yml": "duplicate key 'prometheus'",
    "rate_limit.bad.yml": "'rate_limit' is valid for exporter-toolkit but not supported",
    "inline_cert.bad.yml": "'cert' is valid for exporter-toolkit but not supported",
    "not_yaml.bad.yml": "not valid YAML",
    "orphan_tls_setting.bad.yml": "tls_server_config.min_version is set but TLS is not",
}


def test_every_fixture_is_in_a_table() -> None:
    names = {p.name for p in fixture_files("webconfig", ".yml")}
    good = {n for n in names if n.endswith(".good.yml")}
    assert names - good == set(BAD_CASES)
    assert good == {
        "empty.good.yml",
        "basic_auth.good.yml",
        "tls.good.yml",
        "tls_client_auth.good.yml",
        "tls_allowed_sans.good.yml",
        "tls_all_keys.good.yml",
        "tls_empty_section.good.yml",
    }


@pytest.mark.parametrize("fixture", sorted(BAD_CASES))
def test_bad_config_is_rejected_with_a_clear_message(fixture: str, confdir: Path) -> None:
    path = place(fixture, confdir)
    with pytest.raises(WebConfigError) as err:
        load_web_config(str(path))
    assert BAD_CASES[fixture] in str(err.value)
    assert str(path) in str(err.value)


@pytest.mark.parametrize("fixture", ["empty.good.yml", "tls_empty_section.good.yml"])
def test_empty_config_means_no_settings(fixture: str, confdir: Path) -> None:
    cfg = load_web_config(str(place(fixture, confdir)))
    assert cfg is not None
    assert cfg.tls is None and not cfg.basic_auth_users and cfg.http.headers == ()
    assert ssl_context(cfg) is None


def test_no_path_means_plain_http() -> None:
    assert load_web_config(None) is None
    assert ssl_context(None) is None


def test_missing_config_file(tmp_path: Path) -> None:
    with pytest.raises(WebConfigError, match="cannot read"):
        load_web_config(str(tmp_path / "nope.yml"))


def test_basic_auth_users_are_loaded_as_bytes(confdir: Path) -> None:
    cfg = load_web_config(str(place("basic_auth.good.yml", confdir)))
    assert cfg is not None and cfg.tls is None
    assert set(cfg.basic_auth_users) == set(PASSWORDS)
    for user, password in PASSWORDS.items():
        assert bcrypt.checkpw(password.encode(), cfg.basic_auth_users[user])
    assert "$2" not in repr(cfg)


def test_relative_paths_resolve_against_the_config_directory(confdir: Path, tmp_path_factory) -> None:
    elsewhere = tmp_path_factory.mktemp("cwd")
    with contextlib.chdir(elsewhere) if hasattr(contextlib, "chdir") else contextlib.nullcontext():
        cfg = load_web_config(str(place("tls_client_auth.good.yml", confdir)))
    assert cfg is not None and cfg.tls is not None
    assert cfg.tls.cert_file == str(confdir / "server.crt")
    assert cfg.tls.key_file == str(confdir / "server.key")
    assert cfg.tls.client_ca_file == str(confdir / "ca.crt")


def test_all_keys_map_onto_the_ssl_context(confdir: Path) -> None:
    cfg = load_web_config(str(place("tls_all_keys.good.yml", confdir)))
    ctx = ssl_context(cfg)
    assert ctx is not None
    assert ctx.minimum_version == ssl.TLSVersion.TLSv1_2
    assert ctx.maximum_version == ssl.TLSVersion.TLSv1_3
    assert ctx.verify_mode == ssl.CERT_OPTIONAL
    assert not ctx.options & ssl.OP_CIPHER_SERVER_PREFERENCE
    tls12 = {c["name"] for c in ctx.get_ciphers() if c["protocol"] == "TLSv1.2"}
    assert tls12 == {"ECDHE-RSA-AES128-GCM-SHA256", "ECDHE-RSA-AES256-GCM-SHA384"}
    assert cfg is not None and not cfg.http.http2
    assert dict(cfg.http.headers) == {"X-Frame-Options": "deny", "Content-Security-Policy": "default-src 'self'"}


def test_defaults_follow_exporter_toolkit(confdir: Path) -> None:
    cfg = load_web_config(str(place("tls_client_auth.good.yml", confdir)))
    ctx = ssl_context(cfg)
    assert ctx is not None and cfg is not None and cfg.tls is not None
    assert cfg.tls.min_version == "TLS12" and ctx.minimum_version == ssl.TLSVersion.TLSv1_2
    assert ctx.options & ssl.OP_CIPHER_SERVER_PREFERENCE
    assert ctx.verify_mode == ssl.CERT_REQUIRED
    assert cfg.http.http2 is True


def test_key_that_does_not_match_the_cert_fails_at_load(confdir: Path) -> None:
    path = confdir / "web-config.yml"
    path.write_text("tls_server_config:\n  cert_file: server.crt\n  key_file: stray.key\n")
    with pytest.raises(WebConfigError, match="cannot load cert_file"):
        load_web_config(str(path))


def test_unreadable_cert_file_fails_at_load(confdir: Path) -> None:
    # Tests may run as root, where chmod 000 does not stop a read; a directory always fails.
    (confdir / "certs").mkdir()
    path = confdir / "web-config.yml"
    path.write_text("tls_server_config:\n  cert_file: certs\n  key_file: server.key\n")
    with pytest.raises(WebConfigError, match="cert_file .*certs: cannot read"):
        load_web_config(str(path))


def test_client_ca_file_that_is_not_pem_fails_at_load(confdir: Path) -> None:
    (confdir / "junk.crt").write_text("not a certificate\n")
    path = confdir / "web-config.yml"
    path.write_text(
        "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
        "  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: junk.crt\n"
    )
    with pytest.raises(WebConfigError, match="client_ca_file"):
        load_web_config(str(path))


def test_parse_web_config_needs_no_file(tmp_path: Path) -> None:
    cfg = parse_web_config("http_server_config:\n  headers:\n    X-Content-Type-Options: nosniff\n", str(tmp_path))
    assert cfg == WebConfig(http=webconfig.HTTPServerConfig(headers=(("X-Content-Type-Options", "nosniff"),)))


def test_the_context_carries_every_setting(confdir: Path) -> None:
    cfg = load_web_config(str(place("tls_all_keys.good.yml", confdir)))
    ctx = ssl_context(cfg)
    assert isinstance(ctx, ssl.SSLContext)
    assert ctx.minimum_version == ssl.TLSVersion.TLSv1_2
    assert ctx.verify_mode == ssl.CERT_OPTIONAL
    assert not ctx.options & ssl.OP_CIPHER_SERVER_PREFERENCE
    tls12 = {c["name"] for c in ctx.get_ciphers() if c["protocol"] == "TLSv1.2"}
    assert tls12 == {"ECDHE-RSA-AES128-GCM-SHA256", "ECDHE-RSA-AES256-GCM-SHA384"}


# --- basic auth in-process ------------------------------------------------------------------


def _users() -> Dict[str, bytes]:
    cfg = parse_web_config(fixture_path("webconfig/basic_auth.good.yml").read_text(), "/")
    return dict(cfg.basic_auth_users)


def make_app(started: Optional[List[str]] = None) -> FastAPI:
    @contextlib.asynccontextmanager
    async def lifespan(_app: FastAPI):
        if started is not None:
            started.append("up")
        yield

    app = FastAPI(lifespan=lifespan)

    @app.get("/metrics", response_class=PlainTextResponse)
    def metrics() -> str:
        return "ssd_life_left_ratio 0.5\n"

    @app.get("/healthz", response_class=PlainTextResponse)
    def healthz() -> str:
        return "ok\n"

    @app.get("/api/v1/drives")
    def drives() -> list:
        return []

    return app


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    app = make_app()
    app.add_middleware(BasicAuthMiddleware, users=_users())
    with TestClient(app) as test_client:
        yield test_client


UNAUTHORIZED = {
    "wrong password": basic("prometheus", "guess"),
    "unknown user": basic("root", "scrape-secret"),
    "empty": "",
    "other scheme": "Bearer abc",
    "scheme only": "Basic",
    "bad base64": "Basic !!!notbase64",
    "no colon": "Basic " + base64.b64encode(b"prometheusscrape-secret").decode(),
    "not utf-8": "Basic " + base64.b64encode(b"prometheus:\xff\xfe").decode(),
    "user with wrong case": basic("Prometheus", "scrape-secret"),
    "password too long for bcrypt": basic("prometheus", "x" * 100),
}


@pytest.mark.parametrize("user", sorted(PASSWORDS))
def test_correct_credentials_pass(client: TestClient, user: str) -> None:
    for path in ("/metrics", "/api/v1/drives", "/"):
        response = client.get(path, headers={"Authorization": basic(user, PASSWORDS[user])})
        assert response.status_code == (404 if path == "/" else 200), path
    assert (
        client.get(
            "/metrics", headers={"Authorization": basic(user, PASSWORDS[user]).replace("Basic", "basic")}
        ).status_code
        == 200
    )


@pytest.mark.parametrize("case", sorted(UNAUTHORIZED))
def test_bad_credentials_get_401_with_a_challenge(client: TestClient, case: str) -> None:
    for path in ("/metrics", "/api/v1/drives", "/no-such-page"):
        response = client.get(path, headers={"Authorization": UNAUTHORIZED[case]})
        assert response.status_code == 401, (case, path)
        assert response.headers["www-authenticate"] == 'Basic realm="ssdfleet"'
        assert "ssd_" not in response.text


def test_missing_credentials_get_401(client: TestClient) -> None:
    response = client.get("/metrics")
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == 'Basic realm="ssdfleet"'


def test_two_authorization_headers_are_refused() -> None:
    good = basic("prometheus", "scrape-secret").encode()
    assert parse_basic_authorization([(b"authorization", good)]) == ("prometheus", "scrape-secret")
    assert parse_basic_authorization([(b"authorization", good), (b"authorization", good)]) is None


def test_healthz_is_open_by_default_and_can_be_closed(client: TestClient) -> None:
    assert client.get("/healthz").status_code == 200
    assert client.get("/healthz/").status_code in (401,)  # exact match only
    app = make_app()
    app.add_middleware(BasicAuthMiddleware, users=_users(), exempt_paths=())
    with TestClient(app) as closed:
        assert closed.get("/healthz").status_code == 401


def test_lifespan_passes_through() -> None:
    started: List[str] = []
    app = make_app(started)
    app.add_middleware(BasicAuthMiddleware, users=_users())
    with TestClient(app):
        pass
    assert started == ["up"]


def test_custom_realm_and_bad_realm() -> None:
    app = make_app()
    app.add_middleware(BasicAuthMiddleware, users=_users(), realm="db-17")
    with TestClient(app) as test_client:
        assert test_client.get("/metrics").headers["www-authenticate"] == 'Basic realm="db-17"'
    with pytest.raises(ValueError):
        BasicAuthMiddleware(make_app(), _users(), realm='a"b')


def test_successes_are_cached_and_unknown_users_still_cost_a_bcrypt(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: List[bytes] = []
    real_checkpw = bcrypt.checkpw

    def counting_checkpw(password: bytes, hashed: bytes) -> bool:
        calls.append(hashed)
        return real_checkpw(password, hashed)

    users = _users()
    app = make_app()
    app.add_middleware(BasicAuthMiddleware, users=users)
    monkeypatch.setattr(webconfig.bcrypt, "checkpw", counting_checkpw)
    with TestClient(app) as test_client:
        for _ in range(5):
            assert (
                test_client.get("/metrics", headers={"Authorization": basic("prometheus", "scrape-secret")}).status_code
                == 200
            )
        assert calls == [users["prometheus"]]
        for _ in range(2):
            assert (
                test_client.get("/metrics", headers={"Authorization": basic("prometheus", "nope")}).status_code == 401
            )
        assert len(calls) == 2  # the same wrong guess again costs no second bcrypt
        assert test_client.get("/metrics", headers={"Authorization": basic("prometheus", "nope2")}).status_code == 401
        assert len(calls) == 3  # but every new guess does
        assert test_client.get("/metrics", headers={"Authorization": basic("mallory", "x")}).status_code == 401
        assert len(calls) == 4 and calls[-1] not in users.values()  # the decoy hash
        assert calls[-1][4:7] == users["prometheus"][4:7]  # same bcrypt cost


class _HeldChecks:
    """A ``checkpw`` for :class:`webconfig.BcryptGate` that runs real bcrypt but only when the
    test lets each call go, recording the passwords in the order the worker took them."""

    def __init__(self) -> None:
        self.order: List[bytes] = []
        self._go = threading.Semaphore(0)

    def __call__(self, password: bytes, hashed: bytes) -> bool:
        self.order.append(password)
        assert self._go.acquire(timeout=20)
        return bcrypt.checkpw(password, hashed)

    async def release(self, taken: int) -> None:
        """Let the running check finish once the worker has taken ``taken`` checks."""
        for _ in range(1000):
            if len(self.order) >= taken:
                break
            await asyncio.sleep(0.01)
        self._go.release()


def test_bcrypt_gate_serves_a_clean_address_before_a_guessers_queue() -> None:
    held = _HeldChecks()
    right = bcrypt.hashpw(b"right", bcrypt.gensalt(4))
    gate = webconfig.BcryptGate(queue=3, per_client=2, checkpw=held)
    guesser, scraper = "192.0.2.9", "192.0.2.1"

    async def scenario() -> None:
        check = gate.check
        first = asyncio.ensure_future(check(guesser, b"k0", b"g0", right))
        await asyncio.sleep(0.05)  # g0 is running
        queued = [asyncio.ensure_future(check(guesser, k, p, right)) for k, p in ((b"k1", b"g1"), (b"k2", b"g2"))]
        await asyncio.sleep(0)
        with pytest.raises(webconfig._Busy):  # a third waiting check from the same address
            await check(guesser, b"k3", b"g3", right)
        await held.release(1)
        assert await first is False
        assert gate.record(guesser) == (1, 4)
        scrape = asyncio.ensure_future(check(scraper, b"ks", b"right", right))
        await held.release(2)  # g1 was taken next (it was alone in the queue then)
        await held.release(3)  # then the scraper's, ahead of g2 from an address with a failure
        assert await scrape is True
        await held.release(4)
        assert [await q for q in queued] == [False, False]
        assert gate.record(scraper) == (0, 0)  # a success clears the record

    asyncio.run(scenario())
    assert held.order == [b"g0", b"g1", b"right", b"g2"]


def test_bcrypt_gate_full_queue_gives_way_to_a_better_record_and_shares_identical_checks() -> None:
    held = _HeldChecks()
    right = bcrypt.hashpw(b"right", bcrypt.gensalt(4))
    gate = webconfig.BcryptGate(queue=2, per_client=2, checkpw=held)

    async def scenario() -> None:
        running = asyncio.ensure_future(gate.check("192.0.2.9", b"k0", b"g0", right))
        await asyncio.sleep(0.05)
        waiting = [asyncio.ensure_future(gate.check("192.0.2.9", k, p, right)) for k, p in ((b"k1", b"g1"), (b"k2", b"g2"))]
        await asyncio.sleep(0)
        # The queue is full of checks from an address with 3 attempts: one from a fresh address
        # takes the place of the newest of them, which gets 503 at once.
        twins = [asyncio.ensure_future(gate.check("192.0.2.1", b"ks", b"right", right)) for _ in range(2)]
        await asyncio.sleep(0)
        with pytest.raises(webconfig._Busy):
            await waiting[1]
        for taken in (1, 2, 3):
            await held.release(taken)
        assert await running is False
        assert [await t for t in twins] == [True, True]  # one check for both requests
        assert await waiting[0] is False

    asyncio.run(scenario())
    assert sorted(held.order) == sorted([b"g0", b"g1", b"right"])


def test_cache_is_bounded() -> None:
    cache = webconfig._SuccessCache(3)
    for i in range(10):
        cache.add(bytes([i]))
    assert len(cache) == 3 and bytes([9]) in cache and bytes([0]) not in cache


def test_secure_app_adds_headers_to_every_response_including_401(confdir: Path) -> None:
    cfg = load_web_config(str(place("tls.good.yml", confdir)))
    app = secure_app(make_app(), cfg)
    with TestClient(app) as test_client:
        for response in (
            test_client.get("/metrics"),
            test_client.get("/metrics", headers={"Authorization": basic("prometheus", "scrape-secret")}),
            test_client.get("/healthz"),
        ):
            assert response.headers["x-content-type-options"] == "nosniff"
            assert response.headers["strict-transport-security"] == "max-age=31536000"


def test_app_may_override_a_configured_header() -> None:
    inner = make_app()

    @inner.get("/framed", response_class=PlainTextResponse)
    def framed() -> PlainTextResponse:
        return PlainTextResponse("x", headers={"X-Frame-Options": "sameorigin"})

    with TestClient(apply_headers(inner, {"X-Frame-Options": "deny"})) as test_client:
        assert test_client.get("/framed").headers.get_list("x-frame-options") == ["sameorigin"]
        assert test_client.get("/healthz").headers["x-frame-options"] == "deny"
    assert apply_headers(inner, {}) is inner


# --- property: any Authorization value gives 200 or 401, never an exception -----------------


async def _ok_app(scope, receive, send) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"ok"})


_PROPERTY_MW = BasicAuthMiddleware(_ok_app, _users())


def _status_for(header_values: List[bytes]) -> int:
    sent: List[dict] = []

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        sent.append(message)

    scope = {
        "type": "http",
        "method": "GET",
        "path": "/metrics",
        "raw_path": b"/metrics",
        "query_string": b"",
        "headers": [(b"authorization", v) for v in header_values],
    }
    asyncio.run(_PROPERTY_MW(scope, receive, send))
    start = sent[0]
    assert start["type"] == "http.response.start"
    if start["status"] == 401:
        assert (b"www-authenticate", b'Basic realm="ssdfleet"') in start["headers"]
    return start["status"]


_credential_pairs = st.tuples(
    st.one_of(st.sampled_from(sorted(PASSWORDS)), st.text(max_size=20)),
    st.one_of(st.sampled_from(sorted(PASSWORDS.values())), st.text(max_size=80)),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.binary(max_size=120), min_size=0, max_size=2))
def test_arbitrary_authorization_bytes_give_200_or_401(values: List[bytes]) -> None:
    assert _status_for(values) == 401 or (
        len(values) == 1 and parse_basic_authorization([(b"authorization", values[0])]) in PASSWORDS.items()
    )


@settings(max_examples=150, deadline=None)
@given(_credential_pairs, st.sampled_from(["Basic ", "basic ", "BASIC  ", "Basic\t"]))
def test_well_formed_credentials_pass_only_when_right(pair: Tuple[str, str], prefix: str) -> None:
    user, password = pair
    token = base64.b64encode(f"{user}:{password}".encode("utf-8", "surrogatepass")).decode()
    status = _status_for([(prefix + token).encode()])
    right = PASSWORDS.get(user) == password and prefix != "Basic\t"
    assert status == (200 if right else 401)


# --- the agent's server with TLS ---------------------------------------------------------


@contextlib.contextmanager
def running(app, cfg: Optional[WebConfig], request_timeout: float = 10.0) -> Iterator[int]:
    """Serve ``app`` as the agent does (agent/server.py, with ``cfg``'s TLS and basic auth), on
    127.0.0.1 with a free port, in a thread."""
    from agent import server as http_server

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = http_server.AgentServer(secure_app(app, cfg), "127.0.0.1", port, ssl_context=ssl_context(cfg),
                                     request_timeout=request_timeout, max_connections=64)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
        time.sleep(0.02)
    try:
        yield port
    finally:
        server.stop()
        thread.join(10)
        sock.close()


def tls_client(pki: Path, cert: Optional[str] = None, max_version: Optional[ssl.TLSVersion] = None) -> httpx.Client:
    ctx = ssl.create_default_context(cafile=str(pki / "ca.crt"))
    if cert:
        ctx.load_cert_chain(str(pki / f"{cert}.crt"), str(pki / f"{cert}.key"))
    if max_version:
        ctx.maximum_version = max_version
    return httpx.Client(verify=ctx, timeout=5)


def test_server_tls_and_basic_auth(confdir: Path, pki: Path) -> None:
    cfg = load_web_config(str(place("tls.good.yml", confdir)))
    with running(make_app(), cfg) as port, tls_client(pki) as https:
        url = f"https://127.0.0.1:{port}"
        ok = https.get(url + "/metrics", headers={"Authorization": basic("prometheus", "scrape-secret")})
        assert ok.status_code == 200 and ok.text == "ssd_life_left_ratio 0.5\n"
        assert ok.headers["x-content-type-options"] == "nosniff"
        assert https.get(url + "/healthz").status_code == 200
        for case, header in UNAUTHORIZED.items():
            response = https.get(url + "/metrics", headers={"Authorization": header})
            assert response.status_code == 401, case
            assert response.headers["www-authenticate"] == 'Basic realm="ssdfleet"'
            assert response.headers["x-content-type-options"] == "nosniff"
        missing = https.get(url + "/api/v1/drives")
        assert missing.status_code == 401 and missing.headers["www-authenticate"] == 'Basic realm="ssdfleet"'

        with pytest.raises(httpx.TransportError):
            httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5)
        with pytest.raises(httpx.ConnectError):  # the test CA is not in the system store
            httpx.get(url + "/healthz", timeout=5)


def test_server_honours_min_version(confdir: Path, pki: Path) -> None:
    path = confdir / "web-config.yml"
    path.write_text("tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  min_version: TLS13\n")
    with running(make_app(), load_web_config(str(path))) as port:
        with tls_client(pki) as modern:
            assert modern.get(f"https://127.0.0.1:{port}/healthz").status_code == 200
        with tls_client(pki, max_version=ssl.TLSVersion.TLSv1_2) as old, pytest.raises(httpx.ConnectError):
            old.get(f"https://127.0.0.1:{port}/healthz")


def test_server_requires_and_verifies_client_certs(confdir: Path, pki: Path) -> None:
    cfg = load_web_config(str(place("tls_client_auth.good.yml", confdir)))
    with running(make_app(), cfg) as port:
        url = f"https://127.0.0.1:{port}/healthz"
        with tls_client(pki, cert="client") as with_cert:
            assert with_cert.get(url).status_code == 200
        for cert in (None, "rogue"):
            with tls_client(pki, cert=cert) as refused, pytest.raises(httpx.TransportError):
                refused.get(url)


def test_server_checks_client_allowed_sans(confdir: Path, pki: Path) -> None:
    cfg = load_web_config(str(place("tls_allowed_sans.good.yml", confdir)))
    with running(make_app(), cfg) as port:
        url = f"https://127.0.0.1:{port}/healthz"
        with tls_client(pki, cert="client") as allowed:
            assert allowed.get(url).status_code == 200
        with tls_client(pki, cert="intruder") as refused, pytest.raises(httpx.TransportError):
            refused.get(url)


def test_tls12_accepts_only_aead_suites_by_default(confdir: Path, pki: Path) -> None:
    """Issue 13: OpenSSL's defaults let two CBC suites through on TLS 1.2."""
    cfg = load_web_config(str(place("tls.good.yml", confdir)))
    assert not cfg.tls.cipher_suites
    with running(make_app(), cfg) as port:
        url = f"https://127.0.0.1:{port}/healthz"
        # both key types: the test certificate's decides which of each pair can be used
        for suite, accepted in (("ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES128-GCM-SHA256", True),
                                ("ECDHE-RSA-AES128-SHA:ECDHE-ECDSA-AES128-SHA", False),
                                ("ECDHE-RSA-AES256-SHA384:ECDHE-ECDSA-AES256-SHA384", False),
                                ("ECDHE-RSA-AES128-SHA256:ECDHE-ECDSA-AES128-SHA256", False),
                                ("AES128-SHA256:AES128-SHA", False)):
            ctx = ssl.create_default_context(cafile=str(pki / "ca.crt"))
            ctx.maximum_version = ssl.TLSVersion.TLSv1_2
            try:
                ctx.set_ciphers(suite)
            except ssl.SSLError:
                continue  # this OpenSSL has not even the client side of it
            with httpx.Client(verify=ctx, timeout=5) as client:
                if accepted:
                    assert client.get(url).status_code == 200, suite
                else:
                    with pytest.raises(httpx.ConnectError):
                        client.get(url)


def test_a_stalled_tls_handshake_is_closed_at_the_request_deadline(confdir: Path, pki: Path) -> None:
    cfg = load_web_config(str(place("tls.good.yml", confdir)))
    with running(make_app(), cfg, request_timeout=1.0) as port:
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        started = time.monotonic()
        try:
            assert s.recv(1) == b""  # never sent a ClientHello: closed by the server
        except ConnectionResetError:
            pass
        took = time.monotonic() - started
        s.close()
        assert took < 5.0, took
