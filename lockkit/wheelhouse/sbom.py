"""A CycloneDX SBOM of a wheelhouse: what crosses the air gap, file by file.

``sbom.cdx.json`` lists one component per file of the folder (each wheel, and each
``tools/`` wheel): its name, version, package URL, SHA-256 and the lock's *official* URL
of the file (credentials stripped: the lock never holds a secret's value, and user info
is dropped here too). A wheel built from an sdist names the sdist as its source
distribution and pedigree ancestor. A site reviews this file before it lets the folder in.

The document is the one cyclonedx-python-lib writes for this model, key for key and in
its order of components, dependencies and properties; the standard library's ``json``
writes it (the library's import cost 40 to 80 ms of every cold build, and it brought a
tree of runtime dependencies). tests/wheelhouse/test_sbom_library.py holds the two equal
for the same files, and the document valid under the library's strict CycloneDX 1.6
validator. The package URL is made by ``packageurl`` (the purl spec's encoding, in one
place), imported only when an SBOM is rendered.

The same lock gives the same bytes: the serial number is a uuid5 of the platform, the
lock's sha256 and lockkit's version; every component's ``bom-ref`` is its path in the
folder; the metadata timestamp is ``SOURCE_DATE_EPOCH`` when that is set and left out
otherwise (never the wall clock); the JSON is written with sorted keys. So the SBOM is
derived, never carried: ``pack``, ``unpack --lock`` and verify's install step write it
again from the committed lock and the hashed files and compare bytes
(:mod:`lockkit.wheelhouse.implied`), reading back only its timestamp and writer's version
(:func:`written_facts`).

**Unknown dependencies.** CycloneDX 1.6 reads a ``dependencies`` entry without
``dependsOn`` as "no dependencies", and a component with no entry as one whose
dependencies are unknown, which it recommends saying with ``compositions``. PEP 751 makes
``packages[].dependencies`` optional (uv writes none today); ``tools/`` has no graph. So
only a wheel whose lock table has the key gets an entry (what the lock says, empty
included); every other component is listed in one ``{"aggregate": "unknown",
"dependencies": [...]}`` composition; an empty array is never written. The library differs
here: ``Bom.validate`` registers every component as an empty element, and it has no
compositions.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, timezone
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, Literal, Protocol

from packaging.utils import NormalizedName, canonicalize_name

from lockkit import __version__
from lockkit._internal.fs import write_atomic
from lockkit._internal.redact import Secrets, masked, strip_credentials
from lockkit.errors import ConfigError
from lockkit.lock.meta import LockMeta

if TYPE_CHECKING:  # pragma: no cover - typing only; the import is deferred at run time
    from lockkit._internal.outfile import Target
    from lockkit.lock.model import Lock

__all__ = ["FILENAME", "SCHEMA_VERSION", "WHAT", "File", "files_of_manifest", "recognise",
           "refresh", "render", "serial_number", "written_facts"]

FILENAME = "sbom.cdx.json"
SCHEMA_VERSION = "1.6"  # what CycloneDX consumers read today; 1.7 is newer than most
# A fixed namespace for the serial numbers lockkit derives (uuid5 of this and the lock's facts)
_NAMESPACE = uuid.UUID("6c6f636b-6b69-7400-8000-73626f6d0001")
_PROP = "lockkit:"  # CycloneDX property names are namespaced by the tool that writes them
WHAT = "an SBOM lockkit wrote"  # what -o is replaced only over (lockkit as a tool in it)
_MAX_SBOM = 256 << 20  # an SBOM read to recognise it: far above a wheelhouse's
# `$schema`, as cyclonedx-python-lib writes it (cyclonedx/output/json.py, JsonV1Dot6)
_SCHEMA_URI = f"http://cyclonedx.org/schema/bom-{SCHEMA_VERSION}.schema.json"
# What a URI cannot hold, percent-encoded as the library encodes it (XsUri._spec_migrate),
# except an IPv6 host's brackets (RFC 3986 3.2.2): the library's %5B::1%5D names no host
_IN_HOST = str.maketrans({c: f"%{ord(c):02X}" for c in " \"'<>{}"})
_ELSEWHERE = str.maketrans({c: f"%{ord(c):02X}" for c in " \"'<>{}[]"})
_AUTHORITY = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^/?#]*")
_STRAY_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")


class _Record(Protocol):
    """What :meth:`File.of` reads: a wheelhouse ``FileRecord`` has these attributes."""

    @property
    def package(self) -> str: ...
    @property
    def version(self) -> str: ...
    @property
    def path(self) -> str: ...
    @property
    def sha256(self) -> str: ...
    @property
    def size(self) -> int: ...
    @property
    def source(self) -> str: ...
    @property
    def built_from(self) -> Mapping[str, str] | None: ...


@dataclass(frozen=True, kw_only=True)
class File:
    """One file of the wheelhouse, as the SBOM describes it.

    *path* is relative to the wheelhouse (``tools/x.whl`` for a tool); *source_url* is the
    lock's official URL of what was fetched (the sdist's, for a wheel built from one);
    *index* is the package's index, written as the purl's ``repository_url`` when it is
    the PyTorch index; *built_from* is ``{"sdist": name, "sha256": hex}``."""

    name: str
    version: str
    path: str
    sha256: str
    size: int
    source_url: str
    kind: Literal["wheel", "tool"] = "wheel"
    index: str | None = None
    # compare=False: a dict is unhashable, and a frozen dataclass hashes its compared fields
    built_from: Mapping[str, str] | None = field(default=None, compare=False)

    @classmethod
    def of(cls, record: _Record, entry: Mapping[str, Any] | None = None, *,
           kind: Literal["wheel", "tool"] = "wheel") -> File:
        """A wheelhouse record, with the lock's table of its package for the index."""
        index = (entry or {}).get("index")
        return cls(name=record.package, version=record.version, path=record.path,
                   sha256=record.sha256, size=record.size, source_url=record.source,
                   kind=kind, index=index if isinstance(index, str) else None,
                   built_from=record.built_from)

    @property
    def filename(self) -> str:
        return PurePosixPath(self.path).name


def files_of_manifest(manifest: Mapping[str, Any], lock: Mapping[str, Any],
                      where: Path) -> list[File]:
    """The wheel and tool entries of a wheelhouse's ``manifest.json`` (*where*), each with
    its package's index from the lock it was built from."""
    entries = {_name_of(p): p for p in lock.get("packages", [])}
    files = []
    for i, f in enumerate(manifest.get("files", [])):
        if f.get("kind") not in ("wheel", "tool") or (f["kind"] == "tool" and "package" not in f):
            continue  # tools/requirements.txt is a meta file of the tools
        missing = [k for k in ("path", "package", "version", "sha256", "size") if k not in f]
        if missing:
            raise ConfigError(f"{where}: files[{i}] has no {', '.join(missing)}",
                              hint="build the wheelhouse again")
        index = entries.get(canonicalize_name(f["package"]), {}).get("index")
        files.append(File(name=f["package"], version=f["version"], path=f["path"],
                          sha256=f["sha256"], size=f["size"],
                          source_url=_url_or_empty(f.get("source")),
                          kind=f["kind"], built_from=f.get("built_from"),
                          index=index if f["kind"] == "wheel" and isinstance(index, str)
                          else None))
    return files


def _url_or_empty(source: Any) -> str:
    """A manifest's source when it is a URL (lockkit's own tool wheel says how it was built)."""
    return source if isinstance(source, str) and source.startswith(("https://", "http://")) \
        else ""


def refresh(folder: Path, lock: Lock, secrets: Secrets, out: Target | None = None) -> Path:
    """(Re)write the SBOM of the wheelhouse *folder* from its manifest and the *lock* it was
    built from; return the file written (the folder's ``sbom.cdx.json``, or *out*'s path as
    given: a target :func:`lockkit._internal.outfile.check` allowed).

    Written into the folder, the SBOM is also (re)listed in ``manifest.json``, so the folder
    still packs and verifies. A lock other than the folder's (its sha256 differs from the
    manifest's ``lock_sha256``) is refused: the SBOM would describe a different build."""
    from lockkit.wheelhouse.manifest import Manifest

    manifest = Manifest.read(folder).data
    if manifest.get("lock_sha256") != lock.sha256:
        raise ConfigError(f"{lock.path}: not the lock {folder} was built from (sha256 "
                          f"{lock.sha256[:12]}, the manifest says "
                          f"{str(manifest.get('lock_sha256'))[:12]})",
                          hint="pass that lock with --lock, or build the wheelhouse again")
    files = files_of_manifest(manifest, lock.data, folder / "manifest.json")
    text = render(files, platform=str(manifest.get("platform", "")), lock=lock.data,
                  lock_sha256=lock.sha256, secrets=secrets)
    if out is not None:
        from lockkit._internal.outfile import write

        write(out, text)
        return Path(out.given)
    write_atomic(folder / FILENAME, text)
    _relist(folder, manifest, text)
    return folder / FILENAME


def recognise(path: Path) -> bool:
    """An SBOM lockkit wrote (:mod:`lockkit._internal.outfile`'s rule): CycloneDX JSON
    whose metadata names lockkit among its tools."""
    from lockkit._internal.outfile import head

    data = head(path, _MAX_SBOM)
    try:
        doc = json.loads(data) if data is not None and len(data) < _MAX_SBOM else None
    except (ValueError, RecursionError):
        return False
    tools = doc.get("metadata", {}).get("tools") if isinstance(doc, dict) and \
        doc.get("bomFormat") == "CycloneDX" and isinstance(doc.get("metadata"), dict) else None
    listed = tools.get("components") if isinstance(tools, dict) else tools
    return isinstance(listed, list) and any(
        isinstance(t, dict) and t.get("name") == "lockkit" for t in listed)


def _relist(folder: Path, manifest: Mapping[str, Any], text: str) -> None:
    """List the folder's SBOM in its manifest (as ``wheelhouse.build`` writes it); the rest
    of the manifest as it was read."""
    data = text.encode("utf-8")
    entry = {"path": FILENAME, "size": len(data), "sha256": hashlib.sha256(data).hexdigest(),
             "kind": "meta"}
    files = [f for f in manifest["files"] if f.get("path") != FILENAME] + [entry]
    relisted = {**manifest, "files": sorted(files, key=lambda f: f["path"])}
    write_atomic(folder / "manifest.json", json.dumps(relisted, indent=2, sort_keys=True) + "\n")


def load() -> None:
    """Import what :func:`render` imports (``packageurl``: about 2 ms): ``wheelhouse
    build`` has its main thread do it while the files download."""
    import packageurl  # noqa: F401


def render(files: Iterable[File], *, platform: str, lock: Mapping[str, Any],
           lock_sha256: str, secrets: Secrets,
           timestamp: datetime | None | Literal["SOURCE_DATE_EPOCH"] = "SOURCE_DATE_EPOCH",
           writer: str = __version__) -> str:
    """The SBOM as CycloneDX JSON text, the project's *secrets* concealed in every URL; the
    same inputs give the same text. *timestamp* and *writer* (lockkit's version) are
    :func:`written_facts`'s when the text is derived again to check a file."""
    shown = [replace(f, source_url=secrets.conceal(f.source_url),
                     index=f.index and secrets.conceal(f.index)) for f in files]
    torch_index = LockMeta.of(lock, "the lock").torch_index
    torch_index = torch_index and secrets.conceal(torch_index)  # compared with files' index
    doc: dict[str, Any] = {
        "$schema": _SCHEMA_URI, "bomFormat": "CycloneDX", "specVersion": SCHEMA_VERSION,
        "serialNumber": serial_number(platform, lock_sha256, writer).urn, "version": 1,
        "metadata": _metadata(platform, lock_sha256, _epoch() if timestamp ==
                              "SOURCE_DATE_EPOCH" else timestamp, writer)}
    if shown:  # the library's order: a component's (name, version, bom-ref)
        ordered = sorted(shown, key=lambda f: (f.name, f.version, f.path))
        doc["components"] = [_component(f, torch_index) for f in ordered]
        known, unknown = _dependencies(shown, lock)
        if known:
            doc["dependencies"] = known
        if unknown:
            doc["compositions"] = [{"aggregate": "unknown", "dependencies": unknown}]
    return json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def _metadata(platform: str, lock_sha256: str, epoch: datetime | None,
              writer: str) -> dict[str, Any]:
    """lockkit as the tool, the build's facts as properties, ``SOURCE_DATE_EPOCH`` as the
    timestamp (no wall clock in a reproducible file)."""
    tool = {"type": "application", "name": "lockkit", "version": writer,
            "bom-ref": f"lockkit@{writer}"}
    metadata = {"tools": {"components": [tool]},
                "properties": _properties(platform=platform, lock_sha256=lock_sha256)}
    if epoch is not None:
        metadata["timestamp"] = epoch.isoformat()
    return metadata


def written_facts(data: bytes | None) -> tuple[datetime | None, str]:
    """The timestamp and lockkit version an SBOM's bytes name, in the forms :func:`render`
    writes (a whole second in UTC; a version); else None and this lockkit's version."""
    from packaging.version import InvalidVersion, Version

    try:
        meta = json.loads(data or b"null")["metadata"]
        when = datetime.fromisoformat(meta["timestamp"]) if "timestamp" in meta else None
        writer = str(meta["tools"]["components"][0]["version"])
        Version(writer)
    except (ValueError, TypeError, KeyError, IndexError, RecursionError, InvalidVersion):
        return None, __version__
    exact = when is not None and when.utcoffset() == timedelta(0) and not when.microsecond
    return when if exact else None, writer


def _epoch() -> datetime | None:
    """``SOURCE_DATE_EPOCH`` as a UTC time (reproducible-builds.org), or None."""
    raw = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    if not raw:
        return None
    try:
        return datetime.fromtimestamp(int(raw), tz=timezone.utc)
    except (ValueError, OverflowError, OSError):
        raise ConfigError(f"SOURCE_DATE_EPOCH: {raw!r} is not a number of seconds",
                          hint="set it to an integer (seconds since 1970) or unset it") from None


def serial_number(platform: str, lock_sha256: str, writer: str = __version__) -> uuid.UUID:
    """The SBOM's serial number: one per platform, lock and lockkit version (*writer*)."""
    return uuid.uuid5(_NAMESPACE, f"{platform}\n{lock_sha256}\n{writer}")


def _component(f: File, torch_index: str | None) -> dict[str, Any]:
    """A library component: the file's hash, purl and lockkit's properties; the lock's URL
    with its hash (the sdist's, for a wheel built here, which no URL serves), and the
    sdist as its pedigree's ancestor."""
    repository = _repository(f.index, torch_index)
    component: dict[str, Any] = {
        "type": "library", "name": f.name, "version": f.version, "bom-ref": f.path,
        "purl": _purl(f.name, f.version, f.filename, repository),
        "hashes": [_sha(f.sha256)],
        "properties": _properties(path=f.path, kind=f.kind, size=str(f.size))}
    if f.source_url:
        kind = "source-distribution" if f.built_from else "distribution"
        sha = f.built_from["sha256"] if f.built_from else f.sha256
        component["externalReferences"] = [
            {"type": kind, "url": _uri(_url(f.source_url)), "hashes": [_sha(sha)]}]
    if f.built_from:
        sdist = f.built_from["sdist"]
        component["pedigree"] = {"ancestors": [{
            "type": "library", "name": f.name, "version": f.version,
            "bom-ref": f"{f.path} built from {sdist}",
            "purl": _purl(f.name, f.version, sdist, repository),
            "hashes": [_sha(f.built_from["sha256"])]}]}
    return component


def _dependencies(files: list[File], lock: Mapping[str, Any]
                  ) -> tuple[list[dict[str, Any]], list[str]]:
    """The entries of the graph, by bom-ref, for the wheels whose package has a
    ``dependencies`` key in the lock (PEP 751 makes it optional; uv writes none today):
    the lock's dependencies between the wheels, none included. Then the bom-refs of every
    other component, whose dependencies are unknown (a tool's always: see the module)."""
    by_name = {canonicalize_name(f.name): f.path
               for f in sorted(files, key=lambda f: f.path) if f.kind == "wheel"}
    needs: dict[str, set[str]] = {}
    for package in lock.get("packages", []):
        source = by_name.get(_name_of(package))
        listed = package.get("dependencies") if isinstance(package, Mapping) else None
        if source is not None and isinstance(listed, list):
            needs.setdefault(source, set()).update(
                by_name[n] for d in listed if (n := _name_of(d)) in by_name)
    known = [{"ref": ref, "dependsOn": sorted(on)} if on else {"ref": ref}
             for ref, on in sorted(needs.items())]
    return known, sorted({f.path for f in files} - needs.keys())


def _name_of(table: object) -> NormalizedName:
    """The normalised name a lock's table gives (``""``: none)."""
    name = table.get("name") if isinstance(table, Mapping) else None
    return canonicalize_name(name if isinstance(name, str) else "")


def _properties(**values: str) -> list[dict[str, str]]:
    """lockkit's properties, sorted by name as the library writes them."""
    return [{"name": f"{_PROP}{key}", "value": value} for key, value in sorted(values.items())]


def _sha(hexdigest: str) -> dict[str, str]:
    return {"alg": "SHA-256", "content": hexdigest}


def _purl(name: str, version: str, filename: str, repository: str | None) -> str:
    """``pkg:pypi/<name>@<version>?file_name=...`` (purl-spec ``types/pypi-definition.json``:
    the name lowercased with ``-``; ``file_name`` picks the distribution file;
    ``repository_url`` is the core spec's qualifier for a non-default repository)."""
    from packageurl import PackageURL

    qualifiers = {"file_name": filename}
    if repository:
        qualifiers["repository_url"] = repository
    return PackageURL(type="pypi", name=name.lower().replace("_", "-"), version=version,
                      qualifiers=qualifiers).to_string()


def _repository(index: str | None, torch_index: str | None) -> str | None:
    """The PyTorch index, for a package the lock took from it; None for the default index."""
    if index and torch_index and index.rstrip("/") == torch_index.rstrip("/"):
        return _url(index)
    return None


def _url(url: str) -> str:
    """The official URL fit to publish: no user info at all (its ``${VAR}`` values were
    concealed by :func:`render`)."""
    return strip_credentials(masked(url))


def _uri(url: str) -> str:
    """*url* as an ``iri-reference`` (the schema's format of a URL): the characters a URI
    cannot hold percent-encoded as cyclonedx-python-lib encodes them (``XsUri``), and what
    the library gets wrong made valid too: an IPv6 host keeps its brackets (the library's
    ``%5B::1%5D`` fails the schema), a ``%`` that starts no escape and a second ``#``
    (which the library refuses) are encoded."""
    head = _AUTHORITY.match(url)
    cut = head.end() if head else 0
    url = _STRAY_PERCENT.sub("%25", url[:cut].translate(_IN_HOST)
                             + url[cut:].translate(_ELSEWHERE))
    fragment = url.find("#")
    return url if fragment < 0 else \
        url[:fragment + 1] + url[fragment + 1:].replace("#", "%23")
