"""Turn uv's resolution into lockkit's lock: guards, index records, stable bytes.

Read and validate locks on top of ``packaging.pylock``.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from lockkit._compat import tomllib
from pathlib import Path
from typing import Any, Callable

import tomli_w
from packaging.pylock import Pylock, PylockValidationError
from packaging.utils import canonicalize_name
from packaging.version import Version

from lockkit.errors import ConfigError, GuardError, IndexError_
from lockkit.platforms import Platform
from lockkit.redact import redact, strip_credentials
from lockkit.resolve import Indexes, unapply_mirrors

__all__ = ["build_lock", "check_guards", "read_lock", "write_atomic", "dumps"]

Hasher = Callable[[str], str]  # effective URL -> sha256 hex


def _files(package: dict[str, Any]) -> list[dict[str, Any]]:
    files = list(package.get("wheels", []))
    if "sdist" in package:
        files.append(package["sdist"])
    return files


def _index_prefix(url: str) -> str:
    """Files of ``https://host/whl/cu126`` live under ``https://host/whl/``."""
    return url.rstrip("/").rsplit("/", 1)[0] + "/"


def check_guards(doc: dict[str, Any], platform: Platform, indexes: Indexes,
                 allow_sdist: tuple[str, ...]) -> None:
    """Refuse a resolution that cannot work on *platform*; name every offender."""
    problems: list[str] = []
    allowed = {canonicalize_name(n) for n in allow_sdist}
    family = set(platform.torch_packages)
    for pkg in doc.get("packages", []):
        name = canonicalize_name(pkg["name"])
        if not pkg.get("wheels") and name not in allowed:
            problems.append(f"{name} {pkg.get('version')} has no wheel for {platform.name} "
                            f"(only an sdist); add it to allow-sdist to accept that")
        if name in family and indexes.torch_effective:
            prefix = _index_prefix(indexes.torch_effective)
            stray = [f["url"] for f in _files(pkg) if not f.get("url", "").startswith(prefix)]
            if stray:
                raise IndexError_(
                    f"{platform.name}: {name} must come from the PyTorch index "
                    f"{redact(indexes.torch_official or '')}, which did not serve it "
                    f"(uv found it elsewhere: {redact(stray[0])}); no fallback to the default index")
    problems += _backend_problems(doc, platform)
    if problems:
        raise GuardError(f"{platform.name}: " + "; ".join(problems))


def _backend_problems(doc: dict[str, Any], platform: Platform) -> list[str]:
    versions = {canonicalize_name(p["name"]): p.get("version", "") for p in doc.get("packages", [])}
    if "torch" not in versions:
        return []
    local = Version(versions["torch"]).local
    kind, ver = platform.backend.kind, platform.backend.version or ""
    got = f"torch {versions['torch']}"
    if kind == "cuda" and local != "cu" + ver.replace(".", ""):
        return [f"{got} is not a CUDA {ver} build (expected +cu{ver.replace('.', '')})"]
    if kind == "rocm" and not (local or "").startswith("rocm" + ver):
        return [f"{got} is not a ROCm {ver} build (expected +rocm{ver})"]
    if kind in ("cpu", "mps"):
        if local not in (None, "cpu"):
            return [f"{got} is not a CPU build"]
        gpu = sorted(n for n in versions if n.startswith("nvidia-") or "triton" in n)
        if gpu:
            return [f"a CPU platform must not pull GPU packages: {', '.join(gpu)}"]
    return []


def build_lock(doc: dict[str, Any], platform: Platform, indexes: Indexes,
               mirrors: dict[str, str], meta: dict[str, Any], hasher: Hasher) -> dict[str, Any]:
    """The lock as written: official URLs, no credentials, every file hashed, sorted."""
    family = set(platform.torch_packages)
    self_hashed: list[str] = []
    packages = []
    for pkg in sorted(doc.get("packages", []), key=lambda p: canonicalize_name(p["name"])):
        name = canonicalize_name(pkg["name"])
        out: dict[str, Any] = {"name": name, "version": pkg["version"]}
        on_torch = bool(indexes.torch_effective) and all(
            f.get("url", "").startswith(_index_prefix(indexes.torch_effective or ""))
            for f in _files(pkg))
        from_torch = (name in family or on_torch) and indexes.torch_official
        index = indexes.torch_official if from_torch else indexes.default_effective
        if index:
            out["index"] = strip_credentials(unapply_mirrors(index, mirrors))
        for key in ("marker", "requires-python", "dependencies"):
            if key in pkg:
                out[key] = pkg[key]
        if "sdist" in pkg:
            out["sdist"] = _file(pkg["sdist"], mirrors, hasher, self_hashed)
        if pkg.get("wheels"):
            out["wheels"] = sorted((_file(w, mirrors, hasher, self_hashed) for w in pkg["wheels"]),
                                   key=lambda w: w["url"])
        packages.append(out)
    tool = dict(meta)
    tool["hashed-by-lockkit"] = sorted(set(self_hashed))
    return {
        "lock-version": "1.0",
        "environments": [platform.marker],
        "requires-python": f"=={meta['python']}.*",
        "created-by": "lockkit",
        "packages": packages,
        "tool": {"lockkit": tool},
    }


def _file(entry: dict[str, Any], mirrors: dict[str, str], hasher: Hasher,
          self_hashed: list[str]) -> dict[str, Any]:
    url = entry["url"]
    hashes = dict(entry.get("hashes") or {})
    if "sha256" not in hashes:
        hashes = {"sha256": hasher(url)}  # the index gave none: hash the file ourselves
        self_hashed.append(url.rsplit("/", 1)[-1])
    out = {"url": strip_credentials(unapply_mirrors(url, mirrors)), "hashes": hashes}
    for key in ("size", "upload-time"):
        if key in entry:
            out[key] = entry[key]
    if "name" in entry:
        out["name"] = entry["name"]
    return out


def dumps(lock: dict[str, Any]) -> str:
    return "# Generated by lockkit; edit the inputs and recompile, not this file.\n" + tomli_w.dumps(lock)


def write_atomic(path: Path, text: str) -> None:
    """Temp file in the same folder, fsync, rename: never a half-written file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_lock(path: Path) -> tuple[dict[str, Any], Pylock]:
    """Parse and validate a lock; errors name the file and the key path."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ConfigError(f"{path}: lock not found", hint="run 'lockkit compile' first") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from exc
    try:
        return data, Pylock.from_dict(data)
    except PylockValidationError as exc:
        raise ConfigError(f"{path}: invalid PEP 751 lock: {exc}") from exc


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
