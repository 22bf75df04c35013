"""``[verify.resume]``: the training-resume check, validated when the project loads.

Like ``[verify.embedding]`` (``lockkit.config.verify``), every key is type-checked and
every problem collected by ``load_project``, so a mistake ends the command before any
install. ``lockkit.verify.checks.resume.step`` runs the check;
``lockkit.verify.checks.resume.verdict`` judges it.
"""

from __future__ import annotations

import difflib
import math
import string
from dataclasses import dataclass
from typing import Any

__all__ = ["PLACEHOLDERS", "RESUME_HINT", "ResumeConfig", "resume_problems"]

RESUME_HINT = ("see examples/embeddings/lockkit.toml and the README's "
               "\"Checking a training resume\" for a complete table")
PLACEHOLDERS = ("python", "out", "steps", "checkpoint", "resume")
_NEEDED = PLACEHOLDERS[1:]  # {python} is optional: the command may name another launcher
_REQUIRED = ("command", "steps", "resume-steps")
_OPTIONAL = ("atol", "rtol", "reason", "timeout")


@dataclass(frozen=True, kw_only=True)
class ResumeConfig:
    """The validated table: N steps before the checkpoint, M after it; or, for a project
    that never resumes a training, ``none`` and why (then the step passes, saying so)."""

    command: tuple[str, ...] = ()
    steps: int = 0
    resume_steps: int = 0
    none: str | None = None
    atol: float = 0.0
    rtol: float = 0.0
    reason: str | None = None
    timeout: float = 600.0

    def argv(self, *, python: str, out: str, steps: int, checkpoint: str,
             resume: bool) -> list[str]:
        """One run's argument list: the placeholders of the contract filled in."""
        values = {"python": python, "out": out, "steps": str(steps),
                  "checkpoint": checkpoint, "resume": "1" if resume else "0"}
        return [part.format(**values) for part in self.command]

    def to_dict(self) -> dict[str, Any]:
        """The table as written in lockkit.toml, for the dossier."""
        if self.none is not None:
            return {"none": self.none}
        out: dict[str, Any] = {"command": list(self.command), "steps": self.steps,
                               "resume-steps": self.resume_steps, "atol": self.atol,
                               "rtol": self.rtol, "timeout": self.timeout}
        if self.reason is not None:
            out["reason"] = self.reason
        return out


def resume_problems(table: Any) -> tuple[ResumeConfig | None, list[str]]:
    """The validated table, or None and every problem, each naming its key path."""
    if not isinstance(table, dict):
        return None, [f"verify.resume: expected a table, got {table!r}"]
    errors: list[str] = []

    def fail(key: str, message: str) -> None:
        errors.append(f"verify.resume.{key}: {message}")

    if "none" in table:
        none = table["none"]
        if not isinstance(none, str) or not none.strip():
            fail("none", f"expected the reason this project never resumes a training, "
                         f"got {none!r}")
        for key in sorted(set(table) - {"none"}):
            fail(key, "not with none (the check is declared absent)")
        return (None, errors) if errors else (ResumeConfig(none=none), [])

    for key in sorted(set(table) - set(_REQUIRED + _OPTIONAL)):
        close = difflib.get_close_matches(key, _REQUIRED + _OPTIONAL, n=1)
        fail(key, "unknown key" + (f" (did you mean '{close[0]}'?)" if close else ""))
    for key in _REQUIRED:
        if key not in table:
            fail(key, "missing (required)")
    values: dict[str, Any] = {"command": _command(table.get("command"), fail)}
    for key, low, integer in (("steps", 1, True), ("resume-steps", 1, True),
                              ("atol", 0, False), ("rtol", 0, False),
                              ("timeout", 1e-9, False)):
        values[key.replace("-", "_")] = _number(key, table.get(key), low, integer, fail)
    reason = table.get("reason")
    if reason is not None and (not isinstance(reason, str) or not reason.strip()):
        fail("reason", f"expected a non-empty string, got {reason!r}")
    elif (values["atol"] or values["rtol"]) and reason is None:
        fail("reason", "required with a non-zero atol/rtol: say why the resumed run may "
                       "differ (the default is exact, as a CPU resume is)")
    values["reason"] = reason
    if errors:
        return None, errors
    return ResumeConfig(**{k: v for k, v in values.items() if v is not None}), []


def _number(key: str, value: Any, low: float, integer: bool, fail: Any) -> Any:
    if value is None:
        return None
    kinds = (int,) if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds) or not low <= value < math.inf:
        fail(key, f"expected {'an integer' if integer else 'a number'} >= {low:g}, "
                  f"got {value!r}")
        return None
    return value if integer else float(value)


def _command(value: Any, fail: Any) -> tuple[str, ...] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        fail("command", f"expected a non-empty list of strings, got {value!r}")
        return None
    try:
        fields = [(f, spec, conv) for part in value
                  for _, f, spec, conv in string.Formatter().parse(part) if f is not None]
    except ValueError as exc:
        fail("command", f"malformed placeholder: {exc} (write {{{{ for a brace)")
        return None
    unknown = [f for f, spec, conv in fields if spec or conv or f not in PLACEHOLDERS]
    if unknown:
        fail("command", f"unknown placeholder {{{unknown[0]}}}: use "
                        + ", ".join(f"{{{p}}}" for p in PLACEHOLDERS))
        return None
    missing = [p for p in _NEEDED if p not in {f for f, _, _ in fields}]
    if missing:
        fail("command", f"no {{{missing[0]}}} placeholder: each run is told "
                        + ", ".join(f"{{{p}}}" for p in _NEEDED))
        return None
    return tuple(value)
