"""Files changed behind lockkit's back, as a tampering user (or a tool) would."""

from __future__ import annotations

import os
import stat
from pathlib import Path

__all__ = ["rewrite_in_place"]


def rewrite_in_place(path: Path, data: bytes) -> None:
    """New bytes of the same size in the same inode, its mode and mtime put back: only its
    ctime tells (the identity rule of lockkit.cache.identity relies on that)."""
    st = path.stat()
    assert len(data) == st.st_size
    os.chmod(path, 0o644)
    with open(path, "r+b") as fh:
        fh.write(data)
    os.chmod(path, stat.S_IMODE(st.st_mode))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    after = path.stat()
    assert (after.st_ino, after.st_size, after.st_mtime_ns, after.st_mode) == \
        (st.st_ino, st.st_size, st.st_mtime_ns, st.st_mode)
