"""compile: constraints + platform -> locks/pylock.<platform>.toml (and --check)."""

from __future__ import annotations

import hashlib
import json
import tempfile
import threading
import time
from lockkit._compat import tomllib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from lockkit import __version__
from lockkit.config import (Project, is_pyproject, normalized_inputs, read_requirements,
                            resolver_inputs)
from lockkit.errors import IndexError_, LockkitError, PlatformError
from lockkit.lockfile import build_lock, check_guards, dumps, write_atomic
from lockkit.platforms import Platform
from lockkit.redact import redact, strip_credentials
from lockkit.resolve import Indexes, resolve, uv_bin, uv_version

__all__ = ["Outcome", "compile_platforms", "check_platforms", "select_platforms"]


@dataclass(frozen=True, kw_only=True)
class Outcome:
    platform: str
    path: Path
    status: str  # "written" | "unchanged" | "fresh" | "stale" | "missing" | "failed"
    packages: int = 0
    error: LockkitError | None = None


def select_platforms(known: dict[str, Platform], names: list[str], all_: bool,
                     project: Project) -> list[Platform]:
    wanted = list(known) if all_ else (names or list(project.platforms))
    unknown = [n for n in wanted if n not in known]
    if unknown:
        raise PlatformError(f"unknown platform {', '.join(unknown)}; known: {', '.join(known)}")
    return [known[n] for n in dict.fromkeys(wanted)]


def _python(project: Project, platform: Platform) -> str:
    return project.python or platform.python


def inputs_fingerprint(project: Project, platform: Platform) -> str:
    """Everything that decides the lock's content, hashed; mirrors are not in it."""
    files = []
    for name in (n for n in project.requirements if not is_pyproject(n)):
        for path, text in read_requirements(project.root / name):
            files.append([path.relative_to(project.root).as_posix()
                          if path.is_relative_to(project.root) else path.name, text])
    blob = json.dumps({
        "files": files,
        "inputs": normalized_inputs(project),  # a pyproject.toml's selected parts
        "platform": platform.fingerprint,
        "python": _python(project, platform),
        "index-url": strip_credentials(project.index_url or ""),
        "allow-sdist": sorted(project.allow_sdist),
        "lockkit": __version__,
    }, sort_keys=True).encode()
    return "sha256:" + hashlib.sha256(blob).hexdigest()


class _Http:
    """The compile's HTTP side: PyTorch index pages for the routing index, and hashes of
    files whose index page gave none.

    The client (and the httpx import, ~0.2 s) is created on first use only: a platform
    without a PyTorch index never needs it, and compile's overhead over uv is measured.
    """

    def __init__(self, attempts: int = 3, backoff: float = 0.5) -> None:
        self._client: Any = None
        self._lock = threading.Lock()
        self.attempts, self.backoff = attempts, backoff

    def _get(self) -> Any:
        import httpx

        with self._lock:
            if self._client is None:
                self._client = httpx.Client(timeout=60, follow_redirects=True,
                                            headers={"User-Agent": f"lockkit/{__version__}"})
        return self._client

    def page(self, url: str) -> tuple[int, str]:
        """GET a PEP 503 page (HTML: the PyTorch index has no JSON API); retry 5xx/resets."""
        import httpx

        for attempt in range(self.attempts):
            try:
                resp = self._get().get(url, headers={"Accept": "text/html"})
            except httpx.TransportError:
                if attempt + 1 == self.attempts:
                    raise
            else:
                if resp.status_code < 500 or attempt + 1 == self.attempts:
                    return resp.status_code, resp.text
            time.sleep(self.backoff * 2 ** attempt)
        raise AssertionError("unreachable")

    def hash(self, url: str) -> str:
        import httpx

        digest = hashlib.sha256()
        try:
            with self._get().stream("GET", url) as resp:
                resp.raise_for_status()
                for chunk in resp.iter_bytes():
                    digest.update(chunk)
        except httpx.HTTPError as exc:
            raise IndexError_(f"cannot hash {redact(url)}: {redact(str(exc))}") from exc
        return digest.hexdigest()

    def close(self) -> None:
        if self._client is not None:
            self._client.close()


def compile_one(project: Project, platform: Platform, uv: str, uv_ver: str,
                http: _Http) -> Outcome:
    fingerprint = inputs_fingerprint(project, platform)
    python = _python(project, platform)
    indexes = Indexes.for_platform(platform, project.mirrors, project.index_url)
    with tempfile.TemporaryDirectory(prefix="lockkit-inputs-") as tmp:
        reqs, options = resolver_inputs(project, Path(tmp))
        resolution = resolve(reqs, platform, python, indexes, binary=uv, fetch_page=http.page,
                             input_options=options)
    doc, routing = resolution.doc, resolution.routing
    check_guards(doc, platform, indexes, project.allow_sdist, routing)
    meta = {
        "platform": platform.name, "platform-fingerprint": platform.fingerprint,
        "backend": {"kind": platform.backend.kind, "version": platform.backend.version or ""},
        "torch-index": platform.torch_index or "", "python": python,
        "inputs-fingerprint": fingerprint, "lockkit-version": __version__, "uv-version": uv_ver,
    }
    lock = build_lock(doc, platform, indexes, meta, http.hash, routing)
    text = dumps(lock)
    path = project.lock_path(platform.name)
    if path.is_file() and path.read_text(encoding="utf-8") == text:
        return Outcome(platform=platform.name, path=path, status="unchanged",
                       packages=len(lock["packages"]))
    write_atomic(path, text)
    return Outcome(platform=platform.name, path=path, status="written",
                   packages=len(lock["packages"]))


def compile_platforms(project: Project, platforms: list[Platform],
                      on_done: Callable[[Outcome], None] | None = None,
                      jobs: int = 4) -> list[Outcome]:
    """Resolve several platforms concurrently; one failure does not stop the others."""
    normalized_inputs(project)  # bad input fails before any work starts
    uv = uv_bin()
    uv_ver = uv_version(uv)

    def run(platform: Platform) -> Outcome:
        try:
            outcome = compile_one(project, platform, uv, uv_ver, http)
        except LockkitError as exc:
            outcome = Outcome(platform=platform.name, path=project.lock_path(platform.name),
                              status="failed", error=exc)
        if on_done:
            on_done(outcome)
        return outcome

    http = _Http()
    try:
        with ThreadPoolExecutor(max_workers=max(1, min(jobs, len(platforms)))) as pool:
            return list(pool.map(run, platforms))
    finally:
        http.close()


def check_platforms(project: Project, platforms: list[Platform]) -> list[Outcome]:
    """Compare each lock's recorded inputs fingerprint with the current inputs."""
    outcomes = []
    for platform in platforms:
        path = project.lock_path(platform.name)
        if not path.is_file():
            outcomes.append(Outcome(platform=platform.name, path=path, status="missing"))
            continue
        try:
            recorded = tomllib.loads(path.read_text(encoding="utf-8"))["tool"]["lockkit"]
            fresh = recorded["inputs-fingerprint"] == inputs_fingerprint(project, platform)
        except (KeyError, TypeError, tomllib.TOMLDecodeError):
            fresh = False
        outcomes.append(Outcome(platform=platform.name, path=path,
                                status="fresh" if fresh else "stale"))
    return outcomes
