"""The memo store: what lockkit remembers between runs, and the one rule for trusting it.

A memo is one JSON value in ``<cache>/memo/<kind>/<key>.json``. Its key is the sha256 of
the memo format, the kind, lockkit's own code digest (every source file of the package,
so a change to the code under the same version is a new key) and the caller's inputs
(:meth:`MemoStore.key`). A memo saves work; it never decides a result on its own word.
The one exception is documented where it is made: a blob's identity record (kind ``blob``,
keyed by the blob's sha256 itself; :mod:`lockkit.cache.identity`), which spares hashing a
blob whose stat identity, ctime included, is the one it had when it was hashed.

**The trust rule.** A memo is read or written only when the cache folder and the memo
folders are owned by this user and writable by nobody else (as ssh's StrictModes treats
``~/.ssh``); under any other cache (a group-writable shared ``LOCKKIT_CACHE_DIR``)
nothing is remembered. A memo file is opened without following a link and without
blocking, and read only when it is a regular file of this user's, writable by nobody
else, under :data:`LIMIT` bytes. Anything else, a memo of another format or one that
does not parse included, is a miss. What a memo says is then checked by its caller as
fresh data: file names by the same rules as a fresh name, hashes against the lock.

Writes are atomic (a temp file in the same folder, then a rename) and private (0600);
they are not synced to disk, since a memo a crash cut short does not parse: a miss.
A memo that cannot be written costs only the next run's shortcut.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from functools import lru_cache
from pathlib import Path
from typing import Any

from lockkit._internal.private import (
    make_private_folder,
    private_folder,
    read_regular,
)

__all__ = ["FORMAT", "MemoStore", "code_digest"]

FORMAT = 1


_DIGEST_LOCK = threading.Lock()


def code_digest() -> str:
    """sha256 over lockkit's own source files (relative name and bytes, in name order),
    taken once per process: ``compile --all`` asks from several threads at once, while
    their uv runs, and the others wait for the first one's instead of reading every
    file again."""
    with _DIGEST_LOCK:
        return _code_digest()


@lru_cache(maxsize=1)
def _code_digest() -> str:
    package = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))  # lockkit/
    found = [os.path.relpath(os.path.join(folder, name), package).split(os.sep)
             for folder, _, names in os.walk(package) for name in names if name.endswith(".py")]
    digest = hashlib.sha256()
    for parts in sorted(found):  # in path order, part by part (as pathlib sorts)
        digest.update("/".join(parts).encode() + b"\0")
        digest.update(Path(package, *parts).read_bytes() + b"\0")
    return digest.hexdigest()


class MemoStore:
    """The memos under one cache folder (``<cache>/memo``)."""

    def __init__(self, cache_root: Path) -> None:
        self.cache_root = cache_root
        self.root = cache_root / "memo"

    @property
    def trusted(self) -> bool:
        """The cache folder, and the memo folder where it exists, are private to this user:
        only then is anything remembered or read back."""
        if not private_folder(self.cache_root):
            return False
        return not os.path.lexists(self.root) or private_folder(self.root)

    @staticmethod
    def key(kind: str, *parts: Any) -> str:
        """The memo key of *parts* (anything JSON can write, paths and sets as strings)."""
        blob = json.dumps([FORMAT, kind, code_digest(), parts], sort_keys=True, default=str)
        return hashlib.sha256(blob.encode()).hexdigest()

    def _path(self, kind: str, key: str) -> Path:
        if not kind.isidentifier() or len(key) != 64 or not all(c in "0123456789abcdef"
                                                                for c in key):
            raise ValueError(f"not a memo kind and key: {kind!r}, {key!r}")
        return self.root / kind / f"{key}.json"

    def get(self, kind: str, key: str) -> Any | None:
        """The memo's value, or None: no memo, an untrusted cache, or a file that is not a
        private regular file holding this format's JSON."""
        path = self._path(kind, key)
        if not self.trusted or not private_folder(path.parent):
            return None
        data = read_regular(path)
        if data is None:
            return None
        try:
            doc = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            return None
        if not isinstance(doc, dict) or doc.get("format") != FORMAT or doc.get("key") != key:
            return None
        return doc.get("value")

    def put(self, kind: str, key: str, value: Any) -> bool:
        """Remember *value* (atomically, 0600); False when the cache is not private to this
        user or cannot be written (the next run then does the work again). A cache folder
        that does not exist yet is made, 0700."""
        path = self._path(kind, key)
        make_private_folder(self.cache_root)
        if not self.trusted:
            return False
        try:
            for folder in (self.root, path.parent):
                if not os.path.lexists(folder):
                    os.mkdir(folder, 0o700)
                if not private_folder(folder):
                    return False
            text = json.dumps({"format": FORMAT, "key": key, "value": value},
                              sort_keys=True, default=str)
            import tempfile  # (and shutil, bz2, lzma, random: off a check that writes nothing)

            fd, tmp = tempfile.mkstemp(prefix=".memo-", suffix=".tmp", dir=path.parent)
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as fh:
                    fh.write(text)  # no fsync: a memo a crash truncates is a miss, not a lie
                os.replace(tmp, path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        except (OSError, ValueError):
            return False
        return True

    def forget(self, kind: str, key: str) -> None:
        try:
            self._path(kind, key).unlink()
        except OSError:
            pass
