"""A lock names the OS *and* the architecture it is for, and installers refuse it elsewhere.

``environments`` is ``sys_platform == ... and platform_machine == ...``, spelled as the
target's interpreter reports ``platform.machine()``. The installers are real: uv with
``--python-platform`` (it evaluates the lock's ``environments`` for the target it is told
of), and pip >= 26.1, which reads ``-r pylock.toml`` but always evaluates ``environments``
against the interpreter it runs in (``pip/_internal/utils/pylock.py`` calls
``Pylock.select()`` with no environment; its ``--platform`` does not reach it): pip's test
is an aarch64 lock on an x86_64 machine (or the other way round).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from lockkit._internal.compat import tomllib
from lockkit.cli import main
from lockkit.platforms.arch import host_arch, host_os
from tests.support.project import Loopback, assert_conforms

# platform -> (uv's --python-platform for it, one for the same OS on another CPU)
TARGETS = {
    "linux-cpu": ("x86_64-unknown-linux-gnu", "aarch64-unknown-linux-gnu"),
    "linux-cpu-aarch64": ("aarch64-unknown-linux-gnu", "x86_64-unknown-linux-gnu"),
    "macos-arm64": ("aarch64-apple-darwin", "x86_64-apple-darwin"),
    "windows-cpu": ("x86_64-pc-windows-msvc", "aarch64-pc-windows-msvc"),
}
MARKERS = {
    "linux-cpu": "sys_platform == 'linux' and platform_machine == 'x86_64'",
    "linux-cpu-aarch64": "sys_platform == 'linux' and platform_machine == 'aarch64'",
    "macos-arm64": "sys_platform == 'darwin' and platform_machine == 'arm64'",
    "windows-cpu": "sys_platform == 'win32' and platform_machine == 'AMD64'",
}


def _clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV_"))}
    env["PIP_CONFIG_FILE"] = os.devnull
    return env


def _lock(project: Path, indexes: Loopback, platform: str) -> Path:
    """A one-package lock (filelock: a pure wheel, so any platform resolves it here)."""
    (project / "requirements.in").write_text("filelock\n")
    assert main(["compile", "--project", str(project), "--platform", platform]) == 0
    path = project / "locks" / f"pylock.{platform}.toml"
    lock = tomllib.loads(path.read_text())
    assert_conforms(lock, platform, project)
    assert lock["environments"] == [MARKERS[platform]]
    indexes.forget_requests()
    return path


def _uv_dry_run(lock: Path, python_platform: str, tmp_path: Path) -> subprocess.CompletedProcess:
    import uv

    venv = tmp_path / "venv"
    if not venv.exists():
        subprocess.run([uv.find_uv_bin(), "venv", "--no-config", "-q", "--python",
                        sys.executable, str(venv)], check=True, env=_clean_env())
    return subprocess.run([uv.find_uv_bin(), "pip", "install", "--no-config", "--dry-run",
                           "--python", str(venv / "bin" / "python"), "--cache-dir",
                           str(tmp_path / "uv-cache"), "--python-platform", python_platform,
                           "-r", str(lock)],
                          capture_output=True, text=True, env=_clean_env(), timeout=300)


@pytest.mark.parametrize("platform", sorted(TARGETS))
def test_uv_takes_the_lock_for_its_target_and_refuses_it_on_another_cpu(
        project, indexes, tmp_path, platform):
    lock = _lock(project, indexes, platform)
    own, other = TARGETS[platform]
    refused = _uv_dry_run(lock, other, tmp_path)
    assert refused.returncode != 0, refused.stdout + refused.stderr
    assert "not supported by the lockfile" in refused.stderr
    assert indexes.server.requests == [] and indexes.pt.requests == []  # up front
    taken = _uv_dry_run(lock, own, tmp_path)  # the spelling is uv's for that target
    assert taken.returncode == 0, taken.stderr
    assert "filelock==3.16.1" in taken.stdout + taken.stderr


def _pip26(modern_pip: Path, lock: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, f"{modern_pip}/pip", "install", "--isolated",
                           "--dry-run", "--ignore-installed", "--no-deps", "-r", str(lock)],
                          capture_output=True, text=True, env=_clean_env(), timeout=300)


@pytest.mark.skipif(host_os() != "linux" or host_arch() not in ("x86_64", "arm64"),
                    reason="pip evaluates a lock against the machine it runs on: Linux "
                           "x86_64 or aarch64 is needed for one lock of each")
def test_pip26_refuses_a_lock_for_another_cpu_before_any_download(project, indexes,
                                                                   modern_pip):
    here, there = (("linux-cpu", "linux-cpu-aarch64") if host_arch() == "x86_64"
                   else ("linux-cpu-aarch64", "linux-cpu"))
    refused = _pip26(modern_pip, _lock(project, indexes, there))
    assert refused.returncode != 0
    assert "does not satisfy any of the environments" in refused.stderr, refused.stderr
    assert indexes.server.requests == [] and indexes.pt.requests == []
    taken = _pip26(modern_pip, _lock(project, indexes, here))
    assert taken.returncode == 0, taken.stderr
    assert "filelock-3.16.1" in taken.stdout
