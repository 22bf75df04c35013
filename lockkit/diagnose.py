"""``lockkit diagnose``: the system and GPU steps of verify, on an existing interpreter."""

from __future__ import annotations

import datetime as _dt
import sys
from pathlib import Path
from typing import Any

from lockkit import __version__, probe
from lockkit.redact import redact
from lockkit.report import SCHEMA_VERSION, Step, StepFailed, Steps
from lockkit.report import overall as overall_result

__all__ = ["diagnose"]

PLAN: list[tuple[str, tuple[str, ...]]] = [("system", ()), ("gpu", ("system",))]
_DEVICE = {"cpu": "cpu", "cuda": "cuda", "rocm": "cuda", "mps": "mps"}  # ROCm answers torch.cuda


def diagnose(python: Path | None = None, expect: str | None = None, *,
             timeout: float = 300.0, command_line: tuple[str, ...] = ()) -> dict[str, Any]:
    """Run the probes with *python* (default: this interpreter); return the report."""
    python = python or Path(sys.executable)
    started = _dt.datetime.now(_dt.timezone.utc)
    steps = Steps(PLAN)
    facts: dict[str, Any] = {"commands": []}

    def record(step: str, result: probe.ProbeResult) -> None:
        facts["commands"].append({"step": step, "argv": [redact(a) for a in result.command],
                                  "returncode": result.returncode,
                                  "duration_s": round(result.duration, 3)})

    def system(step: Step) -> None:
        result = probe.run_probe(python, "system_probe.py", timeout=timeout)
        record("system", result)
        facts["system"] = result.data or {}
        if result.status != "passed":
            raise StepFailed(f"system probe: {result.error}")
        torch = facts["system"].get("torch") or {}
        step.detail.update({"torch": torch.get("version"), "torch.version.cuda": torch.get("cuda"),
                            "torch.version.hip": torch.get("hip"), "build": torch.get("build")})
        if "version" not in torch:
            raise StepFailed(f"torch: {torch.get('error', 'not importable')}")

    def gpu(step: Step) -> None:
        torch = facts["system"].get("torch") or {}
        kind = expect or (torch.get("build") if torch.get("build") in _DEVICE else "cpu")
        step.detail["expect"] = kind
        step.detail["expect_source"] = "--expect" if expect else "the torch build found"
        result = probe.run_probe(python, "gpu_probe.py",
                                 ["--expect", kind, "--device", _DEVICE[kind]], timeout=timeout)
        record("gpu", result)
        facts["gpu"] = result.data or {}
        if result.status != "passed":
            raise StepFailed(f"gpu probe: {result.error}")
        status, error = probe.gpu_status(result.data)
        if status != "passed":
            raise StepFailed(error or "the GPU check failed")

    steps.execute("system", system)
    steps.execute("gpu", gpu)
    return {"schema_version": SCHEMA_VERSION, "kind": "diagnose", "lockkit_version": __version__,
            "started": started.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "command_line": list(command_line), "python": str(python),
            "result": overall_result(steps), "first_error": steps.first_error,
            "steps": [s.to_dict() for s in steps], "commands": facts["commands"],
            "system": facts.get("system"), "checks": {"gpu": facts.get("gpu")}}
