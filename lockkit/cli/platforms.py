"""``lockkit platforms``: the known platforms as a table, JSON or Markdown, or the ones this
machine runs (``--host``). The result goes to stdout."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING

from lockkit._internal import ui
from lockkit.cli.common import project_root

if TYPE_CHECKING:
    import argparse
    from typing import Any

__all__ = ["handle"]


def handle(args: argparse.Namespace) -> int:
    from lockkit.platforms.definitions import load_platforms, markdown_table

    platforms = load_platforms(project_root(args.project))
    if args.host:
        return _host(platforms, args.json)
    if args.json:
        print(json.dumps([p.summary() for p in platforms.values()], indent=2))
        return 0
    if args.markdown:
        print(markdown_table(platforms), end="")
        return 0
    rows = [(p.name, p.os, p.arch, p.python, p.backend_label,
             f"alias of {p.alias_of}" if p.alias_of else p.torch_index or "(default index)",
             p.torch_releases) for p in platforms.values()]
    ui.print_table("lockkit platforms", ("name", "os", "arch", "python", "backend", "torch index",
                                         "torch releases"), rows, stream=sys.stdout)
    return 0


def _host(platforms: dict[str, Any], as_json: bool) -> int:
    from lockkit.platforms import host

    fits, out = host.rank(platforms.values(), host.detect())
    if as_json:
        print(json.dumps({"runs": [{"name": r.platform.name, "reason": r.reason} for r in fits],
                          "ruled_out": [{"name": r.platform.name, "reason": r.reason}
                                        for r in out]}, indent=2))
        return 0
    rows: list[tuple[int | str, str, str, str]] = [
        (i, r.platform.name, "runs here", r.reason) for i, r in enumerate(fits, 1)]
    rows += [("", r.platform.name, "ruled out", r.reason) for r in out]
    ui.print_table("lockkit platforms --host", ("#", "platform", "verdict", "why"), rows,
                   stream=sys.stdout)
    return 0
