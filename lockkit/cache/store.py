"""The content-addressed download cache: one read-only copy per sha256, shared by every
platform and project, filled only through a temp file and a rename, and never trusted on
its word: a blob is hashed again each time a build uses it, unless it is known by its
identity (:mod:`lockkit.cache.identity`).

Layout (:data:`lockkit.cache.layout.FOLDERS`; nothing else is ever made in it)::

    <root>/sha256/<first 2 hex>/<sha256>   one blob per file, read-only
    <root>/partial/<maker>-<random>.part   downloads under way, or left by dead runs
    <root>/partial/<maker>-<sha256>.part   an interrupted download's bytes, for the next
                                           build to resume (under a private cache only)
    <root>/memo/<kind>/<key>.json          what lockkit remembers (lockkit.cache.memo)
    <root>/verify/                         verify's installs, under a private cache only
    <root>/sha256.lock, <root>/verify.lock  who uses those parts (lockkit.cache.inuse)

The folder is made 0700 (:func:`lockkit.cache.layout.make_root`). Anything read back from
it is checked as if it came from the network: a blob is opened without following a link
(a FIFO, device or link in its place is removed, never read) and hashed through that
descriptor on every hit, so a blob rewritten in place is evicted and fetched again. The
one exception, git's: a :class:`Cache` made ``by_identity`` (``wheelhouse build``) under a
cache private to its user does not read again a blob whose device, inode, size, mtime and
ctime are those it had when it was hashed; a rewrite with its mtime put back still moves
its ctime. While a :class:`Cache` lives it holds ``sha256/`` shared
(:func:`lockkit.cache.inuse.use`): ``cache prune`` removes no blob a build may be about to
link. A wheel is hard-linked into a wheelhouse only when the linked
inode is the one just checked, this user's and writable by nobody else (no one but its
owner or root can change its bytes after the hash); anything else is copied, and hashed
as it is copied. ``cache info`` and ``cache prune`` are :mod:`lockkit.cache.housekeeping`'s.
"""

from __future__ import annotations

import hashlib
import logging
import os
import stat
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lockkit._internal.fs import umask
from lockkit._internal.leftovers import hold, owner_mark, owner_tag, release
from lockkit._internal.log import VERBOSE
from lockkit._internal.private import open_regular, owned_and_closed, private_folder
from lockkit.cache import inuse
from lockkit.cache.identity import Identities, Identity
from lockkit.cache.layout import blob_path, make_root, sweep_partials
from lockkit.errors import HashMismatch

__all__ = ["CHUNK", "Cache", "copy_file", "copy_hashing"]

CHUNK = 1 << 20
_log = logging.getLogger(__name__)


class Cache:
    """One copy per sha256, shared by every platform and project."""

    def __init__(self, root: Path, *, by_identity: bool = False) -> None:
        """*by_identity*: a blob whose identity is the one it had when it was hashed is
        not read again (:mod:`lockkit.cache.identity`; only under a private cache)."""
        self.root = root
        self.partial = root / "partial"
        self.identities = Identities(root, enabled=by_identity)
        # sha256 -> (st_dev, st_ino) of the inode this run checked for it: a blob hashed or
        # known by get(), or a download written and hashed through new_partial()'s file
        self._hashed: dict[str, tuple[int, int]] = {}
        self._written: dict[Path, tuple[int, int]] = {}  # partial file -> its inode
        # (st_dev, st_ino) -> (sha256, identity) of each copy place() wrote and hashed
        self._copies: dict[tuple[int, int], tuple[str, Identity]] = {}
        # the blob store held shared from here to release(): prune waits for no one, and
        # skips the blobs it would remove while a build holds them (lockkit.cache.inuse)
        self._held = inuse.use(root, "sha256")

    def release(self) -> None:
        """Let ``cache prune`` remove blobs again (also when this object is dropped)."""
        if self._held is not None:
            self._held.release()

    def path(self, sha256: str) -> Path:
        return blob_path(self.root, sha256)

    def get(self, sha256: str, size: int | None) -> Path | None:
        """The blob for *sha256*, hashed now (a cache is re-checked as the network is) or
        known by its identity: None when there is none, and a blob of another size or
        other bytes, or anything but a regular file in its place, is evicted (removed) and
        the caller fetches it again."""
        path = self.path(sha256)
        since = time.time_ns()
        opened = open_regular(path)
        if opened is None:
            if os.path.lexists(path):
                self.evict(path)  # a link, FIFO, device or folder where a blob goes
            return None
        fd, st = opened
        try:
            good = size is None or st.st_size == size
            if good:
                st = _read_only(fd, st)  # a blob from an older lockkit, or one made writable
                if self.identities.known(sha256, st):
                    _log.log(VERBOSE, "sha256 %s: the blob has the device, inode, size, mtime "
                             "and ctime it had when hashed: not read again", sha256[:16])
                else:
                    good = _hash_fd(fd) == sha256
                    if good:
                        self.identities.checked(sha256, st, since)
        finally:
            os.close(fd)
        if not good:
            self.evict(path)
            return None
        self._hashed[sha256] = (st.st_dev, st.st_ino)
        return path

    def holds(self, sha256: str, size: int | None) -> bool:
        """A blob for *sha256* is in place, of *size* when the lock gives one: what a fetch
        will most likely take from here. A look only (``os.stat``); :meth:`get` checks the
        bytes when the fetch comes to it."""
        try:
            st = os.stat(self.path(sha256), follow_symlinks=False)
        except OSError:
            return False
        return stat.S_ISREG(st.st_mode) and (size is None or st.st_size == size)

    def evict(self, path: Path) -> None:
        """Remove the name *path* (never following a link)."""
        try:
            if os.name == "nt":
                os.chmod(path, 0o644)  # Windows refuses to remove a read-only file
            if os.path.isdir(path) and not os.path.islink(path):
                os.rmdir(path)  # an empty folder in a blob's place; a full one stays
            else:
                path.unlink()
        except OSError:
            pass

    def new_partial(self) -> tuple[Any, Path]:
        """An open file for a download under way (its bytes are hashed by the writer)."""
        make_root(self.root)
        self.partial.mkdir(exist_ok=True)
        fd, name = tempfile.mkstemp(dir=self.partial, prefix=owner_tag(), suffix=".part")
        hold(name)
        st = os.fstat(fd)
        self._written[Path(name)] = (st.st_dev, st.st_ino)
        return os.fdopen(fd, "wb"), Path(name)

    def private(self) -> bool:
        """The cache and its partial folder are this user's and nobody else can write
        them: only then are interrupted downloads kept (:meth:`keep`)."""
        return private_folder(self.root) and private_folder(self.partial)

    def keep(self, partial: Path, sha256: str, size: int) -> bool:
        """Keep the first *size* bytes of the partial file of *sha256* for a later build
        (``<maker>-<sha256>.part``: this process's mark, :func:`owner_mark`); False,
        nothing kept, when there is nothing to keep or the cache is not private."""
        if size <= 0 or not self.private():
            return False
        kept = self.partial / f"{owner_mark()}-{sha256}.part"
        try:
            os.truncate(partial, size)
            os.replace(partial, kept)
        except OSError:
            return False
        release(partial)
        self._written.pop(partial, None)
        return True

    def resume(self, sha256: str) -> tuple[Any, Path, int] | None:
        """A partial file of *sha256* that an earlier build kept, taken over (renamed to
        this run's own name, so no other build takes it too): the open file, its name
        and its size. Only a regular file of this user's that nobody else can write,
        under a private cache; its bytes are the caller's to hash again."""
        if not self.private():
            return None
        for found in sorted(self.partial.glob(f"*-{sha256}.part")):
            opened = open_regular(found)
            if opened is None:
                continue
            os.close(opened[0])
            if not owned_and_closed(opened[1]):
                continue
            fd, name = tempfile.mkstemp(dir=self.partial, prefix=owner_tag(), suffix=".part")
            os.close(fd)
            try:
                os.replace(found, name)  # one build wins; the others find it gone
                fd = os.open(name, os.O_RDWR | getattr(os, "O_NOFOLLOW", 0))
            except OSError:
                Path(name).unlink(missing_ok=True)
                continue
            st = os.fstat(fd)
            if (st.st_dev, st.st_ino) != (opened[1].st_dev, opened[1].st_ino):
                os.close(fd)
                Path(name).unlink(missing_ok=True)
                continue
            hold(name)
            self._written[Path(name)] = (st.st_dev, st.st_ino)
            return os.fdopen(fd, "r+b"), Path(name), st.st_size
        return None

    def commit(self, partial: Path, sha256: str) -> Path:
        """Give the partial file, whose bytes the caller hashed to *sha256* as it wrote
        them, its name in the cache."""
        final = self.path(sha256)
        final.parent.mkdir(parents=True, exist_ok=True)
        written = self._written.pop(partial, None)
        opened = open_regular(partial)
        if opened is not None:
            _read_only(*opened)  # read-only from the moment it has its name
            os.close(opened[0])
        try:
            os.replace(partial, final)  # same content under the same name: a race is harmless
        except PermissionError:  # Windows: a read-only file cannot be replaced
            self.evict(final)
            os.replace(partial, final)
        release(partial)
        if written is not None:
            self._hashed[sha256] = written
            st = os.lstat(final)
            if (st.st_dev, st.st_ino) == written:
                self.identities.checked(sha256, st)
        return final

    def place(self, blob: Path, dest: Path, sha256: str) -> None:
        """Put the cache's *blob* for *sha256* at *dest*, as the bytes that hash to it.

        A hard link, as uv links its cache into venvs (a warm build moves no bytes), when
        the linked inode is the one this run hashed to *sha256* (:meth:`get`,
        :meth:`commit`), this user's and writable by nobody else: then no one but its
        owner or root can change its bytes after the hash. Otherwise (another user's blob
        in a shared cache, links refused, another file system) a copy, hashed as it is
        written; a copy that is not *sha256* is removed, the blob evicted, and the file
        named in a :class:`HashMismatch`. A link has the blob's mode (0444 less the
        umask); a copy gets ``0666 & ~umask``."""
        hashed = self._hashed.get(sha256)
        if hashed is not None and blob == self.path(sha256):
            try:
                with self.identities.own_change([sha256]):  # a link moves the blob's ctime
                    os.link(blob, dest)
            except OSError:
                pass
            else:
                st = os.lstat(dest)
                if (st.st_dev, st.st_ino) == hashed and stat.S_ISREG(st.st_mode) \
                        and owned_and_closed(st):
                    return
                dest.unlink()
        digest = copy_file(blob, dest)
        if digest != sha256:
            dest.unlink(missing_ok=True)
            self.evict(blob)
            raise HashMismatch(f"{dest.name}: the cache's copy changed while it was placed "
                               f"(sha256 {digest}, expected {sha256}); it was removed from "
                               "the cache", hint="run the build again: it fetches the file anew")
        st = os.lstat(dest)
        self._copies[(st.st_dev, st.st_ino)] = (sha256, Identity.of(st))

    def vouched(self) -> dict[tuple[int, int], tuple[str, Identity]]:
        """(st_dev, st_ino) -> (sha256, identity) of every file this run knows the bytes
        of and has not seen change since: the blobs it checked (by_identity only), with
        its own links and unlinks taken in, and the copies :meth:`place` wrote. A file
        with that identity now is that sha256 (:mod:`lockkit.wheelhouse.current`)."""
        found = {(i.device, i.inode): (sha, i) for sha, i in self.identities.seen().items()}
        return {**found, **self._copies}

    def remember(self) -> None:
        """Record the identities of the blobs checked this run (by_identity only)."""
        self.identities.remember()

    def sweep(self) -> None:
        """Remove partial files left by runs that died long ago."""
        sweep_partials(self.root)


def copy_file(src: Path, dest: Path) -> str:
    """Copy the regular file *src* (never a link, FIFO or device) to the new file *dest*;
    return the sha256 of what was written."""
    opened = open_regular(src)
    if opened is None:
        raise FileNotFoundError(2, "not a regular file", str(src))
    with os.fdopen(opened[0], "rb") as fin, dest.open("xb") as fout:
        return copy_hashing(fin, fout, lambda n: None)


def copy_hashing(src: Any, dst: Any, on_bytes: Callable[[int], None]) -> str:
    digest = hashlib.sha256()
    for block in iter(lambda: src.read(CHUNK), b""):
        dst.write(block)
        digest.update(block)
        on_bytes(len(block))
    return digest.hexdigest()


def _hash_fd(fd: int) -> str:
    """The sha256 of the open file *fd* from its start (hashlib releases the GIL on these
    blocks: a build hashes its blobs on several threads at once)."""
    os.lseek(fd, 0, os.SEEK_SET)
    digest = hashlib.sha256()
    while block := os.read(fd, CHUNK):
        digest.update(block)
    return digest.hexdigest()


def _read_only(fd: int, st: os.stat_result) -> os.stat_result:
    """Make the open blob read-only for everyone, readable by whom the umask allows (a
    link into a wheelhouse shares this mode); only this user's own blobs, through their
    descriptor (a name could be swapped for a link meanwhile), and only when it differs.
    Returns its stat after the change (a chmod moves its ctime)."""
    mode = 0o444 & ~umask()
    if stat.S_IMODE(st.st_mode) == mode or (hasattr(os, "geteuid") and
                                            st.st_uid != os.geteuid()):
        return st
    try:
        os.fchmod(fd, mode)
        return os.fstat(fd)
    except (OSError, AttributeError):  # Windows has no fchmod before 3.13
        return st
