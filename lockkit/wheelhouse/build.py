"""A lock's wheels in one folder that installs with no network.

``build`` selects the platform's files from ``locks/pylock.<platform>.toml`` (:func:`plan`),
fetches them by hash (cache, ``--find-links``, then :mod:`lockkit.download.sources`:
mirror, lock URL, the same path on the twin host when a host fails;
:mod:`lockkit.download.pool`), and writes the folder in a temp sibling that replaces
the old one only when complete:

    <out>/<wheels>.whl    every wheel, at the top (``--find-links <out>`` works)
    <out>/pylock.toml     PEP 751, entries by relative ``path`` with their hashes
    <out>/requirements.txt  ``--hash`` lines for older pips
    <out>/simple/         a static PEP 503 tree, for any web server
    <out>/sbom.cdx.json   CycloneDX SBOM: every file's name, version, sha256, lock URL
    <out>/manifest.json   platform, the source lock's sha256, every file
    <out>/tools/          lockkit and its dependencies, for the offline machine
                          (lockkit.wheelhouse.tools)

All but the wheels and ``tools/`` come from :mod:`lockkit.wheelhouse.meta`. Same lock, same
bytes: origins stay in the build log, sdists build via ``wheelzip``.
"""

from __future__ import annotations

import shutil
import sys
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from packaging.pylock import PackageSdist, PackageWheel
from packaging.utils import canonicalize_name, parse_wheel_filename

from lockkit._internal import outdir
from lockkit._internal.endings import interrupt_held
from lockkit._internal.fs import ignored_folder, sha256_file, temp_dir
from lockkit._internal.redact import masked
from lockkit.cache.store import Cache, copy_file
from lockkit.config.project import Project
from lockkit.download.fetch import Fetcher, FileKind, Got, Item, Want
from lockkit.download.pool import fetch_items
from lockkit.download.sources import sources
from lockkit.errors import BuildError, ConfigError, HashMismatch
from lockkit.index.http import PER_HOST
from lockkit.index.urls import Mirrors
from lockkit.lock.model import Lock
from lockkit.platforms.definitions import Platform
from lockkit.platforms.targets import NothingInstallable, select
from lockkit.wheelhouse import sbom
from lockkit.wheelhouse.current import build_key, remember
from lockkit.wheelhouse.manifest import Entry
from lockkit.wheelhouse.meta import FileRecord, write_meta
from lockkit.wheelhouse.trust import file_name_problem, inside

if TYPE_CHECKING:
    from lockkit.wheelhouse.toolpins import Toolset

__all__ = ["BuildResult", "build", "plan", "read_lock"]


@dataclass(frozen=True, kw_only=True)
class BuildResult:
    folder: Path
    platform: str
    files: tuple[FileRecord, ...]
    downloaded_bytes: int
    from_cache: int
    lock_sha256: str = ""
    # "cache" / "find-links" -> (files, bytes) taken from there with no download
    local: dict[str, tuple[int, int]] = field(default_factory=dict)


def read_lock(project: Project, platform: Platform) -> Lock:
    """The platform's committed lock, read once for the whole command (:meth:`Lock.read`);
    it must be the platform's (its ``[tool.lockkit]`` names it)."""
    lock_path = project.lock_path(platform.name)
    if not lock_path.is_file() and platform.name not in project.platforms:
        config = project.config_file.name if project.config_file else "lockkit.toml"
        raise ConfigError(f"{lock_path}: lock not found: {platform.name} is not in {config}'s "
                          "platforms, so 'lockkit compile' does not lock it",
                          hint=f"add \"{platform.name}\" to platforms in {config}, or run "
                               f"'lockkit compile --platform {platform.name}'")
    return Lock.read(lock_path).of_platform(platform.name)


def plan(project: Project, platform: Platform, *, fallback_to_official: bool = False,
         lock: Lock | None = None) -> tuple[Lock, list[Item]]:
    """The files of *lock* (None: :func:`read_lock`) for *platform*: one wheel per
    package, or its sdist.

    Where each file is looked for is :func:`lockkit.download.sources.sources`'s: a file
    a mirror covers is fetched from the mirror only (an air-gapped site's build must not
    reach for the official host behind its back); *fallback_to_official* adds the lock's
    own URL after the mirror's; a host's twin follows it, for when the host fails."""
    if lock is None:
        lock = read_lock(project, platform)
    entries = lock.package_tables()
    try:
        chosen = select(lock.pylock, platform, lock.python, lock.path)
    except NothingInstallable as exc:
        raise BuildError(str(exc)) from exc
    items = []
    for package, dist in chosen:
        name = canonicalize_name(package.name)
        if not isinstance(dist, (PackageWheel, PackageSdist)) or not dist.url:
            raise BuildError(f"{lock.path}: {name} is not a wheel or sdist with a URL")
        items.append(_item(project, name, str(package.version), dist, entries[name],
                           fallback_to_official))
    return lock, items


def _item(project: Project, name: str, version: str, dist: PackageWheel | PackageSdist,
          entry: dict[str, Any], fallback_to_official: bool = False) -> Item:
    url = dist.url or ""
    filename = dist.name or urllib.parse.unquote(url.rsplit("/", 1)[-1])
    problem = file_name_problem(filename)
    if problem:
        raise BuildError(f"{name}: unsafe file name {filename!r} in the lock: {problem}")
    sha = (dist.hashes or {}).get("sha256")
    if not sha:
        raise BuildError(f"{name}: {filename} has no sha256 in the lock")
    index = entry.get("index")
    urls, skipped = sources(url, index if isinstance(index, str) else None, name,
                            Mirrors(project.mirrors, project.secrets),
                            fallback_to_official=fallback_to_official)
    want = Want(filename=filename, sha256=sha, size=dist.size, urls=urls, source=url)
    kind: FileKind = "wheel" if isinstance(dist, PackageWheel) else "sdist"
    return Item(package=name, version=version, kind=kind, want=want, entry=entry,
                official_skipped=skipped)


def build(project: Project, platform: Platform, out: Path, *, client: Any, cache: Cache,
          find_links: tuple[Path, ...] = (), jobs: int = 16,
          on_file: Callable[[Got], None] | None = None,
          on_bytes: Callable[[int], None] | None = None,
          items: list[Item] | None = None, lock: Lock | None = None,
          with_tools: bool = False) -> BuildResult:
    """*items* are :func:`plan`'s of *lock* (None: planned here, the lock read here)."""
    if items is None or lock is None:
        lock, items = plan(project, platform, lock=lock)
    cache.sweep()
    outdir.sweep_stale(out)
    # --jobs above PER_HOST raises the connections to one host with it (parts included)
    fetcher = Fetcher(client, cache, policy=client.policy, find_links=find_links, on_bytes=on_bytes,
                      max_page=project.max_page_size << 20, per_host=max(PER_HOST, jobs),
                      mirrors=Mirrors(project.mirrors, project.secrets))
    # the SBOM writer's imports on this thread while the files come, not after the last byte
    gots = fetch_items(fetcher, items, jobs, on_file, meanwhile=sbom.load)
    kit = None
    if with_tools:
        from lockkit.wheelhouse import tools  # ~50 ms of imports a build without tools/ never pays

        kit = tools.prepare(project, platform, lock, fetcher, kept=out)
    result = _assemble(project, platform, out, lock, list(zip(items, gots, strict=True)),
                       kit, cache=cache)
    cache.remember()  # the blobs' identities, for the next build (lockkit.cache.identity)
    # the folder's files and identities, for the next build's "nothing new" check
    key = build_key(lock.sha256, lock.text, lock.path.name, platform.fingerprint,
                    tools_key=kit.key if kit else None, concealed=project.secrets.forms)
    remember(cache.root, out, key, vouched=cache.vouched())
    return result


def _assemble(project: Project, platform: Platform, out: Path, lock: Lock,
              fetched: list[tuple[Item, Got]], kit: Toolset | None = None, *,
              cache: Cache) -> BuildResult:
    if out.parent == project.root / "wheelhouse":  # the default's parent: git-ignored if made
        ignored_folder(out.parent)
    out.parent.mkdir(parents=True, exist_ok=True)
    with interrupt_held() as held:  # no Ctrl-C between the stage and the try that removes it
        stage = temp_dir(out.parent, f".{out.name}.{outdir.STAGE}")
    try:
        held.reraise()
        records = [_place(project, stage, item, got, cache) for item, got in fetched]
        records.sort(key=lambda r: r.path)
        extra = _place_tools(stage, kit, cache) if kit else []  # tools/: not the lock's files
        entries = {item.package: item.entry for item, _ in fetched}
        write_meta(stage, platform, lock, entries, records, extra, project.secrets)
        with cache.identities.own_change():  # the old folder's links to the blobs go
            outdir.swap(stage, out)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    return BuildResult(folder=out, platform=platform.name, files=tuple(records),
                       downloaded_bytes=sum(g.downloaded for _, g in fetched),
                       from_cache=sum(g.origin.kind == "cache" for _, g in fetched),
                       lock_sha256=lock.sha256, local=_local(fetched))


def _local(fetched: list[tuple[Item, Got]]) -> dict[str, tuple[int, int]]:
    """The files (and their bytes) the cache and the --find-links folders gave."""
    local: dict[str, tuple[int, int]] = {}
    for _, got in fetched:
        if got.origin.local:
            files, size = local.get(got.origin.kind, (0, 0))
            local[got.origin.kind] = (files + 1, size + got.path.stat().st_size)
    return local


def _place_tools(stage: Path, kit: Toolset, cache: Cache) -> list[Entry]:
    from lockkit.wheelhouse import tools

    return tools.place(stage, kit, cache)


def _place(project: Project, stage: Path, item: Item, got: Got, cache: Cache) -> FileRecord:
    built_from = None
    if item.kind == "wheel":  # the bytes placed hash to the lock's sha256 (Cache.place)
        placed = inside(stage, item.want.filename)
        cache.place(got.path, placed, item.want.sha256)
        sha256 = item.want.sha256
    else:
        placed = _build_sdist(project, item, got.path, stage)
        sha256 = sha256_file(placed)
        built_from = {"sdist": item.want.filename, "sha256": item.want.sha256}
    return FileRecord(path=placed.name, size=placed.stat().st_size, sha256=sha256,
                      package=item.package, version=item.version, origin=got.origin,
                      instead=got.instead,
                      source=masked(item.want.source), built_from=built_from)


def _build_sdist(project: Project, item: Item, sdist: Path, stage: Path) -> Path:
    """A pure-Python wheel from an sdist, the same bytes each time (``wheelzip``)."""
    import tempfile  # this and the next: a build of wheels only never needs them

    from lockkit._internal import proc
    from lockkit.wheelhouse.wheelzip import normalize_wheel, source_epoch

    epoch = source_epoch(item.entry)
    extra = {"SOURCE_DATE_EPOCH": str(epoch), "PYTHONHASHSEED": "0"}
    if project.index_url:  # the build backend from the project's index, as tools/ does;
        # in uv's environment, never its argv: the URL may hold credentials (``ps``)
        mirrors = Mirrors(project.mirrors, project.secrets)
        extra["UV_DEFAULT_INDEX"] = mirrors.effective(project.index_url)
    env = proc.isolated_env(extra)
    with tempfile.TemporaryDirectory(prefix="lockkit-sdist-") as tmp:
        src = inside(Path(tmp), item.want.filename)
        if copy_file(sdist, src) != item.want.sha256:  # the cache's blob, hashed as copied
            raise HashMismatch(f"{item.want.filename}: the cache's copy changed before it "
                               "was built", hint="run the build again")
        from lockkit._internal.uv import UV_TIMEOUT, uv_bin

        argv = [uv_bin(), "build", "--wheel", "--no-config", "--quiet", "--python",
                sys.executable, "--out-dir", str(Path(tmp) / "dist"), str(src)]
        result = proc.call(argv, timeout=UV_TIMEOUT, env=env)
        wheels = sorted((Path(tmp) / "dist").glob("*.whl"))
        if result.returncode != 0 or not wheels:
            first = (result.stderr.strip().splitlines() or ["no wheel produced"])[-1]
            raise BuildError(f"{item.package} {item.version}: building a wheel from "
                             f"{item.want.filename} failed: {first}",
                             hint="build it on the target machine and add it with --find-links")
        tags = parse_wheel_filename(wheels[0].name)[3]
        if any(t.abi != "none" or t.platform != "any" for t in tags):
            raise BuildError(f"{item.package} {item.version}: has no wheel for this platform and "
                             f"its sdist builds a platform-specific wheel ({wheels[0].name})",
                             hint="build the wheel on the target machine and pass --find-links")
        return normalize_wheel(wheels[0], stage / wheels[0].name, epoch)

