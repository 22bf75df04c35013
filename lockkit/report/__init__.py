"""What a run found, as frozen versioned data, and its renderers, one format per module
(pip-audit's ``_format``): the :class:`~lockkit.report.model.Dossier` and its parts
(:mod:`~lockkit.report.model`, :mod:`~lockkit.report.records`,
:mod:`~lockkit.report.extrecords`, each verify check's record and ``dossier.md`` section
declared in ``checks/`` and listed in its registry, the system probe's report in
:mod:`~lockkit.report.facts`) and their JSON shapes, statuses and kinds
(:mod:`~lockkit.report.shapes`), ``dossier.json`` (:mod:`~lockkit.report.json`),
``dossier.md`` (:mod:`~lockkit.report.markdown`), JUnit XML (:mod:`~lockkit.report.junit`),
each file format's module with one ``render(dossier) -> str``, the tables a command prints
(:mod:`~lockkit.report.terminal`), and ``lockkit diff``: which layer a difference comes
from (:mod:`~lockkit.report.diff`). :func:`write_folder` writes a run's report folder.
Paths in what is written are relative to the run's named roots
(:mod:`~lockkit.report.roots`). Nothing here runs a check.

May import: lockkit.errors, lockkit._internal, lockkit.lock
"""


from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from lockkit._internal.fs import write_atomic
from lockkit._internal.redact import Secrets
from lockkit.report import intoto, markdown
from lockkit.report import json as json_format
from lockkit.report.model import Dossier
from lockkit.report.roots import relative_text

__all__ = ["write_folder"]


def write_folder(folder: Path, dossier: Dossier, attachments: Mapping[str, str],
                 secrets: Secrets) -> None:
    """``dossier.json``, ``dossier.md``, ``dossier.intoto.json`` (a verify's in-toto
    statement: :mod:`~lockkit.report.intoto`) and the run's attachments (logs), redacted
    with the project's *secrets*, their paths relative to the dossier's roots; each file
    written whole or not at all, ``dossier.json`` last (its presence means a complete
    folder)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in attachments.items():
        write_atomic(folder / name, secrets.redact(relative_text(text, dossier.roots)))
    write_atomic(folder / "dossier.md", markdown.render(dossier, secrets))
    attestation = intoto.render(dossier, json_format.document(dossier, secrets))
    if attestation is not None:
        write_atomic(folder / intoto.FILE_NAME, attestation)
    write_atomic(folder / "dossier.json", json_format.render(dossier, secrets))
