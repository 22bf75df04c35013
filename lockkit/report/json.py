"""A dossier as its JSON document: every string redacted with the project's secrets, keys in
the schema's order."""

from __future__ import annotations

import json
from typing import Any

from lockkit._internal.redact import Secrets
from lockkit.report.model import Dossier

__all__ = ["document", "render", "scrub"]


def scrub(value: Any, secrets: Secrets) -> Any:
    """Credentials (*secrets*' values, ``user:token@``) out of every string in a
    JSON-shaped value."""
    if isinstance(value, str):
        return secrets.redact(value)
    if isinstance(value, dict):
        return {k: scrub(v, secrets) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [scrub(v, secrets) for v in value]
    return value


def document(dossier: Dossier, secrets: Secrets) -> dict[str, Any]:
    """``dossier.json``'s document: the dossier's, *secrets* (the project's) concealed."""
    doc: dict[str, Any] = scrub(dossier.to_dict(), secrets)
    return doc


def render(dossier: Dossier, secrets: Secrets) -> str:
    """``dossier.json``'s text, *secrets* (the project's) concealed."""
    return json.dumps(document(dossier, secrets), indent=2, sort_keys=False) + "\n"
