"""Who owns each file Python will load from an existing environment's site-packages.

``verify --existing`` holds every file under the interpreter's site-packages folders to a
``*.dist-info/RECORD`` (:func:`unowned`): a file no RECORD lists is code or data nobody
installed from the lock. Two kinds of unowned file always fail, since Python runs them
without being asked: a ``.pth`` file, ``sitecustomize`` or ``usercustomize`` at a site
folder's top (the ``site`` module runs them at every start), and an importable module
inside a folder that a locked package owns (``torch/evil.py`` is imported as
``torch.evil`` by anything that asks for it). Other unowned files are listed, and fail
with ``--strict``.

A RECORD can be rewritten together with the file it lists, so where the lock's wheel is
at hand the installed RECORD is compared with the wheel's own (:func:`wheel_record`,
:func:`record_against_wheel`): every hashed file of the wheel must be listed with the
wheel's hash, and the installed RECORD may add only what an installer adds (its own
``INSTALLER``, ``REQUESTED``, ``direct_url.json``, bytecode, and scripts outside
site-packages).

The venv's own layout adds nothing unowned: the standard library's ``venv`` and today's
``uv venv`` put nothing in site-packages (a seeded pip has its RECORD). ``virtualenv``
(and older uv) add ``_virtualenv.pth`` and ``_virtualenv.py``, which run at every start
and no RECORD lists: they are named like any other start-up file, since their text
varies with the tool's version and nothing here can tell theirs from an edited one.
"""

from __future__ import annotations

import csv
import io
import os
import zipfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from importlib.machinery import all_suffixes
from pathlib import Path
from typing import BinaryIO

__all__ = ["INSTALLER_FILES", "Unowned", "record_against_wheel", "record_rows",
           "top_level", "unowned", "wheel_record"]

# what an installer adds to a dist-info folder, listed in the RECORD it writes
INSTALLER_FILES = frozenset({"INSTALLER", "REQUESTED", "direct_url.json", "RECORD",
                             "uv_cache.json", "REFS"})
_STARTUP = ("sitecustomize", "usercustomize")
_SUFFIXES = tuple(sorted(set(all_suffixes()) | {".pyc"}, key=len, reverse=True))
_MAX_WHEEL_RECORD = 64 << 20  # a RECORD larger than this is no wheel's


@dataclass(frozen=True)
class Unowned:
    """Files of the site folders that no RECORD lists: *code* always fails (each entry
    says why), *other* fails with ``--strict``."""

    code: list[str] = field(default_factory=list)
    other: list[str] = field(default_factory=list)


def record_rows(record: str) -> Iterator[tuple[str, str]]:
    """RECORD's (path, hash) rows, the hash ``""`` where the row has none."""
    for row in csv.reader(io.StringIO(record)):
        if row and row[0]:
            yield row[0], row[1] if len(row) > 1 else ""


def top_level(record: str) -> set[str]:
    """The top-level names a distribution installs into its site folder (``torch`` for
    ``torch/__init__.py``, ``six`` for ``six.py``): what a path earlier on ``sys.path``
    shadows."""
    names = set()
    for path, _ in record_rows(record):
        first = path.replace("\\", "/").split("/", 1)
        if first[0] in ("", ".", "..") or first[0].endswith((".dist-info", ".data")):
            continue
        names.add(_module(first[0]) if len(first) == 1 else first[0])
    names.discard("__pycache__")
    return {n for n in names if n}


def unowned(sites: Iterable[Path], owned: set[str], locked_dirs: set[str]) -> Unowned:
    """Every file (and link) under *sites* whose absolute, normalised path is not in
    *owned*, sorted into :class:`Unowned`; *locked_dirs*: the absolute folders a locked
    package's RECORD owns files in."""
    found = Unowned()
    for site in sites:
        for folder, dirs, files in os.walk(site):
            links = [d for d in dirs if os.path.islink(os.path.join(folder, d))]
            for name in sorted(files + links):
                path = os.path.normpath(os.path.join(folder, name))
                if path in owned or _cached_owned(path, owned):
                    continue
                why = _runs_unasked(Path(site), Path(path), locked_dirs)
                (found.code if why else found.other).append(
                    f"{path}: {why}" if why else path)
    return found


def wheel_record(wheel: BinaryIO, name: str) -> str | None:
    """The RECORD text inside the wheel open as *wheel* (its ``<name>-*.dist-info/RECORD``;
    only that member is read), or None when it has none."""
    with zipfile.ZipFile(wheel) as zf:
        for info in zf.infolist():
            parts = info.filename.split("/")
            if (len(parts) == 2 and parts[1] == "RECORD" and parts[0].endswith(".dist-info")
                    and _canonical(parts[0].split("-", 1)[0]) == _canonical(name)
                    and info.file_size <= _MAX_WHEEL_RECORD):
                return zf.read(info).decode("utf-8")
    return None


def record_against_wheel(label: str, installed: str, wheel: str) -> list[str]:
    """Where the installed RECORD (*installed*) lists other files or hashes than the
    wheel's own RECORD (*wheel*): each row of *label* (name and version) named."""
    want = dict(_wheel_rows(wheel))
    have = {os.path.normpath(p): h for p, h in record_rows(installed)}
    problems = [f"{label}: {path}: installed RECORD "
                + (f"says {have[path]}, the wheel's {digest}" if path in have
                   else f"leaves it out, the wheel's says {digest}")
                for path, digest in sorted(want.items()) if have.get(path) != digest]
    problems += [f"{label}: {path}: in the installed RECORD, not in the wheel's"
                 for path, digest in sorted(have.items())
                 if path not in want and not _installer_added(path, digest)]
    return problems


def _wheel_rows(record: str) -> Iterator[tuple[str, str]]:
    """The wheel's hashed rows at the paths an installer puts them (``.data/purelib`` and
    ``platlib`` into the site folder); other ``.data`` kinds go outside it (scripts are
    rewritten there) and are left out."""
    for path, digest in record_rows(record):
        parts = path.split("/")
        if not digest or parts[0].endswith(".data") and len(parts) > 2 and (
                parts[1] not in ("purelib", "platlib")):
            continue
        if parts[0].endswith(".data"):
            path = "/".join(parts[2:])
        yield os.path.normpath(path), digest


def _installer_added(path: str, digest: str) -> bool:
    parts = path.split(os.sep)
    return (path.startswith(os.pardir + os.sep)  # scripts, headers, data: outside the site
            or (len(parts) == 2 and parts[0].endswith(".dist-info")
                and parts[1] in INSTALLER_FILES)
            or (not digest and path.endswith(".pyc") and "__pycache__" in parts))


def _cached_owned(path: str, owned: set[str]) -> bool:
    """``pkg/__pycache__/mod.cpython-311.pyc`` (or ``.opt-1.pyc``) of an owned ``pkg/mod.py``."""
    folder, name = os.path.split(path)
    if os.path.basename(folder) != "__pycache__" or not name.endswith(".pyc"):
        return False
    return os.path.join(os.path.dirname(folder), name.split(".", 1)[0] + ".py") in owned


def _runs_unasked(site: Path, path: Path, locked_dirs: set[str]) -> str | None:
    """Why Python runs the unowned *path* without anyone importing it by name, or None."""
    rel = path.relative_to(site)
    first = rel.parts[0]
    if len(rel.parts) == 1 and first.endswith(".pth"):
        return "a .pth file no RECORD lists (the site module runs it at every start)"
    if _module(first) in _STARTUP:
        return (f"{_module(first)} that no RECORD lists (the site module imports it at "
                "every start)")
    inside = str(path.parent)
    if (len(rel.parts) > 1 and _importable(path.name) and "__pycache__" not in rel.parts
            and any(inside == d or inside.startswith(d + os.sep) for d in locked_dirs)):
        return "a module no RECORD lists, inside a locked package's folder"
    return None


def _importable(name: str) -> bool:
    return name.endswith(_SUFFIXES)


def _module(name: str) -> str:
    """``six`` of ``six.py``, ``_C`` of ``_C.cpython-311-x86_64-linux-gnu.so``."""
    for suffix in _SUFFIXES:
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name if "." not in name else ""


def _canonical(name: str) -> str:
    return name.lower().replace("-", "_").replace(".", "_")
