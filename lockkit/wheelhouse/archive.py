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
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import shutil
import tarfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from packaging.utils import canonicalize_name

from lockkit._internal.fs import temp_dir, temp_file
from lockkit._internal.outdir import check, swap
from lockkit.errors import ArchiveError, UsageError
from lockkit.wheelhouse.manifest import (
    MANIFEST,
    SUMS,
    folder_manifest,
    folders_above,
    listed,
    sums,
    top_folder,
)
from lockkit.wheelhouse.members import extract, open_tar, read_meta
from lockkit.wheelhouse.offline import install_hint
from lockkit.wheelhouse.trust import Selected, TrustError, check_folder

__all__ = ["ArchiveError", "check_against", "install_hint", "named_lock", "pack", "read_manifest",
           "unpack"]

_LOCK_NAME = re.compile(r"pylock\.[A-Za-z0-9][A-Za-z0-9._-]*\.toml")


def read_manifest(path: Path) -> dict[str, Any]:
    """The validated manifest of a wheelhouse folder or of a packed archive."""
    if path.is_dir():
        return folder_manifest(path)[0]
    with open_tar(path) as tar:
        return read_meta(tar, path)[0]


# -- pack ---------------------------------------------------------------------------------------

def pack(folder: Path, out: Path, *, lock: Path | None = None,
         project_dir: Path | None = None,
         on_bytes: Callable[[int], None] | None = None) -> Path:
    """Write *folder* as one reproducible tar at *out*; nothing is left at *out* on failure.

    With *lock* (the committed lock file; its platform's files from *project_dir*), the
    folder must be that lock's wheelhouse (:func:`check_against`): a manifest only proves
    that the folder agrees with itself. ``lockkit wheelhouse pack`` always gives one.
    *on_bytes* hears of each file's bytes as they are written (a progress bar)."""
    manifest, manifest_bytes = folder_manifest(folder)
    entries = listed(manifest)
    _check_folder(folder, entries)
    if lock is not None:
        check_against(folder, manifest, lock, project_dir)
    top = top_folder(manifest, folder / MANIFEST)
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = temp_file(out.parent, f".{out.name}.", ".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            with tarfile.open(fileobj=fh, mode="w", format=tarfile.PAX_FORMAT) as tar:
                tar.addfile(_info(top, 0, tarfile.DIRTYPE))
                _add_bytes(tar, f"{top}/{MANIFEST}", manifest_bytes)
                _add_bytes(tar, f"{top}/{SUMS}", sums(entries))
                made: set[str] = set()
                for path in sorted(entries):
                    for sub in sorted(folders_above([path]) - made):  # parents before children
                        tar.addfile(_info(f"{top}/{sub}", 0, tarfile.DIRTYPE))
                        made.add(sub)
                    _add_file(tar, folder, entries[path], top, on_bytes or _ignore)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    return out


def named_lock(folder: Path, project_dir: Path) -> Path:
    """The lock *folder*'s manifest names, in *project_dir*'s ``locks/``."""
    name = folder_manifest(folder)[0].get("lock")
    if not isinstance(name, str) or not _LOCK_NAME.fullmatch(name):
        raise ArchiveError(f"{folder / MANIFEST}: bad or missing 'lock' {name!r}",
                           hint="rebuild the folder with 'lockkit wheelhouse build'")
    lock = project_dir / "locks" / name
    if not lock.is_file():
        raise UsageError(f"{folder} was built from {name}, which {project_dir / 'locks'} "
                         "does not hold", hint="pass the lock it was built from with --lock")
    return lock


def check_against(folder: Path, manifest: dict[str, Any], lock: Path,
                  project_dir: Path | None) -> None:
    """*folder* is the wheelhouse ``lockkit wheelhouse build`` writes from *lock*, every
    file derived again: the manifest names that lock's sha256 and platform; its wheels are
    the lock's selection, each hashed (:func:`lockkit.wheelhouse.trust.check_folder`); its
    ``pylock.toml``, ``requirements.txt`` and ``simple/`` pages are, byte for byte, what
    those wheels and the lock give (:func:`lockkit.wheelhouse.meta.texts_of`); it lists nothing
    else but the SBOM and ``tools/`` (whose requirements pin exactly its wheels). A folder
    whose files were edited to drop a wheel, add an index or an unhashed entry is refused,
    naming each file."""
    from lockkit._internal.parse import parse_toml
    from lockkit.wheelhouse.meta import FileRecord, texts_of
    from lockkit.wheelhouse.trust import committed

    raw = lock.read_bytes()
    data = parse_toml(raw.decode("utf-8"), lock)
    sha = hashlib.sha256(raw).hexdigest()
    platform = data.get("tool", {}).get("lockkit", {}).get("platform")
    if manifest.get("lock_sha256") != sha or manifest.get("platform") != platform:
        raise TrustError(f"{folder}: not built from {lock} (its manifest names sha256 "
                         f"{str(manifest.get('lock_sha256'))[:12]} for "
                         f"{manifest.get('platform')!r}; the lock is {sha[:12]} for "
                         f"{platform!r})")
    checked = check_folder(folder, committed(lock, project_dir), manifest)
    files = listed(manifest)
    problems, records = [], []
    for c in checked:
        entry = files[c.path.name]  # check_folder found it listed (built) or at the top
        if entry.get("kind") != "wheel" or entry["sha256"] != c.sha256 or \
                entry.get("package") != c.package or entry.get("version") != c.version:
            problems.append(f"{c.path.name}: its manifest entry is not the lock's")
        records.append(FileRecord(
            path=c.path.name, size=entry["size"], sha256=c.sha256, package=c.package,
            version=c.version, origin="", source="", built_from=entry.get("built_from")))
    tools = {p: e for p, e in files.items() if p.startswith("tools/")}
    entries = {str(canonicalize_name(str(p.get("name")))): p for p in data.get("packages", [])}
    texts = texts_of(data, entries, records, platform=str(platform),
                     lock=str(manifest.get("lock")), lock_sha256=sha, tools=bool(tools))
    for rel, text in texts.items():
        if rel not in files or (folder / rel).read_bytes() != text.encode("utf-8"):
            problems.append(f"{rel}: not what the lock and the wheels give")
    known = {*texts, *(c.path.name for c in checked), *tools, "sbom.cdx.json"}
    problems += [f"{p}: not a file of this lock's wheelhouse" for p in sorted(files)
                 if p not in known]
    problems += _tools_problems(folder, tools)
    if problems:
        raise TrustError(f"{folder} is not the wheelhouse of {lock}: " + "; ".join(problems))


def _tools_problems(folder: Path, tools: dict[str, dict[str, Any]]) -> list[str]:
    """``tools/``: wheels by their plain names, and a requirements.txt whose lines (its
    comments aside) pin exactly those wheels by their listed hashes."""
    if not tools:
        return []
    from lockkit.wheelhouse.trust import file_name_problem

    wheels = {p: e for p, e in tools.items() if p != "tools/requirements.txt"}
    problems = [f"{p}: not a wheel of tools/" for p, e in wheels.items()
                if e.get("kind") != "tool" or file_name_problem(p.removeprefix("tools/"))
                or not isinstance(e.get("package"), str)]
    if "tools/requirements.txt" not in tools:
        return [*problems, "tools/requirements.txt: missing"]
    pins = sorted(f"{e.get('package')}=={e.get('version')} --hash=sha256:{e['sha256']}"
                  for e in wheels.values())
    lines = (folder / "tools" / "requirements.txt").read_text(encoding="utf-8").splitlines()
    if sorted(ln for ln in lines if not ln.startswith("#")) != pins:
        problems.append("tools/requirements.txt: not the pins of the tools/ wheels")
    return problems


def _check_folder(folder: Path, entries: dict[str, dict[str, Any]]) -> None:
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


def _add_file(tar: tarfile.TarFile, folder: Path, entry: dict[str, Any], top: str,
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

def unpack(archive: Path, out: Path, *, lock: list[Selected] | None = None,
           flag: str | None = None, on_bytes: Callable[[int], None] | None = None) -> Path:
    """Check and extract *archive* into *out*; nothing is left on failure. Return the
    folder written (*out*, or the folder a symlink there points to).

    *out* is a new or empty folder, or a wheelhouse of the archive's platform that lockkit
    wrote (:func:`lockkit._internal.outdir.check`; *flag* names the option it came from), checked
    before anything is extracted. With *lock*, the extracted wheels must also be the
    committed lock's, by hash (checked in the temp sibling, before anything appears at
    *out*). *on_bytes* hears of each block extracted (a progress bar)."""
    manifest = read_manifest(archive)
    top_folder(manifest, archive / MANIFEST)  # a platform name, or the archive is refused
    out = check(out, kind="wheelhouse", platform=manifest["platform"], flag=flag)
    out.parent.mkdir(parents=True, exist_ok=True)
    stage = temp_dir(out.parent, f".{out.name}.partial-")
    try:
        with open_tar(archive) as tar:
            manifest = extract(tar, archive, stage, on_bytes or _ignore)
        if lock is not None:
            try:
                check_folder(stage, lock, manifest)
            except TrustError as exc:
                raise TrustError(str(exc).replace(str(stage), str(archive), 1)) from None
        swap(stage, out)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    return out

