"""What the environment ``verify`` runs in adds to an existing interpreter's imports.

The probes run isolated (``-I``), so they never see ``PYTHONPATH``, ``PYTHONHOME`` or the
user's site folder; the application does. ``verify --existing`` reads those variables
from its own environment (where the application would be started from) and looks at
the folders they put on ``sys.path`` without running anything from them:

- ``PYTHONPATH``'s entries come before everything but the script's folder;
- ``PYTHONHOME`` replaces the standard library's folder (and, outside a venv, the site
  folder under it);
- the user's site folder (``PYTHONUSERBASE``, else ``~/.local``) is read when the
  interpreter enables it: not ``PYTHONNOUSERSITE``, and a venv only with
  ``include-system-site-packages = true``; it comes before the venv's own site folder,
  and its ``.pth`` files run at every start;
- ``PYTHONSTARTUP`` runs in interactive sessions only: recorded, never judged.

A top-level name on one of those folders that a locked package installs shadows it
(:func:`survey`), and a ``sitecustomize``/``usercustomize`` there (or a ``.pth`` in a
site folder) runs at every start: both fail the inventory. The variables are recorded
with their user info masked (:func:`lockkit._internal.redact.masked`); a ``${VAR}``
value is concealed where the dossier is written, by the project's secrets.
"""

from __future__ import annotations

import os
import zipfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from lockkit._internal.redact import masked

__all__ = ["VARIABLES", "Survey", "import_paths", "survey", "variables"]

VARIABLES = ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONUSERBASE",
             "PYTHONNOUSERSITE")
_STARTUP = ("sitecustomize", "usercustomize")
_SHOWN = 20  # names listed per added folder


@dataclass(frozen=True)
class Survey:
    """*added*: each folder a variable adds and the names it holds; *failures*: a locked
    package shadowed, or start-up code, each naming the variable and the path."""

    added: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)


def variables(environ: Mapping[str, str]) -> dict[str, str]:
    """The import-changing variables set in *environ*, their values redacted."""
    return {k: masked(environ[k]) for k in VARIABLES if environ.get(k)}


def import_paths(environ: Mapping[str, str], facts: Mapping[str, object],
                 own: Iterable[str] = ()) -> list[tuple[str, Path, bool]]:
    """(variable, folder, is a site folder) for each folder *environ* puts on the
    ``sys.path`` of the interpreter described by *facts* (its ``version``, ``prefix``,
    ``in_venv``), in ``sys.path`` order; the interpreter's *own* site folders (a
    ``PYTHONPATH`` or ``PYTHONHOME`` naming what is there anyway) left out."""
    version = str(facts.get("version"))
    lib = f"lib/python{version}"
    out = [("PYTHONPATH", Path(p), False)
           for p in environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    home = environ.get("PYTHONHOME", "").split(os.pathsep)[0]
    if home:
        out.append(("PYTHONHOME", Path(home) / lib, False))
        if not facts.get("in_venv"):
            out.append(("PYTHONHOME", Path(home) / lib / "site-packages", True))
    if _user_site_enabled(environ, facts):
        base = environ.get("PYTHONUSERBASE") or os.path.expanduser("~/.local")
        out.append(("user site", Path(base) / lib / "site-packages", True))
    same = {os.path.realpath(p) for p in own}
    return [entry for entry in out if os.path.realpath(entry[1]) not in same]


def survey(paths: list[tuple[str, Path, bool]], locked: Mapping[str, str]) -> Survey:
    """The names on each of *paths*, judged against *locked* (top-level name -> the
    locked package that installs it, ``torch 2.5.1``)."""
    found = Survey()
    for variable, folder, site in paths:
        names = _names(folder)
        if names is None:
            found.added.append(f"{variable} {folder}: not there")
            continue
        shown = sorted(names)
        found.added.append(f"{variable} {folder}: " + (", ".join(shown[:_SHOWN]) or "empty")
                           + (f" and {len(shown) - _SHOWN} more" if len(shown) > _SHOWN
                              else ""))
        for name in shown:
            module = _module(name)
            if module in locked:
                found.failures.append(f"{variable} {folder}: {name} shadows the locked "
                                      f"{locked[module]}")
            elif module in _STARTUP or (site and name.endswith(".pth")):
                found.failures.append(f"{variable} {folder}: {name} runs at every start")
    return found


def _names(folder: Path) -> list[str] | None:
    """The top-level entries of a folder or a zip file on ``sys.path``; None: neither."""
    try:
        if folder.is_dir():
            return [p.name for p in folder.iterdir()]
        if zipfile.is_zipfile(folder):
            with zipfile.ZipFile(folder) as zf:
                return sorted({n.split("/", 1)[0] for n in zf.namelist()})
    except OSError:
        return None
    return None


def _module(name: str) -> str:
    """``torch`` of ``torch``, ``torch.py``, ``torch.cpython-311-x86_64-linux-gnu.so``."""
    return name.split(".", 1)[0]


def _user_site_enabled(environ: Mapping[str, str], facts: Mapping[str, object]) -> bool:
    """As :mod:`site` decides it: off with ``PYTHONNOUSERSITE``, and in a venv unless its
    ``pyvenv.cfg`` includes the system site packages."""
    if environ.get("PYTHONNOUSERSITE"):
        return False
    if not facts.get("in_venv"):
        return True
    try:
        cfg = (Path(str(facts.get("prefix"))) / "pyvenv.cfg").read_text(encoding="utf-8")
    except OSError:
        return False
    for line in cfg.splitlines():
        key, _, value = line.partition("=")
        if key.strip().lower() == "include-system-site-packages":
            return value.strip().lower() == "true"
    return False
