"""lockkit travels with its wheelhouse: ``<wheelhouse>/tools/`` holds lockkit's own wheel
and its runtime dependencies, so the offline machine can run ``lockkit verify``::

    python -m venv v && v/bin/pip install --no-index --find-links <wheelhouse>/tools lockkit

**The dependencies** are the installed lockkit's ``Requires-Dist``, resolved the way
``compile`` resolves a lock (``lockkit.compile.resolve``: uv for the *target*'s
``--python-platform`` and Python version, ``--generate-hashes``), against the project's
default index (``index-url``, mirrors honoured, ``exclude-newer`` too) and never a PyTorch
index: lockkit needs no torch-family package. Without ``exclude-newer`` the tools follow
the index's newest releases at build time, so two builds far apart may carry different
versions; the wheelhouse's own files (the lock's) do not move. The wheels are selected
for the platform by ``lockkit.platforms.targets`` and fetched by ``lockkit.wheelhouse.fetch`` exactly like the
lock's own files, so every sha256 is checked while the bytes stream in.

**lockkit's own wheel** is not on any index, so it is made from the running lockkit:

- from a source tree (``pyproject.toml`` naming lockkit beside the package: an editable
  or development install), ``uv build --wheel`` with ``SOURCE_DATE_EPOCH`` fixed, so two
  builds of one tree give the same bytes (hatchling sorts members and stamps that time;
  ``platforms/`` goes in as ``lockkit/_platforms`` as pyproject says). The build backend
  comes from the project's index too; its version is written in the wheel's ``WHEEL``
  file, so a new hatchling release changes the bytes (not the installed files);
- otherwise (installed from a wheel), the wheel is rebuilt from the installed files its
  ``RECORD`` lists, each checked against RECORD's hash first (an edited install is
  refused), in sorted order with fixed times: again the same bytes every time. Scripts
  (``../../bin``), bytecode and the installer's own files are left out: pip writes them
  again on install.

The wheel is put in the download cache under its sha256 and placed like the others.

**Kept in the wheelhouse, not in the cache.** ``tools/requirements.txt`` names the
*resolution key* it was made from: the sha256 of everything that decides the tools
(lockkit's version and requirements, the target, the index without credentials, mirrors,
``exclude-newer``, and the digest of the source tree or installed code lockkit's wheel is
made from). A build into a folder whose ``tools/requirements.txt`` has the same key takes
the pins (names, versions, sha256) from that file, the folder's own reviewable input,
and asks no index and builds nothing: every file comes from the cache by hash, checked.
The file is read back only when it and the manifest are regular files of this user's
that nobody else can write, agree with each other, and every name passes the rule for a
fresh name; anything else resolves again. Nothing about the tools is taken from the
download cache alone (a shared cache's owner is not the user).

``tools/requirements.txt`` pins every tool with its hash. The wheelhouse's own
``requirements.txt`` and ``pylock.toml`` are the application's and do not list the tools;
``manifest.json`` lists the files under ``tools/`` with ``"kind": "tool"``, so pack and
unpack carry and check them.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import re
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from packaging.pylock import PackageWheel, Pylock, PylockValidationError
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from lockkit import __version__
from lockkit._internal import proc as _run
from lockkit._internal.compat import tomllib
from dataclasses import replace
from lockkit.cache.store import Cache, copy_hashing
from lockkit._internal.fs import sha256_file
from lockkit.config.project import Project
from lockkit.errors import BuildError, LockkitError
from lockkit.wheelhouse.fetch import Fetcher, FetchError, Want
from lockkit.lock.lockfile import python_of, read_lock
from lockkit.cache.memo import code_digest
from lockkit._internal.private import read_regular
from lockkit.platforms.definitions import Platform
from lockkit.index.urls import Indexes
from lockkit.compile.resolve import ResolveOptions, resolve
from lockkit._internal.uv import uv_bin
from lockkit.platforms.targets import select
from lockkit.wheelhouse.trust import file_name_problem, inside
from lockkit.index.urls import Mirrors

__all__ = ["FOLDER", "Tool", "Toolset", "own_wheel", "place", "prepare", "runtime_requirements",
           "skip_reason", "target_python"]

FOLDER = "tools"
# 1980-01-01, the earliest time a zip member can carry: the wheel's bytes do not depend
# on when or where it was built (a SOURCE_DATE_EPOCH in the environment wins)
_EPOCH = "315532800"
_INSTALLER_FILES = {"INSTALLER", "REQUESTED", "RECORD", "direct_url.json"}


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
    key: str  # the resolution key (see the module), written in tools/requirements.txt


def target_python(lock_path: Path) -> str:
    """The Python version the lock was compiled for (:func:`lockkit.lock.lockfile.python_of`):
    the offline machine runs lockkit with the interpreter it rebuilds the lock with."""
    return python_of(read_lock(lock_path)[0], lock_path)


def skip_reason(python: str) -> str | None:
    """Why lockkit cannot run on Python *python* (its Requires-Python), else None."""
    spec = next(iter(_distribution().metadata.get_all("Requires-Python") or []), "")
    if spec and not SpecifierSet(spec).contains(Version(python), prereleases=True):
        return f"lockkit needs Python {spec}, the lock is for Python {python}"
    return None


def runtime_requirements() -> list[str]:
    """The running lockkit's ``Requires-Dist``, extras left out (markers kept for uv)."""
    out = []
    for text in _distribution().requires or []:
        req = Requirement(text)
        if req.marker is None or "extra" not in str(req.marker):
            out.append(str(req))
    return out


def prepare(project: Project, platform: Platform, lock_path: Path,
            fetcher: Fetcher, *, kept: Path | None = None) -> Toolset:
    """Resolve, fetch and build every tool for *platform*, lockkit's wheel first; or take
    the pins of the wheelhouse *kept* (the folder this build replaces) when they were made
    from the same inputs (see the module)."""
    python = target_python(lock_path)
    root = source_tree()
    key = resolution_key(project, platform, python, root)
    tools = _from_kept(kept, key, project, platform, fetcher) if kept is not None else None
    if tools is None:
        deps = []
        for package, version, want in _resolve(project, platform, python):
            got = fetcher.fetch(want)
            deps.append(Tool(package=package, version=version, filename=want.filename,
                             sha256=want.sha256, path=got.path, source=want.source))
        tools = (own_wheel(fetcher.cache, project), *deps)
    return Toolset(platform=platform.name, python=python, tools=tools, key=key)


def resolution_key(project: Project, platform: Platform, python: str,
                   root: Path | None) -> str:
    """The sha256 of everything that decides ``tools/`` (see the module)."""
    from lockkit._internal.redact import strip_credentials

    decides = [__version__, runtime_requirements(), platform.fingerprint, python,
               strip_credentials(project.index_url or ""),
               sorted((k, strip_credentials(v)) for k, v in project.mirrors.items()),
               project.exclude_newer or "",
               _tree_digest(root) if root is not None else code_digest()]
    return hashlib.sha256(json.dumps(decides).encode()).hexdigest()


_PIN = re.compile(r"([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+) --hash=sha256:([0-9a-f]{64})")
_KEY_LINE = "# resolution: "


def _from_kept(folder: Path, key: str, project: Project, platform: Platform,
               fetcher: Fetcher) -> tuple[Tool, ...] | None:
    """The tools *folder*'s ``tools/requirements.txt`` pins, when it was made for *key*,
    each fetched by hash (a cache hit is hashed again); None when the folder's pins do not
    hold (the caller resolves again)."""
    pins = _kept_pins(folder, key, platform.name)
    if pins is None:
        return None
    mirrors, tools = Mirrors(project.mirrors), []
    for package, version, entry in pins:
        name = entry["path"].removeprefix(f"{FOLDER}/")
        source = str(entry.get("source"))  # an official URL (_kept_entry)
        if package == "lockkit":  # lockkit's own wheel: made here, on no index
            path = fetcher.cache.get(entry["sha256"], entry["size"])
            if path is None:
                return None  # built again, with the rest resolved again
            source = _own_source(source_tree())
        else:
            want = Want(filename=name, sha256=entry["sha256"], size=entry["size"],
                        urls=(mirrors.effective(source),), source=source)
            try:
                path = fetcher.fetch(want).path
            except FetchError:
                return None
        tools.append(Tool(package=package, version=version, filename=name,
                          sha256=entry["sha256"], path=path, source=source))
    own = [t for t in tools if t.package == "lockkit"]
    return (*own, *(t for t in tools if t.package != "lockkit")) if own else None


def _kept_pins(folder: Path, key: str,
               platform: str) -> list[tuple[str, str, dict[str, Any]]] | None:
    """(package, version, manifest entry) of every pin of *folder*'s tools, or None.

    Read back as fresh data: both files regular, this user's and writable by nobody else
    (:func:`lockkit.cache.memo.read_regular`); the manifest of *platform*, listing
    ``tools/requirements.txt`` with its sha256; the requirements of *key*, each pin a
    wheel the manifest lists under ``tools/`` with the pin's hash, its name a wheel's of
    that package and version, its source an official URL (lockkit's own wheel aside);
    and every tool the manifest lists pinned."""
    raw, reqs = read_regular(folder / "manifest.json"), read_regular(folder / FOLDER /
                                                                     "requirements.txt")
    if raw is None or reqs is None:
        return None
    try:
        manifest = json.loads(raw)
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


def _kept_entry(entry: dict[str, Any], package: str, version: str) -> bool:
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


def _resolve(project: Project, platform: Platform, python: str) -> list[tuple[str, str, Want]]:
    # no torch index, no routing index: every name from the project's default index
    bare = replace(platform, torch_index=None, torch_packages=(), torch_file_hosts=())
    indexes = Indexes.for_platform(bare, project.mirrors, project.index_url)
    with tempfile.TemporaryDirectory(prefix="lockkit-tools-") as tmp:
        reqs = Path(tmp) / "requirements.in"
        reqs.write_text("".join(f"{r}\n" for r in runtime_requirements()), encoding="utf-8")
        try:
            doc = resolve([reqs], bare, python, indexes,
                          options=ResolveOptions(exclude_newer=project.exclude_newer)).doc
        except LockkitError as exc:
            why = str(exc).removeprefix(f"{platform.name}: ")
            raise BuildError(f"{platform.name}: lockkit's own dependencies (for tools/): {why}",
                             hint="check index-url / --mirror, or pass --no-tools") from None
    where = Path(f"lockkit's dependencies for {platform.name}")
    try:
        chosen = select(Pylock.from_dict(doc), platform, python, where, BuildError)
    except PylockValidationError as exc:
        raise BuildError(f"{where}: uv wrote an invalid resolution: {exc}") from None
    return [_want(str(package.name), str(package.version), dist, Mirrors(project.mirrors))
            for package, dist in chosen]


def _want(name: str, version: str, dist: Any, mirrors: Mirrors) -> tuple[str, str, Want]:
    if not isinstance(dist, PackageWheel) or not dist.url:
        raise BuildError(f"{name} {version}: lockkit's dependency has no wheel for this "
                         "platform (tools/ carries wheels only)", hint="pass --no-tools")
    filename = dist.name or dist.url.rsplit("/", 1)[-1]
    sha = (dist.hashes or {}).get("sha256")
    if not sha or file_name_problem(filename):
        raise BuildError(f"{name} {version}: no sha256 or an unsafe file name ({filename!r})")
    want = Want(filename=filename, sha256=sha, size=dist.size, urls=(dist.url,),
                source=mirrors.official(dist.url))
    return canonicalize_name(name), version, want


# --- lockkit's own wheel ------------------------------------------------------------------

def own_wheel(cache: Cache, project: Project | None = None) -> Tool:
    """lockkit's wheel, built from the running lockkit (see the module), into *cache*."""
    root = source_tree()
    with tempfile.TemporaryDirectory(prefix="lockkit-own-") as tmp:
        if root is not None:
            wheel = _build_from_source(root, Path(tmp), project)
        else:
            wheel = rebuild_installed(Path(tmp))
        out, partial = cache.new_partial()
        with out, wheel.open("rb") as src:
            sha = copy_hashing(src, out, lambda n: None)
        path = cache.commit(partial, sha)
    return Tool(package="lockkit", version=__version__, filename=wheel.name, sha256=sha,
                path=path, source=_own_source(root))


def _own_source(root: Path | None) -> str:
    """How lockkit's own wheel was made, as the manifest says it."""
    how = ("built by lockkit from its source tree (uv build)" if root is not None
           else "rebuilt by lockkit from its installed files (RECORD)")
    return f"lockkit {__version__}, {how}"


def _tree_digest(root: Path) -> str:
    """The sha256 of what a wheel of the source tree is made from (the package, the
    platforms, pyproject.toml, README.md), by path and bytes."""
    digest = hashlib.sha256()
    files = [root / "pyproject.toml", root / "README.md", *sorted((root / "lockkit").rglob("*")),
             *sorted((root / "platforms").glob("*"))]
    for path in files:
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
            data = path.read_bytes()
            digest.update(f"{path.relative_to(root).as_posix()}\0{len(data)}\0".encode())
            digest.update(data)
    return digest.hexdigest()


def source_tree() -> Path | None:
    """The source tree the running lockkit comes from, or None (installed from a wheel)."""
    root = Path(__file__).resolve().parents[2]  # lockkit/wheelhouse/tools.py -> the tree
    try:
        data = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError):
        return None
    return root if data.get("project", {}).get("name") == "lockkit" else None


def _build_from_source(root: Path, tmp: Path, project: Project | None) -> Path:
    argv = [uv_bin(), "build", "--wheel", "--no-config", "--quiet", "--python", sys.executable,
            "--out-dir", str(tmp / "dist"), str(root)]
    extra = {"SOURCE_DATE_EPOCH": os.environ.get("SOURCE_DATE_EPOCH", _EPOCH)}
    if project is not None and project.index_url:  # the build backend from the same index
        # in uv's environment, never its argv: the URL may hold credentials (``ps``)
        extra["UV_DEFAULT_INDEX"] = Mirrors(project.mirrors).effective(project.index_url)
    env = _run.isolated_env(extra)
    result = _run.call(argv, timeout=600, env=env)
    wheels = sorted((tmp / "dist").glob("lockkit-*.whl"))
    if result.returncode != 0 or len(wheels) != 1:
        raise BuildError(f"building lockkit's own wheel from {root} failed: "
                         f"{_run.outcome(result)}",
                         hint="the build backend (hatchling) comes from index-url; "
                              "or pass --no-tools")
    return wheels[0]


def rebuild_installed(dest: Path) -> Path:
    """The installed lockkit as a wheel, from its RECORD (see the module docstring)."""
    dist = _distribution()
    info = f"lockkit-{__version__}.dist-info"
    members: dict[str, bytes] = {}
    for entry in dist.files or []:
        name = entry.as_posix()
        if _skipped(name, info):
            continue
        data = Path(str(dist.locate_file(entry))).read_bytes()
        if entry.hash is not None and entry.hash.value != _b64(data, entry.hash.mode):
            raise BuildError(f"{name}: differs from the installed lockkit's RECORD",
                             hint="reinstall lockkit, or pass --no-tools")
        members[name] = data
    if f"{info}/WHEEL" not in members:
        raise BuildError(f"the installed lockkit ({info}) has no WHEEL file to rebuild from",
                         hint="reinstall lockkit from its wheel, or pass --no-tools")
    tag = next((ln.split(":", 1)[1].strip() for ln in members[f"{info}/WHEEL"].decode()
                .splitlines() if ln.startswith("Tag:")), "py3-none-any")
    wheel = dest / f"lockkit-{__version__}-{tag}.whl"
    wheel.write_bytes(_zip(members, f"{info}/RECORD"))
    return wheel


def _skipped(name: str, info: str) -> bool:
    parts = name.split("/")
    return (".." in parts or "__pycache__" in parts or name.endswith(".pyc")
            or (parts[0] == info and parts[-1] in _INSTALLER_FILES))


def _b64(data: bytes, mode: str = "sha256") -> str:
    return base64.urlsafe_b64encode(hashlib.new(mode, data).digest()).rstrip(b"=").decode()


def _zip(members: dict[str, bytes], record: str) -> bytes:
    """A wheel's bytes: members sorted, RECORD last, fixed times and modes.

    RECORD lines as pypa/wheel's ``wheelfile.py`` writes them (``path,sha256=<urlsafe
    base64, no padding>,size``, RECORD itself with no hash), and its minimum zip time."""
    lines = [f"{n},sha256={_b64(d)},{len(d)}" for n, d in sorted(members.items())]
    files = [*sorted(members.items()), (record, ("\n".join([*lines, f"{record},,"]) + "\n")
                                        .encode())]
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in files:
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, data)
    return buf.getvalue()


def _distribution() -> metadata.Distribution:
    try:
        return metadata.distribution("lockkit")
    except metadata.PackageNotFoundError:
        raise BuildError("lockkit runs without its distribution metadata (not installed)",
                         hint="install lockkit (pip install -e . in its source tree), "
                              "or pass --no-tools") from None


# --- into the wheelhouse ------------------------------------------------------------------

def place(stage: Path, toolset: Toolset, cache: Cache) -> list[dict[str, Any]]:
    """Put the tools in ``<stage>/tools/`` with a hash-pinned requirements.txt; return their
    manifest entries (kind "tool")."""
    folder = stage / FOLDER
    folder.mkdir()
    entries = []
    for tool in sorted(toolset.tools, key=lambda t: t.package):
        dest = inside(folder, tool.filename)
        cache.place(tool.path, dest, tool.sha256)
        entries.append({"path": f"{FOLDER}/{tool.filename}", "kind": "tool",
                        "size": dest.stat().st_size, "sha256": tool.sha256,
                        "package": tool.package, "version": tool.version,
                        "source": tool.source})
    reqs = folder / "requirements.txt"
    reqs.write_text(_requirements(toolset), encoding="utf-8", newline="\n")
    entries.append({"path": f"{FOLDER}/requirements.txt", "kind": "tool",
                    "size": reqs.stat().st_size, "sha256": sha256_file(reqs)})
    return entries


def _requirements(toolset: Toolset) -> str:
    lines = [f"# lockkit {__version__} and its dependencies for {toolset.platform} "
             f"(Python {toolset.python}): not the application's environment",
             "# on the offline machine, any pip:",
             "#   python -m venv v && v/bin/pip install --no-index --find-links <this folder> "
             "--require-hashes -r requirements.txt",
             "#   v/bin/lockkit verify --wheelhouse <the wheelhouse> --project <project>",
             f"{_KEY_LINE}{toolset.key}"]
    lines += [f"{t.package}=={t.version} --hash=sha256:{t.sha256}"
              for t in sorted(toolset.tools, key=lambda t: t.package)]
    return "\n".join(lines) + "\n"
