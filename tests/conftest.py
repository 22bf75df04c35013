"""Fixtures: a loopback PyTorch index and default index with tiny real wheels."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from index_server import IndexServer  # noqa: E402

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
