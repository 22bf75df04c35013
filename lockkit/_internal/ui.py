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
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Protocol

from lockkit._internal import log
from lockkit._internal.redact import redact

if TYPE_CHECKING:
    import logging
    from typing import Any, TextIO

__all__ = ["Advance", "Transfer", "console", "error", "interactive", "print_table", "progress",
           "quiet", "say", "transfer", "warn"]


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


def print_table(title: str, columns: Sequence[str], rows: Sequence[Sequence[Any]],
                stream: TextIO | None = None) -> None:
    """A table (a step's note may hold an error's text: every cell is redacted, as
    :func:`say` redacts its line)."""
    stream = stream or sys.stderr
    if stream is sys.stderr and quiet():
        return
    title = redact(title)
    cells = [[redact("" if c is None else str(c)) for c in row] for row in rows]
    if interactive(stream):
        from rich.table import Table

        table = Table(title=title)
        for col in columns:
            table.add_column(col)
        for row in cells:
            table.add_row(*row)
        console(stream).print(table)
        return
    print(title, file=stream)
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
    for row in [list(columns), *cells]:
        print("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip(), file=stream)


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

    cols: list[Any] = [SpinnerColumn(), TextColumn("{task.description}"), BarColumn()]
    cols += [DownloadColumn(), TransferSpeedColumn()] if bytes_ else [MofNCompleteColumn()]
    with Progress(*cols, TimeElapsedColumn(), console=console(), transient=True) as bar:
        task = bar.add_task(redact(description), total=total)

        def advance(n: float = 1, description: str | None = None) -> None:
            bar.update(task, advance=n,
                       description=None if description is None else redact(description))

        yield advance



class Transfer:
    """What a download loop reports: ``file_done()`` and ``moved(n)`` bytes (thread-safe)."""

    def __init__(self, bar: Any = None, files: Any = None, data: Any = None,
                 phase: str | None = None) -> None:
        self._bar, self._files, self._data = bar, files, data
        self._announce = _once(phase if bar is None else None)

    def file_done(self) -> None:
        self._announce()
        if self._bar is not None:
            self._bar.advance(self._files, 1)

    def moved(self, n: int) -> None:
        """*n* more bytes; a bar only ever moves forward (a negative *n* is a caller's bug,
        shown as a speed below zero)."""
        self._announce()
        if self._bar is not None and n > 0:
            self._bar.advance(self._data, n)


@contextlib.contextmanager
def transfer(description: str, files: int, total_bytes: int | None,
             phase: str | None = None) -> Iterator[Transfer]:
    """One display, two rows: files done of total, and bytes with speed; piped, *phase*
    once, when the first file or byte moves."""
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
        """Files as M/N; bytes as size and speed."""

        def __init__(self) -> None:
            super().__init__()
            self._count, self._size = MofNCompleteColumn(), DownloadColumn()
            self._speed = TransferSpeedColumn()

        def render(self, task: Any) -> Any:
            if task.fields.get("unit") == "files":
                return self._count.render(task)
            from rich.text import Text

            return Text.assemble(self._size.render(task), " ", self._speed.render(task))

    with Progress(TextColumn("{task.description}"), BarColumn(), _Amount(),
                  TimeElapsedColumn(), console=console(), transient=True) as bar:
        f = bar.add_task(redact(description), total=files, unit="files")
        b = bar.add_task("downloaded", total=total_bytes or None, unit="bytes")
        yield Transfer(bar, f, b)
