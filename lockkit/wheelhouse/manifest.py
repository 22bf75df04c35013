"""A wheelhouse's ``manifest.json`` read as untrusted data (:class:`Manifest`), from a
folder or from the head of an archive, and the names it may hold.

The manifest lists every file of the folder (``path``, ``size``, ``sha256``); ``SHA256SUMS``
is derived from it (:func:`sums`). Both the folder that ``pack`` reads and the archive
that ``unpack`` reads are checked against these rules: a path is relative, normalized, free
of control characters, listed once, never a file and a folder at once, never one of the
two meta files. An archive's first members are its top folder, then ``manifest.json`` and
``SHA256SUMS`` in it, agreeing with each other (:func:`read_head`; an archive of lockkit
from before the top folder starts with ``manifest.json``); the later members are
:mod:`lockkit.wheelhouse.members`' to check. :mod:`lockkit.wheelhouse.meta` writes the
manifest; this module reads it.
"""

from __future__ import annotations

import json
import re
import tarfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO, Any, Literal, TypedDict, get_args

from lockkit._internal.parse import parse_json
from lockkit.errors import ArchiveError

__all__ = ["ENTRY_KINDS", "MANIFEST", "SUMS", "Entry", "EntryKind", "Head", "Manifest",
           "ManifestDoc", "folders_above", "next_member", "open_tar", "read_head", "sums",
           "unsafe_path"]

MANIFEST = "manifest.json"
SUMS = "SHA256SUMS"
_SHA256 = re.compile(r"[0-9a-f]{64}")
_PLATFORM = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_META_MAX = 64 << 20  # manifest.json and SHA256SUMS are read into memory

# wheel: a locked package's; meta: a file derived from them (pylock.toml, simple/, the SBOM);
# tool: lockkit and its dependencies under tools/, outside the lock
EntryKind = Literal["wheel", "meta", "tool"]
ENTRY_KINDS: tuple[EntryKind, ...] = get_args(EntryKind)


class _Entry(TypedDict):
    path: str
    size: int
    sha256: str


class Entry(_Entry, total=False):
    """One file of the folder. :meth:`Manifest.parse` checks every key's type, and a path,
    size and sha256 each entry must have; a wheel's and a tool's entry name their package."""

    kind: EntryKind
    package: str
    version: str
    source: str  # the lock's URL, redacted; a tool's: where it came from
    built_from: dict[str, str]  # a wheel built from the lock's sdist: its name and sha256


class ManifestDoc(TypedDict):
    """``manifest.json`` as :func:`lockkit.wheelhouse.meta.write_meta` writes it."""

    schema_version: int
    platform: str
    lock: str
    lock_sha256: str
    lockkit_version: str
    files: list[Entry]


def unsafe_path(name: str) -> str | None:
    """Why *name* cannot be a relative file path inside a folder, or None if it can."""
    if not name:
        return "empty path"
    if "\\" in name or ":" in name or "\0" in name:
        return "backslash, drive letter or NUL in the path"
    if any(ord(c) < 32 or ord(c) == 127 or c in "\u2028\u2029\x85" for c in name):
        # a newline in a name would forge a line of the unpacked SHA256SUMS
        return "a control character or line break in the path"
    if name.startswith("/"):
        return "absolute path"
    parts = name.split("/")
    if ".." in parts:
        return "'..' in the path"
    if "" in parts or "." in parts:
        return "not a normalized path"
    return None


@dataclass(frozen=True)
class Manifest:
    """A validated ``manifest.json``: its document, the bytes it was parsed from, and where
    they were read (the path every error names)."""

    data: Mapping[str, Any]  # foreign until checked: only "files" and "platform" are
    raw: bytes
    where: Path

    @classmethod
    def parse(cls, raw: bytes, where: Path) -> Manifest:
        """*raw* as a manifest, every entry checked; all problems in one :class:`ArchiveError`."""
        try:
            data = parse_json(raw, where)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ArchiveError(f"{where}: not valid JSON: {exc}") from None
        files = data.get("files") if isinstance(data, dict) else None
        if not isinstance(files, list):
            raise ArchiveError(f"{where}: no 'files' list")
        errors: list[str] = []
        seen: set[str] = set()
        for i, entry in enumerate(files):
            errors += [f"files[{i}]: {e}" for e in _entry_errors(entry, seen)]
        errors += [f"path {p!r}: both a file and a folder"
                   for p in sorted(folders_above(seen) & seen)]
        if errors:
            raise ArchiveError(f"{where}: " + "; ".join(errors))
        return cls(data, raw, where)

    @classmethod
    def of_folder(cls, folder: Path) -> Manifest:
        """The manifest of the wheelhouse *folder*."""
        try:
            raw = (folder / MANIFEST).read_bytes()
        except FileNotFoundError:
            raise ArchiveError(f"{folder}: no {MANIFEST}; not a wheelhouse folder",
                               hint="build it with 'lockkit wheelhouse build'") from None
        return cls.parse(raw, folder / MANIFEST)

    @classmethod
    def read(cls, path: Path) -> Manifest:
        """The manifest of a wheelhouse folder or of a packed archive."""
        if path.is_dir():
            return cls.of_folder(path)
        with open_tar(path) as tar:
            return read_head(tar, path).manifest

    @property
    def entries(self) -> dict[str, Entry]:
        """The manifest's entries by path, as :meth:`parse` checked them."""
        return {f["path"]: f for f in self.data["files"]}

    @property
    def top_folder(self) -> str:
        """The archive's one top-level folder, ``<platform>-wheelhouse``."""
        platform = self.data.get("platform")
        if not isinstance(platform, str) or not _PLATFORM.fullmatch(platform):
            raise ArchiveError(f"{self.where}: bad or missing 'platform' {platform!r}")
        return f"{platform}-wheelhouse"


def _entry_errors(entry: Any, seen: set[str]) -> list[str]:
    if not isinstance(entry, dict):
        return ["not an object"]
    path, size, sha = entry.get("path"), entry.get("size"), entry.get("sha256")
    if not isinstance(path, str):
        return ["no 'path'"]
    errors = []
    why = unsafe_path(path)
    if why or path in (MANIFEST, SUMS) or path in seen:
        errors.append(f"path {path!r}: {why or 'reserved or listed twice'}")
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        errors.append(f"{path}: bad size {size!r}")
    if not isinstance(sha, str) or not _SHA256.fullmatch(sha):
        errors.append(f"{path}: bad sha256 {sha!r}")
    seen.add(path)
    return errors + _optional_errors(path, entry)


def _optional_errors(path: str, entry: Mapping[str, Any]) -> list[str]:
    """The keys an entry may have, each of its type: what readers compare or name."""
    errors = [f"{path}: bad {key} {entry[key]!r}" for key in ("package", "version", "source")
              if key in entry and not isinstance(entry[key], str)]
    if "kind" in entry and entry["kind"] not in ENTRY_KINDS:
        errors.append(f"{path}: kind {entry['kind']!r} is not one of {', '.join(ENTRY_KINDS)}")
    built = entry.get("built_from", {})
    if not isinstance(built, dict) or not all(isinstance(v, str) for v in built.values()):
        errors.append(f"{path}: bad built_from {built!r}")
    return errors


def folders_above(paths: Any) -> set[str]:
    """Every folder above *paths* (``simple``, ``simple/torch``), the top one excluded."""
    return {p.as_posix() for path in paths for p in PurePosixPath(path).parents
            if p.as_posix() != "."}


def sums(entries: Mapping[str, Entry]) -> bytes:
    """``SHA256SUMS`` of the listed *entries*, sorted by path (``sha256sum -c`` reads it)."""
    return "".join(f"{entries[p]['sha256']}  {p}\n" for p in sorted(entries)).encode()


# -- an archive's head --------------------------------------------------------------------------

@dataclass(frozen=True)
class Head:
    """An archive's first members: its manifest, the ``SHA256SUMS`` bytes that agree with it,
    and the prefix of every later member (``""`` for an archive from before the top folder)."""

    manifest: Manifest
    sums: bytes
    prefix: str


def open_tar(archive: Path, fh: IO[bytes] | None = None) -> tarfile.TarFile:
    """*archive* as a tar, read from *fh* (from its start) when given: one open file for
    the hash and the members."""
    try:
        if fh is not None:
            fh.seek(0)
            return tarfile.open(fileobj=fh, mode="r:")
        return tarfile.open(archive, mode="r:")
    except (tarfile.TarError, OSError) as exc:
        raise ArchiveError(f"{archive}: not a readable tar archive: {exc}") from None


def next_member(tar: tarfile.TarFile, archive: Path) -> tarfile.TarInfo | None:
    """The next member of *tar*; a damaged one is an :class:`ArchiveError`."""
    try:
        return tar.next()
    except (tarfile.TarError, OSError) as exc:
        raise ArchiveError(f"{archive}: damaged or truncated tar: {exc}") from None


def read_head(tar: tarfile.TarFile, archive: Path) -> Head:
    """The top folder, then manifest.json and SHA256SUMS in it, and that they agree."""
    member, prefix = next_member(tar, archive), ""
    blobs: list[bytes] = []
    if member is not None and member.type == tarfile.DIRTYPE:
        why = unsafe_path(member.name) or ("a nested folder" if "/" in member.name else None)
        if why:
            raise ArchiveError(f"{archive}: refusing member {member.name!r}: {why}")
        prefix, member = member.name + "/", next_member(tar, archive)
    for expected in (prefix + MANIFEST, prefix + SUMS):
        if member is None or member.name != expected or member.type != tarfile.REGTYPE:
            found = "the end of the archive" if member is None else repr(member.name)
            raise ArchiveError(f"{archive}: expected {expected} as the "
                               f"{'next' if blobs else 'first'} file, found {found}; "
                               "not a lockkit wheelhouse archive")
        if member.size > _META_MAX:
            raise ArchiveError(f"{archive}: {expected} is {member.size} bytes; refusing to read it")
        blobs.append(_read_member(tar, member, archive))
        member = None if len(blobs) == 2 else next_member(tar, archive)
    manifest = Manifest.parse(blobs[0], archive / MANIFEST)
    if blobs[1] != sums(manifest.entries):
        raise ArchiveError(f"{archive}: {SUMS} does not match {MANIFEST}")
    if prefix and prefix != manifest.top_folder + "/":
        raise ArchiveError(f"{archive}: the top folder {prefix!r} is not the manifest's "
                           f"platform's, {manifest.top_folder + '/'!r}")
    return Head(manifest, blobs[1], prefix)


def _read_member(tar: tarfile.TarFile, member: tarfile.TarInfo, archive: Path) -> bytes:
    fh = tar.extractfile(member)
    assert fh is not None  # a regular file always has a reader
    try:
        return fh.read()
    except (tarfile.TarError, OSError) as exc:
        raise ArchiveError(f"{archive}: {member.name}: damaged or truncated: {exc}") from None
