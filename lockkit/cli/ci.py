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

__all__ = ["handle"]


def handle(args: argparse.Namespace) -> int:
    from lockkit._internal import outfile
    from lockkit.ci import workflow as ci
    from lockkit.cli.common import load
    from lockkit.platforms.definitions import load_catalog

    repo, rel = ci.locate_project(args.project, Path.cwd())
    project = load(repo / rel)
    default = repo / ci.DEFAULT_OUTPUT
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
        lockkit, own = ci.own_lockkit(rel, project)
    from lockkit.lock.python import lock_python  # the Python compile locked each for

    pythons = {p.name: lock_python(project, p) for p in kept}
    text = ci.github_workflow(kept, project=rel, runners=runners, python=pythons,
                              lockkit=lockkit, own=own is not None)
    if own is not None:
        ci.write_own_wheel(own, repo / lockkit.requirement)
        ui.say(f"wrote {shown_path(repo / lockkit.requirement)} ({lockkit.hashes[0]}): CI "
               "installs lockkit from this file by its hash; commit it with the workflow")
    ci.write_workflow(text, target)
    where = "stdout" if target.kind == "stdout" else shown_path(args.output or default)
    ui.say(f"wrote {where}: verify on {', '.join(p.name for p in kept)}")
    return 0
