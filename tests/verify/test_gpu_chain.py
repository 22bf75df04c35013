"""The GPU chain: the lock's label against torch.version.cuda/hip, the driver against the
build's minimum, torchvision and torchaudio against torch (their CUDA, an op on the device).

Host-side rules are tested as functions; the probe side runs ``gpu_probe.py`` for real in
venvs holding the fake builds of ``fake_torch.py`` (torch, torchvision, torchaudio) and a
real numpy; ``verify`` runs end to end over loopback with a fake ``nvidia-smi`` on PATH.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from lockkit.cli import main
from lockkit.platforms.definitions import load_platforms
from lockkit.platforms.host import _MIN_DRIVER, driver_minimum
from lockkit.probes.probe import gpu_status, run_probe
from lockkit.verify.chain import driver_check, gpu_args, locked_backend
from tests.support.fake_torch import build_fake_torch
from tests.support.index_server import IndexServer
from tests.support.project import lockkit
from tests.support.pytorch_index import PyTorchIndex

CU126 = {"version": "2.5.1+cu126", "cuda": "12.6", "hip": None, "devices": 1}
ROCM62 = {"version": "2.5.1+rocm6.2", "cuda": None, "hip": "6.2.41133-dd7f95766",
          "devices": 1, "device_name": "AMD Instinct MI300X"}
KERNEL = "CUDA error: no kernel image is available for execution on the device"


# --- the expectation comes from the lock ---------------------------------------------

@pytest.mark.parametrize("locked, expected", [
    ({"torch": "2.5.1+cu126"}, ("12.6", None)),
    ({"torch": "2.7.1+cu118"}, ("11.8", None)),
    ({"torch": "2.9.0+cu130"}, ("13.0", None)),
    ({"torch": "2.9.0+rocm6.4"}, (None, "6.4")),
    ({"torch": "2.5.1+rocm6.2.4"}, (None, "6.2")),
    ({"torch": "2.8.0", "nvidia-cublas-cu12": "12.8.4.1"}, ("12", None)),
    ({"torch": "2.14.0", "cuda-toolkit": "13.0.2"}, ("13", None)),
    ({"torch": "2.5.1+cpu"}, (None, None)),
    ({"torch": "2.5.1"}, (None, None)),
    ({"numpy": "2.0.0"}, (None, None)),
])
def test_locked_backend_reads_the_label_or_the_cuda_dependencies(locked, expected):
    cuda, hip, why = locked_backend(locked)
    assert (cuda, hip) == expected
    assert (bool(why) and locked["torch"] in why) == (expected != (None, None))


def test_gpu_args_prefer_the_lock_over_the_platform_file():
    plats = load_platforms()
    cu126 = plats["linux-cu126"]
    assert gpu_args(cu126) == ["--expect", "cuda", "--device", "cuda", "--cuda", "12.6"]
    args = gpu_args(cu126, {"torch": "2.7.0+cu128", "torchvision": "0.22.0+cu128"})
    assert args[args.index("--cuda") + 1] == "12.8"
    assert "the lock's torch 2.7.0+cu128" in args[args.index("--source") + 1]
    assert "--vision" in args and "--audio" not in args
    default = gpu_args(plats["linux-cuda-default"],
                       {"torch": "2.14.0", "nvidia-cublas-cu13": "13.0.1", "torchaudio": "2.9"})
    assert default[default.index("--cuda") + 1] == "13" and "--audio" in default
    rocm = gpu_args(plats["linux-rocm64"], {"torch": "2.9.0+rocm6.4"})
    assert rocm[rocm.index("--hip") + 1] == "6.4" and "--cuda" not in rocm
    assert gpu_args(plats["linux-cpu"], {"torch": "2.5.1+cpu"}) == [
        "--expect", "cpu", "--device", "cpu"]


# --- the driver against the build's minimum --------------------------------------------

def system(nvidia: str | None = None, rocm: str | None = None, cuda: str | None = "12.6"
           ) -> dict[str, Any]:
    return {"torch": {"cuda": cuda},
            "driver": {"nvidia": {"version": nvidia, "source": "nvidia-smi"} if nvidia else None,
                       "rocm": {"version": rocm, "source": "/sys/module/amdgpu/version"}
                       if rocm else None,
                       "reasons": {"nvidia": "nvidia-smi not found on PATH"}}}


def test_the_driver_table_is_host_py_s_as_uv_encodes_it():
    assert _MIN_DRIVER["linux"] == {13: "580", 12: "525.60.13", 11: "450.80.02"}
    assert driver_minimum("12.6", "linux") == "525.60.13"
    assert driver_minimum("13", "linux") == "580"
    assert driver_minimum("12.4", "windows") == "528.33"
    assert driver_minimum("10.2", "linux") is None and driver_minimum("", "linux") is None


@pytest.mark.parametrize("driver, cuda, os_, status", [
    ("525.60.13", "12.6", "linux", "passed"),
    ("560.35.03", "12.6", "linux", "passed"),
    ("525.60.12", "12.6", "linux", "failed"),
    ("470.82.01", "12.6", "linux", "failed"),
    ("575.51.03", "13.0", "linux", "failed"),
    ("580.65.06", "13.0", "linux", "passed"),
    ("450.80.02", "11.8", "linux", "passed"),
    ("527.41", "12.1", "windows", "failed"),  # Windows differs: 528.33
    ("528.33", "12.1", "windows", "passed"),
])
def test_driver_check_both_directions(driver, cuda, os_, status):
    check = driver_check(system(nvidia=driver, cuda=cuda), "cuda", os_)
    assert check is not None and check["status"] == status
    assert check["driver"] == driver and check["minimum"] == driver_minimum(cuda, os_)
    if status == "failed":
        assert f"NVIDIA driver {driver} is older than {check['minimum']}" in check["error"]


def test_unknown_driver_is_left_to_the_device_check_and_rocm_is_recorded():
    unknown = driver_check(system(), "cuda", "linux", "12.6")
    assert unknown is not None and unknown["status"] == "skipped"
    assert "nvidia-smi not found" in unknown["reason"]
    rocm = driver_check(system(rocm="6.8.5", cuda=None), "rocm", "linux")
    assert rocm is not None and rocm["status"] == "skipped" and rocm["driver"] == "6.8.5"
    assert "recorded, not judged" in rocm["reason"]
    assert driver_check(system(), "cpu", "linux") is None


def test_a_driver_too_old_is_named_before_the_device_it_makes_unreachable():
    checks = {"build": {"status": "passed"},
              "driver": driver_check(system(nvidia="470.82.01"), "cuda", "linux"),
              "device": {"status": "failed", "error": "the expected GPU is unreachable"},
              "matmul": {"status": "skipped", "reason": "the device check did not pass"}}
    status, error = gpu_status({"probe": "gpu", "checks": checks})
    assert status == "failed"
    assert str(error).startswith("driver: NVIDIA driver 470.82.01 is older")


# --- torchvision / torchaudio inside a venv -------------------------------------------

def companions(python: Path, *args: str) -> dict[str, dict[str, Any]]:
    result = run_probe(python, "gpu_probe.py", ["--vision", "--audio", *args], timeout=60)
    assert result.status == "passed" and result.data is not None, result.error
    checks = result.data["checks"]
    return {"vision": checks["torchvision"], "audio": checks["torchaudio"],
            "status": dict(zip(("status", "error"), gpu_status(result.data), strict=True))}


CUDA_ARGS = ("--expect", "cuda", "--cuda", "12.6", "--device", "cuda")


def test_matching_cuda_companions_pass_and_run_their_ops_on_the_device(venv_of):
    got = companions(venv_of(CU126, vision={}, audio={}), *CUDA_ARGS)
    assert got["vision"]["status"] == "passed" and got["vision"]["cuda"] == "12.6"
    assert got["vision"]["cuda_version_raw"] == 12060
    assert "nms on cuda:0 kept boxes [0, 2]" in got["vision"]["op"]
    assert got["audio"]["status"] == "passed" and got["audio"]["cuda"] == "12.6"
    assert "resample on cuda:0" in got["audio"]["op"]
    assert got["status"] == {"status": "passed", "error": None}


@pytest.mark.parametrize("vision, audio, which, message", [
    ({"cuda_version": 12040, "version": "0.20.1+cu124"}, {}, "vision",
     "torchvision 0.20.1+cu124 is a CUDA 12.4 build; torch is CUDA 12.6"),
    ({"cuda_version": 11080, "version": "0.20.1+cu118"}, {}, "vision",
     "compiled with different CUDA versions"),  # torchvision's own import-time check
    ({"cuda_version": -1, "version": "0.20.1+cpu"}, {}, "vision",
     "torchvision 0.20.1+cpu reports no CUDA (a CPU build); torch is CUDA 12.6"),
    ({}, {"cuda_version": 12040, "version": "2.5.1+cu124"}, "audio",
     "TorchAudio has CUDA version 12.4"),
    ({}, {"cuda_version": None, "version": "2.5.1+cpu"}, "audio",
     "torchaudio 2.5.1+cpu reports no CUDA (a CPU build); torch is CUDA 12.6"),
    ({"op_error": KERNEL}, {}, "vision", KERNEL),
    ({}, {"op_error": KERNEL}, "audio", KERNEL),
    ({}, {"drift": 0.01}, "audio", "max |device - cpu| 0.01"),
])
def test_each_companion_mismatch_or_device_failure_is_named(venv_of, vision, audio, which,
                                                           message):
    got = companions(venv_of(CU126, vision=vision, audio=audio), *CUDA_ARGS)
    other = "audio" if which == "vision" else "vision"
    assert got[which]["status"] in ("failed", "error") and message in got[which]["error"]
    assert got[other]["status"] == "passed"  # the companions do not block each other
    assert got["status"]["status"] == "failed"
    assert got["status"]["error"].startswith("torch" + which)


@pytest.mark.slow
def test_rocm_companions_are_judged_by_their_label(venv_of):
    args = ("--expect", "rocm", "--hip", "6.2", "--device", "cuda")
    same = companions(venv_of(ROCM62, vision={"version": "0.20.1+rocm6.2", "cuda_version": -1},
                              audio={"version": "2.5.1+rocm6.2", "cuda_version": None}), *args)
    assert same["status"]["status"] == "passed"
    assert same["vision"]["cuda"] is None and same["audio"]["cuda"] is None


@pytest.mark.slow
def test_a_rocm_companion_of_another_rocm_fails(venv_of):
    args = ("--expect", "rocm", "--hip", "6.2", "--device", "cuda")
    got = companions(venv_of(ROCM62, vision={"version": "0.20.1+rocm6.1", "cuda_version": -1},
                             audio={"version": "2.5.1+rocm6.2", "cuda_version": None}), *args)
    assert "torchvision 0.20.1+rocm6.1 is not torch's ROCm build" in got["vision"]["error"]


def test_companions_not_locked_are_skipped_and_do_not_fail(venv_of):
    result = run_probe(venv_of(CU126), "gpu_probe.py", list(CUDA_ARGS), timeout=60)
    assert result.data is not None
    checks = result.data["checks"]
    assert checks["torchvision"] == checks["torchaudio"] == {"status": "skipped",
                                                               "reason": "not locked"}
    assert gpu_status(result.data) == ("passed", None)


def test_the_build_check_names_the_lock_as_the_source(venv_of):
    result = run_probe(venv_of(CU126), "gpu_probe.py",
                       ["--expect", "cuda", "--cuda", "12.8", "--source",
                        "the lock's torch 2.5.1+cu128"], timeout=60)
    assert result.data is not None
    error = result.data["checks"]["build"]["error"]
    assert error.endswith("expected a CUDA 12.8 build (the lock's torch 2.5.1+cu128)")


# --- verify end to end: the lock's label and the driver ---------------------------------

@pytest.fixture
def cuda_project(tmp_path):
    pt = PyTorchIndex(tmp_path / "pytorch")
    server = IndexServer(tmp_path / "index")
    with pt, server:
        def make(**fake: Any) -> Path:
            pt.put("cu126", build_fake_torch(tmp_path / "built", version="2.5.1+cu126", **fake))
            server.index("/simple")
            root = tmp_path / "proj"
            root.mkdir()
            (root / "requirements.in").write_text("torch==2.5.1\n")
            (root / "lockkit.toml").write_text(
                f'index-url = "{server.url}/simple"\nplatforms = ["linux-cu126"]\n[mirrors]\n'
                + "".join(f'"{k}" = "{v}"\n' for k, v in pt.mirrors().items()))
            assert main(["compile", "--project", str(root)]) == 0
            assert main(["wheelhouse", "build", "--project", str(root), "--platform",
                         "linux-cu126", "--cache-dir", str(tmp_path / "cache")]) == 0
            return root
        yield make


def fake_smi(tmp_path: Path, driver: str, monkeypatch) -> None:
    """An nvidia-smi on PATH answering the query the system probe makes."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    smi = bin_dir / "nvidia-smi"
    smi.write_text(f"#!/bin/sh\necho '{driver}, NVIDIA H100 80GB HBM3'\n")
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")


def verify(root: Path) -> tuple[int, dict[str, Any]]:
    run = lockkit("verify", "--project", str(root), "--platform", "linux-cu126",
                  "--report-dir", str(root / "report"), network=False)
    return run.returncode, json.loads((root / "report" / "dossier.json").read_text())


@pytest.mark.skipif(os.name == "nt", reason="a shell-script nvidia-smi")
def test_verify_fails_a_driver_older_than_the_build_needs(cuda_project, tmp_path, monkeypatch):
    fake_smi(tmp_path, "470.82.01", monkeypatch)
    code, doc = verify(cuda_project(cuda="12.6", devices=1))
    assert code == 1
    assert doc["first_error"].startswith("gpu: driver: NVIDIA driver 470.82.01 is older than "
                                         "525.60.13, the minimum for CUDA 12.x builds")
    driver = doc["checks"]["gpu"]["checks"]["driver"]
    assert driver["source"] == "nvidia-smi" and driver["minimum"] == "525.60.13"
    # the GPU step failed: torch's collect_env ran after it (the fake torch has none, so it
    # says why it has nothing), as a command of the gpu step
    assert "error" in doc["system"]["collect_env"], doc["system"]["collect_env"]
    assert any(c["argv"][-1] == "--collect-env" for c in doc["commands"] if c["step"] == "gpu")


@pytest.mark.skipif(os.name == "nt", reason="a shell-script nvidia-smi")
def test_verify_passes_the_driver_check_with_a_new_enough_driver(cuda_project, tmp_path,
                                                                monkeypatch):
    fake_smi(tmp_path, "560.35.03", monkeypatch)
    code, doc = verify(cuda_project(cuda="12.6", devices=1))
    gpu = doc["checks"]["gpu"]["checks"]
    assert gpu["build"]["status"] == gpu["driver"]["status"] == gpu["device"]["status"] == "passed"
    assert doc["system"]["driver"]["nvidia"]["version"] == "560.35.03"
    assert "toolchain" in doc["system"]



def test_verify_fails_a_build_whose_cuda_is_not_the_lock_label(cuda_project):
    code, doc = verify(cuda_project(cuda="12.4", devices=1))
    assert code == 1 and doc["first_error"].startswith("gpu: build: torch 2.5.1+cu126 is a "
                                                       "CUDA 12.4 build")
    assert doc["first_error"].endswith("expected a CUDA 12.6 build (the lock's torch "
                                       "2.5.1+cu126)")
