"""``lockkit sync``: the project's venv rebuilt from its lock (see :mod:`lockkit.verify.sync`).
The steps table and the verdict go to stdout, progress to stderr."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from lockkit._internal import tables, ui
from lockkit.cli.common import (
    check_given_paths,
    lock_fetcher,
    new_report_folder,
    pick_platform,
    shown_path,
)
from lockkit.cli.flags import project_args
from lockkit.cli.verify import add_install_from

if TYPE_CHECKING:
    from lockkit.config.project import Project
    from lockkit.platforms.definitions import Platform
    from lockkit.verify.sync import Synced

__all__ = ["DESCRIPTION", "HELP", "SyncOptions", "add_arguments", "handle"]

HELP = "rebuild the project's venv from the lock, fresh, and swap it in"
DESCRIPTION = ("Rebuild a venv (default <project>/.venv, the one 'uv sync' uses) from "
               "locks/pylock.<platform>.toml with verify's steps: host, venv, install "
               "(from the wheelhouse, else the lock's URLs by hash), pip-check, "
               "inventory. The new venv is built beside the old one and swapped in "
               "only when every step passed; on a failure the old venv is untouched. "
               "Only a new or empty folder, or a venv lockkit made for the same "
               "platform, is written or replaced. Exit 0 synced, 1 a step failed "
               "(nothing replaced), 2 bad input.")


def add_arguments(syn: argparse.ArgumentParser) -> None:
    syn.add_argument("--platform", metavar="NAME",
                     help="platform whose lock to install (default: the config's only "
                          "platform, else the best this machine runs that has a lock)")
    syn.add_argument("--venv", type=Path, metavar="DIR",
                     help="venv to create or replace: a new or empty folder, or a venv "
                          "lockkit made for the platform (default: <project>/.venv)")
    add_install_from(syn)
    syn.add_argument("--installer", choices=("uv", "pip"), default="uv",
                     help="uv (default: a --relocatable venv, no pip in it) or pip "
                          "('python -m venv' + 'pip install'; its paths are rewritten to "
                          "the final folder before the swap)")
    syn.add_argument("--verify", action="store_true",
                     help="also run verify's system, gpu, extensions, application and "
                          "resume steps, swap only if all pass, and write the dossier to "
                          ".lockkit/reports/<platform>/")
    syn.add_argument("--probe-timeout", type=float, default=300.0, metavar="S",
                     help="seconds before a hung probe counts as failed (with --verify)")
    syn.add_argument("--absolute-paths", action="store_true", help="with --verify: write the "
                     "dossier's paths as they are, not relative to its roots")
    syn.add_argument("--cache-dir", type=Path, metavar="DIR",
                     help="download cache when fetching the lock's URLs")
    syn.add_argument("--force", action="store_true",
                     help="replace lockkit's venv even when it holds files no package "
                          "installed (an editable checkout in src/, notes): they are removed")
    project_args(syn)
    syn.set_defaults(options=SyncOptions.from_namespace)


@dataclass(frozen=True, kw_only=True)
class SyncOptions:
    """``lockkit sync``'s flags, typed."""

    platform: str | None
    venv: Path | None
    wheelhouse: Path | None
    python: Path | None
    installer: Literal["uv", "pip"]
    verify: bool
    probe_timeout: float
    absolute_paths: bool
    cache_dir: Path | None
    force: bool
    project: Path | None
    mirror: tuple[str, ...]
    index_url: str | None

    @classmethod
    def from_namespace(cls, ns: argparse.Namespace) -> SyncOptions:
        return cls(platform=ns.platform, venv=ns.venv, wheelhouse=ns.wheelhouse,
                   python=ns.python, installer=ns.installer, verify=ns.verify,
                   probe_timeout=ns.probe_timeout, absolute_paths=ns.absolute_paths,
                   cache_dir=ns.cache_dir, force=ns.force, project=ns.project,
                   mirror=tuple(ns.mirror), index_url=ns.index_url)


def handle(options: SyncOptions) -> int:
    from lockkit.cli.common import load
    from lockkit.steps.context import Options
    from lockkit.verify import sync

    project = load(options.project, mirrors=list(options.mirror), index_url=options.index_url)
    platform = pick_platform(project, options.platform, "sync")
    check_given_paths(options.wheelhouse, options.python)
    venv = sync.target(options.venv if options.venv is not None else project.root / ".venv",
                       platform.name, project=project.root,
                       flag="--venv" if options.venv is not None else None, force=options.force)
    ui.say(f"sync: rebuilding {shown_path(venv)} for {platform.name} beside it "
           f"({venv.name}{sync.NEW}*)")
    done = sync.sync(sync.SyncOptions(venv=venv, verify=options.verify, check=Options(
        project=project, platform=platform,
        wheelhouse=options.wheelhouse.absolute() if options.wheelhouse else None,
        python=options.python.absolute() if options.python else None,
        installer=options.installer, probe_timeout=options.probe_timeout,
        command_line=tuple(["lockkit", *sys.argv[1:]]),
        fetch=lock_fetcher(project, platform, options.cache_dir),
        on_step=lambda step: ui.say(sync.progress_line(step))), force=options.force))
    return _report(done, project, platform, options)


def _report(done: Synced, project: Project, platform: Platform, options: SyncOptions) -> int:
    d = done.dossier
    shown = shown_path(done.venv)
    tables.print_table(f"lockkit sync {platform.name}: "
                       + ("synced" if done.swapped else f"not synced ({d.result})"),
                       ("#", "step", "status", "seconds", "first error / reason"),
                       [(i, s.name, s.shown_status, f"{s.duration_s:.2f}", s.note)
                        for i, s in enumerate(d.steps, 1)], stream=sys.stdout,
                       secrets=project.secrets, whole=("step",))
    if options.verify:
        _write_dossier(done, project, platform, absolute_paths=options.absolute_paths)
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
