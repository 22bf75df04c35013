"""`lockkit verify --existing PYTHON`: an environment lockkit did not build, checked as it is.

Each test builds a real venv from the lock's wheelhouse with real uv (or pip), as a docker
image or a cluster's shared venv is built, tampers with it, and runs verify against it.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import uv

from lockkit._internal.proc import isolated_env
from lockkit.cli import main
from lockkit.report.model import Dossier
from tests.support.fake_torch import build_fake_torch
from tests.support.index_server import IndexServer, build_wheel
from tests.support.project import lockkit
from tests.support.pytorch_index import PyTorchIndex

STEPS = ["host", "start-up", "inventory", "pip-check", "system", "gpu", "extensions",
         "application", "resume"]
WAIVER = ('[verify]\napplication = "none"\nreason = "no application in this test project"\n'
          '[verify.resume]\nnone = "nothing trains in this test project"\n')


@pytest.fixture(scope="module")
def locked(tmp_path_factory, numpy_wheel) -> Path:
    """A linux-cpu project locking a fake CPU torch, a real numpy (the fake multiplies
    with it; its scripts and compiled modules are in RECORD too) and filelock 3.16.1, its
    wheelhouse built (both indexes on 127.0.0.1, stopped once it is)."""
    base = tmp_path_factory.mktemp("existing")
    pt = PyTorchIndex(base / "pytorch")
    server = IndexServer(base / "index")
    with pt, server:
        return locked_project(base, numpy_wheel, pt, server)


def locked_project(base: Path, numpy_wheel: Path, pt: PyTorchIndex, server: IndexServer
                   ) -> Path:
    """The project of :func:`locked` in *base*, on the running indexes *pt* and *server*."""
    default = server.index("/simple")
    pt.put("cpu", build_fake_torch(base / "built", version="2.5.1+cpu", cuda=None))
    default.add("filelock", "3.16.1", files={"filelock/_api.py": "LOCKED = True\n"})
    default.put(numpy_wheel)
    root = base / "proj"
    root.mkdir()
    (root / "requirements.in").write_text("torch==2.5.1\nfilelock\nnumpy\n")
    mirrors = "".join(f'"{k}" = "{v}"\n' for k, v in pt.mirrors().items())
    (root / "lockkit.toml").write_text(f'index-url = "{server.url}/simple"\n'
                                       f'platforms = ["linux-cpu"]\n{WAIVER}'
                                       f"[mirrors]\n{mirrors}")
    assert main(["compile", "--project", str(root)]) == 0
    assert main(["wheelhouse", "build", "--project", str(root), "--platform", "linux-cpu",
                 "--cache-dir", str(base / "cache"), "--no-tools"]) == 0
    return root


def built_env(project: Path, where: Path, installer: str = "uv") -> Path:
    """A venv holding the lock's wheels, installed by real uv or pip from the wheelhouse:
    the environment someone else built. Returns its interpreter."""
    wheelhouse = project / "wheelhouse" / "linux-cpu"
    venv = where / "env"
    if installer == "uv":
        subprocess.run([uv.find_uv_bin(), "venv", "--no-config", "--quiet", "--python",
                        sys.executable, str(venv)], check=True, env=isolated_env())
        install(venv, "--find-links", str(wheelhouse), "--require-hashes", "-r",
                str(wheelhouse / "requirements.txt"))
    else:
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet",
                        "--isolated", "--no-index", "--disable-pip-version-check",
                        "--find-links", str(wheelhouse), "--require-hashes", "-r",
                        str(wheelhouse / "requirements.txt")], check=True, env=isolated_env())
    return venv / "bin" / "python"


def install(venv: Path, *args: str) -> None:
    subprocess.run([uv.find_uv_bin(), "pip", "install", "--no-config", "--quiet", "--offline",
                    "--no-index", "--python", str(venv / "bin" / "python"),
                    "--cache-dir", str(venv.parent / "uv-cache"), *args],
                   check=True, env=isolated_env())


def site(python: Path) -> Path:
    (folder,) = python.parent.parent.glob("lib/python*/site-packages")
    return folder


def tree(folder: Path) -> dict[str, tuple[int, int, int]]:
    """Every path under *folder* with its size, mtime and mode: what 'unchanged' means."""
    return {str(p.relative_to(folder)): (p.lstat().st_size, p.lstat().st_mtime_ns,
                                         p.lstat().st_mode)
            for p in folder.rglob("*")}


def verify_existing(project: Path, python: Path, *extra: str) -> tuple[int, dict, str]:
    reports = project.parent / f"report-{len(list(project.parent.glob('report-*')))}"
    run = lockkit("verify", "--project", str(project), "--platform", "linux-cpu",
                  "--existing", str(python), "--report-dir", str(reports), *extra,
                  network=False)
    doc = json.loads((reports / "dossier.json").read_text())
    return run.returncode, doc, run.stdout + run.stderr


def statuses(doc: dict) -> dict[str, str]:
    return {s["name"]: s["status"] for s in doc["steps"]}


def test_an_untampered_environment_passes_as_existing_never_as_a_rebuild(locked, tmp_path):
    python = built_env(locked, tmp_path)
    env = python.parent.parent
    before = tree(env)
    code, doc, out = verify_existing(locked, python)
    assert code == 0, out
    assert [s["name"] for s in doc["steps"]] == STEPS  # no venv, no install
    waived = {s["name"] for s in doc["steps"] if s.get("waived")}
    assert waived == {"application", "resume"}  # the config's waivers
    assert {s for n, s in statuses(doc).items() if n not in waived} == {"passed"}
    assert doc["result"] == "passed-existing" and doc["result"] != "passed"
    assert doc["environment"] == "existing environment (not rebuilt)"
    # the environment is the dossier's <venv> root (a venv: its sys.prefix), so the
    # dossier holds no path of this machine's environment but that one line
    assert doc["roots"]["venv"] == str(env)
    assert doc["interpreter"] == doc["options"]["existing"] == "<venv>/bin/python"
    assert doc["inventory"]["missing"] == doc["inventory"]["extra"] == []
    assert doc["inventory"]["mismatched"] == [] and "altered" not in doc["inventory"]
    assert not any("install" in c["argv"] or c["argv"][1:2] == ["venv"]
                   for c in doc["commands"])
    check = next(c for c in doc["commands"] if c["step"] == "pip-check")
    assert check["argv"][1:3] == ["pip", "check"] and "--no-config" in check["argv"]
    assert before == tree(env)  # nothing written into it, bytecode included
    assert "lockkit verify linux-cpu: passed-existing (existing environment (not rebuilt))" \
        in out
    assert doc["command_line"][doc["command_line"].index("--report-dir") + 1] == "<report>"
    folder = Path(doc["roots"]["report"])
    md = (folder / "dossier.md").read_text()
    assert "**Result: passed-existing**" in md
    assert "**Existing environment (not rebuilt):** `<venv>/bin/python`" in md
    shown = [line for line in md.splitlines() if not line.startswith("- paths relative to:")]
    assert len(shown) < len(md.splitlines()) and str(env) not in "\n".join(shown)
    assert Dossier.from_dict(doc).to_dict() == doc


def test_another_version_installed_is_named(locked, tmp_path):
    python = built_env(locked, tmp_path)
    other = build_wheel(tmp_path / "other", "filelock", "3.16.2")
    install(python.parent.parent, str(other))
    code, doc, out = verify_existing(locked, python)
    assert code == 1 and doc["result"] == "failed", out
    assert statuses(doc)["inventory"] == "failed"
    assert doc["inventory"]["mismatched"] == ["filelock: lock 3.16.1, installed 3.16.2"]
    assert "filelock: lock 3.16.1, installed 3.16.2" in doc["first_error"]
    assert statuses(doc)["system"] == "not-run"


def test_a_file_edited_against_its_record_is_named_with_both_hashes(locked, tmp_path):
    python = built_env(locked, tmp_path)
    edited = site(python) / "filelock" / "_api.py"
    want = base64.urlsafe_b64encode(hashlib.sha256(edited.read_bytes()).digest())
    edited.write_text("LOCKED = False\n")
    got = base64.urlsafe_b64encode(hashlib.sha256(b"LOCKED = False\n").digest())
    code, doc, out = verify_existing(locked, python)
    assert code == 1 and statuses(doc)["inventory"] == "failed", out
    named = (f"filelock 3.16.1: filelock/_api.py: RECORD sha256={want.rstrip(b'=').decode()}, "
             f"file sha256={got.rstrip(b'=').decode()}")
    assert doc["inventory"]["altered"] == [named]
    assert doc["first_error"] == ("inventory: the environment differs from the lock: files "
                                  f"differ from their RECORD: {named}")


def test_a_file_listed_in_record_but_gone_fails(locked, tmp_path):
    python = built_env(locked, tmp_path)
    (site(python) / "filelock" / "_api.py").unlink()
    code, doc, _ = verify_existing(locked, python)
    assert code == 1
    assert doc["inventory"]["altered"] == ["filelock 3.16.1: filelock/_api.py: listed in "
                                           "RECORD, missing"]


def test_an_extra_package_is_listed_and_fails_only_with_strict(locked, tmp_path):
    python = built_env(locked, tmp_path)
    install(python.parent.parent, str(build_wheel(tmp_path / "extra", "sneaky", "1.0")))
    code, doc, out = verify_existing(locked, python)
    assert code == 0 and doc["result"] == "passed-existing", out
    assert doc["inventory"]["extra"] == ["sneaky==1.0"]
    code, doc, out = verify_existing(locked, python, "--strict")
    assert code == 1 and doc["result"] == "failed" and doc["options"]["strict"] is True
    assert doc["first_error"] == ("inventory: the environment differs from the lock: not in "
                                  "the lock sneaky==1.0")
    assert "lockkit: error: verify failed: inventory:" in out


@pytest.mark.slow
def test_a_stdlib_venv_fails_on_setuptools_startup_code_until_the_user_vouches_for_it(
        locked, tmp_path):
    """``python -m venv`` on 3.11 seeds setuptools, whose distutils-precedence.pth installs
    a meta-path finder at every start: named, and nothing run, until --allow-extra."""
    python = built_env(locked, tmp_path, installer="pip")
    if not list(site(python).glob("distutils-precedence.pth")):
        pytest.skip("this Python's venv seeds no setuptools .pth")
    code, doc, out = verify_existing(locked, python, "--installer", "pip")
    assert code == 1 and statuses(doc)["start-up"] == "failed", out
    assert statuses(doc)["pip-check"] == "not-run"  # nothing started the interpreter
    assert doc["first_error"].startswith("start-up: code that runs at start-up or changes "
                                         "what an import loads is not the lock's: setuptools ")
    assert "distutils-precedence.pth: line 1 runs at every start" in doc["first_error"]
    code, doc, out = verify_existing(locked, python, "--installer", "pip",
                                     "--allow-extra", "setuptools", "--strict")
    assert code == 0 and doc["result"] == "passed-existing", out
    assert doc["inventory"]["extra"] == []
    assert [e.split("==")[0] for e in doc["inventory"]["tooling"]] == ["pip"]
    assert [e.split("==")[0] for e in doc["inventory"]["allowed_extra"]] == ["setuptools"]
    assert any(t.startswith("start-up code: setuptools ") and "(not in the lock, "
               "--allow-extra)" in t for t in doc["taken_on_its_word"])
    check = next(c for c in doc["commands"] if c["step"] == "pip-check")
    assert check["argv"] == ["<venv>/bin/python", "-m", "pip", "check", "--isolated",
                             "--disable-pip-version-check"]


def test_another_python_version_fails_the_host_step(locked, tmp_path):
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\necho '{\"facts\": {\"version\": \"3.9\", \"full\": "
                    "\"3.9.0\", \"implementation\": \"cpython\", \"platform\": "
                    "\"linux-x86_64\", \"executable\": \"/x\"}}'\n")
    fake.chmod(0o755)
    code, doc, _ = verify_existing(locked, fake)
    assert code == 1 and statuses(doc)["host"] == "failed"
    assert doc["first_error"].startswith(f"host: --existing {fake} is Python 3.9; ")


@pytest.mark.parametrize(("given", "extra", "says"), [
    ("missing", [], "--existing {path}: no such file"),
    ("plain", [], "--existing {path}: not an executable interpreter"),
    ("python", ["--keep-venv"], "--existing checks an environment as it is: --keep-venv is "
                                "for a rebuild"),
    (None, ["--strict"], "--strict goes with --existing PYTHON"),
])
def test_bad_existing_flags_exit_2_with_one_line(locked, tmp_path, capsys, given, extra, says):
    paths = {"missing": tmp_path / "nope", "plain": tmp_path / "plain",
             "python": Path(sys.executable)}
    (tmp_path / "plain").write_text("")
    path = paths.get(given) if given else None
    argv = ["verify", "--project", str(locked), "--platform", "linux-cpu",
            *(["--existing", str(path)] if path else []), *extra]
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert says.format(path=path) in err.splitlines()[0]


def test_record_hashes_follow_the_wheel_spec(tmp_path):
    """urlsafe base64 without padding; rows without a hash (RECORD, .pyc) are passed; an
    algorithm the spec forbids is named."""
    from lockkit.verify import existing  # here: the CLI tests above run on a lockkit without it

    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.py").write_bytes(b"a = 1\n")
    good = base64.urlsafe_b64encode(hashlib.sha256(b"a = 1\n").digest()).rstrip(b"=").decode()
    record = (f"pkg/a.py,sha256={good},6\npkg/__pycache__/a.cpython-311.pyc,,\n"
              "pkg-1.dist-info/RECORD,,\n")
    assert existing.record_problems("pkg 1", tmp_path, record) == []
    md5 = hashlib.md5(b"a = 1\n").hexdigest()
    assert existing.record_problems("pkg 1", tmp_path, f"pkg/a.py,md5={md5},6\n") == [
        f"pkg 1: pkg/a.py: RECORD hash 'md5={md5}': not an algorithm the wheel spec allows"]
    assert existing.record_problems("pkg 1", tmp_path, None) == [
        "pkg 1: no RECORD in its metadata: its files cannot be checked"]
    assert os.path.exists(tmp_path / "pkg" / "a.py")
