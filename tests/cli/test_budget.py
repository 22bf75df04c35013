"""Start-up stays cheap: the commands that need no resolution import no heavy package.

Timings live in benchmarks/; this holds the import list, which does not vary by machine.
"""

from __future__ import annotations

import subprocess
import sys

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


def test_help_lines_never_break_a_flag_or_a_step_at_its_hyphen():
    """The help formatter wraps at spaces only: ``--find-links`` and ``pip-check`` stay
    whole however narrow the terminal (argparse's own lines break at hyphens)."""
    from lockkit.cli.parser import _Formatter

    text = "--find-links and pip-check stay whole " * 4
    for width in range(12, 40):
        lines = _Formatter(prog="lockkit")._split_lines(text, width)
        assert " ".join(lines).split() == text.split(), (width, lines)
        assert all(len(line) <= width for line in lines), (width, lines)
