"""The resume check's verdict: an uninterrupted training against a resumed one.

``verify`` runs the project's training command four times in the clean copy (see
``lockkit.verify.checks.resume.step`` and docs/howto/checks.md, "Checking a training resume"):

- **A** runs N+M steps uninterrupted;
- **B** runs N steps, writes its checkpoint and exits;
- **R** is a new process that restores B's checkpoint and runs 0 steps: its end files
  are what the resume *restored*, compared exactly with what B *saved*;
- **C** is a new process that restores B's checkpoint and runs the M remaining steps.

Each run writes ``steps.json`` (per step: loss, lr, batch ids), ``end.json`` (step
counter, scheduler state, RNG draws taken at its end: python's, numpy's and torch's CPU
generator, and on a GPU the device's own, e.g. ``cuda``, which dropout there draws from)
and ``state.npz`` (model and optimizer tensors). Only numpy and json are needed here: the
host never imports torch.

The comparisons follow the projects that test their own resume:
- torchtitan's checkpoint-resume loss comparison (``scripts/loss_compare.py
  --assert-equal``, pytorch/torchtitan#2954): per-step losses of the resumed run are
  bit-identical to the uninterrupted run's, step by step;
- Accelerate's ``tests/test_state_checkpointing.py`` (``test_can_resume_training``):
  random draws after ``load_state`` equal the uninterrupted run's
  (``assert ground_truth_rands == test_rands``), and the optimizer state is equal;
- Lightning's ``test_restart_parity``: a restarted fit matches an uninterrupted one;
- NVIDIA-NeMo/Automodel#3562: the restored state (optimizer, scheduler, RNG, model) is
  checked exactly *before* the first resumed update, which is what run R is for: it
  names the state that was not restored instead of its echo at the end.
"""

from __future__ import annotations

import json
import math
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from lockkit._internal.parse import parse_json

__all__ = ["RUNS", "ResumeVerdict", "RunOutput", "RunOutputError", "compare", "read_run"]

RUNS = ("A", "B", "R", "C")
RNGS = ("python", "numpy", "torch")  # required; any other entry is a device's generator


class RunOutputError(ValueError):
    """A run's output folder that does not follow the file contract (the message says how)."""


@dataclass(frozen=True, kw_only=True)
class RunOutput:
    """What one run wrote: its steps in order, its end facts and its state tensors."""

    name: str
    steps: tuple[Mapping[str, Any], ...]
    end_step: int
    scheduler: Mapping[str, Any]
    rng: Mapping[str, tuple[float, ...]]
    arrays: Mapping[str, np.ndarray] = field(default_factory=dict)

    def step(self, number: int) -> Mapping[str, Any] | None:
        return next((s for s in self.steps if s["step"] == number), None)


def read_run(name: str, out: Path) -> RunOutput:
    """Read one run's folder; a missing or malformed file raises one line naming it."""
    steps = _json(name, out / "steps.json")
    end = _json(name, out / "end.json")
    if not isinstance(steps, list) or not all(_is_step(s) for s in steps):
        raise RunOutputError(f"run {name}: steps.json: expected a list of "
                             '{"step": int, "loss": number, "lr": number, "batch": [ids]}')
    if not isinstance(end, dict) or not _is_int(end.get("step")):
        raise RunOutputError(f'run {name}: end.json: expected {{"step": int, ...}}')
    rng = end.get("rng")
    if not isinstance(rng, dict) or not all(isinstance(rng.get(k), list) for k in RNGS):
        raise RunOutputError(f"run {name}: end.json: rng: expected lists of draws for "
                             f"{', '.join(RNGS)}")
    other = next((k for k, v in rng.items() if not isinstance(v, list)), None)
    if other is not None:
        raise RunOutputError(f"run {name}: end.json: rng.{other}: expected a list of draws "
                             f"(of the {other} device's generator), got {rng[other]!r}")
    scheduler = end.get("scheduler", {})
    if not isinstance(scheduler, dict):
        raise RunOutputError(f"run {name}: end.json: scheduler: expected an object")
    return RunOutput(name=name, steps=tuple(steps), end_step=end["step"], scheduler=scheduler,
                     rng={k: tuple(v) for k, v in rng.items()}, arrays=_arrays(name, out))


def _json(name: str, path: Path) -> Any:
    if not path.is_file():
        raise RunOutputError(f"run {name} wrote no {path.name} in its output folder")
    try:
        return parse_json(path.read_text(encoding="utf-8"), path)
    except (ValueError, UnicodeDecodeError) as exc:
        raise RunOutputError(f"run {name}: {path.name}: not JSON ({exc})") from None


def _arrays(name: str, out: Path) -> dict[str, np.ndarray]:
    path = out / "state.npz"
    if not path.is_file():
        raise RunOutputError(f"run {name} wrote no state.npz in its output folder")
    try:
        with np.load(path, allow_pickle=False) as archive:
            return {key: archive[key] for key in archive.files}
    except (ValueError, OSError, zipfile.BadZipFile) as exc:
        raise RunOutputError(f"run {name}: state.npz: not a numpy archive ({exc})") from None


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_step(s: Any) -> bool:
    return (isinstance(s, dict) and _is_int(s.get("step")) and isinstance(s.get("batch"), list)
            and all(isinstance(s.get(k), (int, float)) for k in ("loss", "lr")))


@dataclass(frozen=True, kw_only=True)
class ResumeVerdict:
    """The ordered findings; the first is the error. ``step`` is the first diverging step."""

    problems: tuple[str, ...]
    step: int | None = None
    compared_steps: int = 0
    max_loss_diff: float | None = None

    @property
    def passed(self) -> bool:
        return not self.problems

    @property
    def first_error(self) -> str | None:
        return self.problems[0] if self.problems else None


def compare(runs: Mapping[str, RunOutput], n: int, m: int, *, atol: float = 0.0,
            rtol: float = 0.0) -> ResumeVerdict:
    """A against B+C, with R naming what the resume failed to restore."""
    a, b, r, c = (runs[k] for k in RUNS)
    counter = _counters(a, b, r, c, n, m)
    if counter:
        return ResumeVerdict(problems=(counter,))
    early = _first_step_diff(a, b, range(1, n + 1), 0.0, 0.0)
    if early:
        step, what, _ = early
        return ResumeVerdict(problems=(f"step {step}: runs A and B differ before any "
                                       f"checkpoint ({what}): the training is not "
                                       "deterministic, so its resume cannot be judged",),
                             step=step)
    restored = _state_diff(b, r, 0.0, 0.0, "saved by B", "restored by R", restore=True)
    late = _first_step_diff(a, c, range(n + 1, n + m + 1), atol, rtol, first=a.step(1))
    final = _state_diff(a, c, atol, rtol, "uninterrupted", "resumed", restore=False)
    problems = []
    if late:
        step, symptom, guess = late
        cause = restored or guess
        problems.append(f"step {step}: {cause}; {symptom}" if cause else f"step {step}: {symptom}")
    elif restored or final:
        problems.append(f"after step {n + m}: {restored or final}")
    losses = [abs(a.step(s)["loss"] - c.step(s)["loss"])  # type: ignore[index]
              for s in range(n + 1, n + m + 1)]
    return ResumeVerdict(problems=tuple(problems), step=late[0] if late else None,
                         compared_steps=m, max_loss_diff=max(losses) if losses else None)


def _counters(a: RunOutput, b: RunOutput, r: RunOutput, c: RunOutput, n: int,
              m: int) -> str | None:
    """The step counters: each run ends where it was told; C continues from N+1."""
    for run, first, last in ((a, 1, n + m), (b, 1, n), (c, n + 1, n + m)):
        numbers = [s["step"] for s in run.steps]
        if numbers != list(range(first, last + 1)):
            if run is c and numbers and numbers[0] == 1:
                return (f"step counter not restored: run C's first step is 1, expected "
                        f"{n + 1} (it resumes after step {n})")
            return (f"run {run.name} logged steps {_span(numbers)}, expected "
                    f"{first}..{last}")
    for run, end in ((a, n + m), (b, n), (r, n), (c, n + m)):
        if run.end_step != end:
            return (f"step counter not restored: run {run.name} ended at step "
                    f"{run.end_step}, expected {end}")
    return None


def _span(numbers: list[int]) -> str:
    return f"{numbers[0]}..{numbers[-1]}" if numbers else "none"


def _first_step_diff(x: RunOutput, y: RunOutput, steps: range, atol: float, rtol: float,
                     first: Mapping[str, Any] | None = None
                     ) -> tuple[int, str, str | None] | None:
    """The first step whose batch, lr or loss differs (batches and lr exactly), as
    (step, what differs, the likely cause when the symptom itself names one)."""
    for number in steps:
        sx, sy = x.step(number), y.step(number)
        assert sx is not None and sy is not None  # the counters were checked first
        if sx["batch"] != sy["batch"]:
            if first is not None and sy["batch"] == first["batch"]:
                return number, (f"run {y.name} consumed step 1's batch "
                                f"{_ids(sy['batch'])}"), "data loader restarted from batch 0"
            return number, (f"batch {_ids(sy['batch'])} in run {y.name}, "
                            f"{_ids(sx['batch'])} in run {x.name}"), \
                "data loader state not restored"
        if sx["lr"] != sy["lr"]:
            return number, (f"lr at step {number}: {sy['lr']:g} in run {y.name}, "
                            f"{sx['lr']:g} in run {x.name}"), "scheduler not restored"
        if not _close(sx["loss"], sy["loss"], atol, rtol):
            return number, (f"loss at step {number}: {sy['loss']!r} in run {y.name}, "
                            f"{sx['loss']!r} in run {x.name} (diff "
                            f"{abs(sy['loss'] - sx['loss']):.3g})"), None
    return None


def _ids(batch: list[Any]) -> str:
    text = json.dumps(batch)
    return text if len(text) <= 60 else text[:57] + "..."


def _close(x: float, y: float, atol: float, rtol: float) -> bool:
    return x == y or (math.isfinite(x) and abs(x - y) <= atol + rtol * abs(x))


def _state_diff(x: RunOutput, y: RunOutput, atol: float, rtol: float, x_is: str, y_is: str,
                *, restore: bool) -> str | None:
    """The first state of *y* that differs from *x*'s: model, optimizer, scheduler, RNG."""
    for key in sorted(x.arrays, key=_state_order):
        what = _state_name(key)
        if key not in y.arrays:
            return (f"{what} not restored (not in the state {y_is})" if restore else
                    f"{what} missing after the resume")
        ax, ay = x.arrays[key], y.arrays[key]
        if ax.shape != ay.shape:
            return f"{what} differs in shape: {list(ay.shape)} {y_is}, {list(ax.shape)} {x_is}"
        if not _arrays_close(ax, ay, atol, rtol):
            diff = _max_diff(ax, ay)
            verb = "not restored" if restore else "differs"
            return f"{what} {verb} (max |diff| {diff:.3g}, {y_is} vs {x_is})"
    extra = sorted(set(y.arrays) - set(x.arrays), key=_state_order)
    if extra:
        return f"{_state_name(extra[0])} appears only {y_is}"
    if dict(x.scheduler) != dict(y.scheduler):
        key = next(k for k in sorted(set(x.scheduler) | set(y.scheduler),
                                     key=lambda k: (k.strip("_") != "last_epoch", k))
                   if x.scheduler.get(k) != y.scheduler.get(k))
        return (f"scheduler not restored ({key}: {y.scheduler.get(key)!r} {y_is}, "
                f"{x.scheduler.get(key)!r} {x_is})")
    devices = sorted((set(x.rng) | set(y.rng)) - set(RNGS))
    for rng in (*RNGS, *devices):
        if rng not in y.rng or rng not in x.rng:
            return (f"{rng} RNG draws only {x_is if rng in x.rng else y_is} (every run on "
                    "the device writes them)")
        if x.rng[rng] != y.rng[rng]:
            return (f"{rng} RNG not restored (draws {_draws(y.rng[rng])} {y_is}, "
                    f"{_draws(x.rng[rng])} {x_is})")
    return None


def _draws(values: tuple[float, ...]) -> str:
    return "[" + ", ".join(f"{v:.6g}" for v in values[:3]) + "]"


def _state_order(key: str) -> tuple[int, str]:
    return (0 if key.startswith("model/") else 1 if key.startswith("optimizer/") else 2, key)


def _state_name(key: str) -> str:
    """``optimizer/proj.weight/exp_avg`` -> ``optimizer state exp_avg of proj.weight``."""
    parts = key.split("/")
    if parts[0] == "optimizer" and len(parts) == 3:
        return f"optimizer state {parts[2]} of {parts[1]}"
    if parts[0] == "model" and len(parts) == 2:
        return f"model parameter {parts[1]}"
    return f"state {key}"


def _arrays_close(x: np.ndarray, y: np.ndarray, atol: float, rtol: float) -> bool:
    if x.dtype.kind not in "fc" or (atol == 0 and rtol == 0):
        return bool(np.array_equal(x, y, equal_nan=x.dtype.kind in "fc"))
    return bool(np.allclose(y, x, atol=atol, rtol=rtol, equal_nan=True))


def _max_diff(x: np.ndarray, y: np.ndarray) -> float:
    if x.size == 0:
        return 0.0
    return float(np.max(np.abs(x.astype(np.float64) - y.astype(np.float64))))
