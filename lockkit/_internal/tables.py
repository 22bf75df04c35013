"""Result tables that fit the width they are shown in: a terminal's, or ``$COLUMNS`` off
one. Names stay whole, long values (a URL) move to a table of their own, text wraps at
spaces; rich draws them on a terminal (:func:`lockkit._internal.ui.console`, the one
console), plain aligned text elsewhere.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from lockkit._internal import ui

if TYPE_CHECKING:
    from typing import TextIO

    from lockkit._internal.redact import Secrets

__all__ = ["print_table"]


def print_table(title: str, columns: Sequence[str], rows: Sequence[Sequence[Any]],
                stream: TextIO | None = None, *, secrets: Secrets,
                whole: Sequence[str] = (), detail: Sequence[str] = ()) -> None:
    """A table (a step's note may hold an error's text: every cell is redacted with the
    project's *secrets*, as :func:`lockkit._internal.ui.say` redacts its line). Cells are
    text, never rich markup: a package's ``torch[cuda]`` is shown as it is.

    It fits the width: a terminal's, or ``$COLUMNS`` off one (as
    ``shutil.get_terminal_size`` reads it; unset, piped rows are never cut). Where the
    table is wider, the columns named in *detail* (a URL) leave it for a second table
    keyed by the first *whole* column; then columns wrap at spaces, and a word is folded
    only where the width leaves no other way (:func:`_fitted`); the columns named in
    *whole* (a platform's or a wheel's name) are never cut: where they cannot be kept
    whole in a table, each row is shown as lines (:func:`_stacked`)."""
    stream = stream or sys.stderr
    if stream is sys.stderr and ui.quiet():
        return
    title = secrets.redact(title)
    cells = [[secrets.redact("" if c is None else str(c)) for c in row] for row in rows]
    width = _width(stream)
    moved = [c for c in detail if c in columns]
    key = columns.index(next((c for c in columns if c in whole), columns[0]))
    kept = [i for i, c in enumerate(columns) if c not in moved]
    if not moved or width is None or _fits(columns, cells, range(len(columns)), (), width,
                                           stream) or not _fits(columns, cells, kept, whole,
                                                                width, stream):
        _one_table(title, columns, cells, whole, width, stream)  # as lines where it must
        return
    _one_table(title, [columns[i] for i in kept], [[r[i] for i in kept] for r in cells],
               whole, width, stream)
    aside = [key, *(columns.index(c) for c in moved)]
    _one_table(f"{title}: {', '.join(moved)}", [columns[i] for i in aside],
               [[r[i] for i in aside] for r in cells], (*whole, *moved), width, stream)


def _fits(columns: Sequence[str], cells: Sequence[Sequence[str]], which: Sequence[int],
          whole: Sequence[str], width: int, stream: TextIO) -> bool:
    """The columns *which* make a table of *width* (as they are, with no *whole*; else
    wrapped, the *whole* ones kept whole)."""
    shown = [columns[i] for i in which]
    fitted = _fitted(shown, [[r[i] for i in which] for r in cells],
                     width - _chrome(stream, shown), [c in whole for c in shown])
    return fitted is not None and (bool(whole) or fitted == [None] * len(shown))


def _width(stream: TextIO) -> int | None:
    """The terminal's width, or ``$COLUMNS`` off a terminal; None: no limit."""
    if ui.interactive(stream):
        return int(ui.console(stream).width)
    try:
        return int(os.environ["COLUMNS"]) or None
    except (KeyError, ValueError):
        return None


def _chrome(stream: TextIO, columns: Sequence[str]) -> int:
    """The characters a table spends beside its cells: rich's borders and padding, or the
    two spaces between plain columns."""
    return 3 * len(columns) + 1 if ui.interactive(stream) else 2 * (len(columns) - 1)


def _one_table(title: str, columns: Sequence[str], cells: Sequence[Sequence[str]],
               whole: Sequence[str], width: int | None, stream: TextIO) -> None:
    keep = [c in whole for c in columns]
    fitted = ([None] * len(columns) if width is None else
              _fitted(columns, cells, width - _chrome(stream, columns), keep))
    if fitted is None:
        _stacked(title, columns, cells, whole, width or 80, stream)
    elif ui.interactive(stream):
        from rich.table import Column, Table
        from rich.text import Text

        table = Table(*(Column(Text(c), width=w, overflow="fold", no_wrap=k)
                        for c, w, k in zip(columns, fitted, keep, strict=True)),
                      title=Text(title))
        for row in cells:
            table.add_row(*map(Text, row))
        ui.console(stream).print(table)
    else:
        _plain(title, columns, cells, fitted, width, stream)


def _plain(title: str, columns: Sequence[str], cells: Sequence[Sequence[str]],
           fitted: Sequence[int | None], width: int | None, stream: TextIO) -> None:
    """Aligned text, each cell wrapped at spaces to its fitted width (None: as it is)."""
    import itertools
    import textwrap

    def lines(text: str, w: int | None) -> list[str]:
        return [part for ln in text.splitlines() or [""] for part in (
            textwrap.wrap(ln, w, break_on_hyphens=False) or [""] if w else [ln])]

    print("\n".join(textwrap.wrap(title, width, break_long_words=False,
                                  break_on_hyphens=False) if width else [title]), file=stream)
    table = [[lines(v, w) for v, w in zip(row, fitted, strict=True)]
             for row in [list(columns), *cells]]
    widths = [max(len(ln) for row in table for ln in row[i]) for i in range(len(columns))]
    for row in table:
        for parts in itertools.zip_longest(*row, fillvalue=""):
            print("  ".join(v.ljust(w) for v, w in zip(parts, widths, strict=True)).rstrip(),
                  file=stream)


_NARROWEST = 8  # a column folded narrower than this reads as noise


def _fitted(columns: Sequence[str], cells: Sequence[Sequence[str]], room: int,
            whole: Sequence[bool]) -> list[int | None] | None:
    """Column widths that fit *room* characters (the terminal less the table's borders
    and padding): None for each when the table fits as it is. The widest column shrinks
    first, down to its longest word (its text wraps at spaces, no word cut); then the
    words of the columns not *whole* are folded, down to a few characters; None when the
    *whole* columns still do not fit (rich alone narrows every column alike, and cut a
    wheel's file name and its tags at 80 columns)."""
    words = [[*col.split(), *(w for r in cells for w in r[i].split())]
             for i, col in enumerate(columns)]
    full = [max([len(c)] + [len(ln) for r in cells for ln in r[i].splitlines()])
            for i, c in enumerate(columns)]
    if sum(full) <= room:
        return [None] * len(columns)
    longest = [max((len(w) for w in ws), default=1) for ws in words]
    widths = list(full)
    folded = [n if keep else min(n, _NARROWEST) for n, keep in zip(longest, whole, strict=True)]
    for floor in (longest, folded) if any(whole) else (longest, folded, [1] * len(columns)):
        while sum(widths) > room:
            slack = [w - f for w, f in zip(widths, floor, strict=True)]
            if max(slack) <= 0:
                break
            widest = max((i for i, s in enumerate(slack) if s > 0), key=lambda i: widths[i])
            widths[widest] -= 1
    return list(widths) if sum(widths) <= room else None


def _stacked(title: str, columns: Sequence[str], cells: Sequence[Sequence[str]],
             whole: Sequence[str], width: int, stream: TextIO) -> None:
    """A table too wide for the terminal, row by row: the *whole* columns' values on a
    line each, then the other columns as ``name value``, wrapped at spaces only."""
    import textwrap

    print(title, file=stream)
    for row in cells:
        named = dict(zip(columns, row, strict=True))
        for column in whole:
            print(named[column], file=stream)
        rest = "; ".join(f"{c} {v}" for c, v in named.items() if c not in whole and v)
        for line in textwrap.wrap(rest, width, initial_indent="  ", subsequent_indent="  ",
                                  break_long_words=False, break_on_hyphens=False):
            print(line, file=stream)
