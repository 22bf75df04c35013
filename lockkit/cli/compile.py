"""``lockkit compile``: write locks/pylock.<platform>.toml, or with ``--check`` say whether
every lock is fresh (offline), or with ``--locked`` whether every lock is what a fresh
resolution makes (the CI gate). The table goes to stdout, status to stderr."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from lockkit._internal import tables, ui
from lockkit.errors import StaleLockError, UsageError

if TYPE_CHECKING:
    import argparse

    from lockkit.config.project import Project
    from lockkit.lock.freshness import Outcome
    from lockkit.platforms.definitions import Platform

__all__ = ["handle"]


def handle(args: argparse.Namespace) -> int:
    from lockkit.cli.common import load
    from lockkit.platforms.definitions import load_catalog

    project = load(args.project, mirrors=args.mirror, index_url=args.index_url,
                           exclude_newer=args.exclude_newer, max_page_size=args.max_page_size)
    selected = load_catalog(project.root).select(args.platform, args.all, project.platforms,
                                                 project.config_file)
    if args.check:
        return _check(project, selected)
    from lockkit.compile.compiler import compile_platforms

    if args.locked:
        _need_config(project, "--locked")
        outcomes = compile_platforms(project, selected, jobs=args.jobs, locked=True,
                                     timeout=args.timeout,
                                     on_start=lambda p: ui.say(f"{p.name}: resolving..."),
                                     on_warning=ui.warn)
        return _locked(project, outcomes)

    phase = None if ui.interactive() else (lambda p: ui.say(f"{p.name}: resolving..."))
    with ui.progress("resolving " + ", ".join(p.name for p in selected),
                     total=len(selected)) as advance:
        outcomes = compile_platforms(project, selected, jobs=args.jobs,
                                     on_done=lambda o: advance(1), upgrade=args.upgrade,
                                     upgrade_packages=tuple(args.upgrade_package),
                                     timeout=args.timeout, on_start=phase,
                                     force=args.force,
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
