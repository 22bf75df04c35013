"""The argument parser: the commands in the order ``--help`` lists them, lockkit's one-line
usage errors, and the checks of the flags' values; each command's flags are in
:mod:`~lockkit.cli.flags`. Nothing runs here."""

from __future__ import annotations

import argparse
import math
import os
import sys
from typing import TYPE_CHECKING

from lockkit import __version__
from lockkit.cli import flags, whflags
from lockkit.errors import UsageError

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = ["FLAGS", "build_parser", "check_ranges", "command_of"]


class _Formatter(argparse.HelpFormatter):
    """argparse's formatter without its ``import shutil``: argparse builds one for every
    flag it adds (to check the metavar), and shutil pulls in bz2 and lzma. The width is
    shutil.get_terminal_size's: $COLUMNS, else the terminal's, else 80."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                 width: int | None = None) -> None:
        if width is None:
            width = _columns() - 2
        super().__init__(prog, indent_increment, max_help_position, width)


def _columns() -> int:
    try:
        return int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        pass
    stdout = sys.__stdout__
    try:
        return (os.get_terminal_size(stdout.fileno()).columns if stdout else 0) or 80
    except (ValueError, OSError):
        return 80


class _Parser(argparse.ArgumentParser):
    """argparse with lockkit's one-line errors (subcommand parsers inherit the class)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> Any:
        command = self.prog.removeprefix("lockkit").strip()  # "compile", "wheelhouse build"
        raise UsageError(f"{command}: {message}" if command else message,
                         hint=f"see '{self.prog} --help'")


# Numeric flags and the range each must be in: (attribute, flag, test, what it must be).
_RANGES: tuple[tuple[str, str, Any, str], ...] = (
    ("jobs", "--jobs", lambda v: v >= 1, "at least 1"),
    ("retries", "--retries", lambda v: v >= 0, "0 or more"),
    ("timeout", "--timeout", lambda v: math.isfinite(v) and v > 0, "a number of seconds above 0"),
    ("probe_timeout", "--probe-timeout", lambda v: math.isfinite(v) and v > 0,
     "a number of seconds above 0"),
)


def check_ranges(args: argparse.Namespace) -> None:
    """Each numeric flag in its range, and no two flags that exclude each other."""
    for attr, flag, ok, must in _RANGES:
        value = getattr(args, attr, None)
        if value is not None and not ok(value):
            raise UsageError(f"{flag} {value}: must be {must}")
    for first, second, why in _EXCLUSIVE:
        if getattr(args, first, None) and getattr(args, second, None):
            shown = tuple("--" + a.replace("_", "-") for a in (first, second))
            raise UsageError(f"{shown[0]} and {shown[1]} cannot be given together: {why}",
                             hint=f"see '{command_of(args)} --help'")


# Flags that contradict each other: (attribute, attribute, why), checked on any command.
_EXCLUSIVE: tuple[tuple[str, str, str], ...] = (
    ("all", "platform", "--all is every known platform"),
    ("check", "upgrade", "--check writes nothing, so nothing is upgraded"),
    ("check", "upgrade_package", "--check writes nothing, so nothing is upgraded"),
    ("check", "force", "--check writes nothing, so no lock is taken as preferences"),
    ("locked", "check", "--locked checks everything --check does, and resolves again"),
    ("locked", "upgrade", "--locked compares with the locks' own pins"),
    ("locked", "upgrade_package", "--locked compares with the locks' own pins"),
    ("locked", "force", "--locked reports an edited lock as a difference"),
)


def command_of(args: argparse.Namespace) -> str:
    """The command as typed, up to its action: ``lockkit wheelhouse build``."""
    action = getattr(args, f"{args.command}_command", None)
    return " ".join(filter(None, ("lockkit", args.command, action)))


# Every command and the function that adds its flags, in the order of ``lockkit --help``.
FLAGS: dict[str, Callable[[Any], None]] = {
    "platforms": flags.platforms, "compile": flags.compile, "wheelhouse": whflags.wheelhouse,
    "verify": flags.verify, "diagnose": flags.diagnose, "diff": flags.diff, "ci": flags.ci,
    "export": flags.export, "cache": flags.cache, "sync": flags.sync}


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The command line; with *only*, that command's flags alone, the other commands
    neither built nor listed (the fixed cost of every run); ``""``, none (``--version``)."""
    parser = _Parser(
        prog="lockkit",
        description="Rebuildable PyTorch environments: per-platform PEP 751 locks with hashes "
                    "and pinned PyTorch indexes.")
    parser.add_argument("--version", action="version", version=f"lockkit {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, add_flags in FLAGS.items():
        if only in (None, name):
            add_flags(sub)
    return parser
