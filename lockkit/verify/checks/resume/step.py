"""The resume step: does a training resumed from its checkpoint continue as if it never
stopped? Versions are not enough for that: the compute state and the progress (model,
optimizer, scheduler, step counter, RNGs, data order) must be restored too.

The project's ``[verify.resume]`` command runs in a clean copy of its committed files
with the rebuilt venv's interpreter, four times, each a new process told by the
placeholders of the file contract (docs/howto/checks.md, "Checking a training resume"); nothing of
lockkit runs inside the venv:

    A: N+M steps from scratch        B: N steps from scratch, then its checkpoint
    R: restores B's checkpoint, 0 steps (what was restored)
    C: restores B's checkpoint, runs the M remaining steps

A and B are independent, so they run side by side, then R and C (each on its own copy
of B's checkpoint). ``lockkit.verify.checks.resume.verdict`` judges the four output folders.
"""

from __future__ import annotations

import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from lockkit._internal import proc
from lockkit.config.checks.resume import ResumeConfig
from lockkit.env.workspace import clean_copy, command_env
from lockkit.probes import hang
from lockkit.report.checks.resume import RESUME
from lockkit.report.records import ResumeResult
from lockkit.steps.context import Run
from lockkit.steps.engine import Step, StepFailed, StepSkipped
from lockkit.verify.checks.resume.verdict import RUNS, RunOutputError, compare, read_run

__all__ = ["check_exit", "resume_step"]


def resume_step(run: Run, step: Step) -> None:
    cfg = run.opts.project.verify.get("resume", ResumeConfig)  # validated at load
    if cfg is None and run.no_torch:
        raise StepSkipped(f"{run.no_torch}: no training to resume", waived=True)
    if cfg is None:
        raise StepSkipped("no [verify.resume] in lockkit.toml: resuming a training is "
                          "unchecked (declare one, or none = \"why\" if it never trains)")
    if cfg.none is not None:  # a waiver, as [verify] application = "none" is
        step.detail["declared"] = {"none": cfg.none}
        raise StepSkipped(f"declared none: {cfg.none}", waived=True)
    base = run.work / "resume"
    copy = base / "project"
    step.detail["copied_files"] = clean_copy(run, run.opts.project.root, copy, "resume")[0]
    step.detail["device"] = run.opts.device  # {device}: where the training runs
    home = base / "home"
    home.mkdir(parents=True)
    env = command_env(home)  # a run past its timeout prints every stack
    n, m = cfg.steps, cfg.resume_steps
    plan = {"A": (n + m, False), "B": (n, False), "R": (n, True), "C": (n + m, True)}
    for pair in (("A", "B"), ("R", "C")):
        if pair[0] == "R":
            for name in pair:  # each resume starts from its own copy of B's checkpoint
                shutil.copytree(base / "checkpoint-B", base / f"checkpoint-{name}")
        with ThreadPoolExecutor(max_workers=2) as pool:
            results = list(pool.map(lambda name: _one(run, cfg, copy, env, name,
                                                      *plan[name]), pair))
        for name, result in zip(pair, results, strict=True):
            check_exit(name, result, n, m, copy)
    try:
        runs = {name: read_run(name, base / f"out-{name}") for name in RUNS}
    except RunOutputError as exc:
        raise StepFailed(str(exc)) from None
    verdict = compare(runs, n, m, atol=cfg.atol, rtol=cfg.rtol)
    run.found.checks[RESUME.key] = ResumeResult(
        steps=n, resume_steps=m, passed=verdict.passed, first_error=verdict.first_error,
        diverging_step=verdict.step, max_loss_diff=verdict.max_loss_diff, atol=cfg.atol,
        rtol=cfg.rtol, reason=cfg.reason, command=cfg.command)
    step.detail.update(steps=n, resume_steps=m, max_loss_diff=verdict.max_loss_diff,
                       environment=sorted(env))
    if not verdict.passed:
        raise StepFailed(verdict.first_error or "the resumed training differs")


def _one(run: Run, cfg: ResumeConfig, copy: Path, env: dict[str, str], name: str,
         steps: int, resume: bool) -> proc.Result:
    """One run, in the clean copy, with its own output and checkpoint folders."""
    out, checkpoint = copy.parent / f"out-{name}", copy.parent / f"checkpoint-{name}"
    out.mkdir()
    checkpoint.mkdir(exist_ok=True)  # R's and C's already hold a copy of B's
    assert run.python is not None
    argv = cfg.argv(python=str(run.python), out=str(out), steps=steps,
                    checkpoint=str(checkpoint), resume=resume, device=run.opts.device)
    if run.pycache is not None:  # the shared venv's bytecode (rebuild.venv_step)
        env = {**env, "PYTHONPYCACHEPREFIX": str(run.pycache)}
    result = proc.call(argv, timeout=cfg.timeout, env=env, cwd=copy,
                       record=run.recorder("resume"), stacks_on_timeout=True)
    run.attachments[f"resume-{name}.log"] = (result.stdout + result.stderr)[-20000:]
    run.note_hang("resume", result, copy)
    return result


def check_exit(name: str, result: proc.Result, n: int, m: int, root: Path) -> None:
    """A run that failed or hung ends the step with one line naming the run; a hang also
    names its layer and the project's innermost frame (``lockkit.probes.hang``)."""
    role = {"A": f"{n + m} steps uninterrupted", "B": f"{n} steps, then its checkpoint",
            "R": "restores B's checkpoint, 0 steps",
            "C": f"restores B's checkpoint, steps {n + 1}..{n + m}"}[name]
    if result.timed_out:
        report = hang.explain(result.stderr, root)
        where = f": {report.summary}" if report else ""
        raise StepFailed(f"run {name} ({role}) {proc.outcome(result)}{where}")
    if not result.ok:
        raise StepFailed(f"run {name} ({role}) {proc.outcome(result)}")
