"""``lockkit wheelhouse build|pack|sbom|unpack``: a lock's files in an offline-installable
folder (``build``, here), the folder as one reproducible archive (:mod:`~lockkit.cli.pack`),
its SBOM (:mod:`~lockkit.cli.sbom`), and the archive checked and extracted
(:mod:`~lockkit.cli.unpack`). Results (tables, paths) go to stdout, status to stderr.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from lockkit._internal import tables, ui
from lockkit._internal.ui import human_size
from lockkit.cli import pack, sbom, unpack
from lockkit.cli.common import for_project, load, shown_path
from lockkit.cli.flags import project_args
from lockkit.errors import UsageError, WriteError
from lockkit.index.http import PER_HOST

if TYPE_CHECKING:
    import argparse

    from lockkit._internal.redact import Secrets
    from lockkit.cache.store import Cache
    from lockkit.config.project import Project
    from lockkit.download.fetch import Got, Item
    from lockkit.download.sources import FoundIn
    from lockkit.lock.model import LockTables
    from lockkit.platforms.definitions import Platform
    from lockkit.wheelhouse.build import BuildResult
    from lockkit.wheelhouse.meta import FileRecord

__all__ = ["DESCRIPTION", "HELP", "JOBS", "BuildOptions", "add_arguments", "handle"]

HELP = "download a lock's wheels into an offline-installable folder"
DESCRIPTION = ("Build, pack and unpack per-platform wheelhouses: every wheel of "
               "locks/pylock.<platform>.toml, hash-checked, with a pylock.toml, a "
               "requirements.txt and a PEP 503 simple/ tree that install with no network.")
JOBS = 16  # files at once, and connections to one host: measured against 8 and 32 on a
# CDN-like edge (benchmarks/cudaset.py; docs/explanation/benchmarks.md says why)


def add_arguments(wh: argparse.ArgumentParser) -> None:
    """build's flags, and each other action's from its own module."""
    whsub = wh.add_subparsers(dest="wheelhouse_command", metavar="ACTION", required=True)
    _build_arguments(whsub.add_parser(
        "build", help="fetch the lock's wheels into wheelhouse/<platform>/",
        description="Fetch every file the platform's lock selects (cache, --find-links, "
                    "mirror, then the lock's URL), verify each sha256 while it streams, and "
                    "write the folder atomically. A second build of the same lock downloads "
                    "nothing. tools/ carries lockkit and its dependencies for the platform "
                    "(each hash-checked, pinned in tools/requirements.txt), so the offline "
                    "machine can run 'lockkit verify'; they are not part of the application's "
                    "requirements.txt or pylock.toml."))
    for name, action in (("pack", pack), ("sbom", sbom), ("unpack", unpack)):
        action.add_arguments(whsub.add_parser(name, help=action.HELP,
                                              description=action.DESCRIPTION))


def _build_arguments(build: argparse.ArgumentParser) -> None:
    build.add_argument("--platform", required=True, metavar="NAME",
                       help="platform whose lock to use")
    build.add_argument("--out", type=Path, metavar="DIR",
                       help="output folder: a new or empty one, or a wheelhouse lockkit "
                            "built for the platform, which is replaced (default: "
                            "<project>/wheelhouse/<platform>)")
    build.add_argument("--find-links", action="append", type=Path, default=[], metavar="DIR",
                       help="folder of files to take by hash before downloading (repeatable)")
    # Sized for the network, not the cores: a download waits on its link (a CDN edge caps
    # each connection), and the bytes cost little CPU (1 MiB reads, hashed on a second
    # thread). At most max(PER_HOST, --jobs) connections go to one host, files and ranged
    # parts together.
    build.add_argument("--jobs", type=int, default=JOBS,
                       help=f"files downloaded at once (default {JOBS}); at most {PER_HOST} "
                            "connections to one host (or JOBS, when larger), a large "
                            "file's ranged parts included")
    build.add_argument("--cache-dir", type=Path, metavar="DIR",
                       help="content-addressed download cache (default: the user cache folder, "
                            "or $LOCKKIT_CACHE_DIR)")
    build.add_argument("--retries", type=int, default=3,
                       help="retries of a 5xx, reset, timeout or truncated body (default 3)")
    build.add_argument("--timeout", type=float, default=60.0, metavar="S",
                       help="seconds without data before a download counts as timed out "
                            "(default 60); a file whose host never answers fails after "
                            "(N+1) x S plus pauses of 0.5, 1, 2... s between tries (N: "
                            "--retries; 15.5 s at --timeout 3), and that host is not asked "
                            "again for the file")
    build.add_argument("--fallback-to-official", action="store_true",
                       help="after a configured mirror fails, try the official host "
                            "(default: an air-gapped build never reaches for it)")
    build.add_argument(
        "--no-tools", action="store_true",
        default=os.environ.get("LOCKKIT_NO_TOOLS", "") not in ("", "0"),
        help="leave out tools/ (lockkit's own wheel and its dependencies, resolved for the "
             "platform from index-url, for running 'lockkit verify' on the offline machine: "
             "pip install --no-index --find-links <wheelhouse>/tools lockkit); also "
             "LOCKKIT_NO_TOOLS=1. A platform whose Python lockkit does not support gets "
             "no tools/, with a note")
    project_args(build)
    build.set_defaults(options=BuildOptions.from_namespace)


@dataclass(frozen=True, kw_only=True)
class BuildOptions:
    """``lockkit wheelhouse build``'s flags, typed."""

    platform: str
    out: Path | None
    find_links: tuple[Path, ...]
    jobs: int
    cache_dir: Path | None
    retries: int
    timeout: float
    fallback_to_official: bool
    no_tools: bool
    project: Path | None
    mirror: tuple[str, ...]
    index_url: str | None

    @classmethod
    def from_namespace(cls, ns: argparse.Namespace) -> BuildOptions:
        return cls(platform=ns.platform, out=ns.out, find_links=tuple(ns.find_links),
                   jobs=ns.jobs, cache_dir=ns.cache_dir, retries=ns.retries,
                   timeout=ns.timeout, fallback_to_official=ns.fallback_to_official,
                   no_tools=ns.no_tools, project=ns.project, mirror=tuple(ns.mirror),
                   index_url=ns.index_url)


def handle(options: BuildOptions | pack.PackOptions | sbom.SbomOptions
           | unpack.UnpackOptions) -> int:
    if isinstance(options, pack.PackOptions):
        return pack.handle(options)
    if isinstance(options, sbom.SbomOptions):
        return sbom.handle(options)
    if isinstance(options, unpack.UnpackOptions):
        return unpack.handle(options)
    return _build(options)


def _build(options: BuildOptions) -> int:
    from lockkit._internal.outdir import check
    from lockkit.cache.layout import default_cache_dir
    from lockkit.platforms.definitions import load_catalog

    _find_links_checked(options.find_links)
    project = load(options.project, mirrors=list(options.mirror), index_url=options.index_url)
    platform, = load_catalog(project.root).select([options.platform], False, project.platforms)
    out = check(options.out or project.root / "wheelhouse" / platform.name, kind="wheelhouse",
                platform=platform.name, project=project.root,
                flag="--out" if options.out else None)  # before any download
    cache_root = (options.cache_dir or default_cache_dir()).absolute()
    tables = _lock_of(project, platform)  # once, for the check and the build alike
    with_tools = None if tables is None else _tools_wanted(options, platform, tables)
    if tables is not None and _up_to_date(project, platform, tables, bool(with_tools), out,
                                          cache_root, options.project):
        return 0  # nothing new: none of the build's modules is imported
    from lockkit.cache.store import Cache
    from lockkit.download.fetch import http_client
    from lockkit.index.auth import Credentials
    from lockkit.lock.freshness import stale_warning
    from lockkit.lock.model import Lock
    from lockkit.wheelhouse import build as wheelhouse

    lock, items = wheelhouse.plan(project, platform,
                                  fallback_to_official=options.fallback_to_official,
                                  lock=None if tables is None else Lock.validated(tables))
    stale = stale_warning(project, platform, lock)  # after plan: an unreadable lock is its error
    if stale:
        ui.warn(for_project(stale, options.project) or stale)
    if with_tools is None:
        with_tools = _tools_wanted(options, platform, lock)
    total = sum(i.want.size or 0 for i in items)
    unknown = sum(i.want.size is None for i in items)
    cache = Cache(cache_root, by_identity=True)
    phase = _phase(platform.name, items, cache, options.find_links)
    credentials = Credentials.for_indexes(project.index_url, project.mirrors)
    try:
        with http_client(connections=options.jobs, timeout=options.timeout,
                         attempts=options.retries + 1, credentials=credentials) as client, \
                ui.transfer(f"{platform.name}: files", len(items), total, phase,
                            unknown) as shown:
            result = wheelhouse.build(
                project, platform, out, client=client, cache=cache,
                find_links=tuple(p.absolute() for p in options.find_links), jobs=options.jobs,
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


def _phase(name: str, items: list[Item], cache: Cache, find_links: tuple[Path, ...]) -> str:
    """The fetching line off a terminal: what will be downloaded, and apart from it what
    the cache or a --find-links folder holds (issue 42: "fetching 10 files (10.5 MB)"
    then "0 bytes downloaded, 202.2 MB from the cache")."""
    held = [cache.holds(i.want.sha256, i.want.size)
            or any((f / i.want.filename).is_file() for f in find_links) for i in items]
    get, have = ([i for i, h in zip(items, held, strict=True) if h is kept]
                 for kept in (False, True))

    def summary(part: list[Item]) -> str:
        return ui.fetch_summary(len(part), sum(i.want.size or 0 for i in part),
                                sum(i.want.size is None for i in part))
    where = "the cache or --find-links" if find_links else "the cache"
    if not have:
        return f"{name}: fetching {summary(get)}..."
    if not get:
        return f"{name}: {summary(have)} from {where}, nothing to download..."
    return f"{name}: fetching {summary(get)}, {summary(have)} from {where}..."


def _find_links_checked(folders: tuple[Path, ...]) -> None:
    for folder in folders:
        if not folder.is_dir():
            raise UsageError(f"--find-links {folder}: not a folder")


def _lock_of(project: Project, platform: Platform) -> LockTables | None:
    """The platform's lock, read once (its errors are the build's); None when there is no
    such file (:func:`lockkit.wheelhouse.build.read_lock` says why).

    Not yet validated as PEP 751: a folder found up to date was built from these very bytes
    (its record's key holds their sha256) by this very lockkit (the record is keyed by its
    code digest), which validated them then; any other build validates them first."""
    from lockkit.lock.model import LockTables

    path = project.lock_path(platform.name)
    return LockTables.read(path).of_platform(platform.name) if path.is_file() else None


def _up_to_date(project: Project, platform: Platform, lock: LockTables, with_tools: bool, out: Path,
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
             result: BuildResult, secrets: Secrets) -> None:
    """The table, then what was downloaded and what was not (the bytes the cache or a
    --find-links folder gave: a warm rebuild says so, not "0 bytes downloaded" alone)."""
    tables.print_table(f"lockkit wheelhouse build {platform}",
                       ("package", "version", "file", "size", "from"), rows,
                       stream=sys.stdout, secrets=secrets, whole=("file",), detail=("from",))
    local = "".join(f", {human_size(size)} {_LOCAL[where]} ({files} files)"
                    for where, (files, size) in result.local.items() if files)
    ui.say(f"{platform}: {len(rows)} wheels, {human_size(result.downloaded_bytes)} "
           f"downloaded{local} -> {shown_path(out)}")


def _tools_wanted(options: BuildOptions, platform: Platform, lock: LockTables) -> bool:
    """tools/ unless --no-tools, or the lock's Python is one lockkit cannot run on (a note)."""
    if options.no_tools:
        return False
    from lockkit.wheelhouse import ownwheel  # not tools: its ~50 ms of imports wait for a build

    reason = ownwheel.skip_reason(lock.python)
    if reason:
        ui.say(f"{platform.name}: no tools/ in this wheelhouse: {reason}")
    return reason is None


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
