"""The command line: thin commands over the stages; the only place that exits.

- :mod:`~lockkit.cli.parser`: the commands, usage errors, ``-v`` and ``-q``, the flags'
  ranges;
- one module per command, in pdm's shape: its ``HELP`` and ``DESCRIPTION``, its flags
  declared beside its handler (``add_arguments(parser)``), a frozen options class per
  command or action whose ``from_namespace`` is the one place the parsed flags become
  typed values, and ``handle(options)``: :mod:`~lockkit.cli.platforms`,
  :mod:`~lockkit.cli.compile`, :mod:`~lockkit.cli.wheelhouse` (build; pack, sbom and
  unpack in :mod:`~lockkit.cli.pack`, :mod:`~lockkit.cli.sbom`, :mod:`~lockkit.cli.unpack`),
  :mod:`~lockkit.cli.verify`, :mod:`~lockkit.cli.diagnose`, :mod:`~lockkit.cli.diff`,
  :mod:`~lockkit.cli.ci`, :mod:`~lockkit.cli.export`, :mod:`~lockkit.cli.cache`,
  :mod:`~lockkit.cli.sync`;
- :mod:`~lockkit.cli.flags`: the flags three or more commands share (``--project``, the
  index flags, the output rule of ``-o`` and ``--force``);
- :mod:`~lockkit.cli.common`: what the commands share (the project folder, paths and sizes
  as shown, the platform, path checks, the fetcher, a new report folder).

Every command starts the same way: argparse reads the arguments (``--version`` and
``--help`` are its answers), ``-v`` and ``-q`` (on every command) set the level of every
line on stderr (:mod:`lockkit._internal.log`), the flags become the command's options, and
its ``handle`` runs. Start-up stays cheap by doing less: the parser builds the flags of
the command named first only, so only that command's module (which declares them) is
imported, every one for ``--help``; a command's heavy modules are imported inside it, when
it runs.

May import: every stage
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import argparse
    from collections.abc import Collection

__all__ = ["main", "run"]

def main(argv: list[str] | None = None) -> int:
    """Run one command; every failure ends as one line (and a hint) and an exit status:
    0 done, 1 a failure (a check, the network, a file that cannot be written), 2 bad input
    (flags, config, platform files, requirement files, locks), 130 interrupted (Ctrl-C),
    143 and 129 ended by SIGTERM and SIGHUP, which clean up as Ctrl-C does.

    SIGTERM and SIGHUP raise from the start, as before the start-up work of issue 35 tried
    to take them (and the endings module's imports) off ``--version``'s path: with them
    raising only inside the command, a Ctrl-C under a stalled server ended one run in
    seven or so killed by SIGINT (-2) instead of exit 130, after its own message (measured:
    0 of 56 with this, 1 in 7 without)."""
    from lockkit._internal.endings import raising

    try:
        with raising():  # SIGTERM and SIGHUP raise KeyboardInterrupt's subclass Terminated
            _open_standard_streams()
            return _main(sys.argv[1:] if argv is None else argv)
    except KeyboardInterrupt as exc:
        return _interrupted(exc)
    except RuntimeError as exc:
        # Python 3.11 wraps an exception raised while a class body's descriptors are set
        # up (a module being imported) in RuntimeError: gh-77757, no longer from 3.12
        if isinstance(exc.__cause__, KeyboardInterrupt):
            return _interrupted(exc.__cause__)
        raise


def run() -> None:
    """The console script and ``python -m lockkit``."""
    sys.exit(main())


def _main(argv: list[str]) -> int:
    from lockkit.errors import LockkitError, WriteError

    command = "lockkit"  # what a hint tells to run --help on, once the command is known
    try:
        from lockkit.cli.parser import (
            COMMANDS,
            build_parser,
            check_ranges,
            command_of,
            verbosity,
        )

        parser = build_parser(_flags_of(argv, COMMANDS))
        try:
            args = parser.parse_args(argv)
        except SystemExit as done:  # --help, --version: argparse has printed the answer
            sys.stdout.flush()
            return done.code if isinstance(done.code, int) else 0
        if not args.command:
            parser.print_help(sys.stderr)
            return 2
        command = command_of(args)
        check_ranges(args)
        code: int = _run_command(args, command, verbosity(args))
        sys.stdout.flush()  # a closed pipe shows here, not at interpreter exit
        return code
    except LockkitError as exc:
        advice = exc.advice_for(command)
        project = getattr(args, "project", None) if command != "lockkit" else None
        if project is not None:  # the hinted commands carry it (cli.common.for_project)
            from lockkit.cli.common import for_project

            advice = for_project(advice, project)
        _fail(str(exc), advice)
        return exc.exit_code
    except BrokenPipeError:
        # The reader went away (``lockkit platforms --json | head -1``): nothing to say, and
        # nowhere to say it; stdout is pointed at devnull so the exit flush stays quiet.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except OSError as exc:  # a full disk, a read-only folder: the file and the reason
        _fail(_os_error(exc), WriteError.default_hint)
        return WriteError.exit_code


def _run_command(args: argparse.Namespace, command: str, verbosity: int) -> int:
    """The command's ``handle``, given its frozen options (the one place the parsed flags
    become them: the ``from_namespace`` its parser names), its messages at the level
    ``-v``/``-q`` chose (set back to the default after: tests run many commands in one
    process); with ``-v``, its time."""
    import importlib
    import time

    from lockkit._internal import log
    from lockkit._internal.redact import NO_SECRETS
    from lockkit.cli.parser import COMMANDS

    logger = log.configure(verbosity)
    log.hide(NO_SECRETS)  # no other project's values: this command's come as it loads it
    start = time.perf_counter()
    try:
        options = args.options(args)
        code: int = importlib.import_module(COMMANDS[args.command]).handle(options)
    finally:
        logger.log(log.VERBOSE, "%s: done in %.2f s", command, time.perf_counter() - start)
        log.configure(0)
    return code


def _flags_of(argv: list[str], commands: Collection[str]) -> str | None:
    """Whose flags the parser builds: the command named first; none ("") for a bare
    ``--version``; every command's (None) for ``--help`` or a word that is no command."""
    if argv and argv[0] in commands:
        return argv[0]
    return "" if argv == ["--version"] else None


def _open_standard_streams() -> None:
    """A closed stdin, stdout or stderr (``lockkit ... >&-``, ``2>&-``) is opened on the
    null device: what the command would write there is dropped and its exit status is
    the usual one. The number stays taken, so no file lockkit opens gets it (a child
    process would write its output into that file)."""
    for fd, name, mode in ((0, "stdin", "r"), (1, "stdout", "w"), (2, "stderr", "w")):
        try:
            os.fstat(fd)
            continue
        except OSError:
            pass
        null = os.open(os.devnull, os.O_RDWR)
        if null != fd:
            os.dup2(null, fd)
            os.close(null)
        if getattr(sys, name) is None:  # Python leaves None for a stream closed at start
            setattr(sys, name, open(fd, mode, closefd=False, encoding="utf-8",  # noqa: SIM115
                                    errors="replace"))


def _interrupted(exc: KeyboardInterrupt) -> int:
    """Ctrl-C's one line and 130; SIGTERM's and SIGHUP's (named) and 128 + the signal."""
    from lockkit._internal import ui
    from lockkit._internal.endings import Terminated
    from lockkit.errors import INTERRUPTED

    how, code = "interrupted", INTERRUPTED
    if isinstance(exc, Terminated):
        how, code = f"terminated ({exc.name})", 128 + exc.signum
    try:
        ui.error(f"lockkit: {how}; nothing was left half-written")
    except (OSError, ValueError):  # SIGHUP: the terminal may be gone
        pass
    return code


def _os_error(exc: OSError) -> str:
    """``<path>: <reason>``; a file met where a folder was needed is said so."""
    import errno
    from pathlib import Path

    if exc.filename is None:
        return str(exc.strerror or exc)
    path = Path(os.fsdecode(exc.filename))
    if exc.errno in (errno.EEXIST, errno.ENOTDIR):
        blocker = next((p for p in (path, *path.parents) if p.exists() and not p.is_dir()), None)
        if blocker is not None:
            return f"{blocker}: not a folder (a file is in the way)"
    return f"{path}: {exc.strerror or exc}"


def _fail(message: str, hint: str | None) -> None:
    from lockkit._internal import ui

    ui.error(f"lockkit: error: {message}")
    if hint:
        ui.error(f"hint: {hint}")
