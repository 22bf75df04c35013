"""The lock's Python is the one every command uses (issue 24): a project's ``python =``
makes a lock for that version, and wheelhouse build, export, pack, unpack, verify and sync
select its files, build its venv and find its interpreter for that version, never for the
platform's default.

The chain runs over loopback indexes (a fake torch on the PyTorch replica, tiny real
wheels and pip's numpy on the default index) with a real interpreter of the lock's version:
3.10 and 3.12 where this machine has one (found at run time, else skipped saying so), and
always the running interpreter's version on a platform whose default is another. Fake
interpreters (a pyenv-like shim that cannot run, one of the wrong version) stand on PATH
where discovery must pass them by, or say clearly that no interpreter is there.
"""

from __future__ import annotations

import glob
import json
import os
import platform as host
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest
import uv

from lockkit._internal.compat import tomllib
from lockkit._internal.proc import isolated_env
from lockkit.cli import main
from lockkit.errors import ConfigError
from lockkit.lock.meta import python_of
from tests.support.fake_torch import build_fake_torch
from tests.support.index_server import Index, IndexServer
from tests.support.pytorch_index import PyTorchIndex

pytestmark = pytest.mark.skipif(
    sys.platform != "linux" or host.machine() != "x86_64",
    reason="the chain verifies linux-cpu, which only a Linux x86_64 machine runs")

RUNNING = f"{sys.version_info[0]}.{sys.version_info[1]}"
OTHER = "3.12" if RUNNING != "3.12" else "3.10"  # a version that is not the running one
PLATFORM_DEFAULT = "3.11"  # the shipped linux-cpu platform's
TAGS = ("cp310", "cp311", "cp312", "cp313")  # speedups has one wheel for each
NO_APP = ('[verify]\napplication = "none"\n'
          'reason = "the fake torch has no application to run"\n'
          '[verify.resume]\nnone = "nothing trains here"\n')


def interpreter(version: str) -> Path | None:
    """A Python *version* interpreter of this machine, found at run time: uv's discovery,
    pyenv's builds, PATH; each asked its version (a pyenv shim on PATH may not run)."""
    found = subprocess.run([uv.find_uv_bin(), "python", "find", "--system", "--no-config",
                            "--offline", "--no-python-downloads", version],
                           capture_output=True, text=True, timeout=60, env=isolated_env())
    candidates = [found.stdout.strip()] if found.returncode == 0 else []
    candidates += sorted(glob.glob(os.path.expanduser(
        f"~/.pyenv/versions/{version}.*/bin/python{version}")))
    candidates.append(shutil.which(f"python{version}") or "")
    for candidate in filter(None, candidates):
        try:
            said = subprocess.run([candidate, "-I", "-c",
                                   "import sys; print('%d.%d' % sys.version_info[:2])"],
                                  capture_output=True, text=True, timeout=60)
        except OSError:
            continue
        if said.returncode == 0 and said.stdout.strip() == version:
            return Path(candidate).resolve()
    return None


def link(folder: Path, name: str, target: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).symlink_to(target)
    return folder


def shim(folder: Path, name: str, script: str) -> Path:
    """A fake interpreter: a shell script on PATH, as pyenv's shims are."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(f"#!/bin/sh\n{script}\n")
    (folder / name).chmod(0o755)
    return folder


BROKEN = 'echo "pyenv: $(basename "$0"): command not found" >&2; exit 127'


def child(argv: list[str], path: list[Path], tmp: Path) -> subprocess.CompletedProcess:
    """lockkit in a child process whose PATH is *path* alone and whose uv finds no managed
    Python (its data folder is empty): discovery sees what the test put there."""
    env = {**os.environ, "PATH": os.pathsep.join(map(str, path)),
           "XDG_DATA_HOME": str(tmp / "empty-data")}
    return subprocess.run([sys.executable, "-m", "lockkit", *argv], capture_output=True,
                          text=True, timeout=900, env=env)


@pytest.fixture(scope="session")
def numpy_for(tmp_path_factory) -> Iterator[Callable[[str], list[Path]]]:
    """numpy wheels for Python *version*, as pip supplies them here (the fake torch runs
    the gpu step's matmul through numpy, so verify reaches its end); removed at the end."""
    got: dict[str, list[Path]] = {}

    def fetch(version: str) -> list[Path]:
        if version not in got:
            dest = tmp_path_factory.mktemp(f"numpy-{version}")
            run = subprocess.run([sys.executable, "-m", "pip", "download", "--quiet",
                                  "--only-binary", ":all:", "--python-version", version,
                                  "-d", str(dest), "numpy"],
                                 capture_output=True, text=True, timeout=600)
            if run.returncode != 0:
                pytest.skip(f"numpy for Python {version} is not available to pip here: "
                            f"{run.stderr.strip()[-200:]}")
            got[version] = sorted(dest.glob("*.whl"))
        return got[version]
    yield fetch
    for wheels in got.values():
        for wheel in wheels:
            shutil.rmtree(wheel.parent, ignore_errors=True)


@pytest.fixture
def indexes(tmp_path) -> Iterator[tuple[PyTorchIndex, IndexServer, Index]]:
    """The PyTorch replica serving a fake CPU torch (py3-none-any), and a default index
    with filelock and ``speedups``, one wheel per CPython (cp310 ... cp313)."""
    pt = PyTorchIndex(tmp_path / "pytorch")
    server = IndexServer(tmp_path / "index")
    with pt, server:
        pt.put("cpu", build_fake_torch(tmp_path / "built", version="2.5.1+cpu", cuda=None))
        default = server.index("/simple")
        default.add("filelock", "3.16.1")
        for tag in TAGS:
            default.add("speedups", "1.0", tag=f"{tag}-{tag}-linux_x86_64")
        yield pt, server, default


@pytest.fixture
def make(tmp_path, indexes) -> Callable[..., Path]:
    """A project for Python *python* (``python =`` in lockkit.toml; None: no key), compiled
    for linux-cpu (compile's exit code: *exit_code*); *default_python*: the platform's
    default Python, when the project redefines it; *requires_python*: pyproject.toml's."""
    pt, server, default = indexes

    def make(python: str | None, *, numpy: Sequence[Path] = (),
             default_python: str | None = None, name: str = "proj",
             requires_python: str | None = None, exit_code: int = 0) -> Path:
        for wheel in numpy:
            if not (default.root / "numpy" / wheel.name).exists():
                default.put(wheel)
        root = tmp_path / name
        root.mkdir()
        (root / "requirements.in").write_text(
            "torch==2.5.1\nspeedups\nfilelock\n" + ("numpy\n" if numpy else ""))
        mirrors = "".join(f'"{k}" = "{v}"\n' for k, v in pt.mirrors().items())
        key = f'python = "{python}"\n' if python is not None else ""
        (root / "lockkit.toml").write_text(
            f'index-url = "{server.url}/simple"\nplatforms = ["linux-cpu"]\n'
            f'{key}{NO_APP}[mirrors]\n{mirrors}')
        if requires_python is not None:  # a pyproject.toml that is no input, only a project
            (root / "pyproject.toml").write_text(
                f'[project]\nname = "{name}"\nversion = "1.0"\n'
                f'requires-python = "{requires_python}"\n')
        if default_python is not None:  # the project's own linux-cpu, another default
            shipped = Path(__file__).resolve().parents[2] / "platforms" / "linux-cpu.toml"
            (root / "platforms").mkdir()
            (root / "platforms" / "linux-cpu.toml").write_text(shipped.read_text().replace(
                f'python = "{PLATFORM_DEFAULT}"', f'python = "{default_python}"'))
        assert main(["compile", "--project", str(root), "--platform", "linux-cpu"]) \
            == exit_code
        return root
    return make


def lock_of(root: Path) -> dict:
    return tomllib.loads((root / "locks" / "pylock.linux-cpu.toml").read_text())


def build(root: Path, tmp: Path) -> Path:
    assert main(["wheelhouse", "build", "--project", str(root), "--platform", "linux-cpu",
                 "--cache-dir", str(tmp / "cache")]) == 0
    return root / "wheelhouse" / "linux-cpu"


def speedups(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.glob("speedups-*.whl"))


def tag(version: str) -> str:
    return "cp" + version.replace(".", "")


def export_header(root: Path, tmp: Path) -> str:
    out = tmp / f"export-{root.name}.txt"
    assert main(["export", "--project", str(root), "--platform", "linux-cpu",
                 "--output", str(out)]) == 0
    return out.read_text()


# --- without an interpreter: selection follows the lock -----------------------------------

def test_wheelhouse_build_export_pack_and_unpack_after_a_python_override(make, tmp_path,
                                                                         capsys):
    """The old failure: ``python = "3.12"`` compiled, then wheelhouse build selected the
    lock's files for the platform's 3.11 and failed (``python_full_version '3.11.0' ...
    does not satisfy '==3.12.*'``); export, pack and unpack did the same. Each now selects
    for the lock's Python: the wheelhouse carries the cp312 wheel of speedups, no other."""
    root = make(OTHER)
    lock = lock_of(root)
    assert lock["requires-python"] == f"=={OTHER}.*" and lock["tool"]["lockkit"]["python"] \
        == OTHER and OTHER != PLATFORM_DEFAULT
    folder = build(root, tmp_path)
    assert speedups(folder) == [f"speedups-1.0-{tag(OTHER)}-{tag(OTHER)}-linux_x86_64.whl"]
    assert f"fresh Python {OTHER} venv" in export_header(root, tmp_path)
    archive = tmp_path / "linux-cpu.wheelhouse.tar"
    assert main(["wheelhouse", "pack", "--project", str(root), "--platform", "linux-cpu",
                 "--output", str(archive)]) == 0
    assert main(["wheelhouse", "unpack", str(archive), "--out", str(tmp_path / "unpacked"),
                 "--lock", str(root / "locks" / "pylock.linux-cpu.toml")]) == 0
    assert speedups(tmp_path / "unpacked") == speedups(folder)
    assert "does not satisfy" not in capsys.readouterr().err


def test_a_lock_whose_two_python_records_disagree_is_refused_naming_both(make, tmp_path,
                                                                         capsys):
    root = make(OTHER)
    path = root / "locks" / "pylock.linux-cpu.toml"
    path.write_text(path.read_text().replace(f'requires-python = "=={OTHER}.*"',
                                             'requires-python = "==3.9.*"'))
    assert main(["wheelhouse", "build", "--project", str(root), "--platform", "linux-cpu",
                 "--cache-dir", str(tmp_path / "cache")]) == 2
    err = capsys.readouterr().err
    assert f"tool.lockkit.python is '{OTHER}' but requires-python is '==3.9.*'" in err
    assert "Traceback" not in err


# --- requires-python: the lock's Python when no python key names one --------------------

def python_in(root: Path) -> tuple[str, str]:
    lock = lock_of(root)
    return lock["requires-python"], lock["tool"]["lockkit"]["python"]


def test_requires_python_keeps_the_default_when_it_satisfies_else_the_lowest_that_does(
        make, capsys):
    """The old failure: ``requires-python = ">=3.12"`` and no ``python`` key locked for the
    platform's 3.11, saying nothing. The default is kept while it satisfies (``>=3.11.4``:
    a 3.11 release does), else the lowest Python that does; changing requires-python so
    that the chosen Python moves makes the committed lock stale."""
    kept = make(None, requires_python=">=3.11.4", name="kept")
    assert python_in(kept) == (f"=={PLATFORM_DEFAULT}.*", PLATFORM_DEFAULT)
    raised = make(None, requires_python=">=3.12", name="raised")
    assert python_in(raised) == ("==3.12.*", "3.12")
    capsys.readouterr()
    (kept / "pyproject.toml").write_text((kept / "pyproject.toml").read_text().replace(
        ">=3.11.4", ">=3.13"))
    assert main(["compile", "--project", str(kept), "--platform", "linux-cpu", "--check"]) != 0
    assert f"stale (locks/pylock.linux-cpu.toml): python: {PLATFORM_DEFAULT} -> 3.13" \
        in capsys.readouterr().err
    assert main(["compile", "--project", str(kept), "--platform", "linux-cpu"]) == 0
    assert python_in(kept) == ("==3.13.*", "3.13")


def test_a_requires_python_no_python_satisfies_is_one_line_and_exit_2(make, capsys):
    """Nothing is written."""
    root = make(None, requires_python=">=3.15", exit_code=2)
    err = capsys.readouterr().err
    assert "pyproject.toml's requires-python '>=3.15' is satisfied by no Python platform " \
        "linux-cpu supports" in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not (root / "locks").exists()


@pytest.mark.parametrize("command", [["compile"], ["compile", "--check"],
                                     ["export", "--platform", "linux-cpu"]])
def test_a_python_key_that_requires_python_excludes_is_refused_naming_both(
        make, capsys, command):
    """The old failure (issue 42): ``python = "3.11"`` with ``requires-python = ">=3.12"``
    wrote a 3.11 lock with cp311 wheels; uv lock refuses the pair. Now every command that
    reads the project ends exit 2 in one line naming both, and nothing is written; a
    ``python`` key inside requires-python still names the lock's Python."""
    root = make("3.11", requires_python=">=3.12", exit_code=2)
    assert main([*command, "--project", str(root)]) == 2
    err = capsys.readouterr().err
    line = (f"{root / 'lockkit.toml'}: python '3.11' is outside pyproject.toml's "
            "project.requires-python '>=3.12'")
    assert err.count(line) == 2 and "Traceback" not in err
    assert "hint: make the two agree: change python, or widen requires-python" in err
    assert not (root / "locks").exists()
    config = root / "lockkit.toml"
    config.write_text(config.read_text().replace('python = "3.11"', 'python = "3.12"'))
    assert main(["compile", "--project", str(root), "--platform", "linux-cpu"]) == 0
    assert python_in(root) == ("==3.12.*", "3.12")


@pytest.mark.parametrize("written", ['">=3.12,<<"', "3.12"])
def test_a_malformed_requires_python_is_one_line_and_exit_2(tmp_path, capsys, written):
    (tmp_path / "lockkit.toml").write_text('platforms = ["linux-cpu"]\n')
    (tmp_path / "requirements.in").write_text("filelock\n")
    (tmp_path / "pyproject.toml").write_text(
        f'[project]\nname = "p"\nversion = "1.0"\nrequires-python = {written}\n')
    assert main(["compile", "--project", str(tmp_path), "--platform", "linux-cpu"]) == 2
    err = capsys.readouterr().err
    assert f"pyproject.toml: project.requires-python: {tomllib.loads('v = ' + written)['v']!r} " \
        "is not a version specifier" in err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "locks").exists()


@pytest.mark.parametrize(("data", "said"), [
    ({"requires-python": "==3.12.*", "tool": {"lockkit": {"python": "3.12"}}}, "3.12"),
    ({"requires-python": "==3.10.*"}, "3.10"),  # a lock that says it only once
    ({"requires-python": ">=3.9", "tool": {"lockkit": {"python": "3.13"}}}, "3.13"),
])
def test_python_of_reads_the_locks_own_python(data, said):
    assert python_of(data, "pylock.toml") == said


@pytest.mark.parametrize(("data", "error"), [
    ({"requires-python": ">=3.9"}, "names no Python version"),
    ({"tool": {"lockkit": {"python": 3.12}}}, "tool.lockkit.python: expected a version"),
    ({"requires-python": "==3.11.*", "tool": {"lockkit": {"python": "3.12"}}},
     "the lock was edited"),
])
def test_python_of_refuses_a_lock_that_does_not_say_one(data, error):
    with pytest.raises(ConfigError, match=error):
        python_of(data, "pylock.toml")


# --- with a real interpreter of the lock's Python --------------------------------------------

def verify(root: Path, path: list[Path], tmp: Path, *extra: str) -> tuple[int, dict, str]:
    reports = root / "report"
    # --absolute-paths: the tests compare the interpreters verify chose by their paths
    run = child(["verify", "--project", str(root), "--platform", "linux-cpu",
                 "--report-dir", str(reports), "--absolute-paths", *extra], path, tmp)
    doc = json.loads((reports / "dossier.json").read_text())
    shutil.rmtree(reports)
    return run.returncode, doc, run.stderr


def statuses(doc: dict) -> dict[str, str]:
    return {s["name"]: s["status"] for s in doc["steps"]}


def chain(root: Path, version: str, path: list[Path], tmp: Path) -> dict:
    """wheelhouse -> export -> verify -> sync, each for Python *version*; the dossier."""
    folder = build(root, tmp)
    assert speedups(folder) == [f"speedups-1.0-{tag(version)}-{tag(version)}-linux_x86_64.whl"]
    assert f"fresh Python {version} venv" in export_header(root, tmp)
    code, doc, err = verify(root, path, tmp)
    assert code == 0, doc["first_error"] or err
    assert set(statuses(doc).values()) <= {"passed", "skipped"}
    assert doc["steps"][0]["detail"]["interpreter"]["version"] == version
    assert doc["system"]["python"]["version"].startswith(f"{version}.")
    synced = child(["sync", "--project", str(root), "--platform", "linux-cpu"], path, tmp)
    assert synced.returncode == 0, synced.stderr
    said = subprocess.run([str(root / ".venv" / "bin" / "python"), "-c",
                           "import sys, speedups; print('%d.%d' % sys.version_info[:2])"],
                          capture_output=True, text=True, timeout=60, check=True)
    assert said.stdout.strip() == version
    return doc


@pytest.mark.slow
@pytest.mark.parametrize("version", ["3.10", "3.12"])
def test_the_chain_runs_on_the_locks_python(version, make, numpy_for, tmp_path):
    """compile -> wheelhouse -> export -> verify -> sync with ``python = "<version>"``, the
    interpreter found by verify and sync themselves (on PATH, for uv and lockkit to find)."""
    found = interpreter(version)
    if found is None:
        pytest.skip(f"no Python {version} interpreter on this machine (uv python find, "
                    f"~/.pyenv/versions/{version}.*, python{version} on PATH)")
    root = make(version, numpy=numpy_for(version))
    chain(root, version, [link(tmp_path / "bin", f"python{version}", found)], tmp_path)


@pytest.mark.slow
def test_the_locks_python_wins_over_the_platforms_default_found_on_path(
        make, numpy_for, tmp_path):
    """Always runs: the project's linux-cpu defaults to another Python than the running
    one, and ``python =`` names the running one. On PATH, first a pyenv-like shim of that
    name that cannot run, then a venv's interpreter (``uv python find --system`` passes
    both by): verify and sync find the venv's by lockkit's own PATH search, and build
    their venvs from it."""
    other_default = "3.9" if RUNNING != "3.9" else "3.10"
    root = make(RUNNING, numpy=numpy_for(RUNNING), default_python=other_default)
    assert python_of(lock_of(root), "lock") == RUNNING
    env = tmp_path / "env"  # a venv of the real interpreter behind lockkit's own
    subprocess.run([uv.find_uv_bin(), "venv", "--quiet", "--no-config", "--python",
                    str(Path(sys.executable).resolve()), str(env)], check=True, timeout=120,
                   env=isolated_env())
    path = [shim(tmp_path / "shims", f"python{RUNNING}", BROKEN), env / "bin"]
    doc = chain(root, RUNNING, path, tmp_path)
    assert doc["steps"][0]["detail"]["interpreter"]["executable"] == str(
        env / "bin" / f"python{RUNNING}")
    tried = [(c["argv"][0] if c["argv"][1] == "-I" else " ".join(c["argv"][1:4]),
              c["returncode"]) for c in doc["commands"] if c["step"] == "host"
             and (c["argv"][1] == "-I" or c["argv"][1:3] == ["python", "find"])]
    assert tried == [("python find --system", 2),
                     (str(tmp_path / "shims" / f"python{RUNNING}"), 127),
                     (str(env / "bin" / f"python{RUNNING}"), 0)]


def test_verify_looks_for_the_python_requires_python_chose(make, tmp_path):
    """No ``python`` key, ``requires-python = ">=3.12"`` on a 3.11 platform: the lock is
    for 3.12, and verify asks for a 3.12 interpreter (here none runs: one shim that
    cannot), not for the platform's default."""
    root = make(None, requires_python=">=3.12")
    build(root, tmp_path)
    path = [shim(tmp_path / "shims", "python3.12", BROKEN),
            shim(tmp_path / "other", f"python{PLATFORM_DEFAULT}",
                 f"exec {Path(sys.executable).resolve()} \"$@\"")]
    code, doc, _ = verify(root, path, tmp_path)
    assert code == 1 and statuses(doc)["host"] == "failed"
    assert "no Python 3.12 interpreter found (pylock.linux-cpu.toml is for Python 3.12" \
        in doc["first_error"]


def test_verify_and_sync_with_no_interpreter_of_the_locks_python_say_so(make, tmp_path):
    """Fake interpreters only (a shim that cannot run, one of another version): verify and
    sync fail in one line naming the version the lock needs and ``--python PATH``; sync
    makes no venv. ``--python`` of the wrong version is named as such."""
    root = make(OTHER)
    build(root, tmp_path)
    path = [shim(tmp_path / "shims", f"python{OTHER}", BROKEN),
            shim(tmp_path / "wrong", f"python{OTHER}",
                 f"exec {Path(sys.executable).resolve()} \"$@\"")]
    code, doc, err = verify(root, path, tmp_path)
    line = (f"no Python {OTHER} interpreter found (pylock.linux-cpu.toml is for Python "
            f"{OTHER}; 'uv python find {OTHER}' and python{OTHER} on PATH found none): pass "
            f"--python PATH to a Python {OTHER} interpreter")
    assert code == 1 and statuses(doc)["host"] == "failed"
    assert line in doc["first_error"] and line in err and "Traceback" not in err
    synced = child(["sync", "--project", str(root), "--platform", "linux-cpu"], path, tmp_path)
    assert synced.returncode == 1 and line in synced.stderr
    assert not (root / ".venv").exists()
    code, doc, _ = verify(root, path, tmp_path, "--python", str(path[1] / f"python{OTHER}"))
    assert code == 1 and f"is Python {RUNNING}; pylock.linux-cpu.toml is for Python " \
        f"{OTHER}: pass --python with a Python {OTHER} interpreter" in doc["first_error"]
