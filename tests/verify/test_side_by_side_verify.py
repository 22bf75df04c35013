"""Several backends side by side, verified (issue 42): the project of
``tests/compile/test_side_by_side.py`` (CPU and CUDA 13.2 on torch 2.13.0, ROCm 6 on its
own torch 2.9.1 and torchvision 0.24.1) over a replica serving importable fake builds of
the same wheels (``fill_side_by_side(devices=...)``). Each platform's lock is built into
its wheelhouse and ``verify`` rebuilds it offline: the CPU torch, the CUDA 13.2 one with a
GPU and an NVIDIA driver new enough (a fake ``nvidia-smi``), the ROCm 6.4 one with an AMD
GPU and its driver (a fake ``rocm-smi``). numpy, real, lets the fakes multiply."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from lockkit.cli import main
from tests.support.index_server import IndexServer
from tests.support.project import lockkit
from tests.support.pytorch_index import PyTorchIndex
from tests.support.pytorch_variants import fill_side_by_side

pytestmark = pytest.mark.skipif(os.name == "nt", reason="a shell-script nvidia-smi, rocm-smi")

PLATFORMS = ("linux-cpu", "linux-cu132", "linux-rocm6")
ROCM = '[platform-requirements]\nlinux-rocm6 = ["torch==2.9.1", "torchvision==0.24.1"]\n'
# the project has no application of its own and trains nothing: verify's result can pass
WAIVER = ('[verify]\napplication = "none"\nreason = "no application in this test project"\n'
          '[verify.resume]\nnone = "nothing trains in this test project"\n')
STEPS = {**dict.fromkeys(["host", "venv", "install", "pip-check", "inventory", "system", "gpu",
                          "extensions"], "passed"), "application": "skipped", "resume": "skipped"}
# what each platform's verify installs, and the build the gpu step expects of it
TORCH = {"linux-cpu": "2.13.0+cpu", "linux-cu132": "2.13.0+cu132", "linux-rocm6": "2.9.1+rocm6.4"}
BACKEND = {"linux-cpu": "cpu", "linux-cu132": "cuda", "linux-rocm6": "rocm"}
DEVICE = {"linux-cpu": "cpu", "linux-cu132": "cuda:0", "linux-rocm6": "cuda:0"}  # ROCm's too
EXPECTED: dict[str, dict[str, str | None]] = {
    "linux-cpu": {"cuda": None, "hip": None},
    "linux-cu132": {"expected_cuda": "13.2", "cuda": "13.2", "hip": None},
    "linux-rocm6": {"expected_hip": "6.4", "cuda": None, "hip": "6.4.43484-123eb5128"},
}
# each GPU platform's driver tool on PATH: NVIDIA's at CUDA 13's minimum or above, and
# rocm-smi for the amdgpu driver; what the gpu step's driver check makes of it
SMI = {"linux-cu132": {"nvidia-smi": "echo '580.65.06, NVIDIA H100 80GB HBM3'"},
       "linux-rocm6": {"rocm-smi": 'echo "Driver version: 6.8.5"'}}
DRIVER = {
    "linux-cpu": None,
    "linux-cu132": {"driver": "580.65.06", "source": "nvidia-smi", "cuda": "13.2",
                    "minimum": "580", "os": "linux", "status": "passed"},
    "linux-rocm6": {"driver": "6.8.5", "source": "rocm-smi", "status": "skipped",
                    "reason": "ROCm driver 6.8.5 recorded, not judged: no minimum-driver "
                              "table for ROCm"},
}


@pytest.fixture(scope="module")
def side_by_side(tmp_path_factory, numpy_wheel) -> Iterator[Callable[[int], Path]]:
    """``make(devices)``: the project, compiled for the three platforms over a replica whose
    GPU torch builds see *devices* GPUs, and each platform's wheelhouse built (once per
    count: the count is in the wheel, so in the lock's hashes)."""
    made: dict[int, Path] = {}
    with ExitStack() as servers:
        def make(devices: int) -> Path:
            if devices not in made:
                base = tmp_path_factory.mktemp(f"side-by-side-{devices}")
                pt = servers.enter_context(PyTorchIndex(base / "pytorch"))
                server = servers.enter_context(IndexServer(base / "index"))
                default = server.index("/simple")
                default.add("filelock", "3.16.1")
                default.put(numpy_wheel)
                fill_side_by_side(pt, devices=devices)
                made[devices] = build(base / "proj", pt, server.url, base / "cache")
            return made[devices]
        yield make


def build(root: Path, pt: PyTorchIndex, url: str, cache: Path) -> Path:
    root.mkdir()
    (root / "requirements.in").write_text("torch==2.13.0\nfilelock\nnumpy\n")
    mirrors = "".join(f'"{k}" = "{v}"\n' for k, v in pt.mirrors().items())
    (root / "lockkit.toml").write_text(
        f'index-url = "{url}/simple"\nplatforms = {json.dumps(list(PLATFORMS))}\n{ROCM}{WAIVER}'
        f"[mirrors]\n{mirrors}")
    assert main(["compile", "--project", str(root)]) == 0
    for platform in PLATFORMS:
        assert main(["wheelhouse", "build", "--project", str(root), "--platform", platform,
                     "--cache-dir", str(cache)]) == 0
    return root


def put_driver(folder: Path, platform: str, monkeypatch) -> None:
    """The platform's driver tool (none for the CPU) on PATH, in *folder*, answering the
    system probe's query as the real one does."""
    folder.mkdir()
    for name, body in SMI.get(platform, {}).items():
        (folder / name).write_text(f"#!/bin/sh\n{body}\n")
        (folder / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")


def verify(root: Path, platform: str, report: Path) -> tuple[int, dict[str, Any]]:
    """``lockkit verify`` of *platform*, offline (a private network namespace): the
    wheelhouse is all it has."""
    run = lockkit("verify", "--project", str(root), "--platform", platform,
                  "--report-dir", str(report), network=False)
    return run.returncode, json.loads((report / "dossier.json").read_text())


def statuses(doc: dict[str, Any]) -> dict[str, str]:
    return {s["name"]: s["status"] for s in doc["steps"]}


@pytest.mark.parametrize("platform", PLATFORMS)
def test_each_platform_verifies_its_own_torch_on_its_backend(side_by_side, tmp_path,
                                                             monkeypatch, platform):
    """Every step passes offline; the GPU step expected the build the platform's lock
    names (its label: CUDA 13.2, HIP 6.4; ROCm's torchvision too) and ran its product on
    the platform's device, the driver judged against CUDA 13's minimum or, for ROCm,
    recorded."""
    put_driver(tmp_path / "bin", platform, monkeypatch)
    code, doc = verify(side_by_side(1), platform, tmp_path / "report")
    assert code == 0 and doc["result"] == "passed", doc["first_error"]
    assert statuses(doc) == STEPS  # the waived two are skipped, the result still passes
    assert doc["platform"] == platform and doc["inventory"]["missing"] == []
    assert doc["system"]["torch"]["version"] == TORCH[platform]
    gpu = doc["checks"]["gpu"]
    assert gpu["args"]["expect"] == BACKEND[platform]
    assert {gpu["checks"][c]["status"] for c in ("build", "device", "matmul")} == {"passed"}
    assert gpu["checks"]["matmul"]["device"] == DEVICE[platform]
    assert {k: gpu["checks"]["build"][k] for k in EXPECTED[platform]} == EXPECTED[platform]
    assert gpu["checks"].get("driver") == DRIVER[platform]
    vision = gpu["checks"]["torchvision"]["status"]
    assert vision == ("passed" if platform == "linux-rocm6" else "skipped")


@pytest.mark.parametrize("platform", ["linux-cu132", "linux-rocm6"])
def test_without_a_device_the_gpu_platforms_fail_and_never_fall_back_to_the_cpu(
        side_by_side, tmp_path, platform):
    """The same project over builds that see no GPU, no driver tool put on PATH: the build
    is the one expected, the device check fails, the product is not run (not on the CPU
    either), and the result is failed, exit 1."""
    code, doc = verify(side_by_side(0), platform, tmp_path / "report")
    assert code == 1 and doc["result"] == "failed"
    assert statuses(doc)["gpu"] == "failed" and statuses(doc)["application"] == "not-run"
    checks = doc["checks"]["gpu"]["checks"]
    assert checks["build"]["status"] == "passed" and checks["device"]["status"] == "failed"
    assert checks["device"]["device_count"] == 0 and checks["matmul"]["status"] == "skipped"
    what = "ROCm GPU" if platform == "linux-rocm6" else "GPU"
    assert checks["device"]["error"] == (
        f"the expected {what} is unreachable (torch.cuda.is_available() is False, 0 devices); "
        "lockkit refuses a CPU fallback")
    assert doc["first_error"].startswith("gpu: ")  # device:, or driver: on an old real one
    assert doc["system"]["torch"]["version"] == TORCH[platform]
