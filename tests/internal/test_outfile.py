"""The one rule for output files (lockkit._internal.outfile), on its own: what it lets a
command write at a path, and how it writes there."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from lockkit._internal import outfile
from lockkit.errors import OutputError, WriteError

OURS = b"# written by lockkit\n"


def ours(path: Path) -> bool:
    return outfile.head(path, 100) == OURS


def check(path: outfile.Given, **kw) -> outfile.Target:
    return outfile.check(path, what="a test output", recognise=ours, **kw)


def test_nothing_or_a_file_lockkit_wrote_is_written_over(tmp_path):
    new = check(tmp_path / "sub" / "new.txt")
    outfile.write(new, OURS)
    assert new.kind == "file" and (tmp_path / "sub" / "new.txt").read_bytes() == OURS
    again = check(tmp_path / "sub" / "new.txt")
    outfile.write(again, OURS + b"again\n")
    assert (tmp_path / "sub" / "new.txt").read_bytes() == OURS + b"again\n"


def test_a_foreign_file_is_refused_in_one_line_unless_forced(tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_bytes(b"mine\n")
    with pytest.raises(OutputError) as info:
        check(notes, flag="-o")
    assert str(info.value) == (f"-o {notes}: a file lockkit did not write (not a test "
                               "output); --force overwrites it")
    assert info.value.exit_code == 2 and info.value.advice is None
    outfile.write(check(notes, force=True), OURS)
    assert notes.read_bytes() == OURS


@pytest.mark.parametrize("where", ["config", "lock", "inside"])
def test_an_input_is_refused_even_forced(tmp_path, where):
    (tmp_path / "locks").mkdir()
    (tmp_path / "wh").mkdir()
    path = {"config": tmp_path / "lockkit.toml", "lock": tmp_path / "locks" / "pylock.x.toml",
            "inside": tmp_path / "wh" / "deep" / "new.txt"}[where]
    inputs = outfile.project_inputs(tmp_path).add(folders=[(tmp_path / "wh", "the folder")])
    with pytest.raises(OutputError, match="an input of this command; not even --force"):
        check(path, inputs=inputs, force=True)


def test_a_symlink_is_judged_by_its_target_and_kept(tmp_path):
    target, link = tmp_path / "real.txt", tmp_path / "link.txt"
    target.write_bytes(OURS)
    link.symlink_to(target)
    outfile.write(check(link), OURS + b"new\n")
    assert link.is_symlink() and target.read_bytes() == OURS + b"new\n"
    target.write_bytes(b"mine\n")
    with pytest.raises(OutputError, match="did not write"):
        check(link)
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    with pytest.raises(OutputError, match="which does not exist"):
        check(tmp_path / "dangling")


def test_a_folder_is_not_a_file(tmp_path):
    with pytest.raises(OutputError, match="a folder, not a file"):
        check(tmp_path, force=True)


def test_the_file_is_written_with_the_umask_mode(tmp_path):
    old = os.umask(0o027)
    try:
        outfile.write(check(tmp_path / "out.txt"), OURS)
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "out.txt").stat().st_mode) == 0o640


def test_a_foreign_file_that_appears_during_the_work_is_not_replaced(tmp_path):
    out = tmp_path / "out.txt"
    target = check(out)
    with pytest.raises(OutputError), outfile.stream(target) as fh:
        fh.write(OURS)
        out.write_bytes(b"mine, meanwhile\n")
    assert out.read_bytes() == b"mine, meanwhile\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]  # no temp file left


def test_a_failed_write_leaves_the_old_file_and_no_temp(tmp_path):
    out = tmp_path / "out.txt"
    out.write_bytes(OURS)
    with pytest.raises(RuntimeError), outfile.stream(check(out)) as fh:
        fh.write(b"half")
        raise RuntimeError("the work failed")
    assert out.read_bytes() == OURS and sorted(tmp_path.iterdir()) == [out]


def test_dash_is_stdout_and_dev_fd_an_open_descriptor(tmp_path):
    assert outfile.argument("-") == outfile.STDOUT and outfile.argument("./-") == Path("-")
    assert check(outfile.STDOUT).to_stdout
    read, write = os.pipe()
    try:
        target = check(Path(f"/dev/fd/{write}"))
        assert (target.kind, target.fd) == ("through", write)
        outfile.write(target, OURS)
        assert os.read(read, 100) == OURS
    finally:
        os.close(read)
        os.close(write)


def test_a_fifo_is_written_through(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    target = check(fifo)
    assert target.kind == "through"
    outfile.write(target, b"through\n")
    reader.join(30)
    assert got == [b"through\n"] and stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_a_vanished_device_is_a_write_error_not_a_new_file(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    target = check(fifo)
    fifo.unlink()
    with pytest.raises(WriteError, match="cannot write"):
        outfile.write(target, b"x")
    assert not fifo.exists()
