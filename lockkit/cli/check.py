"""The commands that judge things: verify, diagnose, diff, and the CI workflow that runs
verify. Results (tables, JSON documents) go to stdout, status to stderr.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from lockkit._internal import ui
from lockkit.cli.build import shown_path
from lockkit.cli.common import check_given_paths, lock_fetcher, pick_platform
from lockkit.errors import UsageError, VerifyError

__all__ = ["cmd_ci", "cmd_diagnose", "cmd_diff", "cmd_verify", "new_report_folder"]


def cmd_verify(args: argparse.Namespace) -> int:
    from lockkit._internal.outdir import check
    from lockkit.cache.store import default_cache_dir
    from lockkit.config.project import load_project
    from lockkit.report import json as json_format
    from lockkit.report import terminal, write_folder
    from lockkit.report.junit import write_junit
    from lockkit.verify.context import Options as VerifyOptions
    from lockkit.verify.run import PLAN, verify

    project = load_project(args.project, mirrors=args.mirror, index_url=args.index_url)
    platform = pick_platform(project, args.platform, "verify")
    check_given_paths(args)

    if bool(args.variant) != bool(args.reason) or (args.changes and not args.variant):
        raise UsageError("--variant, --reason and --changes go together: name the variant, "
                         "say why, and list the layers it changes")
    if args.variant and not args.changes:
        raise UsageError("--variant needs --changes LAYER: the layers this variant is meant "
                         "to change (code, data, packages, system, result)")
    variant = ({"name": args.variant, "reason": args.reason,
                "changes": sorted(set(args.changes))} if args.variant else None)
    report_dir = (check(args.report_dir, kind="report", platform=platform.name,
                        project=project.root, flag="--report-dir")
                  if args.report_dir else None)  # before the run, not after it

    with ui.progress(f"verifying {platform.name}", total=len(PLAN)) as advance:
        said: set[str] = set()

        def step_progress(what: str, done: int, total: int) -> None:
            """On a terminal, the bar says how far the step is; off one, a line once."""
            if ui.interactive():
                advance(0, description=f"verifying {platform.name}: {what} {done}/{total} "
                                       "packages")
            elif what not in said:
                said.add(what)
                ui.say(f"{platform.name}: {what} {total} packages...")

        outcome = verify(VerifyOptions(
            project=project, platform=platform,
            wheelhouse=args.wheelhouse.absolute() if args.wheelhouse else None,
            python=args.python.absolute() if args.python else None,
            installer=args.installer, no_gpu=args.no_gpu,
            keep_venv=args.keep_venv, probe_timeout=args.probe_timeout,
            cache_root=(args.cache_dir or default_cache_dir()).absolute(),
            command_line=tuple(["lockkit", *sys.argv[1:]]), variant=variant,
            fetch=lock_fetcher(project, platform, args.cache_dir),
            on_step=lambda step: advance(1, description=f"verifying {platform.name}"),
            on_progress=step_progress))
    dossier = outcome.dossier
    folder = (report_dir or
              new_report_folder(project.root / ".lockkit" / "reports" / platform.name,
                                dossier.started.replace("-", "").replace(":", "")))
    write_folder(folder, dossier, outcome.attachments)
    if args.junit:
        write_junit(dossier, args.junit.absolute())
    if args.json:
        sys.stdout.write(json_format.dumps(dossier))
    else:
        terminal.steps_table(dossier)
    terminal.warnings(dossier)
    if outcome.venv:
        ui.say(f"venv kept: {outcome.venv} (remove {outcome.venv.parent} when done; "
               "'lockkit sync' builds a venv to work in)")
    ui.say(f"dossier: {shown_path(folder / 'dossier.json')} "
           "(and dossier.md, installed-after.txt)")
    if dossier.result != "passed":  # ends as every failure does: "lockkit: error: ..."
        raise VerifyError(f"verify {dossier.result}: "
                          f"{dossier.first_error or dossier.why_incomplete}",
                          hint=f"every step's result and output: "
                               f"{shown_path(folder / 'dossier.md')}")
    return 0


def new_report_folder(parent: Path, stamp: str) -> Path:
    """``parent/stamp``, or ``stamp-2``, ``stamp-3``...: a folder this run alone created
    (``mkdir`` fails on an existing one), so two runs in the same second keep both."""
    parent.mkdir(parents=True, exist_ok=True)
    for n in range(1, 10000):
        folder = parent / (stamp if n == 1 else f"{stamp}-{n}")
        try:
            folder.mkdir()
        except FileExistsError:
            continue
        return folder
    raise UsageError(f"{parent}: 10000 report folders for {stamp}; remove old reports")


def cmd_diagnose(args: argparse.Namespace) -> int:
    from lockkit.report import json as json_format
    from lockkit.report import terminal
    from lockkit.verify.diagnose import default_python, diagnose, no_torch

    if args.python is not None and not args.python.exists():
        raise UsageError(f"--python {args.python}: no such interpreter")
    if args.python is not None:
        python, source = args.python.absolute(), "--python"
    else:
        python, source = default_python()
    ui.say(f"diagnose: {shown_path(python)} ({source})")
    dossier = diagnose(python, args.expect, source=source, timeout=args.probe_timeout,
                       command_line=tuple(["lockkit", *sys.argv[1:]]))
    if args.json:
        sys.stdout.write(json_format.dumps(dossier))
    else:
        terminal.steps_table(dossier)
        terminal.diagnose_facts(dossier)
    if no_torch(dossier):
        ui.say(f"lockkit: no torch in {shown_path(python)}; give --python PATH "
               "(an interpreter with torch)")
    return 0 if dossier.result == "passed" else 1


def cmd_diff(args: argparse.Namespace) -> int:
    from lockkit.report import terminal
    from lockkit.report.diff import LAYERS, compare, load_side

    a, b = load_side(args.a), load_side(args.b)
    layers, found = compare(a, b)
    differing = [layer for layer in LAYERS if any(d.layer == layer for d in found)]
    (terminal.diff_json if args.json else terminal.diff_text)(layers, differing, found, (a, b))
    return 1 if any(not d.declared for d in found) else 0


def cmd_ci(args: argparse.Namespace) -> int:
    from lockkit.ci import workflow as ci
    from lockkit.config.project import load_project
    from lockkit.platforms.definitions import load_platforms, select_platforms

    repo, rel = ci.locate_project(args.project, Path.cwd())
    project = load_project(repo / rel)
    known = load_platforms(project.root)
    selected = select_platforms(known, args.platform, args.all, project.platforms,
                                project.config_file)
    runners = ci.validate_runners(project.runners, known,
                                  where=f"{project.config_file}: [ci.runners]")
    lockkit = (ci.pin_files(project.ci_lockkit, repo, f"{project.config_file}: [ci] lockkit")
               if project.ci_lockkit else None)
    kept, left = ci.split_by_lock(selected, repo, rel)
    for name, why in left:
        ui.say(f"left out {name}: {why}")
    if not kept:
        raise UsageError("no platform has a committed lock, so the workflow would verify "
                         "nothing", hint="run 'lockkit compile', then commit locks/")
    own = None
    if lockkit is None:  # lockkit's own wheel, installed by its hash: no name to squat
        lockkit, own = ci.own_lockkit(rel, project)
    text = ci.github_workflow(kept, project=rel, runners=runners, python=project.python,
                              lockkit=lockkit, own=own is not None)
    out = args.output or repo / ci.DEFAULT_OUTPUT
    if own is not None:
        ci.write_own_wheel(own, repo / lockkit.requirement)
        ui.say(f"wrote {shown_path(repo / lockkit.requirement)} ({lockkit.hashes[0]}): CI "
               "installs lockkit from this file by its hash; commit it with the workflow")
    ci.write_workflow(text, out)
    ui.say(f"wrote {shown_path(out)}: verify on {', '.join(p.name for p in kept)}")
    return 0


