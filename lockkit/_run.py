"""The one subprocess wrapper: argument lists, a timeout, stderr kept on failure."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from lockkit.redact import redact

# Variables that change how pip/uv behave behind the user's back. A rebuild must
# not depend on them, so every installer call drops them.
_HIDDEN_PREFIXES = ("PIP_", "UV_", "PYTHON", "VIRTUAL_ENV", "CONDA_")
_KEEP = {"UV_CACHE_DIR"}
_GRACE = 5.0  # seconds to collect a killed group's last output


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
    """Run *argv* isolated from pip/uv configuration; never raises on a non-zero exit.

    The command runs in its own session (POSIX), so that at the timeout, or when lockkit
    itself is interrupted, its whole process group is killed: an application or installer
    that started children of its own leaves none running.
    """
    proc = subprocess.Popen(
        list(argv), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, env=dict(env) if env is not None else isolated_env(), cwd=cwd,
        start_new_session=os.name != "nt")
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        return Result(argv=tuple(argv), returncode=-1, stdout="",
                      stderr=f"timed out after {timeout:.0f}s")
    except BaseException:  # Ctrl-C: the group is not in the terminal's foreground
        _kill_group(proc)
        raise
    return Result(argv=tuple(argv), returncode=proc.returncode, stdout=out, stderr=err)


def _kill_group(proc: subprocess.Popen[str]) -> None:
    """Kill *proc* and everything in its process group, then reap it."""
    if os.name == "nt":
        proc.kill()  # Windows: no process groups to signal; the child alone
    else:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    try:
        proc.communicate(timeout=_GRACE)
    except subprocess.TimeoutExpired:  # a grandchild left the group and holds a pipe
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()
        proc.wait()
