"""A wheelhouse's ``manifest.json`` read as untrusted data, and the names it may hold.

The manifest lists every file of the folder (``path``, ``size``, ``sha256``); ``SHA256SUMS``
is derived from it (:func:`sums`). Both the folder that ``pack`` reads and the archive
that ``unpack`` reads are checked against these rules: a path is relative, normalized, free
of control characters, listed once, never a file and a folder at once, never one of the
two meta files. :mod:`lockkit.wheelhouse.meta` writes the manifest; this module reads it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path, PurePosixPath
from typing import Any

from lockkit._internal.parse import parse_json
from lockkit.errors import ArchiveError

__all__ = ["MANIFEST", "SUMS", "folder_manifest", "folders_above", "listed", "parse_manifest",
           "sums", "top_folder", "unsafe_path"]

MANIFEST = "manifest.json"
SUMS = "SHA256SUMS"
_SHA256 = re.compile(r"[0-9a-f]{64}")
_PLATFORM = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


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


def folder_manifest(folder: Path) -> tuple[dict[str, Any], bytes]:
    """The validated manifest of the wheelhouse *folder*, and its bytes."""
    try:
        raw = (folder / MANIFEST).read_bytes()
    except FileNotFoundError:
        raise ArchiveError(f"{folder}: no {MANIFEST}; not a wheelhouse folder",
                           hint="build it with 'lockkit wheelhouse build'") from None
    return parse_manifest(raw, folder / MANIFEST), raw


def parse_manifest(raw: bytes, where: Path) -> dict[str, Any]:
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
    errors += [f"path {p!r}: both a file and a folder" for p in sorted(folders_above(seen) & seen)]
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
    why = unsafe_path(path)
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


def folders_above(paths: Any) -> set[str]:
    """Every folder above *paths* (``simple``, ``simple/torch``), the top one excluded."""
    return {p.as_posix() for path in paths for p in PurePosixPath(path).parents
            if p.as_posix() != "."}


def listed(manifest: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The manifest's entries by path."""
    return {f["path"]: f for f in manifest["files"]}


def sums(entries: dict[str, dict[str, Any]]) -> bytes:
    """``SHA256SUMS`` of the listed *entries*, sorted by path (``sha256sum -c`` reads it)."""
    return "".join(f"{entries[p]['sha256']}  {p}\n" for p in sorted(entries)).encode()
