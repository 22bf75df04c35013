"""``[platform-requirements]`` read with the project (issue 42): keys are the platforms the
project compiles, by name or alias; a key that names none is one line, exit 2, with the
platform it most likely means; the same table under ``[tool.lockkit]`` of a pyproject.toml
replaces that file's own requirements."""

from __future__ import annotations

from pathlib import Path

import pytest

from lockkit._internal.compat import tomllib
from lockkit.cli import main
from lockkit.config.inputs import effective_inputs
from lockkit.config.project import load_project
from lockkit.platforms.definitions import load_platforms
from tests.support.pytorch_variants import fill_side_by_side

INPUTS = {"requirements.in": ["filelock", "torch==2.13.0"]}


def project_with(tmp_path: Path, table: str,
                 platforms: str = '["linux-cpu", "linux-rocm6"]') -> Path:
    (tmp_path / "requirements.in").write_text("torch==2.13.0\nfilelock\n")
    (tmp_path / "lockkit.toml").write_text(f"platforms = {platforms}\n"
                                           f"[platform-requirements]\n{table}")
    return tmp_path


def refused(root: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """compile of *root* ends exit 2 before any work, in one line (and its hint)."""
    assert main(["compile", "--project", str(root)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert [line.split(":")[0] for line in err.strip().splitlines()[1:]] in ([], ["hint"])
    assert not (root / "locks").exists()
    return err.splitlines()[0]


@pytest.mark.parametrize(("key", "tip"), [
    ("linux-rocm5", "did you mean 'linux-rocm6'?"),  # a slip
    ("linux-cu132", "the project compiles linux-cpu, linux-rocm6; add linux-cu132 to "
                    "platforms to compile it"),  # a platform the project does not compile
    ("nowhere-at-all", "the project compiles linux-cpu, linux-rocm6"),  # nothing close
])
def test_a_key_that_names_no_compiled_platform_is_one_line_exit_2(tmp_path, capsys, key, tip):
    root = project_with(tmp_path, f'{key} = ["torch==2.9.1"]\n')
    line = refused(root, capsys)
    assert line == (f"lockkit: error: {root / 'lockkit.toml'}: platform-requirements.{key}: "
                    "names no platform the project compiles (its platforms key); " + tip)


def test_a_line_that_is_no_requirement_is_named_by_its_key_path(tmp_path, capsys):
    root = project_with(tmp_path, 'linux-rocm6 = ["torch==2.9.1", "torch>>2"]\n')
    assert "platform-requirements.linux-rocm6[1]: 'torch>>2'" in refused(root, capsys)
    root = project_with(tmp_path, 'linux-rocm6 = "torch==2.9.1"\n')
    assert "platform-requirements.linux-rocm6: expected a non-empty list of strings" in \
        refused(root, capsys)


def test_an_alias_and_its_target_are_one_platform(tmp_path, capsys):
    """linux-rocm6 is an alias of linux-rocm64: a key by either name serves the platform
    compiled under the other; both keys at once are refused, naming the first."""
    root = project_with(tmp_path, 'linux-rocm64 = ["torch==2.9.1"]\n')
    project, known = load_project(root), load_platforms(root)
    assert effective_inputs(project, known["linux-rocm6"], INPUTS) == {
        "requirements.in": ["filelock"],
        "lockkit.toml[platform-requirements.linux-rocm64]": ["torch==2.9.1"]}
    assert effective_inputs(project, known["linux-cpu"], INPUTS) == INPUTS
    root = project_with(tmp_path, 'linux-rocm6 = ["torch==2.9.1"]\nlinux-rocm64 = []\n')
    assert "platform-requirements.linux-rocm64: names the same platform as 'linux-rocm6' " \
           "(linux-rocm64)" in refused(root, capsys)


def test_names_compare_canonical_and_a_new_name_is_added(tmp_path):
    root = project_with(tmp_path, 'linux-rocm6 = ["Torch==2.9.1", "torchvision==0.24.1"]\n')
    rocm = load_platforms(root)["linux-rocm6"]
    said = effective_inputs(load_project(root), rocm,
                            {"requirements.in": ["filelock", "torch==2.13.0 --hash=sha256:00"],
                             "constraints.txt": ["torch<3"]})
    assert said == {"requirements.in": ["filelock"], "constraints.txt": [],
                    "lockkit.toml[platform-requirements.linux-rocm6]":
                        ["torch==2.9.1", "torchvision==0.24.1"]}


PYPROJECT = """\
[project]
name = "app"
version = "1.0"
dependencies = ["torch==2.13.0", "filelock"]

[dependency-groups]
gpu = ["torch>=2.13"]

[tool.lockkit]
requirements = ["pyproject.toml"]
groups = ["gpu"]
platforms = ["linux-cpu", "linux-rocm6"]
"""


def test_the_table_under_tool_lockkit_replaces_the_pyprojects_own_requirements(
        tmp_path, indexes):
    """The pyproject.toml's dependencies and groups keep torch 2.13 for CPU; on ROCm 6 the
    table's line replaces it in both (uv reads a copy without it), and the lock records
    it under the pyproject's key path."""
    fill_side_by_side(indexes.pt)
    mirrors = "".join(f'"{k}" = "{v}"\n' for k, v in indexes.pt.mirrors().items())
    (tmp_path / "pyproject.toml").write_text(
        PYPROJECT + f'index-url = "{indexes.url}/simple"\n'
        '[tool.lockkit.platform-requirements]\nlinux-rocm6 = ["torch==2.9.1"]\n'
        f"[tool.lockkit.mirrors]\n{mirrors}")
    assert main(["compile", "--project", str(tmp_path)]) == 0
    locks = {p: tomllib.loads((tmp_path / "locks" / f"pylock.{p}.toml").read_text())
             for p in ("linux-cpu", "linux-rocm6")}
    torch = {p: next(x["version"] for x in lock["packages"] if x["name"] == "torch")
             for p, lock in locks.items()}
    assert torch == {"linux-cpu": "2.13.0+cpu", "linux-rocm6": "2.9.1+rocm6.4"}
    recorded = locks["linux-rocm6"]["tool"]["lockkit"]["inputs"]["requirements"]
    assert recorded["pyproject.toml[tool.lockkit.platform-requirements.linux-rocm6]"] == \
        ["torch==2.9.1"]
    assert recorded["pyproject.toml[project.dependencies]"] == ["filelock"]
    assert main(["compile", "--project", str(tmp_path), "--check"]) == 0
