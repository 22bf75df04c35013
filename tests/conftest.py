"""Fixtures: a loopback PyTorch index and default index with tiny real wheels."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

import pytest

from lockkit._internal.compat import tomllib

sys.path.insert(0, str(Path(__file__).parent))

from index_server import Index, IndexServer, build_wheel  # noqa: E402
from packaging.pylock import Pylock  # noqa: E402
from pytorch_index import PyTorchIndex  # noqa: E402

from lockkit.cli import main  # noqa: E402
from lockkit.lock.lockfile import python_of  # noqa: E402
from lockkit.platforms.definitions import load_platforms  # noqa: E402
from lockkit.platforms.targets import environment, wheel_tags  # noqa: E402

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


@pytest.fixture(scope="session", autouse=True)
def _no_tools():
    """Wheelhouses without tools/ (lockkit's own dependencies come from the default index,
    which the loopback projects do not carry): tests/test_tools.py turns tools/ back on."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("LOCKKIT_NO_TOOLS", "1")
        yield


@pytest.fixture(scope="session", autouse=True)
def _session_cache(tmp_path_factory):
    """lockkit's default cache (downloads, verify's unpacked wheels: ~700 MB for the real
    torch) in the session's temp folder, not the user's, and removed with it."""
    root = tmp_path_factory.mktemp("lockkit-cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("LOCKKIT_CACHE_DIR", str(root))
        yield root
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def indexes(tmp_path_factory):
    """The PyTorch index replica and a default index, filled by :func:`fill`."""
    pt = PyTorchIndex(tmp_path_factory.mktemp("pytorch"))
    server = IndexServer(tmp_path_factory.mktemp("index"))
    default = server.index("/simple")
    fill(pt, default)
    with pt, server:
        yield Loopback(pt=pt, server=server, default=default)


@pytest.fixture
def project(tmp_path, indexes):
    """A project whose lockkit.toml points the official index and the default at loopback."""
    root = tmp_path / "proj"
    root.mkdir()
    (root / "requirements.in").write_text("torch==2.5.1\nnumpy\n")
    (root / "lockkit.toml").write_text(indexes.config())
    # The routing tests were written against whl/rocm6.2, which fill() serves; the shipped
    # family name linux-rocm6 now stands for whl/rocm6.4 (issue 17), so the project keeps
    # its own linux-rocm6 on rocm6.2, as a project that pinned that index would.
    (root / "platforms").mkdir()
    (root / "platforms" / "linux-rocm6.toml").write_text(ROCM62)
    return root


ROCM62 = """description = "Linux x86_64, AMD ROCm 6.2"
os = "linux"
arch = "x86_64"
python = "3.11"
python-platform = "x86_64-unknown-linux-gnu"
[backend]
kind = "rocm"
version = "6.2"
[torch]
index = "https://download.pytorch.org/whl/rocm6.2"
file-hosts = ["https://download-r2.pytorch.org"]
packages = ["torch", "torchvision", "torchaudio", "pytorch-triton-rocm"]
[gpu]
device = "cuda"
hip = "6.2"
"""


@pytest.fixture(scope="session")
def real_torch_wheels(tmp_path_factory) -> list[Path]:
    """The real CPU torch 2.13.0 wheel and its dependencies, fetched once per session by pip.

    This is how the machine supplies torch (its pip can fetch that file without the
    network); where it cannot, the tests that need real torch are skipped, saying why.
    """
    if sys.version_info[:2] != (3, 11):
        pytest.skip("the real CPU torch 2.13.0 wheel used here is built for Python 3.11")
    dest = tmp_path_factory.mktemp("real-torch")
    run = subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--only-binary", ":all:",
         "-d", str(dest), "torch==2.13.0+cpu", "numpy"],
        capture_output=True, text=True, timeout=900)
    if run.returncode != 0:
        last = (run.stderr.strip().splitlines() or ["no output"])[-1]
        pytest.skip(f"real CPU torch 2.13.0 is not available to pip on this machine: {last}")
    return sorted(dest.glob("*.whl"))


@pytest.fixture(scope="session")
def torch_index(tmp_path_factory, real_torch_wheels):
    """The PyTorch CPU index replica serving the real torch (linked on its second host, as
    the official index does), and a default index serving its real dependencies: the whole
    end-to-end path runs over 127.0.0.1."""
    pt = PyTorchIndex(tmp_path_factory.mktemp("torch-index"))
    server = IndexServer(tmp_path_factory.mktemp("default-index"))
    default = server.index("/simple")
    for wheel in real_torch_wheels:
        if wheel.name.startswith("torch-"):
            pt.put("cpu", wheel)
        else:
            default.put(wheel)
    with pt, server:
        yield Loopback(pt=pt, server=server, default=default)


@pytest.fixture(scope="session")
def torch_venv(tmp_path_factory, real_torch_wheels) -> Path:
    """The interpreter of a venv holding the real CPU torch and numpy (for probe tests)."""
    import uv

    from lockkit._internal.proc import isolated_env

    base = tmp_path_factory.mktemp("torch-venv")
    root = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    python = root / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    # uv, not pip: the same files in a fifth of the time; its cache stays in the tmp folder.
    subprocess.run([uv.find_uv_bin(), "pip", "install", "--quiet", "--no-index", "--no-config",
                    "--python", str(python), "--cache-dir", str(base / "uv-cache"),
                    *map(str, real_torch_wheels)], check=True, timeout=900, env=isolated_env())
    return python


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


# --- the bundled example, prepared once per session -----------------------------------------

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "embeddings"


def lockkit(*argv: str, network: bool = True) -> subprocess.CompletedProcess:
    """The CLI in a child process; ``network=False`` runs it in a private network namespace."""
    prefix = [] if network else _no_network()
    return subprocess.run([*prefix, sys.executable, "-m", "lockkit", *argv],
                          capture_output=True, text=True, timeout=1800)


def _no_network() -> list[str]:
    if subprocess.run(["unshare", "-rn", "true"], capture_output=True).returncode != 0:
        pytest.skip("unshare -rn (a private network namespace) is not available here")
    return ["unshare", "-rn"]


def _configure(root: Path, loopback: Loopback) -> None:
    text = (root / "lockkit.toml").read_text()
    mirrors = "".join(f'"{k}" = "{v}"\n' for k, v in loopback.pt.mirrors().items())
    (root / "lockkit.toml").write_text(
        f'index-url = "{loopback.url}/simple"\n' + text + f"\n[mirrors]\n{mirrors}")


@pytest.fixture(scope="session")
def example(tmp_path_factory, torch_index) -> Path:
    """The bundled example, compiled for linux-cpu and its wheelhouse built, over loopback."""
    root = tmp_path_factory.mktemp("example") / "embeddings"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("locks", "wheelhouse",
                                                                 ".lockkit", "__pycache__"))
    _configure(root, torch_index)
    cache = tmp_path_factory.mktemp("cache")
    assert main(["compile", "--project", str(root), "--platform", "linux-cpu"]) == 0
    lock = tomllib.loads((root / "locks" / "pylock.linux-cpu.toml").read_text())
    assert_conforms(lock, "linux-cpu", root)
    assert main(["wheelhouse", "build", "--project", str(root), "--platform", "linux-cpu",
                 "--cache-dir", str(cache)]) == 0
    return root


@pytest.fixture
def copy_of(example, tmp_path):
    """A private copy of the prepared example (lock and wheelhouse included; wheels linked)."""
    made = []

    def make() -> Path:
        made.append(1)
        dest = tmp_path / f"embeddings-{len(made)}"
        shutil.copytree(example, dest, copy_function=_link, ignore=shutil.ignore_patterns(
            ".lockkit"))
        return dest
    return make


def _link(src: str, dst: str) -> None:
    """Wheels are hard-linked (large, never written); every other file is a real copy, so
    a test that edits its copy cannot write through a link into the shared example."""
    if src.endswith(".whl"):
        try:
            Path(dst).hardlink_to(src)
            return
        except OSError:
            pass
    shutil.copy2(src, dst)
