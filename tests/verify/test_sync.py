"""`lockkit sync`: a real venv rebuilt from a small lock (no torch) over loopback, swapped
in whole; a failure leaves the old venv as it was."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lockkit.cli import main
from tests.support.project import hello_project, lockkit


@pytest.fixture
def small(tmp_path, indexes) -> Path:
    """A project locking hello-cli (a console script) and filelock, its wheelhouse built."""
    return hello_project(tmp_path / "proj", indexes, tmp_path / "cache")


def sync(root: Path, *extra: str) -> int:
    return main(["sync", "--project", str(root), "--platform", "linux-cpu", *extra])


def run(argv: list[str]) -> str:
    """A program of the venv, run by its path with no activation and a bare environment."""
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=True,
                          env={"PATH": "/usr/bin:/bin"}, cwd="/")
    return done.stdout.strip()


def siblings(venv: Path) -> list[str]:
    return sorted(p.name for p in venv.parent.iterdir() if p.name.startswith(f"{venv.name}."))


def mark_old(venv: Path) -> Path:
    """A file of the venv's own (hello_cli's, its RECORD lists it) marked as the old
    venv's: a file a user added would make the next sync refuse instead."""
    (module,) = venv.glob("lib/python*/site-packages/hello_cli/__init__.py")
    module.write_text(module.read_text() + "# from the old venv\n")
    return module


def umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_sync_makes_the_venv_at_its_final_path(small, capsys):
    assert sync(small) == 0
    venv = small / ".venv"
    assert (venv / "pyvenv.cfg").is_file() and siblings(venv) == []
    assert run([str(venv / "bin" / "python"), "-c", "import sys; print(sys.prefix)"]) == str(venv)
    assert run([str(venv / "bin" / "hello-cli")]) == f"hello from {venv}"
    assert os.stat(venv).st_mode & 0o777 == 0o777 & ~umask()
    out, err = capsys.readouterr()
    assert "lockkit sync linux-cpu: synced" in out
    assert "inventory matches the lock; not verified (system/GPU/application not run)" in out
    assert "sync: install passed" in err and "sync: inventory passed" in err
    assert "lockkit:" not in err


def test_second_sync_replaces_the_venv_whole(small, capsys):
    assert sync(small) == 0
    venv = small / ".venv"
    module = mark_old(venv)
    inode = venv.stat().st_ino
    assert sync(small) == 0
    assert "from the old venv" not in module.read_text() and venv.stat().st_ino != inode
    assert run([str(venv / "bin" / "hello-cli")]) == f"hello from {venv}"
    assert siblings(venv) == []


@pytest.mark.slow
def test_pip_installer_rewrites_the_build_path(small, tmp_path):
    """pip writes absolute shebangs (no relocatable mode): the scripts of the swapped venv,
    pip's own included, and activate name the final folder."""
    venv = tmp_path / "dev-env"
    assert sync(small, "--venv", str(venv), "--installer", "pip") == 0
    assert run([str(venv / "bin" / "hello-cli")]) == f"hello from {venv}"
    assert "pip" in run([str(venv / "bin" / "pip"), "--version"])
    assert (venv / "bin" / "pip").read_text().splitlines()[0] == f"#!{venv}/bin/python3.11"
    assert f'VIRTUAL_ENV="{venv}"' in (venv / "bin" / "activate").read_text()
    assert "(dev-env)" in (venv / "bin" / "activate").read_text()
    build_path = [p.name for p in (venv / "bin").iterdir()
                  if p.is_file() and ".lockkit-new-" in p.read_text(errors="replace")]
    assert build_path == [] and siblings(venv) == []


def test_tampered_wheel_leaves_the_old_venv_untouched(small, capsys):
    assert sync(small) == 0
    venv = small / ".venv"
    module = mark_old(venv)
    inode = venv.stat().st_ino
    wheel = next((small / "wheelhouse" / "linux-cpu").glob("hello_cli-*.whl"))
    data = bytearray(wheel.read_bytes())
    data[len(data) // 2] ^= 0x01  # same size: only the hash can tell
    wheel.unlink()
    wheel.write_bytes(bytes(data))
    capsys.readouterr()
    assert sync(small) == 1
    assert module.read_text().endswith("# from the old venv\n")
    assert venv.stat().st_ino == inode and siblings(venv) == []
    assert run([str(venv / "bin" / "hello-cli")]) == f"hello from {venv}"
    out, err = capsys.readouterr()
    assert "not synced (failed)" in out
    assert "hello_cli-1.0-py3-none-any.whl" in err and "was not touched" in err
    # ends as every failure does (before: 'lockkit: sync failed: ...')
    assert [ln for ln in err.splitlines() if ln.startswith("lockkit: ")][-1].startswith(
        "lockkit: error: sync failed: ")


def test_sync_refuses_a_venv_holding_files_it_did_not_install_and_keeps_them(small, capsys):
    """An editable checkout in .venv/src/ and a notes file are the user's: sync names
    them (exit 2) and leaves the venv whole; a venv holding only what lockkit installed,
    bytecode written since included, is replaced as before."""
    venv = small / ".venv"
    assert sync(small) == 0
    run([str(venv / "bin" / "python"), "-c", "import hello_cli, filelock"])  # writes .pyc
    assert list(venv.glob("lib/python*/site-packages/hello_cli/__pycache__/*.pyc"))
    assert sync(small) == 0  # only lockkit's files: an ordinary re-sync
    checkout = venv / "src" / "mytool"
    checkout.mkdir(parents=True)
    (checkout / "pyproject.toml").write_text("[project]\nname = 'mytool'\n")
    (checkout / "mytool.py").write_text("print('mine')\n")
    (venv / "notes.md").write_text("how I set this up")
    inode = venv.stat().st_ino
    capsys.readouterr()
    assert sync(small) == 2
    assert (venv / "notes.md").read_text() == "how I set this up"
    assert (checkout / "mytool.py").read_text() == "print('mine')\n"
    assert venv.stat().st_ino == inode and siblings(venv) == []
    err = capsys.readouterr().err
    (line,) = [ln for ln in err.splitlines() if ln.startswith("lockkit: error")]
    assert line == (f"lockkit: error: {venv}: a venv lockkit made that also holds notes.md "
                    "and src/, which lockkit did not install; move that out, or pass --force "
                    "to replace the venv anyway"), err
    assert "sync: install" not in err  # refused before anything was built


def test_force_replaces_a_venv_holding_files_it_did_not_install(small, capsys):
    venv = small / ".venv"
    assert sync(small) == 0
    (venv / "src").mkdir()
    (venv / "src" / "notes.txt").write_text("mine")
    for n in range(4):  # more than a few: named a few and counted
        (venv / "bin" / f"tool{n}").write_text("#!/bin/sh\n")
    capsys.readouterr()
    assert sync(small) == 2
    assert "holds bin/tool0, bin/tool1 and 3 more, which lockkit" in capsys.readouterr().err
    assert sync(small, "--force") == 0
    assert not (venv / "src").exists() and not (venv / "bin" / "tool0").exists()
    assert run([str(venv / "bin" / "hello-cli")]) == f"hello from {venv}"
    assert siblings(venv) == []


def test_a_folder_that_is_not_a_venv_is_refused(small, tmp_path, capsys):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "notes.txt").write_text("keep me")
    assert sync(small, "--venv", str(folder)) == 2
    assert (folder / "notes.txt").read_text() == "keep me" and siblings(folder) == []
    err = capsys.readouterr().err
    assert f"--venv {folder}: not empty and not a venv lockkit made for linux-cpu " \
        "(holds notes.txt); choose an empty or new folder" in err
    assert len([ln for ln in err.splitlines() if ln.startswith("lockkit: error")]) == 1


def test_verify_that_fails_swaps_nothing(small, capsys):
    """--verify runs verify's steps; a run that does not pass (here incomplete: its lock
    names no torch, which passes the system step since issue 42, but no application check
    is declared) swaps nothing, so the old venv stays."""
    assert sync(small) == 0
    venv = small / ".venv"
    module = mark_old(venv)
    capsys.readouterr()
    assert sync(small, "--verify") == 1
    assert module.read_text().endswith("# from the old venv\n") and siblings(venv) == []
    out, err = capsys.readouterr()
    assert "not synced (incomplete)" in out and "dossier:" in err
    (report,) = (small / ".lockkit" / "reports" / "linux-cpu").iterdir()
    doc = json.loads((report / "dossier.json").read_text())
    steps = {s["name"]: s["status"] for s in doc["steps"]}
    assert doc["result"] == "incomplete" and doc["first_error"] is None, doc["first_error"]
    assert steps["inventory"] == steps["system"] == "passed"
    assert steps["gpu"] == steps["application"] == "skipped"


@pytest.mark.parametrize("absolute", [False, True])
def test_the_sync_dossier_is_portable_unless_absolute_paths(small, capsys, absolute):
    """sync --verify writes verify's dossier, its paths relative to the run's roots;
    --absolute-paths writes them as they are, as verify's flag does."""
    assert sync(small, "--verify", *(["--absolute-paths"] if absolute else [])) == 1
    capsys.readouterr()
    (report,) = (small / ".lockkit" / "reports" / "linux-cpu").iterdir()
    text = (report / "dossier.json").read_text()
    doc = json.loads(text)
    path = next(s for s in doc["steps"] if s["name"] == "venv")["detail"]["path"]
    if absolute:
        assert "roots" not in doc and "<venv>" not in text and "<project>" not in text
        assert Path(path).parent == small and Path(path).name.startswith(".venv.")
    else:
        assert path == "<venv>" and doc["roots"]["project"] == str(small)
        rest = {k: v for k, v in doc.items() if k != "roots"}
        assert str(small) not in json.dumps(rest)


def test_offline_sync_from_the_wheelhouse(small):
    run_ = lockkit("sync", "--project", str(small), "--platform", "linux-cpu", network=False)
    assert run_.returncode == 0, run_.stderr
    venv = small / ".venv"
    assert run([str(venv / "bin" / "hello-cli")]) == f"hello from {venv}"


def test_verify_of_the_example_passes_and_swaps(copy_of, capsys):
    """The example (real CPU torch, outside git): every verify step passes on the venv
    built beside .venv, whose files stay out of the application's clean copy."""
    project = copy_of()
    files = len([p for p in project.rglob("*") if p.is_file()])
    assert sync(project, "--verify") == 0
    venv = project / ".venv"
    out, err = capsys.readouterr()
    assert f"synced {venv}: verified (every verify step passed)" in out, out + err
    (report,) = (project / ".lockkit" / "reports" / "linux-cpu").iterdir()
    doc = json.loads((report / "dossier.json").read_text())
    steps = {s["name"]: s for s in doc["steps"]}
    assert doc["result"] == "passed" and len(steps) == 10
    assert steps["venv"]["detail"]["path"] == "<venv>"  # the dossier's paths: portable
    built = Path(doc["roots"]["venv"])
    assert built.parent == project and built.name.startswith(".venv.lockkit-new-")
    assert steps["application"]["detail"]["copied_files"] <= files
    assert run([str(venv / "bin" / "python"), "-c", "import torch; print(torch.__file__)"]
               ).startswith(str(venv))
    assert siblings(venv) == []


def test_the_venv_lockkit_runs_from_is_refused(tmp_path):
    """Replacing the running venv would pull lockkit's own lazily imported modules away."""
    from lockkit.errors import UsageError
    from lockkit.verify.sync import target

    with pytest.raises(UsageError, match="lockkit runs from this venv"):
        target(Path(sys.prefix), "linux-cpu")
    assert target(tmp_path / "new", "linux-cpu") == tmp_path / "new"  # absent: made by sync
    link = tmp_path / "link"
    link.symlink_to(Path(sys.prefix))
    with pytest.raises(UsageError, match="lockkit runs from this venv"):
        target(link, "linux-cpu")


def test_verify_keep_venv_says_where_the_venv_is(small, capsys):
    """Issue 15: --keep-venv left a temp folder; the output names it, and points to sync."""
    import re
    import shutil

    code = main(["verify", "--project", str(small), "--platform", "linux-cpu", "--keep-venv",
                 "--report-dir", str(small / "report")])
    assert code == 1  # incomplete (no application check declared): the venv is kept
    err = capsys.readouterr().err
    found = re.search(r"venv kept: (\S+) \(remove (\S+) when done; 'lockkit sync'", err)
    assert found, err
    venv, folder = Path(found[1]), Path(found[2])
    try:
        assert (venv / "pyvenv.cfg").is_file() and venv.parent == folder
    finally:
        shutil.rmtree(folder)
