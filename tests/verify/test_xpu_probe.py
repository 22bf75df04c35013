"""The GPU check knows Intel XPU (``torch.xpu``, devices named ``xpu``) and ROCm's
``torch.version.hip``; verify's host step accepts aarch64 platforms on an aarch64 machine.
Fake torch builds (tests/support/fake_torch.py) stand in for the hardware."""

from __future__ import annotations

from typing import Any

import pytest

from lockkit.platforms import arch
from lockkit.platforms.definitions import load_platforms
from lockkit.probes.probe import gpu_status
from lockkit.verify.chain import gpu_args
from tests.support.probes import checks_of, fake_venv, gpu, numpy_wheel  # noqa: F401 - fixtures

XPU_FAKE: dict[str, Any] = {"version": "2.9.1+xpu", "cuda": None, "hip": None,
                            "xpu": "20250101", "device_name": "Intel(R) Data Center GPU Max 1550"}
ROCM64_FAKE: dict[str, Any] = {"version": "2.9.1+rocm6.4", "cuda": None,
                               "hip": "6.4.43482-0f2d60242", "device_name": "AMD Instinct MI300X"}


def test_xpu_platform_probe_arguments():
    assert gpu_args(load_platforms()["linux-xpu"]) == ["--expect", "xpu", "--device", "xpu"]


@pytest.mark.slow
def test_xpu_build_with_a_device_passes(fake_venv, numpy_wheel):  # noqa: F811
    checks = checks_of(gpu(fake_venv(numpy_wheel, **XPU_FAKE, devices=1),
                           *gpu_args(load_platforms()["linux-xpu"])))
    assert checks["build"]["status"] == "passed" and checks["build"]["xpu_built"] is True
    assert checks["device"] == {"status": "passed", "device": "xpu:0", "xpu_available": True,
                                "device_count": 1, "name": XPU_FAKE["device_name"]}
    assert checks["matmul"]["status"] == "passed" and checks["matmul"]["device"] == "xpu:0"
    assert gpu_status({"probe": "gpu", "checks": checks}) == ("passed", None)


def test_xpu_build_without_a_device_refuses_cpu_fallback(fake_venv):  # noqa: F811
    checks = checks_of(gpu(fake_venv(**XPU_FAKE, devices=0), "--expect", "xpu"))
    assert checks["device"]["status"] == "failed"
    assert checks["device"]["error"].startswith("the expected XPU device is unreachable "
                                                "(torch.xpu.is_available() is False, 0 devices)")


@pytest.mark.parametrize("fake,args,error", [
    (XPU_FAKE, ["--expect", "cpu"], ("torch 2.9.1+xpu is an XPU build (torch.xpu); "
                                    "expected a CPU-only build")),
    ({"version": "2.9.1+cpu", "cuda": None, "hip": None}, ["--expect", "xpu"],
     "torch 2.9.1+cpu is a CPU-only build (no CUDA, no HIP); expected an XPU build"),
    (XPU_FAKE, ["--expect", "cuda", "--cuda", "13.0"],
     "torch 2.9.1+xpu is an XPU build (torch.xpu); expected a CUDA 13.0 build"),
])
def test_xpu_and_other_builds_are_told_apart(fake_venv, fake, args, error):  # noqa: F811
    checks = checks_of(gpu(fake_venv(**fake, devices=1), *args))
    assert checks["build"]["status"] == "failed" and checks["build"]["error"] == error


def test_rocm_build_is_read_from_torch_version_hip(fake_venv):  # noqa: F811
    python = fake_venv(**ROCM64_FAKE, devices=1)
    rocm = load_platforms()["linux-rocm6"]
    build = checks_of(gpu(python, *gpu_args(rocm)))["build"]
    assert build["status"] == "passed" and build["hip"] == ROCM64_FAKE["hip"]
    cuda = checks_of(gpu(python, "--expect", "cuda"))["build"]
    assert cuda["error"] == ("torch 2.9.1+rocm6.4 is a ROCm build (torch.version.hip="
                             "6.4.43482-0f2d60242, torch.version.cuda=None); expected a CUDA build")


@pytest.mark.parametrize("machine", ["aarch64", "arm64"])
def test_aarch64_platforms_match_an_aarch64_machine(monkeypatch, machine):
    """verify's host step (env/rebuild.py) compares host_arch() with arch_family(arch)."""
    monkeypatch.setattr(arch, "_machine", lambda: machine)
    plats = load_platforms()
    here = arch.host_arch()
    runs = sorted(n for n, p in plats.items() if p.os == "linux"
                  and arch.arch_family(p.arch) == here)
    assert runs == ["linux-cpu-aarch64", "linux-cu128-aarch64", "linux-cu130-aarch64",
                    "linux-cu132-aarch64"]
