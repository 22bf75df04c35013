"""The checks' report-side registry: :data:`RECORDS`, which the dossier, its JSON document
and ``dossier.md`` read at each use (so a test's temporary copy is seen everywhere). Why
the registry is split by stage: :mod:`lockkit.report.checks`."""

from __future__ import annotations

from typing import Any

from lockkit.report.checks.application import APPLICATION
from lockkit.report.checks.extensions import EXTENSIONS
from lockkit.report.checks.interface import Recorded
from lockkit.report.checks.resume import RESUME

__all__ = ["RECORDS"]

# the checks' records in the order the dossier's ``checks`` lists them (after ``gpu``)
RECORDS: tuple[Recorded[Any], ...] = (APPLICATION, EXTENSIONS, RESUME)
