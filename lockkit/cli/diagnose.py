"""``lockkit diagnose``: verify's system and GPU steps on an existing interpreter. The
report (a table, or ``--json``) goes to stdout, status to stderr."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from lockkit._internal import ui
from lockkit.cli.common import shown_path
from lockkit.errors import UsageError

if TYPE_CHECKING:
    import argparse

__all__ = ["DESCRIPTION", "HELP", "DiagnoseOptions", "add_arguments", "handle"]

HELP = "probe an existing interpreter's system and GPU stack"
DESCRIPTION = ("Run the system and GPU steps of verify on an existing interpreter: "
               "an interpretable answer to 'is this environment's GPU stack right?'.")


def add_arguments(diag: argparse.ArgumentParser) -> None:
    diag.add_argument("--python", type=Path, metavar="PATH",
                      help="interpreter to probe (default: the active venv's, else the "
                           "project's .venv, else python3 on PATH other than lockkit's own)")
    diag.add_argument("--expect", choices=("cpu", "cuda", "rocm", "mps"),
                      help="backend the torch build must have (default: the one it reports)")
    diag.add_argument("--json", action="store_true", help="print the report as JSON")
    diag.add_argument("--absolute-paths", action="store_true", help="paths not as <venv>/...")
    diag.add_argument("--probe-timeout", type=float, default=300.0, metavar="S",
                      help="seconds before a hung probe counts as failed (default 300)")
    diag.set_defaults(options=DiagnoseOptions.from_namespace)


@dataclass(frozen=True, kw_only=True)
class DiagnoseOptions:
    """``lockkit diagnose``'s flags, typed."""

    python: Path | None
    expect: Literal["cpu", "cuda", "rocm", "mps"] | None
    json: bool
    absolute_paths: bool
    probe_timeout: float

    @classmethod
    def from_namespace(cls, ns: argparse.Namespace) -> DiagnoseOptions:
        return cls(python=ns.python, expect=ns.expect, json=ns.json,
                   absolute_paths=ns.absolute_paths, probe_timeout=ns.probe_timeout)


def handle(options: DiagnoseOptions) -> int:
    from lockkit._internal.redact import NO_SECRETS  # no project: no ${VAR} filled in
    from lockkit.report import json as json_format
    from lockkit.report import terminal
    from lockkit.report.roots import absolute
    from lockkit.verify.diagnose import default_python, diagnose, no_torch

    if options.python is not None and not options.python.exists():
        raise UsageError(f"--python {options.python}: no such interpreter")
    if options.python is not None:
        python, source = options.python.absolute(), "--python"
    else:
        python, source = default_python()
    ui.say(f"diagnose: {shown_path(python)} ({source})")
    dossier = diagnose(python, options.expect, source=source, timeout=options.probe_timeout,
                       command_line=tuple(["lockkit", *sys.argv[1:]]))
    if options.json:
        sys.stdout.write(json_format.render(absolute(dossier) if options.absolute_paths
                                            else dossier, NO_SECRETS))
    else:
        terminal.steps_table(dossier, NO_SECRETS)
        terminal.diagnose_facts(dossier, NO_SECRETS)
    if no_torch(dossier):
        ui.error(f"lockkit: no torch in {shown_path(python)}; give --python PATH "
               "(an interpreter with torch)")
    return 0 if dossier.result == "passed" else 1
