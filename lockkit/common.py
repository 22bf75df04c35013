"""Helpers every stage shares: atomic writes, file hashes, OS and architecture names,
the telling line of a command's output. No stage imports another stage for these.
"""

from __future__ import annotations

import hashlib
import os
import platform as _platform
import re
import sys
import tempfile
from pathlib import Path

from lockkit.errors import ConfigError, WriteError
from lockkit.redact import redact

__all__ = ["ARCH_FAMILY", "OS_OF_SYS_PLATFORM", "SYS_PLATFORM_OF_OS", "arch_family", "host_arch",
           "host_os", "last_error_line", "sha256_file", "write_atomic"]

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


def host_os() -> str:
    return OS_OF_SYS_PLATFORM.get(sys.platform, sys.platform)


def host_arch() -> str:
    return arch_family(_platform.machine())


def write_atomic(path: Path, text: str) -> None:
    """Temp file in the same folder, fsync, rename: never a half-written file.

    A folder that cannot be written (read-only, full) is a WriteError naming *path*.
    """
    if path.is_dir():
        raise ConfigError(f"{path}: is a folder, where a file is to be written",
                          hint="move the folder away")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    except OSError as exc:
        raise WriteError(f"{path}: cannot write: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise WriteError(f"{path}: cannot write: {exc.strerror or exc}") from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


_ERROR_LINE = re.compile(r"(error|ERROR|×)")


def last_error_line(text: str, *, limit: int = 300) -> str:
    """The line of a command's output that says what went wrong: its first line that
    reads as an error, else its last line; redacted and at most *limit* characters."""
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    errors = [ln for ln in lines if _ERROR_LINE.match(ln)]
    line = errors[0] if errors else (lines[-1] if lines else "no output")
    return redact(line[:limit])
