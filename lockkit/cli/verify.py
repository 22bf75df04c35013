"""``lockkit verify``: rebuild the lock in a new venv, run every step, write the dossier.
The steps table (or ``--json``, the dossier's document) goes to stdout, status to stderr."""

from __future__ import annotations

import contextlib
import os
import sys
from typing import TYPE_CHECKING, Any

from lockkit._internal import ui
from lockkit._internal.fs import ignored_folder
from lockkit.cli.common import (
    check_given_paths,
    lock_fetcher,
    new_report_folder,
    output_inputs,
    pick_platform,
    shown_path,
)
from lockkit.errors import UsageError, VerifyError

if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable
    from pathlib import Path

    from lockkit._internal.redact import Secrets
    from lockkit.report.records import Variant
    from lockkit.verify.run import Outcome

__all__ = ["handle"]


def handle(args: argparse.Namespace) -> int:
    from lockkit._internal.outdir import check
    from lockkit.cache.layout import default_cache_dir
    from lockkit.cli.common import load
    from lockkit.steps.context import Options as VerifyOptions
    from lockkit.verify import existing as existing_env
    from lockkit.verify import run

    project = load(args.project, mirrors=args.mirror, index_url=args.index_url)
    platform = pick_platform(project, args.platform, "verify")
    check_given_paths(args)
    existing = _existing(args)
    variant = _variant(args)
    report_dir = (check(args.report_dir, kind="report", platform=platform.name,
                        project=project.root, flag="--report-dir")
                  if args.report_dir else None)  # before the run, not after it
    args.junit = _junit(args, project)

    with ui.progress(f"verifying {platform.name}",
                     total=len(existing_env.plan() if existing else run.plan())) as advance:
        outcome = run.verify(VerifyOptions(
            project=project, platform=platform,
            wheelhouse=args.wheelhouse.absolute() if args.wheelhouse else None,
            python=args.python.absolute() if args.python else None,
            existing=existing, strict=args.strict, allow_extra=tuple(args.allow_extra),
            installer=args.installer, no_gpu=args.no_gpu,
            keep_venv=args.keep_venv, probe_timeout=args.probe_timeout,
            collect_env=args.collect_env,
            cache_root=(args.cache_dir or default_cache_dir()).absolute(),
            command_line=tuple(["lockkit", *sys.argv[1:]]), variant=variant,
            fetch=(lock_fetcher(project, platform, args.cache_dir)
                   if args.fetch_wheels or not existing else None),
            on_step=lambda step: advance(1, description=f"verifying {platform.name}"),
            on_progress=_step_progress(platform.name, advance)))
    stamp = outcome.dossier.started.replace("-", "").replace(":", "")
    # .lockkit/: git-ignored when made here, but for ci/ (the workflow's committed wheel)
    folder = report_dir or new_report_folder(
        ignored_folder(project.root / ".lockkit", committed=("ci",)) / "reports"
        / platform.name, stamp)
    return _report(outcome, folder, args, project.secrets)


def _junit(args: argparse.Namespace, project: Any) -> Any:
    """``--junit``'s target, checked before the run (a file lockkit did not write, or one of
    the run's inputs, is refused now, not after a long rebuild); ``-`` is stdout, where it
    takes the steps table's place, so not with ``--json``."""
    from lockkit._internal import outfile
    from lockkit.report import junit

    if args.junit is None:
        return None
    if args.junit == outfile.STDOUT and args.json:
        raise UsageError("--junit - and --json both write stdout: give --junit a file")
    inputs = output_inputs(project)
    if args.wheelhouse:
        inputs.add(folders=[(args.wheelhouse, "the wheelhouse installed from")])
    return outfile.check(args.junit, what=junit.WHAT, recognise=junit.recognise,
                         inputs=inputs, force=args.force, flag="--junit")


def _existing(args: argparse.Namespace) -> Path | None:
    """``--existing PYTHON``: an interpreter that runs, and no flag of a rebuild beside it
    (``--wheelhouse`` goes with it: its wheels' RECORDs are read); ``--strict`` only with
    it."""
    if args.existing is None:
        if args.strict:
            raise UsageError("--strict goes with --existing PYTHON (a rebuilt venv's extras "
                             "always fail its inventory)")
        if args.allow_extra:
            raise UsageError("--allow-extra goes with --existing PYTHON (a rebuilt venv holds "
                             "the lock's packages only)")
        if args.fetch_wheels:
            raise UsageError("--fetch-wheels goes with --existing PYTHON (a rebuild fetches "
                             "the lock's wheels anyway when there is no wheelhouse)")
        return None
    given = args.existing
    if not given.is_file() or not os.access(given, os.X_OK):
        raise UsageError(f"--existing {given}: " + ("not an executable interpreter"
                                                   if given.exists() else "no such file"))
    for flag, value in (("--python", args.python), ("--keep-venv", args.keep_venv)):
        if value:
            raise UsageError(f"--existing checks an environment as it is: {flag} is for a "
                             "rebuild and does not go with it")
    return given.absolute()  # not resolved: a venv's python links out of the venv


def _variant(args: argparse.Namespace) -> Variant | None:
    """``--variant``, ``--reason`` and ``--changes`` as the dossier records them."""
    from lockkit.report.records import Variant

    if bool(args.variant) != bool(args.reason) or (args.changes and not args.variant):
        raise UsageError("--variant, --reason and --changes go together: name the variant, "
                         "say why, and list the layers it changes")
    if args.variant and not args.changes:
        raise UsageError("--variant needs --changes LAYER: the layers this variant is meant "
                         "to change (code, data, packages, system, result)")
    return (Variant(name=args.variant, reason=args.reason,
                    changes=tuple(sorted(set(args.changes)))) if args.variant else None)


def _step_progress(platform: str, advance: ui.Advance) -> Callable[[str, int, int], None]:
    said: set[str] = set()

    def step_progress(what: str, done: int, total: int) -> None:
        """On a terminal, the bar says how far the step is; off one, a line once."""
        if ui.interactive():
            advance(0, description=f"verifying {platform}: {what} {done}/{total} packages")
        elif what not in said:
            said.add(what)
            ui.say(f"{platform}: {what} {total} packages...")
    return step_progress


def _report(outcome: Outcome, folder: Path, args: argparse.Namespace,
            secrets: Secrets) -> int:
    """The dossier written into *folder* and shown, *secrets* (the project's) concealed; a
    run that did not pass is the error."""
    from lockkit.report import json as json_format
    from lockkit.report import terminal, write_folder
    from lockkit.report.junit import write_junit
    from lockkit.report.roots import absolute, with_report

    dossier = with_report(outcome.dossier, folder)
    dossier = absolute(dossier) if args.absolute_paths else dossier
    write_folder(folder, dossier, outcome.attachments, secrets)
    if args.junit:
        write_junit(dossier, args.junit, secrets)
    if args.json:
        sys.stdout.write(json_format.render(dossier, secrets))
    elif args.junit is not None and args.junit.to_stdout:
        with contextlib.redirect_stdout(sys.stderr):  # the report took stdout's place
            terminal.steps_table(dossier, secrets)
    else:
        terminal.steps_table(dossier, secrets)
    terminal.warnings(dossier)
    if outcome.venv:
        ui.say(f"venv kept: {outcome.venv} (remove {outcome.venv.parent} when done; "
               "'lockkit sync' builds a venv to work in)")
    ui.say(f"dossier: {shown_path(folder / 'dossier.json')} "
           "(and dossier.md, installed-after.txt)")
    if not dossier.passed:  # ends as every failure does: "lockkit: error: ..."
        raise VerifyError(f"verify {dossier.result}: "
                          f"{dossier.first_error or dossier.why_incomplete}",
                          hint=f"every step's result and output: "
                               f"{shown_path(folder / 'dossier.md')}")
    return 0
