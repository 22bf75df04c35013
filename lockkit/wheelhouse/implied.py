"""A wheelhouse folder is, file for file, what its committed lock implies.

The install commands lockkit prints for a wheelhouse read its wheels, its ``pylock.toml``,
its ``requirements.txt`` and its ``simple/`` pages (pip follows a page's links, uv a lock's
paths), wherever in the folder they lie. Whoever can change a wheel can rewrite all of
those to agree, and the manifest and ``SHA256SUMS`` with them, so none is an authority.
:func:`check_wheelhouse` derives the text files again from the committed lock and the
wheels hashed against it (:func:`lockkit.wheelhouse.meta.texts_of`, the code ``build``
writes them with) and compares bytes, the SBOM included (its components from the lock's
tables and the hashed wheels, :func:`lockkit.wheelhouse.sbom.render`); every other file
must be a wheel the lock selects, or ``tools/``. One function for ``pack``, ``unpack
--lock`` and verify's install step, so the three give one verdict.

``tools/`` (lockkit and its dependencies) is outside the project's lock: here it is only
checked to agree with itself. What vouches for it is the archive's sha256, compared out of
band (``unpack --sha256``). :func:`platform_problems` reads a folder's platform from its
manifest and its ``pylock.toml``'s ``environments``, never from a file name.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from lockkit._internal.fs import sha256_file
from lockkit._internal.redact import NO_SECRETS, Secrets, masked
from lockkit.errors import ConfigError, TrustError
from lockkit.lock.meta import named_platform
from lockkit.lock.model import Lock, foreign_tables
from lockkit.platforms.definitions import Platform
from lockkit.wheelhouse.manifest import MANIFEST, SUMS, Entry, Manifest, sums
from lockkit.wheelhouse.trust import Checked, Selected, check_folder

__all__ = ["check_wheelhouse", "platform_problems"]

SBOM = "sbom.cdx.json"
TOOLS_REQS = "tools/requirements.txt"


def check_wheelhouse(folder: Path, lock: Lock, selected: list[Selected],
                     secrets: Secrets = NO_SECRETS) -> list[Checked]:
    """*folder* is the wheelhouse ``lockkit wheelhouse build`` writes from *lock* (whose
    *selected* files are hashed, :func:`lockkit.wheelhouse.trust.check_folder`), or a
    :class:`TrustError` naming every file that is not. Returns the checked wheels.
    *secrets*: the project's, concealed in the SBOM's URLs as ``build`` conceals them (a
    receiver has none: the lock never holds their values)."""
    read = Manifest.of_folder(folder)
    manifest = read.data
    sha, platform = lock.sha256, lock.meta.platform
    if manifest.get("lock_sha256") != sha or manifest.get("platform") != platform:
        raise TrustError(f"{folder}: not built from {lock.path} (its manifest names sha256 "
                         f"{str(manifest.get('lock_sha256'))[:12]} for "
                         f"{manifest.get('platform')!r}; the lock is {sha[:12]} for "
                         f"{platform!r})")
    files = read.entries
    checked = check_folder(folder, selected, files)
    tools = {p: e for p, e in files.items() if p.startswith("tools/")}
    problems = _entry_problems(checked, files)
    texts = _derived(lock, manifest, checked, files, tools=bool(tools))
    texts[SBOM] = _sbom(folder, lock, selected, checked, tools, secrets)
    for rel, text in texts.items():
        if rel not in files or _bytes(folder / rel) != text.encode("utf-8"):
            problems.append(f"{rel}: not what the lock and the wheels give")
    known = {*texts, *(c.path.name for c in checked), *tools}
    problems += [f"{p}: {_why_unknown(p)}" for p in sorted(files) if p not in known]
    problems += _present_problems(folder, files, {c.path.name for c in checked})
    problems += _tools_problems(folder, tools)
    if problems:
        raise TrustError(f"{folder} is not the wheelhouse of {lock.path}: "
                         + "; ".join(problems))
    return checked


def _why_unknown(path: str) -> str:
    if path.endswith(".whl"):
        return "a wheel the committed lock does not select"
    return "not a file of this lock's wheelhouse"


def _bytes(path: Path) -> bytes | None:
    """The file's bytes; None for anything but a regular file (a link is never followed)."""
    if path.is_symlink() or not path.is_file():
        return None
    return path.read_bytes()


def _entry_problems(checked: list[Checked], files: Mapping[str, Entry]) -> list[str]:
    """Each checked wheel's manifest entry says what the lock says of it."""
    problems = []
    for c in checked:
        entry = files.get(c.path.name)
        if entry is None:
            problems.append(f"{c.path.name}: not in the manifest")
        elif entry.get("kind") != "wheel" or entry["sha256"] != c.sha256 or \
                entry.get("package") != c.package or entry.get("version") != c.version:
            problems.append(f"{c.path.name}: its manifest entry is not the lock's")
    return problems


def _derived(lock: Lock, manifest: Mapping[str, Any], checked: list[Checked],
             files: Mapping[str, Entry], *, tools: bool) -> dict[str, str]:
    """``pylock.toml``, ``requirements.txt`` and the ``simple/`` pages as ``build`` writes
    them for these wheels, from the committed lock's tables."""
    from lockkit.wheelhouse.meta import FileRecord, texts_of

    records = [FileRecord(path=c.path.name, size=c.path.stat().st_size, sha256=c.sha256,
                          package=c.package, version=c.version, origin=None, source="",
                          built_from=files[c.path.name].get("built_from")
                          if c.path.name in files else None)
               for c in checked]
    return texts_of(lock, records, platform=str(lock.meta.platform),
                    lock_name=str(manifest.get("lock")), tools=tools)


def _sbom(folder: Path, lock: Lock, selected: list[Selected], checked: list[Checked],
          tools: Mapping[str, Entry], secrets: Secrets) -> str:
    """The SBOM ``build`` writes for these wheels: names, versions, hashes and sizes of the
    hashed files, the lock's URL, index and sdist of each; ``tools/`` as its manifest lists
    it (hashed by :func:`_tools_problems`); the folder's timestamp and writer as
    :func:`lockkit.wheelhouse.sbom.written_facts` reads them."""
    from lockkit.wheelhouse import sbom
    from lockkit.wheelhouse.meta import tool_file

    urls = {(d.get("hashes") or {}).get("sha256"): d.get("url") or ""
            for p in lock.data.get("packages", [])
            for d in [*p.get("wheels", []), *([p["sdist"]] if "sdist" in p else [])]}
    sdists = {s.package: s for s in selected if s.kind == "sdist"}
    tables = lock.package_tables()
    files = []
    for c in checked:
        sdist = sdists.get(c.package)
        index = tables.get(c.package, {}).get("index")
        files.append(sbom.File(
            name=c.package, version=c.version, path=c.path.name, sha256=c.sha256,
            size=c.path.stat().st_size, index=index if isinstance(index, str) else None,
            source_url=masked(urls.get(sdist.sha256 if sdist else c.sha256, "")),
            built_from={"sdist": sdist.filename, "sha256": sdist.sha256} if sdist else None))
    files += [tool_file(e) for p, e in tools.items() if p != TOOLS_REQS and "package" in e]
    timestamp, writer = sbom.written_facts(_bytes(folder / SBOM))
    return sbom.render(files, platform=str(lock.meta.platform), lock=lock.data,
                       lock_sha256=lock.sha256, secrets=secrets, timestamp=timestamp,
                       writer=writer)


def _present_problems(folder: Path, files: Mapping[str, Entry],
                      checked: set[str]) -> list[str]:
    """What is on disk and not in the manifest (a wheel anywhere in the folder, named as
    one), links and other non-files, and a ``SHA256SUMS`` that is not the manifest's."""
    problems = []
    for root, dirs, names in os.walk(folder):
        for name in sorted(dirs + names):
            path = Path(root) / name
            rel = path.relative_to(folder).as_posix()
            if path.is_symlink() or (name in names and not path.is_file()):
                problems.append(f"{rel}: not a regular file")
            elif name in names and rel not in {*files, *checked, MANIFEST, SUMS}:
                problems.append(f"{rel}: " + ("a wheel not in the committed lock"
                                              if name.endswith(".whl") else "not in the manifest"))
    if (folder / SUMS).exists() and _bytes(folder / SUMS) != sums(files):
        problems.append(f"{SUMS}: not the manifest's")
    return problems


def _tools_problems(folder: Path, tools: Mapping[str, Entry]) -> list[str]:
    """``tools/`` agrees with itself: wheels by their plain names and listed hashes, and a
    requirements.txt whose lines (its comments aside) pin exactly those wheels. This
    says nothing of where they came from: the lock does not cover them."""
    if not tools:
        return []
    from lockkit.wheelhouse.trust import file_name_problem

    wheels = {p: e for p, e in tools.items() if p != TOOLS_REQS}
    problems = [f"{p}: not a wheel of tools/" for p, e in wheels.items()
                if e.get("kind") != "tool" or not p.endswith(".whl")
                or file_name_problem(p.removeprefix("tools/"))
                or not isinstance(e.get("package"), str)]
    problems += [f"{p}: not the bytes its manifest entry lists" for p, e in sorted(wheels.items())
                 if _bytes(folder / p) is None or sha256_file(folder / p) != e["sha256"]]
    reqs = _bytes(folder / TOOLS_REQS) if TOOLS_REQS in tools else None
    if reqs is None:
        return [*problems, f"{TOOLS_REQS}: missing"]
    pins = sorted(f"{e.get('package')}=={e.get('version')} --hash=sha256:{e['sha256']}"
                  for e in wheels.values())
    lines = reqs.decode("utf-8", "replace").splitlines()
    if sorted(ln for ln in lines if not ln.startswith("#")) != pins:
        problems.append(f"{TOOLS_REQS}: not the pins of the tools/ wheels")
    return problems


def platform_problems(folder: Path, platform: str,
                      known: Mapping[str, Platform]) -> list[str]:
    """Where the folder's ``pylock.toml`` names another platform than its manifest's
    (*platform*): its ``[tool.lockkit].platform``, or ``environments`` that are not the
    marker of *platform* (when *known* has it). A key the file lacks says nothing."""
    try:
        data = foreign_tables(folder / "pylock.toml", "pylock.toml")
    except ConfigError as exc:
        return [str(exc)]
    if data is None:
        return []
    named = named_platform(data)
    envs = data.get("environments")
    problems = []
    if named is not None and named != platform:
        problems.append(f"pylock.toml: its [tool.lockkit].platform is {named!r}, the "
                        f"manifest's is {platform!r}")
    if envs is not None and platform in known and envs != [known[platform].marker]:
        others = sorted(n for n, p in known.items() if envs == [p.marker])
        problems.append(f"pylock.toml: its environments are {envs!r}"
                        + (f" ({', '.join(others)})" if others else "")
                        + f", not those of the manifest's {platform!r} "
                        f"({known[platform].marker!r})")
    return problems
