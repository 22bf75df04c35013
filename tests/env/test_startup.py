"""`lockkit verify --existing`: code that runs at start-up, judged before anything runs it.

Each test plants start-up code in a real venv built from the lock's wheelhouse by real uv,
the way an installer would put it there (owned by its own distribution's RECORD), and
checks that verify names it, fails, and never ran it: the planted code writes a marker
file when it runs.
"""

from __future__ import annotations

import ensurepip
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.editable import editable_files
from tests.support.index_server import build_wheel
from tests.verify import test_verify_existing as base
from tests.verify.test_verify_existing import (
    built_env,
    install,
    site,
    statuses,
    verify_existing,
)

locked = base.locked  # the project and wheelhouse fixture, built once for this module too


def plant(python: Path, tmp_path: Path, name: str, files: dict[str, str]) -> None:
    """Install *name* 1.0, a wheel holding *files*, with real uv: its RECORD owns them."""
    install(python.parent.parent, str(build_wheel(tmp_path / f"w-{name}", name, "1.0",
                                                  files=files)))


def ran(marker: Path) -> str:
    return f"import os; open({str(marker)!r}, 'a').write('ran\\n')"


def test_an_editable_finder_that_maps_torch_elsewhere_fails_and_never_runs(locked,
                                                                           tmp_path):
    python = built_env(locked, tmp_path)
    payload, marker = tmp_path / "payload", tmp_path / "ran.txt"
    payload.mkdir()
    (payload / "__init__.py").write_text(ran(marker) + "\n__version__ = '2.5.1+cpu'\n")
    # setuptools' own finder, but first on sys.meta_path: the one edit an attacker needs
    # for it to win over the locked torch in site-packages
    files = editable_files("evil", "1.0", {"torch": str(payload)})
    finder = next(f for f in files if f.endswith("_finder.py"))
    files[finder] = files[finder].replace("sys.meta_path.append(_EditableFinder)",
                                          "sys.meta_path.insert(0, _EditableFinder)")
    plant(python, tmp_path, "evil", files)
    loaded = subprocess.run([str(python), "-c", "import torch; print(torch.__file__)"],
                            capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == str(payload / "__init__.py")  # the attack works...
    marker.unlink()
    for allowed in ([], ["--allow-extra", "evil"]):  # ... and vouching does not excuse it
        code, doc, out = verify_existing(locked, python, *allowed)
        assert code == 1 and doc["result"] == "failed", out
        assert statuses(doc)["start-up"] == "failed"
        assert {statuses(doc)[s] for s in ("pip-check", "system", "gpu")} == {"not-run"}
        error = doc["first_error"]
        assert "maps 'torch' to " + str(payload) in error
        assert "does not load the locked torch 2.5.1+cpu" in error
        assert not marker.exists()  # nothing verify started ran the planted code
    assert "evil 1.0 (not in the lock): <venv>/" not in error  # allowed: not named as code
    code, doc, out = verify_existing(locked, python)
    assert "evil 1.0 (not in the lock): <venv>/lib/" in doc["first_error"]
    assert "__editable__.evil-1.0.pth: line 1 runs at every start" in doc["first_error"]


def test_a_record_owned_pth_with_an_import_line_fails_naming_distribution_file_and_line(
        locked, tmp_path):
    python = built_env(locked, tmp_path)
    marker = tmp_path / "ran.txt"
    plant(python, tmp_path, "sneaky", {"sneaky.pth": "# comment\n" + ran(marker) + "\n"})
    code, doc, out = verify_existing(locked, python)
    assert code == 1 and statuses(doc)["start-up"] == "failed", out
    assert "sneaky 1.0 (not in the lock): <venv>/lib/" in doc["first_error"]
    assert "sneaky.pth: line 2 runs at every start" in doc["first_error"]
    assert not marker.exists()
    statement = json.loads((Path(doc["roots"]["report"]) / "dossier.intoto.json").read_text())
    assert statement["predicateType"].startswith("https://lockkit.dev/attestation/"
                                                 "verify-existing/")
    assert statement["predicate"]["result"] == "failed"  # a failed run never attests passed


def test_an_extra_the_user_vouches_for_passes_and_is_listed_as_taken_on_their_word(
        locked, tmp_path):
    python = built_env(locked, tmp_path)
    plant(python, tmp_path, "sneaky", {"sneaky.pth": "import os\n"})
    code, doc, out = verify_existing(locked, python, "--allow-extra", "Sneaky", "--strict")
    assert code == 0 and doc["result"] == "passed-existing", out
    assert doc["inventory"]["extra"] == [] and doc["inventory"]["allowed_extra"] == [
        "sneaky==1.0"]
    taken = doc["taken_on_its_word"]
    assert any(t.startswith("start-up code: sneaky 1.0 (not in the lock, --allow-extra): ")
               for t in taken)
    assert "an extra you vouched for (--allow-extra): sneaky==1.0" in taken
    assert "warning: start-up code taken on its word: sneaky 1.0" in out
    statement = json.loads((Path(doc["roots"]["report"]) / "dossier.intoto.json").read_text())
    assert statement["predicate"]["taken_on_its_word"] == taken
    markdown = (Path(doc["roots"]["report"]) / "dossier.md").read_text()
    assert "**Taken on its word** (not checked by this run):" in markdown


@pytest.mark.parametrize("name", ["usercustomize", "sitecustomize"])
def test_a_customize_module_of_an_extra_fails_the_start_up_step(locked, tmp_path, name):
    python = built_env(locked, tmp_path)
    marker = tmp_path / "ran.txt"
    plant(python, tmp_path, "custom", {f"{name}.py": ran(marker) + "\n"})
    code, doc, out = verify_existing(locked, python)
    assert code == 1 and statuses(doc)["start-up"] == "failed", out
    assert ("custom 1.0 (not in the lock): <venv>/lib/" in doc["first_error"]
            and f"{name}.py: {name}, which the site module imports" in doc["first_error"])
    assert not marker.exists()


def test_an_extra_that_provides_a_locked_top_level_name_fails(locked, tmp_path):
    python = built_env(locked, tmp_path)
    plant(python, tmp_path, "twin", {"filelock/extra.py": "X = 1\n"})
    code, doc, out = verify_existing(locked, python, "--allow-extra", "twin")
    assert code == 1 and statuses(doc)["start-up"] == "failed", out
    assert ("twin 1.0 (not in the lock) provides 'filelock', which the locked filelock "
            "3.16.1 provides") in doc["first_error"]


def test_a_clean_stdlib_venv_with_pip_passes_strict_naming_pip_as_tooling(locked, tmp_path):
    bundled = sorted((Path(ensurepip.__file__).parent / "_bundled").glob("pip-*.whl"))
    if not bundled:
        pytest.skip("this Python's ensurepip bundles no pip wheel")
    venv = tmp_path / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)],
                   check=True)
    wheelhouse = locked / "wheelhouse" / "linux-cpu"
    install(venv, str(bundled[-1]))
    install(venv, "--find-links", str(wheelhouse), "--require-hashes", "-r",
            str(wheelhouse / "requirements.txt"))
    python = venv / "bin" / "python"
    assert not list(site(python).glob("*.pth"))
    code, doc, out = verify_existing(locked, python, "--strict")
    assert code == 0 and doc["result"] == "passed-existing", out
    assert doc["inventory"]["extra"] == []
    assert [t.split("==")[0] for t in doc["inventory"]["tooling"]] == ["pip"]
    assert any(t.startswith("installer tooling not in the lock, with no start-up code: pip==")
               for t in doc["taken_on_its_word"])
