"""``lockkit diagnose`` checks what is installed, and promptly (issue 26, item 5).

With no lock, torchvision and torchaudio get the checks verify gives locked ones when
they are installed: their CUDA (or ROCm label) against torch's, and an op on the device.
One probe process answers both steps (one torch import), and torch's ``collect_env``
(seconds on a GPU host) runs only when the GPU step fails. ``verify``'s chain keeps
``collect_env``, run beside the GPU checks instead of before them.

The venvs hold the fake builds of ``tests/support/fake_torch.py`` and a real numpy.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from lockkit.probes.probe import PROBES_DIR, probe_env, run_chain
from lockkit.verify.diagnose import diagnose
from tests.support.project import lockkit

pytestmark = pytest.mark.skipif(os.name == "nt", reason="POSIX venv layout")

CU126 = {"version": "2.5.1+cu126", "cuda": "12.6", "hip": None, "devices": 1}
CPU = {"version": "2.5.1+cpu", "cuda": None, "hip": None}
ROCM62 = {"version": "2.5.1+rocm6.2", "cuda": None, "hip": "6.2.41133-dd7f95766",
          "devices": 1, "device_name": "AMD Instinct MI300X"}
KERNEL = "CUDA error: no kernel image is available for execution on the device"


def checks(d: Any) -> dict[str, dict[str, Any]]:
    assert d.gpu is not None, d.first_error
    return dict(d.gpu["checks"])


# --- installed companions are checked ------------------------------------------------------

@pytest.mark.parametrize("vision, audio, message", [
    ({"version": "0.20.1+cu124", "cuda_version": 12040}, None,
     "gpu: torchvision: torchvision 0.20.1+cu124 is a CUDA 12.4 build; torch is CUDA 12.6"),
    ({"version": "0.20.1+cu118", "cuda_version": 11080}, None,
     "gpu: torchvision: RuntimeError: Detected that PyTorch and torchvision were compiled "
     "with different CUDA versions."),  # torchvision's own import-time check
    ({"version": "0.20.1+cpu", "cuda_version": -1}, None,
     "gpu: torchvision: torchvision 0.20.1+cpu reports no CUDA (a CPU build); torch is "
     "CUDA 12.6"),
    (None, {"version": "2.5.1+cu124", "cuda_version": 12040},
     "TorchAudio has CUDA version 12.4"),
    ({}, {"op_error": KERNEL}, f"gpu: torchaudio: RuntimeError: {KERNEL}"),
])
def test_an_installed_companion_of_another_build_fails_diagnose_naming_it(
        venv_of, vision, audio, message):
    """No lock names them: today's diagnose skipped them as 'not locked' and passed."""
    d = diagnose(venv_of(CU126, vision=vision, audio=audio), timeout=120)
    assert d.result == "failed"
    assert d.first_error is not None and message in d.first_error
    name = "torchvision" if "torchvision" in message else "torchaudio"
    assert checks(d)[name]["status"] in ("failed", "error")
    assert checks(d)["build"]["status"] == "passed"  # torch itself is right


def test_matching_installed_companions_pass_with_their_ops_on_the_device(venv_of):
    d = diagnose(venv_of(CU126, vision={}, audio={}), timeout=120)
    assert d.result == "passed", d.first_error
    got = checks(d)
    assert got["torchvision"]["status"] == "passed" and got["torchvision"]["cuda"] == "12.6"
    assert "torchvision.ops.nms on cuda:0 kept boxes [0, 2]" in got["torchvision"]["op"]
    assert got["torchaudio"]["status"] == "passed"
    assert "resample on cuda:0" in got["torchaudio"]["op"]
    assert d.step("gpu").detail["torchvision"] == "passed"


def test_a_rocm_companion_of_another_rocm_is_named(venv_of):
    d = diagnose(venv_of(ROCM62, vision={"version": "0.20.1+rocm6.1", "cuda_version": -1}),
                 timeout=120)
    assert d.result == "failed" and d.step("gpu").detail["expect"] == "rocm"
    assert "torchvision 0.20.1+rocm6.1 is not torch's ROCm build" in str(d.first_error)


def test_companions_not_installed_are_skipped_as_such(venv_of):
    d = diagnose(venv_of(CPU), timeout=120)
    assert d.result == "passed", d.first_error
    assert checks(d)["torchvision"] == checks(d)["torchaudio"] == {
        "status": "skipped", "reason": "not installed"}


def test_the_cli_names_an_installed_mismatched_torchvision(venv_of):
    python = venv_of(CU126, vision={"version": "0.20.1+cu124", "cuda_version": 12040},
                     audio={})
    run = lockkit("diagnose", "--python", str(python), "--json", "--probe-timeout", "120")
    assert run.returncode == 1, run.stderr
    doc = json.loads(run.stdout)
    assert doc["first_error"] == ("gpu: torchvision: torchvision 0.20.1+cu124 is a CUDA 12.4 "
                                  "build; torch is CUDA 12.6")
    assert doc["checks"]["gpu"]["checks"]["torchaudio"]["status"] == "passed"


# --- promptly: one process, collect_env only when the GPU step fails -----------------------

def test_a_passing_diagnose_is_one_probe_process_without_collect_env(venv_of):
    d = diagnose(venv_of(CPU), timeout=120)
    assert d.result == "passed", d.first_error
    assert [c.step for c in d.commands] == ["system"]
    (command,) = d.commands
    assert "--then-gpu" in command.argv and "--no-collect-env" in command.argv
    assert d.step("gpu").detail["expect"] == "cpu"
    assert d.step("gpu").detail["expect_source"] == "the torch build found"
    assert d.system is not None
    assert d.system.section("collect_env") == {"skipped": "run only when the gpu step fails"}


def test_a_failing_gpu_step_then_runs_collect_env(venv_of):
    d = diagnose(venv_of(CPU), expect="cuda", timeout=120)
    assert d.result == "failed" and d.first_error is not None
    assert d.first_error.startswith("gpu: build: torch 2.5.1+cpu is a CPU-only build")
    assert [c.step for c in d.commands] == ["system", "gpu"]
    assert d.commands[1].argv[-1] == "--collect-env"
    assert d.system is not None
    info = d.system.section("collect_env")
    # the fake torch has no torch.utils.collect_env: it ran, and says why it has nothing
    assert set(info) <= {"error", "seconds"} and "torch.utils" in info["error"]


# --- verify's chain: collect_env beside the GPU checks, not before them --------------------

_SLOW_COLLECT_ENV = """import time
def get_env_info():
    time.sleep({seconds})
    import collections
    return collections.namedtuple("Info", "torch_version")("fake")
"""


def _with_collect_env(python: Path, seconds: float) -> None:
    """A ``torch.utils.collect_env`` that takes *seconds*, in the fake torch of *python*."""
    site = next((python.parent.parent / "lib").glob("python*/site-packages"))
    (site / "torch" / "utils").mkdir()
    (site / "torch" / "utils" / "__init__.py").write_text("")
    (site / "torch" / "utils" / "collect_env.py").write_text(
        _SLOW_COLLECT_ENV.format(seconds=seconds))


def test_the_chain_prints_collect_env_after_the_gpu_report(venv_of):
    python = venv_of(CPU)
    _with_collect_env(python, 1.0)
    run = subprocess.run([str(python), "-I", str(PROBES_DIR / "system_probe.py"),
                          "--then-gpu", "--expect", "cpu"], capture_output=True, text=True,
                         env=probe_env(), timeout=120)
    lines = [json.loads(ln) for ln in run.stdout.splitlines() if ln.startswith("{")]
    assert [ln["probe"] for ln in lines] == ["system", "gpu", "collect_env"], run.stderr
    assert "pending" in lines[0]["collect_env"]  # the system report did not wait for it
    assert lines[2]["info"] == {"torch_version": "fake"} and lines[2]["seconds"] >= 1.0


def test_run_chain_puts_collect_env_back_into_the_system_report(venv_of):
    python = venv_of(CPU)
    _with_collect_env(python, 0.0)
    system, gpu = run_chain(python, ["--expect", "cpu"], 120)
    assert system.data is not None and gpu is not None and gpu.status == "passed"
    assert system.data["collect_env"]["info"] == {"torch_version": "fake"}
    alone, _ = run_chain(python, None, 120)  # the system probe alone still waits for it
    assert alone.data is not None
    assert alone.data["collect_env"]["info"] == {"torch_version": "fake"}
