"""A clean unpack covers every file the install commands it prints read (issue 31).

A genuine archive packed by lockkit over loopback is trojaned as an attacker would, keeping
it self-consistent (manifest and SHA256SUMS agree): a package planted in its own
pylock.toml, requirements.txt and simple/ pages, its wheel under ``simple/evil/``, and a
planted ``tools/`` lockkit. ``unpack --lock`` and ``verify --wheelhouse`` refuse it, naming
each file; ``tools/`` is vouched for only by the archive's sha256, compared out of band; the
archive's platform is its manifest's and its lock's, never its file name's.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lockkit._internal.compat import tomllib
from lockkit.cli import main
from lockkit.errors import UsageError
from lockkit.wheelhouse.archive import pack, unpack
from tests.support.archive import FILES, make_folder, plant, relist
from tests.support.project import lockkit
from tests.support.wheelhouse import compiled

PLATFORM = "linux-cpu"
ARM = "linux-cpu-aarch64"


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def packed(project: Path, tmp_path: Path, platform: str = PLATFORM) -> Path:
    """The project's lock compiled and its wheelhouse built and packed by lockkit."""
    compiled(project, platform=platform)
    assert main(["wheelhouse", "build", "--project", str(project), "--platform", platform,
                 "--cache-dir", str(tmp_path / "cache")]) == 0
    assert main(["wheelhouse", "pack", "--project", str(project), "--platform", platform]) == 0
    return project / "wheelhouse" / f"{platform}.wheelhouse.tar"


def trojaned(genuine: Path, tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    """*genuine* extracted, planted (:func:`tests.support.archive.plant`) and packed again
    with lockkit's own pack and no lock, as a forger's copy of lockkit would: the planted
    folder, the planted archive and the planted paths."""
    folder = unpack(genuine, tmp_path / "planted")
    planted = plant(folder, tmp_path / "scratch")
    tomllib.loads((folder / "pylock.toml").read_text())  # still a lock uv and pip read
    return folder, pack(folder, tmp_path / "planted.tar"), planted


def error_line(err: str) -> str:
    return next(ln for ln in err.splitlines() if ln.startswith("lockkit: error: "))


def nothing_at(out: Path) -> bool:
    return not out.exists() and not [p for p in out.parent.iterdir()
                                     if p.name.startswith(f".{out.name}.")]


def test_unpack_lock_refuses_a_planted_package_naming_each_file_it_changed(project, tmp_path,
                                                                            capsys):
    """Before: exit 0, the wheels at the top level being the lock's; the printed commands
    then installed ``evil`` and the planted lockkit."""
    genuine = packed(project, tmp_path)
    folder, archive, planted = trojaned(genuine, tmp_path)
    lock = project / "locks" / f"pylock.{PLATFORM}.toml"
    out = tmp_path / "out"
    capsys.readouterr()
    assert main(["wheelhouse", "unpack", str(archive), "--out", str(out),
                 "--lock", str(lock)]) == 1
    error = error_line(capsys.readouterr().err)
    for name in ("pylock.toml: not what the lock", "requirements.txt: not what the lock",
                 "simple/index.html: not what the lock",
                 f"{planted['wheel']}: a wheel the committed lock does not select"):
        assert name in error, error
    assert str(archive) in error and "partial" not in error and nothing_at(out)
    # pack gives the same verdict on the planted folder (one check for both)
    again = tmp_path / "again.tar"
    assert main(["wheelhouse", "pack", "--project", str(project), "--platform", PLATFORM,
                 "--from", str(folder), "--lock", str(lock), "-o", str(again)]) == 1
    assert error_line(capsys.readouterr().err).split(": ", 2)[2] == \
        error.split(": ", 2)[2].replace(str(archive), str(folder))
    assert not again.exists() and not Path(f"{again}.sha256").exists()


def test_verify_wheelhouse_on_the_planted_folder_fails_before_any_install(project, tmp_path):
    """Before: verify hashed the lock's top-level wheels only and said ``passed``."""
    folder, _, _ = trojaned(packed(project, tmp_path), tmp_path)
    reports = tmp_path / "report"
    run = lockkit("verify", "--project", str(project), "--platform", PLATFORM, "--no-gpu",
                  "--wheelhouse", str(folder), "--report-dir", str(reports), network=False)
    doc = json.loads((reports / "dossier.json").read_text())
    steps = {s["name"]: s["status"] for s in doc["steps"]}
    assert run.returncode == 1 and doc["result"] != "passed"
    assert steps["install"] == "failed" and steps["inventory"] == "not-run"
    assert "pylock.toml: not what the lock and the wheels give" in doc["first_error"]
    assert not [c for c in doc["commands"] if c["step"] == "install"]


def test_unpack_lock_refuses_a_wheel_added_anywhere_in_the_folder(project, tmp_path, capsys):
    """Only the manifest changed: a lock's wheel copied under another name deep in simple/
    is a wheel the lock does not select, though every text file is the lock's."""
    folder = unpack(packed(project, tmp_path), tmp_path / "copy")
    numpy = next(folder.glob("numpy-*.whl"))
    hidden = folder / "simple" / "numpy" / f"x{numpy.name}"
    hidden.write_bytes(numpy.read_bytes())
    relist(folder, {hidden.relative_to(folder).as_posix(): "wheel"})
    archive = pack(folder, tmp_path / "added.tar")
    capsys.readouterr()
    assert main(["wheelhouse", "unpack", str(archive), "--out", str(tmp_path / "out"), "--lock",
                 str(project / "locks" / f"pylock.{PLATFORM}.toml")]) == 1
    assert (f"simple/numpy/x{numpy.name}: a wheel the committed lock does not select"
            in error_line(capsys.readouterr().err))


# --- the archive's sha256, out of band -----------------------------------------------------------

def test_pack_prints_and_writes_the_archives_sha256_in_sha256sum_format(project, tmp_path,
                                                                       capsys):
    archive = packed(project, tmp_path)
    side = Path(f"{archive}.sha256")
    assert side.read_text() == f"{sha(archive)}  {archive.name}\n"
    assert f"{sha(archive)}  {archive}\n" in capsys.readouterr().out
    if shutil.which("sha256sum"):
        run = subprocess.run(["sha256sum", "-c", side.name], cwd=archive.parent,
                             capture_output=True, text=True)
        assert run.returncode == 0, run.stdout + run.stderr


def test_pack_prints_the_receivers_command_which_pasted_there_unpacks_and_checks_all(
        project, tmp_path, capsys):
    """Issue 42: the command is whole (archive, sha256, lock) and pastes into a shell in
    the receiver's checkout of the project, the archive beside it."""
    archive = packed(project, tmp_path)
    lines = capsys.readouterr().err.splitlines()
    command = lines[lines.index("the receiver runs, in the project's folder, beside the "
                                "archive:") + 1].strip()
    assert command == (f"lockkit wheelhouse unpack {archive.name} --sha256 {sha(archive)} "
                       f"--lock locks/pylock.{PLATFORM}.toml")
    receiver = tmp_path / "receiver"
    (receiver / "locks").mkdir(parents=True)
    shutil.copy(project / "locks" / f"pylock.{PLATFORM}.toml", receiver / "locks")
    shutil.copy(archive, receiver)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}"
                                 f"{os.environ['PATH']}"}
    done = subprocess.run(["bash", "-c", command], cwd=receiver, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "checked: the whole archive, tools/ included, is the one the sender packed" \
        in done.stderr and "is what locks/pylock.linux-cpu.toml implies" in done.stderr


def test_pack_never_overwrites_a_file_at_the_sidecar_path_it_did_not_write(tmp_path):
    notes = tmp_path / "wh.tar.sha256"
    notes.write_text("my notes\n")
    with pytest.raises(UsageError, match="not an archive's sha256 that lockkit wrote"):
        pack(make_folder(tmp_path / "wh"), tmp_path / "wh.tar")
    assert notes.read_text() == "my notes\n" and not (tmp_path / "wh.tar").exists()
    notes.unlink()
    archive = pack(make_folder(tmp_path / "wh"), tmp_path / "wh.tar")
    assert pack(tmp_path / "wh", archive) == archive  # over its own sidecar: fine
    assert notes.read_text() == f"{sha(archive)}  wh.tar\n"


def test_unpack_sha256_wrong_names_both_and_extracts_nothing(project, tmp_path, capsys):
    genuine = packed(project, tmp_path)
    _, archive, _ = trojaned(genuine, tmp_path)
    out = tmp_path / "out"
    capsys.readouterr()
    assert main(["wheelhouse", "unpack", str(archive), "--out", str(out),
                 "--sha256", sha(genuine)]) == 1
    error = error_line(capsys.readouterr().err)
    assert f"sha256 {sha(archive)}, expected {sha(genuine)}" in error and nothing_at(out)
    assert main(["wheelhouse", "unpack", str(archive), "--out", str(out),
                 "--sha256", "not-hex"]) == 2
    assert "--sha256 'not-hex': not a sha256" in capsys.readouterr().err and nothing_at(out)


def test_unpack_sha256_right_vouches_for_tools_and_lock_checks_the_rest(project, tmp_path,
                                                                        capsys):
    genuine = packed(project, tmp_path)
    lock = project / "locks" / f"pylock.{PLATFORM}.toml"
    capsys.readouterr()
    assert main(["wheelhouse", "unpack", str(genuine), "--out", str(tmp_path / "out"),
                 "--sha256", sha(genuine).upper(), "--lock", str(lock)]) == 0
    err = capsys.readouterr().err
    assert "checked: the whole archive, tools/ included, is the one the sender packed" in err
    assert f"checked: every file the install commands read, tools/ aside, is what {lock} " \
           "implies" in err
    assert "not verified" not in err


def tools_archive(tmp_path: Path) -> Path:
    files = {**FILES, "tools/lockkit-1.0-py3-none-any.whl": b"PK\x03\x04 lockkit",
             "tools/requirements.txt": b"lockkit==1.0\n"}
    return pack(make_folder(tmp_path / "wh", files), tmp_path / "from-the-usb-stick.tar")


def test_tools_install_command_is_printed_as_verified_only_with_the_archives_sha256(tmp_path,
                                                                                   capsys):
    """Before: 'lockkit itself, to verify here' led the tools/ command after any unpack,
    though nothing had checked tools/."""
    archive = tools_archive(tmp_path)
    assert main(["wheelhouse", "unpack", str(archive), "--out", str(tmp_path / "a")]) == 0
    lines = capsys.readouterr().err.splitlines()
    tools = tmp_path / "a" / "tools"
    at = next(i for i, ln in enumerate(lines) if f"--find-links {tools} lockkit" in ln)
    assert lines[at - 1].startswith("not verified: tools/")
    assert "then rerun with --sha256" in lines[at - 1]
    assert ("not verified: only that the archive agrees with its own manifest, not with a "
            "committed lock or the sender's sha256; rerun with --lock "
            "locks/pylock.linux-cpu.toml, or --sha256 with the sender's") in lines
    assert not [ln for ln in lines if ln.startswith("lockkit itself")]
    assert main(["wheelhouse", "unpack", str(archive), "--out", str(tmp_path / "b"),
                 "--sha256", sha(archive)]) == 0
    err = capsys.readouterr().err
    assert "not verified" not in err and "\nlockkit itself, to verify here" in err


# --- the platform: the manifest's and its lock's, never the file name's --------------------------

@pytest.fixture
def arm_archive(project, tmp_path) -> Path:
    """A genuine aarch64 CPU wheelhouse (filelock alone), packed by lockkit."""
    (project / "requirements.in").write_text("filelock\n")
    return packed(project, tmp_path, ARM)


def test_an_aarch64_archive_renamed_linux_cpu_is_refused_naming_both(arm_archive, tmp_path,
                                                                     capsys):
    """Before: 'picked linux-cpu (cpu on linux x86_64)', and unpacked."""
    shelf = tmp_path / "shelf"
    shelf.mkdir()
    renamed = shelf / f"{PLATFORM}.wheelhouse.tar"
    shutil.copy(arm_archive, renamed)
    capsys.readouterr()
    for target in (shelf, renamed):
        assert main(["wheelhouse", "unpack", str(target), "--out", str(tmp_path / "out")]) == 1
        err = capsys.readouterr().err
        assert "picked" not in err
        assert (f"{renamed}: its file name says platform {PLATFORM!r}, its manifest says "
                f"{ARM!r}") in error_line(err)
        assert nothing_at(tmp_path / "out")


def test_a_manifest_that_names_another_platform_than_its_lock_is_refused(arm_archive,
                                                                         tmp_path, capsys):
    """The manifest edited to agree with the new name: the folder's pylock.toml still
    names aarch64, in its platform and its environments."""
    folder = unpack(arm_archive, tmp_path / "arm")
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["platform"] = PLATFORM
    (folder / "manifest.json").unlink()
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    archive = pack(folder, tmp_path / f"{PLATFORM}.wheelhouse.tar")
    capsys.readouterr()
    assert main(["wheelhouse", "unpack", str(archive), "--out", str(tmp_path / "out")]) == 1
    error = error_line(capsys.readouterr().err)
    assert f"its [tool.lockkit].platform is {ARM!r}, the manifest's is {PLATFORM!r}" in error
    assert "its environments are [\"sys_platform == 'linux' and platform_machine == " \
           f"'aarch64'\"] ({ARM}, " in error
    assert f"not those of the manifest's {PLATFORM!r}" in error
    assert nothing_at(tmp_path / "out")


def test_unpack_lock_of_another_platform_is_refused_naming_both_before_extracting(
        arm_archive, project, tmp_path, capsys):
    other = project / "locks" / f"pylock.{PLATFORM}.toml"
    compiled(project)  # the linux-cpu lock of the same project
    capsys.readouterr()
    assert main(["wheelhouse", "unpack", str(arm_archive), "--out", str(tmp_path / "out"),
                 "--lock", str(other)]) == 1
    error = error_line(capsys.readouterr().err)
    assert f"a wheelhouse for {ARM!r} (its manifest), and --lock {other} is for " \
           f"{PLATFORM!r}" in error
    assert nothing_at(tmp_path / "out")
