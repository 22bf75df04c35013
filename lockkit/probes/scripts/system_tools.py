"""The system probe's host tools: the GPU drivers (``nvidia-smi``, ``rocm-smi``, or the
files their kernel modules write) and the toolchain a compiled extension needs (each
compiler and build tool with its version, or "not found").

Loaded by ``system_probe.py`` from its own folder, by path (``-I`` keeps the folder off
``sys.path``), inside the interpreter under test: the standard library only. Every tool
runs with a timeout: a wedged driver makes ``nvidia-smi`` hang, not fail.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Callable
from typing import Any

SMI_TIMEOUT = 15  # seconds: a wedged driver makes nvidia-smi hang, not fail
# What builds a compiled extension (torch.utils.cpp_extension reads CUDA_HOME / ROCM_PATH,
# CC / CXX); recorded, and passed to the probes by lockkit.probes.probe's allow-list.
TOOLCHAIN_VARS = ("CUDA_HOME", "CUDA_PATH", "ROCM_PATH", "ROCM_HOME", "CC", "CXX",
                  "TORCH_CUDA_ARCH_LIST", "PYTORCH_ROCM_ARCH")
TOOLS = (("cc", "--version"), ("gcc", "--version"), ("clang", "--version"), ("cl", None),
         ("nvcc", "--version"), ("hipcc", "--version"), ("cmake", "--version"),
         ("ninja", "--version"))
TOOL_TIMEOUT = 10


def first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def attempt(get: Callable[[], Any]) -> Any:
    """One value; its failure (AttributeError on an old or partial torch) is the value."""
    try:
        return get()
    except Exception as exc:  # noqa: BLE001 - any failure is data for the host
        return {"error": first_line(exc)}


def run_tool(argv: list[str]) -> tuple[str | None, str | None]:
    """(stdout, None) or (None, why it gave nothing) for an optional system tool."""
    exe = shutil.which(argv[0])
    if exe is None:
        return None, f"{argv[0]} not found on PATH"
    try:
        proc = subprocess.run([exe, *argv[1:]], capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, timeout=SMI_TIMEOUT)
    except subprocess.TimeoutExpired:
        return None, f"{argv[0]} timed out after {SMI_TIMEOUT}s"
    except OSError as exc:
        return None, f"{argv[0]}: {first_line(exc)}"
    if proc.returncode != 0:
        lines = (proc.stderr or proc.stdout).strip().splitlines() or ["no output"]
        return None, f"{argv[0]} exited {proc.returncode}: {lines[0]}"
    return proc.stdout, None


def read_text(path: str) -> tuple[str | None, str | None]:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read(), None
    except OSError:
        return None, f"{path} absent"


def nvidia_driver() -> tuple[dict[str, Any] | None, str | None]:
    out, why_smi = run_tool(["nvidia-smi", "--query-gpu=driver_version,name",
                             "--format=csv,noheader"])
    rows = [[c.strip() for c in line.split(",", 1)] for line in (out or "").strip().splitlines()]
    if rows and rows[0][0]:
        return {"version": rows[0][0], "source": "nvidia-smi",
                "gpus": [r[1] for r in rows if len(r) > 1]}, None
    if out is not None:
        why_smi = "nvidia-smi printed no driver version"
    text, why_proc = read_text("/proc/driver/nvidia/version")
    # "NVRM version: NVIDIA UNIX [Open Kernel Module for] x86_64  550.54.14  ..."
    match = re.search(r"Kernel Module(?: for \S+)?\s+(\d[\w.]*)", text or "")
    if match:
        return {"version": match.group(1), "source": "/proc/driver/nvidia/version",
                "gpus": [], "note": why_smi}, None
    return None, f"{why_smi}; {why_proc or 'no version in /proc/driver/nvidia/version'}"


def rocm_driver() -> tuple[dict[str, Any] | None, str | None]:
    out, why_smi = run_tool(["rocm-smi", "--showdriverversion"])
    match = re.search(r"Driver version:\s*(\S+)", out or "", re.IGNORECASE)
    if match:
        return {"version": match.group(1), "source": "rocm-smi"}, None
    text, why_sys = read_text("/sys/module/amdgpu/version")
    if text and text.strip():
        return {"version": text.strip(), "source": "/sys/module/amdgpu/version",
                "note": why_smi}, None
    why_smi = why_smi or "rocm-smi printed no driver version"
    return None, f"{why_smi}; {why_sys or '/sys/module/amdgpu/version empty'}"


def driver_info() -> dict[str, Any]:
    """Both vendors, always: an absent driver is a recorded fact with its reason."""
    nvidia, why_nvidia = nvidia_driver()
    rocm, why_rocm = rocm_driver()
    reasons = {k: v for k, v in (("nvidia", why_nvidia), ("rocm", why_rocm)) if v}
    return {"nvidia": nvidia, "rocm": rocm, "reasons": reasons}


def tool_version(name: str, flag: str | None) -> dict[str, Any]:
    """The tool's path and the first output line that names a version (nvcc's is its 4th;
    MSVC's ``cl`` prints its banner on stderr and has no version flag)."""
    exe = shutil.which(name)
    if exe is None:
        return {"path": None, "version": "not found"}
    try:
        proc = subprocess.run([exe, *([flag] if flag else [])], capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, timeout=TOOL_TIMEOUT)
    except subprocess.TimeoutExpired:
        return {"path": exe, "version": None, "error": f"timed out after {TOOL_TIMEOUT}s"}
    except OSError as exc:
        return {"path": exe, "version": None, "error": first_line(exc)}
    lines = [ln.strip() for ln in (proc.stdout + "\n" + proc.stderr).splitlines() if ln.strip()]
    line = next((ln for ln in lines if re.search(r"\d+\.\d+", ln)), lines[0] if lines else None)
    return {"path": exe, "version": line[:200] if line else None}


def toolchain_info() -> dict[str, Any]:
    tools: dict[str, Any] = {}
    for name, flag in TOOLS:
        tools[name] = attempt(lambda n=name, f=flag: tool_version(n, f))  # type: ignore[misc]
    return {"tools": tools,
            "env": {name: os.environ.get(name) for name in TOOLCHAIN_VARS}}
