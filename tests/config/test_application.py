"""The ``[verify.application]`` table and the ``application = "none"`` waiver
(:mod:`lockkit.config.checks.application`), read when the project loads: every problem
named by its key path, and verify ending with exit 2 before any work; a valid table
read into its dataclass."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from lockkit.cli import main
from lockkit.config.checks.application import ApplicationConfig
from lockkit.config.project import load_project
from lockkit.errors import ConfigError

# --- the config, read at load -------------------------------------------------------------

@pytest.mark.parametrize(("verify", "words"), [
    ('[verify]\napplication = "none"\n', ['verify.reason: required with application = "none"']),
    ('[verify]\napplication = "nope"\nreason = "r"\n',
     ['verify.reason: only with application = "none"',
      "verify.application: expected a table or \"none\", got 'nope'"]),
    ('[verify]\napplication = "none"\nreason = "r"\n[verify.embedding]\ncommand = []\n',
     ['verify.application: "none", but [verify.embedding] declares a check']),
    ('[verify.application]\ncommand = ["{python}", "{out}"]\ntimeout = 0\n'
     'outputs = ["../up", 3]\nrun = 1\n'
     '[verify.application.compare]\n"m.json" = { reference = "/abs", atol = "1", rsn = 1 }\n',
     ["verify.application.run: unknown key",
      "verify.application.command: unknown placeholder {out}",
      "verify.application.timeout: expected a number",
      "verify.application.outputs[0]: expected a relative path inside the project",
      "verify.application.outputs[1]: expected a non-empty string, got 3",
      'verify.application.compare."m.json".rsn: unknown key',
      'verify.application.compare."m.json".rtol: missing (required',
      'verify.application.compare."m.json".reason: missing',
      'verify.application.compare."m.json".reference: expected a relative path',
      'verify.application.compare."m.json".atol: expected a number in [0, inf], got \'1\'']),
    ('[verify.application]\ncommand = ["{python}", "x.py"]\n'
     '[verify.application.compare]\n"m.json" = { reference = "r.json", atol = 0, rtol = 0, '
     'reason = "exact" }\n', ["verify.application.fingerprints: missing: 'r.json' is compared"]),
    ('[verify.application]\ncommand = "python x.py"\n[verify.embedding]\n',
     ["verify.application.command: expected a non-empty list of strings",
      "verify.application: [verify.embedding] is declared too"]),
])
def test_every_problem_is_named_by_key_path_exit_2(tmp_path, capsys, verify, words):
    (tmp_path / "requirements.in").write_text("torch\n")
    (tmp_path / "lockkit.toml").write_text(verify)
    with pytest.raises(ConfigError) as err:
        load_project(tmp_path)
    for word in words:
        assert word in str(err.value)
    start = time.monotonic()
    assert main(["verify", "--project", str(tmp_path), "--platform", "linux-cpu"]) == 2
    assert time.monotonic() - start < 5  # before any work: ~0.05 s here, a rebuild is minutes
    out = capsys.readouterr().err
    assert "lockkit.toml" in out and "Traceback" not in out


def test_a_valid_table_loads_into_its_dataclass(tmp_path):
    (tmp_path / "lockkit.toml").write_text(
        '[verify.application]\ncommand = ["{python}", "-m", "app", "{{literal}}"]\n'
        'outputs = ["out/a.bin"]\n'
        '[verify.application.compare]\n"out/m.json" = { reference = "ref/m.json", atol = 1e-6, '
        'rtol = 0, reason = "float32 sums" }\n'
        f'[verify.application.fingerprints]\n"ref/m.json" = "{"A" * 64}"\n')
    cfg = load_project(tmp_path).verify.get("application", ApplicationConfig)
    assert isinstance(cfg, ApplicationConfig)
    assert cfg.expected_outputs == ("out/a.bin", "out/m.json")
    assert cfg.argv(Path("/v/bin/python"), "cpu") == ["/v/bin/python", "-m", "app",
                                                       "{literal}"]
    assert cfg.fingerprints == (("ref/m.json", "a" * 64),) and cfg.timeout == 600
    assert cfg.to_dict()["compare"]["out/m.json"]["reason"] == "float32 sums"
