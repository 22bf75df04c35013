"""A TLS certificate for 127.0.0.1, for the tests' loopback servers that speak https."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

__all__ = ["loopback_certificate"]


def loopback_certificate(folder: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and its key, in *folder*, made by the openssl
    CLI (the test is skipped, saying why, where there is none)."""
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command to make a certificate for 127.0.0.1")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    return cert, key
