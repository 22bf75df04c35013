"""The content-addressed download cache: one read-only copy per sha256, shared by every
platform and project, filled only through a temp file and a rename, and never trusted:
a hit is re-hashed unless its file is provably untouched since lockkit last hashed it.

Layout (nothing else is ever made in it)::

    <root>/sha256/<first 2 hex>/<sha256>   one blob per file, mode 0444
    <root>/partial/<random>.part           downloads under way, or left by dead runs
    <root>/checked/<sha256>                the blob's stat when its hash was last checked
    <root>/sbom/<key>.json                 rendered SBOMs, by the sha256 of their inputs
    <root>/tools/<key>.json                tools/ resolutions and lockkit's own wheel
    <root>/verify/                         verify's installs: wheels/<sha256>/<file>, uv/

A *checked* stamp is git's index trick: the blob's device, inode, size and mtime when its
bytes last hashed to its name. A write to the blob moves its mtime (a copy over it, an
editor, a download tool), so a blob whose stat still equals its stamp holds the bytes that
were hashed, and a warm build need not read gigabytes of wheels again; anything else (no
stamp, another inode, another size or time) re-hashes. The ctime would also catch a
writer who puts the mtime back with ``utime``, but every hard link made or removed moves
it (each wheelhouse build and replacement does both), so it cannot be part of the stamp.
Such a deliberate writer, who can already write the cache, is caught where the bytes are
used: verify installs with ``--require-hashes``, ``pack`` hashes every member.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import stat
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lockkit import _run
from lockkit.cachelayout import (
    FOLDERS,
    PARTIAL_MAX_AGE,
    blob_path,
    default_cache_dir,
    stat_key,
    sweep_partials,
)
from lockkit.common import sha256_file, umask
from lockkit.errors import ConfigError
from lockkit.lockfile import read_lock

__all__ = ["CHUNK", "Cache", "Entry", "Pruned", "Survey", "copy_hashing", "default_cache_dir",
           "link_or_copy", "lock_references", "prune", "prune_uv", "survey"]

CHUNK = 1 << 20
_PARTIAL_MAX_AGE = PARTIAL_MAX_AGE


class Cache:
    """One copy per sha256, shared by every platform and project."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.partial = root / "partial"

    def path(self, sha256: str) -> Path:
        return blob_path(self.root, sha256)

    def get(self, sha256: str, size: int | None) -> Path | None:
        """The blob for *sha256*, checked: the cache is shared by every project and
        writable by its owner, so a hit is re-hashed unless its stamp proves it untouched.
        A blob whose bytes no longer hash to its name is evicted (removed) and the caller
        fetches it again."""
        path = self.path(sha256)
        try:
            st = path.stat()
        except FileNotFoundError:
            return None
        if size is not None and st.st_size != size:
            self.evict(path)
            return None
        if self._stamp(sha256) == stat_key(st):
            return path  # hashed before, not written since
        if sha256_file(path) != sha256:
            self.evict(path)
            return None
        _read_only(path)  # a blob from an older lockkit, or one someone made writable
        self.restamp(path)
        return path

    def _stamp(self, sha256: str) -> str | None:
        try:
            return (self.root / "checked" / sha256).read_text(encoding="ascii")
        except (OSError, UnicodeDecodeError):
            return None

    def restamp(self, path: Path) -> None:
        """Record *path*'s stat as checked: call right after its bytes were hashed to its
        name (a download, a re-hash)."""
        if path.parent.parent != self.root / "sha256":
            return  # not a blob of this cache (a --find-links file, say)
        stamps = self.root / "checked"
        try:
            stamps.mkdir(exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=stamps, prefix=".", suffix=".tmp")
        except OSError:  # a cache of another user's: no stamp, it is re-hashed next time
            return
        try:
            with os.fdopen(fd, "w", encoding="ascii") as out:
                out.write(stat_key(path.stat()))
            os.replace(tmp, stamps / path.name)
        except OSError:
            Path(tmp).unlink(missing_ok=True)

    def evict(self, path: Path) -> None:
        (self.root / "checked" / path.name).unlink(missing_ok=True)
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
        self.restamp(final)  # its bytes were hashed on their way in
        return final

    def sweep(self) -> None:
        """Remove partial files left by runs that died long ago."""
        sweep_partials(self.root)


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

    A hard link, as uv links its cache into venvs: a warm rebuild is one ``link()`` per
    wheel, not gigabytes of CUDA wheels copied (issue 16: within 3x of ``cp -al``). The
    caller has just checked the blob (``Cache.get``, a download hashed as it streamed), so
    *sha256* is returned. Where links are refused (another file system) the blob is
    copied and hashed while copying, and the copy's own digest is returned.

    A link shares the blob's inode. Blobs are 0444, so no one but root writes through a
    linked wheel by accident; if root does (``cp x.whl wheelhouse/...``), the write
    changes the blob's mtime, its stamp no longer holds, the next ``get``
    re-hashes it and evicts it, and every user of a wheelhouse (``pack``, verify's install
    with ``--require-hashes``) hashes what it takes.

    Modes: a link has the blob's mode, ``0444 & ~umask`` (0444 under umask 022, 0440 under
    027: readable by whom the umask allows, writable by no one); a copy gets
    ``0666 & ~umask``.
    """
    try:
        os.link(src, dst)
        return sha256
    except OSError:  # another file system, or links refused
        pass
    with src.open("rb") as fin, dst.open("xb") as fout:
        return copy_hashing(fin, fout, lambda n: None)


def _read_only(path: Path) -> None:
    """Read-only for everyone, readable by whom the umask allows (see link_or_copy); a
    chmod to the same mode is skipped."""
    mode = 0o444 & ~umask()
    try:
        if stat.S_IMODE(path.stat().st_mode) != mode:
            os.chmod(path, mode)
    except OSError:  # a blob another user committed: it is still re-hashed on every hit
        pass


# --- housekeeping: cache info / cache prune -----------------------------------------------

_TOP = set(FOLDERS)  # the layout's folders
_SHARD = re.compile(r"[0-9a-f]{2}")
_BLOB = re.compile(r"[0-9a-f]{64}")
_NOT_OURS_HINT = ("give --cache-dir the folder lockkit downloads into (it holds only sha256/, "
                  "partial/, checked/, sbom/, tools/, plan/ and verify/), or leave it out for "
                  "the default")


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
    other = sorted({e.name for e in entries} - _TOP) if folder == root else []
    if other:
        raise _not_ours(root, f"it holds {other[0]!r}; lockkit's holds only sha256/, "
                              "partial/, checked/, sbom/, tools/, plan/ and verify/")
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
            if entry.sha256:
                (found.root / "checked" / entry.sha256).unlink(missing_ok=True)
        for memo in [*(found.root / "sbom").glob("*.json"),  # made again when needed
                     *(found.root / "tools").glob("*.json"),
                     *(found.root / "plan").glob("*.json"),
                     *(found.root / "launch").glob("*.memo"),
                     *(found.root / "launch").glob("*.done")]:
            memo.unlink(missing_ok=True)
        shared = found.root / "verify"  # verify's wheel links and uv cache: made again
        if shared.is_dir() and not shared.is_symlink():
            shutil.rmtree(shared, ignore_errors=True)
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
