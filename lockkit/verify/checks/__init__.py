"""The project's own checks, one folder each: its step (``step.py``) and its verdict
(``verdict.py``). Each check's ``[verify.<check>]`` table is read with the project, by
:mod:`lockkit.config.checks` (so a mistake ends the command before any install), and
reaches the step as the :class:`~lockkit.config.project.Project`'s validated dataclass.
``application`` runs any command and compares its JSON outputs; ``embedding`` is its
specialised form (a verdict the application step uses, no step of its own);
``extensions`` imports the declared compiled modules; ``resume`` proves a training resumed
from its checkpoint continues as if it never stopped.

:data:`CHECKS` is the one list of the checks' steps (:class:`StepCheck`): the plans of
``verify`` and ``verify --existing`` end with them, in this order. Each line joins the
check's halves by object: its step, and its report declaration
(:class:`~lockkit.report.checks.interface.Recorded`: the record the step leaves in
``run.found.checks``, which ``Findings``, the dossier and ``dossier.md`` loop over). Its
table's reader is ``lockkit.config.checks``'s, under the same key (config loads first and
imports no check's step). Why the declaration is split in three:
:mod:`lockkit.report.checks`.

May import: lockkit.errors, lockkit._internal, lockkit.platforms, lockkit.config,
lockkit.index, lockkit.lock, lockkit.cache, lockkit.wheelhouse, lockkit.report
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lockkit.report.checks.application import APPLICATION
from lockkit.report.checks.extensions import EXTENSIONS
from lockkit.report.checks.interface import Recorded
from lockkit.report.checks.resume import RESUME
from lockkit.steps.context import Run
from lockkit.steps.engine import Step
from lockkit.verify.checks.application.step import app_step
from lockkit.verify.checks.extensions.step import extensions_step
from lockkit.verify.checks.resume.step import resume_step

__all__ = ["CHECKS", "StepCheck"]


@dataclass(frozen=True, kw_only=True)
class StepCheck:
    """One project check's verify side: the step that runs it, after which steps, and the
    record it leaves in the findings (``run.found.checks[key]``) for the dossier."""

    key: str  # the step's name; its [verify.<key>] table (lockkit.config.checks); its record
    after: tuple[str, ...]  # the steps it needs (their names in the plan)
    step: Callable[[Run, Step], None]
    report: Recorded[Any]  # its report side: the record the step leaves, its key
    # its folder in the run's work folder (the project's copy, the outputs), removed even
    # when the venv is kept
    scratch: str | None = None


CHECKS = (
    StepCheck(key="extensions", after=("system",), step=extensions_step, report=EXTENSIONS),
    StepCheck(key="application", after=("gpu",), step=app_step, report=APPLICATION,
              scratch="app"),
    StepCheck(key="resume", after=("gpu",), step=resume_step, report=RESUME, scratch="resume"),
)
