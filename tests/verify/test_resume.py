"""The training-resume check: each broken resume is caught and named.

The host-side verdict is tested on crafted output folders (no torch: the host never
imports it), one case per way a resume goes wrong; then the bundled example's real
train.py runs under `lockkit verify` with the real CPU torch, passing, and with one
piece left out of its restore, failing with that piece named. (The ``[verify.resume]``
table is read with the project: ``tests/config/test_resume.py``.)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from lockkit._internal import proc
from lockkit._internal.redact import NO_SECRETS
from lockkit.config.project import load_project
from lockkit.errors import ConfigError
from lockkit.platforms.definitions import load_platforms
from lockkit.report import markdown
from lockkit.report.model import Dossier
from lockkit.report.records import GitState, ResumeResult, StepResult
from lockkit.steps.context import Options, Run
from lockkit.steps.engine import Step, StepFailed, Steps, StepSkipped
from lockkit.verify.checks.resume.step import check_exit, resume_step
from lockkit.verify.checks.resume.verdict import RUNS, RunOutputError, compare, read_run
from lockkit.verify.run import PLAN
from tests.support.project import lockkit

N, M = 3, 3
BATCHES = [[4, 1], [0, 5], [2, 3]]  # one epoch of 3 batches, then the next in new order
NEXT = [[3, 0], [5, 2], [1, 4]]


def _losses(count: int) -> list[float]:
    return [1.0 / (i + 2) for i in range(count)]


def _state(after: int) -> dict[str, np.ndarray]:
    """Model and AdamW state after *after* steps (a fixed function of the step count)."""
    w = np.arange(6, dtype=np.float32).reshape(2, 3) / (after + 1)
    return {"model/proj.weight": w, "model/proj.bias": np.full(3, after, np.float32),
            "optimizer/proj.weight/step": np.array(float(after), np.float32),
            "optimizer/proj.weight/exp_avg": w * 0.1,
            "optimizer/proj.weight/exp_avg_sq": w * w * 0.01}


def _rng(after: int) -> dict[str, list[float]]:
    return {k: [round(0.1 * after + i / 7 + j, 6) for j in range(3)]
            for i, k in enumerate(("python", "numpy", "torch"))}


def _scheduler(after: int) -> dict:
    return {"last_epoch": after, "_last_lr": [0.001 * 0.8 ** (after // 2)], "gamma": 0.8}


def good_runs() -> dict[str, dict]:
    """What a correct resume writes: A = N+M steps; B = N; R = B's state, 0 steps; C."""
    losses = _losses(N + M)
    steps = [{"step": s + 1, "loss": losses[s], "lr": 0.001 * 0.8 ** (s // 2),
              "batch": (BATCHES + NEXT)[s]} for s in range(N + M)]

    def run(first: int, last: int, end: int) -> dict:
        return {"steps": [dict(s) for s in steps[first - 1:last]], "end": end,
                "scheduler": _scheduler(end), "rng": _rng(end), "arrays": _state(end)}
    return {"A": run(1, N + M, N + M), "B": run(1, N, N), "R": run(1, 0, N),
            "C": run(N + 1, N + M, N + M)}


def write(root: Path, runs: dict[str, dict]) -> Path:
    for name, run in runs.items():
        out = root / f"out-{name}"
        out.mkdir(parents=True)
        (out / "steps.json").write_text(json.dumps(run["steps"]))
        (out / "end.json").write_text(json.dumps({"step": run["end"], "rng": run["rng"],
                                                  "scheduler": run["scheduler"]}))
        np.savez(out / "state.npz", **run["arrays"])
    return root


def verdict(tmp_path: Path, runs: dict[str, dict], **tolerance: float):
    root = write(tmp_path, runs)
    return compare({k: read_run(k, root / f"out-{k}") for k in RUNS}, N, M, **tolerance)


def test_a_faithful_resume_passes(tmp_path):
    v = verdict(tmp_path, good_runs())
    assert v.passed and v.first_error is None and v.max_loss_diff == 0.0


def test_rng_not_restored_is_named_with_the_first_diverging_step(tmp_path):
    runs = good_runs()
    runs["R"]["rng"]["numpy"] = _rng(0)["numpy"]  # the resume re-seeded numpy
    runs["C"]["steps"][1]["loss"] += 0.01  # step 5: the noise differs
    runs["C"]["rng"]["numpy"] = [0.5, 0.25, 0.125]
    v = verdict(tmp_path, runs)
    assert v.step == 5
    assert v.first_error.startswith("step 5: numpy RNG not restored (draws ")
    assert "restored by R" in v.first_error and "saved by B" in v.first_error
    assert "loss at step 5" in v.first_error


def test_optimizer_state_dropped_is_named_by_slot_and_parameter(tmp_path):
    runs = good_runs()
    runs["R"]["arrays"]["optimizer/proj.weight/exp_avg"] = np.zeros((2, 3), np.float32)
    runs["C"]["steps"][1]["loss"] += 1e-3  # the first update after the resume differs
    v = verdict(tmp_path, runs)
    assert v.first_error.startswith(
        "step 5: optimizer state exp_avg of proj.weight not restored (max |diff| ")


def test_optimizer_state_missing_after_the_resume(tmp_path):
    runs = good_runs()
    del runs["R"]["arrays"]["optimizer/proj.weight/exp_avg_sq"]
    v = verdict(tmp_path, runs)
    assert v.first_error == (f"after step {N + M}: optimizer state exp_avg_sq of "
                             "proj.weight not restored (not in the state restored by R)")


def test_scheduler_not_restored_names_the_lr_at_the_first_step(tmp_path):
    runs = good_runs()
    runs["R"]["scheduler"] = _scheduler(0)
    for s in runs["C"]["steps"]:
        s["lr"] = 0.001
    v = verdict(tmp_path, runs)
    assert v.step == 4  # uninterrupted, step 4 used lr 0.001 * 0.8 ** 1
    assert v.first_error == ("step 4: scheduler not restored (last_epoch: 0 restored by R, "
                             "3 saved by B); lr at step 4: 0.001 in run C, 0.0008 in run A")


def test_scheduler_without_its_state_in_the_files_is_named_from_the_lr(tmp_path):
    runs = good_runs()
    for run in runs.values():
        run["scheduler"] = {}
    runs["C"]["steps"][0]["lr"] = 0.001
    v = verdict(tmp_path, runs)
    assert v.first_error == ("step 4: scheduler not restored; lr at step 4: 0.001 in run C, "
                             "0.0008 in run A")


def test_loader_restarted_from_batch_0(tmp_path):
    runs = good_runs()
    for s, batch in zip(runs["C"]["steps"], BATCHES, strict=True):
        s["batch"] = batch
    v = verdict(tmp_path, runs)
    assert v.first_error == ("step 4: data loader restarted from batch 0; run C consumed "
                             "step 1's batch [4, 1]")


def test_batch_order_differs_without_restarting(tmp_path):
    runs = good_runs()
    runs["C"]["steps"][2]["batch"] = [4, 2]
    v = verdict(tmp_path, runs)
    assert v.first_error == ("step 6: data loader state not restored; batch [4, 2] in run C,"
                             " [1, 4] in run A")


def test_step_counter_restarted(tmp_path):
    runs = good_runs()
    for i, s in enumerate(runs["C"]["steps"], 1):
        s["step"] = i
    v = verdict(tmp_path, runs)
    assert v.first_error == ("step counter not restored: run C's first step is 1, expected 4 "
                             "(it resumes after step 3)")


def test_run_b_differing_before_the_checkpoint_is_nondeterminism(tmp_path):
    runs = good_runs()
    runs["B"]["steps"][1]["loss"] += 1e-7
    v = verdict(tmp_path, runs)
    assert v.first_error.startswith("step 2: runs A and B differ before any checkpoint")
    assert "not deterministic" in v.first_error


def test_exact_by_default_and_a_declared_tolerance_passes(tmp_path):
    runs = good_runs()
    runs["C"]["steps"][2]["loss"] += 1e-7
    runs["C"]["arrays"]["model/proj.weight"] = runs["C"]["arrays"]["model/proj.weight"] + 1e-7
    assert verdict(tmp_path / "exact", runs).first_error.startswith("step 6: loss at step 6")
    assert verdict(tmp_path / "tolerant", runs, atol=1e-6, rtol=0.0).passed


def test_a_missing_output_file_is_one_line_naming_the_run(tmp_path):
    root = write(tmp_path, good_runs())
    (root / "out-C" / "end.json").unlink()
    with pytest.raises(RunOutputError, match=r"^run C wrote no end\.json in its output folder$"):
        read_run("C", root / "out-C")
    (root / "out-B" / "steps.json").write_text('[{"step": 1}]')
    with pytest.raises(RunOutputError, match=r"^run B: steps\.json: expected a list of"):
        read_run("B", root / "out-B")


def test_resume_result_round_trips_and_renders():
    result = ResumeResult(steps=5, resume_steps=5, passed=False, diverging_step=6,
                          first_error="step 6: numpy RNG not restored", max_loss_diff=0.01,
                          command=("{python}", "train.py"))
    dossier = Dossier(kind="verify", lockkit_version="0", started="now", result="failed",
                      steps=(StepResult(name="resume", status="failed"),),
                      checks={"resume": result}, code=GitState(git=False))
    again = Dossier.from_dict(json.loads(json.dumps(dossier.to_dict())))
    assert again.checks == {"resume": result} and again == dossier
    assert "## Training resume" in markdown.render(again, NO_SECRETS)
    assert "step 6: numpy RNG not restored" in markdown.render(again, NO_SECRETS)


# --- end to end: the example's real train.py with the real CPU torch ---------------------

def _verify(project: Path) -> tuple[int, dict]:
    reports = project / "report"
    run = lockkit("verify", "--project", str(project), "--platform", "linux-cpu",
                  "--report-dir", str(reports), network=False)
    return run.returncode, json.loads((reports / "dossier.json").read_text())


def test_the_example_resumes_exactly_and_a_dropped_optimizer_is_named(copy_of):
    project = copy_of()
    code, doc = _verify(project)
    steps = {s["name"]: s for s in doc["steps"]}
    assert code == 0 and steps["resume"]["status"] == "passed", doc["first_error"]
    resume = doc["checks"]["resume"]
    assert resume["passed"] and resume["max_loss_diff"] == 0.0
    assert [c["step"] for c in doc["commands"]].count("resume") == 5  # git + A, B, R, C
    assert steps["resume"]["detail"]["device"] == steps["application"]["detail"]["device"] \
        == "cpu"  # {device} on linux-cpu
    broken = copy_of()
    toml = broken / "lockkit.toml"
    toml.write_text(toml.read_text().replace(
        '"--resume", "{resume}", "--device", "{device}"]',
        '"--resume", "{resume}", "--device", "{device}", "--break", "optimizer"]'))
    code, doc = _verify(broken)
    assert code == 1 and doc["result"] == "failed"
    assert doc["first_error"].startswith(
        "resume: step 6: optimizer state exp_avg of bag.weight not restored (not in the "
        "state restored by R)"), doc["first_error"]
    assert {s["name"]: s["status"] for s in doc["steps"]}["application"] == "passed"



def test_a_run_that_fails_or_hangs_is_one_line_naming_the_run(tmp_path):
    """Real child processes: the run's own last error line, or its timeout and where it
    stalled (the stacks faulthandler printed at the SIGABRT)."""
    failed = proc.call([sys.executable, "-c", "import sys; print('loading', flush=True); "
                        "sys.exit('no data: data/train.jsonl')"], timeout=30)
    with pytest.raises(StepFailed) as err:
        check_exit("A", failed, 2, 2, tmp_path)
    assert str(err.value) == "run A (4 steps uninterrupted) exited 1: no data: data/train.jsonl"
    (tmp_path / "train.py").write_text("import time\n\n\ndef load():\n    time.sleep(60)\n"
                                       "\n\nload()\n")
    hung = proc.call([sys.executable, "train.py"], timeout=1, cwd=tmp_path,
                     env={**proc.isolated_env(), "PYTHONFAULTHANDLER": "1"},
                     stacks_on_timeout=True)
    with pytest.raises(StepFailed) as err:
        check_exit("C", hung, 2, 2, tmp_path)
    assert str(err.value).startswith("run C (restores B's checkpoint, steps 3..4) timed out "
                                     "after 1s: stalled in ")
    assert str(err.value).endswith("train.py:5 in load")


def test_a_project_that_never_trains_declares_none_and_the_step_says_so(tmp_path):
    def step_of(table: str | None) -> Step:
        (tmp_path / "lockkit.toml").write_text(table or "")
        opts = Options(project=load_project(tmp_path),
                       platform=load_platforms(None)["linux-cpu"])
        step = Step("resume")
        run = Run(opts=opts, work=tmp_path, steps=Steps(PLAN))
        run.expected = {"torch": "2.13.0"}  # a lock with torch: an undeclared check counts
        resume_step(run, step)
        return step

    with pytest.raises(StepSkipped) as waived:  # settled: the run can still pass
        step_of('[verify.resume]\nnone = "inference only: this service never trains"\n')
    assert str(waived.value) == "declared none: inference only: this service never trains"
    assert waived.value.waived
    with pytest.raises(StepSkipped, match=r"^no \[verify.resume\] in lockkit.toml"):
        step_of(None)
    (tmp_path / "lockkit.toml").write_text('[verify.resume]\nnone = ""\nsteps = 3\n')
    with pytest.raises(ConfigError) as err:
        load_project(tmp_path)
    assert "verify.resume.none: expected the reason" in str(err.value)
    assert "verify.resume.steps: not with none" in str(err.value)
