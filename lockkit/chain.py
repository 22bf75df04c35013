"""The system and GPU steps, one implementation for ``verify`` and ``diagnose``.

Both run a probe inside the target interpreter (:mod:`lockkit.probe`) and judge what it
says the same way: the system step fails when torch reports no version, whatever else it
reports; the GPU step fails on the first GPU check that did not pass.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lockkit import _run, probe
from lockkit.platforms import Platform
from lockkit.report.model import SystemFacts
from lockkit.steps import Step, StepFailed

__all__ = ["gpu_args", "gpu_step", "system_step"]


def system_step(step: Step, python: Path, found: dict[str, Any], *, timeout: float,
                record: _run.Recorder | None = None,
                gpu_args: Sequence[str] | None = None) -> None:
    """The system chain as the interpreter sees it, into ``found["system"]`` (kept even when
    the step fails); ``StepFailed`` when torch reports no version.

    With *gpu_args*, the GPU probe runs in the same process right after (one torch
    import, not two); its report waits in ``found`` for :func:`gpu_step` to judge."""
    result, found["gpu_result"] = probe.run_chain(python, gpu_args, timeout, record)
    facts = found["system"] = SystemFacts(raw=result.data or {})
    if result.status != "passed":
        raise StepFailed(f"system probe: {result.error}")
    torch = facts.torch
    step.detail.update({"torch": torch.version, "torch.version.cuda": torch.cuda,
                        "torch.version.hip": torch.hip, "build": torch.build,
                        "devices": len(torch.devices)})
    if not torch.version:
        raise StepFailed(f"torch: {torch.error or 'reports no version (not importable?)'}")


def gpu_args(plat: Platform) -> list[str]:
    """gpu_probe.py's expectations for *plat*: its backend, version and device."""
    args = ["--expect", plat.backend.kind, "--device", plat.gpu_device]
    if plat.gpu_cuda:
        args += ["--cuda", plat.gpu_cuda]
    if plat.gpu_hip:
        args += ["--hip", plat.gpu_hip]
    return args


def gpu_step(step: Step, python: Path, args: Sequence[str], found: dict[str, Any], *,
             timeout: float, record: _run.Recorder | None = None) -> None:
    """The GPU probe's report, into ``found["gpu"]``; ``StepFailed`` on its first check
    that did not pass. The report the system step's process made is used when there is
    one; otherwise the GPU probe runs now, on its own."""
    result = found.pop("gpu_result", None)
    if result is not None:
        step.detail["ran_in"] = "the system step's process (one torch import for both)"
    else:
        result = probe.run_probe(python, "gpu_probe.py", args, timeout=timeout, record=record)
    data = found["gpu"] = result.data or {}
    if result.status != "passed":
        raise StepFailed(f"gpu probe: {result.error}")
    step.detail.update({k: v.get("status") for k, v in data.get("checks", {}).items()
                        if isinstance(v, dict)})
    status, error = probe.gpu_status(data)
    if status != "passed":
        raise StepFailed(error or "the GPU check failed")
