"""The refresh pull request carries locks only: what its job takes from the artifact.

The refresh workflow's ``compile`` job (:mod:`lockkit.ci.refresh`) runs resolution, and a
dependency's build backend may run there, so whatever its artifact holds is untrusted.
The ``pull-request`` job holds write permissions; before it commits anything it runs
``lockkit ci take-locks``, which checks the artifact's folder: ``body.md`` (the pull
request's body: text, never committed) and ``locks/`` holding only
``pylock.<platform>.toml`` files of the platforms the workflow was written for, each a
regular file that ``packaging.pylock`` accepts as a PEP 751 lock and whose ``[tool.lockkit]``
table names that platform. Anything else (another file or folder, a link, a lock of
another platform, a lock without lockkit's table) fails the job, naming each; only then
are the bytes that were checked written over the project's locks, each atomically.
"""

from __future__ import annotations

import re
import stat
from collections.abc import Sequence
from pathlib import Path

from lockkit._internal.fs import write_atomic
from lockkit.errors import LockkitError, TrustError

__all__ = ["BODY", "take_locks"]

BODY = "body.md"  # the pull request's body, written by the compile job
_LOCK = re.compile(r"pylock\.([A-Za-z0-9][A-Za-z0-9._-]*)\.toml")
_HINT = ("the compile job's artifact holds body.md and locks/pylock.<platform>.toml files "
         "that lockkit compile wrote, nothing else; nothing was copied")


def take_locks(artifact: Path, locks: Path, platforms: Sequence[str]) -> list[Path]:
    """Check the refresh artifact *artifact* (see the module), then write its locks into
    *locks*; the paths written. A :class:`TrustError` naming every problem, with nothing
    written, when the artifact holds anything else."""
    problems = _layout_problems(artifact, platforms)
    checked: dict[str, str] = {}
    lock_dir = artifact / "locks"
    for path in sorted(lock_dir.iterdir()) if _is_dir(lock_dir) else []:
        match = _LOCK.fullmatch(path.name)
        if match is None or match[1] not in platforms or not _is_file(path):
            continue  # named by _layout_problems
        text, problem = _checked_lock(path, match[1])
        if problem:
            problems.append(problem)
        else:
            checked[path.name] = text
    if problems:
        raise TrustError(f"{artifact}: not a refresh of the locks only: " + "; ".join(problems),
                         hint=_HINT)
    for name, text in checked.items():
        write_atomic(locks / name, text)
    return [locks / name for name in checked]


def _layout_problems(artifact: Path, platforms: Sequence[str]) -> list[str]:
    """Every entry of *artifact* that is not ``body.md`` or ``locks/``, and every entry of
    ``locks/`` that is not a configured platform's lock, as a regular file."""
    if not _is_dir(artifact):
        return ["not a folder"]
    problems = []
    for path in sorted(artifact.iterdir()):
        if path.name == BODY and _is_file(path) or path.name == "locks" and _is_dir(path):
            continue
        problems.append(f"{path.name}: not body.md or locks/ (a {_kind(path)})")
    lock_dir = artifact / "locks"
    if not _is_file(artifact / BODY):
        problems.append(f"{BODY}: missing")
    if not _is_dir(lock_dir) or not any(lock_dir.iterdir()):
        problems.append("locks/: missing or empty")
    for path in sorted(lock_dir.iterdir()) if _is_dir(lock_dir) else []:
        match = _LOCK.fullmatch(path.name)
        rel = f"locks/{path.name}"
        if match is None:
            problems.append(f"{rel}: not a pylock.<platform>.toml (a {_kind(path)})")
        elif match[1] not in platforms:
            problems.append(f"{rel}: {match[1]!r} is not a platform of this workflow "
                            f"({', '.join(platforms)})")
        elif not _is_file(path):
            problems.append(f"{rel}: a {_kind(path)}, not a regular file")
    return problems


def _checked_lock(path: Path, platform: str) -> tuple[str, str | None]:
    """The lock's text, and why it is not *platform*'s lockkit lock (None: it is)."""
    from lockkit.lock.model import Lock

    rel = f"locks/{path.name}"
    try:
        lock = Lock.read(path)
    except LockkitError as exc:
        return "", f"{rel}: {str(exc).replace(str(path), '').lstrip(': ')}"
    table = lock.data.get("tool", {}).get("lockkit") if isinstance(
        lock.data.get("tool"), dict) else None
    if not isinstance(table, dict):
        return "", f"{rel}: no [tool.lockkit] table: not a lock lockkit compile wrote"
    if lock.meta.platform != platform:
        return "", (f"{rel}: its [tool.lockkit].platform is {lock.meta.platform!r}, not "
                    f"{platform!r}")
    return lock.text, None


def _mode(path: Path) -> int | None:
    try:
        return path.lstat().st_mode
    except OSError:
        return None


def _is_file(path: Path) -> bool:
    mode = _mode(path)
    return mode is not None and stat.S_ISREG(mode)


def _is_dir(path: Path) -> bool:
    mode = _mode(path)
    return mode is not None and stat.S_ISDIR(mode)


def _kind(path: Path) -> str:
    mode = _mode(path) or 0
    return ("link" if stat.S_ISLNK(mode) else "folder" if stat.S_ISDIR(mode)
            else "file" if stat.S_ISREG(mode) else "special file")
