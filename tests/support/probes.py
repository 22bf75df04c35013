"""Shared by several stages' tests (from test_probes.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import uv

from lockkit._internal.proc import isolated_env
from lockkit.probes.probe import (
    ProbeResult,
    run_probe,
)
from tests.support.fake_torch import build_fake_audio, build_fake_torch, build_fake_vision


@pytest.fixture(scope="session")
def numpy_wheel(tmp_path_factory) -> Path:
    """A real numpy wheel, so the fake torch can multiply and the probe can compare."""
    dest = tmp_path_factory.mktemp("numpy-wheel")
    run = subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--only-binary", ":all:",
         "--no-deps", "-d", str(dest), "numpy"], capture_output=True, text=True, timeout=600)
    wheels = sorted(dest.glob("numpy-*.whl"))
    if run.returncode != 0 or not wheels:
        last = (run.stderr.strip().splitlines() or ["no output"])[-1]
        pytest.skip(f"no numpy wheel is available to pip on this machine: {last}")
    return wheels[0]


@pytest.fixture(scope="session")
def fake_venv(tmp_path_factory) -> Callable[..., Path]:
    """``make(numpy=None, **fake)`` -> the interpreter of a venv holding that fake torch."""
    made: dict[tuple[Any, ...], Path] = {}

    def make(numpy: Path | None = None, **fake: Any) -> Path:
        key = (numpy, tuple(sorted(fake.items())))
        if key not in made:
            made[key] = _fake_venv(tmp_path_factory.mktemp("fake-venv"), numpy, fake)
        return made[key]

    return make


def _fake_venv(root: Path, numpy: Path | None, fake: dict[str, Any]) -> Path:
    wheels = root / "wheels"
    build_fake_torch(wheels, **fake)
    if numpy is not None:
        shutil.copy(numpy, wheels)
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    install = subprocess.run(
        [uv.find_uv_bin(), "pip", "install", "--python", str(python), "--no-index",
         "--find-links", str(wheels), "--no-cache", "--no-config", "torch",
         *(["numpy"] if numpy else [])],
        capture_output=True, text=True, env=isolated_env(), timeout=300)
    assert install.returncode == 0, install.stderr
    return python


@pytest.fixture
def venv_of(tmp_path, numpy_wheel) -> Callable[..., Path]:
    """``make(torch, vision=None, audio=None)`` -> a venv's interpreter holding those fakes
    and numpy; ``None``: that companion is not installed."""
    def make(torch: dict[str, Any], vision: dict[str, Any] | None = None,
             audio: dict[str, Any] | None = None) -> Path:
        wheels = tmp_path / "wheels"
        built = [build_fake_torch(wheels, **torch), Path(shutil.copy(numpy_wheel, wheels))]
        if vision is not None:
            built.append(build_fake_vision(wheels, **vision))
        if audio is not None:
            built.append(build_fake_audio(wheels, **audio))
        return venv_with(tmp_path / "venv", built)
    return make


def venv_with(venv: Path, wheels: list[Path]) -> Path:
    """A new venv at *venv* holding exactly *wheels* (no index, no dependencies), installed
    by uv isolated from any configuration; its interpreter."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    subprocess.run([uv.find_uv_bin(), "pip", "install", "--quiet", "--python", str(python),
                    "--no-index", "--no-cache", "--no-config", "--no-deps",
                    *map(str, wheels)], check=True, env=isolated_env(), timeout=300)
    return python


def gpu(python: Path, *args: str, timeout: float = 60, env: dict[str, str] | None = None
        ) -> ProbeResult:
    return run_probe(python, "gpu_probe.py", list(args), timeout, env)


def checks_of(result: ProbeResult) -> dict[str, dict[str, Any]]:
    assert result.status == "passed", result.error
    assert result.data is not None and result.data["probe"] == "gpu"
    return result.data["checks"]
