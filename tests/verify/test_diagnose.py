"""``lockkit diagnose`` without --python: which interpreter it picks, that it says so, and
one plain line when that interpreter has no torch."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lockkit.errors import UsageError
from lockkit.report.roots import own_roots
from lockkit.verify.diagnose import default_python


def _venv(path: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    return path / "bin" / "python"


@pytest.fixture
def own_bin() -> str:
    """The folder of lockkit's own interpreter: lockkit's venv, on PATH."""
    return str(Path(sys.executable).absolute().parent)


@pytest.mark.skipif(os.name == "nt", reason="POSIX venv layout")
def test_lockkits_own_interpreter_on_path_is_never_the_default(tmp_path, own_bin):
    (tmp_path / "user").mkdir()
    (tmp_path / "user" / "python3").symlink_to(sys.executable)  # same binary, another folder
    path = os.pathsep.join([own_bin, str(tmp_path / "user")])
    python, source = default_python({"PATH": path}, cwd=tmp_path)
    assert python == tmp_path / "user" / "python3" and source == "'python3' on PATH"
    with pytest.raises(UsageError, match="no python on PATH but lockkit's own, which has no "
                                         "torch") as exc:
        default_python({"PATH": own_bin}, cwd=tmp_path)
    assert exc.value.hint == "give --python PATH (an interpreter with torch)"


@pytest.mark.skipif(os.name == "nt", reason="POSIX venv layout")
def test_the_active_venv_then_the_projects_venv_then_path(tmp_path, own_bin):
    project = tmp_path / "proj"
    (project / "src").mkdir(parents=True)
    (project / "lockkit.toml").write_text('platforms = ["linux-cpu"]\n')
    dot_venv = _venv(project / ".venv")
    active = _venv(tmp_path / "active")
    env = {"PATH": own_bin}
    # from a sub-folder of the project: its .venv, not lockkit's venv on PATH
    python, source = default_python(env, cwd=project / "src")
    assert python == dot_venv and source == f"the project's venv, {project / '.venv'}"
    python, source = default_python({**env, "VIRTUAL_ENV": str(tmp_path / "active")},
                                    cwd=project / "src")
    assert python == active and "VIRTUAL_ENV" in source


@pytest.mark.skipif(os.name == "nt", reason="POSIX venv layout")
def test_no_torch_is_one_plain_line_naming_the_interpreter(tmp_path, own_bin):
    """lockkit's venv on PATH (as after `. .venv/bin/activate` of lockkit's own venv, then
    `deactivate` of nothing): diagnose probes the project's venv, says so, and when it has
    no torch says exactly that."""
    project = tmp_path / "proj"
    project.mkdir()
    (project / "lockkit.toml").write_text('platforms = ["linux-cpu"]\n')
    dot_venv = _venv(project / ".venv")
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    env["PATH"] = os.pathsep.join([own_bin, env.get("PATH", "")])
    run = subprocess.run([sys.executable, "-m", "lockkit", "diagnose", "--probe-timeout", "60"],
                         cwd=project, env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 1, run.stderr
    assert f"diagnose: .venv/bin/python (the project's venv, {project / '.venv'})" in run.stderr
    assert dot_venv.exists()
    lines = [ln for ln in run.stderr.splitlines() if "no torch in" in ln]
    assert lines == ["lockkit: no torch in .venv/bin/python; give --python PATH "
                     "(an interpreter with torch)"]
    assert "Traceback" not in run.stderr


def test_diagnose_json_writes_paths_relative_to_the_venv(fake_venv):
    """Issue 26: the document's paths under the probed venv are <venv>/..., the venv listed
    once in ``roots``; ``--absolute-paths`` writes them as they are."""
    python = fake_venv(version="2.5.1+cpu", cuda=None)
    venv = python.parent.parent
    argv = [sys.executable, "-m", "lockkit", "diagnose", "--python", str(python), "--json"]
    doc = json.loads(subprocess.run(argv, capture_output=True, text=True, timeout=120).stdout)
    own = {name: str(path) for name, path in own_roots().items()}
    assert doc["roots"] == {"venv": str(venv), **own} and doc["python"] == "<venv>/bin/python"
    probes = {arg for c in doc["commands"] for arg in c["argv"] if arg.endswith("_probe.py")}
    assert probes and all(arg.startswith("<lockkit>/probes/scripts/") for arg in probes)
    assert doc["system"]["torch"]["file"].startswith("<venv>/lib/")
    assert str(venv) not in json.dumps({k: v for k, v in doc.items() if k != "roots"})
    run = subprocess.run([*argv, "--absolute-paths"], capture_output=True, text=True,
                         timeout=120)
    doc = json.loads(run.stdout)
    assert "roots" not in doc and doc["python"] == str(python)
