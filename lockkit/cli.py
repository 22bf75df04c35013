"""The command line: thin commands over the library; the only place that exits."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from lockkit import __version__, ui
from lockkit.errors import LockkitError, StaleLockError, UsageError


def _project_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--project", type=Path, default=Path("."), metavar="DIR",
                   help="project folder holding lockkit.toml (default: current folder)")
    p.add_argument("--mirror", action="append", default=[], metavar="OFFICIAL=MIRROR",
                   help="serve an official index URL prefix from a mirror (repeatable), e.g. "
                        "https://download.pytorch.org/whl=https://mirror.example/whl")
    p.add_argument("--index-url", metavar="URL",
                   help="replace the default index (user:token@ and ${VAR} are used, never written)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lockkit",
        description="Rebuildable PyTorch environments: per-platform PEP 751 locks with hashes "
                    "and pinned PyTorch indexes.")
    parser.add_argument("--version", action="version", version=f"lockkit {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    plat = sub.add_parser("platforms", help="list the known platforms",
                          description="List shipped platforms and the project's own.")
    plat.add_argument("--project", type=Path, default=Path("."), metavar="DIR")
    plat.add_argument("--json", action="store_true", help="print a JSON list (a CI matrix input)")
    comp = sub.add_parser(
        "compile", help="write locks/pylock.<platform>.toml",
        description="Resolve the project's constraints with uv for each platform and write "
                    "locks/pylock.<platform>.toml: every file hashed, torch-family packages "
                    "only from the platform's PyTorch index.")
    comp.add_argument("--platform", action="append", default=[], metavar="NAME",
                      help="platform to compile (repeatable; default: the config's list)")
    comp.add_argument("--all", action="store_true", help="compile every known platform")
    comp.add_argument("--check", action="store_true",
                      help="write nothing; exit 1 if a lock is missing or stale (the CI gate)")
    # Concurrent uv runs contend for uv's cache; on 2 cores one at a time was measured faster.
    jobs = max(1, min(4, (os.cpu_count() or 2) // 2))
    comp.add_argument("--jobs", type=int, default=jobs,
                      help=f"platforms resolved at once (default {jobs}: half the cores, at most 4)")
    _project_args(comp)
    return parser


def cmd_platforms(args: argparse.Namespace) -> int:
    from lockkit.platforms import load_platforms

    platforms = load_platforms(args.project.resolve())
    if args.json:
        rows = [{"name": p.name, "os": p.os, "arch": p.arch, "python": p.python,
                 "python_platform": p.python_platform,
                 "backend": {"kind": p.backend.kind, "version": p.backend.version},
                 "torch_index": p.torch_index, "torch_packages": list(p.torch_packages),
                 "gpu": {"device": p.gpu_device, "cuda": p.gpu_cuda, "hip": p.gpu_hip}}
                for p in platforms.values()]
        print(json.dumps(rows, indent=2))
        return 0
    rows = [(p.name, p.os, p.arch, p.python,
             p.backend.kind + (f" {p.backend.version}" if p.backend.version else ""),
             p.torch_index or "(default index)") for p in platforms.values()]
    ui.print_table("lockkit platforms", ("name", "os", "arch", "python", "backend", "torch index"),
                   rows, stream=sys.stdout)
    return 0


def cmd_compile(args: argparse.Namespace) -> int:
    from lockkit.compiler import check_platforms, compile_platforms, select_platforms
    from lockkit.config import load_project
    from lockkit.platforms import load_platforms

    if args.jobs < 1:
        raise UsageError("--jobs: must be at least 1")
    project = load_project(args.project, mirrors=args.mirror, index_url=args.index_url)
    selected = select_platforms(load_platforms(project.root), args.platform, args.all, project)
    if args.check:
        outcomes = check_platforms(project, selected)
        bad = [o for o in outcomes if o.status != "fresh"]
        for o in outcomes:
            ui.say(f"{o.platform}: {o.status} ({o.path.relative_to(project.root)})")
        if bad:
            raise StaleLockError(
                "locks not fresh: " + ", ".join(f"{o.platform} ({o.status})" for o in bad),
                hint="run 'lockkit compile' and commit the locks")
        return 0
    with ui.progress("resolving " + ", ".join(p.name for p in selected),
                     total=len(selected)) as advance:
        outcomes = compile_platforms(project, selected, jobs=args.jobs,
                                     on_done=lambda o: advance(1))
    ui.print_table("lockkit compile", ("platform", "status", "packages", "lock"),
                   [(o.platform, o.status, o.packages or "", o.path.relative_to(project.root))
                    for o in outcomes])
    failed = [o for o in outcomes if o.error]
    for o in failed[1:]:
        ui.say(f"error: {o.error}")
    if failed:
        raise failed[0].error  # type: ignore[misc]
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not args.command:
        parser.print_help(sys.stderr)
        return 2
    try:
        return {"platforms": cmd_platforms, "compile": cmd_compile}[args.command](args)
    except LockkitError as exc:
        ui.say(f"lockkit: error: {exc}")
        if exc.hint:
            ui.say(f"hint: {exc.hint}")
        return exc.exit_code
    except KeyboardInterrupt:
        ui.say("lockkit: interrupted; nothing was left half-written")
        return 130
