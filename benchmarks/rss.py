"""Memory target: peak RSS of `lockkit wheelhouse build` fetching one 2 GB wheel < 100 MiB.

A lock of one wheel of 2 GB of random content (256 MB with --quick), served on loopback
(``_harness.FastIndex``); `lockkit wheelhouse build` fetches it with an empty cache, once.
The peak is the child's ``ru_maxrss`` from ``os.wait4`` (Linux counts the child and the
children it waited for), taken by a small launcher (``_harness.peak_rss``) so that the
benchmark's own size is not inherited into it. The limit is absolute: a download
streams, it never holds the file, so the peak must not grow with the file. `python -c
pass`'s peak is shown beside it. Everything, the 2 GB file first, is deleted afterwards.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import _harness as h
from _projects import wheel_project

__all__ = ["measure"]

SIZE = 2 * 10**9


def measure(opts: h.Options) -> list[h.Result]:
    size = SIZE // 8 if opts.quick else SIZE
    with h.workdir("rss") as work, h.FastIndex(work / "index") as index:
        env = h.bench_env(work)
        start = time.perf_counter()
        project, _ = wheel_project(work, index, [size], env)
        print(f"  a {size / 1e9:.2f} GB wheel made and locked in "
              f"{time.perf_counter() - start:.1f} s", file=sys.stderr)
        build: list[str | Path] = [*h.lockkit_argv(console_script=True), "wheelhouse",
                                   "build", "--project", project, "--platform", "linux-cpu",
                                   "--no-tools", "--cache-dir", work / "cache",
                                   "--out", work / "out"]
        sample = h.peak_rss(build, env, work)
        python = h.peak_rss([sys.executable, "-c", "pass"], env, work)
    peak, floor = sample.maxrss_kib / 1024, python.maxrss_kib / 1024
    print(f"  peak RSS {peak:.1f} MiB, {size / 1e6 / sample.seconds:.0f} MB/s",
          file=sys.stderr)
    return [h.Result(name=f"peak RSS, one {size / 1e9:.2f} GB wheel", subject=f"{peak:.1f} MiB",
                     baseline=f"absolute (python -c pass: {floor:.1f} MiB)", value=peak,
                     target=h.Target(op="<", limit=100), unit=" MiB",
                     note=f"fetched in {sample.seconds:.1f} s")]


def main() -> int:
    opts = h.cli(__doc__ or "")
    return h.finish("memory", measure(opts), opts)


if __name__ == "__main__":
    sys.exit(main())
