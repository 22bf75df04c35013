"""The system probe's torch facts: its build, its devices, the settings that decide how
close two runs can be, and numpy's version.

Loaded by ``system_probe.py`` from its own folder, by path (``-I`` keeps the folder off
``sys.path``), inside the interpreter under test, after it imported torch: the standard
library, torch and numpy only. Each value is collected on its own, so an old or partial
torch gives a partial report.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

# Variables that change numerical results, thread counts or which devices are visible;
# recorded, never set here. lockkit.probes.probe imports this tuple to build the allow-list of
# the environment it passes, so the two cannot drift apart.
DETERMINISM_VARS = (
    "CUBLAS_WORKSPACE_CONFIG", "PYTHONHASHSEED", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
    "OPENBLAS_NUM_THREADS", "NVIDIA_TF32_OVERRIDE", "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE",
    "CUDA_LAUNCH_BLOCKING", "HIP_LAUNCH_BLOCKING", "CUDA_VISIBLE_DEVICES",
    "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES",
)


def first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def attempt(get: Callable[[], Any]) -> Any:
    """One value; its failure (AttributeError on an old or partial torch) is the value."""
    try:
        return get()
    except Exception as exc:  # noqa: BLE001 - any failure is data for the host
        return {"error": first_line(exc)}


def device_info(torch: Any, index: int) -> dict[str, Any]:
    """On ROCm these are named ``cuda`` too: the name does not prove NVIDIA, the arch does."""
    props = attempt(lambda: torch.cuda.get_device_properties(index))
    return {"index": index, "name": attempt(lambda: torch.cuda.get_device_name(index)),
            "capability": attempt(lambda: "{}.{}".format(
                *torch.cuda.get_device_capability(index))),
            "total_memory": getattr(props, "total_memory", None),
            "arch": getattr(props, "gcnArchName", None) or None}  # ROCm: gfx942 etc.


def dnn_versions(torch: Any) -> tuple[Any, Any]:
    """(cudnn, miopen): ROCm builds answer cudnn.version() with MIOpen's version."""
    cudnn = torch.backends.cudnn
    version = cudnn.version() if cudnn.is_available() else None
    if getattr(torch.version, "hip", None):
        return None, version
    return version, None


def build_kind(cuda: Any, hip: Any, mps_built: Any) -> str:
    if hip:
        return "rocm"
    if cuda:
        return "cuda"
    return "mps" if mps_built is True else "cpu"


def torch_info(torch: Any) -> dict[str, Any]:
    version = getattr(torch, "version", None)
    cuda, hip = getattr(version, "cuda", None), getattr(version, "hip", None)
    available = attempt(lambda: bool(torch.cuda.is_available()))
    count = attempt(lambda: int(torch.cuda.device_count())) if available is True else 0
    dnn = attempt(lambda: dnn_versions(torch))
    mps_built = attempt(lambda: bool(torch.backends.mps.is_built()))
    return {
        "version": getattr(torch, "__version__", None), "cuda": cuda, "hip": hip,
        "build": build_kind(cuda, hip, mps_built),
        "git_version": getattr(version, "git_version", None),
        "cudnn": dnn[0] if isinstance(dnn, tuple) else dnn,
        "miopen": dnn[1] if isinstance(dnn, tuple) else dnn,
        "cuda_available": available, "device_count": count,
        "devices": [device_info(torch, i) for i in range(count if isinstance(count, int) else 0)],
        "mps_built": mps_built,
        "mps_available": attempt(lambda: bool(torch.backends.mps.is_available())),
        "file": getattr(torch, "__file__", None),
    }


def torch_settings(torch: Any) -> dict[str, Any]:
    """The settings that decide how close two runs can be (MISSION section 6)."""
    backends: Any = getattr(torch, "backends", None)  # a missing one fails each key, not all
    getters: dict[str, Callable[[], Any]] = {
        "default_dtype": lambda: str(torch.get_default_dtype()),
        "deterministic_algorithms": lambda: torch.are_deterministic_algorithms_enabled(),
        "deterministic_warn_only": lambda: torch.is_deterministic_algorithms_warn_only_enabled(),
        "cudnn_deterministic": lambda: backends.cudnn.deterministic,
        "cudnn_benchmark": lambda: backends.cudnn.benchmark,
        "matmul_allow_tf32": lambda: backends.cuda.matmul.allow_tf32,
        "cudnn_allow_tf32": lambda: backends.cudnn.allow_tf32,
        "matmul_allow_fp16_reduced_precision":
            lambda: backends.cuda.matmul.allow_fp16_reduced_precision_reduction,
        "matmul_allow_bf16_reduced_precision":
            lambda: backends.cuda.matmul.allow_bf16_reduced_precision_reduction,
        "float32_matmul_precision": lambda: torch.get_float32_matmul_precision(),
        # torch >= 2.9 says the same through fp32_precision; older ones answer an error
        "fp32_precision": lambda: backends.fp32_precision,
        "matmul_fp32_precision": lambda: backends.cuda.matmul.fp32_precision,
        "cudnn_fp32_precision": lambda: backends.cudnn.fp32_precision,
        "num_threads": lambda: torch.get_num_threads(),
        "num_interop_threads": lambda: torch.get_num_interop_threads(),
    }
    return {key: attempt(get) for key, get in getters.items()}


def settings_info(torch: Any | None) -> dict[str, Any]:
    values: dict[str, Any] = torch_settings(torch) if torch is not None else {}
    values["hash_randomization"] = bool(sys.flags.hash_randomization)
    values["env"] = {name: os.environ.get(name) for name in DETERMINISM_VARS}
    return values


def numpy_info() -> dict[str, Any]:
    try:
        import numpy
    except Exception as exc:  # noqa: BLE001
        return {"version": None, "error": first_line(exc)}
    return {"version": numpy.__version__}
