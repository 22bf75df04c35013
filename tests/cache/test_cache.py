"""`lockkit cache info` / `lockkit cache prune`: keep what the project's locks reference.

The cache is filled the way lockkit fills it (``wheelhouse build`` over the loopback
indexes of conftest, ``Cache.new_partial``/``commit``), never by writing its layout here.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lockkit.cache.store import Cache
from lockkit.cli import main

CPU_FILES = 3  # filelock, numpy, torch 2.5.1+cpu


def build(project: Path, cache: Path, platform: str = "linux-cpu") -> None:
    """A wheelhouse build, less the identity records it leaves in memo/ (one per blob,
    their size varying with the inode numbers): these tests count blobs and partials."""
    assert main(["compile", "--project", str(project), "--platform", platform]) == 0
    assert main(["wheelhouse", "build", "--project", str(project), "--platform", platform,
                 "--cache-dir", str(cache), "--out", str(cache.parent / f"wh-{platform}")]) == 0
    records = cache / "memo" / "blob"
    assert len(list(records.glob("*.json"))) >= CPU_FILES  # lockkit.cache.identity's
    shutil.rmtree(cache / "memo")


def commit(cache: Path, data: bytes) -> Path:
    """A blob as a download lands it: a partial file, then its final name."""
    out, partial = Cache(cache).new_partial()
    with out:
        out.write(data)
    return Cache(cache).commit(partial, hashlib.sha256(data).hexdigest())


def partial(cache: Path, data: bytes, age: float = 0.0) -> Path:
    out, path = Cache(cache).new_partial()
    with out:
        out.write(data)
    then = time.time() - age
    os.utime(path, (then, then))
    return path


def cache_cli(capsys, *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["cache", *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def blobs(cache: Path) -> set[str]:
    return {p.name for p in (cache / "sha256").glob("*/*")}


@pytest.fixture
def filled(project, indexes, tmp_path) -> Path:
    """The cache after a real wheelhouse build, plus one blob no lock names and two partial
    downloads: one from a run that died two days ago, one possibly still running."""
    cache = tmp_path / "cache"
    build(project, cache)
    commit(cache, b"a wheel of an old lock" * 100)
    partial(cache, b"x" * 300, age=2 * 24 * 3600)
    partial(cache, b"y" * 50)
    return cache


def test_info_counts_files_bytes_partials_and_what_the_locks_reference(project, filled,
                                                                        capsys):
    code, out, _ = cache_cli(capsys, "info", "--cache-dir", str(filled), "--project",
                             str(project), "--json")
    assert code == 0
    doc = json.loads(out)
    sizes = {p.name: p.stat().st_size for p in (filled / "sha256").glob("*/*")}
    orphan = hashlib.sha256(b"a wheel of an old lock" * 100).hexdigest()
    assert (doc["files"], doc["bytes"]) == (CPU_FILES + 1, sum(sizes.values()))
    assert doc["referenced"] == {"files": CPU_FILES, "bytes": sum(sizes.values()) - 2200}
    assert doc["unreferenced"] == {"files": 1, "bytes": sizes[orphan]} == {"files": 1,
                                                                          "bytes": 2200}
    assert doc["partial"] == {"files": 2, "bytes": 350, "stale_files": 1, "stale_bytes": 300}
    assert doc["locks"] == [str(project / "locks" / "pylock.linux-cpu.toml")]
    code, out, err = cache_cli(capsys, "info", "--cache-dir", str(filled), "--project",
                               str(project))
    assert "unused      1, 2.2 kB: 'lockkit cache prune' removes them" in out
    assert "uv cache dir" in err


def test_dry_run_lists_and_removes_nothing_then_prune_frees_it(project, indexes, filled,
                                                               capsys):
    before = blobs(filled)
    parts = sorted(p.name for p in (filled / "partial").iterdir())
    code, out, _ = cache_cli(capsys, "prune", "--cache-dir", str(filled), "--project",
                             str(project), "--dry-run")
    assert code == 0
    orphan = hashlib.sha256(b"a wheel of an old lock" * 100).hexdigest()
    assert f"sha256/{orphan[:2]}/{orphan}  2.2 kB" in out
    assert "would remove 2 file(s) (2.5 kB), would free 2.5 kB; kept 3" in out
    assert blobs(filled) == before and sorted(p.name for p in (filled / "partial").iterdir()) \
        == parts
    code, out, _ = cache_cli(capsys, "prune", "--cache-dir", str(filled), "--project",
                             str(project))
    assert code == 0 and "removed 2 file(s) (2.5 kB), freed 2.5 kB; kept 3" in out
    assert blobs(filled) == before - {orphan}
    assert len(list((filled / "partial").iterdir())) == 1  # the young one may be running
    indexes.forget_requests()  # what the locks reference is still there: nothing downloads
    assert main(["wheelhouse", "build", "--project", str(project), "--platform", "linux-cpu",
                 "--cache-dir", str(filled), "--out", str(filled.parent / "again")]) == 0
    assert indexes.wheel_requests() == []


def test_every_lock_of_every_given_project_is_kept(project, indexes, tmp_path, capsys):
    cache = tmp_path / "cache"
    build(project, cache)
    build(project, cache, "linux-cu126")
    both = blobs(cache)
    code, out, _ = cache_cli(capsys, "prune", "--cache-dir", str(cache), "--project",
                             str(project))
    assert code == 0 and "removed 0 file(s)" in out and blobs(cache) == both
    other = tmp_path / "other"  # the cu126 lock now belongs to another project only
    (other / "locks").mkdir(parents=True)
    (project / "locks" / "pylock.linux-cu126.toml").rename(
        other / "locks" / "pylock.linux-cu126.toml")
    code, out, _ = cache_cli(capsys, "prune", "--cache-dir", str(cache), "--project",
                             str(project), "--project", str(other), "--json")
    assert json.loads(out)["files"] == 0 and blobs(cache) == both
    code, out, _ = cache_cli(capsys, "prune", "--cache-dir", str(cache), "--project",
                             str(project), "--json")
    removed = json.loads(out)["removed"]
    assert len(removed) == 3  # torch +cu126, triton, nvidia-cublas-cu12; the shared stay
    assert len(blobs(cache)) == len(both) - 3


def test_a_blob_linked_into_a_wheelhouse_frees_no_disk(project, filled, tmp_path, capsys):
    orphan = hashlib.sha256(b"a wheel of an old lock" * 100).hexdigest()
    os.link(filled / "sha256" / orphan[:2] / orphan, tmp_path / "held.whl")
    code, out, _ = cache_cli(capsys, "prune", "--cache-dir", str(filled), "--project",
                             str(project), "--json")
    doc = json.loads(out)
    assert (doc["bytes"], doc["freed_bytes"]) == (2500, 300)
    assert (tmp_path / "held.whl").read_bytes() == b"a wheel of an old lock" * 100


# --- refusals ---------------------------------------------------------------------------------

def _refused(capsys, cache: Path, project: Path, *extra: str) -> str:
    code, out, err = cache_cli(capsys, "prune", "--cache-dir", str(cache), "--project",
                               str(project), *extra)
    assert code == 2 and out == ""
    assert err.splitlines()[0].startswith("lockkit: error: ")
    return err.splitlines()[0]


def test_a_folder_that_is_not_the_cache_is_refused(project, filled, tmp_path, capsys):
    home = tmp_path / "home"
    (home / "sha256").mkdir(parents=True)
    (home / "notes.txt").write_text("mine")
    line = _refused(capsys, home, project)
    assert "does not look like lockkit's download cache" in line and "'notes.txt'" in line
    assert (home / "notes.txt").read_text() == "mine"
    code, _, _ = cache_cli(capsys, "info", "--cache-dir", str(home))
    assert code == 2


@pytest.mark.parametrize("plant", ["link-to-file", "link-as-shard", "link-as-partial-folder"])
def test_links_out_of_the_cache_are_never_followed(project, filled, tmp_path, capsys, plant):
    outside = tmp_path / "outside"
    outside.mkdir()
    victim = outside / ("0" * 64)
    victim.write_bytes(b"not the cache's")
    if plant == "link-to-file":
        (filled / "sha256" / "00").mkdir()
        (filled / "sha256" / "00" / victim.name).symlink_to(victim)
    elif plant == "link-as-shard":
        (filled / "sha256" / "00").symlink_to(outside)
    else:
        for p in (filled / "partial").iterdir():
            p.unlink()
        (filled / "partial").rmdir()
        (filled / "partial").symlink_to(outside)
    line = _refused(capsys, filled, project)
    assert "is a link where lockkit keeps" in line
    assert victim.read_bytes() == b"not the cache's" and len(blobs(filled)) >= CPU_FILES


def test_a_misnamed_blob_is_refused(project, filled, capsys):
    stray = filled / "sha256" / "ab" / "download.whl"
    stray.parent.mkdir(exist_ok=True)
    stray.write_bytes(b"?")
    assert "sha256/ab/download.whl is not a sha256" in _refused(capsys, filled, project)
    assert stray.exists()


def test_no_locks_or_an_unreadable_lock_removes_nothing(project, filled, tmp_path, capsys):
    before = blobs(filled)
    empty = tmp_path / "empty"
    empty.mkdir()
    assert "no locks in" in _refused(capsys, filled, empty)
    (project / "locks" / "pylock.linux-cu126.toml").write_text("lock-version = [\n")
    assert "pylock.linux-cu126.toml: invalid TOML" in _refused(capsys, filled, project)
    assert blobs(filled) == before


def test_a_cache_that_does_not_exist_yet(project, tmp_path, capsys):
    code, out, _ = cache_cli(capsys, "info", "--cache-dir", str(tmp_path / "none"), "--json")
    assert code == 0 and json.loads(out)["exists"] is False
    (project / "locks").mkdir()
    (project / "locks" / "pylock.linux-cpu.toml").write_text(
        'lock-version = "1.0"\ncreated-by = "lockkit"\npackages = []\n')
    code, out, _ = cache_cli(capsys, "prune", "--cache-dir", str(tmp_path / "none"),
                             "--project", str(project))
    assert code == 0 and "removed 0 file(s)" in out
    assert not (tmp_path / "none").exists()


def test_default_folder_is_lockkit_cache_dir(project, filled, capsys, monkeypatch):
    monkeypatch.setenv("LOCKKIT_CACHE_DIR", str(filled))
    code, out, _ = cache_cli(capsys, "info", "--project", str(project), "--json")
    assert code == 0 and json.loads(out)["cache_dir"] == str(filled)


def test_uv_cache_is_pruned_only_with_uv(project, filled, tmp_path, capsys, monkeypatch):
    """``--uv`` runs ``uv cache prune``, which drops a bucket of an older uv version."""
    uv_cache = tmp_path / "uv-cache"
    old = uv_cache / "wheels-v0" / "x" / "f"
    old.parent.mkdir(parents=True)
    old.write_text("from an older uv")
    monkeypatch.setenv("UV_CACHE_DIR", str(uv_cache))
    code, _, err = cache_cli(capsys, "prune", "--cache-dir", str(filled), "--project",
                             str(project), "--uv", "--dry-run")
    assert code == 0 and "would run: uv cache prune" in err and old.exists()
    code, _, _ = cache_cli(capsys, "prune", "--cache-dir", str(filled), "--project",
                           str(project))
    assert code == 0 and old.exists()  # without --uv, uv's cache is uv's
    code, _, err = cache_cli(capsys, "prune", "--cache-dir", str(filled), "--project",
                             str(project), "--uv")
    assert code == 0 and "uv cache prune: Removed 1 file" in err and not old.exists()


def test_help_names_uvs_own_cache_commands():
    run = subprocess.run([sys.executable, "-m", "lockkit", "cache", "--help"],
                         capture_output=True, text=True, check=True)
    text = " ".join(run.stdout.split())
    assert "'uv cache dir'" in text and "'uv cache prune'" in text


def test_a_project_that_is_not_a_folder_is_a_usage_error(filled, tmp_path, capsys):
    code, out, err = cache_cli(capsys, "info", "--cache-dir", str(filled), "--project",
                               str(tmp_path / "nowhere"))
    assert (code, out) == (2, "")
    assert err.splitlines()[0] == f"lockkit: error: --project {tmp_path / 'nowhere'}: not a folder"


# --- memos and the folders older lockkits made ------------------------------------------------

def test_info_says_memos_are_on_in_a_private_cache_and_counts_them(filled, project, capsys):
    from lockkit.cache.memo import MemoStore

    store = MemoStore(filled)
    assert store.put("compile", store.key("compile", "x"), {"lock": "abc"})
    code, out, _ = cache_cli(capsys, "info", "--cache-dir", str(filled), "--project",
                             str(project))
    assert code == 0
    line = next(ln for ln in out.splitlines() if ln.startswith("memos"))
    assert line.startswith("memos       on: the cache is private to you; 1 in memo/")
    code, out, _ = cache_cli(capsys, "info", "--cache-dir", str(filled), "--json")
    assert json.loads(out)["memos"]["on"] is True and json.loads(out)["memos"]["files"] == 1


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX modes")
def test_info_says_memos_are_off_in_a_group_writable_cache(filled, project, capsys):
    os.chmod(filled, 0o770)
    code, out, _ = cache_cli(capsys, "info", "--cache-dir", str(filled), "--project",
                             str(project))
    assert code == 0
    assert f"memos       off: {filled} is writable by group; every blob is re-hashed" in out
    code, out, _ = cache_cli(capsys, "info", "--cache-dir", str(filled), "--json")
    assert json.loads(out)["memos"]["on"] is False


@pytest.mark.parametrize("legacy", ["checked", "sbom", "tools", "plan", "launch"])
def test_folders_of_older_lockkits_are_accepted_and_pruned(project, filled, capsys, legacy):
    (filled / legacy).mkdir()
    (filled / legacy / "old.json").write_text("{}")
    code, _, _ = cache_cli(capsys, "info", "--cache-dir", str(filled), "--project",
                           str(project))
    assert code == 0
    code, _, _ = cache_cli(capsys, "prune", "--cache-dir", str(filled), "--project",
                           str(project))
    assert code == 0 and not (filled / legacy).exists()
    assert len(blobs(filled)) == CPU_FILES  # the lock's blobs stay


# --- every part counted, by part ----------------------------------------------------------

def _verify_part(cache: Path, outside: Path) -> None:
    """verify's part as a run leaves it: uv's unpacked files (two names, one inode) and a
    wheel hard-linked from a wheelhouse, which removing verify/ does not free."""
    (cache / "verify" / "uv" / "pkg").mkdir(parents=True)
    (cache / "verify" / "uv" / "pkg" / "big.so").write_bytes(b"u" * 40_000)
    (cache / "verify" / "pyc").mkdir()
    os.link(cache / "verify" / "uv" / "pkg" / "big.so", cache / "verify" / "pyc" / "same.so")
    (cache / "verify" / "wheels").mkdir()
    (outside / "held.whl").write_bytes(b"w" * 5_000)
    os.link(outside / "held.whl", cache / "verify" / "wheels" / "held.whl")


def test_info_counts_every_part_verify_included_and_prune_reports_what_it_freed_by_part(
        project, filled, tmp_path, capsys):
    _verify_part(filled, tmp_path)
    code, out, _ = cache_cli(capsys, "info", "--cache-dir", str(filled), "--project",
                             str(project), "--json")
    doc = json.loads(out)
    assert code == 0 and doc["parts"]["verify"] == {"files": 3, "bytes": 45_000}
    assert doc["parts"]["partial"] == {"files": 2, "bytes": 350}
    assert doc["parts"]["sha256"] == {"files": doc["files"], "bytes": doc["bytes"]}
    assert doc["total_bytes"] == sum(p["bytes"] for p in doc["parts"].values()) > 45_000
    code, out, _ = cache_cli(capsys, "info", "--cache-dir", str(filled), "--project",
                             str(project))
    assert "            verify/    45.0 kB, 3 file(s)" in out and "total       50.6 kB" in out

    code, out, _ = cache_cli(capsys, "prune", "--cache-dir", str(filled), "--project",
                             str(project), "--json")
    doc = json.loads(out)
    assert doc["parts"]["verify"] == {"files": 3, "bytes": 45_000, "freed_bytes": 40_000}
    assert doc["parts"]["sha256"]["freed_bytes"] == 2200
    assert doc["freed_bytes"] == 2200 + 300 + 40_000 + doc["parts"].get(
        "memo", {"freed_bytes": 0})["freed_bytes"]
    assert not (filled / "verify").exists() and (tmp_path / "held.whl").is_file()


def test_prune_text_names_the_freed_bytes_of_verify_s_part(project, filled, tmp_path, capsys):
    _verify_part(filled, tmp_path)
    code, out, _ = cache_cli(capsys, "prune", "--cache-dir", str(filled), "--project",
                             str(project), "--dry-run")
    assert code == 0 and "verify/  45.0 kB (3 file(s))" in out
    assert "  verify/  3 file(s), would free 40.0 kB" in out
    code, out, _ = cache_cli(capsys, "prune", "--cache-dir", str(filled), "--project",
                             str(project))
    assert "  verify/  3 file(s), freed 40.0 kB" in out and "freed 0 bytes" not in out
