"""lockkit travels with its wheelhouse: ``<wheelhouse>/tools/`` holds lockkit's own wheel
and its runtime dependencies, so the offline machine can run ``lockkit verify``::

    python -m venv v && v/bin/pip install --no-index --find-links <wheelhouse>/tools lockkit

**The dependencies** are the installed lockkit's ``Requires-Dist``, resolved the way
``compile`` resolves a lock (``lockkit.index.resolve``: uv for the *target*'s
``--python-platform`` and Python version, ``--generate-hashes``), against the project's
default index (``index-url``, mirrors honoured, ``exclude-newer`` too) and never a PyTorch
index: lockkit needs no torch-family package (:func:`resolve_runtime`, the one rule; the CI
workflow's pins, :mod:`lockkit.ci.pins`, resolve by it too, for every OS and Python).
Without ``exclude-newer`` the tools follow the index's newest releases at build time, so
two builds far apart may carry different
versions; the wheelhouse's own files (the lock's) do not move. The wheels are selected
for the platform by ``lockkit.platforms.targets`` and fetched by ``lockkit.download.fetch``
exactly like the lock's own files, so every sha256 is checked while the bytes stream in.

**lockkit's own wheel** is not on any index, so it is made from the running lockkit
(:mod:`lockkit.wheelhouse.ownwheel`):

- from a source tree (``pyproject.toml`` naming lockkit beside the package: an editable
  or development install), ``uv build --wheel`` with ``SOURCE_DATE_EPOCH`` fixed, so two
  builds of one tree give the same bytes (hatchling sorts members and stamps that time;
  ``platforms/`` goes in as ``lockkit/_platforms`` as pyproject says). The build backend
  comes from the project's index too; its version is written in the wheel's ``WHEEL``
  file, so a new hatchling release changes the bytes (not the installed files);
- otherwise (installed from a wheel), the wheel is rebuilt from the installed files its
  ``RECORD`` lists, each checked against RECORD's hash first (an edited install is
  refused), in sorted order with fixed times: again the same bytes every time. Scripts
  (``../../bin``), bytecode and the installer's own files are left out: pip writes them
  again on install.

The wheel is put in the download cache under its sha256 and placed like the others.

**Kept in the wheelhouse, not in the cache** (:mod:`lockkit.wheelhouse.toolpins`).
``tools/requirements.txt`` names the *resolution key* it was made from: the sha256 of
everything that decides the tools (lockkit's version and requirements, the target, the
index without credentials, mirrors, ``exclude-newer``, and the digest of the source tree
or installed code lockkit's wheel is made from). A build into a folder whose
``tools/requirements.txt`` has the same key takes the pins (names, versions, sha256) from
that file, the folder's own reviewable input, and asks no index and builds nothing:
every file comes from the cache by hash, checked. The file is read back only when it and
the manifest are regular files of this user's that nobody else can write, agree with each
other, and every name passes the rule for a fresh name; anything else resolves again.
Nothing about the tools is taken from the download cache alone (a shared cache's owner is
not the user).

``tools/requirements.txt`` pins every tool with its hash. The wheelhouse's own
``requirements.txt`` and ``pylock.toml`` are the application's and do not list the tools;
``manifest.json`` lists the files under ``tools/`` with ``"kind": "tool"``, so pack and
unpack carry and check them.
"""

from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

from packaging.pylock import PackageWheel, Pylock, PylockValidationError
from packaging.utils import canonicalize_name

from lockkit import __version__
from lockkit._internal.fs import sha256_file
from lockkit.cache.store import Cache, copy_hashing
from lockkit.config.project import Project
from lockkit.download.fetch import Fetcher, Want
from lockkit.errors import BuildError, FetchError, LockkitError
from lockkit.index.resolve import ResolveOptions, resolve
from lockkit.index.urls import Indexes, Mirrors
from lockkit.lock.model import Lock
from lockkit.platforms.definitions import Platform
from lockkit.platforms.targets import NothingInstallable, select
from lockkit.wheelhouse.manifest import Entry
from lockkit.wheelhouse.ownwheel import (
    build_from_source,
    own_source,
    rebuild_installed,
    resolution_key,
    runtime_requirements,
    source_tree,
)
from lockkit.wheelhouse.toolpins import FOLDER, Tool, Toolset, kept_pins, requirements_text
from lockkit.wheelhouse.trust import file_name_problem, inside

__all__ = ["own_wheel", "place", "prepare", "resolve_runtime"]


def prepare(project: Project, platform: Platform, lock: Lock,
            fetcher: Fetcher, *, kept: Path | None = None) -> Toolset:
    """Resolve, fetch and build every tool for *platform*, lockkit's wheel first; or take
    the pins of the wheelhouse *kept* (the folder this build replaces) when they were made
    from the same inputs (see the module). The tools are for *lock*'s Python: the offline
    machine runs lockkit with the interpreter it rebuilds the lock with."""
    python = lock.python
    root = source_tree()
    key = resolution_key(project, platform, python, root)
    tools = _from_kept(kept, key, project, platform, fetcher) if kept is not None else None
    if tools is None:
        deps = []
        for package, version, want in _resolve(project, platform, python):
            got = fetcher.fetch(want)
            deps.append(Tool(package=package, version=version, filename=want.filename,
                             sha256=want.sha256, path=got.path, source=want.source))
        tools = (own_wheel(fetcher.cache, project), *deps)
    return Toolset(platform=platform.name, python=python, tools=tools, key=key)


def _from_kept(folder: Path, key: str, project: Project, platform: Platform,
               fetcher: Fetcher) -> tuple[Tool, ...] | None:
    """The tools *folder*'s ``tools/requirements.txt`` pins, when it was made for *key*,
    each fetched by hash (a cache hit is hashed again); None when the folder's pins do not
    hold (the caller resolves again)."""
    pins = kept_pins(folder, key, platform.name)
    if pins is None:
        return None
    mirrors, tools = Mirrors(project.mirrors, project.secrets), []
    for package, version, entry in pins:
        name = entry["path"].removeprefix(f"{FOLDER}/")
        source = str(entry.get("source"))  # an official URL (kept_pins checked it)
        if package == "lockkit":  # lockkit's own wheel: made here, on no index
            path = fetcher.cache.get(entry["sha256"], entry["size"])
            if path is None:
                return None  # built again, with the rest resolved again
            source = own_source(source_tree())
        else:
            want = Want(filename=name, sha256=entry["sha256"], size=entry["size"],
                        urls=(mirrors.effective(source),), source=source)
            try:
                path = fetcher.fetch(want).path
            except FetchError:
                return None
        tools.append(Tool(package=package, version=version, filename=name,
                          sha256=entry["sha256"], path=path, source=source))
    own = [t for t in tools if t.package == "lockkit"]
    return (*own, *(t for t in tools if t.package != "lockkit")) if own else None


def resolve_runtime(project: Project, platform: Platform, python: str, *,
                    universal: bool = False) -> dict[str, Any]:
    """lockkit's own dependencies (:func:`~lockkit.wheelhouse.ownwheel.runtime_requirements`)
    resolved by the one rule ``tools/`` and the CI workflow's pins share: uv with hashes,
    every name from the project's default index (``index-url``, mirrors, ``exclude-newer``)
    and never a PyTorch index; for *platform* and *python*, or with *universal* for every
    OS and every Python from *python* up. uv's pylock document; a LockkitError as uv's."""
    # no torch index, no routing index: every name from the project's default index
    bare = replace(platform, torch_index=None, torch_packages=(), torch_file_hosts=())
    indexes = Indexes.for_platform(bare, project.mirrors, project.index_url,
                                     project.secrets)
    options = ResolveOptions(exclude_newer=project.exclude_newer, universal=universal)
    with tempfile.TemporaryDirectory(prefix="lockkit-tools-") as tmp:
        reqs = Path(tmp) / "requirements.in"
        reqs.write_text("".join(f"{r}\n" for r in runtime_requirements()), encoding="utf-8")
        return resolve([reqs], bare, python, indexes, options=options).doc


def _resolve(project: Project, platform: Platform, python: str) -> list[tuple[str, str, Want]]:
    try:
        doc = resolve_runtime(project, platform, python)
    except LockkitError as exc:
        why = str(exc).removeprefix(f"{platform.name}: ")
        raise BuildError(f"{platform.name}: lockkit's own dependencies (for tools/): {why}",
                         hint="check index-url / --mirror, or pass --no-tools") from None
    where = Path(f"lockkit's dependencies for {platform.name}")
    try:
        chosen = select(Pylock.from_dict(doc), platform, python, where)
    except PylockValidationError as exc:
        raise BuildError(f"{where}: uv wrote an invalid resolution: {exc}") from None
    except NothingInstallable as exc:
        raise BuildError(str(exc)) from exc
    mirrors = Mirrors(project.mirrors, project.secrets)
    return [_want(str(package.name), str(package.version), dist, mirrors)
            for package, dist in chosen]


def _want(name: str, version: str, dist: Any, mirrors: Mirrors) -> tuple[str, str, Want]:
    if not isinstance(dist, PackageWheel) or not dist.url:
        raise BuildError(f"{name} {version}: lockkit's dependency has no wheel for this "
                         "platform (tools/ carries wheels only)", hint="pass --no-tools")
    filename = dist.name or dist.url.rsplit("/", 1)[-1]
    sha = (dist.hashes or {}).get("sha256")
    if not sha or file_name_problem(filename):
        raise BuildError(f"{name} {version}: no sha256 or an unsafe file name ({filename!r})")
    want = Want(filename=filename, sha256=sha, size=dist.size, urls=(dist.url,),
                source=mirrors.official(dist.url))
    return canonicalize_name(name), version, want


# --- lockkit's own wheel ------------------------------------------------------------------

def own_wheel(cache: Cache, project: Project | None = None) -> Tool:
    """lockkit's wheel, built from the running lockkit (see the module), into *cache*."""
    root = source_tree()
    with tempfile.TemporaryDirectory(prefix="lockkit-own-") as tmp:
        if root is not None:
            wheel = build_from_source(root, Path(tmp), project)
        else:
            wheel = rebuild_installed(Path(tmp))
        out, partial = cache.new_partial()
        with out, wheel.open("rb") as src:
            sha = copy_hashing(src, out, lambda n: None)
        path = cache.commit(partial, sha)
    return Tool(package="lockkit", version=__version__, filename=wheel.name, sha256=sha,
                path=path, source=own_source(root))


# --- into the wheelhouse ------------------------------------------------------------------

def place(stage: Path, toolset: Toolset, cache: Cache) -> list[Entry]:
    """Put the tools in ``<stage>/tools/`` with a hash-pinned requirements.txt; return their
    manifest entries (kind "tool")."""
    folder = stage / FOLDER
    folder.mkdir()
    entries: list[Entry] = []
    for tool in sorted(toolset.tools, key=lambda t: t.package):
        dest = inside(folder, tool.filename)
        cache.place(tool.path, dest, tool.sha256)
        entries.append({"path": f"{FOLDER}/{tool.filename}", "kind": "tool",
                        "size": dest.stat().st_size, "sha256": tool.sha256,
                        "package": tool.package, "version": tool.version,
                        "source": tool.source})
    reqs = folder / "requirements.txt"
    reqs.write_text(requirements_text(toolset), encoding="utf-8", newline="\n")
    entries.append({"path": f"{FOLDER}/requirements.txt", "kind": "tool",
                    "size": reqs.stat().st_size, "sha256": sha256_file(reqs)})
    return entries

