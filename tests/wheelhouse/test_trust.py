"""Only the committed lock is trusted: a wheelhouse's own files, a packed archive's manifest
and the shared cache are all checked against it, by hashing the bytes."""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from pathlib import Path

import pytest

from lockkit._internal.compat import tomllib
from lockkit.cache.store import Cache
from lockkit.cli import main
from lockkit.wheelhouse.archive import pack as pack_folder
from tests.support.index_server import build_wheel
from tests.support.project import lockkit
from tests.support.wheelhouse import build_cli, compiled

PLATFORM = "linux-cpu"


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def statuses(doc: dict) -> dict[str, str]:
    return {s["name"]: s["status"] for s in doc["steps"]}


def entry(folder: Path, package: str) -> dict:
    """The manifest's entry for *package*'s wheel."""
    manifest = json.loads((folder / "manifest.json").read_text())
    return next(f for f in manifest["files"] if f.get("package") == package)


def rewrite(path: Path, text: str) -> None:
    path.unlink()  # never write through: a copy's files may share an inode with the original
    path.write_text(text)


def forge(folder: Path, filename: str, data: bytes) -> None:
    """Replace one wheel and make the folder agree with itself again, as an attacker would:
    its pylock.toml, requirements.txt, simple/ pages and manifest.json all name the new
    bytes."""
    wheel = folder / filename
    old, old_size = sha(wheel.read_bytes()), wheel.stat().st_size
    wheel.unlink()
    wheel.write_bytes(data)
    texts = [folder / "pylock.toml", folder / "requirements.txt",
             *sorted((folder / "simple").rglob("*.html"))]
    for path in texts:
        text = path.read_text().replace(old, sha(data))
        if path.name == "pylock.toml":
            text = re.sub(rf"\bsize = {old_size}\b", f"size = {len(data)}", text)
        rewrite(path, text)
    manifest = json.loads((folder / "manifest.json").read_text())
    for f in manifest["files"]:
        body = (folder / f["path"]).read_bytes()
        f["size"], f["sha256"] = len(body), sha(body)
    rewrite(folder / "manifest.json", json.dumps(manifest, indent=2, sort_keys=True) + "\n")


def trojan_numpy(folder: Path, tmp_path: Path) -> str:
    """Swap numpy's wheel for a rebuilt one carrying a sneaky module; returns its file name."""
    real = entry(folder, "numpy")
    _, version, tag = real["path"][:-4].split("-", 2)
    built = build_wheel(tmp_path / "trojan", "numpy", version, tag=tag,
                        files={"numpy/sneaky.py": "print('owned')\n"})
    forge(folder, real["path"], built.read_bytes())
    local = tomllib.loads((folder / "pylock.toml").read_text())  # self-consistent, as forged
    numpy = next(p for p in local["packages"] if p["name"] == "numpy")
    assert numpy["wheels"][0]["hashes"]["sha256"] == sha((folder / real["path"]).read_bytes())
    return real["path"]


def verify(project: Path, *extra: str) -> tuple[int, dict]:
    reports = project / "report"
    run = lockkit("verify", "--project", str(project), "--platform", PLATFORM, "--no-gpu",
                  "--report-dir", str(reports), *extra, network=False)
    return run.returncode, json.loads((reports / "dossier.json").read_text())


def assert_refused_before_install(code: int, doc: dict, *needles: str) -> None:
    assert code == 1
    assert statuses(doc)["install"] == "failed", doc["first_error"]
    assert statuses(doc)["pip-check"] == statuses(doc)["inventory"] == "not-run"
    assert not [c for c in doc["commands"] if c["step"] == "install"]  # no installer ran
    for needle in needles:
        assert needle in doc["first_error"]


# --- verify: the committed lock, not the wheelhouse's own files ---------------------------------

def test_tampered_self_consistent_wheelhouse_fails_install(copy_of, tmp_path):
    project = copy_of()
    numpy = trojan_numpy(project / "wheelhouse" / PLATFORM, tmp_path)
    code, doc = verify(project)
    assert_refused_before_install(code, doc, numpy, "the committed lock says")


def test_forged_wheelhouse_through_pack_and_unpack(copy_of, tmp_path, capsys):
    project = copy_of()
    folder = project / "wheelhouse" / PLATFORM
    numpy = trojan_numpy(folder, tmp_path)
    archive = tmp_path / "forged.wheelhouse.tar"
    capsys.readouterr()
    assert main(["wheelhouse", "pack", "--project", str(project), "--platform", PLATFORM,
                 "-o", str(archive)]) == 1  # pack checks against the lock the manifest names
    assert numpy in capsys.readouterr().err.splitlines()[0] and not archive.exists()
    pack_folder(folder, archive)  # the archive a forger's own tool writes (no lock)
    unpacked = tmp_path / "unpacked"
    assert main(["wheelhouse", "unpack", str(archive), "--out", str(unpacked)]) == 0
    code, doc = verify(project, "--wheelhouse", str(unpacked))
    assert_refused_before_install(code, doc, numpy)

    lock = project / "locks" / f"pylock.{PLATFORM}.toml"
    capsys.readouterr()
    refused = tmp_path / "refused"
    assert main(["wheelhouse", "unpack", str(archive), "--out", str(refused),
                 "--lock", str(lock)]) == 1
    error = next(ln for ln in capsys.readouterr().err.splitlines()  # after 'unpacking...'
                 if ln.startswith("lockkit: error: "))
    assert numpy in error and str(archive) in error
    assert not refused.exists() and not [p for p in tmp_path.iterdir()
                                         if p.name.startswith(".refused.")]
    assert main(["wheelhouse", "pack", "--project", str(project), "--platform", PLATFORM,
                 "-o", str(tmp_path / "again.tar"), "--lock", str(lock)]) == 1
    assert numpy in capsys.readouterr().err.splitlines()[0]
    assert not (tmp_path / "again.tar").exists()


def _compile(project: Path, requirements: str) -> Path:
    (project / "requirements.in").write_text(requirements)
    assert main(["compile", "--project", str(project), "--platform", PLATFORM]) == 0
    return project / "locks" / f"pylock.{PLATFORM}.toml"


def test_wheelhouse_of_another_lock_with_lock_sha256_edited_is_refused(project, tmp_path):
    _compile(project, "numpy\n")
    other = tmp_path / "other-wheelhouse"
    assert main(["wheelhouse", "build", "--project", str(project), "--platform", PLATFORM,
                 "--out", str(other), "--cache-dir", str(tmp_path / "cache")]) == 0
    lock = _compile(project, "torch==2.5.1\nnumpy\n")
    manifest = json.loads((other / "manifest.json").read_text())
    manifest["lock_sha256"] = sha(lock.read_bytes())
    rewrite(other / "manifest.json", json.dumps(manifest))
    code, doc = verify(project, "--wheelhouse", str(other))
    assert_refused_before_install(code, doc, "missing (torch==2.5.1+cpu)")


@pytest.mark.slow
def test_honest_wheelhouse_packs_and_unpacks_with_the_committed_lock(project, tmp_path):
    lock = _compile(project, "torch==2.5.1\nnumpy\n")
    assert main(["wheelhouse", "build", "--project", str(project), "--platform", PLATFORM,
                 "--cache-dir", str(tmp_path / "cache")]) == 0
    archive = tmp_path / "ok.tar"
    assert main(["wheelhouse", "pack", "--project", str(project), "--platform", PLATFORM,
                 "-o", str(archive), "--lock", str(lock)]) == 0
    assert main(["wheelhouse", "unpack", str(archive), "--out", str(tmp_path / "ok"),
                 "--lock", str(lock)]) == 0
    _, doc = verify(project, "--wheelhouse", str(tmp_path / "ok"), "--absolute-paths")
    assert statuses(doc)["install"] == statuses(doc)["inventory"] == "passed", doc["first_error"]
    install = next(c for c in doc["commands"] if c["step"] == "install")
    assert "--require-hashes" in install["argv"]
    assert not any(a.startswith(str(tmp_path / "ok")) and a.endswith((".toml", ".txt"))
                   for a in install["argv"])  # never the wheelhouse's own lock files


# --- pack: a folder that agrees with itself is not enough -----------------------------------

def _drop_a_wheel(out: Path) -> str:
    manifest = json.loads((out / "manifest.json").read_text())
    wheel = next(f for f in manifest["files"] if f["path"].startswith("filelock-"))
    (out / wheel["path"]).unlink()
    manifest["files"].remove(wheel)
    rewrite_listed(out / "manifest.json", json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    rewrite_listed(out / "requirements.txt", "".join(
        ln + "\n" for ln in (out / "requirements.txt").read_text().splitlines()
        if not ln.startswith("filelock==")))
    return "filelock"


def _add_an_index_line(out: Path) -> str:
    rewrite_listed(out / "requirements.txt", "--extra-index-url http://127.0.0.1:9/simple\n"
                   + (out / "requirements.txt").read_text())
    return "requirements.txt"


def _add_an_unhashed_directory(out: Path) -> str:
    rewrite_listed(out / "pylock.toml", (out / "pylock.toml").read_text()
                   + '\n[[packages]]\nname = "evil"\n[packages.directory]\npath = "/tmp/evil"\n')
    return "pylock.toml"


def _edit_a_simple_page(out: Path) -> str:
    page = next((out / "simple").glob("*/index.html"))
    rewrite_listed(page, page.read_text().replace("#sha256=", "#md5="))
    return page.relative_to(out).as_posix()


def rewrite_listed(path: Path, text: str) -> None:
    """Write *path* anew and list its new size and hash in the manifest, as a forger
    would: the folder agrees with itself again."""
    path.unlink()
    path.write_text(text)
    out = next(p for p in path.parents if (p / "manifest.json").is_file())
    if path.name == "manifest.json":
        return
    manifest = json.loads((out / "manifest.json").read_text())
    rel = path.relative_to(out).as_posix()
    for f in manifest["files"]:
        if f["path"] == rel:
            f["size"], f["sha256"] = len(text.encode()), sha(text.encode())
    (out / "manifest.json").unlink()
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")


@pytest.mark.parametrize("tamper", [_drop_a_wheel, _add_an_index_line,
                                    _add_an_unhashed_directory, _edit_a_simple_page])
def test_pack_refuses_a_wheelhouse_tampered_to_agree_with_itself(project, tmp_path, capsys,
                                                                 tamper):
    compiled(project)
    out = project / "wheelhouse" / PLATFORM
    assert build_cli(project, tmp_path / "cache") == 0
    named = tamper(out)
    capsys.readouterr()
    tar = tmp_path / "wh.tar"
    code = main(["wheelhouse", "pack", "--project", str(project), "--platform", PLATFORM,
                 "-o", str(tar)])
    err = capsys.readouterr().err.splitlines()
    assert code in (1, 2) and not tar.exists()
    assert err[0].startswith("lockkit: error: ") and named in err[0]
    assert not [ln for ln in err if "Traceback" in ln]


def test_pack_without_the_lock_the_manifest_names_is_a_usage_error(project, tmp_path, capsys):
    lock = compiled(project)
    assert build_cli(project, tmp_path / "cache") == 0
    lock.rename(tmp_path / "moved.toml")
    capsys.readouterr()
    assert main(["wheelhouse", "pack", "--project", str(project), "--platform", PLATFORM]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("lockkit: error: ") and lock.name in err[0]
    assert main(["wheelhouse", "pack", "--project", str(project), "--platform", PLATFORM,
                 "--lock", str(tmp_path / "moved.toml")]) == 0


# --- the cache: checked on every hit, never aliased writable ------------------------------------

def _built(project: Path, cache: Path) -> tuple[Path, str, Path]:
    """Build the wheelhouse; numpy's wheel in it, the lock's sha256, and its cache blob."""
    _compile(project, "torch==2.5.1\nnumpy\n")
    assert main(["wheelhouse", "build", "--project", str(project), "--platform", PLATFORM,
                 "--cache-dir", str(cache)]) == 0
    folder = project / "wheelhouse" / PLATFORM
    numpy = entry(folder, "numpy")
    return folder / numpy["path"], numpy["sha256"], Cache(cache).path(numpy["sha256"])


def test_cache_blobs_are_read_only(project, tmp_path):
    _, digest, blob = _built(project, tmp_path / "cache")
    assert sha(blob.read_bytes()) == digest
    assert stat.S_IMODE(blob.stat().st_mode) == 0o444


def test_poisoned_cache_blob_is_evicted_and_fetched_again(project, indexes, tmp_path):
    wheel, digest, blob = _built(project, tmp_path / "cache")
    poisoned = bytearray(blob.read_bytes())
    poisoned[len(poisoned) // 2] ^= 0xFF  # same size, other bytes
    os.chmod(blob, 0o644)
    blob.write_bytes(bytes(poisoned))
    indexes.forget_requests()
    assert main(["wheelhouse", "build", "--project", str(project), "--platform", PLATFORM,
                 "--cache-dir", str(tmp_path / "cache")]) == 0
    assert [r for r in indexes.wheel_requests() if wheel.name in r]  # fetched again
    assert sha(wheel.read_bytes()) == digest == entry(wheel.parent, "numpy")["sha256"]
    assert sha(blob.read_bytes()) == digest and stat.S_IMODE(blob.stat().st_mode) == 0o444


def test_writing_through_a_wheelhouse_file_never_reaches_a_later_build(project, indexes,
                                                                         tmp_path):
    """Wheels are hard links to read-only blobs (as uv links its cache into venvs). Root
    can still write through one (``cp x.whl wheelhouse/``): that voids the blob's checked
    stamp, so the next build re-hashes it, evicts it and fetches the file again, and the
    new wheelhouse holds the lock's bytes."""
    wheel, digest, blob = _built(project, tmp_path / "cache")
    assert wheel.samefile(blob) and stat.S_IMODE(blob.stat().st_mode) == 0o444
    try:
        with open(wheel, "wb") as fh:
            fh.write(b"trojan")
    except PermissionError:  # not root: read-only holds, nothing changed
        assert sha(blob.read_bytes()) == digest
        return
    assert sha(blob.read_bytes()) != digest  # root wrote through the link
    indexes.forget_requests()
    assert main(["wheelhouse", "build", "--project", str(project), "--platform", PLATFORM,
                 "--cache-dir", str(tmp_path / "cache")]) == 0
    assert [r for r in indexes.wheel_requests() if wheel.name in r]  # fetched again
    assert sha(wheel.read_bytes()) == digest == entry(wheel.parent, "numpy")["sha256"]
