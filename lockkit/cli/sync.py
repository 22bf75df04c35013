"""``lockkit sync``: the project's venv rebuilt from its lock (see :mod:`lockkit.verify.sync`).
The steps table and the verdict go to stdout, progress to stderr."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from lockkit._internal import tables, ui
from lockkit.cli.common import (
    check_given_paths,
    lock_fetcher,
    new_report_folder,
    pick_platform,
    shown_path,
)

if TYPE_CHECKING:
    from lockkit.config.project import Project
    from lockkit.platforms.definitions import Platform
    from lockkit.verify.sync import Synced

__all__ = ["handle"]


def handle(args: argparse.Namespace) -> int:
    from lockkit.cli.common import load
    from lockkit.steps.context import Options
    from lockkit.verify import sync

    project = load(args.project, mirrors=args.mirror, index_url=args.index_url)
    platform = pick_platform(project, args.platform, "sync")
    check_given_paths(args)
    venv = sync.target(args.venv if args.venv is not None else project.root / ".venv",
                       platform.name, project=project.root,
                       flag="--venv" if args.venv is not None else None, force=args.force)
    ui.say(f"sync: rebuilding {shown_path(venv)} for {platform.name} beside it "
           f"({venv.name}{sync.NEW}*)")
    done = sync.sync(sync.SyncOptions(venv=venv, verify=args.verify, check=Options(
        project=project, platform=platform,
        wheelhouse=args.wheelhouse.absolute() if args.wheelhouse else None,
        python=args.python.absolute() if args.python else None,
        installer=args.installer, probe_timeout=args.probe_timeout,
        command_line=tuple(["lockkit", *sys.argv[1:]]),
        fetch=lock_fetcher(project, platform, args.cache_dir),
        on_step=lambda step: ui.say(sync.progress_line(step))), force=args.force))
    return _report(done, project, platform, args)


def _report(done: Synced, project: Project, platform: Platform,
            args: argparse.Namespace) -> int:
    d = done.dossier
    shown = shown_path(done.venv)
    tables.print_table(f"lockkit sync {platform.name}: "
                       + ("synced" if done.swapped else f"not synced ({d.result})"),
                       ("#", "step", "status", "seconds", "first error / reason"),
                       [(i, s.name, s.shown_status, f"{s.duration_s:.2f}", s.note)
                        for i, s in enumerate(d.steps, 1)], stream=sys.stdout,
                       secrets=project.secrets, whole=("step",))
    if args.verify:
        _write_dossier(done, project, platform, absolute_paths=args.absolute_paths)
    for warning in d.warnings:
        ui.warn(warning)
    if not done.swapped:
        from lockkit.errors import VerifyError

        why = d.first_error or d.why_incomplete
        kept = f"{shown} was not touched" if done.venv.exists() else "no venv made"
        raise VerifyError(f"sync {d.result}: {why}; {kept}",  # ends as every failure does
                          hint="the table above names the step; 'lockkit sync --verify' "
                               "also writes a dossier")
    if done.verified:
        print(f"synced {shown}: verified (every verify step passed)")
    else:
        print(f"synced {shown}: inventory matches the lock; not verified (system/GPU/"
              f"application not run): run 'lockkit verify --platform {platform.name}' "
              "or sync with --verify")
    return 0


def _write_dossier(done: Synced, project: Project, platform: Platform, *,
                   absolute_paths: bool) -> None:
    """With --verify, the dossier of the run, where verify writes its own (its paths
    relative to its roots, as verify's, unless --absolute-paths)."""
    from lockkit._internal.fs import ignored_folder
    from lockkit.report import write_folder
    from lockkit.report.roots import absolute, with_report

    stamp = done.dossier.started.replace("-", "").replace(":", "")
    # .lockkit/: git-ignored when made here, but for ci/ (the workflow's committed wheel)
    reports = ignored_folder(project.root / ".lockkit", committed=("ci",)) / "reports"
    folder = new_report_folder(reports / platform.name, stamp)
    dossier = with_report(done.dossier, folder)
    write_folder(folder, absolute(dossier) if absolute_paths else dossier, done.attachments,
                 project.secrets)
    ui.say(f"dossier: {shown_path(folder / 'dossier.json')}")
