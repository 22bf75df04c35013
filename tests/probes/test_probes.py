"""The probe scripts, run for real by ``lockkit.probes.probe.run_probe`` inside real venvs.

Most tests use a fresh ``--without-pip`` venv holding the fake torch of ``fake_torch.py``
(installed by uv from a local folder), so every build and device situation can be set
up on a CPU machine; the last ones run the probes against the real CPU torch.
"""

from __future__ import annotations

import ast
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from lockkit.probes.probe import (
    ALLOWED_VARS,
    PROBES_DIR,
    gpu_status,
    probe_env,
    run_probe,
)
from lockkit.probes.scripts.gpu_probe import REFUSAL
from tests.support.probes import checks_of, gpu
from tests.support.procs import gone, pid_written

posix_only = pytest.mark.skipif(os.name == "nt", reason="signals and process groups are POSIX")
NVIDIA_PROC = Path("/proc/driver/nvidia/version")
AMDGPU_SYS = Path("/sys/module/amdgpu/version")
CUDA_FAKE: dict[str, Any] = {"version": "2.5.1+cu126", "cuda": "12.6", "hip": None}
ROCM_FAKE: dict[str, Any] = {"version": "2.5.1+rocm6.2", "cuda": None,
                             "hip": "6.2.41133-dd7f95766", "device_name": "AMD Instinct MI300X"}
CPU_FAKE: dict[str, Any] = {"version": "2.5.1+cpu", "cuda": None, "hip": None}
MPS_FAKE: dict[str, Any] = {"version": "2.5.1", "cuda": None, "hip": None, "mps": True}


def system(python: Path, timeout: float = 60, env: dict[str, str] | None = None
           ) -> dict[str, Any]:
    result = run_probe(python, "system_probe.py", [], timeout, env)
    assert result.status == "passed", result.error
    assert result.data is not None and result.data["probe"] == "system"
    return result.data


# --- gpu_probe: build, device, matmul --------------------------------------------------

def test_cuda_build_without_devices_refuses_cpu_fallback(fake_venv):
    checks = checks_of(gpu(fake_venv(**CUDA_FAKE, devices=0), "--expect", "cuda",
                           "--cuda", "12.6"))
    assert checks["build"]["status"] == "passed"
    assert (checks["build"]["cuda"], checks["build"]["hip"]) == ("12.6", None)
    assert checks["device"]["status"] == "failed"
    assert "GPU is unreachable" in checks["device"]["error"]
    assert REFUSAL in checks["device"]["error"] and "CPU fallback" in REFUSAL
    assert checks["matmul"] == {"status": "skipped", "reason": "the device check did not pass"}
    status, error = gpu_status({"probe": "gpu", "checks": checks})
    assert status == "failed" and error.startswith("device: the expected GPU is unreachable")


@pytest.mark.parametrize("fake, args, expected", [
    (CUDA_FAKE, ["--expect", "cuda", "--cuda", "12.6"], "passed"),
    (CUDA_FAKE, ["--expect", "cuda"], "passed"),
    (CUDA_FAKE, ["--expect", "cuda", "--cuda", "12.8"], "failed"),
    (CUDA_FAKE, ["--expect", "cuda", "--cuda", "12"], "passed"),
    (CUDA_FAKE, ["--expect", "cpu"], "failed"),
    (CUDA_FAKE, ["--expect", "rocm"], "failed"),
    (ROCM_FAKE, ["--expect", "cuda", "--cuda", "12.6"], "failed"),
    (ROCM_FAKE, ["--expect", "cuda"], "failed"),
    (ROCM_FAKE, ["--expect", "rocm", "--hip", "6.2"], "passed"),
    (ROCM_FAKE, ["--expect", "rocm", "--hip", "6.3"], "failed"),
    (ROCM_FAKE, ["--expect", "cpu"], "failed"),
    (CPU_FAKE, ["--expect", "cpu"], "passed"),
    (CPU_FAKE, ["--expect", "cuda"], "failed"),
    (CPU_FAKE, ["--expect", "mps"], "failed"),
    (MPS_FAKE, ["--expect", "mps"], "passed"),
    (MPS_FAKE, ["--expect", "cuda"], "failed"),
], ids=lambda v: v["version"] if isinstance(v, dict) else " ".join(v) if isinstance(v, list)
    else v)
def test_build_check_matches_expected_backend(fake_venv, fake, args, expected):
    checks = checks_of(gpu(fake_venv(**fake, devices=1), *args))
    assert checks["build"]["status"] == expected, checks["build"]
    if expected == "failed":
        assert checks["build"]["error"].startswith(f"torch {fake['version']} is ")
        assert [checks[n]["status"] for n in ("device", "matmul")] == ["skipped", "skipped"]


def test_rocm_build_expected_as_cuda_names_hip(fake_venv):
    checks = checks_of(gpu(fake_venv(**ROCM_FAKE, devices=1), "--expect", "cuda",
                           "--cuda", "12.6"))
    assert checks["build"]["status"] == "failed"
    assert (checks["build"]["cuda"], checks["build"]["hip"]) == (None, "6.2.41133-dd7f95766")
    assert "ROCm build" in checks["build"]["error"] and "CUDA 12.6" in checks["build"]["error"]


@pytest.mark.parametrize("fake, args, what", [
    (ROCM_FAKE, ["--expect", "rocm"], "ROCm GPU"),
    (MPS_FAKE, ["--expect", "mps"], "MPS device"),
])
def test_device_unreachable_for_other_backends(fake_venv, fake, args, what):
    checks = checks_of(gpu(fake_venv(**fake, devices=0), *args))
    assert checks["build"]["status"] == "passed"
    assert checks["device"]["status"] == "failed"
    assert checks["device"]["error"].startswith(f"the expected {what} is unreachable")
    assert checks["device"]["error"].endswith(REFUSAL)
    assert checks["matmul"]["status"] == "skipped"


def test_visible_gpu_is_described(fake_venv, numpy_wheel):
    python = fake_venv(numpy_wheel, **ROCM_FAKE, devices=2, capability=(9, 4))
    checks = checks_of(gpu(python, "--expect", "rocm", "--hip", "6.2"))
    assert checks["device"]["status"] == "passed"
    assert checks["device"]["device"] == "cuda:0"  # ROCm devices are named cuda
    assert checks["device"]["name"] == "AMD Instinct MI300X"
    assert (checks["device"]["capability"], checks["device"]["device_count"]) == ("9.4", 2)
    assert checks["device"]["arch"].startswith("gfx942")
    assert checks["matmul"]["status"] == "passed" and checks["matmul"]["device"] == "cuda:0"


def test_cpu_build_without_numpy_reports_matmul_error(fake_venv):
    """The fake has no tensors without numpy: the probe must say so, not crash."""
    checks = checks_of(gpu(fake_venv(**CPU_FAKE), "--expect", "cpu"))
    assert [checks[n]["status"] for n in ("build", "device")] == ["passed", "passed"]
    assert checks["matmul"]["status"] == "error"
    assert checks["matmul"]["error"].startswith("AttributeError")
    status, error = gpu_status({"probe": "gpu", "checks": checks})
    assert status == "failed" and error.startswith("matmul: AttributeError")


def test_cpu_build_with_numpy_passes_matmul(fake_venv, numpy_wheel):
    result = gpu(fake_venv(numpy_wheel, **CPU_FAKE), "--expect", "cpu")
    matmul = checks_of(result)["matmul"]
    assert matmul["status"] == "passed", matmul
    assert matmul["reference"] == "numpy float64" and matmul["dtype"] == "float32"
    assert matmul["tolerance"]["atol"] == 1e-3 and matmul["tolerance"]["rtol"] == 1e-4
    assert matmul["tolerance"]["rule"] and matmul["tolerance"]["why"]
    assert 0 < matmul["max_abs_error"] < 1e-3  # numpy's float32 product, really compared
    assert gpu_status(result.data) == ("passed", None)


def test_wrong_product_fails_matmul(fake_venv, numpy_wheel):
    python = fake_venv(numpy_wheel, **CUDA_FAKE, devices=1, matmul_error=0.05)
    result = gpu(python, "--expect", "cuda", "--cuda", "12.6", "--atol", "0.01")
    matmul = checks_of(result)["matmul"]
    assert matmul["status"] == "failed"
    assert matmul["tolerance"]["atol"] == 0.01
    assert matmul["max_abs_error"] == pytest.approx(0.05, rel=1e-3)
    assert "exceeds atol 0.01" in matmul["error"]
    assert gpu_status(result.data)[1].startswith("matmul: max |error|")


def test_library_chatter_on_stdout_does_not_spoil_the_json(fake_venv):
    result = gpu(fake_venv(**CUDA_FAKE, chatter=True), "--expect", "cuda")
    assert checks_of(result)["build"]["status"] == "passed"
    assert "C-level chatter on fd 1" in result.stderr_tail
    assert "chatter on sys.stdout" in result.stderr_tail


def test_venv_without_torch_fails_build_with_import_error(tmp_path):
    venv = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    result = gpu(python, "--expect", "cuda")
    checks = checks_of(result)
    assert checks["build"] == {"status": "failed", "error": "import torch failed: "
                               "ModuleNotFoundError: No module named 'torch'"}
    assert gpu_status(result.data)[1].startswith("build: import torch failed")
    assert system(python)["torch"]["error"].startswith("import torch failed")


def test_bad_arguments_fail_with_argparse_line(fake_venv):
    result = gpu(fake_venv(**CPU_FAKE), "--expect", "tpu")
    assert result.status == "failed" and result.returncode == 2 and result.data is None
    assert result.error.startswith("exited 2: ") and "invalid choice: 'tpu'" in result.error


# --- run_probe: hangs, crashes, odd interpreters ----------------------------------------

def _gone(pid: int) -> bool:
    """Dead or a zombie waiting for a reaper that is not ours."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().rsplit(")", 1)[1].split()[0] == "Z"


@pytest.mark.slow
@posix_only
@pytest.mark.parametrize("script", ["gpu_probe.py", "system_probe.py"])
def test_hang_times_out_and_kills_the_process_group(fake_venv, tmp_path, script):
    pidfile = tmp_path / "pids"
    start = time.monotonic()
    result = run_probe(fake_venv(**CUDA_FAKE, hang=True), script, ["--expect", "cuda"]
                       if script == "gpu_probe.py" else [], 2,
                       {"FAKE_TORCH_PIDFILE": str(pidfile)})
    elapsed = time.monotonic() - start
    assert result.status == "failed" and result.data is None
    assert result.error == "timed out after 2s"
    assert 2 <= result.duration <= elapsed < 10  # not waiting for the child's pipes
    pids = [int(p) for p in pidfile.read_text().split()]
    deadline = time.monotonic() + 5
    while not all(_gone(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert all(_gone(p) for p in pids), f"left running: {pids}"


@posix_only
def test_probe_timeout_kills_its_grandchild(tmp_path):
    """A probe's interpreter that starts a sleeping grandchild: the timeout kills both."""
    pidfile = tmp_path / "grandchild.pid"
    python = tmp_path / "python"
    python.write_text(f"#!/bin/sh\nsleep 300 &\necho $! > {pidfile}\nwait\n")
    python.chmod(python.stat().st_mode | stat.S_IXUSR)
    result = run_probe(python, "system_probe.py", timeout=2)
    assert result.status == "failed" and "timed out after 2s" in (result.error or "")
    assert gone(pid_written(pidfile))


@posix_only
@pytest.mark.parametrize("crash, name", [("abort", "SIGABRT"), ("segv", "SIGSEGV")])
@pytest.mark.parametrize("script", ["gpu_probe.py", "system_probe.py"])
def test_crash_is_named_by_its_signal(fake_venv, crash, name, script):
    args = ["--expect", "cuda"] if script == "gpu_probe.py" else []
    result = run_probe(fake_venv(**CUDA_FAKE, crash=crash), script, args, 60, None)
    assert result.status == "failed" and result.data is None
    assert result.returncode == -getattr(signal, name)
    assert result.error.startswith(f"killed by {name}")


@posix_only
@pytest.mark.parametrize("tool, message", [
    ("echo", "the probe printed no JSON object on stdout: '-I "),
    ("true", "the probe printed nothing on stdout"),
])
def test_output_that_is_not_json_is_a_clear_failure(tool, message):
    exe = shutil.which(tool)
    if exe is None:
        pytest.skip(f"no {tool} on PATH")
    result = run_probe(Path(exe), "system_probe.py", [], 10, None)
    assert result.status == "failed" and result.returncode == 0 and result.data is None
    assert result.error.startswith(message)


def test_missing_interpreter_is_a_failure_not_an_exception(tmp_path):
    result = run_probe(tmp_path / "no-venv" / "bin" / "python", "system_probe.py", [], 10, None)
    assert result.status == "failed" and result.data is None
    assert result.error.startswith(f"cannot run {tmp_path / 'no-venv'}")


@pytest.mark.parametrize("script", ["__init__.py", "../probe.py", "nope_probe.py",
                                    "system_tools.py", "gpu_extensions.py",
                                    str(Path(__file__).resolve())])
def test_only_the_shipped_probes_run(script):
    with pytest.raises(ValueError,
                       match="the probes are gpu_probe.py, site_probe.py, system_probe.py"):
        run_probe(Path(sys.executable), script, [], 10, None)


def test_command_is_isolated_and_recorded(fake_venv):
    python = fake_venv(**CPU_FAKE)
    result = run_probe(python, "system_probe.py", [], 60, None)
    assert result.command == [str(python), "-I", str(PROBES_DIR / "system_probe.py")]
    assert result.data["python"]["isolated"] is True
    assert result.data["python"]["in_venv"] is True
    assert result.to_dict()["command"] == result.command


def test_environment_is_allow_listed():
    source = {"PATH": "/bin", "HOME": "/home/u", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8",
              "TMPDIR": "/tmp/x", "CUBLAS_WORKSPACE_CONFIG": ":4096:8",
              "CUDA_VISIBLE_DEVICES": "1", "HIP_VISIBLE_DEVICES": "0",
              "HSA_OVERRIDE_GFX_VERSION": "11.0.0", "OMP_NUM_THREADS": "4",
              "API_TOKEN": "secret", "PYTHONPATH": "/elsewhere", "VIRTUAL_ENV": "/old",
              "PIP_INDEX_URL": "http://x", "LD_PRELOAD": "/evil.so"}
    env = probe_env({"CUDA_VISIBLE_DEVICES": "0", "EXTRA": "1"}, source=source)
    dropped = {"API_TOKEN", "PYTHONPATH", "VIRTUAL_ENV", "PIP_INDEX_URL", "LD_PRELOAD"}
    assert set(env) == set(source) - dropped | {"EXTRA"}
    assert env["CUDA_VISIBLE_DEVICES"] == "0"  # extra wins
    assert not dropped & ALLOWED_VARS


def test_determinism_variables_reach_the_probe(fake_venv, monkeypatch):
    monkeypatch.setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    data = system(fake_venv(**CPU_FAKE), env={"CUDA_VISIBLE_DEVICES": "2"})
    assert data["settings"]["env"]["CUBLAS_WORKSPACE_CONFIG"] == ":4096:8"
    assert data["settings"]["env"]["CUDA_VISIBLE_DEVICES"] == "2"
    assert data["settings"]["env"]["OMP_NUM_THREADS"] is None


# --- gpu_status ------------------------------------------------------------------------

PASSED = {"status": "passed"}


@pytest.mark.parametrize("data, expected", [
    (None, ("failed", "no report from the GPU probe")),
    ({"probe": "system"}, ("failed", "no report from the GPU probe")),
    ({"probe": "gpu"}, ("failed", "the GPU probe report has no checks")),
    ({"probe": "gpu", "checks": {"build": PASSED, "device": PASSED}},
     ("failed", "matmul: missing from the GPU probe report")),
    ({"probe": "gpu", "checks": {"build": {"status": "failed", "error": "wrong build"},
                                 "device": {"status": "skipped", "reason": "r"},
                                 "matmul": {"status": "skipped", "reason": "r"}}},
     ("failed", "build: wrong build")),
    ({"probe": "gpu", "checks": {"build": PASSED, "device": {"status": "odd"},
                                 "matmul": PASSED}}, ("failed", "device: status 'odd'")),
    ({"probe": "gpu", "checks": {"build": PASSED, "device": PASSED, "matmul": PASSED}},
     ("passed", None)),
])
def test_gpu_status(data, expected):
    assert gpu_status(data) == expected


# --- system_probe ----------------------------------------------------------------------

def test_system_probe_records_cuda_build_and_devices(fake_venv):
    data = system(fake_venv(**CUDA_FAKE, devices=2))
    assert set(data) == {"probe", "schema", "os", "arch", "libc", "cpu", "python", "driver",
                         "torch", "numpy", "settings", "toolchain", "collect_env"}
    torch = data["torch"]
    assert (torch["version"], torch["cuda"], torch["hip"], torch["build"]) == (
        "2.5.1+cu126", "12.6", None, "cuda")
    assert (torch["cudnn"], torch["miopen"], torch["device_count"]) == (90100, None, 2)
    assert [(d["name"], d["capability"]) for d in torch["devices"]] == [
        ("NVIDIA H100 80GB HBM3", "9.0")] * 2
    assert data["os"]["kernel"] and data["arch"] and data["python"]["version"]
    assert data["numpy"]["version"] is None and "ModuleNotFoundError" in data["numpy"]["error"]


def test_system_probe_records_hip_separately(fake_venv):
    torch = system(fake_venv(**ROCM_FAKE, devices=1))["torch"]
    assert (torch["cuda"], torch["hip"], torch["build"]) == (None, "6.2.41133-dd7f95766", "rocm")
    assert (torch["cudnn"], torch["miopen"]) == (None, 30200)  # MIOpen answers cudnn.version()
    assert torch["devices"][0]["arch"].startswith("gfx942")


def test_system_probe_turns_missing_attributes_into_errors(fake_venv):
    settings = system(fake_venv(**CPU_FAKE))["settings"]
    assert settings["float32_matmul_precision"] == "highest"
    assert settings["matmul_allow_tf32"] is False and settings["cudnn_allow_tf32"] is True
    assert settings["deterministic_algorithms"] is False
    assert settings["num_interop_threads"]["error"].startswith("AttributeError")
    assert settings["matmul_fp32_precision"]["error"].startswith("AttributeError")


@pytest.mark.skipif(NVIDIA_PROC.exists() or AMDGPU_SYS.exists(),
                    reason="this machine has a GPU kernel driver, so it is not absent")
def test_system_probe_records_absent_drivers(fake_venv, tmp_path):
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    driver = system(fake_venv(**CUDA_FAKE), env={"PATH": str(empty)})["driver"]
    assert driver["nvidia"] is None and driver["rocm"] is None
    assert driver["reasons"]["nvidia"] == (
        f"nvidia-smi not found on PATH; {NVIDIA_PROC} absent")
    assert driver["reasons"]["rocm"] == f"rocm-smi not found on PATH; {AMDGPU_SYS} absent"


def _fake_tool(folder: Path, name: str, body: str) -> None:
    folder.mkdir(exist_ok=True)
    tool = folder / name
    tool.write_text(f"#!/bin/sh\n{body}\n")
    tool.chmod(0o755)


@posix_only
@pytest.mark.skipif(NVIDIA_PROC.exists(), reason="this machine has an NVIDIA kernel driver")
@pytest.mark.parametrize("body, version, reason", [
    ('echo "550.54.14, NVIDIA H100 80GB HBM3"', "550.54.14", None),
    ('echo "NVIDIA-SMI has failed because it couldn\'t communicate with the NVIDIA driver."'
     "\nexit 9", None, "nvidia-smi exited 9: NVIDIA-SMI has failed because it couldn't "
     f"communicate with the NVIDIA driver.; {NVIDIA_PROC} absent"),
    ("exit 0", None, f"nvidia-smi printed no driver version; {NVIDIA_PROC} absent"),
])
def test_system_probe_reads_nvidia_smi(fake_venv, tmp_path, body, version, reason):
    _fake_tool(tmp_path / "bin", "nvidia-smi", body)
    env = {"PATH": f"{tmp_path / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"}
    driver = system(fake_venv(**CUDA_FAKE), env=env)["driver"]
    if version:
        assert driver["nvidia"] == {"version": version, "source": "nvidia-smi",
                                    "gpus": ["NVIDIA H100 80GB HBM3"]}
    else:
        assert driver["nvidia"] is None and driver["reasons"]["nvidia"] == reason


@posix_only
@pytest.mark.skipif(AMDGPU_SYS.exists(), reason="this machine has an amdgpu kernel module")
def test_system_probe_reads_rocm_smi(fake_venv, tmp_path):
    _fake_tool(tmp_path / "bin", "rocm-smi", 'echo "Driver version: 6.8.5"')
    env = {"PATH": f"{tmp_path / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"}
    driver = system(fake_venv(**ROCM_FAKE), env=env)["driver"]
    assert driver["rocm"] == {"version": "6.8.5", "source": "rocm-smi"}


SCRIPTS = sorted(p.name for p in PROBES_DIR.glob("*.py") if p.name != "__init__.py")


@pytest.mark.parametrize("name", SCRIPTS)
def test_probes_import_only_stdlib_torch_numpy(name):
    """They run in the venv under test, where lockkit is not installed (a probe's parts
    too: it loads them by path)."""
    tree = ast.parse((PROBES_DIR / name).read_text(encoding="utf-8"))
    imported = {alias.name.split(".")[0] for node in ast.walk(tree)
                if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(tree)
                 if isinstance(node, ast.ImportFrom) and node.module and not node.level}
    assert imported - set(sys.stdlib_module_names) <= {"torch", "numpy"}, imported


# --- the real CPU torch ----------------------------------------------------------------

def test_real_cpu_torch_passes_all_checks(torch_venv):
    result = gpu(torch_venv, "--expect", "cpu", timeout=300)
    checks = checks_of(result)
    assert [checks[n]["status"] for n in ("build", "device", "matmul")] == ["passed"] * 3
    assert checks["build"]["torch"].startswith("2.13.0")
    assert checks["matmul"]["reference"] == "numpy float64"
    assert 0 < checks["matmul"]["max_abs_error"] < 1e-3  # float32 really differs from float64
    assert checks["matmul"]["tolerance"] | {"rule": None, "why": None} == {
        "atol": 1e-3, "rtol": 1e-4, "rule": None, "why": None}
    assert gpu_status(result.data) == ("passed", None)


def test_real_cpu_torch_fails_a_zero_tolerance(torch_venv):
    matmul = checks_of(gpu(torch_venv, "--expect", "cpu", "--atol", "0", "--rtol", "0",
                           timeout=300))["matmul"]
    assert matmul["status"] == "failed" and "exceeds atol 0 + rtol 0" in matmul["error"]


def test_real_cpu_torch_expected_as_cuda_fails_build(torch_venv):
    result = gpu(torch_venv, "--expect", "cuda", "--cuda", "12.6", timeout=300)
    checks = checks_of(result)
    assert checks["build"]["status"] == "failed"
    assert [checks[n]["status"] for n in ("device", "matmul")] == ["skipped", "skipped"]
    status, error = gpu_status(result.data)
    assert status == "failed"
    assert error == "build: torch 2.13.0+cpu is a CPU-only build (no CUDA, no HIP); " \
                    "expected a CUDA 12.6 build"


def test_real_cpu_torch_system_report(torch_venv):
    data = system(torch_venv, timeout=300)
    torch = data["torch"]
    assert torch["version"].startswith("2.13.0")
    assert (torch["cuda"], torch["hip"], torch["build"]) == (None, None, "cpu")
    assert torch["cuda_available"] is False and torch["devices"] == []
    assert data["numpy"]["version"]
    settings = data["settings"]
    assert settings["float32_matmul_precision"] == "highest"
    assert settings["deterministic_algorithms"] is False
    assert isinstance(settings["num_interop_threads"], int)


@pytest.mark.parametrize("helper", ["first_line", "attempt"])
def test_a_helper_repeated_in_the_scripts_is_the_same_everywhere(helper):
    """A script cannot import another under ``-I``, so the small helpers are repeated in
    each: every copy is the same code."""
    copies = {}
    for name in SCRIPTS:
        text = (PROBES_DIR / name).read_text(encoding="utf-8")
        for node in ast.parse(text).body:
            if isinstance(node, ast.FunctionDef) and node.name == helper:
                code = [n for n in node.body if not (isinstance(n, ast.Expr)
                                                     and isinstance(n.value, ast.Constant))]
                copies[name] = ast.dump(ast.Module(body=code, type_ignores=[]))
    assert len(copies) >= 2 and len(set(copies.values())) == 1, sorted(copies)
