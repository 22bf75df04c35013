"""``[verify.resume]``: the training-resume check, validated when the project loads.

Like ``[verify.embedding]`` (:mod:`lockkit.config.checks.embedding`), whose ``command``
rule it shares (:mod:`lockkit.config.checks.rules`), every key is type-checked and every
problem collected by ``load_project``, so a mistake ends the command before any install.
``lockkit.verify.checks.resume.step`` runs the check; ``lockkit.verify.checks.resume.verdict``
judges it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypedDict

from lockkit._internal.keys import KeyReader
from lockkit.config.checks.rules import DEVICE_USE, Check, Fields, command

__all__ = ["CHECK", "PLACEHOLDERS", "RESUME_HINT", "ResumeConfig", "resume_problems"]

RESUME_HINT = ("see examples/embeddings/lockkit.toml and docs/howto/checks.md, "
               "\"Checking a training resume\", for a complete table")
PLACEHOLDERS = ("python", "out", "steps", "checkpoint", "resume", "device")
# {python} is optional (the command may name another launcher), and so is {device}
_NEEDED = ("out", "steps", "checkpoint", "resume")
_REQUIRED = ("command", "steps", "resume-steps")
_OPTIONAL = ("atol", "rtol", "reason", "timeout")


_Number = Literal["steps", "resume_steps", "atol", "rtol", "timeout"]
# each number's key, its field, its least value and whether it is an integer
_NUMBERS: tuple[tuple[str, _Number, float, bool], ...] = (
    ("steps", "steps", 1, True), ("resume-steps", "resume_steps", 1, True),
    ("atol", "atol", 0, False), ("rtol", "rtol", 0, False), ("timeout", "timeout", 1e-9, False))


class _Values(TypedDict, total=False):
    """The :class:`ResumeConfig` fields the table sets."""

    command: tuple[str, ...]
    steps: int
    resume_steps: int
    atol: float
    rtol: float
    reason: str
    timeout: float


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
             resume: bool, device: str) -> list[str]:
        """One run's argument list: the placeholders of the contract filled in."""
        values = {"python": python, "out": out, "steps": str(steps),
                  "checkpoint": checkpoint, "resume": "1" if resume else "0",
                  "device": device}
        return [part.format(**values) for part in self.command]

    def to_dict(self) -> dict[str, object]:
        """The table as written in lockkit.toml, for the dossier."""
        if self.none is not None:
            return {"none": self.none}
        out: dict[str, object] = {"command": list(self.command), "steps": self.steps,
                               "resume-steps": self.resume_steps, "atol": self.atol,
                               "rtol": self.rtol, "timeout": self.timeout}
        if self.reason is not None:
            out["reason"] = self.reason
        return out


def resume_problems(table: object) -> tuple[ResumeConfig | None, list[str]]:
    """The validated table, or None and every problem, each naming its key path."""
    r = KeyReader(where="verify.resume", unknown="path: unknown key")
    if not isinstance(table, dict):
        r.fail("", f"expected a table, got {table!r}")
        return None, r.errors
    if "none" in table:
        none = r.text("none", table["none"], "the reason this project never resumes a "
                      "training")
        for key in sorted(set(table) - {"none"}):
            r.fail(key, "not with none (the check is declared absent)")
        return (None, r.errors) if r.errors else (ResumeConfig(none=none), [])
    r.unknown(table, _REQUIRED + _OPTIONAL)
    r.require(table, _REQUIRED)
    argv = command(
        r, table.get("command"), PLACEHOLDERS, needed=_NEEDED,
        use="use " + ", ".join(f"{{{p}}}" for p in PLACEHOLDERS[:-1]) + " and " + DEVICE_USE,
        why="each run is told " + ", ".join(f"{{{p}}}" for p in _NEEDED))
    numbers = {name: r.number(key, table.get(key), low, integer=integer,
                              expected=f"{'an integer' if integer else 'a number'} >= {low:g}")
               for key, name, low, integer in _NUMBERS}
    reason = r.text("reason", table.get("reason"))
    if (numbers["atol"] or numbers["rtol"]) and "reason" not in table:
        r.fail("reason", "required with a non-zero atol/rtol: say why the resumed run may "
                         "differ (the default is exact, as a CPU resume is)")
    if r.errors:
        return None, r.errors
    values = _Values()  # absent keys keep their defaults
    if argv is not None:
        values["command"] = argv
    for name, number in numbers.items():
        if number is not None:
            values[name] = number
    if reason is not None:
        values["reason"] = reason
    return ResumeConfig(**values), []


def _read_check(root: Path, verify: Mapping[str, object]) -> tuple[Fields, list[str]]:
    if "resume" not in verify:
        return {}, []
    config, problems = resume_problems(verify["resume"])
    return {"resume": config}, problems


CHECK = Check(key="resume", read=_read_check, hint=RESUME_HINT,
              fields={"resume": ResumeConfig})
