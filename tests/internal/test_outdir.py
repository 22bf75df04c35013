"""Issue 23, item 3: an output folder is only ever a new one, an empty one, or one lockkit
made of the same kind for the same platform; the project folder, the current folder and
every folder above either are refused. Each case runs the real command (in-process, or
as a child process where the current folder is the point) and checks what is left."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lockkit._internal import outdir
from lockkit.cli import main
from lockkit.errors import ConfigError

PLATFORM = "linux-cpu"


def snapshot(root: Path) -> dict[str, bytes | None]:
    """Every path under *root*, with a file's bytes (a folder: None)."""
    return {p.relative_to(root).as_posix(): (p.read_bytes() if p.is_file() else None)
            for p in sorted(root.rglob("*"))}


def errors(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("lockkit: error:")]


def hidden(parent: Path) -> list[str]:
    """Stage and old folders a build or swap left beside its output."""
    return sorted(p.name for p in parent.iterdir() if p.name.startswith("."))


def compile_(project: Path, platform: str = PLATFORM) -> None:
    assert main(["compile", "--project", str(project), "--platform", platform]) == 0


def build(project: Path, cache: Path, *extra: str, platform: str = PLATFORM) -> int:
    return main(["wheelhouse", "build", "--project", str(project), "--platform", platform,
                 "--cache-dir", str(cache), *extra])


@pytest.fixture
def locked(project, indexes, tmp_path) -> Path:
    """The conftest project, compiled for linux-cpu, with an application file of its own;
    the index's request log emptied, so a test sees whether a build downloaded."""
    compile_(project)
    (project / "app.py").write_text("print('the application')\n")
    indexes.forget_requests()
    return project


def assert_refused(capsys, needle: str) -> str:
    err = capsys.readouterr().err
    (line,) = errors(err)  # one line, no traceback
    assert needle in line, err
    assert "choose an empty or new folder" in line and "Traceback" not in err
    return line


# -- wheelhouse build --out ----------------------------------------------------------------

def test_out_dot_in_a_project_is_refused_and_every_project_file_stays(locked, indexes):
    """The reported case, as a user runs it: in the project, `--out .`."""
    before = snapshot(locked)
    run = subprocess.run([sys.executable, "-m", "lockkit", "wheelhouse", "build",
                          "--platform", PLATFORM, "--out", "."], cwd=locked,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 2, run.stderr
    (line,) = errors(run.stderr)
    assert line == "lockkit: error: --out .: is the project folder; choose an empty or new folder"
    assert snapshot(locked) == before  # app.py, lockkit.toml, locks/, requirements.in
    assert indexes.wheel_requests() == []  # refused before any download
    assert hidden(locked.parent) == []


def test_out_folder_holding_a_user_file_is_refused_and_the_file_kept(locked, indexes, tmp_path,
                                                                     capsys):
    out = tmp_path / "x"
    out.mkdir()
    (out / "important.txt").write_text("mine")
    (out / "notes").mkdir()
    for n in range(3):
        (out / f"more-{n}.txt").write_text("mine too")
    assert build(locked, tmp_path / "cache", "--out", str(out)) == 2
    assert_refused(capsys, f"--out {out}: not empty and not a lockkit wheelhouse for "
                           "linux-cpu (holds important.txt, more-0.txt and 3 more)")
    assert (out / "important.txt").read_text() == "mine" and len(list(out.iterdir())) == 5
    assert indexes.wheel_requests() == [] and hidden(tmp_path) == []


@pytest.mark.parametrize("where", ["project", "above-project", "cwd", "above-cwd",
                                   "link-to-project"])
def test_out_at_the_project_the_current_folder_or_above_either_is_refused(
        locked, indexes, tmp_path, monkeypatch, capsys, where):
    """Empty or not, the folder a command runs in and the project are never an output."""
    here = tmp_path / "a" / "b"
    here.mkdir(parents=True)  # empty folders: only the place rule refuses them
    monkeypatch.chdir(here)
    (tmp_path / "link").symlink_to(locked)
    out, needle = {
        "project": (locked, "is the project folder"),
        "above-project": (locked.parent, f"{locked.parent} holds the project folder"),
        "cwd": (Path("."), "--out .: is the current folder"),
        "above-cwd": (Path(".."), f"--out ..: {tmp_path / 'a'} holds the current folder"),
        "link-to-project": (tmp_path / "link", "is the project folder"),
    }[where]
    before = snapshot(tmp_path)
    assert build(locked, tmp_path / "cache", "--out", str(out)) == 2
    assert_refused(capsys, needle)
    assert snapshot(tmp_path) == before and indexes.wheel_requests() == []


@pytest.mark.parametrize("empty", [False, True], ids=["missing", "empty"])
def test_out_that_is_missing_or_empty_is_accepted(locked, tmp_path, empty):
    out = tmp_path / "deep" / "wh"
    if empty:
        out.mkdir(parents=True)
    assert build(locked, tmp_path / "cache", "--out", str(out)) == 0
    assert json.loads((out / "manifest.json").read_text())["platform"] == PLATFORM
    assert hidden(out.parent) == []


@pytest.mark.parametrize("remembered", [False, True], ids=["full-build", "build-memo"])
def test_a_rebuild_replaces_the_same_platforms_wheelhouse(locked, tmp_path, remembered):
    """Both builds: the full one (a new cache each time) and the warm one from the memo."""
    out = tmp_path / "wh"
    assert build(locked, tmp_path / "cache-1", "--out", str(out)) == 0
    whole = snapshot(out)
    (out / "requirements.txt").unlink()  # still the folder lockkit wrote, less a file
    inode = out.stat().st_ino
    cache = tmp_path / ("cache-1" if remembered else "cache-2")
    assert build(locked, cache, "--out", str(out)) == 0
    assert snapshot(out) == whole and out.stat().st_ino != inode
    assert hidden(tmp_path) == []


@pytest.mark.parametrize("remembered", [False, True], ids=["full-build", "build-memo"])
def test_a_wheelhouse_with_a_file_lockkit_did_not_write_is_refused(locked, tmp_path, capsys,
                                                                   remembered):
    out = tmp_path / "wh"
    assert build(locked, tmp_path / "cache", "--out", str(out)) == 0
    (out / "notes.txt").write_text("mine")
    (out / "simple" / "extra").mkdir()
    before = snapshot(out)
    capsys.readouterr()
    # the memo's warm path names the folder only: it runs before the flags are parsed
    assert build(locked, tmp_path / ("cache" if remembered else "cache-2"),
                 "--out", str(out)) == 2
    assert_refused(capsys, f"{out}: a lockkit wheelhouse for linux-cpu that also holds "
                           "notes.txt and simple/extra/, which lockkit did not write")
    assert snapshot(out) == before and hidden(tmp_path) == []


def test_a_wheelhouse_of_another_platform_is_refused(locked, tmp_path, capsys):
    compile_(locked, "linux-cu126")
    out = tmp_path / "wh"
    assert build(locked, tmp_path / "cache", "--out", str(out), platform="linux-cu126") == 0
    before = snapshot(out)
    capsys.readouterr()
    assert build(locked, tmp_path / "cache-2", "--out", str(out)) == 2
    assert_refused(capsys, f"--out {out}: not empty and not a lockkit wheelhouse for "
                           "linux-cpu (it is a lockkit wheelhouse for linux-cu126)")
    assert snapshot(out) == before


def test_a_fifo_in_place_of_the_manifest_is_never_read(tmp_path):
    """Recognising a folder reads only regular files: a FIFO would hang the command."""
    out = tmp_path / "wh"
    out.mkdir()
    os.mkfifo(out / "manifest.json")
    with pytest.raises(ConfigError, match=r"holds manifest.json\)"):
        outdir.check(out, kind="wheelhouse", platform=PLATFORM)


def test_a_file_or_a_dangling_symlink_is_refused(tmp_path):
    (tmp_path / "file").write_text("mine")
    with pytest.raises(ConfigError, match="is a file, not a folder"):
        outdir.check(tmp_path / "file", kind="wheelhouse", platform=PLATFORM)
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    with pytest.raises(ConfigError, match="a symlink to .*nowhere, which does not exist"):
        outdir.check(tmp_path / "dangling", kind="wheelhouse", platform=PLATFORM)
    assert not (tmp_path / "nowhere").exists()


def test_a_name_with_a_line_break_is_said_on_one_line(tmp_path):
    out = tmp_path / "wh"
    out.mkdir()
    (out / "a\nhint: run rm -rf").write_text("mine")
    with pytest.raises(ConfigError) as info:
        outdir.check(out, kind="wheelhouse", platform=PLATFORM)
    assert "\n" not in str(info.value) and "holds 'a\\nhint: run rm -rf'" in str(info.value)


def test_swap_never_removes_a_folder_lockkit_did_not_make(tmp_path):
    """The one code that removes an output folder checks again at the moment it does."""
    stage = tmp_path / ".out.tmp-1"
    stage.mkdir()
    outdir.mark(stage, kind="venv", platform=PLATFORM)
    out = tmp_path / "out"
    out.mkdir()
    (out / "pyvenv.cfg").write_text("home = /usr/bin\n")  # a venv, not lockkit's
    with pytest.raises(ConfigError, match="holds pyvenv.cfg"):
        outdir.swap(stage, out)
    assert (out / "pyvenv.cfg").is_file() and stage.is_dir()
    (out / "pyvenv.cfg").unlink()
    outdir.swap(stage, out)  # empty now: replaced
    assert outdir.made(out).platform == PLATFORM and not stage.exists()
    assert hidden(tmp_path) == []


# -- wheelhouse unpack --out ---------------------------------------------------------------

@pytest.fixture
def archive(locked, tmp_path) -> Path:
    """The project's linux-cpu wheelhouse, built and packed."""
    assert build(locked, tmp_path / "cache") == 0
    tar = tmp_path / "linux-cpu.wheelhouse.tar"
    assert main(["wheelhouse", "pack", "--project", str(locked), "--platform", PLATFORM,
                 "-o", str(tar)]) == 0
    return tar


def unpack(archive: Path, *extra: str) -> int:
    return main(["wheelhouse", "unpack", str(archive), *extra])


def test_unpack_into_a_folder_holding_a_user_file_is_refused(archive, tmp_path, capsys):
    out = tmp_path / "dest"
    out.mkdir()
    (out / "important.txt").write_text("mine")
    capsys.readouterr()
    assert unpack(archive, "--out", str(out)) == 2
    assert_refused(capsys, f"--out {out}: not empty and not a lockkit wheelhouse for "
                           "linux-cpu (holds important.txt)")
    assert snapshot(out) == {"important.txt": b"mine"} and hidden(tmp_path) == []


@pytest.mark.parametrize("where", ["cwd", "above-cwd"])
def test_unpack_into_the_current_folder_or_above_is_refused(archive, tmp_path, monkeypatch,
                                                            capsys, where):
    here = tmp_path / "empty"
    here.mkdir()
    monkeypatch.chdir(here)
    capsys.readouterr()
    assert unpack(archive, "--out", "." if where == "cwd" else "..") == 2
    assert_refused(capsys, "is the current folder" if where == "cwd"
                   else "holds the current folder")
    assert list(here.iterdir()) == []


@pytest.mark.parametrize("empty", [False, True], ids=["missing", "empty"])
def test_unpack_into_a_missing_or_empty_folder_is_accepted(archive, tmp_path, empty):
    out = tmp_path / "dest"
    if empty:
        out.mkdir()
    assert unpack(archive, "--out", str(out)) == 0
    assert (out / "SHA256SUMS").is_file() and outdir.made(out).foreign == ()


def test_unpack_replaces_the_same_platforms_wheelhouse(archive, locked, tmp_path):
    """An earlier unpack, or the folder the build wrote: lockkit's, for linux-cpu."""
    out = tmp_path / "dest"
    assert unpack(archive, "--out", str(out)) == 0
    whole = snapshot(out)
    (out / "requirements.txt").unlink()
    assert unpack(archive, "--out", str(out)) == 0
    assert snapshot(out) == whole
    built = locked / "wheelhouse" / PLATFORM
    assert unpack(archive, "--out", str(built)) == 0
    assert snapshot(built) == whole and hidden(tmp_path) == []


def test_unpack_into_another_platforms_wheelhouse_is_refused(archive, locked, tmp_path, capsys):
    compile_(locked, "linux-cu126")
    out = tmp_path / "cu126"
    assert build(locked, tmp_path / "cache", "--out", str(out), platform="linux-cu126") == 0
    before = snapshot(out)
    capsys.readouterr()
    assert unpack(archive, "--out", str(out)) == 2
    assert_refused(capsys, "(it is a lockkit wheelhouse for linux-cu126)")
    assert snapshot(out) == before


# -- sync --venv ---------------------------------------------------------------------------

@pytest.fixture
def small(tmp_path, indexes) -> Path:
    """A project locking filelock alone, its wheelhouse built: a venv in seconds."""
    root = tmp_path / "proj"
    root.mkdir()
    (root / "requirements.in").write_text("filelock\n")
    (root / "lockkit.toml").write_text(indexes.config())
    compile_(root)
    assert build(root, tmp_path / "cache") == 0
    return root


def sync(root: Path, *extra: str) -> int:
    return main(["sync", "--project", str(root), "--platform", PLATFORM, *extra])


def test_sync_into_a_folder_holding_a_user_file_is_refused(small, tmp_path, capsys):
    venv = tmp_path / "env"
    venv.mkdir()
    (venv / "important.txt").write_text("mine")
    capsys.readouterr()
    assert sync(small, "--venv", str(venv)) == 2
    assert_refused(capsys, f"--venv {venv}: not empty and not a venv lockkit made for "
                           "linux-cpu (holds important.txt)")
    assert snapshot(venv) == {"important.txt": b"mine"} and hidden(tmp_path) == []


def test_sync_never_replaces_a_venv_lockkit_did_not_make(small, tmp_path, capsys):
    """A venv made by hand (or by uv, or an older lockkit) may hold what its owner put in."""
    venv = small / ".venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   timeout=120)
    before = snapshot(venv)
    capsys.readouterr()
    assert sync(small) == 2
    line = assert_refused(capsys, f"{venv}: not empty and not a venv lockkit made for "
                                  "linux-cpu (holds bin/, include/ and ")
    assert not line.startswith("lockkit: error: --venv")  # the default folder: no flag given
    assert snapshot(venv) == before


@pytest.mark.parametrize("where", ["project", "cwd"])
def test_sync_into_the_project_or_the_current_folder_is_refused(small, tmp_path, monkeypatch,
                                                                capsys, where):
    here = tmp_path / "empty"
    here.mkdir()
    monkeypatch.chdir(here)
    before = snapshot(tmp_path)
    capsys.readouterr()
    assert sync(small, "--venv", str(small) if where == "project" else ".") == 2
    assert_refused(capsys, f"is the {'project' if where == 'project' else 'current'} folder")
    assert snapshot(tmp_path) == before


def test_sync_into_an_empty_folder_then_replaces_its_own_venv(small, tmp_path):
    venv = tmp_path / "env"
    venv.mkdir()
    assert sync(small, "--venv", str(venv)) == 0
    made = outdir.made(venv)
    assert made is not None and (made.kind, made.platform) == ("venv", PLATFORM)
    inode = venv.stat().st_ino
    assert sync(small, "--venv", str(venv)) == 0
    assert venv.stat().st_ino != inode and (venv / "pyvenv.cfg").is_file()
    assert hidden(tmp_path) == []


def test_sync_refuses_a_venv_lockkit_made_for_another_platform(small, tmp_path, capsys):
    venv = tmp_path / "env"
    assert sync(small, "--venv", str(venv)) == 0
    marker = venv / outdir.MARKER
    marker.write_text(marker.read_text().replace(PLATFORM, "linux-cu126"))
    before = snapshot(venv)
    capsys.readouterr()
    assert sync(small, "--venv", str(venv)) == 2
    assert_refused(capsys, "(it is a venv lockkit made for linux-cu126)")
    assert snapshot(venv) == before


# -- verify --report-dir -------------------------------------------------------------------

def verify(root: Path, *extra: str) -> int:
    return main(["verify", "--project", str(root), "--platform", PLATFORM, *extra])


def test_a_report_folder_holding_a_user_file_is_refused_before_the_run(small, tmp_path,
                                                                        capsys):
    reports = tmp_path / "reports"
    reports.mkdir()
    (reports / "important.txt").write_text("mine")
    capsys.readouterr()
    assert verify(small, "--report-dir", str(reports)) == 2
    assert_refused(capsys, f"--report-dir {reports}: not empty and not a lockkit report for "
                           "linux-cpu (holds important.txt)")
    assert snapshot(reports) == {"important.txt": b"mine"}


@pytest.mark.parametrize("where", ["project", "cwd"])
def test_a_report_folder_at_the_project_or_the_current_folder_is_refused(
        small, tmp_path, monkeypatch, capsys, where):
    here = tmp_path / "empty"
    here.mkdir()
    monkeypatch.chdir(here)
    before = snapshot(tmp_path)
    capsys.readouterr()
    assert verify(small, "--report-dir", str(small) if where == "project" else ".") == 2
    assert_refused(capsys, f"is the {'project' if where == 'project' else 'current'} folder")
    assert snapshot(tmp_path) == before


def test_a_report_folder_is_written_again_for_its_platform_only(small, tmp_path, capsys):
    """No torch in this lock: verify fails (exit 1), and still writes its report."""
    reports = tmp_path / "reports"
    assert verify(small, "--report-dir", str(reports)) == 1
    first = json.loads((reports / "dossier.json").read_text())
    assert verify(small, "--report-dir", str(reports)) == 1  # its own report: accepted
    second = json.loads((reports / "dossier.json").read_text())
    assert second["started"] >= first["started"] and second["platform"] == PLATFORM
    dossier = reports / "dossier.json"
    dossier.write_text(dossier.read_text().replace(f'"platform": "{PLATFORM}"',
                                                   '"platform": "linux-cu126"', 1))
    before = snapshot(reports)
    capsys.readouterr()
    assert verify(small, "--report-dir", str(reports)) == 2
    assert_refused(capsys, "(it is a lockkit report for linux-cu126)")
    assert snapshot(reports) == before
