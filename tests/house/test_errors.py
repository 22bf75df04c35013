"""errors.py holds every error class; its exit codes, hints and the docs' table agree."""

from __future__ import annotations

import importlib
import os
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import lockkit
from lockkit import errors
from lockkit.cli import main

TABLE_PAGE = Path(__file__).resolve().parents[2] / "docs" / "reference" / "exit-codes.md"
START, END = "<!-- exit-codes: generated from lockkit.errors.exit_code_table() -->\n", \
    "<!-- /exit-codes -->"


def _docs_table() -> str:
    text = TABLE_PAGE.read_text(encoding="utf-8")
    return text[text.index(START) + len(START):text.index(END)]


def _all_error_classes() -> set[type[errors.LockkitError]]:
    for info in pkgutil.walk_packages(lockkit.__path__, "lockkit."):
        # __main__ is a run; the probes are standalone scripts
        if info.name != "lockkit.__main__" and ".probes." not in info.name:
            importlib.import_module(info.name)
    found, todo = set(), [errors.LockkitError]
    while todo:
        cls = todo.pop()
        found.add(cls)
        todo += cls.__subclasses__()
    return found


def test_every_error_class_lives_in_errors_py():
    elsewhere = sorted(f"{c.__module__}.{c.__qualname__}" for c in _all_error_classes()
                       if c.__module__ != "lockkit.errors")
    assert elsewhere == []


def test_the_docs_exit_code_table_is_the_generated_one():
    assert _docs_table() == errors.exit_code_table(), (
        "docs/reference/exit-codes.md's table is stale: paste lockkit.errors.exit_code_table()")


def test_the_docs_table_names_every_class_with_its_exit_code():
    rows = {}
    for line in _docs_table().splitlines()[2:]:
        code, name = (cell.strip() for cell in line.strip("|").split("|")[:2])
        if name:
            rows[name.strip("`")] = int(code)
    assert rows == {c.__name__: c.exit_code for c in _all_error_classes()}


@pytest.mark.parametrize("cls,code", [
    (errors.UsageError, 2), (errors.ConfigError, 2), (errors.PlatformError, 2),
    (errors.DiffError, 2), (errors.ResolutionError, 1), (errors.IndexError_, 1),
    (errors.GuardError, 1), (errors.StaleLockError, 1), (errors.WriteError, 1),
    (errors.CommandError, 1), (errors.FetchError, 1), (errors.HashMismatch, 1),
    (errors.TrustError, 1), (errors.ArchiveError, 1), (errors.BuildError, 1),
])
def test_input_errors_are_2_and_failures_are_1(cls, code):
    assert cls.exit_code == code
    if cls is not errors.ConfigError:  # its message names the file, key and expected value
        assert cls.default_hint, f"{cls.__name__} says nothing about what to try next"


def test_the_raise_sites_hint_wins_over_the_class_default():
    assert errors.FetchError("x").hint is None  # fetch.py picks among explicit hints only
    assert errors.FetchError("x").advice == errors.FetchError.default_hint
    assert errors.FetchError("x", hint="use --mirror").advice == "use --mirror"


def test_main_prints_the_class_hint_under_the_error(tmp_path, capsys, monkeypatch):
    def boom(args):
        raise errors.StaleLockError("locks not fresh: linux-cpu (stale)")

    monkeypatch.setattr("lockkit.cli.platforms.handle", boom)
    assert main(["platforms", "--project", str(tmp_path)]) == 1
    err = capsys.readouterr().err.splitlines()
    hint = errors.StaleLockError.default_hint or ""  # with the --project given, as typed
    assert "'lockkit compile'" in hint
    assert err == ["lockkit: error: locks not fresh: linux-cpu (stale)", "hint: " + hint.replace(
        "'lockkit compile'", f"'lockkit compile --project {tmp_path}'")]


def test_ctrl_c_is_130(tmp_path, capsys, monkeypatch):
    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr("lockkit.cli.platforms.handle", interrupted)
    assert main(["platforms", "--project", str(tmp_path)]) == 130
    assert "interrupted" in capsys.readouterr().err


@pytest.mark.parametrize("json_flag", [["--json"], []], ids=["json", "table"])
def test_a_large_output_into_head_ends_without_a_traceback(tmp_path, json_flag):
    """Far more than a pipe's buffer: the write fails while lockkit is still printing."""
    shipped = (Path(lockkit.__file__).parents[1] / "platforms" / "linux-cpu.toml").read_text()
    (tmp_path / "platforms").mkdir()
    for i in range(1500):
        (tmp_path / "platforms" / f"p{i}.toml").write_text(shipped.replace("linux-cpu", f"p{i}"))
    command = [sys.executable, "-m", "lockkit", "platforms", *json_flag, "--project",
               str(tmp_path)]
    full = subprocess.run(command, capture_output=True, text=True, check=True)
    assert len(full.stdout) > 65536  # more than a pipe holds: the writer sees EPIPE
    r = subprocess.run(f"{subprocess.list2cmdline(command)} | head -1", shell=True, check=False,
                       capture_output=True, text=True, env={**os.environ, "COLUMNS": "200"})
    assert r.stdout.strip() in ("[", "lockkit platforms")
    assert r.stderr == ""


@pytest.mark.parametrize("argv,command", [
    (["compile", "--project", "{missing}"], "lockkit compile"),
    (["wheelhouse", "build", "--platform", "linux-cpu", "--project", "{missing}"],
     "lockkit wheelhouse build"),
    (["export", "--platform", "linux-cpu", "--project", "{missing}"], "lockkit export"),
])
def test_a_usage_hint_names_the_real_command(tmp_path, capsys, argv, command):
    """Before: "run 'lockkit COMMAND --help' ..." whatever the command."""
    argv = [a.format(missing=tmp_path / "missing") for a in argv]
    code = main(argv)
    lines = capsys.readouterr().err.splitlines()
    assert code == 2 and lines[-1] == (f"hint: run '{command} --help' for the flags and the "
                                       "values they take"), lines


def test_no_hint_holds_a_placeholder_for_the_command():
    for cls in _all_error_classes():
        advice = cls("x").advice_for("lockkit verify")
        assert not advice or ("COMMAND" not in advice and "{" not in advice
                              and "<" not in advice), (cls, advice)
    assert errors.UsageError("x").advice_for("lockkit verify") == (
        "run 'lockkit verify --help' for the flags and the values they take")
    assert errors.UsageError("x").advice == (
        "run 'lockkit --help' for the flags and the values they take")
