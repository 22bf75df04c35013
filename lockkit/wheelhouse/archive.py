"""A wheelhouse folder as one reproducible, checked tar.

``pack`` writes an uncompressed POSIX (pax) tar -- wheels are already
compressed -- with one top-level folder, ``<platform>-wheelhouse/`` (so ``tar xf``
makes one folder), whose members are ``manifest.json``, ``SHA256SUMS`` and then
every file the manifest lists, sorted by path, each folder just before its first
file; fixed times and owners, modes 0755/0644: the same folder always gives the
same bytes.

``unpack`` treats the archive as hostile (:mod:`lockkit.wheelhouse.members`): it reads
the manifest first (:mod:`lockkit.wheelhouse.manifest`), refuses any member outside the
top folder, and any that is not a plain file listed there (or a folder of one) with a
safe relative path, and checks sizes and hashes while streaming into a temp sibling of
the destination, which is renamed into place only when every check passed. An archive of
lockkit before the top folder (``manifest.json`` first) is still read.

What a clean unpack covers: with ``--lock``, every file an install command reads is what
the committed lock implies (:mod:`lockkit.wheelhouse.implied`); ``tools/`` is outside the
lock, so only the archive's own sha256, written beside it by ``pack``
(``<archive>.sha256``, ``sha256sum`` format) and compared out of band (``--sha256``),
vouches for it. The platform is the manifest's, checked against the folder's
``pylock.toml`` and any platform the file name claims.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import shutil
import tarfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Any

from lockkit._internal import outfile
from lockkit._internal.endings import interrupt_held
from lockkit._internal.fs import temp_dir
from lockkit._internal.outdir import check, swap, sweep_stale
from lockkit._internal.outfile import Target
from lockkit._internal.redact import NO_SECRETS, Secrets
from lockkit.errors import ArchiveError, LockkitError, TrustError, UsageError
from lockkit.lock.model import Lock
from lockkit.platforms.definitions import Platform, load_catalog
from lockkit.wheelhouse.implied import check_wheelhouse, platform_problems
from lockkit.wheelhouse.manifest import (
    MANIFEST,
    SUMS,
    Entry,
    Manifest,
    folders_above,
    open_tar,
    read_head,
    sums,
)
from lockkit.wheelhouse.members import extract
from lockkit.wheelhouse.trust import Selected, committed

__all__ = ["ARCHIVE", "RECEIVER_HINT", "archive_platform", "named_lock", "pack", "packed",
           "recognise", "sidecar", "sidecar_target", "unpack"]

_LOCK_NAME = re.compile(r"pylock\.[A-Za-z0-9][A-Za-z0-9._-]*\.toml")
_SIDECAR = re.compile(r"[0-9a-f]{64}  [^\n]+\n")
_HEX = re.compile(r"[0-9a-fA-F]{64}")
ARCHIVE, SIDECAR = "a wheelhouse archive", "an archive's sha256 that lockkit wrote"
# What a receiver of a refused archive can do (no network, no project to build from)
RECEIVER_HINT = ("get the archive again from the sender, with its sha256 (compared out of "
                 "band, --sha256); nothing was written here")


# -- pack ---------------------------------------------------------------------------------------

def pack(folder: Path, out: Path | Target, *, lock: Lock | None = None,
         project_dir: Path | None = None,
         on_bytes: Callable[[int], None] | None = None) -> Path:
    """Write *folder* as one reproducible tar at *out* (a path, under
    :mod:`lockkit._internal.outfile`'s rule, or a target the caller checked), and its sha256
    at :func:`sidecar` (not for stdout, a device or a FIFO); nothing is left on failure.

    With *lock* (the committed lock; its platform's files from *project_dir*), the
    folder must be that lock's wheelhouse
    (:func:`lockkit.wheelhouse.implied.check_wheelhouse`): a manifest only proves that the
    folder agrees with itself. ``lockkit wheelhouse pack`` always gives one. *on_bytes*
    hears of each file's bytes as they are written (a progress bar)."""
    return packed(folder, out, lock=lock, project_dir=project_dir, on_bytes=on_bytes)[0]


def packed(folder: Path, out: Path | Target, *, lock: Lock | None = None,
           project_dir: Path | None = None, on_bytes: Callable[[int], None] | None = None,
           force: bool = False, secrets: Secrets = NO_SECRETS) -> tuple[Path, str]:
    """:func:`pack`, and the archive's sha256; *force* as ``pack --force``; *secrets*, the
    project's, as the SBOM conceals them."""
    target = out if isinstance(out, Target) else outfile.check(
        out, what=ARCHIVE, recognise=recognise, inputs=outfile.Inputs(
            folders=[(folder, "the folder being packed")]))
    manifest = Manifest.of_folder(folder)
    entries = manifest.entries
    _check_folder(folder, entries)
    if lock is not None:
        check_wheelhouse(folder, lock, committed(lock, project_dir), secrets)
    top = manifest.top_folder
    side = sidecar_target(target, force=force)
    with outfile.stream(target) as raw:
        fh = _HashingWriter(raw)
        with tarfile.open(fileobj=fh, mode="w", format=tarfile.PAX_FORMAT) as tar:
            tar.addfile(_info(top, 0, tarfile.DIRTYPE))
            _add_bytes(tar, f"{top}/{MANIFEST}", manifest.raw)
            _add_bytes(tar, f"{top}/{SUMS}", sums(entries))
            made: set[str] = set()
            for path in sorted(entries):
                for sub in sorted(folders_above([path]) - made):  # parents before children
                    tar.addfile(_info(f"{top}/{sub}", 0, tarfile.DIRTYPE))
                    made.add(sub)
                _add_file(tar, folder, entries[path], top, on_bytes or _ignore)
    digest = fh.digest.hexdigest()
    if side is not None:
        outfile.write(side, f"{digest}  {Path(target.given).name}\n")
    return Path(target.given), digest


def sidecar(archive: Path) -> Path:
    """``<archive>.sha256``: the archive's sha256 in ``sha256sum`` format, for the receiver
    to compare with what it got, out of band (``unpack --sha256``): the archive is
    byte-reproducible, so the sender can say its sha256 in a message or a ticket."""
    return archive.with_name(archive.name + ".sha256")


def sidecar_target(archive: Target, *, force: bool = False) -> Target | None:
    """Where the sidecar of *archive* goes, checked by the same rule (beside the path as
    given: a symlink's name is the one the receiver gets); None for stdout, a device or
    a FIFO, which have no "beside"."""
    if archive.kind != "file":
        return None
    return outfile.check(sidecar(Path(archive.given)), what=SIDECAR, recognise=_is_sidecar,
                         inputs=archive.inputs, force=force)


def recognise(path: Path) -> bool:
    """An archive lockkit packed: a tar whose first members are a wheelhouse's top folder,
    its manifest.json and SHA256SUMS, which agree
    (:func:`lockkit.wheelhouse.manifest.read_head`)."""
    from lockkit._internal.private import open_regular

    opened = open_regular(path)
    if opened is None:
        return False
    with os.fdopen(opened[0], "rb") as fh:
        try:
            with tarfile.open(fileobj=fh, mode="r:") as tar:
                read_head(tar, path)
        except (LockkitError, tarfile.TarError, OSError, ValueError):
            return False
    return True


def _is_sidecar(path: Path) -> bool:
    """An archive's sha256 that pack wrote (one ``sha256sum`` line)."""
    data = outfile.head(path, 4097)
    return data is not None and bool(_SIDECAR.fullmatch(data.decode("utf-8", "replace")))


class _HashingWriter(io.RawIOBase):
    """A file that hashes what tarfile writes, so the archive is read once (its sha256 is
    known when the last block is written)."""

    def __init__(self, fh: IO[bytes]) -> None:
        super().__init__()
        self.fh, self.digest, self.offset = fh, hashlib.sha256(), 0

    def writable(self) -> bool:
        return True

    def write(self, block: Any) -> int:
        self.digest.update(block)
        self.offset += len(block)
        self.fh.write(block)
        return len(block)

    def tell(self) -> int:
        return self.offset


def named_lock(folder: Path, project_dir: Path) -> Path:
    """The lock *folder*'s manifest names, in *project_dir*'s ``locks/``."""
    name = Manifest.of_folder(folder).data.get("lock")
    if not isinstance(name, str) or not _LOCK_NAME.fullmatch(name):
        raise ArchiveError(f"{folder / MANIFEST}: bad or missing 'lock' {name!r}",
                           hint="rebuild the folder with 'lockkit wheelhouse build'")
    lock = project_dir / "locks" / name
    if not lock.is_file():
        raise UsageError(f"{folder} was built from {name}, which {project_dir / 'locks'} "
                         "does not hold", hint="pass the lock it was built from with --lock")
    return lock


def _check_folder(folder: Path, entries: Mapping[str, Entry]) -> None:
    """Every file listed and present with its size; nothing else but the two meta files."""
    errors, present = [], set()
    for root, dirs, files in os.walk(folder):
        for name in sorted(dirs + files):
            path = Path(root) / name
            rel = path.relative_to(folder).as_posix()
            if path.is_symlink():
                errors.append(f"{rel}: is a symlink")
            elif name in files and not path.is_file():
                errors.append(f"{rel}: not a regular file")
            elif name in files and rel not in (MANIFEST, SUMS):
                present.add(rel)
    errors += [f"{p}: not in the manifest" for p in sorted(present - entries.keys())]
    errors += [f"{p}: listed in the manifest but missing" for p in sorted(entries.keys() - present)]
    for p in sorted(present & entries.keys()):
        size = (folder / p).stat().st_size
        if size != entries[p]["size"]:
            errors.append(f"{p}: {size} bytes, the manifest says {entries[p]['size']}")
    if errors:
        raise ArchiveError(f"{folder}: cannot pack: " + "; ".join(errors),
                           hint="rebuild the folder with 'lockkit wheelhouse build'")


def _info(name: str, size: int, kind: bytes = tarfile.REGTYPE) -> tarfile.TarInfo:
    """A member with nothing of this machine in it: no time, owner or umask."""
    info = tarfile.TarInfo(name)
    info.size, info.mtime, info.type = size, 0, kind
    info.mode = 0o755 if kind == tarfile.DIRTYPE else 0o644
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


def _add_bytes(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    tar.addfile(_info(name, len(data)), io.BytesIO(data))


def _ignore(n: int) -> None:
    pass


class _Hashing:
    """A reader that hashes what tarfile copies, so each file is read once, and reports
    each block's size (progress)."""

    def __init__(self, fh: IO[bytes], on_bytes: Callable[[int], None]) -> None:
        self.fh, self.digest, self.on_bytes = fh, hashlib.sha256(), on_bytes

    def read(self, n: int = -1) -> bytes:
        block = self.fh.read(n)
        self.digest.update(block)
        if block:
            self.on_bytes(len(block))
        return block


def _add_file(tar: tarfile.TarFile, folder: Path, entry: Entry, top: str,
              on_bytes: Callable[[int], None]) -> None:
    path = entry["path"]
    with (folder / path).open("rb") as fh:
        reader = _Hashing(fh, on_bytes)
        try:
            tar.addfile(_info(f"{top}/{path}", entry["size"]), reader)
        except OSError as exc:  # the file shrank after it was checked
            raise ArchiveError(f"{folder}: cannot pack: {path}: {exc}") from None
    if reader.digest.hexdigest() != entry["sha256"]:
        raise ArchiveError(f"{folder}: cannot pack: {path}: sha256 {reader.digest.hexdigest()} "
                           f"does not match the manifest's {entry['sha256']}",
                           hint="rebuild the folder with 'lockkit wheelhouse build'")


# -- unpack -------------------------------------------------------------------------------------

def unpack(archive: Path, out: Path, *, lock: Lock | None = None,
           project_dir: Path | None = None, sha256: str | None = None,
           flag: str | None = None, on_bytes: Callable[[int], None] | None = None) -> Path:
    """Check and extract *archive* into *out*; nothing is left on failure. Return the
    folder written (*out*, or the folder a symlink there points to).

    *sha256* (the sender's, compared out of band) is checked over the whole archive before
    anything is read from it. The platform is the manifest's (:func:`archive_platform`);
    *lock* (the committed lock; platforms from *project_dir*) must be for it, and then
    every file of the extracted folder must be what that lock implies
    (:func:`lockkit.wheelhouse.implied.check_wheelhouse`), checked in the temp sibling before
    anything appears at *out*. *out* is a new or empty folder, or a wheelhouse of the
    archive's platform that lockkit wrote (:func:`lockkit._internal.outdir.check`; *flag*
    names the option it came from). *on_bytes* hears of each block extracted.

    Unpack runs on the receiving machine, often with no network: a refusal's hint is
    never the sender's (``wheelhouse build``) but :data:`RECEIVER_HINT`, unless its raise
    site gave one of its own."""
    try:
        return _unpack(archive, out, lock=lock, project_dir=project_dir, sha256=sha256,
                       flag=flag, on_bytes=on_bytes)
    except (TrustError, ArchiveError) as exc:
        exc.hint = exc.hint or RECEIVER_HINT
        raise


def _unpack(archive: Path, out: Path, *, lock: Lock | None, project_dir: Path | None,
            sha256: str | None, flag: str | None,
            on_bytes: Callable[[int], None] | None) -> Path:
    with _opened(archive) as fh:
        if sha256 is not None:
            _check_sha256(archive, fh, sha256)
        known = load_catalog(project_dir).platforms
        with open_tar(archive, fh) as tar:
            platform = archive_platform(archive, read_head(tar, archive).manifest, known)
        selected = None if lock is None else _for_platform(archive, platform, lock, project_dir)
        out = check(out, kind="wheelhouse", platform=platform, flag=flag)
        out.parent.mkdir(parents=True, exist_ok=True)
        sweep_stale(out)  # a killed unpack's stage
        with interrupt_held() as held:  # no Ctrl-C between the stage and its removal
            stage = temp_dir(out.parent, f".{out.name}.partial-")
        try:
            held.reraise()
            with open_tar(archive, fh) as tar:
                extract(tar, archive, stage, on_bytes or _ignore)
            _check_stage(stage, archive, platform, known, lock, selected)
            swap(stage, out)
        finally:
            shutil.rmtree(stage, ignore_errors=True)
    return out


def _opened(archive: Path) -> IO[bytes]:
    """The archive, opened once: the bytes hashed are the bytes extracted."""
    try:
        return archive.open("rb")
    except OSError as exc:
        raise ArchiveError(f"{archive}: cannot read: {exc.strerror or exc}") from None


def _check_sha256(archive: Path, fh: IO[bytes], expected: str) -> None:
    if not _HEX.fullmatch(expected):
        raise UsageError(f"--sha256 {expected!r}: not a sha256 (64 hex digits)")
    digest = hashlib.sha256()
    for block in iter(lambda: fh.read(1 << 20), b""):
        digest.update(block)
    if digest.hexdigest() != expected.lower():
        raise TrustError(f"{archive}: sha256 {digest.hexdigest()}, expected {expected.lower()} "
                         "(--sha256): not the archive the sender packed",
                         hint="get the archive again from the sender: this copy changed on "
                              "the way, or the sha256 given is another archive's")


def archive_platform(archive: Path, manifest: Manifest, known: dict[str, Platform]) -> str:
    """The archive's platform: its manifest's. A file name ``<name>.wheelhouse.tar`` that
    names another known platform is a claim the archive does not keep: refused, naming
    both (an aarch64 wheelhouse renamed ``linux-cpu.wheelhouse.tar``)."""
    platform = manifest.top_folder.removesuffix("-wheelhouse")
    named = archive.name.removesuffix(".wheelhouse.tar")
    if named != archive.name and named in known and not _same(named, platform, known):
        raise TrustError(f"{archive}: its file name says platform {named!r}, its manifest "
                         f"says {platform!r}",
                         hint="an archive's platform is its manifest's; a renamed archive "
                              "is not unpacked")
    return platform


def _same(named: str, platform: str, known: dict[str, Platform]) -> bool:
    """*named* is *platform*, or one is the other's family name (``alias-of``)."""
    other = known.get(platform)
    return platform in (named, known[named].alias_of) or (other is not None
                                                          and other.alias_of == named)


def _for_platform(archive: Path, platform: str, lock: Lock,
                  project_dir: Path | None) -> list[Selected]:
    """The committed selection of *lock*, once its platform is the archive's."""
    locked = lock.meta.platform
    if locked != platform:
        raise TrustError(f"{archive}: a wheelhouse for {platform!r} (its manifest), and "
                         f"--lock {lock.path} is for {locked!r}",
                         hint=f"pass the lock of {platform!r} (locks/pylock.{platform}.toml), "
                              "or get the archive of your platform from the sender")
    return committed(lock, project_dir)


def _check_stage(stage: Path, archive: Path, platform: str, known: dict[str, Platform],
                 lock: Lock | None, selected: list[Selected] | None) -> None:
    """The extracted folder's own lock names the manifest's platform; with *lock*, every
    file is what that lock implies. Errors name the archive, never the temp folder."""
    problems = platform_problems(stage, platform, known)
    if problems:
        raise TrustError(f"{archive}: " + "; ".join(problems))
    if lock is not None and selected is not None:
        try:
            check_wheelhouse(stage, lock, selected)
        except TrustError as exc:
            raise TrustError(str(exc).replace(str(stage), str(archive))) from None
