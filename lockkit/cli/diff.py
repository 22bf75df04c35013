"""``lockkit diff``: which layer differs between two dossiers, locks or wheelhouse
manifests. The differences go to stdout (text or ``--json``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import argparse

__all__ = ["DESCRIPTION", "HELP", "DiffOptions", "add_arguments", "handle"]

HELP = "say which layer differs between two dossiers, locks or manifests"
DESCRIPTION = ("Compare two runs (dossier.json or its folder), locks or wheelhouse "
               "manifests, grouped by layer: code and parameters, data and weights, "
               "Python and packages, system and backend, result. Exit 0 when nothing "
               "differs (or every difference is declared by a variant), 1 when "
               "something does, 2 for unreadable input.")


def add_arguments(diff: argparse.ArgumentParser) -> None:
    diff.add_argument("a", type=Path, metavar="A",
                      help="a dossier.json (or its report folder), a lock, or a wheelhouse "
                           "manifest.json")
    diff.add_argument("b", type=Path, metavar="B",
                      help="the other dossier, lock or manifest (the layers both sides have "
                           "are compared)")
    diff.add_argument("--json", action="store_true", help="print the differences as JSON")
    diff.set_defaults(options=DiffOptions.from_namespace)


@dataclass(frozen=True, kw_only=True)
class DiffOptions:
    """``lockkit diff``'s arguments, typed."""

    a: Path
    b: Path
    json: bool

    @classmethod
    def from_namespace(cls, ns: argparse.Namespace) -> DiffOptions:
        return cls(a=ns.a, b=ns.b, json=ns.json)


def handle(options: DiffOptions) -> int:
    from lockkit.report import terminal
    from lockkit.report.diff import LAYERS, compare, load_side

    a, b = load_side(options.a), load_side(options.b)
    layers, found = compare(a, b)
    differing = [layer for layer in LAYERS if any(d.layer == layer for d in found)]
    (terminal.diff_json if options.json else terminal.diff_text)(layers, differing, found, (a, b))
    return 1 if any(not d.declared for d in found) else 0
