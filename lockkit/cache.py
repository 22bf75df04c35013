"""The content-addressed download cache: one read-only copy per sha256, shared by every
platform and project, re-hashed on every hit (it is writable by its owner, so never
trusted), filled only through a temp file and a rename."""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lockkit.common import sha256_file, umask

__all__ = ["CHUNK", "Cache", "copy_hashing", "default_cache_dir", "link_or_copy"]

CHUNK = 1 << 20
_PARTIAL_MAX_AGE = 24 * 3600  # partial downloads older than this are debris of dead runs


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


class Cache:
    """One copy per sha256, shared by every platform and project."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.partial = root / "partial"

    def path(self, sha256: str) -> Path:
        return self.root / "sha256" / sha256[:2] / sha256

    def get(self, sha256: str, size: int | None) -> Path | None:
        """The blob for *sha256*, re-hashed: the cache is shared by every project and
        writable by its owner, so a hit is checked, never trusted. A blob whose bytes no
        longer hash to its name is evicted (removed) and the caller fetches it again."""
        path = self.path(sha256)
        try:
            found = path.stat().st_size
        except FileNotFoundError:
            return None
        if (size is not None and found != size) or sha256_file(path) != sha256:
            self.evict(path)
            return None
        _read_only(path)  # a blob from an older lockkit, or one someone made writable
        return path

    def evict(self, path: Path) -> None:
        try:
            os.chmod(path, 0o644)  # Windows refuses to remove a read-only file
            path.unlink()
        except FileNotFoundError:
            pass

    def new_partial(self) -> tuple[Any, Path]:
        self.partial.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(dir=self.partial, suffix=".part")
        return os.fdopen(fd, "wb"), Path(name)

    def commit(self, partial: Path, sha256: str) -> Path:
        final = self.path(sha256)
        final.parent.mkdir(parents=True, exist_ok=True)
        _read_only(partial)  # blobs are read-only from the moment they have their name
        try:
            os.replace(partial, final)  # same content under the same name: a race is harmless
        except PermissionError:  # Windows: a read-only file cannot be replaced
            self.evict(final)
            os.replace(partial, final)
        return final

    def sweep(self) -> None:
        """Remove partial files left by runs that died long ago."""
        if not self.partial.is_dir():
            return
        now = time.time()
        for part in self.partial.glob("*.part"):
            try:
                if now - part.stat().st_mtime > _PARTIAL_MAX_AGE:
                    part.unlink()
            except OSError:
                pass


def copy_hashing(src: Any, dst: Any, on_bytes: Callable[[int], None]) -> str:
    digest = hashlib.sha256()
    for block in iter(lambda: src.read(CHUNK), b""):
        dst.write(block)
        digest.update(block)
        on_bytes(len(block))
    return digest.hexdigest()


def link_or_copy(src: Path, dst: Path, sha256: str) -> str:
    """Place the cache blob *src*, whose hash is *sha256*, at *dst*; return the sha256 of
    the bytes now at *dst* (what a manifest may record).

    A hard link shares the blob's inode: writing through the linked file (``cp x.whl
    wheelhouse/...``) would rewrite the blob for every later build of every project that
    shares the cache. So a link is made only to a blob this process cannot write: the
    cache commits blobs with mode 0444, and the caller has just checked its hash
    (``Cache.get`` re-hashes a hit, a download is hashed as it streams), so the linked
    bytes are those checked bytes and *sha256* is returned. Read-only is not a barrier
    for root (``os.access`` says so) or where links are refused: then the blob is copied
    and hashed while copying, and the copy's own digest is returned.

    Modes: a link has the blob's mode, ``0444 & ~umask`` (0444 under umask 022, 0440 under
    027: readable by whom the umask allows, writable by no one), where a copy gets
    ``0666 & ~umask``. Links are kept rather than giving every wheelhouse a writable copy:
    a warm rebuild is one ``link()`` per wheel, not gigabytes of CUDA wheels copied
    (issue 16's target is within 3x of ``cp -al``), and a wheelhouse is a checked artifact
    nobody should edit in place. A writable blob (0644) would keep the links but let
    ``cp x.whl wheelhouse/`` rewrite every other wheelhouse sharing the inode, caught only
    at the next hash check.
    """
    if not os.access(src, os.W_OK):
        try:
            os.link(src, dst)
            return sha256
        except OSError:
            pass
    with src.open("rb") as fin, dst.open("xb") as fout:
        return copy_hashing(fin, fout, lambda n: None)


def _read_only(path: Path) -> None:
    """Read-only for everyone, readable by whom the umask allows (see link_or_copy)."""
    try:
        os.chmod(path, 0o444 & ~umask())
    except OSError:  # a blob another user committed: it is still re-hashed on every hit
        pass
