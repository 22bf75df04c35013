"""What lockkit writes gets the user's umask modes (issue 15): 0755/0644 under umask 022,
0750/0640 under 027 -- never mkdtemp's 0700 or mkstemp's 0600, which lock out a web server
running as another user, or a team's shared folder.

Each test runs under both masks, set with ``os.umask`` and restored after (lockkit reads
the mask from /proc/self/status each time, so a change in the process is seen)."""

from __future__ import annotations

import os
import stat
import tarfile
import threading
from pathlib import Path

import pytest

from lockkit._internal.fs import file_mode, umask, write_atomic
from lockkit._internal.redact import NO_SECRETS
from lockkit.report import write_folder
from lockkit.report.model import Dossier
from lockkit.wheelhouse import archive
from tests.support.wheelhouse import build_cli, compiled


@pytest.fixture(params=[0o022, 0o027], ids=["umask022", "umask027"])
def mask(request):
    old = os.umask(request.param)
    try:
        yield request.param
    finally:
        os.umask(old)


def expected(path: Path, mask: int) -> int:
    """0777/0666 less the umask; a wheel hard-linked from the cache has the blob's mode,
    read-only (0444 less the umask: see cache.Cache.place)."""
    st = path.lstat()
    if stat.S_ISDIR(st.st_mode):
        return 0o777 & ~mask
    if path.suffix == ".whl" and st.st_nlink > 1:
        return 0o444 & ~mask
    return 0o666 & ~mask


def assert_modes(root: Path, mask: int) -> int:
    """Every folder and file under *root*, *root* included, has its expected mode."""
    wrong, seen = [], 0
    for path in [root, *sorted(root.rglob("*"))]:
        mode = stat.S_IMODE(path.lstat().st_mode)
        seen += 1
        if mode != expected(path, mask):
            wrong.append(f"{path.relative_to(root.parent)}: {oct(mode)}, "
                         f"expected {oct(expected(path, mask))}")
    assert wrong == []
    return seen


def test_umask_is_read_without_changing_it(mask):
    assert umask() == mask and file_mode() == 0o666 & ~mask
    assert os.umask(mask) == mask  # still the one the test set


def test_umask_is_the_same_from_every_thread(mask):
    seen: list[int] = []
    threads = [threading.Thread(target=lambda: seen.append(umask())) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen == [mask] * 8


def test_wheelhouse_archive_and_unpacked_folder(project, tmp_path, mask):
    compiled(project)
    cache = tmp_path / "cache"
    assert build_cli(project, cache) == 0
    out = project / "wheelhouse" / "linux-cpu"
    assert assert_modes(out, mask) >= 10  # wheels, meta files, simple/ and its pages
    assert build_cli(project, cache) == 0  # a rebuild swaps a new folder in: same modes
    assert_modes(out, mask)
    blobs = [p for p in (cache / "sha256").rglob("*") if p.is_file()]
    assert blobs and {stat.S_IMODE(p.stat().st_mode) for p in blobs} == {0o444 & ~mask}

    tar = archive.pack(out, tmp_path / "shared" / "linux-cpu.wheelhouse.tar")
    assert stat.S_IMODE(tar.stat().st_mode) == 0o666 & ~mask
    assert stat.S_IMODE((tmp_path / "shared").stat().st_mode) == 0o777 & ~mask
    with tarfile.open(tar) as tf:  # the archive's own modes: fixed, whatever the umask
        modes = {(m.type, m.mode) for m in tf.getmembers()}
    assert modes == {(tarfile.DIRTYPE, 0o755), (tarfile.REGTYPE, 0o644)}

    archive.unpack(tar, tmp_path / "offline" / "linux-cpu")
    assert assert_modes(tmp_path / "offline", mask) >= 12


def _dossier() -> Dossier:
    """A verify dossier as test_report builds one (the model's own from_dict)."""
    return Dossier.from_dict({
        "schema_version": 2, "kind": "verify", "lockkit_version": "0", "started": "x",
        "command_line": ["lockkit", "verify"], "platform": "linux-cpu", "result": "passed",
        "steps": [{"name": "host", "status": "passed", "duration_s": 0.1}]})


def test_report_folder(tmp_path, mask):
    folder = tmp_path / ".lockkit" / "reports" / "linux-cpu" / "20260101T000000Z"
    write_folder(folder, _dossier(), {"installed-after.txt": "torch==2.5.1\n"}, NO_SECRETS)
    assert {p.name for p in folder.iterdir()} == {"dossier.json", "dossier.md",
                                                  "installed-after.txt"}
    assert_modes(tmp_path / ".lockkit", mask)


def test_write_atomic_replaces_with_the_umask_mode(tmp_path, mask):
    target = tmp_path / "locks" / "pylock.linux-cpu.toml"
    write_atomic(target, "one\n")
    target.chmod(0o600)  # an older lockkit's mkstemp mode
    write_atomic(target, "two\n")
    assert target.read_text() == "two\n"
    assert_modes(tmp_path / "locks", mask)
