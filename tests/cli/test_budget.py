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
