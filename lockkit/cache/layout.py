"""Where the download cache keeps things: its folder, its layout and how it is made.

The one list of the cache's folders (:data:`FOLDERS`) and of the folders older lockkits
made there (:data:`LEGACY`: ``cache info`` accepts them, ``cache prune`` removes them),
the default location, a blob's path, and :func:`make_root`, which creates the cache
folder private to its user (0700) whatever the umask.
"""

from __future__ import annotations

import os
import stat
import sys
import time
from pathlib import Path

__all__ = ["FOLDERS", "LEGACY", "PARTIAL_MAX_AGE", "blob_path", "default_cache_dir",
           "make_root", "sweep_partials"]

# The layout's folders: blobs by sha256, downloads under way, the memo store
# (lockkit.cache.memo) and verify's shared files (only under a private cache).
FOLDERS = ("sha256", "partial", "memo", "verify")
# What older lockkits kept beside them and nothing reads now: blob stamps (checked/), the
# SBOM, tools/ and build-plan memos, and the early compile's launch memos.
LEGACY = ("checked", "sbom", "tools", "plan", "launch")
PARTIAL_MAX_AGE = 24 * 3600  # partial downloads older than this are debris of dead runs


def default_cache_dir() -> Path:
    """The user cache folder (``LOCKKIT_CACHE_DIR`` overrides)."""
    if os.environ.get("LOCKKIT_CACHE_DIR"):
        return Path(os.environ["LOCKKIT_CACHE_DIR"])
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA", Path.home() / "AppData" / "Local"))
        return base / "lockkit" / "Cache"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "lockkit"
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "lockkit"


def blob_path(root: Path, sha256: str) -> Path:
    return root / "sha256" / sha256[:2] / sha256


def make_root(root: Path) -> None:
    """Create the cache folder *root*, 0700 whatever the umask (its parents get the
    umask's modes, as ``mkdir -p`` gives them). A folder that exists is left as it is: a
    cache shared on purpose (group-writable) stays shared, and lockkit then remembers
    nothing in it and re-checks every blob (:class:`lockkit.cache.memo.MemoStore`)."""
    try:
        os.mkdir(root, 0o700)
    except FileExistsError:
        return
    except FileNotFoundError:
        root.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.mkdir(root, 0o700)
        except FileExistsError:
            return
    st = os.lstat(root)  # mkdir's mode is masked by the umask (0o277 leaves 0500)
    if stat.S_ISDIR(st.st_mode) and stat.S_IMODE(st.st_mode) != 0o700:
        os.chmod(root, 0o700)


def sweep_partials(root: Path, max_age: float = PARTIAL_MAX_AGE) -> None:
    """Remove partial downloads left by runs that died: the process named in the file's
    name is gone (:mod:`lockkit._internal.leftovers`), or the file is older than
    *max_age*; one line says what went."""
    from lockkit._internal.leftovers import orphaned, say_swept

    try:
        entries = list(os.scandir(root / "partial"))
    except OSError:
        return
    now, removed = time.time(), []
    for part in entries:
        try:
            st = part.stat(follow_symlinks=False)
            if part.name.endswith(".part") and (orphaned(part.name, "", ".part", part.path) or
                                                now - st.st_mtime > max_age):
                os.unlink(part.path)
                removed.append(Path(part.path))
        except OSError:
            pass
    say_swept(removed)
