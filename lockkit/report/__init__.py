"""The dossier model and its renderers, one format per module (pip-audit's ``_format``):

- :mod:`~lockkit.report.model`: the frozen, versioned :class:`Dossier`;
- :mod:`~lockkit.report.json`: the JSON document (``dossier.json``, ``--json``);
- :mod:`~lockkit.report.markdown`: ``dossier.md``, for people;
- :mod:`~lockkit.report.junit`: JUnit XML, one test case per step, for CI;
- :mod:`~lockkit.report.terminal`: the tables a command prints.

:func:`write_folder` writes a run's report folder. Nothing here runs a check.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from lockkit._internal.fs import write_atomic
from lockkit._internal.redact import redact
from lockkit.report import json as json_format
from lockkit.report import markdown
from lockkit.report.model import Dossier

__all__ = ["write_folder"]


def write_folder(folder: Path, dossier: Dossier, attachments: Mapping[str, str]) -> None:
    """``dossier.json``, ``dossier.md`` and the run's attachments (logs), redacted; each
    file written whole or not at all, the JSON last (its presence means a complete folder)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in attachments.items():
        write_atomic(folder / name, redact(text))
    write_atomic(folder / "dossier.md", markdown.render(dossier))
    write_atomic(folder / "dossier.json", json_format.dumps(dossier))
