"""lockkit's own outputs in a project, ``wheelhouse/`` and ``.lockkit/``, get a ``.gitignore``
holding ``*`` when lockkit makes them (as uv's ``.venv``): a ``git add .`` never commits a
wheelhouse; a folder the user made is never written into."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from lockkit.cli import main
from tests.support.project import hello_project


def git(root: Path, *argv: str) -> str:
    return subprocess.run(["git", "-C", str(root), *argv], capture_output=True, text=True,
                          check=True).stdout


def test_build_and_verify_outputs_stay_out_of_git_status(tmp_path, indexes):
    root = hello_project(tmp_path / "proj", indexes, tmp_path / "cache")
    git(root, "init", "-q")
    main(["verify", "--project", str(root), "--platform", "linux-cpu"])  # no torch: it fails,
    # its dossier written all the same
    assert (root / "wheelhouse" / "linux-cpu" / "manifest.json").is_file()
    assert any((root / ".lockkit" / "reports" / "linux-cpu").iterdir())
    shown = git(root, "status", "--porcelain", "--untracked-files=all").splitlines()
    assert shown and not [line for line in shown
                          if line[3:].startswith(("wheelhouse", ".lockkit"))], shown
    assert (root / "wheelhouse" / ".gitignore").read_text() == "*\n"
    # .lockkit/ci/ holds the wheel the generated workflow installs by hash: committed
    assert (root / ".lockkit" / ".gitignore").read_text() == "*\n!/ci/\n!/ci/**\n"
    (root / ".lockkit" / "ci").mkdir()
    (root / ".lockkit" / "ci" / "lockkit-1.0-py3-none-any.whl").write_bytes(b"wheel")
    shown = git(root, "status", "--porcelain", "--untracked-files=all").splitlines()
    assert [line[3:] for line in shown if line[3:].startswith(".lockkit")] == [
        ".lockkit/ci/lockkit-1.0-py3-none-any.whl"]


def test_a_wheelhouse_folder_the_user_made_gets_no_gitignore(tmp_path, indexes):
    """Only a folder lockkit made is git-ignored: the user's ``wheelhouse/`` is theirs to
    commit (git shows it), while the ``.lockkit/`` verify makes is ignored."""
    root = hello_project(tmp_path / "proj", indexes, tmp_path / "cache")
    shutil.rmtree(root / "wheelhouse")
    (root / "wheelhouse").mkdir()
    git(root, "init", "-q")
    for _ in range(2):  # a build, then a rebuild over it
        assert main(["wheelhouse", "build", "--project", str(root), "--platform", "linux-cpu",
                     "--cache-dir", str(tmp_path / "cache")]) == 0
        assert sorted(p.name for p in (root / "wheelhouse").iterdir()) == ["linux-cpu"]
    main(["verify", "--project", str(root), "--platform", "linux-cpu"])
    shown = git(root, "status", "--porcelain", "--untracked-files=all")
    assert "wheelhouse/linux-cpu/manifest.json" in shown and ".lockkit" not in shown
