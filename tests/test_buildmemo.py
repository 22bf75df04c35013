"""The warm rebuild from the build memo: the same folder as a full build, never a stale one."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from lockkit import wheelhouse
from lockkit.cache import Cache, lock_references, prune, survey
from lockkit.cli import main

PLATFORM = "linux-cpu"


def build(project: Path, cache: Path, out: Path, *extra: str) -> None:
    assert main(["wheelhouse", "build", "--project", str(project), "--platform", PLATFORM,
                 "--cache-dir", str(cache), "--out", str(out), *extra]) == 0


def folder(root: Path) -> dict[str, tuple[bytes, int]]:
    """Every file of a wheelhouse: its bytes and mode."""
    return {p.relative_to(root).as_posix(): (p.read_bytes(), stat.S_IMODE(p.stat().st_mode))
            for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def full_builds(monkeypatch):
    """Counts the full builds (``wheelhouse.build``) the command runs."""
    calls: list[Path] = []
    real = wheelhouse.build

    def counted(*args, **kw):
        calls.append(args[2])
        return real(*args, **kw)

    monkeypatch.setattr(wheelhouse, "build", counted)
    return calls


@pytest.fixture
def locked(project):
    assert main(["compile", "--project", str(project), "--platform", PLATFORM]) == 0
    return project


def test_the_memo_rebuilds_the_folder_a_fresh_cache_builds(locked, tmp_path, full_builds,
                                                           capsys):
    cache = tmp_path / "cache"
    build(locked, cache, tmp_path / "first")
    assert len(list((cache / "plan").glob("*.json"))) == 1
    build(locked, cache, tmp_path / "warm")
    assert full_builds == [tmp_path / "first"]  # the second build took the memo
    build(locked, tmp_path / "other-cache", tmp_path / "fresh")
    assert folder(tmp_path / "warm") == folder(tmp_path / "fresh") == folder(tmp_path / "first")
    err = capsys.readouterr().err
    assert err.count("0 B downloaded, 3 from cache -> ") == 1
    assert (tmp_path / "warm" / "manifest.json").stat().st_ino != \
        (tmp_path / "first" / "manifest.json").stat().st_ino
    wheels = sorted((tmp_path / "warm").glob("*.whl"))
    assert all(w.stat().st_ino == (tmp_path / "first" / w.name).stat().st_ino for w in wheels)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_the_memo_replaces_an_existing_folder(locked, tmp_path, full_builds):
    cache, out = tmp_path / "cache", tmp_path / "out"
    build(locked, cache, out)
    before = folder(out)
    (out / "requirements.txt").unlink()  # still the wheelhouse lockkit wrote, less a file
    build(locked, cache, out)
    assert len(full_builds) == 1 and folder(out) == before


@pytest.mark.parametrize("extra", [
    (),  # read without argparse
    ("--fallback-to-official", "--mirror", "https://example.invalid=http://127.0.0.1:9"),
    ("--jobs", "3"),  # through argparse, which then takes the memo
    ("--plat", PLATFORM),  # an abbreviation: argparse
])
def test_every_form_of_the_command_takes_the_memo(locked, tmp_path, full_builds, extra):
    cache = tmp_path / "cache"
    base = ["wheelhouse", "build", "--project", str(locked), "--cache-dir", str(cache)]
    plat = [] if "--plat" in extra else ["--platform", PLATFORM]
    assert main([*base, *plat, *extra, "--out", str(tmp_path / "first")]) == 0
    assert main([*base, *plat, *extra, f"--out={tmp_path / 'warm'}"]) == 0
    assert full_builds == [tmp_path / "first"]
    assert folder(tmp_path / "warm") == folder(tmp_path / "first")


def test_a_bad_command_line_is_still_argparses_error(locked, tmp_path, capsys):
    cache = tmp_path / "cache"
    build(locked, cache, tmp_path / "first")
    assert main(["wheelhouse", "build", "--project", str(locked), "--cache-dir", str(cache),
                 "--out", str(tmp_path / "again")]) == 2  # no --platform
    assert "the following arguments are required: --platform" in capsys.readouterr().err
    assert main(["wheelhouse", "build", "--platform", PLATFORM, "--project", str(locked),
                 "--cache-dir", str(cache), "--jobs", "0"]) == 2
    assert not (tmp_path / "again").exists()


def test_the_project_found_from_the_current_folder_takes_the_memo(locked, tmp_path,
                                                                 full_builds, monkeypatch):
    cache = tmp_path / "cache"
    build(locked, cache, tmp_path / "first")
    monkeypatch.chdir(locked / "platforms")  # below the project's lockkit.toml
    assert main(["wheelhouse", "build", "--platform", PLATFORM, "--cache-dir", str(cache)]) == 0
    assert full_builds == [tmp_path / "first"]
    assert folder(locked / "wheelhouse" / PLATFORM) == folder(tmp_path / "first")


def _edit_lock(project: Path) -> None:
    lock = project / "locks" / f"pylock.{PLATFORM}.toml"
    lock.write_bytes(lock.read_bytes() + b"# a comment\n")


def _edit_requirements(project: Path) -> None:
    (project / "requirements.in").write_text("torch==2.5.1\nnumpy\nfilelock\n")


def _edit_config(project: Path) -> None:
    with (project / "lockkit.toml").open("a") as fh:
        fh.write("\n# a comment\n")


def _add_platform(project: Path) -> None:
    shipped = Path(__file__).parents[1] / "platforms" / f"{PLATFORM}.toml"
    (project / "platforms" / f"{PLATFORM}.toml").write_bytes(shipped.read_bytes() + b"\n")


def _touch_blob(project: Path) -> None:
    blob = next(p for p in (project.parent / "cache" / "sha256").rglob("*") if p.is_file())
    os.utime(blob, ns=(blob.stat().st_atime_ns, blob.stat().st_mtime_ns + 1000))


@pytest.mark.parametrize("change", [_edit_lock, _edit_requirements, _edit_config,
                                    _add_platform, _touch_blob])
def test_a_changed_input_never_takes_the_memo(locked, tmp_path, full_builds, change, capsys):
    cache = tmp_path / "cache"
    build(locked, cache, tmp_path / "first")
    change(locked)
    build(locked, cache, tmp_path / "again")
    assert full_builds == [tmp_path / "first", tmp_path / "again"]
    lock = locked / "locks" / f"pylock.{PLATFORM}.toml"
    manifest = json.loads((tmp_path / "again" / "manifest.json").read_text())
    assert manifest["lock_sha256"] == hashlib.sha256(lock.read_bytes()).hexdigest()
    if change is _edit_requirements:  # the lock is stale now: said, and no memo kept
        assert "is stale against its inputs" in capsys.readouterr().err
        build(locked, cache, tmp_path / "third")
        assert len(full_builds) == 3


def _forge_a_hash(memo: dict, cache: Path) -> None:
    sha = memo["wheels"][0][1]
    memo["texts"] = {p: t.replace(sha, "0" * 64) for p, t in memo["texts"].items()}


def _forge_a_wheel(memo: dict, cache: Path) -> None:
    """Another wheel in the cache, checked and stamped, and every text naming its hash:
    a folder consistent in itself, whose wheel the lock never listed."""
    out, partial = Cache(cache).new_partial()
    with out:
        out.write(b"not the lock's wheel")
    evil = Cache(cache).commit(partial, hashlib.sha256(b"not the lock's wheel").hexdigest())
    sha = memo["wheels"][0][1]
    memo["wheels"][0][1:3] = [evil.name, evil.stat().st_size]
    memo["texts"] = {p: t.replace(sha, evil.name) for p, t in memo["texts"].items()}


def _escape_the_folder(memo: dict, cache: Path) -> None:
    memo["texts"]["../outside.txt"] = "written beside the wheelhouse"


def _escape_by_a_wheel(memo: dict, cache: Path) -> None:
    memo["wheels"][0][0] = "../outside.whl"


@pytest.mark.parametrize("forge", [_forge_a_hash, _forge_a_wheel, _escape_the_folder,
                                   _escape_by_a_wheel])
def test_a_memo_that_is_not_the_locks_is_never_taken(locked, tmp_path, full_builds, forge):
    """The cache is writable by its owner: a memo listing a hash the lock does not, or a
    file outside the folder, is refused and the full build runs."""
    cache = tmp_path / "cache"
    build(locked, cache, tmp_path / "first")
    (path,) = (cache / "plan").glob("*.json")
    memo = json.loads(path.read_text())
    forge(memo, cache)
    path.write_text(json.dumps(memo))
    build(locked, cache, tmp_path / "again")
    assert full_builds == [tmp_path / "first", tmp_path / "again"]
    assert folder(tmp_path / "again") == folder(tmp_path / "first")
    assert not (tmp_path / "outside.txt").exists() and not (tmp_path / "outside.whl").exists()


def test_the_flags_and_the_epoch_are_part_of_the_memo(locked, tmp_path, full_builds,
                                                      monkeypatch):
    cache = tmp_path / "cache"
    build(locked, cache, tmp_path / "a")
    build(locked, cache, tmp_path / "b", "--mirror", "https://example.invalid=http://127.0.0.1:9")
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    build(locked, cache, tmp_path / "c")
    assert full_builds == [tmp_path / "a", tmp_path / "b", tmp_path / "c"]
    assert folder(tmp_path / "c") != folder(tmp_path / "a")  # the SBOM has a timestamp now


def test_prune_drops_the_memos(locked, tmp_path):
    cache = tmp_path / "cache"
    build(locked, cache, tmp_path / "out")
    keep = lock_references([locked / "locks" / f"pylock.{PLATFORM}.toml"])
    prune(survey(cache), keep)
    assert list((cache / "plan").glob("*.json")) == []


def test_a_warm_rebuild_imports_none_of_the_full_build(locked, tmp_path):
    cache = tmp_path / "cache"
    build(locked, cache, tmp_path / "first")
    argv = [sys.executable, "-X", "importtime", "-m", "lockkit", "wheelhouse", "build",
            "--project", str(locked), "--platform", PLATFORM, "--cache-dir", str(cache),
            "--out", str(tmp_path / "warm")]
    run = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    imported = {line.split("|")[-1].strip() for line in run.stderr.splitlines()
                if line.startswith("import time:")}
    heavy = {"packaging", "httpx", "rich", "tomli_w", "cyclonedx", "dataclasses",
             "typing", "hashlib", "tempfile", "shutil", "argparse",  # ms each of 25
             "lockkit.wheelhouse", "lockkit.config", "lockkit.platforms"}
    assert "lockkit.buildmemo" in imported
    assert not imported & heavy, sorted(imported & heavy)
    assert folder(tmp_path / "warm") == folder(tmp_path / "first")
