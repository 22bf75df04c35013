"""``lockkit sync``: the project's venv rebuilt from its lock (see :mod:`lockkit.sync`).
The steps table and the verdict go to stdout, progress to stderr."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from lockkit import ui
from lockkit.cli.build import shown_path
from lockkit.errors import UsageError

if TYPE_CHECKING:
    from lockkit.config import Project
    from lockkit.platforms import Platform
    from lockkit.sync import Synced

__all__ = ["cmd_sync"]


def cmd_sync(args: argparse.Namespace) -> int:
    from lockkit import sync
    from lockkit.config import load_project
    from lockkit.verify import Options

    project = load_project(args.project, mirrors=args.mirror, index_url=args.index_url)
    platform = _platform(project, args.platform)
    if args.wheelhouse is not None and not args.wheelhouse.is_dir():
        raise UsageError(f"--wheelhouse {args.wheelhouse}: not a folder")
    if args.python is not None and not args.python.exists():
        raise UsageError(f"--python {args.python}: no such interpreter")
    venv = sync.target(args.venv if args.venv is not None else project.root / ".venv")
    ui.say(f"sync: rebuilding {shown_path(venv)} for {platform.name} beside it "
           f"({venv.name}{sync.NEW}*)")
    done = sync.sync(sync.SyncOptions(venv=venv, verify=args.verify, check=Options(
        project=project, platform=platform,
        wheelhouse=args.wheelhouse.absolute() if args.wheelhouse else None,
        python=args.python.absolute() if args.python else None,
        installer=args.installer, probe_timeout=args.probe_timeout,
        command_line=tuple(["lockkit", *sys.argv[1:]]),
        fetch=_fetcher(project, platform, args.cache_dir),
        on_step=lambda step: ui.say(sync.progress_line(step)))))
    return _report(done, project, platform, args)


def _platform(project: Project, name: str | None) -> Platform:
    """The named platform, else the config's only one, else the best this machine runs
    that has a lock (as verify picks); its lock must exist."""
    from lockkit.platforms import load_platforms, select_platforms

    known = load_platforms(project.root)
    name = name or (project.platforms[0] if len(project.platforms) == 1 else None)
    if name is None:
        from lockkit.host import choose

        picked = choose(known, {n for n in known if project.lock_path(n).is_file()}, "lock")
        name = picked.platform.name
        ui.say(f"sync: picked {name} for this machine ({picked.reason})")
    platform, = select_platforms(known, [name], False, project.platforms)
    if not project.lock_path(platform.name).is_file():
        raise UsageError(f"{project.lock_path(platform.name)}: no lock",
                         hint=f"run 'lockkit compile --platform {platform.name}'")
    return platform


def _fetcher(project: Project, platform: Platform, cache_dir: Path | None
             ) -> Callable[[Path], Path]:
    """Without a wheelhouse: the lock's files fetched by hash into a temp one (as verify)."""
    def fetch(dest: Path) -> Path:
        from lockkit import wheelhouse
        from lockkit.auth import Credentials
        from lockkit.fetch import Cache, default_cache_dir, http_client

        with http_client(credentials=Credentials.for_project(project)) as client:
            wheelhouse.build(project, platform, dest, client=client,
                             cache=Cache((cache_dir or default_cache_dir()).absolute()))
        return dest
    return fetch


def _report(done: Synced, project: Project, platform: Platform,
            args: argparse.Namespace) -> int:
    d = done.dossier
    shown = shown_path(done.venv)
    ui.print_table(f"lockkit sync {platform.name}: "
                   + ("synced" if done.swapped else f"not synced ({d.result})"),
                   ("#", "step", "status", "seconds", "first error / reason"),
                   [(i, s.name, s.shown_status, f"{s.duration_s:.2f}", s.note)
                    for i, s in enumerate(d.steps, 1)], stream=sys.stdout)
    if args.verify:
        _write_dossier(done, project, platform)
    for warning in d.warnings:
        ui.say(f"warning: {warning}")
    if not done.swapped:
        why = d.first_error or d.why_incomplete
        ui.say(f"lockkit: sync {d.result}: {why}; {shown} was not touched"
               if done.venv.exists() else f"lockkit: sync {d.result}: {why}; no venv made")
        return 1
    if done.verified:
        print(f"synced {shown}: verified (every verify step passed)")
    else:
        print(f"synced {shown}: inventory matches the lock; not verified (system/GPU/"
              f"application not run): run 'lockkit verify --platform {platform.name}' "
              "or sync with --verify")
    return 0


def _write_dossier(done: Synced, project: Project, platform: Platform) -> None:
    """With --verify, the dossier of the run, where verify writes its own."""
    from lockkit.cli.check import new_report_folder
    from lockkit.report import write_folder

    stamp = done.dossier.started.replace("-", "").replace(":", "")
    folder = new_report_folder(project.root / ".lockkit" / "reports" / platform.name, stamp)
    write_folder(folder, done.dossier, done.attachments)
    ui.say(f"dossier: {shown_path(folder / 'dossier.json')}")
