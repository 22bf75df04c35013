"""Wheelhouse targets: cold download against curl, warm rebuild against `cp -al`, in one run.

A loopback index (``_harness.FastIndex``: sendfile, backlog 128) serves eight wheels of
random content, about 500 MB in all (40 MB with --quick), locked for linux-cpu. Paired:
  - cold: `lockkit wheelhouse build` with an empty cache into a new folder, against
    `curl -Z --parallel-max 8` fetching the same URLs into a new folder: lockkit's
    throughput >= 0.67x curl's (curl hashes nothing; lockkit checks every sha256);
  - warm: `lockkit wheelhouse build` with the cache full, into a new folder, against
    `cp -al` of a built wheelhouse folder, `openssl dgst -sha256` of its wheels (one
    process, SHA extensions where the CPU has them) and `python -c pass`: <= 3x (every
    cache hit is hashed again before it is linked: issue 23).
The server's own CPU time while curl runs is printed: far below one core, it is not what
limits curl.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from statistics import median

import _harness as h
from _projects import wheel_project

__all__ = ["measure"]

MB = h.MB
SIZES_MB = (150, 100, 80, 60, 50, 30, 20, 10)  # 500 MB, the largest as big as torch's CPU wheel


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
        project, urls = wheel_project(work, index, sizes, env)
        # --no-tools: the loopback index serves the lock's files only (tools/ is lockkit's
        # own dependencies from the default index, not part of the lock's throughput)
        build = [*h.lockkit_argv(console_script=True), "wheelhouse", "build", "--project",
                 str(project), "--platform", "linux-cpu", "--no-tools"]
        return [cold(work, build, urls, sum(sizes), env, opts), warm(work, build, env, opts)]


def cold(work: Path, build: list[str], urls: list[str], total: int, env: dict[str, str],
         opts: h.Options) -> h.Result:
    curl = ["curl", "--silent", "--show-error", "--fail", "--parallel", "--parallel-max", "8"]
    for url in urls:
        curl += ["-o", url.rsplit("/", 1)[1], url]
    load = ServerLoad()
    pairs = h.measure_pairs(
        h.fresh(work, lambda d: h.run_timed([*build, "--cache-dir", d / "cache", "--out",
                                           d / "out"], env).seconds),
        h.fresh(work, load.wrap(lambda d: h.run_timed(curl, env, cwd=d).seconds)),
        opts, "cold wheelhouse")
    lk, base = total / 1e6 / median(pairs.subject), total / 1e6 / median(pairs.baseline)
    return h.Result(name=f"cold wheelhouse ({len(urls)} files, {total / 1e6:.0f} MB)",
                    subject=f"{lk:.0f} MB/s", baseline=f"{base:.0f} MB/s curl -Z",
                    value=1 / pairs.ratio, target=h.Target(op=">=", limit=0.67),
                    note=f"{pairs.spread()} (time ratios); {load}")


def warm(work: Path, build: list[str], env: dict[str, str], opts: h.Options) -> h.Result:
    cache, built = work / "cache", work / "built"
    h.run([*build, "--cache-dir", cache, "--out", built], env)
    python = [sys.executable, "-c", "pass"]
    hashed: list[str | Path] = ["openssl", "dgst", "-sha256", *sorted(built.glob("*.whl"))]
    pairs = h.measure_pairs(
        h.fresh(work, lambda d: h.run_timed([*build, "--cache-dir", cache, "--out", d / "out"],
                                          env).seconds),
        h.fresh(work, lambda d: h.run_timed(["cp", "-al", built, d / "copy"], env).seconds
              + h.run_timed(hashed, env).seconds + h.run_timed(python, env).seconds),
        opts, "warm wheelhouse")
    return h.Result(name="warm wheelhouse rebuild", subject=h.median_s(pairs.subject),
                    baseline=f"{h.median_s(pairs.baseline)} cp -al + openssl dgst + python -c pass",
                    value=pairs.ratio, target=h.Target(op="<=", limit=3.0),
                    note=pairs.spread())


def main() -> int:
    opts = h.cli(__doc__ or "")
    return h.finish("wheelhouse", measure(opts), opts)


if __name__ == "__main__":
    sys.exit(main())
