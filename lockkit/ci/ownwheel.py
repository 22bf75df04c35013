"""lockkit's own wheel as the CI workflow's default source of lockkit: without ``[ci]
lockkit``, ``ci github`` writes the running lockkit's wheel into the project
(:data:`OWN_WHEEL_DIR`) and the workflow installs that file by its sha256, never by name.
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from lockkit._internal.fs import temp_file
from lockkit.ci.render import posix
from lockkit.config.keys import LockkitRequirement
from lockkit.errors import BuildError, WriteError

if TYPE_CHECKING:
    from lockkit.config.project import Project
    from lockkit.wheelhouse.toolpins import Tool

__all__ = ["OWN_WHEEL_DIR", "own_lockkit", "write_own_wheel"]

OWN_WHEEL_DIR = ".lockkit/ci"  # in the project: lockkit's own wheel, without [ci] lockkit


def own_lockkit(project: str, config: Project) -> tuple[LockkitRequirement, Tool]:
    """The default without ``[ci] lockkit``: lockkit's own wheel, as a committed-file
    requirement at ``<project>/.lockkit/ci/`` with its sha256, and the wheel in the
    cache (:func:`write_own_wheel` puts it there once the workflow's text is made).

    The wheel is :func:`lockkit.wheelhouse.tools.own_wheel`'s, the one ``tools/`` carries: built
    from the running lockkit, the same bytes every run."""
    from lockkit.cache.layout import default_cache_dir
    from lockkit.cache.store import Cache
    from lockkit.wheelhouse.tools import own_wheel

    tool = own_wheel(Cache(default_cache_dir()), config)
    where = (PurePosixPath(posix(project)) / OWN_WHEEL_DIR / tool.filename).as_posix()
    return LockkitRequirement(requirement=where, hashes=(f"sha256:{tool.sha256}",),
                              source="path"), tool


def write_own_wheel(tool: Tool, dest: Path) -> None:
    """Copy lockkit's wheel out of the cache to *dest*: hashed as it is written, the
    user's file mode, renamed into place; a blob that is not *tool*'s is refused."""
    from lockkit.cache.store import copy_hashing

    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = temp_file(dest.parent, f".{dest.name}.")
    except OSError as exc:
        raise WriteError(f"{dest}: cannot write: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "wb") as out, tool.path.open("rb") as src:
            sha = copy_hashing(src, out, lambda n: None)
            out.flush()
            os.fsync(out.fileno())
        if sha != tool.sha256:  # the cache's blob changed under us
            raise BuildError(f"{tool.path}: lockkit's own wheel changed in the cache "
                             f"(sha256 {sha}, built as {tool.sha256})", hint="run it again")
        os.replace(tmp, dest)
    except OSError as exc:
        raise WriteError(f"{dest}: cannot write: {exc.strerror or exc}") from None
    finally:
        tmp.unlink(missing_ok=True)
