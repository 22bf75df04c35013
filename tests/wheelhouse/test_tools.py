"""tools/: lockkit travels with its wheelhouse, and the offline machine runs verify from it.

The heart is :func:`test_the_offline_machine_installs_lockkit_and_verifies`: a wheelhouse
built over loopback (the app's fake CPU torch from the PyTorch index replica, lockkit's
real dependencies from a loopback default index filled once per session by pip), then,
with the network cut (``unshare -rn``), a fresh venv, ``pip install --no-index
--find-links <wheelhouse>/tools lockkit`` and ``lockkit verify`` from that venv.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from lockkit import __version__
from lockkit.cache.store import Cache
from lockkit.cli import main
from lockkit.config.project import load_project
from lockkit.lock.model import Lock
from lockkit.wheelhouse import archive, ownwheel, tools, trust
from lockkit.wheelhouse.manifest import Manifest
from tests.support.tools import compiled_with_tools

PLATFORM = "linux-cpu"


@pytest.fixture
def with_tools(monkeypatch):
    monkeypatch.delenv("LOCKKIT_NO_TOOLS", raising=False)


def build(root: Path, *extra: str) -> int:
    return main(["wheelhouse", "build", "--project", str(root), "--platform", PLATFORM,
                 "--cache-dir", str(root / "cache"), *extra])


# --- offline: the flag, the note, the error -------------------------------------------------

def test_no_tools_leaves_the_folder_out(project, with_tools):
    assert main(["compile", "--project", str(project), "--platform", PLATFORM]) == 0
    assert build(project, "--no-tools") == 0
    folder = project / "wheelhouse" / PLATFORM
    assert folder.is_dir() and not (folder / "tools").exists()
    manifest = json.loads((folder / "manifest.json").read_text())
    assert {f["kind"] for f in manifest["files"]} == {"wheel", "meta"}


def test_an_index_without_lockkit_dependencies_fails_naming_the_flag(project, with_tools,
                                                                       capsys):
    """The loopback default index has none of lockkit's dependencies: one line, exit 1,
    and nothing written (the stage is removed)."""
    assert main(["compile", "--project", str(project), "--platform", PLATFORM]) == 0
    capsys.readouterr()
    assert build(project) == 1
    err = capsys.readouterr().err
    assert f"{PLATFORM}: lockkit's own dependencies (for tools/): " in err
    assert "--no-tools" in err and "Traceback" not in err
    assert len([ln for ln in err.splitlines() if ln.startswith("lockkit: error:")]) == 1
    assert not (project / "wheelhouse").exists() or not any((project / "wheelhouse").iterdir())


def test_a_python_lockkit_does_not_run_on_gets_a_note_and_no_tools(project, with_tools,
                                                                    capsys):
    """A project's own platform on Python 3.9 (below lockkit's Requires-Python)."""
    shipped = Path(__file__).resolve().parents[2] / "platforms" / "linux-cpu.toml"
    (project / "platforms" / "linux-py39.toml").write_text(
        shipped.read_text().replace('python = "3.11"', 'python = "3.9"'))
    (project / "requirements.in").write_text("filelock\n")
    assert main(["compile", "--project", str(project), "--platform", "linux-py39"]) == 0
    capsys.readouterr()
    assert main(["wheelhouse", "build", "--project", str(project), "--platform", "linux-py39",
                 "--cache-dir", str(project / "cache")]) == 0
    err = capsys.readouterr().err
    assert ("linux-py39: no tools/ in this wheelhouse: lockkit needs Python >=3.10, the "
            "lock is for Python 3.9") in err
    assert (project / "wheelhouse" / "linux-py39" / "manifest.json").is_file()
    assert not (project / "wheelhouse" / "linux-py39" / "tools").exists()


@pytest.mark.parametrize(("python", "skipped"), [("3.9", True), ("3.10", False),
                                                 ("3.11", False), ("3.14", False)])
def test_skip_reason_follows_requires_python(python, skipped):
    assert (ownwheel.skip_reason(python) is not None) is skipped


def test_runtime_requirements_are_the_installed_metadata_without_extras():
    reqs = ownwheel.runtime_requirements()
    names = {r.split(">")[0].split(";")[0].split("=")[0].strip() for r in reqs}
    assert {"httpx", "packaging", "rich", "uv", "numpy", "tomli-w", "tomli"} <= names
    assert not names & {"pytest", "ruff", "mypy", "pyyaml"}  # the test and lint extras


# --- with lockkit's real dependencies on a loopback index (fetched once: network) -----------


@pytest.fixture(scope="module")
def built(tmp_path_factory, tool_wheels):
    """A linux-cpu project (fake CPU torch, no application) with its wheelhouse and tools/,
    both indexes on loopback; yields (project, wheelhouse, server, pytorch index)."""
    base = tmp_path_factory.mktemp("tools")
    with compiled_with_tools(
            base, tool_wheels, requirements="torch==2.5.1\nnumpy\n",  # the probe needs numpy
            config='[verify]\napplication = "none"\nreason = "the fake torch has no model to '
                   'run"\n[verify.resume]\nnone = "nothing here trains"\n') as (root, server, pt):
        assert build(root) == 0
        yield root, root / "wheelhouse" / PLATFORM, server, pt
    shutil.rmtree(base, ignore_errors=True)


@pytest.mark.slow
@pytest.mark.network
def test_tools_are_listed_pinned_and_apart_from_the_app(built):
    root, wheelhouse, server, pt = built
    folder = wheelhouse / "tools"
    wheels = sorted(p.name for p in folder.glob("*.whl"))
    assert f"lockkit-{__version__}-py3-none-any.whl" in wheels
    assert any(w.startswith("httpx-") for w in wheels) and any(w.startswith("uv-") for w in wheels)
    assert not any(w.startswith("tomli-2") for w in wheels)  # python_version < '3.11' only
    manifest = json.loads((wheelhouse / "manifest.json").read_text())
    listed = {f["path"]: f for f in manifest["files"] if f["kind"] == "tool"}
    assert set(listed) == {f"tools/{w}" for w in wheels} | {"tools/requirements.txt"}
    for path, entry in listed.items():
        assert tools_sha(wheelhouse / path) == entry["sha256"]
    pins = [ln for ln in (folder / "requirements.txt").read_text().splitlines()
            if not ln.startswith("#")]
    assert len(pins) == len(wheels)
    assert all(f"--hash=sha256:{listed[f'tools/{w}']['sha256']}" in "\n".join(pins)
               for w in wheels)
    # the application's own files know nothing of the tools
    app = (wheelhouse / "requirements.txt").read_text() + (wheelhouse / "pylock.toml").read_text()
    assert "torch" in app and "lockkit==" not in app and "httpx" not in app
    assert not (wheelhouse / "simple" / "httpx").exists()
    # every tool came from the loopback default index; none from the PyTorch index
    fetched = {p.rsplit("/", 1)[-1] for p, _ in server.requests if p.endswith(".whl")}
    assert set(wheels) - {f"lockkit-{__version__}-py3-none-any.whl"} <= fetched
    assert not [p for p in pt.requests if "httpx" in p or "/uv" in p]
    # the lock's check ignores tools/: the top-level wheels are exactly the lock's
    checked = trust.check_folder(wheelhouse, trust.committed(
        Lock.read(root / "locks" / f"pylock.{PLATFORM}.toml"), root),
        Manifest.of_folder(wheelhouse).entries)
    assert [c.package for c in checked] == ["numpy", "torch"]


def tools_sha(path: Path) -> str:
    from lockkit._internal.fs import sha256_file

    return sha256_file(path)


@pytest.mark.slow
@pytest.mark.network
def test_lockkit_wheel_is_reproducible_and_complete(built, tmp_path):
    """Built again from the source tree into another cache: the same bytes; it carries the
    shipped platforms as lockkit/_platforms (pyproject's force-include), no bytecode."""
    root, wheelhouse, _, _ = built
    assert ownwheel.source_tree() is not None  # this checkout runs as an editable install
    again = tools.own_wheel(Cache(tmp_path / "cache"), load_project(root))
    shipped = wheelhouse / "tools" / again.filename
    assert again.path.read_bytes() == shipped.read_bytes()
    names = zipfile.ZipFile(shipped).namelist()
    assert "lockkit/_platforms/linux-cpu.toml" in names and "lockkit/wheelhouse/tools.py" in names
    assert not [n for n in names if n.endswith(".pyc") or "__pycache__" in n]


@pytest.mark.network
def test_pack_and_unpack_carry_the_tools(built, tmp_path):
    root, wheelhouse, _, _ = built
    lock_file = Lock.read(root / "locks" / f"pylock.{PLATFORM}.toml")
    tar = archive.pack(wheelhouse, tmp_path / "wh.tar", lock=lock_file, project_dir=root)
    out = archive.unpack(tar, tmp_path / "out", lock=lock_file, project_dir=root)
    for entry in tools_entries(wheelhouse):
        assert (out / entry).read_bytes() == (wheelhouse / entry).read_bytes()


def tools_entries(wheelhouse: Path) -> list[str]:
    manifest = json.loads((wheelhouse / "manifest.json").read_text())
    return [f["path"] for f in manifest["files"] if f["kind"] == "tool"]


# --- the offline machine ------------------------------------------------------------------

def offline_env() -> dict[str, str]:
    """No PIP_* (the machine's pip carries a global config), no lockkit test switches."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PIP_", "UV_", "LOCKKIT_", "VIRTUAL_ENV", "PYTHON"))}
    env["PIP_CONFIG_FILE"] = os.devnull
    return env


def offline(argv: list[str], cwd: Path, log: list[str]) -> subprocess.CompletedProcess:
    """Run *argv* with the network cut (a private network namespace), logging it."""
    if subprocess.run(["unshare", "-rn", "true"], capture_output=True).returncode != 0:
        pytest.skip("unshare -rn (a private network namespace) is refused here, so the "
                    "network cannot be cut for the offline machine")
    run = subprocess.run(["unshare", "-rn", *argv], cwd=cwd, env=offline_env(),
                         capture_output=True, text=True, timeout=900)
    log.append(f"$ {shlex.join(argv)}\n{run.stdout}{run.stderr}[exit {run.returncode}]")
    return run


@pytest.fixture(scope="module")
def machine(built, tmp_path_factory):
    """The offline machine: a fresh venv with lockkit installed from tools/ alone."""
    root, wheelhouse, _, _ = built
    here = tmp_path_factory.mktemp("offline-machine")
    log: list[str] = []
    nothing = offline([sys.executable, "-c", "import socket; socket.create_connection("
                       "('192.0.2.1', 80), timeout=3)"], here, log)
    assert nothing.returncode != 0 and "unreachable" in nothing.stderr.lower()
    assert offline([sys.executable, "-m", "venv", "v"], here, log).returncode == 0
    install = offline(["v/bin/pip", "install", "--isolated", "--no-index", "--find-links",
                       str(wheelhouse / "tools"), "lockkit"], here, log)
    assert install.returncode == 0, "\n".join(log)
    yield here, log
    shutil.rmtree(here, ignore_errors=True)  # two venvs with numpy and uv: ~300 MB


@pytest.mark.slow
@pytest.mark.network
def test_the_offline_machine_installs_lockkit_and_verifies(built, machine):
    root, wheelhouse, _, _ = built
    here, log = machine
    version = offline(["v/bin/lockkit", "--version"], here, log)
    assert version.returncode == 0 and __version__ in version.stdout + version.stderr
    run = offline(["v/bin/lockkit", "verify", "--wheelhouse", str(wheelhouse), "--project",
                   str(root), "--platform", PLATFORM, "--report-dir", str(here / "report")],
                  here, log)
    (here / "commands.log").write_text("\n\n".join(log) + "\n")
    print("\n\n".join(log))  # the closing note shows these (pytest -s)
    assert run.returncode == 0, "\n".join(log)
    doc = json.loads((here / "report" / "dossier.json").read_text())
    assert doc["result"] == "passed" and doc["first_error"] is None
    assert "verify linux-cpu: passed" in run.stdout


@pytest.mark.slow
@pytest.mark.network
def test_the_hash_pinned_route_of_tools_requirements(built, machine):
    """tools/requirements.txt's own instructions: every tool pinned by hash, any pip."""
    _, wheelhouse, _, _ = built
    here, log = machine
    assert offline([sys.executable, "-m", "venv", "h"], here, log).returncode == 0
    run = offline(["h/bin/pip", "install", "--isolated", "--no-index", "--find-links",
                   str(wheelhouse / "tools"), "--require-hashes", "-r",
                   str(wheelhouse / "tools" / "requirements.txt")], here, log)
    assert run.returncode == 0, "\n".join(log[-1:])


REBUILD = ("import sys; from pathlib import Path; "
           "from lockkit.wheelhouse import ownwheel as tools; "
           "assert tools.source_tree() is None; "
           "print(tools.rebuild_installed(Path(sys.argv[1])))")


@pytest.mark.network
def test_an_installed_lockkit_rebuilds_its_wheel(built, machine):
    """Installed from a wheel (no source tree), lockkit rebuilds its wheel from RECORD:
    the same bytes twice, the same members and contents as the wheel it came from; an
    edited install is refused."""
    _, wheelhouse, _, _ = built
    here, log = machine
    made = []
    for n in (1, 2):
        (here / f"r{n}").mkdir()
        run = offline(["v/bin/python", "-c", REBUILD, str(here / f"r{n}")], here, log)
        assert run.returncode == 0, run.stderr
        made.append(Path(run.stdout.strip()))
    assert made[0].read_bytes() == made[1].read_bytes()
    original = zipfile.ZipFile(wheelhouse / "tools" / made[0].name)
    rebuilt = zipfile.ZipFile(made[0])
    assert sorted(rebuilt.namelist()) == sorted(original.namelist())
    record = f"lockkit-{__version__}.dist-info/RECORD"
    assert all(rebuilt.read(n) == original.read(n) for n in original.namelist() if n != record)
    # the same RECORD lines as hatchling's (the order may differ)
    assert set(rebuilt.read(record).splitlines()) == set(original.read(record).splitlines())
    edited = next((here / "v" / "lib").glob("python*/site-packages/lockkit/wheelhouse/tools.py"))
    edited.write_text(edited.read_text() + "# edited\n")
    (here / "r3").mkdir()
    run = offline(["v/bin/python", "-c", REBUILD, str(here / "r3")], here, log)
    assert run.returncode != 0
    assert "lockkit/wheelhouse/tools.py: differs from the installed" in run.stderr


@pytest.mark.slow
@pytest.mark.network
def test_a_rebuild_of_the_folder_takes_its_pins_and_asks_no_index(built, tmp_path, capsys):
    """The tools' resolution is kept in the wheelhouse's own tools/requirements.txt, under
    its resolution key: a build into the same folder sends no request
    to either index and builds nothing (every file by hash; lockkit's own wheel is the one
    the first build put in the cache); a build into a new folder resolves again. Nothing
    of the tools is kept in the download cache."""
    root, wheelhouse, server, pt = built
    cache = tmp_path / "cache"
    argv = ["wheelhouse", "build", "--project", str(root), "--platform", PLATFORM,
            "--cache-dir", str(cache)]
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("LOCKKIT_NO_TOOLS", raising=False)
        assert main([*argv, "--out", str(tmp_path / "first")]) == 0
        assert not (cache / "tools").exists() and not (cache / "memo" / "tools").exists()
        reqs = (tmp_path / "first" / "tools" / "requirements.txt").read_text()
        assert "# resolution: " in reqs
        asked = len(server.requests), len(pt.requests)
        # a file of it gone: not up to date, so the build runs, and takes the folder's pins
        (tmp_path / "first" / "simple" / "index.html").unlink()
        assert main([*argv, "--out", str(tmp_path / "first")]) == 0
        assert (len(server.requests), len(pt.requests)) == asked
        assert (tmp_path / "first" / "simple" / "index.html").is_file()
        # nothing new: up to date, tools/ checked by identity with the rest (its key is the
        # pins' resolution key)
        capsys.readouterr()
        assert main([*argv, "--out", str(tmp_path / "first")]) == 0
        assert ": up to date, " in capsys.readouterr().err
        assert (len(server.requests), len(pt.requests)) == asked
        assert main([*argv, "--out", str(tmp_path / "again")]) == 0
        assert len(server.requests) > asked[0]  # a new folder: resolved again
    names = sorted(os.listdir(tmp_path / "again" / "tools"))
    assert names == sorted(os.listdir(wheelhouse / "tools"))
    for name in names:
        assert tools_sha(tmp_path / "again" / "tools" / name) == \
            tools_sha(wheelhouse / "tools" / name)
    assert (tmp_path / "first" / "tools" / "requirements.txt").read_text() == reqs
