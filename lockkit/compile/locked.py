"""``compile --locked``: the committed lock against the lock a fresh resolution makes.

``compile --check`` reads only the lock and the inputs: it cannot know that a file was
swapped for another one on the same index, or that a hash was changed with its file.
``--locked`` runs uv for every selected platform, the committed lock's pins as
preferences (as a compile without ``--upgrade`` does), builds the lock compile would
write, and compares the two here, value by value, as ``uv lock --locked`` does; it writes
nothing (no lock, no memo: a memo would be a word taken, and a hit would skip the very
comparison asked for).

What it still takes on its word: which versions the inputs allow (a pin the inputs
allow stays preferred, as in any compile; ``--upgrade`` moves them) and what the indexes
serve now.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from packaging.utils import canonicalize_name

from lockkit.errors import ConfigError
from lockkit.lock.freshness import InputsRecord, Verdict, read_tables, verdict
from lockkit.lock.meta import NOT_CONTENT, TOOL, own_table
from lockkit.lock.model import Lock, LockFile
from lockkit.lock.origins import Origins, shown

if TYPE_CHECKING:
    from lockkit.platforms.definitions import Platform

__all__ = ["committed", "differences"]

# [tool.lockkit] keys that are not the lock's content: lockkit's own version is not an
# input (an upgrade invalidates locks only through LOCK_FORMAT), nor is uv's.
_LONG = 120  # a longer value (a dependencies list) is cut


def _shown(value: Any) -> str:
    return shown(value, _LONG)


def _by_name(packages: Any) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """The packages by canonical name, and any name listed twice (compile lists each once)."""
    found: dict[str, dict[str, Any]] = {}
    twice = []
    for pkg in packages if isinstance(packages, list) else []:
        if not isinstance(pkg, dict):
            continue
        name = canonicalize_name(str(pkg.get("name")))
        if name in found:
            twice.append(f"{name}: listed twice in the lock")
        found[name] = pkg
    return found, twice


def _files(pkg: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """A package's file entries by file name (an sdist too)."""
    entries = list(pkg.get("wheels") or []) + ([pkg["sdist"]] if "sdist" in pkg else [])
    found = {}
    for entry in entries:
        if isinstance(entry, dict):
            url = str(entry.get("url", entry.get("path", "")))
            found[str(entry.get("name") or url.rsplit("/", 1)[-1])] = entry
    return found


def _differ(where: str, key: str, locked: Any, resolved: Any) -> str:
    return (f"{where}: {key} {_shown(locked)} in the lock, {_shown(resolved)} in a fresh "
            "resolution")


def _file_differences(who: str, locked: Mapping[str, Any],
                      resolved: Mapping[str, Any]) -> list[str]:
    old, new = _files(locked), _files(resolved)
    said = [f"{who}: file {_shown(n)} is in the lock, not in a fresh resolution"
            for n in old if n not in new]
    said += [f"{who}: file {_shown(n)} is in a fresh resolution, not in the lock"
             for n in new if n not in old]
    for name in (n for n in old if n in new):
        a, b = old[name], new[name]
        for key in sorted(set(a) | set(b), key=lambda k: (k != "url", k)):
            if key == "hashes" and isinstance(a.get(key), dict) and isinstance(b.get(key), dict):
                said += [_differ(f"{who}: {_shown(name)}", algo, a[key].get(algo),
                                 b[key].get(algo))
                         for algo in sorted(set(a[key]) | set(b[key]))
                         if a[key].get(algo) != b[key].get(algo)]
            elif a.get(key) != b.get(key):
                said.append(_differ(f"{who}: {_shown(name)}", key, a.get(key), b.get(key)))
    return said


def _package_differences(locked: Any, resolved: Any) -> list[str]:
    old, said = _by_name(locked)
    new, _ = _by_name(resolved)
    for name in sorted(set(old) | set(new)):
        a, b = old.get(name), new.get(name)
        if a is None or b is None:
            where = "a fresh resolution, not in the lock" if a is None else \
                "the lock, not in a fresh resolution"
            version = (b if a is None else a).get("version")  # type: ignore[union-attr]
            said.append(f"{name} {_shown(version)} is in {where}")
            continue
        if a.get("version") != b.get("version"):
            said.append(_differ(name, "version", a.get("version"), b.get("version")))
        who = f"{name} {_shown(b.get('version'))}"
        for key in sorted((set(a) | set(b)) - {"name", "version", "wheels", "sdist"}):
            if a.get(key) != b.get(key):
                said.append(_differ(who, key, a.get(key), b.get(key)))
        said += _file_differences(who, a, b)
    return said


def differences(committed: Lock, fresh: Lock) -> list[str]:
    """Every difference between the *committed* lock and the lock a fresh resolution makes
    (*fresh*), both compared as their text reads (their tables, :attr:`Lock.data`):
    packages, versions, files, URLs and hashes first, then the lock's other keys and its
    ``[tool.lockkit]`` (not lockkit's or uv's version); [] when they are the same."""
    locked, resolved = committed.data, fresh.data
    said = _package_differences(locked.get("packages"), resolved.get("packages"))
    for key in sorted((set(locked) | set(resolved)) - {"packages", TOOL}):
        if locked.get(key) != resolved.get(key):
            said.append(_differ("the lock", key, locked.get(key), resolved.get(key)))
    old, new = own_table(locked), own_table(resolved)
    for key in sorted((set(old) | set(new)) - set(NOT_CONTENT)):
        if old.get(key) == new.get(key):
            continue
        if isinstance(old.get(key), dict | list) or isinstance(new.get(key), dict | list):
            said.append(f"[tool.lockkit]: {key} is not what compile records now")
        else:
            said.append(_differ("[tool.lockkit]", key, old.get(key), new.get(key)))
    return said


def committed(found: LockFile, record: InputsRecord, platform: Platform,
              origins: Origins) -> tuple[Verdict, Lock | None]:
    """The committed lock (*found*: read once, before any work), its verdict as ``--check``
    gives it (parsed without the PEP 751 validation), and the lock a fresh resolution is
    compared with, validated from the same tables: None where there is none or ``--check``
    finds it modified and it is no PEP 751 lock (uv then gets no preferences). A lock found
    unchanged yet no PEP 751 lock cannot be compared: its one-line error (exit 2), as every
    command that uses the packages gives it."""
    read = read_tables(found)
    if isinstance(read, Verdict):
        return read, None
    said = verdict(read, record, platform, origins)
    try:
        return said, Lock.validated(read)
    except ConfigError:
        if said.status == "modified":
            return said, None
        raise
