"""Portable paths: a dossier's paths written relative to the run's named roots.

A run records where things were on its machine: the project, the venv it built, the
wheelhouse, lockkit's cache, its own temp folder. Two runs of one lock on two machines
differ in all of them, so a shared dossier that keeps them absolute is noise to compare
and a list of the machine's folders to review. The documents (``dossier.json``,
``dossier.md``, JUnit) write each such path as ``<name>/rest`` (``<venv>/bin/python``)
and list the roots once, at the top; ``--absolute-paths`` writes today's absolute form.

The rule, in one place: a root's path is replaced where it stands as a whole path
component (``/srv/proj`` in ``/srv/proj/locks`` or ``prefix=/srv/proj``, never in
``/srv/project2`` or ``/home/srv/proj``), the longest root first when roots nest (a venv
in the cache is ``<venv>``), and never inside a URL (``file:///srv/proj/...`` is the
address the lock or installer used). Hashes are never paths, so they never change.

The roots, in the order a reader meets them: the run's own folders (``project``,
``venv``, ``wheelhouse``, ``cache``, ``tmp``); ``report``, the folder the documents are
written to (``--report-dir``, so ``--junit <report>/junit.xml``); then what the run used
but did not make: ``lockkit``, lockkit's installed package folder (its probe scripts run
from ``<lockkit>/probes/scripts``), ``tools``, the folder of the uv binary lockkit runs
(:func:`own_roots`), and ``python``, the prefix of the interpreter a venv was built from.
``lockkit`` and ``tools`` are two roots, not one: uv's binary is installed into the
environment's scripts folder (``bin/``), apart from the package folder, and an editable
install or a uv on ``PATH`` puts them further apart still; ``tools`` names what the folder
is to the run (where its installer came from) rather than claiming the folder is uv's.
``python`` may be a shared prefix (``/usr``): other tools' paths there are written under
it too (``<python>/bin/cc``), the listing says which folder that is.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol, TypeVar

__all__ = ["ROOT_NAMES", "absolute", "named_roots", "own_roots", "relative", "relative_text",
           "with_report"]

# the order a reader meets them in, and which name wins when two roots are the same folder
ROOT_NAMES = ("project", "venv", "wheelhouse", "cache", "tmp", "report", "lockkit", "tools",
              "python")
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>`]*")
_BEFORE, _AFTER = r"(?<![\w.~/\\-])", r"(?![\w-]|\.[\w-])"  # a whole path component


class _Rooted(Protocol):
    """A document that lists its roots (a :class:`~lockkit.report.model.Dossier`): named by
    its shape so that this module, which the model uses, does not import the model."""

    @property
    def roots(self) -> Mapping[str, str]: ...


_D = TypeVar("_D", bound=_Rooted)


def named_roots(**paths: Path | str | None) -> dict[str, str]:
    """The roots of a run, in :data:`ROOT_NAMES` order: absent ones and filesystem roots
    (``/`` would rewrite every path) left out; a folder named twice keeps its first name."""
    out: dict[str, str] = {}
    for name in ROOT_NAMES:
        path = paths.get(name)
        if path is None:
            continue
        text = str(Path(path).absolute())
        if Path(text).parent != Path(text) and text not in out.values():
            out[name] = text
    return out


def with_report(dossier: _D, folder: Path | str) -> _D:
    """*dossier* with the folder it is written to as its ``report`` root (where its
    ``--junit`` file or ``--report-dir`` were given, they are written ``<report>/...``);
    a dossier in the absolute form (no roots) stays so."""
    if not dossier.roots:
        return dossier
    paths: dict[str, Path | str] = {**dossier.roots, "report": folder}
    record: Any = dossier  # a dataclass, which the Protocol that names it cannot say
    replaced: _D = dataclasses.replace(record, roots=named_roots(**paths))
    return replaced


def own_roots() -> dict[str, Path]:
    """lockkit's own folders as roots: ``lockkit``, its package folder (the probes' scripts
    are under it), and ``tools``, the folder of the uv binary it runs."""
    from lockkit._internal.uv import uv_bin

    return {"lockkit": Path(__file__).resolve().parents[1], "tools": Path(uv_bin()).parent}


def _pattern(roots: Mapping[str, str]) -> tuple[re.Pattern[str], dict[str, str]] | None:
    names: dict[str, str] = {}
    for name, path in roots.items():
        for form in (path, os.path.realpath(path)):  # /tmp and /private/tmp on macOS
            names.setdefault(form, name)
    if not names:
        return None
    alternatives = "|".join(re.escape(p) for p in sorted(names, key=len, reverse=True))
    return re.compile(f"{_BEFORE}(?:{alternatives}){_AFTER}"), names


def relative_text(text: str, roots: Mapping[str, str]) -> str:
    """*text* with each root's path written ``<name>``; URLs left as they are."""
    compiled = _pattern(roots)
    return _rewrite(text, compiled) if compiled else text


def _rewrite(text: str, compiled: tuple[re.Pattern[str], dict[str, str]]) -> str:
    pattern, names = compiled
    parts, end = [], 0
    for url in _URL.finditer(text):
        parts += [pattern.sub(lambda m: f"<{names[m[0]]}>", text[end:url.start()]), url[0]]
        end = url.end()
    parts.append(pattern.sub(lambda m: f"<{names[m[0]]}>", text[end:]))
    return "".join(parts)


def relative(value: Any, roots: Mapping[str, str]) -> Any:
    """*value* (a JSON-shaped value, a record, a dossier) with every string rewritten by
    :func:`relative_text`; mapping keys and a dossier's own ``roots`` stay as they are."""
    compiled = _pattern(roots)
    return _walk(value, lambda s: _rewrite(s, compiled)) if compiled else value


def _walk(value: Any, fix: Any) -> Any:
    if isinstance(value, str):
        return fix(value)
    if isinstance(value, Mapping):
        return {k: _walk(v, fix) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_walk(v, fix) for v in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.replace(value, **{
            f.name: _walk(getattr(value, f.name), fix) for f in dataclasses.fields(value)
            if f.init and f.name != "roots"})
    return value


def absolute(dossier: _D) -> _D:
    """*dossier* in the absolute form (``--absolute-paths``): each ``<name>`` written back
    as its root's path, and no roots listed."""
    if not dossier.roots:
        return dossier
    names = "|".join(re.escape(name) for name in dossier.roots)
    pattern = re.compile(f"<({names})>")
    expanded = _walk(dossier, lambda s: pattern.sub(lambda m: dossier.roots[m[1]], s))
    return dataclasses.replace(expanded, roots={})
