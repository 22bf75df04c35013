"""Terminal output: rich on a terminal, plain lines when piped; every status line, warning
and error through the ``lockkit`` logger (:mod:`lockkit._internal.log`: ``-v``, ``-q``).

rich is imported only when a terminal is attached: importing it costs ~0.13 s,
which is most of lockkit's fixed overhead in CI logs and benchmarks, where
nobody sees colours or spinners anyway.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Protocol

from lockkit._internal import log

if TYPE_CHECKING:
    import logging
    from typing import Any, TextIO


__all__ = ["Advance", "Transfer", "console", "error", "fetch_summary", "human_size",
           "interactive", "progress", "quiet", "say", "transfer", "warn"]


def interactive(stream: TextIO | None = None) -> bool:
    stream = stream or sys.stderr
    return stream.isatty() and os.environ.get("TERM") != "dumb"


def console(stream: TextIO | None = None) -> Any:
    from rich.console import Console

    return Console(file=stream or sys.stderr)


class Advance(Protocol):
    """What :func:`progress` yields: move the bar by *n*, and say what it is doing now."""

    def __call__(self, n: float = 1, description: str | None = None) -> None: ...


def say(message: str) -> None:
    """One status line on stderr (never markup: messages carry user data), redacted (a URL
    in one may carry credentials) by the ``lockkit`` logger's handler: its INFO, which
    ``-q`` drops."""
    _logger().info(message)


def warn(message: str) -> None:
    """``warning: <message>`` on stderr; ``-q`` drops it."""
    _logger().warning("warning: %s", message)


def error(message: str) -> None:
    """An error line on stderr, as given (``lockkit: error: ...``, ``hint: ...``): the one
    kind of line ``-q`` keeps."""
    _logger().error(message)


def quiet() -> bool:
    """``-q``: status lines, warnings and progress bars are off."""
    return log.quiet()


def _logger() -> logging.Logger:
    return log.logger()


def human_size(n: int) -> str:
    """*n* bytes in decimal units (1 MB = 10**6 bytes), spelled as rich's progress bars
    spell them (``rich.filesize.decimal``: ``1 byte``, ``512 bytes``, ``16.4 MB``), so
    that a status line and the bar beside it show the same bytes the same way, as pip's
    do. Written out here: importing rich costs what a piped run never needs."""
    if n == 1:
        return "1 byte"
    if n < 1000:
        return f"{n:,} bytes"
    unit, suffix = 1000, "kB"
    for suffix in ("kB", "MB", "GB", "TB", "PB"):
        if n < unit * 1000 or suffix == "PB":
            break
        unit *= 1000
    return f"{n / unit:,.1f} {suffix}"


def _once(message: str | None) -> Callable[[], None]:
    """Say *message* the first time the result is called, from any thread (list.pop is
    atomic): a phase line off a terminal, printed when its work first moves, so a refusal
    found before (a bad --out, a tampered folder) is still the first line."""
    pending = [message] if message else []

    def announce() -> None:
        if pending:
            try:
                say(pending.pop())
            except IndexError:
                pass
    return announce


@contextlib.contextmanager
def progress(description: str, total: float | None, *, bytes_: bool = False,
             phase: str | None = None) -> Iterator[Advance]:
    """Yield ``advance(n, description=None)``; a rich bar on a terminal, whose text
    *description* replaces (what the current part of the work is). Off one (a CI log),
    *phase* is said once, as pip says 'Collecting ...', when the work first advances."""
    if quiet() or not interactive():
        announce = _once(phase)

        def ignore(n: float = 1, description: str | None = None) -> None:
            announce()

        yield ignore
        return
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        MofNCompleteColumn,
        Progress,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
        TransferSpeedColumn,
    )

    cols: list[Any] = [SpinnerColumn(), TextColumn("{task.description}", markup=False),
                       BarColumn()]
    cols += [DownloadColumn(), TransferSpeedColumn()] if bytes_ else [MofNCompleteColumn()]
    with Progress(*cols, TimeElapsedColumn(), console=console(), transient=True) as bar:
        hidden = log.hidden()
        task = bar.add_task(hidden.redact(description), total=total)

        def advance(n: float = 1, description: str | None = None) -> None:
            bar.update(task, advance=n,
                       description=None if description is None else hidden.redact(description))

        yield advance



class Transfer:
    """What a download loop reports: ``file_done()`` and ``moved(n)`` bytes (thread-safe).

    A file that needed no download says so in ``file_done(local=..., size=...)``: its
    bytes leave the bar's "to download" and are shown as what they are ("16.4 MB from the
    cache"): a warm rebuild's bar read "downloaded 0.0/16.4 MB" when nothing was left to
    download."""

    def __init__(self, bar: Any = None, files: Any = None, data: Any = None,
                 phase: str | None = None) -> None:
        self._bar, self._files, self._data = bar, files, data
        self._announce = _once(phase if bar is None else None)
        self._lock = threading.Lock()

    def file_done(self, local: str | None = None, size: int = 0, sized: bool = True) -> None:
        """One file more is in hand: *local* says where from when it was not downloaded
        (the cache), *size* its bytes, *sized* whether the bar's total counted them (the
        lock gave its size); a downloaded file of unknown size joins the total now."""
        self._announce()
        if self._bar is None:
            return
        self._bar.advance(self._files, 1)
        if local is None and sized:
            return
        with self._lock:  # one file's update of the bytes row at a time
            task = next(t for t in self._bar.tasks if t.id == self._data)
            total, unknown = task.total, task.fields.get("unknown", 0)
            kept = dict(task.fields.get("local", {}))
            if not sized:
                unknown = max(unknown - 1, 0)
            if local is not None:
                kept[local] = kept.get(local, 0) + size
                if sized and total is not None:
                    total = max(total - size, task.completed)
            elif total is not None:  # downloaded: its size is known now
                total += size
            elif not unknown:  # the last of the files of unknown size: all downloaded
                total = task.completed
            self._bar.update(self._data, total=total, local=kept, unknown=unknown)

    def moved(self, n: int) -> None:
        """*n* more bytes; a bar only ever moves forward (a negative *n* is a caller's bug,
        shown as a speed below zero)."""
        self._announce()
        if self._bar is not None and n > 0:
            self._bar.advance(self._data, n)


def fetch_summary(files: int, total: int, unknown: int) -> str:
    """``11 files (26.1 MB, 1 of unknown size)``: a file the lock gives no size for is
    counted as one, never left out of the sum in silence."""
    sizes = [human_size(total)] if total or not unknown else []
    sizes += [f"{unknown} of unknown size"] if unknown else []
    return f"{files} files ({', '.join(sizes)})"


@contextlib.contextmanager
def transfer(description: str, files: int, total_bytes: int | None,
             phase: str | None = None, unknown: int = 0) -> Iterator[Transfer]:
    """One display, two rows: files done of total, and bytes with speed; piped, *phase*
    once, when the first file or byte moves. *total_bytes*: the sizes the lock gives;
    *unknown*: the files it gives none for (the bytes row says "+ N of unknown size")."""
    if quiet() or not interactive():
        yield Transfer(phase=phase)
        return
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        MofNCompleteColumn,
        Progress,
        ProgressColumn,
        TextColumn,
        TimeElapsedColumn,
        TransferSpeedColumn,
    )

    class _Amount(ProgressColumn):
        """Files as M/N; bytes as downloaded/to download (rich's decimal units, as
        :func:`human_size`), the files of unknown size, the speed, and what came from
        where without a download."""

        def __init__(self) -> None:
            super().__init__()
            self._count, self._size = MofNCompleteColumn(), DownloadColumn()
            self._speed = TransferSpeedColumn()

        def render(self, task: Any) -> Any:
            if task.fields.get("unit") == "files":
                return self._count.render(task)
            from rich.text import Text

            parts: list[Any] = [self._size.render(task)]
            if task.fields.get("unknown"):
                parts.append(f" + {task.fields['unknown']} of unknown size")
            parts += [" ", self._speed.render(task)]
            for where, size in task.fields.get("local", {}).items():
                parts.append(f", {human_size(size)} {where}")
            return Text.assemble(*parts)

    with Progress(TextColumn("{task.description}", markup=False), BarColumn(20), _Amount(),
                  TimeElapsedColumn(), console=console(), transient=True) as bar:
        f = bar.add_task(log.hidden().redact(description), total=files, unit="files")
        b = bar.add_task("downloaded", total=total_bytes if total_bytes or not unknown else None,
                         unit="bytes", unknown=unknown, local={})
        yield Transfer(bar, f, b)
