"""``wheelhouse unpack`` finds the project and knows its platforms (issue 33, point 4):
``--project``, else ``--lock``'s project, else the current folder's; the platforms of its
``platforms/`` as well as the shipped ones. A folder without an archive is said so, naming
only flags unpack has."""

from __future__ import annotations

import platform as host
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from lockkit.cli import main
from lockkit.wheelhouse.archive import pack
from tests.support.archive import FILES, make_folder
from tests.support.wheelhouse import compiled

SHIPPED = Path(__file__).parents[2] / "platforms"


def own_platform_archive(project: Path, tmp_path: Path) -> Path:
    """An archive of the project's own platform 'mine' (linux-cpu under another name,
    defined in its platforms/), its lock compiled and its wheelhouse built and packed."""
    text = (SHIPPED / "linux-cpu.toml").read_text()
    (project / "platforms" / "mine.toml").write_text(
        text.replace('name = "linux-cpu"', 'name = "mine"'))
    compiled(project, platform="mine")
    assert main(["wheelhouse", "build", "--project", str(project), "--platform", "mine",
                 "--cache-dir", str(tmp_path / "cache")]) == 0
    assert main(["wheelhouse", "pack", "--project", str(project), "--platform", "mine"]) == 0
    return project / "wheelhouse" / "mine.wheelhouse.tar"


def error_and_hint(err: str) -> tuple[str, str]:
    lines = err.splitlines()
    assert "Traceback" not in err
    error = next((ln for ln in lines if ln.startswith("lockkit: error: ")), "")
    hint = next((ln for ln in lines if ln.startswith("hint: ")), "")
    return error, hint


@pytest.mark.parametrize("where", ["--project", "current-folder"])
def test_unpack_lock_of_a_project_platform_outside_locks_finds_the_project(
        project, tmp_path, capsys, monkeypatch, where):
    """Before: 'not a known platform' unless the lock lay in the project's locks/."""
    archive = own_platform_archive(project, tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    lock = Path(shutil.copy(project / "locks" / "pylock.mine.toml", elsewhere))
    found = ["--project", str(project)] if where == "--project" else []
    monkeypatch.chdir(project if where == "current-folder" else elsewhere)
    capsys.readouterr()
    assert main(["wheelhouse", "unpack", str(archive), "--lock", str(lock),
                 "--out", str(tmp_path / "out"), *found]) == 0, capsys.readouterr().err
    assert f"is what {lock} implies" in capsys.readouterr().err
    assert (tmp_path / "out" / "pylock.toml").is_file()


def test_unpack_project_that_is_no_folder_is_a_usage_error(tmp_path, capsys):
    assert main(["wheelhouse", "unpack", str(tmp_path / "x.wheelhouse.tar"),
                 "--project", str(tmp_path / "nowhere")]) == 2
    error = error_and_hint(capsys.readouterr().err)[0]
    assert f"--project {tmp_path / 'nowhere'}: not a folder" in error


@pytest.mark.skipif(not (host.system() == "Linux" and host.machine() == "x86_64"),
                    reason="the project's platform 'mine' runs on Linux x86_64 only")
def test_unpack_of_a_folder_picks_the_project_platforms_archive(project, tmp_path, capsys,
                                                                monkeypatch):
    """Before: the folder's archive of a project platform was not seen, and the error
    named a --platform flag unpack does not have."""
    archive = own_platform_archive(project, tmp_path)
    monkeypatch.chdir(project)
    capsys.readouterr()
    assert main(["wheelhouse", "unpack", str(archive.parent),
                 "--out", str(tmp_path / "out")]) == 0, capsys.readouterr().err
    assert "wheelhouse unpack: picked mine" in capsys.readouterr().err


def test_unpack_of_a_folder_without_an_archive_names_only_flags_unpack_has(tmp_path, capsys,
                                                                          monkeypatch):
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.chdir(tmp_path)
    assert main(["wheelhouse", "unpack", str(empty)]) == 2
    error, hint = error_and_hint(capsys.readouterr().err)
    assert f"{empty}: no wheelhouse archive" in error
    assert "--platform" not in error + hint
    assert "'lockkit wheelhouse unpack FILE'" in hint


def _git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid",
                           "-c", "commit.gpgsign=false", *args], cwd=root, check=True,
                          capture_output=True, text=True).stdout


def test_unpack_inside_a_project_leaves_git_clean_and_says_where_things_went(
        tmp_path, capsys, monkeypatch):
    """Issue 42: before, the folder went into the project's top folder and the printed
    commands made their venvs beside it, all of it untracked in ``git status``."""
    files = {**FILES, "tools/lockkit-1.0-py3-none-any.whl": b"PK\x03\x04 lockkit",
             "tools/requirements.txt": b"lockkit==1.0\n"}
    archive = pack(make_folder(tmp_path / "wh", files), tmp_path / "linux-cpu.wheelhouse.tar")
    project = tmp_path / "receiver"
    (project / "src").mkdir(parents=True)
    (project / "lockkit.toml").write_text('platforms = ["linux-cpu"]\n')
    _git(project, "init", "-q")
    _git(project, "add", "-A")
    _git(project, "commit", "-q", "-m", "the project")
    monkeypatch.chdir(project / "src")  # anywhere inside the project
    assert main(["wheelhouse", "unpack", str(archive)]) == 0
    err = capsys.readouterr().err
    where = project / ".lockkit" / "unpacked"
    assert (where / "linux-cpu" / "manifest.json").is_file()
    assert f"under {where}, which git ignores" in err
    assert _git(project, "status", "--porcelain", "--untracked-files=all") == ""
    venvs = [shlex.split(ln)[3] for ln in err.splitlines() if " -m venv " in ln]
    assert venvs == [str(where / "v"), str(where / "lk")]
    for venv in venvs:  # what the printed commands make is ignored there too
        _git(project, "check-ignore", "-q", f"{venv}/bin/python")
    monkeypatch.chdir(tmp_path)  # outside any project: the current folder, as tar xf
    assert main(["wheelhouse", "unpack", str(archive)]) == 0
    assert (tmp_path / "linux-cpu" / "manifest.json").is_file()
    assert " -m venv v && v/bin/pip" in capsys.readouterr().err
