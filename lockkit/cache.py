"""The content-addressed download cache: one read-only copy per sha256, shared by every
platform and project, re-hashed on every hit (it is writable by its owner, so never
trusted), filled only through a temp file and a rename.

Layout (nothing else is ever made in it)::

    <root>/sha256/<first 2 hex>/<sha256>   one blob per file, mode 0444
    <root>/partial/<random>.part           downloads under way, or left by dead runs

:func:`survey` reads that layout and refuses a folder that does not have it (``cache
prune`` must never delete in someone else's folder); :func:`prune` removes the blobs no
lock references and stale partials.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lockkit import _run
from lockkit.common import sha256_file, umask
from lockkit.errors import ConfigError
from lockkit.lockfile import read_lock

__all__ = ["CHUNK", "Cache", "Entry", "Pruned", "Survey", "copy_hashing", "default_cache_dir",
           "link_or_copy", "lock_references", "prune", "prune_uv", "survey"]

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


# --- housekeeping: cache info / cache prune -----------------------------------------------

_SHARD = re.compile(r"[0-9a-f]{2}")
_BLOB = re.compile(r"[0-9a-f]{64}")
_NOT_OURS_HINT = ("give --cache-dir the folder lockkit downloads into (it holds only sha256/ "
                  "and partial/), or leave it out for the default")


@dataclass(frozen=True, kw_only=True)
class Entry:
    """One file of the cache: a blob (*sha256* set) or a partial download."""

    path: Path
    size: int
    links: int  # st_nlink: above 1, a wheelhouse still holds the same bytes
    sha256: str | None = None
    stale: bool = False  # a partial older than a day: debris of a dead run


@dataclass(frozen=True, kw_only=True)
class Survey:
    root: Path
    exists: bool
    blobs: tuple[Entry, ...]
    partials: tuple[Entry, ...]


@dataclass(frozen=True, kw_only=True)
class Pruned:
    removed: tuple[Entry, ...]  # blobs and stale partials, removed (or, dry run, to remove)
    dry_run: bool

    @property
    def size(self) -> int:
        return sum(e.size for e in self.removed)

    @property
    def freed(self) -> int:
        """Bytes the disk gets back: a blob hard-linked into a wheelhouse frees nothing."""
        return sum(e.size for e in self.removed if e.links <= 1)


def _not_ours(root: Path, what: str) -> ConfigError:
    return ConfigError(f"{root}: does not look like lockkit's download cache ({what})",
                       hint=_NOT_OURS_HINT)


def _scan(root: Path, folder: Path, is_dir: bool) -> list[os.DirEntry[str]]:
    """The entries of *folder*, each a real file or folder (a link is never followed)."""
    with os.scandir(folder) as it:
        entries = sorted(it, key=lambda e: e.name)
    other = sorted({e.name for e in entries} - {"sha256", "partial"}) if folder == root else []
    if other:
        raise _not_ours(root, f"it holds {other[0]!r}; lockkit's holds only sha256/ and partial/")
    for e in entries:
        if e.is_symlink() or (e.is_dir(follow_symlinks=False) != is_dir) or \
                not (is_dir or e.is_file(follow_symlinks=False)):
            kind = "a link" if e.is_symlink() else "a folder" if e.is_dir() else "a file"
            rel = Path(e.path).relative_to(root)
            raise _not_ours(root, f"{rel} is {kind} where lockkit keeps "
                                  f"{'folders' if is_dir else 'files'}")
    return entries


def _entry(path: str, sha256: str | None = None, *, now: float = 0.0) -> Entry:
    st = os.lstat(path)
    stale = sha256 is None and now - st.st_mtime > _PARTIAL_MAX_AGE
    return Entry(path=Path(path), size=st.st_size, links=st.st_nlink, sha256=sha256,
                 stale=stale)


def survey(root: Path, *, now: float | None = None) -> Survey:
    """Every blob and partial of the cache at *root*; a folder that is not lockkit's
    cache (another entry at its top, a link, a misnamed blob) is a ConfigError."""
    if not root.exists():
        return Survey(root=root, exists=False, blobs=(), partials=())
    if not root.is_dir():
        raise _not_ours(root, "not a folder")
    now = time.time() if now is None else now
    top = {e.name: e for e in _scan(root, root, True)}
    blobs: list[Entry] = []
    if "sha256" in top:
        for shard in _scan(root, root / "sha256", True):
            if not _SHARD.fullmatch(shard.name):
                raise _not_ours(root, f"sha256/{shard.name} is not a two-hex-digit folder")
            for blob in _scan(root, Path(shard.path), False):
                if not (_BLOB.fullmatch(blob.name) and blob.name.startswith(shard.name)):
                    raise _not_ours(root, f"sha256/{shard.name}/{blob.name} is not a sha256")
                blobs.append(_entry(blob.path, blob.name))
    partials: list[Entry] = []
    if "partial" in top:
        for part in _scan(root, root / "partial", False):
            if not part.name.endswith(".part"):
                raise _not_ours(root, f"partial/{part.name} is not a partial download")
            partials.append(_entry(part.path, now=now))
    return Survey(root=root, exists=True, blobs=tuple(blobs), partials=tuple(partials))


def lock_references(locks: Iterable[Path]) -> set[str]:
    """The sha256 of every file every lock lists (all platforms, wheels and sdists); a lock
    that cannot be read is an error: what it references is then unknown."""
    found: set[str] = set()
    for path in locks:
        data, _ = read_lock(path)
        for pkg in data.get("packages", []):
            files = [*pkg.get("wheels", []), *([pkg["sdist"]] if "sdist" in pkg else [])]
            found.update(str(f.get("hashes", {}).get("sha256", "")).lower() for f in files)
    found.discard("")
    return found


def prune(found: Survey, keep: set[str], *, dry_run: bool = False) -> Pruned:
    """Remove the blobs whose sha256 is not in *keep*, and the stale partials. Each path
    is re-checked as a regular file inside the cache right before it goes."""
    gone = [b for b in found.blobs if b.sha256 not in keep]
    gone += [p for p in found.partials if p.stale]
    if not dry_run:
        for entry in gone:
            _remove(found.root, entry.path)
        for shard in {e.path.parent for e in gone if e.sha256}:
            try:
                shard.rmdir()  # only when empty
            except OSError:
                pass
    return Pruned(removed=tuple(gone), dry_run=dry_run)


def _remove(root: Path, path: Path) -> None:
    if path.parent.parent != root / "sha256" and path.parent != root / "partial":
        raise AssertionError(f"{path} is outside the cache {root}")  # survey built it there
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return  # replaced by something else since the survey: left alone
        if os.name == "nt":
            os.chmod(path, 0o644)  # Windows refuses to remove a read-only file
        path.unlink()  # unlink removes a name: it never follows a link
    except FileNotFoundError:
        pass


def prune_uv(*, dry_run: bool = False) -> _run.Result | None:
    """``uv cache prune`` (uv's own cache, at ``uv cache dir``), through the one wrapper."""
    from lockkit.resolve import uv_bin

    if dry_run:
        return None
    return _run.check([uv_bin(), "cache", "prune"], what="uv cache prune", timeout=600)
