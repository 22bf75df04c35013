"""Verify target: `lockkit verify` of the bundled example <= 1.3x its floor, same run.

The floor (issue 44) is the work verify cannot skip, done by hand with the same tools, in
the same run, in ABBA pairs with lockkit: `uv venv` with the same interpreter, an offline
install of the same wheelhouse (`uv pip install --offline --no-index --no-deps`, every
wheel of the folder, through the same uv cache), `uv pip check`, and the application
check's own command (`python embed.py --out DIR --device cpu`, from the example's folder)
run directly. It replaces the 10.2 s issue 16 recorded.

Setup (untimed): the example copied to a temp folder; the real CPU torch 2.13.0 and its
dependencies fetched by this machine's pip (as tests/conftest.py ``real_torch_wheels``
does; skipped, saying why, where pip cannot); torch served as the PyTorch CPU index's
mirror, the rest as the default index (``_harness.FastIndex``); `lockkit compile` and
`lockkit wheelhouse build` for linux-cpu.
Timed, after one warm-up pair (the first run pays uv's cache and the bytecode; shown):

- judged against the floor: `lockkit verify --platform linux-cpu` of a copy of the
  example whose config runs the floor's work and lockkit's own checks around it (host,
  venv, install, pip-check, inventory, system, gpu, application): [verify.extensions] is
  dropped and [verify.resume] waived, as those are work the floor does not do;
- shown, not judged: every step the example configures today (its extensions' smoke calls
  and the four training runs of the resume check come on top), against the same floor.
"""

from __future__ import annotations

import functools
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import _harness as h

__all__ = ["measure"]

EXAMPLE = h.ROOT / "examples" / "embeddings"
TORCH = "torch==2.13.0+cpu"
NAME = "verify of the example"
TARGET = h.Target(op="<=", limit=1.3)


def real_wheels(dest: Path) -> str | None:
    """torch and its dependencies into *dest*; None, or why they could not be had. This
    pip call keeps the machine's pip configuration on purpose: that is how this machine
    supplies torch without the network (tests/conftest.py real_torch_wheels)."""
    if sys.version_info[:2] != (3, 11):
        return f"the real {TORCH} wheel is built for Python 3.11, this is {sys.version[:4]}"
    done = subprocess.run([sys.executable, "-m", "pip", "download", "--quiet",
                           "--only-binary", ":all:", "-d", str(dest), TORCH, "numpy>=1.26"],
                          capture_output=True, text=True, timeout=900, check=False)
    if done.returncode != 0:
        return f"pip could not fetch {TORCH}: " + \
            (done.stderr.strip().splitlines() or ["no output"])[-1]
    return None


def as_the_floor(project: Path, dest: Path) -> Path:
    """A copy of *project* whose verify does the floor's work and its own checks around it:
    [verify.extensions] and [verify.resume] (the last tables of the example's config) give
    way to a resume waiver."""
    shutil.copytree(project, dest)
    config = dest / "lockkit.toml"
    text = config.read_text(encoding="utf-8")
    cut = text.index("[verify.extensions]")
    config.write_text(text[:cut] + '[verify.resume]\nnone = "timed against the floor: '
                      'install, pip check and the application check"\n', encoding="utf-8")
    return dest


def setup(work: Path, index: h.FastIndex, env: dict[str, str]) -> Path:
    """The example's copy with a linux-cpu lock and wheelhouse, all from *index*."""
    from lockkit.platforms.definitions import load_platforms

    project = work / "project"
    shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns(
        "locks", "wheelhouse", ".lockkit", "__pycache__"))
    official = (load_platforms(project)["linux-cpu"].torch_index or "").rsplit("/", 1)[0]
    for wheel in sorted((work / "dl").glob("*.whl")):
        index.add("/whl/cpu" if wheel.name.startswith("torch-") else "/simple", wheel)
    where = ["--project", str(project), "--platform", "linux-cpu", "--index-url",
             f"{index.url}/simple", "--mirror", f"{official}={index.url}/whl"]
    h.run([*h.lockkit_argv(), "compile", *where], env)
    h.run([*h.lockkit_argv(), "wheelhouse", "build", *where, "--no-tools"], env)
    return project


def verify_once(project: Path, reports: Path, env: dict[str, str]) -> float:
    argv = [*h.lockkit_argv(console_script=True), "verify", "--project", str(project),
            "--platform", "linux-cpu", "--report-dir", str(reports)]
    seconds = h.run_timed(argv, env, ok=(0, 1)).seconds
    doc = json.loads((reports / "dossier.json").read_text())
    failed = [s["name"] for s in doc["steps"] if s["status"] not in ("passed", "skipped")]
    if failed:
        raise SystemExit(f"benchmark: lockkit verify: step(s) {', '.join(failed)} did not "
                         f"pass: {doc.get('first_error')}")
    shutil.rmtree(reports)
    return seconds


def floor_once(project: Path, work: Path, env: dict[str, str]) -> float:
    """The floor, timed whole: a fresh uv venv, the wheelhouse installed offline, uv's
    pip check, the application's command run directly (its output folder new each time)."""
    from lockkit._internal.uv import uv_bin  # the uv lockkit runs, for both sides

    uv, venv, out = uv_bin(), work / "floor-venv", work / "floor-out"
    python = venv / "bin" / "python"
    wheels = sorted((project / "wheelhouse" / "linux-cpu").glob("*.whl"))
    start = time.perf_counter()
    h.run([uv, "venv", "--no-config", "--quiet", "--python", sys.executable, venv], env)
    h.run([uv, "pip", "install", "--no-config", "--offline", "--no-index", "--no-deps",
           "--quiet", "--python", python, *wheels], env)
    h.run([uv, "pip", "check", "--no-config", "--python", python], env)
    h.run([python, "embed.py", "--out", out, "--device", "cpu"], env, cwd=project)
    seconds = time.perf_counter() - start
    shutil.rmtree(venv)
    shutil.rmtree(out)
    return seconds


def measure(opts: h.Options) -> list[h.Result]:
    with h.workdir("verify") as work:
        why = real_wheels(work / "dl")
        if why:
            return [h.Result(name=NAME, subject="-", baseline="-", value=None,
                             target=TARGET, skipped=f"skipped: {why}")]
        env = h.bench_env(work)
        with h.FastIndex(work / "index") as index:
            project = setup(work, index, env)
        same = as_the_floor(project, work / "project-floor")
        results = []
        for name, folder, info in ((NAME, same, False),
                                   (f"{NAME}, with extensions and resume", project, True)):
            pairs = h.measure_pairs(functools.partial(verify_once, folder, work / "reports", env),
                                    functools.partial(floor_once, project, work, env), opts, name)
            results.append(h.Result(
                name=name, subject=h.median_s(pairs.subject),
                baseline=h.median_s(pairs.baseline) + " floor (uv venv, offline install, "
                "uv pip check, embed.py)", value=pairs.ratio, target=TARGET, info=info,
                note=("" if not info else "not judged: the extensions' smoke calls and "
                      "the resume check's four training runs are work the floor does not "
                      "do; ") + pairs.spread()))
    return results


def main() -> int:
    opts = h.cli(__doc__ or "")
    return h.finish("verify", measure(opts), opts)


if __name__ == "__main__":
    sys.exit(main())
