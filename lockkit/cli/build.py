"""The commands that make things: platforms, compile, wheelhouse build/pack/unpack.

Results (tables, JSON) go to stdout, status to stderr.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from lockkit._internal import ui
from lockkit.errors import StaleLockError, UsageError, WriteError

if TYPE_CHECKING:
    import argparse
    from typing import Any

__all__ = ["cmd_compile", "cmd_platforms", "cmd_wheelhouse", "project_root", "shown_path",
           "wheelhouse_folder"]


def cmd_platforms(args: argparse.Namespace) -> int:
    from lockkit.platforms.definitions import load_platforms, markdown_table

    platforms = load_platforms(project_root(args.project))
    if args.host:
        return _platforms_host(platforms, args.json)
    if args.json:
        print(json.dumps([p.summary() for p in platforms.values()], indent=2))
        return 0
    if args.markdown:
        print(markdown_table(platforms), end="")
        return 0
    rows = [(p.name, p.os, p.arch, p.python, p.backend_label,
             f"alias of {p.alias_of}" if p.alias_of else p.torch_index or "(default index)",
             p.torch_releases) for p in platforms.values()]
    ui.print_table("lockkit platforms", ("name", "os", "arch", "python", "backend", "torch index",
                                         "torch releases"), rows, stream=sys.stdout)
    return 0


def _platforms_host(platforms: dict[str, Any], as_json: bool) -> int:
    from lockkit.platforms import host

    fits, out = host.rank(platforms.values(), host.detect())
    if as_json:
        print(json.dumps({"runs": [{"name": r.platform.name, "reason": r.reason} for r in fits],
                          "ruled_out": [{"name": r.platform.name, "reason": r.reason}
                                        for r in out]}, indent=2))
        return 0
    rows: list[tuple[int | str, str, str, str]] = [
        (i, r.platform.name, "runs here", r.reason) for i, r in enumerate(fits, 1)]
    rows += [("", r.platform.name, "ruled out", r.reason) for r in out]
    ui.print_table("lockkit platforms --host", ("#", "platform", "verdict", "why"), rows,
                   stream=sys.stdout)
    return 0


def cmd_compile(args: argparse.Namespace) -> int:
    from lockkit.config.project import load_project
    from lockkit.platforms.definitions import load_platforms, select_platforms

    project = load_project(args.project, mirrors=args.mirror, index_url=args.index_url,
                           exclude_newer=args.exclude_newer)
    selected = select_platforms(load_platforms(project.root), args.platform, args.all,
                                project.platforms, project.config_file)
    if args.check:
        if project.config_file is None:
            raise UsageError(f"--check: no lockkit.toml (or [tool.lockkit] in pyproject.toml) "
                             f"in {project.root}",
                             hint="run it in the project's folder, or name that folder "
                                  "with --project")
        from lockkit.lock.freshness import check_platforms  # the gate imports no resolver

        outcomes = check_platforms(project, selected)
        bad = [o for o in outcomes if o.status != "fresh"]
        for o in outcomes:
            detail = f": {o.detail}" if o.detail else ""
            ui.say(f"{o.platform}: {o.status} ({o.path.relative_to(project.root)}){detail}")
        if bad:
            raise StaleLockError(
                "locks not fresh: " + ", ".join(f"{o.platform} ({o.status})" for o in bad),
                hint="run 'lockkit compile' and commit the locks")
        return 0
    from lockkit.compile.compiler import compile_platforms

    phase = None if ui.interactive() else (lambda p: ui.say(f"{p.name}: resolving..."))
    with ui.progress("resolving " + ", ".join(p.name for p in selected),
                     total=len(selected)) as advance:
        outcomes = compile_platforms(project, selected, jobs=args.jobs,
                                     on_done=lambda o: advance(1), upgrade=args.upgrade,
                                     upgrade_packages=tuple(args.upgrade_package),
                                     timeout=args.timeout, on_start=phase,
                                     force=args.force,
                                     on_warning=lambda m: ui.say(f"warning: {m}"))
    ui.print_table("lockkit compile", ("platform", "status", "packages", "lock"),
                   [(o.platform, o.status, o.packages or "", o.path.relative_to(project.root))
                    for o in outcomes], stream=sys.stdout)
    failed = [o for o in outcomes if o.error]
    for o in failed[1:]:
        ui.say(f"error: {o.error}")
    if failed:
        raise failed[0].error  # type: ignore[misc]
    return 0


def cmd_wheelhouse(args: argparse.Namespace) -> int:
    if args.wheelhouse_command == "sbom":
        from lockkit.cli.sbom import cmd_wheelhouse_sbom
        return cmd_wheelhouse_sbom(args)
    return {"build": _wheelhouse_build, "pack": _wheelhouse_pack,
            "unpack": _wheelhouse_unpack}[args.wheelhouse_command](args)


def _wheelhouse_build(args: argparse.Namespace) -> int:
    from lockkit._internal.outdir import check
    from lockkit.cache.layout import default_cache_dir
    from lockkit.cache.store import Cache
    from lockkit.config.project import load_project
    from lockkit.index.auth import Credentials
    from lockkit.lock.freshness import stale_warning
    from lockkit.platforms.definitions import load_platforms, select_platforms
    from lockkit.wheelhouse import build as wheelhouse
    from lockkit.wheelhouse.fetch import http_client

    for folder in args.find_links:
        if not folder.is_dir():
            raise UsageError(f"--find-links {folder}: not a folder")
    project = load_project(args.project, mirrors=args.mirror, index_url=args.index_url)
    platform, = select_platforms(load_platforms(project.root), [args.platform], False,
                                 project.platforms)
    out = check(args.out or project.root / "wheelhouse" / platform.name, kind="wheelhouse",
                platform=platform.name, project=project.root,
                flag="--out" if args.out else None)  # before any download
    lock_path, items = wheelhouse.plan(project, platform,
                                       fallback_to_official=args.fallback_to_official)
    stale = stale_warning(project, platform)  # after plan: an unreadable lock is its error
    if stale:
        ui.say(f"warning: {stale}")
    with_tools = _tools_wanted(args, platform, lock_path)
    total = sum(i.want.size or 0 for i in items) or None
    cache = Cache((args.cache_dir or default_cache_dir()).absolute())
    phase = f"{platform.name}: fetching {len(items)} files" + (
        f" ({_size(total)})..." if total else "...")
    try:
        with http_client(connections=args.jobs, timeout=args.timeout,
                         credentials=Credentials.for_project(project)) as client, \
                ui.transfer(f"{platform.name}: files", len(items), total, phase) as shown:
            result = wheelhouse.build(
                project, platform, out, client=client, cache=cache,
                find_links=tuple(p.absolute() for p in args.find_links), jobs=args.jobs,
                attempts=args.retries + 1, items=items, lock_path=lock_path,
                on_file=lambda got: shown.file_done(), on_bytes=shown.moved,
                with_tools=with_tools)
    except OSError as exc:
        if exc.filename is not None:
            raise  # main names the file
        # A write into an open file (a full disk) names none: name both places written.
        raise WriteError(f"{platform.name}: cannot write the wheelhouse {shown_path(out)} or "
                         f"the cache {shown_path(cache.root)}: {exc.strerror or exc}") from None
    _printed(platform.name, out, [(r.package, r.version, r.path, _size(r.size),
                                   _where(r.origin) + (" (built from sdist)" if r.built_from
                                                       else "")) for r in result.files],
             result.downloaded_bytes, result.from_cache)
    if with_tools:
        ui.say(f"{platform.name}: tools/ has lockkit and its dependencies "
               f"({len(list((out / 'tools').glob('*.whl')))} wheels) for the offline machine")
    return 0


def _printed(platform: str, out: Path, rows: list[tuple[str, str, str, str, str]],
             downloaded: int, from_cache: int) -> None:
    ui.print_table(f"lockkit wheelhouse build {platform}",
                   ("package", "version", "file", "size", "from"), rows, stream=sys.stdout)
    ui.say(f"{platform}: {len(rows)} wheels, {_size(downloaded)} downloaded, {from_cache} "
           f"from cache -> {shown_path(out)}")


def _tools_wanted(args: argparse.Namespace, platform: Any, lock: Path) -> bool:
    """tools/ unless --no-tools, or the lock's Python is one lockkit cannot run on (a note)."""
    if args.no_tools:
        return False
    from lockkit.wheelhouse import tools

    reason = tools.skip_reason(tools.target_python(lock))
    if reason:
        ui.say(f"{platform.name}: no tools/ in this wheelhouse: {reason}")
    return reason is None


def _wheelhouse_pack(args: argparse.Namespace) -> int:
    from lockkit.wheelhouse import archive

    root = project_root(args.project)
    folder = wheelhouse_folder(args.folder, root, args.platform)
    out = (args.output or root / "wheelhouse" / f"{args.platform}.wheelhouse.tar").absolute()
    if args.lock is not None and not args.lock.is_file():
        raise UsageError(f"--lock {args.lock}: no such file")
    # the folder is checked against the lock it was built from, every file derived again
    lock = args.lock.absolute() if args.lock else archive.named_lock(folder, root)
    size = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())
    with ui.progress(f"{args.platform}: packing", size, bytes_=True,
                     phase=f"{args.platform}: packing {_size(size)}...") as advance:
        archive.pack(folder, out, lock=lock, project_dir=root, on_bytes=advance)
    ui.say(f"{args.platform}: packed {shown_path(folder)} -> {shown_path(out)} "
           f"({_size(out.stat().st_size)})")
    return 0


def project_root(given: Path | None) -> Path:
    """``--project``, else the folder every command finds
    (:func:`lockkit.config.project.load_project`: the nearest lockkit.toml or [tool.lockkit]
    upward), so pack and sbom work from the same
    sub-folder build did."""
    from lockkit.config.project import load_project

    return load_project(given).root


def wheelhouse_folder(folder: Path | None, root: Path, platform: str) -> Path:
    """``folder``, else the project's ``wheelhouse/<platform>``, as an absolute path; it
    must exist (pack and sbom read a folder that build made)."""
    folder = (folder or root / "wheelhouse" / platform).absolute()
    if not folder.is_dir():
        raise UsageError(f"{shown_path(folder)}: no wheelhouse folder",
                         hint=f"run 'lockkit wheelhouse build --platform {platform}'")
    return folder


def _wheelhouse_unpack(args: argparse.Namespace) -> int:
    from lockkit.wheelhouse import archive

    if args.archive.is_dir():  # a folder of <platform>.wheelhouse.tar: the best for this machine
        from lockkit.platforms.definitions import load_platforms
        from lockkit.platforms.host import choose

        tars = {p.name.removesuffix(".wheelhouse.tar"): p
                for p in args.archive.glob("*.wheelhouse.tar")}
        picked = choose(load_platforms(), set(tars), "wheelhouse archive")
        ui.say(f"wheelhouse unpack: picked {picked.platform.name} ({picked.reason})")
        args.archive = tars[picked.platform.name]
    if not args.archive.is_file():
        raise UsageError(f"{args.archive}: no such archive")
    name = args.archive.name.removesuffix(".tar").removesuffix(".wheelhouse")
    lock = _committed(args.lock, None)
    # into the current folder, as 'tar xf' extracts (never beside the archive: that may be
    # the source project, whose wheelhouse/<platform> is its own)
    size = args.archive.stat().st_size
    with ui.progress(f"{name}: unpacking", size, bytes_=True,
                     phase=f"{name}: unpacking {_size(size)}...") as advance:
        out = archive.unpack(args.archive, args.out or Path.cwd() / name, lock=lock,
                             flag="--out" if args.out else None, on_bytes=advance)
    ui.say(f"unpacked {args.archive} -> {shown_path(out)}")
    ui.say(archive.install_hint(out))
    return 0


def _committed(lock: Path | None, project_dir: Path | None) -> Any:
    """The selection of ``--lock FILE``, for its platform (a project's own platforms are
    found beside its ``locks/`` folder)."""
    from lockkit.wheelhouse import trust

    if lock is None:
        return None
    if not lock.is_file():
        raise UsageError(f"--lock {lock}: no such file")
    if project_dir is None and lock.absolute().parent.name == "locks":
        project_dir = lock.absolute().parent.parent
    return trust.committed(lock.absolute(), project_dir)


def _size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    raise AssertionError("unreachable")


def _where(origin: str) -> str:
    """A URL shortened to its server (the manifest keeps the whole URL)."""
    if "://" not in origin:
        return origin
    scheme, rest = origin.split("://", 1)
    return f"{scheme}://{rest.split('/', 1)[0]}/…"


def shown_path(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


