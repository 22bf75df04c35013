"""The ``compile --check`` gate (lockkit.lock.freshness): it judges each lock by the digests
it records, the hosts its URLs name and its ``[tool.lockkit]``, read once without the PEP 751
validation the commands that use the packages do (tests/lock/test_model.py), so a start
imports none of ``packaging.pylock``; a malformed table still fails it."""

from __future__ import annotations

import subprocess
import sys

import pytest

from lockkit.cli import main
from tests.support.wheelhouse import compiled


def _check(project, capsys) -> tuple[int, str]:
    capsys.readouterr()
    code = main(["compile", "--check", "--project", str(project), "--platform", "linux-cpu"])
    return code, capsys.readouterr().err


def test_the_gate_imports_no_pep_751_validation(project, indexes):
    lock = compiled(project)
    run = subprocess.run([sys.executable, "-X", "importtime", "-m", "lockkit", "compile",
                          "--check", "--project", str(project), "--platform", "linux-cpu"],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    assert f"linux-cpu: fresh ({lock.relative_to(project)})" in run.stderr
    imported = {line.split("|")[-1].strip() for line in run.stderr.splitlines()
                if line.startswith("import time:")}
    assert "lockkit.lock.model" in imported  # the measurement saw the lock's reader
    assert "packaging.pylock" not in imported


@pytest.mark.parametrize("old,new,said", [
    ('python = "3.11"', "python = 3.11",
     'not a lock lockkit wrote (tool.lockkit.python: expected a version such as "3.12", '
     "got 3.11)"),
    ('lock-format = 2', 'lock-format = "2"',
     "not a lock lockkit wrote (tool.lockkit.lock-format: expected an integer, got '2')"),
    ('platform = "linux-cpu"', "platform = 1",
     "not a lock lockkit wrote (tool.lockkit.platform: expected a platform name, got 1)"),
], ids=["python", "lock-format", "platform"])
def test_a_malformed_lockkit_table_fails_the_gate(project, indexes, capsys, old, new, said):
    lock = compiled(project)
    text = lock.read_text()
    assert old in text
    lock.write_text(text.replace(old, new, 1))
    code, err = _check(project, capsys)
    assert code == 1
    assert f"linux-cpu: modified ({lock.relative_to(project)}): {said}" in err, err
    assert "Traceback" not in err
