"""``lockkit wheelhouse build|pack|sbom|unpack``: a lock's files in an offline-installable
folder, the folder as one reproducible archive, its SBOM, and the archive checked and
extracted. Results (tables, paths) go to stdout, status to stderr.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

from lockkit._internal import ui
from lockkit.cli.common import human_size, project_root, shown_path, wheelhouse_folder
from lockkit.errors import UsageError, WriteError

if TYPE_CHECKING:
    import argparse
    from typing import Any

__all__ = ["handle"]


def handle(args: argparse.Namespace) -> int:
    return {"build": _build, "pack": _pack, "sbom": _sbom,
            "unpack": _unpack}[args.wheelhouse_command](args)


def _build(args: argparse.Namespace) -> int:
    from lockkit._internal.outdir import check
    from lockkit.cache.layout import default_cache_dir
    from lockkit.cache.store import Cache
    from lockkit.config.project import load_project
    from lockkit.index.auth import Credentials
    from lockkit.lock.freshness import stale_warning
    from lockkit.platforms.definitions import load_catalog
    from lockkit.wheelhouse import build as wheelhouse
    from lockkit.wheelhouse.fetch import http_client

    for folder in args.find_links:
        if not folder.is_dir():
            raise UsageError(f"--find-links {folder}: not a folder")
    project = load_project(args.project, mirrors=args.mirror, index_url=args.index_url)
    platform, = load_catalog(project.root).select([args.platform], False, project.platforms)
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
        f" ({human_size(total)})..." if total else "...")
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
    _printed(platform.name, out, [(r.package, r.version, r.path, human_size(r.size),
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
    ui.say(f"{platform}: {len(rows)} wheels, {human_size(downloaded)} downloaded, "
           f"{from_cache} from cache -> {shown_path(out)}")


def _tools_wanted(args: argparse.Namespace, platform: Any, lock: Path) -> bool:
    """tools/ unless --no-tools, or the lock's Python is one lockkit cannot run on (a note)."""
    if args.no_tools:
        return False
    from lockkit.wheelhouse import tools

    reason = tools.skip_reason(tools.target_python(lock))
    if reason:
        ui.say(f"{platform.name}: no tools/ in this wheelhouse: {reason}")
    return reason is None


def _pack(args: argparse.Namespace) -> int:
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
                     phase=f"{args.platform}: packing {human_size(size)}...") as advance:
        archive.pack(folder, out, lock=lock, project_dir=root, on_bytes=advance)
    ui.say(f"{args.platform}: packed {shown_path(folder)} -> {shown_path(out)} "
           f"({human_size(out.stat().st_size)})")
    return 0


def _sbom(args: argparse.Namespace) -> int:
    """Write the SBOM; its path goes to stdout, a summary line to stderr."""
    from lockkit.wheelhouse import sbom

    root = project_root(args.project)
    folder = wheelhouse_folder(args.folder, root, args.platform)
    lock = (args.lock or root / "locks" / f"pylock.{args.platform}.toml").absolute()
    if not lock.is_file():
        raise UsageError(f"{shown_path(lock)}: no such lock",
                         hint="pass the lock the folder was built from with --lock")
    written = sbom.refresh(folder, lock, args.output.absolute() if args.output else None)
    ui.say(f"{args.platform}: SBOM of {shown_path(folder)} -> {shown_path(written)}")
    print(written)
    return 0


def _unpack(args: argparse.Namespace) -> int:
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
                     phase=f"{name}: unpacking {human_size(size)}...") as advance:
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


def _where(origin: str) -> str:
    """A URL shortened to its server (the manifest keeps the whole URL)."""
    if "://" not in origin:
        return origin
    scheme, rest = origin.split("://", 1)
    return f"{scheme}://{rest.split('/', 1)[0]}/…"
