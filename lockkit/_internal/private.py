"""Files and folders only this user can write, read without following a link or waiting
on a FIFO: the rule by which lockkit trusts what it reads back from its own cache and memos
(ssh's StrictModes: owned by the user, writable by nobody else)."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

__all__ = ["LIMIT", "make_private_folder", "open_regular", "owned_and_closed", "private_folder",
           "read_regular"]

LIMIT = 16 * 1024 * 1024  # no memo is this large; a larger file is not one of ours


def owned_and_closed(st: os.stat_result) -> bool:
    """Owned by this user and writable by nobody else (always true where there are no
    POSIX owners: Windows keeps a user's cache under their own profile's ACLs)."""
    if sys.platform == "win32":
        return True
    return st.st_uid == os.geteuid() and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def private_folder(path: Path) -> bool:
    """*path* is a real folder (not a link) of this user's that nobody else can write."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and owned_and_closed(st)


def make_private_folder(path: Path) -> bool:
    """Create the folder *path* (missing parents too) 0700 whatever the umask; False when
    it cannot be made. A folder already there is left as it is (a shared cache stays
    shared, and is then not trusted)."""
    if os.path.lexists(path):
        return os.path.isdir(path)
    try:
        os.makedirs(path, 0o700)
        os.chmod(path, 0o700)  # what a restrictive umask took away (0500 under 0277)
    except OSError:
        return os.path.isdir(path)
    return True


def open_regular(path: Path) -> tuple[int, os.stat_result] | None:
    """A read-only descriptor of *path* and its ``fstat``, when it is a regular file: it is
    opened without following a link and without blocking (a FIFO or device is never
    waited on), then checked; None otherwise. The caller closes the descriptor."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    flags |= getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
    except OSError:
        os.close(fd)
        return None
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        return None
    return fd, st


def read_regular(path: Path, limit: int = LIMIT, *, private: bool = True) -> bytes | None:
    """The bytes of *path* when it is a regular file (:func:`open_regular`), under *limit*
    bytes and, with *private*, this user's and writable by nobody else; None otherwise."""
    opened = open_regular(path)
    if opened is None:
        return None
    fd, st = opened
    try:
        if st.st_size > limit:
            return None
        if private and not owned_and_closed(st):
            return None
        with os.fdopen(fd, "rb", closefd=False) as fh:
            data = fh.read(limit + 1)
        return data if len(data) <= limit else None
    except OSError:
        return None
    finally:
        os.close(fd)
