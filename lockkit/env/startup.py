"""What an existing interpreter runs at start-up, read and judged before anything runs it.

``verify --existing`` checks an environment it did not build. Code can run there before
any line of the application: a ``.pth`` line starting ``import`` (an editable install's
finder, a meta-path or path-hook installer, anything), a ``sitecustomize`` or
``usercustomize``. Such code can make ``import torch`` load another folder, and verify's
own probes would import that too. So the first thing verify does with the interpreter is
read, not run: ``probes/scripts/site_probe.py`` under ``python -I -S -B`` (the :mod:`site` module
does not run) reports the site folders, every ``.pth`` line, the modules those lines
import and the names an editable finder maps, the customize modules, and every
distribution with its RECORD. The ``start-up`` step then judges (:func:`judge`), and every
step that starts the interpreter normally (``pip-check``, the probes, the checks) comes
after it and is skipped when it fails.

The rules, each failure naming the distribution, the file and the line:

- start-up code of a **locked** distribution passes: the inventory holds its files to
  its RECORD and that RECORD to the lock's wheel;
- start-up code **no RECORD lists** fails (the inventory names the file too);
- start-up code of an **extra** distribution (not in the lock) fails, unless the user
  vouches for it with ``--allow-extra NAME``: then it is listed as taken on the user's
  word;
- a ``sitecustomize``/``usercustomize`` outside the site folders belongs to the
  interpreter (Debian's, a distribution's build): taken on its word, as the standard
  library is;
- an extra distribution that provides a top-level name a locked one provides (in its
  RECORD, in the ``MAPPING`` of its editable finder, or in a folder its ``.pth`` adds)
  fails, ``--allow-extra`` or not: it decides what ``import torch`` means.

Installer tooling (pip, setuptools, wheel) that carries no start-up code is not an extra:
``--strict`` does not fail on it, and the inventory names it. setuptools' own
``distutils-precedence.pth`` is start-up code (it installs a meta-path finder for
``distutils``), so a venv that holds that file needs ``--allow-extra setuptools``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.utils import canonicalize_name

from lockkit.env.ownership import record_rows, top_level

__all__ = ["TOOLING", "Judgement", "Site", "judge", "owners"]

TOOLING = frozenset({"pip", "setuptools", "wheel"})


@dataclass(frozen=True)
class Site:
    """What ``site_probe.py`` read (see its docstring), in lockkit's types."""

    facts: dict[str, Any]
    sites: list[str]
    dists: list[tuple[str, str, str, str | None]]  # name, version, base folder, RECORD
    code: list[tuple[str, int, str, list[tuple[str, str | None]]]]
    added: list[tuple[str, int, str]]
    mappings: list[tuple[str, str, str]]
    customize: list[tuple[str, str]]

    @classmethod
    def from_doc(cls, doc: Mapping[str, Any]) -> Site:
        return cls(
            facts=dict(doc["facts"]), sites=[str(s) for s in doc.get("sites") or []],
            dists=[(str(n), str(v), str(b), r) for n, v, b, r in doc.get("dists") or []
                   if n and v],
            code=[(str(f), int(n), str(line), [(str(m), o) for m, o in mods])
                  for f, n, line, mods in doc.get("code") or []],
            added=[(str(f), int(n), str(d)) for f, n, d in doc.get("added") or []],
            mappings=[(str(f), str(k), str(v)) for f, k, v in doc.get("mappings") or []
                      if f],
            customize=[(str(m), str(f)) for m, f in doc.get("customize") or []])


@dataclass(frozen=True)
class Judgement:
    """*failures* fail the step; *taken*: start-up code accepted on someone's word (the
    user's ``--allow-extra``, the interpreter's own); *tooling*: installer tooling that
    carries no start-up code, not counted as an extra."""

    failures: list[str] = field(default_factory=list)
    taken: list[str] = field(default_factory=list)
    tooling: list[str] = field(default_factory=list)


def owners(site: Site) -> dict[str, tuple[str, str]]:
    """Each file a RECORD lists (absolute, real, normalised) -> (canonical name, label)."""
    found: dict[str, tuple[str, str]] = {}
    for name, version, base, record in site.dists:
        real = os.path.realpath(base)
        for path, _ in record_rows(record or ""):
            found.setdefault(os.path.normpath(os.path.join(real, path)),
                             (canonicalize_name(name), f"{name} {version}"))
    return found


def judge(site: Site, locked: Iterable[str], allowed: Iterable[str]) -> Judgement:
    """*site* against the *locked* canonical names and the extras the user *allowed*."""
    locked, allowed = set(locked), {canonicalize_name(a) for a in allowed}
    owner = owners(site)
    out = Judgement()
    carriers: set[str] = set()

    def weigh(file: str, what: str) -> None:
        who = owner.get(_key(file))
        if who is None:
            inside = any(_under(file, s) for s in site.sites)
            (out.failures if inside else out.taken).append(
                f"{file}: {what}, and no RECORD lists it" if inside
                else f"{file}: {what}: the interpreter's own, taken on its word")
            return
        carriers.add(who[0])
        if who[0] in locked:
            return
        if who[0] in allowed:
            out.taken.append(f"{who[1]} (not in the lock, --allow-extra): {file}: {what}")
        else:
            out.failures.append(f"{who[1]} (not in the lock): {file}: {what}")

    for file, number, line, modules in site.code:
        via = "".join(f"; it imports {m} from {o}" for m, o in modules
                      if o and any(_under(o, s) for s in site.sites))
        weigh(file, f"line {number} runs at every start: {line.strip()!r}{via}")
    for module, file in site.customize:
        weigh(file, f"{module}, which the site module imports at every start")
    out.failures.extend(_shadowing(site, owner, locked))
    out.tooling.extend(sorted(f"{n} {v}" for n, v, _, _ in site.dists
                              if canonicalize_name(n) in TOOLING - locked - carriers))
    return out


def _shadowing(site: Site, owner: Mapping[str, tuple[str, str]],
               locked: set[str]) -> list[str]:
    """Extras that provide a top-level name a locked distribution provides."""
    provided: dict[str, str] = {}
    for name, version, _, record in site.dists:
        if canonicalize_name(name) in locked:
            for top in top_level(record or ""):
                provided.setdefault(top, f"{name} {version}")
    problems = []
    for name, version, _, record in site.dists:
        if canonicalize_name(name) not in locked:
            problems += [f"{name} {version} (not in the lock) provides {top!r}, which the "
                         f"locked {provided[top]} provides"
                         for top in sorted(top_level(record or "") & provided.keys())]
    for file, key, target in site.mappings:
        who = owner.get(_key(file), ("", f"the finder {file}"))
        top = key.split(".", 1)[0]
        if top in provided and who[0] not in locked:
            problems.append(f"{who[1]}: {file} maps {key!r} to {target}, so 'import {key}' "
                            f"does not load the locked {provided[top]}")
    for file, number, folder in site.added:
        who = owner.get(_key(file), ("", file))
        for top in sorted(_names(Path(folder)) & provided.keys()):
            if who[0] not in locked:
                problems.append(f"{who[1]}: {file} line {number} adds {folder}, which "
                                f"provides {top!r}, as the locked {provided[top]} does")
    return problems


def _names(folder: Path) -> set[str]:
    try:
        return {p.name.split(".", 1)[0] for p in folder.iterdir()}
    except OSError:
        return set()


def _key(file: str) -> str:
    return os.path.normpath(os.path.realpath(file))


def _under(file: str, folder: str) -> bool:
    real, top = _key(file), _key(folder)
    return real == top or real.startswith(top + os.sep)
