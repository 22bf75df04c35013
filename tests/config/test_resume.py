"""The ``[verify.resume]`` table (:mod:`lockkit.config.checks.resume`), read when the
project loads: every problem collected by key path, the contract's placeholders required,
a bad table ending verify before any work; the example's exact check."""

from __future__ import annotations

from pathlib import Path

import pytest

from lockkit.config.checks.resume import ResumeConfig
from lockkit.config.project import load_project
from lockkit.errors import ConfigError
from tests.support.project import verify_refused_early

# --- [verify.resume] is validated when the project loads ---------------------------------

def _config(root: Path, table: str) -> Path:
    (root / "lockkit.toml").write_text("[verify.resume]\n" + table)
    return root / "lockkit.toml"


def test_every_problem_of_the_resume_table_is_collected(tmp_path):
    _config(tmp_path, 'command = ["{python}", "train.py", "{out}", "{bogus}"]\n'
                      'steps = 0\natol = 1e-6\nrtol = "x"\nstep = 3\n')
    with pytest.raises(ConfigError) as err:
        load_project(tmp_path)
    text = str(err.value)
    for expected in ("verify.resume.step: unknown key (did you mean 'steps'?)",
                     "verify.resume.resume-steps: missing (required)",
                     "verify.resume.command: unknown placeholder {bogus}",
                     "verify.resume.steps: expected an integer >= 1, got 0",
                     "verify.resume.rtol: expected a number >= 0, got 'x'",
                     "verify.resume.reason: required with a non-zero atol/rtol"):
        assert expected in text, expected


def test_a_command_without_the_contract_placeholders_is_refused(tmp_path):
    _config(tmp_path, 'command = ["{python}", "train.py", "--out", "{out}"]\n'
                      "steps = 2\nresume-steps = 2\n")
    with pytest.raises(ConfigError, match=r"verify.resume.command: no \{steps\} placeholder"):
        load_project(tmp_path)


def test_a_bad_resume_table_fails_verify_before_any_work(tmp_path, capsys):
    config = _config(tmp_path, "steps = true\n")
    err = verify_refused_early(tmp_path, capsys)
    assert len(err.splitlines()) <= 2
    assert f"{config}: " in err and "verify.resume.steps: expected an integer >= 1" in err


def test_the_example_declares_an_exact_resume_check():
    project = load_project(Path(__file__).resolve().parents[2] / "examples" / "embeddings")
    resume = project.verify.get("resume", ResumeConfig)
    assert resume is not None and (resume.atol, resume.rtol) == (0, 0)
    assert resume.steps == 5 and resume.resume_steps == 5
