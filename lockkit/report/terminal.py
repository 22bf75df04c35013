"""What commands print: result tables on stdout (the command's answer), status on stderr.

Plain aligned text when stdout is a pipe or a file, a rich table on a terminal
(:func:`lockkit._internal.tables.print_table` decides).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from lockkit._internal import tables, ui
from lockkit._internal.redact import NO_SECRETS, Secrets
from lockkit.report.model import Dossier

if TYPE_CHECKING:
    from lockkit.report.diff import Difference, Side

__all__ = ["diagnose_facts", "diff_json", "diff_text", "steps_table", "warnings"]


def steps_table(d: Dossier, secrets: Secrets) -> None:
    tables.print_table(f"lockkit {d.kind} {d.platform or ''}".rstrip() + f": {d.result}"
                       + (f" ({d.environment})" if d.environment else ""),
                       ("#", "step", "status", "seconds", "first error / reason"),
                       [(i, s.name, s.shown_status, f"{s.duration_s:.2f}", s.note)
                        for i, s in enumerate(d.steps, 1)], stream=sys.stdout,
                       secrets=secrets, whole=("step",))


def warnings(d: Dossier) -> None:
    """The run's warnings and waivers, on stderr (with ``--json`` too: stdout stays JSON)."""
    for warning in d.warnings:
        ui.warn(warning)
    for step in d.waivers:
        ui.say(f"waived: {step.name}: {step.reason}")


def diagnose_facts(d: Dossier, secrets: Secrets) -> None:
    """The torch build's own answers, under the steps table, *secrets* concealed."""
    torch = d.system.torch if d.system else None
    for label, value in (("torch.__version__", torch and torch.version),
                         ("torch.version.cuda", torch and torch.cuda),
                         ("torch.version.hip", torch and torch.hip),
                         ("cuDNN", torch and torch.cudnn), ("MIOpen", torch and torch.miopen),
                         ("devices", torch and torch.device_count)):
        print(secrets.redact(f"{label}: {value}"))


def _cell(value: Any) -> str:
    text = "(absent)" if value is None else str(value)
    return text if len(text) <= 70 else text[:67] + "..."


def diff_text(layers: Sequence[str], differing: Sequence[str], found: Sequence[Difference],
              sides: Sequence[Side]) -> None:
    """``lockkit diff``'s answer: which layers differ, a table per layer, the variants."""
    if not found:
        print(f"no differences (layers compared: {', '.join(layers)})")
    else:
        declared = sorted({d.layer for d in found if d.declared})
        print("differs in: " + ", ".join(differing) +
              (f" (declared by variant: {', '.join(declared)})" if declared else ""))
    for layer in differing:
        # two dossiers as written: already redacted
        tables.print_table(f"{layer}", ("key", "A", "B", "declared"),
                           [(d.key, _cell(d.a), _cell(d.b), "yes" if d.declared else "")
                            for d in found if d.layer == layer], stream=sys.stdout,
                           secrets=NO_SECRETS, whole=("key",))
        for line in (said for d in found if d.layer == layer for said in d.said):
            print(line)
    for side in sides:
        if side.variant:
            v = side.variant
            print(f"variant {v.name}: {v.reason} (changes: {', '.join(v.changes)})")
    if all(side.kind == "dossier" and side.info.get("max_abs_diff") is not None
           for side in sides):  # a run that never reached the application has none
        print("embedding max |diff| vs reference (shown, not compared): " + ", ".join(
            f"{label} {side.info.get('max_abs_diff')} ({side.info.get('worst_id')})"
            for label, side in zip(("A", "B"), sides, strict=True)))


def diff_json(layers: Sequence[str], differing: Sequence[str], found: Sequence[Difference],
              sides: Sequence[Side]) -> None:
    a, b = sides
    print(json.dumps({"a": str(a.path), "b": str(b.path), "kinds": [a.kind, b.kind],
                      "layers_compared": list(layers), "layers_differing": list(differing),
                      "variants": [s.variant.to_dict() for s in sides if s.variant],
                      "differences": [d.to_dict() for d in found],
                      "unexplained": sum(not d.declared for d in found),
                      "info": {"a": a.info, "b": b.info}}, indent=2, default=str))
