"""`lockkit cache prune` beside running commands: what a build or a verify holds is skipped
and named, never pulled from under it; once they end, prune removes it.

The race is made certain, not hoped for: the verify's application command waits for a
file the test writes after prune has run (polled with a deadline, never a fixed sleep).
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lockkit.cache.store import Cache
from lockkit.cli import main
from tests.support.fake_torch import build_fake_torch
from tests.support.index_server import IndexServer
from tests.support.pytorch_index import PyTorchIndex

ORPHAN = b"a wheel of an old lock" * 100
# waits for the test's go-ahead (argv[2]) after saying it started (argv[1]), then imports
# numpy from the venv, as a program loads a module when it first needs it
APP = """\
import pathlib, sys, time
pathlib.Path(sys.argv[1]).write_text("started")
deadline = time.monotonic() + 300
while not pathlib.Path(sys.argv[2]).exists():
    if time.monotonic() > deadline:
        sys.exit("the test never said go")
    time.sleep(0.05)
import numpy
pathlib.Path("out").mkdir(exist_ok=True)
pathlib.Path("out/done.txt").write_text(numpy.__version__)
"""


def cache_cli(capsys, *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["cache", *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def orphan_blob(cache: Path) -> Path:
    """A blob no lock references, landed as a download lands it."""
    store = Cache(cache)
    out, partial = store.new_partial()
    with out:
        out.write(ORPHAN)
    return store.commit(partial, hashlib.sha256(ORPHAN).hexdigest())  # store dropped: free


def start_verify(root: Path, cache: Path, report: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "lockkit", "verify", "--project", str(root), "--platform",
         "linux-cpu", "--cache-dir", str(cache), "--report-dir", str(report)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.kill()
        proc.communicate()


def wait_for(path: Path, proc: subprocess.Popen, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        if proc.poll() is not None:
            out, err = proc.communicate()
            pytest.fail(f"verify ended ({proc.returncode}) before its application ran:\n"
                        f"{out}\n{err}")
        if time.monotonic() > deadline:
            pytest.fail(f"verify did not reach its application within {seconds:.0f} s")
        time.sleep(0.05)


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t",
                    *args], check=True, capture_output=True)


@pytest.fixture
def slow_app(tmp_path, numpy_wheel) -> Path:
    """A project locking a fake CPU torch and numpy (so the gpu step's matmul check runs
    and the application is reached), whose application command waits for the test."""
    pt = PyTorchIndex(tmp_path / "pytorch")
    server = IndexServer(tmp_path / "index")
    with pt, server:
        pt.put("cpu", build_fake_torch(tmp_path / "built", version="2.5.1+cpu", cuda=None))
        server.index("/simple").put(numpy_wheel)
        root = tmp_path / "proj"
        root.mkdir()
        (root / "requirements.in").write_text("torch==2.5.1\nnumpy\n")
        (root / "app.py").write_text(APP)
        started, go = tmp_path / "started", tmp_path / "go"
        mirrors = "".join(f'"{k}" = "{v}"\n' for k, v in pt.mirrors().items())
        (root / "lockkit.toml").write_text(
            f'index-url = "{server.url}/simple"\nplatforms = ["linux-cpu"]\n'
            f"[mirrors]\n{mirrors}\n[verify.application]\n"
            f'command = ["{{python}}", "app.py", "{started}", "{go}"]\n'
            'timeout = 300\noutputs = ["out/done.txt"]\n'
            '[verify.resume]\nnone = "app.py never trains"\n')
        assert main(["compile", "--project", str(root)]) == 0
        assert main(["wheelhouse", "build", "--project", str(root), "--platform", "linux-cpu",
                     "--cache-dir", str(tmp_path / "downloads")]) == 0
        _git(root, "init", "-q")
        _git(root, "add", "--", "lockkit.toml", "requirements.in", "locks", "app.py")
        _git(root, "commit", "-q", "-m", "app")
        yield root


def test_prune_during_verify_keeps_the_venv_in_use_and_names_it(slow_app, tmp_path, capsys):
    """Before: prune removed <cache>/verify (the venv, uv's cache its files link to, the
    bytecode) under the running verify, and its dossier blamed the step that ran next."""
    cache, report = tmp_path / "cache", tmp_path / "report"
    started, go = tmp_path / "started", tmp_path / "go"
    venv_python = cache / "verify" / "venvs" / "linux-cpu" / "bin" / "python"
    proc = start_verify(slow_app, cache, report)
    try:
        wait_for(started, proc, 600)
        assert venv_python.exists()  # verify's shared venv, in use by its application
        code, out, _ = cache_cli(capsys, "prune", "--cache-dir", str(cache), "--project",
                                 str(slow_app))
        assert code == 0
        (line,) = [ln for ln in out.splitlines() if "skipped" in ln]
        assert line.startswith("  skipped verify/ (") and line.endswith(
            "): in use by a running verify; prune again once it ends"), out
        assert venv_python.exists()
        go.write_text("go")
        _, err = proc.communicate(timeout=600)
    finally:
        stop(proc)
    doc = json.loads((report / "dossier.json").read_text())
    assert proc.returncode == 0 and doc["result"] == "passed", (doc["first_error"], err)
    code, out, _ = cache_cli(capsys, "prune", "--cache-dir", str(cache), "--project",
                             str(slow_app), "--json")
    assert code == 0 and json.loads(out)["skipped"] == []  # verify ended: nothing holds it
    assert not (cache / "verify").exists()


def test_prune_skips_the_blobs_a_running_build_holds_and_names_them(project, tmp_path,
                                                                    capsys):
    """A build of another project (or of a lock compiled since) holds blobs no lock of
    this project references, between hashing them and linking them into its wheelhouse."""
    assert main(["compile", "--project", str(project), "--platform", "linux-cpu"]) == 0
    cache = tmp_path / "cache"
    blob = orphan_blob(cache)
    building = Cache(cache)  # as wheelhouse build holds it while it runs
    try:
        code, out, _ = cache_cli(capsys, "prune", "--cache-dir", str(cache), "--project",
                                 str(project), "--json")
        assert code == 0 and blob.read_bytes() == ORPHAN
        doc = json.loads(out)
        assert doc["removed"] == [] and doc["skipped"] == [{
            "path": "sha256/", "files": 1, "bytes": len(ORPHAN),
            "why": "in use by a running wheelhouse build (or a verify or sync fetching the "
                   "lock's files)"}]
    finally:
        building.release()
    code, out, _ = cache_cli(capsys, "prune", "--cache-dir", str(cache), "--project",
                             str(project))
    assert code == 0 and not blob.exists() and "skipped" not in out
    code, out, _ = cache_cli(capsys, "info", "--cache-dir", str(cache), "--project",
                             str(project), "--json")
    assert code == 0 and json.loads(out)["files"] == 0  # the lock files are not the cache's files


def test_a_verify_whose_venv_is_removed_anyway_says_so_in_its_dossier(slow_app, tmp_path):
    """A removal that takes no lock (an older lockkit's prune, a hand ``rm -r``): the step
    that fails next names the removal, not its own command."""
    import shutil

    cache, report = tmp_path / "cache", tmp_path / "report"
    started, go = tmp_path / "started", tmp_path / "go"
    proc = start_verify(slow_app, cache, report)
    try:
        wait_for(started, proc, 600)
        shutil.rmtree(cache / "verify")  # what prune did before it took the lock
        go.write_text("go")
        proc.communicate(timeout=600)
    finally:
        stop(proc)
    doc = json.loads((report / "dossier.json").read_text())
    assert proc.returncode == 1 and doc["result"] == "failed"
    assert doc["roots"]["venv"] == str(cache / "verify" / "venvs" / "linux-cpu")
    assert doc["first_error"] == (  # its paths relative to the run's roots, as every path's
        "application: the venv was removed while verify ran (cache prune?): <venv>; the step "
        "said: command: exited 1: ModuleNotFoundError: No module named 'numpy'")
