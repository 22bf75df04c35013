"""``lockkit diff``: which layer differs between two dossiers, locks or wheelhouse
manifests. The differences go to stdout (text or ``--json``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import argparse

__all__ = ["handle"]


def handle(args: argparse.Namespace) -> int:
    from lockkit.report import terminal
    from lockkit.report.diff import LAYERS, compare, load_side

    a, b = load_side(args.a), load_side(args.b)
    layers, found = compare(a, b)
    differing = [layer for layer in LAYERS if any(d.layer == layer for d in found)]
    (terminal.diff_json if args.json else terminal.diff_text)(layers, differing, found, (a, b))
    return 1 if any(not d.declared for d in found) else 0
