"""A requirement whose bound moved reads as one change, ``changed numpy>=2 → numpy>=2.1``,
in ``compile --check``'s stale detail and in ``lockkit diff`` of two locks: the lines that
left and came are paired by canonical name."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from lockkit.cli import main
from lockkit.lock.freshness import InputsRecord, explain
from tests.support.project import hello_project

LOCK = Path("locks") / "pylock.linux-cpu.toml"


def inputs(*lines: str, label: str = "requirements.in") -> InputsRecord:
    return {"requirements": {label: list(lines)}, "options": {}}


def test_a_new_bound_is_one_changed_line_not_an_added_and_a_removed():
    said = explain(inputs("numpy>=2", "torch==2.5.1"), inputs("NumPy>=2.1", "torch==2.5.1"))
    assert said == "requirements.in: changed numpy>=2 → NumPy>=2.1"
    said = explain(inputs("numpy>=2", "a line!"), inputs("filelock", "numpy>=2.1", "another!"))
    assert said == ("requirements.in: changed numpy>=2 → numpy>=2.1; requirements.in: added "
                    "filelock; requirements.in: added another!; requirements.in: removed a "
                    "line!")  # another name, and lines that do not parse, are never paired


def test_an_outside_files_change_is_counted_never_named():
    said = explain(inputs("s3cret>=1", label="../shared/c.txt"),
                   inputs("s3cret>=2", "numpy", label="../shared/c.txt"))
    assert said == ("../shared/c.txt: 1 requirement(s) changed, 1 requirement(s) added "
                    "(not shown: the file is outside the project)")


def test_compile_check_names_the_changed_requirement(tmp_path, indexes, capsys):
    root = hello_project(tmp_path / "proj", indexes, tmp_path / "cache")
    (root / "requirements.in").write_text("hello-cli>=1.0\n")
    capsys.readouterr()
    assert main(["compile", "--project", str(root), "--platform", "linux-cpu", "--check"]) == 1
    err = capsys.readouterr().err
    assert "requirements.in: changed hello-cli → hello-cli>=1.0" in err
    assert "added" not in err and "removed" not in err


def test_diff_of_two_locks_names_the_requirement_that_changed(tmp_path, indexes, capsys):
    root = hello_project(tmp_path / "proj", indexes, tmp_path / "cache")
    shutil.copy(root / LOCK, tmp_path / "before.toml")
    (root / "requirements.in").write_text("hello-cli>=1.0\n")
    assert main(["compile", "--project", str(root), "--platform", "linux-cpu"]) == 0
    capsys.readouterr()
    assert main(["diff", str(tmp_path / "before.toml"), str(root / LOCK)]) == 1
    out = capsys.readouterr().out
    assert "requirements.in: changed hello-cli → hello-cli>=1.0" in out
    assert "None" not in out
    assert main(["diff", str(tmp_path / "before.toml"), str(root / LOCK), "--json"]) == 1
    rows = json.loads(capsys.readouterr().out)["differences"]
    said = [line for row in rows for line in row["said"]]
    assert said == ["requirements.in: changed hello-cli → hello-cli>=1.0"]
