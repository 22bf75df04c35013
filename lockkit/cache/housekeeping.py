"""Housekeeping of the download cache: ``lockkit cache info`` and ``lockkit cache prune``.

:func:`survey` lists every blob and partial download of the cache and measures each top
folder (each inode once, as ``du`` counts); a folder that is not lockkit's cache (another
entry at its top, a link, a misnamed blob) is refused rather than counted or pruned.
:func:`prune` removes the blobs no lock references (the caller reads the locks), the stale
partials, and the folders made again when needed, each path re-checked right before it goes;
a part a running command holds (:mod:`lockkit.cache.inuse`: a build's blobs, a verify's
installs) is skipped and named, never pulled from under it.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from lockkit._internal import proc
from lockkit._internal.leftovers import orphaned
from lockkit.cache import inuse
from lockkit.cache.layout import FOLDERS, LEGACY, PARTIAL_MAX_AGE
from lockkit.errors import ConfigError

__all__ = ["Entry", "Part", "Pruned", "Skipped", "Survey", "prune", "prune_uv", "survey"]

_TOP = {*FOLDERS, *LEGACY}  # the layout's folders, and those older lockkits made
_WHOLE = ("memo", "verify", *LEGACY)  # what prune removes whole: made again when needed
_LOCKS = {inuse.lock_name(p) for p in inuse.PARTS}  # beside the folders they lock
_SHARD = re.compile(r"[0-9a-f]{2}")
_BLOB = re.compile(r"[0-9a-f]{64}")
_OURS = ", ".join(f"{f}/" for f in (*FOLDERS, *LEGACY))
_NOT_OURS_HINT = (f"give --cache-dir the folder lockkit downloads into (it holds only {_OURS}), "
                  "or leave it out for the default")


@dataclass(frozen=True, kw_only=True)
class Entry:
    """One file of the cache: a blob (*sha256* set) or a partial download."""

    path: Path
    size: int
    links: int  # st_nlink: above 1, a wheelhouse still holds the same bytes
    sha256: str | None = None
    stale: bool = False  # a partial older than a day, or whose run is gone: debris


@dataclass(frozen=True, kw_only=True)
class Part:
    """One top folder of the cache (:data:`FOLDERS`, :data:`LEGACY`), or what of it a prune
    removes: its files, their bytes (each inode once, as ``du`` counts), and the bytes the
    disk gets back when they go (an inode also linked from outside, a blob hard-linked into
    a wheelhouse, frees nothing)."""

    name: str
    files: int
    size: int
    freed: int


@dataclass(frozen=True, kw_only=True)
class Survey:
    root: Path
    exists: bool
    blobs: tuple[Entry, ...]
    partials: tuple[Entry, ...]
    parts: tuple[Part, ...] = ()  # every top folder there, in FOLDERS then LEGACY order

    @property
    def size(self) -> int:
        return sum(p.size for p in self.parts)


@dataclass(frozen=True, kw_only=True)
class Skipped:
    """What prune left of a part a running command holds (:mod:`lockkit.cache.inuse`)."""

    part: Part  # what would have gone: the unreferenced blobs of sha256/, or verify/ whole
    why: str  # "in use by a running verify"


@dataclass(frozen=True, kw_only=True)
class Pruned:
    removed: tuple[Entry, ...]  # blobs and stale partials, removed (or, dry run, to remove)
    dry_run: bool
    folders: tuple[Part, ...] = ()  # memo/, verify/ and older lockkits' folders, whole
    skipped: tuple[Skipped, ...] = ()  # in use by a running command: left as they are

    @property
    def parts(self) -> tuple[Part, ...]:
        """What was removed (or would be), by top folder; only the folders touched."""
        out = []
        for name, entries in (("sha256", [e for e in self.removed if e.sha256]),
                              ("partial", [e for e in self.removed if not e.sha256])):
            if entries:
                out.append(_part(name, entries))
        return (*out, *self.folders)

    @property
    def files(self) -> int:
        return sum(p.files for p in self.parts)

    @property
    def size(self) -> int:
        return sum(p.size for p in self.parts)

    @property
    def freed(self) -> int:
        """Bytes the disk gets back: a blob hard-linked into a wheelhouse frees nothing."""
        return sum(p.freed for p in self.parts)


def _part(name: str, entries: Iterable[Entry]) -> Part:
    entries = list(entries)
    return Part(name=name, files=len(entries), size=sum(e.size for e in entries),
                freed=sum(e.size for e in entries if e.links <= 1))


def _measure(folder: Path) -> Part:
    """Every file under *folder* (never following a link), each inode counted once; an
    inode frees its bytes only when all its links are in the folder."""
    names = 0
    inodes: dict[tuple[int, int], list[int]] = {}  # -> [size, links, links seen here]
    for parent, _, files in os.walk(folder):  # os.walk never follows a link to a folder
        for name in files:
            try:
                st = os.lstat(os.path.join(parent, name))
            except OSError:
                continue
            names += 1
            seen = inodes.setdefault((st.st_dev, st.st_ino), [st.st_size, st.st_nlink, 0])
            seen[2] += 1
    return Part(name=folder.name, files=names, size=sum(s for s, _, _ in inodes.values()),
                freed=sum(s for s, links, here in inodes.values() if here >= links))


def _not_ours(root: Path, what: str) -> ConfigError:
    return ConfigError(f"{root}: does not look like lockkit's download cache ({what})",
                       hint=_NOT_OURS_HINT)


def _scan(root: Path, folder: Path, is_dir: bool) -> list[os.DirEntry[str]]:
    """The entries of *folder*, each a real file or folder (a link is never followed)."""
    with os.scandir(folder) as it:
        entries = sorted(it, key=lambda e: e.name)
    if folder == root:  # the parts' lock files (lockkit.cache.inuse), regular files only
        entries = [e for e in entries
                   if not (e.name in _LOCKS and e.is_file(follow_symlinks=False))]
    other = sorted({e.name for e in entries} - _TOP) if folder == root else []
    if other:
        raise _not_ours(root, f"it holds {other[0]!r}; lockkit's holds only {_OURS}")
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
    stale = sha256 is None and (now - st.st_mtime > PARTIAL_MAX_AGE or
                                orphaned(os.path.basename(path), "", ".part", path))
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
    counted = {"sha256": _part("sha256", blobs), "partial": _part("partial", partials)}
    parts = tuple(counted.get(name) or _measure(root / name)
                  for name in (*FOLDERS, *LEGACY) if name in top)
    return Survey(root=root, exists=True, blobs=tuple(blobs), partials=tuple(partials),
                  parts=parts)


def prune(found: Survey, keep: set[str], *, dry_run: bool = False) -> Pruned:
    """Remove the blobs whose sha256 is not in *keep*, and the stale partials. Each path
    is re-checked as a regular file inside the cache right before it goes. A part a
    running command holds is skipped (a dry run says so too)."""
    blobs = [b for b in found.blobs if b.sha256 not in keep]
    # memos, verify's installs (made again when needed) and older lockkits' folders, whole
    folders = [p for p in found.parts if p.name in _WHOLE]
    held: list[inuse.Held] = []
    skipped: list[Skipped] = []
    try:
        if blobs and not _take(found.root, "sha256", _part("sha256", blobs), held, skipped):
            blobs = []
        folders = [p for p in folders if p.name != "verify"
                   or _take(found.root, "verify", p, held, skipped)]
        gone = [*blobs, *(p for p in found.partials if p.stale)]
        if not dry_run:
            _remove_all(found.root, gone, folders)
    finally:
        for lock in held:
            lock.release()
    return Pruned(removed=tuple(gone), dry_run=dry_run, folders=tuple(folders),
                  skipped=tuple(skipped))


def _take(root: Path, name: inuse.Part, part: Part, held: list[inuse.Held],
          skipped: list[Skipped]) -> bool:
    """Whether prune may remove *part* (of the part *name*): its lock taken into *held*;
    else it goes into *skipped*, with who uses it."""
    lock = inuse.take(root, name)
    if lock is None:
        skipped.append(Skipped(part=part, why=f"in use by {inuse.USERS[name]}"))
        return False
    held.append(lock)
    return True


def _remove_all(root: Path, gone: list[Entry], folders: list[Part]) -> None:
    for entry in gone:
        _remove(root, entry.path)
    for part in folders:
        folder = root / part.name
        if folder.is_dir() and not folder.is_symlink():
            shutil.rmtree(folder, ignore_errors=True)
    for shard in {e.path.parent for e in gone if e.sha256}:
        try:
            shard.rmdir()  # only when empty
        except OSError:
            pass


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


def prune_uv(*, dry_run: bool = False) -> proc.Result | None:
    """``uv cache prune`` (uv's own cache, at ``uv cache dir``), through the one wrapper."""
    from lockkit._internal.uv import uv_bin

    if dry_run:
        return None
    return proc.check([uv_bin(), "cache", "prune"], what="uv cache prune", timeout=600)
