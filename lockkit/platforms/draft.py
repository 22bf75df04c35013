"""A platform file for a PyTorch index variant no platform names yet (``lockkit platforms
--check-index`` prints one per OS and CPU the variant serves).

The draft copies what the variant's name does not say (the Python, the ``[torch]``
packages and file hosts) from the nearest platform already known: the same backend kind,
OS and architecture, newest backend first; then the same kind and OS; then the same OS.
What the name says is filled in: the backend version (``cu132`` is CUDA 13.2,
``rocm7.2`` is ROCm 7.2), the index, the GPU table, and ``releases`` from the oldest torch
the folder serves. The text is what a platform file holds, so ``platforms/<name>.toml``
with it loads as any other (a test parses every draft).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lockkit.platforms.definitions import Kind, Platform

__all__ = ["Draft", "backend_of", "draft", "platform_name"]

_OS_LABEL = {"linux": "Linux", "windows": "Windows", "macos": "macOS"}
_PYTHON_PLATFORM = {("linux", "x86_64"): "x86_64-unknown-linux-gnu",
                    ("linux", "aarch64"): "aarch64-unknown-linux-gnu",
                    ("windows", "AMD64"): "x86_64-pc-windows-msvc",
                    ("windows", "ARM64"): "aarch64-pc-windows-msvc",
                    ("macos", "arm64"): "aarch64-apple-darwin"}
_DEFAULT_ARCH = {"linux": "x86_64", "windows": "AMD64", "macos": "arm64"}
_PACKAGES = ["torch", "torchvision", "torchaudio"]


@dataclass(frozen=True)
class Draft:
    name: str  # the platform's name: platforms/<name>.toml
    text: str  # the file's TOML


def backend_of(variant: str) -> tuple[Kind, str | None]:
    """``cu132`` -> (cuda, 13.2); ``rocm7.2`` -> (rocm, 7.2); ``cpu``, ``xpu`` -> no version."""
    if m := re.fullmatch(r"cu([0-9]+)([0-9])", variant):
        return "cuda", f"{int(m[1])}.{m[2]}"
    if m := re.fullmatch(r"rocm([0-9.]+)", variant):
        return "rocm", m[1]
    return ("xpu" if variant == "xpu" else "cpu"), None


def platform_name(variant: str, os_: str, arch: str) -> str:
    """``linux-cu132``, ``linux-cu132-aarch64``, ``windows-cu132``, ``linux-rocm72``: the
    shipped files' pattern (no dot: PEP 751 lock names; an OS's usual CPU unsaid)."""
    suffix = "" if arch == _DEFAULT_ARCH.get(os_) else f"-{arch.lower()}"
    return f"{os_}-{variant.replace('.', '')}{suffix}"


def _template(known: Iterable[Platform], kind: str, os_: str, arch: str) -> Platform | None:
    """The known platform the draft copies from (see the module's docstring)."""
    from packaging.version import Version

    def newest(p: Platform) -> Version:
        return Version(p.backend.version or "0")

    pool = [p for p in known if not p.alias_of and p.torch_index and p.os == os_]
    for fits in (lambda p: p.backend.kind == kind and p.arch == arch,
                 lambda p: p.backend.kind == kind, lambda p: True):
        found = [p for p in pool if fits(p)]
        if found:
            return max(found, key=newest)
    return None


def draft(variant: str, index: str, os_: str, arch: str, oldest: str,
          known: Iterable[Platform]) -> Draft:
    """The platform file for *variant* (served at *index*, oldest torch *oldest*) on *os_*
    and *arch*, modelled on the nearest of *known*."""
    kind, version = backend_of(variant)
    like = _template(known, kind, os_, arch)
    packages = list(like.torch_packages) if like and like.backend.kind == kind else _PACKAGES
    hosts = list(like.torch_file_hosts) if like else []
    python = like.python if like else "3.11"
    target = (like.python_platform if like and like.arch == arch
              else _PYTHON_PLATFORM.get((os_, arch), ""))
    name = platform_name(variant, os_, arch)
    backend = f"{kind} {version}" if version else kind
    label = {"cuda": f"NVIDIA CUDA {version}", "rocm": f"AMD ROCm {version}",
             "xpu": "Intel GPU (XPU)", "cpu": "CPU-only PyTorch build"}[kind]
    device = {"rocm": "cuda"}.get(kind, kind)
    lines = [f'description = "{_OS_LABEL.get(os_, os_)} {arch}, {label}"',
             f'os = "{os_}"', f'arch = "{arch}"', f'python = "{python}"',
             f'python-platform = "{target}"', "",
             "[backend]", f'kind = "{kind}"']
    lines += [f'version = "{version}"'] if version else []
    lines += ["", "[torch]", f'index = "{index}"']
    lines += [f"file-hosts = {_toml_list(hosts)}"] if hosts else []
    lines += [f"packages = {_toml_list(packages)}", f'releases = ">={_line(oldest)}"', "",
              f"# what the GPU check expects ({backend})", "[gpu]", f'device = "{device}"']
    lines += [f'{"hip" if kind == "rocm" else "cuda"} = "{version}"'] if version else []
    return Draft(name=name, text="\n".join(lines) + "\n")


def _line(version: str) -> str:
    """``2.12.0`` -> ``2.12``: a range starts at a release line."""
    return ".".join(version.split(".")[:2])


def _toml_list(items: Iterable[str]) -> str:
    return "[" + ", ".join(f'"{i}"' for i in items) + "]"
