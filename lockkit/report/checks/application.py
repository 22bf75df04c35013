"""The application check's part of the dossier: ``checks.application`` (its record,
:class:`~lockkit.report.records.ApplicationResult`, of kind ``command`` or ``embedding``)
and its section of ``dossier.md``."""

from __future__ import annotations

from lockkit.report.checks.interface import Recorded
from lockkit.report.records import ApplicationResult
from lockkit.report.shapes import ApplicationDoc

__all__ = ["APPLICATION"]


def _markdown(app: ApplicationResult) -> list[str]:
    lines = ["", "## Application check", ""]
    if app.command is not None:
        lines.append(f"- command: `{' '.join(app.command)}` → exit {app.returncode}")
    lines += [f"- {'✔' if check.passed else '✘'} {check.name}: {check.detail}"
              for check in app.checks]
    return lines


APPLICATION = Recorded(key="application", record=ApplicationResult,
                       load=ApplicationResult.from_dict, markdown=_markdown, shape=ApplicationDoc)
