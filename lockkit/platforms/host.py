"""This machine's platform: which platforms it can run, best first, and why not the others.

Detection follows uv's ``--torch-backend auto`` (astral-sh/uv
``crates/uv-torch/src/accelerator.rs``), which light-the-torch does the same way:

- NVIDIA: the driver version from ``/sys/module/nvidia/version``, else the second
  double-space field of ``/proc/driver/nvidia/version``, else
  ``nvidia-smi --query-gpu=driver_version --format=csv,noheader``;
- AMD: ``/dev/kfd`` with the ``amdgpu`` kernel module loaded (``/sys/module/amdgpu``), or
  a GPU listed by ``rocminfo``;
- Intel: a display-class PCI device (``/sys/bus/pci/devices/*/class`` 0x03xxxx) of vendor
  0x8086, as uv does; ``/dev/dri`` alone is any GPU's render node, not proof of Intel.

Every path is read under *root* and every command goes through *run*, so tests describe a
machine with a fake tree instead of needing its hardware.
"""

from __future__ import annotations

import platform
import subprocess
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from packaging.version import InvalidVersion, Version

from lockkit.errors import UsageError
from lockkit.platforms.arch import arch_family, host_os
from lockkit.platforms.definitions import Platform

__all__ = ["Gpu", "Host", "Ruling", "choose", "detect", "driver_minimum", "min_driver", "pick",
           "rank"]

Run = Callable[[list[str]], str | None]  # argv -> stdout, None when it cannot run

# The minimum NVIDIA driver per CUDA major, as uv encodes NVIDIA's table 2
# (uv-torch backend.rs LINUX_CUDA_DRIVERS and WINDOWS_CUDA_VERSIONS).
_MIN_DRIVER = {"linux": {13: "580", 12: "525.60.13", 11: "450.80.02"},
               "windows": {13: "580", 12: "528.33", 11: "452.39"}}
# Best first: a GPU backend before the CPU, then the newer toolkit.
_KIND_ORDER = {"cuda": 0, "rocm": 1, "xpu": 2, "mps": 3, "cpu": 4}
_VENDOR = {"cuda": "nvidia", "rocm": "amd", "xpu": "intel"}
_LABEL = {"nvidia": "NVIDIA", "amd": "AMD", "intel": "Intel"}
_VENDOR_NAME = {"nvidia": "an NVIDIA GPU", "amd": "an AMD GPU (ROCm)", "intel": "an Intel GPU"}


@dataclass(frozen=True, kw_only=True)
class Gpu:
    vendor: str  # "nvidia" | "amd" | "intel"
    driver: str | None  # the NVIDIA driver version; None when unknown
    source: str  # where it was seen: the file or the command


@dataclass(frozen=True, kw_only=True)
class Host:
    os: str  # lockkit's OS name: linux, macos, windows
    arch: str  # the family name: x86_64, arm64 (common.arch_family)
    libc: str  # "glibc" | "musl" on Linux, "" elsewhere
    gpus: tuple[Gpu, ...] = ()

    def gpu(self, vendor: str) -> Gpu | None:
        return next((g for g in self.gpus if g.vendor == vendor), None)


@dataclass(frozen=True, kw_only=True)
class Ruling:
    platform: Platform
    reason: str  # why it runs here ("NVIDIA driver 580.65") or why it does not


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def _run(argv: list[str]) -> str | None:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def _version(text: str | None) -> str | None:
    """The driver version as the machine spells it (550.144.03), if it is one."""
    try:
        return text.strip() if text and Version(text.strip()) else None
    except InvalidVersion:
        return None


def _nvidia(root: Path, run: Run) -> Gpu | None:
    path = root / "sys/module/nvidia/version"
    if found := _version(_read(path)):
        return Gpu(vendor="nvidia", driver=found, source=str(path))
    path = root / "proc/driver/nvidia/version"
    text = _read(path)
    if text is not None:
        fields = text.split("  ")  # "NVRM version: NVIDIA UNIX ... x86_64  550.144.03  Release"
        return Gpu(vendor="nvidia", driver=_version(fields[1]) if len(fields) > 1 else None,
                   source=str(path))
    out = run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"])
    if out and (found := _version(out.splitlines()[0])):
        return Gpu(vendor="nvidia", driver=found, source="nvidia-smi")
    return None


def _amd(root: Path, run: Run) -> Gpu | None:
    if (root / "dev/kfd").exists() and (root / "sys/module/amdgpu").is_dir():
        return Gpu(vendor="amd", driver=None, source=str(root / "dev/kfd"))
    out = run(["rocminfo"])
    if out and any(line.split(":")[-1].strip().startswith("gfx") for line in out.splitlines()
                   if line.strip().startswith("Name:")):
        return Gpu(vendor="amd", driver=None, source="rocminfo")
    return None


def _intel(root: Path) -> Gpu | None:
    for device in sorted((root / "sys/bus/pci/devices").glob("*")):
        try:
            cls = int((_read(device / "class") or "").strip(), 16)
            vendor = int((_read(device / "vendor") or "").strip(), 16)
        except ValueError:
            continue
        if cls & 0xFF0000 == 0x030000 and vendor == 0x8086:
            return Gpu(vendor="intel", driver=None, source=str(device))
    return None


def detect(root: Path = Path("/"), *, os_: str | None = None, arch: str | None = None,
           run: Run | None = None) -> Host:
    """This machine (or the one *root* describes): OS, arch, libc and GPUs."""
    os_ = os_ or host_os()
    arch = arch_family(arch or platform.machine())
    if run is None:
        run = _run if root == Path("/") else (lambda argv: None)
    libc = ""
    if os_ == "linux":
        libc = "musl" if any((root / "lib").glob("ld-musl-*")) else "glibc"
    gpus = tuple(g for g in (_nvidia(root, run), _amd(root, run), _intel(root)) if g)
    return Host(os=os_, arch=arch, libc=libc, gpus=gpus if os_ != "macos" else ())


def min_driver(platform: Platform) -> str | None:
    """The oldest NVIDIA driver a CUDA platform's builds run on (None: not CUDA)."""
    if platform.backend.kind != "cuda" or not platform.backend.version:
        return None
    return driver_minimum(platform.backend.version, platform.os)


def driver_minimum(cuda: str, os_: str) -> str | None:
    """The oldest NVIDIA driver that runs a CUDA *cuda* build ("12.6" or a bare major "12")
    on *os_*; None for a CUDA major the table does not know."""
    try:
        major = Version(cuda).major
    except InvalidVersion:
        return None
    return _MIN_DRIVER.get(os_, _MIN_DRIVER["linux"]).get(major)


def _why_not(platform: Platform, host: Host) -> str | None:
    if platform.os != host.os:
        return f"OS {platform.os}, this machine runs {host.os}"
    if arch_family(platform.arch) != host.arch:
        return f"arch {platform.arch}, this machine is {host.arch}"
    libc = "musl" if "musl" in platform.python_platform else "glibc"
    if host.libc and platform.os == "linux" and libc != host.libc:
        return f"libc {libc}, this machine has {host.libc}"
    vendor = _VENDOR.get(platform.backend.kind)
    if vendor is None:
        return None
    gpu = host.gpu(vendor)
    if gpu is None:
        return f"needs {_VENDOR_NAME[vendor]}; none found"
    need = min_driver(platform)
    if need and gpu.driver and Version(gpu.driver) < Version(need):
        return (f"CUDA {platform.backend.version} needs NVIDIA driver >= {need}; "
                f"this machine has {gpu.driver}")
    return None


def _why(platform: Platform, host: Host) -> str:
    gpu = host.gpu(_VENDOR.get(platform.backend.kind, ""))
    if gpu is None:
        return f"{platform.backend.kind} on {host.os} {host.arch}"
    driver = f" driver {gpu.driver}" if gpu.driver else ""
    return f"{_LABEL[gpu.vendor]}{driver} ({gpu.source})"


def _best_first(platform: Platform) -> tuple[int, tuple[int, ...], int, str]:
    version = Version(platform.backend.version) if platform.backend.version else Version("0")
    return (_KIND_ORDER.get(platform.backend.kind, 9), tuple(-p for p in version.release),
            0 if platform.torch_index else 1, platform.name)


def rank(platforms: Iterable[Platform], host: Host,
         aliases: bool = False) -> tuple[list[Ruling], list[Ruling]]:
    """(the platforms *host* can run, best first; the others, each with its reason).
    Family names (aliases) are left out unless asked: their target is ranked by its name."""
    fits, out = [], []
    for plat in sorted((p for p in platforms if aliases or not p.alias_of), key=_best_first):
        why_not = _why_not(plat, host)
        if why_not:
            out.append(Ruling(platform=plat, reason=why_not))
        else:
            fits.append(Ruling(platform=plat, reason=_why(plat, host)))
    return fits, sorted(out, key=lambda r: r.platform.name)


def pick(platforms: Iterable[Platform], host: Host, available: set[str]) -> Ruling | None:
    """The best platform this machine runs among *available* (those with a lock or a
    wheelhouse); None when there is none."""
    fits, _ = rank([p for p in platforms if p.name in available], host, aliases=True)
    return fits[0] if fits else None


def choose(platforms: dict[str, Platform], available: set[str], what: str,
           host: Host | None = None) -> Ruling:
    """``verify`` / ``wheelhouse unpack`` without ``--platform``: the best platform this
    machine runs among those with a *what* (a lock, an archive), or a usage error that
    says why each one was ruled out."""
    host = host or detect()
    picked = pick(platforms.values(), host, available)
    if picked is not None:
        return picked
    _, out = rank([p for n, p in platforms.items() if n in available], host, aliases=True)
    why = "; ".join(f"{r.platform.name}: {r.reason}" for r in out) or f"no {what} found"
    found = sorted(n for n in platforms if n in available)
    raise UsageError(f"--platform: required: no platform with a {what} runs on this machine "
                     f"({why})",
                     hint=(f"name the one to use: {', '.join(found)}; " if found
                           else "") + "'lockkit platforms --host' says what runs here")
