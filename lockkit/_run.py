"""The one subprocess wrapper: argument lists, a timeout, stderr kept on failure."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from lockkit.redact import redact

# Variables that change how pip/uv behave behind the user's back. A rebuild must
# not depend on them, so every installer call drops them.
_HIDDEN_PREFIXES = ("PIP_", "UV_", "PYTHON", "VIRTUAL_ENV", "CONDA_")
_KEEP = {"UV_CACHE_DIR"}


@dataclass(frozen=True, kw_only=True)
class Result:
    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str

    @property
    def display(self) -> str:
        return redact(" ".join(self.argv))


def isolated_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The process environment minus pip/uv/Python configuration variables."""
    env = {
        k: v for k, v in os.environ.items() if k in _KEEP or not k.startswith(_HIDDEN_PREFIXES)
    }
    env["PIP_CONFIG_FILE"] = os.devnull  # pip: ignore global/user/site config files
    env["PIP_NO_INPUT"] = "1"
    env["PYTHONNOUSERSITE"] = "1"
    env.update(extra or {})
    return env


def call(argv: Sequence[str], *, timeout: float = 600, env: Mapping[str, str] | None = None,
         cwd: str | None = None) -> Result:
    """Run *argv* isolated from pip/uv configuration; never raises on a non-zero exit."""
    try:
        proc = subprocess.run(
            list(argv), capture_output=True, text=True, timeout=timeout,
            env=dict(env) if env is not None else isolated_env(), cwd=cwd,
        )
    except subprocess.TimeoutExpired as exc:
        return Result(argv=tuple(argv), returncode=-1, stdout="",
                      stderr=f"timed out after {exc.timeout:.0f}s")
    return Result(argv=tuple(argv), returncode=proc.returncode, stdout=proc.stdout,
                  stderr=proc.stderr)
