"""``lockkit ci github``: write the CI workflow that checks the locks and verifies every
platform with a committed lock on its own runner. Status goes to stderr."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from lockkit._internal import ui
from lockkit.cli.common import output_inputs, shown_path
from lockkit.cli.flags import FORCE, OUTPUT_RULE, output
from lockkit.errors import UsageError

if TYPE_CHECKING:
    import argparse

    from lockkit._internal.outfile import Given, Target
    from lockkit.config.keys import LockkitRequirement
    from lockkit.config.project import Project
    from lockkit.platforms.definitions import Platform
    from lockkit.wheelhouse.toolpins import Tool

__all__ = ["DESCRIPTION", "HELP", "GithubOptions", "TakeLocksOptions", "add_arguments",
           "handle"]

HELP = "write a CI workflow that verifies every platform"
DESCRIPTION = ("Generate CI configuration: a 'compile --locked' job, then one verify job per "
               "platform on its own runner.")


def add_arguments(ci: argparse.ArgumentParser) -> None:
    cisub = ci.add_subparsers(dest="ci_command", metavar="COMMAND", required=True)
    gh = cisub.add_parser(
        "github", help="write a GitHub Actions workflow",
        description="Write a GitHub Actions workflow: a 'locks' job running 'lockkit compile "
                    "--locked', then a matrix with one job per platform on its runner label "
                    "([ci.runners] in lockkit.toml overrides the defaults), each building the "
                    "wheelhouse, running 'lockkit verify --junit' and uploading the dossier. "
                    "Only platforms with a committed lock get a job (the others are named on "
                    "stderr); outside a git repository it refuses. CI installs the lockkit that "
                    "[ci] lockkit names (default: this lockkit's own wheel, written to "
                    ".lockkit/ci/) and its dependencies from .lockkit/ci/requirements.txt, "
                    "which it writes: every file by its sha256 (pip --require-hashes); "
                    "actions are pinned to commits; caches are keyed by each lock's hash.")
    gh.add_argument("--platform", action="append", default=[], metavar="NAME",
                    help="platform to verify (repeatable; default: the config's list)")
    gh.add_argument("--all", action="store_true", help="every known platform")
    gh.add_argument("--project", type=Path, default=Path("."), metavar="DIR",
                    help="project folder inside the repository, absolute or relative to "
                         "the current folder (default: .)")
    gh.add_argument("-o", "--output", type=output, metavar="FILE",
                    help="workflow file (default: <repository root>/.github/workflows/"
                         "lockkit.yml). " + OUTPUT_RULE.format(what="its header line"))
    gh.add_argument("--force", action="store_true", help=FORCE)
    gh.add_argument("--refresh", metavar="WHEN",
                    help="also write a scheduled workflow (daily, weekly or monthly; default: "
                         "[ci] refresh in lockkit.toml, else none) that runs 'lockkit compile "
                         "--upgrade', puts 'lockkit diff' by layer of each changed lock in the "
                         "body of one pull request on the branch lockkit/refresh, opens or "
                         "updates it, and starts this workflow on that branch, which verifies "
                         "every platform. Written next to the workflow as lockkit-refresh.yml; "
                         "not with '-o -'")
    gh.set_defaults(options=GithubOptions.from_namespace)
    take = cisub.add_parser(
        "take-locks", help="copy the refresh artifact's locks, and nothing else, into locks/",
        description="The refresh workflow's pull-request job runs this before it commits: "
                    "DIR (the compile job's artifact) must hold body.md and locks/ with "
                    "only pylock.<platform>.toml files of the --platform names, each a PEP "
                    "751 lock whose [tool.lockkit] table names its platform. Anything else "
                    "fails (exit 1), naming each file, and nothing is copied.")
    take.add_argument("artifact", type=Path, metavar="DIR", help="the artifact's folder")
    take.add_argument("--platform", action="append", required=True, metavar="NAME",
                      help="a platform whose lock the artifact may hold (repeatable)")
    take.add_argument("--project", type=Path, default=Path("."), metavar="DIR",
                      help="the project whose locks/ receives them (default: .)")
    take.set_defaults(options=TakeLocksOptions.from_namespace)


@dataclass(frozen=True, kw_only=True)
class GithubOptions:
    """``lockkit ci github``'s flags, typed."""

    platform: tuple[str, ...]
    all: bool
    project: Path
    output: Given | None
    force: bool
    refresh: str | None

    @classmethod
    def from_namespace(cls, ns: argparse.Namespace) -> GithubOptions:
        return cls(platform=tuple(ns.platform), all=ns.all, project=ns.project,
                   output=ns.output, force=ns.force, refresh=ns.refresh)


@dataclass(frozen=True, kw_only=True)
class TakeLocksOptions:
    """``lockkit ci take-locks``'s arguments, typed."""

    artifact: Path
    platform: tuple[str, ...]
    project: Path

    @classmethod
    def from_namespace(cls, ns: argparse.Namespace) -> TakeLocksOptions:
        return cls(artifact=ns.artifact, platform=tuple(ns.platform), project=ns.project)


def handle(options: GithubOptions | TakeLocksOptions) -> int:
    if isinstance(options, TakeLocksOptions):
        return _take_locks(options)
    return _github(options)


def _take_locks(options: TakeLocksOptions) -> int:
    """``ci take-locks``: the refresh artifact's locks into the project's, or one line."""
    from lockkit.ci.intake import take_locks
    from lockkit.config.project import project_root

    # the folder alone: the job has none of the config's ${VAR}s, and needs none of it
    written = take_locks(options.artifact, project_root(options.project) / "locks",
                         options.platform)
    for path in written:
        ui.say(f"took {shown_path(path)}")
    return 0


def _github(options: GithubOptions) -> int:
    from lockkit._internal import outfile
    from lockkit.ci import ownwheel, pins
    from lockkit.ci import refresh as rf
    from lockkit.ci import workflow as ci
    from lockkit.cli.common import load
    from lockkit.config.keys import REFRESH_SCHEDULES
    from lockkit.platforms.definitions import load_catalog

    if options.refresh is not None and options.refresh not in REFRESH_SCHEDULES:
        raise UsageError(f"--refresh: expected one of {', '.join(REFRESH_SCHEDULES)}, "
                         f"got {options.refresh!r}")
    repo, rel = ci.locate_project(options.project, Path.cwd())
    project = load(repo / rel)
    schedule = options.refresh or project.ci.refresh
    default = repo / ci.DEFAULT_OUTPUT
    refresh_target = _refresh_target(options, project, default) if schedule else None
    pins_target = outfile.check(repo / pins.pins_path(rel), what=pins.WHAT,
                                recognise=pins.recognise, force=options.force,
                                inputs=output_inputs(project))
    target = outfile.check(options.output or default, what=ci.WHAT,
                           recognise=ci.recognise, force=options.force,
                           flag="-o" if options.output else None,
                           inputs=output_inputs(project))
    catalog = load_catalog(project.root)
    selected = catalog.select(options.platform, options.all, project.platforms, project.config_file)
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
    written = options.output if isinstance(options.output, Path) else default  # "-": stdout
    where = "stdout" if target.kind == "stdout" else shown_path(written)
    ui.say(f"wrote {where}: verify on {', '.join(p.name for p in kept)}")
    if schedule and refresh_target is not None:
        gate = written.name
        outfile.write(refresh_target, rf.refresh_workflow(
            kept, project=rel, lockkit=lockkit, own=own is not None, schedule=schedule,
            gate=gate))
        shown = shown_path(written.with_name(rf.DEFAULT_REFRESH_OUTPUT.name))
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


def _refresh_target(options: GithubOptions, project: Project, gate: Path) -> Target:
    """Where the refresh workflow goes: beside the gate's file, under the output rule."""
    from lockkit._internal import outfile
    from lockkit.ci import refresh as rf

    if options.output is not None and str(options.output) == "-":
        raise UsageError("-o -: the refresh workflow is a second file, and stdout holds one",
                         hint="name a file with -o, or leave -o out")
    path = (options.output if isinstance(options.output, Path) else gate).with_name(
        rf.DEFAULT_REFRESH_OUTPUT.name)
    return outfile.check(path, what="a lockkit refresh workflow", recognise=rf.recognise,
                         force=options.force, inputs=output_inputs(project))
