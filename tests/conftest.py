"""Fixtures: a loopback PyTorch index and default index with tiny real wheels."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lockkit._internal.compat import tomllib
from lockkit.cli import main
from tests.support.index_server import IndexServer
from tests.support.probes import fake_venv, numpy_wheel, venv_of  # noqa: F401 - fixtures
from tests.support.project import EXAMPLE, Loopback, assert_conforms, fill
from tests.support.pytorch_index import PyTorchIndex
from tests.support.tools import modern_pip, tool_wheels  # noqa: F401 - fixtures


@pytest.fixture(scope="session", autouse=True)
def _no_tools():
    """Wheelhouses without tools/ (lockkit's own dependencies come from the default index,
    which the loopback projects do not carry): tests/wheelhouse/test_tools.py turns tools/
    back on."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("LOCKKIT_NO_TOOLS", "1")
        yield


@pytest.fixture(scope="session", autouse=True)
def _no_columns():
    """No ``$COLUMNS``: pytest-xdist's workers have ``COLUMNS=80`` and a plain run has none,
    and piped tables honour it; the tests of a width set it themselves."""
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("COLUMNS", raising=False)
        mp.delenv("LINES", raising=False)
        yield


@pytest.fixture(scope="session", autouse=True)
def _session_cache(tmp_path_factory):
    """lockkit's default cache (downloads, verify's unpacked wheels: ~700 MB for the real
    torch) in the session's temp folder, not the user's, and removed with it."""
    root = tmp_path_factory.mktemp("lockkit-cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("LOCKKIT_CACHE_DIR", str(root))
        yield root
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def indexes(tmp_path_factory):
    """The PyTorch index replica and a default index, filled by :func:`fill`."""
    pt = PyTorchIndex(tmp_path_factory.mktemp("pytorch"))
    server = IndexServer(tmp_path_factory.mktemp("index"))
    default = server.index("/simple")
    fill(pt, default)
    with pt, server:
        yield Loopback(pt=pt, server=server, default=default)


@pytest.fixture
def project(tmp_path, indexes):
    """A project whose lockkit.toml points the official index and the default at loopback."""
    root = tmp_path / "proj"
    root.mkdir()
    (root / "requirements.in").write_text("torch==2.5.1\nnumpy\n")
    (root / "lockkit.toml").write_text(indexes.config())
    # The routing tests were written against whl/rocm6.2, which fill() serves; the shipped
    # family name linux-rocm6 now stands for whl/rocm6.4 (issue 17), so the project keeps
    # its own linux-rocm6 on rocm6.2, as a project that pinned that index would.
    (root / "platforms").mkdir()
    (root / "platforms" / "linux-rocm6.toml").write_text(ROCM62)
    return root


ROCM62 = """description = "Linux x86_64, AMD ROCm 6.2"
os = "linux"
arch = "x86_64"
python = "3.11"
python-platform = "x86_64-unknown-linux-gnu"
[backend]
kind = "rocm"
version = "6.2"
[torch]
index = "https://download.pytorch.org/whl/rocm6.2"
file-hosts = ["https://download-r2.pytorch.org"]
packages = ["torch", "torchvision", "torchaudio", "pytorch-triton-rocm"]
[gpu]
device = "cuda"
hip = "6.2"
"""


@pytest.fixture(scope="session")
def real_torch_wheels(tmp_path_factory) -> list[Path]:
    """The real CPU torch 2.13.0 wheel and its dependencies, fetched once per session by pip.

    This is how the machine supplies torch (its pip can fetch that file without the
    network); where it cannot, the tests that need real torch are skipped, saying why.
    """
    if sys.version_info[:2] != (3, 11):
        pytest.skip("the real CPU torch 2.13.0 wheel used here is built for Python 3.11")
    dest = tmp_path_factory.mktemp("real-torch")
    run = subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--only-binary", ":all:",
         "-d", str(dest), "torch==2.13.0+cpu", "numpy"],
        capture_output=True, text=True, timeout=900)
    if run.returncode != 0:
        last = (run.stderr.strip().splitlines() or ["no output"])[-1]
        pytest.skip(f"real CPU torch 2.13.0 is not available to pip on this machine: {last}")
    return sorted(dest.glob("*.whl"))


@pytest.fixture(scope="session")
def torch_index(tmp_path_factory, real_torch_wheels):
    """The PyTorch CPU index replica serving the real torch (linked on its second host, as
    the official index does), and a default index serving its real dependencies: the whole
    end-to-end path runs over 127.0.0.1."""
    pt = PyTorchIndex(tmp_path_factory.mktemp("torch-index"))
    server = IndexServer(tmp_path_factory.mktemp("default-index"))
    default = server.index("/simple")
    for wheel in real_torch_wheels:
        if wheel.name.startswith("torch-"):
            pt.put("cpu", wheel)
        else:
            default.put(wheel)
    with pt, server:
        yield Loopback(pt=pt, server=server, default=default)


@pytest.fixture(scope="session")
def torch_venv(tmp_path_factory, real_torch_wheels) -> Path:
    """The interpreter of a venv holding the real CPU torch and numpy (for probe tests)."""
    import uv

    from lockkit._internal.proc import isolated_env

    base = tmp_path_factory.mktemp("torch-venv")
    root = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    python = root / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    # uv, not pip: the same files in a fifth of the time; its cache stays in the tmp folder.
    subprocess.run([uv.find_uv_bin(), "pip", "install", "--quiet", "--no-index", "--no-config",
                    "--python", str(python), "--cache-dir", str(base / "uv-cache"),
                    *map(str, real_torch_wheels)], check=True, timeout=900, env=isolated_env())
    return python


# --- the bundled example, prepared once per session -----------------------------------------


def _configure(root: Path, loopback: Loopback) -> None:
    text = (root / "lockkit.toml").read_text()
    mirrors = "".join(f'"{k}" = "{v}"\n' for k, v in loopback.pt.mirrors().items())
    (root / "lockkit.toml").write_text(
        f'index-url = "{loopback.url}/simple"\n' + text + f"\n[mirrors]\n{mirrors}")


@pytest.fixture(scope="session")
def example(tmp_path_factory, torch_index) -> Path:
    """The bundled example, compiled for linux-cpu and its wheelhouse built, over loopback."""
    root = tmp_path_factory.mktemp("example") / "embeddings"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("locks", "wheelhouse",
                                                                 ".lockkit", "__pycache__"))
    _configure(root, torch_index)
    cache = tmp_path_factory.mktemp("cache")
    assert main(["compile", "--project", str(root), "--platform", "linux-cpu"]) == 0
    lock = tomllib.loads((root / "locks" / "pylock.linux-cpu.toml").read_text())
    assert_conforms(lock, "linux-cpu", root)
    assert main(["wheelhouse", "build", "--project", str(root), "--platform", "linux-cpu",
                 "--cache-dir", str(cache)]) == 0
    return root


@pytest.fixture
def copy_of(example, tmp_path):
    """A private copy of the prepared example (lock and wheelhouse included; wheels linked)."""
    made = []

    def make() -> Path:
        made.append(1)
        dest = tmp_path / f"embeddings-{len(made)}"
        shutil.copytree(example, dest, copy_function=_link, ignore=shutil.ignore_patterns(
            ".lockkit"))
        return dest
    return make


def _link(src: str, dst: str) -> None:
    """Wheels are hard-linked (large, never written); every other file is a real copy, so
    a test that edits its copy cannot write through a link into the shared example."""
    if src.endswith(".whl"):
        try:
            Path(dst).hardlink_to(src)
            return
        except OSError:
            pass
    shutil.copy2(src, dst)


_REAL_TORCH = {"real_torch_wheels", "torch_index", "torch_venv", "example", "copy_of"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """``slow``: every test that downloads, installs or runs the real CPU torch (one of the
    fixtures that make it); a test over 10 s without them carries the mark itself.
    ``pytest -m "not slow"`` runs the rest."""
    for item in items:
        if _REAL_TORCH & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)
