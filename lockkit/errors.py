"""The LockkitError tree: every failure carries its exit code and a hint.

Only ``cli.main`` turns these into a printed line and an exit status.
"""

from __future__ import annotations

__all__ = [
    "LockkitError",
    "UsageError",
    "ConfigError",
    "PlatformError",
    "ResolutionError",
    "IndexError_",
    "GuardError",
    "StaleLockError",
    "WriteError",
    "CommandError",
]


class LockkitError(Exception):
    """Base error: ``str(err)`` is the one line shown to the user."""

    exit_code = 1
    hint: str | None = None

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        if hint is not None:
            self.hint = hint


class UsageError(LockkitError):
    """Bad flags or arguments."""

    exit_code = 2


class ConfigError(LockkitError):
    """A malformed lockkit.toml, constraint file or requirement line."""

    exit_code = 2


class PlatformError(ConfigError):
    """A malformed or unknown platform definition."""


class ResolutionError(LockkitError):
    """uv found no resolution, or failed to run."""

    exit_code = 1


class IndexError_(LockkitError):
    """An index could not be reached or refused access (named in the message)."""

    exit_code = 1


class GuardError(LockkitError):
    """A resolution that resolved but cannot work on the platform."""

    exit_code = 1


class StaleLockError(LockkitError):
    """``compile --check`` found missing or stale locks."""

    exit_code = 1


class WriteError(LockkitError):
    """A file lockkit writes could not be written: a read-only folder, a full disk."""

    exit_code = 1
    hint = "check that the folder exists, is writable and has free space"


class CommandError(LockkitError):
    """A command lockkit ran failed or passed its timeout; it carries the command's stderr."""

    exit_code = 1

    def __init__(self, message: str, *, argv: tuple[str, ...] = (), returncode: int | None = None,
                 stderr: str = "", timed_out: bool = False, hint: str | None = None) -> None:
        super().__init__(message, hint)
        self.argv, self.returncode, self.stderr, self.timed_out = argv, returncode, stderr, timed_out
