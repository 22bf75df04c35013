"""``lockkit verify``: rebuild the lock in a new venv, run every step, write the dossier.
The steps table (or ``--json``, the dossier's document) goes to stdout, status to stderr."""

from __future__ import annotations

import contextlib
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from lockkit._internal import ui
from lockkit.cli.common import (
    check_given_paths,
    lock_fetcher,
    new_report_folder,
    output_inputs,
    pick_platform,
    shown_path,
)
from lockkit.cli.flags import FORCE, OUTPUT_RULE, output, project_args
from lockkit.errors import UsageError, VerifyError

if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable

    from lockkit._internal.outfile import Given, Target
    from lockkit._internal.redact import Secrets
    from lockkit.config.project import Project
    from lockkit.report.records import Variant
    from lockkit.verify.run import Outcome

__all__ = ["DESCRIPTION", "HELP", "VerifyOptions", "add_arguments", "add_install_from", "handle"]

HELP = "rebuild the lock in a fresh venv and prove it works"
# verify's steps, in the order they run (lockkit.verify.run.PLAN; tests/cli/test_truth.py
# holds them equal)
DESCRIPTION = (
    "Rebuild locks/pylock.<platform>.toml into a new venv and check it, one step each, in "
    "order: host, venv, install (from the wheelhouse, no network), pip-check, inventory "
    "(against the lock), system (the driver and runtime chain), gpu (no silent CPU "
    "fallback), extensions (the compiled modules [verify.extensions] names, imported and "
    "smoke-tested), application (the project's own check, [verify.application] or the "
    "embedding check), resume (a training resumed from its checkpoint against one "
    "uninterrupted, [verify.resume]). A check the project does not declare says so in "
    "its row. Writes dossier.json, dossier.md and installed-after.txt. Exit 0 passed, "
    "1 a check failed or the result is incomplete, 2 usage or configuration error.")


def add_arguments(ver: argparse.ArgumentParser) -> None:
    """The flags of the rebuild and its checks, then those of the report."""
    ver.add_argument("--platform", metavar="NAME",
                     help="platform to verify (default: the config's only platform)")
    add_install_from(ver)
    ver.add_argument("--installer", choices=("uv", "pip"), default="uv",
                     help="uv (default: fast, no pip in the venv) or pip (the plain "
                          "'python -m venv' + 'pip install' procedure)")
    ver.add_argument("--no-gpu", action="store_true",
                     help="skip GPU work: on a GPU platform the gpu and application "
                          "steps (result: incomplete); on a CPU platform nothing")
    ver.add_argument("--report-dir", type=Path, metavar="DIR",
                     help="where the dossier goes: a new or empty folder, or an earlier report "
                          "of the platform (default: .lockkit/reports/<platform>/<UTC time>, "
                          "-2, -3... if taken)")
    ver.add_argument("--keep-venv", action="store_true",
                     help="keep the rebuilt venv in its temp folder (its path is printed; the "
                          "folder is yours to remove). For a venv to work in, use 'lockkit sync'")
    ver.add_argument("--existing", type=Path, metavar="PYTHON",
                     help="check this interpreter's environment as it is, not rebuilt (nothing "
                          "installed or changed; files against RECORD): result passed-existing")
    ver.add_argument("--fetch-wheels", action="store_true",
                     help="with --existing: fetch the lock's wheels that are not at hand (by "
                          "hash, through the download cache) to compare their RECORD")
    ver.add_argument("--strict", action="store_true",
                     help="with --existing: packages the lock does not name (but pip, "
                          "setuptools, wheel), and files no RECORD lists, fail the inventory")
    ver.add_argument("--allow-extra", action="append", default=[], metavar="NAME",
                     help="with --existing: accept this package the lock does not name, its "
                          "start-up code too, on your word (repeatable; the dossier lists it)")
    ver.add_argument("--probe-timeout", type=float, default=300.0, metavar="S",
                     help="seconds before a hung probe counts as failed (default 300)")
    ver.add_argument("--collect-env", action="store_true",
                     help="record torch's collect_env report in the dossier even when the GPU "
                          "step passes (it always runs when that step fails; it costs "
                          "seconds: pip, nvidia-smi and a torch import of its own)")
    ver.add_argument("--cache-dir", type=Path, metavar="DIR",
                     help="download cache when fetching the lock's URLs (with --existing: "
                          "where the lock's wheels are looked for, for their RECORD)")
    _report_arguments(ver)
    ver.set_defaults(options=VerifyOptions.from_namespace)


def _report_arguments(ver: argparse.ArgumentParser) -> None:
    ver.add_argument("--junit", type=output, metavar="FILE",
                     help="also write a JUnit XML report, one test case per step. "
                          + OUTPUT_RULE.format(what="a JUnit report")
                          + ". '--junit -' puts it on stdout in place of the steps table "
                            "(which then goes to stderr); not with --json")
    ver.add_argument("--force", action="store_true", help=FORCE.replace("an output file",
                                                                        "a --junit file"))
    ver.add_argument("--json", action="store_true",
                     help="print the dossier's JSON document (dossier.json) instead of the table")
    ver.add_argument("--absolute-paths", action="store_true", help="write the dossier's paths "
                     "as they are, not relative to its roots (<project>/..., <venv>/...)")
    ver.add_argument("--variant", metavar="NAME",
                     help="record this run as an intended variant (e.g. fp16-weights); "
                          "'lockkit diff' lists its declared differences apart")
    ver.add_argument("--reason", metavar="TEXT", help="why the variant exists (with --variant)")
    ver.add_argument("--changes", action="append", default=[], metavar="LAYER",
                     choices=("code", "data", "packages", "system", "result"),
                     help="a layer the variant is meant to change (repeatable; with --variant)")
    project_args(ver)


def add_install_from(p: argparse.ArgumentParser) -> None:
    """The flags verify and sync share: the wheelhouse to install from, the interpreter."""
    p.add_argument("--wheelhouse", type=Path, metavar="DIR",
                   help="install from this wheelhouse (default: <project>/wheelhouse/"
                        "<platform> if present, else fetch the lock's URLs by hash; with "
                        "--existing: where the lock's wheels are read for their RECORD)")
    p.add_argument("--python", type=Path, metavar="PATH",
                   help="interpreter to build the venv from (default: one of the lock's "
                        "Python version)")


Layer = Literal["code", "data", "packages", "system", "result"]


@dataclass(frozen=True, kw_only=True)
class VerifyOptions:
    """``lockkit verify``'s flags, typed (:class:`lockkit.steps.context.Options` is what
    the run takes, made from these once the project is read)."""

    platform: str | None
    wheelhouse: Path | None
    python: Path | None
    installer: Literal["uv", "pip"]
    no_gpu: bool
    report_dir: Path | None
    keep_venv: bool
    existing: Path | None
    fetch_wheels: bool
    strict: bool
    allow_extra: tuple[str, ...]
    probe_timeout: float
    collect_env: bool
    cache_dir: Path | None
    junit: Given | None
    force: bool
    json: bool
    absolute_paths: bool
    variant: str | None
    reason: str | None
    changes: tuple[Layer, ...]
    project: Path | None
    mirror: tuple[str, ...]
    index_url: str | None

    @classmethod
    def from_namespace(cls, ns: argparse.Namespace) -> VerifyOptions:
        return cls(platform=ns.platform, wheelhouse=ns.wheelhouse, python=ns.python,
                   installer=ns.installer, no_gpu=ns.no_gpu, report_dir=ns.report_dir,
                   keep_venv=ns.keep_venv, existing=ns.existing,
                   fetch_wheels=ns.fetch_wheels, strict=ns.strict,
                   allow_extra=tuple(ns.allow_extra), probe_timeout=ns.probe_timeout,
                   collect_env=ns.collect_env, cache_dir=ns.cache_dir, junit=ns.junit,
                   force=ns.force, json=ns.json, absolute_paths=ns.absolute_paths,
                   variant=ns.variant, reason=ns.reason, changes=tuple(ns.changes),
                   project=ns.project, mirror=tuple(ns.mirror), index_url=ns.index_url)


def handle(options: VerifyOptions) -> int:
    from lockkit._internal.fs import ignored_folder  # tempfile, shutil: not for --help
    from lockkit._internal.outdir import check
    from lockkit.cache.layout import default_cache_dir
    from lockkit.cli.common import load
    from lockkit.steps.context import Options as RunOptions
    from lockkit.verify import existing as existing_env
    from lockkit.verify import run

    project = load(options.project, mirrors=list(options.mirror), index_url=options.index_url)
    platform = pick_platform(project, options.platform, "verify")
    check_given_paths(options.wheelhouse, options.python)
    existing = _existing(options)
    variant = _variant(options)
    report_dir = (check(options.report_dir, kind="report", platform=platform.name,
                        project=project.root, flag="--report-dir")
                  if options.report_dir else None)  # before the run, not after it
    junit = _junit(options, project)

    with ui.progress(f"verifying {platform.name}",
                     total=len(existing_env.plan() if existing else run.plan())) as advance:
        outcome = run.verify(RunOptions(
            project=project, platform=platform,
            wheelhouse=options.wheelhouse.absolute() if options.wheelhouse else None,
            python=options.python.absolute() if options.python else None,
            existing=existing, strict=options.strict, allow_extra=options.allow_extra,
            installer=options.installer, no_gpu=options.no_gpu,
            keep_venv=options.keep_venv, probe_timeout=options.probe_timeout,
            collect_env=options.collect_env,
            cache_root=(options.cache_dir or default_cache_dir()).absolute(),
            command_line=tuple(["lockkit", *sys.argv[1:]]), variant=variant,
            fetch=(lock_fetcher(project, platform, options.cache_dir)
                   if options.fetch_wheels or not existing else None),
            on_step=lambda step: advance(1, description=f"verifying {platform.name}"),
            on_progress=_step_progress(platform.name, advance)))
    stamp = outcome.dossier.started.replace("-", "").replace(":", "")
    # .lockkit/: git-ignored when made here, but for ci/ (the workflow's committed wheel)
    folder = report_dir or new_report_folder(
        ignored_folder(project.root / ".lockkit", committed=("ci",)) / "reports"
        / platform.name, stamp)
    return _report(outcome, folder, options, junit, project.secrets)


def _junit(options: VerifyOptions, project: Project) -> Target | None:
    """``--junit``'s target, checked before the run (a file lockkit did not write, or one of
    the run's inputs, is refused now, not after a long rebuild); ``-`` is stdout, where it
    takes the steps table's place, so not with ``--json``."""
    from lockkit._internal import outfile
    from lockkit.report import junit

    if options.junit is None:
        return None
    if options.junit == outfile.STDOUT and options.json:
        raise UsageError("--junit - and --json both write stdout: give --junit a file")
    inputs = output_inputs(project)
    if options.wheelhouse:
        inputs.add(folders=[(options.wheelhouse, "the wheelhouse installed from")])
    return outfile.check(options.junit, what=junit.WHAT, recognise=junit.recognise,
                         inputs=inputs, force=options.force, flag="--junit")


def _existing(options: VerifyOptions) -> Path | None:
    """``--existing PYTHON``: an interpreter that runs, and no flag of a rebuild beside it
    (``--wheelhouse`` goes with it: its wheels' RECORDs are read); ``--strict`` only with
    it."""
    if options.existing is None:
        if options.strict:
            raise UsageError("--strict goes with --existing PYTHON (a rebuilt venv's extras "
                             "always fail its inventory)")
        if options.allow_extra:
            raise UsageError("--allow-extra goes with --existing PYTHON (a rebuilt venv holds "
                             "the lock's packages only)")
        if options.fetch_wheels:
            raise UsageError("--fetch-wheels goes with --existing PYTHON (a rebuild fetches "
                             "the lock's wheels anyway when there is no wheelhouse)")
        return None
    given = options.existing
    if not given.is_file() or not os.access(given, os.X_OK):
        raise UsageError(f"--existing {given}: " + ("not an executable interpreter"
                                                   if given.exists() else "no such file"))
    for flag, value in (("--python", options.python), ("--keep-venv", options.keep_venv)):
        if value:
            raise UsageError(f"--existing checks an environment as it is: {flag} is for a "
                             "rebuild and does not go with it")
    return given.absolute()  # not resolved: a venv's python links out of the venv


def _variant(options: VerifyOptions) -> Variant | None:
    """``--variant``, ``--reason`` and ``--changes`` as the dossier records them."""
    from lockkit.report.records import Variant

    if bool(options.variant) != bool(options.reason) or (options.changes and not options.variant):
        raise UsageError("--variant, --reason and --changes go together: name the variant, "
                         "say why, and list the layers it changes")
    if options.variant and not options.changes:
        raise UsageError("--variant needs --changes LAYER: the layers this variant is meant "
                         "to change (code, data, packages, system, result)")
    if not (options.variant and options.reason):  # both or neither, checked above
        return None
    return Variant(name=options.variant, reason=options.reason,
                   changes=tuple(sorted(set(options.changes))))


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


def _report(outcome: Outcome, folder: Path, options: VerifyOptions, junit: Target | None,
            secrets: Secrets) -> int:
    """The dossier written into *folder* and shown, *secrets* (the project's) concealed; a
    run that did not pass is the error."""
    from lockkit.report import json as json_format
    from lockkit.report import terminal, write_folder
    from lockkit.report.junit import write_junit
    from lockkit.report.roots import absolute, with_report

    dossier = with_report(outcome.dossier, folder)
    dossier = absolute(dossier) if options.absolute_paths else dossier
    write_folder(folder, dossier, outcome.attachments, secrets)
    if junit:
        write_junit(dossier, junit, secrets)
    if options.json:
        sys.stdout.write(json_format.render(dossier, secrets))
    elif junit is not None and junit.to_stdout:
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
