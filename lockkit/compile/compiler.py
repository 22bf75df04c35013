"""compile: constraints + platform -> locks/pylock.<platform>.toml (and --locked).

Same inputs, same lock: when every input of the lock writer (uv's output, the lock's
metadata, the inputs record, the platform, the indexes and mirrors, the sdists allowed,
the files the routing index listed, and lockkit's own code through the memo key) is what
made the lock on disk, that lock is kept as it is, without being rebuilt. What is
remembered (:mod:`lockkit.cache.memo`, kind ``compile``) is only the lock's sha256 and its
package count, and it is used only when the lock on disk has that sha256.

``--locked`` (:func:`locked_one`) uses no memo: it resolves, builds the lock compile would
write and compares it with the committed one (:mod:`lockkit.compile.locked`), writing
nothing.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from lockkit import __version__
from lockkit._internal import proc
from lockkit._internal.fs import temp_folder, write_atomic
from lockkit._internal.log import VERBOSE
from lockkit._internal.uv import uv_bin, uv_version
from lockkit.cache.layout import default_cache_dir
from lockkit.cache.memo import MemoStore, code_digest
from lockkit.compile.slips import asked_names, input_warnings
from lockkit.config.inputs import effective_inputs, normalized_inputs, resolver_inputs
from lockkit.config.project import Project
from lockkit.errors import ConfigError, GuardError, LockkitError, ResolutionError
from lockkit.index.http import TIMEOUT
from lockkit.index.pages import Http
from lockkit.index.resolve import Resolution, ResolveOptions, no_such_torch, resolve
from lockkit.index.urls import Indexes
from lockkit.lock.freshness import (
    LOCK_FORMAT,
    InputsRecord,
    Outcome,
    Verdict,
    fingerprint,
    inputs_record,
    read_lock,
    verdict,
)
from lockkit.lock.meta import Backend, LockMeta
from lockkit.lock.model import Lock, LockFile
from lockkit.lock.origins import Origins
from lockkit.lock.python import lock_python, lock_python_why
from lockkit.platforms.definitions import Platform

if TYPE_CHECKING:
    from lockkit.index.routing import RoutingIndex

__all__ = ["compile_platforms", "locked_one"]

_log = logging.getLogger(__name__)


def _while_uv_runs() -> None:
    """What every compile needs once uv is done, done while uv resolves: uv's version
    (``uv --version``; one that fails is said by the compile, which asks again, not as
    this thread's traceback) and lockkit's code digest (the memo key's). Not the lock
    writer's imports (an unchanged lock never needs them, and they would hold the
    interpreter lock the routing index answers uv with) unless a lock is built whatever
    uv says (:func:`_while_uv_runs_to_write`)."""
    with contextlib.suppress(LockkitError):
        uv_version(uv_bin())
    code_digest()


def _while_uv_runs_to_write() -> None:
    """:func:`_while_uv_runs` and the lock writer's imports, for a compile with no lock on
    disk (the memo keeps only a lock that is there) and ``--locked``: done once the routing
    index has the family pages uv waits on, they come off the time after uv."""
    _while_uv_runs()
    import packaging.pylock  # noqa: F401
    import tomli_w  # noqa: F401

    import lockkit.lock.lockfile  # noqa: F401


def compile_one(project: Project, platform: Platform, found: LockFile, uv: str,
                http: Http, upgrade: bool = False,
                upgrade_packages: tuple[str, ...] = (),
                requirements: dict[str, list[str]] | None = None,
                memos: MemoStore | None = None) -> Outcome:
    """One platform's lock; *found*: the lock on disk, read before any work; *memos*
    remembers which lock the same inputs made (None: the user's cache)."""
    if requirements is None:
        requirements = normalized_inputs(project)
    path, existing = found.path, found.text
    options = ResolveOptions(preferences=path, upgrade=upgrade,
                             upgrade_packages=upgrade_packages,
                             exclude_newer=project.exclude_newer)
    run = _prepare(project, platform, uv, http, options, requirements,
                   writes=existing is None)
    memos = memos if memos is not None else MemoStore(default_cache_dir())
    key = _memo_key(run.resolution.text, run.meta, run.record, platform, run.indexes,
                    project.allow_sdist, run.resolution.routing)
    packages = _known_lock(memos, key, existing)
    _log.log(VERBOSE, "%s: %s", platform.name,
             "memo hit: the lock on disk is what these inputs made; kept as it is"
             if packages is not None else "memo miss: the lock is written from uv's output")
    if packages is not None:
        return Outcome(platform=platform.name, path=path, status="unchanged",
                       packages=packages)
    lock, hashed = run.lock(http, path)
    packages = len(lock.pylock.packages)
    if not hashed:
        memos.put("compile", key, {"lock-sha256": lock.sha256, "packages": packages})
    if existing == lock.text:
        return Outcome(platform=platform.name, path=path, status="unchanged",
                       packages=packages)
    write_atomic(path, lock.text)
    return Outcome(platform=platform.name, path=path, status="written", packages=packages)


def locked_one(project: Project, platform: Platform, found: LockFile, uv: str, http: Http,
               requirements: dict[str, list[str]]) -> Outcome:
    """``compile --locked`` for one platform: the committed lock (*found*, read before any
    work) and its verdict (as ``--check`` gives it), then every difference from the lock a
    fresh resolution makes (:mod:`lockkit.compile.locked`), its pins preferred. Nothing is
    written, the memo is neither read nor written."""
    from lockkit.compile.locked import committed, differences  # --locked only

    path = found.path
    record = inputs_record(project, platform, lock_python(project, platform), requirements)
    said_of, lock = committed(found, record, platform, Origins.of(project, platform))
    if said_of.status == "missing":
        return Outcome(platform=platform.name, path=path, status="missing")
    # uv reads only the versions of its preferences; one that is no lock it cannot read
    # (None: "not a lock lockkit wrote")
    options = ResolveOptions(preferences=path if lock is not None else None,
                             exclude_newer=project.exclude_newer)
    fresh, _ = _prepare(project, platform, uv, http, options, requirements,
                        writes=True).lock(http, path)
    # the built lock's tables are its data as read back from its text (Lock.built)
    said = differences(lock, fresh) if lock is not None else []
    status = said_of.status if said_of.status != "fresh" else \
        "differs" if said else "matches"
    return Outcome(platform=platform.name, path=path, status=status,
                   packages=len(fresh.pylock.packages), detail=said_of.detail,
                   differences=tuple(said))


@dataclass(frozen=True, kw_only=True)
class _Prepared:
    """One platform's resolution and what the lock writer takes with it."""

    platform: Platform
    indexes: Indexes
    resolution: Resolution
    meta: LockMeta  # [tool.lockkit] but what the lock writer adds
    record: InputsRecord
    allow_sdist: tuple[str, ...]

    def lock(self, http: Http, path: Path) -> tuple[Lock, bool]:
        return _lock(self.resolution, self.platform, self.indexes, self.allow_sdist,
                     self.meta, http, path)


def _prepare(project: Project, platform: Platform, uv: str, http: Http,
             options: ResolveOptions, requirements: dict[str, list[str]],
             writes: bool = False) -> _Prepared:
    """uv's resolution for *platform* (*options*: the preferences and how far to move
    them), with the lock's metadata and inputs record; *writes*: a lock is built from it
    whatever uv says (:func:`_while_uv_runs_to_write`)."""
    python = lock_python(project, platform)
    record = inputs_record(project, platform, python, requirements)
    indexes = Indexes.for_platform(platform, project.mirrors, project.index_url,
                                     project.secrets)
    start = time.perf_counter()
    resolution = _resolve(project, platform, python, indexes, options, requirements, uv, http,
                          _while_uv_runs_to_write if writes else _while_uv_runs)
    _log.log(VERBOSE, "%s: uv resolved in %.2f s", platform.name, time.perf_counter() - start)
    meta = LockMeta(
        platform=platform.name, platform_fingerprint=platform.fingerprint,
        backend=Backend(kind=platform.backend.kind, version=platform.backend.version or ""),
        torch_index=platform.torch_index or "", python=python,
        lock_format=LOCK_FORMAT, inputs_fingerprint=fingerprint(record),
        lockkit_version=__version__, uv_version=uv_version(uv), inputs=record)
    return _Prepared(platform=platform, indexes=indexes, resolution=resolution, meta=meta,
                     record=record, allow_sdist=project.allow_sdist)


def _resolve(project: Project, platform: Platform, python: str, indexes: Indexes,
             options: ResolveOptions, requirements: dict[str, list[str]], uv: str,
             http: Http, meanwhile: Callable[[], None] = _while_uv_runs) -> Resolution:
    """uv's resolution of the project's inputs for *platform*; a failure for want of a
    torch the platform's index serves says so plainly (:func:`.resolve.no_such_torch`)."""
    pages: dict[str, tuple[int, str]] = {}  # on a failure: what the PyTorch index served
    requirements = effective_inputs(project, platform, requirements)
    with temp_folder("lockkit-inputs-") as tmp:
        reqs, input_options = resolver_inputs(project, Path(tmp), platform)
        try:
            return resolve(reqs, platform, python, indexes, binary=uv,
                           fetch_page=http.page, options=options,
                           input_options=input_options,
                           prefetch=tuple(asked_names(requirements)),
                           meanwhile=meanwhile, pages_out=pages,
                           timeout=http.timeout)
        except ResolutionError:
            no_such_torch(platform, requirements, pages)
            raise


def _lock(resolution: Resolution, platform: Platform, indexes: Indexes,
          allow_sdist: tuple[str, ...], meta: LockMeta, http: Http, path: Path
          ) -> tuple[Lock, bool]:
    """The lock to write at *path*, and whether a file was hashed over the network to
    write it (then the lock depends on the network, not only on uv: no memo). A
    resolution that makes no PEP 751 lock is a guard failure, written nowhere."""
    from packaging.pylock import PylockValidationError

    from lockkit.lock.lockfile import build_lock, check_guards

    routing = resolution.routing
    doc = resolution.doc
    check_guards(doc, platform, indexes, allow_sdist, routing)
    hashed: list[str] = []

    def hasher(url: str) -> str:
        hashed.append(url)  # fetched now: the lock depends on the network, not only on uv
        return http.hash(url)

    try:
        lock = build_lock(doc, platform, indexes, meta, hasher, routing,
                          allow_sdist=allow_sdist, path=path)
    except PylockValidationError as exc:
        raise GuardError(f"{platform.name}: the lock of this resolution is not valid "
                         f"PEP 751 ({exc}); nothing written") from exc
    return lock, bool(hashed)


def _memo_key(uv_output: str, meta: LockMeta, record: InputsRecord,
              platform: Platform, indexes: Indexes, allow_sdist: tuple[str, ...],
              routing: RoutingIndex | None) -> str:
    """The memo key of every input of the lock writer and its guards: uv's output, the
    lock's metadata (platform and inputs fingerprints, versions), the inputs record, the
    platform, the indexes and mirrors as used, the sdists allowed, and each file the
    routing index listed with its official URL (lockkit's code digest is in every key)."""
    listed = {name: sorted((f.filename, f.url, f.official) for f in page.files.values())
              for name, page in (routing.pages.items() if routing else ())}
    return MemoStore.key("compile", uv_output, meta.to_table(), record, platform.to_dict(),
                         platform.name, indexes.torch_official, indexes.torch_effective,
                         indexes.default_effective, indexes.default_official,
                         indexes.mirrors.table, sorted(allow_sdist), listed)


def _known_lock(memos: MemoStore, key: str, existing: str | None) -> int | None:
    """The package count of the lock on disk when the memo of *key* names its sha256
    (the same inputs made that very lock); None otherwise."""
    if existing is None:
        return None
    known = memos.get("compile", key)
    if not isinstance(known, dict) or known.get("lock-sha256") != _sha256(existing):
        return None
    packages = known.get("packages")
    return packages if type(packages) is int and packages >= 0 else None


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _refuse_edited(project: Project, platforms: list[Platform],
                   requirements: dict[str, list[str]], found: dict[str, LockFile]) -> None:
    """uv prefers the existing lock's versions: a lock ``compile --check`` reports
    *modified* (its packages edited after lockkit wrote it, or not lockkit's) would hand
    an unchecked edit to the next lock, so it is refused, every such lock in one line."""
    edited = []
    for platform in platforms:
        path = project.lock_path(platform.name)
        record = inputs_record(project, platform, lock_python(project, platform),
                               requirements)
        origins, read = Origins.of(project, platform), read_lock(found[platform.name])
        said = read if isinstance(read, Verdict) else verdict(read, record, platform, origins)
        if said.status == "modified":
            edited.append(f"{path}: modified ({said.detail})")
    if edited:
        whose = "its" if len(edited) == 1 else "their"
        raise ConfigError("; ".join(edited) + f": compile will not take {whose} versions as "
                          "preferences", hint="pass --upgrade to resolve afresh, or --force "
                                              "to keep the edited versions as preferences")


def compile_platforms(project: Project, platforms: list[Platform],
                      on_done: Callable[[Outcome], None] | None = None,
                      jobs: int = 4, upgrade: bool = False,
                      upgrade_packages: tuple[str, ...] = (), timeout: float = TIMEOUT,
                      on_start: Callable[[Platform], None] | None = None,
                      force: bool = False,
                      on_warning: Callable[[str], None] | None = None,
                      locked: bool = False) -> list[Outcome]:
    """Resolve several platforms concurrently; one failure does not stop the others.
    With *locked*, write nothing: compare each committed lock with the resolution
    (:func:`locked_one`; a lock edited by hand is then a difference, not refused).

    Before any work: the inputs are read, a lock edited by hand is refused as preferences
    (unless *upgrade*, which takes none, or *force*), and what the inputs seem not to
    mean is said through *on_warning* (:func:`input_warnings`).

    The platforms share one :class:`~lockkit.index.pages.Http`, and with it the hosts that
    failed in this run: an unreachable PyTorch index (or mirror) is paid for once, not
    once per platform that uses it. *timeout*: seconds an index may take to connect or
    answer (lockkit's page fetches and uv's own requests). *on_start* is told of each
    platform as its work begins."""
    requirements, found = _before_work(project, platforms, upgrade or force or locked,
                                       on_warning)
    uv = uv_bin()
    memos = MemoStore(default_cache_dir())

    def run(platform: Platform) -> Outcome:
        if on_start:
            on_start(platform)
        start = time.perf_counter()
        try:
            lock = found[platform.name]
            outcome = (locked_one(project, platform, lock, uv, http, requirements) if locked
                       else compile_one(project, platform, lock, uv, http, upgrade,
                                        upgrade_packages, requirements, memos))
        except LockkitError as exc:
            outcome = Outcome(platform=platform.name, path=project.lock_path(platform.name),
                              status="failed", error=exc)
        _log.log(VERBOSE, "%s: %s in %.2f s", platform.name, outcome.status,
                 time.perf_counter() - start)
        if on_done:
            on_done(outcome)
        return outcome

    from lockkit.index.auth import Credentials

    credentials = Credentials.for_indexes(project.index_url, project.mirrors)
    http = Http(credentials=credentials, timeout=timeout, max_page=project.max_page_size << 20)
    try:
        return _run_all(run, platforms, jobs)
    finally:
        http.close()


def _before_work(project: Project, platforms: list[Platform], edited_ok: bool,
                 on_warning: Callable[[str], None] | None
                 ) -> tuple[dict[str, list[str]], dict[str, LockFile]]:
    """The normalized inputs, read before any work starts (bad input fails first); each
    platform's Python chosen; every lock on disk read, once (:class:`LockFile`: readable,
    or exit 2), one edited by hand refused unless *edited_ok*; the input warnings said."""
    requirements = normalized_inputs(project)
    found = {}
    for platform in platforms:  # no Python satisfies requires-python: exit 2 now
        _log.log(VERBOSE, "%s: Python %s (%s)", platform.name,
                 *lock_python_why(project, platform))
        found[platform.name] = LockFile.read(project.lock_path(platform.name))
    if not edited_ok:
        _refuse_edited(project, platforms, requirements, found)
    for warning in input_warnings(platforms, requirements, project):
        if on_warning is not None:
            on_warning(warning)
    return requirements, found


def _run_all(run: Callable[[Platform], Outcome], platforms: list[Platform],
             jobs: int) -> list[Outcome]:
    """*run* over *platforms* on up to *jobs* threads, the outcomes in order."""
    workers = max(1, min(jobs, len(platforms)))
    if workers == 1:  # no pool: concurrent.futures costs ~3 ms before uv starts
        return [run(platform) for platform in platforms]
    from concurrent.futures import ThreadPoolExecutor

    pool = ThreadPoolExecutor(max_workers=workers)
    try:
        return list(pool.map(run, platforms))
    except BaseException:
        # Ctrl-C reaches this thread only: the workers' uv runs are killed, and any
        # they would start, so that the workers (and their temp folders) end now
        with proc.ending():
            pool.shutdown(wait=True, cancel_futures=True)
        raise
    finally:
        pool.shutdown(wait=True)
