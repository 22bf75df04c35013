"""Diagnose target: `lockkit diagnose` of a venv with the real CPU torch <= 1.5x the bare
torch start, `python -c "import torch"` with the same interpreter (issue 26, item 5).

Setup (untimed): the real CPU torch 2.13.0 and numpy fetched by this machine's pip (as
``verify.real_wheels`` does; skipped, saying why, where pip cannot), installed by uv into
a venv of the benchmark's own.
Timed, in pairs (``_harness.measure_pairs``): the venv's `lockkit diagnose --python VENV
--json` (the console script, as users run it) against `VENV/bin/python -c "import torch"`.
On a CPU host the baseline has no CUDA initialisation; on a GPU host diagnose's device
checks add theirs to the subject only, so the ratio there is an upper bound.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import _harness as h
from verify import real_wheels

__all__ = ["measure"]

NAME = "diagnose (real CPU torch)"
TARGET = h.Target(op="<=", limit=1.5)


def torch_venv(work: Path, env: dict[str, str]) -> Path:
    """A venv holding the wheels in ``work/dl``; returns its interpreter."""
    import uv

    venv = work / "venv"
    h.run([sys.executable, "-m", "venv", "--without-pip", venv])
    python = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    h.run([uv.find_uv_bin(), "pip", "install", "--quiet", "--no-index", "--no-config",
           "--python", python, *sorted((work / "dl").glob("*.whl"))], env)
    return python


def diagnose_passes(argv: list[str], env: dict[str, str]) -> None:
    """One untimed run that must pass: a failing diagnose would time the wrong work."""
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600,
                          check=False)
    if done.returncode != 0:
        first = json.loads(done.stdout).get("first_error") if done.stdout.strip() else None
        raise SystemExit(f"benchmark: lockkit diagnose exited {done.returncode}: "
                         f"{first or done.stderr.strip()[-500:]}")


def measure(opts: h.Options) -> list[h.Result]:
    baseline_name = 'python -c "import torch"'
    with h.workdir("diagnose") as work:
        why = real_wheels(work / "dl")
        if why:
            return [h.Result(name=NAME, subject="-", baseline=baseline_name, value=None,
                             target=TARGET, skipped=f"skipped: {why}")]
        env = h.bench_env(work)
        python = torch_venv(work, env)
        subject = [*h.lockkit_argv(console_script=True), "diagnose", "--python", str(python),
                   "--json"]
        diagnose_passes(subject, env)
        pairs = h.measure_pairs(lambda: h.run_timed(subject, env).seconds,
                                lambda: h.run_timed([python, "-c", "import torch"],
                                                    env).seconds, opts, NAME)
    return [h.Result(name=NAME, subject=h.median_s(pairs.subject),
                     baseline=f"{h.median_s(pairs.baseline)} {baseline_name}",
                     value=pairs.ratio, target=TARGET, note=pairs.spread())]


def main() -> int:
    opts = h.cli(__doc__ or "")
    return h.finish("diagnose", measure(opts), opts)


if __name__ == "__main__":
    sys.exit(main())
