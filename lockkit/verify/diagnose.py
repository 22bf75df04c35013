"""``lockkit diagnose``: the system and GPU steps of verify, on an existing interpreter."""

from __future__ import annotations

import datetime
import os
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path

from lockkit import __version__
from lockkit._internal import proc
from lockkit._internal.redact import masked
from lockkit.errors import UsageError
from lockkit.report.model import Dossier
from lockkit.report.records import CommandRecord
from lockkit.report.roots import named_roots, own_roots
from lockkit.steps.engine import Step, Steps, overall
from lockkit.steps.findings import Findings
from lockkit.verify import chain

__all__ = ["default_python", "diagnose", "no_torch"]

PLAN: list[tuple[str, tuple[str, ...]]] = [("system", ()), ("gpu", ("system",))]
_DEVICE = {"cpu": "cpu", "cuda": "cuda", "rocm": "cuda", "mps": "mps"}  # ROCm answers torch.cuda


def default_python(env: Mapping[str, str] | None = None,
                   cwd: Path | None = None) -> tuple[Path, str]:
    """The interpreter a user means without ``--python``, and where it came from.

    The active venv's (``VIRTUAL_ENV``), else the project's ``.venv`` (the project found
    from *cwd*, else *cwd* itself: where ``uv venv`` and ``lockkit sync`` put it), else
    ``python3`` or ``python`` on PATH, skipping lockkit's own interpreter: lockkit's venv
    is often on PATH, and it has no torch."""
    from lockkit.config.project import find_project

    env = os.environ if env is None else env
    cwd = Path.cwd() if cwd is None else cwd
    venv = env.get("VIRTUAL_ENV")
    if venv:
        python = _venv_python(Path(venv))
        if python.exists():
            return python, f"the active venv, VIRTUAL_ENV={venv}"
    project = find_project(cwd) or cwd
    python = _venv_python(project / ".venv")
    if python.exists():
        return python, f"the project's venv, {project / '.venv'}"
    own = Path(sys.executable).absolute().parent
    skipped = False
    for name in ("python3", "python"):
        for folder in (env.get("PATH") or "").split(os.pathsep):
            found = shutil.which(name, path=folder) if folder else None
            if found is None:
                continue
            if _same_folder(Path(found).absolute().parent, own):
                skipped = True  # lockkit's own venv on PATH
                continue
            return Path(found), f"'{name}' on PATH"
    raise UsageError("no interpreter to diagnose: no active venv (VIRTUAL_ENV), no .venv in "
                     f"{project}, and no python on PATH"
                     + (" but lockkit's own, which has no torch" if skipped else ""),
                     hint="give --python PATH (an interpreter with torch)")


def _venv_python(venv: Path) -> Path:
    return venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def _same_folder(a: Path, b: Path) -> bool:
    try:
        return a == b or os.path.samefile(a, b)
    except OSError:
        return False


def no_torch(dossier: Dossier) -> bool:
    """Whether the probed interpreter has no torch at all (not a broken one)."""
    torch = dossier.system.torch if dossier.system is not None else None
    return torch is not None and not torch.version and \
        "No module named 'torch'" in (torch.error or "")


def diagnose(python: Path | None = None, expect: str | None = None, *, source: str = "",
             timeout: float = 300.0, command_line: tuple[str, ...] = ()) -> Dossier:
    """Run the probes with *python* (default: :func:`default_python`); return the
    dossier, its root the interpreter's venv. *source* says how the interpreter was chosen
    (kept in the system step)."""
    if python is None:
        python, source = default_python()
    started = datetime.datetime.now(datetime.timezone.utc)
    steps = Steps(PLAN)
    found = Findings()
    commands: list[CommandRecord] = []

    def recorder(step: str) -> proc.Recorder:
        return lambda r: commands.append(CommandRecord(
            step=step, argv=tuple(masked(a) for a in r.argv), returncode=r.returncode,
            duration_s=round(r.duration, 3), timed_out=r.timed_out))

    # One process for both steps (one torch import); without --expect, the probe expects
    # the build it finds. torchvision / torchaudio: checked when installed (no lock here).
    # torch's collect_env (seconds: pip, nvidia-smi, a second torch import) runs only
    # when the GPU step fails, where its answers help (issue 26).
    probe_args = ["--expect", expect or "auto", "--installed"]

    def system(step: Step) -> None:
        step.detail["interpreter_source"] = source or "given"
        chain.system_step(step, python, found, timeout=timeout, record=recorder("system"),
                          gpu_args=probe_args, collect_env=False)

    def gpu(step: Step) -> None:
        assert found.system is not None  # the system step passed
        build = found.system.torch.build
        kind = expect or (build if build in _DEVICE else "cpu")
        step.detail["expect"] = kind
        step.detail["expect_source"] = "--expect" if expect else "the torch build found"
        step.detail["companions"] = "torchvision and torchaudio as installed (no lock)"
        chain.gpu_step(step, python, ["--expect", kind, "--device", _DEVICE[kind],
                                      "--installed"], found,
                       timeout=timeout, record=recorder("gpu"))

    steps.execute("system", system)
    steps.execute("gpu", gpu)
    found.system = chain.with_collect_env(found.system, steps["gpu"].status == "failed",
                                         python, timeout, recorder("gpu"))
    return Dossier(kind="diagnose", lockkit_version=__version__,
                   started=started.strftime("%Y-%m-%dT%H:%M:%SZ"),
                   command_line=command_line, python=str(python), result=overall(steps),
                   first_error=steps.first_error, steps=tuple(s.result() for s in steps),
                   commands=tuple(commands), system=found.system, gpu=found.gpu,
                   roots=named_roots(venv=_venv_of(found), **own_roots()))


def _venv_of(found: Findings) -> str | None:
    """The probed interpreter's venv (its ``sys.prefix``), the root of its paths; None
    for an interpreter outside a venv (its prefix is the system's, not a run's)."""
    python = found.system.section("python") if found.system is not None else {}
    prefix = python.get("prefix")
    return prefix if python.get("in_venv") and isinstance(prefix, str) else None
