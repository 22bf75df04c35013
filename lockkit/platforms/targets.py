"""The marker environment and wheel tags of a platform, for selecting from its lock.

The target is described by the platform file, not by this machine: a wheelhouse
for ``linux-cu126`` is built on a Mac just as well. Its Python is the lock's own
(:func:`lockkit.lock.meta.python_of`), never the platform's default: a project's
``python = "3.12"`` makes a 3.12 lock on a platform whose default is 3.11.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from packaging import tags
from packaging.markers import Environment
from packaging.pylock import Package, Pylock, PylockSelectError

from lockkit.platforms.arch import platform_machine
from lockkit.platforms.definitions import ARCHES, Platform

__all__ = ["NothingInstallable", "environment", "select", "wheel_tags"]


class NothingInstallable(ValueError):
    """A lock that installs nothing on a platform; the message names the lock, the platform
    and the Python. Each caller raises it as its own error (a build's, a trust check's, an
    export's), with this message."""

_ENV = {  # os -> (os_name, sys_platform, platform_system)
    "linux": ("posix", "linux", "Linux"),
    "macos": ("posix", "darwin", "Darwin"),
    "windows": ("nt", "win32", "Windows"),
}
_DEFAULT_GLIBC = 28  # uv's x86_64-unknown-linux-gnu means manylinux_2_28


def environment(platform: Platform, python: str) -> Environment:
    """The markers of *platform* with Python *python* (``"3.12"``)."""
    os_name, sys_platform, system = _ENV[platform.os]
    return {
        "os_name": os_name, "sys_platform": sys_platform, "platform_system": system,
        "platform_machine": platform_machine(platform.arch, ARCHES[platform.os]),
        "platform_release": "", "platform_version": "",
        "python_version": python, "python_full_version": f"{python}.0",
        "implementation_name": "cpython", "implementation_version": f"{python}.0",
        "platform_python_implementation": "CPython",
    }


def _platform_tags(platform: Platform) -> list[str]:
    arch = platform.arch.lower()
    if platform.os == "windows":
        return {"amd64": ["win_amd64"], "arm64": ["win_arm64"]}.get(arch, ["win32"])
    if platform.os == "macos":
        major, minor = (int(x) for x in (platform.macos_target or "11.0").split(".")[:2])
        return list(tags.mac_platforms((major, minor), platform.arch))
    found = re.search(r"manylinux_2_(\d+)", platform.python_platform)
    glibc = int(found.group(1)) if found else _DEFAULT_GLIBC
    many = [f"manylinux_2_{m}_{arch}" for m in range(glibc, 16, -1)]
    legacy = {17: "manylinux2014", 12: "manylinux2010", 5: "manylinux1"}
    return many + [f"{v}_{arch}" for k, v in legacy.items() if k <= glibc] + [f"linux_{arch}"]


def wheel_tags(platform: Platform, python: str) -> list[tags.Tag]:
    """Tags in preference order, as a Python *python* interpreter of the target would
    list them."""
    version = tuple(int(x) for x in python.split(".")[:2])
    plats = _platform_tags(platform)
    interpreter = f"cp{version[0]}{version[1]}"
    return [*tags.cpython_tags(version, platforms=plats),
            *tags.compatible_tags(version, interpreter=interpreter, platforms=plats)]


def select(pylock: Pylock, platform: Platform, python: str,
           lock_path: Path) -> list[tuple[Package, Any]]:
    """What *pylock* installs on *platform*, as a Python *python* interpreter of the
    target would choose (*python*: the lock's own, :func:`lockkit.lock.meta.python_of`); a
    lock with nothing for it raises :class:`NothingInstallable`, naming the lock."""
    try:
        return list(pylock.select(environment=environment(platform, python),
                                  tags=wheel_tags(platform, python)))
    except PylockSelectError as exc:
        raise NothingInstallable(f"{lock_path}: nothing installable for {platform.name} "
                                 f"with Python {python}: {exc}") from exc
