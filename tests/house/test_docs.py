"""The docs: the command reference generated from the parser covers every command and flag,
every command has a page that renders it, the README's relative links name files that
exist, and CI runs the README's own test command."""

from __future__ import annotations

import argparse
import functools
import importlib.util
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from lockkit.cli.parser import build_parser

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
README = ROOT / "README.md"
BLOCK = re.compile(r"^```\{lockkit-command\} (.+?)\n```$", re.M)


@functools.cache
def _clidoc() -> Any:
    """docs/_ext/clidoc.py, the Sphinx extension, loaded by path (plain Python, no Sphinx)."""
    spec = importlib.util.spec_from_file_location("clidoc", DOCS / "_ext" / "clidoc.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def _help_commands(parser: argparse.ArgumentParser, prefix: str = "") -> dict[str, str]:
    """Every command path and its ``--help`` text, found by reading the help itself: the
    commands listed under its positional argument (``COMMAND``, ``ACTION``), then each
    one's own help."""
    found: dict[str, str] = {}
    help_text = parser.format_help()
    positional = help_text.split("positional arguments:\n", 1)[1].split("\n\n", 1)[0] \
        if "positional arguments:" in help_text else ""
    for name in re.findall(r"^    ([a-z][a-z-]*)(?:  |$)", positional, re.M):
        path = f"{prefix} {name}".strip()
        child = parser._subparsers._group_actions[0].choices[name]
        found[path] = child.format_help()
        found.update(_help_commands(child, path))
    return found


def _help_flags(help_text: str) -> set[str]:
    """The flags in the option column of a ``--help`` (``  -o FILE, --output FILE  ...``)."""
    column = re.findall(r"^  (-.*?)(?:  |$)", help_text, re.M)
    return {flag for entry in column for flag in re.findall(r"--?[a-z][a-z0-9-]*", entry)}


def _rendered(command: Any) -> str:
    return "\n".join([command.usage, command.description,
                      *(f"{n} {h}" for n, h in command.subcommands),
                      *(f"{f.names} {f.help}" for f in command.flags)])


def test_the_generated_reference_lists_every_command_the_help_lists():
    clidoc = _clidoc()
    assert list(clidoc.commands()) == list(_help_commands(build_parser()))
    assert {"wheelhouse build", "wheelhouse unpack", "cache prune", "ci github"} <= set(
        clidoc.commands())


@pytest.mark.parametrize("path", list(_help_commands(build_parser())))
def test_the_generated_reference_shows_every_flag_of_the_command(path):
    help_text = _help_commands(build_parser())[path]
    text = _rendered(_clidoc().describe(path))
    shown = {name for flag in _clidoc().describe(path).flags
             for name in re.findall(r"--?[a-z][a-z0-9-]*", flag.names)}
    assert _help_flags(help_text) - {"-h", "--help"} <= shown, text
    assert text.startswith(f"lockkit {path}")


def test_every_command_has_a_page_that_renders_it():
    pages = {path: page.relative_to(DOCS) for page in DOCS.rglob("*.md")
             for path in BLOCK.findall(page.read_text("utf-8"))}
    assert _clidoc().missing(set(pages)) == []
    assert set(pages) <= set(_clidoc().commands()), "a page renders a command the parser lacks"


def test_a_command_no_page_renders_is_reported_by_name():
    """What fails the docs build when a command is added without a page."""
    parser = build_parser()
    sub = parser._subparsers._group_actions[0]
    sub.add_parser("audit", help="a new command")
    everything_else = set(_clidoc().commands()) - {"audit"}
    assert _clidoc().missing(everything_else, parser) == ["audit"]


LINK = re.compile(r"\]\(([^)\s]+)\)")


def test_every_relative_link_in_the_readme_names_a_file_that_exists():
    targets = [t for t in LINK.findall(README.read_text("utf-8"))
               if not re.match(r"[a-z]+:", t) and not t.startswith("#")]
    assert len(targets) > 20, targets  # the README links into the docs
    broken = [t for t in targets if not (ROOT / t.split("#", 1)[0]).exists()]
    assert broken == []


def test_ci_runs_the_readmes_test_command():
    text = README.read_text("utf-8")
    setup2 = re.search(r"^# 2\. install and run the tests\n(.+)$", text, re.M)
    assert setup2, "README.md has no set-up 2 command"
    test_command = setup2[1].split(" && ")[-1]
    assert test_command.startswith("python -m pytest")
    ci = (ROOT / ".ci" / "run").read_text("utf-8").splitlines()
    assert test_command in ci
