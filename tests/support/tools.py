"""Shared by several stages' tests: lockkit's real dependencies on a loopback default index
(the tools/ folder's), downloaded once; a project compiled against them."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest

from lockkit.cli import main
from lockkit.wheelhouse import ownwheel
from tests.support.fake_torch import build_fake_torch
from tests.support.index_server import IndexServer
from tests.support.pytorch_index import PyTorchIndex


def mirrors_of(pt: PyTorchIndex) -> str:
    return "[mirrors]\n" + "".join(f'"{k}" = "{v}"\n' for k, v in pt.mirrors().items())


@contextmanager
def compiled_with_tools(base: Path, tool_wheels: Sequence[Path], name: str = "proj", *,
                  requirements: str = "torch==2.5.1\n", config: str = "",
                  tools: bool = True) -> Iterator[tuple[Path, IndexServer, PyTorchIndex]]:
    """A linux-cpu project compiled over loopback: the PyTorch index replica serving a
    fake CPU torch 2.5.1, a default index serving lockkit's real dependencies
    (*tool_wheels*), so that ``tools/`` resolves as it does for a user. *config* goes
    into lockkit.toml before the mirrors; *tools*: ``LOCKKIT_NO_TOOLS`` (set for the
    suite, which skips tools/ elsewhere) unset meanwhile. Yields (project, default
    index server, PyTorch index); both stop on the way out."""
    pt, server = PyTorchIndex(base / "pytorch"), IndexServer(base / "index")
    with pt, server, pytest.MonkeyPatch.context() as mp:
        if tools:
            mp.delenv("LOCKKIT_NO_TOOLS", raising=False)
        default = server.index("/simple")
        for wheel in tool_wheels:
            default.put(wheel)
        pt.put("cpu", build_fake_torch(base / "built", version="2.5.1+cpu", cuda=None))
        root = base / name
        root.mkdir()
        (root / "requirements.in").write_text(requirements)
        (root / "lockkit.toml").write_text(
            f'index-url = "{server.url}/simple"\nplatforms = ["linux-cpu"]\n{config}'
            + mirrors_of(pt))
        assert main(["compile", "--project", str(root)]) == 0
        yield root, server, pt


@pytest.fixture(scope="session")
def modern_pip(tmp_path_factory) -> Path:
    """A pip wheel >= 26.1 (the first with ``-r pylock.toml``), run from the wheel itself
    (``python <wheel>/pip``), downloaded once from the default index."""
    dest = tmp_path_factory.mktemp("pip26")
    run = subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                          "--only-binary", ":all:", "pip>=26.1", "-d", str(dest)],
                         capture_output=True, text=True, timeout=300)
    wheels = sorted(dest.glob("pip-*.whl"))
    if run.returncode != 0 or not wheels:
        pytest.skip("no pip >= 26.1 available to download here (needed for -r pylock.toml)")
    return wheels[-1]


@pytest.fixture(scope="session")
def tool_wheels(tmp_path_factory) -> Iterator[list[Path]]:
    """lockkit's runtime dependencies and hatchling (its build backend), downloaded once by
    pip from the default index, for this interpreter (the linux-cpu platform's 3.11)."""
    if sys.version_info[:2] != (3, 11) or not sys.platform.startswith("linux"):
        pytest.skip("the linux-cpu platform is Python 3.11 on Linux; this interpreter is not")
    dest = tmp_path_factory.mktemp("tool-wheels")
    run = subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--only-binary", ":all:",
         "-d", str(dest), *ownwheel.runtime_requirements(), "hatchling"],
        capture_output=True, text=True, timeout=900)
    if run.returncode != 0:
        last = (run.stderr.strip().splitlines() or ["no output"])[-1]
        pytest.skip(f"lockkit's dependencies are not available to pip here: {last}")
    yield sorted(dest.glob("*.whl"))
    shutil.rmtree(dest, ignore_errors=True)  # ~40 MB: numpy and uv
