"""``tools/requirements.txt``: written with the resolution key of the tools it pins, and
read back from the folder a build replaces as fresh data.

A build into a folder whose ``tools/requirements.txt`` names the same key takes its pins
(names, versions, sha256) instead of resolving again (:func:`kept_pins`), but only when it
and the manifest are regular files of this user's that nobody else can write, agree with
each other, and every name passes the rule for a fresh name; anything else resolves again
(see :mod:`lockkit.wheelhouse.tools`).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from lockkit import __version__
from lockkit._internal.parse import parse_json
from lockkit._internal.private import read_regular
from lockkit.wheelhouse.trust import file_name_problem

__all__ = ["FOLDER", "Tool", "Toolset", "kept_pins", "requirements_text"]

FOLDER = "tools"
_PIN = re.compile(r"([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+) --hash=sha256:([0-9a-f]{64})")
_KEY_LINE = "# resolution: "


@dataclass(frozen=True, kw_only=True)
class Tool:
    """One wheel for ``tools/``, verified and waiting in the cache."""

    package: str
    version: str
    filename: str
    sha256: str
    path: Path    # the checked file in the cache
    source: str   # the official URL, or how lockkit's own wheel was made


@dataclass(frozen=True, kw_only=True)
class Toolset:
    """Every tool for one platform, lockkit's own wheel first."""

    platform: str
    python: str
    tools: tuple[Tool, ...]
    key: str  # the resolution key (lockkit.wheelhouse.tools), written in tools/requirements.txt


def kept_pins(folder: Path, key: str,
              platform: str) -> list[tuple[str, str, Mapping[str, Any]]] | None:
    """(package, version, manifest entry) of every pin of *folder*'s tools, or None.

    Read back as fresh data: both files regular, this user's and writable by nobody else
    (:func:`lockkit._internal.private.read_regular`); the manifest of *platform*, listing
    ``tools/requirements.txt`` with its sha256; the requirements of *key*, each pin a
    wheel the manifest lists under ``tools/`` with the pin's hash, its name a wheel's of
    that package and version, its source an official URL (lockkit's own wheel aside);
    and every tool the manifest lists pinned."""
    raw, reqs = read_regular(folder / "manifest.json"), read_regular(folder / FOLDER /
                                                                     "requirements.txt")
    if raw is None or reqs is None:
        return None
    try:
        manifest = parse_json(raw, folder / "manifest.json")
        files = {str(f["path"]): f for f in manifest["files"] if f.get("kind") == "tool"}
        listed = files.pop(f"{FOLDER}/requirements.txt")["sha256"]
        text = reqs.decode("utf-8")
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
    lines = text.splitlines()
    if manifest.get("platform") != platform or listed != hashlib.sha256(reqs).hexdigest() \
            or f"{_KEY_LINE}{key}" not in lines:
        return None
    by_sha = {f.get("sha256"): f for f in files.values()}
    pins = []
    for line in (ln for ln in lines if not ln.startswith("#")):
        match = _PIN.fullmatch(line)
        entry = by_sha.pop(match.group(3), None) if match else None
        if match is None or entry is None or not _kept_entry(entry, *match.group(1, 2)):
            return None
        pins.append((str(canonicalize_name(match.group(1))), match.group(2), entry))
    return pins if pins and not by_sha else None


def _kept_entry(entry: Mapping[str, Any], package: str, version: str) -> bool:
    """A manifest entry of a tool wheel, by the rules a fresh one follows."""
    path, source, size = entry.get("path"), entry.get("source"), entry.get("size")
    if not isinstance(path, str) or not isinstance(size, int) or \
            not path.startswith(f"{FOLDER}/") or not path.endswith(".whl"):
        return False
    name = path.removeprefix(f"{FOLDER}/")
    try:
        parsed, parsed_version, _, _ = parse_wheel_filename(name)
    except InvalidWheelFilename:
        return False
    from lockkit._internal.redact import strip_credentials

    official = canonicalize_name(package) == "lockkit" or (
        isinstance(source, str) and source.startswith(("https://", "http://"))
        and strip_credentials(source) == source)
    try:
        same = parsed == canonicalize_name(package) and parsed_version == Version(version)
    except InvalidVersion:
        return False
    return file_name_problem(name) is None and official and same


def requirements_text(toolset: Toolset) -> str:
    """``tools/requirements.txt``: how to install, the resolution key, every tool pinned."""
    lines = [f"# lockkit {__version__} and its dependencies for {toolset.platform} "
             f"(Python {toolset.python}): not the application's environment",
             "# on the offline machine, any pip:",
             f"#   python{toolset.python} -m venv v && v/bin/pip install --no-index "
             "--find-links <this folder> "
             "--require-hashes -r requirements.txt",
             "#   v/bin/lockkit verify --wheelhouse <the wheelhouse> --project <project>",
             f"{_KEY_LINE}{toolset.key}"]
    lines += [f"{t.package}=={t.version} --hash=sha256:{t.sha256}"
              for t in sorted(toolset.tools, key=lambda t: t.package)]
    return "\n".join(lines) + "\n"
