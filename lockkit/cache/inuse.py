"""Which parts of the cache a running command uses, so that ``cache prune`` leaves them be.

A run that relies on a part of the cache staying put holds a *shared* ``flock`` on that
part's lock file for as long as it relies on it; ``cache prune`` takes an *exclusive* one,
without waiting, before it removes anything of the part, and skips the part (naming it and
who uses it) when a run holds it. The parts with a lock (:data:`PARTS`):

- ``sha256/``: a wheelhouse build (and the fetch of ``verify``/``sync`` without a
  wheelhouse) between hashing a blob and linking it into its wheelhouse; prune removes
  the blobs no lock references, which another project's build may be about to link;
- ``verify/``: a ``verify`` from its venv step to its end (its venv, uv's cache that the
  venv's files are linked from, its bytecode).

The lock file is ``<cache>/<part>.lock``, beside the folder and never inside it: prune
removes the folder, never the lock file, so every run locks the same inode, and a run
that waited on prune's lock makes the folder again after it. Users wait for prune (it
holds its lock only while it removes); prune never waits for users. Where ``fcntl`` does
not exist (Windows) nothing is locked, as before.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from lockkit.cache.layout import make_root

__all__ = ["PARTS", "USERS", "Held", "lock_name", "take", "use"]

Part = Literal["sha256", "verify"]
PARTS: tuple[Part, ...] = ("sha256", "verify")
# who holds each part's shared lock, as prune names them when it skips a part
USERS: dict[str, str] = {
    "sha256": "a running wheelhouse build (or a verify or sync fetching the lock's files)",
    "verify": "a running verify",
}


def lock_name(part: str) -> str:
    """``<part>.lock``: the name of the part's lock file at the top of the cache."""
    return f"{part}.lock"


class Held:
    """An open lock file whose ``flock`` lasts until :meth:`release` (or the process ends:
    the kernel drops a dead process's locks, so no run can leave a part locked)."""

    __slots__ = ("fd",)
    _close = staticmethod(os.close)  # bound here: __del__ may run as the interpreter exits

    def __init__(self, fd: int | None) -> None:
        self.fd = fd  # None: nothing to release (no flock on this system)

    def release(self) -> None:
        if self.fd is not None:
            self._close(self.fd)  # closing the descriptor releases its flock
            self.fd = None

    def __del__(self) -> None:  # a holder dropped without release(), as a file object is
        self.release()


def use(root: Path, part: Part) -> Held | None:
    """Hold *part* of the cache at *root* shared, waiting while a prune removes it; None
    where nothing can be locked (no ``fcntl``, a cache this user cannot write)."""
    return _lock(root, part, exclusive=False)


def take(root: Path, part: Part) -> Held | None:
    """Hold *part* exclusively, for removing it, without waiting; None while a run uses
    it (or its lock file cannot be opened: then it is not known to be free)."""
    return _lock(root, part, exclusive=True)


def _lock(root: Path, part: Part, *, exclusive: bool) -> Held | None:
    try:
        import fcntl
    except ImportError:  # Windows: no flock; a prune removes what it removes, as before
        return Held(None) if exclusive else None
    try:
        make_root(root)
        fd = os.open(root / lock_name(part), os.O_RDONLY | os.O_CREAT | os.O_CLOEXEC
                     | getattr(os, "O_NOFOLLOW", 0), 0o644)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB if exclusive else fcntl.LOCK_SH)
    except OSError:
        os.close(fd)
        return None
    return Held(fd)
