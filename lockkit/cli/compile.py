"""``lockkit compile``: write locks/pylock.<platform>.toml, or with ``--check`` say whether
every lock is fresh (offline), or with ``--locked`` whether every lock is what a fresh
resolution makes (the CI gate). The table goes to stdout, status to stderr."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from lockkit._internal import tables, ui
from lockkit.cli.flags import project_args
from lockkit.errors import StaleLockError, UsageError

if TYPE_CHECKING:
    import argparse

    from lockkit.config.project import Project
    from lockkit.lock.freshness import Outcome
    from lockkit.platforms.definitions import Platform

__all__ = ["DESCRIPTION", "HELP", "CompileOptions", "add_arguments", "handle"]

HELP = "write locks/pylock.<platform>.toml"
DESCRIPTION = ("Resolve the project's constraints with uv for each platform and write "
               "locks/pylock.<platform>.toml: every file hashed, torch-family packages "
               "only from the platform's PyTorch index.")


def add_arguments(comp: argparse.ArgumentParser) -> None:
    comp.add_argument("--platform", action="append", default=[], metavar="NAME",
                      help="platform to compile (repeatable; default: the config's list)")
    comp.add_argument("--all", action="store_true", help="compile every known platform")
    comp.add_argument("--check", action="store_true",
                      help="write nothing, offline; exit 1 if a lock is missing, stale or "
                           "edited (a file on a host compile does not take it from), or "
                           ".lockkit/ci/requirements.txt was written by another lockkit "
                           "version or for other dependencies")
    comp.add_argument("--locked", action="store_true",
                      help="write nothing; resolve again (the locks' pins preferred) and exit 1 "
                           "naming every package, version, file, URL or hash that differs "
                           "from the committed lock (the CI gate: --check and more; needs the "
                           "indexes)")
    # One uv per core. "One at a time measured faster" was an artefact of the servers'
    # listen backlog of 5 dropping uv's connection bursts (now 128, routing index included).
    jobs = os.cpu_count() or 1
    comp.add_argument("--upgrade", action="store_true",
                      help="resolve afresh: the existing lock's versions are not preferred")
    comp.add_argument("--upgrade-package", action="append", default=[], metavar="NAME",
                      help="let NAME move to its newest allowed version; every other package "
                           "keeps the version the existing lock pins (repeatable)")
    comp.add_argument("--force", action="store_true",
                      help="take a lock edited by hand ('compile --check': modified) as "
                           "preferences; without it (or --upgrade) such a lock is refused")
    comp.add_argument("--exclude-newer", metavar="DATE",
                      help="ignore files uploaded after DATE (RFC 3339, e.g. 2024-10-01): "
                           "resolve as of that day (overrides exclude-newer in lockkit.toml)")
    comp.add_argument("--jobs", type=int, default=jobs,
                      help=f"platforms resolved at once (default {jobs}: the core count)")
    comp.add_argument("--timeout", type=float, default=30.0, metavar="S",
                      help="seconds an index may take to connect or answer before it counts "
                           "as unreachable (default 30); uv tries each request 4 times, so "
                           "an index that never answers fails within 4 x S + 14 seconds")
    comp.add_argument("--max-page-size", type=int, metavar="MIB",
                      help="the largest PyTorch index page read, in MiB (default: "
                           "max-page-size in lockkit.toml, else 64); a larger one fails")
    project_args(comp)
    comp.set_defaults(options=CompileOptions.from_namespace)


@dataclass(frozen=True, kw_only=True)
class CompileOptions:
    """``lockkit compile``'s flags, typed."""

    platform: tuple[str, ...]
    all: bool
    check: bool
    locked: bool
    upgrade: bool
    upgrade_package: tuple[str, ...]
    force: bool
    exclude_newer: str | None
    jobs: int
    timeout: float
    max_page_size: int | None
    project: Path | None
    mirror: tuple[str, ...]
    index_url: str | None

    @classmethod
    def from_namespace(cls, ns: argparse.Namespace) -> CompileOptions:
        return cls(platform=tuple(ns.platform), all=ns.all, check=ns.check, locked=ns.locked,
                   upgrade=ns.upgrade, upgrade_package=tuple(ns.upgrade_package),
                   force=ns.force, exclude_newer=ns.exclude_newer, jobs=ns.jobs,
                   timeout=ns.timeout, max_page_size=ns.max_page_size, project=ns.project,
                   mirror=tuple(ns.mirror), index_url=ns.index_url)


def handle(options: CompileOptions) -> int:
    from lockkit.cli.common import load
    from lockkit.platforms.definitions import load_catalog

    project = load(options.project, mirrors=list(options.mirror), index_url=options.index_url,
                           exclude_newer=options.exclude_newer, max_page_size=options.max_page_size)
    selected = load_catalog(project.root).select(options.platform, options.all, project.platforms,
                                                 project.config_file)
    if options.check:
        return _check(project, selected)
    from lockkit.compile.compiler import compile_platforms

    if options.locked:
        _need_config(project, "--locked")
        outcomes = compile_platforms(project, selected, jobs=options.jobs, locked=True,
                                     timeout=options.timeout,
                                     on_start=lambda p: ui.say(f"{p.name}: resolving..."),
                                     on_warning=ui.warn)
        return _locked(project, outcomes)

    phase = None if ui.interactive() else (lambda p: ui.say(f"{p.name}: resolving..."))
    with ui.progress("resolving " + ", ".join(p.name for p in selected),
                     total=len(selected)) as advance:
        outcomes = compile_platforms(project, selected, jobs=options.jobs,
                                     on_done=lambda o: advance(1), upgrade=options.upgrade,
                                     upgrade_packages=options.upgrade_package,
                                     timeout=options.timeout, on_start=phase,
                                     force=options.force,
                                     on_warning=ui.warn)
    tables.print_table("lockkit compile", ("platform", "status", "packages", "lock"),
                       [(o.platform, o.status, o.packages or "",
                         o.path.relative_to(project.root)) for o in outcomes],
                       stream=sys.stdout, secrets=project.secrets, whole=("platform",),
                       detail=("lock",))
    failed = [o for o in outcomes if o.error]
    for o in failed[1:]:
        ui.error(f"error: {o.error}")
    if failed:
        raise failed[0].error  # type: ignore[misc]
    return 0


def _need_config(project: Project, flag: str) -> None:
    if project.config_file is None:
        raise UsageError(f"{flag}: no lockkit.toml (or [tool.lockkit] in pyproject.toml) "
                         f"in {project.root}",
                         hint="run it in the project's folder, or name that folder "
                              "with --project")


def _check(project: Project, selected: list[Platform]) -> int:
    """``--check``: write nothing; every selected lock fresh, else exit 1 naming the rest.
    What a fresh verdict took on its word is said, one note per platform. The CI
    workflow's pins (:mod:`lockkit.ci.pins`) count too: stale when written by another
    lockkit version or for other dependencies."""
    _need_config(project, "--check")
    from lockkit.lock.freshness import check_platforms  # the gate imports no resolver

    outcomes = check_platforms(project, selected)
    bad = [o for o in outcomes if o.status != "fresh"]
    for o in outcomes:
        detail = f": {o.detail}" if o.detail else ""
        ui.say(f"{o.platform}: {o.status} ({o.path.relative_to(project.root)}){detail}")
        if o.note and o.status == "fresh":
            ui.say(f"note: {o.platform}: {o.note}")
    from lockkit.ci.pins import stale  # .lockkit/ci/requirements.txt, when there is one

    pins = stale(project.root)
    if pins is not None:
        ui.say(pins)
    problems, hints = [], []
    if bad:
        problems.append("locks not fresh: "
                        + ", ".join(f"{o.platform} ({o.status})" for o in bad))
        hints.append(_check_hint(bad))
    if pins is not None:
        problems.append(pins)
        hints.append("run 'lockkit ci github' and commit what it writes")
    if problems:
        raise StaleLockError("; ".join(problems), hint="; ".join(hints))
    return 0


def _check_hint(bad: list[Outcome]) -> str:
    """What makes the locks fresh: a modified lock is refused by a plain compile (it is
    no longer lockkit's to take as preferences), so its hint names the flags compile takes."""
    if any(o.status == "modified" for o in bad):
        return ("run 'lockkit compile --force' to keep the edited versions as preferences, or "
                "'lockkit compile --upgrade' to resolve afresh, and commit the locks")
    return "run 'lockkit compile' and commit the locks"


def _locked(project: Project, outcomes: list[Outcome]) -> int:
    """``--locked``: each lock's verdict, then every difference on a line of its own;
    exit 1 naming the locks that differ (and the first difference of each), or a
    resolution's own error."""
    for o in outcomes:
        if o.error is None:
            detail = f": {o.detail}" if o.detail else ""
            ui.say(f"{o.platform}: {o.status} ({o.path.relative_to(project.root)}){detail}")
            for difference in o.differences:
                ui.say(f"  {difference}")
    failed = [o for o in outcomes if o.error]
    for o in failed[1:]:
        ui.error(f"error: {o.error}")
    if failed:
        raise failed[0].error  # type: ignore[misc]
    bad = [o for o in outcomes if o.status != "matches"]
    if bad:
        raise StaleLockError("locks not what a fresh resolution makes: "
                             + ", ".join(_in_one_line(o) for o in bad),
                             hint="run 'lockkit compile' and commit the locks it writes")
    return 0


def _in_one_line(outcome: Outcome) -> str:
    """``linux-cpu (differs: numpy 2.1.0: ..., and 2 more)``: one lock in the error line."""
    said = [d for d in (outcome.detail, *outcome.differences) if d]
    if not said:
        return f"{outcome.platform} ({outcome.status})"
    more = f", and {len(said) - 1} more" if len(said) > 1 else ""
    return f"{outcome.platform} ({outcome.status}: {said[0]}{more})"
