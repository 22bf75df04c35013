"""lockkit travels with its wheelhouse: ``<wheelhouse>/tools/`` holds lockkit's own wheel
and its runtime dependencies, so the offline machine can run ``lockkit verify``::

    python -m venv v && v/bin/pip install --no-index --find-links <wheelhouse>/tools lockkit

**The dependencies** are the installed lockkit's ``Requires-Dist``, resolved the way
``compile`` resolves a lock (``lockkit.resolve``: uv for the *target*'s
``--python-platform`` and Python version, ``--generate-hashes``), against the project's
default index (``index-url``, mirrors honoured, ``exclude-newer`` too) and never a PyTorch
index: lockkit needs no torch-family package. Without ``exclude-newer`` the tools follow
the index's newest releases at build time, so two builds far apart may carry different
versions; the wheelhouse's own files (the lock's) do not move. The wheels are selected
for the platform by ``lockkit.targets`` and fetched by ``lockkit.fetch`` exactly like the
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

``tools/requirements.txt`` pins every tool with its hash. The wheelhouse's own
``requirements.txt`` and ``pylock.toml`` are the application's and do not list the tools;
``manifest.json`` lists the files under ``tools/`` with ``"kind": "tool"``, so pack and
unpack carry and check them.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import io
import os
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
from packaging.utils import canonicalize_name
from packaging.version import Version

from lockkit import __version__, _run
from lockkit._compat import tomllib
from lockkit.cache import Cache, copy_hashing, link_or_copy
from lockkit.common import sha256_file
from lockkit.config import Project
from lockkit.errors import BuildError, HashMismatch, LockkitError
from lockkit.fetch import Fetcher, Want
from lockkit.platforms import Platform
from lockkit.resolve import Indexes, ResolveOptions, resolve, uv_bin
from lockkit.targets import select
from lockkit.urls import Mirrors

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


def target_python(project: Project, platform: Platform, lock_path: Path) -> str:
    """The Python version the lock was compiled for (compile's choice when it says none)."""
    try:
        meta = tomllib.loads(lock_path.read_text(encoding="utf-8"))["tool"]["lockkit"]
        if isinstance(meta.get("python"), str) and meta["python"]:
            return str(meta["python"])
    except (OSError, KeyError, TypeError, tomllib.TOMLDecodeError):
        pass
    return project.python or platform.python


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
            fetcher: Fetcher) -> Toolset:
    """Resolve, fetch and build every tool for *platform*: lockkit's wheel first."""
    python = target_python(project, platform, lock_path)
    wants = _resolve(project, platform, python)
    deps = []
    for package, version, want in wants:
        got = fetcher.fetch(want)
        deps.append(Tool(package=package, version=version, filename=want.filename,
                         sha256=want.sha256, path=got.path, source=want.source))
    return Toolset(platform=platform.name, python=python,
                   tools=(own_wheel(fetcher.cache, project), *deps))


def _resolve(project: Project, platform: Platform, python: str) -> list[tuple[str, str, Want]]:
    # no torch index, no routing index: every name from the project's default index
    bare = dataclasses.replace(platform, torch_index=None, torch_packages=(),
                               torch_file_hosts=())
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
        chosen = select(Pylock.from_dict(doc), platform, where, BuildError)
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
    if not sha or "/" in filename or filename.startswith("."):
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
            how = "built by lockkit from its source tree (uv build)"
        else:
            wheel = rebuild_installed(Path(tmp))
            how = "rebuilt by lockkit from its installed files (RECORD)"
        out, partial = cache.new_partial()
        with out, wheel.open("rb") as src:
            sha = copy_hashing(src, out, lambda n: None)
        path = cache.commit(partial, sha)
    return Tool(package="lockkit", version=__version__, filename=wheel.name, sha256=sha,
                path=path, source=f"lockkit {__version__}, {how}")


def source_tree() -> Path | None:
    """The source tree the running lockkit comes from, or None (installed from a wheel)."""
    root = Path(__file__).resolve().parent.parent
    try:
        data = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError):
        return None
    return root if data.get("project", {}).get("name") == "lockkit" else None


def _build_from_source(root: Path, tmp: Path, project: Project | None) -> Path:
    argv = [uv_bin(), "build", "--wheel", "--no-config", "--quiet", "--python", sys.executable,
            "--out-dir", str(tmp / "dist"), str(root)]
    if project is not None and project.index_url:  # the build backend from the same index
        argv[3:3] = ["--default-index", Mirrors(project.mirrors).effective(project.index_url)]
    env = _run.isolated_env({"SOURCE_DATE_EPOCH": os.environ.get("SOURCE_DATE_EPOCH", _EPOCH)})
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

def place(stage: Path, toolset: Toolset) -> list[dict[str, Any]]:
    """Put the tools in ``<stage>/tools/`` with a hash-pinned requirements.txt; return their
    manifest entries (kind "tool")."""
    folder = stage / FOLDER
    folder.mkdir()
    entries = []
    for tool in sorted(toolset.tools, key=lambda t: t.package):
        placed = link_or_copy(tool.path, folder / tool.filename, tool.sha256)
        if placed != tool.sha256:
            raise HashMismatch(f"{tool.filename}: the cache copy changed while it was placed",
                               hint="run the build again: the cache re-checks and re-fetches")
        entries.append({"path": f"{FOLDER}/{tool.filename}", "kind": "tool",
                        "size": (folder / tool.filename).stat().st_size, "sha256": placed,
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
             "#   v/bin/lockkit verify --wheelhouse <the wheelhouse> --project <project>"]
    lines += [f"{t.package}=={t.version} --hash=sha256:{t.sha256}"
              for t in sorted(toolset.tools, key=lambda t: t.package)]
    return "\n".join(lines) + "\n"
