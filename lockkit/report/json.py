"""A dossier as its JSON document: every string redacted, keys in the schema's order."""

from __future__ import annotations

import json
from typing import Any

from lockkit._internal.redact import redact
from lockkit.report.model import Dossier

__all__ = ["document", "render", "scrub"]


def scrub(value: Any) -> Any:
    """Credentials out of every string in a JSON-shaped value."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: scrub(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [scrub(v) for v in value]
    return value


def document(dossier: Dossier) -> dict[str, Any]:
    """``dossier.json``'s document: the dossier's, every string redacted."""
    doc: dict[str, Any] = scrub(dossier.to_dict())
    return doc


def render(dossier: Dossier) -> str:
    """``dossier.json``'s text."""
    return json.dumps(document(dossier), indent=2, sort_keys=False) + "\n"
