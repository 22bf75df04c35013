"""A wheelhouse folder as one reproducible, checked tar.

``pack`` writes an uncompressed POSIX (pax) tar -- wheels are already
compressed -- with one top-level folder, ``<platform>-wheelhouse/`` (so ``tar xf``
makes one folder), whose members are ``manifest.json``, ``SHA256SUMS`` and then
every file the manifest lists, sorted by path, each folder just before its first
file; fixed times and owners, modes 0755/0644: the same folder always gives the
same bytes.

``unpack`` treats the archive as hostile: it reads the manifest first, refuses
any member outside the top folder, and any that is not a plain file listed there
(or a folder of one) with a safe relative path, and checks sizes and hashes while
streaming into a temp sibling of the destination, which is renamed into place
only when every check passed. An archive of lockkit before the top folder
(``manifest.json`` first) is still read.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import shutil
import tarfile
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import IO, Any

from packaging.utils import canonicalize_name

from lockkit._internal.fs import temp_dir, temp_file
from lockkit.errors import ArchiveError, UsageError
from lockkit.wheelhouse.offline import install_hint
from lockkit._internal.outdir import check, swap
from lockkit.wheelhouse.trust import Selected, TrustError, check_folder

__all__ = ["ArchiveError", "check_against", "install_hint", "named_lock", "pack", "read_manifest",
           "top_folder", "unpack"]

MANIFEST = "manifest.json"
SUMS = "SHA256SUMS"
_META_MAX = 64 << 20  # manifest.json and SHA256SUMS are read into memory
_CHUNK = 1 << 20
_SHA256 = re.compile(r"[0-9a-f]{64}")
_PLATFORM = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_LOCK_NAME = re.compile(r"pylock\.[A-Za-z0-9][A-Za-z0-9._-]*\.toml")


def _unsafe(name: str) -> str | None:
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


def read_manifest(path: Path) -> dict[str, Any]:
    """The validated manifest of a wheelhouse folder or of a packed archive."""
    if path.is_dir():
        return _folder_manifest(path)[0]
    with _open_tar(path) as tar:
        return _read_meta(tar, path)[0]


def _folder_manifest(folder: Path) -> tuple[dict[str, Any], bytes]:
    try:
        raw = (folder / MANIFEST).read_bytes()
    except FileNotFoundError:
        raise ArchiveError(f"{folder}: no {MANIFEST}; not a wheelhouse folder",
                           hint="build it with 'lockkit wheelhouse build'") from None
    return _parse_manifest(raw, folder / MANIFEST), raw


def _parse_manifest(raw: bytes, where: Path) -> dict[str, Any]:
    try:
        data = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ArchiveError(f"{where}: not valid JSON: {exc}") from None
    files = data.get("files") if isinstance(data, dict) else None
    if not isinstance(files, list):
        raise ArchiveError(f"{where}: no 'files' list")
    errors: list[str] = []
    seen: set[str] = set()
    for i, entry in enumerate(files):
        errors += [f"files[{i}]: {e}" for e in _entry_errors(entry, seen)]
    errors += [f"path {p!r}: both a file and a folder" for p in sorted(_folders(seen) & seen)]
    if errors:
        raise ArchiveError(f"{where}: " + "; ".join(errors))
    return data


def _entry_errors(entry: Any, seen: set[str]) -> list[str]:
    if not isinstance(entry, dict):
        return ["not an object"]
    path, size, sha = entry.get("path"), entry.get("size"), entry.get("sha256")
    if not isinstance(path, str):
        return ["no 'path'"]
    errors = []
    why = _unsafe(path)
    if why or path in (MANIFEST, SUMS) or path in seen:
        errors.append(f"path {path!r}: {why or 'reserved or listed twice'}")
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        errors.append(f"{path}: bad size {size!r}")
    if not isinstance(sha, str) or not _SHA256.fullmatch(sha):
        errors.append(f"{path}: bad sha256 {sha!r}")
    seen.add(path)
    return errors


def top_folder(manifest: dict[str, Any], where: Path) -> str:
    """The archive's one top-level folder, ``<platform>-wheelhouse``."""
    platform = manifest.get("platform")
    if not isinstance(platform, str) or not _PLATFORM.fullmatch(platform):
        raise ArchiveError(f"{where}: bad or missing 'platform' {platform!r}")
    return f"{platform}-wheelhouse"


def _folders(paths: Any) -> set[str]:
    """Every folder above *paths* (``simple``, ``simple/torch``), the top one excluded."""
    return {p.as_posix() for path in paths for p in PurePosixPath(path).parents
            if p.as_posix() != "."}


def _listed(manifest: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f["path"]: f for f in manifest["files"]}


def _sums(listed: dict[str, dict[str, Any]]) -> bytes:
    return "".join(f"{listed[p]['sha256']}  {p}\n" for p in sorted(listed)).encode()


# -- pack ---------------------------------------------------------------------------------------

def pack(folder: Path, out: Path, *, lock: Path | None = None,
         project_dir: Path | None = None,
         on_bytes: Callable[[int], None] | None = None) -> Path:
    """Write *folder* as one reproducible tar at *out*; nothing is left at *out* on failure.

    With *lock* (the committed lock file; its platform's files from *project_dir*), the
    folder must be that lock's wheelhouse (:func:`check_against`): a manifest only proves
    that the folder agrees with itself. ``lockkit wheelhouse pack`` always gives one.
    *on_bytes* hears of each file's bytes as they are written (a progress bar)."""
    manifest, manifest_bytes = _folder_manifest(folder)
    listed = _listed(manifest)
    _check_folder(folder, listed)
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
                _add_bytes(tar, f"{top}/{SUMS}", _sums(listed))
                made: set[str] = set()
                for path in sorted(listed):
                    for sub in sorted(_folders([path]) - made):  # parents before children
                        tar.addfile(_info(f"{top}/{sub}", 0, tarfile.DIRTYPE))
                        made.add(sub)
                    _add_file(tar, folder, listed[path], top, on_bytes or _ignore)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    return out


def named_lock(folder: Path, project_dir: Path) -> Path:
    """The lock *folder*'s manifest names, in *project_dir*'s ``locks/``."""
    name = _folder_manifest(folder)[0].get("lock")
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
    those wheels and the lock give (:func:`lockkit.wheelhouse.build.texts_of`); it lists nothing
    else but the SBOM and ``tools/`` (whose requirements pin exactly its wheels). A folder
    whose files were edited to drop a wheel, add an index or an unhashed entry is refused,
    naming each file."""
    from lockkit.wheelhouse import build as wheelhouse
    from lockkit._internal.compat import tomllib
    from lockkit.wheelhouse.trust import committed

    raw = lock.read_bytes()
    data = tomllib.loads(raw.decode("utf-8"))
    sha = hashlib.sha256(raw).hexdigest()
    platform = data.get("tool", {}).get("lockkit", {}).get("platform")
    if manifest.get("lock_sha256") != sha or manifest.get("platform") != platform:
        raise TrustError(f"{folder}: not built from {lock} (its manifest names sha256 "
                         f"{str(manifest.get('lock_sha256'))[:12]} for "
                         f"{manifest.get('platform')!r}; the lock is {sha[:12]} for "
                         f"{platform!r})")
    checked = check_folder(folder, committed(lock, project_dir), manifest)
    listed = _listed(manifest)
    problems, records = [], []
    for c in checked:
        entry = listed[c.path.name]  # check_folder found it listed (built) or at the top
        if entry.get("kind") != "wheel" or entry["sha256"] != c.sha256 or \
                entry.get("package") != c.package or entry.get("version") != c.version:
            problems.append(f"{c.path.name}: its manifest entry is not the lock's")
        records.append(wheelhouse.FileRecord(
            path=c.path.name, size=entry["size"], sha256=c.sha256, package=c.package,
            version=c.version, origin="", source="", built_from=entry.get("built_from")))
    tools = {p: e for p, e in listed.items() if p.startswith("tools/")}
    entries = {str(canonicalize_name(str(p.get("name")))): p for p in data.get("packages", [])}
    texts = wheelhouse.texts_of(data, entries, records, platform=str(platform),
                                lock=str(manifest.get("lock")), lock_sha256=sha,
                                tools=bool(tools))
    for rel, text in texts.items():
        if rel not in listed or (folder / rel).read_bytes() != text.encode("utf-8"):
            problems.append(f"{rel}: not what the lock and the wheels give")
    known = {*texts, *(c.path.name for c in checked), *tools, "sbom.cdx.json"}
    problems += [f"{p}: not a file of this lock's wheelhouse" for p in sorted(listed)
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


def _check_folder(folder: Path, listed: dict[str, dict[str, Any]]) -> None:
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
    errors += [f"{p}: not in the manifest" for p in sorted(present - listed.keys())]
    errors += [f"{p}: listed in the manifest but missing" for p in sorted(listed.keys() - present)]
    for p in sorted(present & listed.keys()):
        size = (folder / p).stat().st_size
        if size != listed[p]["size"]:
            errors.append(f"{p}: {size} bytes, the manifest says {listed[p]['size']}")
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
        with _open_tar(archive) as tar:
            manifest = _extract(tar, archive, stage, on_bytes or _ignore)
        if lock is not None:
            try:
                check_folder(stage, lock, manifest)
            except TrustError as exc:
                raise TrustError(str(exc).replace(str(stage), str(archive), 1)) from None
        swap(stage, out)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    return out


def _open_tar(archive: Path) -> tarfile.TarFile:
    try:
        return tarfile.open(archive, mode="r:")
    except (tarfile.TarError, OSError) as exc:
        raise ArchiveError(f"{archive}: not a readable tar archive: {exc}") from None


def _extract(tar: tarfile.TarFile, archive: Path, stage: Path,
             on_bytes: Callable[[int], None]) -> dict[str, Any]:
    manifest, manifest_bytes, sums, prefix = _read_meta(tar, archive)
    listed = _listed(manifest)
    folders = _folders(listed)
    (stage / MANIFEST).write_bytes(manifest_bytes)
    (stage / SUMS).write_bytes(sums)
    done: set[str] = set()
    while (member := _next(tar, archive)) is not None:
        rel = _inside(member, prefix, archive)
        if member.type == tarfile.DIRTYPE and rel in folders and rel not in done:
            (stage / rel).mkdir(parents=True, exist_ok=True)  # the umask's mode, not the tar's
        else:
            entry = _check_member(member, rel, archive, listed, done)
            _write_member(tar, member, archive, entry, stage / rel, on_bytes)
        done.add(rel)
    missing = sorted(listed.keys() - done)  # folders in done are never listed
    if missing:
        raise ArchiveError(f"{archive}: listed in the manifest but not in the archive: "
                           + ", ".join(missing), hint="the archive may be truncated")
    return manifest


def _next(tar: tarfile.TarFile, archive: Path) -> tarfile.TarInfo | None:
    try:
        return tar.next()
    except (tarfile.TarError, OSError) as exc:
        raise ArchiveError(f"{archive}: damaged or truncated tar: {exc}") from None


def _read_meta(tar: tarfile.TarFile,
               archive: Path) -> tuple[dict[str, Any], bytes, bytes, str]:
    """The top folder, then manifest.json and SHA256SUMS in it, and that they agree; the
    prefix of every later member (``""`` for an archive from before the top folder)."""
    member, prefix = _next(tar, archive), ""
    blobs: list[bytes] = []
    if member is not None and member.type == tarfile.DIRTYPE:
        why = _unsafe(member.name) or ("a nested folder" if "/" in member.name else None)
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
    manifest = _parse_manifest(blobs[0], archive / MANIFEST)
    if blobs[1] != _sums(_listed(manifest)):
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


_KINDS = {tarfile.SYMTYPE: "symlink", tarfile.LNKTYPE: "hard link", tarfile.DIRTYPE: "directory",
          tarfile.CHRTYPE: "character device", tarfile.BLKTYPE: "block device",
          tarfile.FIFOTYPE: "FIFO", tarfile.CONTTYPE: "contiguous file",
          tarfile.GNUTYPE_SPARSE: "sparse file"}


def _check_member(member: tarfile.TarInfo, name: str, archive: Path,
                  listed: dict[str, dict[str, Any]], done: set[str]) -> dict[str, Any]:
    """The manifest entry for *member* (at *name* in the top folder), or an error saying
    why it may not be extracted."""
    why = _unsafe(name)
    if why is None and member.type != tarfile.REGTYPE:
        why = f"not a regular file ({_KINDS.get(member.type, f'type {member.type!r}')})"
    if why is None and (name in done or name in (MANIFEST, SUMS)):
        why = "appears twice"
    if why is None and name not in listed:
        why = "not in the manifest"
    if why is None and member.size != listed[name]["size"]:
        why = f"{member.size} bytes, the manifest says {listed[name]['size']}"
    if why is not None:
        raise ArchiveError(f"{archive}: refusing member {member.name!r}: {why}")
    return listed[name]


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
