"""Wheelhouse targets: cold builds against curl, a warm rebuild against `cp -al`, in one run.

A loopback index (``_harness.FastIndex``: sendfile, backlog 128) serves wheels of random
content, locked for linux-cpu. Paired, each `lockkit wheelhouse build` the whole command
(interpreter start to exit, the lock read, the files fetched and checked, the folder
written):
  - cold, one wheel of 202 MB (16 MB with --quick), as large as torch's CPU wheel: the
    build with an empty cache into a new folder, against `curl -Z` fetching the same URL
    into a new folder: lockkit's throughput >= 0.8x curl's (issue 35; curl hashes nothing,
    lockkit checks the sha256 and writes the wheelhouse's metadata);
  - cold, eight wheels of about 500 MB in all (40 MB with --quick), against
    `curl -Z --parallel-max 8` on the same URLs: >= 0.67x (issue 16);
  - warm, nothing new: the build again into the folder it built, the cache full (the
    rebuild a user runs), against `cp -al` of a built wheelhouse folder and
    `python -c pass`: <= 3x (issue 35). Into the same folder, as a user rebuilds: it is
    found up to date by the identities of its files (lockkit.wheelhouse.current; the
    subject's line is checked to say so), and nothing is rebuilt. A new folder removed
    after each pair would unlink every blob's other name, which moves its ctime, and the
    cache would rightly hash each blob again (lockkit.cache.identity).
The server's own CPU time while curl runs is printed: far below one core, it is not what
limits curl. Under the one-wheel and the warm rows, their floors (``floors.py``): the
lockkit run's modules that are not lockkit's, imported bare, then the same curl (cold) or
nothing (warm), against the row's baseline.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from statistics import median

import _harness as h
import floors
from _projects import wheel_project

__all__ = ["measure"]

MB = h.MB
SIZES_MB = (150, 100, 80, 60, 50, 30, 20, 10)  # 500 MB, the largest as big as torch's CPU wheel
TORCH_SIZE = 202_000_000  # bytes: torch's CPU wheel (issue 35's row)


class ServerLoad:
    """This process's CPU seconds (the server's threads) over the wall time of curl's runs."""

    def __init__(self) -> None:
        self.cpu = self.wall = 0.0

    def wrap(self, timed: Callable[[Path], float]) -> Callable[[Path], float]:
        def call(folder: Path) -> float:
            cpu = time.process_time()
            seconds = timed(folder)
            self.cpu += time.process_time() - cpu
            self.wall += seconds
            return seconds
        return call

    def __str__(self) -> str:
        return f"loopback server busy {100 * self.cpu / max(self.wall, 1e-9):.0f}% of one core " \
               "while curl ran"


def measure(opts: h.Options) -> list[h.Result]:
    scale = 12.5 if opts.quick else 1.0
    sizes = [int(s * MB / scale) for s in SIZES_MB]
    with h.workdir("wheelhouse") as work, h.FastIndex(work / "index") as index:
        env = h.bench_env(work)
        one = cold(*built(work / "one", index, [int(TORCH_SIZE / scale)], env, "bench-torch"),
                   env, opts, target=h.Target(op=">=", limit=0.8), label="torch-sized wheel",
                   floor=True)
        build, urls = built(work / "eight", index, sizes, env)
        return [*one, *cold(build, urls, env, opts, target=h.Target(op=">=", limit=0.67)),
                *warm(work / "eight", build, env, opts)]


def built(work: Path, index: h.FastIndex, sizes: list[int], env: dict[str, str],
          prefix: str = "bench-big") -> tuple[list[str], list[str]]:
    """A compiled project of one wheel per size: the build's argv, and the files' URLs."""
    work.mkdir()
    project, urls = wheel_project(work, index, sizes, env, prefix)
    # --no-tools: the loopback index serves the lock's files only (tools/ is lockkit's
    # own dependencies from the default index, not part of the lock's throughput)
    build = [*h.lockkit_argv(console_script=True), "wheelhouse", "build", "--project",
             str(project), "--platform", "linux-cpu", "--no-tools"]
    return build, urls


def cold(build: list[str], urls: list[str], env: dict[str, str], opts: h.Options, *,
         target: h.Target, label: str = "", floor: bool = False) -> list[h.Result]:
    work = Path(build[build.index("--project") + 1]).parent
    curl = ["curl", "--silent", "--show-error", "--fail", "--parallel", "--parallel-max", "8"]
    for url in urls:
        curl += ["-o", url.rsplit("/", 1)[1], url]
    load = ServerLoad()
    pairs = h.measure_pairs(
        h.fresh(work, lambda d: h.run_timed([*build, "--cache-dir", d / "cache", "--out",
                                           d / "out"], env).seconds),
        h.fresh(work, load.wrap(lambda d: h.run_timed(curl, env, cwd=d).seconds)),
        opts, f"cold wheelhouse, {len(urls)} files")
    total = sum((work / "wheels" / url.rsplit("/", 1)[1]).stat().st_size for url in urls)
    lk, base = total / 1e6 / median(pairs.subject), total / 1e6 / median(pairs.baseline)
    what = f"1 {label}" if len(urls) == 1 else f"{len(urls)} files"
    name = f"cold wheelhouse ({what}, {total / 1e6:.0f} MB)"
    results = [h.Result(name=name, subject=f"{lk:.0f} MB/s ({h.median_s(pairs.subject)})",
                        baseline=f"{base:.0f} MB/s curl -Z ({h.median_s(pairs.baseline)})",
                        value=1 / pairs.ratio, target=target,
                        note=f"{pairs.spread()} (time ratios); {load}")]
    if floor:
        imports = Path(tempfile.mkdtemp(dir=work))  # a cold run of its own, as the row's
        modules = floors.modules_of([*build, "--cache-dir", imports / "cache", "--out",
                                     imports / "out"], env)
        shutil.rmtree(imports)
        bare = floors.program(modules, curl)
        results.append(floors.row(
            name, target, h.fresh(work, lambda d: h.run_timed(bare, env, cwd=d).seconds),
            h.fresh(work, lambda d: h.run_timed(curl, env, cwd=d).seconds), "curl -Z",
            len(modules), opts, then="the same curl"))
    return results


def warm(work: Path, build: list[str], env: dict[str, str], opts: h.Options) -> list[h.Result]:
    cache, done, ref = work / "cache", work / "built", work / "reference"
    h.run([*build, "--cache-dir", cache, "--out", done], env)
    # the baseline links a copy: links to the built folder's files are links to the cache's
    # blobs, and removing them would move the blobs' ctime under the subject
    h.run(["cp", "-a", done, ref], env)
    again = subprocess.run([*build, "--cache-dir", cache, "--out", done], env=env,
                           capture_output=True, text=True, check=True)
    if "up to date" not in again.stderr:  # the row times the nothing-new path, or says so
        raise SystemExit(f"benchmark: the rebuild was not found up to date:\n{again.stderr}")
    python = [sys.executable, "-c", "pass"]
    baseline = h.fresh(work, lambda d: h.run_timed(["cp", "-al", ref, d / "copy"], env).seconds
                       + h.run_timed(python, env).seconds)
    pairs = h.measure_pairs(
        lambda: h.run_timed([*build, "--cache-dir", cache, "--out", done], env).seconds,
        baseline, opts, "warm wheelhouse")
    target = h.Target(op="<=", limit=3.0)
    modules = floors.modules_of([*build, "--cache-dir", cache, "--out", done], env)
    return [h.Result(name="warm wheelhouse rebuild", subject=h.median_s(pairs.subject),
                     baseline=f"{h.median_s(pairs.baseline)} cp -al + python -c pass",
                     value=pairs.ratio, target=target, note=pairs.spread()),
            floors.row("warm wheelhouse rebuild", target,
                       h.fresh(work, lambda d: h.run_timed(
                           floors.program(modules, ["cp", "-al", ref, d / "copy"]), env).seconds),
                       baseline, "cp -al + python -c pass", len(modules), opts,
                       then="the same cp -al")]


def main() -> int:
    opts = h.cli(__doc__ or "")
    return h.finish("wheelhouse", measure(opts), opts)


if __name__ == "__main__":
    sys.exit(main())
