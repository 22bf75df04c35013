"""A wheelhouse archive's members read as hostile input (``unpack``'s checks).

The first members are the archive's head (the top folder, ``manifest.json`` and
``SHA256SUMS``: :func:`lockkit.wheelhouse.manifest.read_head`). Every later member must lie
inside the top folder and be a plain file the manifest lists, with its size, or a folder of
one; each file is hashed as it streams into the stage folder, and a mismatch fails the whole
unpack.
"""

from __future__ import annotations

import hashlib
import os
import tarfile
from collections.abc import Callable, Mapping
from pathlib import Path

from lockkit.errors import ArchiveError
from lockkit.wheelhouse.manifest import (
    MANIFEST,
    SUMS,
    Entry,
    Manifest,
    folders_above,
    next_member,
    read_head,
    unsafe_path,
)

__all__ = ["extract"]

_CHUNK = 1 << 20
_KINDS = {tarfile.SYMTYPE: "symlink", tarfile.LNKTYPE: "hard link", tarfile.DIRTYPE: "directory",
          tarfile.CHRTYPE: "character device", tarfile.BLKTYPE: "block device",
          tarfile.FIFOTYPE: "FIFO", tarfile.CONTTYPE: "contiguous file",
          tarfile.GNUTYPE_SPARSE: "sparse file"}


def extract(tar: tarfile.TarFile, archive: Path, stage: Path,
            on_bytes: Callable[[int], None]) -> Manifest:
    """Every member of *tar* checked and written into *stage*; return the manifest."""
    head = read_head(tar, archive)
    entries = head.manifest.entries
    folders = folders_above(entries)
    (stage / MANIFEST).write_bytes(head.manifest.raw)
    (stage / SUMS).write_bytes(head.sums)
    done: set[str] = set()
    while (member := next_member(tar, archive)) is not None:
        rel = _inside(member, head.prefix, archive)
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
    return head.manifest


def _inside(member: tarfile.TarInfo, prefix: str, archive: Path) -> str:
    """*member*'s path in the top folder; a member outside it is refused, as hostile."""
    if not prefix:
        return member.name
    if not member.name.startswith(prefix) or member.name == prefix:
        raise ArchiveError(f"{archive}: refusing member {member.name!r}: outside the "
                           f"archive's folder {prefix!r}")
    return member.name[len(prefix):]


def _check_member(member: tarfile.TarInfo, name: str, archive: Path,
                  entries: Mapping[str, Entry], done: set[str]) -> Entry:
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
                  entry: Entry, dest: Path, on_bytes: Callable[[int], None]) -> None:
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
