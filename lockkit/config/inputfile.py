"""What an input file may be, and whether its lines may be shown.

An input (a requirement file, an include, a pyproject.toml) is named by the project, but a
line such as ``-r ~/.netrc`` or ``-r /proc/self/environ`` can point anywhere, and every
refused line is quoted in its error: a secret would be printed, and written into the
dossier that CI uploads. Two rules keep an input's lines from becoming a leak:

- only a regular file is read: a FIFO, a socket or a device is refused without being
  opened (opening a FIFO blocks until a writer comes), and so is anything under ``/proc``,
  ``/dev`` or ``/sys``, which stat as regular files but are views of processes and
  hardware (``/proc/self/environ`` holds the environment's tokens);
- a file outside the project is read, but its lines are never quoted (see
  :func:`is_inside`): an error names the file, the line and the problem only.

"Outside" means outside the project root (the folder of lockkit.toml), symlinks resolved,
not outside its git repository: a dotfiles repository at ``$HOME`` would make
``~/.netrc`` "inside" its own repository.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

from lockkit._internal.compat import tomllib
from lockkit._internal.parse import parse_toml
from lockkit.errors import ConfigError

__all__ = ["NOT_FOUND", "OUTSIDE_HINT", "is_inside", "is_pyproject", "load_toml", "not_regular",
           "read_text"]

NOT_FOUND = "not found"
OUTSIDE_HINT = ("lines of a file outside the project are never shown: fix them in that file, "
                "or move it into the project")
# Kernel and device views: a file there may stat as regular and is still no input.
_SYSTEM = (Path("/proc"), Path("/dev"), Path("/sys"))
_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
          (stat.S_ISCHR, "a device"), (stat.S_ISBLK, "a device"))
_ONLY = "lockkit reads inputs from regular files only"


def is_pyproject(entry: str) -> bool:
    """A ``requirements`` entry read as a pyproject.toml, not as a requirement file."""
    return entry.endswith("pyproject.toml")


def load_toml(path: Path) -> dict[str, Any]:
    """The TOML document at *path* as read (foreign data: its tables are checked by the
    reader of each key); a missing or broken file is one ConfigError naming it."""
    try:
        return parse_toml(path.read_text(encoding="utf-8"), path)
    except FileNotFoundError:
        raise ConfigError(f"{path}: not found") from None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def _system_folder(path: Path) -> Path | None:
    """The kernel or device folder *path* is under, as written or once its links are
    resolved (a link into /proc counts)."""
    for form in (Path(os.path.abspath(path)), path.resolve()):
        for top in _SYSTEM:
            if form == top or top in form.parents:
                return top
    return None


def not_regular(path: Path) -> str | None:
    """Why *path* is no input lockkit reads (:data:`NOT_FOUND` when absent), or None for
    a regular file. Decided by ``stat``, without opening *path*."""
    top = _system_folder(path)
    if top is not None:
        return f"a file under {top}, not a regular file ({_ONLY})"
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return NOT_FOUND
    except OSError as exc:
        return f"cannot read: {exc.strerror or exc}"
    return None if stat.S_ISREG(mode) else f"{_kind(mode)}, not a regular file ({_ONLY})"


def read_text(path: Path, what: str = "file") -> str:
    """*path*'s text, UTF-8; a ConfigError naming it when it is not a regular file or
    cannot be read. Opened without blocking and checked again on the open file, so a FIFO
    put in its place after the check is refused too, never waited on."""
    problem = not_regular(path)
    if problem is not None:
        raise ConfigError(f"{path}: {what} {problem}" if problem == NOT_FOUND
                          else f"{path}: {problem}")
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
        with open(fd, "rb") as fh:
            mode = os.fstat(fh.fileno()).st_mode
            if not stat.S_ISREG(mode):
                raise ConfigError(f"{path}: {_kind(mode)}, not a regular file ({_ONLY})")
            data = fh.read()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})",
                          hint="save the file as UTF-8") from None


def is_inside(path: Path, root: Path) -> bool:
    """Whether *path* is in the project at *root*, both with their links resolved: only
    then may a line of it be quoted in a message, a warning or a dossier."""
    return path.resolve().is_relative_to(root.resolve())
