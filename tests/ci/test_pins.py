""".lockkit/ci/requirements.txt: the workflows install nothing without a hash.

The heart is :func:`test_the_pins_install_lockkit_in_a_fresh_venv_offline`: ``lockkit ci
github`` against a loopback default index carrying lockkit's real dependencies (downloaded
once per session by pip), then the workflow's own install line, run by a fresh venv's pip
with the network cut and ``--no-index --find-links``: lockkit and exactly the pinned
dependencies go in; a dependency missing from the file or a changed wheel fails it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from packaging.utils import canonicalize_name

from lockkit import __version__
from lockkit.ci import pins
from lockkit.cli import main
from lockkit.config.keys import LockkitRequirement
from tests.support.index_server import build_wheel
from tests.support.tools import compiled_with_tools

PIP = ("python -m pip install --disable-pip-version-check --require-hashes "
       "--only-binary :all: -r .lockkit/ci/requirements.txt")


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid",
                    "-c", "commit.gpgsign=false", *args], cwd=root, check=True,
                   capture_output=True)


@pytest.fixture(scope="module")
def ci_repo(tmp_path_factory, tool_wheels):
    """A git repository whose linux-cpu project (fake CPU torch from the PyTorch index
    replica, lockkit's real dependencies on a loopback default index) has a committed lock
    and ran ``lockkit ci github --refresh weekly``; yields (repo, stderr of ci github)."""
    base = tmp_path_factory.mktemp("pins")
    with compiled_with_tools(base, tool_wheels, "repo", tools=False) as (repo, _, _), \
            pytest.MonkeyPatch.context() as mp:
        _git(repo, "init", "-q")
        _git(repo, "add", "-A")
        _git(repo, "commit", "-q", "-m", "locks")
        mp.chdir(repo)
        assert main(["ci", "github", "--refresh", "weekly"]) == 0
        yield repo
    shutil.rmtree(base, ignore_errors=True)


def _requirements(text: str) -> list[str]:
    """The file's requirements, each on one line (continuations joined)."""
    joined = re.sub(r" \\\n\s*", " ", text)
    return [line for line in joined.splitlines() if line and not line.startswith("#")]


@pytest.mark.slow
@pytest.mark.network  # tool_wheels: lockkit's dependencies from the default index, once
def test_every_pip_install_in_every_workflow_requires_the_hashes_of_the_pins(ci_repo):
    repo = ci_repo
    flows = sorted((repo / ".github" / "workflows").glob("*.yml"))
    assert [f.name for f in flows] == ["lockkit-refresh.yml", "lockkit.yml"]
    installs = []
    for flow in flows:
        text = flow.read_text()
        steps = [s for job in yaml.safe_load(text)["jobs"].values() for s in job["steps"]]
        assert not [s for s in steps if s.get("shell") == "python"]  # no script installs
        runs = [s["run"] for s in steps if "run" in s]
        installs += [r for r in runs if re.search(r"\bpip\b.*\binstall\b", r)]
        assert "uv pip install" not in text and "LOCKKIT_REQUIREMENT" not in text
    assert installs == [PIP] * 4  # the gate's locks and verify jobs, the refresh's two
    pinned = (repo / pins.PINS_FILE).read_text()
    lines = _requirements(pinned)
    (wheel,) = (repo / ".lockkit" / "ci").glob("lockkit-*.whl")
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    assert lines[0] == f".lockkit/ci/{wheel.name} --hash=sha256:{digest}"
    for line in lines[1:]:
        assert re.fullmatch(r"[a-z0-9._-]+==\S+( ; [^-]+)?( --hash=sha256:[0-9a-f]{64})+",
                            line), line
    names = {canonicalize_name(line.split("==")[0]) for line in lines[1:]}
    assert {"httpx", "rich", "uv", "numpy", "packaging", "tomli-w"} <= names
    assert "hatchling" not in names and "lockkit" not in names  # the build backend is not
    assert f"# lockkit-version: {__version__}\n" in pinned
    assert f"# lockkit-requires: sha256:{pins.requires_digest()}\n" in pinned
    assert "127.0.0.1" not in pinned and "://" not in pinned  # hashes, never an address


def _offline(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run *argv* with the network cut (a private network namespace), pip kept off the
    machine's configuration."""
    if subprocess.run(["unshare", "-rn", "true"], capture_output=True).returncode != 0:
        pytest.skip("unshare -rn (a private network namespace) is refused here")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PIP_", "UV_", "LOCKKIT_", "VIRTUAL_ENV", "PYTHON"))}
    return subprocess.run(["unshare", "-rn", *argv], cwd=cwd, text=True, capture_output=True,
                          timeout=900, env={**env, "PIP_CONFIG_FILE": os.devnull})


def _installed(venv: Path) -> set[str]:
    out = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "list", "--format=json",
                          "--disable-pip-version-check"], capture_output=True, text=True,
                         check=True, env={"PIP_CONFIG_FILE": os.devnull}).stdout
    return {f"{canonicalize_name(p['name'])}=={p['version']}" for p in json.loads(out)}


@pytest.mark.slow
@pytest.mark.network  # tool_wheels: lockkit's dependencies from the default index, once
def test_the_pins_install_lockkit_in_a_fresh_venv_offline(ci_repo, tool_wheels, tmp_path):
    """The workflow's install line, as the step runs it from the repository root, with
    the wheels from a folder and an index-like folder serving a squatted lockkit: only
    what the file pins goes in; a dependency left out, or changed bytes, fail it."""
    repo = ci_repo
    squat = tmp_path / "squat"
    for version in (__version__, "99.0"):
        build_wheel(squat, "lockkit", version, files={"lockkit/squatted.py": "raise 9\n"})
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    before = _installed(venv)

    def pip(requirements: str) -> list[str]:  # the step's line, run by the venv's Python
        argv = shlex.split(PIP)
        argv[0], argv[argv.index("-r") + 1] = str(venv / "bin" / "python"), requirements
        return [*argv, "--no-index", "--find-links", str(tool_wheels[0].parent),
                "--find-links", str(squat)]

    text = (repo / pins.PINS_FILE).read_text()
    # a dependency missing from the file: pip refuses to take it by name
    short = tmp_path / "short.txt"
    short.write_text(re.sub(r"\nidna==[^\n]*(\n    --hash[^\n]*)*", "", text))
    assert "idna==" not in short.read_text()
    missing = _offline(pip(str(short)), repo)
    assert missing.returncode != 0 and "idna" in missing.stderr
    assert "--require-hashes mode" in missing.stderr
    # lockkit's committed wheel changed: its hash no longer matches
    (wheel,) = (repo / ".lockkit" / "ci").glob("lockkit-*.whl")
    good = wheel.read_bytes()
    try:
        wheel.write_bytes(good + b"\0")
        tampered = _offline(pip(pins.PINS_FILE), repo)
    finally:
        wheel.write_bytes(good)
    assert tampered.returncode != 0
    assert "THESE PACKAGES DO NOT MATCH THE HASHES" in tampered.stderr
    assert _installed(venv) == before  # nothing went in
    run = _offline(pip(pins.PINS_FILE), repo)
    assert run.returncode == 0, run.stderr
    lines = _requirements(text)
    wanted = {f"{canonicalize_name(line.split('==')[0])}=={line.split('==')[1].split()[0]}"
              for line in lines[1:] if " ; " not in line}
    got = _installed(venv) - before
    assert f"lockkit=={__version__}" in got
    assert got - {f"lockkit=={__version__}"} <= {
        f"{canonicalize_name(line.split('==')[0])}=={line.split('==')[1].split()[0]}"
        for line in lines[1:]}  # every one pinned in the file
    assert wanted <= got  # and every unconditional pin installed
    site = next((venv / "lib").glob("python*/site-packages"))
    assert (site / "lockkit" / "ci" / "pins.py").is_file()
    assert not (site / "lockkit" / "squatted.py").exists()
    shown = subprocess.run([str(venv / "bin" / "lockkit"), "--version"], text=True,
                           capture_output=True, timeout=120)
    assert __version__ in shown.stdout + shown.stderr


@pytest.mark.slow
@pytest.mark.network  # tool_wheels: lockkit's dependencies from the default index, once
def test_compile_check_says_the_pins_are_stale(ci_repo, capsys):
    repo = ci_repo
    pinned = repo / pins.PINS_FILE
    text = pinned.read_text()
    check = ["compile", "--check", "--project", str(repo)]
    assert main(check) == 0
    capsys.readouterr()
    try:
        pinned.write_text(text.replace(f"# lockkit-version: {__version__}\n",
                                       "# lockkit-version: 0.0.1\n"))
        assert main(check) == 1
        err = capsys.readouterr().err
        assert (f"lockkit: error: .lockkit/ci/requirements.txt: stale (written for lockkit "
                f"0.0.1, this is lockkit {__version__})") in err
        assert "hint: run 'lockkit ci github" in err and "and commit what it writes" in err
        assert "locks not fresh" not in err and "Traceback" not in err
        pinned.write_text(re.sub(r"lockkit-requires: sha256:\w+",
                                 "lockkit-requires: sha256:" + "0" * 64, text))
        assert main(check) == 1
        assert "dependencies (Requires-Dist) changed" in capsys.readouterr().err
        pinned.unlink()
        assert main(check) == 0  # no pins: nothing to say
        assert "requirements.txt" not in capsys.readouterr().err
    finally:
        pinned.write_text(text)


OWN = LockkitRequirement(requirement=".lockkit/ci/lockkit-1.0-py3-none-any.whl",
                         hashes=(f"sha256:{'a' * 64}",), source="path")


def test_stale_follows_the_recorded_version_and_requires_dist(tmp_path):
    path = tmp_path / pins.PINS_FILE
    assert pins.stale(tmp_path) is None  # absent: nothing to say
    path.parent.mkdir(parents=True)
    text = pins.pins_text(OWN, ["idna==3.10 \\\n    --hash=sha256:" + "b" * 64], "3.11")
    path.write_text(text)
    assert pins.stale(tmp_path) is None
    path.write_text(text.replace(f"lockkit-version: {__version__}", "lockkit-version: 9.9"))
    assert pins.stale(tmp_path) == (f".lockkit/ci/requirements.txt: stale (written for "
                                    f"lockkit 9.9, this is lockkit {__version__})")
    path.write_text(text.replace(pins.requires_digest(), "f" * 64))
    assert "Requires-Dist" in (pins.stale(tmp_path) or "")
    path.write_text("# my own pins\nidna==3.10\n")  # not lockkit's: not its to judge
    assert pins.stale(tmp_path) is None
