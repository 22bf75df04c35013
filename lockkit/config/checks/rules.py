"""The rules the checks' tables share (``[verify.application]``, ``[verify.embedding]``,
``[verify.resume]``): a ``command`` and its ``{placeholders}`` (:func:`command`), a
relative path that stays inside the project or the output folder (:func:`relative_path`),
the ``fingerprints`` of the files a check reads (:func:`fingerprints`), and how the
``{device}`` placeholder is explained (:data:`DEVICE_USE`). Each rule records its
problems on the caller's :class:`~lockkit._internal.keys.KeyReader`, by key path.
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath, PureWindowsPath

from lockkit._internal.keys import KeyReader

__all__ = ["DEVICE_USE", "Check", "Fields", "Reader", "command", "fingerprints",
           "relative_path"]

# the VerifyConfig fields a reader fills, by name (VerifyConfig.of checks each one's type
# against the one its Check declares)
Fields = Mapping[str, object]
# a reader: (the project's root, the [verify] table as read) -> the VerifyConfig fields it
# fills, and every problem (key paths, for the caller to prefix with the file)
Reader = Callable[[Path, Mapping[str, object]], tuple[Fields, list[str]]]


@dataclass(frozen=True, kw_only=True)
class Check:
    """One project check's config side: its ``[verify]`` key, its table's reader and the
    hint each of its problems carries. Its step and its record are verify's
    (``lockkit.verify.checks``, which names the same key)."""

    key: str  # "resume": the [verify.resume] table, and the step that runs it
    read: Reader
    hint: str
    # the VerifyConfig fields its reader fills, and each one's type (VerifyConfig.of checks)
    fields: Mapping[str, type]


# Where the commands run: {device} is the platform's torch device (``cpu``, ``cuda:0`` on a
# CUDA or ROCm platform, ``xpu:0``, ``mps``), filled in by verify (``Options.device``).
DEVICE_USE = "{device} (the platform's torch device: cpu, cuda:0, xpu:0 or mps)"
_SHA256 = re.compile(r"[0-9a-fA-F]{64}")


def command(r: KeyReader, value: object, placeholders: tuple[str, ...], *, use: str,
            needed: tuple[str, ...] = (), why: str = "") -> tuple[str, ...] | None:
    """``command``: a non-empty list of strings whose ``{placeholders}`` are all known
    (else the problem ends with *use*) and include each of *needed* (else with *why*)."""
    if value is None:
        return None
    parts = r.strings("command", value, empty=False)
    if parts is None:
        return None
    try:
        fields = [(f, spec, conv) for part in parts
                  for _, f, spec, conv in string.Formatter().parse(part) if f is not None]
    except ValueError as exc:
        r.fail("command", f"malformed placeholder: {exc} (write {{{{ for a brace)")
        return None
    unknown = [f for f, spec, conv in fields if spec or conv or f not in placeholders]
    missing = [p for p in needed if p not in {f for f, _, _ in fields}]
    if unknown:
        r.fail("command", f"unknown placeholder {{{unknown[0]}}}: {use}")
    elif missing:
        r.fail("command", f"no {{{missing[0]}}} placeholder: {why}")
    return None if unknown or missing else parts


def relative_path(r: KeyReader, key: str, value: object, root: Path | None) -> str | None:
    """A relative path that stays inside the project at *root* (None: inside the output
    folder, which does not exist yet): the check must run from a copy."""
    text = r.text(key, value)
    if text is None:
        return None
    escapes = ".." in PurePosixPath(text.replace("\\", "/")).parts
    absolute = PurePosixPath(text).is_absolute() or PureWindowsPath(text).is_absolute()
    if not escapes and not absolute and root is not None:
        escapes = not (root / text).resolve().is_relative_to(root)
    if escapes or absolute:
        where = "project" if root is not None else "output folder"
        r.fail(key, f"expected a relative path inside the {where}, got {text!r}")
        return None
    return text


def fingerprints(r: KeyReader, value: object, root: Path, read: list[str],
                 reader: str) -> tuple[tuple[str, str], ...]:
    """``fingerprints``: 'path' = 'sha256 hex digest', with an entry for each file the
    check reads (*read*; *reader* says who reads it)."""
    if value is None:
        return ()
    if not isinstance(value, dict) or not value:
        r.fail("fingerprints", "expected a table of 'path' = 'sha256 hex digest'")
        return ()
    pairs = []
    for path, digest in value.items():
        if relative_path(r, f'fingerprints."{path}"', path, root) is None:
            continue
        if not isinstance(digest, str) or not _SHA256.fullmatch(digest):
            r.fail(f'fingerprints."{path}"', f"expected 64 hex digits, got {digest!r}")
            continue
        pairs.append((path, digest.lower()))
    for path in read:
        if path not in value:
            r.fail("fingerprints", f"no entry for {path!r}: {reader} reads it, so it needs "
                                   "an identity")
    return tuple(pairs)


