"""Start-up stays cheap: the commands that need no resolution import no heavy package.

Timings live in benchmarks/; this holds the import list, which does not vary by machine.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

HEAVY = {"packaging", "httpx", "rich", "numpy", "tomli_w", "uv", "httpcore", "anyio"}


def _imported(*argv: str) -> set[str]:
    run = subprocess.run([sys.executable, "-X", "importtime", "-m", "lockkit", *argv],
                         capture_output=True, text=True, timeout=60)
    return {line.split("|")[-1].strip().split(".")[0] for line in run.stderr.splitlines()
            if line.startswith("import time:")}


@pytest.mark.parametrize("argv", [("--version",), ("--help",)])
def test_the_cheapest_commands_import_no_heavy_package(argv):
    imported = _imported(*argv)
    assert "lockkit" in imported  # the measurement saw lockkit's own imports
    assert not imported & HEAVY, sorted(imported & HEAVY)


# What --version's answer does not need, of what lockkit's start used to import: textwrap
# (the one line argparse prints fits: the formatter wraps nothing). typing stays (and the
# contextlib it imports): the idiom that avoids it (``TYPE_CHECKING = False``) is one a
# newcomer must learn, which our style rules out.
NOT_FOR_VERSION = {"textwrap"}


# The console script an installer writes (``python -m`` adds runpy's imports, contextlib
# among them): the way users run lockkit, and benchmarks/startup.py times it.
CONSOLE_SCRIPT = "import re, sys\nfrom lockkit.__main__ import main\nsys.exit(main())\n"


def test_version_imports_no_textwrap():
    run = subprocess.run([sys.executable, "-X", "importtime", "-c", CONSOLE_SCRIPT,
                          "--version"], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0 and run.stdout.startswith("lockkit "), run.stderr[-2000:]
    imported = {line.split("|")[-1].strip().split(".")[0] for line in run.stderr.splitlines()
                if line.startswith("import time:")}
    assert "argparse" in imported  # the measurement saw the parser's imports
    assert not imported & NOT_FOR_VERSION, sorted(imported & NOT_FOR_VERSION)


@pytest.mark.parametrize("text", [
    "lockkit 0.1.0", "  spaced\tout\n text  ", "--find-links and pip-check stay whole " * 4,
    "x" * 30, "x" * 31, "word " * 7, ""])
@pytest.mark.parametrize("indent", ["", "  "])
def test_the_help_formatter_wraps_as_textwrap_does(text, indent):
    """The formatter's one-line answer without textwrap is textwrap's answer, on either
    side of the width (32 columns: 30 with the indent)."""
    from lockkit.cli.parser import _Formatter

    formatter = _Formatter(prog="lockkit")
    words = " ".join(text.split())
    assert formatter._fill_text(text, 32, indent) == textwrap.fill(
        words, 32, initial_indent=indent, subsequent_indent=indent, break_on_hyphens=False)
    assert formatter._split_lines(text, 32) == textwrap.wrap(words, 32, break_on_hyphens=False)
