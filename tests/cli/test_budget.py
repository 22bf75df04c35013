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


def test_routing_server_takes_uvs_bursts():
    """uv asks the routing index for every package at once: its listen backlog is raised
    above the default 5, and a burst of 64 connections is answered in full."""
    import concurrent.futures
    import http.server
    import urllib.error
    import urllib.request

    from lockkit.index.loopback import BACKLOG
    from lockkit.index.routing import RoutingIndex
    from lockkit.index.urls import Mirrors

    def never(url: str) -> tuple[int, str]:
        raise AssertionError("no family page is asked for in this test")

    def ask(name: str) -> int:
        try:
            with urllib.request.urlopen(f"{routing.url}/{name}/", timeout=30) as resp:
                return int(resp.status)
        except urllib.error.HTTPError as err:
            return err.code

    assert BACKLOG > http.server.ThreadingHTTPServer.request_queue_size
    with RoutingIndex(family=("torch",), official_index="https://download.pytorch.org/whl/cpu",
                      mirrors=Mirrors({}), file_hosts=(), fetch=never) as routing:
        with concurrent.futures.ThreadPoolExecutor(64) as pool:
            codes = list(pool.map(ask, [f"pkg{i}" for i in range(64)]))
    assert codes == [404] * 64  # not a family name: the next index answers
