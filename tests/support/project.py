"""A test project against the loopback indexes: the indexes filled with what the
real ones serve, lockkit run as a user runs it, a lock checked against PEP 751."""

from __future__ import annotations

import shutil
import subprocess
import sys
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

import pytest
from packaging.pylock import Pylock

from lockkit.lock.meta import python_of
from lockkit.platforms.definitions import load_platforms
from lockkit.platforms.targets import environment, wheel_tags
from tests.support.index_server import Index, IndexServer, build_wheel
from tests.support.pytorch_index import PyTorchIndex

OFFICIAL = "https://download.pytorch.org/whl"  # the official PyTorch index's root
LINUX = "cp311-cp311-linux_x86_64"
MAC = "cp311-cp311-macosx_11_0_arm64"
MANYLINUX = "py3-none-manylinux2014_x86_64"


@dataclass
class Loopback:
    """A replica of the PyTorch index (``pt``, pages as manage_v2.py renders them, on two
    hosts) and a default index (``default``, PEP 503 under ``/simple``), both on 127.0.0.1."""

    pt: PyTorchIndex
    server: IndexServer
    default: Index

    @property
    def url(self) -> str:
        """The default index's server (``<url>/simple``)."""
        return self.server.url

    def config(self, *, platforms: str = '["linux-cpu"]', extra: str = "") -> str:
        """lockkit.toml text: the default index, and both PyTorch hosts through mirrors."""
        mirrors = "".join(f'"{k}" = "{v}"\n' for k, v in self.pt.mirrors().items())
        return (f'index-url = "{self.url}/simple"\nplatforms = {platforms}\n{extra}'
                f"[mirrors]\n{mirrors}")

    def wheel_requests(self) -> list[str]:
        paths = [p for p, _ in self.server.requests] + list(self.pt.requests)
        return [urllib.parse.unquote(p) for p in paths if p.endswith(".whl")]

    def forget_requests(self) -> None:
        self.server.requests.clear()
        self.pt.requests.clear()


def fill(pt: PyTorchIndex, default: Index) -> None:
    """What the real indexes look like, in miniature.

    The PyTorch index: one torch build per variant, its family packages on the same page
    host (triton for CUDA, pytorch-triton-rocm for ROCm), single stale copies of common
    packages at the root of ``whl/`` (listed on every variant's page), copied pages that
    link another host's files, and a page without hashes (as nightly/aarch64 pages are).
    The default index: current versions of those packages, and planted traps.
    """
    for variant in ("cpu", "cu126", "rocm6.2"):
        deps = {"cu126": ["nvidia-cublas-cu12==12.6.4.1", "triton==3.1.0"],
                "rocm6.2": ["pytorch-triton-rocm==3.1.0"]}.get(variant, [])
        pt.add(variant, "torch", f"2.5.1+{variant}", requires=["filelock"] + deps,
               tag=LINUX)
    pt.add("cu126", "triton", "3.1.0", tag=LINUX)
    pt.add("rocm6.2", "pytorch-triton-rocm", "3.1.0", tag=LINUX)
    pt.without_hashes("rocm6.2", "pytorch-triton-rocm")
    # PACKAGE_ALLOW_LIST copies: one old version each, at whl/ (every variant lists them)
    pt.add(None, "MarkupSafe", "3.0.2", tag=LINUX)
    pt.add(None, "jinja2", "3.1.4", requires=["MarkupSafe>=2.0"])
    pt.add(None, "setuptools", "70.2.0")
    pt.add(None, "requests", "2.28.1")
    # PACKAGE_LINKS_ALLOW_LIST pages: copies pointing at another host's (old) files
    built = default.root.parent / "copied"
    pt.copy_page("numpy", build_wheel(built, "numpy", "1.26.3", tag=LINUX))
    pt.copy_page("filelock", build_wheel(built, "filelock", "3.13.1"))
    pt.copy_page("nvidia-cublas-cu12", build_wheel(built, "nvidia-cublas-cu12", "12.6.4.1",
                                                   tag=MANYLINUX))
    default.add("filelock", "3.16.1")
    default.add("numpy", "2.1.0", tag=LINUX)
    default.add("numpy", "2.1.0", tag=MAC)
    default.add("MarkupSafe", "3.0.3", tag=LINUX)
    default.add("MarkupSafe", "3.0.3", tag=MAC)
    default.add("jinja2", "3.1.6", requires=["MarkupSafe>=2.0"])
    default.add("setuptools", "80.9.0")
    default.add("requests", "2.32.5")
    default.add("nvidia-cublas-cu12", "12.6.4.1", tag=MANYLINUX)
    default.add("torch", "2.5.1", requires=["filelock"], tag=MAC)


def assert_conforms(lock: dict, platform: str, project: Path | None = None) -> None:
    """PEP 751 as packaging enforces it, selectable for the platform; every file named."""
    plat, python = load_platforms(project)[platform], python_of(lock, platform)
    chosen = list(Pylock.from_dict(lock).select(environment=environment(plat, python),
                                                tags=wheel_tags(plat, python)))
    assert {p.name for p, _ in chosen} == {p["name"] for p in lock["packages"]}
    for package in lock["packages"]:
        for f in package.get("wheels", []) + ([package["sdist"]] if "sdist" in package else []):
            path = urllib.parse.urlsplit(f["url"]).path
            assert f["name"] == urllib.parse.unquote(path.rsplit("/", 1)[1])
            assert "%2B" not in f["name"] and len(f["hashes"]["sha256"]) == 64
            assert "127.0.0.1" not in f["url"] or "index" not in package or \
                "127.0.0.1" in package["index"]  # a mirror's address never reaches the lock


EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "embeddings"
SERVICE = Path(__file__).resolve().parents[2] / "examples" / "service"


# A console script declared the way wheels declare them (entry_points.txt, the format of
# the packaging spec "Entry points specification", as setuptools writes it).
HELLO = {
    "hello_cli/__init__.py": "import sys\n\n\ndef main():\n    print('hello from', sys.prefix)\n",
    "hello_cli-1.0.dist-info/entry_points.txt": "[console_scripts]\nhello-cli = hello_cli:main\n",
}


def hello_project(root: Path, indexes: Loopback, cache: Path) -> Path:
    """A project at *root* locking hello-cli (a console script) and filelock for linux-cpu
    over loopback, compiled and its wheelhouse built: verify and sync install it."""
    from lockkit.cli import main

    indexes.default.add("hello-cli", "1.0", requires=["filelock"], files=HELLO)
    root.mkdir()
    (root / "requirements.in").write_text("hello-cli\n")
    (root / "lockkit.toml").write_text(indexes.config())
    assert main(["compile", "--project", str(root), "--platform", "linux-cpu"]) == 0
    assert main(["wheelhouse", "build", "--project", str(root), "--platform", "linux-cpu",
                 "--cache-dir", str(cache)]) == 0
    return root


def built_service(tmp_path: Path, indexes: Loopback) -> Path:
    """examples/service (no torch: quick) against the loopback default index, compiled and
    its wheelhouse built (no tools/)."""
    from lockkit.cli import main

    root = tmp_path / "service"
    shutil.copytree(SERVICE, root)
    config = root / "lockkit.toml"
    config.write_text(f'index-url = "{indexes.url}/simple"\n' + config.read_text())
    assert main(["compile", "--project", str(root)]) == 0
    assert main(["wheelhouse", "build", "--project", str(root), "--platform", "linux-service",
                 "--cache-dir", str(tmp_path / "cache"), "--no-tools"]) == 0
    return root


def lockkit(*argv: str, network: bool = True) -> subprocess.CompletedProcess:
    """The CLI in a child process; ``network=False`` runs it in a private network namespace."""
    prefix = [] if network else _no_network()
    return subprocess.run([*prefix, sys.executable, "-m", "lockkit", *argv],
                          capture_output=True, text=True, timeout=1800)


def _no_network() -> list[str]:
    if subprocess.run(["unshare", "-rn", "true"], capture_output=True).returncode != 0:
        pytest.skip("unshare -rn (a private network namespace) is not available here")
    return ["unshare", "-rn"]


def verify_refused_early(root: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """``lockkit verify`` of *root* (a config it must refuse; a lock stands in for the
    committed one) ends exit 2 before any work: in seconds, where a rebuild first takes
    minutes, with no traceback. Its stderr, for the test to read the line."""
    import time

    from lockkit.cli import main

    (root / "locks").mkdir()
    (root / "locks" / "pylock.linux-cpu.toml").write_text('lock-version = "1.0"\n')
    started = time.monotonic()
    assert main(["verify", "--project", str(root)]) == 2
    assert time.monotonic() - started < 5  # ~0.05 s here; a rebuild first is minutes
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err
