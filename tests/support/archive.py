"""Shared by several stages' tests (from test_archive.py)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

FILES = {
    "demo-1.0-py3-none-any.whl": b"PK\x03\x04 demo wheel bytes",
    "tiny-0.1-py3-none-any.whl": b"PK\x03\x04 tiny wheel bytes, a little longer",
    "pylock.toml": b'lock-version = "1.0"\n',
    "requirements.txt": b"demo==1.0 --hash=sha256:00\n",
    "simple/index.html": b'<a href="demo/">demo</a>\n',
    "simple/demo/index.html": b'<a href="../../demo-1.0-py3-none-any.whl">demo</a>\n',
}


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def manifest_bytes(files: dict[str, bytes]) -> bytes:
    entries = [{"path": p, "size": len(d), "sha256": sha(d),
                "kind": "wheel" if p.endswith(".whl") else "meta"} for p, d in files.items()]
    manifest = {"schema_version": 1, "platform": "linux-cpu", "lock_sha256": "0" * 64,
                "files": sorted(entries, key=lambda e: e["path"])}
    return (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode()


def make_folder(path: Path, files: dict[str, bytes] = FILES) -> Path:
    for rel, data in files.items():
        (path / rel).parent.mkdir(parents=True, exist_ok=True)
        (path / rel).write_bytes(data)
    (path / "manifest.json").write_bytes(manifest_bytes(files))
    return path
