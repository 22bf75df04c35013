"""The command line: thin commands over the library; the only place that exits.

- :mod:`~lockkit.cli.parser`: the commands, flags and help;
- :mod:`~lockkit.cli.build`: platforms, compile, wheelhouse;
- :mod:`~lockkit.cli.check`: verify, diagnose, diff, ci;
- :mod:`~lockkit.cli.sync`: sync;
- :mod:`~lockkit.cli.common`: what verify and sync share (the platform, path checks, the fetcher).

A command's module is imported only when that command runs. A warm ``wheelhouse
build`` (``build.wheelhouse_build_warm``) is read before argparse is imported, and the
modules it runs (this package, ``build``, ``lockkit.ui``, ``lockkit.errors``,
``lockkit.buildmemo``; ``parser`` too) leave ``typing`` unimported, 2 ms of a 25 ms run:
they write ``TYPE_CHECKING = False`` and import ``typing`` under it (mypy reads any name
``TYPE_CHECKING`` as true), their annotations being strings.
"""

from __future__ import annotations

import os
import sys

from lockkit import __version__

__all__ = ["main", "run"]

_COMMANDS = {"platforms": "build", "compile": "build", "wheelhouse": "build",
             "verify": "check", "diagnose": "check", "diff": "check", "ci": "check",
             "export": "export", "cache": "cachecmd", "sync": "sync"}


def main(argv: list[str] | None = None) -> int:
    """Run one command; every failure ends as one line (and a hint) and an exit status:
    0 done, 1 a failure (a check, the network, a file that cannot be written), 2 bad input
    (flags, config, platform files, requirement files, locks), 130 interrupted."""
    args_in = sys.argv[1:] if argv is None else argv
    if args_in == ["--version"]:  # the cheapest answer: no argparse, no pathlib, no lockkit
        print(f"lockkit {__version__}")
        return 0
    return _main(args_in)


def run() -> None:
    """The console script and ``python -m lockkit``: :func:`main`, then an exit without
    the interpreter's teardown of every module (measured: ~10 ms of a 160 ms compile once
    ssl, email and the like are imported). Output is flushed and atexit's functions run
    first; with a non-daemon thread still running, or output that cannot be flushed, the
    exit is the usual one."""
    code = main()
    import atexit

    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        sys.exit(code)
    threading = sys.modules.get("threading")
    if threading is not None and any(t.is_alive() and not t.daemon
                                     and t is not threading.main_thread()
                                     for t in threading.enumerate()):
        sys.exit(code)
    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    os._exit(code)


def _main(argv: list[str]) -> int:
    if argv[:1] == ["compile"]:  # the uv of an earlier identical compile, first of all
        from lockkit import earlyuv

        earlyuv.launch(argv[1:])
    import importlib

    from lockkit import ui
    from lockkit.errors import INTERRUPTED, LockkitError, WriteError

    try:
        if argv[:2] == ["wheelhouse", "build"]:  # a warm rebuild needs no argparse (4 ms)
            from lockkit.cli.build import wheelhouse_build_warm

            if wheelhouse_build_warm(argv[2:]):
                sys.stdout.flush()
                return 0
        if argv[:1] == ["compile"]:
            from lockkit import earlyuv

            done = earlyuv.finished_unchanged()
            if done is not None:  # the last compile again: its lock, as it is
                platform, packages, shown = done
                ui.print_table("lockkit compile", ("platform", "status", "packages", "lock"),
                               [(platform, "unchanged", packages or "", shown)],
                               stream=sys.stdout)
                sys.stdout.flush()
                return 0
        from lockkit.cli.parser import build_parser, check_ranges

        # flags of the command named first only; "--help" or an unknown word: all of them
        parser = build_parser(argv[0] if argv and argv[0] in _COMMANDS else None)
        args = parser.parse_args(argv)
        if not args.command:
            parser.print_help(sys.stderr)
            return 2
        check_ranges(args)
        module = importlib.import_module(f"lockkit.cli.{_COMMANDS[args.command]}")
        code = getattr(module, f"cmd_{args.command}")(args)
        sys.stdout.flush()  # a closed pipe shows here, not at interpreter exit
        return code
    except LockkitError as exc:
        _fail(str(exc), exc.advice)
        return exc.exit_code
    except BrokenPipeError:
        # The reader went away (``lockkit platforms --json | head -1``): nothing to say, and
        # nowhere to say it; stdout is pointed at devnull so the exit flush stays quiet.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except OSError as exc:  # a full disk, a read-only folder: the file and the reason
        _fail(_os_error(exc), WriteError.default_hint)
        return WriteError.exit_code
    except KeyboardInterrupt:
        ui.say("lockkit: interrupted; nothing was left half-written")
        return INTERRUPTED
    finally:
        early = sys.modules.get("lockkit.earlyuv")
        if early is not None:
            early.discard()  # a uv started early and not taken (a failure, another path)


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
    from lockkit import ui

    ui.say(f"lockkit: error: {message}")
    if hint:
        ui.say(f"hint: {hint}")
