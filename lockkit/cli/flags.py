"""The flags three or more commands share, with their help: ``--project`` as every command
that finds its project takes it, the project's index flags (``--project``, ``--mirror``,
``--index-url``), and the output rule of every ``-o`` (its type, its help, ``--force``).
Every other flag is declared in its command's module, beside its handler; ``-v`` and
``-q``, on every parser, are :mod:`lockkit.cli.parser`'s. Nothing runs here."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import argparse

    from lockkit._internal.outfile import Given

__all__ = ["FORCE", "FOUND", "OUTPUT_RULE", "output", "project_args", "project_flag"]

FOUND = ("project folder holding lockkit.toml (default: the nearest folder with lockkit.toml "
          "or [tool.lockkit], from the current one up to the repository root)")


# The rule of lockkit._internal.outfile, said once for every output flag's help.
OUTPUT_RULE = ("'-' is stdout; a device or FIFO is written through; a file is replaced only "
               "if lockkit wrote it ({what}), never the project's config, requirement "
               "files or locks")
FORCE = "overwrite an output file lockkit did not write (never one of the command's inputs)"


def output(value: str) -> Given:
    """An output flag's value: ``-`` is stdout (lockkit._internal.outfile.argument)."""
    from lockkit._internal.outfile import argument

    return argument(value)


def project_flag(p: argparse.ArgumentParser) -> None:
    """``--project DIR``, found as every command finds it when not given."""
    p.add_argument("--project", type=Path, default=None, metavar="DIR", help=FOUND)


def project_args(p: argparse.ArgumentParser) -> None:
    """``--project`` and the flags that change the project's indexes: the commands that
    reach an index."""
    project_flag(p)
    p.add_argument("--mirror", action="append", default=[], metavar="OFFICIAL=MIRROR",
                   help="serve an official URL prefix from a mirror (repeatable; the longest "
                        "prefix wins). The PyTorch index links files on a second host: map "
                        "both, e.g. https://download.pytorch.org=https://mirror.example/pt and "
                        "https://download-r2.pytorch.org=https://mirror.example/r2, or map the "
                        "index alone to a proxy that rewrites links to itself")
    p.add_argument("--index-url", metavar="URL",
                   help="replace the default index (user:token@ and ${VAR} are used, never "
                        "written)")
