"""The memo store's one trust rule (lockkit/cache/memo.py): private cache, private regular files."""

from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path

import pytest

from lockkit.cache import memo
from lockkit.cache.memo import MemoStore

posix_only = pytest.mark.skipif(sys.platform == "win32", reason="POSIX owners and modes")


def _store(tmp_path: Path) -> MemoStore:
    root = tmp_path / "cache"
    root.mkdir(mode=0o700)
    os.chmod(root, 0o700)
    return MemoStore(root)


def test_a_memo_put_in_a_private_cache_reads_back(tmp_path: Path) -> None:
    store = _store(tmp_path)
    key = store.key("compile", "inputs", 1)
    assert store.put("compile", key, {"lock": "abc", "packages": 3})
    assert store.get("compile", key) == {"lock": "abc", "packages": 3}
    written = store.root / "compile" / f"{key}.json"
    assert written.stat().st_mode & 0o777 == 0o600
    assert (store.root / "compile").stat().st_mode & 0o777 == 0o700


def test_keys_differ_by_kind_inputs_and_code_digest(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    store = _store(tmp_path)
    key = store.key("compile", "a")
    assert key != store.key("compile", "b") != store.key("tools", "a")
    monkeypatch.setattr(memo, "code_digest", lambda: "0" * 64)  # another build of lockkit
    assert store.key("compile", "a") != key


def test_the_code_digest_is_taken_once_for_threads_asking_at_once(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """compile --all asks for it from several threads while their uv runs: the files are
    read once, and every thread gets that digest."""
    reads: list[Path] = []
    real = Path.read_bytes

    def counted(path: Path) -> bytes:
        reads.append(path)
        return real(path)

    memo._code_digest.cache_clear()
    monkeypatch.setattr(Path, "read_bytes", counted)
    start = threading.Barrier(4)
    got: list[str] = []

    def ask() -> None:
        start.wait()
        got.append(memo.code_digest())

    threads = [threading.Thread(target=ask) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    sources = list(Path(memo.__file__).parents[1].rglob("*.py"))
    assert len(got) == 4 and len(set(got)) == 1
    assert sorted(reads) == sorted(sources)


def test_the_code_digest_covers_every_source_file() -> None:
    package = Path(memo.__file__).parent
    assert len(memo.code_digest()) == 64
    assert any(p.name == "memo.py" for p in package.rglob("*.py"))


@posix_only
def test_a_group_writable_cache_remembers_nothing(tmp_path: Path) -> None:
    store = _store(tmp_path)
    key = store.key("compile", "x")
    assert store.put("compile", key, 1)
    os.chmod(store.cache_root, 0o770)
    assert not store.trusted
    assert store.get("compile", key) is None  # not read back either
    assert not store.put("compile", store.key("compile", "y"), 2)
    assert not (store.root / "compile" / f"{store.key('compile', 'y')}.json").exists()


@posix_only
def test_a_group_writable_memo_file_or_folder_is_a_miss(tmp_path: Path) -> None:
    store = _store(tmp_path)
    key = store.key("tools", "x")
    store.put("tools", key, 1)
    path = store.root / "tools" / f"{key}.json"
    os.chmod(path, 0o620)
    assert store.get("tools", key) is None
    os.chmod(path, 0o600)
    os.chmod(path.parent, 0o770)
    assert store.get("tools", key) is None


@posix_only
@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                    reason="only root can give a file to another user")
def test_a_memo_owned_by_another_user_is_a_miss(tmp_path: Path) -> None:
    store = _store(tmp_path)
    key = store.key("sbom", "x")
    store.put("sbom", key, "text")
    os.chown(store.root / "sbom" / f"{key}.json", 65534, 65534)
    assert store.get("sbom", key) is None


@posix_only
def test_a_fifo_in_place_of_a_memo_is_a_miss_without_waiting(tmp_path: Path) -> None:
    store = _store(tmp_path)
    key = store.key("compile", "fifo")
    (store.root / "compile").mkdir(mode=0o700, parents=True)
    os.chmod(store.root, 0o700)
    os.mkfifo(store.root / "compile" / f"{key}.json", 0o600)
    got: list[object] = []
    reader = threading.Thread(target=lambda: got.append(store.get("compile", key)), daemon=True)
    reader.start()
    reader.join(5)
    assert not reader.is_alive(), "reading a FIFO memo blocked"
    assert got == [None]


@posix_only
def test_a_symlinked_memo_is_never_followed(tmp_path: Path) -> None:
    store = _store(tmp_path)
    key = store.key("compile", "link")
    store.put("compile", store.key("compile", "other"), 1)
    target = tmp_path / "elsewhere.json"
    target.write_text(json.dumps({"format": memo.FORMAT, "key": key, "value": "planted"}))
    os.chmod(target, 0o600)
    (store.root / "compile" / f"{key}.json").symlink_to(target)
    assert store.get("compile", key) is None


def test_a_memo_of_another_key_format_or_garbage_is_a_miss(tmp_path: Path) -> None:
    store = _store(tmp_path)
    key, other = store.key("plan", "a"), store.key("plan", "b")
    store.put("plan", other, "b's value")
    path = store.root / "plan" / f"{key}.json"
    os.replace(store.root / "plan" / f"{other}.json", path)  # b's memo under a's name
    assert store.get("plan", key) is None
    path.write_text(json.dumps({"format": memo.FORMAT + 1, "key": key, "value": 1}))
    os.chmod(path, 0o600)
    assert store.get("plan", key) is None
    path.write_bytes(b"\xff\xfe not json")
    assert store.get("plan", key) is None
    path.write_text("[" * 100_000)
    assert store.get("plan", key) is None


def test_a_memo_key_must_be_a_digest(tmp_path: Path) -> None:
    store = _store(tmp_path)
    with pytest.raises(ValueError):
        store.get("compile", "../../escape")
    with pytest.raises(ValueError):
        store.put("../x", "0" * 64, 1)


def test_a_memo_that_cannot_be_written_costs_only_the_shortcut(tmp_path: Path) -> None:
    store = _store(tmp_path)
    (store.root).write_text("a file where the memo folder goes")
    assert not store.put("compile", store.key("compile", "x"), 1)
    assert store.get("compile", store.key("compile", "x")) is None
