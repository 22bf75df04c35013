"""The step engine of verify and diagnose: what ran, in order, with the first error.

A step ends ``passed``, ``failed``, ``skipped`` (with the reason) or ``not-run`` (a step
it depends on did not pass); the first failed step's error is the run's ``first_error``.
A *waived* skip is one the project's config declared, with its reason (``[verify]
application = "none"``): it does not make the run incomplete, and it blocks no step
that needs it (there was nothing to check, not something that did not work).
A finished step becomes a :class:`lockkit.report.records.StepResult` in the dossier.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from lockkit._internal.log import VERBOSE
from lockkit._internal.redact import masked
from lockkit.report.records import StepResult
from lockkit.report.shapes import Status

if TYPE_CHECKING:
    from lockkit.report.shapes import Result

__all__ = ["Step", "StepFailed", "StepSkipped", "Steps", "overall"]

_log = logging.getLogger(__name__)


class StepFailed(Exception):
    """Raised inside a step: its message is the step's first error (one line)."""


class StepSkipped(Exception):
    """Raised inside a step: its message is why the step did not apply. ``waived``: the
    project's config declared the skip with a reason, so the run can still pass."""

    def __init__(self, reason: str, *, waived: bool = False) -> None:
        super().__init__(reason)
        self.waived = waived


@dataclass
class Step:
    name: str
    needs: tuple[str, ...] = ()
    status: Status = "not-run"
    duration: float = 0.0
    error: str | None = None
    reason: str | None = None
    waived: bool = False
    detail: dict[str, object] = field(default_factory=dict)  # JSON values: the dossier shows them

    @property
    def settled(self) -> bool:
        """Passed, or skipped by a waiver: what a step that needs this one requires."""
        return self.status == "passed" or (self.status == "skipped" and self.waived)

    def result(self) -> StepResult:
        return StepResult(name=self.name, status=self.status,
                          duration_s=round(self.duration, 3), needs=self.needs,
                          error=self.error, reason=self.reason, waived=self.waived,
                          detail=dict(self.detail))


class Steps:
    """The ordered steps of one run; ``run(name)`` times one and records how it ended."""

    def __init__(self, plan: list[tuple[str, tuple[str, ...]]]) -> None:
        self.steps = {name: Step(name, needs) for name, needs in plan}

    def __getitem__(self, name: str) -> Step:
        return self.steps[name]

    def __iter__(self) -> Iterator[Step]:
        return iter(self.steps.values())

    def blocked(self, name: str) -> str | None:
        """Why *name* cannot run: the first step it needs that did not pass."""
        for need in self.steps[name].needs:
            st = self.steps[need]
            if not st.settled:
                return f"{need} {st.status}"
        return None

    def execute(self, name: str, body: Callable[[Step], None]) -> Step:
        """Run *body* unless a needed step did not pass; its exceptions become its status."""
        step = self.steps[name]
        why = self.blocked(name)
        if why:
            step.status, step.reason = ("skipped" if why.endswith("skipped") else "not-run"), why
            return step
        start = time.perf_counter()
        try:
            body(step)
            step.status = "passed"
        except StepSkipped as exc:
            step.status, step.reason, step.waived = "skipped", str(exc), exc.waived
        except StepFailed as exc:
            step.status, step.error = "failed", _one_line(str(exc))
        except Exception as exc:  # noqa: BLE001 - a step's crash is its finding, not ours
            step.status, step.error = "failed", _one_line(f"{type(exc).__name__}: {exc}")
        finally:
            step.duration = time.perf_counter() - start
            _log.log(VERBOSE, "step %s: %s in %.2f s", name, step.status, step.duration)
        return step

    @property
    def first_error(self) -> str | None:
        failed = next((s for s in self if s.status == "failed"), None)
        return f"{failed.name}: {failed.error}" if failed else None


def overall(steps: Steps) -> Result:
    """``passed`` only when every step passed or was waived by the config; ``failed`` if
    any failed; else ``incomplete``."""
    if all(s.settled for s in steps):
        return "passed"
    return "failed" if any(s.status == "failed" for s in steps) else "incomplete"


def _one_line(text: str) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return masked(lines[0] if lines else text)
