"""Files and folders every stage writes the same way: the user's umask modes, temp files
and folders (made with Ctrl-C held), atomic writes, file hashes."""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
from pathlib import Path

from lockkit._internal.endings import interrupt_held
from lockkit.errors import ConfigError, WriteError

__all__ = ["dir_mode", "file_mode", "ignored_folder", "sha256_file", "temp_dir",
           "temp_file", "temp_folder", "temp_private", "umask", "write_atomic"]

_UMASK_LOCK = threading.Lock()
_umask_set_once: list[int] = []  # the fallback's answer, read once (see umask)


def umask() -> int:
    """The process's umask, read without changing it.

    ``os.umask`` can only read the mask by setting another one, and a file another thread
    creates in between gets the wrong mode; Linux (>= 4.7) shows the mask in
    ``/proc/self/status``, which is read each time (a few microseconds, and a caller that
    changes its umask gets the new one). Elsewhere the set-and-restore is done once, under a
    lock and through 077 (a file made in the window is private, never open), and cached.
    """
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    with _UMASK_LOCK:
        if not _umask_set_once:
            mask = os.umask(0o077)
            os.umask(mask)
            _umask_set_once.append(mask)
    return _umask_set_once[0]


def file_mode() -> int:
    """A new file's mode under the user's umask: 0644 under 022, 0640 under 027."""
    return 0o666 & ~umask()


def dir_mode() -> int:
    """A new folder's mode under the user's umask: 0755 under 022, 0750 under 027."""
    return 0o777 & ~umask()


def temp_dir(parent: Path, prefix: str) -> Path:
    """``mkdtemp`` in *parent*, with the mode ``mkdir`` would give (mkdtemp makes 0700): the
    folder is renamed into place as the result, which other users may have to read. Its
    name carries this process (:func:`lockkit._internal.leftovers.owner_tag`): a later run
    removes it if this one is killed."""
    from lockkit._internal.leftovers import hold, owner_tag

    path = Path(tempfile.mkdtemp(prefix=prefix + owner_tag(), dir=parent))
    hold(path)
    os.chmod(path, dir_mode())
    return path


def temp_file(parent: Path, prefix: str, suffix: str = "") -> tuple[int, Path]:
    """``mkstemp`` in *parent* (an open fd and its path), with the mode ``open`` would give
    (mkstemp makes 0600), for a file that is renamed into place as the result."""
    fd, name = tempfile.mkstemp(prefix=prefix, suffix=suffix, dir=parent)
    try:
        os.chmod(name, file_mode())
    except BaseException:
        os.close(fd)
        Path(name).unlink(missing_ok=True)
        raise
    return fd, Path(name)


def ignored_folder(folder: Path, *, committed: tuple[str, ...] = ()) -> Path:
    """*folder*, made (parents too) if missing; one made here gets a ``.gitignore`` holding
    ``*``, as uv's ``.venv``: lockkit's outputs in a project (``wheelhouse/``, ``.lockkit/``)
    stay out of a ``git add .``, except the sub-folders *committed* names (``.lockkit/ci/``:
    the wheel the generated workflow installs by hash must be committed). A folder that
    exists (the user's) is never written into."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    try:
        folder.mkdir()
    except FileExistsError:
        return folder
    write_atomic(folder / ".gitignore",
                 "*\n" + "".join(f"!/{name}/\n!/{name}/**\n" for name in committed))
    return folder


def write_atomic(path: Path, text: str) -> None:
    """Temp file in the same folder, fsync, rename: never a half-written file.

    A folder that cannot be written (read-only, full) is a WriteError naming *path*.
    """
    if path.is_dir():
        raise ConfigError(f"{path}: is a folder, where a file is to be written",
                          hint="move the folder away")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = temp_file(path.parent, f".{path.name}.")
    except OSError as exc:
        raise WriteError(f"{path}: cannot write: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise WriteError(f"{path}: cannot write: {exc.strerror or exc}") from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def temp_folder(prefix: str) -> tempfile.TemporaryDirectory[str]:
    """A :class:`tempfile.TemporaryDirectory` in TMPDIR, removed when its ``with`` block
    ends (or at exit); made with Ctrl-C held, so that no interrupt falls between the
    folder's creation and its removal being arranged. Its name carries this process, and
    the folders killed runs left in TMPDIR are swept first (:mod:`lockkit._internal.leftovers`)."""
    from lockkit._internal.leftovers import hold, owner_tag, sweep_temp

    sweep_temp()
    with interrupt_held() as held:
        folder = tempfile.TemporaryDirectory(prefix=prefix + owner_tag())
    hold(folder.name)
    held.reraise()  # the folder's finalizer removes it
    return folder


def temp_private(prefix: str) -> Path:
    """A private (0700) work folder in TMPDIR that the caller removes, named for this
    process; the folders killed runs left in TMPDIR are swept first."""
    from lockkit._internal.leftovers import hold, owner_tag, sweep_temp

    sweep_temp()
    path = Path(tempfile.mkdtemp(prefix=prefix + owner_tag()))
    hold(path)
    return path
