"""A forged lock is never fresh: ``--check`` refuses files on hosts compile does not take
them from, and ``compile --locked`` compares the committed lock with a fresh resolution
(issue 31). Every lock here is forged as an attacker would: the file's URL and sha256
changed together and the packages digest recomputed the way lockkit computes it."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from lockkit._internal.compat import tomllib
from lockkit.cli import main
from lockkit.config.project import load_project
from lockkit.lock.freshness import fingerprint, packages_digest_of_read, stale_warning
from lockkit.lock.model import Lock
from lockkit.platforms.definitions import load_platforms
from tests.support.index_server import IndexServer
from tests.support.project import LINUX, MAC, OFFICIAL

LOCK = Path("locks") / "pylock.linux-cpu.toml"


def compile_(project: Path, *args: str) -> int:
    return main(["compile", "--project", str(project), "--platform", "linux-cpu", *args])


def forge(project: Path, name: str, url: str, sha256: str) -> None:
    """Point *name*'s wheel at *url* with *sha256*, and recompute ``packages-digest``."""
    path = project / LOCK
    text = path.read_text()
    data = tomllib.loads(text)
    (wheel,) = next(p for p in data["packages"] if p["name"] == name)["wheels"]
    text = text.replace(wheel["url"], url).replace(wheel["hashes"]["sha256"], sha256)
    digest = packages_digest_of_read(tomllib.loads(text)["packages"])
    path.write_text(text.replace(data["tool"]["lockkit"]["packages-digest"], digest))


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def verdict(project: Path, capsys) -> tuple[int, str]:
    capsys.readouterr()
    code = compile_(project, "--check")
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("linux-cpu:")]
    return code, lines[0]


def locked(project: Path, capsys, *platforms: str) -> tuple[int, str]:
    chosen = [a for p in platforms or ("linux-cpu",) for a in ("--platform", p)]
    capsys.readouterr()
    code = main(["compile", "--project", str(project), "--locked", *chosen])
    return code, capsys.readouterr().err


@pytest.fixture
def elsewhere(tmp_path):
    """Another loopback index serving a numpy 2.1.0 of its own (a trojaned build)."""
    server = IndexServer(tmp_path / "elsewhere")
    wheel = server.index("/simple").add("numpy", "2.1.0", tag=LINUX,
                                        files={"numpy/_planted.py": "import os\n"})
    with server:
        yield f"{server.url}/simple/numpy/{wheel.name}", sha256(wheel)


def test_a_wheel_pointed_at_another_host_is_not_fresh_and_not_locked(project, elsewhere,
                                                                      capsys):
    """Before: --check said fresh (the digest is an unkeyed hash anyone can redo)."""
    assert compile_(project) == 0
    url, digest = elsewhere
    forge(project, "numpy", url, digest)
    code, line = verdict(project, capsys)
    assert code == 1
    assert line.startswith(f"linux-cpu: modified ({LOCK}): files on hosts compile does not "
                           "take them from")
    assert f"numpy 2.1.0: {url} is not on the index-url's host or its mirror" in line
    # verify and wheelhouse build, which use a lock as it is, warn of it too
    project_ = load_project(project)
    warning = stale_warning(project_, load_platforms(project)["linux-cpu"],
                            Lock.read(project_.lock_path("linux-cpu")))
    assert warning is not None and warning.startswith("pylock.linux-cpu.toml is modified")
    assert url in warning
    code, err = locked(project, capsys)
    assert code == 1
    assert f"linux-cpu: modified ({LOCK}): files on hosts" in err
    assert f"numpy 2.1.0: numpy-2.1.0-{LINUX}.whl: url {url} in the lock" in err
    assert f"numpy 2.1.0: numpy-2.1.0-{LINUX}.whl: sha256 {digest} in the lock" in err
    assert err.splitlines()[-2].startswith("lockkit: error: locks not what a fresh "
                                           "resolution makes: linux-cpu (modified: ")


@pytest.mark.parametrize("name,where,why", [
    # torch from the default index, where anyone may publish a "torch"
    ("torch", "{default}/simple/torch/torch-2.5.1-" + MAC + ".whl",
     "is not on the PyTorch index's hosts or their mirrors"),
    # numpy from the PyTorch index's stale copy (routing never takes it from there)
    ("numpy", OFFICIAL + "/numpy-1.26.3-" + LINUX + ".whl",
     "is on a PyTorch host, where only the torch-family packages come from"),
])
def test_a_package_pointed_at_the_other_index_is_not_fresh(project, indexes, capsys, name,
                                                           where, why):
    """Each index serves its own packages: a file from the other one is no compile's."""
    assert compile_(project) == 0
    url = where.format(default=indexes.url)
    forge(project, name, url, "0" * 64)
    code, line = verdict(project, capsys)
    assert code == 1 and line.startswith(f"linux-cpu: modified ({LOCK})")
    assert f"{url} {why}" in line


def test_a_wheel_swapped_on_the_same_index_is_caught_by_locked(project, indexes, tmp_path,
                                                               capsys):
    """The offline check cannot see a swap on the index's own host (and says fresh);
    --locked resolves again and names the package, its URL and its hash."""
    assert compile_(project) == 0
    wheel = indexes.server.index("/other").add("numpy", "2.1.0", tag=LINUX,
                                               files={"numpy/_planted.py": "x = 1\n"})
    url = f"{indexes.url}/other/numpy/{wheel.name}"
    forge(project, "numpy", url, sha256(wheel))
    assert verdict(project, capsys) == (0, f"linux-cpu: fresh ({LOCK})")
    before = (project / LOCK).read_bytes()
    code, err = locked(project, capsys)
    assert code == 1
    assert f"linux-cpu: differs ({LOCK})" in err
    good = f"{indexes.url}/simple/numpy/numpy-2.1.0-{LINUX}.whl"
    assert (f"  numpy 2.1.0: numpy-2.1.0-{LINUX}.whl: url {url} in the lock, {good} in a "
            "fresh resolution") in err.splitlines()
    assert f"numpy 2.1.0: numpy-2.1.0-{LINUX}.whl: sha256 {sha256(wheel)} in the lock" in err
    assert "linux-cpu (differs: numpy 2.1.0:" in err.splitlines()[-2]
    assert (project / LOCK).read_bytes() == before


def _snapshot(*folders: Path) -> dict[str, tuple[bytes, int]]:
    return {str(p): (p.read_bytes(), p.stat().st_mtime_ns)
            for folder in folders if folder.exists()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_an_unforged_lock_passes_locked_and_nothing_is_written(project, tmp_path, capsys,
                                                               monkeypatch):
    """--locked resolves every platform again (a page without hashes hashed anew) and
    writes neither a lock nor a memo; a missing lock fails it."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("LOCKKIT_CACHE_DIR", str(cache))
    platforms = ("linux-cpu", "linux-rocm6")
    assert main(["compile", "--project", str(project),
                 *[a for p in platforms for a in ("--platform", p)]]) == 0
    capsys.readouterr()
    memos = cache / "memo"
    assert list(memos.rglob("*.json"))  # compile remembered its locks
    before = _snapshot(project, memos)
    code, err = locked(project, capsys, *platforms)
    assert code == 0, err
    assert f"linux-cpu: matches ({LOCK})" in err.splitlines()
    assert "linux-rocm6: matches (locks/pylock.linux-rocm6.toml)" in err.splitlines()
    assert _snapshot(project, memos) == before
    os.unlink(project / "locks" / "pylock.linux-rocm6.toml")
    code, err = locked(project, capsys, *platforms)
    assert code == 1 and "linux-rocm6: missing (locks/pylock.linux-rocm6.toml)" in err


def test_locked_sees_a_requirement_the_lock_does_not_hold(project, capsys):
    """A stale lock: its verdict, and the package a resolution adds."""
    assert compile_(project) == 0
    (project / "requirements.in").write_text("torch==2.5.1\nnumpy\njinja2\n")
    code, err = locked(project, capsys)
    assert code == 1
    assert f"linux-cpu: stale ({LOCK}): requirements.in: added jinja2" in err
    assert "  jinja2 3.1.6 is in a fresh resolution, not in the lock" in err.splitlines()
    assert "  markupsafe 3.0.3 is in a fresh resolution, not in the lock" in err.splitlines()


@pytest.mark.parametrize("flag,why", [
    ("--check", "--locked checks everything --check does, and resolves again"),
    ("--upgrade", "--locked compares with the locks' own pins"),
    ("--force", "--locked reports an edited lock as a difference"),
])
def test_locked_with_a_flag_that_would_change_its_answer_is_a_usage_error(tmp_path, capsys,
                                                                          flag, why):
    (tmp_path / "lockkit.toml").write_text('platforms = ["linux-cpu"]\n')
    assert main(["compile", "--project", str(tmp_path), "--locked", flag]) == 2
    assert capsys.readouterr().err.splitlines()[0] == (
        f"lockkit: error: --locked and {flag} cannot be given together: {why}")
    assert not (tmp_path / "locks").exists()


def test_without_an_index_url_check_says_what_it_took_on_its_word(project, indexes, capsys):
    """uv's built-in default index is not named by lockkit: with no index-url its files'
    hosts are taken on their word, and the verdict says so; a PyTorch host is still
    refused for a package that is not torch's."""
    assert compile_(project) == 0
    config = project / "lockkit.toml"
    config.write_text(config.read_text().replace(f'index-url = "{indexes.url}/simple"\n', ""))
    path = project / LOCK
    text = path.read_text()
    tool = tomllib.loads(text)["tool"]["lockkit"]
    record = tool["inputs"]
    record["options"]["index-url"] = ""
    path.write_text(text.replace(f'index-url = "{indexes.url}/simple"\nallow-sdist',
                                 'index-url = ""\nallow-sdist')
                    .replace(tool["inputs-fingerprint"], fingerprint(record)))
    capsys.readouterr()
    assert compile_(project, "--check") == 0
    assert capsys.readouterr().err.splitlines() == [
        f"linux-cpu: fresh ({LOCK})",
        "note: linux-cpu: the default index's file URLs were checked only not to be on a "
        "PyTorch host: the project sets no index-url, and lockkit does not name uv's built-in "
        "one ('lockkit compile --locked' compares them with a resolution)"]
    forge(project, "numpy", OFFICIAL + "/numpy-1.26.3-" + LINUX + ".whl", "0" * 64)
    code, line = verdict(project, capsys)
    assert code == 1 and "is on a PyTorch host, where only the torch-family packages" in line


@pytest.mark.parametrize("flags", [(), ("--locked",)], ids=["compile", "locked"])
def test_the_committed_lock_is_read_once_per_compile(project, capsys, monkeypatch, flags):
    """compile (comparing with what it would write, refusing an edited lock) and --locked
    (its verdict and its comparison) read the lock's bytes once, before any work: before,
    compile read them three times and --locked twice (issue 43)."""
    assert compile_(project) == 0
    reads: list[Path] = []
    read_bytes = Path.read_bytes

    def counted(self: Path) -> bytes:
        if self.name == LOCK.name:
            reads.append(self)
        return read_bytes(self)

    monkeypatch.setattr(Path, "read_bytes", counted)
    capsys.readouterr()
    assert compile_(project, *flags) == 0
    assert len(reads) == 1, reads
    assert "linux-cpu: " in capsys.readouterr().err
