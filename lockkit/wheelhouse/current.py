"""A wheelhouse folder still what a build would write again: the "nothing new" path.

After ``wheelhouse build`` writes a folder it records (:func:`remember`) what decided it
(:func:`build_key`: lockkit's version, the lock's sha256 and name, the platform's
definition, and ``tools/``'s resolution key when it has one) and every file of the folder
with its sha256, mode and stat identity (device, inode, size, ``mtime_ns``,
``ctime_ns``), in the memo store of its cache (kind ``wheelhouse``, keyed by the folder's
path and lockkit's code digest). The next build of the same folder asks :func:`check` first. When
the record's key is this build's, every recorded file is there and nothing else is, and
each file still has the identity it was recorded with, the folder is what the build
would write again (same lock, same bytes): the build stops there, having downloaded,
rendered and imported nothing more. The lockkit wheel in ``tools/`` and its pins are part
of the record like any other file: the key holds their resolution key, which holds
lockkit's own code.

**When an identity is believed.** As the cache believes a blob's
(:mod:`lockkit.cache.identity`): only under a private cache (the memo store's trust rule),
for a file of this user's that nobody else can write, in folders of this user's that
nobody else can write. ``ctime`` cannot be put back, so a file touched, chmod'ed, linked
or unlinked elsewhere, or rewritten with its mtime put back, shows a new identity.

**When it is not.** A folder or file that others can write, or a file whose mode is not
the one the build gave it, is not checked here: the normal build runs (and writes the
folder again with the umask's modes). A file whose identity moved is believed only for
what is checked now: a wheel that is still the cache's blob, which the cache knows by its
own identity record (another wheelhouse linking the same blob moves its ctime, and the
cache recorded that), or any file hashed again and found to be its recorded sha256 (the
line says how many). A file that differs, a file missing or extra, a link, FIFO or
device, another lock, platform definition, lockkit or ``tools/`` resolution, a lock
showing a ``${VAR}`` value the SBOM would conceal: the normal build runs, and records the
folder it writes. As for blobs,
nothing is recorded where ``ctime`` tells too little: on Windows (its ``st_ctime`` is the
creation time), or where times are whole seconds. What lockkit itself just wrote is
recorded as it is right after the build (the one tick of the file system's clock
:mod:`lockkit.cache.identity` describes); a file hashed again by a check is recorded only
once its ``ctime`` has settled.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import stat
import sys
import time
from pathlib import Path
from typing import Any

from lockkit import __version__
from lockkit._internal.log import VERBOSE
from lockkit._internal.private import open_regular, owned_and_closed, private_folder
from lockkit.cache.identity import SETTLE_NS, Identities, Identity
from lockkit.cache.layout import blob_path
from lockkit.cache.memo import MemoStore

__all__ = ["KIND", "Checked", "build_key", "check", "remember"]

KIND = "wheelhouse"
_CHUNK = 1 << 20
_SECOND = 1_000_000_000
_log = logging.getLogger(__name__)


class Checked:
    """An up-to-date folder: its wheels, its files, and how many were hashed again. (A
    plain class, as :class:`lockkit._internal.outdir.Made`: this path stays light.)"""

    __slots__ = ("files", "hashed", "wheels")

    def __init__(self, *, wheels: int, files: int, hashed: int) -> None:
        self.wheels, self.files, self.hashed = wheels, files, hashed


def build_key(lock_sha256: str, lock_text: str, lock_name: str, platform_fingerprint: str,
              *, tools_key: str | None, concealed: tuple[tuple[str, str], ...]) -> str | None:
    """The sha256 of what decides a wheelhouse's bytes, or None when no record may stand
    for them. *tools_key*: None without ``tools/``, else the resolution key of its pins
    (:func:`lockkit.wheelhouse.ownwheel.key_of`: everything that decides them). *concealed*
    (the project's ``${VAR}`` values, in every form) showing in the lock's text would make
    the SBOM's text depend on the environment."""
    if any(value in lock_text for value, _ in concealed):
        return None
    decides = [__version__, lock_sha256, lock_name, platform_fingerprint, tools_key]
    return hashlib.sha256(json.dumps(decides).encode()).hexdigest()


def _memo_key(folder: Path) -> str:
    return MemoStore.key(KIND, str(folder))


def check(cache_root: Path, folder: Path, key: str) -> Checked | None:
    """The folder *folder* as the build of *key* last recorded it, checked now (see the
    module); None, with the reason at ``-v``, when the normal build must run."""
    memo = MemoStore(cache_root)
    record = None if sys.platform == "win32" else _parse(memo.get(KIND, _memo_key(folder)),
                                                          folder)
    if record is None:
        return _no(folder, "no record of a build into it in this cache")
    if record["build"] != key:
        return _no(folder, "built from another lock, platform, lockkit or tools/ choice")
    found = _listing(folder)
    if found is None:
        return _no(folder, "a folder in it that others can write, or a link, FIFO or device")
    files = {rel: list(row) for rel, row in record["files"].items()}
    if set(found) != set(files):
        moved = sorted(set(found) ^ set(files))
        return _no(folder, f"{moved[0]} is {'extra' if moved[0] in found else 'missing'}")
    hashed, identities = 0, Identities(cache_root, enabled=True)
    for rel, (sha256, mode, *ident) in sorted(files.items()):
        st = found[rel]
        if not owned_and_closed(st) or stat.S_IMODE(st.st_mode) != mode:
            return _no(folder, f"{rel}: its mode is not the one the build gave it")
        if Identity.of(st) == Identity(*ident):
            continue
        if _cache_knows(identities, cache_root, sha256, st):
            files[rel] = [sha256, mode, *Identity.of(st)]
            continue
        since = time.time_ns()
        now = _hashed(folder / rel)
        if now is None or now[0] != sha256:
            return _no(folder, f"{rel} changed")
        hashed += 1
        files[rel] = [sha256, mode, *_settled(now[1], since)]
    if files != record["files"]:
        memo.put(KIND, _memo_key(folder), _value(folder, key, record["wheels"], files))
    return Checked(wheels=record["wheels"], files=len(files), hashed=hashed)


def remember(cache_root: Path, folder: Path, key: str | None, *,
             vouched: dict[tuple[int, int], tuple[str, Identity]]) -> bool:
    """Record *folder*, just written by the build of *key*: each wheel whose inode this
    run checked (*vouched*: (device, inode) -> (sha256, its identity now), from
    :meth:`lockkit.cache.store.Cache.vouched`) and every other file hashed now against
    the manifest's sha256. Anything else (a file the manifest does not name, a wheel this
    run did not check) and no record is kept; nor is one for a None *key*."""
    memo = MemoStore(cache_root)
    if not memo.trusted:
        return False
    record = None if key is None or sys.platform == "win32" else _record_of(folder, vouched)
    if key is None or record is None:
        memo.forget(KIND, _memo_key(folder))
        return False
    wheels, files = record
    if any(not row[-1] % _SECOND for row in files.values()):
        memo.forget(KIND, _memo_key(folder))  # times in whole seconds: ctime tells too little
        return False
    return memo.put(KIND, _memo_key(folder), _value(folder, key, wheels, files))


def _record_of(folder: Path, vouched: dict[tuple[int, int], tuple[str, Identity]],
               ) -> tuple[int, dict[str, list[Any]]] | None:
    found = _listing(folder)
    opened = open_regular(folder / "manifest.json")
    if found is None or opened is None:
        return None
    fd, st = opened
    with os.fdopen(fd, "rb") as fh:
        raw = fh.read()
    try:
        entries = {e["path"]: e for e in json.loads(raw)["files"]}
    except (ValueError, KeyError, TypeError):
        return None
    files = {"manifest.json": [hashlib.sha256(raw).hexdigest(), stat.S_IMODE(st.st_mode),
                               *Identity.of(st)]}
    wheels = 0
    for rel, st in found.items():
        entry = entries.get(rel)
        if rel == "manifest.json":
            continue
        if entry is None:
            return None
        if entry.get("kind") in ("wheel", "tool") and rel.endswith(".whl"):
            wheels += entry.get("kind") == "wheel"
            sha, ident = vouched.get((st.st_dev, st.st_ino), ("", None))
            if sha != entry["sha256"] or ident != Identity.of(st):
                return None
            files[rel] = [sha, stat.S_IMODE(st.st_mode), *ident]
        else:
            now = _hashed(folder / rel)
            if now is None or now[0] != entry["sha256"]:
                return None
            files[rel] = [now[0], stat.S_IMODE(st.st_mode), *now[1]]
    return wheels, files


def _value(folder: Path, key: str, wheels: int, files: dict[str, list[Any]]) -> dict[str, Any]:
    return {"folder": str(folder), "build": key, "wheels": wheels, "files": files}


def _parse(value: Any, folder: Path) -> dict[str, Any] | None:
    """A record of *folder*, every file's sha256 and identity of the right types."""
    if not isinstance(value, dict) or value.get("folder") != str(folder) or \
            not isinstance(value.get("build"), str) or type(value.get("wheels")) is not int:
        return None
    files = value.get("files")
    if not isinstance(files, dict):
        return None
    for row in files.values():
        if not isinstance(row, list) or len(row) != 2 + len(Identity._fields) or \
                not isinstance(row[0], str) or not all(type(n) is int for n in row[1:]):
            return None
    return value


def _listing(folder: Path) -> dict[str, os.stat_result] | None:
    """Every file under *folder* by its path in it, as ``lstat`` sees it; None when a
    folder in it (itself included) is not this user's alone, or anything in it is not a
    regular file or a folder."""
    found: dict[str, os.stat_result] = {}
    stack = [("", str(folder))]
    while stack:
        prefix, path = stack.pop()
        if not private_folder(Path(path)):
            return None
        try:
            with os.scandir(path) as it:
                entries = list(it)
        except OSError:
            return None
        for entry in entries:
            st = entry.stat(follow_symlinks=False)
            if stat.S_ISDIR(st.st_mode):
                stack.append((prefix + entry.name + "/", entry.path))
            elif stat.S_ISREG(st.st_mode):
                found[prefix + entry.name] = st
            else:
                return None
    return found


def _cache_knows(identities: Identities, cache_root: Path, sha256: str,
                 st: os.stat_result) -> bool:
    """The file is the cache's blob for *sha256*, whose own identity record holds."""
    try:
        blob = os.lstat(blob_path(cache_root, sha256))
    except OSError:
        return False
    return (blob.st_dev, blob.st_ino) == (st.st_dev, st.st_ino) and \
        identities.known(sha256, st)


def _hashed(path: Path) -> tuple[str, Identity] | None:
    """The sha256 of the regular file *path* (never a link, FIFO or device) and its
    identity as ``fstat`` saw it before the read."""
    opened = open_regular(path)
    if opened is None:
        return None
    fd, st = opened
    try:
        digest = hashlib.sha256()
        while block := os.read(fd, _CHUNK):
            digest.update(block)
    finally:
        os.close(fd)
    return digest.hexdigest(), Identity.of(st)


def _settled(ident: Identity, since: int) -> Identity:
    """*ident*, or one no file has (so the next check hashes again) when its ctime is too
    recent to rule out a rewrite in the same tick (lockkit.cache.identity.SETTLE_NS)."""
    return ident if ident.ctime_ns < since - SETTLE_NS else ident._replace(ctime_ns=-1)


def _no(folder: Path, why: str) -> Checked | None:
    """None (the normal build runs), *why* said at ``-v``."""
    _log.log(VERBOSE, "%s: rebuilding: %s", folder, why)
    return None
