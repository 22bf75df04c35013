"""A warm wheelhouse rebuild from the build memo: the same folder, with almost no imports.

``wheelhouse build`` parses the lock (``packaging.pylock``), selects the platform's files,
renders the SBOM and writes the folder: about 0.1 s before a single wheel is linked.
When a build finishes with every file a wheel, a fresh lock and no ``tools/``, the cache
keeps what it wrote in ``<cache>/plan/<lock sha256>-<tag>.json``: the wheels (name,
sha256, size, package, version) and the text of every other file of the folder
(pylock.toml, requirements.txt, simple/, sbom.cdx.json, manifest.json).

The next build of the same lock bytes takes the memo only when everything the folder's
content was derived from is as it was then, byte for byte:

- the lock (the memo is found by its sha256) and the project folder and platform name;
- the config (``lockkit.toml`` and ``pyproject.toml`` of the project folder), the
  requirement files compile read (the lock's ``inputs`` labels, as ``compile --check``
  reads them), and every platform file (shipped and the project's, with their listing):
  so the lock is still fresh, and still selects the same files;
- the flags that change the project (``--mirror``, ``--index-url``), lockkit's version,
  ``SOURCE_DATE_EPOCH`` and the installed cyclonedx-python-lib (the SBOM's text);
- every wheel's cache blob, by its stamp (:func:`lockkit.cachelayout.stamped`): the bytes
  hashed to its name when it landed and were not written since;
- and the memo itself: every hash it would write is the lock's (or a hash of its other
  texts), every name stays inside the folder (:func:`_from_lock`).

Anything else, a missing or unreadable memo included, is a miss, and the full build
runs (and writes the memo again). The folder is written as the full build writes it: a
stage folder beside it, hard links to the blobs, then one rename.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from lockkit import __version__
from lockkit.cachelayout import stamped, sweep_partials
from lockkit.outdir import OLD, STAGE, swap, sweep_stale

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (see lockkit.cli)
if TYPE_CHECKING:
    from typing import Any

try:  # the interpreter's own SHA-256: hashlib loads OpenSSL first (2 ms of a 30 ms rebuild)
    from _sha2 import sha256  # type: ignore[import-not-found,unused-ignore]  # 3.12+
except ImportError:
    try:
        from _sha256 import sha256  # type: ignore[import-not-found,no-redef,unused-ignore]
    except ImportError:  # pragma: no cover - an interpreter built without them
        from hashlib import sha256  # type: ignore[assignment,unused-ignore]

__all__ = ["OLD", "STAGE", "Rebuilt", "remember", "swap", "sweep_stale", "warm"]

_SCHEMA = 1
_ENV = ("SOURCE_DATE_EPOCH",)  # what the written text reads from the environment


class Rebuilt:
    """A folder rebuilt from the memo; *files* are (package, version, file name, size).
    (A plain class: a NamedTuple or a dataclass costs the rebuild's start-up.)"""

    __slots__ = ("files", "folder")

    def __init__(self, folder: Path, files: list[tuple[str, str, str, int]]) -> None:
        self.folder, self.files = folder, files


def warm(*, project: Path | None, platform: str, out: Path | None, cache: Path,
         find_links: Sequence[Path], flags: Mapping[str, Any]) -> Rebuilt | None:
    """Rebuild the wheelhouse of *platform* from the memo, or None when the memo does not
    hold (the caller then runs the full build, which says what is wrong, if anything)."""
    found = _project_root(project)
    if found is None:
        return None
    root, config_seen = found
    lock = root / "locks" / f"pylock.{platform}.toml"
    try:
        raw = lock.read_bytes()
        sha = sha256(raw).hexdigest()
        memo = json.loads((cache / "plan" / _memo_name(sha, lock, platform))
                          .read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not _holds(memo, root, lock, platform, flags, config_seen) or \
            not _from_lock(memo, raw, sha) or not all(Path(f).is_dir() for f in find_links):
        return None
    blobs = [stamped(cache, sha, size) for _, sha, size, _, _ in memo["wheels"]]
    if None in blobs:
        return None
    sweep_partials(cache)
    folder = (out or root / "wheelhouse" / platform).absolute()
    sweep_stale(folder)
    if not _write(folder, [(b, w[0]) for b, w in zip(blobs, memo["wheels"], strict=True)
                           if b is not None], memo["texts"]):
        return None
    return Rebuilt(folder, [(pkg, version, name, size)
                            for name, _, size, pkg, version in memo["wheels"]])


def _project_root(given: Path | None) -> tuple[Path, str | None] | None:
    """The project folder as ``config.load_project`` finds it, and the config file the walk
    met there when it has to be the memo's (a pyproject.toml, whose ``[tool.lockkit]``
    table only a parse would show); None where only the full path can tell."""
    if given is not None:
        root = given.resolve()
        return (root, None) if root.is_dir() else None
    start = Path.cwd().resolve()
    for folder in (start, *start.parents):
        if (folder / "lockkit.toml").is_file():
            return folder, None
        if (folder / "pyproject.toml").is_file():
            return folder, str(folder / "pyproject.toml")
        if (folder / ".git").exists():
            break
    return start, None


def _memo_name(lock_sha256: str, lock: Path, platform: str) -> str:
    """The lock's sha256, and a tag of where it is: two checkouts of one lock sharing the
    cache keep a memo each."""
    where = sha256(f"{lock}\0{platform}".encode()).hexdigest()[:16]
    return f"{lock_sha256}-{where}.json"


def _holds(memo: Any, root: Path, lock: Path, platform: str, flags: Mapping[str, Any],
           config_seen: str | None) -> bool:
    try:
        same = (memo["schema"] == _SCHEMA and memo["lockkit"] == __version__
                and memo["root"] == str(root) and memo["lock"] == str(lock)
                and memo["platform"] == platform and memo["flags"] == dict(flags)
                and memo["env"] == _env()
                and (config_seen is None or memo["config"] == config_seen)
                and memo["shipped"] == str(_shipped_dir())
                and all(os.path.isdir(p) for p in memo["libraries"]))
        return same and memo["inputs_sha256"] == _inputs_digest(memo["inputs"],
                                                                memo["folders"])
    except (KeyError, TypeError):
        return False


# What a wheelhouse holds besides its wheels (wheelhouse._write_meta), and a wheel's name.
_TEXT = re.compile(r"pylock\.toml|requirements\.txt|sbom\.cdx\.json|manifest\.json"
                   r"|simple/(?:[a-z0-9][a-z0-9._-]*/)?index\.html")
_WHEEL = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+!-]*\.whl")
_SHA = re.compile(r"(?<![0-9a-f])[0-9a-f]{64}(?![0-9a-f])")


def _from_lock(memo: Any, raw: bytes, lock_sha256: str) -> bool:
    """Whether every hash the memo would write is the committed lock's: each wheel's
    sha256 is in the lock, and each one in the texts is in the lock, is the lock's own, or
    is another text's (the manifest lists them). The cache is writable by its owner; a
    memo made up to suit other wheels is refused here, as forged blobs are caught where
    the folder is used (``--require-hashes``, ``pack``), and no name leaves the folder."""
    try:
        wheels, texts = memo["wheels"], memo["texts"]
        if not all(len(w) == 5 and isinstance(w[0], str) and _WHEEL.fullmatch(w[0])
                   and isinstance(w[1], str) and len(w[1]) == 64 and w[1].encode() in raw
                   and isinstance(w[2], int) for w in wheels) or \
                not all(isinstance(t, str) and _TEXT.fullmatch(p) for p, t in texts.items()):
            return False
        known = {lock_sha256} | {sha256(t.encode()).hexdigest() for t in texts.values()}
        return all(h in known or h.encode() in raw
                   for t in texts.values() for h in set(_SHA.findall(t)))
    except (KeyError, TypeError, AttributeError):
        return False


def _env() -> dict[str, str]:
    return {name: os.environ.get(name, "").strip() for name in _ENV}


def _shipped_dir() -> Path:
    """``lockkit.platforms.shipped_dir()``, without importing that module (the memo
    records what it said, and a memo made by another install never matches)."""
    here = Path(__file__).parent
    packaged = here / "_platforms"
    return packaged if packaged.is_dir() else here.parent / "platforms"


def _listing(folder: str) -> list[str] | None:
    """The ``*.toml`` names in *folder*, as ``load_platforms`` globs them; None if none."""
    try:
        return sorted(n for n in os.listdir(folder) if n.endswith(".toml"))
    except OSError:
        return None


def _inputs_digest(files: Iterable[str], folders: Iterable[str]) -> str:
    """The sha256 of every input file's bytes (a missing one counts as missing) and of the
    platform folders' listings."""
    digest = sha256()
    for folder in folders:
        digest.update(f"\0{folder}\0{_listing(folder)}\0".encode())
    for name in files:
        try:
            with open(name, "rb") as fh:
                data = fh.read()
            digest.update(f"\0{name}\0{len(data)}\0".encode())
            digest.update(data)
        except OSError:
            digest.update(f"\0{name}\0missing\0".encode())
    return digest.hexdigest()


def _write(folder: Path, links: list[tuple[Path, str]], texts: Mapping[str, str]) -> bool:
    """Write the folder through a stage beside it; False (nothing left) if a link is
    refused or a write fails: the full build then copies, or names the problem."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    stage = _new_stage(folder)
    try:
        for blob, name in links:
            os.link(blob, stage / name)
        made = {stage}
        for rel, text in texts.items():
            path = stage / rel
            if path.parent not in made:
                path.parent.mkdir(parents=True, exist_ok=True)
                made.add(path.parent)
            with open(path, "w", encoding="utf-8", newline="\n") as fh:
                fh.write(text)
        swap(stage, folder)
    except OSError:
        _remove(stage)
        return False
    except BaseException:
        _remove(stage)
        raise
    return True


def _new_stage(folder: Path) -> Path:
    """An empty stage folder beside *folder*, with the mode ``mkdir`` gives (umask)."""
    while True:
        stage = folder.parent / f".{folder.name}.{STAGE}{os.urandom(6).hex()}"
        try:
            stage.mkdir()
            return stage
        except FileExistsError:
            continue


def _remove(path: Path) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)


def remember(cache: Path, *, root: Path, lock: Path, lock_sha256: str, platform: str,
             config: Path | None,
             inputs: Iterable[Path], flags: Mapping[str, Any],
             wheels: Iterable[tuple[str, str, int, str, str]],
             texts: Mapping[str, str]) -> None:
    """Keep what a full build wrote for :func:`warm`, under the sha256 of the lock bytes it
    read (*lock_sha256*, what its manifest says); *inputs* are the files its content was
    derived from besides the lock and the platform files (the config and requirement
    files). A memo that cannot be written is only a miss next time."""
    from lockkit.common import write_atomic
    from lockkit.errors import LockkitError
    from lockkit.platforms import shipped_dir

    folders = [str(shipped_dir()), str(root / "platforms")]
    files = {str(root / "lockkit.toml"), str(root / "pyproject.toml"), *map(str, inputs)}
    files.update(str(Path(f) / n) for f in folders for n in _listing(f) or [])
    memo = {"schema": _SCHEMA, "lockkit": __version__, "root": str(root), "lock": str(lock),
            "platform": platform, "flags": dict(flags), "env": _env(),
            "config": str(config) if config else None, "shipped": str(shipped_dir()),
            "libraries": _libraries(), "folders": folders, "inputs": sorted(files),
            "inputs_sha256": _inputs_digest(sorted(files), folders),
            "wheels": [list(w) for w in wheels], "texts": dict(texts)}
    try:
        (cache / "plan").mkdir(parents=True, exist_ok=True)
        write_atomic(cache / "plan" / _memo_name(lock_sha256, lock, platform),
                     json.dumps(memo, sort_keys=True))
    except (OSError, LockkitError):
        pass


def _libraries() -> list[str]:
    """The dist-info folders of the libraries whose output the texts hold (the SBOM's
    cyclonedx-python-lib): an upgrade removes the folder, and the memo no longer holds."""
    import importlib.util

    spec = importlib.util.find_spec("cyclonedx")
    if spec is None or not spec.origin:
        return []
    site = Path(spec.origin).parent.parent
    return [str(p) for p in sorted(site.glob("cyclonedx_python_lib-*.dist-info"))]

