"""The stage and old folders beside a wheelhouse being written (no memo is kept here).

A build writes its folder in a stage beside it (``.<name>.tmp-*``) and swaps it in only
when complete; :func:`sweep_stale` removes the stage and old folders of builds killed long
ago. (This module once held the build memo, a warm rebuild from the cache's record of an
earlier build; it is gone: see the README's cache section. These helpers belong with the
output folder's rules.)
"""

from __future__ import annotations

import os
import time
from pathlib import Path

__all__ = ["OLD", "STAGE", "swap", "sweep_stale"]

STAGE, OLD = "tmp-", "old-"  # the prefixes after ".<name>." of the stage and old folders
# Stage and old folders of a build older than this are debris of a killed run (the rule
# the cache applies to partial downloads); younger ones may belong to a running build.
STALE_AGE = 24 * 3600


def _remove(path: Path) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)


def swap(stage: Path, out: Path) -> None:
    """Replace *out* with the complete *stage*; the old folder survives any failure before."""
    if not out.exists():
        os.replace(stage, out)
        return
    import tempfile

    old = Path(tempfile.mkdtemp(prefix=f".{out.name}.{OLD}", dir=out.parent))
    os.replace(out, old / "x")
    try:
        os.replace(stage, out)
    except BaseException:
        os.replace(old / "x", out)
        raise
    finally:
        _remove(old)


def sweep_stale(out: Path, max_age: float = STALE_AGE) -> list[Path]:
    """Remove stage and old folders beside *out* left by builds that were killed long
    ago; a younger one may be a concurrent build's and is left alone."""
    removed: list[Path] = []
    try:
        entries = list(os.scandir(out.parent))
    except OSError:
        return removed
    now = time.time()
    prefixes = (f".{out.name}.{STAGE}", f".{out.name}.{OLD}")
    for entry in entries:
        try:
            if entry.name.startswith(prefixes) and entry.is_dir() and \
                    now - entry.stat().st_mtime > max_age:
                import shutil

                shutil.rmtree(entry.path)
                removed.append(Path(entry.path))
        except OSError:
            pass
    return removed
