"""``lockkit diagnose``: verify's system and GPU steps on an existing interpreter. The
report (a table, or ``--json``) goes to stdout, status to stderr."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from lockkit._internal import ui
from lockkit.cli.common import shown_path
from lockkit.errors import UsageError

if TYPE_CHECKING:
    import argparse

__all__ = ["handle"]


def handle(args: argparse.Namespace) -> int:
    from lockkit._internal.redact import NO_SECRETS  # no project: no ${VAR} filled in
    from lockkit.report import json as json_format
    from lockkit.report import terminal
    from lockkit.report.roots import absolute
    from lockkit.verify.diagnose import default_python, diagnose, no_torch

    if args.python is not None and not args.python.exists():
        raise UsageError(f"--python {args.python}: no such interpreter")
    if args.python is not None:
        python, source = args.python.absolute(), "--python"
    else:
        python, source = default_python()
    ui.say(f"diagnose: {shown_path(python)} ({source})")
    dossier = diagnose(python, args.expect, source=source, timeout=args.probe_timeout,
                       command_line=tuple(["lockkit", *sys.argv[1:]]))
    if args.json:
        sys.stdout.write(json_format.render(absolute(dossier) if args.absolute_paths
                                            else dossier, NO_SECRETS))
    else:
        terminal.steps_table(dossier, NO_SECRETS)
        terminal.diagnose_facts(dossier, NO_SECRETS)
    if no_torch(dossier):
        ui.error(f"lockkit: no torch in {shown_path(python)}; give --python PATH "
               "(an interpreter with torch)")
    return 0 if dossier.result == "passed" else 1
