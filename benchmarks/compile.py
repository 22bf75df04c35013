"""Benchmark `lockkit compile` against bare uv and pip-compile, in one run.

Serves a loopback PyTorch index and default index (the tests' wheel builder), then:
  1. lockkit compile --all (every shipped platform, concurrently);
  2. the same resolutions as bare `uv pip compile` calls, one after another;
  3. `pip-compile --generate-hashes` for the host platform (linux-cpu), if installed.
Prints the wall times and the ratios the targets are stated in.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from index_server import IndexServer  # noqa: E402

from lockkit import _run  # noqa: E402
from lockkit.platforms import load_platforms  # noqa: E402
from lockkit.resolve import Indexes, uv_bin, uv_command  # noqa: E402

OFFICIAL = "https://download.pytorch.org/whl"
# The platforms this benchmark's index serves a torch for (the 7 compiled "at once")
PLATFORMS = ("linux-cpu", "linux-cu126", "linux-cu128", "linux-rocm64", "macos-arm64",
             "windows-cpu", "windows-cu126")
TAGS = {"linux": "cp311-cp311-manylinux_2_28_x86_64", "windows": "cp311-cp311-win_amd64",
        "macos": "cp311-cp311-macosx_11_0_arm64"}


def populate(server: IndexServer) -> None:
    default = server.index("/simple")
    for dep in ("filelock", "sympy", "jinja2", "networkx", "fsspec"):
        default.add(dep, "1.0.0")
    for tag in TAGS.values():
        default.add("numpy", "2.1.0", tag=tag)
    default.add("torch", "2.5.1", requires=["filelock", "sympy"], tag=TAGS["macos"])
    for local in ("cpu", "cu126", "cu128", "rocm6.4"):
        idx = server.index(f"/whl/{local}")
        extra = {"rocm6.4": ["pytorch-triton-rocm==3.1.0"]}.get(local, [])
        for os_, tag in TAGS.items():
            if os_ != "macos":
                idx.add("torch", f"2.5.1+{local}", tag=tag,
                        requires=["filelock", "sympy", "jinja2", "networkx", "fsspec"] + extra)
        if local == "rocm6.4":
            idx.add("pytorch-triton-rocm", "3.1.0", tag=TAGS["linux"])


def timed(argv: list[str], env: dict[str, str] | None = None, rounds: int = 3) -> float:
    """Median wall time of *rounds* runs (warm uv cache on every side)."""
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        subprocess.run(argv, check=True, capture_output=True, env=env)
        times.append(time.perf_counter() - start)
    return sorted(times)[len(times) // 2]


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="lockkit-bench-"))
    with IndexServer(work / "index") as server:
        populate(server)
        project = work / "project"
        project.mkdir()
        (project / "requirements.in").write_text("torch==2.5.1\nnumpy\n")
        (project / "lockkit.toml").write_text(
            f'index-url = "{server.url}/simple"\nplatforms = {json.dumps(list(PLATFORMS))}\n'
            f'[mirrors]\n"{OFFICIAL}" = "{server.url}/whl"\n')
        platforms = {n: p for n, p in load_platforms(project).items() if n in PLATFORMS}
        mirrors = {OFFICIAL: f"{server.url}/whl"}
        uv = uv_bin()
        env = _run.isolated_env()
        # warm uv's cache once so both sides see the same cache state
        timed([sys.executable, "-m", "lockkit", "compile", "--project", str(project)])
        shutil.rmtree(project / "locks")
        lk = timed([sys.executable, "-m", "lockkit", "compile", "--project", str(project)])
        per_uv = {}
        for name, plat in platforms.items():
            idx = Indexes.for_platform(plat, mirrors, f"{server.url}/simple")
            # bare uv gets the PyTorch index itself first (no routing: the baseline)
            argv = uv_command(uv, [project / "requirements.in"], plat, plat.python, idx,
                              work / f"pylock.{name}.toml", idx.torch_effective)
            penv = dict(env, **({"MACOSX_DEPLOYMENT_TARGET": plat.macos_target}
                                if plat.macos_target else {}))
            per_uv[name] = timed(argv, penv)
        lk_one = timed([sys.executable, "-m", "lockkit", "compile", "--platform", "linux-cpu",
                        "--project", str(project)])
        uv_sum = sum(per_uv.values())
        print(f"platforms: {len(per_uv)}")
        for name, secs in per_uv.items():
            print(f"  bare uv pip compile {name:14s} {secs:6.3f} s")
        print(f"bare uv, sequential sum          {uv_sum:6.3f} s")
        print(f"lockkit compile (7 platforms)    {lk:6.3f} s   "
              f"ratio lockkit/uv-sum = {lk / uv_sum:.2f}  (target < 1.00)")
        overhead = lk_one / per_uv["linux-cpu"] - 1
        print(f"lockkit compile linux-cpu        {lk_one:6.3f} s   overhead over bare uv = "
              f"{overhead * 100:+.0f}%  (target < 10%; includes Python start-up)")
        pip_compile = shutil.which("pip-compile")
        if pip_compile:
            penv = dict(env, PIP_CONFIG_FILE=os.devnull)
            pc = timed([pip_compile, "--quiet", "--generate-hashes", "--index-url",
                        f"{server.url}/simple", "--extra-index-url", f"{server.url}/whl/cpu",
                        "-o", str(work / "pc.txt"), str(project / "requirements.in")], penv)
            print(f"pip-compile --generate-hashes    {pc:6.3f} s   "
                  f"ratio pip-compile/lockkit(linux-cpu) = {pc / lk_one:.2f}")
        else:
            print("pip-compile: not installed (pip install pip-tools), baseline skipped")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
