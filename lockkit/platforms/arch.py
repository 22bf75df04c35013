"""OS and architecture names: every spelling of a machine (``platform.machine()``,
platform files, wheel tags, CI runner labels) as one family name, and this host's."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable

__all__ = ["ARCH_FAMILY", "OS_OF_SYS_PLATFORM", "SYS_PLATFORM_OF_OS", "arch_family", "host_arch",
           "host_os", "platform_machine"]

# sys.platform -> lockkit's OS name, and back.
OS_OF_SYS_PLATFORM = {"linux": "linux", "darwin": "macos", "win32": "windows"}
SYS_PLATFORM_OF_OS = {v: k for k, v in OS_OF_SYS_PLATFORM.items()}
# Every spelling of a machine architecture (platform.machine(), platform files, wheel tags,
# CI runner labels) -> one family name.
ARCH_FAMILY = {"x86_64": "x86_64", "amd64": "x86_64", "x64": "x86_64",
               "aarch64": "arm64", "arm64": "arm64",
               "ppc64le": "ppc64le", "s390x": "s390x", "x86": "x86", "i686": "x86"}


def arch_family(arch: str) -> str:
    """``AMD64``/``x86_64`` -> ``x86_64``; ``aarch64``/``ARM64`` -> ``arm64``."""
    return ARCH_FAMILY.get(arch.lower(), arch.lower())


def platform_machine(arch: str, spellings: Iterable[str]) -> str:
    """*arch* as the target's interpreter spells ``platform.machine()``: the one of
    *spellings* (an OS's, ``lockkit.platforms.definitions.ARCHES``) it names, ignoring
    case (``amd64`` -> ``AMD64`` on Windows); *arch* itself when none does. Markers compare
    it exactly, so a lock's ``environments`` and lockkit's own selection both use this."""
    return next((s for s in spellings if s.lower() == arch.lower()), arch)


def _machine() -> str:
    """``platform.machine()``: os.uname() where it exists (platform costs ~1 ms to import)."""
    if hasattr(os, "uname"):
        return os.uname().machine
    import platform

    return platform.machine()


def host_os() -> str:
    return OS_OF_SYS_PLATFORM.get(sys.platform, sys.platform)


def host_arch() -> str:
    return arch_family(_machine())
