"""Every ending is Ctrl-C's ending: SIGTERM (``timeout``, ``docker stop``, systemd, a
cancelled CI job) and SIGHUP (a closed terminal) sent to a real ``python -m lockkit`` in
the middle of compile, wheelhouse build, unpack, verify and sync. Each ends with exit
128 + the signal and one line, kills the installers it started (each in a session of its
own, so the signal never reaches them), leaves no temp folder, partial file or token, and
leaves the earlier output as it was. And what a SIGKILL leaves is swept by the next run."""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lockkit.cli import main
from lockkit.wheelhouse.archive import pack
from tests.cli.test_hygiene import _Stalled
from tests.support.archive import FILES, make_folder
from tests.support.procs import processes, wait_for
from tests.support.project import hello_project
from tests.support.wheelhouse import build_lib, compiled, leftovers, partials

pytestmark = [
    pytest.mark.skipif(os.name == "nt", reason="SIGTERM and SIGHUP are POSIX's"),
    pytest.mark.skipif(not Path("/proc/self/stat").is_file(), reason="processes seen in /proc"),
]

ENDINGS = [pytest.param(signal.SIGTERM, 143, id="SIGTERM"),
           pytest.param(signal.SIGHUP, 129, id="SIGHUP")]

def silent_index_token_mirrors(project: Path, indexes) -> tuple[socket.socket, str]:
    """*project*'s config pointed at a default index that never answers (its socket,
    accepted by the kernel, never read: uv waits) and at the PyTorch index through mirrors
    whose user info is ``${LK_TOKEN}`` (the token returned), which lockkit writes into a
    netrc for uv in TMPDIR."""
    silent = socket.create_server(("127.0.0.1", 0))
    mirrors = "".join(f'"{host}" = "{url.replace("http://", "http://bob:${LK_TOKEN}@")}"\n'
                      for host, url in indexes.pt.mirrors().items())
    (project / "lockkit.toml").write_text(
        f'index-url = "http://127.0.0.1:{silent.getsockname()[1]}/simple"\n'
        f'platforms = ["linux-cpu"]\n[mirrors]\n{mirrors}')
    return silent, secrets.token_hex(16)


def stalled_mirrors(project: Path, indexes, stalled: str) -> None:
    """*project*'s PyTorch index hosts mirrored at *stalled* (a server that stops mid-body),
    one path each; the default index as it was."""
    mirrors = "".join(f'"{host}" = "{stalled}/{i}"\n'
                      for i, host in enumerate(indexes.pt.mirrors()))
    (project / "lockkit.toml").write_text(f'index-url = "{indexes.url}/simple"\n'
                                          f'platforms = ["linux-cpu"]\n[mirrors]\n{mirrors}')


def _at_default() -> None:
    """In the child, before exec: the three signals at their defaults. A suite started in
    the background or under ``nohup`` inherits SIGINT or SIGHUP ignored, and Python (and
    lockkit, on purpose) keeps an inherited ignore."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)


def _children(proc: subprocess.Popen[str], needle: str = "") -> dict[int, str]:
    return {pid: cmd for pid, (ppid, _, cmd) in processes().items()
            if ppid == proc.pid and needle in cmd}


def _start(argv: list[str], tmp: Path, **env: str) -> subprocess.Popen[str]:
    tmp.mkdir(exist_ok=True)
    return subprocess.Popen([sys.executable, "-m", "lockkit", *argv], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=_at_default,
                            env={**os.environ, "TMPDIR": str(tmp), "PYTHONFAULTHANDLER": "1",
                                 **env})


def _end(proc: subprocess.Popen[str], sig: int) -> str:
    """Send *sig*; the stderr of a lockkit that exits within 30 s (else its stacks)."""
    proc.send_signal(sig)
    try:
        return proc.communicate(timeout=30)[1]
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGABRT)
        pytest.fail(f"no exit 30 s after {signal.Signals(sig).name}:\n{proc.communicate()[1]}")


def _assert_ended(proc: subprocess.Popen[str], err: str, sig: int, code: int,
                  groups: set[int], tmp: Path) -> None:
    """Exit 128 + signal; one line from lockkit, no traceback; no process of the children's
    groups left; nothing left in TMPDIR."""
    assert proc.returncode == code, err
    assert "Traceback" not in err
    name = signal.Signals(sig).name
    said = [line for line in err.splitlines() if line.startswith("lockkit:")]
    assert said == [f"lockkit: terminated ({name}); nothing was left half-written"], err
    deadline = time.monotonic() + 10  # a killed grandchild is reaped by init, not at once
    while left := {p: c for p, (_, g, c) in processes().items() if g in groups}:
        assert time.monotonic() < deadline, f"left running: {left}"
        time.sleep(0.01)
    assert list(tmp.iterdir()) == []


@pytest.mark.parametrize("platforms", [["linux-cpu"], ["linux-cpu", "linux-cu126"]],
                         ids=["one-platform", "two-platforms-on-threads"])
@pytest.mark.parametrize(("sig", "code"), ENDINGS)
def test_a_signal_during_a_compile_kills_uv_and_leaves_no_netrc_token_or_lock(
        project, indexes, tmp_path, sig, code, platforms):
    """uv waits on a default index that accepts connections and never answers; the
    mirrors carry a token, which lockkit writes into a netrc for uv in TMPDIR. With two
    platforms, each uv is started and awaited by a worker thread, which the signal (only
    the main thread hears it) must end too."""
    compiled(project, indexes)
    lock = project / "locks" / "pylock.linux-cpu.toml"
    earlier = lock.read_bytes()
    silent, token = silent_index_token_mirrors(project, indexes)
    (project / "requirements.in").write_text("torch==2.5.1\nnumpy\nsix\n")
    tmp = tmp_path / "tmp"
    chosen = [arg for p in platforms for arg in ("--platform", p)]
    proc = _start(["compile", "--project", str(project), *chosen, "--jobs", "2"], tmp,
                  LK_TOKEN=token, NETRC=str(tmp_path / "no-netrc"))
    try:
        uvs = wait_for(lambda: (lambda found: found if len(found) == len(platforms) else {})(
            _children(proc, " pip compile ")), "uv", proc)
        assert any(token in p.read_text() for p in tmp.rglob("netrc"))  # there, for uv
        time.sleep(0.2)  # uv has asked the silent index by now
        err = _end(proc, sig)
    finally:
        proc.kill()
        silent.close()
    _assert_ended(proc, err, sig, code, set(uvs), tmp)
    assert lock.read_bytes() == earlier


@pytest.mark.parametrize(("sig", "code"), ENDINGS)
def test_a_signal_during_a_wheelhouse_download_leaves_no_partial_and_the_old_wheelhouse(
        project, indexes, tmp_path, sig, code):
    compiled(project, indexes)
    out, cache = tmp_path / "wh", tmp_path / "cache"
    build_lib(project, tmp_path / "cache0", out)
    earlier = (out / "manifest.json").read_bytes()
    tmp = tmp_path / "tmp"
    with _Stalled("body") as stalled:
        stalled_mirrors(project, indexes, stalled.url)
        proc = _start(["wheelhouse", "build", "--project", str(project), "--platform",
                       "linux-cpu", "--cache-dir", str(cache), "--out", str(out)], tmp)
        try:
            wait_for(lambda: stalled.reached(cache), "a download under way", proc)
            err = _end(proc, sig)
        finally:
            proc.kill()
    _assert_ended(proc, err, sig, code, set(), tmp)
    assert partials(cache) == []
    assert leftovers(tmp_path, "wh") == []
    assert (out / "manifest.json").read_bytes() == earlier


def _stage_growing(parent: Path) -> bool:
    """An unpack's stage beside *parent*'s ``unpacked`` that holds a part of the big file."""
    for stage in parent.glob(".unpacked.partial-*"):
        big = stage / "big-1.0-py3-none-any.whl"
        try:
            if big.stat().st_size > 1 << 20:
                return True
        except FileNotFoundError:
            pass
    return False


@pytest.mark.parametrize(("sig", "code"), ENDINGS)
def test_a_signal_during_an_unpack_removes_its_stage_and_keeps_the_old_folder(
        tmp_path, sig, code):
    small = pack(make_folder(tmp_path / "small"), tmp_path / "small.wheelhouse.tar")
    big_files = {**FILES, "big-1.0-py3-none-any.whl": bytes(256 << 20)}
    big = pack(make_folder(tmp_path / "big", big_files), tmp_path / "big.wheelhouse.tar")
    out = tmp_path / "unpacked"
    assert main(["wheelhouse", "unpack", str(small), "--out", str(out)]) == 0
    earlier = (out / "manifest.json").read_bytes()
    tmp = tmp_path / "tmp"
    proc = _start(["wheelhouse", "unpack", str(big), "--out", str(out)], tmp)
    try:
        wait_for(lambda: _stage_growing(tmp_path), "the big file being written", proc)
        err = _end(proc, sig)
    finally:
        proc.kill()
    _assert_ended(proc, err, sig, code, set(), tmp)
    assert leftovers(tmp_path, "unpacked") == []
    assert (out / "manifest.json").read_bytes() == earlier
    assert not (out / "big-1.0-py3-none-any.whl").exists()


@pytest.fixture
def small(tmp_path, indexes) -> Path:
    """A project locking hello-cli and filelock, its wheelhouse built: verify and sync
    install it into a venv."""
    return hello_project(tmp_path / "proj-small", indexes, tmp_path / "cache")


@pytest.mark.parametrize(("sig", "code"), ENDINGS)
def test_a_signal_during_verify_kills_the_installer_and_removes_its_work_folder(
        small, tmp_path, sig, code):
    """pip's procedure (``python -m venv`` with ensurepip, then ``pip install``): children
    that live for seconds, so the signal lands while one runs. uv's whole venv and
    install took 0.3 s on an idle machine, and a verify once ended before the test saw
    any of its children; the children are ended by the same code either way."""
    tmp, reports = tmp_path / "tmp", tmp_path / "report"
    proc = _start(["verify", "--project", str(small), "--platform", "linux-cpu", "--no-gpu",
                   "--installer", "pip", "--report-dir", str(reports)], tmp)
    try:
        children = wait_for(lambda: _children(proc, str(tmp)), "an installer", proc)
        err = _end(proc, sig)
    finally:
        proc.kill()
    _assert_ended(proc, err, sig, code, set(children), tmp)
    assert not reports.exists()


@pytest.mark.parametrize(("sig", "code"), ENDINGS)
def test_a_signal_during_sync_removes_the_new_venv_and_keeps_the_old_one(
        small, tmp_path, sig, code):
    assert main(["sync", "--project", str(small), "--platform", "linux-cpu"]) == 0
    venv = small / ".venv"
    earlier = ((venv / ".lockkit.json").read_bytes(), venv.stat().st_ino)
    tmp = tmp_path / "tmp"
    proc = _start(["sync", "--project", str(small), "--platform", "linux-cpu"], tmp)
    try:
        children = wait_for(lambda: _children(proc, ".venv.lockkit-new-")
                             if list(small.glob(".venv.lockkit-new-*")) else {},
                             "the new venv", proc)
        err = _end(proc, sig)
    finally:
        proc.kill()
    _assert_ended(proc, err, sig, code, set(children), tmp)
    assert sorted(p.name for p in small.iterdir() if p.name.startswith(".venv")) == [".venv"]
    assert ((venv / ".lockkit.json").read_bytes(), venv.stat().st_ino) == earlier


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_signal_just_as_unpack_makes_its_stage_leaves_no_stage(tmp_path, monkeypatch, sig):
    """The signal is sent the moment the stage folder exists, and lands at the next
    bytecode: before, that was ahead of the ``try`` that removes the stage."""
    from lockkit._internal.endings import raising
    from lockkit._internal.fs import temp_dir as made
    from lockkit.wheelhouse import archive

    tar = pack(make_folder(tmp_path / "small"), tmp_path / "small.wheelhouse.tar")

    def made_then_signalled(parent: Path, prefix: str) -> Path:
        stage = made(parent, prefix)
        # raise(3): this very thread takes it before the call returns. kill(2) to the
        # process may be taken by another thread (pytest-xdist runs some), whose handler
        # can run after unpack has already finished on a loaded machine (a flake seen on
        # 2 busy cores: "DID NOT RAISE").
        signal.raise_signal(sig)
        return stage

    monkeypatch.setattr(archive, "temp_dir", made_then_signalled)
    # as at a terminal: SIGINT raising, SIGTERM and SIGHUP at their defaults, which raising()
    # takes over. A suite started in the background (nohup, a CI step's `cmd &`) inherits
    # SIGHUP ignored, and raising() rightly leaves an ignored signal alone: the SIGHUP case
    # then never raised ("DID NOT RAISE", seen under nohup)
    previous = {signal.SIGINT: signal.signal(signal.SIGINT, signal.default_int_handler)}
    previous.update({s: signal.signal(s, signal.SIG_DFL) for s in (signal.SIGTERM, signal.SIGHUP)})
    try:
        with raising(), pytest.raises(KeyboardInterrupt):
            archive.unpack(tar, tmp_path / "wh")
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    assert leftovers(tmp_path, "wh") == [] and not (tmp_path / "wh").exists()
