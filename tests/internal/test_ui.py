"""Terminal output (:mod:`lockkit._internal.ui`): one unit system for every size, the same
as rich's progress bars; files of unknown size counted; tables that keep file names and
wheel tags whole at 80 columns; text in tables and bars never read as rich markup."""

from __future__ import annotations

import io
import re

import pytest

from lockkit._internal import tables, ui
from lockkit._internal.redact import NO_SECRETS
from lockkit._internal.ui import human_size

# --- sizes ------------------------------------------------------------------------------

@pytest.mark.parametrize("n", [0, 1, 2, 999, 1000, 1049, 1050, 999_949, 999_950, 16_400_000,
                               26_123_456, 999_999_999, 1_500_000_000, 10**12])
def test_sizes_are_spelled_in_the_decimal_units_of_rich_s_progress_bars(n):
    """One unit system: the line and the bar beside it (rich's DownloadColumn and
    TransferSpeedColumn are decimal) show the same bytes the same way."""
    from rich.filesize import decimal

    assert human_size(n) == decimal(n)


def test_the_fetch_line_counts_files_of_unknown_size_rather_than_leaving_them_out():
    assert ui.fetch_summary(11, 26_100_000, 1) == "11 files (26.1 MB, 1 of unknown size)"
    assert ui.fetch_summary(3, 0, 3) == "3 files (3 of unknown size)"
    assert ui.fetch_summary(2, 2_000, 0) == "2 files (2.0 kB)"


# --- tables -----------------------------------------------------------------------------

_WHEELS = [  # real names, the longest a CUDA torch lock has
    ("torch", "2.5.1+cu124", "torch-2.5.1+cu124-cp312-cp312-manylinux_2_28_x86_64.whl",
     "906.4 MB", "https://download.pytorch.org/…"),
    ("nvidia-cuda-nvrtc-cu12", "12.4.127",
     "nvidia_cuda_nvrtc_cu12-12.4.127-py3-none-manylinux2014_x86_64.whl", "24.6 MB",
     "https://download.pytorch.org/…"),
    ("filelock", "3.16.1", "filelock-3.16.1-py3-none-any.whl", "16.2 kB",
     "http://127.0.0.1:41234/…"),
]
_TAGS = ["cp312-cp312-manylinux_2_28_x86_64", "cp311-cp311-macosx_11_0_arm64"]
_STEPS = [(1, "install", "failed", "1.02", f"no wheel of torch[cuda] matches {_TAGS[0]} or "
           f"{_TAGS[1]} in /a/long/path/to/the/project/wheelhouse/linux-cu124/{_WHEELS[0][2]}"),
          (2, "extensions", "passed", "0.40", "torch[extra] and [red]not markup[/red]")]


def _on_terminal(monkeypatch, width: int = 80) -> io.StringIO:
    """ui's rich console, as a terminal *width* columns wide would make it, into a buffer."""
    from rich.console import Console

    out = io.StringIO()
    monkeypatch.setattr(ui, "interactive", lambda stream=None: True)
    monkeypatch.setattr(ui, "console", lambda stream=None: Console(
        file=out, width=width, force_terminal=True, color_system=None))
    return out


def _tables(stream) -> None:
    tables.print_table("lockkit wheelhouse build linux-cu124",
                   ("package", "version", "file", "size", "from"), _WHEELS, stream=stream,
                   whole=("file",), secrets=NO_SECRETS)
    tables.print_table("lockkit verify linux-cu124: failed",
                   ("#", "step", "status", "seconds", "first error / reason"), _STEPS,
                   stream=stream, secrets=NO_SECRETS)
    tables.print_table("[bold]lockkit platforms[/bold]", ("name", "torch releases"),
                   [("linux-cu124", "torch[cuda] 2.4 to 2.6")], stream=stream,
                   secrets=NO_SECRETS)


@pytest.mark.parametrize("where", ["terminal", "piped"])
def test_tables_keep_file_names_and_wheel_tags_whole_at_80_columns(monkeypatch, where):
    """rich alone narrowed every column alike and cut the file names and tags; the file
    column now stays whole (rows as lines where no table of 80 columns can hold it), and
    a note wraps at spaces, folding only a path longer than its column."""
    stream = io.StringIO()
    out = _on_terminal(monkeypatch) if where == "terminal" else stream
    if where == "piped":
        monkeypatch.setattr(ui, "interactive", lambda s=None: False)
        monkeypatch.setenv("COLUMNS", "80")  # issue 42: honoured off a terminal too
    _tables(stream)
    text = out.getvalue() + stream.getvalue()
    for name in [w[2] for w in _WHEELS] + _TAGS:
        assert name in text, text
    assert max(len(line) for line in text.splitlines()) <= 80, text
    assert re.search(r"1 +│? install +│? failed ", text), text  # still a table


def test_piped_tables_without_columns_are_never_cut(monkeypatch):
    """Off a terminal with no ``$COLUMNS``, rows stay whole on one line each (a script
    reads them)."""
    monkeypatch.setattr(ui, "interactive", lambda s=None: False)
    monkeypatch.delenv("COLUMNS", raising=False)
    stream = io.StringIO()
    _tables(stream)
    assert any(line.endswith(_STEPS[0][4]) for line in stream.getvalue().splitlines())


@pytest.mark.parametrize("where", ["terminal", "piped"])
def test_a_url_column_moves_to_a_table_of_its_own_where_the_row_is_too_wide(monkeypatch,
                                                                            where):
    """Issue 42: the URLs broke mid-word at 80 columns; a *detail* column leaves the table
    for a second one keyed by the name, each URL whole on its name's line."""
    stream = io.StringIO()
    out = _on_terminal(monkeypatch) if where == "terminal" else stream
    if where == "piped":
        monkeypatch.setattr(ui, "interactive", lambda s=None: False)
        monkeypatch.setenv("COLUMNS", "80")
    urls = [f"http://127.0.0.1:8080/a/long/path/to/the/mirror/whl/{v}" for v in ("cu126", "cpu")]
    rows = [(f"linux-{v}", "linux", "x86_64", "3.11", "cuda 12.6", url, ">=2.7,<2.12")
            for v, url in zip(("cu126", "cpu"), urls, strict=True)]
    tables.print_table("lockkit platforms", ("name", "os", "arch", "python", "backend",
                                             "torch index", "torch releases"), rows,
                       stream=stream, secrets=NO_SECRETS, whole=("name",),
                       detail=("torch index",))
    lines = (out.getvalue() + stream.getvalue()).splitlines()
    assert max(len(line) for line in lines) <= 80, lines
    for name, url in zip(("linux-cu126", "linux-cpu"), urls, strict=True):
        assert any(name in line and url in line for line in lines), lines
        assert any(name in line and ">=2.7,<2.12" in line for line in lines), lines


@pytest.mark.parametrize("where", ["terminal", "piped"])
def test_text_in_tables_and_bars_is_never_taken_as_rich_markup(monkeypatch, where):
    """A verify table ate ``[torch]``: cells, titles and bar descriptions are text."""
    stream = io.StringIO()
    out = _on_terminal(monkeypatch, width=200) if where == "terminal" else stream
    if where == "piped":
        monkeypatch.setattr(ui, "interactive", lambda s=None: False)
    _tables(stream)
    text = out.getvalue() + stream.getvalue()
    for said in ("torch[cuda]", "torch[extra] and [red]not markup[/red]",
                 "[bold]lockkit platforms[/bold]", "torch[cuda] 2.4 to 2.6"):
        assert said in text, text


def test_a_progress_bar_shows_its_description_as_text(monkeypatch):
    out = _on_terminal(monkeypatch, width=120)
    with ui.progress("resolving torch[cuda] for [b]linux[/b]", total=1) as advance:
        advance(1, description="building torch[extra]")
    with ui.transfer("[i]linux[/i]: files", 1, 5_000) as shown:
        shown.moved(5_000)
        shown.file_done()
    text = out.getvalue()
    assert "building torch[extra]" in text and "[i]linux[/i]: files" in text, text
