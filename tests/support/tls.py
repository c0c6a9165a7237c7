"""A test CA and certificates (the ``pki`` fixture, session-wide) and basic-auth headers.

Moved out of test_webconfig.py (issue 27: test modules import helpers from tests/support/ only).
"""

from __future__ import annotations

import base64
import datetime
import ipaddress
from pathlib import Path
from typing import List, Optional, Tuple

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


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
