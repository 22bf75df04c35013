"""Fixtures: a loopback PyTorch index and default index with tiny real wheels."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from index_server import IndexServer  # noqa: E402
from lockkit.cli import main  # noqa: E402

OFFICIAL = "https://download.pytorch.org/whl"
LINUX = "cp311-cp311-linux_x86_64"
MAC = "cp311-cp311-macosx_11_0_arm64"


@pytest.fixture
def indexes(tmp_path_factory):
    """A fake ``download.pytorch.org/whl/{cpu,cu126,rocm6.2}`` and a fake default index."""
    server = IndexServer(tmp_path_factory.mktemp("index"))
    cpu, cu126, rocm = (server.index(f"/whl/{v}") for v in ("cpu", "cu126", "rocm6.2"))
    default = server.index("/simple")
    for idx, local in ((cpu, "cpu"), (cu126, "cu126"), (rocm, "rocm6.2")):
        deps = {"cu126": ["nvidia-cublas-cu12==12.6.4.1", "triton==3.1.0"],
                "rocm6.2": ["pytorch-triton-rocm==3.1.0"]}.get(local, [])
        idx.add("torch", f"2.5.1+{local}", requires=["filelock"] + deps, tag=LINUX)
    cu126.add("triton", "3.1.0", tag=LINUX)
    cu126.add("nvidia-cublas-cu12", "12.6.4.1", tag="py3-none-manylinux2014_x86_64")
    rocm.add("pytorch-triton-rocm", "3.1.0", tag=LINUX)
    default.add("filelock", "3.16.1")
    default.add("numpy", "2.1.0", tag=LINUX)
    default.add("numpy", "2.1.0", tag=MAC)
    default.add("torch", "2.5.1", requires=["filelock"], tag=MAC)
    with server:
        yield server


@pytest.fixture
def project(tmp_path, indexes):
    """A project whose lockkit.toml points the official index and the default at loopback."""
    root = tmp_path / "proj"
    root.mkdir()
    (root / "requirements.in").write_text("torch==2.5.1\nnumpy\n")
    (root / "lockkit.toml").write_text(
        f'index-url = "{indexes.url}/simple"\nplatforms = ["linux-cpu"]\n'
        f'[mirrors]\n"{OFFICIAL}" = "{indexes.url}/whl"\n'
    )
    return root


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
    """A loopback mirror of the PyTorch CPU index serving the real torch, and a default
    index serving its real dependencies: the whole end-to-end path runs over 127.0.0.1."""
    server = IndexServer(tmp_path_factory.mktemp("torch-index"))
    cpu, default = server.index("/whl/cpu"), server.index("/simple")
    for wheel in real_torch_wheels:
        (cpu if wheel.name.startswith("torch-") else default).put(wheel)
    with server:
        yield server


@pytest.fixture(scope="session")
def torch_venv(tmp_path_factory, real_torch_wheels) -> Path:
    """The interpreter of a venv holding the real CPU torch and numpy (for probe tests)."""
    root = tmp_path_factory.mktemp("torch-venv") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(root)], check=True)
    python = root / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--no-index",
                    "--isolated", *map(str, real_torch_wheels)], check=True, timeout=900)
    return python


# --- the bundled example, prepared once per session -----------------------------------------

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "embeddings"


def lockkit(*argv: str, network: bool = True) -> subprocess.CompletedProcess:
    """The CLI in a child process; ``network=False`` runs it in a private network namespace."""
    prefix = [] if network else _no_network()
    return subprocess.run([*prefix, sys.executable, "-m", "lockkit", *argv],
                          capture_output=True, text=True, timeout=1800)


def _no_network() -> list[str]:
    if subprocess.run(["unshare", "-rn", "true"], capture_output=True).returncode != 0:
        pytest.skip("unshare -rn (a private network namespace) is not available here")
    return ["unshare", "-rn"]


def _configure(root: Path, url: str) -> None:
    text = (root / "lockkit.toml").read_text()
    (root / "lockkit.toml").write_text(
        f'index-url = "{url}/simple"\n' + text + f'\n[mirrors]\n"{OFFICIAL}" = "{url}/whl"\n')


@pytest.fixture(scope="session")
def example(tmp_path_factory, torch_index) -> Path:
    """The bundled example, compiled for linux-cpu and its wheelhouse built, over loopback."""
    root = tmp_path_factory.mktemp("example") / "embeddings"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("locks", "wheelhouse",
                                                                 ".lockkit", "__pycache__"))
    _configure(root, torch_index.url)
    cache = tmp_path_factory.mktemp("cache")
    assert main(["compile", "--project", str(root), "--platform", "linux-cpu"]) == 0
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
