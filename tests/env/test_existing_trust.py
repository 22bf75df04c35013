"""`lockkit verify --existing`: what Python will really load, not only what RECORD says.

Each test tampers with a real venv built from the lock's wheelhouse by real uv, as an
attacker with write access to the environment would, and runs verify against it.
"""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path

import pytest

from tests.support.index_server import IndexServer, build_wheel
from tests.support.project import lockkit
from tests.support.pytorch_index import PyTorchIndex
from tests.verify import test_verify_existing as base
from tests.verify.test_verify_existing import (
    built_env,
    install,
    site,
    statuses,
    tree,
    verify_existing,
)

locked = base.locked  # the project and wheelhouse fixture, built once for this module too

LOCKED = ["filelock 3.16.1", "numpy", "torch 2.5.1+cpu"]


def wheelhouse(project: Path) -> str:
    return str(project / "wheelhouse" / "linux-cpu")


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def forge(python: Path) -> tuple[str, str]:
    """filelock/_api.py edited and its RECORD row rewritten to match: (the wheel's hash,
    the forged one)."""
    folder = site(python)
    (record,) = folder.glob("filelock-*.dist-info/RECORD")
    edited = folder / "filelock" / "_api.py"
    was, now = b64(edited.read_bytes()), b64(b"LOCKED = False\n")
    edited.write_text("LOCKED = False\n")
    rows = [f"filelock/_api.py,sha256={now},15" if row.startswith("filelock/_api.py,")
            else row for row in record.read_text().splitlines()]
    record.write_text("\n".join(rows) + "\n")
    return was, now


@pytest.mark.parametrize("installer", ["uv", pytest.param("pip", marks=pytest.mark.slow)])
def test_records_that_match_the_lock_wheels_are_named_as_checked(locked, tmp_path, installer):
    """What each installer adds (its INSTALLER, bytecode, scripts; pip and setuptools with
    their RECORDs in a stdlib venv) is its own: nothing unowned, nothing altered."""
    python = built_env(locked, tmp_path, installer)
    seeded = list(site(python).glob("distutils-precedence.pth"))  # setuptools' start-up code
    code, doc, out = verify_existing(locked, python, "--wheelhouse", wheelhouse(locked),
                                     "--installer", installer, "--strict",
                                     *(["--allow-extra", "setuptools"] if seeded else []))
    assert code == 0 and doc["result"] == "passed-existing", out
    assert not {"altered", "unowned", "unowned_code", "shadowed"} & set(doc["inventory"])
    checked = doc["inventory"]["record_from_wheel"]
    assert [c.rsplit(" ", 1)[0] if c.startswith("numpy") else c for c in checked] == LOCKED
    assert "record_on_its_word" not in doc["inventory"]
    assert not any("RECORD taken on its word" in w for w in doc["warnings"])


@pytest.mark.parametrize("source", ["--wheelhouse", "--cache-dir"])
def test_a_record_rewritten_to_match_an_edited_file_is_caught_against_the_lock_wheel(
        locked, tmp_path, source):
    python = built_env(locked, tmp_path)
    was, now = forge(python)
    where = wheelhouse(locked) if source == "--wheelhouse" else str(locked.parent / "cache")
    code, doc, out = verify_existing(locked, python, source, where)
    assert code == 1 and doc["result"] == "failed", out
    assert statuses(doc)["inventory"] == "failed"
    named = (f"filelock 3.16.1: filelock/_api.py: installed RECORD says sha256={now}, "
             f"the wheel's sha256={was}")
    assert doc["inventory"]["altered"] == [named]
    assert named in doc["first_error"]


def test_a_rewritten_record_without_the_wheel_at_hand_is_reported_taken_on_its_word(
        locked, tmp_path):
    python = built_env(locked, tmp_path)
    forge(python)
    empty = tmp_path / "empty-cache"
    code, doc, out = verify_existing(locked, python, "--cache-dir", str(empty))
    assert code == 0, out  # nothing here can tell the forged RECORD from the real one...
    on_its_word = doc["inventory"]["record_on_its_word"]
    assert "filelock 3.16.1" in on_its_word and "torch 2.5.1+cpu" in on_its_word
    assert "record_from_wheel" not in doc["inventory"]
    # ... and the dossier, its Markdown and the output say so
    said = next(w for w in doc["warnings"] if w.startswith("RECORD taken on its word"))
    assert "filelock 3.16.1" in said and f"warning: {said}" in out
    assert said in report_md(doc).read_text()


def report_md(doc: dict) -> Path:
    return Path(doc["roots"]["report"]) / "dossier.md"  # --report-dir: the <report> root


@pytest.mark.parametrize(("name", "text", "why"), [
    ("evil.pth", "import os; os.environ['X'] = '1'\n", "a .pth file no RECORD lists"),
    ("sitecustomize.py", "X = 1\n", "sitecustomize that no RECORD lists"),
    ("usercustomize.py", "X = 1\n", "usercustomize that no RECORD lists"),
])
def test_unowned_startup_code_in_site_packages_fails_the_inventory_by_name(
        locked, tmp_path, name, text, why):
    python = built_env(locked, tmp_path)
    planted = site(python) / name
    planted.write_text(text)
    code, doc, out = verify_existing(locked, python)
    assert code == 1 and statuses(doc)["inventory"] == "failed", out
    (found,) = doc["inventory"]["unowned_code"]
    assert found.startswith(f"<venv>/{planted.relative_to(python.parent.parent)}: {why}")
    assert statuses(doc)["start-up"] == "failed"  # judged before anything ran it
    assert doc["first_error"].startswith("start-up: code that runs at start-up or changes "
                                         "what an import loads is not the lock's: <venv>/")
    assert doc["first_error"].endswith("and no RECORD lists it")  # no --allow-extra hint


def test_an_unowned_module_inside_a_locked_package_folder_fails(locked, tmp_path):
    python = built_env(locked, tmp_path)
    (site(python) / "filelock" / "backdoor.py").write_text("import os\n")
    code, doc, out = verify_existing(locked, python)
    assert code == 1 and statuses(doc)["inventory"] == "failed", out
    assert [u.split("site-packages/", 1)[1] for u in doc["inventory"]["unowned_code"]] == [
        "filelock/backdoor.py: a module no RECORD lists, inside a locked package's folder"]


@pytest.mark.slow
def test_other_unowned_files_are_listed_and_fail_only_with_strict(locked, tmp_path):
    python = built_env(locked, tmp_path)
    (site(python) / "filelock" / "notes.txt").write_text("hello\n")
    code, doc, out = verify_existing(locked, python)
    assert code == 0 and doc["result"] == "passed-existing", out
    assert [u.split("site-packages/", 1)[1] for u in doc["inventory"]["unowned"]] == [
        "filelock/notes.txt"]
    assert any("no RECORD lists" in w and "notes.txt" in w for w in doc["warnings"])
    code, doc, out = verify_existing(locked, python, "--strict")
    assert code == 1 and statuses(doc)["inventory"] == "failed", out
    assert "files no RECORD lists: <venv>/" in doc["first_error"]


def test_a_pythonpath_torch_that_shadows_the_locked_one_fails_naming_variable_and_path(
        locked, tmp_path, monkeypatch):
    python = built_env(locked, tmp_path)
    other = tmp_path / "elsewhere"
    (other / "torch").mkdir(parents=True)
    (other / "torch" / "__init__.py").write_text("__version__ = '0.0'\n")
    monkeypatch.setenv("PYTHONPATH", str(other))
    code, doc, out = verify_existing(locked, python)
    assert code == 1 and statuses(doc)["inventory"] == "failed", out
    named = f"PYTHONPATH {other}: torch shadows the locked torch 2.5.1+cpu"
    assert doc["inventory"]["shadowed"] == [named]
    assert doc["inventory"]["import_variables"] == {"PYTHONPATH": str(other)}
    assert doc["inventory"]["import_paths"] == [f"PYTHONPATH {other}: torch"]
    assert named in doc["first_error"]


@pytest.mark.slow
def test_import_variables_are_recorded_with_credentials_redacted(locked, tmp_path,
                                                                  monkeypatch):
    python = built_env(locked, tmp_path)
    monkeypatch.setenv("PYTHONSTARTUP", "http://user:s3cret-token@127.0.0.1/startup.py")
    code, doc, out = verify_existing(locked, python)
    assert code == 0, out
    assert doc["inventory"]["import_variables"] == {
        "PYTHONSTARTUP": "http://***@127.0.0.1/startup.py"}
    assert "s3cret-token" not in out + report_md(doc).read_text()


def test_the_user_site_is_read_when_the_interpreter_enables_it(tmp_path):
    """Outside a venv (or with PYTHONNOUSERSITE unset), the user site comes before the site
    folder: a torch there shadows the locked one, and its .pth runs at every start."""
    from lockkit.env import importenv  # here: the CLI tests run on a lockkit without it

    user = tmp_path / "user"
    folder = user / "lib" / "python3.11" / "site-packages"
    (folder / "torch").mkdir(parents=True)
    (folder / "hook.pth").write_text("import os\n")
    env = {"PYTHONUSERBASE": str(user)}
    facts = {"version": "3.11", "prefix": str(tmp_path / "venv"), "in_venv": False}
    paths = importenv.import_paths(env, facts)
    assert paths == [("user site", folder, True)]
    assert importenv.survey(paths, {"torch": "torch 2.5.1"}).failures == [
        f"user site {folder}: hook.pth runs at every start",
        f"user site {folder}: torch shadows the locked torch 2.5.1"]
    assert importenv.import_paths({**env, "PYTHONNOUSERSITE": "1"}, facts) == []
    (tmp_path / "venv").mkdir()
    (tmp_path / "venv" / "pyvenv.cfg").write_text("include-system-site-packages = false\n")
    assert importenv.import_paths(env, {**facts, "in_venv": True}) == []


@pytest.mark.slow
def test_an_extra_sitecustomize_fails_until_allowed_and_no_bytecode_is_written(locked,
                                                                              tmp_path):
    python = built_env(locked, tmp_path)
    wheel = build_wheel(tmp_path / "sc", "sitecust", "1.0",
                        files={"sitecustomize.py": "SITE = 1\n"})
    install(python.parent.parent, str(wheel))
    env = python.parent.parent
    before = tree(env)
    code, doc, out = verify_existing(locked, python)
    assert code == 1 and statuses(doc)["start-up"] == "failed", out
    assert "sitecust 1.0 (not in the lock): <venv>/" in doc["first_error"]
    assert tree(env) == before  # judged before anything imported it
    code, doc, out = verify_existing(locked, python, "--allow-extra", "sitecust")
    assert code == 0 and doc["result"] == "passed-existing", out
    assert doc["inventory"]["allowed_extra"] == ["sitecust==1.0"]
    assert tree(env) == before  # no __pycache__/sitecustomize.cpython-*.pyc


@pytest.mark.slow
def test_fetch_wheels_fetches_the_lock_wheels_by_hash_and_catches_a_rewritten_record(
        tmp_path, numpy_wheel):
    """No wheelhouse, an empty cache: --fetch-wheels fetches the lock's wheels by their
    hash (from the lock's loopback indexes, up for this test) into the cache, and the
    forged RECORD is caught; without it the run never reaches the network."""
    pt, server = PyTorchIndex(tmp_path / "pytorch"), IndexServer(tmp_path / "index")
    with pt, server:
        project = base.locked_project(tmp_path, numpy_wheel, pt, server)
        python = built_env(project, tmp_path)
        was, now = forge(python)
        cache = tmp_path / "fresh-cache"
        reports = tmp_path / "report-fetch"
        run = lockkit("verify", "--project", str(project), "--platform", "linux-cpu",
                      "--existing", str(python), "--cache-dir", str(cache), "--fetch-wheels",
                      "--report-dir", str(reports))
    doc = json.loads((reports / "dossier.json").read_text())
    assert run.returncode == 1 and statuses(doc)["inventory"] == "failed", run.stderr
    assert doc["inventory"]["altered"] == [
        f"filelock 3.16.1: filelock/_api.py: installed RECORD says sha256={now}, "
        f"the wheel's sha256={was}"]
    assert "filelock 3.16.1" in doc["inventory"]["record_from_wheel"]
    assert list(cache.glob("sha256/*/*"))  # fetched by hash, into the download cache
