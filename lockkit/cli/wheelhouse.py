"""``lockkit wheelhouse build|pack|sbom|unpack``: a lock's files in an offline-installable
folder, the folder as one reproducible archive, its SBOM, and the archive checked and
extracted. Results (tables, paths) go to stdout, status to stderr.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

from lockkit._internal import tables, ui
from lockkit._internal.ui import human_size
from lockkit.cli.common import (
    for_project,
    output_inputs,
    shown_path,
    wheelhouse_folder,
)
from lockkit.errors import UsageError, WriteError

if TYPE_CHECKING:
    import argparse
    from typing import Any

    from lockkit._internal.redact import Secrets
    from lockkit.download.fetch import Got
    from lockkit.download.sources import FoundIn
    from lockkit.lock.model import LockTables
    from lockkit.wheelhouse.meta import FileRecord

__all__ = ["handle"]


def handle(args: argparse.Namespace) -> int:
    if args.wheelhouse_command == "unpack":
        from lockkit.cli import unpack

        return unpack.handle(args)
    return {"build": _build, "pack": _pack, "sbom": _sbom}[args.wheelhouse_command](args)


def _build(args: argparse.Namespace) -> int:
    from lockkit._internal.outdir import check
    from lockkit.cache.layout import default_cache_dir
    from lockkit.cli.common import load
    from lockkit.platforms.definitions import load_catalog

    _find_links_checked(args.find_links)
    project = load(args.project, mirrors=args.mirror, index_url=args.index_url)
    platform, = load_catalog(project.root).select([args.platform], False, project.platforms)
    out = check(args.out or project.root / "wheelhouse" / platform.name, kind="wheelhouse",
                platform=platform.name, project=project.root,
                flag="--out" if args.out else None)  # before any download
    cache_root = (args.cache_dir or default_cache_dir()).absolute()
    tables = _lock_of(project, platform)  # once, for the check and the build alike
    with_tools = None if tables is None else _tools_wanted(args, platform, tables)
    if tables is not None and _up_to_date(project, platform, tables, bool(with_tools), out,
                                          cache_root, args.project):
        return 0  # nothing new: none of the build's modules is imported
    from lockkit.cache.store import Cache
    from lockkit.download.fetch import http_client
    from lockkit.index.auth import Credentials
    from lockkit.lock.freshness import stale_warning
    from lockkit.lock.model import Lock
    from lockkit.wheelhouse import build as wheelhouse

    lock, items = wheelhouse.plan(project, platform, fallback_to_official=args.fallback_to_official,
                                  lock=None if tables is None else Lock.validated(tables))
    stale = stale_warning(project, platform, lock)  # after plan: an unreadable lock is its error
    if stale:
        ui.warn(for_project(stale, args.project) or stale)
    if with_tools is None:
        with_tools = _tools_wanted(args, platform, lock)
    total = sum(i.want.size or 0 for i in items)
    unknown = sum(i.want.size is None for i in items)
    cache = Cache(cache_root, by_identity=True)
    phase = _phase(platform.name, items, cache, args.find_links)
    credentials = Credentials.for_indexes(project.index_url, project.mirrors)
    try:
        with http_client(connections=args.jobs, timeout=args.timeout,
                         attempts=args.retries + 1, credentials=credentials) as client, \
                ui.transfer(f"{platform.name}: files", len(items), total, phase,
                            unknown) as shown:
            result = wheelhouse.build(
                project, platform, out, client=client, cache=cache,
                find_links=tuple(p.absolute() for p in args.find_links), jobs=args.jobs,
                items=items, lock=lock,
                on_file=lambda got: _shown_done(shown, got), on_bytes=shown.moved,
                with_tools=with_tools)
    except OSError as exc:
        if exc.filename is not None:
            raise  # main names the file
        # A write into an open file (a full disk) names none: name both places written.
        raise WriteError(f"{platform.name}: cannot write the wheelhouse {shown_path(out)} or "
                         f"the cache {shown_path(cache.root)}: {exc.strerror or exc}") from None
    _printed(platform.name, out, [(r.package, r.version, r.path, human_size(r.size),
                                   _from(r)) for r in result.files], result, project.secrets)
    if with_tools:
        ui.say(f"{platform.name}: tools/ has lockkit and its dependencies "
               f"({len(list((out / 'tools').glob('*.whl')))} wheels) for the offline machine")
    return 0


def _phase(name: str, items: list[Any], cache: Any, find_links: list[Path]) -> str:
    """The fetching line off a terminal: what will be downloaded, and apart from it what
    the cache or a --find-links folder holds (issue 42: "fetching 10 files (10.5 MB)"
    then "0 bytes downloaded, 202.2 MB from the cache")."""
    held = [cache.holds(i.want.sha256, i.want.size)
            or any((f / i.want.filename).is_file() for f in find_links) for i in items]
    get, have = ([i for i, h in zip(items, held, strict=True) if h is kept]
                 for kept in (False, True))

    def summary(part: list[Any]) -> str:
        return ui.fetch_summary(len(part), sum(i.want.size or 0 for i in part),
                                sum(i.want.size is None for i in part))
    where = "the cache or --find-links" if find_links else "the cache"
    if not have:
        return f"{name}: fetching {summary(get)}..."
    if not get:
        return f"{name}: {summary(have)} from {where}, nothing to download..."
    return f"{name}: fetching {summary(get)}, {summary(have)} from {where}..."


def _find_links_checked(folders: list[Path]) -> None:
    for folder in folders:
        if not folder.is_dir():
            raise UsageError(f"--find-links {folder}: not a folder")


def _lock_of(project: Any, platform: Any) -> LockTables | None:
    """The platform's lock, read once (its errors are the build's); None when there is no
    such file (:func:`lockkit.wheelhouse.build.read_lock` says why).

    Not yet validated as PEP 751: a folder found up to date was built from these very bytes
    (its record's key holds their sha256) by this very lockkit (the record is keyed by its
    code digest), which validated them then; any other build validates them first."""
    from lockkit.lock.model import LockTables

    path = project.lock_path(platform.name)
    return LockTables.read(path).of_platform(platform.name) if path.is_file() else None


def _up_to_date(project: Any, platform: Any, lock: LockTables, with_tools: bool, out: Path,
                cache_root: Path, given: Path | None) -> bool:
    """The folder is what this build would write again, checked by the identities of its
    files (:mod:`lockkit.wheelhouse.current`): said in one line, after the lock's
    staleness, as every build warns of it. With tools/, the key holds its pins'
    resolution key (everything that decides them)."""
    from lockkit.wheelhouse import current

    tools_key = None
    if with_tools:
        from lockkit.wheelhouse import ownwheel

        tools_key = ownwheel.key_of(project, platform, lock.python)
    key = current.build_key(lock.sha256, lock.text, lock.path.name, platform.fingerprint,
                            tools_key=tools_key, concealed=project.secrets.forms)
    checked = None if key is None else current.check(cache_root, out, key)
    if checked is None:
        return False
    from lockkit.lock.freshness import stale_warning

    stale = stale_warning(project, platform, lock)
    if stale:
        ui.warn(for_project(stale, given) or stale)
    again = (f"; {checked.hashed} whose identity moved hashed again" if checked.hashed
             else "")
    ui.say(f"{platform.name}: up to date, {checked.wheels} wheels, checked by identity "
           f"({checked.files} files{again}) -> {shown_path(out)}")
    return True


def _shown_done(shown: ui.Transfer, got: Got) -> None:
    """A file in hand, told to the display with where it came from when not downloaded."""
    if got.origin.local:
        size = got.want.size if got.want.size is not None else got.path.stat().st_size
        shown.file_done(_LOCAL[got.origin.kind], size, got.want.size is not None)
    else:
        shown.file_done(None, got.downloaded, got.want.size is not None)


_LOCAL = {"cache": "from the cache", "find-links": "from --find-links"}


def _printed(platform: str, out: Path, rows: list[tuple[str, str, str, str, str]],
             result: Any, secrets: Secrets) -> None:
    """The table, then what was downloaded and what was not (the bytes the cache or a
    --find-links folder gave: a warm rebuild says so, not "0 bytes downloaded" alone)."""
    tables.print_table(f"lockkit wheelhouse build {platform}",
                       ("package", "version", "file", "size", "from"), rows,
                       stream=sys.stdout, secrets=secrets, whole=("file",), detail=("from",))
    local = "".join(f", {human_size(size)} {_LOCAL[where]} ({files} files)"
                    for where, (files, size) in result.local.items() if files)
    ui.say(f"{platform}: {len(rows)} wheels, {human_size(result.downloaded_bytes)} "
           f"downloaded{local} -> {shown_path(out)}")


def _tools_wanted(args: argparse.Namespace, platform: Any, lock: LockTables) -> bool:
    """tools/ unless --no-tools, or the lock's Python is one lockkit cannot run on (a note)."""
    if args.no_tools:
        return False
    from lockkit.wheelhouse import ownwheel  # not tools: its ~50 ms of imports wait for a build

    reason = ownwheel.skip_reason(lock.python)
    if reason:
        ui.say(f"{platform.name}: no tools/ in this wheelhouse: {reason}")
    return reason is None


def _pack(args: argparse.Namespace) -> int:
    """Write the archive (``-o -``: on stdout, then the sha256 line goes to stderr)."""
    from lockkit._internal import outfile
    from lockkit.cli.common import load
    from lockkit.wheelhouse import archive

    project = load(args.project)
    root = project.root
    folder = wheelhouse_folder(args.folder, root, args.platform)
    if args.lock is not None and not args.lock.is_file():
        raise UsageError(f"--lock {args.lock}: no such file")
    inputs = _inputs(project, folder, args.lock, "the folder being packed")
    given = args.output or root / "wheelhouse" / f"{args.platform}.wheelhouse.tar"
    out = outfile.check(given if given == outfile.STDOUT else Path(given).absolute(),
                        what=archive.ARCHIVE, recognise=archive.recognise, inputs=inputs,
                        force=args.force, flag="-o" if args.output else None)
    if out.to_stdout and sys.stdout.isatty():  # as tar refuses: bytes no one can read
        raise UsageError("-o -: stdout is a terminal; refusing to write a tar there",
                         hint="redirect it (> FILE, | ssh ...), or give -o a file")
    archive.sidecar_target(out, force=args.force)  # refused before the work, not after it
    # the folder is checked against the lock it was built from, every file derived again
    from lockkit.lock.model import Lock

    lock = Lock.read(args.lock.absolute() if args.lock else archive.named_lock(folder, root))
    size = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())
    with ui.progress(f"{args.platform}: packing", size, bytes_=True,
                     phase=f"{args.platform}: packing {human_size(size)}...") as advance:
        _, digest = archive.packed(folder, out, lock=lock, project_dir=root,
                                   on_bytes=advance, force=args.force,
                                   secrets=project.secrets)
    if out.kind != "file":
        ui.say(f"{args.platform}: packed {shown_path(folder)} -> {out.shown}")
        print(f"{digest}  {out.shown}", file=sys.stderr if out.to_stdout else sys.stdout)
        return 0
    shown, sidecar = Path(out.given), archive.sidecar(Path(out.given))
    ui.say(f"{args.platform}: packed {shown_path(folder)} -> {shown_path(shown)} "
           f"({human_size(shown.stat().st_size)}); its sha256 -> {shown_path(sidecar)}: send "
           "it out of band, the receiver checks it with 'wheelhouse unpack --sha256'")
    ui.say("the receiver runs, in the project's folder, beside the archive:\n  "
           + _receiver_command(shown.name, digest, project.lock_path(args.platform).name))
    print(f"{digest}  {shown}")
    return 0


def _receiver_command(archive_name: str, digest: str, lock_name: str) -> str:
    """The command a receiver pastes: the archive by its name (where it lands there), the
    sha256 sent out of band, and the project's committed lock of its platform."""
    import shlex

    return shlex.join(["lockkit", "wheelhouse", "unpack", archive_name, "--sha256", digest,
                       "--lock", f"locks/{lock_name}"])


def _inputs(project: Any, folder: Path, lock: Path | None, what: str) -> Any:
    """The files pack and sbom read, never written over: the project's config, requirement
    files and locks, the lock given, and the wheelhouse folder (any path inside it)."""
    inputs = output_inputs(project)
    return inputs.add(files=[(lock, "the lock given")] if lock else [], folders=[(folder, what)])


def _sbom(args: argparse.Namespace) -> int:
    """Write the SBOM; its path goes to stdout (``-o -``: the SBOM itself), a summary line
    to stderr."""
    from lockkit._internal import outfile
    from lockkit.cli.common import load
    from lockkit.wheelhouse import sbom

    project = load(args.project)
    root = project.root
    folder = wheelhouse_folder(args.folder, root, args.platform)
    lock = (args.lock or root / "locks" / f"pylock.{args.platform}.toml").absolute()
    if not lock.is_file():
        raise UsageError(f"{shown_path(lock)}: no such lock",
                         hint="pass the lock the folder was built from with --lock")
    out = None if args.output is None else outfile.check(
        args.output, what=sbom.WHAT, recognise=sbom.recognise, force=args.force, flag="-o",
        inputs=_inputs(project, folder, lock, "the wheelhouse folder read (leave -o out to "
                                              "write its own sbom.cdx.json)"))
    from lockkit.lock.model import Lock

    written = sbom.refresh(folder, Lock.read(lock), project.secrets, out)
    if out is not None and out.kind != "file":
        ui.say(f"{args.platform}: SBOM of {shown_path(folder)} -> {out.shown}")
        return 0
    ui.say(f"{args.platform}: SBOM of {shown_path(folder)} -> {shown_path(written)}")
    print(written)
    return 0


def _from(record: FileRecord) -> str:
    """The table's "from": the server, with the host that failed when its twin served the
    file (lockkit.index.urls.twin), and whether a wheel was built from an sdist."""
    return (_where(record.origin) + (f" ({record.instead})" if record.instead else "")
            + (" (built from sdist)" if record.built_from else ""))


def _where(found: FoundIn | None) -> str:
    """A URL shortened to its server (the manifest keeps the whole URL)."""
    if found is None or found.local:
        return str(found or "")
    scheme, rest = found.where.split("://", 1)
    return f"{scheme}://{rest.split('/', 1)[0]}/…"
