"""Where the download cache keeps things, and the check a warm build may trust.

The part of :mod:`lockkit.cache` that a warm rebuild (:mod:`lockkit.buildmemo`) needs,
importing nothing beyond ``os``: that rebuild must start, check and link in a few tens of
milliseconds, and :mod:`lockkit.cache` brings dataclasses, tempfile and the housekeeping.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

__all__ = ["FOLDERS", "PARTIAL_MAX_AGE", "blob_path", "default_cache_dir", "stamped",
           "stat_key", "sweep_partials"]

# The layout's folders: blobs by sha256, downloads under way, the stamps of checked blobs,
# and the memos (SBOM texts, tools/ plans, build plans, compile's uv launches) and
# verify's shared files.
FOLDERS = ("sha256", "partial", "checked", "sbom", "tools", "plan", "launch", "verify")
PARTIAL_MAX_AGE = 24 * 3600  # partial downloads older than this are debris of dead runs


def default_cache_dir() -> Path:
    """The user cache folder (``LOCKKIT_CACHE_DIR`` overrides)."""
    if os.environ.get("LOCKKIT_CACHE_DIR"):
        return Path(os.environ["LOCKKIT_CACHE_DIR"])
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA", Path.home() / "AppData" / "Local"))
        return base / "lockkit" / "Cache"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "lockkit"
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "lockkit"


def blob_path(root: Path, sha256: str) -> Path:
    return root / "sha256" / sha256[:2] / sha256


def stat_key(st: os.stat_result) -> str:
    """What a stamp holds: the blob's device, inode, size and mtime (see lockkit.cache)."""
    return f"{st.st_dev} {st.st_ino} {st.st_size} {st.st_mtime_ns}\n"


def stamped(root: Path, sha256: str, size: int | None) -> Path | None:
    """The blob for *sha256* if its stamp proves it untouched since its bytes were hashed
    (and it has *size*, when given); None otherwise, without reading the blob: the caller
    then goes the long way (:meth:`lockkit.cache.Cache.get` re-hashes or evicts)."""
    path = blob_path(root, sha256)
    try:
        st = path.stat()
        if size is not None and st.st_size != size:
            return None
        with open(root / "checked" / sha256, encoding="ascii") as fh:
            return path if fh.read() == stat_key(st) else None
    except (OSError, UnicodeDecodeError):
        return None


def sweep_partials(root: Path, max_age: float = PARTIAL_MAX_AGE) -> None:
    """Remove partial downloads left by runs that died long ago."""
    try:
        entries = list(os.scandir(root / "partial"))
    except OSError:
        return
    now = time.time()
    for part in entries:
        try:
            if part.name.endswith(".part") and now - part.stat().st_mtime > max_age:
                os.unlink(part.path)
        except OSError:
            pass
