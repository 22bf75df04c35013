"""uv: the binary lockkit runs (the one its ``uv`` package ships, never one on PATH) and
its version."""

from __future__ import annotations

from functools import cache

from lockkit._internal import proc

__all__ = ["UV_TIMEOUT", "uv_bin", "uv_version"]

UV_TIMEOUT = 900  # seconds: the longest one uv run may take (a resolve, an sdist's build)


def uv_bin() -> str:
    import uv  # the uv package ships the binary; never assume one on PATH

    return uv.find_uv_bin()


@cache
def uv_version(binary: str | None = None) -> str:
    """The version *binary* (default: the uv package's own) reports, from ``--version``.
    Asked of the binary, not of the package's metadata: compile asks while uv runs, and
    ``uv --version`` (~8 ms of CPU, nearly all in uv's own process) leaves the interpreter
    lock to the routing index, where importlib.metadata scans every distribution of the
    environment in this one (~30 ms of CPU on a loaded 2-core machine, plus its teardown)."""
    binary = binary or uv_bin()
    out = proc.check([binary, "--version"], what=f"{binary} --version", timeout=60).stdout.split()
    return out[1] if len(out) > 1 else "unknown"
