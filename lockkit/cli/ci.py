"""``lockkit ci github``: write the CI workflow that checks the locks and verifies every
platform with a committed lock on its own runner. Status goes to stderr."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from lockkit._internal import ui
from lockkit.cli.common import output_inputs, shown_path
from lockkit.errors import UsageError

if TYPE_CHECKING:
    import argparse

    from lockkit._internal.outfile import Target
    from lockkit.config.keys import LockkitRequirement
    from lockkit.config.project import Project
    from lockkit.platforms.definitions import Platform
    from lockkit.wheelhouse.toolpins import Tool

__all__ = ["handle"]


def handle(args: argparse.Namespace) -> int:
    if args.ci_command == "take-locks":
        return _take_locks(args)
    return _github(args)


def _take_locks(args: argparse.Namespace) -> int:
    """``ci take-locks``: the refresh artifact's locks into the project's, or one line."""
    from lockkit.ci.intake import take_locks
    from lockkit.config.project import project_root

    # the folder alone: the job has none of the config's ${VAR}s, and needs none of it
    written = take_locks(args.artifact, project_root(args.project) / "locks", args.platform)
    for path in written:
        ui.say(f"took {shown_path(path)}")
    return 0


def _github(args: argparse.Namespace) -> int:
    from lockkit._internal import outfile
    from lockkit.ci import ownwheel, pins
    from lockkit.ci import refresh as rf
    from lockkit.ci import workflow as ci
    from lockkit.cli.common import load
    from lockkit.config.keys import REFRESH_SCHEDULES
    from lockkit.platforms.definitions import load_catalog

    if args.refresh is not None and args.refresh not in REFRESH_SCHEDULES:
        raise UsageError(f"--refresh: expected one of {', '.join(REFRESH_SCHEDULES)}, "
                         f"got {args.refresh!r}")
    repo, rel = ci.locate_project(args.project, Path.cwd())
    project = load(repo / rel)
    schedule = args.refresh or project.ci.refresh
    default = repo / ci.DEFAULT_OUTPUT
    refresh_target = _refresh_target(args, project, default) if schedule else None
    pins_target = outfile.check(repo / pins.pins_path(rel), what=pins.WHAT,
                                recognise=pins.recognise, force=args.force,
                                inputs=output_inputs(project))
    target = outfile.check(args.output or default, what=ci.WHAT,
                           recognise=ci.recognise, force=args.force,
                           flag="-o" if args.output else None,
                           inputs=output_inputs(project))
    catalog = load_catalog(project.root)
    selected = catalog.select(args.platform, args.all, project.platforms, project.config_file)
    runners = ci.validate_runners(project.ci.runners, [*catalog.platforms, *catalog.broken],
                                  where=f"{project.config_file}: [ci.runners]")
    lockkit = (ci.pin_files(project.ci.lockkit, repo, f"{project.config_file}: [ci] lockkit")
               if project.ci.lockkit else None)
    kept, left = ci.split_by_lock(selected, repo, rel)
    for name, why in left:
        ui.say(f"left out {name}: {why}")
    if not kept:
        raise UsageError("no platform has a committed lock, so the workflow would verify "
                         "nothing", hint="run 'lockkit compile', then commit locks/")
    own = None
    if lockkit is None:  # lockkit's own wheel, installed by its hash: no name to squat
        lockkit, own = ownwheel.own_lockkit(rel, project)
    from lockkit.lock.python import lock_python  # the Python compile locked each for

    pythons = {p.name: lock_python(project, p) for p in kept}
    text = ci.github_workflow(kept, project=rel, runners=runners, python=pythons,
                              lockkit=lockkit, own=own is not None)
    pinned = _pins_text(project, kept, [*pythons.values(), ci.TOOL_PYTHON], lockkit)
    _write_pins(pins_target, pinned, lockkit, own, repo)
    ci.write_workflow(text, target)
    where = "stdout" if target.kind == "stdout" else shown_path(args.output or default)
    ui.say(f"wrote {where}: verify on {', '.join(p.name for p in kept)}")
    if schedule and refresh_target is not None:
        gate = (args.output or default).name
        outfile.write(refresh_target, rf.refresh_workflow(
            kept, project=rel, lockkit=lockkit, own=own is not None, schedule=schedule,
            gate=gate))
        shown = shown_path((args.output or default).with_name(rf.DEFAULT_REFRESH_OUTPUT.name))
        ui.say(f"wrote {shown}: {schedule}, 'lockkit compile --upgrade' "
               f"and one pull request on {rf.BRANCH}, verified by {gate}")
    return 0


def _pins_text(project: Project, kept: list[Platform], pythons: list[str],
               lockkit: LockkitRequirement) -> str:
    """``.lockkit/ci/requirements.txt``'s text: lockkit's dependencies resolved for every
    OS and every Python from the lowest of the workflows' *pythons* up."""
    from packaging.version import Version

    from lockkit.ci import pins

    lowest = min(pythons, key=Version)
    ui.say(f"resolving lockkit's dependencies for Python {lowest} and up, every OS...")
    return pins.pins_text(lockkit, pins.resolve_dependencies(project, kept[0], [lowest]),
                          lowest)


def _write_pins(target: Target, text: str, lockkit: LockkitRequirement, own: Tool | None,
                repo: Path) -> None:
    """lockkit's own wheel (*own*, when it is the default), then the pins naming it."""
    from lockkit._internal import outfile
    from lockkit.ci import ownwheel, pins

    if own is not None:
        ownwheel.write_own_wheel(own, repo / lockkit.requirement)
        ui.say(f"wrote {shown_path(repo / lockkit.requirement)} ({lockkit.hashes[0]}): CI "
               "installs lockkit from this file by its hash; commit it with the workflow")
    outfile.write(target, text)
    assert target.path is not None  # a file: the pins are never on stdout
    ui.say(f"wrote {shown_path(target.path)}: lockkit and its dependencies by sha256, which "
           "the workflow installs with --require-hashes; commit it with the workflow")
    if not pins.hashed(lockkit):
        ui.warn(f"[ci] lockkit: {lockkit.requirement} cannot be checked by hash; CI installs "
                "it after the pinned dependencies, without a hash check")


def _refresh_target(args: argparse.Namespace, project: Project, gate: Path) -> Target:
    """Where the refresh workflow goes: beside the gate's file, under the output rule."""
    from lockkit._internal import outfile
    from lockkit.ci import refresh as rf

    if args.output is not None and str(args.output) == "-":
        raise UsageError("-o -: the refresh workflow is a second file, and stdout holds one",
                         hint="name a file with -o, or leave -o out")
    path = (args.output or gate).with_name(rf.DEFAULT_REFRESH_OUTPUT.name)
    return outfile.check(path, what="a lockkit refresh workflow", recognise=rf.recognise,
                         force=args.force, inputs=output_inputs(project))
