"""A platform's committed lock in the formats other installers read.

``requirements``: a pip requirements file that *any* pip installs in hash-checking mode
(``pip install --require-hashes -r FILE``; pip >= 26.1 is needed for ``-r pylock.toml``,
a fresh venv's pip is older). Its lines are the platform's selection from
``locks/pylock.<platform>.toml``, as ``wheelhouse build`` selects it, written in the shape
``uv export`` writes (``crates/uv-resolver/src/lock/export/requirements_txt.rs``: one
requirement, then its ``--hash`` options on continuation lines, sorted):

- a torch-family package (its lock ``index`` is the platform's PyTorch index) is pinned by
  direct URL to the one file the lock selects, with that file's hash: no index is left to
  choose, so the default index can never hand pip a same-named build;
- every other package is ``name==version`` with the hash of every wheel the lock lists for
  it (pip may pick any), and of its sdist only when allow-sdist names the package; it
  comes from the one ``--index-url`` line, the lock's default index. A package whose index
  is neither is pinned by URL too.

pip's docs (``topics/secure-installs.md``) allow a URL-pinned requirement in hash-checking
mode ("pinned (either to a URL, filesystem path or using ==)") and require a local
``--hash`` for every requirement, which each line has.

``pylock``: the committed lock itself, every URL credentials-free, validated with
``packaging.pylock`` before it is written.

URLs go through the project's ``[mirrors]`` (and ``--mirror``), as ``wheelhouse build``
fetches through them, unless *official* is asked. A ``user:token@`` is never written; a
``${VAR}`` placeholder outside one is written as the placeholder (pip fills it from the
environment when it reads the file: its "Using environment variables"), never its value;
one that stands for a whole URL (``https://${INDEX_URL}/...`` in the lock) is written in
the requirements file as ``${INDEX_URL}/...`` (``lockkit.index.urls.requirement_form``), where
pip and uv fill it in.
"""

from __future__ import annotations

import copy
import re
import shlex
import urllib.parse
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.pylock import Pylock, PylockValidationError
from packaging.utils import canonicalize_name

from lockkit._internal.redact import Secrets, strip_credentials
from lockkit.config.project import Project
from lockkit.errors import ConfigError, UsageError
from lockkit.index.urls import apply_mirrors, requirement_form
from lockkit.lock.model import Lock, dumps
from lockkit.platforms.definitions import Platform
from lockkit.platforms.targets import NothingInstallable, select

__all__ = ["DEFAULT_NAME", "FORMATS", "Pinned", "Requirements", "check_pylock_name",
           "pylock_text", "read", "recognise", "requirements", "requirements_text"]

FORMATS = ("requirements", "pylock")
DEFAULT_NAME = "requirements-rebuild.txt"  # the name the install line suggests for stdout
_PYLOCK_NAME = re.compile(r"^pylock(\.[^.]+)?\.toml$")  # PEP 751's file name rule
_HEADER = b"# lockkit export --platform "  # the requirements file's first line
_CREATED_BY = re.compile(rb'^created-by = "lockkit"$', re.MULTILINE)  # a pylock's top key


@dataclass(frozen=True, kw_only=True)
class Pinned:
    """One requirement line: by version from the index, or by URL (*url* set)."""

    name: str
    version: str
    hashes: tuple[str, ...]  # "sha256:<hex>", sorted
    url: str | None = None


@dataclass(frozen=True, kw_only=True)
class Requirements:
    """What the requirements file says, before it is rendered."""

    platform: Platform
    lock: str  # the lock's path relative to the project (locks/pylock.<platform>.toml)
    lock_sha256: str
    python: str  # the Python version the lock was resolved for
    index_url: str | None  # None: the lock names no default index (pip's own is used)
    pins: tuple[Pinned, ...]
    mirrored: bool  # URLs went through the project's mirrors
    credentials_dropped: bool  # a user:token@ was removed from some URL
    # URL-pinned packages whose index a mirror serves but whose file host none does (a
    # link-rewriting proxy mapped alone): their line keeps the official file URL
    unmirrored: tuple[str, ...] = ()


class _Urls:
    """The one rule for every URL written: mirrors (unless official), no user info."""

    def __init__(self, mirrors: dict[str, str] | None, secrets: Secrets) -> None:
        self.mirrors = mirrors or {}
        self.secrets = secrets
        self.dropped = False

    def covers(self, url: str) -> bool:
        return apply_mirrors(url, self.mirrors) != url

    def __call__(self, url: str) -> str:
        url = apply_mirrors(url, self.mirrors)
        bare = strip_credentials(url)
        self.dropped |= bare != url
        return self.secrets.conceal(urllib.parse.urlsplit(bare)._replace(fragment="").geturl())


def read(project: Project, platform: Platform) -> Lock:
    """The platform's committed lock, read once for the command."""
    return Lock.read(project.lock_path(platform.name)).of_platform(platform.name)


def _hashes(files: list[Mapping[str, Any]], where: str) -> tuple[str, ...]:
    """``sha256:<hex>`` of each file entry of a package's table (as read), sorted."""
    found = {_sha256(f.get("hashes"), f.get("name") or f.get("url"), where) for f in files}
    return tuple(sorted(found))


def _sha256(hashes: Any, label: object, where: str) -> str:
    """``sha256:<hex>`` of a file's *hashes* (a table as read, or a ``packaging.pylock``
    file's mapping); a ConfigError naming the file (*label*) where there is none."""
    sha = (hashes or {}).get("sha256")
    if not isinstance(sha, str) or not re.fullmatch(r"[0-9a-f]{64}", sha):
        raise ConfigError(f"{where}: {label} has no sha256", hint="compile the lock again")
    return f"sha256:{sha}"


def _default_index(entries: Mapping[str, Mapping[str, Any]], torch_index: str) -> str | None:
    """The index most of the non-torch packages name (a lockkit lock names one)."""
    named = Counter(str(e["index"]).rstrip("/") for e in entries.values()
                    if e.get("index") and str(e["index"]).rstrip("/") != torch_index)
    return named.most_common(1)[0][0] if named else None


def requirements(project: Project, platform: Platform, *, official: bool = False,
                 lock: Lock | None = None) -> Requirements:
    """The platform's selection from its committed *lock* (None: :func:`read`), as
    requirement lines."""
    lock = lock or read(project, platform)
    path, pylock, sha = lock.path, lock.pylock, lock.sha256
    urls = _Urls(None if official else project.mirrors, project.secrets)
    entries = lock.package_tables()
    torch_index = (platform.torch_index or "").rstrip("/")
    default = _default_index(entries, torch_index)
    pins, unmirrored = [], []
    allowed = {canonicalize_name(n) for n in project.allow_sdist}
    python = lock.python
    try:
        chosen = select(pylock, platform, python, path)
    except NothingInstallable as exc:
        raise ConfigError(str(exc)) from exc
    for package, dist in chosen:
        name = canonicalize_name(package.name)
        entry, where = entries[name], f"{path}: packages.{name}"
        index = str(entry.get("index") or "").rstrip("/") or None
        if index != default or (index is not None and index == torch_index):
            if not getattr(dist, "url", None):
                raise ConfigError(f"{where}: the selected file has no URL to pin")
            if index and urls.covers(index) and not urls.covers(dist.url):
                unmirrored.append(name)
            pins.append(Pinned(name=name, version=str(package.version),
                               url=requirement_form(urls(dist.url)),
                               hashes=(_sha256(dist.hashes, getattr(dist, "name", None)
                                               or dist.url, where),)))
            continue
        pins.append(Pinned(name=name, version=str(package.version),
                           hashes=_hashes(_files(entry, name in allowed), where)))
    return Requirements(platform=platform, lock=path.relative_to(project.root).as_posix(),
                        lock_sha256=sha, python=python,
                        index_url=requirement_form(urls(default)) if default else None,
                        pins=tuple(sorted(pins, key=lambda p: p.name)),
                        mirrored=bool(urls.mirrors), credentials_dropped=urls.dropped,
                        unmirrored=tuple(unmirrored))


def _files(entry: Mapping[str, Any], sdist_allowed: bool) -> list[Mapping[str, Any]]:
    """The files a by-version line hashes: the wheels, and the sdist only where allow-sdist
    names the package (or it has no wheel: the lock's one file), so that pip, free to pick
    any hashed file, never builds one a lock of an older form still lists."""
    wheels = list(entry.get("wheels", []))
    sdist = [entry["sdist"]] if "sdist" in entry and (sdist_allowed or not wheels) else []
    return wheels + sdist


def requirements_text(reqs: Requirements, filename: str = DEFAULT_NAME) -> str:
    """The file: a header saying what it is and how to install it, then the lines.
    *filename* is the path the file is written to, as the user gave it (``-o``): the
    install line names it so, quoted for the target's shell where it needs quoting."""
    windows = reqs.platform.os == "windows"
    python = ".venv-rebuild\\Scripts\\python.exe" if windows else ".venv-rebuild/bin/python"
    if windows:
        filename = f'"{filename}"' if re.search(r"\s", filename) else filename
    else:
        filename = shlex.quote(filename)
    venv = f"py -{reqs.python}" if windows else f"python{reqs.python}"  # never a bare python
    lines = [
        f"# lockkit export --platform {reqs.platform.name}: {reqs.lock} "
        f"(sha256 {reqs.lock_sha256})",
        f"# For {reqs.platform.os} {reqs.platform.arch}, Python {reqs.python}: on another OS, "
        "CPU or Python pip finds no file (\"from versions: none\").",
        f"# Install with any pip into a fresh Python {reqs.python} venv:",
        f"#   {venv} -m venv .venv-rebuild",
        f"#   {python} -m pip install --require-hashes -r {filename}",
        "# Torch-family packages are pinned by URL to the file the lock selects for this",
        "# platform; the others come from " + ("the --index-url below." if reqs.index_url
                                               else "pip's default index (the lock names "
                                               "none).") + " Every line is hashed.",
        "# URLs go through the project's mirrors." if reqs.mirrored
        else "# URLs are the lock's own (no mirrors applied).",
    ]
    if reqs.credentials_dropped:
        lines.append("# Credentials are never written: give pip the index's user and token "
                     "through netrc or keyring.")
    lines.append("# Generated by lockkit from the lock; export again, do not edit.")
    if reqs.index_url:
        lines.append(f"--index-url {reqs.index_url}")
    for pin in reqs.pins:
        head = f"{pin.name} @ {pin.url}" if pin.url else f"{pin.name}=={pin.version}"
        lines.append(" \\\n".join([head, *(f"    --hash={h}" for h in pin.hashes)]))
    return "\n".join(lines) + "\n"


def pylock_text(project: Project, platform: Platform, *, official: bool = False,
                lock: Lock | None = None) -> str:
    """The committed *lock* (None: :func:`read`), every URL through the export's rule,
    validated as PEP 751."""
    lock = lock or read(project, platform)
    path = lock.path
    urls = _Urls(None if official else project.mirrors, project.secrets)
    out = copy.deepcopy(dict(lock.data))
    for package in out.get("packages", []):
        if isinstance(package.get("index"), str):
            package["index"] = urls(package["index"])
        for f in [*package.get("wheels", []), *([package["sdist"]] if "sdist" in package
                                                 else [])]:
            if isinstance(f.get("url"), str):
                f["url"] = urls(f["url"])
    try:
        Pylock.from_dict(out)
    except PylockValidationError as exc:
        raise ConfigError(f"{path}: the exported lock is not valid PEP 751: {exc}") from exc
    return dumps(out)


def check_pylock_name(target: Path) -> None:
    """PEP 751: a lock file is named ``pylock.toml`` or ``pylock.<name>.toml``."""
    if not _PYLOCK_NAME.match(target.name):
        raise UsageError(f"-o {target}: a PEP 751 lock must be named pylock.toml or "
                          f"pylock.<name>.toml (installers refuse other names)",
                          hint="e.g. -o pylock.linux-cpu.toml")


def recognise(path: Path) -> bool:
    """An export lockkit wrote (:mod:`lockkit._internal.outfile`'s rule): a requirements
    file that begins with its header, or a pylock whose ``created-by`` is lockkit (a
    committed lock is an input, refused before this is asked)."""
    from lockkit._internal.outfile import head

    data = head(path, 1 << 16)
    return data is not None and (data.startswith(_HEADER) or bool(_CREATED_BY.search(data)))
