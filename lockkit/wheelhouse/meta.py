"""What a wheelhouse holds besides its wheels, derived from the lock and the wheels alone.

``pylock.toml`` (PEP 751, entries by relative ``path``), ``requirements.txt`` (``--hash``
lines for older pips), the static PEP 503 ``simple/`` tree, the CycloneDX SBOM and
``manifest.json`` (platform, the source lock's sha256, every file with its size and
sha256; :mod:`lockkit.wheelhouse.manifest` reads it back). ``build`` writes them
(:func:`write_meta`); ``pack`` derives the first three again to check a folder
(:func:`texts_of`). Origins stay in the build log, never in these files: same lock, same
bytes.
"""

from __future__ import annotations

import html
import json
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from lockkit import __version__
from lockkit._internal.fs import sha256_file
from lockkit._internal.redact import Secrets
from lockkit.download.sources import FoundIn
from lockkit.lock.meta import with_meta
from lockkit.lock.model import Lock, dumps
from lockkit.platforms.definitions import Platform
from lockkit.wheelhouse import sbom
from lockkit.wheelhouse.manifest import Entry, ManifestDoc
from lockkit.wheelhouse.offline import requirements_header

__all__ = ["FileRecord", "texts_of", "tool_file", "write_meta"]


@dataclass(frozen=True, kw_only=True)
class FileRecord:
    """One wheel of the wheelhouse, as its manifest, lock and SBOM describe it."""

    path: str
    size: int
    sha256: str
    package: str
    version: str
    origin: FoundIn | None  # where it was found (None: not fetched); never the manifest's
    source: str  # the lock's URL, redacted
    built_from: dict[str, str] | None = None
    # from a twin host (lockkit.index.urls.twin): the host that failed and why; the
    # build log's, like origin
    instead: str = ""


def write_meta(stage: Path, platform: Platform, lock: Lock,
               entries: Mapping[str, Mapping[str, Any]], records: list[FileRecord],
               extra: list[Entry] | None, secrets: Secrets) -> None:
    """Write every file but the wheels into *stage*. *entries*: *lock*'s package tables by
    name; *extra*: the manifest entries of ``tools/``; *secrets*: the project's, concealed
    in the SBOM's URLs."""
    texts = texts_of(lock, records, platform=platform.name, lock_name=lock.path.name,
                     tools=bool(extra))
    described = [sbom.File.of(r, entries[r.package]) for r in records]
    described += [tool_file(e) for e in extra or [] if "package" in e]
    texts[sbom.FILENAME] = sbom.render(described, platform=platform.name, lock=lock.data,
                                       lock_sha256=lock.sha256, secrets=secrets)
    for rel, text in texts.items():
        _text(stage / rel, text)
    listed = {e["path"] for e in extra or []}
    meta_files = sorted(p for p in stage.rglob("*") if p.is_file() and p.suffix != ".whl"
                        and p.relative_to(stage).as_posix() not in listed)
    files = [_wheel_json(r) for r in records] + list(extra or []) + [
        Entry(path=p.relative_to(stage).as_posix(), size=p.stat().st_size,
              sha256=sha256_file(p), kind="meta") for p in meta_files]
    manifest: ManifestDoc = {"schema_version": 1, "platform": platform.name,
                "lock": lock.path.name, "lock_sha256": lock.sha256,
                "lockkit_version": __version__,
                "files": sorted(files, key=lambda f: f["path"])}
    _text(stage / "manifest.json", json.dumps(manifest, indent=2, sort_keys=True) + "\n")


def texts_of(lock: Lock, records: list[FileRecord], *, platform: str, lock_name: str,
             tools: bool) -> dict[str, str]:
    """What a wheelhouse of *records* (its wheels) holds besides them, the SBOM and the
    manifest, by path: ``pylock.toml``, ``requirements.txt`` and the ``simple/`` pages, all
    derived from the source *lock* (named *lock_name* in the folder's lock) and the wheels
    alone. ``build`` writes them; ``pack`` derives them again to check a folder."""
    by_pkg = {r.package: r for r in records}
    of = {"lock": lock_name, "sha256": lock.sha256}
    return {"pylock.toml": dumps(_local_lock(lock, by_pkg, of)),
            "requirements.txt": _requirements(platform, lock.data, records, tools=tools),
            **_simple_tree(records)}


def tool_file(entry: Entry) -> sbom.File:
    """A ``tools/`` manifest entry as the SBOM describes it."""
    source = entry.get("source") or ""  # lockkit's own wheel: "lockkit X, built from ..."
    return sbom.File(name=entry["package"], version=entry["version"], path=entry["path"],
                     sha256=entry["sha256"], size=entry["size"],
                     source_url=source if source.startswith(("https://", "http://")) else "",
                     kind="tool")


def _wheel_json(r: FileRecord) -> Entry:
    entry: Entry = {"path": r.path, "size": r.size, "sha256": r.sha256, "kind": "wheel",
                    "package": r.package, "version": r.version, "source": r.source}
    if r.built_from:
        entry["built_from"] = r.built_from
    return entry


def _local_lock(lock: Lock, records: dict[str, FileRecord],
                of: dict[str, str]) -> dict[str, Any]:
    packages = []
    entries = lock.package_tables()
    for name in sorted(records):
        rec, src = records[name], entries[name]
        pkg: dict[str, object] = {"name": name, "version": rec.version}
        for key in ("requires-python", "dependencies"):
            if key in src:
                pkg[key] = src[key]
        pkg["wheels"] = [{"name": rec.path, "path": rec.path, "size": rec.size,
                          "hashes": {"sha256": rec.sha256}}]
        packages.append(pkg)
    data = lock.data
    return with_meta({"lock-version": "1.0", "environments": data.get("environments", []),
                      "requires-python": data.get("requires-python", ""),
                      "created-by": "lockkit", "packages": packages},
                     replace(lock.meta, wheelhouse_of=of))


def _requirements(platform: str, data: Mapping[str, Any], records: list[FileRecord],
                  tools: bool = False) -> str:
    lines = requirements_header(platform, data, tools)
    lines += [f"{r.package}=={r.version} --hash=sha256:{r.sha256}"
              for r in sorted(records, key=lambda r: r.package)]
    return "\n".join(lines) + "\n"


def _simple_tree(records: list[FileRecord]) -> dict[str, str]:
    """The static PEP 503 tree's pages, by path in the folder."""
    projects = sorted({r.package for r in records})
    links = "".join(f'<a href="{p}/">{p}</a><br/>\n' for p in projects)
    pages = {"simple/index.html": _page("Simple index", links)}
    for project in projects:
        rows = "".join(
            f'<a href="../../{urllib.parse.quote(r.path)}#sha256={r.sha256}">'
            f"{html.escape(r.path)}</a><br/>\n" for r in records if r.package == project)
        pages[f"simple/{project}/index.html"] = _page(f"Links for {project}", rows)
    return pages


def _page(title: str, body: str) -> str:
    return (f"<!DOCTYPE html>\n<html><head><meta name=\"pypi:repository-version\" "
            f"content=\"1.0\"><title>{title}</title></head>\n<body>\n{body}</body></html>\n")


def _text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8", newline="\n")
