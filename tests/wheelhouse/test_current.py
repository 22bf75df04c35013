"""``wheelhouse build`` into the folder it built, nothing new: up to date, checked by the
identities of its files (lockkit/wheelhouse/current.py); anything changed rebuilds.

Every test runs the real command line on a real project compiled against the loopback
indexes. What a check read is counted by the kernel (``rchar`` in ``/proc/self/io``).
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lockkit import __version__
from lockkit._internal.fs import umask
from lockkit.cache.identity import SETTLE_NS
from lockkit.cache.memo import MemoStore
from lockkit.cli import main
from lockkit.platforms.folders import shipped_dir
from lockkit.wheelhouse.current import KIND, build_key
from tests.support.files import rewrite_in_place
from tests.support.wheelhouse import compiled, wheel_requests

posix_only = pytest.mark.skipif(sys.platform == "win32", reason="POSIX owners, modes, ctime")
pytestmark = posix_only
UP_TO_DATE = "linux-cpu: up to date, 3 wheels, checked by identity"


def rchar() -> int:
    text = Path("/proc/self/io").read_text()
    return int(next(line.split()[1] for line in text.splitlines() if line.startswith("rchar:")))


def build(project: Path, tmp_path: Path, *extra: str) -> int:
    return main(["wheelhouse", "build", "--project", str(project), "--platform", "linux-cpu",
                 "--cache-dir", str(tmp_path / "cache"), "--no-tools", *extra])


@pytest.fixture
def built(project, indexes, tmp_path, capsys) -> Path:
    """A project whose wheelhouse was built once; its folder, the requests forgotten."""
    compiled(project, indexes)
    assert build(project, tmp_path) == 0
    indexes.forget_requests()
    capsys.readouterr()
    time.sleep(3 * SETTLE_NS / 1e9)  # past the tick of the files' last change
    return project / "wheelhouse" / "linux-cpu"


def files_of(folder: Path) -> dict[str, tuple[int, bytes]]:
    """Every file of *folder*: its inode and bytes."""
    return {p.relative_to(folder).as_posix(): (p.stat().st_ino, p.read_bytes())
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.skipif(not Path("/proc/self/io").exists(), reason="Linux /proc/self/io")
def test_nothing_new_is_up_to_date_by_identity_reading_no_wheel(built, indexes, project,
                                                                tmp_path, capsys):
    """The same check twice, the second after a touch of the largest wheel: only then are
    its bytes read (the kernel's count), and the line says so."""
    before = files_of(built)
    read = rchar()
    assert build(project, tmp_path) == 0
    read = rchar() - read
    err = capsys.readouterr().err
    assert f"{UP_TO_DATE} ({len(before)} files) -> " in err
    assert "downloaded" not in err  # no build ran
    assert wheel_requests(indexes) == []
    assert files_of(built) == before  # not one file rewritten: the same inodes and bytes
    wheel = max(built.glob("*.whl"), key=lambda p: p.stat().st_size)
    os.utime(wheel)
    again = rchar()
    assert build(project, tmp_path) == 0
    again = rchar() - again
    assert "1 whose identity moved hashed again" in capsys.readouterr().err
    assert again - read >= wheel.stat().st_size


def test_nothing_new_imports_none_of_the_build(built, project, tmp_path):
    """The up-to-date path, a whole process: none of the build's, the SBOM's or the
    network's modules is imported (the lock is read, as the stale-lock warning needs it,
    and not validated as PEP 751 again: the folder's record is keyed by its sha256 and by
    lockkit's code, which validated those bytes when it built the folder)."""
    argv = [sys.executable, "-X", "importtime", "-m", "lockkit", "wheelhouse", "build",
            "--project", str(project), "--platform", "linux-cpu", "--cache-dir",
            str(tmp_path / "cache"), "--no-tools"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert UP_TO_DATE in done.stderr
    imported = {line.split("|")[-1].strip() for line in done.stderr.splitlines()
                if line.startswith("import time:")}
    assert "lockkit.wheelhouse.current" in imported  # the list is the one asked for
    for heavy in ("cyclonedx", "lockkit.wheelhouse.build", "lockkit.wheelhouse.sbom",
                  "httpx", "lockkit.download.fetch", "lockkit.cache.store", "rich",
                  "packaging.pylock"):
        assert heavy not in imported, heavy


def test_an_up_to_date_folder_of_a_stale_lock_still_warns(built, project, tmp_path, capsys):
    """Up to date means: what the lock gives. A lock stale against its inputs is said, as
    every build says it."""
    with open(project / "requirements.in", "a") as fh:
        fh.write("filelock\n")
    assert build(project, tmp_path) == 0
    err = capsys.readouterr().err
    assert f"{UP_TO_DATE} (11 files) -> " in err
    assert "warning: pylock.linux-cpu.toml is stale against its inputs" in err


def test_a_file_rewritten_with_its_mtime_put_back_is_caught_by_ctime(built, project,
                                                                     tmp_path, capsys):
    sbom = built / "sbom.cdx.json"
    good = sbom.read_bytes()
    forged = good.replace(b'"name"', b'"nome"', 1)
    rewrite_in_place(sbom, forged)
    assert build(project, tmp_path, "-v") == 0
    err = capsys.readouterr().err
    assert "up to date" not in err
    assert "sbom.cdx.json changed" in err  # -v says why
    assert sbom.read_bytes() == good  # rebuilt


@pytest.mark.skipif(not Path("/proc/self/io").exists(), reason="Linux /proc/self/io")
def test_a_wheel_rewritten_in_place_is_fetched_again(built, indexes, project, tmp_path,
                                                     capsys):
    """A wheel is the cache's blob (a hard link): rewritten in place, mtime put back, it is
    neither up to date nor taken from the cache."""
    wheel = min(built.glob("*.whl"), key=lambda p: p.stat().st_size)
    good = wheel.read_bytes()
    rewrite_in_place(wheel, bytes(len(good)))
    assert build(project, tmp_path) == 0
    assert "up to date" not in capsys.readouterr().err
    assert [r.rsplit("/", 1)[-1] for r in wheel_requests(indexes)] == [wheel.name]
    assert wheel.read_bytes() == good


def test_a_touched_file_is_hashed_again_and_still_up_to_date(built, project, tmp_path,
                                                             capsys):
    """Its identity moved, its bytes did not: hashed again (said), not rebuilt; the next
    check knows it by its new identity."""
    page = built / "simple" / "index.html"
    inode = page.stat().st_ino
    os.utime(page)
    time.sleep(3 * SETTLE_NS / 1e9)  # else its new identity is too recent to record
    assert build(project, tmp_path) == 0
    assert "(11 files; 1 whose identity moved hashed again) -> " in capsys.readouterr().err
    assert page.stat().st_ino == inode  # not rewritten
    assert build(project, tmp_path) == 0
    assert f"{UP_TO_DATE} (11 files) -> " in capsys.readouterr().err


def test_another_wheelhouse_linking_the_same_blobs_leaves_this_one_up_to_date(
        built, project, tmp_path, capsys):
    """A second folder's links move the shared blobs' ctime; the cache recorded that, so
    neither folder is rebuilt or hashed again for it (no ping-pong between platforms)."""
    other = tmp_path / "other"
    assert build(project, tmp_path, "--out", str(other)) == 0
    time.sleep(3 * SETTLE_NS / 1e9)
    capsys.readouterr()
    for folder in (built, other, built):
        assert build(project, tmp_path, "--out", str(folder)) == 0
        assert f"{UP_TO_DATE} (11 files) -> " in capsys.readouterr().err


@pytest.mark.parametrize("change", ["missing", "extra", "lock", "platform", "group-writable",
                                    "group-writable-file", "mode", "shared-cache"])
def test_anything_changed_rebuilds(built, project, tmp_path, capsys, change):
    lock = project / "locks" / "pylock.linux-cpu.toml"
    page = built / "simple" / "index.html"
    if change == "missing":
        page.unlink()
    elif change == "extra":  # a name lockkit's folder rule allows, but this build never wrote
        (built / "SHA256SUMS").write_text("")
    elif change == "lock":
        lock.write_text(lock.read_text() + "# a comment: other bytes\n")
    elif change == "platform":  # the project's own definition of it: another fingerprint
        shipped = shipped_dir() / "linux-cpu.toml"
        (project / "platforms" / "linux-cpu.toml").write_text(
            shipped.read_text().replace("CPU-only", "CPU-only (ours)"))
    elif change == "group-writable":
        os.chmod(built / "simple", 0o775)
    elif change == "group-writable-file":  # its bytes the same, but the group could write
        os.chmod(page, 0o664)
    elif change == "mode":  # not the mode the build gives it
        os.chmod(page, 0o600)
    else:
        os.chmod(tmp_path / "cache", 0o770)
    assert build(project, tmp_path, "-v") == 0
    err = capsys.readouterr().err
    assert "up to date" not in err
    assert "linux-cpu: 3 wheels, 0 bytes downloaded" in err  # the normal build ran
    assert page.is_file() and not (built / "SHA256SUMS").exists()
    assert stat.S_IMODE(page.stat().st_mode) == 0o666 & ~umask()  # written again
    manifest = json.loads((built / "manifest.json").read_text())
    assert manifest["lock_sha256"] == hashlib.sha256(lock.read_bytes()).hexdigest()


def test_the_record_is_keyed_by_what_decides_the_folder(built, project, tmp_path):
    """The folder's record is kept by its path; its key changes with the lock's bytes and
    name, the platform's definition and tools/'s resolution key (lockkit's version is in
    it)."""
    memo = MemoStore(tmp_path / "cache")
    assert memo.get(KIND, MemoStore.key(KIND, str(built.resolve()))) is not None
    lock = project / "locks" / "pylock.linux-cpu.toml"
    text = lock.read_text()
    sha = hashlib.sha256(lock.read_bytes()).hexdigest()
    args = (sha, text, lock.name, "sha256:platform")
    plain = build_key(*args, tools_key=None, concealed=())
    with_tools = build_key(*args, tools_key="a" * 64, concealed=())
    assert with_tools != plain
    assert build_key(*args, tools_key="b" * 64, concealed=()) != with_tools
    assert build_key(sha, text, lock.name, "sha256:other", tools_key=None,
                     concealed=()) != plain
    assert build_key(sha, text, "pylock.other.toml", *args[3:], tools_key=None,
                     concealed=()) != plain
    assert build_key(hashlib.sha256(b"x").hexdigest(), text, *args[2:], tools_key=None,
                     concealed=()) != plain
    assert plain is not None and __version__


def test_a_lock_showing_a_concealed_value_keeps_no_record(built, project, tmp_path):
    lock = project / "locks" / "pylock.linux-cpu.toml"
    text = lock.read_text()
    word = text.split("url = ")[1][1:9]  # a piece of a URL the lock holds
    sha = hashlib.sha256(lock.read_bytes()).hexdigest()
    assert build_key(sha, text, lock.name, "p", tools_key=None,
                     concealed=((word, "${TOKEN}"),)) is None
