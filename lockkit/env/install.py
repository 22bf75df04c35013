"""verify's install step: the lock's wheels, hash-checked, installed into the new venv.

The wheels come from a wheelhouse (``--wheelhouse``, or the project's
``wheelhouse/<platform>``) or, with none, from the lock's URLs into a temp wheelhouse.
The committed lock is the only authority: every wheel is hashed against it, and the
installer enforces the same hashes (``--require-hashes``), isolated from user and global
pip/uv configuration (``--no-config``, ``--isolated``, no ``PIP_*``/``UV_*`` variables).

With uv and a cache folder private to this user, installs go through ``<cache>/verify``
(:func:`shared_root`): each wheel linked by its content, and uv's cache kept between
runs, so the next verify links an unpacked torch instead of unzipping it again.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import stat
import threading
from collections.abc import Iterator
from pathlib import Path

from lockkit._internal import proc
from lockkit._internal.parse import parse_json
from lockkit._internal.private import private_folder
from lockkit._internal.uv import uv_bin
from lockkit.cache import inuse
from lockkit.cache.layout import make_root
from lockkit.cache.memo import MemoStore
from lockkit.errors import ConfigError, LockkitError
from lockkit.index.urls import origin
from lockkit.lock.model import Lock
from lockkit.report.shapes import Foreign
from lockkit.steps.context import Run
from lockkit.steps.engine import Step, StepFailed
from lockkit.wheelhouse import trust
from lockkit.wheelhouse.implied import check_wheelhouse

__all__ = ["dist_info_folders", "install_step", "installer_error", "shared_for", "shared_root",
           "wheelhouse_folder"]

_INSTALL_TIMEOUT = 1800


def wheelhouse_folder(run: Run) -> Path | None:
    """``--wheelhouse``, else the project's ``wheelhouse/<platform>`` when it exists
    (None: the install step fetches the lock's URLs); ``StepFailed`` unless it holds a
    ``manifest.json``."""
    if run.opts.wheelhouse is not None:
        folder = run.opts.wheelhouse
    else:
        folder = run.opts.project.root / "wheelhouse" / run.opts.platform.name
        if not folder.is_dir():
            return None
    if not (folder / "manifest.json").is_file():
        raise StepFailed(f"{folder}: not a wheelhouse (no manifest.json)")
    return folder


def install_step(run: Run, step: Step) -> None:
    opts = run.opts
    lock = run.committed()
    folder = wheelhouse_folder(run)
    if folder is None:
        if opts.fetch is None:
            raise StepFailed(f"no wheelhouse for {opts.platform.name}: run 'lockkit "
                             f"wheelhouse build --platform {opts.platform.name}' or pass "
                             "--wheelhouse")
        built = opts.fetch(run.work / "wheelhouse", lock)
        folder = built.folder
        step.detail["source"] = "the lock's URLs (fetched, hash-checked, into a temp wheelhouse)"
        if twins := [f"{r.path}: {r.instead}; served by {origin(str(r.origin))}, sha256 checked"
                     for r in built.files if r.instead]:
            step.detail["twin_hosts"] = twins  # lockkit.download.sources: a host failed
    else:
        step.detail["source"] = f"wheelhouse {folder} (no network)"
    _check_wheelhouse(folder, lock)
    run.wheelhouse = folder
    try:  # the committed lock is the only authority: the folder's own lock files are not read
        checked = check_wheelhouse(folder, lock, trust.selection(lock, opts.platform),
                                   opts.project.secrets)
    except LockkitError as exc:
        raise StepFailed(str(exc)) from None
    run.expected = {c.package: c.version for c in checked}
    reqs = run.work / "install" / "requirements.txt"  # hashes of the lock, checked just now
    reqs.parent.mkdir(exist_ok=True)
    shared = shared_for(run) if opts.installer == "uv" else None
    reqs.write_text(trust.requirements(checked), encoding="utf-8")
    step.detail["checked"] = (f"{len(checked)} wheel(s) hashed and matched against "
                              f"{lock.path.name}, the wheelhouse's other files derived again from "
                              "it (tools/ aside); the installer enforces the same hashes")
    assert run.python is not None
    uv_cache = None
    if shared is not None:
        uv_cache = shared / "uv"
        links = [a for d in _by_hash(checked, shared) for a in ("--find-links", str(d))]
        argv = [uv_bin(), "pip", "install", "--no-config", "--offline", "--no-index",
                "--quiet", "--python", str(run.python), *links, "--require-hashes",
                "-r", str(reqs)]
    elif opts.installer == "uv":
        argv = [uv_bin(), "pip", "install", "--no-config", "--offline", "--no-index",
                "--quiet", "--python", str(run.python), "--find-links", str(folder),
                "--require-hashes", "-r", str(reqs)]
    else:
        argv = [str(run.python), "-m", "pip", "install", "--isolated", "--no-index",
                "--disable-pip-version-check", "--quiet", "--find-links", str(folder),
                "--require-hashes", "-r", str(reqs)]
    with _counting_installs(run, len(checked)):
        result = run.call("install", argv, timeout=_INSTALL_TIMEOUT, env=proc.isolated_env(),
                          uv_cache=uv_cache)
    step.detail.update(installer=opts.installer, packages=len(run.expected),
                       isolated="installer ran without user/global pip or uv configuration "
                                "(--no-config / --isolated, PIP_* and UV_* removed)")
    if not result.ok:
        raise StepFailed(f"{opts.installer} install failed: {installer_error(result)}")


@contextlib.contextmanager
def _counting_installs(run: Run, total: int) -> Iterator[None]:
    """While the installer runs, tell ``on_progress`` every quarter second how many of the
    lock's *total* packages are in the venv: the ``*.dist-info`` folders that were not
    there before, each written once its package is in place (pip and uv both)."""
    tell = run.opts.on_progress
    if tell is None or run.venv is None:
        yield
        return
    venv = run.venv
    before = set(dist_info_folders(venv))
    stop = threading.Event()

    def installed() -> int:
        return min(total, len(set(dist_info_folders(venv)) - before))

    def watch() -> None:
        while not stop.is_set():
            tell("installing", installed(), total)
            stop.wait(0.25)

    watcher = threading.Thread(target=watch, name="lockkit-install-progress", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        stop.set()
        watcher.join()
    tell("installing", installed(), total)  # the last word: what is in the venv now


def dist_info_folders(venv: Path) -> list[Path]:
    """The ``*.dist-info`` folders of *venv*: one per installed distribution."""
    return [*venv.glob("lib*/python*/site-packages/*.dist-info"),
            *venv.glob("Lib/site-packages/*.dist-info")]


_SHARED = "verify"  # <cache>/verify: wheels/<sha256>/<file>, uv's cache, venvs/, pyc/


def shared_root(cache_root: Path | None) -> Path | None:
    """``<cache>/verify``, where verify's installs are kept between runs, made private
    (0700) to this user, when the cache folder is private to this user (the memo store's
    rule, :class:`lockkit.cache.memo.MemoStore`); else None, and a run keeps its uv cache,
    bytecode and venv in its own temp folder, removed after it. uv trusts what its cache
    holds and CPython the ``.pyc`` files of a bytecode prefix: in a folder another user
    can write, either runs their code as the user who runs verify."""
    if cache_root is None:
        return None
    root = cache_root / _SHARED
    try:
        make_root(cache_root)
        if not MemoStore(cache_root).trusted:
            return None
        make_root(root)
        if not private_folder(root):
            return None
        if stat.S_IMODE(os.lstat(root).st_mode) & 0o077:  # made by an older lockkit
            os.chmod(root, 0o700)
    except OSError:
        return None
    return root


def shared_for(run: Run) -> Path | None:
    """:func:`shared_root` for *run*, held shared (:func:`lockkit.cache.inuse.use`) from
    here until ``run.release()``: ``cache prune`` skips ``<cache>/verify`` meanwhile
    instead of removing the venv, uv's cache its files are linked from, and the bytecode.
    The lock comes first: a prune that held it has finished, and the folder is made again."""
    if run.opts.cache_root is not None and run.in_use is None:
        run.in_use = inuse.use(run.opts.cache_root, "verify")
    return shared_root(run.opts.cache_root)


def _by_hash(checked: list[trust.Checked], shared: Path) -> list[Path]:
    """One ``--find-links`` folder per wheel, named by its content: ``<cache>/verify/
    wheels/<sha256>/<file>``, a hard link to the wheel just hashed.

    uv keeps what it unpacks from a local wheel under the wheel's path; a wheelhouse at a
    new path (every test, every unpacked archive) cost a new unpacked torch (~700 MB) and
    seconds of unzipping. One path per content lets the next verify of any wheelhouse with
    the same torch link it from uv's cache (``<cache>/verify/uv``) into the fresh venv.
    Through ``--find-links`` the packages install as from an index (``pip freeze`` says
    ``name==version``, no direct URL), and the installer still checks every hash."""
    folders = []
    for c in sorted(checked, key=lambda c: c.package):
        dest = shared / "wheels" / c.sha256 / c.path.name
        if not dest.is_file():
            dest.parent.mkdir(parents=True, exist_ok=True)
            tmp = dest.parent / f".{dest.name}.{os.getpid()}.tmp"
            try:
                os.link(c.path, tmp)
            except OSError:  # another file system
                shutil.copyfile(c.path, tmp)
            os.replace(tmp, dest)
        folders.append(dest.parent)
    return folders


def installer_error(result: proc.Result) -> str:
    """A failed installer command's error line (``uv venv`` and ``venv`` included), or
    that it timed out."""
    if result.timed_out:
        return proc.outcome(result)
    return proc.last_error_line(result.stderr or result.stdout)


def _check_wheelhouse(folder: Path, lock: Lock) -> Foreign:
    """The manifest says the wheelhouse was built from this lock (a hint for honest
    mistakes, not a proof: the files are hashed against the lock afterwards)."""
    try:
        manifest: Foreign = parse_json(
            (folder / "manifest.json").read_text(encoding="utf-8"), folder)
    except (OSError, json.JSONDecodeError) as exc:
        raise StepFailed(f"{folder}/manifest.json: unreadable: {exc}") from None
    except ConfigError as exc:  # nested too deeply: that line, as the step's failure
        raise StepFailed(str(exc)) from None
    if manifest.get("lock_sha256") != lock.sha256:
        raise StepFailed(f"{folder} was built from another version of {lock.path.name}: "
                         "pass the wheelhouse of the committed lock (--wheelhouse)")
    for entry in manifest.get("files", []):
        path = folder / entry["path"]
        if not path.is_file() or path.stat().st_size != entry["size"]:
            raise StepFailed(f"{path}: missing or not the size the manifest lists")
    return manifest
