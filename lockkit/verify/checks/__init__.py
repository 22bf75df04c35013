"""The project's own checks, one folder each: its step (``step.py``) and its verdict
(``verdict.py``). Each check's ``[verify.<check>]`` table is read with the project, by
:mod:`lockkit.config.checks` (so a mistake ends the command before any install), and
reaches the step as the :class:`~lockkit.config.project.Project`'s validated dataclass.
``application`` runs any command and compares its JSON outputs; ``embedding`` is its
specialised form (a verdict the application step uses, no step of its own);
``extensions`` imports the declared compiled modules; ``resume`` proves a training resumed
from its checkpoint continues as if it never stopped.

:data:`CHECKS` is the one list of the checks' steps (:class:`StepCheck`): the plans of
``verify`` and ``verify --existing`` end with them, in this order. A new check is a folder
here, its line in :data:`CHECKS`, and its table's reader in ``lockkit.config.checks``.

May import: lockkit.errors, lockkit._internal, lockkit.platforms, lockkit.config,
lockkit.index, lockkit.lock, lockkit.cache, lockkit.wheelhouse, lockkit.report
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from lockkit.report.extrecords import ExtensionsResult
from lockkit.report.records import ApplicationResult, ResumeResult
from lockkit.verify.checks.application.step import app_step
from lockkit.verify.checks.extensions.step import extensions_step
from lockkit.verify.checks.resume.step import resume_step
from lockkit.verify.context import Run
from lockkit.verify.steps import Step

__all__ = ["CHECKS", "StepCheck"]


@dataclass(frozen=True, kw_only=True)
class StepCheck:
    """One project check's verify side: the step that runs it, after which steps, and the
    record it leaves in the findings (``run.found.<key>``) for the dossier."""

    key: str  # the step's name; its [verify.<key>] table (lockkit.config.checks); its record
    after: tuple[str, ...]  # the steps it needs (their names in the plan)
    step: Callable[[Run, Step], None]
    record: type  # the report record the step leaves in run.found.<key>
    # its folder in the run's work folder (the project's copy, the outputs), removed even
    # when the venv is kept
    scratch: str | None = None


CHECKS = (
    StepCheck(key="extensions", after=("system",), step=extensions_step, record=ExtensionsResult),
    StepCheck(key="application", after=("gpu",), step=app_step, record=ApplicationResult,
              scratch="app"),
    StepCheck(key="resume", after=("gpu",), step=resume_step, record=ResumeResult,
              scratch="resume"),
)
