"""Run a probe script inside a target interpreter and read the one JSON object it prints.

The host side of ``lockkit/probes/scripts/``: ``lockkit verify`` runs the probes with the
fresh venv's interpreter, ``lockkit diagnose`` with an existing one. The interpreter is called
by path in isolated mode (``-I``: no ``PYTHON*`` variables, no user site, no script or
working directory on ``sys.path``) with an allow-listed environment, so what the probe
sees is the interpreter and the system, not whatever the calling shell carried.

A probe that hangs (a wedged driver, an ``import torch`` stuck on a lock) is killed with
its whole process group at the timeout; one that crashes is named by its signal. Either
way the result is a :class:`ProbeResult`, never an exception: the first error is the
finding (MISSION section 5).

Probes run through :func:`lockkit._internal.proc.call`, like every other command: the process group
is killed at the timeout, and a timeout is told apart from a signal.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypedDict

from lockkit._internal import proc
from lockkit._internal.parse import parse_json
from lockkit.probes.scripts.system_tools import TOOLCHAIN_VARS
from lockkit.probes.scripts.system_torch import DETERMINISM_VARS
from lockkit.report.shapes import Foreign

__all__ = ["PROBES_DIR", "GPU_CHECKS", "ProbeDoc", "ProbeResult", "Status", "gpu_status",
           "probe_env", "run_chain", "run_collect_env", "run_lines", "run_probe"]

PROBES_DIR = Path(__file__).resolve().parent / "scripts"
# The order the GPU step judges them in: gpu_probe.py's, with the host's driver check
# (lockkit.verify.chain) before the device one, so a driver too old is named as the cause.
GPU_CHECKS = ("build", "driver", "device", "matmul", "torchvision", "torchaudio")
OPTIONAL_CHECKS = frozenset({"driver", "torchvision", "torchaudio"})  # absent/skipped: fine

Status = Literal["passed", "failed"]

# What a probe needs to run and find the system chain; nothing else crosses over.
# LD_LIBRARY_PATH is kept because the driver is part of the system, not of the venv:
# containers and cluster modules point to libcuda through it.
_BASE_VARS = ("PATH", "HOME", "LANG", "LANGUAGE", "TMPDIR", "TEMP", "TMP", "LD_LIBRARY_PATH",
              "SYSTEMROOT", "USERPROFILE")  # the last two: Python on Windows needs them
_DEVICE_VARS = ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "HIP_VISIBLE_DEVICES",
                "ROCR_VISIBLE_DEVICES", "HSA_OVERRIDE_GFX_VERSION")
ALLOWED_VARS = frozenset(_BASE_VARS + _DEVICE_VARS + DETERMINISM_VARS + TOOLCHAIN_VARS)
_TAIL_LINES = 20


class ProbeDoc(TypedDict):
    status: Status
    data: Foreign | None
    error: str | None
    duration: float
    command: list[str]
    returncode: int | None
    stderr_tail: str


@dataclass(frozen=True, kw_only=True)
class ProbeResult:
    """One probe run: ``passed`` means it ran and printed a JSON object, not that the
    system is right; the probe's own verdicts are in ``data`` (see :func:`gpu_status`)."""

    status: Status
    data: Foreign | None  # what the probe printed: foreign JSON, read through .get
    error: str | None
    duration: float
    command: list[str]
    returncode: int | None = None
    stderr_tail: str = ""

    def to_dict(self) -> ProbeDoc:
        return {"status": self.status, "data": copy.deepcopy(self.data), "error": self.error,
                "duration": self.duration, "command": list(self.command),
                "returncode": self.returncode, "stderr_tail": self.stderr_tail}


def probe_env(extra: Mapping[str, str] | None = None,
              source: Mapping[str, str] | None = None) -> dict[str, str]:
    """The allow-listed part of *source* (default: this process's environment) plus *extra*.

    Under ``-I`` Python ignores ``PYTHONHASHSEED``: it is passed only so the system probe
    records what the application will see; ``settings.hash_randomization`` is the truth.
    """
    source = os.environ if source is None else source
    env = {k: v for k, v in source.items() if k in ALLOWED_VARS or k.startswith("LC_")}
    env.update(extra or {})
    return env


def run_probe(python: Path, script: str, args: Sequence[str] = (), timeout: float = 120.0,
              env: Mapping[str, str] | None = None,
              record: proc.Recorder | None = None) -> ProbeResult:
    """Run ``python -I PROBES_DIR/script *args``; *env* adds to the allow-listed variables.
    *record* sees the command as run (the dossier's command list)."""
    path = _probe_path(script)
    command = [str(python), "-I", str(path), *args]
    result = proc.call(command, timeout=timeout, env=probe_env(env), record=record)
    err = result.stderr.encode()
    if result.timed_out:
        return ProbeResult(status="failed", data=_parse(result.stdout.encode())[0],
                           command=command, error=f"timed out after {timeout:g}s",
                           returncode=None, duration=result.duration, stderr_tail=_tail(err))
    if result.returncode == 127 and result.stderr.startswith("cannot run"):
        return ProbeResult(status="failed", data=None, duration=result.duration,
                           error=f"cannot run {python}: " + result.stderr.split(": ", 1)[-1],
                           command=command)
    assert result.returncode is not None
    return _result(command, result.returncode, result.stdout.encode(), err, result.duration)


def run_chain(python: Path, gpu_args: Sequence[str] | None, timeout: float,
              record: proc.Recorder | None = None, pycache: Path | None = None,
              collect_env: bool = True) -> tuple[ProbeResult, ProbeResult | None]:
    """The system probe and (unless *gpu_args* is None) the GPU probe in one process
    (``system_probe.py --then-gpu ARGS``): torch is imported once. Each part is judged as
    if it had run alone: a GPU check that hangs or crashes fails the GPU part only, since
    the system report was printed and flushed before it started. *pycache*: the
    interpreter's ``pycache_prefix`` (``-X``, which ``-I`` does not ignore). torch's
    ``collect_env`` runs beside the GPU checks; *collect_env* False: not at all (see
    :func:`run_collect_env`)."""
    command = [str(python), "-I", *(["-X", f"pycache_prefix={pycache}"] if pycache else []),
               str(_probe_path("system_probe.py"))]
    command += [] if collect_env else ["--no-collect-env"]
    if gpu_args is not None:
        command += ["--then-gpu", *gpu_args]
    result = proc.call(command, timeout=timeout, env=probe_env(), record=record)
    reports = {d.get("probe"): d for d in _objects(result.stdout)}
    parts = [("system", _with_collect_env(reports, result))]
    if gpu_args is not None:
        parts.append(("gpu", reports.get("gpu")))
    judged: list[ProbeResult] = []
    for _part, data in parts:
        if data is not None:
            judged.append(ProbeResult(status="passed", data=data, error=None,
                                      duration=result.duration, command=command,
                                      returncode=result.returncode,
                                      stderr_tail=_tail(result.stderr.encode())))
        elif result.ok:  # ran to the end, yet printed no report of this part
            judged.append(_result(command, 0, b"", result.stderr.encode(), result.duration))
        else:
            error = (f"timed out after {timeout:g}s" if result.timed_out
                     else _exit_error(result.returncode or 0, result.stderr.encode()))
            if result.returncode == 127 and result.stderr.startswith("cannot run"):
                error = f"cannot run {python}: " + result.stderr.split(": ", 1)[-1]
            judged.append(ProbeResult(status="failed", data=None, error=error,
                                      duration=result.duration, command=command,
                                      returncode=result.returncode,
                                      stderr_tail=_tail(result.stderr.encode())))
    return judged[0], (judged[1] if gpu_args is not None else None)


def run_collect_env(python: Path, timeout: float,
                    record: proc.Recorder | None = None) -> Foreign:
    """torch's ``collect_env`` report on its own (``system_probe.py --collect-env``), for the
    system facts' ``collect_env``: ``{"info": ..., "seconds": ...}`` or ``{"error": ...}``."""
    result = run_probe(python, "system_probe.py", ["--collect-env"], timeout=timeout,
                       record=record)
    if result.data is None or result.data.get("probe") != "collect_env":
        return {"error": result.error or "no report from system_probe.py --collect-env"}
    return {k: v for k, v in result.data.items() if k != "probe"}


def _with_collect_env(reports: Mapping[Any, Foreign],
                      result: proc.Result) -> Foreign | None:
    """The system report with its ``collect_env`` back in place: with ``--then-gpu`` it ran
    beside the GPU checks and came last, as a line of its own."""
    system = reports.get("system")
    if system is None or "pending" not in (system.get("collect_env") or {}):
        return system
    late = reports.get("collect_env")
    if late is not None:
        info = {k: v for k, v in late.items() if k != "probe"}
    else:
        info = {"error": f"not reported: the probe ended first ({proc.outcome(result)})"}
    return {**system, "collect_env": info}


def _objects(out: str) -> list[Foreign]:
    """Every stdout line that is a JSON object (the probes print one each)."""
    found = []
    for line in out.splitlines():
        try:
            data = parse_json(line, "a probe")
        except ValueError:
            continue
        if isinstance(data, dict):
            found.append(data)
    return found


def gpu_status(data: Mapping[str, Any] | None) -> tuple[Status, str | None]:
    """The GPU step's status and its first error, from ``gpu_probe.py``'s report."""
    if not data or data.get("probe") != "gpu":
        return "failed", "no report from the GPU probe"
    checks = data.get("checks")
    if not isinstance(checks, Mapping):
        return "failed", "the GPU probe report has no checks"
    for name in GPU_CHECKS:
        check = checks.get(name)
        if name in OPTIONAL_CHECKS and (check is None or (isinstance(check, Mapping)
                                                         and check.get("status") == "skipped")):
            continue
        if not isinstance(check, Mapping):
            return "failed", f"{name}: missing from the GPU probe report"
        if check.get("status") != "passed":
            why = check.get("error") or check.get("reason") or f"status {check.get('status')!r}"
            return "failed", f"{name}: {why}"
    return "passed", None


def _probe_path(script: str) -> Path:
    path = PROBES_DIR / script
    if path.parent != PROBES_DIR or not path.name.endswith("_probe.py") or not path.is_file():
        known = sorted(p.name for p in PROBES_DIR.glob("*_probe.py"))
        raise ValueError(f"unknown probe {script!r}; the probes are {', '.join(known)}")
    return path


def _result(command: list[str], returncode: int, out: bytes, err: bytes,
            duration: float) -> ProbeResult:
    data, parse_error = _parse(out)
    if returncode != 0:
        error: str | None = _exit_error(returncode, err)
    elif parse_error:
        last = _last_line(err)
        error = f"{parse_error} (stderr: {last})" if last else parse_error
    else:
        error = None
    return ProbeResult(status="failed" if error else "passed", data=data, error=error,
                       duration=duration, command=command, returncode=returncode,
                       stderr_tail=_tail(err))


def _parse(out: bytes) -> tuple[Foreign | None, str | None]:
    """The last non-empty stdout line as a JSON object (probes print exactly one)."""
    lines = [ln for ln in out.decode("utf-8", "replace").splitlines() if ln.strip()]
    if not lines:
        return None, "the probe printed nothing on stdout, expected one JSON object"
    try:
        data = parse_json(lines[-1], "the probe")
    except ValueError:
        return None, f"the probe printed no JSON object on stdout: {lines[-1][:120]!r}"
    if not isinstance(data, dict):
        return None, f"the probe printed JSON that is not an object: {lines[-1][:120]!r}"
    return data, None


def _exit_error(returncode: int, err: bytes) -> str:
    return proc.outcome(proc.Result(argv=(), returncode=returncode, stdout="",
                                    stderr=err.decode("utf-8", "replace")))


def _last_line(err: bytes) -> str:
    lines = [ln.strip() for ln in err.decode("utf-8", "replace").splitlines() if ln.strip()]
    return lines[-1][:300] if lines else ""


def _tail(err: bytes) -> str:
    return "\n".join(err.decode("utf-8", "replace").splitlines()[-_TAIL_LINES:])


def run_lines(python: Path, script: str, args: Sequence[str], timeout: float,
              record: proc.Recorder | None = None, pycache: Path | None = None
              ) -> tuple[list[Foreign], str | None, str]:
    """A probe that prints one JSON object per line as it goes (``gpu_probe.py
    --extensions``): every object it printed, why it ended early (None: it exited 0) and
    its stderr, so a hang or a crash keeps what came before it. It runs with
    ``-X faulthandler`` (``-I`` ignores ``PYTHONFAULTHANDLER``) and gets SIGABRT at the
    timeout, so its stderr then holds every thread's stack (:mod:`lockkit.probes.hang`).
    *pycache*: as :func:`run_chain`'s."""
    command = [str(python), "-I", "-X", "faulthandler",
               *(["-X", f"pycache_prefix={pycache}"] if pycache else []),
               str(_probe_path(script)), *args]
    result = proc.call(command, timeout=timeout, env=probe_env(), record=record,
                       stacks_on_timeout=True)
    if result.timed_out:
        error: str | None = f"timed out after {timeout:g}s"
    elif result.returncode == 127 and result.stderr.startswith("cannot run"):
        error = f"cannot run {python}: " + result.stderr.split(": ", 1)[-1]
    elif result.returncode != 0:
        error = _exit_error(result.returncode or 0, result.stderr.encode())
    else:
        error = None
    return _objects(result.stdout), error, result.stderr
