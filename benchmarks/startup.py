"""Start-up targets: `lockkit --version` and `compile --check`, against bare Python.

Paired with their baselines in this run (``_harness.measure_pairs``):
  - the venv's `lockkit --version` console script against `python -c pass` (same
    interpreter): a guard (``_harness.guard``), at most 10% worse than issue 35's 2.59x:
    argparse answers it, with the flags of no command built, and none of the flags' modules imported
    (tests/cli/test_budget.py);
  - `python -m lockkit --version` against `python -c pass` (runpy's imports on top): a
    guard, at most 10% worse than 2.64x;
  - `lockkit compile --check` of fresh locks (every shipped platform, a synthetic project
    compiled once against a loopback index) against `benchmarks/floor_check.py` (a guard,
    at most 10% worse than issue 35's 2.06x),
    which does the same check with the standard library only: every lock parsed and its
    packages digest taken, the inputs normalised (lockkit reads each lock once, without
    the PEP 751 validation its verdict does not rest on: tests/lock/test_freshness.py).
Under the console script's rows, their floors (``floors.py``): the same run's modules that
are not lockkit's, imported bare, against the same baseline.
"""

from __future__ import annotations

import sys
from pathlib import Path

import _harness as h
import floors
from _projects import synthetic_project

__all__ = ["measure"]

FLOOR = Path(__file__).with_name("floor_check.py")
# the ratios these rows had when they became guards (issue 35's closing run); their floors
# (the dependencies' imports alone) were 2.48x and 1.56x, INFO rows below them
VERSION, MODULE, CHECK = 2.59, 2.64, 2.06


def measure(opts: h.Options) -> list[h.Result]:
    with h.workdir("startup") as work:
        env = h.bench_env(work)
        python = [sys.executable, "-c", "pass"]
        version = [*h.lockkit_argv(console_script=True), "--version"]
        results = [_versus_python("lockkit --version (console script)", version, python, env,
                                  opts, limit=VERSION),
                   _floor_of_version(version, python, env, opts),
                   _versus_python("python -m lockkit --version",
                                  [*h.lockkit_argv(), "--version"], python, env, opts,
                                  limit=MODULE)]
        results += _check(work, env, opts)
    return results


def _floor_of_version(version: list[str], python: list[str], env: dict[str, str],
                      opts: h.Options) -> h.Result:
    modules = floors.modules_of(version, env)
    bare = floors.program(modules)
    return floors.row("lockkit --version (console script)", h.guard(VERSION),
                      lambda: h.run_timed(bare, env).seconds,
                      lambda: h.run_timed(python, env).seconds, "python -c pass",
                      len(modules), opts)


def _versus_python(name: str, argv: list[str], python: list[str], env: dict[str, str],
                   opts: h.Options, limit: float) -> h.Result:
    pairs = h.measure_pairs(lambda: h.run_timed(argv, env).seconds,
                            lambda: h.run_timed(python, env).seconds, opts, name)
    return h.Result(name=name, subject=h.median_s(pairs.subject),
                    baseline=f"{h.median_s(pairs.baseline)} python -c pass", value=pairs.ratio,
                    target=h.guard(limit), note=pairs.spread())


def _check(work: Path, env: dict[str, str], opts: h.Options) -> list[h.Result]:
    from lockkit.platforms.folders import shipped_dir

    with h.FastIndex(work / "index") as index:
        project = synthetic_project(work, index, 10)
        h.run([*h.lockkit_argv(), "compile", "--all", "--project", str(project)], env)
    # the console script, as users and CI run it (python -m adds runpy's imports)
    lockkit = [*h.lockkit_argv(console_script=True), "compile", "--check", "--project",
               str(project)]
    floor = [sys.executable, str(FLOOR), "--project", str(project),
             "--platforms", str(shipped_dir())]
    h.run(lockkit, env)
    h.run(floor, env)  # exit 0: the floor finds every lock fresh, as lockkit does
    pairs = h.measure_pairs(lambda: h.run_timed(lockkit, env).seconds,
                            lambda: h.run_timed(floor, env).seconds, opts, "compile --check")
    locks = len(list((project / "locks").glob("pylock.*.toml")))
    modules = floors.modules_of(lockkit, env)
    bare = floors.program(modules, script=floor[1:])  # then the same check, in-process
    target = h.guard(CHECK)
    return [h.Result(name="compile --check", subject=h.median_s(pairs.subject),
                     baseline=f"{h.median_s(pairs.baseline)} floor_check.py",
                     value=pairs.ratio, target=target,
                     note=f"{locks} fresh locks; {pairs.spread()}"),
            floors.row("compile --check", target, lambda: h.run_timed(bare, env).seconds,
                       lambda: h.run_timed(floor, env).seconds, "floor_check.py",
                       len(modules), opts, then="floor_check.py's check")]


def main() -> int:
    opts = h.cli(__doc__ or "")
    return h.finish("startup", measure(opts), opts)


if __name__ == "__main__":
    sys.exit(main())
