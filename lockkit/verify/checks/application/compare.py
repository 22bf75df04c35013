"""An output against its committed reference: the same JSON shape, every number within
``atol + rtol * |ref|`` (numpy.isclose's rule), everything else equal.

Used by [verify.application.compare] (:mod:`lockkit.config.checks.application`).
The whole document is walked, so the verdict names the first difference by its JSON path *and*
the largest
numeric difference, which is what a user tunes a tolerance against.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lockkit._internal.parse import parse_json

__all__ = ["Compared", "compare_files", "compare_values"]


@dataclass
class Compared:
    """What one walk found: how many numbers, which differ, the first difference."""

    numbers: int = 0
    outside: int = 0
    first: str | None = None  # "$.loss: got 0.5, reference 0.6 (allowed 1e-06)"
    max_abs_diff: float = 0.0
    worst_path: str | None = None

    @property
    def passed(self) -> bool:
        return self.first is None

    def differ(self, text: str) -> None:
        self.first = self.first or text


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def compare_values(got: Any, ref: Any, atol: float, rtol: float, path: str = "$",
                   out: Compared | None = None) -> Compared:
    """Walk *got* against *ref*; the result collects every difference."""
    out = out if out is not None else Compared()
    if _is_number(got) and _is_number(ref):
        _number(float(got), float(ref), atol, rtol, path, out)
    elif isinstance(ref, dict) and isinstance(got, dict):
        for key in ref:
            if key not in got:
                out.differ(f"{path}.{key}: missing (the reference has it)")
            else:
                compare_values(got[key], ref[key], atol, rtol, f"{path}.{key}", out)
        for key in got:
            if key not in ref:
                out.differ(f"{path}.{key}: not in the reference")
    elif isinstance(ref, list) and isinstance(got, list):
        if len(got) != len(ref):
            out.differ(f"{path}: {len(got)} items, the reference has {len(ref)}")
        for i, (g, r) in enumerate(zip(got, ref, strict=False)):
            compare_values(g, r, atol, rtol, f"{path}[{i}]", out)
    elif got != ref or type(got) is not type(ref):
        out.differ(f"{path}: got {_shown(got)}, reference {_shown(ref)}")
    return out


def _number(got: float, ref: float, atol: float, rtol: float, path: str,
            out: Compared) -> None:
    out.numbers += 1
    allowed = atol + rtol * abs(ref)
    if not (math.isfinite(got) and math.isfinite(ref)):
        if got == ref:  # the same infinity
            return
        out.outside += 1
        out.differ(f"{path}: got {got!r}, reference {ref!r} (not finite)")
        return
    diff = abs(got - ref)
    if diff > out.max_abs_diff or out.worst_path is None:
        out.max_abs_diff, out.worst_path = diff, path
    if diff > allowed:
        out.outside += 1
        out.differ(f"{path}: got {got!r}, reference {ref!r}, |diff| {diff:.3e} > allowed "
                   f"{allowed:.3e} ({atol:g} + {rtol:g}*|ref|)")


def _shown(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) <= 60 else text[:57] + "..."


def compare_files(output: Path, reference: Path, atol: float, rtol: float
                  ) -> tuple[Compared | None, str]:
    """Both files read as JSON; (the walk, or None when one is unreadable; one line)."""
    values = []
    for label, path in (("output", output), ("reference", reference)):
        try:
            values.append(parse_json(path.read_text(encoding="utf-8"), path))
        except FileNotFoundError:
            return None, f"{label} {path.name}: missing"
        except (OSError, ValueError) as exc:
            return None, f"{label} {path.name}: not JSON ({exc})"
    found = compare_values(values[0], values[1], atol, rtol)
    if found.passed:
        worst = (f"; largest |diff| {found.max_abs_diff:.3e} at {found.worst_path}"
                 if found.worst_path else "")
        return found, f"{found.numbers} numbers within {atol:g} + {rtol:g}*|ref|{worst}"
    counted = (f"{found.outside} of {found.numbers} numbers outside the tolerance; "
               if found.outside else "")
    return found, f"{counted}first difference {found.first}"
