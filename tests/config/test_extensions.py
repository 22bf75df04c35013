"""The ``[verify.extensions]`` table (:mod:`lockkit.config.checks.extensions`), checked at
load: each problem named by its key path, every problem of the file at once, a bad table
ending verify with one line, the smoke expression never evaluated by lockkit."""

from __future__ import annotations

import pytest

from lockkit.config.checks.extensions import ExtensionsConfig, ExtensionSpec, extensions_problems
from lockkit.config.project import load_project
from lockkit.errors import ConfigError
from tests.support.project import lockkit

# --- the table, checked at load -------------------------------------------------------

def test_a_valid_table_loads_into_the_project(tmp_path):
    (tmp_path / "lockkit.toml").write_text(
        '[verify.extensions]\ntimeout = 30\nmodules = [\n'
        '  { module = "torchvision.ops", smoke = "module.nms is not None" },\n'
        '  { module = "my_ext._C" },\n]\n')
    ext = load_project(tmp_path).verify.get("extensions", ExtensionsConfig)
    assert ext is not None and ext.timeout == 30.0
    assert ext.modules == (ExtensionSpec(module="torchvision.ops", smoke="module.nms is not None"),
                           ExtensionSpec(module="my_ext._C"))
    assert ext.to_dict()["modules"][1] == {"module": "my_ext._C"}
    (tmp_path / "lockkit.toml").write_text('platforms = ["linux-cpu"]\n')
    assert load_project(tmp_path).verify.get("extensions", ExtensionsConfig) is None


@pytest.mark.parametrize("table, problem", [
    ({"modules": []}, "verify.extensions.modules: expected a non-empty list"),
    ({}, "verify.extensions.modules: expected a non-empty list"),
    ({"modules": ["torch"]}, "verify.extensions.modules[0]: expected a table"),
    ({"modules": [{"module": "1torch"}]}, "verify.extensions.modules[0].module: expected a "
                                          "dotted module name"),
    ({"modules": [{"module": "torch", "smoke": "torch.ones(("}]},
     "verify.extensions.modules[0].smoke: not a Python expression"),
    ({"modules": [{"module": "torch", "smoke": "import os"}]},
     "verify.extensions.modules[0].smoke: not a Python expression"),
    ({"modules": [{"module": "torch", "smok": "1"}]},
     "unknown key 'verify.extensions.modules[0].smok' (did you mean "
     "'verify.extensions.modules[0].smoke'?)"),
    ({"modules": [{"module": "torch"}, {"module": "torch"}]}, "'torch' listed twice"),
    ({"modules": [{"module": "torch"}], "timeout": 0}, "verify.extensions.timeout: expected a "
                                                       "positive number"),
    ({"modules": [{"module": "torch"}], "timeout": True}, "verify.extensions.timeout"),
    ({"modules": [{"module": "torch"}], "modles": 1}, "did you mean 'verify.extensions.modules'"),
])
def test_each_problem_names_its_key_path(table, problem):
    cfg, problems = extensions_problems(table)
    assert cfg is None and any(problem in p for p in problems), problems


def test_every_problem_of_the_file_is_reported_at_once(tmp_path):
    (tmp_path / "lockkit.toml").write_text(
        '[verify.extensions]\ntimeout = -1\nmodules = [{ module = "a b" }, { smoke = "(" }]\n')
    with pytest.raises(ConfigError) as caught:
        load_project(tmp_path)
    text = str(caught.value)
    for part in ("modules[0].module", "modules[1].module", "modules[1].smoke", "timeout"):
        assert part in text


def test_a_bad_table_ends_verify_with_one_line_and_exit_2(tmp_path):
    (tmp_path / "requirements.in").write_text("torch\n")
    (tmp_path / "lockkit.toml").write_text('[verify.extensions]\nmodules = [{ modul = "x" }]\n')
    run = lockkit("verify", "--project", str(tmp_path), "--platform", "linux-cpu")
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert "verify.extensions.modules[0]" in run.stderr


def test_the_smoke_expression_is_never_evaluated_by_lockkit(tmp_path):
    marker = tmp_path / "evaluated"
    smoke = f"open({str(marker)!r}, 'w')"
    cfg, problems = extensions_problems({"modules": [{"module": "os", "smoke": smoke}]})
    assert cfg is not None and not problems and not marker.exists()
