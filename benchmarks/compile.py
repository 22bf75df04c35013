"""Compile targets: `lockkit compile` against bare uv with lockkit's own argv, in one run.

A loopback index (``_harness.FastIndex``) serves a synthetic project: torch on every
shipped platform's PyTorch index (mirrored) and N tiny real wheels on the default index.
The baseline is ``lockkit.index.resolve.uv_command``'s argv and ``uv_environment``'s indexes,
the PyTorch index given directly where lockkit puts its routing index. Paired with
their baselines in this run:
  - a first compile (`lockkit compile --platform linux-cpu`, no lock yet) against bare
    `uv pip compile` at 10 packages (uv without an output file to prefer);
  - an unchanged recompile (the lock there, the inputs and the index unchanged) at 10
    packages and at 200; uv gets the current lock as its output file first (lockkit
    hands uv its lock as preferences too);
  - `lockkit compile --all` (unchanged) against the same uv calls, one per platform, run
    at once on all cores.
Each is a guard (issue 44, ``_harness.guard``): it fails only when it gets worse than the
ratio issue 35's closing run recorded by more than 10%: 2.22x, 2.29x, 1.31x, 1.13x.
Every lockkit run parses its arguments, reads the config and the inputs and starts uv;
an unchanged recompile only skips rebuilding a lock its memo says these inputs made.
Both sides share one uv cache (the benchmark's own), warmed before timing.
Under each one-platform row, its floor (``floors.py``): the lockkit run's modules that are
not lockkit's, imported bare, then the same bare uv call.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import _harness as h
import floors
from _projects import synthetic_project

from lockkit._internal.redact import NO_SECRETS

__all__ = ["measure"]

# the ratios issue 35's closing run recorded (their floors: 1.97x, 2.01x, 1.26x, none)
FIRST, AGAIN, AGAIN_LARGE, ALL = 2.22, 2.29, 1.31, 1.13


@dataclass(frozen=True)
class UvCall:
    argv: list[str]
    env: dict[str, str]
    lock: Path  # lockkit's lock: copied to the output before each run (preferences)
    output: Path
    first: bool = False  # a first compile: no output file, so nothing preferred

    def __call__(self) -> float:
        if self.first:
            self.output.unlink(missing_ok=True)
        else:
            shutil.copyfile(self.lock, self.output)
        return h.run_timed(self.argv, self.env).seconds


def uv_calls(project: Path, out: Path, env: dict[str, str]) -> dict[str, UvCall]:
    """The uv argv lockkit runs for each platform of *project* (lockkit.index.resolve)."""
    from lockkit._internal.uv import uv_bin
    from lockkit.config.project import load_project
    from lockkit.index.resolve import uv_command, uv_environment
    from lockkit.index.urls import Indexes
    from lockkit.platforms.definitions import load_platforms

    proj = load_project(project)
    calls = {}
    for name, plat in load_platforms(project).items():
        indexes = Indexes.for_platform(plat, proj.mirrors, proj.index_url, NO_SECRETS)
        output = out / f"pylock.{name}.toml"
        argv = uv_command(uv_bin(), [project / "requirements.in"], plat,
                          proj.python or plat.python, output)
        extra = {"MACOSX_DEPLOYMENT_TARGET": plat.macos_target} if plat.macos_target else {}
        extra |= uv_environment(indexes, indexes.torch_effective, out)
        calls[name] = UvCall(argv, {**env, **extra}, proj.lock_path(name), output)
    return calls


def concurrently(calls: list[UvCall]) -> float:
    """Wall time of every call, as many at once as there are cores."""
    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        list(pool.map(lambda call: call(), calls))
    return time.perf_counter() - start


def one_platform(packages: int, limit: float, opts: h.Options,
                 first: bool = False) -> list[h.Result]:
    kind = "first compile" if first else "unchanged recompile"
    with h.workdir(f"compile{packages}") as work, h.FastIndex(work / "index") as index:
        env = h.bench_env(work)
        project = synthetic_project(work, index, packages)
        argv = [*h.lockkit_argv(console_script=True), "compile", "--platform", "linux-cpu",
                "--project", str(project)]
        lock = project / "locks" / "pylock.linux-cpu.toml"
        h.run(argv, env)
        if first:
            lock.unlink()
        modules = floors.modules_of(argv, env)  # of the very run the row times
        (work / "out").mkdir()
        uv = dataclasses.replace(uv_calls(project, work / "out", env)["linux-cpu"],
                                 first=first)
        bare = dataclasses.replace(uv, argv=floors.program(modules, uv.argv))

        def lockkit() -> float:
            if first:
                lock.unlink()
            return h.run_timed(argv, env).seconds

        name = f"{kind} linux-cpu, {packages} packages"
        target = h.guard(limit)
        pairs = h.measure_pairs(lockkit, uv, opts, name)
        floor = floors.row(name, target, bare, uv, "bare uv pip compile", len(modules), opts,
                           then="the same uv call")
    return [h.Result(name=name, subject=h.median_s(pairs.subject),
                     baseline=f"{h.median_s(pairs.baseline)} bare uv pip compile",
                     value=pairs.ratio, target=target, note=pairs.spread()), floor]


def all_platforms(opts: h.Options) -> h.Result:
    with h.workdir("compile-all") as work, h.FastIndex(work / "index") as index:
        env = h.bench_env(work)
        project = synthetic_project(work, index, 10)
        lockkit = [*h.lockkit_argv(console_script=True), "compile", "--all",
                   "--project", str(project)]
        h.run(lockkit, env)
        (work / "out").mkdir()
        calls = list(uv_calls(project, work / "out", env).values())
        pairs = h.measure_pairs(lambda: h.run_timed(lockkit, env).seconds,
                                lambda: concurrently(calls), opts, "compile --all")
    cores = os.cpu_count() or 1
    return h.Result(name=f"compile --all ({len(calls)} platforms)",
                    subject=h.median_s(pairs.subject),
                    baseline=f"{h.median_s(pairs.baseline)} uv x{len(calls)}, {cores} at once",
                    value=pairs.ratio, target=h.guard(ALL),
                    note=pairs.spread())


def measure(opts: h.Options) -> list[h.Result]:
    large = 50 if opts.quick else 200
    return [*one_platform(10, FIRST, opts, first=True), *one_platform(10, AGAIN, opts),
            *one_platform(large, AGAIN_LARGE, opts), all_platforms(opts)]


def main() -> int:
    opts = h.cli(__doc__ or "")
    return h.finish("compile", measure(opts), opts)


if __name__ == "__main__":
    sys.exit(main())
