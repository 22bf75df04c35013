"""Terminal output: rich on a terminal, plain lines when piped.

rich is imported only when a terminal is attached: importing it costs ~0.13 s,
which is most of lockkit's fixed overhead in CI logs and benchmarks, where
nobody sees colours or spinners anyway.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TextIO

__all__ = ["console", "interactive", "print_table", "progress", "say"]


def interactive(stream: TextIO | None = None) -> bool:
    stream = stream or sys.stderr
    return stream.isatty() and os.environ.get("TERM") != "dumb"


def console(stream: TextIO | None = None) -> Any:
    from rich.console import Console

    return Console(file=stream or sys.stderr)


def say(message: str, stream: TextIO | None = None) -> None:
    """One status line on stderr (never markup: messages carry user data)."""
    print(message, file=stream or sys.stderr, flush=True)


def print_table(title: str, columns: Sequence[str], rows: Sequence[Sequence[Any]],
                stream: TextIO | None = None) -> None:
    stream = stream or sys.stderr
    cells = [[("" if c is None else str(c)) for c in row] for row in rows]
    if interactive(stream):
        from rich.table import Table

        table = Table(title=title)
        for col in columns:
            table.add_column(col)
        for row in cells:
            table.add_row(*row)
        console(stream).print(table)
        return
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
    for row in [list(columns), *cells]:
        print("  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip(), file=stream)


@contextlib.contextmanager
def progress(description: str, total: float | None, *, bytes_: bool = False
             ) -> Iterator[Callable[[float], None]]:
    """Yield ``advance(n)``; a rich bar on a terminal, silent otherwise."""
    if not interactive():
        yield lambda n=1: None
        return
    from rich.progress import (BarColumn, DownloadColumn, MofNCompleteColumn, Progress,
                               SpinnerColumn, TextColumn, TimeElapsedColumn,
                               TransferSpeedColumn)

    cols: list[Any] = [SpinnerColumn(), TextColumn("{task.description}"), BarColumn()]
    cols += [DownloadColumn(), TransferSpeedColumn()] if bytes_ else [MofNCompleteColumn()]
    with Progress(*cols, TimeElapsedColumn(), console=console(), transient=True) as bar:
        task = bar.add_task(description, total=total)
        yield lambda n=1: bar.advance(task, n)
