"""TLS and basic auth for the agent's HTTP side, configured by a Prometheus ``web-config.yml``.

The file format is the one every Prometheus exporter reads through exporter-toolkit
(``--web.config.file``), so one file can be shared across node_exporter and ssdfleet::

    tls_server_config:
      cert_file: server.crt          # relative paths are resolved against this file's directory
      key_file: server.key
      client_auth_type: RequireAndVerifyClientCert
      client_ca_file: clients-ca.crt
      min_version: TLS12
    http_server_config:
      headers:
        X-Content-Type-Options: nosniff
    basic_auth_users:
      prometheus: $2b$12$...         # bcrypt hash, e.g. from `htpasswd -nBC 12 prometheus`

Parsing is strict, like exporter-toolkit's ``yaml.UnmarshalStrict``: an unknown or duplicated key,
a value of the wrong type, a hash that is not bcrypt, or a file that cannot be read stops the
agent at start with a :class:`WebConfigError` naming the key. Settings that Go's ``crypto/tls``
offers but Python's :mod:`ssl` cannot express are rejected with a message saying so, never
silently weakened; docs/security.md lists them.

Reading (:func:`load_web_config`) is kept apart from parsing (:func:`parse_web_config`), which
checks referenced files exist but needs nothing else from the host. The HTTP side is wired by
:func:`ssl_context` (TLS, handed to :class:`agent.server.AgentServer`) and :func:`secure_app`
(headers, then basic auth).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import dataclasses
import hashlib
import hmac
import ipaddress
import itertools
import logging
import os
import re
import secrets
import ssl
import threading
import time
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Awaitable, Callable, Dict, Iterable, List, Mapping, Optional, Tuple

import bcrypt
import yaml

from agent.server import HTTPStats

log = logging.getLogger(__name__)

Scope = Dict[str, Any]
Message = Dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


class WebConfigError(ValueError):
    """The web config file is unreadable, malformed, or asks for something we cannot honour."""


# --- the record -----------------------------------------------------------------------------

# Go constant names accepted by exporter-toolkit -> Python's TLS versions.
_TLS_VERSIONS = {
    "TLS10": ssl.TLSVersion.TLSv1,
    "TLS11": ssl.TLSVersion.TLSv1_1,
    "TLS12": ssl.TLSVersion.TLSv1_2,
    "TLS13": ssl.TLSVersion.TLSv1_3,
}

# client_auth_type -> ssl verify mode. Go can also ask for a client certificate *without*
# verifying it (RequestClientCert, RequireAnyClientCert); OpenSSL through Python's ssl always
# verifies a certificate it receives, so those two are rejected rather than made stricter or
# looser behind the user's back.
_CLIENT_AUTH = {
    "NoClientCert": ssl.CERT_NONE,
    "VerifyClientCertIfGiven": ssl.CERT_OPTIONAL,
    "RequireAndVerifyClientCert": ssl.CERT_REQUIRED,
}
_CLIENT_AUTH_UNSUPPORTED = ("RequestClientCert", "RequireAnyClientCert", "RequireClientCert")

# Go's tls.CipherSuites() names (the ones exporter-toolkit accepts) -> OpenSSL names.
_CIPHERS_TLS12 = {
    "TLS_RSA_WITH_AES_128_CBC_SHA": "AES128-SHA",
    "TLS_RSA_WITH_AES_256_CBC_SHA": "AES256-SHA",
    "TLS_RSA_WITH_AES_128_GCM_SHA256": "AES128-GCM-SHA256",
    "TLS_RSA_WITH_AES_256_GCM_SHA384": "AES256-GCM-SHA384",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA": "ECDHE-ECDSA-AES128-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA": "ECDHE-ECDSA-AES256-SHA",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA": "ECDHE-RSA-AES128-SHA",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA": "ECDHE-RSA-AES256-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256": "ECDHE-ECDSA-AES128-GCM-SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384": "ECDHE-ECDSA-AES256-GCM-SHA384",
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256": "ECDHE-RSA-AES128-GCM-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384": "ECDHE-RSA-AES256-GCM-SHA384",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-RSA-CHACHA20-POLY1305",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-ECDSA-CHACHA20-POLY1305",
}
# TLS 1.2 suites when the web config names none: ECDHE with AES-GCM or ChaCha20-Poly1305.
DEFAULT_TLS12_CIPHERS = (
    "ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-RSA-AES128-GCM-SHA256",
    "ECDHE-ECDSA-AES256-GCM-SHA384", "ECDHE-RSA-AES256-GCM-SHA384",
    "ECDHE-ECDSA-CHACHA20-POLY1305", "ECDHE-RSA-CHACHA20-POLY1305",
)
# TLS 1.3 suites are not configurable in Go either: accepted and ignored, as Go does.
_CIPHERS_TLS13 = ("TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256")

# Go curve names -> OpenSSL group names.
_CURVES = {"CurveP256": "prime256v1", "CurveP384": "secp384r1", "CurveP521": "secp521r1", "X25519": "X25519"}

# The response headers exporter-toolkit lets a user set, with the values it allows (None: any).
_EXTRA_HEADERS: Dict[str, Optional[Tuple[str, ...]]] = {
    "Strict-Transport-Security": None,
    "X-Content-Type-Options": ("nosniff",),
    "X-Frame-Options": ("deny", "sameorigin"),
    "X-XSS-Protection": None,
    "Content-Security-Policy": None,
}

# $2a$/$2b$/$2y$, two-digit cost, 22 characters of salt and 31 of hash in bcrypt's base64.
MAX_BCRYPT_COST = 16  # about 5 s per check on a 2020s core
_BCRYPT_RE = re.compile(r"^\$2[aby]\$(\d\d)\$[./A-Za-z0-9]{53}$")


@dataclass(frozen=True)
class TLSServerConfig:
    """``tls_server_config`` after validation; file paths are absolute."""

    cert_file: str
    key_file: str
    client_auth_type: str = "NoClientCert"
    client_ca_file: Optional[str] = None
    min_version: str = "TLS12"
    max_version: Optional[str] = None  # None: the highest the local OpenSSL offers (TLS 1.3)
    cipher_suites: Tuple[str, ...] = ()  # Go names as written; OpenSSL names are derived
    curve_preferences: Tuple[str, ...] = ()
    prefer_server_cipher_suites: bool = True
    client_allowed_sans: Tuple[str, ...] = ()


@dataclass(frozen=True)
class HTTPServerConfig:
    """``http_server_config``. The agent speaks HTTP/1.1 only; see :func:`parse_web_config`."""

    http2: bool = True
    headers: Tuple[Tuple[str, str], ...] = ()


@dataclass(frozen=True)
class WebConfig:
    """A parsed web config. ``tls`` None means plain HTTP; no users means no basic auth."""

    tls: Optional[TLSServerConfig] = None
    http: HTTPServerConfig = field(default_factory=HTTPServerConfig)
    # user -> bcrypt hash; read-only, and kept out of repr so hashes do not end up in logs.
    basic_auth_users: Mapping[str, bytes] = field(default_factory=lambda: MappingProxyType({}), repr=False)
    source: Optional[str] = None  # the file it came from, for messages


# --- reading and parsing --------------------------------------------------------------------


def load_web_config(path: Optional[str]) -> Optional[WebConfig]:
    """Read and validate the web config at ``path``; None (no file configured) means plain HTTP.

    Besides parsing, this builds the TLS context once so that a key that does not match its
    certificate, or a CA file that is not PEM, fails at start and not at the first scrape.
    """
    if path is None:
        return None
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except (OSError, UnicodeDecodeError) as err:
        raise WebConfigError(f"web config {path}: cannot read: {err}") from err
    base_dir = os.path.dirname(os.path.abspath(path))
    try:
        cfg = parse_web_config(text, base_dir)
    except WebConfigError as err:
        raise WebConfigError(f"web config {path}: {err}") from None
    cfg = dataclasses.replace(cfg, source=path)
    ssl_context(cfg)
    return cfg


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate keys (PyYAML would silently keep the last one)."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode) -> Dict[Any, Any]:
    loader.flatten_mapping(node)
    mapping: Dict[Any, Any] = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        try:
            duplicate = key in mapping
        except TypeError:
            raise WebConfigError(f"line {key_node.start_mark.line + 1}: unhashable key") from None
        if duplicate:
            raise WebConfigError(f"line {key_node.start_mark.line + 1}: duplicate key {key!r}")
        mapping[key] = loader.construct_object(value_node, deep=True)
    return mapping


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def parse_web_config(text: str, base_dir: str) -> WebConfig:
    """Parse web-config YAML text; relative file paths are resolved against ``base_dir``.

    An empty document is a valid config with no settings (plain HTTP, no auth), as is a
    ``tls_server_config`` in which nothing is set (exporter-toolkit serves plain HTTP then).
    """
    try:
        doc = yaml.load(text, Loader=_StrictLoader)  # noqa: S506 - SafeLoader subclass
    except yaml.YAMLError as err:
        raise WebConfigError(f"not valid YAML: {err}") from None
    except RecursionError:
        raise WebConfigError("nested too deeply") from None
    except ValueError as err:  # a date that is not one; an integer of over 4,300 digits (Python 3.11+)
        raise WebConfigError(f"a value cannot be read: {str(err)[:120]}") from None
    if doc is None:
        return WebConfig()
    top = _mapping(doc, "the top level")
    _check_keys(
        top,
        "the top level",
        ("tls_server_config", "http_server_config", "basic_auth_users"),
        {"rate_limit": "rate limiting is not implemented by ssdfleet"},
    )
    tls = _parse_tls(top.get("tls_server_config"), base_dir)
    http = _parse_http(top.get("http_server_config"))
    users = _parse_users(top.get("basic_auth_users"))
    return WebConfig(tls=tls, http=http, basic_auth_users=users)


def _mapping(value: Any, where: str) -> Dict[Any, Any]:
    if not isinstance(value, dict):
        raise WebConfigError(f"{where} must be a mapping, got {_kind(value)}")
    return value


def _kind(value: Any) -> str:
    return {
        dict: "a mapping",
        list: "a list",
        str: "a string",
        bool: "a boolean",
        int: "an integer",
        float: "a number",
        type(None): "nothing",
    }.get(type(value), type(value).__name__)


def _check_keys(
    section: Mapping[Any, Any], where: str, known: Iterable[str], unsupported: Optional[Mapping[str, str]] = None
) -> None:
    known = tuple(known)
    for key in section:
        if not isinstance(key, str):
            raise WebConfigError(f"{where}: key {key!r} must be a string")
        if unsupported and key in unsupported:
            raise WebConfigError(
                f"{where}: key {key!r} is valid for exporter-toolkit but not supported here: {unsupported[key]}"
            )
        if key not in known:
            raise WebConfigError(f"{where}: unknown key {key!r} (known keys: {', '.join(known)})")


def _string(section: Mapping[str, Any], key: str, where: str) -> Optional[str]:
    """A string setting; absent, null and "" all mean unset, as they do in Go."""
    value = section.get(key)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise WebConfigError(f"{where}.{key} must be a string, got {_kind(value)}")
    return value


def _bool(section: Mapping[str, Any], key: str, where: str, default: bool) -> bool:
    value = section.get(key)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise WebConfigError(f"{where}.{key} must be true or false, got {_kind(value)}")
    return value


def _strings(section: Mapping[str, Any], key: str, where: str) -> Tuple[str, ...]:
    value = section.get(key)
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise WebConfigError(f"{where}.{key} must be a list of strings, got {_kind(value)}")
    return tuple(value)


def _readable_file(path: str, base_dir: str, what: str) -> str:
    full = path if os.path.isabs(path) else os.path.join(base_dir, path)
    full = os.path.normpath(full)
    try:
        with open(full, "rb"):
            pass
    except OSError as err:
        raise WebConfigError(f"{what} {full}: cannot read: {err.strerror or err}") from None
    return full


def _parse_tls(raw: Any, base_dir: str) -> Optional[TLSServerConfig]:
    where = "tls_server_config"
    if raw is None:
        return None
    section = _mapping(raw, where)
    inline = "inline PEM is not supported; put it in a file and use the *_file key"
    _check_keys(
        section,
        where,
        (
            "cert_file",
            "key_file",
            "client_auth_type",
            "client_ca_file",
            "min_version",
            "max_version",
            "cipher_suites",
            "curve_preferences",
            "prefer_server_cipher_suites",
            "client_allowed_sans",
        ),
        {"cert": inline, "key": inline, "client_ca": inline},
    )

    cert = _string(section, "cert_file", where)
    key = _string(section, "key_file", where)
    client_auth = _string(section, "client_auth_type", where)
    client_ca = _string(section, "client_ca_file", where)
    # exporter-toolkit's rule: TLS is on as soon as any of these is set.
    if not (cert or key or client_auth or client_ca):
        for other in section:
            if section[other] not in (None, "", [], False):
                raise WebConfigError(f"{where}.{other} is set but TLS is not (no cert_file)")
        return None
    if not cert:
        raise WebConfigError(f"{where}: missing cert_file")
    if not key:
        raise WebConfigError(f"{where}: missing key_file (cert_file {cert!r} needs its key)")

    client_auth = client_auth or "NoClientCert"
    if client_auth in _CLIENT_AUTH_UNSUPPORTED:
        raise WebConfigError(
            f"{where}.client_auth_type {client_auth!r} is not supported: Python's ssl cannot ask "
            "for a client certificate without verifying it; use VerifyClientCertIfGiven or "
            "RequireAndVerifyClientCert with client_ca_file"
        )
    if client_auth not in _CLIENT_AUTH:
        raise WebConfigError(
            f"{where}.client_auth_type: invalid value {client_auth!r} "
            f"(one of {', '.join(list(_CLIENT_AUTH) + list(_CLIENT_AUTH_UNSUPPORTED))})"
        )
    if client_ca and client_auth == "NoClientCert":
        raise WebConfigError(f"{where}: client_ca_file is set but client_auth_type is NoClientCert")
    if client_auth != "NoClientCert" and not client_ca:
        # Go would fall back to the system roots; trusting every public CA to vouch for a
        # scraper is almost never meant, so the CA must be named.
        raise WebConfigError(f"{where}: client_auth_type {client_auth} needs client_ca_file")

    min_version = _string(section, "min_version", where) or "TLS12"
    max_version = _string(section, "max_version", where)
    for name, version in (("min_version", min_version), ("max_version", max_version)):
        if version is not None and version not in _TLS_VERSIONS:
            raise WebConfigError(f"{where}.{name}: unknown TLS version {version!r} (one of {', '.join(_TLS_VERSIONS)})")
    if max_version and _TLS_VERSIONS[max_version] < _TLS_VERSIONS[min_version]:
        raise WebConfigError(f"{where}: max_version {max_version} is below min_version {min_version}")

    ciphers = _strings(section, "cipher_suites", where)
    for cipher in ciphers:
        if cipher not in _CIPHERS_TLS12 and cipher not in _CIPHERS_TLS13:
            raise WebConfigError(
                f"{where}.cipher_suites: unknown or unsupported cipher {cipher!r} "
                "(use Go names from tls.CipherSuites(); insecure suites are refused)"
            )
    curves = _strings(section, "curve_preferences", where)
    for curve in curves:
        if curve not in _CURVES:
            raise WebConfigError(f"{where}.curve_preferences: unknown curve {curve!r} (one of {', '.join(_CURVES)})")
    if len(curves) > 1:
        raise WebConfigError(
            f"{where}.curve_preferences: Python's ssl can restrict key exchange to "
            f"one curve only, got {len(curves)}; list one or leave it unset"
        )

    sans = _strings(section, "client_allowed_sans", where)
    if sans and client_auth != "RequireAndVerifyClientCert":
        raise WebConfigError(f"{where}: client_allowed_sans needs client_auth_type RequireAndVerifyClientCert")

    return TLSServerConfig(
        cert_file=_readable_file(cert, base_dir, f"{where}.cert_file"),
        key_file=_readable_file(key, base_dir, f"{where}.key_file"),
        client_auth_type=client_auth,
        client_ca_file=_readable_file(client_ca, base_dir, f"{where}.client_ca_file") if client_ca else None,
        min_version=min_version,
        max_version=max_version,
        cipher_suites=ciphers,
        curve_preferences=curves,
        prefer_server_cipher_suites=_bool(section, "prefer_server_cipher_suites", where, True),
        client_allowed_sans=sans,
    )


def _parse_http(raw: Any) -> HTTPServerConfig:
    where = "http_server_config"
    if raw is None:
        return HTTPServerConfig()
    section = _mapping(raw, where)
    _check_keys(section, where, ("http2", "headers"))
    http2 = _bool(section, "http2", where, True)
    headers_raw = section.get("headers")
    headers: List[Tuple[str, str]] = []
    if headers_raw is not None:
        for name, value in _mapping(headers_raw, f"{where}.headers").items():
            if name not in _EXTRA_HEADERS:
                raise WebConfigError(
                    f"{where}.headers: HTTP header {name!r} can not be configured "
                    f"(allowed: {', '.join(_EXTRA_HEADERS)})"
                )
            if not isinstance(value, str):
                raise WebConfigError(f"{where}.headers.{name} must be a string, got {_kind(value)}")
            allowed = _EXTRA_HEADERS[name]
            if allowed is not None and value not in allowed:
                raise WebConfigError(f"{where}.headers.{name}: invalid value {value!r} (one of {', '.join(allowed)})")
            if any(ord(c) < 0x20 or ord(c) > 0x7E for c in value):
                raise WebConfigError(f"{where}.headers.{name}: value must be printable ASCII")
            headers.append((name, value))
    return HTTPServerConfig(http2=http2, headers=tuple(headers))


def _parse_users(raw: Any) -> Mapping[str, bytes]:
    where = "basic_auth_users"
    if raw is None:
        return MappingProxyType({})
    section = _mapping(raw, where)
    users: Dict[str, bytes] = {}
    for user, hashed in section.items():
        if not isinstance(user, str):
            raise WebConfigError(f"{where}: user name {user!r} must be a string (quote it)")
        if ":" in user:
            raise WebConfigError(f"{where}: user name {user!r} contains ':' and could never log in")
        if not isinstance(hashed, str) or not _BCRYPT_RE.match(hashed):
            raise WebConfigError(
                f"{where}.{user}: not a bcrypt hash (expected $2a$, $2b$ or $2y$, "
                "cost, salt and hash; plain passwords are not accepted)"
            )
        cost = int(_BCRYPT_RE.match(hashed).group(1))  # type: ignore[union-attr]
        if not 4 <= cost <= MAX_BCRYPT_COST:
            # bcrypt allows up to 31, but each step doubles the time: at 31 one check takes
            # days, and the start (which checks every hash once) would hang without a word.
            raise WebConfigError(f"{where}.{user}: bcrypt cost {cost} is outside 4..{MAX_BCRYPT_COST} "
                                 "(each step doubles the time of every login; 10 to 12 is usual)")
        encoded = hashed.encode("ascii")
        try:
            # One bcrypt per user at start: catches a hash the library would refuse later
            # (non-canonical salt), which the pattern above cannot see.
            bcrypt.checkpw(b"", encoded)
        except ValueError as err:
            raise WebConfigError(f"{where}.{user}: bcrypt rejects this hash: {err}") from None
        users[user] = encoded
    return MappingProxyType(users)


# --- TLS ------------------------------------------------------------------------------------


def ssl_context(cfg: Optional[WebConfig]) -> Optional[ssl.SSLContext]:
    """A server-side SSLContext for ``cfg``, or None when it asks for plain HTTP."""
    if cfg is None or cfg.tls is None:
        return None
    tls = cfg.tls
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        ctx.minimum_version = _TLS_VERSIONS[tls.min_version]
        if tls.max_version:
            ctx.maximum_version = _TLS_VERSIONS[tls.max_version]
    except (ValueError, ssl.SSLError) as err:
        raise WebConfigError(f"tls_server_config: this OpenSSL refuses the TLS version range: {err}") from None
    try:
        ctx.load_cert_chain(tls.cert_file, tls.key_file)
    except (OSError, ssl.SSLError) as err:
        raise WebConfigError(
            f"tls_server_config: cannot load cert_file {tls.cert_file} with key_file {tls.key_file}: {err}"
        ) from None
    ctx.verify_mode = _CLIENT_AUTH[tls.client_auth_type]
    if tls.client_ca_file:
        try:
            ctx.load_verify_locations(cafile=tls.client_ca_file)
        except (OSError, ssl.SSLError) as err:
            raise WebConfigError(
                f"tls_server_config.client_ca_file {tls.client_ca_file}: no usable PEM certificates: {err}"
            ) from None
    openssl_ciphers = [_CIPHERS_TLS12[c] for c in tls.cipher_suites if c in _CIPHERS_TLS12]
    if not openssl_ciphers:
        # Not OpenSSL's defaults, which on TLS 1.2 still accept CBC suites (AES-SHA with
        # HMAC: padding-oracle prone): forward-secret AEAD suites only, unless the web config
        # names suites itself. TLS 1.3 is unaffected (its suites are all AEAD).
        openssl_ciphers = list(DEFAULT_TLS12_CIPHERS)
    if openssl_ciphers:
        try:
            ctx.set_ciphers(":".join(openssl_ciphers))
        except ssl.SSLError as err:
            raise WebConfigError(
                f"tls_server_config.cipher_suites: this OpenSSL offers none of {', '.join(openssl_ciphers)}: {err}"
            ) from None
    for curve in tls.curve_preferences:
        try:
            ctx.set_ecdh_curve(_CURVES[curve])
        except ssl.SSLError as err:
            # Python before 3.10 only knows named EC curves here, not X25519.
            raise WebConfigError(
                f"tls_server_config.curve_preferences: this Python's ssl cannot select {curve}: {err}"
            ) from None
    if tls.prefer_server_cipher_suites:
        ctx.options |= ssl.OP_CIPHER_SERVER_PREFERENCE
    else:
        ctx.options &= ~ssl.OP_CIPHER_SERVER_PREFERENCE
    if tls.client_allowed_sans:
        ctx.sslobject_class = _san_checking_sslobject(tls.client_allowed_sans)  # type: ignore[misc]
    return ctx


def _san_checking_sslobject(allowed: Tuple[str, ...]) -> type:
    """An SSLObject class that ends the handshake unless the client cert has an allowed SAN.

    asyncio (which the agent's server uses) wraps each connection with ``context.wrap_bio``, which builds
    ``context.sslobject_class``; raising from ``do_handshake`` makes asyncio drop the
    connection, the same outcome as Go's ``VerifyPeerCertificate`` returning an error.
    """
    allowed_set = frozenset(allowed)
    allowed_ips = set()
    for entry in allowed:
        try:
            allowed_ips.add(ipaddress.ip_address(entry))
        except ValueError:
            pass

    class SANCheckingSSLObject(ssl.SSLObject):
        def do_handshake(self) -> None:
            super().do_handshake()
            cert = self.getpeercert() or {}
            for kind, value in cert.get("subjectAltName", ()):
                if kind in ("DNS", "email", "URI") and value in allowed_set:
                    return
                if kind == "IP Address":
                    try:
                        if ipaddress.ip_address(value.strip()) in allowed_ips:
                            return
                    except ValueError:
                        continue
            log.warning("TLS client rejected: certificate has none of client_allowed_sans")
            raise ssl.SSLCertVerificationError("client certificate has none of client_allowed_sans")

    return SANCheckingSSLObject


# --- HTTP: headers and basic auth -----------------------------------------------------------


def secure_app(app: ASGIApp, cfg: Optional[WebConfig], exempt_paths: Iterable[str] = ("/healthz",),
               stats: Optional[HTTPStats] = None) -> ASGIApp:
    """Wrap ``app`` as ``cfg`` asks: basic auth when users are configured, then the extra
    headers outermost so they are on 401 responses too (as exporter-toolkit sets them first).
    Auth refusals are counted in ``stats`` (the server's, so /metrics shows them)."""
    if cfg is None:
        return app
    wrapped = app
    if cfg.basic_auth_users:
        wrapped = BasicAuthMiddleware(wrapped, cfg.basic_auth_users, exempt_paths=exempt_paths, stats=stats)
    return apply_headers(wrapped, dict(cfg.http.headers))


def apply_headers(app: ASGIApp, headers: Mapping[str, str]) -> ASGIApp:
    """Add ``headers`` to every HTTP response that does not already set them.

    The app may override a configured header, as a Go handler can after exporter-toolkit's
    ``Header().Set``. Returns ``app`` unchanged when there is nothing to add.
    """
    if not headers:
        return app
    encoded = [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in headers.items()]

    async def with_headers(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                present = {name.lower() for name, _ in message.get("headers", [])}
                extra = [(n, v) for n, v in encoded if n not in present]
                if extra:
                    message = dict(message)
                    message["headers"] = list(message.get("headers", [])) + extra
            await send(message)

        await app(scope, receive, send_with_headers)

    return with_headers


class _SuccessCache:
    """A small LRU of credential digests that bcrypt has already accepted."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._entries: OrderedDict[bytes, None] = OrderedDict()
        self._lock = threading.Lock()

    def __contains__(self, key: bytes) -> bool:
        with self._lock:
            if key in self._entries:
                self._entries.move_to_end(key)
                return True
            return False

    def add(self, key: bytes) -> None:
        with self._lock:
            self._entries[key] = None
            self._entries.move_to_end(key)
            while len(self._entries) > self._size:
                self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)


class _Busy(Exception):
    """Too many unverified logins waiting for bcrypt: answer 503 now."""


class _Check:
    """One bcrypt check waiting for the worker; every request with the same credentials waits
    for its ``result``."""

    __slots__ = ("client", "key", "password", "hashed", "arrival", "result")

    def __init__(self, client: str, key: bytes, password: bytes, hashed: bytes, arrival: int,
                 result: asyncio.Future) -> None:
        self.client, self.key, self.password, self.hashed = client, key, password, hashed
        self.arrival = arrival
        self.result = result


class BcryptGate:
    """Runs bcrypt checks one at a time in a thread of its own, choosing fairly among clients.

    Each client address has a record over the last ``window`` seconds: how many wrong
    passwords it sent, and how many logins it asked to have checked. A check waits in a short
    queue (``queue`` entries, at most ``per_client`` from one address); the worker takes the
    check whose address has the best record (fewest wrong passwords, then fewest attempts,
    then the oldest check). When the queue is full, a newcomer with a better record than the
    worst waiting check takes its place (that one gets 503), else the newcomer gets 503.

    So a flood of guesses from some addresses costs one core at most and delays a login from
    any other address (a scraper whose credentials are not yet cached, after a restart) by at
    most the one check already running. Addresses cannot be told apart when the flood comes
    from the scraper's own address, or from so many fresh addresses that each makes as few
    attempts as the scraper; the queue then serves in order of arrival. Identical credentials
    checked concurrently share one check. bcrypt releases the GIL, so the event loop keeps
    serving meanwhile.
    """

    def __init__(self, queue: int = 16, per_client: int = 2, window: float = 600.0,
                 checkpw: Optional[Callable[[bytes, bytes], bool]] = None) -> None:
        self._queue = queue
        self._per_client = per_client
        self._window = window
        self._checkpw = checkpw or _checkpw
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="bcrypt")
        self._waiting: List[_Check] = []
        self._running = False
        self._same: Dict[bytes, asyncio.Future] = {}
        # client address -> [wrong passwords, attempts, time of the last one]; oldest first
        self._records: OrderedDict[str, List[float]] = OrderedDict()
        self._arrivals = itertools.count()

    def record(self, client: str) -> Tuple[int, int]:
        """(wrong passwords, attempts) from ``client`` within the window."""
        wrong, attempts, last = self._records.get(client, (0, 0, 0.0))
        if time.monotonic() - last >= self._window:
            return (0, 0)
        return (int(wrong), int(attempts))

    def _note(self, client: str, wrong: int, attempts: int) -> None:
        old_wrong, old_attempts = self.record(client)
        self._records[client] = [old_wrong + wrong, old_attempts + attempts, time.monotonic()]
        self._records.move_to_end(client)
        while len(self._records) > 4096:
            self._records.popitem(last=False)

    def _rank(self, check: _Check) -> Tuple[int, int, int]:
        return self.record(check.client) + (check.arrival,)

    async def check(self, client: str, key: bytes, password: bytes, hashed: bytes) -> bool:
        """True when ``password`` matches ``hashed``; raises :class:`_Busy` when no place."""
        shared = self._same.get(key)
        if shared is None:
            self._note(client, 0, 1)
            shared = self._enqueue(client, key, password, hashed)
        return await asyncio.shield(shared)

    def _enqueue(self, client: str, key: bytes, password: bytes, hashed: bytes) -> asyncio.Future:
        if sum(1 for c in self._waiting if c.client == client) >= self._per_client:
            raise _Busy()
        check = _Check(client, key, password, hashed, next(self._arrivals),
                       asyncio.get_running_loop().create_future())
        if len(self._waiting) >= self._queue:
            worst = max(self._waiting, key=self._rank)
            if self._rank(worst) < self._rank(check):
                raise _Busy()
            self._waiting.remove(worst)  # a client with a worse record gives up its place
            self._settle(worst, _Busy())
        self._waiting.append(check)
        self._same[key] = check.result
        self._next()
        return check.result

    def _next(self) -> None:
        if self._running or not self._waiting:
            return
        check = min(self._waiting, key=self._rank)
        self._waiting.remove(check)
        self._running = True
        done = asyncio.get_running_loop().run_in_executor(self._executor, self._checkpw, check.password,
                                                          check.hashed)
        done.add_done_callback(lambda f: self._finished(check, f))

    def _finished(self, check: _Check, done: asyncio.Future) -> None:
        self._running = False
        matched = not done.cancelled() and done.exception() is None and bool(done.result())
        if matched:
            self._records.pop(check.client, None)  # a client that knows a password: a clean slate
        else:
            self._note(check.client, 1, 0)
        self._settle(check, matched)
        self._next()

    def _settle(self, check: _Check, outcome: Any) -> None:
        if self._same.get(check.key) is check.result:
            del self._same[check.key]
        if not check.result.done():
            if isinstance(outcome, BaseException):
                check.result.set_exception(outcome)
            else:
                check.result.set_result(outcome)


def _checkpw(password: bytes, hashed: bytes) -> bool:
    try:
        return bcrypt.checkpw(password, hashed)
    except ValueError:
        # bcrypt >= 5 refuses passwords over 72 bytes instead of truncating them.
        return False


class BasicAuthMiddleware:
    """Pure ASGI middleware requiring HTTP basic auth checked against bcrypt hashes.

    - Missing, malformed (not ``Basic``, bad base64, no colon, not UTF-8) or wrong credentials
      get ``401`` with ``WWW-Authenticate: Basic realm="<realm>"``.
    - The user name is compared with :func:`hmac.compare_digest` against every configured name,
      and bcrypt runs for an unknown user too (against a dummy hash of the same cost), so
      response time does not tell which users exist.
    - Accepted credentials are remembered in a bounded LRU keyed by SHA-256 of user, password
      and stored hash, so a scrape every 15 s costs one bcrypt per process, not one per scrape,
      and never waits for bcrypt again. A wrong guess is remembered the same way, so repeating
      it costs no second bcrypt; each new guess still costs a full one.
    - bcrypt runs through a :class:`BcryptGate`: one check at a time in a thread of its own,
      taken fairly among client addresses, at most 16 waiting; beyond that an unverified login
      gets ``503`` with ``Retry-After`` at once.
    - ``exempt_paths`` are matched exactly. The default leaves ``/healthz`` open so liveness
      checks (systemd, load balancers, orchestrators) need no secret; it must say only "up".
    - Every refusal is counted in ``stats`` (``ssd_http_auth_refused_total{reason}``) and
      wrong credentials are logged at most once a minute.
    - Lifespan events pass straight through; WebSocket connections without credentials are
      closed before they are accepted.
    """

    def __init__(
        self,
        app: ASGIApp,
        users: Mapping[str, bytes],
        realm: str = "ssdfleet",
        exempt_paths: Iterable[str] = ("/healthz",),
        cache_size: int = 64,
        gate: Optional[BcryptGate] = None,
        stats: Optional[HTTPStats] = None,
    ) -> None:
        if not realm or any(c in realm for c in '"\\') or not realm.isprintable():
            raise ValueError(f"realm {realm!r} must be printable and contain no quotes or backslashes")
        self.app = app
        self._users: Tuple[Tuple[bytes, bytes], ...] = tuple(
            (name.encode("utf-8"), bytes(hashed)) for name, hashed in users.items()
        )
        self._exempt = frozenset(exempt_paths)
        self._challenge = f'Basic realm="{realm}"'.encode("latin-1")
        self._cache = _SuccessCache(cache_size)
        # Wrong guesses already checked (same key: user, password, hash).
        self._refused = _SuccessCache(1024)
        self.gate = gate or BcryptGate()
        self.stats = stats or HTTPStats()
        costs = [int(h[4:6]) for _, h in self._users if _BCRYPT_RE.match(h.decode("ascii", "replace"))]
        # The decoy must cost what a real check costs, or an unknown user answers faster.
        self._dummy_hash = bcrypt.hashpw(secrets.token_bytes(16), bcrypt.gensalt(max(costs, default=10)))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or scope.get("path") in self._exempt:
            await self.app(scope, receive, send)
            return
        try:
            verdict = await self._authenticated(scope)
        except _Busy:
            # More unverified logins queued than bcrypt can check in time: answer at once
            # rather than hold the connection (credentials already accepted never get here).
            self.stats.auth_refused["busy"] += 1
            self.stats.note("auth_busy", "answered 503 to a login: too many unverified logins waiting for bcrypt")
            if scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1013})
                return
            await send({"type": "http.response.start", "status": 503,
                        "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                                    (b"retry-after", b"1"), (b"content-length", b"5")]})
            await send({"type": "http.response.body", "body": b"Busy\n"})
            return
        if verdict == "ok":
            await self.app(scope, receive, send)
            return
        self.stats.auth_refused[verdict] += 1
        if verdict == "wrong_credentials":
            client = (scope.get("client") or ("?",))[0]
            self.stats.note("auth_wrong", "refused wrong credentials from %s (%d wrong so far)",
                            client, self.stats.auth_refused["wrong_credentials"])
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        await send(
            {
                "type": "http.response.start",
                "status": 401,
                "headers": [
                    (b"content-type", b"text/plain; charset=utf-8"),
                    (b"www-authenticate", self._challenge),
                    (b"content-length", b"13"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": b"Unauthorized\n"})

    async def _authenticated(self, scope: Scope) -> str:
        """"ok", "missing" or "wrong_credentials" (raises :class:`_Busy`)."""
        credentials = parse_basic_authorization(scope.get("headers") or [])
        if credentials is None:
            return "missing"
        user, password = credentials
        user_bytes = user.encode("utf-8")
        password_bytes = password.encode("utf-8")

        stored: Optional[bytes] = None
        for name, hashed in self._users:  # no early exit: every name is compared
            if hmac.compare_digest(name, user_bytes):
                stored = hashed
        digest = hashlib.sha256()
        for part in (user_bytes, password_bytes, stored or b""):
            digest.update(len(part).to_bytes(8, "big"))
            digest.update(part)
        key = digest.digest()
        if stored is not None and key in self._cache:
            return "ok"
        if key in self._refused:
            return "wrong_credentials"  # the same wrong guess again: it already cost one bcrypt
        client = str((scope.get("client") or ("unknown",))[0])
        candidate = stored if stored is not None else self._dummy_hash
        matched = await self.gate.check(client, key, password_bytes, candidate)
        if matched and stored is not None:
            self._cache.add(key)
            return "ok"
        self._refused.add(key)
        return "wrong_credentials"


def parse_basic_authorization(headers: Iterable[Tuple[bytes, bytes]]) -> Optional[Tuple[str, str]]:
    """(user, password) from ASGI headers carrying one ``Authorization: Basic`` value, else None."""
    values = [value for name, value in headers if name.lower() == b"authorization"]
    if len(values) != 1:
        return None
    scheme, _, token = values[0].strip().partition(b" ")
    if scheme.lower() != b"basic":
        return None
    try:
        decoded = base64.b64decode(token.strip(), validate=True)
    except (binascii.Error, ValueError):
        return None
    user, colon, password = decoded.partition(b":")
    if not colon:
        return None
    try:
        return user.decode("utf-8"), password.decode("utf-8")
    except UnicodeDecodeError:
        return None
