"""Mistakes get a did-you-mean, and hints lead somewhere (issue 33, point 5): a misspelled
command, action or flag names the close one; each hint's command, run in the state that
printed it, does what the hint says."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from lockkit.cli import main


def _error_and_hint(err: str) -> tuple[str, str]:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert "Traceback" not in err
    error = next(ln for ln in lines if ln.startswith("lockkit: error: "))
    hint = next((ln.removeprefix("hint: ") for ln in lines if ln.startswith("hint: ")), "")
    return error, hint


@pytest.mark.parametrize("argv,meant,helped", [
    (["compil"], "(did you mean 'compile'?)", "lockkit"),
    (["wheelhouse", "unpak", "x.tar"], "(did you mean 'unpack'?)", "lockkit wheelhouse"),
    (["cache", "prnue"], "(did you mean 'prune'?)", "lockkit cache"),
    (["compile", "--chek"], "unrecognized arguments: --chek (did you mean '--check'?)",
     "lockkit compile"),
    (["compile", "--forse"], "(did you mean '--force'?)", "lockkit compile"),
    (["wheelhouse", "unpack", "x.tar", "--sha265", "0"], "(did you mean '--sha256'?)",
     "lockkit wheelhouse unpack"),
    (["verify", "--platfrm=linux-cpu"], "(did you mean '--platform'?)", "lockkit verify"),
], ids=["command", "wheelhouse-action", "cache-action", "compile-flag", "flag-letter-swapped",
        "unpack-flag", "flag-with-value"])
def test_a_misspelled_command_action_or_flag_names_the_close_one(argv, meant, helped, capsys):
    assert main(argv) == 2
    error, hint = _error_and_hint(capsys.readouterr().err)
    assert meant in error, error
    assert hint == f"see '{helped} --help'"  # the command the flag was given to


# --- hints that lead somewhere -------------------------------------------------------------

def _run_hinted(hint: str, project: Path) -> list[int]:
    """Each 'lockkit ...' command the hint names, run against *project*: exit statuses."""
    commands = re.findall(r"'(lockkit [^']+)'", hint)
    assert commands, hint
    return [main([*shlex.split(c)[1:], "--project", str(project)]) for c in commands]


def _check(project: Path, capsys) -> tuple[int, str, str]:
    code = main(["compile", "--project", str(project), "--platform", "linux-cpu", "--check"])
    err = capsys.readouterr().err
    return (code, *_error_and_hint(err)) if code else (code, "", "")


@pytest.mark.parametrize("flag", ["--force", "--upgrade"])
def test_check_hint_after_an_edited_lock_names_a_compile_that_makes_it_fresh(project, capsys,
                                                                               flag):
    """Before: the hint said 'lockkit compile', which refuses an edited lock."""
    assert main(["compile", "--project", str(project), "--platform", "linux-cpu"]) == 0
    path = project / "locks" / "pylock.linux-cpu.toml"
    path.write_text(path.read_text().replace('version = "2.1.0"', 'version = "2.0.0"', 1))
    capsys.readouterr()
    code, error, hint = _check(project, capsys)
    assert code == 1 and "linux-cpu (modified)" in error
    hinted = [c for c in re.findall(r"'(lockkit [^']+)'", hint) if flag in c]
    assert len(hinted) == 1, hint
    assert _run_hinted(f"'{hinted[0]}'", project) == [0]
    capsys.readouterr()
    assert _check(project, capsys)[0] == 0


def test_wheelhouse_build_of_a_platform_not_in_the_config_says_so_and_how_to_lock_it(
        project, capsys):
    """Before: 'lock not found' with the hint 'run lockkit compile first', which locks the
    config's platforms only, so the build failed again."""
    assert "macos-arm64" not in (project / "lockkit.toml").read_text()
    build = ["wheelhouse", "build", "--project", str(project), "--platform", "macos-arm64",
             "--out", str(project.parent / "wh")]
    assert main(build) == 2
    error, hint = _error_and_hint(capsys.readouterr().err)
    assert "macos-arm64 is not in lockkit.toml's platforms" in error
    assert "add \"macos-arm64\" to platforms in lockkit.toml" in hint
    assert _run_hinted(hint, project) == [0]
    assert (project / "locks" / "pylock.macos-arm64.toml").is_file()
    capsys.readouterr()
    assert "is not in lockkit.toml's platforms" not in _build_error(build, capsys)


def _build_error(argv: list[str], capsys) -> str:
    """The build's error line, or '' when it succeeded (the lock is now found)."""
    code = main(argv)
    err = capsys.readouterr().err
    return "" if code == 0 else _error_and_hint(err)[0]


@pytest.mark.parametrize(("argv", "python"), [
    (["compile", "--python", "3.13"], "3.13"),
    (["compile", "--platform", "linux-cpu", "--python=3.12", "--check"], "3.12"),
    (["compile", "--python", "/usr/bin/python3"], "X.Y"),  # not a version: a placeholder
    (["compile", "--python"], "X.Y"),
])
def test_compile_python_is_refused_naming_where_the_locks_python_is_set(capsys, argv, python):
    """``compile --python 3.13`` said only "unrecognized arguments" (issue 42): the lock's
    Python has one source, the project, and the line says where; exit 2, before any work."""
    assert main(argv) == 2
    error, hint = _error_and_hint(capsys.readouterr().err)
    assert error == ("lockkit: error: compile --python: the lock's Python comes from the "
                     "project, not from a flag")
    assert hint.startswith(f'set python = "{python}" in lockkit.toml (or [tool.lockkit]), '
                           "or requires-python in pyproject.toml's [project]")


def test_another_commands_python_flag_is_still_an_unrecognized_argument(capsys):
    assert main(["export", "--platform", "linux-cpu", "--python", "3.13"]) == 2
    error, _ = _error_and_hint(capsys.readouterr().err)
    assert error == "lockkit: error: export: unrecognized arguments: --python 3.13"
