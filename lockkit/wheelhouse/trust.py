"""A wheelhouse folder checked against the committed lock, by hashing its files.

A wheelhouse carries its own ``pylock.toml``, ``requirements.txt`` and ``manifest.json``,
and whoever can replace a wheel can rewrite those to match. So none of them is an
authority: the committed ``locks/pylock.<platform>.toml`` says which files the platform
needs and their sha256, and each of those files is hashed here. The manifest is consulted
only for wheels built from an sdist (the lock has the sdist's hash, not the wheel's): such
a wheel is accepted when the manifest says it was built from the lock's sdist and its own
bytes match the manifest, which is as far as a wheel built on another machine can be
traced.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from packaging.pylock import PackageSdist, PackageWheel
from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)

from lockkit._internal.fs import sha256_file
from lockkit.errors import TrustError, UsageError
from lockkit.lock.model import Lock
from lockkit.platforms.definitions import Platform, load_catalog
from lockkit.platforms.targets import NothingInstallable, select
from lockkit.wheelhouse.manifest import Entry

if TYPE_CHECKING:
    from lockkit.download.fetch import FileKind

__all__ = ["Checked", "Selected", "check_folder", "committed", "file_name_problem",
           "inside", "requirements", "selection"]


@dataclass(frozen=True, kw_only=True)
class Selected:
    """One file the committed lock selects for the platform."""

    package: str
    version: str
    kind: FileKind
    filename: str
    sha256: str


@dataclass(frozen=True, kw_only=True)
class Checked:
    """A wheel of the folder whose bytes were hashed and found to be the lock's."""

    package: str
    version: str
    path: Path
    sha256: str


def file_name_problem(name: str) -> str | None:
    """Why *name* cannot be a file of a wheelhouse, or None: it must be a plain name (no
    separator, no leading dot) of a valid wheel or sdist. One rule for every name, the
    lock's, a tool's, or one read back from a wheelhouse or a memo."""
    if not name or any(c in name for c in "/\\\0:") or any(ord(c) < 32 for c in name):
        return "not a plain file name"
    if name.startswith("."):
        return "a hidden file name"
    try:
        if name.endswith(".whl"):
            parse_wheel_filename(name)
        else:
            parse_sdist_filename(name)
    except (InvalidWheelFilename, InvalidSdistFilename):
        return "not a wheel or sdist file name"
    return None


def inside(folder: Path, name: str) -> Path:
    """``folder / name``, checked to stay in *folder* once resolved (nothing in the way is
    a link elsewhere); a name that leaves it is a TrustError."""
    dest = folder / name
    if file_name_problem(name) or dest.resolve().parent != folder.resolve():
        raise TrustError(f"{name!r}: not a file name inside {folder}")
    return dest


def selection(lock: Lock, platform: Platform) -> list[Selected]:
    """The files *lock* selects for *platform*, with the lock's sha256 of each."""
    lock_path = lock.path
    try:
        chosen = select(lock.pylock, platform, lock.python, lock_path)
    except NothingInstallable as exc:
        raise TrustError(str(exc)) from exc
    out = []
    for package, dist in chosen:
        name = canonicalize_name(package.name)
        sha = (dist.hashes or {}).get("sha256") if isinstance(
            dist, (PackageWheel, PackageSdist)) else None
        filename = getattr(dist, "name", None) or urllib.parse.unquote(
            (getattr(dist, "url", None) or "").rsplit("/", 1)[-1])
        if not sha or not filename:
            raise TrustError(f"{lock_path}: {name}: no file name or sha256 to check against")
        out.append(Selected(package=name, version=str(package.version), filename=filename,
                            kind="wheel" if isinstance(dist, PackageWheel) else "sdist",
                            sha256=sha))
    return out


def committed(lock: Lock, project_dir: Path | None = None) -> list[Selected]:
    """The selection of *lock* for the platform its ``[tool.lockkit]`` names."""
    name = lock.meta.platform
    catalog = load_catalog(project_dir)
    platforms, broken = catalog.platforms, catalog.error([str(name)])
    if broken is not None:
        raise broken
    if name not in platforms:
        raise UsageError(f"{lock.path}: [tool.lockkit].platform is {name!r}, not a known "
                         "platform", hint="pass a lock written by 'lockkit compile'")
    return selection(lock, platforms[name])


def check_folder(folder: Path, selected: list[Selected],
                 entries: Mapping[str, Entry] | None = None) -> list[Checked]:
    """Hash every wheel of *folder* the lock selects; the wheels must be exactly those.

    All problems are collected into one error naming each file or package; *entries*
    (the folder's manifest, :attr:`~lockkit.wheelhouse.manifest.Manifest.entries`) trace
    the wheels built from the lock's sdists.
    """
    built = {path: entry for path, entry in (entries or {}).items() if "built_from" in entry}
    checked: list[Checked] = []
    problems: list[str] = []
    for want in sorted(selected, key=lambda s: s.package):
        try:
            checked.append(_check_one(folder, want, built))
        except TrustError as exc:
            problems.append(str(exc))
    placed = {c.path.name for c in checked}
    # the top level only: tools/ holds lockkit's own wheels, not the lock's
    # (lockkit.wheelhouse.tools)
    problems += [f"{p.name}: not in the committed lock" for p in sorted(folder.glob("*.whl"))
                 if p.name not in placed and p.name not in _named(problems)]
    if problems:
        raise TrustError(f"{folder} does not match the committed lock: " + "; ".join(problems))
    return checked


def _named(problems: list[str]) -> set[str]:
    return {p.split(":", 1)[0] for p in problems}


def _check_one(folder: Path, want: Selected, built: Mapping[str, Entry]) -> Checked:
    if want.kind == "sdist":
        return _check_built(folder, want, built)
    path = folder / want.filename
    if path.is_symlink() or not path.is_file():
        raise TrustError(f"{want.filename}: missing ({want.package}=={want.version})")
    digest = sha256_file(path)
    if digest != want.sha256:
        raise TrustError(f"{want.filename}: sha256 {digest}, the committed lock says "
                         f"{want.sha256}")
    return Checked(package=want.package, version=want.version, path=path, sha256=digest)


def _check_built(folder: Path, want: Selected, built: Mapping[str, Entry]) -> Checked:
    """A wheel built from the lock's sdist: traced through the manifest (see the module)."""
    for rel, entry in built.items():
        if entry.get("built_from", {}).get("sha256") != want.sha256 or "/" in str(rel):
            continue
        path = folder / str(rel)
        try:
            name, version, _, _ = parse_wheel_filename(path.name)
        except InvalidWheelFilename:
            break
        if name != want.package or str(version) != want.version:
            raise TrustError(f"{path.name}: not {want.package}=={want.version}")
        if path.is_symlink() or not path.is_file():
            break
        digest = sha256_file(path)
        if digest != entry.get("sha256"):
            raise TrustError(f"{path.name}: sha256 {digest}, its manifest entry says "
                             f"{entry.get('sha256')}")
        return Checked(package=want.package, version=want.version, path=path, sha256=digest)
    raise TrustError(f"{want.package}=={want.version}: no wheel built from the lock's sdist "
                     f"{want.filename}")


def requirements(checked: list[Checked]) -> str:
    """``--require-hashes`` input: each package pinned to the hash that was just checked."""
    return "".join(f"{c.package}=={c.version} --hash=sha256:{c.sha256}\n"
                   for c in sorted(checked, key=lambda c: c.package))

