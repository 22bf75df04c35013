"""What a SIGKILL leaves (nothing can clean up after it) is swept by the next run of the
command, or by ``cache prune``, which say what went; a folder with a look-alike name that
lockkit did not mark is kept."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from lockkit.wheelhouse.archive import pack
from tests.cli.test_hygiene import _Stalled
from tests.internal.test_signals import (
    _children,
    _stage_growing,
    _start,
    silent_index_token_mirrors,
    small,  # noqa: F401 - a fixture
    stalled_mirrors,
)
from tests.support.archive import FILES, make_folder
from tests.support.procs import wait_for
from tests.support.wheelhouse import compiled

pytestmark = [
    pytest.mark.skipif(os.name == "nt", reason="process groups and SIGKILL are POSIX's"),
    pytest.mark.skipif(not Path("/proc/self/stat").is_file(), reason="processes seen in /proc"),
]


def _kill(proc: subprocess.Popen[str], children: dict[int, str] | None = None) -> None:
    """SIGKILL to lockkit alone, as the OOM killer sends it; then (the test's own
    tidying) the groups of the children it had started, which nothing else would end."""
    proc.kill()
    proc.communicate()
    for pid in children or {}:
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _lockkit(*argv: str, tmp: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "lockkit", *argv], capture_output=True,
                          text=True, timeout=600,
                          env={**os.environ, "TMPDIR": str(tmp), **env})


def _swept_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.startswith("lockkit: swept ")]
    assert len(lines) == 1, err
    return lines[0]


def _said(paths: list[Path]) -> str:
    """The sweep's line for up to three *paths* (sorted)."""
    listed = " and ".join([", ".join(map(str, paths[:-1])), str(paths[-1])]
                          if len(paths) > 1 else [str(paths[0])])
    many = "leftover" if len(paths) == 1 else "leftovers"
    return f"lockkit: swept {len(paths)} {many} of an interrupted run: {listed}"


def test_a_killed_compiles_netrc_is_swept_by_the_next_compile_which_names_it(
        project, indexes, tmp_path):
    config = (project / "lockkit.toml").read_text()
    silent, token = silent_index_token_mirrors(project, indexes)
    tmp = tmp_path / "tmp"
    env = {"LK_TOKEN": token, "NETRC": str(tmp_path / "no-netrc")}
    proc = _start(["compile", "--project", str(project), "--platform", "linux-cpu"], tmp, **env)
    try:
        uvs = wait_for(lambda: _children(proc, " pip compile "), "uv", proc)
        _kill(proc, uvs)
    finally:
        proc.kill()
        silent.close()
    assert len([p for p in tmp.rglob("netrc") if token in p.read_text()]) == 1
    left = sorted(tmp.iterdir())  # the killed run's folders, one with the token in it
    mine = [tmp / "lockkit-notes", tmp / "lockkit-verify-mine"]  # look-alikes, not marked
    for folder in mine:
        folder.mkdir()
    (project / "lockkit.toml").write_text(config)
    done = _lockkit("compile", "--project", str(project), "--platform", "linux-cpu",
                    tmp=tmp, **env)
    assert done.returncode == 0, done.stderr
    assert _swept_line(done.stderr) == _said(left)
    assert sorted(tmp.iterdir()) == mine
    assert (project / "locks" / "pylock.linux-cpu.toml").is_file()


def test_a_killed_builds_partial_download_is_swept_by_cache_prune_at_once(
        project, indexes, tmp_path):
    """A day-old partial was the only one prune removed: a killed run's is removed as soon
    as its process is gone."""
    compiled(project, indexes)
    cache, tmp = tmp_path / "cache", tmp_path / "tmp"
    config = (project / "lockkit.toml").read_text()
    with _Stalled("body") as stalled:
        stalled_mirrors(project, indexes, stalled.url)
        proc = _start(["wheelhouse", "build", "--project", str(project), "--platform",
                       "linux-cpu", "--cache-dir", str(cache), "--out", str(tmp_path / "wh")],
                      tmp)
        try:
            wait_for(lambda: stalled.reached(cache), "a download under way", proc)
            _kill(proc)
        finally:
            proc.kill()
    (project / "lockkit.toml").write_text(config)
    parts = sorted((cache / "partial").iterdir())
    assert 1 <= len(parts) <= 3  # the stalled downloads, one per file asked for
    done = _lockkit("cache", "prune", "--project", str(project), "--cache-dir", str(cache),
                    tmp=tmp)
    assert done.returncode == 0, done.stderr
    assert _swept_line(done.stderr) == _said(parts)
    assert list((cache / "partial").iterdir()) == []


def test_a_killed_unpacks_stage_is_swept_by_the_next_unpack_a_look_alike_kept(tmp_path):
    big = pack(make_folder(tmp_path / "big", {**FILES, "big-1.0-py3-none-any.whl":
                                              bytes(256 << 20)}),
               tmp_path / "big.wheelhouse.tar")
    small_tar = pack(make_folder(tmp_path / "small"), tmp_path / "small.wheelhouse.tar")
    out, tmp = tmp_path / "unpacked", tmp_path / "tmp"
    proc = _start(["wheelhouse", "unpack", str(big), "--out", str(out)], tmp)
    try:
        wait_for(lambda: _stage_growing(tmp_path), "the big file being written", proc)
        _kill(proc)
    finally:
        proc.kill()
    stages = sorted(tmp_path.glob(".unpacked.partial-*"))
    assert len(stages) == 1
    later = os.stat(stages[0]).st_mtime + 3600  # the wall clock stepped back since (a VM
    os.utime(stages[0], (later, later))          # resumed): no clock decides
    mine = tmp_path / ".unpacked.partial-mine"  # a user's, with a similar name
    (mine / "notes").mkdir(parents=True)
    done = _lockkit("wheelhouse", "unpack", str(small_tar), "--out", str(out), tmp=tmp)
    assert done.returncode == 0, done.stderr
    assert _swept_line(done.stderr) == \
        f"lockkit: swept 1 leftover of an interrupted run: {stages[0]}"
    assert sorted(tmp_path.glob(".unpacked.*")) == [mine]
    assert (out / "manifest.json").is_file()


def test_a_killed_syncs_new_venv_is_swept_by_the_next_sync(small, tmp_path):  # noqa: F811
    tmp = tmp_path / "tmp"
    proc = _start(["sync", "--project", str(small), "--platform", "linux-cpu"], tmp)
    try:
        children = wait_for(lambda: _children(proc, ".venv.lockkit-new-")
                             if list(small.glob(".venv.lockkit-new-*")) else {},
                             "the new venv", proc)
        _kill(proc, children)
    finally:
        proc.kill()
    built = sorted(small.glob(".venv.lockkit-new-*"))
    work = sorted(tmp.iterdir())
    assert len(built) == 1 and len(work) == 1  # the new venv, and the run's work folder
    done = _lockkit("sync", "--project", str(small), "--platform", "linux-cpu", tmp=tmp)
    assert done.returncode == 0, done.stderr
    swept = [ln for ln in done.stderr.splitlines() if ln.startswith("lockkit: swept ")]
    assert swept == [f"lockkit: swept 1 leftover of an interrupted run: {built[0]}",
                     f"lockkit: swept 1 leftover of an interrupted run: {work[0]}"]
    assert sorted(p.name for p in small.iterdir() if p.name.startswith(".venv")) == [".venv"]
    assert list(tmp.iterdir()) == []


def test_a_leftover_is_its_makers_while_that_process_runs_even_under_a_reused_pid(tmp_path):
    """The mark names the pid and its start time: a live maker's folder is kept; a pid
    that another process took since (another start time) is no maker; a dead one none.
    A folder a live process holds is kept whatever its name says (a run in another PID
    namespace), until that process is killed."""
    from lockkit._internal.leftovers import orphaned, owner_tag

    def named(pid: int, start: int) -> str:
        return f".wh.tmp-{_base36(pid)}@{_base36(start)}-abcd1234"

    other = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                             stdin=subprocess.PIPE)
    try:
        stat = Path(f"/proc/{other.pid}/stat").read_text()
        start = int(stat[stat.rfind(")") + 2:].split()[19])
        assert not orphaned(named(other.pid, start), ".wh.tmp-")
        assert orphaned(named(other.pid, start + 1), ".wh.tmp-")
    finally:
        other.communicate(b"")
    assert orphaned(named(other.pid, start), ".wh.tmp-")
    # a run of another PID namespace: its pid means nothing here (the name's is dead),
    # but it holds what it made, and the kernel drops that hold only when it dies
    shared = tmp_path / named(other.pid, start)
    shared.mkdir()
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys\nfrom lockkit._internal.leftovers import hold\n"
         "hold(sys.argv[1]); print('held', flush=True); sys.stdin.read()", str(shared)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        assert not orphaned(shared.name, ".wh.tmp-", path=str(shared))
    finally:
        holder.kill()
        holder.communicate()
    assert orphaned(shared.name, ".wh.tmp-", path=str(shared))
    assert not orphaned(f".wh.tmp-{owner_tag()}abcd1234", ".wh.tmp-")  # this run's own
    assert not orphaned(".wh.tmp-mine", ".wh.tmp-")  # no mark: never lockkit's to remove


def _base36(n: int) -> str:
    """*n* in base 36, lower case, as the marks write pids and start times (numpy's
    ``base_repr``: an implementation apart from the one under test)."""
    return np.base_repr(n, 36).lower()


def test_a_killed_verifys_work_folder_is_swept_by_cache_prune(small, tmp_path):  # noqa: F811
    tmp = tmp_path / "tmp"
    proc = _start(["verify", "--project", str(small), "--platform", "linux-cpu", "--no-gpu",
                   "--report-dir", str(tmp_path / "report")], tmp)
    try:
        _kill(proc, wait_for(lambda: _children(proc, str(tmp)), "an installer", proc))
    finally:
        proc.kill()
    work = sorted(tmp.iterdir())
    assert [p.name.startswith("lockkit-verify-") for p in work] == [True]
    (tmp / "lockkit-verify-notes").mkdir()  # a look-alike without the mark
    done = _lockkit("cache", "prune", "--project", str(small), "--cache-dir",
                    str(tmp_path / "cache"), tmp=tmp)
    assert done.returncode == 0, done.stderr
    assert _swept_line(done.stderr) == _said(work)
    assert sorted(tmp.iterdir()) == [tmp / "lockkit-verify-notes"]
