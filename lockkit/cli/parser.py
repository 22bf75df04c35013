"""The argument parser: the commands in the order ``--help`` lists them, lockkit's one-line
usage errors, ``-v`` and ``-q`` on every parser, and the checks of the flags' values. Each
command's flags are declared in its own module, beside its handler
(:func:`build_parser` asks it for them); the flags three or more commands share are
:mod:`~lockkit.cli.flags`'. Nothing runs here."""

from __future__ import annotations

import argparse
import math
import os
import sys
from typing import TYPE_CHECKING, Protocol, cast

from lockkit import __version__
from lockkit.errors import UsageError

if TYPE_CHECKING:
    from typing import Any

__all__ = ["COMMANDS", "Command", "build_parser", "check_ranges", "command_of", "verbosity"]

# Every command and the module that declares its flags and handles it, in the order of
# ``lockkit --help``.
COMMANDS = {"platforms": "lockkit.cli.platforms", "compile": "lockkit.cli.compile",
            "wheelhouse": "lockkit.cli.wheelhouse", "verify": "lockkit.cli.verify",
            "diagnose": "lockkit.cli.diagnose", "diff": "lockkit.cli.diff",
            "ci": "lockkit.cli.ci", "export": "lockkit.cli.export",
            "cache": "lockkit.cli.cache", "sync": "lockkit.cli.sync"}


class Command(Protocol):
    """What a command's module declares (pdm's ``cli/commands/<name>.py`` shape): its line
    in ``lockkit --help``, its description, and :meth:`add_arguments`, which adds its flags
    (or its actions, each with theirs) to the parser made for it and names, with
    ``set_defaults(options=...)``, the frozen options class whose ``from_namespace`` turns
    the parsed flags into what its ``handle(options)`` takes."""

    HELP: str
    DESCRIPTION: str

    def add_arguments(self, parser: argparse.ArgumentParser) -> None: ...


class _Formatter(argparse.HelpFormatter):
    """argparse's formatter without its ``import shutil``: argparse builds one for every
    flag it adds (to check the metavar), and shutil pulls in bz2 and lzma. The width is
    shutil.get_terminal_size's: $COLUMNS, else the terminal's, else 80."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                 width: int | None = None) -> None:
        if width is None:
            width = _columns() - 2
        super().__init__(prog, indent_increment, max_help_position, width)

    def _split_lines(self, text: str, width: int) -> list[str]:
        """argparse's lines, never broken at a hyphen: a step (``pip-check``) or a flag
        (``--find-links``) named in a help text stays whole."""
        return _wrapped(text, width)

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        return "\n".join(_wrapped(text, width, indent))


def _wrapped(text: str, width: int, indent: str = "") -> list[str]:
    """*text*'s words in lines of *width* at most, each after *indent*, never broken at a
    hyphen."""
    import textwrap

    return textwrap.wrap(" ".join(text.split()), width, initial_indent=indent,
                         subsequent_indent=indent, break_on_hyphens=False)


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
        _verbosity_flags(self)

    def error(self, message: str) -> Any:
        command = self.prog.removeprefix("lockkit").strip()  # "compile", "wheelhouse build"
        message += _close_choice(message)
        raise UsageError(f"{command}: {message}" if command else message,
                         hint=f"see '{self.prog} --help'")

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        """argparse's, but a flag no command knows is the error of the command it was
        given to (argparse reports it from the top, where no flag could be suggested)."""
        parsed, extras = super().parse_known_args(args, namespace)
        if extras and self.prog == "lockkit":
            _refuse_flags(parsed, extras)
            _innermost(self, parsed).error(
                f"unrecognized arguments: {' '.join(extras)}" + _close_flag(self, parsed, extras))
        return parsed, extras


def _verbosity_flags(parser: argparse.ArgumentParser) -> None:
    """``-v`` and ``-q`` on every parser, lockkit's and each command's and action's
    (``lockkit -v compile`` and ``lockkit compile -v`` alike), counted. Each parser counts
    into a name of its own, absent when not given: argparse copies a command's namespace
    over lockkit's, so one shared name would keep one level's count only
    (:func:`verbosity` adds them up)."""
    parser.add_argument("-v", "--verbose", action="count", default=argparse.SUPPRESS,
                        dest=f"verbose {parser.prog}",
                        help="say more: the URLs fetched, the decisions taken (which index "
                             "a package comes from, cache hits, the lock's Python) and each "
                             "step's time; -vv: debug lines too")
    parser.add_argument("-q", "--quiet", action="count", default=argparse.SUPPRESS,
                        dest=f"quiet {parser.prog}",
                        help="errors only: no status lines, warnings or progress bars (what "
                             "the command prints on stdout stays)")


def _counted(args: argparse.Namespace, flag: str) -> int:
    return sum(n for name, n in vars(args).items() if name.startswith(flag + " "))


def verbosity(args: argparse.Namespace) -> int:
    """``-v`` counted positive, ``-q`` negative, wherever on the line they were given."""
    return _counted(args, "verbose") - _counted(args, "quiet")


def _close_choice(message: str) -> str:
    """`` (did you mean 'compile'?)`` after argparse's ``invalid choice: 'compil' (choose
    from ...)``, a command, an action or a flag's value; nothing when none is close."""
    import re

    from lockkit._internal.keys import did_you_mean

    found = re.search(r"invalid choice: (.+?) \(choose from (.+)\)$", message)
    if not found:
        return ""
    choices = [c.strip().strip("'") for c in found.group(2).split(",")]
    return did_you_mean(found.group(1).strip("'"), choices)


def _innermost(parser: argparse.ArgumentParser,
               parsed: argparse.Namespace) -> argparse.ArgumentParser:
    """The parser of the command as typed: ``lockkit wheelhouse build``'s, not lockkit's."""
    command = getattr(parsed, "command", None)
    for dest in ("command", f"{command}_command"):
        subparsers = next((a for a in parser._actions  # noqa: SLF001 (argparse's own list)
                           if isinstance(a, argparse._SubParsersAction)), None)  # noqa: SLF001
        name = getattr(parsed, dest, None)
        if subparsers is None or name not in subparsers.choices:
            break
        parser = subparsers.choices[name]
    return parser


# Flags a command refuses on purpose, each with where its value belongs instead:
# (command, flag) -> (why, hint); VALUE is the value given, or a placeholder.
_REFUSED: dict[tuple[str, str], tuple[str, str]] = {
    ("compile", "--python"): (
        "the lock's Python comes from the project, not from a flag",
        'set python = "VALUE" in lockkit.toml (or [tool.lockkit]), or requires-python in '
        "pyproject.toml's [project]; 'lockkit compile -v' says which Python each lock is for"),
}


def _refuse_flags(parsed: argparse.Namespace, extras: list[str]) -> None:
    """A flag of :data:`_REFUSED` among *extras*: one line saying where its value belongs
    (argparse alone says "unrecognized arguments", which leads nowhere)."""
    for i, extra in enumerate(extras):
        flag, sep, value = extra.partition("=")
        refused = _REFUSED.get((getattr(parsed, "command", None) or "", flag))
        if refused is None:
            continue
        if not sep:
            value = extras[i + 1] if i + 1 < len(extras) else ""
        why, hint = refused
        value = value if value[:2] == "3." and value[2:].isdigit() else "X.Y"
        raise UsageError(f"{parsed.command} {flag}: {why}", hint=hint.replace("VALUE", value))


def _close_flag(parser: argparse.ArgumentParser, parsed: argparse.Namespace,
                extras: list[str]) -> str:
    """The did-you-mean of the first unknown flag among *extras*, from its command's flags."""
    from lockkit._internal.keys import did_you_mean

    flag = next((e.split("=", 1)[0] for e in extras if e.startswith("--")), None)
    if flag is None:
        return ""
    known = [s for a in _innermost(parser, parsed)._actions  # noqa: SLF001
             for s in a.option_strings if s.startswith("--")]
    return did_you_mean(flag, known)


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
    if _counted(args, "verbose") and _counted(args, "quiet"):
        raise UsageError("-v and -q cannot be given together: -q is errors only",
                         hint=f"see '{command_of(args)} --help'")
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


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The command line; with *only*, that command's flags alone, the other commands
    neither built nor listed (the fixed cost of every run); ``""``, none (``--version``)."""
    parser = _Parser(
        prog="lockkit",
        description="Rebuildable PyTorch environments: per-platform PEP 751 locks with hashes "
                    "and pinned PyTorch indexes.")
    parser.add_argument("--version", action="version", version=f"lockkit {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    if only == "":
        return parser
    import importlib

    for name, module in COMMANDS.items():
        if only in (None, name):  # the command's module, with pathlib, loads here
            command = cast("Command", importlib.import_module(module))
            command.add_arguments(sub.add_parser(name, help=command.HELP,
                                                 description=command.DESCRIPTION))
    return parser
