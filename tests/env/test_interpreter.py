"""The facts an interpreter prints about itself are foreign JSON: accepted only as an
object with a string ``version``; anything else is the one-line "cannot run the
interpreter" failure, never a KeyError out of the step."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from lockkit.config.project import load_project
from lockkit.env.interpreter import given_interpreter
from lockkit.platforms.definitions import load_platforms
from lockkit.steps.context import Options, Run
from lockkit.steps.engine import StepFailed, Steps
from lockkit.verify.run import PLAN

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="a shell script interpreter")


def _run(tmp_path: Path) -> Run:
    (tmp_path / "lockkit.toml").write_text("")
    opts = Options(project=load_project(tmp_path), platform=load_platforms(None)["linux-cpu"])
    return Run(opts=opts, work=tmp_path / "work", steps=Steps(PLAN))


def _printing(tmp_path: Path, printed: str) -> Path:
    """An "interpreter" that prints *printed*, whatever it is asked."""
    script = tmp_path / "python"
    script.write_text(f"#!/bin/sh\ncat <<'EOF'\n{printed}\nEOF\n")
    script.chmod(0o755)
    return script


def test_facts_with_a_version_are_the_interpreters(tmp_path):
    facts = {"version": "3.11", "full": "3.11.7", "in_venv": False}
    python = _printing(tmp_path, json.dumps(facts))
    assert given_interpreter(_run(tmp_path), python, "3.11", "--python") == (python, facts)


@pytest.mark.parametrize("printed", [
    json.dumps({"full": "3.11.7"}),  # no version
    json.dumps({"version": 3.11}),  # not a string
    json.dumps(["3.11"]),  # not an object
    "Python 3.11.7",  # not JSON
])
def test_facts_without_a_string_version_are_one_line_naming_the_interpreter(tmp_path,
                                                                           printed):
    python = _printing(tmp_path, printed)
    with pytest.raises(StepFailed, match=f"^cannot run the interpreter {python}: "):
        given_interpreter(_run(tmp_path), python, "3.11", "--python")
