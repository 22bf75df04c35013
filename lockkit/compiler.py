"""compile: constraints + platform -> locks/pylock.<platform>.toml (and --check)."""

from __future__ import annotations

import hashlib
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from lockkit import __version__
from lockkit.common import write_atomic
from lockkit.config import Project, normalized_inputs, resolver_inputs
from lockkit.errors import ConfigError, IndexError_, LockkitError, ResolutionError
from lockkit.freshness import (
    LOCK_FORMAT,
    Outcome,
    check_platforms,
    files_digest,
    fingerprint,
    inputs_record,
    lock_python,
    packages_digest_of_read,
    seal,
)
from lockkit.lockfile import build_lock, check_guards, dumps
from lockkit.platforms import Platform
from lockkit.redact import redact
from lockkit.resolve import Indexes, ResolveOptions, resolve, uv_bin, uv_version
from lockkit.routing import served_versions

__all__ = ["Outcome", "compile_platforms", "check_platforms"]


class _Http:
    """The compile's HTTP side: PyTorch index pages for the routing index, and hashes of
    files whose index page gave none.

    The client (and the httpx import, ~0.2 s) is created on first use only: a platform
    without a PyTorch index never needs it, and compile's overhead over uv is measured.
    Requests go with the project's credentials by host (``lockkit.auth``): a page or file
    URL without user info of its own may still be on a host that needs them.
    """

    def __init__(self, project: Project | None = None, attempts: int = 3,
                 backoff: float = 0.5) -> None:
        from lockkit.auth import Credentials

        self._client: Any = None
        self._lock = threading.Lock()
        self.attempts, self.backoff = attempts, backoff
        self.credentials = Credentials.for_project(project) if project else Credentials()

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
                resp = self._get().get(url, headers={"Accept": "text/html"},
                                       auth=self.credentials.auth(url))
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
            with self._get().stream("GET", url, auth=self.credentials.auth(url)) as resp:
                resp.raise_for_status()
                for chunk in resp.iter_bytes():
                    digest.update(chunk)
        except httpx.HTTPError as exc:
            raise IndexError_(f"cannot hash {redact(url)}: {redact(str(exc))}") from exc
        return digest.hexdigest()

    def close(self) -> None:
        if self._client is not None:
            self._client.close()


# Written where the packages digest goes, then replaced: the digest is taken of the table
# as the written text holds it, so the lock is written (tomli_w) and read (tomllib) once.
_PLACEHOLDER = "sha256:" + "0" * 64


def _with_digest(text: str) -> str:
    """*text* (a lock written with :data:`_PLACEHOLDER` as its packages digest) with the
    digest of its packages table as read back from *text* itself."""
    from lockkit._compat import tomllib

    assert text.count(f'"{_PLACEHOLDER}"') == 1, "the placeholder is the digest's value only"
    digest = packages_digest_of_read(tomllib.loads(text)["packages"])
    return text.replace(f'"{_PLACEHOLDER}"', f'"{digest}"')


def compile_one(project: Project, platform: Platform, uv: str, uv_ver: str,
                http: _Http, upgrade: bool = False,
                upgrade_packages: tuple[str, ...] = (),
                requirements: dict[str, list[str]] | None = None) -> Outcome:
    python = lock_python(project, platform)
    if requirements is None:
        requirements = normalized_inputs(project)
    record = inputs_record(project, platform, python, requirements)
    existing = _existing_lock(project.lock_path(platform.name))
    indexes = Indexes.for_platform(platform, project.mirrors, project.index_url)
    options = ResolveOptions(preferences=project.lock_path(platform.name), upgrade=upgrade,
                             upgrade_packages=upgrade_packages,
                             exclude_newer=project.exclude_newer)
    pages: dict[str, tuple[int, str]] = {}

    def fetch_page(url: str) -> tuple[int, str]:
        pages[url] = http.page(url)  # kept to name the torch versions the index serves
        return pages[url]

    with tempfile.TemporaryDirectory(prefix="lockkit-inputs-") as tmp:
        reqs, input_options = resolver_inputs(project, Path(tmp))
        try:
            resolution = resolve(reqs, platform, python, indexes, binary=uv,
                                 fetch_page=fetch_page, options=options,
                                 input_options=input_options)
        except ResolutionError:
            _no_such_torch(platform, requirements, pages)
            raise
    doc, routing = resolution.doc, resolution.routing
    check_guards(doc, platform, indexes, project.allow_sdist, routing)
    meta = {
        "platform": platform.name, "platform-fingerprint": platform.fingerprint,
        "backend": {"kind": platform.backend.kind, "version": platform.backend.version or ""},
        "torch-index": platform.torch_index or "", "python": python,
        "lock-format": LOCK_FORMAT, "inputs-fingerprint": fingerprint(record),
        "lockkit-version": __version__, "uv-version": uv_ver,
    }
    lock = build_lock(doc, platform, indexes, meta, http.hash, routing)
    lock["tool"]["lockkit"]["packages-digest"] = _PLACEHOLDER
    lock["tool"]["lockkit"]["inputs"] = record
    digest = files_digest(project, platform, python, record["requirements"])
    if digest:
        lock["tool"]["lockkit"]["input-files-digest"] = digest
    text = seal(_with_digest(dumps(lock)))
    path = project.lock_path(platform.name)
    if existing == text:
        return Outcome(platform=platform.name, path=path, status="unchanged",
                       packages=len(lock["packages"]))
    write_atomic(path, text)
    return Outcome(platform=platform.name, path=path, status="written",
                   packages=len(lock["packages"]))


def _no_such_torch(platform: Platform, requirements: dict[str, list[str]],
                   pages: dict[str, tuple[int, str]]) -> None:
    """Raise the plain answer when the platform's index serves no torch the inputs accept:
    the platform, the index and its newest torch versions (uv's derivation tree says the
    same in many lines, and never which index it was)."""
    page = next((v for k, v in pages.items() if k.rstrip("/").endswith("/torch")), None)
    if not platform.torch_index or page is None or page[0] != 200:
        return
    served = served_versions(page[1], "torch")
    asked = [r for reqs in requirements.values() for r in map(_requirement, reqs)
             if r is not None and r.name == "torch" and r.specifier]
    if not served or not asked:
        return
    if any(all(r.specifier.contains(v, prereleases=True) for r in asked) for v in served):
        return
    shown = ", ".join(str(v) for v in served[:5]) + (", ..." if len(served) > 5 else "")
    wanted = " and ".join(f"torch{r.specifier}" for r in asked)
    raise ResolutionError(
        f"{platform.name}: no resolution: no torch matching {wanted} on the PyTorch index "
        f"{redact(platform.torch_index)}; it serves torch {shown}",
        hint="change the torch requirement, or choose a platform whose torch releases "
             "include it ('lockkit platforms')")


def _requirement(text: str) -> Requirement | None:
    try:
        req = Requirement(text)
    except InvalidRequirement:
        return None
    req.name = canonicalize_name(req.name)
    return req


def _existing_lock(path: Path) -> str | None:
    """The current lock's text (uv reads it for preferred versions), checked before uv runs."""
    if path.is_dir():
        raise ConfigError(f"{path}: is a folder, where the lock is to be written",
                          hint="move the folder away")
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})",
                          hint="remove the file to compile the lock afresh") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None


def compile_platforms(project: Project, platforms: list[Platform],
                      on_done: Callable[[Outcome], None] | None = None,
                      jobs: int = 4, upgrade: bool = False,
                      upgrade_packages: tuple[str, ...] = ()) -> list[Outcome]:
    """Resolve several platforms concurrently; one failure does not stop the others."""
    requirements = normalized_inputs(project)  # bad input fails before any work starts
    for platform in platforms:
        _existing_lock(project.lock_path(platform.name))
    uv = uv_bin()
    uv_ver = uv_version(uv)

    def run(platform: Platform) -> Outcome:
        try:
            outcome = compile_one(project, platform, uv, uv_ver, http, upgrade, upgrade_packages,
                                  requirements)
        except LockkitError as exc:
            outcome = Outcome(platform=platform.name, path=project.lock_path(platform.name),
                              status="failed", error=exc)
        if on_done:
            on_done(outcome)
        return outcome

    http = _Http(project)
    try:
        with ThreadPoolExecutor(max_workers=max(1, min(jobs, len(platforms)))) as pool:
            return list(pool.map(run, platforms))
    finally:
        http.close()
