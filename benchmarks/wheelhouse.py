"""Benchmark `lockkit wheelhouse build` against pip download and bare hard links, in one run.

Serves a loopback PyTorch CPU index and default index holding the real CPU torch and its
dependencies (or, where this machine's pip cannot supply them, synthetic wheels of random
bytes of about the same sizes), compiles the linux-cpu lock once, then times on that lock:
  a. lockkit wheelhouse build, cold (empty cache, new folder);
  b. pip download of the same files (exact URLs, with their hashes);
  c. uv pip install --target of the same files (download + unpack; for reference);
  d. lockkit wheelhouse build, warm (the same cache, a new folder);
  e. os.link of every cached wheel into a new folder (in-process), and `python -c pass`.
Each figure is the median of 3 rounds, each round in a fresh folder. Run with --synthetic
to skip the real wheels.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from index_server import IndexServer  # noqa: E402

from lockkit import _run  # noqa: E402
from lockkit.config import load_project  # noqa: E402
from lockkit.fetch import Cache  # noqa: E402
from lockkit.platforms import load_platforms  # noqa: E402
from lockkit.resolve import uv_bin  # noqa: E402
from lockkit.wheelhouse import Item, plan  # noqa: E402

PLATFORM = "linux-cpu"
TORCH = "2.13.0"
LINUX = "cp311-cp311-manylinux_2_28_x86_64"
MB = 1 << 20
ROUNDS = 3


def real_wheels(dest: Path) -> list[Path]:
    """The real CPU torch and its dependencies. This one pip call keeps the machine's pip
    configuration on purpose: that is where this machine finds torch without the network."""
    run = subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--only-binary",
                          ":all:", "-d", str(dest), f"torch=={TORCH}+cpu", "numpy"],
                         capture_output=True, timeout=900, check=False)
    return sorted(dest.glob("*.whl")) if run.returncode == 0 else []


def synthetic_wheel(dest: Path, name: str, version: str, tag: str, size: int,
                    requires: tuple[str, ...] = ()) -> Path:
    """A valid wheel carrying *size* random bytes, stored: like torch's .so files, they
    do not compress, so the transfer costs what the file size says."""
    dist, info = name.replace("-", "_"), f"{name.replace('-', '_')}-{version}.dist-info"
    meta = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    meta += [f"Requires-Dist: {r}" for r in requires]
    contents = {f"{dist}/__init__.py": b"", f"{dist}/_payload.bin": os.urandom(size),
                f"{info}/METADATA": ("\n".join(meta) + "\n").encode(),
                f"{info}/WHEEL": f"Wheel-Version: 1.0\nGenerator: bench\nRoot-Is-Purelib: "
                                 f"false\nTag: {tag}\n".encode()}
    record = [f"{arc},sha256={_b64_sha256(data)},{len(data)}" for arc, data in contents.items()]
    record.append(f"{info}/RECORD,,")
    contents[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()
    path = dest / f"{dist}-{version}-{tag}.whl"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as zf:
        for arc, data in contents.items():
            zf.writestr(zipfile.ZipInfo(arc, date_time=(2020, 1, 1, 0, 0, 0)), data)
    return path


def _b64_sha256(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def synthetic_wheels(dest: Path) -> list[Path]:
    """torch (200 MB) needing 14 dependencies, plus numpy: 15 wheels of 1-10 MB."""
    deps = [f"benchdep{i:02d}" for i in range(14)]
    wheels = [synthetic_wheel(dest, d, "1.0.0", "py3-none-any", (1 + 9 * i // 13) * MB)
              for i, d in enumerate(deps)]
    wheels.append(synthetic_wheel(dest, "numpy", "2.4.0", LINUX, 10 * MB))
    wheels.append(synthetic_wheel(dest, "torch", f"{TORCH}+cpu", LINUX, 200 * MB,
                                  tuple(f"{d}==1.0.0" for d in deps)))
    return wheels


def median(run: Callable[[Path], object], work: Path) -> float:
    """Median wall time of ROUNDS calls, each given a new empty folder (removed after)."""
    times = []
    for _ in range(ROUNDS):
        fresh = Path(tempfile.mkdtemp(dir=work))
        start = time.perf_counter()
        run(fresh)
        times.append(time.perf_counter() - start)
        shutil.rmtree(fresh)
    return sorted(times)[ROUNDS // 2]


def call(argv: list[str]) -> None:
    """One subprocess, with no pip/uv variables and pip's config files ignored."""
    proc = subprocess.run(argv, capture_output=True, text=True, env=_run.isolated_env(),
                          check=False)
    if proc.returncode != 0:
        sys.exit(f"failed: {' '.join(argv)}\n{proc.stderr[-2000:]}")


def hashed_requirements(items: list[Item], path: Path) -> Path:
    """`name @ <mirrored URL> --hash=...` per file: both baselines fetch exactly what lockkit
    fetches, from the same loopback place, and check the same hashes, resolving nothing."""
    path.write_text("".join(f"{i.package} @ {i.want.urls[0]} --hash=sha256:{i.want.sha256}\n"
                            for i in items))
    return path


def link_all(cache: Cache, items: list[Item], dest: Path) -> None:
    """What a warm rebuild must at least do: one hard link per wheel."""
    for item in items:
        os.link(cache.path(item.want.sha256), dest / item.want.filename)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--synthetic", action="store_true", help="skip the real torch wheels")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="lockkit-bench-wh-"))
    try:
        bench(work, args.synthetic)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def bench(work: Path, synthetic: bool) -> None:
    (work / "dl").mkdir()
    wheels = [] if synthetic else real_wheels(work / "dl")
    content = f"real CPU torch {TORCH}+cpu and its dependencies"
    if not wheels:
        wheels = synthetic_wheels(work / "dl")
        content = "synthetic wheels of random bytes" + ("" if synthetic else
                                                        " (pip could not supply real torch)")
    torch_index = load_platforms()[PLATFORM].torch_index or ""
    official = torch_index.rsplit("/", 1)[0]  # the index the lock names, mirrored below
    with IndexServer(work / "index") as server:
        cpu, default = server.index("/whl/cpu"), server.index("/simple")
        for wheel in wheels:
            (cpu if wheel.name.startswith("torch-") else default).put(wheel)
        proj = work / "project"
        proj.mkdir()
        (proj / "requirements.in").write_text(f"torch=={TORCH}\nnumpy\n")
        (proj / "lockkit.toml").write_text(f'index-url = "{server.url}/simple"\n'
                                           f'[mirrors]\n"{official}" = "{server.url}/whl"\n')
        lk = [sys.executable, "-m", "lockkit"]
        call([*lk, "compile", "--platform", PLATFORM, "--project", str(proj)])
        _, items = plan(load_project(proj), load_platforms(proj)[PLATFORM])
        # --no-tools: the lock's files only, as pip download fetches (and the loopback index
        # carries none of lockkit's own dependencies)
        build = [*lk, "wheelhouse", "build", "--project", str(proj), "--platform", PLATFORM,
                 "--no-tools"]
        reqs = hashed_requirements(items, work / "hashed.txt")
        cache = work / "cache"  # the warm runs' cache, filled once, untimed
        call([*build, "--cache-dir", str(cache), "--out", str(work / "primed")])
        shutil.rmtree(work / "primed")
        t = {
            "cold": median(lambda d: call([*build, "--cache-dir", str(d / "cache"),
                                           "--out", str(d / "out")]), work),
            "pip": median(lambda d: call([
                sys.executable, "-m", "pip", "download", "--isolated", "--quiet",
                "--progress-bar", "off", "--no-deps", "--only-binary", ":all:",
                "--no-cache-dir", "--require-hashes", "-d", str(d), "-r", str(reqs)]), work),
            # uv has no download-only command: this is download + unzip + install into a
            # folder, more work than a wheelhouse, so it is shown for scale, not as a ratio.
            "uv": median(lambda d: call([
                str(uv_bin()), "pip", "install", "--no-config", "--no-cache", "--no-index",
                "--no-deps", "--quiet", "--require-hashes", "--python", sys.executable,
                "--target", str(d), "-r", str(reqs)]), work),
            "warm": median(lambda d: call([*build, "--cache-dir", str(cache),
                                           "--out", str(d / "out")]), work),
            "link": median(lambda d: link_all(Cache(cache), items, d), work),
            "python": median(lambda d: call([sys.executable, "-c", "pass"]), work),
        }
    total = sum(Cache(cache).path(i.want.sha256).stat().st_size for i in items)
    report(content, len(items), total, t)


def report(content: str, files: int, total: int, t: dict[str, float]) -> None:
    rows = [("lockkit wheelhouse build, cold (empty cache)", t["cold"]),
            ("pip download (exact URLs, --require-hashes)", t["pip"]),
            ("uv pip install --target (download + unpack)", t["uv"]),
            ("lockkit wheelhouse build, warm (same cache)", t["warm"]),
            ("os.link of every cached wheel (in-process)", t["link"]),
            ("python -c pass (interpreter start-up)", t["python"])]
    print(f"content: {content}")
    print(f"lock {PLATFORM}: {files} wheels, {total:,} bytes ({total / MB:.1f} MiB); "
          f"median of {ROUNDS} rounds, loopback HTTP")
    for label, secs in rows:
        print(f"  {label:46s} {secs:8.4f} s")
    print(f"pip download / lockkit cold     = {t['pip'] / t['cold']:6.2f}x  (target >= 3x)")
    print(f"lockkit warm / hard-link        = {t['warm'] / t['link']:6.0f}x  "
          "(the lockkit figure includes interpreter start-up and imports)")
    print(f"lockkit warm - python start-up  = {t['warm'] - t['python']:8.4f} s  "
          f"vs hard-link {t['link']:.4f} s  (target: close to the hard-link cost)")


if __name__ == "__main__":
    main()
