"""lockkit.earlyuv: an identical compile starts the remembered uv before reading anything,
and the compile takes that uv's result only when it is exactly the run it would start.

Real compiles against the loopback replica of the PyTorch index (conftest ``project``).
Which uv ran is seen through ``lockkit._run.call``, the only way the compile starts uv
itself: a spy that records and calls through.
"""

from __future__ import annotations

import marshal
import os
import sys
from pathlib import Path

import pytest

from lockkit import _run, earlyuv
from lockkit.cli import main


@pytest.fixture
def started(monkeypatch) -> list[tuple[str, ...]]:
    """The uv argvs the compile started itself (not taken from an early start)."""
    calls: list[tuple[str, ...]] = []
    real = _run.call

    def spy(argv, **kwargs):
        if "compile" in list(argv)[:3]:
            calls.append(tuple(map(str, argv)))
        return real(argv, **kwargs)

    monkeypatch.setattr(_run, "call", spy)
    return calls


def compile_(project: Path, *extra: str) -> int:
    return main(["compile", "--project", str(project), "--platform", "linux-cpu", *extra])


def memos() -> list[Path]:
    return sorted((Path(os.environ["LOCKKIT_CACHE_DIR"]) / "launch").glob("*.memo"))


def early_folders() -> set[str]:
    base = Path(os.environ.get("TMPDIR") or "/tmp")
    return {p.name for p in base.glob(f"lockkit-early-{os.getpid()}-*")}


def lock_bytes(project: Path) -> bytes:
    return (project / "locks" / "pylock.linux-cpu.toml").read_bytes()


def test_an_identical_compile_takes_the_early_uv_and_writes_the_same_lock(project, started):
    before = set(memos())
    assert compile_(project) == 0  # no lock yet: remembered without preferences
    assert compile_(project) == 0  # the lock now exists: a different run, remembered again
    first = lock_bytes(project)
    assert len(started) == 2
    assert compile_(project) == 0
    assert len(started) == 2  # the third run took the uv started before argparse
    assert lock_bytes(project) == first
    new = set(memos()) - before
    assert len(new) == 1
    memo = marshal.loads(next(iter(new)).read_bytes())
    assert memo["platform"] == "linux-cpu" and "<lockkit:routing>" in memo["argv"]
    assert not early_folders()  # every early folder is gone


def test_a_changed_input_kills_the_early_uv_and_the_lock_follows_the_input(project, started):
    assert compile_(project) == 0
    assert compile_(project) == 0
    (project / "requirements.in").write_text("torch==2.5.1\n")  # numpy dropped
    assert compile_(project) == 0
    assert len(started) == 3  # the early uv resolved the old inputs: not taken
    names = {p["name"] for p in __import__("tomllib").loads(
        lock_bytes(project).decode())["packages"]}
    assert "numpy" not in names and "torch" in names
    assert not early_folders()


def test_a_changed_mirror_flag_is_another_command_line(project, started, indexes):
    assert compile_(project) == 0
    assert compile_(project) == 0
    # --mirror is not a plain flag: no memo is used nor written for this command line
    count = len(memos())
    official, mirror = next(iter(indexes.pt.mirrors().items()))
    assert compile_(project, "--mirror", f"{official}={mirror}") == 0
    assert len(memos()) == count and len(started) == 3


def test_a_bad_config_with_an_early_uv_fails_as_always_and_leaves_nothing(project, capsys):
    assert compile_(project) == 0
    assert compile_(project) == 0
    (project / "lockkit.toml").write_text("python = 3.11\n"
                                          + (project / "lockkit.toml").read_text())
    assert compile_(project) == 2
    assert "python" in capsys.readouterr().err
    assert not early_folders()


def test_credentials_are_never_remembered(project, monkeypatch):
    before = set(memos())
    config = (project / "lockkit.toml").read_text()
    monkeypatch.setenv("LOCKKIT_TEST_TOKEN", "s3cr3t-token")
    (project / "lockkit.toml").write_text(
        config.replace("http://127.0.0.1", "http://u:${LOCKKIT_TEST_TOKEN}@127.0.0.1", 1))
    assert compile_(project) == 0
    assert set(memos()) == before


@pytest.mark.parametrize("memo", [b"not a memo", marshal.dumps(
    {"format": 1, "platform": "linux-cpu", "files": {"../escape": "x"},
     "argv": ["/x/uv", "pip", "compile", "--python", sys.executable], "watch": {}})])
def test_a_broken_or_hostile_memo_is_ignored(project, started, memo):
    assert compile_(project) == 0
    assert compile_(project) == 0
    key = earlyuv._key(["--project", str(project), "--platform", "linux-cpu"])
    path = Path(os.environ["LOCKKIT_CACHE_DIR"]) / "launch" / f"{key}.memo"
    assert path.is_file()
    path.write_bytes(memo)
    assert compile_(project) == 0
    assert len(started) == 3
    assert not (path.parent.parent / "escape").exists()
    assert not early_folders()


def test_the_early_environment_is_the_isolated_one(monkeypatch):
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")
    monkeypatch.setenv("UV_INDEX_URL", "http://127.0.0.1:9/simple")
    monkeypatch.setenv("UV_CACHE_DIR", "/tmp/uv-cache")
    expected = _run.isolated_env({"MACOSX_DEPLOYMENT_TARGET": "11.0"})
    env = {k: v for k, v in os.environ.items()
           if k in earlyuv._KEEP or not k.startswith(earlyuv._HIDDEN_PREFIXES)}
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_NO_INPUT="1", PYTHONNOUSERSITE="1",
               MACOSX_DEPLOYMENT_TARGET="11.0")
    assert env == expected


def test_a_memo_others_can_write_is_never_run(project, started, tmp_path):
    """A memo runs a command before any check: one that is group- or world-writable (or in
    such a folder) is ignored, and a memo whose argv is not uv's pip compile too."""
    assert compile_(project) == 0
    assert compile_(project) == 0
    key = earlyuv._key(["--project", str(project), "--platform", "linux-cpu"])
    path = Path(os.environ["LOCKKIT_CACHE_DIR"]) / "launch" / f"{key}.memo"
    memo = marshal.loads(path.read_bytes())
    marker = tmp_path / "ran"
    memo["argv"] = ["/bin/sh", "-c", f"touch {marker}", "--python", "x"]
    path.write_bytes(marshal.dumps(memo))
    assert compile_(project) == 0
    assert not marker.exists() and len(started) == 3
    path.unlink()
    assert compile_(project) == 0  # remembered again
    assert earlyuv._private(path)
    path.chmod(0o666)
    assert not earlyuv._private(path)
    path.chmod(0o644)
    path.parent.chmod(0o777)
    try:
        assert not earlyuv._private(path)
        assert compile_(project) == 0
        assert len(started) == 5  # not taken: the folder is writable by all
    finally:
        path.parent.chmod(0o755)


def test_a_changed_config_or_platform_file_starts_no_early_uv(project, started, indexes):
    """What may point uv at another host (lockkit.toml, a platform file) is checked before
    the early start: after a change, no request reaches the indexes the memo names."""
    assert compile_(project) == 0
    assert compile_(project) == 0
    config = project / "lockkit.toml"
    config.write_text("# the mirrors moved\n" + config.read_text())
    launched: list[object] = []
    real = earlyuv._start

    def start(memo):
        launched.append(memo)
        return real(memo)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(earlyuv, "_start", start)
        assert compile_(project) == 0
        assert not launched and len(started) == 3
        assert compile_(project) == 0  # remembered with the new config: started early
        assert len(launched) == 1 and len(started) == 3
        (project / "platforms" / "extra.toml").write_text("# not a platform yet\n")
        try:
            compile_(project)
        finally:
            (project / "platforms" / "extra.toml").unlink()
        assert len(launched) == 1


def test_an_unchanged_resolution_keeps_the_lock_without_rebuilding_it(project, monkeypatch,
                                                                       capsys):
    """When uv's output and everything else the lock is made of are what they were, and
    the lock on disk is what compile wrote then, the lock is kept as it is; a lock edited
    since is rebuilt from uv's output as always."""
    import lockkit.lockfile

    assert compile_(project) == 0
    assert compile_(project) == 0
    lock = project / "locks" / "pylock.linux-cpu.toml"
    written = lock.read_bytes()

    def refuse(*args, **kwargs):
        raise AssertionError("the lock was rebuilt")

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(lockkit.lockfile, "build_lock", refuse)
        assert compile_(project) == 0
    assert "unchanged" in capsys.readouterr().out
    assert lock.read_bytes() == written
    lock.write_bytes(written.replace(b"# Generated by lockkit", b"# edited by hand", 1))
    assert compile_(project) == 0
    assert "written" in capsys.readouterr().out
    assert lock.read_bytes() == written


def test_the_same_compile_again_is_answered_from_the_memo_and_follows_the_index(
        project, indexes, capsys):
    """The third identical compile ends as soon as uv does: its output, the pages and the
    lock on disk are what made the memo, so the config is not even read. A newer numpy
    only, the one it locked gone from the default index, changes uv's output: the
    compile runs in full and writes it."""
    import subprocess
    import sys

    from conftest import LINUX

    assert compile_(project) == 0
    assert compile_(project) == 0
    run = subprocess.run([sys.executable, "-X", "importtime", "-m", "lockkit", "compile",
                          "--project", str(project), "--platform", "linux-cpu"],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "linux-cpu  unchanged" in run.stdout
    imported = {line.split("|")[-1].strip() for line in run.stderr.splitlines()
                if line.startswith("import time:")}
    assert "lockkit.earlyuv" in imported and "lockkit.config" not in imported
    capsys.readouterr()
    before = lock_bytes(project)
    for old in (indexes.default.root / "numpy").glob("numpy-2.1.0-*"):
        old.unlink()
    indexes.default.add("numpy", "2.2.0", tag=LINUX)
    assert compile_(project) == 0
    assert "linux-cpu  written" in capsys.readouterr().out
    assert b'version = "2.2.0"' in lock_bytes(project) and lock_bytes(project) != before
    assert not early_folders()
