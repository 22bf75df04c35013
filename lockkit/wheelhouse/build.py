"""A lock's wheels in one folder that installs with no network.

``build`` selects the platform's files from ``locks/pylock.<platform>.toml``,
fetches them by hash (cache, ``--find-links``, mirror, lock URL), and writes the
folder in a temp sibling that replaces the old one only when complete:

    <out>/<wheels>.whl    every wheel, at the top (``--find-links <out>`` works)
    <out>/pylock.toml     PEP 751, entries by relative ``path`` with their hashes
    <out>/requirements.txt  ``--hash`` lines for older pips
    <out>/simple/         a static PEP 503 tree, for any web server
    <out>/sbom.cdx.json   CycloneDX SBOM: every file's name, version, sha256, lock URL
    <out>/manifest.json   platform, the source lock's sha256, every file
    <out>/tools/          lockkit and its dependencies, for the offline machine (lockkit.wheelhouse.tools)

Same lock, same bytes: origins stay in the build log, sdists build via ``wheelzip``.
"""

from __future__ import annotations

import hashlib
import html
import json
import queue
import shutil
import sys
import tempfile
import threading
import time
import urllib.parse
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from packaging.pylock import PackageSdist, PackageWheel
from packaging.utils import canonicalize_name, parse_wheel_filename

from lockkit import __version__
from lockkit._internal import proc as _run
from lockkit.wheelhouse import sbom
from lockkit._internal.compat import tomllib
from lockkit.cache.store import copy_file
from lockkit._internal.fs import sha256_file, temp_dir
from lockkit.config.project import Project
from lockkit.errors import BuildError, ConfigError
from lockkit.cache.store import Cache
from lockkit.wheelhouse.fetch import Fetcher, FetchError, Got, PageRef, Want
from lockkit.errors import HashMismatch
from lockkit.lock.lockfile import dumps, python_of, read_lock
from lockkit.wheelhouse.offline import requirements_header
from lockkit._internal.outdir import STAGE as _STAGE
from lockkit._internal.outdir import swap as _swap
from lockkit._internal.outdir import sweep_stale as _sweep_stale
from lockkit.platforms.definitions import Platform
from lockkit._internal.redact import redact
from lockkit.platforms.targets import select
from lockkit.wheelhouse.trust import file_name_problem, inside
from lockkit.index.urls import Mirrors, expand
from lockkit.wheelhouse.wheelzip import normalize_wheel, source_epoch

if TYPE_CHECKING:
    from lockkit.wheelhouse.tools import Toolset

__all__ = ["BuildError", "BuildResult", "FileRecord", "Item", "build", "plan", "texts_of"]

_GRACE = 0.5  # seconds an interrupted build waits for its cut-off downloads to unwind
_FALLBACK_HINT = ("the official host is tried after a failed mirror only with "
                  "--fallback-to-official")


@dataclass(frozen=True, kw_only=True)
class Item:
    """One file the platform needs, as the lock names it."""

    package: str
    version: str
    kind: str  # "wheel" | "sdist"
    want: Want
    entry: dict[str, Any]  # the package's table in the source lock
    official_skipped: bool = False  # a mirror covers the file; the lock's URL is not tried


@dataclass(frozen=True, kw_only=True)
class FileRecord:
    path: str
    size: int
    sha256: str
    package: str
    version: str
    origin: str  # where it was found: the build log's, never the manifest's
    source: str  # the lock's URL, redacted
    built_from: dict[str, str] | None = None


@dataclass(frozen=True, kw_only=True)
class BuildResult:
    folder: Path
    platform: str
    files: tuple[FileRecord, ...]
    downloaded_bytes: int
    from_cache: int
    lock_sha256: str = ""


def plan(project: Project, platform: Platform, *,
         fallback_to_official: bool = False) -> tuple[Path, list[Item]]:
    """The lock's files for *platform*: one wheel per package, or its sdist.

    A file a mirror covers is fetched from the mirror only: an air-gapped site's build
    must not reach for the official host behind its back. *fallback_to_official* adds
    the lock's own URL after the mirror's."""
    lock_path = project.lock_path(platform.name)
    data, pylock = read_lock(lock_path)
    meta = data.get("tool", {}).get("lockkit", {})
    if meta.get("platform", platform.name) != platform.name:
        raise ConfigError(f"{lock_path}: lock is for platform {meta['platform']!r}, "
                          f"not {platform.name!r}")
    entries = {canonicalize_name(p["name"]): p for p in data.get("packages", [])}
    chosen = select(pylock, platform, python_of(data, lock_path), lock_path, BuildError)
    items = []
    for package, dist in chosen:
        name = canonicalize_name(package.name)
        if not isinstance(dist, (PackageWheel, PackageSdist)) or not dist.url:
            raise BuildError(f"{lock_path}: {name} is not a wheel or sdist with a URL")
        items.append(_item(project, name, str(package.version), dist, entries[name],
                           fallback_to_official))
    return lock_path, items


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
    mirrors = Mirrors(project.mirrors)
    sources: list[str | PageRef] = []
    if mirrors.covers(url):  # the mirror first ...
        sources.append(mirrors.effective(url))
    index = entry.get("index")
    if isinstance(index, str) and mirrors.covers(index):
        # ... then the mirrored index's page, for mirrors that rewrite links to themselves ...
        sources.append(PageRef(url=f"{mirrors.effective(index).rstrip('/')}/{name}/"))
    skipped = bool(sources) and not fallback_to_official
    if not skipped:
        sources.append(expand(url))  # ... then the lock's URL
    urls = tuple(dict.fromkeys(sources))
    want = Want(filename=filename, sha256=sha, size=dist.size, urls=urls, source=url)
    kind = "wheel" if isinstance(dist, PackageWheel) else "sdist"
    return Item(package=name, version=version, kind=kind, want=want, entry=entry,
                official_skipped=skipped)


def build(project: Project, platform: Platform, out: Path, *, client: Any, cache: Cache,
          find_links: tuple[Path, ...] = (), jobs: int = 8, attempts: int = 4,
          backoff: float = 0.5, on_file: Callable[[Got], None] | None = None,
          on_bytes: Callable[[int], None] | None = None,
          items: list[Item] | None = None, lock_path: Path | None = None,
          with_tools: bool = False) -> BuildResult:
    if items is None or lock_path is None:
        lock_path, items = plan(project, platform)
    cache.sweep()
    _sweep_stale(out)
    fetcher = Fetcher(client, cache, find_links=find_links, attempts=attempts, backoff=backoff,
                      on_bytes=on_bytes)

    def one(item: Item) -> Got:
        got = _fetch_one(fetcher, item)
        if on_file:
            on_file(got)
        return got

    # Every file on the threads, the largest first (the last to finish is then a small
    # one, not a torch wheel started late): a cache hit is hashed again there (hashlib
    # releases the GIL), a miss fetched; the HTTP client is built by the first miss.
    order = sorted(range(len(items)), key=lambda i: -(items[i].want.size or 0))
    fetched = _fetch_all(fetcher, one, [items[i] for i in order], jobs) if items else []
    got_of = dict(zip(order, fetched, strict=True))
    gots = [got_of[i] for i in range(len(items))]
    kit = None
    if with_tools:
        from lockkit.wheelhouse import tools  # ~50 ms of imports a build without tools/ never pays

        kit = tools.prepare(project, platform, lock_path, fetcher, kept=out)
    return _assemble(project, platform, out, lock_path, list(zip(items, gots, strict=True)),
                     kit, cache=cache)


def _fetch_one(fetcher: Fetcher, item: Item) -> Got:
    try:
        return fetcher.fetch(item.want)
    except FetchError as exc:
        if not item.official_skipped or isinstance(exc, HashMismatch):
            raise
        raise FetchError(f"{exc}; the mirror failed and the official host "
                         f"({redact(item.want.source)}) was not tried",
                         hint=f"{exc.hint}; {_FALLBACK_HINT}" if exc.hint
                         else _FALLBACK_HINT) from None


def _fetch_all(fetcher: Fetcher, one: Callable[[Item], Got], items: list[Item],
               jobs: int) -> list[Got]:
    """Run *one* over *items* on *jobs* threads, results in order.

    On Ctrl-C or a failed file nothing is waited for beyond a short grace: queued items
    are dropped, the fetcher cuts open downloads off and removes their partial files, and
    the exception propagates. The workers are daemon threads (a ThreadPoolExecutor's are joined
    at exit, which made Ctrl-C wait for a stalled server's timeout); a worker still
    blocked finds the stop flag when it wakes and lands nothing. One still connecting,
    or waiting for headers or an index page, has no response to cut off: the grace
    bounds the wait for it, and nothing at exit waits for it (tests/test_hygiene.py).
    """
    todo: queue.SimpleQueue[tuple[Item, Future[Got]] | None] = queue.SimpleQueue()
    futures: list[Future[Got]] = []
    for item in items:
        futures.append(Future())
        todo.put((item, futures[-1]))
    workers = [threading.Thread(target=_worker, args=(todo, one, fetcher), daemon=True,
                                name=f"lockkit-fetch-{i}") for i in range(max(1, jobs))]
    try:  # a Ctrl-C while the workers start stops the ones started, too
        for worker in workers:
            todo.put(None)
            worker.start()
        return [f.result() for f in futures]
    except BaseException:
        fetcher.stop()
        for f in futures:
            f.cancel()
        deadline = time.monotonic() + _GRACE  # cut-off downloads end in milliseconds
        for worker in workers:
            if worker.is_alive():  # not one that never started
                worker.join(max(0.0, deadline - time.monotonic()))
        raise


def _worker(todo: queue.SimpleQueue[tuple[Item, Future[Got]] | None],
            one: Callable[[Item], Got], fetcher: Fetcher) -> None:
    while (job := todo.get()) is not None:
        item, future = job
        if fetcher.stopped.is_set() or not future.set_running_or_notify_cancel():
            continue
        try:
            future.set_result(one(item))
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread
            future.set_exception(exc)


def _assemble(project: Project, platform: Platform, out: Path, lock_path: Path,
              fetched: list[tuple[Item, Got]], kit: Toolset | None = None, *,
              cache: Cache) -> BuildResult:
    out.parent.mkdir(parents=True, exist_ok=True)
    stage = temp_dir(out.parent, f".{out.name}.{_STAGE}")
    try:
        records = [_place(project, stage, item, got, cache) for item, got in fetched]
        records.sort(key=lambda r: r.path)
        extra = _place_tools(stage, kit, cache) if kit else []  # tools/: not the lock's files
        lock_sha = _write_meta(stage, platform, lock_path, fetched, records, extra)
        _swap(stage, out)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    return BuildResult(folder=out, platform=platform.name, files=tuple(records),
                       downloaded_bytes=sum(g.downloaded for _, g in fetched),
                       from_cache=sum(g.origin == "cache" for _, g in fetched),
                       lock_sha256=lock_sha)


def _place_tools(stage: Path, kit: Toolset, cache: Cache) -> list[dict[str, Any]]:
    from lockkit.wheelhouse import tools

    return tools.place(stage, kit, cache)


def _place(project: Project, stage: Path, item: Item, got: Got, cache: Cache) -> FileRecord:
    base: dict[str, Any] = dict(package=item.package, version=item.version, origin=got.origin,
                                source=redact(item.want.source))
    if item.kind == "wheel":  # the bytes placed hash to the lock's sha256 (Cache.place)
        dest = inside(stage, item.want.filename)
        cache.place(got.path, dest, item.want.sha256)
        return FileRecord(path=item.want.filename, size=dest.stat().st_size,
                          sha256=item.want.sha256, **base)
    wheel = _build_sdist(project, item, got.path, stage)
    return FileRecord(path=wheel.name, size=wheel.stat().st_size, sha256=sha256_file(wheel),
                      built_from={"sdist": item.want.filename, "sha256": item.want.sha256},
                      **base)


def _build_sdist(project: Project, item: Item, sdist: Path, stage: Path) -> Path:
    """A pure-Python wheel from an sdist, the same bytes each time (``wheelzip``)."""
    epoch = source_epoch(item.entry)
    extra = {"SOURCE_DATE_EPOCH": str(epoch), "PYTHONHASHSEED": "0"}
    if project.index_url:  # the build backend from the project's index, as tools/ does;
        # in uv's environment, never its argv: the URL may hold credentials (``ps``)
        extra["UV_DEFAULT_INDEX"] = Mirrors(project.mirrors).effective(project.index_url)
    env = _run.isolated_env(extra)
    with tempfile.TemporaryDirectory(prefix="lockkit-sdist-") as tmp:
        src = inside(Path(tmp), item.want.filename)
        if copy_file(sdist, src) != item.want.sha256:  # the cache's blob, hashed as copied
            raise HashMismatch(f"{item.want.filename}: the cache's copy changed before it "
                               "was built", hint="run the build again")
        from lockkit._internal.uv import uv_bin

        argv = [uv_bin(), "build", "--wheel", "--no-config", "--quiet", "--python",
                sys.executable, "--out-dir", str(Path(tmp) / "dist"), str(src)]
        result = _run.call(argv, timeout=900, env=env)
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


def _write_meta(stage: Path, platform: Platform, lock_path: Path,
                fetched: list[tuple[Item, Got]], records: list[FileRecord],
                extra: list[dict[str, Any]] | None = None) -> str:
    """Write every file but the wheels; return the lock's sha256."""
    raw = lock_path.read_bytes()  # once: the lock's tables and its sha256 from the same bytes
    data, lock_sha = tomllib.loads(raw.decode("utf-8")), hashlib.sha256(raw).hexdigest()
    entries = {item.package: item.entry for item, _ in fetched}
    texts = texts_of(data, entries, records, platform=platform.name, lock=lock_path.name,
                     lock_sha256=lock_sha, tools=bool(extra))
    described = [sbom.File.of(r, entries[r.package]) for r in records]
    described += [_tool_file(e) for e in extra or [] if "package" in e]
    texts[sbom.FILENAME] = sbom.render(described, platform=platform.name, lock=data,
                                       lock_sha256=lock_sha)
    for rel, text in texts.items():
        _text(stage / rel, text)
    listed = {e["path"] for e in extra or []}
    meta_files = sorted(p for p in stage.rglob("*") if p.is_file() and p.suffix != ".whl"
                        and p.relative_to(stage).as_posix() not in listed)
    files = [_wheel_json(r) for r in records] + list(extra or []) + [
        {"path": p.relative_to(stage).as_posix(), "size": p.stat().st_size,
         "sha256": sha256_file(p), "kind": "meta"} for p in meta_files]
    manifest = {"schema_version": 1, "platform": platform.name,
                "lock": lock_path.name, "lock_sha256": lock_sha,
                "lockkit_version": __version__,
                "files": sorted(files, key=lambda f: f["path"])}
    _text(stage / "manifest.json", json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return lock_sha


def texts_of(data: dict[str, Any], entries: dict[str, dict[str, Any]],
             records: list[FileRecord], *, platform: str, lock: str, lock_sha256: str,
             tools: bool) -> dict[str, str]:
    """What a wheelhouse of *records* (its wheels) holds besides them, the SBOM and the
    manifest, by path: ``pylock.toml``, ``requirements.txt`` and the ``simple/`` pages, all
    derived from the source lock (*data*, *entries*: its package tables by name) and the
    wheels alone. ``build`` writes them; ``pack`` derives them again to check a folder."""
    by_pkg = {r.package: r for r in records}
    of = {"lock": lock, "sha256": lock_sha256}
    return {"pylock.toml": dumps(_local_lock(data, entries, by_pkg, of)),
            "requirements.txt": _requirements(platform, records, tools=tools),
            **_simple_tree(records)}


def _tool_file(entry: dict[str, Any]) -> sbom.File:
    """A ``tools/`` manifest entry as the SBOM describes it."""
    source = entry.get("source") or ""  # lockkit's own wheel: "lockkit X, built from ..."
    return sbom.File(name=entry["package"], version=entry["version"], path=entry["path"],
                     sha256=entry["sha256"], size=entry["size"],
                     source_url=source if source.startswith(("https://", "http://")) else "",
                     kind="tool")


def _wheel_json(r: FileRecord) -> dict[str, Any]:
    entry: dict[str, Any] = {"path": r.path, "size": r.size, "sha256": r.sha256, "kind": "wheel",
                             "package": r.package, "version": r.version, "source": r.source}
    if r.built_from:
        entry["built_from"] = r.built_from
    return entry


def _local_lock(data: dict[str, Any], entries: dict[str, dict[str, Any]],
                records: dict[str, FileRecord], of: dict[str, str]) -> dict[str, Any]:
    packages = []
    for name in sorted(records):
        rec, src = records[name], entries[name]
        pkg: dict[str, Any] = {"name": name, "version": rec.version}
        for key in ("requires-python", "dependencies"):
            if key in src:
                pkg[key] = src[key]
        pkg["wheels"] = [{"name": rec.path, "path": rec.path, "size": rec.size,
                          "hashes": {"sha256": rec.sha256}}]
        packages.append(pkg)
    tool = dict(data.get("tool", {}).get("lockkit", {}))
    tool["wheelhouse-of"] = of
    return {"lock-version": "1.0", "environments": data.get("environments", []),
            "requires-python": data.get("requires-python", ""), "created-by": "lockkit",
            "packages": packages, "tool": {"lockkit": tool}}


def _requirements(platform: str, records: list[FileRecord], tools: bool = False) -> str:
    lines = requirements_header(platform, tools)
    lines += [f"{r.package}=={r.version} --hash=sha256:{r.sha256}"
              for r in sorted(records, key=lambda r: r.package)]
    return "\n".join(lines) + "\n"


def _simple_tree(records: list[FileRecord]) -> dict[str, str]:
    """The static PEP 503 tree's pages, by path in the folder."""
    projects = sorted({r.package for r in records})
    links = "".join(f'<a href="{p}/">{p}</a><br/>\n' for p in projects)
    pages = {"simple/index.html": _page("Simple index", links)}
    for project in projects:
        rows = "".join(
            f'<a href="../../{urllib.parse.quote(r.path)}#sha256={r.sha256}">'
            f"{html.escape(r.path)}</a><br/>\n" for r in records if r.package == project)
        pages[f"simple/{project}/index.html"] = _page(f"Links for {project}", rows)
    return pages


def _page(title: str, body: str) -> str:
    return (f"<!DOCTYPE html>\n<html><head><meta name=\"pypi:repository-version\" "
            f"content=\"1.0\"><title>{title}</title></head>\n<body>\n{body}</body></html>\n")


def _text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8", newline="\n")
