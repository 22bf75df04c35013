"""Benchmark `lockkit verify`'s rebuild against the plain pip procedure, in one run.

Setup (not timed): copy examples/embeddings to a temp folder, fetch the pinned CPU torch
wheel the way demo.py does, serve it on a loopback PEP 503 mirror of the PyTorch CPU index,
then `lockkit compile` and `lockkit wheelhouse build` the linux-cpu lock into the copy.
Timed, on the same lock and wheelhouse (median of 3 rounds):
  1. `lockkit verify --no-gpu` (1 warm-up first): the dossier's `venv` + `install` step
     durations (the rebuild) and `pip-check` + `inventory` (the metadata checks);
  2. the pip procedure, each round in a fresh folder: `python -m venv` + `pip install
     --require-hashes` from the wheelhouse, then `pip check` + `pip freeze --all`.
lockkit's rebuild is `uv venv` (no ensurepip: no pip is installed into the venv) and
`uv pip install`, which hard-links files from uv's cache, warm after the warm-up round;
pip unpacks every wheel each time. That is most of the ratio, and the point of the design.
"""

from __future__ import annotations

import functools
import hashlib
import http.server
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from lockkit.platforms import load_platforms
from lockkit.resolve import uv_bin

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "embeddings"
PLATFORM = "linux-cpu"
TORCH = "torch==2.13.0+cpu"
ROUNDS = 3


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


def median(values: list[float]) -> float:
    return sorted(values)[len(values) // 2]


def fetch_torch(root: Path, official: str) -> str | None:
    """The demo's PEP 503 tree, ``<root>/whl/cpu/torch/``; returns why it failed, or None."""
    folder = root / "whl" / "cpu" / "torch"
    folder.mkdir(parents=True)
    run = subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                          "--only-binary", ":all:", "--retries", "1", "--timeout", "15",
                          "--extra-index-url", f"{official}/cpu", TORCH, "-d", str(folder)],
                         capture_output=True, text=True)
    wheels = sorted(folder.glob("torch-*.whl"))
    if run.returncode != 0 or not wheels:
        return (run.stderr.strip().splitlines() or ["no wheel downloaded"])[-1]
    links = "".join(f'<a href="{w.name}#sha256={hashlib.sha256(w.read_bytes()).hexdigest()}">'
                    f"{w.name}</a>\n" for w in wheels)
    (folder / "index.html").write_text(f"<!DOCTYPE html><html><body>\n{links}</body></html>\n")
    return None


def lockkit(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "lockkit", *args], capture_output=True,
                          text=True)


def setup(work: Path) -> Path | None:
    """The example's copy with a linux-cpu lock and wheelhouse, or None (skip: no torch)."""
    project = work / "project"
    shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns(
        "locks", "wheelhouse", ".lockkit", "__pycache__"))
    torch_index = load_platforms(project)[PLATFORM].torch_index
    assert torch_index is not None
    official = torch_index.rsplit("/", 1)[0]  # the platform file's PyTorch index, less /cpu
    why = fetch_torch(work / "mirror", official)
    if why is not None:
        print(f"skipped: pip could not fetch {TORCH}: {why}")
        return None
    handler = functools.partial(_Quiet, directory=str(work / "mirror"))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    mirror = ["--mirror", f"{official}=http://127.0.0.1:{server.server_address[1]}/whl"]
    try:
        for cmd in (["compile"], ["wheelhouse", "build"]):
            done = lockkit(*cmd, "--project", str(project), "--platform", PLATFORM, *mirror)
            if done.returncode != 0:
                sys.exit(f"setup: lockkit {' '.join(cmd)} failed:\n{done.stdout}{done.stderr}")
    finally:
        server.shutdown()
    return project


def lockkit_round(project: Path, reports: Path) -> tuple[float, float]:
    """(rebuild, metadata checks) from one verify dossier's step durations."""
    lockkit("verify", "--project", str(project), "--platform", PLATFORM,
            "--report-dir", str(reports), "--no-gpu")  # exit 1: --no-gpu is "incomplete"
    doc = json.loads((reports / "dossier.json").read_text())
    steps = {s["name"]: s for s in doc["steps"]}
    bad = [n for n in ("venv", "install", "pip-check", "inventory")
           if steps[n]["status"] != "passed"]
    if bad:
        sys.exit(f"lockkit verify: step(s) {', '.join(bad)} did not pass: {doc['first_error']}")
    return (steps["venv"]["duration_s"] + steps["install"]["duration_s"],
            steps["pip-check"]["duration_s"] + steps["inventory"]["duration_s"])


def timed(argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, check=True, capture_output=True, env=env)
    return time.perf_counter() - start


def pip_round(python: str, wheelhouse: Path) -> tuple[float, float]:
    """(venv + install, check + freeze) of the plain pip procedure, in a fresh folder."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env["PIP_CONFIG_FILE"] = os.devnull
    with tempfile.TemporaryDirectory(prefix="lockkit-bench-pip-") as tmp:
        venv = Path(tmp) / "V"
        vpy = str(venv / "bin" / "python")
        build = timed([python, "-m", "venv", str(venv)], env)
        build += timed([vpy, "-m", "pip", "install", "--isolated", "--no-index",
                        "--disable-pip-version-check", "--quiet", "--find-links",
                        str(wheelhouse), "-r", str(wheelhouse / "requirements.txt"),
                        "--require-hashes"], env)
        checks = timed([vpy, "-m", "pip", "check"], env)
        checks += timed([vpy, "-m", "pip", "freeze", "--all"], env)
    return build, checks


def host_python(version: str) -> str:
    """The interpreter lockkit's host step picks: this one if it is *version*, else uv's."""
    if f"{sys.version_info[0]}.{sys.version_info[1]}" == version:
        return sys.executable
    return subprocess.run([uv_bin(), "python", "find", "--no-config", "--offline",
                           "--no-python-downloads", version], capture_output=True, text=True,
                          check=True).stdout.strip()


def main() -> int:
    work = Path(tempfile.mkdtemp(prefix="lockkit-bench-verify-"))
    try:
        project = setup(work)
        if project is None:
            return 0
        lockkit_round(project, work / "reports-warmup")
        lk = [lockkit_round(project, work / f"reports-{i}") for i in range(ROUNDS)]
        python = host_python(load_platforms(project)[PLATFORM].python)
        pip = [pip_round(python, project / "wheelhouse" / PLATFORM) for _ in range(ROUNDS)]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    lk_build, lk_checks = median([b for b, _ in lk]), median([c for _, c in lk])
    pip_build, pip_checks = median([b for b, _ in pip]), median([c for _, c in pip])
    print(f"{PLATFORM}, {TORCH}, median of {ROUNDS} rounds (interpreter {python})")
    print(f"  pip procedure: venv + install      {pip_build:7.3f} s")
    print(f"  lockkit rebuild: venv + install    {lk_build:7.3f} s   ratio pip/lockkit = "
          f"{pip_build / lk_build:5.1f}x  (target >= 30x)")
    print(f"  pip check + pip freeze --all       {pip_checks:7.3f} s")
    print(f"  lockkit pip-check + inventory      {lk_checks:7.3f} s   (target < 0.100 s); "
          f"ratio pip/lockkit = {pip_checks / lk_checks:5.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
