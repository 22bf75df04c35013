"""The download a CUDA user waits for: `lockkit wheelhouse build` of a CUDA-shaped set,
cold, the whole command, from a CDN-like loopback edge (``edge.Edge``: every connection
capped at C = 12 MiB/s, the link at 8·C shared by all connections, Range and If-Range
served, the body bytes sent per file counted by the edge).

The set: the sizes of the cu130 set's 16 largest files scaled by 1/8 (285 MiB, the
largest 63 MiB), synthetic wheels of those sizes, locked against a ``FastIndex`` and
fetched from the edge through ``[mirrors]`` (the lock's URLs, the edge's bytes). Rows:
  - cold build against the link's limit (the set's bytes / 8·C, computed): ≥ 0.8;
  - the same runs against ``curl -Z --parallel-immediate`` (one stream a file, what uv
    and curl do), interleaved in pairs: lockkit ≥ 1.4× as fast;
  - ``pip download`` of the same URLs from the same edge: INFO, one run (it is slow);
  - ``--jobs`` 8, 16 and 32: INFO rows, the median of a few cold builds each;
  - the largest file cut at 60% by the edge: the bytes the edge sent for it ≤ 1.15× its size;
  - a build interrupted (SIGINT) once the edge sent half the set: the bytes the next
    build fetches ≤ 0.55× the set;
  - peak RSS of the cold build < 100 MiB (``_harness.peak_rss``).
``--quick`` runs 3 pairs and 2 runs per ``--jobs``, on the same set (the part size is
lockkit's, not the benchmark's: a smaller set would not be split at all).
"""

from __future__ import annotations

import os
import shutil
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import _harness as h
from edge import Edge

__all__ = ["SET_MIB", "measure"]

MB = h.MB
C = 12 * MB  # bytes per second per connection
LINK = 8 * C  # bytes per second in all
# the cu130 set's 16 largest files, MiB, scaled by 1/8 (285 MiB in all); torch renamed, as
# lockkit routes torch to the PyTorch index
SET_MIB = {"nvidia-cudnn-cu13": 63, "bench-torch": 56, "nvidia-cublas": 50,
           "nvidia-nccl-cu13": 23,
           "nvidia-cusparse": 19, "nvidia-cufft": 15, "nvidia-cusolver": 12,
           "nvidia-cusparselt-cu13": 13, "triton": 10, "nvidia-curand": 6,
           "nvidia-nvshmem-cu13": 7, "nvidia-cuda-nvrtc": 4, "nvidia-nvjitlink": 4,
           "nvidia-cuda-cupti": 2, "nvidia-cufile": 1, "nvidia-cuda-runtime": 1}
LIMIT = h.Target(op=">=", limit=0.8)
CURL = h.Target(op=">=", limit=1.4)
CUT = h.Target(op="<=", limit=1.15)
INTERRUPTED = h.Target(op="<=", limit=0.55)
RSS = h.Target(op="<", limit=100)


class Setup:
    """The set's wheels, a project locking them, and the edge serving them."""

    def __init__(self, work: Path, index: h.FastIndex, env: dict[str, str]) -> None:
        self.work, self.env = work, env
        files = work / "edge-files"
        files.mkdir()
        self.names, self.urls, mirrors = [], [], []
        for project, mib in SET_MIB.items():
            wheel = h.synthetic_wheel(work / "wheels", project, "1.0.0", size=mib * MB)
            url = index.add("/simple", wheel)
            os.link(wheel, files / wheel.name)
            self.names.append(wheel.name)
            mirrors.append(url.rsplit("/", 1)[0])
        self.bytes = sum((files / n).stat().st_size for n in self.names)
        self.edge = Edge(files, rate=C, link=LINK)
        self.urls = [f"{self.edge.url}/{n}" for n in self.names]
        self.project = work / "project"
        self.project.mkdir()
        (self.project / "requirements.in").write_text("".join(f"{p}\n" for p in SET_MIB))
        table = "".join(f'"{m}" = "{self.edge.url}"\n' for m in mirrors)
        (self.project / "lockkit.toml").write_text(
            f'index-url = "{index.url}/simple"\nplatforms = ["linux-cpu"]\n[mirrors]\n{table}')
        try:
            h.run([*h.lockkit_argv(), "compile", "--platform", "linux-cpu", "--project",
                   str(self.project)], env)
        except BaseException:
            self.edge.__exit__()
            raise

    def build(self, folder: Path, *extra: str) -> list[str | Path]:
        return [*h.lockkit_argv(console_script=True), "wheelhouse", "build", "--project",
                self.project, "--platform", "linux-cpu", "--no-tools", "--cache-dir",
                folder / "cache", "--out", folder / "out", *extra]

    def timed_build(self, *extra: str) -> Callable[[], float]:
        return h.fresh(self.work, lambda folder: h.run_timed(self.build(folder, *extra),
                                                             self.env).seconds)

    def timed_curl(self) -> Callable[[], float]:
        argv = ["curl", "-s", "-S", "--fail", "-Z", "--parallel-immediate",
                "--parallel-max", "50", "--remote-name-all", *self.urls]
        return h.fresh(self.work, lambda folder: h.run_timed(argv, self.env, cwd=folder).seconds)


def _pip(setup: Setup) -> float:
    def timed(folder: Path) -> float:
        return h.run_timed([sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                            "--no-index", "-d", folder, *setup.urls], setup.env).seconds
    return h.fresh(setup.work, timed)()


def _interrupted(setup: Setup, folder: Path) -> float:
    """SIGINT once the edge sent half the set; the bytes the next build fetches."""
    setup.edge.sent(cut=0)
    proc = subprocess.Popen([os.fspath(a) for a in setup.build(folder)], env=setup.env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    while sum(setup.edge.sent().values()) < setup.bytes // 2:
        if proc.poll() is not None:
            raise SystemExit("benchmark: the build ended before half the set was sent")
        time.sleep(0.01)
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=60)
    if proc.returncode != 130:
        raise SystemExit(f"benchmark: the interrupted build exited {proc.returncode}")
    setup.edge.sent(cut=0)
    h.run(setup.build(folder), setup.env)
    return sum(setup.edge.sent().values()) / setup.bytes


def _cut(setup: Setup, folder: Path) -> float:
    """The largest file cut by the edge at 60%: the bytes sent for it over its size."""
    largest = setup.names[0]
    setup.edge.sent(cut=0.6, only=largest)
    h.run(setup.build(folder), setup.env)
    sent = setup.edge.sent(cut=0)[largest]
    return sent / (setup.work / "edge-files" / largest).stat().st_size


def measure(opts: h.Options) -> list[h.Result]:
    label = f"CUDA-shaped set ({len(SET_MIB)} files, {sum(SET_MIB.values())} MiB)"
    if shutil.which("curl") is None:
        return [h.Result(name=label, subject="-", baseline="-", value=None, target=LIMIT,
                         skipped="no curl on PATH")]
    results = []
    with h.workdir("cudaset") as work, h.FastIndex(work / "index") as index:
        env = h.bench_env(work)
        setup = Setup(work, index, env)
        with setup.edge:
            limit_s = setup.bytes / LINK
            pairs = h.measure_pairs(setup.timed_build(), setup.timed_curl(), opts,
                                    "cold build vs curl -Z --parallel-immediate")
            built = statistics.median(pairs.subject)
            where = f"C {C // MB} MiB/s a connection, link {LINK // MB} MiB/s"
            results.append(h.Result(
                name=f"{label}: cold build vs the link's limit", subject=h.median_s(pairs.subject),
                baseline=f"{limit_s:.2f} s bytes / link", value=limit_s / built, target=LIMIT,
                note=f"{where}; {setup.bytes / built / MB:.0f} MiB/s (limit time / build time)"))
            results.append(h.Result(
                name=f"{label}: cold build vs curl", subject=h.median_s(pairs.subject),
                baseline=f"{h.median_s(pairs.baseline)} curl -Z --parallel-immediate",
                value=1 / pairs.ratio, target=CURL,
                note=f"{pairs.spread()} (lockkit time / curl time)"))
            results += _jobs(setup, opts, label)
            if not opts.quick:
                pip_s = _pip(setup)
                results.append(h.Result(
                    name=f"{label}: pip download", subject=f"{built:.4f} s",
                    baseline=f"{pip_s:.4f} s pip download, one run", value=pip_s / built,
                    target=CURL, info=True, note="pip's time / lockkit's"))
            with h.workdir("cudaset-cut") as folder:
                cut = _cut(setup, folder)
            results.append(h.Result(
                name=f"{label}: largest file cut at 60%, bytes sent", subject=f"{cut:.3f}",
                baseline="the file's bytes", value=cut, target=CUT,
                note="restarting from byte 0 would cost 1.6"))
            with h.workdir("cudaset-int") as folder:
                again = _interrupted(setup, folder)
            results.append(h.Result(
                name=f"{label}: after SIGINT half way, bytes fetched again",
                subject=f"{again:.3f}", baseline="the set's bytes", value=again,
                target=INTERRUPTED, note="the next build fetches / the set's bytes"))
            with h.workdir("cudaset-rss") as folder:
                sample = h.peak_rss(setup.build(folder), env, folder)
            peak = sample.maxrss_kib / 1024
            results.append(h.Result(
                name=f"{label}: peak RSS of the cold build", subject=f"{peak:.1f} MiB",
                baseline="absolute", value=peak, target=RSS, unit=" MiB",
                note=f"built in {sample.seconds:.1f} s"))
    return results


def _jobs(setup: Setup, opts: h.Options, label: str) -> list[h.Result]:
    """Cold builds with --jobs 8, 16 and 32, in turn, round after round: INFO rows."""
    times: dict[int, list[float]] = {8: [], 16: [], 32: []}
    for _ in range(2 if opts.quick else 5):
        for jobs in times:
            times[jobs].append(setup.timed_build("--jobs", str(jobs))())
    base = statistics.median(times[8])
    return [h.Result(name=f"{label}: --jobs {jobs}", subject=h.median_s(got),
                     baseline=f"{base:.4f} s --jobs 8", value=statistics.median(got) / base,
                     target=LIMIT, info=True,
                     note=f"runs {', '.join(f'{t:.2f}' for t in got)} s")
            for jobs, got in times.items()]


def main() -> int:
    opts = h.cli(__doc__ or "")
    return h.finish("CUDA-shaped set on a CDN-like edge", measure(opts), opts)


if __name__ == "__main__":
    sys.exit(main())
