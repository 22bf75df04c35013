"""Turn uv's resolution into lockkit's lock: guards, index records, stable bytes.

uv's resolution (*doc*: its ``pylock.toml`` as parsed, foreign data) becomes the lock's
packages (:data:`~lockkit.lock.model.PackageTable`) and its ``[tool.lockkit]``
(:class:`~lockkit.lock.meta.LockMeta`), which :meth:`lockkit.lock.model.Lock.built`
serialises and validates once; a lock is read back by
:meth:`lockkit.lock.model.Lock.read`.
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from packaging.utils import canonicalize_name
from packaging.version import Version

from lockkit._internal.redact import masked
from lockkit.errors import GuardError, IndexError_
from lockkit.lock.meta import LockMeta
from lockkit.lock.model import FileTable, Lock, PackageTable
from lockkit.platforms.definitions import Platform

if TYPE_CHECKING:  # compile's types; reading a lock (wheelhouse, verify) needs neither
    from pathlib import Path

    from lockkit.index.routing import RoutingIndex
    from lockkit.index.urls import Indexes

__all__ = ["build_lock", "check_guards", "cuda_majors"]

Hasher = Callable[[str], str]  # effective URL -> sha256 hex


def _files(package: Mapping[str, Any]) -> list[dict[str, Any]]:
    files = list(package.get("wheels", []))
    if "sdist" in package:
        files.append(package["sdist"])
    return files


def check_guards(doc: Mapping[str, Any], platform: Platform, indexes: Indexes,
                 allow_sdist: tuple[str, ...], routing: RoutingIndex | None = None) -> None:
    """Refuse a resolution that cannot work on *platform*; name every offender, at once.

    A torch-family file is accepted only when the PyTorch index's own page for that
    package listed it: the page identifies the file, not the host in its URL (the
    official index links its wheels on a second host, mirrors on a third). Every problem
    is collected first (issue 13: a stray file used to hide the backend problems found
    after it); a stray file makes it an index failure, otherwise a guard failure.
    """
    problems: list[str] = []
    strays: list[str] = []
    allowed = {canonicalize_name(n) for n in allow_sdist}
    family = set(platform.torch_packages)
    for pkg in doc.get("packages", []):
        name = canonicalize_name(pkg["name"])
        if not pkg.get("wheels") and name not in allowed:
            problems.append(f"{name} {pkg.get('version')} has no wheel for {platform.name} "
                            f"(only an sdist); add it to allow-sdist to accept that")
        if name in family and routing is not None:
            stray = [f.get("url", "") for f in _files(pkg)
                     if not routing.listed(name, f.get("url", ""))]
            if stray:
                strays.append(
                    f"{name} must come from the PyTorch index "
                    f"{masked(indexes.torch_official or '')}, whose page for {name} did not list "
                    f"{masked(stray[0])}; no fallback to the default index")
    problems += _backend_problems(doc, platform)
    if strays:
        raise IndexError_(f"{platform.name}: " + "; ".join(strays + problems))
    if problems:
        raise GuardError(f"{platform.name}: " + "; ".join(problems))


# The CUDA libraries a torch build depends on, and how each says its CUDA major: the
# suffix (nvidia-cublas-cu12, nvidia-cudnn-cu13) or, for CUDA 13's unsuffixed wheels, the
# version of cuda-toolkit / cuda-bindings (torch's PYTORCH_EXTRA_INSTALL_REQUIREMENTS:
# "cuda-toolkit[...]==13.0.3", "cuda-bindings>=13.0.3,<14", "nvidia-nccl-cu13==...").
_CU_SUFFIX = re.compile(r"^nvidia-.+-cu(\d+)$")
_CUDA_BY_VERSION = ("cuda-toolkit", "cuda-bindings")


def cuda_majors(versions: dict[str, str]) -> dict[str, str]:
    """``{package: CUDA major}`` for every CUDA library in a resolution."""
    found: dict[str, str] = {}
    for name, version in versions.items():
        if m := _CU_SUFFIX.match(name):
            found[name] = m[1]
        elif name in _CUDA_BY_VERSION and version:
            found[name] = str(Version(version).major)
    return found


def _gpu_packages(versions: dict[str, str]) -> list[str]:
    return sorted(n for n in versions if n.startswith("nvidia-") or "triton" in n
                  or n in _CUDA_BY_VERSION)


def _backend_problems(doc: Mapping[str, Any], platform: Platform) -> list[str]:
    """The torch build against the backend, in both directions. A build from the default
    index carries no ``+cu`` label: its CUDA major is read from its CUDA dependencies."""
    versions: dict[str, str] = {str(canonicalize_name(p["name"])): p.get("version", "")
                                for p in doc.get("packages", [])}
    if "torch" not in versions:
        return []
    local = Version(versions["torch"]).local
    kind, ver = platform.backend.kind, platform.backend.version or ""
    got = f"torch {versions['torch']}"
    majors = cuda_majors(versions)
    by_deps = ", ".join(f"{n} {versions[n]}" for n in sorted(majors))
    cuda = "/".join(sorted(set(majors.values())))
    if kind == "cuda":
        want = ver.split(".")[0]
        if local is None:
            if not majors:
                why = "no +cu label and no CUDA dependencies: a CPU build"
                return [f"{got} is not a CUDA {ver} build ({why})"]
            if set(majors.values()) != {want}:
                why = f"(by its dependencies: {by_deps}), where CUDA {want} was asked"
                return [f"{got} is a CUDA {cuda} build {why}"]
            return []
        if local != "cu" + ver.replace(".", ""):
            return [f"{got} is not a CUDA {ver} build (expected +cu{ver.replace('.', '')})"]
    if kind == "rocm" and not (local or "").startswith("rocm" + ver):
        return [f"{got} is not a ROCm {ver} build (expected +rocm{ver})"]
    if kind == "xpu" and local != "xpu":
        return [f"{got} is not an XPU build (expected +xpu)"]
    if kind in ("cpu", "mps"):
        if local not in (None, "cpu"):
            return [f"{got} is not a CPU build"]
        if majors:
            return [f"{got} is not a CPU build: a CUDA {cuda} build by its dependencies "
                    f"({by_deps})"]
        gpu = _gpu_packages(versions)
        if gpu:
            return [f"a CPU platform must not pull GPU packages: {', '.join(gpu)}"]
    return []


def build_lock(doc: Mapping[str, Any], platform: Platform, indexes: Indexes,
               meta: LockMeta, hasher: Hasher,
               routing: RoutingIndex | None = None, *,
               allow_sdist: tuple[str, ...], path: Path) -> Lock:
    """The lock as written at *path*: official URLs, no credentials, every file hashed and
    named, sorted (*doc*: uv's resolution, as parsed).

    A package's sdist is written only when *allow_sdist* names it: a lock lists what may
    be installed, and an installer given a lock with an sdist builds it, silently, on a
    machine no wheel fits (another CPU, an older glibc). *meta* is the lock's
    ``[tool.lockkit]`` but for the files lockkit hashed and the packages digest, added here.
    Raises ``packaging.pylock.PylockValidationError`` where the result is no PEP 751 lock
    (:meth:`~lockkit.lock.model.Lock.built`)."""
    family = set(platform.torch_packages)
    allowed = {canonicalize_name(n) for n in allow_sdist}
    self_hashed: list[str] = []
    packages: list[PackageTable] = []
    for pkg in sorted(doc.get("packages", []), key=lambda p: canonicalize_name(p["name"])):
        name = canonicalize_name(pkg["name"])
        out: PackageTable = {"name": name, "version": pkg["version"]}
        routed = routing if name in family else None
        index = indexes.torch_official if routed else indexes.default_official
        if index:
            out["index"] = index
        if "marker" in pkg:
            out["marker"] = pkg["marker"]
        if "requires-python" in pkg:
            out["requires-python"] = pkg["requires-python"]
        if "dependencies" in pkg:
            out["dependencies"] = pkg["dependencies"]

        def entry(f: Mapping[str, Any], name: str = name,
                  routed: RoutingIndex | None = routed) -> FileTable:
            listed = routed.listed(name, f["url"]) if routed else None
            official = listed.official if listed else indexes.mirrors.official(f["url"])
            return _file(f, official, hasher, self_hashed)

        if "sdist" in pkg and name in allowed:
            out["sdist"] = entry(pkg["sdist"])
        if pkg.get("wheels"):
            out["wheels"] = sorted((entry(w) for w in pkg["wheels"]), key=lambda w: w["name"])
        packages.append(out)
    from lockkit.lock.freshness import packages_digest_of_read

    # the digest of the table as the file will hold it: every value in it (strings,
    # numbers, uv's dates) reads back from TOML as it is here (tests/compile/test_compile.py)
    meta = replace(meta, hashed_by_lockkit=tuple(sorted(set(self_hashed))),
                   packages_digest=packages_digest_of_read(packages))
    return Lock.built(path, environments=[platform.marker], packages=packages, meta=meta)


def _file(entry: Mapping[str, Any], official: str, hasher: Hasher,
          self_hashed: list[str]) -> FileTable:
    """One file entry: ``name`` decoded (``+``, never ``%2B``: pip 26.1-26.2 reject an entry
    whose only name is a URL with ``%2B``), the official URL, the sha256."""
    url = entry["url"]
    filename = urllib.parse.unquote(urllib.parse.urlsplit(official).path.rsplit("/", 1)[-1])
    hashes = dict(entry.get("hashes") or {})
    if "sha256" not in hashes:
        hashes = {"sha256": hasher(url)}  # the index gave none: hash the file ourselves
        self_hashed.append(filename)
    out: FileTable = {"name": filename, "url": official, "hashes": hashes}
    if "size" in entry:
        out["size"] = entry["size"]
    if "upload-time" in entry:
        out["upload-time"] = entry["upload-time"]
    return out
