"""Shared by several stages' tests (from test_wheelhouse.py)."""

from __future__ import annotations

import re
from pathlib import Path

from lockkit._internal.compat import tomllib
from lockkit.cache.store import Cache
from lockkit.cli import main
from lockkit.config.project import load_project
from lockkit.download.fetch import http_client
from lockkit.platforms.definitions import load_platforms
from lockkit.wheelhouse import build as wheelhouse
from tests.support.project import assert_conforms

TORCH = "torch-2.5.1+cpu-cp311-cp311-linux_x86_64.whl"


def compiled(project: Path, server=None, platform: str = "linux-cpu") -> Path:
    """Compile the lock; forget the requests uv made, so tests count the build's alone."""
    assert main(["compile", "--project", str(project), "--platform", platform]) == 0
    path = project / "locks" / f"pylock.{platform}.toml"
    assert_conforms(tomllib.loads(path.read_text()), platform, project)
    if server is not None:
        server.forget_requests()
    return project / "locks" / f"pylock.{platform}.toml"


def build_cli(project: Path, cache: Path, *extra: str) -> int:
    return main(["wheelhouse", "build", "--project", str(project), "--platform", "linux-cpu",
                 "--cache-dir", str(cache), *extra])


def wheel_requests(server) -> list[str]:
    return server.wheel_requests()


def build_lib(project: Path, cache: Path, out: Path, **kw) -> wheelhouse.BuildResult:
    """The library call, with fast retries (the CLI's backoff is for real networks)."""
    proj = load_project(project)
    platform = load_platforms(proj.root)["linux-cpu"]
    with http_client(timeout=kw.pop("timeout", 10.0), attempts=kw.pop("attempts", 4),
                     backoff=0.01) as client:
        return wheelhouse.build(proj, platform, out, client=client, cache=Cache(cache), **kw)


def served(indexes) -> bytes:
    """The torch wheel's bytes as the PyTorch index replica stores them."""
    return (indexes.pt.base / "bucket" / "whl" / "cpu" / TORCH).read_bytes()


def leftovers(parent: Path, name: str) -> list[Path]:
    return [p for p in parent.iterdir() if p.name.startswith(f".{name}.")]


def with_sdist(project: Path, indexes, name: str, tag: str) -> None:
    indexes.default.add_sdist(name, "1.0", tag=tag)
    (project / "requirements.in").write_text(f"torch==2.5.1\n{name}\n")
    text = (project / "lockkit.toml").read_text()
    (project / "lockkit.toml").write_text(f'allow-sdist = ["{name}"]\n' + text)


def partials(cache: Path) -> list[Path]:
    """The partial downloads left in *cache* under way (none, once a fetch has ended
    either way): not those an interrupted download kept for the next build (:func:`kept`)."""
    found = list((cache / "partial").glob("*")) if (cache / "partial").is_dir() else []
    return [p for p in found if p not in kept(cache)]


def kept(cache: Path) -> list[Path]:
    """The partial downloads kept for the next build: ``<maker>-<sha256>.part``."""
    found = list((cache / "partial").glob("*")) if (cache / "partial").is_dir() else []
    return [p for p in found if re.fullmatch(r"[0-9a-z]+@[0-9a-z]+-[0-9a-f]{64}\.part", p.name)]
