"""A wheelhouse archive's members read as hostile input (``unpack``'s checks).

The first members must be the top folder, then ``manifest.json`` and ``SHA256SUMS`` in it,
agreeing with each other (:func:`read_meta`; an archive of lockkit from before the top
folder starts with ``manifest.json``). Every later member must lie inside the top folder
and be a plain file the manifest lists, with its size, or a folder of one; each file is
hashed as it streams into the stage folder, and a mismatch fails the whole unpack.
"""

from __future__ import annotations

import hashlib
import os
import tarfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from lockkit.errors import ArchiveError
from lockkit.wheelhouse.manifest import (
    MANIFEST,
    SUMS,
    folders_above,
    listed,
    parse_manifest,
    sums,
    top_folder,
    unsafe_path,
)

__all__ = ["extract", "open_tar", "read_meta"]

_META_MAX = 64 << 20  # manifest.json and SHA256SUMS are read into memory
_CHUNK = 1 << 20
_KINDS = {tarfile.SYMTYPE: "symlink", tarfile.LNKTYPE: "hard link", tarfile.DIRTYPE: "directory",
          tarfile.CHRTYPE: "character device", tarfile.BLKTYPE: "block device",
          tarfile.FIFOTYPE: "FIFO", tarfile.CONTTYPE: "contiguous file",
          tarfile.GNUTYPE_SPARSE: "sparse file"}


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


def extract(tar: tarfile.TarFile, archive: Path, stage: Path,
            on_bytes: Callable[[int], None]) -> dict[str, Any]:
    """Every member of *tar* checked and written into *stage*; return the manifest."""
    manifest, manifest_bytes, sums_bytes, prefix = read_meta(tar, archive)
    entries = listed(manifest)
    folders = folders_above(entries)
    (stage / MANIFEST).write_bytes(manifest_bytes)
    (stage / SUMS).write_bytes(sums_bytes)
    done: set[str] = set()
    while (member := _next(tar, archive)) is not None:
        rel = _inside(member, prefix, archive)
        if member.type == tarfile.DIRTYPE and rel in folders and rel not in done:
            (stage / rel).mkdir(parents=True, exist_ok=True)  # the umask's mode, not the tar's
        else:
            entry = _check_member(member, rel, archive, entries, done)
            _write_member(tar, member, archive, entry, stage / rel, on_bytes)
        done.add(rel)
    missing = sorted(entries.keys() - done)  # folders in done are never listed
    if missing:
        raise ArchiveError(f"{archive}: listed in the manifest but not in the archive: "
                           + ", ".join(missing), hint="the archive may be truncated")
    return manifest


def _next(tar: tarfile.TarFile, archive: Path) -> tarfile.TarInfo | None:
    try:
        return tar.next()
    except (tarfile.TarError, OSError) as exc:
        raise ArchiveError(f"{archive}: damaged or truncated tar: {exc}") from None


def read_meta(tar: tarfile.TarFile,
              archive: Path) -> tuple[dict[str, Any], bytes, bytes, str]:
    """The top folder, then manifest.json and SHA256SUMS in it, and that they agree; the
    prefix of every later member (``""`` for an archive from before the top folder)."""
    member, prefix = _next(tar, archive), ""
    blobs: list[bytes] = []
    if member is not None and member.type == tarfile.DIRTYPE:
        why = unsafe_path(member.name) or ("a nested folder" if "/" in member.name else None)
        if why:
            raise ArchiveError(f"{archive}: refusing member {member.name!r}: {why}")
        prefix, member = member.name + "/", _next(tar, archive)
    for expected in (prefix + MANIFEST, prefix + SUMS):
        if member is None or member.name != expected or member.type != tarfile.REGTYPE:
            found = "the end of the archive" if member is None else repr(member.name)
            raise ArchiveError(f"{archive}: expected {expected} as the "
                               f"{'next' if blobs else 'first'} file, found {found}; "
                               "not a lockkit wheelhouse archive")
        if member.size > _META_MAX:
            raise ArchiveError(f"{archive}: {expected} is {member.size} bytes; refusing to read it")
        blobs.append(_read_member(tar, member, archive))
        member = None if len(blobs) == 2 else _next(tar, archive)
    manifest = parse_manifest(blobs[0], archive / MANIFEST)
    if blobs[1] != sums(listed(manifest)):
        raise ArchiveError(f"{archive}: {SUMS} does not match {MANIFEST}")
    if prefix and prefix != top_folder(manifest, archive / MANIFEST) + "/":
        raise ArchiveError(f"{archive}: the top folder {prefix!r} is not the manifest's "
                           f"platform's, {top_folder(manifest, archive / MANIFEST) + '/'!r}")
    return manifest, blobs[0], blobs[1], prefix


def _inside(member: tarfile.TarInfo, prefix: str, archive: Path) -> str:
    """*member*'s path in the top folder; a member outside it is refused, as hostile."""
    if not prefix:
        return member.name
    if not member.name.startswith(prefix) or member.name == prefix:
        raise ArchiveError(f"{archive}: refusing member {member.name!r}: outside the "
                           f"archive's folder {prefix!r}")
    return member.name[len(prefix):]


def _read_member(tar: tarfile.TarFile, member: tarfile.TarInfo, archive: Path) -> bytes:
    fh = tar.extractfile(member)
    assert fh is not None  # a regular file always has a reader
    try:
        return fh.read()
    except (tarfile.TarError, OSError) as exc:
        raise ArchiveError(f"{archive}: {member.name}: damaged or truncated: {exc}") from None


def _check_member(member: tarfile.TarInfo, name: str, archive: Path,
                  entries: dict[str, dict[str, Any]], done: set[str]) -> dict[str, Any]:
    """The manifest entry for *member* (at *name* in the top folder), or an error saying
    why it may not be extracted."""
    why = unsafe_path(name)
    if why is None and member.type != tarfile.REGTYPE:
        why = f"not a regular file ({_KINDS.get(member.type, f'type {member.type!r}')})"
    if why is None and (name in done or name in (MANIFEST, SUMS)):
        why = "appears twice"
    if why is None and name not in entries:
        why = "not in the manifest"
    if why is None and member.size != entries[name]["size"]:
        why = f"{member.size} bytes, the manifest says {entries[name]['size']}"
    if why is not None:
        raise ArchiveError(f"{archive}: refusing member {member.name!r}: {why}")
    return entries[name]


def _write_member(tar: tarfile.TarFile, member: tarfile.TarInfo, archive: Path,
                  entry: dict[str, Any], dest: Path, on_bytes: Callable[[int], None]) -> None:
    """Copy the member to *dest* while hashing; a mismatch fails the whole unpack. The file
    gets the umask's mode (``open``), never the archive's."""
    src = tar.extractfile(member)
    assert src is not None
    digest = hashlib.sha256()
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        with dest.open("xb") as fh:
            for block in iter(lambda: src.read(_CHUNK), b""):
                digest.update(block)
                fh.write(block)
                on_bytes(len(block))
            fh.flush()
            os.fsync(fh.fileno())
    except tarfile.TarError as exc:
        raise ArchiveError(f"{archive}: {member.name}: damaged or truncated: {exc}") from None
    except OSError as exc:
        raise ArchiveError(f"{archive}: {member.name}: cannot extract: {exc}") from None
    if digest.hexdigest() != entry["sha256"]:
        raise ArchiveError(f"{archive}: refusing member {member.name!r}: sha256 "
                           f"{digest.hexdigest()} does not match the manifest's {entry['sha256']}")
