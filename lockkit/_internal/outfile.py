"""The one rule for the files lockkit writes where the user says (``-o``, ``--junit``), and
the one code that writes them: :mod:`lockkit._internal.outdir`'s rule, for files.

``export -o``, ``wheelhouse pack -o`` (and its ``<archive>.sha256``), ``wheelhouse sbom -o``,
``ci github -o`` and ``verify --junit`` each write one file, and a second run replaces what
the first wrote. A file is written at a path only when the path is

- missing (a symlink to nothing is refused: where it would write is not what was named);
- a file lockkit wrote, of the same kind, recognised by its content (each writer gives its
  recogniser: the export's header, the archive's manifest, the SBOM's tool entry, the
  JUnit report's ``lockkit_version`` property, the workflow's header line);
- any other regular file only with ``--force``;
- a character device, a FIFO or ``/dev/std*``: written through, never replaced.

A symlink is the file it points to: that file is judged and rewritten, the link kept. The
command's own inputs (the project's config, its requirement files, its locks, the folder
being packed or read) are never written, ``--force`` or not. ``-`` is stdout.

:func:`check` says so before any work starts, with one line naming the file and what it
is; :func:`write` and :func:`stream` check again at the moment they write. A regular file
is written atomically (temp file in its folder with the umask's mode, fsync, rename).
"""

from __future__ import annotations

import os
import re
import stat
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Literal

from lockkit.errors import OutputError, WriteError

__all__ = ["STDOUT", "Inputs", "Target", "argument", "check", "head", "project_inputs",
           "stream", "write"]

STDOUT = "-"  # ``-o -``: the output goes to stdout (a file named "-" is ``./-``)
_FD = re.compile(r"/(?:dev/fd|proc/self/fd)/(\d+)")  # an open descriptor, by its path
_STD = {"/dev/stdin": 0, "/dev/stdout": 1, "/dev/stderr": 2}
_LOCK = re.compile(r"pylock\..+\.toml")  # locks/pylock.<platform>.toml
_CHOOSE = "choose another file"

Recognise = Callable[[Path], bool]  # the file at this path is one lockkit wrote (this kind)
Given = Path | str  # a path, or STDOUT


def argument(value: str) -> Given:
    """argparse's ``type`` for an output flag: ``-`` is stdout, anything else a path
    (``./-`` names a file called ``-``)."""
    return STDOUT if value == STDOUT else Path(value)


class Inputs:
    """What a command reads: files by path, and folders whose every path is an input
    (the wheelhouse packed or read); a project's locks folder refuses any lock's name."""

    __slots__ = ("files", "folders", "locks")

    def __init__(self, files: Iterable[tuple[Path, str]] = (),
                 folders: Iterable[tuple[Path, str]] = (), locks: Path | None = None) -> None:
        self.files = {_real(p): what for p, what in files}
        self.folders = [(_real(p), what) for p, what in folders]
        self.locks = _real(locks) if locks is not None else None

    def add(self, *, files: Iterable[tuple[Path, str]] = (),
            folders: Iterable[tuple[Path, str]] = ()) -> Inputs:
        self.files.update({_real(p): what for p, what in files})
        self.folders += [(_real(p), what) for p, what in folders]
        return self

    def which(self, real: Path) -> str | None:
        """What input *real* (a resolved path) is, or None."""
        if real in self.files:
            return self.files[real]
        if self.locks is not None and real.parent == self.locks and _LOCK.fullmatch(real.name):
            return "a lock of the project"
        for folder, what in self.folders:
            if real == folder or folder in real.parents:
                return f"inside {what}"
        return None


def project_inputs(root: Path, config_file: Path | None = None,
                   requirements: Iterable[str] = ()) -> Inputs:
    """A project's inputs: lockkit.toml, pyproject.toml, the config file, the requirement
    files it names, and every ``locks/pylock.*.toml``."""
    files = [(root / "lockkit.toml", "the project's config"),
             (root / "pyproject.toml", "the project's pyproject.toml"),
             *[(root / r, "a requirement file of the project") for r in requirements]]
    if config_file is not None:
        files.append((config_file, "the project's config"))
    return Inputs(files, locks=root / "locks")


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


class Target:
    """Where an output goes: *kind* ``stdout``, ``through`` (a device, a FIFO or an open
    descriptor: *fd* when it is one of this process's), or ``file`` (the regular file
    *path*, a symlink's target); *shown* is the path as the user gave it."""

    __slots__ = ("fd", "force", "given", "inputs", "kind", "path", "recognise", "shown",
                 "what")

    def __init__(self, kind: Literal["stdout", "through", "file"], path: Path | None,
                 given: Given, *, what: str, recognise: Recognise, inputs: Inputs | None,
                 force: bool, shown: str, fd: int | None = None) -> None:
        self.kind, self.path, self.given, self.fd = kind, path, given, fd
        self.what, self.recognise, self.inputs, self.force = what, recognise, inputs, force
        self.shown = shown

    @property
    def to_stdout(self) -> bool:
        """The output is this process's stdout (``-``, ``/dev/stdout``, ``/dev/fd/1``):
        whatever else the command prints there goes to stderr instead."""
        return self.kind == "stdout" or self.fd == 1


def check(given: Given, *, what: str, recognise: Recognise, inputs: Inputs | None = None,
          force: bool = False, flag: str | None = None) -> Target:
    """Where to write *given*, or a :class:`ConfigError` naming it and what is there.
    *what* names the kind of file lockkit writes there ("an export"), *recognise* tells
    one; *flag* the option the path came from."""
    if given == STDOUT:
        return Target("stdout", None, given, what=what, recognise=recognise, inputs=inputs,
                      force=force, shown="stdout", fd=1)
    path = Path(given)
    shown = _shown(f"{flag} {path}" if flag else str(path))

    def target(kind: Literal["through", "file"], at: Path, fd: int | None = None) -> Target:
        return Target(kind, at, given, what=what, recognise=recognise, inputs=inputs,
                      force=force, shown=shown, fd=fd)

    fd = _descriptor(path)
    if fd is not None:
        return target("through", path, fd)
    if path.is_symlink() and not path.exists():
        raise OutputError(f"{shown}: a symlink to {_shown(os.readlink(path))}, which does "
                          f"not exist; {_CHOOSE}")
    real = _real(path)
    found = inputs.which(real) if inputs is not None else None
    if found:
        raise OutputError(f"{shown}: {found}, an input of this command; not even --force "
                          f"overwrites it; {_CHOOSE}")
    try:
        st = os.stat(real)
    except FileNotFoundError:
        return target("file", real)
    except OSError as exc:
        raise OutputError(f"{shown}: cannot be looked at ({exc.strerror}); {_CHOOSE}") from None
    if stat.S_ISCHR(st.st_mode) or stat.S_ISFIFO(st.st_mode):
        return target("through", real)
    if not stat.S_ISREG(st.st_mode):
        raise OutputError(f"{shown}: {_kind(st.st_mode)}, not a file; {_CHOOSE}")
    if not force and not recognise(real):
        raise OutputError(f"{shown}: a file lockkit did not write (not {what}); --force "
                          "overwrites it")
    return target("file", real)


def _descriptor(path: Path) -> int | None:
    """The descriptor ``/dev/stdout``, ``/dev/fd/N`` or ``/proc/self/fd/N`` names, when it is
    open in this process: written as it is (never reopened: another user's pipe or a file
    opened for appending stays as the shell made it)."""
    name = os.path.normpath(os.path.abspath(path))
    match = _FD.fullmatch(name)
    fd = _STD.get(name, int(match.group(1)) if match else None)
    if fd is None:
        return None
    try:
        os.fstat(fd)
    except OSError:
        return None
    return fd


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISBLK(mode):
        return "a block device"
    return "a socket" if stat.S_ISSOCK(mode) else "not a regular file"


def _shown(name: str) -> str:
    """*name* as one line: a control character or line break is escaped."""
    return name if name.isprintable() else ascii(name)


def head(path: Path, limit: int) -> bytes | None:
    """The first *limit* bytes of the regular file *path* (never a link, a FIFO or a
    device), for a recogniser; None when it is not one or cannot be read."""
    from lockkit._internal.private import open_regular

    opened = open_regular(path)
    if opened is None:
        return None
    fd, st = opened
    try:
        with os.fdopen(fd, "rb", closefd=False) as fh:
            return fh.read(min(limit, st.st_size + 1))
    except OSError:
        return None
    finally:
        os.close(fd)


def write(target: Target, data: str | bytes) -> None:
    """Write *data* (text is UTF-8, ``\\n`` line ends) to *target*: a regular file
    atomically, anything else through."""
    with stream(target) as fh:
        fh.write(data.encode("utf-8") if isinstance(data, str) else data)


@contextmanager
def stream(target: Target) -> Iterator[IO[bytes]]:
    """A binary file to write *target* through. A regular file is a temp file beside it,
    renamed over it when the block ends without an error (the rule checked again first),
    removed otherwise; stdout, a descriptor, a device or a FIFO is written as it is."""
    if target.kind == "stdout":
        with _stdout() as fh:
            yield fh
        return
    if target.fd is not None:
        if target.fd == 1 and sys.stdout is not None:
            sys.stdout.flush()  # what was printed before stays before
        with os.fdopen(target.fd, "wb", closefd=False) as fh:
            yield fh
        return
    assert target.path is not None
    if target.kind == "through":
        with _through(target) as fh:
            yield fh
        return
    with _atomic(target, target.path) as fh:
        yield fh


@contextmanager
def _stdout() -> Iterator[IO[bytes]]:
    """Python's stdout, as bytes (what was printed on it before stays before)."""
    if sys.stdout is None:  # closed (``>&-``): what would go there is dropped
        with open(os.devnull, "wb") as null:
            yield null
        return
    sys.stdout.flush()
    fh = sys.stdout.buffer
    yield fh
    fh.flush()


@contextmanager
def _through(target: Target) -> Iterator[IO[bytes]]:
    """A device or FIFO opened for writing: never created, never truncated, never renamed."""
    assert target.path is not None
    try:
        fd = os.open(target.path, os.O_WRONLY | getattr(os, "O_NOCTTY", 0))
    except OSError as exc:
        raise WriteError(f"{target.shown}: cannot write: {exc.strerror or exc}") from None
    with os.fdopen(fd, "wb") as fh:
        yield fh


@contextmanager
def _atomic(target: Target, path: Path) -> Iterator[IO[bytes]]:
    from lockkit._internal.fs import temp_file

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = temp_file(path.parent, f".{path.name}.", ".tmp")
    except OSError as exc:
        raise WriteError(f"{target.shown}: cannot write: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        again = check(target.given, what=target.what, recognise=target.recognise,
                      inputs=target.inputs, force=target.force)
        if again.kind != "file" or again.path != path:
            raise WriteError(f"{target.shown}: changed while lockkit wrote it; nothing "
                             "written")
        os.replace(tmp, path)
    except OSError as exc:
        raise WriteError(f"{target.shown}: cannot write: {exc.strerror or exc}") from None
    finally:
        tmp.unlink(missing_ok=True)
