"""lockkit's own wheel file, made from the running lockkit (it is on no index).

From a source tree (``pyproject.toml`` naming lockkit beside the package: an editable or
development install), ``uv build --wheel`` with ``SOURCE_DATE_EPOCH`` fixed
(:func:`build_from_source`); otherwise (installed from a wheel), rebuilt from the installed
files its ``RECORD`` lists, each checked against RECORD's hash first
(:func:`rebuild_installed`). Either way the same bytes every time; see
:mod:`lockkit.wheelhouse.tools`, which puts the wheel in the cache and in ``tools/``.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import sys
import zipfile
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from lockkit import __version__
from lockkit._internal import proc
from lockkit._internal.compat import tomllib
from lockkit._internal.uv import uv_bin
from lockkit.cache.memo import code_digest
from lockkit.config.project import Project
from lockkit.errors import BuildError
from lockkit.index.urls import Mirrors

if TYPE_CHECKING:
    from lockkit.platforms.definitions import Platform

__all__ = ["build_from_source", "distribution", "key_of", "own_source", "rebuild_installed",
           "resolution_key", "runtime_requirements", "skip_reason", "source_tree",
           "tree_digest"]

# 1980-01-01, the earliest time a zip member can carry: the wheel's bytes do not depend
# on when or where it was built (a SOURCE_DATE_EPOCH in the environment wins)
_EPOCH = "315532800"
_INSTALLER_FILES = {"INSTALLER", "REQUESTED", "RECORD", "direct_url.json"}


def own_source(root: Path | None) -> str:
    """How lockkit's own wheel was made, as the manifest says it."""
    how = ("built by lockkit from its source tree (uv build)" if root is not None
           else "rebuilt by lockkit from its installed files (RECORD)")
    return f"lockkit {__version__}, {how}"


def tree_digest(root: Path) -> str:
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
    root = Path(__file__).resolve().parents[2]  # lockkit/wheelhouse/ownwheel.py -> the tree
    try:
        data = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError):
        return None
    return root if data.get("project", {}).get("name") == "lockkit" else None


def build_from_source(root: Path, tmp: Path, project: Project | None) -> Path:
    """lockkit's wheel built from the source tree *root* into *tmp*, the build backend
    from *project*'s index (see the module)."""
    argv = [uv_bin(), "build", "--wheel", "--no-config", "--quiet", "--python", sys.executable,
            "--out-dir", str(tmp / "dist"), str(root)]
    extra = {"SOURCE_DATE_EPOCH": os.environ.get("SOURCE_DATE_EPOCH", _EPOCH)}
    if project is not None and project.index_url:  # the build backend from the same index
        # in uv's environment, never its argv: the URL may hold credentials (``ps``)
        mirrors = Mirrors(project.mirrors, project.secrets)
        extra["UV_DEFAULT_INDEX"] = mirrors.effective(project.index_url)
    env = proc.isolated_env(extra)
    result = proc.call(argv, timeout=600, env=env)
    wheels = sorted((tmp / "dist").glob("lockkit-*.whl"))
    if result.returncode != 0 or len(wheels) != 1:
        raise BuildError(f"building lockkit's own wheel from {root} failed: "
                         f"{proc.outcome(result)}",
                         hint="the build backend (hatchling) comes from index-url; "
                              "or pass --no-tools")
    return wheels[0]


def rebuild_installed(dest: Path) -> Path:
    """The installed lockkit as a wheel in *dest*, from its RECORD (see the module)."""
    dist = distribution()
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


def runtime_requirements() -> list[str]:
    """The running lockkit's ``Requires-Dist``, extras left out (markers kept for uv):
    what ``tools/`` and the CI workflow's pins resolve."""
    from packaging.requirements import Requirement

    out = []
    for text in distribution().requires or []:
        req = Requirement(text)
        if req.marker is None or "extra" not in str(req.marker):
            out.append(str(req))
    return out


def distribution() -> metadata.Distribution:
    """The running lockkit's distribution metadata (its Requires-Python, Requires-Dist,
    RECORD)."""
    try:
        return metadata.distribution("lockkit")
    except metadata.PackageNotFoundError:
        raise BuildError("lockkit runs without its distribution metadata (not installed)",
                         hint="install lockkit (pip install -e . in its source tree), "
                              "or pass --no-tools") from None


def skip_reason(python: str) -> str | None:
    """Why lockkit cannot run on Python *python* (its Requires-Python), else None."""
    spec = next(iter(distribution().metadata.get_all("Requires-Python") or []), "")
    if spec and not SpecifierSet(spec).contains(Version(python), prereleases=True):
        return f"lockkit needs Python {spec}, the lock is for Python {python}"
    return None


def key_of(project: Project, platform: Platform, python: str) -> str:
    """The resolution key of the running lockkit's tools for *platform* and Python
    *python* (:func:`resolution_key` of its source tree, or of its code when installed)."""
    return resolution_key(project, platform, python, source_tree())


def resolution_key(project: Project, platform: Platform, python: str,
                   root: Path | None) -> str:
    """The sha256 of everything that decides ``tools/`` (:mod:`lockkit.wheelhouse.tools`
    says what and why), written in ``tools/requirements.txt`` and in a wheelhouse's
    record (:mod:`lockkit.wheelhouse.current`)."""
    from lockkit._internal.redact import strip_credentials

    decides = [__version__, runtime_requirements(), platform.fingerprint, python,
               strip_credentials(project.index_url or ""),
               sorted((k, strip_credentials(v)) for k, v in project.mirrors.items()),
               project.exclude_newer or "",
               tree_digest(root) if root is not None else code_digest()]
    return hashlib.sha256(json.dumps(decides).encode()).hexdigest()
