"""``lockkit diagnose``: the system and GPU steps of verify, on an existing interpreter."""

from __future__ import annotations

import datetime as _dt
import sys
from pathlib import Path
from typing import Any

from lockkit import __version__, _run, chain
from lockkit.redact import redact
from lockkit.report.model import CommandRecord, Dossier
from lockkit.steps import Step, Steps, overall

__all__ = ["diagnose"]

PLAN: list[tuple[str, tuple[str, ...]]] = [("system", ()), ("gpu", ("system",))]
_DEVICE = {"cpu": "cpu", "cuda": "cuda", "rocm": "cuda", "mps": "mps"}  # ROCm answers torch.cuda


def diagnose(python: Path | None = None, expect: str | None = None, *,
             timeout: float = 300.0, command_line: tuple[str, ...] = ()) -> Dossier:
    """Run the probes with *python* (default: this interpreter); return the dossier."""
    python = python or Path(sys.executable)
    started = _dt.datetime.now(_dt.timezone.utc)
    steps = Steps(PLAN)
    found: dict[str, Any] = {}
    commands: list[CommandRecord] = []

    def recorder(step: str) -> _run.Recorder:
        return lambda r: commands.append(CommandRecord(
            step=step, argv=tuple(redact(a) for a in r.argv), returncode=r.returncode,
            duration_s=round(r.duration, 3), timed_out=r.timed_out))

    def gpu(step: Step) -> None:
        build = found["system"].torch.build
        kind = expect or (build if build in _DEVICE else "cpu")
        step.detail["expect"] = kind
        step.detail["expect_source"] = "--expect" if expect else "the torch build found"
        chain.gpu_step(step, python, ["--expect", kind, "--device", _DEVICE[kind]], found,
                       timeout=timeout, record=recorder("gpu"))

    steps.execute("system", lambda s: chain.system_step(s, python, found, timeout=timeout,
                                                        record=recorder("system")))
    steps.execute("gpu", gpu)
    return Dossier(kind="diagnose", lockkit_version=__version__,
                   started=started.strftime("%Y-%m-%dT%H:%M:%SZ"),
                   command_line=command_line, python=str(python), result=overall(steps),
                   first_error=steps.first_error, steps=tuple(s.result() for s in steps),
                   commands=tuple(commands), system=found.get("system"), gpu=found.get("gpu"))
