"""``-v`` and ``-q`` on every command, through ``logging`` (issue 33, point 8): ``-v`` says
the URLs fetched (redacted), the decisions taken and the times; ``-q`` says errors only;
what a command prints on stdout stays. (The levels themselves: ``tests/internal/test_log.py``;
a step's time: ``tests/steps/test_engine.py``; a retried page: ``tests/index/test_pages.py``.)"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from lockkit.cli import main
from lockkit.cli.parser import build_parser, verbosity


def compile_(project: Path, *args: str) -> int:
    return main(["compile", "--project", str(project), *args])


def _with_pytorch_token(project: Path, indexes, monkeypatch) -> list[str]:
    """--mirror flags that reach the PyTorch index replica with user:${PT_TOKEN}@, which it
    requires (the token is really used, so a leak would show it)."""
    monkeypatch.setenv("PT_TOKEN", "pt-s3cr3t")
    (project / "lockkit.toml").write_text(f'index-url = "{indexes.url}/simple"\n')
    indexes.pt.auth = ("bob", "pt-s3cr3t")
    return [a for k, v in indexes.pt.mirrors().items()
            for a in ("--mirror", f"{k}={v.replace('http://', 'http://bob:${PT_TOKEN}@')}")]


def test_verbose_compile_shows_the_page_urls_fetched_never_the_token(project, indexes,
                                                                      capsys, monkeypatch):
    mirrors = _with_pytorch_token(project, indexes, monkeypatch)
    assert compile_(project, "-v", "--platform", "linux-cu126", *mirrors) == 0
    err = capsys.readouterr().err
    fetched = [ln for ln in err.splitlines() if ln.startswith("GET ")]
    assert any("/pt/whl/cu126/torch/: 200 (" in ln for ln in fetched), err
    assert "pt-s3cr3t" not in err and "bob" not in err, err
    assert all("http://***@127.0.0.1:" in ln for ln in fetched), fetched


def test_verbose_compile_shows_routing_the_chosen_python_and_timings(project, capsys):
    assert main(["-v", "compile", "--project", str(project)]) == 0
    err = capsys.readouterr().err
    assert re.search(r"^routing: torch -> the PyTorch index http://127\.0\.0\.1:\d+/\S*whl/cpu/$",
                     err, re.M), err
    assert "routing: numpy -> the default index" in err
    assert "routing: numpy -> the PyTorch index" not in err
    assert "linux-cpu: Python 3.11 (the platform's default; no requires-python)" in err
    assert re.search(r"^linux-cpu: uv resolved in \d+\.\d\d s$", err, re.M), err
    assert re.search(r"^linux-cpu: written in \d+\.\d\d s$", err, re.M), err
    assert re.search(r"^lockkit compile: done in \d+\.\d\d s$", err, re.M), err
    # the second run makes the same lock from the same inputs: the memo says so
    assert compile_(project, "-v") == 0
    assert "linux-cpu: memo hit" in capsys.readouterr().err


@pytest.mark.parametrize("flags,said", [(["-v"], False), (["-vv"], True), (["-v", "-v"], True)])
def test_double_verbose_adds_each_command_run_with_its_time(project, capsys, flags, said):
    assert compile_(project, *flags) == 0
    err = capsys.readouterr().err
    assert bool(re.search(r"^\+ \S*uv pip compile .* \(exit 0, \d+\.\d\d s\)$", err,
                          re.M)) is said, err
    assert "routing: torch" in err  # -v's lines are there at either count


def test_python_reason_names_requires_python_when_the_default_is_outside_it(project, capsys):
    (project / "pyproject.toml").write_text('[project]\nname = "p"\nversion = "1"\n'
                                            'requires-python = ">=3.12"\n')
    # the replica serves cp311 torch wheels only: uv finds none for 3.12, after the choice
    assert compile_(project, "-v") == 1
    assert ("linux-cpu: Python 3.12 (the lowest within requires-python >=3.12; the "
            "platform's default 3.11 is not)\n") in capsys.readouterr().err


def test_default_level_says_none_of_the_verbose_lines(project, capsys):
    assert compile_(project) == 0
    err = capsys.readouterr().err
    assert "routing:" not in err and "GET " not in err and "Python" not in err
    assert not re.search(r"\d\.\d\d s$", err, re.M), err


def test_quiet_compile_prints_nothing_on_stderr_and_keeps_the_table_on_stdout(project,
                                                                              capsys):
    assert compile_(project, "-q") == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert "linux-cpu" in out and "written" in out  # the command's answer stays
    assert (project / "locks" / "pylock.linux-cpu.toml").is_file()


@pytest.mark.parametrize("quiet", [[], ["-q"]], ids=["default", "quiet"])
def test_quiet_failure_still_prints_the_error_line_and_its_exit_code(project, capsys, quiet):
    assert compile_(project, *quiet, "--check") == 1  # no lock compiled yet
    lines = capsys.readouterr().err.splitlines()
    assert lines[-2].startswith("lockkit: error: locks not fresh: linux-cpu (missing)")
    assert lines[-1].startswith("hint: ")
    assert ("linux-cpu: missing (locks/pylock.linux-cpu.toml)" in lines) == (not quiet)


def test_quiet_usage_error_is_still_one_line_and_exit_2(tmp_path, capsys):
    assert main(["-q", "compile", "--jobs", "0", "--project", str(tmp_path)]) == 2
    assert capsys.readouterr().err.startswith("lockkit: error: --jobs 0: must be at least 1")


@pytest.mark.parametrize("argv", [
    ["-v", "platforms"], ["platforms", "-v"], ["--verbose", "platforms"],
    ["-v", "cache", "info"], ["cache", "-v", "info"], ["cache", "info", "-v"],
], ids=lambda a: " ".join(a))
def test_verbose_is_accepted_before_and_after_the_command(argv, capsys, tmp_path):
    assert main([*argv, *(["--project", str(tmp_path)] if "cache" in argv else [])]) == 0
    assert re.search(r"^lockkit (platforms|cache info): done in \d+\.\d\d s$",
                     capsys.readouterr().err, re.M)


@pytest.mark.parametrize("argv", [
    ["-q", "platforms"], ["platforms", "-q"], ["--quiet", "platforms", "--json"],
    ["-q", "cache", "info"], ["cache", "info", "--quiet"],
], ids=lambda a: " ".join(a))
def test_quiet_is_accepted_before_and_after_the_command(argv, capsys, tmp_path):
    assert main([*argv, *(["--project", str(tmp_path)] if "cache" in argv else [])]) == 0
    out, err = capsys.readouterr()
    assert err == "" and out  # the answer on stdout, nothing on stderr


@pytest.mark.parametrize("argv,count", [
    (["compile"], 0), (["-v", "compile"], 1), (["compile", "-vv"], 2),
    (["-v", "compile", "-v"], 2), (["-q", "compile"], -1), (["-qq", "compile"], -2),
    (["-v", "wheelhouse", "-v", "build", "-v", "--platform", "x"], 3),
])
def test_v_and_q_are_counted_wherever_they_are_given(argv, count):
    assert verbosity(build_parser().parse_args(argv)) == count


@pytest.mark.parametrize("argv", [["-v", "-q", "platforms"], ["-v", "platforms", "-q"],
                                  ["platforms", "-q", "--verbose"]])
def test_v_with_q_is_one_usage_line_exit_2(argv, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.splitlines()[0] == ("lockkit: error: -v and -q cannot be given together: "
                                   "-q is errors only"), err


def _parsers(parser: argparse.ArgumentParser):
    yield parser
    for action in parser._actions:  # noqa: SLF001 - argparse's own list, walked as a test
        if isinstance(action, argparse._SubParsersAction):  # noqa: SLF001
            for sub in action.choices.values():
                yield from _parsers(sub)


def test_every_commands_help_lists_v_and_q():
    parsers = list(_parsers(build_parser()))
    assert len(parsers) > 15  # every command and action was walked
    for parser in parsers:
        text = parser.format_help()
        assert "-v, --verbose" in text and "-q, --quiet" in text, parser.prog


def test_verbose_wheelhouse_build_says_cache_misses_then_hits_and_the_urls(project, tmp_path,
                                                                         capsys):
    from tests.support.wheelhouse import compiled

    compiled(project)
    build = ["wheelhouse", "build", "-v", "--project", str(project), "--platform",
             "linux-cpu", "--cache-dir", str(tmp_path / "cache")]
    assert main(build) == 0
    first = capsys.readouterr().err
    assert re.search(r"^numpy-\S+\.whl: cache miss \(sha256 [0-9a-f]{16}\)$", first, re.M), first
    assert re.search(r"^GET http://127\.0\.0\.1:\d+/\S+/numpy-\S+\.whl: 200 \(", first, re.M)
    assert "cache hit" not in first
    # the same lock again, into a new folder (the same one is up to date: nothing fetched):
    # every file from the cache, no URL
    assert main([*build, "--out", str(tmp_path / "again")]) == 0
    second = capsys.readouterr().err
    assert re.search(r"^numpy-\S+\.whl: cache hit \(sha256 [0-9a-f]{16}\)$", second, re.M)
    assert "cache miss" not in second and "GET " not in second, second


def test_verbose_compile_names_every_index_uv_is_pointed_at_when_all_is_default(
        project, indexes, capsys, monkeypatch):
    """Issue 42: ``-v`` named no index on a compile whose packages all come from the
    default index. It names the default index, the routing index uv asks first and the
    PyTorch index (its mirror, with the official URL) behind it, and each mirror, the
    credentials masked."""
    mirrors = _with_pytorch_token(project, indexes, monkeypatch)
    (project / "requirements.in").write_text("numpy\nfilelock\n")
    assert compile_(project, "-v", "--platform", "linux-cpu", *mirrors) == 0
    err = capsys.readouterr().err
    assert "pt-s3cr3t" not in err and "bob" not in err, err
    assert f"linux-cpu: uv's default index: {indexes.url}/simple\n" in err, err
    first = next(ln for ln in err.splitlines() if "uv's first index" in ln)
    assert re.search(r"lockkit's routing index on http://127\.0\.0\.1:\d+,", first), first
    assert "torch" in first and "the mirror http://***@127.0.0.1:" in first, first
    assert "(for the PyTorch index https://download.pytorch.org/whl/cpu)" in first, first
    for official in indexes.pt.mirrors():
        assert re.search(rf"^linux-cpu: mirror: {re.escape(official)} -> http://\*\*\*@127",
                         err, re.M), err
