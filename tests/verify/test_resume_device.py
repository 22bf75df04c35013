"""The resume check on the platform's device (issue 26, item 6).

On a GPU, dropout draws from the device's own generator: a resume that restores only the
CPU generators continues with other numbers. The verdict names a device generator's
draws that were not restored (crafted folders), and the resume step runs the training
with ``{device}`` filled from the platform, so the example's ``rng.py`` (what train.py
saves and restores) is run for real on a fake CUDA torch whose device generator decides
the losses: restoring it passes, ``--break device-rng`` fails naming it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from lockkit.config.checks.embedding import EmbeddingConfig
from lockkit.config.checks.resume import ResumeConfig
from lockkit.config.project import load_project
from lockkit.platforms.definitions import load_platforms
from lockkit.steps.context import Options, Run
from lockkit.steps.engine import Step, StepFailed, Steps
from lockkit.verify.checks.resume.step import resume_step
from lockkit.verify.checks.resume.verdict import RunOutputError, read_run
from lockkit.verify.run import PLAN
from tests.verify.test_resume import N, good_runs, verdict, write

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "embeddings"


def test_a_device_generator_not_restored_is_named_with_the_first_diverging_step(tmp_path):
    runs = good_runs()
    for run in runs.values():  # every run on the GPU writes the device's draws too
        run["rng"]["cuda"] = [0.1 * run["end"], 0.2, 0.3]
    runs["R"]["rng"]["cuda"] = [0.9, 0.8, 0.7]  # the resume left the CUDA generator fresh
    runs["C"]["steps"][0]["loss"] += 6.8e-4  # other dropout masks from step N+1 on
    v = verdict(tmp_path, runs)
    assert v.step == N + 1
    assert v.first_error.startswith(f"step {N + 1}: cuda RNG not restored (draws [0.9, 0.8, "
                                    "0.7] restored by R, [0.3, 0.2, 0.3] saved by B); loss at "
                                    f"step {N + 1}: "), v.first_error


def test_device_draws_that_agree_pass_and_a_run_without_them_is_named(tmp_path):
    runs = good_runs()
    for run in runs.values():
        run["rng"]["xpu"] = [0.5, 0.25, 0.125]
    assert verdict(tmp_path / "same", runs).passed
    del runs["R"]["rng"]["xpu"]
    assert verdict(tmp_path / "missing", runs).first_error == (
        f"after step {2 * N}: xpu RNG draws only saved by B (every run on the device writes "
        "them)")


def test_device_draws_that_are_not_a_list_are_one_line_naming_the_entry(tmp_path):
    runs = good_runs()
    runs["A"]["rng"]["cuda"] = 0.5
    root = write(tmp_path, runs)
    with pytest.raises(RunOutputError, match=r"^run A: end\.json: rng\.cuda: expected a list "
                                             r"of draws \(of the cuda device's generator\), "
                                             r"got 0\.5$"):
        read_run("A", root / "out-A")


# --- the resume step on a fake CUDA build: {device} and the example's rng.py ---------------

# The file contract in a few lines, with train.py's generators module: each step's loss
# depends on a "dropout mask" drawn on the device and on one draw from each CPU generator.
TRAIN = '''\
import argparse, json, pickle, random
from pathlib import Path
import numpy as np
import torch
import rng

p = argparse.ArgumentParser()
for flag in ("--out", "--checkpoint", "--device", "--resume"):
    p.add_argument(flag, required=True)
p.add_argument("--steps", type=int, required=True)
p.add_argument("--break", dest="broken", default="", choices=("", *rng.BREAKS))
a = p.parse_args()
random.seed(1); np.random.seed(1); torch.manual_seed(1)
step, weight = 0, 1.0
ckpt = Path(a.checkpoint) / "checkpoint.pkl"
if a.resume == "1":
    state = pickle.loads(ckpt.read_bytes())
    step, weight = state["step"], state["weight"]
    rng.restore(state["rng"], a.device, a.broken)
log = []
while step < a.steps:
    step += 1
    mask = torch.rand(4, device=a.device).tolist()
    loss = (weight * sum(mask) / 4 + 1e-3 * random.random() + 1e-3 * np.random.random()
            + 1e-3 * torch.rand(1).item())
    weight -= 0.1 * loss
    log.append({"step": step, "loss": loss, "lr": 0.1, "batch": ["doc-%d" % (step % 3)]})
ckpt.write_bytes(pickle.dumps({"step": step, "weight": weight, "rng": rng.save(a.device)}))
out = Path(a.out)
(out / "steps.json").write_text(json.dumps(log))
(out / "end.json").write_text(json.dumps({"step": step, "scheduler": {},
                                          "rng": rng.draws(a.device)}))
np.savez(out / "state.npz", **{"model/weight": np.array(weight, np.float32)})
'''


@pytest.fixture
def cuda_python(fake_venv, numpy_wheel) -> Path:
    """A venv whose torch is a CUDA 12.6 build that sees one device (numpy real)."""
    return fake_venv(numpy_wheel, version="2.5.1+cu126", cuda="12.6", devices=1)


def resume_on(platform: str, python: Path, root: Path, broken: str = "") -> tuple[Run, Step]:
    """The resume step of *root* on *platform* with the venv's *python*; the step ends
    (passed, or StepFailed raised) before it returns."""
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    (root / "train.py").write_text(TRAIN)
    shutil.copy2(EXAMPLE / "rng.py", root / "rng.py")
    extra = f', "--break", "{broken}"' if broken else ""
    (root / "lockkit.toml").write_text(
        '[verify.resume]\ncommand = ["{python}", "train.py", "--out", "{out}", "--steps", '
        '"{steps}", "--checkpoint", "{checkpoint}", "--resume", "{resume}", "--device", '
        f'"{{device}}"{extra}]\nsteps = 3\nresume-steps = 3\ntimeout = 120\n')
    opts = Options(project=load_project(root), platform=load_platforms(None)[platform])
    run = Run(opts=opts, work=root.parent / f"work-{root.name}", steps=Steps(PLAN))
    run.python = python
    step = Step("resume")
    try:
        resume_step(run, step)
    finally:
        step.detail["argv"] = [c.argv for c in run.commands if c.argv[0] == str(python)]
    return run, step


def test_on_a_cuda_platform_the_training_runs_on_cuda0_and_restores_its_generator(
        cuda_python, tmp_path):
    run, step = resume_on("linux-cu126", cuda_python, tmp_path / "faithful")
    assert run.found.checks["resume"].passed
    assert step.detail["device"] == "cuda:0"
    argvs = step.detail["argv"]
    assert isinstance(argvs, list)
    assert len(argvs) == 4 and all(a[a.index("--device") + 1] == "cuda:0" for a in argvs)
    draws = json.loads((run.work / "resume" / "out-C" / "end.json").read_text())["rng"]
    assert set(draws) == {"python", "numpy", "torch", "cuda"}


def test_a_resume_that_restores_only_the_cpu_generators_is_named_on_the_gpu(cuda_python,
                                                                             tmp_path):
    with pytest.raises(StepFailed) as err:
        resume_on("linux-cu126", cuda_python, tmp_path / "broken", broken="device-rng")
    assert str(err.value).startswith("step 4: cuda RNG not restored (draws "), str(err.value)
    assert "restored by R" in str(err.value) and "loss at step 4:" in str(err.value)


def test_on_a_cpu_platform_the_device_is_cpu_and_there_is_no_device_generator(cuda_python,
                                                                               tmp_path):
    run, step = resume_on("linux-cpu", cuda_python, tmp_path / "cpu", broken="device-rng")
    assert run.found.checks["resume"].passed  # nothing left out
    assert step.detail["device"] == "cpu"
    draws = json.loads((run.work / "resume" / "out-A" / "end.json").read_text())["rng"]
    assert set(draws) == {"python", "numpy", "torch"}


def test_the_example_passes_the_device_to_both_of_its_commands():
    project = load_project(EXAMPLE)
    resume = project.verify.get("resume", ResumeConfig)
    embedding = project.verify.get("embedding", EmbeddingConfig)
    assert resume is not None and embedding is not None
    for argv in (resume.command, embedding.command):
        assert argv[argv.index("--device") + 1] == "{device}"
