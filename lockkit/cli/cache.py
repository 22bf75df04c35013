"""``lockkit cache info`` and ``lockkit cache prune``: the download cache's housekeeping.

Results go to stdout (``--json`` for scripts), status to stderr. uv's own cache is
uv's: it is pruned only with ``prune --uv``, by ``uv cache prune`` itself.
"""

from __future__ import annotations

import argparse
import json
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypedDict

from lockkit._internal import ui
from lockkit._internal.ui import human_size
from lockkit.cli.common import shown_path
from lockkit.errors import ConfigError

if TYPE_CHECKING:
    from lockkit.cache.housekeeping import Entry, Pruned, Survey

__all__ = ["DESCRIPTION", "HELP", "CacheInfoOptions", "CachePruneOptions", "add_arguments",
           "handle"]

HELP = "show or prune lockkit's download cache"
DESCRIPTION = ("lockkit's download cache holds one read-only copy of every file it "
               "fetched, by sha256, shared by every project. 'info' says how big it is "
               "and how much of it the project's locks reference; 'prune' removes what "
               "no lock of the given projects references. uv keeps its own cache "
               "('uv cache dir' shows it, 'uv cache prune' trims it); lockkit touches "
               "it only with 'prune --uv'.")

_UV_NOTE = "uv keeps its own cache: 'uv cache dir' shows it, 'uv cache prune' trims it"


def add_arguments(cache: argparse.ArgumentParser) -> None:
    csub = cache.add_subparsers(dest="cache_command", metavar="ACTION", required=True)
    info = csub.add_parser("info", help="size of the cache and what the locks reference",
                           description="The cache folder, its files and bytes, partial "
                                       "downloads, and how much the project's locks "
                                       "(locks/pylock.*.toml) reference by sha256. uv's "
                                       "own cache is apart: 'uv cache dir'.")
    prune = csub.add_parser(
        "prune", help="remove cached files no lock of the project references",
        description="Remove every cached file that no lock of the project(s) "
                    "(locks/pylock.*.toml, every platform) references by sha256, and partial "
                    "downloads older than a day. The cache is shared: another project's "
                    "files go too unless its folder is also given with --project (they are "
                    "downloaded again when needed). Nothing outside the cache folder is "
                    "touched and no link is followed; a folder that is not lockkit's cache "
                    "is refused. uv's own cache ('uv cache dir') is left to uv unless --uv "
                    "runs 'uv cache prune'.")
    for p in (info, prune):
        p.add_argument("--cache-dir", type=Path, metavar="DIR",
                       help="the cache folder (default: the user cache folder, or "
                            "$LOCKKIT_CACHE_DIR)")
        p.add_argument("--project", type=Path, action="append", default=[], metavar="DIR",
                       help="project whose locks count as references (repeatable; default: "
                            "the nearest one from the current folder up)")
        p.add_argument("--json", action="store_true", help="print the result as JSON")
    prune.add_argument("--dry-run", action="store_true",
                       help="list what would be removed and its bytes; remove nothing")
    prune.add_argument("--uv", action="store_true",
                       help="also run 'uv cache prune' (uv's unused cache entries)")
    info.set_defaults(options=CacheInfoOptions.from_namespace)
    prune.set_defaults(options=CachePruneOptions.from_namespace)


@dataclass(frozen=True, kw_only=True)
class CacheInfoOptions:
    """``lockkit cache info``'s flags, typed."""

    cache_dir: Path | None
    project: tuple[Path, ...]
    json: bool

    @classmethod
    def from_namespace(cls, ns: argparse.Namespace) -> CacheInfoOptions:
        return cls(cache_dir=ns.cache_dir, project=tuple(ns.project), json=ns.json)


@dataclass(frozen=True, kw_only=True)
class CachePruneOptions(CacheInfoOptions):
    """``lockkit cache prune``'s flags, typed: info's and its own."""

    dry_run: bool
    uv: bool

    @classmethod
    def from_namespace(cls, ns: argparse.Namespace) -> CachePruneOptions:
        return cls(cache_dir=ns.cache_dir, project=tuple(ns.project), json=ns.json,
                   dry_run=ns.dry_run, uv=ns.uv)


def handle(options: CacheInfoOptions | CachePruneOptions) -> int:
    return _prune(options) if isinstance(options, CachePruneOptions) else _info(options)


def _root(options: CacheInfoOptions) -> Path:
    from lockkit.cache.layout import default_cache_dir

    return (options.cache_dir or default_cache_dir()).absolute()


def _locks(projects: Sequence[Path]) -> tuple[list[Path], list[Path]]:
    """The project folders (default: the nearest one) and every lock in their locks/."""
    from lockkit.config.project import project_root

    roots = [project_root(p) for p in projects] if projects else [project_root()]
    locks = sorted({p for r in roots for p in (r / "locks").glob("pylock.*.toml")})
    return roots, locks


def _references(locks: list[Path]) -> set[str]:
    """The sha256 of every file every lock lists (all platforms, wheels and sdists); a lock
    that cannot be read is an error: what it references is then unknown."""
    from lockkit.lock.model import Lock

    return set().union(*(Lock.read(p).file_sha256s() for p in locks))


def _count(entries: Sequence[Entry]) -> dict[str, int]:
    return {"files": len(entries), "bytes": sum(e.size for e in entries)}


def _info(options: CacheInfoOptions) -> int:
    from lockkit.cache.housekeeping import survey

    found = survey(_root(options))
    roots, locks = _locks(options.project)
    keep = _references(locks)
    used = _count([b for b in found.blobs if b.sha256 in keep])
    unused = _count([b for b in found.blobs if b.sha256 not in keep])
    parts, stale = _count(found.partials), _count([p for p in found.partials if p.stale])
    memos, why = _memos(found.root)
    memo_files = _count_part(found, "memo")
    by_part = {p.name: {"files": p.files, "bytes": p.size} for p in found.parts}
    if options.json:
        print(json.dumps({
            "cache_dir": str(found.root), "exists": found.exists, **_count(found.blobs),
            "referenced": used, "unreferenced": unused,
            "partial": {**parts, "stale_files": stale["files"], "stale_bytes": stale["bytes"]},
            "memos": {"on": memos, "why": why, **memo_files},
            "parts": by_part, "total_bytes": found.size,
            "projects": [str(r) for r in roots], "locks": [str(p) for p in locks]}, indent=2))
        return 0
    where = "" if found.exists else " (does not exist yet)"
    print(f"cache       {shown_path(found.root)}{where}")
    print(f"files       {len(found.blobs)}, {human_size(sum(b.size for b in found.blobs))}")
    print(f"referenced  {used['files']}, {human_size(used['bytes'])} by {len(locks)} lock(s) of "
          f"{', '.join(shown_path(r) for r in roots)}")
    print(f"unused      {unused['files']}, {human_size(unused['bytes'])}"
          + (": 'lockkit cache prune' removes them" if unused["files"] else ""))
    print(f"partial     {parts['files']}, {human_size(parts['bytes'])} "
          f"({stale['files']} older than a day)")
    print(f"memos       {'on' if memos else 'off'}: {why}; {memo_files['files']} in memo/, "
          f"{human_size(memo_files['bytes'])}")
    for i, p in enumerate(found.parts):  # every folder, verify's installs included
        print(f"{'by part' if i == 0 else '':<12}{p.name + '/':<9}{human_size(p.size):>9}, "
              f"{p.files} file(s)")
    print(f"total       {human_size(found.size)} on disk (each file once)")
    ui.say(_UV_NOTE)
    return 0


def _count_part(found: Survey, name: str) -> dict[str, int]:
    part = next((p for p in found.parts if p.name == name), None)
    return {"files": part.files if part else 0, "bytes": part.size if part else 0}


def _memos(root: Path) -> tuple[bool, str]:
    """Whether lockkit remembers anything in the cache at *root* (the memo store's one
    rule, :class:`lockkit.cache.memo.MemoStore`), and why."""
    from lockkit.cache.memo import MemoStore

    store = MemoStore(root)
    if store.trusted:
        return True, "the cache is private to you"
    if not os.path.lexists(root):
        return True, "the cache will be made private to you (0700)"
    problem = next(p for p in (_problem(root), _problem(store.root)) if p)
    return False, f"{problem}; every blob is re-hashed"


def _problem(path: Path) -> str | None:
    """What keeps *path* from being private to this user (as the memo store judges it)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"{path} cannot be read: {exc.strerror}"
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        return f"{path} is not a folder"
    if hasattr(os, "geteuid") and st.st_uid != os.geteuid():
        return f"{path} belongs to another user"
    if st.st_mode & stat.S_IWGRP:
        return f"{path} is writable by group"
    return f"{path} is writable by others" if st.st_mode & stat.S_IWOTH else None


def _prune(options: CachePruneOptions) -> int:
    from lockkit._internal.leftovers import say_swept, sweep_temp
    from lockkit.cache import housekeeping as cache

    found = cache.survey(_root(options))  # first: a folder that is not the cache is refused
    roots, locks = _locks(options.project)
    if not locks:
        raise ConfigError(f"no locks in {', '.join(str(r / 'locks') for r in roots)}: prune "
                          "keeps what a project's locks reference, and would remove everything",
                          hint="run it in a project folder, or pass --project DIR")
    result = cache.prune(found, _references(locks), dry_run=options.dry_run)
    if not options.dry_run:  # killed runs' partial downloads, and their folders in TMPDIR
        say_swept([e.path for e in result.removed if not e.sha256])
        sweep_temp()
    uv = cache.prune_uv(dry_run=options.dry_run) if options.uv else None
    if options.json:
        print(json.dumps(_prune_doc(found.root, result, len(found.blobs), options.uv), indent=2))
    else:
        _prune_text(found.root, result, len(found.blobs))
    if options.uv:
        ui.say("would run: uv cache prune" if uv is None
               else f"uv cache prune: {_last_line(uv.stderr or uv.stdout)}")
    return 0


class _Removed(TypedDict):
    path: str
    size: int
    kind: Literal["blob", "partial", "folder"]
    sha256: str | None


class _Part(TypedDict):
    files: int
    bytes: int
    freed_bytes: int


class _Skipped(TypedDict):
    path: str
    files: int
    bytes: int
    why: str


class _PruneDoc(TypedDict):
    """``lockkit cache prune --json``."""

    cache_dir: str
    dry_run: bool
    removed: list[_Removed]
    files: int
    bytes: int
    freed_bytes: int
    parts: dict[str, _Part]
    kept: int
    uv: Literal["would run", "ran"] | None
    skipped: list[_Skipped]


def _prune_doc(root: Path, result: Pruned, blobs: int, uv: bool) -> _PruneDoc:
    removed: list[_Removed] = [{"path": e.path.relative_to(root).as_posix(), "size": e.size,
                "kind": "blob" if e.sha256 else "partial", "sha256": e.sha256}
               for e in result.removed]
    removed += [{"path": f"{p.name}/", "size": p.size, "kind": "folder", "sha256": None}
                for p in result.folders]
    kept = blobs - sum(1 for e in result.removed if e.sha256)
    return {"cache_dir": str(root), "dry_run": result.dry_run, "removed": removed,
            "files": result.files, "bytes": result.size, "freed_bytes": result.freed,
            "parts": {p.name: {"files": p.files, "bytes": p.size, "freed_bytes": p.freed}
                      for p in result.parts},
            "kept": kept, "uv": ("would run" if result.dry_run else "ran") if uv else None,
            "skipped": [{"path": f"{s.part.name}/", "files": s.part.files, "bytes": s.part.size,
                         "why": s.why} for s in result.skipped]}


def _prune_text(root: Path, result: Pruned, blobs: int) -> None:
    if result.dry_run:
        for e in result.removed:
            print(f"{e.path.relative_to(root).as_posix()}  {human_size(e.size)}")
        for p in result.folders:
            print(f"{p.name}/  {human_size(p.size)} ({p.files} file(s))")
    kept = blobs - sum(1 for e in result.removed if e.sha256)
    shared = result.size - result.freed
    verb, frees = ("would remove", "would free") if result.dry_run else ("removed", "freed")
    print(f"{shown_path(root)}: {verb} {result.files} file(s) ({human_size(result.size)}), "
          f"{frees} {human_size(result.freed)}"
          + (f" ({human_size(shared)} stays on disk: hard-linked elsewhere)" if shared
             else "") + f"; kept {kept}")
    for p in result.parts:  # where the bytes came from: blobs, partials, memo/, verify/...
        print(f"  {p.name + '/':<9}{p.files} file(s), {frees} {human_size(p.freed)}")
    for s in result.skipped:  # held by a running build or verify (lockkit.cache.inuse)
        print(f"  skipped {s.part.name}/ ({s.part.files} file(s), {human_size(s.part.size)}): "
              f"{s.why}; prune again once it ends")


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1] if lines else "done"
