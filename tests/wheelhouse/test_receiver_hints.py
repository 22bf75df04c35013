"""What ``wheelhouse unpack`` and ``verify --wheelhouse`` say on the receiving machine, which
is often offline and has no project to build from (issue 41): no hint tells it to run
``lockkit wheelhouse build`` or anything else that needs the network; a refused archive is
to be got again from the sender.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from lockkit.cli import main
from lockkit.env.install import _check_wheelhouse
from lockkit.lock.model import Lock
from lockkit.steps.engine import StepFailed
from lockkit.wheelhouse.archive import RECEIVER_HINT, pack
from tests.support.archive import make_folder
from tests.support.wheelhouse import compiled

SENDERS = ("wheelhouse build", "compile", "--mirror", "network")


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def said(capsys: pytest.CaptureFixture[str]) -> tuple[str, str]:
    """The error line and the hint line of a failed command."""
    err = capsys.readouterr().err
    assert "Traceback" not in err
    (error,) = [ln for ln in err.splitlines() if ln.startswith("lockkit: error: ")]
    (hint,) = [ln for ln in err.splitlines() if ln.startswith("hint: ")]
    return error, hint


def test_a_sha256_mismatch_names_both_digests_and_says_to_get_the_archive_again(tmp_path,
                                                                                 capsys):
    archive = pack(make_folder(tmp_path / "wh"), tmp_path / "wh.tar")
    sent = "ab" * 32
    assert main(["wheelhouse", "unpack", str(archive), "--out", str(tmp_path / "out"),
                 "--sha256", sent]) == 1
    error, hint = said(capsys)
    assert f"sha256 {sha(archive)}, expected {sent}" in error
    assert hint.startswith("hint: get the archive again from the sender")
    assert not any(word in hint for word in SENDERS)
    assert not (tmp_path / "out").exists()


def damaged_member(archive: Path) -> None:
    """A wheel's bytes changed inside the tar, its size kept: the manifest's sha256 no
    longer matches (what a bad copy on the way does)."""
    data = bytearray(archive.read_bytes())
    at = data.index(b"demo wheel bytes")
    data[at:at + 4] = b"DEMO"
    archive.write_bytes(bytes(data))


def truncated(archive: Path) -> None:
    archive.write_bytes(archive.read_bytes()[:1536])


def not_a_tar(archive: Path) -> None:
    archive.write_bytes(b"this is not a tar archive\n" * 40)


@pytest.mark.parametrize("spoil", [damaged_member, truncated, not_a_tar])
def test_every_refused_archive_tells_the_receiver_to_get_it_again_never_to_build(
        tmp_path, capsys, spoil):
    archive = pack(make_folder(tmp_path / "wh"), tmp_path / "wh.tar")
    spoil(archive)
    assert main(["wheelhouse", "unpack", str(archive), "--out", str(tmp_path / "out")]) == 1
    _, hint = said(capsys)
    assert not any(word in hint for word in SENDERS), hint
    assert hint in (f"hint: {RECEIVER_HINT}", "hint: the archive may be truncated")


def test_verify_wheelhouse_of_another_lock_never_says_to_build_it(project, tmp_path):
    """verify's install step, on a folder built from another lock (its manifest says so):
    before, "rebuild it with 'lockkit wheelhouse build'", which an offline machine cannot."""
    lock = Lock.read(compiled(project))
    folder = make_folder(tmp_path / "wh")  # its manifest names another lock's sha256
    with pytest.raises(StepFailed) as failed:
        _check_wheelhouse(folder, lock)
    assert f"was built from another version of {lock.path.name}" in str(failed.value)
    assert not any(word in str(failed.value) for word in SENDERS)
