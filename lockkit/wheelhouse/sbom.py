"""A CycloneDX SBOM of a wheelhouse: what crosses the air gap, file by file.

``sbom.cdx.json`` lists one component per file of the folder (each wheel, and each
``tools/`` wheel): its name, version, package URL, SHA-256 and the lock's *official* URL
of the file (credentials stripped: the lock never holds a secret's value, and user info
is dropped here too). A wheel built from an sdist names the sdist as its source
distribution and pedigree ancestor. A site reviews this file before it lets the folder in.

The same lock gives the same bytes: the serial number is a uuid5 of the platform, the
lock's sha256 and lockkit's version (the library draws a random uuid4 by default:
cyclonedx-python-lib ``cyclonedx/model/bom.py``, ``Bom.__init__``); every component has an
explicit ``bom-ref`` (a missing one gets a random value: ``cyclonedx/contrib/bom/utils.py``,
``BomRefDiscriminator``); the metadata timestamp, which the library sets to the wall clock
(``BomMetaData.__init__``), is ``SOURCE_DATE_EPOCH`` when that is set and left out
otherwise; the JSON is written with sorted keys.

``cyclonedx`` and ``packageurl`` are imported only when an SBOM is rendered: they cost
start-up time that no other command should pay.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, Literal, Protocol

from lockkit import __version__
from lockkit._internal.fs import write_atomic
from lockkit._internal.redact import Secrets, masked, strip_credentials
from lockkit.errors import ConfigError
from lockkit.lock.model import LockMeta

if TYPE_CHECKING:  # pragma: no cover - typing only; the import is deferred at run time
    from cyclonedx.model.bom import Bom
    from cyclonedx.model.component import Component

    from lockkit._internal.outfile import Target
    from lockkit.lock.model import Lock

__all__ = ["FILENAME", "SCHEMA_VERSION", "WHAT", "File", "files_of_manifest", "recognise",
           "refresh", "render", "serial_number"]

FILENAME = "sbom.cdx.json"
SCHEMA_VERSION = "1.6"  # what CycloneDX consumers read today; 1.7 is newer than most
# A fixed namespace for the serial numbers lockkit derives (uuid5 of this and the lock's facts)
_NAMESPACE = uuid.UUID("6c6f636b-6b69-7400-8000-73626f6d0001")
_PROP = "lockkit:"  # CycloneDX property names are namespaced by the tool that writes them
WHAT = "an SBOM lockkit wrote"  # what -o is replaced only over (lockkit as a tool in it)
_MAX_SBOM = 256 << 20  # an SBOM read to recognise it: far above a wheelhouse's


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
    entries = {_canonical(p.get("name")): p for p in lock.get("packages", [])}
    files = []
    for i, f in enumerate(manifest.get("files", [])):
        if f.get("kind") not in ("wheel", "tool") or (f["kind"] == "tool" and "package" not in f):
            continue  # tools/requirements.txt is a meta file of the tools
        missing = [k for k in ("path", "package", "version", "sha256", "size") if k not in f]
        if missing:
            raise ConfigError(f"{where}: files[{i}] has no {', '.join(missing)}",
                              hint="build the wheelhouse again")
        index = entries.get(_canonical(f["package"]), {}).get("index")
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
    """Import what :func:`render` uses (CycloneDX's model and writer: about 0.1 s on a
    loaded 2-core machine, a third of the work after the last byte of a one-wheel build):
    ``wheelhouse build`` has its main thread do it while the files download."""
    import cyclonedx.model.bom  # noqa: F401
    import cyclonedx.output.json  # noqa: F401
    import packageurl  # noqa: F401


def render(files: Iterable[File], *, platform: str, lock: Mapping[str, Any],
           lock_sha256: str, secrets: Secrets) -> str:
    """The SBOM as CycloneDX JSON text, the project's *secrets* concealed in every URL; the
    same inputs give the same text."""
    from cyclonedx.output.json import BY_SCHEMA_VERSION
    from cyclonedx.schema import SchemaVersion

    shown = [replace(f, source_url=secrets.conceal(f.source_url),
                     index=f.index and secrets.conceal(f.index)) for f in files]
    bom = _bom(sorted(shown, key=lambda f: f.path), platform, lock, lock_sha256, secrets)
    outputter = BY_SCHEMA_VERSION[SchemaVersion.from_version(SCHEMA_VERSION)](bom)
    data = json.loads(outputter.output_as_string())
    if _epoch() is None:
        data["metadata"].pop("timestamp", None)  # no wall clock in a reproducible file
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


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


def serial_number(platform: str, lock_sha256: str) -> uuid.UUID:
    """The SBOM's serial number: one per platform, lock and lockkit version."""
    return uuid.uuid5(_NAMESPACE, f"{platform}\n{lock_sha256}\n{__version__}")


def _bom(files: list[File], platform: str, lock: Mapping[str, Any], lock_sha256: str,
         secrets: Secrets) -> Bom:
    from cyclonedx.model import Property
    from cyclonedx.model.bom import Bom, BomMetaData
    from cyclonedx.model.component import Component, ComponentType
    from cyclonedx.model.tool import ToolRepository

    tool = Component(type=ComponentType.APPLICATION, name="lockkit", version=__version__,
                     bom_ref=f"lockkit@{__version__}")
    props = [Property(name=f"{_PROP}platform", value=platform),
             Property(name=f"{_PROP}lock_sha256", value=lock_sha256)]
    torch_index = LockMeta.of(lock, "the lock").torch_index
    torch_index = torch_index and secrets.conceal(torch_index)  # compared with files' index
    components = [_component(f, torch_index) for f in files]
    metadata = BomMetaData(tools=ToolRepository(components=[tool]), properties=props,
                           timestamp=_epoch())
    bom = Bom(serial_number=serial_number(platform, lock_sha256), metadata=metadata,
              components=components)
    _depend(bom, [c for f, c in zip(files, components, strict=True) if f.kind == "wheel"], lock)
    return bom


def _component(f: File, torch_index: str | None) -> Component:
    from cyclonedx.model import ExternalReference, ExternalReferenceType, Property, XsUri
    from cyclonedx.model.component import Component, ComponentType, Pedigree

    purl = _purl(f.name, f.version, f.filename, _repository(f.index, torch_index))
    pedigree = Pedigree(ancestors=[_sdist(f, torch_index)]) if f.built_from else None
    refs = []
    if f.source_url:  # a wheel built here has no URL: the lock's is its sdist's
        kind = (ExternalReferenceType.SOURCE_DISTRIBUTION if f.built_from
                else ExternalReferenceType.DISTRIBUTION)
        sha = f.built_from["sha256"] if f.built_from else f.sha256
        refs.append(ExternalReference(type=kind, url=XsUri(_url(f.source_url)),
                                      hashes=[_sha(sha)]))
    props = [Property(name=f"{_PROP}path", value=f.path),
             Property(name=f"{_PROP}kind", value=f.kind),
             Property(name=f"{_PROP}size", value=str(f.size))]
    return Component(type=ComponentType.LIBRARY, name=f.name, version=f.version, purl=purl,
                     bom_ref=f.path, hashes=[_sha(f.sha256)], external_references=refs,
                     properties=props, pedigree=pedigree)


def _sdist(f: File, torch_index: str | None) -> Component:
    from cyclonedx.model.component import Component, ComponentType

    assert f.built_from is not None
    purl = _purl(f.name, f.version, f.built_from["sdist"], _repository(f.index, torch_index))
    return Component(type=ComponentType.LIBRARY, name=f.name, version=f.version, purl=purl,
                     bom_ref=f"{f.path} built from {f.built_from['sdist']}",
                     hashes=[_sha(f.built_from["sha256"])])


def _depend(bom: Bom, components: list[Component], lock: Mapping[str, Any]) -> None:
    """The lock's ``packages[].dependencies`` between the wheels' components, where the
    lock has them (PEP 751 makes the key optional; uv writes none today)."""
    by_name = {c.name: c for c in components}
    for package in lock.get("packages", []):
        source = by_name.get(_canonical(package.get("name")))
        needs = [by_name[_canonical(d.get("name"))] for d in package.get("dependencies", [])
                 if isinstance(d, Mapping) and _canonical(d.get("name")) in by_name]
        if source is not None and needs:
            bom.register_dependency(source, needs)


def _canonical(name: object) -> str:
    """PEP 503 normalisation (packaging's ``canonicalize_name``, without importing it)."""
    return re.sub(r"[-_.]+", "-", str(name or "")).lower()


def _sha(hexdigest: str) -> Any:
    from cyclonedx.model import HashAlgorithm, HashType

    return HashType(alg=HashAlgorithm.SHA_256, content=hexdigest)


def _purl(name: str, version: str, filename: str, repository: str | None) -> Any:
    """``pkg:pypi/<name>@<version>?file_name=...`` (purl-spec ``types/pypi-definition.json``:
    the name lowercased with ``-``; ``file_name`` picks the distribution file;
    ``repository_url`` is the core spec's qualifier for a non-default repository)."""
    from packageurl import PackageURL

    qualifiers = {"file_name": filename}
    if repository:
        qualifiers["repository_url"] = repository
    return PackageURL(type="pypi", name=name.lower().replace("_", "-"), version=version,
                      qualifiers=qualifiers)


def _repository(index: str | None, torch_index: str | None) -> str | None:
    """The PyTorch index, for a package the lock took from it; None for the default index."""
    if index and torch_index and index.rstrip("/") == torch_index.rstrip("/"):
        return _url(index)
    return None


def _url(url: str) -> str:
    """The official URL fit to publish: no user info at all (its ``${VAR}`` values were
    concealed by :func:`render`)."""
    return strip_credentials(masked(url))
