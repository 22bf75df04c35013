"""``lockkit platforms``: the known platforms as a table, JSON or Markdown, or the ones this
machine runs (``--host``). The result goes to stdout. A malformed platform file does not hide
the others: they are listed, then its error is raised (exit 2), naming the file and key."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING

from lockkit._internal import ui
from lockkit._internal.redact import NO_SECRETS  # platform files: no project secrets
from lockkit.cli.common import project_root

if TYPE_CHECKING:
    import argparse
    from collections.abc import Mapping

    from lockkit.platforms.definitions import Platform

__all__ = ["handle"]


def handle(args: argparse.Namespace) -> int:
    from lockkit.platforms.definitions import load_catalog

    catalog = load_catalog(project_root(args.project))
    _show(catalog.platforms, args)
    error = catalog.error()
    if error is not None:
        raise error
    return 0


def _show(platforms: dict[str, Platform], args: argparse.Namespace) -> None:
    from lockkit.platforms.definitions import markdown_table

    if args.host:
        _host(platforms, args.json)
    elif args.json:
        print(json.dumps([p.summary() for p in platforms.values()], indent=2))
    elif args.markdown:
        print(markdown_table(platforms), end="")
    else:
        rows = [(p.name, p.os, p.arch, p.python, p.backend_label, _torch_from(p),
                 p.torch_releases) for p in platforms.values()]
        ui.print_table("lockkit platforms", ("name", "os", "arch", "python", "backend",
                                             "torch index", "torch releases"), rows,
                       stream=sys.stdout, secrets=NO_SECRETS)


def _torch_from(p: Platform) -> str:
    if p.alias_of:
        return f"alias of {p.alias_of}"
    return p.torch_index or ("(default index)" if p.has_torch else "(no torch)")


def _host(platforms: Mapping[str, Platform], as_json: bool) -> None:
    from lockkit.platforms import host

    fits, out = host.rank(platforms.values(), host.detect())
    if as_json:
        print(json.dumps({"runs": [{"name": r.platform.name, "reason": r.reason} for r in fits],
                          "ruled_out": [{"name": r.platform.name, "reason": r.reason}
                                        for r in out]}, indent=2))
        return
    rows: list[tuple[int | str, str, str, str]] = [
        (i, r.platform.name, "runs here", r.reason) for i, r in enumerate(fits, 1)]
    rows += [("", r.platform.name, "ruled out", r.reason) for r in out]
    ui.print_table("lockkit platforms --host", ("#", "platform", "verdict", "why"), rows,
                   stream=sys.stdout, secrets=NO_SECRETS)
