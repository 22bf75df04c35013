"""A blob known by its stat identity is not read again; a change to it, ctime included, is
hashed again (lockkit/cache/identity.py).

What a get() read is counted by the kernel: ``rchar`` in ``/proc/self/io`` (bytes this
process read through read(2) and the like), not by lockkit's own word, and not by timing.
"""

from __future__ import annotations

import hashlib
import os
import sys
import time
from pathlib import Path

import pytest

from lockkit.cache.identity import KIND, SETTLE_NS
from lockkit.cache.memo import MemoStore
from lockkit.cache.store import Cache
from tests.support.files import rewrite_in_place

SIZE = 4 << 20
posix_only = pytest.mark.skipif(sys.platform == "win32", reason="POSIX owners, modes, ctime")
proc_io = pytest.mark.skipif(not Path("/proc/self/io").exists(),
                             reason="the kernel's count of bytes read (Linux /proc/self/io)")


def rchar() -> int:
    text = Path("/proc/self/io").read_text()
    return int(next(line.split()[1] for line in text.splitlines() if line.startswith("rchar:")))


def read_by_get(cache: Cache, sha256: str) -> tuple[Path | None, int]:
    """What *cache*.get() gave, and how many bytes the process read meanwhile."""
    before = rchar()
    got = cache.get(sha256, SIZE)
    return got, rchar() - before


def recorded_blob(root: Path) -> tuple[str, Path]:
    """A blob downloaded (written and hashed) by one run that recorded its identity."""
    data = os.urandom(SIZE)
    sha256 = hashlib.sha256(data).hexdigest()
    cache = Cache(root, by_identity=True)
    out, partial = cache.new_partial()
    with out:
        out.write(data)
    blob = cache.commit(partial, sha256)
    cache.remember()
    cache.release()
    assert MemoStore(root).get(KIND, sha256) is not None
    time.sleep(3 * SETTLE_NS / 1e9)  # past the tick of the rename's ctime (the module says)
    return sha256, blob


@posix_only
@proc_io
def test_an_unchanged_blob_is_known_by_its_identity_and_not_read_again(tmp_path):
    sha256, blob = recorded_blob(tmp_path / "cache")
    cache = Cache(tmp_path / "cache", by_identity=True)
    got, read = read_by_get(cache, sha256)
    assert got == blob
    assert read < SIZE // 16  # the record, not the blob
    cache.place(blob, tmp_path / "linked.whl", sha256)  # the inode checked: linked
    assert (tmp_path / "linked.whl").stat().st_ino == blob.stat().st_ino


@posix_only
@proc_io
def test_a_blob_rewritten_in_place_with_its_mtime_put_back_is_caught_by_its_ctime(tmp_path):
    sha256, blob = recorded_blob(tmp_path / "cache")
    before = blob.stat()
    rewrite_in_place(blob, b"\0" * SIZE)
    after = blob.stat()
    assert (after.st_dev, after.st_ino, after.st_size, after.st_mtime_ns, after.st_mode) == \
        (before.st_dev, before.st_ino, before.st_size, before.st_mtime_ns, before.st_mode)
    assert after.st_ctime_ns != before.st_ctime_ns  # the one thing a user cannot put back
    got, read = read_by_get(Cache(tmp_path / "cache", by_identity=True), sha256)
    assert got is None and not blob.exists()  # hashed, found wrong, evicted
    assert read >= SIZE


@posix_only
@proc_io
@pytest.mark.parametrize("folder", ["", "sha256", "sha256/xx", "memo", "memo/blob"])
def test_a_group_writable_cache_hashes_every_blob_again(tmp_path, folder):
    root = tmp_path / "cache"
    sha256, blob = recorded_blob(root)
    shared = root / folder.replace("xx", sha256[:2])
    os.chmod(shared, 0o770)
    for _ in range(2):
        cache = Cache(root, by_identity=True)
        got, read = read_by_get(cache, sha256)
        assert got == blob and read >= SIZE
        cache.remember()
        cache.release()


@posix_only
@proc_io
def test_a_cache_not_made_by_identity_hashes_every_blob_again(tmp_path):
    """``verify``'s and ``sync``'s fetches (lockkit.cli.common.lock_fetcher)."""
    sha256, blob = recorded_blob(tmp_path / "cache")
    got, read = read_by_get(Cache(tmp_path / "cache"), sha256)
    assert got == blob and read >= SIZE


@posix_only
@proc_io
def test_a_blob_linked_or_unlinked_by_someone_else_is_hashed_once_then_known(tmp_path):
    """A link count changed behind lockkit's back moves ctime: one hash, then known again."""
    root = tmp_path / "cache"
    sha256, blob = recorded_blob(root)
    os.link(blob, tmp_path / "by-hand.whl")
    time.sleep(3 * SETTLE_NS / 1e9)
    reads = []
    for _ in range(2):
        cache = Cache(root, by_identity=True)
        got, read = read_by_get(cache, sha256)
        assert got == blob
        reads.append(read)
        cache.remember()
        cache.release()
    assert reads[0] >= SIZE > SIZE // 16 > reads[1]


@posix_only
@proc_io
def test_a_record_of_another_identity_or_blob_is_not_believed(tmp_path):
    root = tmp_path / "cache"
    sha256, blob = recorded_blob(root)
    store = MemoStore(root)
    record = store.get(KIND, sha256)
    assert isinstance(record, dict)
    for planted in ({**record, "inode": record["inode"] + 1}, {**record, "sha256": "0" * 64},
                    {**record, "ctime_ns": str(record["ctime_ns"])}, [record]):
        assert store.put(KIND, sha256, planted)
        got, read = read_by_get(Cache(root, by_identity=True), sha256)
        assert got == blob and read >= SIZE
