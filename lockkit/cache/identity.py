"""A blob known by its stat identity: the one exception to "every cache hit is hashed".

In a cache private to its user, a blob once hashed to its sha256 is remembered with its
identity: device, inode, size, ``mtime_ns`` and ``ctime_ns``. While that identity is
unchanged the blob is not read again, as git's index trusts a file whose stat data it
recorded. A user can put ``mtime`` back but not ``ctime``: a blob rewritten in place
(``rsync --inplace -t``, a ``chmod``, write, ``touch -d`` by hand) has a new ``ctime``, and
is hashed again, then evicted when its bytes are not the sha256's.

**Links move ctime too.** A hard link into a wheelhouse, or the removal of an old
wheelhouse, changes the inode's link count and so its ``ctime``. lockkit's own links and
unlinks (:meth:`Identities.own_change`: :meth:`lockkit.cache.store.Cache.place` and the swap
of a rebuilt wheelhouse) are taken into the identity when nothing else moved: the blob
stat'ed right before had the identity checked in this run, and right after has the same
device, inode, size and mtime. Anyone else's link or unlink (a wheelhouse removed by hand)
costs one more hash.

**When it is not taken.** A write in the same tick of the file system's clock as the
change that set ``ctime`` could leave ``ctime`` as it was (git's "racy clean" files). A
blob hashed now is therefore recorded only when its ``ctime`` was :data:`SETTLE_NS` old
before its stat; what lockkit itself changed (a download's rename, a link, an unlink) is
recorded as it is right after, which leaves that one tick (at most 10 ms on Linux, none
where the kernel's timestamps are fine-grained once read) in which a rewrite with its
mtime and mode put back would go unseen. Nothing is recorded on a file system whose times
are whole seconds, nor on Windows (its ``st_ctime`` is the creation time).

**Where it lives, and when it is believed.** In the memo store
(:mod:`lockkit.cache.memo`: kind ``blob``, keyed by the blob's sha256 itself), under its
trust rule; read and written only when the folder chain of the blob (the cache, ``sha256/``
and ``sha256/<xx>/``) is this user's and writable by nobody else as well, and the blob is
this user's, writable by nobody else. Under a group-writable cache, or where the caller
asked for it (``verify``'s and ``sync``'s fetches), every blob is hashed on every hit.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

from lockkit._internal.private import owned_and_closed, private_folder
from lockkit.cache.layout import blob_path
from lockkit.cache.memo import MemoStore

__all__ = ["KIND", "SETTLE_NS", "Identities", "Identity"]

KIND = "blob"
# Longer than one tick of a file system's clock (Linux: a jiffy, 10 ms at HZ=100): a blob
# whose ctime is older than this before its stat cannot be changed again with that ctime
SETTLE_NS = 20_000_000
_SECOND = 1_000_000_000


class Identity(NamedTuple):
    device: int
    inode: int
    size: int
    mtime_ns: int
    ctime_ns: int

    @classmethod
    def of(cls, st: os.stat_result) -> Identity:
        return cls(st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


class Identities:
    """The identities of one cache's blobs: read from their records, checked and moved
    along this run, and written back by :meth:`remember`."""

    def __init__(self, root: Path, *, enabled: bool) -> None:
        self.root = root
        self.enabled = enabled and sys.platform != "win32"
        self._memo = MemoStore(root)
        self._seen: dict[str, Identity] = {}    # the identity each checked blob has now
        self._stored: dict[str, Identity] = {}  # what its record says

    def known(self, sha256: str, st: os.stat_result) -> bool:
        """The blob's record says it hashed to *sha256* with the identity *st* has."""
        if not self.enabled or not owned_and_closed(st) or not self._private(sha256):
            return False
        stored = _parse(self._memo.get(KIND, sha256), sha256)
        if stored is None:
            return False
        self._stored[sha256] = stored
        if stored != Identity.of(st):
            return False
        self._seen[sha256] = stored
        return True

    def checked(self, sha256: str, st: os.stat_result, since: int | None = None) -> None:
        """The blob with *st* has the bytes of *sha256*: hashed, *st* taken at *since*
        (``time.time_ns()``) before the hash; or written and renamed by lockkit (None)."""
        if not self.enabled or not owned_and_closed(st) or not st.st_ctime_ns % _SECOND:
            return
        if since is None or st.st_ctime_ns < since - SETTLE_NS:
            self._seen[sha256] = Identity.of(st)

    @contextmanager
    def own_change(self, shas: Iterable[str] | None = None) -> Iterator[None]:
        """Around lockkit's own link or unlink of the blobs *shas* (None: all checked this
        run): a ``ctime`` moved by it alone is taken into their identity; a blob that had
        another identity before, or another inode, size or mtime after, is forgotten."""
        targets = [s for s in (self._seen if shas is None else shas) if s in self._seen]
        before = {s: self._now(s) for s in targets}
        try:
            yield
        finally:
            for s in targets:
                after, checked = self._now(s), self._seen.get(s)
                if after is not None and checked is not None and before[s] == checked \
                        and after[:4] == checked[:4]:
                    self._seen[s] = after
                else:
                    self._seen.pop(s, None)

    def seen(self) -> dict[str, Identity]:
        """The identity each blob checked this run has now, as far as this run knows
        (its own links and unlinks taken in): sha256 -> identity."""
        return dict(self._seen)

    def remember(self) -> None:
        """Write the records that changed this run; a blob changed since it was checked
        is not recorded."""
        for sha256, ident in list(self._seen.items()):
            if self._stored.get(sha256) != ident and self._now(sha256) == ident and \
                    self._private(sha256) and \
                    self._memo.put(KIND, sha256, dict(sha256=sha256, **ident._asdict())):
                self._stored[sha256] = ident

    def _now(self, sha256: str) -> Identity | None:
        try:
            return Identity.of(os.lstat(blob_path(self.root, sha256)))
        except OSError:
            return None

    def _private(self, sha256: str) -> bool:
        """The blob's folder chain is this user's, writable by nobody else."""
        blob = blob_path(self.root, sha256)
        return all(private_folder(f) for f in (self.root, blob.parent.parent, blob.parent))


def _parse(value: Any, sha256: str) -> Identity | None:
    """A record's identity, or None when it is not a record of *sha256*."""
    if not isinstance(value, dict) or value.get("sha256") != sha256:
        return None
    fields = [value.get(name) for name in Identity._fields]
    ints = [f for f in fields if type(f) is int]
    return Identity(*ints) if len(ints) == len(fields) else None
