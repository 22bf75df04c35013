"""A verify dossier as an in-toto attestation statement (``dossier.intoto.json``).

A ``dossier.json`` is a file anyone can write. Supply-chain tools check in-toto
attestations instead: a **Statement** (in-toto attestation framework, spec v1,
``spec/v1/statement.md``) binds a predicate to subjects known by digest. lockkit writes
one beside each verify dossier:

- ``_type`` ``https://in-toto.io/Statement/v1``;
- ``subject``: the lock that was verified, named by its path in the project
  (``locks/pylock.<platform>.toml``) with its ``sha256``, the digest the dossier records;
- ``predicateType``: :data:`PREDICATE_TYPE`, lockkit's own, versioned with the dossier's
  schema; a ``verify --existing`` run (an environment lockkit did not build) gets
  :data:`EXISTING_PREDICATE_TYPE` instead, and its predicate's ``environment`` and
  ``taken_on_its_word`` say what was not built or checked here. The predicate's
  ``result`` is the run's: a failed run attests ``failed``, never ``passed``;
- ``predicate``: the dossier's JSON document itself, as ``dossier.json`` holds it (redacted,
  its paths relative to the roots).

The statement is unsigned: signing needs an identity lockkit does not have. The CI gate
that ``lockkit ci github`` writes signs the same subject and predicate with GitHub's
artifact attestation action, so a consumer can run ``gh attestation verify``
(:mod:`lockkit.ci.workflow`). A dossier without a lock digest (``diagnose``) has no subject
and gets no statement.
"""

from __future__ import annotations

import json
from pathlib import PurePosixPath
from typing import Any

from lockkit.report.model import SCHEMA_VERSION, Dossier

__all__ = ["EXISTING_PREDICATE_TYPE", "FILE_NAME", "PREDICATE_TYPE", "STATEMENT_TYPE",
           "render", "statement"]

STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = f"https://lockkit.dev/attestation/verify/v{SCHEMA_VERSION}"
# verify --existing: an environment lockkit did not build, whose predicate lists what its
# verdict took on its word (``taken_on_its_word``): never to be read as a rebuild's
EXISTING_PREDICATE_TYPE = f"https://lockkit.dev/attestation/verify-existing/v{SCHEMA_VERSION}"
FILE_NAME = "dossier.intoto.json"


def _subject_name(lock: str) -> str:
    """The lock's name in the project: ``<project>/locks/x.toml`` is ``locks/x.toml``;
    a lock outside the project keeps its file name only (no machine path)."""
    path = PurePosixPath(lock.replace("\\", "/"))
    if path.parts[:1] == ("<project>",):
        return PurePosixPath(*path.parts[1:]).as_posix()
    return path.name


def statement(dossier: Dossier, document: dict[str, Any]) -> dict[str, Any] | None:
    """The Statement for *dossier*, whose JSON document (as written) is *document*; None
    when it attests nothing (no lock digest)."""
    if dossier.kind != "verify" or not dossier.lock or not dossier.lock_sha256:
        return None
    lock = document.get("lock")
    name = _subject_name(lock if isinstance(lock, str) else dossier.lock)
    return {"_type": STATEMENT_TYPE,
            "subject": [{"name": name, "digest": {"sha256": dossier.lock_sha256}}],
            "predicateType": EXISTING_PREDICATE_TYPE if dossier.environment else PREDICATE_TYPE,
            "predicate": document}


def render(dossier: Dossier, document: dict[str, Any]) -> str | None:
    """``dossier.intoto.json``'s text, or None (see :func:`statement`)."""
    found = statement(dossier, document)
    return None if found is None else json.dumps(found, indent=2) + "\n"
