"""What a killed run leaves behind, known by its name and swept by the next run.

Ctrl-C, SIGTERM and SIGHUP clean up on the way out (:mod:`lockkit._internal.endings`);
a SIGKILL, an OOM kill or a power cut cannot. So every temp folder and partial file
lockkit makes carries its maker in its name: ``<prefix><pid>@<start>-<random>``, both
numbers in base 36 to keep paths short (a venv's scripts hold its path in their ``#!``
line, which has a length limit); *start* is the process's start time in clock ticks
since boot, from ``/proc/<pid>/stat``, so that a reused pid is not taken for the maker;
0 where there is no ``/proc``. A later run, or ``cache prune``, removes such a leftover
once its maker is gone, however young it is: a run still going (this one, a concurrent
one) is never touched, and a name without the mark (a user's ``lockkit-verify-notes/``)
is never lockkit's to remove.

A pid says nothing across PID namespaces (a container sharing the folder): so the maker
also holds a shared ``flock`` on what it made (:func:`hold`) for as long as it lives, and
the kernel drops it when the process dies, however it dies. A sweep takes the lock
exclusively, without waiting, before it removes anything: a leftover still held is a run
still going, whichever namespace it runs in. No clock is compared (a wall clock stepped
back between the kill and the next run made a fresh leftover look younger than the run).

The places: the stage and old folders beside an output (:func:`lockkit._internal.outdir.
sweep_stale`), the cache's partial downloads, and the ``lockkit-*`` folders in TMPDIR
(:func:`sweep_temp`: verify's and sync's work folders, compile's, which holds the
mirrors' netrc).
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import threading
from collections.abc import Iterable
from pathlib import Path

__all__ = ["hold", "orphaned", "owner_mark", "owner_tag", "release", "say_swept", "sweep_temp"]

# <pid>@<start> (base 36), then "-" and the 8 characters mkdtemp/mkstemp add, if any
_MARK = r"([0-9a-z]{1,13})@([0-9a-z]{1,13})(?:-[a-z0-9_]{4,8})?"
_TEMP = re.compile(r"lockkit-(?:[a-z]+-)*" + _MARK)  # a folder in TMPDIR
_swept_temp = threading.Event()  # TMPDIR is swept once per process
_held: dict[str, int] = {}  # path -> the descriptor whose shared flock marks it in use
_held_lock = threading.Lock()


def _start_ticks(pid: int) -> int | None:
    """*pid*'s start time (clock ticks since boot); 0 without /proc, None: no such pid."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            stat = fh.read()
    except FileNotFoundError:
        return None if os.path.isdir("/proc/self") else 0
    except OSError:
        return 0
    try:
        return int(stat[stat.rfind(")") + 2:].split()[19])  # field 22: starttime
    except (ValueError, IndexError):
        return 0


def owner_mark() -> str:
    """``<pid>@<start>`` in base 36: this process, as the names of what it makes carry it."""
    return f"{_base36(os.getpid())}@{_base36(_start_ticks(os.getpid()) or 0)}"


def owner_tag() -> str:
    """:func:`owner_mark` and a dash: the prefix of a mkdtemp or mkstemp name."""
    return owner_mark() + "-"


def _base36(n: int) -> str:
    digits = ""
    while True:
        n, d = divmod(n, 36)
        digits = "0123456789abcdefghijklmnopqrstuvwxyz"[d] + digits
        if not n:
            return digits


def _gone(pid: int, start: int) -> bool:
    if pid == os.getpid():
        return False
    ticks = _start_ticks(pid)
    if ticks is None:
        return True
    if ticks and start:
        return ticks != start  # the pid is another process's now
    try:  # no /proc: alive or not, by the pid alone
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:
        pass
    return False


def orphaned(name: str, prefix: str, suffix: str = "", path: str | None = None) -> bool:
    """Whether *name* is ``<prefix><mark><suffix>``, made by a process that is gone; with
    *path* (where *name* lies), also this user's and held by no running process."""
    if not (name.startswith(prefix) and name.endswith(suffix)):
        return False
    found = re.fullmatch(_MARK, name[len(prefix):len(name) - len(suffix)])
    return found is not None and _gone(int(found[1], 36), int(found[2], 36)) and \
        (path is None or _unheld(path))


def hold(path: Path | str) -> None:
    """Mark *path* (a folder or file this process just made) in use until :func:`release`
    or this process ends: a shared ``flock`` on a descriptor of its own, which a sweep of
    another PID namespace sees where the pid in the name means nothing."""
    try:
        import fcntl
    except ImportError:  # Windows: the pid in the name is all there is
        return
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return
    with _held_lock:
        old = _held.pop(str(path), None)
        _held[str(path)] = fd
    if old is not None:
        os.close(old)


def release(path: Path | str) -> None:
    """Drop :func:`hold`'s mark on *path* (once it is renamed into place or removed)."""
    with _held_lock:
        fd = _held.pop(str(path), None)
    if fd is not None:
        os.close(fd)


def _unheld(path: str) -> bool:
    """This user's, and no live process (of any PID namespace) holds it (:func:`hold`)."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        return False
    try:
        import fcntl
    except ImportError:
        return True
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False  # held: its maker is alive, in this namespace or another
    finally:
        os.close(fd)  # closing drops the lock just taken
    return True


def sweep_temp(folder: Path | None = None) -> list[Path]:
    """Remove the ``lockkit-*`` folders in TMPDIR (or *folder*) whose maker is gone; the
    first call of a process does the work, later ones return nothing."""
    if folder is None:
        if _swept_temp.is_set():
            return []
        _swept_temp.set()
    where = Path(folder or _temp_root())
    removed = _sweep(where, [e for e in _entries(where) if _temp_orphan(e)])
    say_swept(removed)
    return removed


def _temp_root() -> str:
    """TMPDIR as :mod:`tempfile` picks it. Its first call in a process probes each candidate
    by writing a file of 8 random characters and removing it at once: a Ctrl-C (or SIGTERM)
    between the two would leave that file behind, so the probe runs with interrupts held
    (this is the first temp call of every command: :func:`lockkit._internal.fs.temp_folder`
    and ``temp_private`` sweep first)."""
    from lockkit._internal.endings import interrupt_held

    with interrupt_held() as held:
        root = tempfile.gettempdir()
    held.reraise()
    return root


def _temp_orphan(entry: os.DirEntry[str]) -> bool:
    found = _TEMP.fullmatch(entry.name)
    try:
        return found is not None and entry.is_dir(follow_symlinks=False) and \
            _gone(int(found[1], 36), int(found[2], 36)) and _unheld(entry.path)
    except OSError:
        return False


def _entries(folder: Path) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(folder) as it:
            return list(it)
    except OSError:
        return []


def _sweep(where: Path, entries: Iterable[os.DirEntry[str]]) -> list[Path]:
    removed = []
    for entry in entries:
        try:
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path)
            else:
                os.unlink(entry.path)
        except FileNotFoundError:
            pass
        except OSError:
            continue
        removed.append(where / entry.name)
    return removed


def say_swept(paths: list[Path]) -> None:
    """One stderr line for one sweep that removed something: what and where."""
    if not paths:
        return
    from lockkit._internal import ui

    shown = sorted(str(p) for p in paths)
    if len(shown) > 3:
        shown = [*shown[:2], f"{len(shown) - 2} more"]
    listed = shown[0] if len(shown) == 1 else f"{', '.join(shown[:-1])} and {shown[-1]}"
    many = "leftover" if len(paths) == 1 else "leftovers"
    ui.say(f"lockkit: swept {len(paths)} {many} of an interrupted run: {listed}")
