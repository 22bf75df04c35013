"""The system and GPU steps, one implementation for ``verify`` and ``diagnose``.

Both run a probe inside the target interpreter (:mod:`lockkit.probes.probe`) and judge what it
says the same way: the system step fails when torch reports no version, whatever else it
reports; the GPU step fails on the first GPU check that did not pass.

What the GPU step expects comes from the lock when there is one: the locked torch's
local label (``+cu126`` is CUDA 12.6, ``+rocm6.4`` is ROCm 6.4) or, for a build of the
default index (no label), the CUDA major of its ``nvidia-*-cuNN`` dependencies; the
platform file's ``[gpu]`` values are the fallback. The driver is judged here, on the
host, against NVIDIA's minimum for the installed build's CUDA major (``host.py``'s
table, as uv encodes it), from the driver the system probe recorded.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, TypedDict

from packaging.version import InvalidVersion, Version

from lockkit._internal import proc
from lockkit.lock.lockfile import cuda_majors
from lockkit.platforms.arch import host_os
from lockkit.platforms.definitions import Platform
from lockkit.platforms.host import driver_minimum
from lockkit.probes import probe
from lockkit.report.facts import SystemFacts
from lockkit.report.shapes import Foreign
from lockkit.steps.engine import Step, StepFailed
from lockkit.steps.findings import Findings

__all__ = ["DriverCheck", "driver_check", "gpu_args", "gpu_step", "locked_backend", "system_step",
           "with_collect_env"]

_CU = re.compile(r"cu(\d+)(\d)")
_ROCM = re.compile(r"rocm(\d+)\.(\d+)(?:\.[\w.]+)?")


def system_step(step: Step, python: Path, found: Findings, *, timeout: float,
                record: proc.Recorder | None = None,
                gpu_args: Sequence[str] | None = None, pycache: Path | None = None,
                no_torch: str | None = None, collect_env: bool = True) -> None:
    """The system chain as the interpreter sees it, into ``found.system`` (kept even when
    the step fails); ``StepFailed`` when torch reports no version, unless *no_torch* says
    why none is expected (a platform without torch: the rest of the chain is the finding).

    With *gpu_args*, the GPU probe runs in the same process right after (one torch
    import, not two); its report waits in ``found.gpu_result`` for :func:`gpu_step`.
    *collect_env* False: torch's ``collect_env`` is not run (diagnose runs it only after a
    GPU step that failed)."""
    result, found.gpu_result = probe.run_chain(python, gpu_args, timeout, record, pycache,
                                               collect_env)
    facts = found.system = SystemFacts(raw=result.data or {})
    if result.status != "passed":
        raise StepFailed(f"system probe: {result.error}")
    torch = facts.torch
    step.detail.update({"torch": torch.version, "torch.version.cuda": torch.cuda,
                        "torch.version.hip": torch.hip, "build": torch.build,
                        "devices": len(torch.devices)})
    if not torch.version and no_torch:
        step.detail["torch"] = f"not checked: {no_torch}"
    elif not torch.version:
        raise StepFailed(f"torch: {torch.error or 'reports no version (not importable?)'}")


def with_collect_env(system: SystemFacts | None, gpu_failed: bool, python: Path,
                     timeout: float, record: proc.Recorder | None = None) -> SystemFacts | None:
    """*system* with torch's ``collect_env`` when the GPU step failed, else with why not.

    Run only where its answers help: it costs seconds (pip, nvidia-smi, a torch import of
    its own) and, on a rebuild whose GPU step passed, repeats what the system probe and the
    inventory recorded (issues 26 and 35). ``verify --collect-env`` runs it always, beside
    the GPU checks; a failed system step leaves it nothing to add (it imports torch)."""
    if system is None:
        return None
    if gpu_failed:
        info = probe.run_collect_env(python, timeout, record)
    else:
        info = {"skipped": "run only when the gpu step fails"}
    return SystemFacts(raw={**system.raw, "collect_env": info})


def locked_backend(locked: Mapping[str, str] | None) -> tuple[str | None, str | None, str]:
    """(CUDA, HIP, why) the locked torch was built for: ``2.5.1+cu126`` -> ("12.6", None);
    ``2.9.0+rocm6.4`` -> (None, "6.4"); ``2.8.0`` with ``nvidia-cublas-cu12`` -> ("12",
    None). (None, None, "") when the lock names no torch or no GPU build."""
    torch = (locked or {}).get("torch")
    if not torch:
        return None, None, ""
    try:
        local = Version(torch).local
    except InvalidVersion:
        return None, None, ""
    why = f"the lock's torch {torch}"
    if local and (m := _CU.fullmatch(local)):
        return f"{m[1]}.{m[2]}", None, why
    if local and (m := _ROCM.fullmatch(local)):
        return None, f"{m[1]}.{m[2]}", why
    majors = sorted(set(cuda_majors(dict(locked or {})).values()))
    if local is None and len(majors) == 1:
        return majors[0], None, f"{why}, by its nvidia-*-cu{majors[0]} dependencies"
    return None, None, ""


def gpu_args(plat: Platform, locked: Mapping[str, str] | None = None) -> list[str]:
    """gpu_probe.py's expectations for *plat*: its backend, version and device; with the
    *locked* versions (verify, after install), the CUDA/HIP version of the locked torch
    build, and the torchvision / torchaudio checks when the lock has them."""
    args = ["--expect", plat.backend.kind, "--device", plat.gpu_device]
    cuda, hip, why = locked_backend(locked)
    cuda = cuda if plat.backend.kind == "cuda" and cuda else plat.gpu_cuda
    hip = hip if plat.backend.kind == "rocm" and hip else plat.gpu_hip
    if cuda:
        args += ["--cuda", cuda]
    if hip:
        args += ["--hip", hip]
    if why and (cuda or hip):
        args += ["--source", why]
    args += [f"--{flag}" for name, flag in (("torchvision", "vision"), ("torchaudio", "audio"))
             if name in (locked or {})]
    return args


class DriverCheck(TypedDict, total=False):
    """The host's driver check, as the GPU report's ``checks.driver`` holds it: a status
    always, the driver found, and for CUDA the build's minimum on this OS."""

    driver: str | None
    source: str | None
    cuda: str | None
    minimum: str | None
    os: str
    status: Literal["passed", "failed", "skipped"]
    reason: str
    error: str


def driver_check(system: Mapping[str, Any], kind: str, os_: str,
                 expected_cuda: str | None = None) -> DriverCheck | None:
    """The driver against the build's minimum, from the system probe's report; None on a
    platform without a GPU driver. Unknown is ``skipped`` (the device check then says
    whether the GPU is reachable); ROCm's is recorded, not judged (no table)."""
    drivers: Mapping[str, Any] = _section(system, "driver")
    torch = _section(system, "torch")
    reasons = drivers.get("reasons") or {}
    if kind == "rocm":
        found = drivers.get("rocm") or {}
        if not found.get("version"):
            return {"status": "skipped", "reason": f"ROCm driver unknown: {reasons.get('rocm')}"}
        return {"status": "skipped", "driver": found["version"], "source": found.get("source"),
                "reason": f"ROCm driver {found['version']} recorded, not judged: no "
                          "minimum-driver table for ROCm"}
    if kind != "cuda":
        return None
    cuda = torch.get("cuda") if isinstance(torch.get("cuda"), str) else expected_cuda
    found = drivers.get("nvidia") or {}
    driver, minimum = found.get("version"), driver_minimum(cuda or "", os_)
    result: DriverCheck = {"driver": driver, "source": found.get("source"), "cuda": cuda,
                           "minimum": minimum, "os": os_}
    if not driver:
        return {**result, "status": "skipped",
                "reason": f"NVIDIA driver unknown: {reasons.get('nvidia')}"}
    if minimum is None:
        return {**result, "status": "skipped",
                "reason": f"no known minimum driver for CUDA {cuda} on {os_}"}
    try:
        ok = Version(driver) >= Version(minimum)
    except InvalidVersion:
        return {**result, "status": "skipped", "reason": f"driver version {driver!r} unreadable"}
    if not ok:
        major = (cuda or "").split(".")[0]
        result["error"] = (f"NVIDIA driver {driver} is older than {minimum}, the minimum for "
                           f"CUDA {major}.x builds on {os_} (torch reports CUDA {cuda}); "
                           "upgrade the driver or lock an older CUDA platform")
    return {**result, "status": "passed" if ok else "failed"}


def gpu_step(step: Step, python: Path, args: Sequence[str], found: Findings, *,
             timeout: float, record: proc.Recorder | None = None) -> None:
    """The GPU probe's report, into ``found.gpu``; ``StepFailed`` on its first check
    that did not pass. The report the system step's process made is used when there is
    one; otherwise the GPU probe runs now, on its own."""
    result, found.gpu_result = found.gpu_result, None
    if result is not None:
        step.detail["ran_in"] = "the system step's process (one torch import for both)"
    else:
        result = probe.run_probe(python, "gpu_probe.py", args, timeout=timeout, record=record)
    data = dict(result.data or {})
    if result.status == "passed":
        data = _with_driver(data, found.system, args)
    found.gpu = data
    if result.status != "passed":
        raise StepFailed(f"gpu probe: {result.error}")
    step.detail.update({k: v.get("status") for k, v in data.get("checks", {}).items()
                        if isinstance(v, dict)})
    status, error = probe.gpu_status(data)
    if status != "passed":
        raise StepFailed(error or "the GPU check failed")


def _with_driver(data: Foreign, system: SystemFacts | None, args: Sequence[str]) -> Foreign:
    """The GPU report *data* with the host's driver check among its checks, when the
    platform has a GPU driver to judge."""
    driver = driver_check(system.raw if system else {}, _arg(args, "--expect") or "",
                          host_os(), _arg(args, "--cuda"))
    if driver is not None and isinstance(data.get("checks"), dict):
        data["checks"] = {**data["checks"], "driver": driver}
    return data


def _section(data: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = data.get(key)
    return value if isinstance(value, Mapping) else {}


def _arg(args: Sequence[str], flag: str) -> str | None:
    args = list(args)
    return args[args.index(flag) + 1] if flag in args[:-1] else None
