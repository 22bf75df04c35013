"""uv: the binary lockkit runs (the one its ``uv`` package ships, never one on PATH) and
its version."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from lockkit._internal import proc

__all__ = ["UV_TIMEOUT", "uv_bin", "uv_version"]

UV_TIMEOUT = 900  # seconds: the longest one uv run may take (a resolve, an sdist's build)


def uv_bin() -> str:
    import uv  # the uv package ships the binary; never assume one on PATH

    return uv.find_uv_bin()


@cache
def uv_version(binary: str | None = None) -> str:
    """The version of *binary* (default: the uv package's own, read from its metadata;
    importlib.metadata is imported here, as compile asks while uv runs)."""
    if binary is None or Path(binary) == Path(uv_bin()):
        from importlib import metadata

        return metadata.version("uv")
    out = proc.check([binary, "--version"], what=f"{binary} --version", timeout=60).stdout.split()
    return out[1] if len(out) > 1 else "unknown"
